//! The Elm architecture's model and update: the view state and a snapshot of the analysis, the messages
//! (keys, ticks, new snapshots, data read for a view), and `update`, which changes the model and returns
//! the commands (reads) the runtime should run; it never draws and never does I/O.
use std::collections::HashMap;
use std::sync::Arc;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind};

use super::data::{FlowSeries, PacketDetail, PacketRow};
use super::keys::{self, Action, Mode, Step};
use crate::analysis::events::Severity;
use crate::report::rank::{throughput, together, trouble};
use crate::report::{FlowReport, Report};

/// The screens, in Tab order (the flow detail is reached with Enter from the flows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Flows,
    Detail,
    Packets,
    Events,
}

/// The flows table's sortable columns, in the order `s` cycles through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Trouble,
    Id,
    Endpoints,
    Qp,
    Role,
    State,
    Packets,
    Throughput,
    Gaps,
    Missing,
    Retransmitted,
    Naks,
    Rnr,
    Cnp,
    Ce,
    Icrc,
    P50,
    P99,
    Connection,
}

/// Lines of the header bar: the tabs and capture, the verdict and PFC, the worst story.
pub const HEADER_LINES: u16 = 3;

pub const SORT_KEYS: [SortKey; 19] = [
    SortKey::Trouble,
    SortKey::Id,
    SortKey::Endpoints,
    SortKey::Qp,
    SortKey::Role,
    SortKey::State,
    SortKey::Packets,
    SortKey::Throughput,
    SortKey::Gaps,
    SortKey::Missing,
    SortKey::Retransmitted,
    SortKey::Naks,
    SortKey::Rnr,
    SortKey::Cnp,
    SortKey::Ce,
    SortKey::Icrc,
    SortKey::P50,
    SortKey::P99,
    SortKey::Connection,
];

impl SortKey {
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Trouble => "trouble",
            SortKey::Id => "id",
            SortKey::Endpoints => "endpoints",
            SortKey::Qp => "QP",
            SortKey::Role => "role",
            SortKey::State => "state",
            SortKey::Packets => "packets",
            SortKey::Throughput => "throughput",
            SortKey::Gaps => "gaps",
            SortKey::Missing => "missing",
            SortKey::Retransmitted => "retx",
            SortKey::Naks => "NAK",
            SortKey::Rnr => "RNR",
            SortKey::Cnp => "CNP",
            SortKey::Ce => "CE",
            SortKey::Icrc => "ICRC",
            SortKey::P50 => "p50",
            SortKey::P99 => "p99",
            SortKey::Connection => "connection",
        }
    }

    /// Text columns sort ascending by default, figures descending (largest first).
    fn descending_by_default(self) -> bool {
        !matches!(
            self,
            SortKey::Id | SortKey::Endpoints | SortKey::Qp | SortKey::Role | SortKey::Connection
        )
    }
}

fn sort_value(f: &FlowReport, key: SortKey) -> (u64, f64, String) {
    let n = |v: u64| (v, 0.0, String::new());
    let x = |v: f64| (0, v, String::new());
    match key {
        SortKey::Trouble => n(trouble(f)),
        SortKey::Id => n(f.id),
        SortKey::Endpoints => (0, 0.0, format!("{} {}", f.src, f.dst)),
        SortKey::Qp => n(u64::from(f.dest_qp)),
        SortKey::Role => (0, 0.0, format!("{:?}", f.role)),
        // Worst first: the states are in order of how bad.
        SortKey::State => n(f.state as u64),
        SortKey::Packets => n(f.packets),
        SortKey::Throughput => x(throughput(f)),
        SortKey::Gaps => n(f.psn.gap_events),
        SortKey::Missing => n(f.psn.missing),
        SortKey::Retransmitted => n(f.psn.retransmitted),
        SortKey::Naks => n(f.naks.total()),
        SortKey::Rnr => n(f.rnr_naks),
        SortKey::Cnp => n(f.cnp),
        SortKey::Ce => n(f.ecn.ce),
        SortKey::Icrc => n(f.icrc_bad),
        SortKey::P50 => x(f.latency_us.map_or(-1.0, |l| l.p50)),
        SortKey::P99 => x(f.latency_us.map_or(-1.0, |l| l.p99)),
        SortKey::Connection => n(f.connection.map_or(u64::MAX, u64::from)),
    }
}

/// What the loading pass has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    pub frames: u64,
    pub bytes: u64,
    pub total_bytes: u64,
}

#[derive(Debug, Clone, Default)]
pub struct FlowsState {
    pub selected: usize,
    pub sort: usize,
    pub descending: bool,
    pub filter: String,
}

#[derive(Debug, Clone, Default)]
pub struct DetailState {
    pub flow: u64,
    /// The PSN points and frames, once read.
    pub series: Option<Arc<FlowSeries>>,
    /// Selected event of the flow's event list.
    pub event: usize,
    /// Live capture: the series is from an older snapshot; read it again (the old one shows meanwhile).
    pub stale: bool,
}

/// Which frames the packet list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    All,
    /// A flow and its paired flow (the frames read with its detail).
    Flow(u64),
}

#[derive(Debug, Clone)]
pub struct PacketsState {
    pub scope: Scope,
    /// Position in the list (not the frame number).
    pub selected: usize,
    /// First list position on screen.
    pub offset: usize,
    /// Rows read so far, by frame number (a bounded cache: cleared when it grows past a few screens).
    pub rows: HashMap<u64, PacketRow>,
    /// The selected packet is open: its tree and hex show under the list.
    pub open: bool,
    pub detail: Option<PacketDetail>,
    /// Lines the tree is scrolled by.
    pub tree_scroll: u16,
    /// Lines the hex dump is scrolled by.
    pub hex_scroll: u16,
    /// The display filter being typed or applied.
    pub filter: String,
    /// The frames the applied filter passes (`None`: every frame): the list of every packet shows these.
    pub matching: Option<Arc<[u64]>>,
}

impl Default for PacketsState {
    fn default() -> Self {
        PacketsState {
            scope: Scope::All,
            selected: 0,
            offset: 0,
            rows: HashMap::new(),
            open: false,
            detail: None,
            tree_scroll: 0,
            hex_scroll: 0,
            filter: String::new(),
            matching: None,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct EventsState {
    pub selected: usize,
    /// Only events of this severity or worse.
    pub min_severity: Option<Severity>,
    pub filter: String,
}

/// Where the typed text of a `/` filter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Editing {
    Flows,
    Events,
    /// The packet list's display filter (Wireshark's language, as `-Y`).
    Packets,
}

/// A live capture's part of the model.
#[derive(Debug, Clone, Default)]
pub struct LiveState {
    /// The display is frozen on the snapshot shown (the capture goes on).
    pub paused: bool,
    /// The newest snapshot that came while paused: shown on resume.
    pub held: Option<(Arc<Report>, u64)>,
    /// The answer to the last `w`: where the frames went (Ok) or what failed (Err), for the footer.
    pub saved: Option<Result<String, String>>,
    /// `w` was pressed and its answer has not come yet.
    pub saving: bool,
    /// Snapshots applied so far (a flow's series is read again every few).
    pub snapshots: u64,
}

/// A live capture reads an open flow's series again every this many snapshots (once a second).
pub const SERIES_REFRESH: u64 = 4;

#[derive(Debug, Clone)]
pub struct Model {
    /// The file name or interface, for the header.
    pub source: String,
    /// The latest analysis snapshot (a file gives one; a live capture would send one every second).
    pub report: Option<Arc<Report>>,
    /// Frames the random-access index holds (the packet list's length in `Scope::All`): the whole file,
    /// or the frames a live capture still holds in its ring.
    pub indexed: u64,
    /// Number of the first frame of the packet list (1 for a file; the oldest frame in a live ring).
    pub first_frame: u64,
    /// A live capture (None for a file).
    pub live: Option<LiveState>,
    pub loading: Option<Progress>,
    pub error: Option<String>,
    pub view: View,
    /// Where Esc goes back to.
    pub back: Vec<View>,
    pub help: bool,
    pub flows: FlowsState,
    pub detail: Option<DetailState>,
    pub packets: PacketsState,
    pub events: EventsState,
    pub editing: Option<Editing>,
    /// The sort picker is open, its cursor on this index of [`SORT_KEYS`].
    pub picking: Option<usize>,
    /// Terminal size, for the list heights (updated by `Msg::Resize`).
    pub width: u16,
    pub height: u16,
    pub color: bool,
    pub quit: bool,
}

/// Everything that can happen.
#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    Resize(u16, u16),
    Tick,
    Progress(Progress),
    /// A new analysis snapshot, and how many frames the index holds: the newest `n` of the
    /// `report.capture.frames` (all of them for a file; a live capture's ring holds the last ones).
    Snapshot(Arc<Report>, u64),
    /// Live capture: the answer to [`Cmd::Save`] (a line saying where the frames went, or the error).
    Saved(Result<String, String>),
    Series(Arc<FlowSeries>),
    Rows(Vec<PacketRow>),
    Packet(PacketDetail),
    /// The answer to [`Cmd::FilterPackets`]: the frames the filter passes (why it cannot run comes as
    /// [`Msg::Error`]).
    Filtered(Vec<u64>),
    Error(String),
    /// SIGTERM or another request to stop.
    Quit,
}

/// Reads for the runtime to do; their results come back as messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cmd {
    /// Read the flow's PSN points and frames -> `Msg::Series`.
    LoadSeries(u64),
    /// Read these frames' list rows -> `Msg::Rows`.
    LoadRows(Vec<u64>),
    /// Read one frame's tree and hex -> `Msg::Packet`.
    LoadPacket(u64),
    /// Live capture: save the frames (flush `-w FILE`, else write the ring to a new pcapng) -> `Msg::Saved`.
    Save,
    /// Run this display filter over the file's frames -> `Msg::Filtered`.
    FilterPackets(String),
}

/// Rows kept in the packet-row cache before it is cleared.
const ROW_CACHE: usize = 4096;

impl Model {
    pub fn new(source: String, color: bool) -> Model {
        Model {
            source,
            report: None,
            indexed: 0,
            first_frame: 1,
            live: None,
            loading: Some(Progress::default()),
            error: None,
            view: View::Flows,
            back: Vec::new(),
            help: false,
            flows: FlowsState {
                descending: true,
                ..Default::default()
            },
            detail: None,
            packets: PacketsState::default(),
            events: EventsState::default(),
            editing: None,
            picking: None,
            width: 80,
            height: 24,
            color,
            quit: false,
        }
    }

    /// A model for a live capture on `interface`.
    pub fn new_live(interface: &str, color: bool) -> Model {
        let mut m = Model::new(format!("live on {interface}"), color);
        m.live = Some(LiveState::default());
        m
    }

    /// Applies a snapshot: the selected flow and packet stay selected (flow ids and frame numbers do not
    /// change between snapshots; positions do).
    fn apply_snapshot(&mut self, r: Arc<Report>, indexed: u64) -> Vec<Cmd> {
        let keep_flow = self.selected_flow();
        let old_first = self.first_frame;
        let old_count = self.packet_count();
        let at_end = self.packets.selected + 1 >= old_count;
        let first = r.capture.frames.saturating_sub(indexed) + 1;
        self.report = Some(r);
        self.indexed = indexed;
        self.first_frame = first;
        self.loading = None;
        let visible = self.visible_flows();
        let flows = self.report.as_ref().map_or(&[][..], |r| &r.flows[..]);
        self.flows.selected = keep_flow
            .and_then(|id| {
                visible
                    .iter()
                    .position(|&i| flows.get(i).is_some_and(|f| f.id == id))
            })
            .unwrap_or(self.flows.selected)
            .min(visible.len().saturating_sub(1));
        if let Some(live) = &mut self.live {
            live.snapshots += 1;
            let refresh = live.snapshots.is_multiple_of(SERIES_REFRESH);
            if let Some(d) = &mut self.detail
                && d.series.is_some()
                && refresh
            {
                d.stale = true;
            }
            if self.packets.scope == Scope::All {
                // The list starts later as the ring drops old frames: keep the same frames selected, or
                // follow the newest when the selection was on the last one.
                let delta = first.saturating_sub(old_first) as usize;
                let n = self.packet_count();
                if at_end && !self.packets.open {
                    self.packets.selected = n.saturating_sub(1);
                } else {
                    self.packets.selected = self.packets.selected.saturating_sub(delta);
                }
                self.packets.selected = self.packets.selected.min(n.saturating_sub(1));
                self.packets.offset = self.packets.offset.saturating_sub(delta);
                let h = self.packet_list_height();
                let sel = self.packets.selected;
                if sel < self.packets.offset {
                    self.packets.offset = sel;
                } else if sel >= self.packets.offset + h {
                    self.packets.offset = sel + 1 - h;
                }
            }
        }
        self.wanted()
    }

    pub fn sort_key(&self) -> SortKey {
        SORT_KEYS[self.flows.sort % SORT_KEYS.len()]
    }

    /// The flows shown, filtered and sorted (indices into `report.flows`).
    pub fn visible_flows(&self) -> Vec<usize> {
        let Some(r) = &self.report else {
            return Vec::new();
        };
        let filter = self.flows.filter.to_lowercase();
        let mut ids: Vec<usize> = r
            .flows
            .iter()
            .enumerate()
            .filter(|(_, f)| filter.is_empty() || flow_text(f).contains(&filter))
            .map(|(i, _)| i)
            .collect();
        let key = self.sort_key();
        let desc = self.flows.descending;
        ids.sort_by(|&a, &b| {
            let (va, vb) = (sort_value(&r.flows[a], key), sort_value(&r.flows[b], key));
            let ord =
                va.0.cmp(&vb.0)
                    .then(va.1.total_cmp(&vb.1))
                    .then(va.2.cmp(&vb.2));
            let ord = if desc { ord.reverse() } else { ord };
            ord.then(a.cmp(&b))
        });
        together(r, ids)
    }

    /// The flow under the cursor in the flows view.
    pub fn selected_flow(&self) -> Option<u64> {
        let r = self.report.as_ref()?;
        let at = *self.visible_flows().get(self.flows.selected)?;
        r.flows.get(at).map(|f| f.id)
    }

    /// The events shown (indices into `report.events`): the severity and text filters applied.
    pub fn visible_events(&self) -> Vec<usize> {
        let Some(r) = &self.report else {
            return Vec::new();
        };
        let filter = self.events.filter.to_lowercase();
        r.events
            .iter()
            .enumerate()
            .filter(|(_, e)| self.events.min_severity.is_none_or(|m| e.severity >= m))
            .filter(|(_, e)| {
                filter.is_empty()
                    || e.message.to_lowercase().contains(&filter)
                    || e.kind.contains(&filter)
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// The events of the open flow (and of its paired flow).
    pub fn detail_events(&self) -> Vec<usize> {
        let (Some(r), Some(d)) = (&self.report, &self.detail) else {
            return Vec::new();
        };
        let pair = r.flow(d.flow).and_then(|f| f.paired_with);
        r.events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.flow.is_some() && (e.flow == Some(d.flow) || e.flow == pair))
            .map(|(i, _)| i)
            .collect()
    }

    /// Length of the packet list.
    pub fn packet_count(&self) -> usize {
        match (self.packets.scope, &self.packets.matching) {
            (Scope::All, Some(m)) => m.len(),
            (Scope::All, None) => self.indexed as usize,
            (Scope::Flow(f), _) => self.flow_frames(f).map_or(0, |v| v.len()),
        }
    }

    fn flow_frames(&self, flow: u64) -> Option<&[u64]> {
        self.detail
            .as_ref()
            .filter(|d| d.flow == flow)
            .and_then(|d| d.series.as_ref())
            .map(|s| s.frames.as_slice())
    }

    /// Frame number at a list position.
    pub fn packet_at(&self, pos: usize) -> Option<u64> {
        match (self.packets.scope, &self.packets.matching) {
            (Scope::All, Some(m)) => m.get(pos).copied(),
            (Scope::All, None) => {
                (pos < self.indexed as usize).then_some(pos as u64 + self.first_frame)
            }
            (Scope::Flow(f), _) => self.flow_frames(f)?.get(pos).copied(),
        }
    }

    /// Rows of the packet list on screen (the view uses the same figure).
    pub fn packet_list_height(&self) -> usize {
        // Header bar, footer (1), block borders (2), column titles (1).
        let body = usize::from(self.height).saturating_sub(usize::from(HEADER_LINES) + 4);
        if self.packets.open {
            (body / 3).clamp(1, 10)
        } else {
            body.max(1)
        }
    }

    /// The reads the current view still needs: rows on screen not read yet, the open packet.
    pub fn wanted(&self) -> Vec<Cmd> {
        let mut cmds = Vec::new();
        if self.report.is_none() {
            return cmds;
        }
        if self.view == View::Detail
            && let Some(d) = &self.detail
            && (d.series.is_none() || d.stale)
        {
            cmds.push(Cmd::LoadSeries(d.flow));
        }
        if self.view == View::Packets {
            if let Scope::Flow(f) = self.packets.scope {
                if self.flow_frames(f).is_none() {
                    cmds.push(Cmd::LoadSeries(f));
                    return cmds;
                }
                if self.detail.as_ref().is_some_and(|d| d.stale) {
                    cmds.push(Cmd::LoadSeries(f));
                }
            }
            let h = self.packet_list_height();
            let missing: Vec<u64> = (self.packets.offset..self.packets.offset + h)
                .filter_map(|pos| self.packet_at(pos))
                .filter(|n| !self.packets.rows.contains_key(n))
                .collect();
            if !missing.is_empty() {
                cmds.push(Cmd::LoadRows(missing));
            }
            if self.packets.open
                && let Some(n) = self.packet_at(self.packets.selected)
                && self.packets.detail.as_ref().is_none_or(|d| d.number != n)
            {
                cmds.push(Cmd::LoadPacket(n));
            }
        }
        cmds
    }

    fn go(&mut self, view: View) {
        if self.view != view {
            self.back.push(self.view);
            self.view = view;
        }
    }

    /// The detail state of `flow`, fresh unless it is the one already held.
    fn select_flow(&mut self, flow: u64) {
        if self.detail.as_ref().is_none_or(|d| d.flow != flow) {
            self.detail = Some(DetailState {
                flow,
                series: None,
                event: 0,
                stale: false,
            });
        }
    }

    /// Opens the flow detail of `flow`.
    fn open_detail(&mut self, flow: u64) {
        self.select_flow(flow);
        self.go(View::Detail);
    }

    /// Shows frame `number` in the packet list (all frames), opened.
    fn jump_to_packet(&mut self, number: u64) {
        if number < self.first_frame {
            self.error = Some(format!(
                "frame {number} has left the capture buffer (it holds frames {} to {})",
                self.first_frame,
                self.first_frame + self.indexed.saturating_sub(1)
            ));
            return;
        }
        self.packets.scope = Scope::All;
        let pos = (number - self.first_frame) as usize;
        self.packets.selected = pos.min(self.packet_count().saturating_sub(1));
        self.packets.open = true;
        self.packets.tree_scroll = 0;
        self.packets.hex_scroll = 0;
        self.center_packets();
        self.go(View::Packets);
    }

    /// Scrolls so the selection is on screen, with some context above it.
    fn center_packets(&mut self) {
        let h = self.packet_list_height();
        let sel = self.packets.selected;
        if sel < self.packets.offset || sel >= self.packets.offset + h {
            self.packets.offset = sel.saturating_sub(h / 3);
        }
    }

    fn move_packets(&mut self, delta: isize) {
        let n = self.packet_count();
        if n == 0 {
            return;
        }
        let sel = (self.packets.selected as isize + delta).clamp(0, n as isize - 1) as usize;
        self.packets.selected = sel;
        self.packets.tree_scroll = 0;
        self.packets.hex_scroll = 0;
        let h = self.packet_list_height();
        if sel < self.packets.offset {
            self.packets.offset = sel;
        } else if sel >= self.packets.offset + h {
            self.packets.offset = sel + 1 - h;
        }
    }

    fn move_selection(&mut self, step: Step) {
        let page = self.packet_list_height() as isize;
        let delta = match step {
            Step::Up => -1,
            Step::Down => 1,
            Step::PageUp => -page,
            Step::PageDown => page,
            Step::First => -TO_THE_END,
            Step::Last => TO_THE_END,
        };
        let clamp = |v: usize, len: usize| -> usize {
            (v as isize + delta).clamp(0, len.saturating_sub(1) as isize) as usize
        };
        if let Some(at) = self.picking {
            self.picking = Some(clamp(at, SORT_KEYS.len()));
            return;
        }
        match self.view {
            View::Flows => {
                let n = self.visible_flows().len();
                self.flows.selected = clamp(self.flows.selected, n);
            }
            View::Detail => {
                let n = self.detail_events().len();
                if let Some(d) = &mut self.detail {
                    d.event = clamp(d.event, n);
                }
            }
            View::Events => {
                let n = self.visible_events().len();
                self.events.selected = clamp(self.events.selected, n);
            }
            View::Packets => self.move_packets(delta),
        }
    }

    /// The modes a key is looked up in, in the order they take it.
    pub(super) fn key_modes(&self) -> Vec<Mode> {
        let mut modes = vec![Mode::Always];
        if self.editing.is_some() {
            modes.push(Mode::Editing);
        } else if self.error.is_some() && self.report.is_some() {
            // A failed read (a failed load leaves the views' keys: q quits).
            modes.push(Mode::Error);
        } else if self.help {
            modes.push(Mode::Help);
        } else if self.picking.is_some() {
            modes.push(Mode::Picking);
        } else {
            modes.extend(self.live.as_ref().map(|live| Mode::live(live.paused)));
            modes.push(Mode::View(self.view));
        }
        modes
    }

    fn key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        if k.kind == KeyEventKind::Release {
            return Vec::new();
        }
        match keys::binding(&self.key_modes(), k) {
            Some(b) => self.act(b.action),
            None => {
                // Typing a filter: what the table binds nothing to is text.
                if let Some(target) = self.editing {
                    self.type_filter(target, k.code);
                }
                Vec::new()
            }
        }
    }

    /// Does a key's action; only the live ones ask the runtime for something.
    fn act(&mut self, action: Action) -> Vec<Cmd> {
        match action {
            Action::Resume => return self.resume(),
            Action::Save => return self.save(),
            Action::Quit => self.quit = true,
            Action::Help => self.help = true,
            Action::CloseHelp => self.help = false,
            Action::DismissError => self.error = None,
            Action::Move(step) => self.move_selection(step),
            Action::NextView => self.go(self.next_view()),
            Action::PrevView => self.go(self.prev_view()),
            Action::Back => self.go_back(),
            Action::Enter => self.enter(),
            Action::EditFilter(target) => self.editing = Some(target),
            Action::KeepFilter => return self.keep_filter(),
            Action::ClearFilter => self.clear_filter(),
            Action::PickSort => self.picking = Some(self.flows.sort % SORT_KEYS.len()),
            Action::KeepSort => self.keep_sort(),
            Action::CancelSort => self.picking = None,
            Action::ReverseSort => self.reverse_sort(),
            Action::CycleSeverity => self.cycle_severity(),
            Action::FlowPackets => self.flow_packets(),
            Action::AllPackets => self.all_packets(),
            Action::NextEvent => self.next_event(),
            Action::TreeScroll(lines) => {
                self.packets.tree_scroll = self.packets.tree_scroll.saturating_add_signed(lines)
            }
            Action::HexScroll(lines) => {
                self.packets.hex_scroll = self.packets.hex_scroll.saturating_add_signed(lines)
            }
            Action::Pause => self.pause(),
        }
        Vec::new()
    }

    fn filter_text(&mut self, target: Editing) -> &mut String {
        match target {
            Editing::Flows => &mut self.flows.filter,
            Editing::Events => &mut self.events.filter,
            Editing::Packets => &mut self.packets.filter,
        }
    }

    /// A key typed into the `/` filter: a character is text, Backspace takes one back.
    fn type_filter(&mut self, target: Editing, code: KeyCode) {
        let text = self.filter_text(target);
        match code {
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Char(c) => text.push(c),
            _ => {}
        }
        self.filter_changed();
    }

    fn stop_editing(&mut self) {
        self.editing = None;
        self.filter_changed();
    }

    /// Enter: a text filter applies as it is typed; the packets' display filter runs over the file now
    /// (an empty one shows every packet again).
    fn keep_filter(&mut self) -> Vec<Cmd> {
        let packets = self.editing == Some(Editing::Packets);
        self.stop_editing();
        let text = self.packets.filter.trim();
        match (packets, text.is_empty()) {
            (false, _) => Vec::new(),
            (true, true) => {
                self.filtered(None);
                Vec::new()
            }
            (true, false) => vec![Cmd::FilterPackets(text.to_string())],
        }
    }

    fn clear_filter(&mut self) {
        if let Some(target) = self.editing {
            self.filter_text(target).clear();
            if target == Editing::Packets {
                self.filtered(None);
            }
        }
        self.stop_editing();
    }

    /// The packet list shows these frames now (`None`: all), from the top.
    fn filtered(&mut self, matching: Option<Arc<[u64]>>) {
        self.packets.matching = matching;
        self.packets.selected = 0;
        self.packets.offset = 0;
        self.packets.open = false;
    }

    /// The filtered lists start again from the top.
    fn filter_changed(&mut self) {
        self.flows.selected = 0;
        self.events.selected = 0;
    }

    /// The view after this one in Tab order (the flow detail is in the flows' place).
    fn next_view(&self) -> View {
        match self.view {
            View::Flows | View::Detail => View::Packets,
            View::Packets => View::Events,
            View::Events => View::Flows,
        }
    }

    fn prev_view(&self) -> View {
        match self.view {
            View::Flows | View::Detail => View::Events,
            View::Packets => View::Flows,
            View::Events => View::Packets,
        }
    }

    /// Closes the open packet, else goes back to the view before (the flows when there is none).
    fn go_back(&mut self) {
        if self.view == View::Packets && self.packets.open {
            self.packets.open = false;
        } else {
            self.view = self.back.pop().unwrap_or(View::Flows);
        }
    }

    /// The picker's column becomes the sort, in its default direction.
    fn keep_sort(&mut self) {
        if let Some(at) = self.picking.take() {
            self.flows.sort = at;
            self.flows.descending = self.sort_key().descending_by_default();
            self.flows.selected = 0;
        }
    }

    fn reverse_sort(&mut self) {
        self.flows.descending = !self.flows.descending;
        self.flows.selected = 0;
    }

    /// Events shown: all, then warnings and worse, then errors only.
    fn cycle_severity(&mut self) {
        self.events.min_severity = match self.events.min_severity {
            None => Some(Severity::Warning),
            Some(Severity::Warning) => Some(Severity::Error),
            Some(_) => None,
        };
        self.events.selected = 0;
    }

    /// The packets of the detail's flow, else of the flow selected in the flows.
    fn flow_packets(&mut self) {
        let flow = match self.view {
            View::Detail => self.detail.as_ref().map(|d| d.flow),
            _ => self.selected_flow(),
        };
        if let Some(f) = flow {
            self.show_flow_packets(f);
        }
    }

    fn all_packets(&mut self) {
        self.packets.scope = Scope::All;
        self.packets.selected = 0;
        self.packets.offset = 0;
    }

    /// Selects the next frame after the selected one at which the report has an event of the selected
    /// frame's flow or its pair: in the list shown if it holds that frame, else among all frames.
    fn next_event(&mut self) {
        let Some(at) = self.packet_at(self.packets.selected) else {
            return;
        };
        let (Some(flow), Some(r)) = (
            self.packets.rows.get(&at).and_then(|row| row.flow),
            &self.report,
        ) else {
            return;
        };
        let pair = r.flow(flow).and_then(|f| f.paired_with);
        let Some(next) = r
            .events
            .iter()
            .filter(|e| e.frame > at && e.flow.is_some_and(|f| f == flow || Some(f) == pair))
            .map(|e| e.frame)
            .min()
        else {
            return;
        };
        match (0..self.packet_count()).find(|&pos| self.packet_at(pos) == Some(next)) {
            Some(pos) => {
                self.packets.selected = pos;
                self.packets.tree_scroll = 0;
                self.packets.hex_scroll = 0;
                self.center_packets();
            }
            None => self.jump_to_packet(next),
        }
    }

    fn pause(&mut self) {
        if let Some(live) = &mut self.live {
            live.paused = true;
        }
    }

    /// Follows the snapshots again, from the newest that came while paused.
    fn resume(&mut self) -> Vec<Cmd> {
        let Some(live) = &mut self.live else {
            return Vec::new();
        };
        live.paused = false;
        match live.held.take() {
            Some((r, n)) => self.apply_snapshot(r, n),
            None => Vec::new(),
        }
    }

    /// Asks for the frames to be saved, unless a save is under way.
    fn save(&mut self) -> Vec<Cmd> {
        match &mut self.live {
            Some(live) if !live.saving => {
                live.saving = true;
                live.saved = None;
                vec![Cmd::Save]
            }
            _ => Vec::new(),
        }
    }

    fn show_flow_packets(&mut self, flow: u64) {
        self.select_flow(flow);
        self.packets.scope = Scope::Flow(flow);
        self.packets.selected = 0;
        self.packets.offset = 0;
        self.packets.open = false;
        self.go(View::Packets);
    }

    fn enter(&mut self) {
        match self.view {
            View::Flows => {
                if let Some(f) = self.selected_flow() {
                    self.open_detail(f);
                }
            }
            View::Detail => {
                let events = self.detail_events();
                let sel = self.detail.as_ref().map_or(0, |d| d.event);
                let frame = events
                    .get(sel)
                    .and_then(|&i| self.report.as_ref().map(|r| r.events[i].frame));
                match frame {
                    Some(n) => self.jump_to_packet(n),
                    None => {
                        if let Some(f) = self.detail.as_ref().map(|d| d.flow) {
                            self.show_flow_packets(f);
                        }
                    }
                }
            }
            View::Events => {
                let frame = self
                    .visible_events()
                    .get(self.events.selected)
                    .and_then(|&i| self.report.as_ref().map(|r| r.events[i].frame));
                if let Some(n) = frame {
                    self.jump_to_packet(n);
                }
            }
            View::Packets => {
                if self.packet_count() > 0 {
                    self.packets.open = true;
                    self.packets.tree_scroll = 0;
                    self.packets.hex_scroll = 0;
                    self.center_packets();
                }
            }
        }
    }
}

/// A move to either end: further than any list is long (the selection stops at the end).
const TO_THE_END: isize = isize::MAX / 2;

fn flow_text(f: &FlowReport) -> String {
    format!(
        "{} {} 0x{:06x} {} {:?}",
        f.src, f.dst, f.dest_qp, f.dest_qp, f.role
    )
    .to_lowercase()
}

/// The Elm update: applies one message to the model and returns the reads it needs now.
pub fn update(model: &mut Model, msg: Msg) -> Vec<Cmd> {
    match msg {
        Msg::Key(k) => {
            let mut cmds = model.key(k);
            if !model.quit {
                cmds.extend(model.wanted());
            }
            cmds
        }
        Msg::Resize(w, h) => {
            model.width = w;
            model.height = h;
            model.wanted()
        }
        Msg::Tick => Vec::new(),
        Msg::Progress(p) => {
            model.loading = Some(p);
            Vec::new()
        }
        Msg::Snapshot(r, indexed) => {
            if let Some(live) = &mut model.live
                && live.paused
                && model.report.is_some()
            {
                live.held = Some((r, indexed));
                return Vec::new();
            }
            model.apply_snapshot(r, indexed)
        }
        Msg::Saved(result) => {
            if let Some(live) = &mut model.live {
                live.saving = false;
                live.saved = Some(result);
            }
            Vec::new()
        }
        Msg::Series(s) => {
            if let Some(d) = &mut model.detail
                && d.flow == s.flow
            {
                d.series = Some(s);
                d.stale = false;
            }
            model.wanted()
        }
        Msg::Rows(rows) => {
            if model.packets.rows.len() + rows.len() > ROW_CACHE {
                model.packets.rows.clear();
            }
            for r in rows {
                model.packets.rows.insert(r.number, r);
            }
            Vec::new()
        }
        Msg::Packet(p) => {
            // A newly read packet opens at its RoCE headers.
            if model.packets.tree_scroll == 0 {
                model.packets.tree_scroll = p.opens_at;
            }
            model.packets.detail = Some(p);
            Vec::new()
        }
        Msg::Filtered(frames) => {
            model.filtered(Some(frames.into()));
            Vec::new()
        }
        Msg::Error(e) => {
            model.error = Some(e);
            model.loading = None;
            Vec::new()
        }
        Msg::Quit => {
            model.quit = true;
            Vec::new()
        }
    }
}

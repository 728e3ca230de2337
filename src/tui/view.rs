//! The Elm view: draws the model into a frame and changes nothing.
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, Borders, Cell, Chart, Clear, Dataset, GraphType, Paragraph, Row, Sparkline, Table,
    Wrap,
};

use super::data::{FlowSeries, PointKind};
use super::keys::{self, Mode};
use super::model::{Editing, HEADER_LINES, Model, SORT_KEYS, Scope, SortKey, View};
use crate::analysis::events::Severity;
use crate::analysis::flow::Role;
use crate::report::format::{bit_rate as rate, duration};
use crate::report::rank::{Health, health, throughput};
use crate::report::{FlowReport, Report};

/// Smallest terminal drawn; below it a one-line notice.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 10;

struct Theme {
    color: bool,
}

impl Theme {
    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    fn bold(&self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    fn selected(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }

    fn health(&self, h: Health) -> Style {
        match h {
            Health::Good => self.fg(Color::Green),
            Health::Congested => self.fg(Color::Yellow),
            Health::Bad => self.fg(Color::Red),
        }
    }

    fn severity(&self, s: Severity) -> Style {
        match s {
            Severity::Note => self.fg(Color::Cyan),
            Severity::Warning => self.fg(Color::Yellow),
            Severity::Error => self.fg(Color::Red),
        }
    }
}

pub fn view(model: &Model, frame: &mut Frame) {
    let area = frame.area();
    let theme = Theme { color: model.color };
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!(
            "too small: {}x{} (min {MIN_WIDTH}x{MIN_HEIGHT}); q quits",
            area.width, area.height
        );
        frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), area);
        return;
    }
    let [header, body, footer] = Layout::vertical([
        Constraint::Length(HEADER_LINES),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(model, &theme, frame, header);
    match (&model.report, &model.error) {
        (_, Some(e)) => {
            let p = Paragraph::new(format!("error: {e}"))
                .style(theme.fg(Color::Red))
                .wrap(Wrap { trim: false })
                .block(Block::default().borders(Borders::ALL).title("Error"));
            frame.render_widget(p, body);
        }
        (None, None) => {
            let p = model.loading.unwrap_or_default();
            let pct = (p.bytes.saturating_mul(100))
                .checked_div(p.total_bytes)
                .map_or(String::new(), |v| format!(" ({v}%)"));
            let text = if model.live.is_some() {
                format!("Starting the capture ({})…", model.source)
            } else {
                format!("Reading {}: {} frames{pct}", model.source, p.frames)
            };
            frame.render_widget(
                Paragraph::new(text).block(Block::default().borders(Borders::ALL)),
                body,
            );
        }
        (Some(r), None) => match model.view {
            View::Flows => draw_flows(model, r, &theme, frame, body),
            View::Detail => draw_detail(model, r, &theme, frame, body),
            View::Packets => draw_packets(model, &theme, frame, body),
            View::Events => draw_events(model, r, &theme, frame, body),
        },
    }
    draw_footer(model, &theme, frame, footer);
    if model.help {
        draw_help(frame, area);
    } else if let Some(at) = model.picking {
        draw_sort_picker(model, at, &theme, frame, area);
    }
}

/// The sort picker: the flows' columns, the cursor's highlighted, the sort in effect marked.
fn draw_sort_picker(model: &Model, at: usize, theme: &Theme, frame: &mut Frame, area: Rect) {
    let current = model.sort_key();
    let lines: Vec<Line> = SORT_KEYS
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let mark = if *k == current { "•" } else { " " };
            let text = format!("{mark} {}", k.name());
            if i == at {
                Line::styled(text, theme.selected())
            } else {
                Line::raw(text)
            }
        })
        .collect();
    let w = 18.min(area.width);
    let h = (lines.len() as u16 + 2).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    // Scrolled so the cursor shows when the terminal is shorter than the list.
    let scroll = (at as u16).saturating_sub(h.saturating_sub(3));
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines)
            .scroll((scroll, 0))
            .block(Block::default().borders(Borders::ALL).title("Sort by")),
        r,
    );
}

fn draw_header(model: &Model, theme: &Theme, frame: &mut Frame, area: Rect) {
    let tab = |v: View, name: &'static str| {
        let active = model.view == v || (v == View::Flows && model.view == View::Detail);
        if active {
            Span::styled(
                format!("[{name}]"),
                theme.bold().add_modifier(Modifier::REVERSED),
            )
        } else {
            Span::raw(format!(" {name} "))
        }
    };
    let mut l1 = vec![
        Span::styled("rocescope ", theme.bold()),
        tab(View::Flows, "Flows"),
        tab(View::Packets, "Packets"),
        tab(View::Events, "Events"),
        Span::raw("  "),
    ];
    if let Some(live) = &model.live {
        let stopped = model
            .report
            .as_ref()
            .and_then(|r| r.capture_stats.as_ref())
            .map(|s| s.stopped_by.name())
            .filter(|s| !s.is_empty());
        let (tag, color) = match (stopped, live.paused) {
            (Some(why), _) => (format!("STOPPED ({why})"), Color::Red),
            (None, true) => ("PAUSED".to_string(), Color::Yellow),
            (None, false) => ("LIVE".to_string(), Color::Green),
        };
        l1.push(Span::styled(
            tag,
            theme
                .fg(color)
                .add_modifier(Modifier::BOLD | Modifier::REVERSED),
        ));
        l1.push(Span::raw(" "));
    }
    l1.push(Span::raw(model.source.clone()));
    let mut l2 = Vec::new();
    if let Some(r) = &model.report {
        let c = &r.capture;
        l1.push(Span::raw(format!(
            "  {} frames ({} RoCE) {:.6}s {} flows",
            c.frames,
            c.roce_frames,
            c.duration_s,
            r.flows.len()
        )));
        let (word, color) = match r.verdict.status {
            crate::report::Status::Fail => ("FAIL", Color::Red),
            crate::report::Status::Pass => ("PASS", Color::Green),
            crate::report::Status::NoRoce => ("NO ROCE TRAFFIC", Color::Yellow),
        };
        l2.push(Span::styled(
            word,
            theme.fg(color).add_modifier(Modifier::BOLD),
        ));
        l2.push(Span::raw(format!(
            "  malformed {} ICRC bad {}",
            c.malformed, c.icrc_bad
        )));
        if c.truncated {
            l2.push(Span::styled(
                "  CUT SHORT",
                theme.fg(Color::Red).add_modifier(Modifier::BOLD),
            ));
        }
        if c.clock_jumps > 0 {
            l2.push(Span::styled(
                format!("  clock jumped {}x", c.clock_jumps),
                theme.fg(Color::Yellow),
            ));
        }
        if let Some(s) = &r.capture_stats {
            let lost = s.dropped + s.if_dropped > 0;
            l2.push(Span::styled(
                format!(
                    "  pcap received {} dropped {} if-dropped {}",
                    s.received, s.dropped, s.if_dropped
                ),
                if lost {
                    theme.fg(Color::Red).add_modifier(Modifier::BOLD)
                } else {
                    Style::default()
                },
            ));
        }
        if let Some(n) = r.counters.as_ref().filter(|n| !n.relations.is_empty()) {
            // So far: frames in flight make a live disagreement transient; the final report judges.
            l2.push(match n.disagreements {
                0 => Span::styled(
                    format!("  NIC agrees ({})", n.relations.len()),
                    theme.fg(Color::Green),
                ),
                d => Span::styled(
                    format!("  NIC: {d} of {} differ", n.relations.len()),
                    theme.fg(Color::Yellow),
                ),
            });
        }
        if r.pfc.is_empty() && r.link_pause.is_none() {
            l2.push(Span::raw("  PFC none"));
        }
        for p in &r.pfc {
            l2.push(Span::styled(
                format!(
                    "  PFC p{}: {} XOFF {} XON {:.1}us",
                    p.priority, p.xoff, p.xon, p.pause_us
                ),
                theme.fg(Color::Yellow),
            ));
        }
        if let Some(p) = &r.link_pause {
            l2.push(Span::styled(
                format!("  PAUSE: {} XOFF {:.1}us", p.xoff, p.pause_us),
                theme.fg(Color::Yellow),
            ));
        }
    }
    // What the reader said of the file (cut short, a damaged block: the figures stop there), else the worst
    // story: on every view, what broke, before anything else.
    let cut = model
        .report
        .as_ref()
        .and_then(|r| r.capture.truncation.as_deref());
    let banner = match (cut, model.report.as_ref()) {
        (Some(why), _) => Line::from(Span::styled(
            format!("WARNING: {why}: analysed up to the cut"),
            theme.fg(Color::Red).add_modifier(Modifier::BOLD),
        )),
        (None, Some(r)) => match crate::report::story::lines(r).into_iter().next() {
            Some(story) => {
                let worst = r.flows.first().map_or(Health::Good, health);
                Line::from(Span::styled(story, theme.health(worst)))
            }
            None => Line::raw(""),
        },
        (None, None) => Line::raw(""),
    };
    frame.render_widget(
        Paragraph::new(vec![Line::from(l1), Line::from(l2), banner]),
        area,
    );
}

/// The footer's key hints, the help's or else the view's, in `width` columns.
fn footer_keys(model: &Model, width: usize) -> String {
    let mode = if model.help {
        Mode::Help
    } else if model.picking.is_some() {
        Mode::Picking
    } else {
        Mode::View(model.view)
    };
    keys::hints_within(mode, width)
}

fn draw_footer(model: &Model, theme: &Theme, frame: &mut Frame, area: Rect) {
    let line = match model.editing {
        Some(e) => {
            let text = match e {
                Editing::Flows => &model.flows.filter,
                Editing::Events => &model.events.filter,
                Editing::Packets => &model.packets.filter,
            };
            Line::from(vec![
                Span::styled("filter: ", theme.bold()),
                Span::raw(format!("{text}_")),
                Span::raw(format!("   {}", keys::hints(Mode::Editing))),
            ])
        }
        None => {
            let mut spans = Vec::new();
            if let Some(live) = &model.live {
                match (&live.saved, live.saving) {
                    (_, true) => spans.push(Span::styled("saving… ", theme.bold())),
                    (Some(Ok(m)), _) => {
                        spans.push(Span::styled(format!("w: {m}  "), theme.fg(Color::Green)))
                    }
                    (Some(Err(e)), _) => spans.push(Span::styled(
                        format!("w failed: {e}  "),
                        theme.fg(Color::Red).add_modifier(Modifier::BOLD),
                    )),
                    (None, false) => spans.push(Span::styled(
                        format!("{}  ", keys::hints(Mode::live(live.paused))),
                        theme.fg(Color::DarkGray),
                    )),
                }
            }
            let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
            let room = usize::from(area.width).saturating_sub(used);
            spans.push(Span::styled(
                footer_keys(model, room),
                theme.fg(Color::DarkGray),
            ));
            Line::from(spans)
        }
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// The help screen: a title, the key table's lines, the colours' meaning.
fn help_text() -> Vec<String> {
    // No blank line under the title: the whole help fits an 80x24 terminal.
    let mut lines = vec!["rocescope tui: keys".to_string()];
    lines.extend(keys::help_lines());
    lines.extend(
        [
            "",
            "Colours: red loss/NAK/damage, yellow congestion (CE, CNP), green clean.",
            "NO_COLOR turns colours off.",
        ]
        .map(String::from),
    );
    lines
}

fn draw_help(frame: &mut Frame, area: Rect) {
    let text = help_text();
    let w = (text.iter().map(|l| l.chars().count()).max().unwrap_or(0) as u16 + 4).min(area.width);
    let h = (text.len() as u16 + 2).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    frame.render_widget(Clear, r);
    let lines: Vec<Line> = text.into_iter().map(Line::raw).collect();
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title("Help")),
        r,
    );
}

/// The flow's counters in groups: PSNs, NAKs, congestion, damage.
fn counters_line(f: &FlowReport) -> String {
    let mut line = String::new();
    for (i, (name, value)) in FlowReport::COUNTERS.iter().zip(f.counters()).enumerate() {
        // Two spaces before a new group (NAK, CNP, ICRC).
        let sep = match i {
            0 => "",
            5 | 7 | 9 => "  ",
            _ => " ",
        };
        line.push_str(&format!("{sep}{name} {value}"));
    }
    line
}

/// A text sparkline of `values` in `width` cells (each cell the largest value it covers).
pub fn spark(values: &[u64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    if values.is_empty() || width == 0 {
        return String::new();
    }
    let cells = values.len().min(width);
    let per = values.len().div_ceil(cells);
    let maxes: Vec<u64> = values
        .chunks(per)
        .map(|c| c.iter().copied().max().unwrap_or(0))
        .collect();
    let top = maxes.iter().copied().max().unwrap_or(0).max(1);
    maxes
        .iter()
        .map(|&v| {
            if v == 0 {
                ' '
            } else {
                BARS[((v * 7) / top) as usize]
            }
        })
        .collect()
}

fn role(r: Role) -> &'static str {
    match r {
        Role::Requester => "requester",
        Role::Responder => "responder",
        Role::Both => "both",
        Role::Datagram => "datagram",
        Role::Cnp => "cnp",
        Role::Unknown => "unknown",
    }
}

fn lat(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 1000.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
        None => "-".to_string(),
    }
}

/// A flows-table column: title, width, sort key, drop order (lower stays longer), cell.
struct Col {
    title: &'static str,
    width: u16,
    key: SortKey,
    keep: u8,
    cell: fn(&FlowReport, &Report) -> String,
}

fn columns(endpoints: u16) -> Vec<Col> {
    fn c(
        title: &'static str,
        width: u16,
        key: SortKey,
        keep: u8,
        cell: fn(&FlowReport, &Report) -> String,
    ) -> Col {
        Col {
            title,
            width,
            key,
            keep,
            cell,
        }
    }
    vec![
        c("id", 5, SortKey::Id, 0, |f, _| f.id.to_string()),
        c("endpoints", endpoints, SortKey::Endpoints, 0, |f, _| {
            format!("{} → {}", f.src, f.dst)
        }),
        c("QP", 8, SortKey::Qp, 0, |f, _| {
            format!("0x{:06x}", f.dest_qp)
        }),
        c("role", 9, SortKey::Role, 3, |f, _| {
            let short = match f.role {
                Role::Requester => "req",
                Role::Responder => "resp",
                Role::Both => "both",
                Role::Datagram => "ud",
                Role::Cnp => "cnp",
                Role::Unknown => "?",
            };
            match f.paired_with {
                Some(p) => format!("{short}↔{p}"),
                None => short.to_string(),
            }
        }),
        c("state", 12, SortKey::State, 0, |f, _| {
            f.state.name().to_string()
        }),
        c("conn", 9, SortKey::Connection, 3, |f, r| {
            f.connection.map_or("-".to_string(), |c| {
                let state = r
                    .connections
                    .get(c as usize)
                    .map_or("", |c| c.state.short());
                format!("#{c} {state}")
            })
        }),
        c("pkts", 12, SortKey::Packets, 1, |f, _| {
            f.packets.to_string()
        }),
        c("throughput", 18, SortKey::Throughput, 5, |f, _| {
            format!("{} {}", rate(throughput(f)), spark(&f.series.bytes, 6))
        }),
        c("gaps", 9, SortKey::Gaps, 0, |f, _| {
            f.psn.gap_events.to_string()
        }),
        c("miss", 9, SortKey::Missing, 1, |f, _| {
            f.psn.missing.to_string()
        }),
        c("retx", 9, SortKey::Retransmitted, 1, |f, _| {
            f.psn.retransmitted.to_string()
        }),
        c("NAK", 8, SortKey::Naks, 1, |f, _| {
            f.naks.total().to_string()
        }),
        c("RNR", 8, SortKey::Rnr, 2, |f, _| f.rnr_naks.to_string()),
        c("CNP", 9, SortKey::Cnp, 2, |f, _| f.cnp.to_string()),
        c("CE", 9, SortKey::Ce, 2, |f, _| f.ecn.ce.to_string()),
        c("ICRC", 8, SortKey::Icrc, 2, |f, _| f.icrc_bad.to_string()),
        c("p50µs", 8, SortKey::P50, 4, |f, _| {
            lat(f.latency_us.map(|l| l.p50))
        }),
        c("p99µs", 8, SortKey::P99, 4, |f, _| {
            lat(f.latency_us.map(|l| l.p99))
        }),
    ]
}

/// The columns that fit in `width`: the least needed go first.
/// Each column as wide as its title (and sort arrow) or its widest cell on screen, at most its nominal
/// width; then the least needed columns go until the rest fit in `width`.
fn fitting(
    width: u16,
    endpoints: u16,
    shown: &[&FlowReport],
    r: &Report,
    sort: SortKey,
) -> Vec<Col> {
    let mut cols = columns(endpoints);
    for c in &mut cols {
        let title = c.title.chars().count() + usize::from(c.key == sort);
        let widest = shown
            .iter()
            .map(|f| (c.cell)(f, r).chars().count() + usize::from(c.key == SortKey::Id))
            .max()
            .unwrap_or(0);
        let need = widest.max(title) as u16;
        c.width = need.min(c.width.max(title as u16));
    }
    let total = |cols: &[Col]| cols.iter().map(|c| c.width + 1).sum::<u16>();
    while total(&cols) > width {
        let Some((i, _)) = cols
            .iter()
            .enumerate()
            .filter(|(_, c)| c.keep > 0)
            .max_by_key(|(i, c)| (c.keep, *i))
        else {
            break;
        };
        cols.remove(i);
    }
    let all = total(&cols);
    if all > width
        && let Some(ep) = cols.iter_mut().find(|c| c.key == SortKey::Endpoints)
    {
        // Still too wide: the endpoints give up room (and are cut).
        let others = all - (ep.width + 1);
        ep.width = width.saturating_sub(others + 1).max(9);
    }
    cols
}

fn draw_flows(model: &Model, r: &Report, theme: &Theme, frame: &mut Frame, area: Rect) {
    let ids = model.visible_flows();
    let key = model.sort_key();
    let endpoints = r
        .flows
        .iter()
        .map(|f| f.src.chars().count() + f.dst.chars().count() + 3)
        .max()
        .unwrap_or(9)
        .clamp(9, 45) as u16;
    let h = usize::from(area.height.saturating_sub(3)).max(1);
    let offset = model.flows.selected.saturating_sub(h - 1);
    let shown: Vec<&FlowReport> = ids
        .iter()
        .skip(offset)
        .take(h)
        .map(|&i| &r.flows[i])
        .collect();
    let cols = fitting(area.width.saturating_sub(2), endpoints, &shown, r, key);
    let arrow = if model.flows.descending { "↓" } else { "↑" };
    let header = Row::new(cols.iter().map(|c| {
        let t = if c.key == key {
            format!("{}{arrow}", c.title)
        } else {
            c.title.to_string()
        };
        Cell::from(t).style(theme.bold())
    }));
    let rows = ids
        .iter()
        .enumerate()
        .skip(offset)
        .take(h)
        .map(|(pos, &i)| {
            let f = &r.flows[i];
            let style = if pos == model.flows.selected {
                theme.health(health(f)).patch(theme.selected())
            } else {
                theme.health(health(f))
            };
            let mark = if pos == model.flows.selected {
                "▶"
            } else {
                " "
            };
            Row::new(cols.iter().map(|c| {
                let text = (c.cell)(f, r);
                Cell::from(if c.key == SortKey::Id {
                    format!("{mark}{text}")
                } else {
                    text
                })
            }))
            .style(style)
        });
    let filter = if model.flows.filter.is_empty() {
        String::new()
    } else {
        format!(" filter \"{}\"", model.flows.filter)
    };
    let title = format!(
        "Flows {}/{}  sort: {} {arrow}{filter}",
        ids.len(),
        r.flows.len(),
        key.name()
    );
    let table = Table::new(rows, cols.iter().map(|c| Constraint::Length(c.width)))
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(title));
    frame.render_widget(table, area);
    let _ = SORT_KEYS;
}

/// The flow's throughput over its life, from the re-read (fine slices) else the report's series; under it,
/// per column, ▲ where a CNP reached its sender and ▒ where its priority was paused.
fn draw_throughput(
    series: Option<&FlowSeries>,
    f: &FlowReport,
    r: &Report,
    theme: &Theme,
    frame: &mut Frame,
    area: Rect,
) {
    let width = usize::from(area.width.saturating_sub(2)).max(1);
    // The flow's life, from the capture's start, seconds: the re-read's slices start at its first packet,
    // the report's buckets at its first bucket.
    let life_start = f.first_time - r.capture.first_time.unwrap_or(f.first_time);
    let (values, bucket_s, cnps, start): (&[u64], f64, &[bool], f64) = match series {
        Some(s) if !s.throughput.is_empty() => {
            (&s.throughput, s.bucket_s, &s.cnp_marks, life_start)
        }
        _ => {
            let bucket_s = f.series.bucket_seconds as f64;
            let start = f.series.first_bucket as f64 * bucket_s;
            (&f.series.bytes, bucket_s, &[], start)
        }
    };
    let per = values.len().div_ceil(width).max(1);
    let data: Vec<u64> = values
        .chunks(per)
        .map(|c| c.iter().sum::<u64>() / per as u64)
        .collect();
    let peak = values.iter().copied().max().unwrap_or(0) as f64 / bucket_s.max(1e-9);
    let block = Block::default().borders(Borders::ALL).title(format!(
        "Throughput over the flow's life ({} per slice, peak {}; ▲ CNP to its sender, ▒ its priority paused)",
        duration(bucket_s * per as f64),
        rate(peak)
    ));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [spark, marks] =
        Layout::vertical([Constraint::Length(1), Constraint::Length(1)]).areas(inner);
    frame.render_widget(
        Sparkline::default()
            .data(&data)
            .style(theme.fg(Color::Cyan)),
        spark,
    );
    let slice = bucket_s * per as f64;
    let line: String = (0..data.len())
        .map(|i| {
            let cnp = cnps.iter().skip(i * per).take(per).any(|c| *c);
            let (a, b) = (start + i as f64 * slice, start + (i + 1) as f64 * slice);
            if cnp {
                '▲'
            } else if paused_within(r, f.priority, a, b) {
                '▒'
            } else {
                ' '
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(line).style(theme.fg(Color::Yellow)), marks);
}

/// `priority` was paused at some time from `a` to `b` (seconds since the capture's start).
fn paused_within(r: &Report, priority: Option<u8>, a: f64, b: f64) -> bool {
    let Some(p) = r.pfc.iter().find(|p| Some(p.priority) == priority) else {
        return false;
    };
    let w = p.paused_series.bucket_us / 1e6;
    if w <= 0.0 {
        return false;
    }
    // A slice that only touches a bucket's edge does not meet it (1e-9: the seconds' rounding).
    let first = (a / w + 1e-9).floor().max(0.0) as usize;
    let last = (b / w - 1e-9).ceil().max(0.0) as usize;
    p.paused_series
        .fraction
        .iter()
        .take(last)
        .skip(first)
        .any(|x| *x > 0.0)
}

/// A flow's share of the link and its CNPs' side: what its sender did after them, how often they came.
fn congestion_line(f: &FlowReport) -> String {
    let t = &f.throughput;
    let mut out = format!(
        "link {:.2}% (peak {:.2}%)",
        t.link_share.unwrap_or(0.0) * 100.0,
        t.peak_link_share * 100.0
    );
    if let Some(c) = &f.cnp_reaction {
        let pct = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{:.0}%", x * 100.0));
        out.push_str(&format!(
            "  CNPs to its sender {}: rate cut {} median, {} worst, {} of {} measured not cut",
            c.cnps,
            pct(c.median_reduction),
            pct(c.worst_reduction),
            c.no_reduction,
            c.measured
        ));
    }
    if let Some(i) = &f.cnp_interval_us {
        out.push_str(&format!("  CNP interval {:.1} µs min", i.min));
    }
    if let Some((l, d)) = f.life.as_ref().and_then(|l| Some((l, l.dominant?))) {
        let share = l.shares.get(d.name()).copied().unwrap_or(0.0);
        out.push_str(&format!(
            "  life: {:.0}% {} (window {})",
            share * 100.0,
            d.name(),
            l.window
        ));
    }
    out
}

fn draw_detail(model: &Model, r: &Report, theme: &Theme, frame: &mut Frame, area: Rect) {
    let Some(d) = &model.detail else { return };
    let Some(f) = r.flow(d.flow) else {
        return;
    };
    let events = model.detail_events();
    let ev_h = (events.len() as u16 + 2).clamp(3, (area.height / 4).clamp(3, 8));
    let story = crate::report::story::of_flow(r, f.id);
    let [summary, chart, thr, ev] = Layout::vertical([
        Constraint::Length(4 + u16::from(story.is_some())),
        Constraint::Min(6),
        Constraint::Length(4),
        Constraint::Length(ev_h),
    ])
    .areas(area);
    // Summary.
    let pair = f.paired_with.map_or(String::new(), |p| format!(" ↔#{p}"));
    let latency = |name: &str, l: Option<crate::report::Latency>| match l {
        Some(l) => format!(
            "{name} µs p50 {} p90 {} p99 {} max {} ({})",
            lat(Some(l.p50)),
            lat(Some(l.p90)),
            lat(Some(l.p99)),
            lat(Some(l.max)),
            l.samples
        ),
        None => format!("{name} -"),
    };
    let lines = vec![
        Line::from(vec![
            Span::styled(
                format!(
                    "#{} {} → {} QP 0x{:06x} {}{pair}",
                    f.id,
                    f.src,
                    f.dst,
                    f.dest_qp,
                    role(f.role)
                ),
                theme.health(health(f)).add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!(
                "  {} pkts {} B {}",
                f.packets,
                f.bytes,
                rate(throughput(f))
            )),
        ]),
        Line::raw(counters_line(f)),
        Line::raw(format!(
            "latency {}  {}",
            latency("ack", f.latency_us),
            latency("read", f.read_latency_us)
        )),
        Line::raw(congestion_line(f)),
    ];
    let mut lines = lines;
    if let Some(story) = story {
        lines.insert(
            1,
            Line::from(Span::styled(
                format!("What happened: {story}"),
                theme.health(health(f)),
            )),
        );
    }
    frame.render_widget(Paragraph::new(lines), summary);
    draw_chart(model, r, theme, frame, chart);
    draw_throughput(d.series.as_deref(), f, r, theme, frame, thr);
    // Events.
    let h = usize::from(ev.height.saturating_sub(2)).max(1);
    let rows = event_rows(r, &events, d.event, h, theme, false);
    let table = Table::new(
        rows,
        [
            Constraint::Length(8),
            Constraint::Length(11),
            Constraint::Length(12),
            Constraint::Min(10),
        ],
    )
    .block(
        Block::default()
            .borders(Borders::ALL)
            .title(format!("Events of this flow ({})", events.len())),
    );
    frame.render_widget(table, ev);
}

fn draw_chart(model: &Model, r: &Report, theme: &Theme, frame: &mut Frame, area: Rect) {
    let Some(d) = &model.detail else { return };
    let block = Block::default().borders(Borders::ALL);
    let Some(s) = &d.series else {
        frame.render_widget(
            Paragraph::new("reading the flow's PSNs…").block(block.title("PSN vs time")),
            area,
        );
        return;
    };
    let pts = |k: PointKind| -> Vec<(f64, f64)> {
        s.points
            .iter()
            .filter(|p| p.kind == k)
            .map(|p| (p.t, p.psn as f64))
            .collect()
    };
    let (req, gap, retx, nak) = (
        pts(PointKind::Request),
        pts(PointKind::Gap),
        pts(PointKind::Retransmission),
        pts(PointKind::Nak),
    );
    // The legend is the title, in the marks' colours: a legend inside the chart would cover its newest points.
    let mut title = vec![Span::raw("PSN vs time: ")];
    for (i, (n, name, color)) in [
        (req.len(), "requests", Color::Cyan),
        (gap.len(), "gaps", Color::Yellow),
        (retx.len(), "retransmissions", Color::Red),
        (nak.len(), "NAKs", Color::Magenta),
    ]
    .into_iter()
    .enumerate()
    {
        let sep = if i == 0 { "" } else { ", " };
        title.push(Span::raw(sep));
        title.push(Span::styled(format!("{n} {name}"), theme.fg(color)));
    }
    if s.stride > 1 {
        title.push(Span::raw(format!(" (1 request in {} shown)", s.stride)));
    }
    let title = Line::from(title);
    let Some((t0, mut t1, p0, mut p1)) = s.bounds() else {
        frame.render_widget(
            Paragraph::new("no requests in this flow (responses, CNPs or datagrams only)")
                .block(block.title(title)),
            area,
        );
        return;
    };
    if t1 <= t0 {
        t1 = t0 + 1e-6;
    }
    if p1 <= p0 {
        p1 = p0 + 1.0;
    }
    let (tp, pp) = ((t1 - t0) * 0.02, ((p1 - p0) * 0.05).max(0.5));
    let mut sets = vec![
        Dataset::default()
            .name("requests")
            .marker(Marker::Braille)
            .graph_type(GraphType::Scatter)
            .style(theme.fg(Color::Cyan))
            .data(&req),
    ];
    for (name, data, color, marker) in [
        ("gaps", &gap, Color::Yellow, Marker::Block),
        ("retransmissions", &retx, Color::Red, Marker::Dot),
        ("NAKs", &nak, Color::Magenta, Marker::Bar),
    ] {
        if !data.is_empty() {
            sets.push(
                Dataset::default()
                    .name(name)
                    .marker(marker)
                    .graph_type(GraphType::Scatter)
                    .style(theme.fg(color).add_modifier(Modifier::BOLD))
                    .data(data),
            );
        }
    }
    let _ = r;
    let chart = Chart::new(sets)
        .block(block.title(title))
        .x_axis(
            Axis::default()
                .title("s")
                .bounds([t0 - tp, t1 + tp])
                .labels([format!("{t0:.6}"), format!("{t1:.6}")]),
        )
        .y_axis(
            Axis::default()
                .title("PSN")
                .bounds([p0 - pp, p1 + pp])
                .labels([format!("{p0:.0}"), format!("{p1:.0}")]),
        )
        .legend_position(None);
    frame.render_widget(chart, area);
}

fn draw_packets(model: &Model, theme: &Theme, frame: &mut Frame, area: Rect) {
    let n = model.packet_count();
    let list_h = model.packet_list_height() as u16;
    let (list, rest) = if model.packets.open {
        let [a, b] =
            Layout::vertical([Constraint::Length(list_h + 3), Constraint::Min(1)]).areas(area);
        (a, Some(b))
    } else {
        (area, None)
    };
    let scope = match model.packets.scope {
        Scope::All if model.live.is_some() => format!(
            "frames {}..{} (the newest, buffered)",
            model.first_frame,
            model.first_frame + model.indexed.saturating_sub(1)
        ),
        Scope::All => match &model.packets.matching {
            Some(m) => format!(
                "{} of {} frames pass {}",
                m.len(),
                model.indexed,
                model.packets.filter
            ),
            None => "all frames".to_string(),
        },
        Scope::Flow(f) => {
            let cut = model
                .detail
                .as_ref()
                .and_then(|d| d.series.as_ref())
                .is_some_and(|s| s.frames_truncated);
            format!(
                "flow #{f} and its pair{}",
                if cut { " (the first frames only)" } else { "" }
            )
        }
    };
    let loading_series = matches!(model.packets.scope, Scope::Flow(f)
        if model.detail.as_ref().is_none_or(|d| d.flow != f || d.series.is_none()));
    let title = if loading_series {
        format!("Packets: {scope} (reading…)")
    } else {
        format!(
            "Packets: {scope}  {}/{}",
            (model.packets.selected + 1).min(n),
            n
        )
    };
    // Full opcode names where they fit, short ones (`WR_F`) at 80 columns.
    let wide = list.width >= 120;
    let header = Row::new(
        [
            "No.",
            "Time",
            "Source",
            "Destination",
            "QP",
            "Opcode",
            "PSN",
            "Info",
        ]
        .map(|t| Cell::from(t).style(theme.bold())),
    );
    let mark = |pos: usize| {
        if pos == model.packets.selected {
            "▶"
        } else {
            " "
        }
    };
    let rows = (model.packets.offset..model.packets.offset + usize::from(list_h))
        .filter_map(|pos| model.packet_at(pos).map(|num| (pos, num)))
        .map(|(pos, num)| {
            let row = match model.packets.rows.get(&num) {
                Some(r) => {
                    let style = if r.bad {
                        theme.fg(Color::Red)
                    } else {
                        Style::default()
                    };
                    Row::new(vec![
                        Cell::from(format!("{}{num}", mark(pos))),
                        Cell::from(format!("{:.6}", r.time)),
                        Cell::from(r.src.clone()),
                        Cell::from(r.dst.clone()),
                        Cell::from(r.qp.map_or(String::new(), |q| format!("0x{q:06x}"))),
                        Cell::from(if wide { &r.opcode } else { &r.opcode_short }.clone()),
                        Cell::from(r.psn.map_or(String::new(), |p| p.to_string())),
                        Cell::from(r.info.clone()),
                    ])
                    .style(style)
                }
                None => Row::new(vec![
                    Cell::from(format!("{}{num}", mark(pos))),
                    Cell::from("…"),
                ]),
            };
            if pos == model.packets.selected {
                row.style(theme.selected())
            } else {
                row
            }
        });
    let table = Table::new(
        rows,
        [
            Constraint::Length(8),
            Constraint::Length(10),
            Constraint::Length(15),
            Constraint::Length(15),
            Constraint::Length(8),
            Constraint::Length(if wide { 24 } else { 10 }),
            Constraint::Length(8),
            Constraint::Min(0),
        ],
    )
    .header(header)
    .block(Block::default().borders(Borders::ALL).title(title));
    frame.render_widget(table, list);
    let Some(rest) = rest else { return };
    let Some(d) = model
        .packets
        .detail
        .as_ref()
        .filter(|d| Some(d.number) == model.packet_at(model.packets.selected))
    else {
        frame.render_widget(
            Paragraph::new("reading the packet…").block(Block::default().borders(Borders::ALL)),
            rest,
        );
        return;
    };
    let hex_h = (d.hex.len() as u16 + 2).min(rest.height / 3).max(3);
    let [tree, hex] = Layout::vertical([Constraint::Min(3), Constraint::Length(hex_h)]).areas(rest);
    let lines: Vec<Line> = d
        .tree
        .iter()
        .map(|(head, t)| {
            if *head {
                Line::styled(t.clone(), theme.bold())
            } else {
                Line::raw(format!("    {t}"))
            }
        })
        .collect();
    frame.render_widget(
        Paragraph::new(lines)
            .scroll((model.packets.tree_scroll, 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(format!("Frame {} (-V)", d.number)),
            ),
        tree,
    );
    let hex_lines: Vec<Line> = d.hex.iter().map(|l| Line::raw(l.clone())).collect();
    frame.render_widget(
        Paragraph::new(hex_lines)
            .scroll((model.packets.hex_scroll, 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(format!("Hex ({} lines)", d.hex.len())),
            ),
        hex,
    );
}

/// The rows of an event table: `ids` (indexes into the report's events) scrolled so that `selected` is on
/// one of the `h` rows; the whole list has a flow column, a flow's own list names the frame instead.
fn event_rows<'a>(
    r: &'a Report,
    ids: &'a [usize],
    selected: usize,
    h: usize,
    theme: &'a Theme,
    all_flows: bool,
) -> impl Iterator<Item = Row<'a>> {
    let first = r.capture.first_time.unwrap_or(0.0);
    ids.iter()
        .enumerate()
        .skip(selected.saturating_sub(h - 1))
        .take(h)
        .map(move |(pos, &i)| {
            let e = &r.events[i];
            let mut style = theme.severity(e.severity);
            if pos == selected {
                style = style.patch(theme.selected());
            }
            let mark = if pos == selected { "▶" } else { " " };
            let mut cells = vec![
                Cell::from(format!("{mark}{:?}", e.severity).to_lowercase()),
                Cell::from(format!("{:.6}", e.time - first)),
            ];
            if all_flows {
                cells.push(Cell::from(e.frame.to_string()));
                cells.push(Cell::from(e.flow.map_or("-".into(), |f| format!("#{f}"))));
            } else {
                cells.push(Cell::from(format!("frame {}", e.frame)));
            }
            cells.push(Cell::from(e.message.clone()));
            Row::new(cells).style(style)
        })
}

fn draw_events(model: &Model, r: &Report, theme: &Theme, frame: &mut Frame, area: Rect) {
    let ids = model.visible_events();
    let h = usize::from(area.height.saturating_sub(3)).max(1);
    let rows = event_rows(r, &ids, model.events.selected, h, theme, true);
    let sev = match model.events.min_severity {
        None => "all",
        Some(Severity::Note) => "note+",
        Some(Severity::Warning) => "warning+",
        Some(Severity::Error) => "error",
    };
    let filter = if model.events.filter.is_empty() {
        String::new()
    } else {
        format!(" filter \"{}\"", model.events.filter)
    };
    let dropped = if r.events_dropped > 0 {
        format!(" ({} more dropped)", r.events_dropped)
    } else {
        String::new()
    };
    let table = Table::new(
        rows,
        [
            Constraint::Length(8),
            Constraint::Length(11),
            Constraint::Length(8),
            Constraint::Length(5),
            Constraint::Min(10),
        ],
    )
    .header(Row::new(
        ["sev", "time", "frame", "flow", "event"].map(|t| Cell::from(t).style(theme.bold())),
    ))
    .block(Block::default().borders(Borders::ALL).title(format!(
        "Events {}/{}  severity: {sev}{filter}{dropped}",
        ids.len(),
        r.events.len()
    )));
    frame.render_widget(table, area);
}

//! The key bindings as data: which keys do what, where, and how the footer and the help name them.
//! [`Model`](super::model::Model) looks a key up here and runs its [`Action`]; the view draws the footer
//! hints and the help screen from the same table, so a binding and its description cannot drift apart.
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::model::{Editing, View};

/// Where a binding applies: a view, or a mode that takes the keys before the views do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every mode and view.
    Always,
    /// Typing a `/` filter: keys without a binding here are the text.
    Editing,
    /// A failed read's message shows over the report.
    Error,
    /// The help is open.
    Help,
    /// The flows' sort picker is open.
    Picking,
    /// A live capture whose display follows the snapshots.
    Live,
    /// A live capture whose display is paused.
    Paused,
    /// A view, when no mode above takes the key.
    View(View),
}

impl Mode {
    /// A live capture's mode.
    pub fn live(paused: bool) -> Mode {
        if paused { Mode::Paused } else { Mode::Live }
    }
}

/// How far a selection moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Up,
    Down,
    PageUp,
    PageDown,
    First,
    Last,
}

/// What a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    /// Opens the help.
    Help,
    CloseHelp,
    DismissError,
    /// Moves the selection of the view's list (in the flow detail, of its events).
    Move(Step),
    NextView,
    PrevView,
    /// Closes the open packet, else goes back to the view before.
    Back,
    /// Drills down: a flow's detail, an event's packet, a packet's tree and hex.
    Enter,
    /// Starts typing this list's text filter.
    EditFilter(Editing),
    /// Stops typing, the filter kept.
    KeepFilter,
    /// Stops typing, the filter cleared.
    ClearFilter,
    /// Opens the sort picker.
    PickSort,
    /// The picker's column becomes the sort.
    KeepSort,
    /// Closes the picker, the sort unchanged.
    CancelSort,
    ReverseSort,
    CycleSeverity,
    /// The packets of the selected flow and its pair.
    FlowPackets,
    /// Every frame of the capture.
    AllPackets,
    /// The next frame with an event of the selected frame's flow (or its pair).
    NextEvent,
    /// Scrolls the open packet's tree by this many lines.
    TreeScroll(i16),
    /// Scrolls the open packet's hex dump by this many lines.
    HexScroll(i16),
    /// Live: freezes the display (the capture goes on).
    Pause,
    Resume,
    /// Live: saves the frames.
    Save,
}

/// A key a binding answers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// This key with at least these modifiers: further ones are ignored, as terminals add Shift to
    /// capitals, symbols and BackTab.
    Press(KeyCode, KeyModifiers),
    /// Any key the mode binds nothing else to.
    Any,
}

impl Key {
    fn is_pressed_by(self, event: KeyEvent) -> bool {
        matches!(self, Key::Press(code, modifiers)
            if code == event.code && event.modifiers.contains(modifiers))
    }

    /// The key's name in the footer and the help.
    pub fn name(self) -> String {
        match self {
            Key::Any => "any key".to_string(),
            Key::Press(code, modifiers) if modifiers.contains(KeyModifiers::CONTROL) => {
                format!("Ctrl-{}", code_name(code).to_uppercase())
            }
            Key::Press(code, _) => code_name(code),
        }
    }
}

fn code_name(code: KeyCode) -> String {
    let name = match code {
        KeyCode::Up => "↑",
        KeyCode::Down => "↓",
        KeyCode::Left => "←",
        KeyCode::Right => "→",
        KeyCode::PageUp => "PgUp",
        KeyCode::PageDown => "PgDn",
        KeyCode::BackTab => "S-Tab",
        KeyCode::Backspace => "Bksp",
        KeyCode::Char(' ') => "space",
        KeyCode::Char(c) => return c.to_string(),
        other => return other.to_string(),
    };
    name.to_string()
}

/// Keys that do one thing in some modes or views, and what the footer and the help say about it.
#[derive(Debug)]
pub struct Binding {
    pub keys: &'static [Key],
    pub modes: &'static [Mode],
    pub action: Action,
    /// The footer's hint after the first key's name ("" for none).
    pub hint: &'static str,
    /// The help screen's line: bindings with the same text share it ("" for none; a newline continues
    /// the text under itself).
    pub help: &'static str,
}

const fn bind(
    keys: &'static [Key],
    modes: &'static [Mode],
    action: Action,
    hint: &'static str,
    help: &'static str,
) -> Binding {
    Binding {
        keys,
        modes,
        action,
        hint,
        help,
    }
}

const fn code(code: KeyCode) -> Key {
    Key::Press(code, KeyModifiers::NONE)
}

const fn ch(c: char) -> Key {
    code(KeyCode::Char(c))
}

const FLOWS: Mode = Mode::View(View::Flows);
const DETAIL: Mode = Mode::View(View::Detail);
const PACKETS: Mode = Mode::View(View::Packets);
const EVENTS: Mode = Mode::View(View::Events);
const VIEWS: &[Mode] = &[FLOWS, DETAIL, PACKETS, EVENTS];

const UP: &[Key] = &[code(KeyCode::Up), ch('k')];
const DOWN: &[Key] = &[code(KeyCode::Down), ch('j')];
const ENTER: &[Key] = &[code(KeyCode::Enter), code(KeyCode::Right), ch('l')];
const BACK: &[Key] = &[
    code(KeyCode::Esc),
    code(KeyCode::Left),
    ch('h'),
    code(KeyCode::Backspace),
];
const CTRL_C: Key = Key::Press(KeyCode::Char('c'), KeyModifiers::CONTROL);

const MOVE: &str = "move the selection";
const PAGE: &str = "a page up / down";
const ENDS: &str = "to the first / last";
const DRILL: &str = "drill down: flow -> detail -> packet; event -> its packet";
const FLOW_PACKETS: &str = "packets of the selected flow (and its pair)";
const SORT: &str = "flows: pick the sort column / reverse the order";
const TREE: &str = "packets: scroll the open packet's tree";
const HEX: &str = "packets: scroll the open packet's hex dump";
const ALL_FRAMES: &str = "packets: every frame of the capture";
const NEXT_EVENT: &str = "packets: the next frame with an event of this frame's flow or its pair";
const SEVERITY: &str = "events: severity shown (all, warning+, error)";
const FILTER: &str = "filter by text (flows, events); Enter keeps it, Esc clears";
const DISPLAY_FILTER: &str =
    "packets: a display filter, as -Y (ip.addr == 10.0.0.1 && infiniband.aeth);
Enter runs it, Esc shows every packet";
const TAB: &str = "next / previous view: Flows, Packets, Events";
const PAUSE: &str = "live: pause / resume the display (the capture goes on)";
const SAVE: &str = "live: save the frames (flush -w FILE, else the buffered
frames to rocescope-IFACE-TIME.pcapng here)";

/// Every binding. The help lists its lines in this order, and the footer a view's hints.
#[rustfmt::skip]
pub static KEYS: &[Binding] = &[
    //   keys                             where                        action                               hint               help
    bind(UP,                              &[FLOWS, PACKETS, EVENTS],   Action::Move(Step::Up),              "move",            MOVE),
    bind(DOWN,                            &[FLOWS, PACKETS, EVENTS],   Action::Move(Step::Down),            "move",            MOVE),
    // The flow detail's list is its events.
    bind(UP,                              &[DETAIL],                   Action::Move(Step::Up),              "event",           MOVE),
    bind(DOWN,                            &[DETAIL],                   Action::Move(Step::Down),            "event",           MOVE),
    bind(&[code(KeyCode::PageUp)],        VIEWS,                       Action::Move(Step::PageUp),          "",                PAGE),
    bind(&[code(KeyCode::PageDown)],      VIEWS,                       Action::Move(Step::PageDown),        "",                PAGE),
    // Space pages too, unless a live capture takes it (the help names it once, for live).
    bind(&[ch(' ')],                      VIEWS,                       Action::Move(Step::PageDown),        "",                ""),
    bind(&[code(KeyCode::Home), ch('g')], VIEWS,                       Action::Move(Step::First),           "",                ENDS),
    bind(&[code(KeyCode::End), ch('G')],  VIEWS,                       Action::Move(Step::Last),            "",                ENDS),
    bind(ENTER,                           &[FLOWS],                    Action::Enter,                       "detail",          DRILL),
    bind(ENTER,                           &[DETAIL, EVENTS],           Action::Enter,                       "its packet",      DRILL),
    bind(ENTER,                           &[PACKETS],                  Action::Enter,                       "open",            DRILL),
    bind(&[ch('p')],                      &[FLOWS],                    Action::FlowPackets,                 "packets",         FLOW_PACKETS),
    bind(&[ch('p')],                      &[DETAIL],                   Action::FlowPackets,                 "flow packets",    FLOW_PACKETS),
    bind(&[ch('s')],                      &[FLOWS],                    Action::PickSort,                    "sort",            SORT),
    bind(&[ch('S')],                      &[FLOWS],                    Action::ReverseSort,                 "reverse",         SORT),
    bind(&[ch('J')],                      &[PACKETS],                  Action::TreeScroll(1),               "tree",            TREE),
    bind(&[ch('K')],                      &[PACKETS],                  Action::TreeScroll(-1),              "tree",            TREE),
    bind(&[ch(']')],                      &[PACKETS],                  Action::HexScroll(1),                "hex",             HEX),
    bind(&[ch('[')],                      &[PACKETS],                  Action::HexScroll(-1),               "hex",             HEX),
    bind(&[ch('a')],                      &[PACKETS],                  Action::AllPackets,                  "all",             ALL_FRAMES),
    bind(&[ch('n')],                      &[PACKETS],                  Action::NextEvent,                   "next event",      NEXT_EVENT),
    bind(&[ch('v')],                      &[EVENTS],                   Action::CycleSeverity,               "severity",        SEVERITY),
    bind(&[ch('/')],                      &[FLOWS],                    Action::EditFilter(Editing::Flows),  "filter",          FILTER),
    bind(&[ch('/')],                      &[EVENTS],                   Action::EditFilter(Editing::Events), "filter",          FILTER),
    bind(&[ch('/')],                      &[PACKETS],                  Action::EditFilter(Editing::Packets), "filter",         DISPLAY_FILTER),
    // The flows are the start: back goes only along the Tab history there, not worth a hint.
    bind(BACK,                            &[FLOWS],                    Action::Back,                        "",                "back"),
    bind(BACK,                            &[DETAIL, PACKETS, EVENTS],  Action::Back,                        "back",            "back"),
    bind(&[code(KeyCode::Tab)],           VIEWS,                       Action::NextView,                    "view",            TAB),
    bind(&[code(KeyCode::BackTab)],       VIEWS,                       Action::PrevView,                    "",                TAB),
    bind(&[ch(' ')],                      &[Mode::Live],               Action::Pause,                       "pause",           PAUSE),
    bind(&[ch(' ')],                      &[Mode::Paused],             Action::Resume,                      "resume",          PAUSE),
    bind(&[ch('w')],                      &[Mode::Live, Mode::Paused], Action::Save,                        "save",            SAVE),
    bind(&[ch('?'), code(KeyCode::F(1))], VIEWS,                       Action::Help,                        "help",            "this help"),
    bind(&[ch('q')],                      VIEWS,                       Action::Quit,                        "quit",            "quit"),
    // Any key closes the help; q still quits.
    bind(&[ch('q')],                      &[Mode::Help],               Action::Quit,                        "",                "quit"),
    bind(&[Key::Any],                     &[Mode::Help],               Action::CloseHelp,                   "closes the help", ""),
    bind(&[Key::Any],                     &[Mode::Error],              Action::DismissError,                "",                ""),
    bind(&[code(KeyCode::Enter)],         &[Mode::Editing],            Action::KeepFilter,                  "keep",            ""),
    bind(UP,                              &[Mode::Picking],            Action::Move(Step::Up),              "move",            ""),
    bind(DOWN,                            &[Mode::Picking],            Action::Move(Step::Down),            "move",            ""),
    bind(ENTER,                           &[Mode::Picking],            Action::KeepSort,                    "sort by it",      ""),
    bind(&[code(KeyCode::Esc), ch('s')],  &[Mode::Picking],            Action::CancelSort,                  "cancel",          ""),
    bind(&[Key::Any],                     &[Mode::Picking],            Action::CancelSort,                  "",                ""),
    bind(&[code(KeyCode::Esc)],           &[Mode::Editing],            Action::ClearFilter,                 "clear",           ""),
    bind(&[CTRL_C],                       &[Mode::Always],             Action::Quit,                        "",                "quit"),
];

/// The binding `key` finds: in the first of `modes` (in the order they take keys) that binds it, a key's
/// own binding before the mode's any-key one.
pub fn binding(modes: &[Mode], key: KeyEvent) -> Option<&'static Binding> {
    modes.iter().find_map(|mode| {
        let here = || KEYS.iter().filter(|b| b.modes.contains(mode));
        here()
            .find(|b| b.keys.iter().any(|k| k.is_pressed_by(key)))
            .or_else(|| here().find(|b| b.keys.contains(&Key::Any)))
    })
}

/// The footer's hints for `mode`, two spaces apart: "KEY hint", a run of bindings with the same hint
/// sharing one ("J/K tree").
pub fn hints(mode: Mode) -> String {
    hints_within(mode, usize::MAX)
}

/// [`hints`] in at most `width` columns: the hints that do not fit are left out from the end, the help
/// key's last (it names every key).
pub fn hints_within(mode: Mode, width: usize) -> String {
    let mut entries: Vec<(String, &str)> = Vec::new();
    for b in KEYS
        .iter()
        .filter(|b| b.modes.contains(&mode) && !b.hint.is_empty())
    {
        let key = b.keys[0].name();
        match entries.last_mut() {
            Some((keys, hint)) if *hint == b.hint => *keys = format!("{keys}/{key}"),
            _ => entries.push((key, b.hint)),
        }
    }
    let mut entries: Vec<String> = entries
        .iter()
        .map(|(keys, hint)| format!("{keys} {hint}"))
        .collect();
    let columns = |e: &[String]| e.iter().map(|s| s.chars().count() + 2).sum::<usize>();
    while entries.len() > 1 && columns(&entries) > width.saturating_add(2) {
        let last = entries.len() - 1;
        let drop = if entries[last].ends_with(" help") {
            last - 1
        } else {
            last
        };
        entries.remove(drop);
    }
    entries.join("  ")
}

/// Width of the help's key column.
const HELP_KEYS_WIDTH: usize = 16;

/// The help screen's key lines: one per help text, naming every key bound to it (a binding's keys a space
/// apart, bindings " / " apart).
pub fn help_lines() -> Vec<String> {
    let mut topics: Vec<(&str, Vec<&[Key]>)> = Vec::new();
    for b in KEYS.iter().filter(|b| !b.help.is_empty()) {
        match topics.iter_mut().find(|(help, _)| *help == b.help) {
            Some((_, keys)) if keys.contains(&b.keys) => {}
            Some((_, keys)) => keys.push(b.keys),
            None => topics.push((b.help, vec![b.keys])),
        }
    }
    let mut lines = Vec::new();
    for (help, keys) in topics {
        let names = |keys: &&[Key]| keys.iter().map(|k| k.name()).collect::<Vec<_>>().join(" ");
        let mut label = keys.iter().map(names).collect::<Vec<_>>().join(" / ");
        for text in help.lines() {
            lines.push(format!("  {label:<HELP_KEYS_WIDTH$}{text}"));
            label.clear();
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::analysis::Engine;
    use crate::report::Report;
    use crate::tui::model::Model;

    /// Every mode but `Always`, which is in each of them.
    const MODES: [Mode; 9] = [
        Mode::Editing,
        Mode::Error,
        Mode::Help,
        Mode::Live,
        Mode::Paused,
        FLOWS,
        DETAIL,
        PACKETS,
        EVENTS,
    ];

    /// A model whose keys go to `mode` (for `Always`, a file's flows).
    fn model_in(mode: Mode) -> Model {
        let mut m = match mode {
            Mode::Live | Mode::Paused => Model::new_live("lo", false),
            _ => Model::new("test.pcap".into(), false),
        };
        match mode {
            Mode::Always | Mode::Live => {}
            Mode::Editing => m.editing = Some(Editing::Flows),
            Mode::Error => {
                let empty = Report::build(&Engine::new(Default::default()), "test.pcap");
                m.report = Some(Arc::new(empty));
                m.error = Some("a read failed".into());
            }
            Mode::Help => m.help = true,
            Mode::Picking => m.picking = Some(0),
            Mode::Paused => m.live.as_mut().unwrap().paused = true,
            Mode::View(v) => m.view = v,
        }
        assert!(m.key_modes().contains(&mode), "{mode:?}");
        m
    }

    fn same_key(a: Key, b: Key) -> bool {
        match (a, b) {
            // Extra modifiers are ignored: a code bound twice in a mode would shadow one binding.
            (Key::Press(a, _), Key::Press(b, _)) => a == b,
            (Key::Any, Key::Any) => true,
            _ => false,
        }
    }

    #[test]
    fn no_key_is_bound_twice_in_a_mode() {
        let overlap = |a: &[Mode], b: &[Mode]| {
            a.iter()
                .any(|m| *m == Mode::Always || b.contains(m) || b.contains(&Mode::Always))
        };
        for (i, a) in KEYS.iter().enumerate() {
            for b in &KEYS[i + 1..] {
                let shared = a
                    .keys
                    .iter()
                    .any(|&k| b.keys.iter().any(|&l| same_key(k, l)));
                assert!(!(shared && overlap(a.modes, b.modes)), "{a:?}\n{b:?}");
            }
        }
    }

    #[test]
    fn every_binding_is_reachable() {
        for b in KEYS {
            for &mode in b.modes {
                let models: Vec<Model> = match mode {
                    Mode::Always => MODES.map(model_in).into(),
                    _ => vec![model_in(mode)],
                };
                for m in &models {
                    for &key in b.keys {
                        let event = match key {
                            Key::Press(code, modifiers) => KeyEvent::new(code, modifiers),
                            // A key bound nowhere.
                            Key::Any => KeyEvent::from(KeyCode::F(12)),
                        };
                        let found = binding(&m.key_modes(), event);
                        assert!(
                            found.is_some_and(|f| std::ptr::eq(f, b)),
                            "{} in {:?} finds {found:?}, not {b:?}",
                            key.name(),
                            m.key_modes()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn extra_modifiers_are_ignored_but_ctrl_c_needs_ctrl() {
        let modes = model_in(FLOWS).key_modes();
        let shift_s = KeyEvent::new(KeyCode::Char('S'), KeyModifiers::SHIFT);
        let back_tab = KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT);
        let action = |k| binding(&modes, k).map(|b| b.action);
        assert_eq!(action(shift_s), Some(Action::ReverseSort));
        assert_eq!(action(back_tab), Some(Action::PrevView));
        assert_eq!(action(KeyEvent::from(KeyCode::Char('c'))), None);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(action(ctrl_c), Some(Action::Quit));
    }

    #[test]
    fn footer_hints_name_each_modes_keys() {
        let views = [
            (
                FLOWS,
                "↑/↓ move  Enter detail  p packets  s sort  S reverse  / filter  Tab view",
            ),
            (
                DETAIL,
                "↑/↓ event  Enter its packet  p flow packets  Esc back  Tab view",
            ),
            (
                PACKETS,
                "↑/↓ move  Enter open  J/K tree  ]/[ hex  a all  n next event  / filter  Esc back  Tab view",
            ),
            (
                EVENTS,
                "↑/↓ move  Enter its packet  v severity  / filter  Esc back  Tab view",
            ),
        ];
        for (view, keys) in views {
            assert_eq!(hints(view), format!("{keys}  ? help  q quit"));
        }
        assert_eq!(hints(Mode::Help), "any key closes the help");
        assert_eq!(hints(Mode::Editing), "Enter keep  Esc clear");
        assert_eq!(
            hints(Mode::Picking),
            "↑/↓ move  Enter sort by it  Esc cancel"
        );
        // In 80 columns (the live hints aside) the packets' hints leave out the last ones, never the help.
        let narrow = hints_within(PACKETS, 80);
        assert_eq!(
            narrow,
            "↑/↓ move  Enter open  J/K tree  ]/[ hex  a all  n next event  / filter  ? help"
        );
        assert!(narrow.chars().count() <= 80);
        assert_eq!(hints(Mode::Live), "space pause  w save");
        assert_eq!(hints(Mode::Paused), "space resume  w save");
    }

    #[test]
    fn help_has_a_line_per_text_naming_its_keys() {
        let lines = help_lines();
        for want in [
            "  ↑ k / ↓ j       move the selection",
            "  Enter → l       drill down: flow -> detail -> packet; event -> its packet",
            "  s / S           flows: pick the sort column / reverse the order",
            "  Esc ← h Bksp    back",
            "  w               live: save the frames (flush -w FILE, else the buffered",
            "                  frames to rocescope-IFACE-TIME.pcapng here)",
            "  q / Ctrl-C      quit",
        ] {
            assert!(lines.iter().any(|l| l == want), "{want}\n{lines:#?}");
        }
        let texts: std::collections::BTreeSet<&str> = KEYS.iter().map(|b| b.help).collect();
        let text_lines: usize = texts.iter().map(|t| t.lines().count()).sum();
        assert_eq!(lines.len(), text_lines, "each text once");
        for l in &lines {
            // A space ends the key column: no key list runs into its text.
            assert_eq!(l.chars().nth(1 + HELP_KEYS_WIDTH), Some(' '), "{l}");
        }
    }
}

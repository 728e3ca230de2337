//! The TUI without a terminal: `update` driven by messages, and `view` drawn on ratatui's TestBackend,
//! checked against the hand-worked figures of testdata/analysis/*.expected.json.
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::style::Color;
use serde_json::Value;

use rocescope::analysis::events::Severity;
use rocescope::report::format::error_line;
use rocescope::tui::data::{self, Index, PointKind};
use rocescope::tui::keys::{Action, KEYS, Key, Mode, Step};
use rocescope::tui::model::{Cmd, Model, Msg, SORT_KEYS, Scope, SortKey, View, update};
use rocescope::tui::view;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Analyses a capture and hands the snapshot to a new model, as the runtime does.
fn load(rel: &str, w: u16, h: u16) -> (Model, Index) {
    let path = root().join(rel);
    let (report, index) = data::analyze(&path, &Default::default(), |_, _| true).unwrap();
    let mut m = Model::new(rel.to_string(), true);
    update(&mut m, Msg::Resize(w, h));
    let cmds = update(&mut m, Msg::Snapshot(Arc::new(report), index.len()));
    settle(&mut m, &index, cmds);
    (m, index)
}

/// Runs the commands like the runtime, synchronously, until none is left.
fn settle(m: &mut Model, index: &Index, mut cmds: Vec<Cmd>) {
    while let Some(cmd) = cmds.pop() {
        let msg = match cmd {
            Cmd::LoadSeries(f) => {
                let r = m.report.clone().unwrap();
                Msg::Series(Arc::new(data::flow_series(index, &r, f).unwrap()))
            }
            Cmd::LoadRows(n) => Msg::Rows(data::rows(index, &n).unwrap()),
            Cmd::LoadPacket(n) => Msg::Packet(data::detail(index, n).unwrap()),
            Cmd::Save => panic!("a file has nothing to save"),
            Cmd::FilterPackets(text) => match data::matching(index, &text) {
                Ok(frames) => Msg::Filtered(frames),
                Err(e) => Msg::Error(error_line(&e)),
            },
        };
        cmds.extend(update(m, msg));
    }
}

fn key(m: &mut Model, index: &Index, code: KeyCode) {
    let cmds = update(m, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    settle(m, index, cmds);
}

fn keys(m: &mut Model, index: &Index, text: &str) {
    for c in text.chars() {
        key(m, index, KeyCode::Char(c));
    }
}

fn render(m: &Model) -> Vec<String> {
    let mut t = Terminal::new(TestBackend::new(m.width, m.height)).unwrap();
    t.draw(|f| view::view(m, f)).unwrap();
    let buf = t.backend().buffer().clone();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect()
        })
        .collect()
}

fn screen(lines: &[String]) -> String {
    lines.join("\n")
}

/// The cell under column `title` in the row that contains `row_text`: the header gives the column's x.
fn cell(lines: &[String], row_text: &str, title: &str) -> String {
    // The table's header: its titles (the banner above it may name gaps and endpoints too).
    let at = lines
        .iter()
        .position(|l| {
            l.contains("endpoints")
                && (l.contains(" gaps") || l.contains("gaps↓") || l.contains("gaps↑"))
        })
        .unwrap_or_else(|| panic!("no header in\n{}", screen(lines)));
    let header = &lines[at];
    let chars: Vec<char> = header.chars().collect();
    let t: Vec<char> = title.chars().collect();
    let x = (0..chars.len())
        .find(|&i| {
            chars[i..].starts_with(&t)
                && (i == 0 || chars[i - 1] == ' ' || chars[i - 1] == '│')
                && chars
                    .get(i + t.len())
                    .is_none_or(|c| matches!(c, ' ' | '↓' | '↑'))
        })
        .unwrap_or_else(|| panic!("no column {title} in {header}"));
    let row = lines[at..]
        .iter()
        .find(|l| l.contains(row_text))
        .unwrap_or_else(|| panic!("no row {row_text} in\n{}", screen(lines)));
    row.chars()
        .skip(x)
        .take_while(|c| *c != ' ')
        .collect::<String>()
}

fn expected(name: &str) -> Value {
    let p = root().join(format!("testdata/analysis/{name}.expected.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn flows_view_shows_the_gap_in_the_requesters_row() {
    let (m, _) = load("testdata/analysis/gap_nak_go_back_n.pcap", 120, 40);
    let lines = render(&m);
    let row = "10.0.0.1 → 10.0.0.2 0x000011";
    let exp = expected("gap_nak_go_back_n");
    let req = &exp["flows"][0];
    assert_eq!(
        cell(&lines, row, "gaps"),
        req["psn"]["gap_events"].to_string()
    );
    assert_eq!(cell(&lines, row, "miss"), req["psn"]["missing"].to_string());
    assert_eq!(cell(&lines, row, "gaps"), "1");
    assert_eq!(cell(&lines, row, "miss"), "2");
    assert_eq!(
        cell(&lines, row, "retx"),
        req["psn"]["retransmitted"].to_string()
    );
    assert_eq!(cell(&lines, row, "pkts"), req["packets"].to_string());
    let resp = "10.0.0.2 → 10.0.0.1 0x000022";
    assert_eq!(cell(&lines, resp, "NAK"), "1");
    assert_eq!(cell(&lines, resp, "pkts"), "3");
    let s = screen(&lines);
    assert!(s.contains("FAIL"), "{s}");
    assert!(s.contains("11 frames (11 RoCE)"), "{s}");
    assert!(s.contains("PFC none"), "{s}");
    assert!(s.contains("q quit"), "footer: {s}");
}

/// Every flow of every hand-worked capture: its row shows the expected figures.
#[test]
fn flows_view_matches_every_expected_json() {
    let mut checked = 0;
    for entry in std::fs::read_dir(root().join("testdata/analysis")).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".expected.json"))
        else {
            continue;
        };
        let exp = expected(name);
        let (m, _) = load(&format!("testdata/analysis/{name}.pcap"), 170, 40);
        let lines = render(&m);
        for f in exp["flows"].as_array().unwrap() {
            let row = format!(
                "{} → {} 0x{:06x}",
                f["src"].as_str().unwrap(),
                f["dst"].as_str().unwrap(),
                f["dest_qp"].as_u64().unwrap()
            );
            let figures = [
                ("pkts", &f["packets"]),
                ("gaps", &f["psn"]["gap_events"]),
                ("miss", &f["psn"]["missing"]),
                ("retx", &f["psn"]["retransmitted"]),
                ("RNR", &f["rnr_naks"]),
                ("CNP", &f["cnp"]),
                ("CE", &f["ecn"]["ce"]),
                ("ICRC", &f["icrc_bad"]),
            ];
            for (title, v) in figures {
                if let Some(v) = v.as_u64() {
                    assert_eq!(
                        cell(&lines, &row, title),
                        v.to_string(),
                        "{name}: {row} {title}\n{}",
                        screen(&lines)
                    );
                    checked += 1;
                }
            }
            if let Some(naks) = f["naks"].as_object() {
                let total: u64 = naks.values().filter_map(Value::as_u64).sum();
                assert_eq!(cell(&lines, &row, "NAK"), total.to_string(), "{name}");
                checked += 1;
            }
        }
        if let Some(pfc) = exp["pfc"].as_array() {
            let s = screen(&lines);
            for p in pfc {
                let want = format!("PFC p{}: {} XOFF", p["priority"], p["xoff"]);
                assert!(s.contains(&want), "{name}: {want}\n{s}");
            }
        }
    }
    assert!(checked > 30, "only {checked} figures checked");
}

#[test]
fn sort_picker_and_reverse_put_the_worst_flow_first_and_last() {
    let (mut m, idx) = load("testdata/analysis/psn_wrap.pcap", 120, 40);
    assert_eq!(m.sort_key(), SortKey::Trouble);
    // s opens the picker on the sort in effect; down to the gaps column, Enter.
    keys(&mut m, &idx, "s");
    assert_eq!(m.picking, Some(0));
    assert!(screen(&render(&m)).contains("Sort by"));
    let gaps = SORT_KEYS.iter().position(|&k| k == SortKey::Gaps).unwrap();
    for _ in 0..gaps {
        key(&mut m, &idx, KeyCode::Down);
    }
    key(&mut m, &idx, KeyCode::Enter);
    assert_eq!((m.sort_key(), m.picking), (SortKey::Gaps, None));
    let r = m.report.clone().unwrap();
    let order = m.visible_flows();
    assert!(r.flows[order[0]].psn.gap_events >= r.flows[order[1]].psn.gap_events);
    assert_eq!(r.flows[order[0]].dest_qp, 18, "the flow with the gap first");
    let s = screen(&render(&m));
    assert!(s.contains("sort: gaps ↓"), "{s}");
    keys(&mut m, &idx, "S");
    let rev = m.visible_flows();
    assert_eq!(rev[rev.len() - 1], order[0], "the gap flow last");
    assert!(screen(&render(&m)).contains("sort: gaps ↑"));
    // Esc closes the picker with the sort unchanged.
    keys(&mut m, &idx, "s");
    key(&mut m, &idx, KeyCode::Down);
    key(&mut m, &idx, KeyCode::Esc);
    assert_eq!((m.sort_key(), m.picking), (SortKey::Gaps, None));
}

#[test]
fn text_filter_narrows_the_flows() {
    let (mut m, idx) = load("testdata/analysis/same_qpn_two_hosts.pcap", 120, 40);
    assert_eq!(m.visible_flows().len(), 4);
    keys(&mut m, &idx, "/10.0.0.3");
    assert!(screen(&render(&m)).contains("filter: 10.0.0.3_"));
    key(&mut m, &idx, KeyCode::Enter);
    assert_eq!(m.visible_flows().len(), 2);
    let s = screen(&render(&m));
    assert!(s.contains("Flows 2/4"), "{s}");
    assert!(!s.contains("10.0.0.1 → 10.0.0.2"), "{s}");
    // q while typing is text, not quit.
    keys(&mut m, &idx, "/q");
    assert!(!m.quit);
    assert_eq!(m.visible_flows().len(), 0);
    key(&mut m, &idx, KeyCode::Esc);
    assert_eq!(m.flows.filter, "");
    assert_eq!(m.visible_flows().len(), 4);
}

/// The packet list's display filter, on gap_nak_go_back_n.pcap's hand-worked frames: the resends
/// 103, 104, 105 are frames 7, 8 and 9 (examples/make_testdata/analysis.rs); the responder's frames are
/// 4, 6 and 11.
#[test]
fn a_display_filter_narrows_the_packets() {
    let (mut m, idx) = load("testdata/analysis/gap_nak_go_back_n.pcap", 120, 40);
    key(&mut m, &idx, KeyCode::Tab);
    assert_eq!(m.view, View::Packets);
    assert_eq!(m.packet_count(), 11);
    keys(&mut m, &idx, "/rocescope.retransmission");
    assert!(screen(&render(&m)).contains("filter: rocescope.retransmission_"));
    key(&mut m, &idx, KeyCode::Enter);
    assert_eq!(m.packet_count(), 3);
    assert_eq!(
        (0..3).map(|i| m.packet_at(i).unwrap()).collect::<Vec<_>>(),
        [7, 8, 9]
    );
    let s = screen(&render(&m));
    assert!(
        s.contains("3 of 11 frames pass rocescope.retransmission"),
        "{s}"
    );
    assert!(
        s.lines()
            .any(|l| l.contains("RC_WRITE_ONLY") && l.split_whitespace().any(|w| w == "104")),
        "{s}"
    );
    // Another filter replaces it; Esc while typing shows every packet again.
    keys(&mut m, &idx, "/");
    for _ in 0.."rocescope.retransmission".len() {
        key(&mut m, &idx, KeyCode::Backspace);
    }
    keys(&mut m, &idx, "ip.src == 10.0.0.2");
    key(&mut m, &idx, KeyCode::Enter);
    assert_eq!(
        (0..3).map(|i| m.packet_at(i).unwrap()).collect::<Vec<_>>(),
        [4, 6, 11]
    );
    keys(&mut m, &idx, "/");
    key(&mut m, &idx, KeyCode::Esc);
    assert_eq!(m.packet_count(), 11);
    // A bad filter is the one line of the error box; the list stays.
    keys(&mut m, &idx, "/ip.src ==");
    key(&mut m, &idx, KeyCode::Enter);
    assert!(
        m.error
            .as_deref()
            .unwrap()
            .contains("column 10 (at the end): expected a value")
    );
    assert_eq!(m.packet_count(), 11);
}

#[test]
fn detail_reads_the_flows_psns_and_shows_chart_and_events() {
    let (mut m, idx) = load("testdata/analysis/gap_nak_go_back_n.pcap", 120, 40);
    // Before the PSNs are read the detail asks for them.
    let cmds = update(&mut m, Msg::Key(KeyEvent::from(KeyCode::Enter)));
    assert_eq!(m.view, View::Detail);
    assert_eq!(cmds, vec![Cmd::LoadSeries(0)]);
    assert!(screen(&render(&m)).contains("reading the flow's PSNs"));
    settle(&mut m, &idx, cmds);
    let s = m.detail.as_ref().unwrap().series.clone().unwrap();
    let count = |k| s.points.iter().filter(|p| p.kind == k).count();
    assert_eq!(count(PointKind::Gap), 1);
    assert_eq!(count(PointKind::Retransmission), 3);
    assert_eq!(count(PointKind::Nak), 1);
    assert_eq!(s.frames, (1..=11).collect::<Vec<u64>>());
    let gap = s.points.iter().find(|p| p.kind == PointKind::Gap).unwrap();
    assert_eq!((gap.psn, gap.frame), (105, 5));
    let screen = screen(&render(&m));
    assert!(
        screen.contains("PSN vs time: 4 requests, 1 gaps, 3 retransmissions, 1 NAKs"),
        "{screen}"
    );
    for t in expected("gap_nak_go_back_n")["events_text"]
        .as_array()
        .unwrap()
    {
        assert!(screen.contains(t.as_str().unwrap()), "{t}\n{screen}");
    }
    assert!(screen.contains("ack µs p50 100.0"), "{screen}");
    assert!(screen.contains("Throughput"), "{screen}");
    // Esc goes back to the flows.
    key(&mut m, &idx, KeyCode::Esc);
    assert_eq!(m.view, View::Flows);
}

/// The detail of a requester tells where its time went: life_one_at_a_time's 94 % waiting for ACKs with
/// its window of one outstanding (examples/make_testdata/life.rs).
#[test]
fn detail_tells_where_the_time_went() {
    let (mut m, idx) = load("testdata/analysis/life_one_at_a_time.pcap", 160, 40);
    key(&mut m, &idx, KeyCode::Enter);
    let screen = screen(&render(&m));
    assert!(
        screen.contains("life: 94% window_limited (window 1)"),
        "{screen}"
    );
}

/// The detail of cnp_halving's requester (flow 0, the first row: it has CE marks) tells its share of the
/// link and what its sender did after its CNPs (worked out in examples/make_testdata/congestion.rs: 0.62 %
/// of 100 Gb/s, a peak window of 1.104 Gb/s, both CNPs cut the rate by half).
#[test]
fn detail_tells_the_cnp_reaction() {
    let (mut m, idx) = load("testdata/analysis/cnp_halving.pcap", 160, 40);
    key(&mut m, &idx, KeyCode::Enter);
    let screen = screen(&render(&m));
    assert!(
        screen.contains(
            "link 0.62% (peak 1.10%)  CNPs to its sender 2: rate cut 50% median, 50% worst, 0 of 2 measured \
             not cut"
        ),
        "{screen}"
    );
    // The throughput panel marks the slices of the two CNPs: the life of 1000 µs in 200 slices of 5 µs, two
    // to a column of 10 µs (160 columns less the borders hold 100), the CNPs at 250 and 650 µs in columns 25
    // and 65; and no pause, the capture has none.
    let lines = render(&m);
    let marks: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains('▲') && !l.contains("CNP to its sender"))
        .collect();
    assert_eq!(marks.len(), 1, "{screen}");
    let at: Vec<usize> = marks[0]
        .chars()
        .skip(1)
        .enumerate()
        .filter(|(_, c)| *c == '▲')
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at, [25, 65], "{screen}");
    assert_eq!(screen.matches('▒').count(), 1, "{screen}");
}

/// xon_ends_pause's requester (PCP 3): its throughput panel marks where priority 3 was paused, to the
/// resolution of `pfc[].paused_series` (100 µs buckets: paused in 100-200 and 200-300 µs). Its life, 0-350
/// µs, in slices of 2 µs (the round width at or above 350 / 200 µs), two to a column in 158 columns: column i
/// is 4i to 4i + 4 µs and meets a paused bucket for i from 25 (100-104 µs) to 74 (296-300 µs).
#[test]
fn detail_marks_the_pauses_of_the_flows_priority() {
    let (mut m, idx) = load("testdata/analysis/xon_ends_pause.pcap", 160, 40);
    key(&mut m, &idx, KeyCode::Enter);
    let screen = screen(&render(&m));
    assert!(screen.contains("▒ its priority paused"), "{screen}");
    let lines = render(&m);
    let marks: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains('▒') && !l.contains("paused"))
        .collect();
    assert_eq!(marks.len(), 1, "{screen}");
    let at: Vec<usize> = marks[0]
        .chars()
        .skip(1)
        .enumerate()
        .filter(|(_, c)| *c == '▒')
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at, (25..=74).collect::<Vec<_>>(), "{screen}");
}

#[test]
fn event_jumps_to_its_packet_with_tree_and_hex() {
    let (mut m, idx) = load("testdata/analysis/gap_nak_go_back_n.pcap", 120, 40);
    key(&mut m, &idx, KeyCode::Enter); // detail of flow 0
    key(&mut m, &idx, KeyCode::Down); // second event: the NAK, frame 6
    key(&mut m, &idx, KeyCode::Enter);
    assert_eq!(m.view, View::Packets);
    assert_eq!(m.packets.scope, Scope::All);
    assert_eq!(m.packets.selected, 5);
    assert!(m.packets.open);
    assert_eq!(m.packets.detail.as_ref().unwrap().number, 6);
    let s = screen(&render(&m));
    assert!(s.contains("▶6 "), "{s}");
    assert!(s.contains("NAK(PSN sequence error)"), "{s}");
    // The tree opens at the BTH, 29 lines down: the frame's line, Ethernet and its 3 fields, IPv4 and its
    // 18 (ip.version to ip.dst, as tshark names them), UDP and its 4;
    // K scrolls up to the frame's first line.
    assert!(s.contains("Frame 6 (-V)"), "{s}");
    assert!(s.contains("│Base Transport Header  [bytes 42..54]"), "{s}");
    assert!(!s.contains("Ethernet II  [bytes 0..14]"), "{s}");
    assert_eq!(m.packets.tree_scroll, 29);
    keys(&mut m, &idx, &"K".repeat(29));
    let s = screen(&render(&m));
    assert!(s.contains("Frame 6: "), "{s}");
    assert!(s.contains("Ethernet II  [bytes 0..14]"), "{s}");
    assert!(s.contains("0000  02 00 00 00 00 0"), "{s}");
    // Down moves the open packet along.
    key(&mut m, &idx, KeyCode::Down);
    assert_eq!(m.packets.detail.as_ref().unwrap().number, 7);
    // Esc closes the packet, then goes back to the detail.
    key(&mut m, &idx, KeyCode::Esc);
    assert!(!m.packets.open);
    key(&mut m, &idx, KeyCode::Esc);
    assert_eq!(m.view, View::Detail);
}

#[test]
fn packet_list_reads_only_the_rows_on_screen() {
    let (mut m, idx) = load("testdata/lab/write_loss.pcap", 100, 24);
    key(&mut m, &idx, KeyCode::Tab);
    assert_eq!(m.view, View::Packets);
    assert_eq!(m.packet_count(), 310);
    let h = m.packet_list_height();
    // 24 rows less the header (3: tabs, verdict, the worst story), the footer, the borders and the titles.
    assert_eq!(h, 24 - 3 - 1 - 2 - 1);
    assert_eq!(m.packets.rows.len(), h, "only the visible rows are read");
    key(&mut m, &idx, KeyCode::End);
    assert_eq!(m.packets.selected, 309);
    assert!(m.packets.rows.contains_key(&310));
    assert!(!m.packets.rows.contains_key(&200));
    let s = screen(&render(&m));
    assert!(s.contains("▶310 "), "{s}");
    assert!(s.contains("310/310"), "{s}");
    // Random access gives the same rows as a sequential read.
    let seq = {
        let mut src =
            rocescope::source::FileSource::open(&root().join("testdata/lab/write_loss.pcap"))
                .unwrap();
        let mut out = Vec::new();
        let mut n = 0;
        while let Some(p) = src.next_packet().unwrap() {
            n += 1;
            let f =
                parsers::parse_frame(p.linktype, p.data, p.orig_len as usize, &Default::default());
            out.push(data::packet_row(n, &p, &f, idx.first_ts));
        }
        out
    };
    let picked = data::rows(&idx, &[1, 2, 150, 309, 310]).unwrap();
    // The index adds the flow the engine counted each in: frame 1, the first WRITE, opened flow 0.
    assert_eq!(picked[0].flow, Some(0));
    for r in picked {
        let unindexed = data::PacketRow {
            flow: None,
            ..r.clone()
        };
        assert_eq!(unindexed, seq[r.number as usize - 1]);
    }
}

/// write_loss.pcap rewritten as pcapng: section header, one interface, enhanced packet blocks.
fn pcapng_copy() -> PathBuf {
    let mut src =
        rocescope::source::FileSource::open(&root().join("testdata/lab/write_loss.pcap")).unwrap();
    let block = |t: u32, body: &[u8]| {
        let len = (12 + body.len().div_ceil(4) * 4) as u32;
        let mut b = Vec::new();
        b.extend_from_slice(&t.to_le_bytes());
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(body);
        b.resize(len as usize - 4, 0);
        b.extend_from_slice(&len.to_le_bytes());
        b
    };
    let mut out = Vec::new();
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    out.extend(block(0x0A0D_0D0A, &shb));
    let mut idb = Vec::new();
    idb.extend_from_slice(&1u16.to_le_bytes()); // Ethernet
    idb.extend_from_slice(&0u16.to_le_bytes());
    idb.extend_from_slice(&0u32.to_le_bytes());
    // if_tsresol = 9 (nanoseconds), then the end of options.
    idb.extend_from_slice(&[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
    out.extend(block(1, &idb));
    while let Some(p) = src.next_packet().unwrap() {
        let mut epb = Vec::new();
        epb.extend_from_slice(&0u32.to_le_bytes());
        epb.extend_from_slice(&((p.ts_nanos >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(p.ts_nanos as u32).to_le_bytes());
        epb.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&p.orig_len.to_le_bytes());
        epb.extend_from_slice(p.data);
        out.extend(block(6, &epb));
    }
    let path = std::env::temp_dir().join(format!("rocescope-tui-{}.pcapng", std::process::id()));
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn pcapng_frames_are_read_from_their_offsets() {
    let ng = pcapng_copy();
    let (_, idx) = data::analyze(&ng, &Default::default(), |_, _| true).unwrap();
    let (_, pcap) = data::analyze(
        &root().join("testdata/lab/write_loss.pcap"),
        &Default::default(),
        |_, _| true,
    )
    .unwrap();
    assert!(idx.random_access());
    assert!(pcap.random_access());
    assert_eq!(idx.len(), 310);
    let picks = [1, 2, 38, 200, 310];
    assert_eq!(
        data::rows(&idx, &picks).unwrap(),
        data::rows(&pcap, &picks).unwrap()
    );
    assert_eq!(
        data::detail(&idx, 38).unwrap().hex,
        data::detail(&pcap, 38).unwrap().hex
    );
    std::fs::remove_file(ng).unwrap();
}

#[test]
fn pcapng_frames_are_read_too() {
    let rel = "testdata/edge/multi_interface.pcapng";
    let (report, idx) = data::analyze(&root().join(rel), &Default::default(), |_, _| true).unwrap();
    assert!(idx.len() >= 2);
    let rows = data::rows(&idx, &[1, idx.len()]).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].number, idx.len());
    let d = data::detail(&idx, 1).unwrap();
    assert!(d.tree[0].1.starts_with("Frame 1: "));
    assert_eq!(report.capture.frames, idx.len());
}

#[test]
fn events_view_filters_by_severity_and_text() {
    let (mut m, idx) = load("testdata/lab/write_loss.pcap", 120, 40);
    key(&mut m, &idx, KeyCode::BackTab);
    assert_eq!(m.view, View::Events);
    let r = m.report.clone().unwrap();
    let all = r.events.len();
    assert_eq!(m.visible_events().len(), all);
    keys(&mut m, &idx, "v");
    assert_eq!(m.events.min_severity, Some(Severity::Warning));
    keys(&mut m, &idx, "v");
    let errors = r
        .events
        .iter()
        .filter(|e| e.severity == Severity::Error)
        .count();
    assert_eq!(m.visible_events().len(), errors);
    let s = screen(&render(&m));
    assert!(
        s.contains(&format!("Events {errors}/{all}  severity: error")),
        "{s}"
    );
    assert!(!s.contains("go-back-N"), "{s}");
    keys(&mut m, &idx, "v/nak");
    key(&mut m, &idx, KeyCode::Enter);
    let is_nak = |e: &&rocescope::report::EventReport| {
        e.kind.contains("nak") || e.message.to_lowercase().contains("nak")
    };
    let naks = r.events.iter().filter(is_nak).count();
    assert!(naks > 0 && naks < all);
    assert_eq!(m.visible_events().len(), naks);
    // Enter on an event opens its packet.
    key(&mut m, &idx, KeyCode::Enter);
    assert_eq!(m.view, View::Packets);
    let first_nak = r.events.iter().find(is_nak).unwrap().frame;
    assert_eq!(m.packets.detail.as_ref().unwrap().number, first_nak);
}

#[test]
fn help_quit_and_signals() {
    let (mut m, idx) = load("testdata/analysis/gap_nak_go_back_n.pcap", 80, 24);
    keys(&mut m, &idx, "?");
    assert!(m.help);
    assert!(screen(&render(&m)).contains("Enter → l       drill down"));
    keys(&mut m, &idx, "x");
    assert!(!m.help && !m.quit);
    keys(&mut m, &idx, "q");
    assert!(m.quit);
    let (mut m, _) = load("testdata/analysis/gap_nak_go_back_n.pcap", 80, 24);
    update(&mut m, Msg::Quit);
    assert!(m.quit);
    let (mut m, idx) = load("testdata/analysis/gap_nak_go_back_n.pcap", 80, 24);
    let cmds = update(
        &mut m,
        Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
    );
    settle(&mut m, &idx, cmds);
    assert!(m.quit);
}

#[test]
fn small_terminals_degrade() {
    let (mut m, idx) = load("testdata/analysis/gap_nak_go_back_n.pcap", 80, 24);
    let s = screen(&render(&m));
    // 80x24: the essential columns stay.
    for t in ["endpoints", "QP", "gaps", "miss", "retx", "NAK"] {
        assert!(s.contains(t), "{t}\n{s}");
    }
    assert_eq!(cell(&render(&m), "10.0.0.1 → 10.0.0.2", "gaps"), "1");
    for v in ["\t", "\t", "\t"] {
        let _ = v;
        key(&mut m, &idx, KeyCode::Tab);
        let _ = render(&m);
    }
    key(&mut m, &idx, KeyCode::Enter);
    let _ = render(&m);
    // Tiny: a notice, no panic.
    update(&mut m, Msg::Resize(30, 8));
    assert!(screen(&render(&m)).contains("too small"));
    update(&mut m, Msg::Resize(40, 10));
    let _ = render(&m);
}

#[test]
fn no_color_draws_without_colours() {
    let (mut m, idx) = load("testdata/analysis/gap_nak_go_back_n.pcap", 120, 40);
    let colours = |m: &Model| {
        let mut t = Terminal::new(TestBackend::new(m.width, m.height)).unwrap();
        t.draw(|f| view::view(m, f)).unwrap();
        t.backend()
            .buffer()
            .content
            .iter()
            .filter(|c| c.fg != Color::Reset || c.bg != Color::Reset)
            .count()
    };
    assert!(colours(&m) > 0, "colours by default");
    m.color = false;
    key(&mut m, &idx, KeyCode::Enter);
    assert_eq!(colours(&m), 0);
    key(&mut m, &idx, KeyCode::Esc);
    assert_eq!(colours(&m), 0);
    key(&mut m, &idx, KeyCode::Tab);
    assert_eq!(colours(&m), 0);
}

#[test]
fn loading_and_errors_are_shown() {
    let mut m = Model::new("x.pcap".into(), true);
    update(&mut m, Msg::Resize(80, 24));
    update(
        &mut m,
        Msg::Progress(rocescope::tui::model::Progress {
            frames: 4096,
            bytes: 50,
            total_bytes: 100,
        }),
    );
    assert!(screen(&render(&m)).contains("Reading x.pcap: 4096 frames (50%)"));
    // Keys before the snapshot do not panic.
    for c in [
        KeyCode::Enter,
        KeyCode::Tab,
        KeyCode::Down,
        KeyCode::Char('s'),
    ] {
        let cmds = update(&mut m, Msg::Key(KeyEvent::from(c)));
        assert!(cmds.is_empty());
    }
    update(&mut m, Msg::Error("x.pcap: not a capture".into()));
    assert!(screen(&render(&m)).contains("error: x.pcap: not a capture"));
}

#[test]
fn a_later_snapshot_replaces_the_report() {
    // A live source sends snapshots again and again: the selection survives within range.
    let (mut m, idx) = load("testdata/analysis/same_qpn_two_hosts.pcap", 120, 40);
    keys(&mut m, &idx, "jjj");
    assert_eq!(m.flows.selected, 3);
    let (r, i) = data::analyze(
        Path::new(&root().join("testdata/analysis/gap_nak_go_back_n.pcap")),
        &Default::default(),
        |_, _| true,
    )
    .unwrap();
    update(&mut m, Msg::Snapshot(Arc::new(r), i.len()));
    assert_eq!(m.flows.selected, 1);
    assert_eq!(m.indexed, 11);
}

#[test]
fn p_lists_the_flow_and_its_pair() {
    let (mut m, idx) = load("testdata/analysis/rnr_storm.pcap", 120, 40);
    let r = m.report.clone().unwrap();
    let f = m.selected_flow().unwrap();
    let pair = r.flows[f as usize].paired_with.unwrap();
    keys(&mut m, &idx, "p");
    assert_eq!(m.view, View::Packets);
    assert_eq!(m.packets.scope, Scope::Flow(f));
    let want = r.flows[f as usize].packets + r.flows[pair as usize].packets;
    assert_eq!(m.packet_count() as u64, want);
    let s = screen(&render(&m));
    assert!(
        s.contains(&format!("Packets: flow #{f} and its pair  1/{want}")),
        "{s}"
    );
    assert!(s.contains("RNR-NAK 1.28ms"), "{s}");
    // a: every frame of the capture.
    keys(&mut m, &idx, "a");
    assert_eq!(m.packets.scope, Scope::All);
    assert_eq!(m.packet_count() as u64, r.capture.frames);
}

#[test]
fn modes_take_keys_before_the_views() {
    let (mut m, idx) = load("testdata/lab/write_loss.pcap", 120, 40);
    // A failed read's message: any key dismisses it, q too, and does nothing else.
    m.error = Some("frame 9: read failed".into());
    keys(&mut m, &idx, "q");
    assert!(m.error.is_none() && !m.quit);
    // The help: any key closes it without doing what it does in the view.
    keys(&mut m, &idx, "?j");
    assert!(!m.help);
    assert_eq!(m.flows.selected, 0);
    // A key's release does nothing.
    let release = KeyEvent::new_with_kind(
        KeyCode::Char('j'),
        KeyModifiers::NONE,
        KeyEventKind::Release,
    );
    update(&mut m, Msg::Key(release));
    assert_eq!(m.flows.selected, 0);
    // Ctrl-C quits while typing a filter too.
    keys(&mut m, &idx, "/x");
    update(
        &mut m,
        Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
    );
    assert!(m.quit);
    assert_eq!(m.flows.filter, "x");
}

// ---- The key table: in each view, every key does what the table binds it to ----

/// The selection in the view's list, and the list's length.
fn list_position(m: &Model) -> (usize, usize) {
    match m.view {
        View::Flows => (m.flows.selected, m.visible_flows().len()),
        View::Detail => (m.detail.as_ref().unwrap().event, m.detail_events().len()),
        View::Packets => (m.packets.selected, m.packet_count()),
        View::Events => (m.events.selected, m.visible_events().len()),
    }
}

/// Whether `action` took the model from `a` to `b` (`a` being a state it changes: the selection inside
/// the list, packets closed, a view to go back to).
fn did(action: Action, a: &Model, b: &Model) -> bool {
    let ((from, len), (to, _)) = (list_position(a), list_position(b));
    let scrolled = |before: u16, after: u16, lines: i16| {
        i32::from(after) - i32::from(before) == i32::from(lines)
    };
    match action {
        Action::Quit => b.quit,
        Action::Help => b.help,
        Action::Move(Step::Up) => to + 1 == from,
        Action::Move(Step::Down) => to == from + 1,
        Action::Move(Step::PageUp) => to < from,
        Action::Move(Step::PageDown) => to > from,
        Action::Move(Step::First) => to == 0,
        Action::Move(Step::Last) => to + 1 == len,
        Action::NextView => {
            b.view
                == match a.view {
                    View::Flows | View::Detail => View::Packets,
                    View::Packets => View::Events,
                    View::Events => View::Flows,
                }
        }
        Action::PrevView => {
            b.view
                == match a.view {
                    View::Flows | View::Detail => View::Events,
                    View::Packets => View::Flows,
                    View::Events => View::Packets,
                }
        }
        Action::Back => b.view == a.back.last().copied().unwrap_or(View::Flows),
        Action::Enter => b.view != a.view || !a.packets.open && b.packets.open,
        Action::EditFilter(target) => b.editing == Some(target),
        Action::PickSort => b.picking == Some(a.flows.sort),
        Action::NextEvent => {
            let (from, to) = (
                a.packet_at(a.packets.selected),
                b.packet_at(b.packets.selected),
            );
            let r = b.report.as_ref().unwrap();
            to > from && r.events.iter().any(|e| Some(e.frame) == to)
        }
        Action::ReverseSort => b.flows.descending != a.flows.descending,
        Action::CycleSeverity => b.events.min_severity != a.events.min_severity,
        Action::FlowPackets => b.view == View::Packets && matches!(b.packets.scope, Scope::Flow(_)),
        Action::AllPackets => b.packets.scope == Scope::All && to == 0,
        Action::TreeScroll(n) => scrolled(a.packets.tree_scroll, b.packets.tree_scroll, n),
        Action::HexScroll(n) => scrolled(a.packets.hex_scroll, b.packets.hex_scroll, n),
        other => panic!("{other:?} is no view's action"),
    }
}

/// Presses each key the table binds in the view of `start`, each on a copy of it, and checks that the key
/// did its binding's action.
fn keys_do_what_the_table_says(start: Model, idx: Index) {
    let mode = Mode::View(start.view);
    let mut pressed = 0;
    for b in KEYS.iter().filter(|b| b.modes.contains(&mode)) {
        for &key in b.keys {
            let Key::Press(code, modifiers) = key else {
                continue;
            };
            let mut m = start.clone();
            let cmds = update(&mut m, Msg::Key(KeyEvent::new(code, modifiers)));
            settle(&mut m, &idx, cmds);
            let name = key.name();
            assert!(
                did(b.action, &start, &m),
                "{mode:?}: {name} should {:?}",
                b.action
            );
            pressed += 1;
        }
    }
    assert!(pressed >= 20, "{mode:?}: only {pressed} keys");
}

#[test]
fn flows_keys_do_what_the_table_says() {
    let (mut m, idx) = load("testdata/analysis/same_qpn_two_hosts.pcap", 120, 40);
    // Round the views and back, for a view to go back to; the second of the 4 flows selected.
    for _ in 0..3 {
        key(&mut m, &idx, KeyCode::Tab);
    }
    keys(&mut m, &idx, "j");
    assert_eq!((m.view, m.flows.selected), (View::Flows, 1));
    keys_do_what_the_table_says(m, idx);
}

#[test]
fn detail_keys_do_what_the_table_says() {
    let (mut m, idx) = load("testdata/lab/write_loss.pcap", 120, 40);
    key(&mut m, &idx, KeyCode::Enter);
    keys(&mut m, &idx, "jjj");
    // The flow's events: 10 PSN gaps, 11 NAKs and the 11 go-back-N they cause (one each), of which a flow
    // keeps 9 of a kind (its first 8 and its newest): 27.
    assert_eq!((m.view, list_position(&m)), (View::Detail, (3, 27)));
    keys_do_what_the_table_says(m, idx);
}

#[test]
fn packets_keys_do_what_the_table_says() {
    let (mut m, idx) = load("testdata/lab/write_loss.pcap", 100, 24);
    key(&mut m, &idx, KeyCode::Tab);
    keys(&mut m, &idx, &"j".repeat(20));
    keys(&mut m, &idx, "JJJ]]]");
    assert_eq!((m.view, m.packets.selected), (View::Packets, 20));
    assert_eq!((m.packets.tree_scroll, m.packets.hex_scroll), (3, 3));
    keys_do_what_the_table_says(m, idx);
}

#[test]
fn events_keys_do_what_the_table_says() {
    let (mut m, idx) = load("testdata/lab/write_loss.pcap", 120, 40);
    key(&mut m, &idx, KeyCode::BackTab);
    keys(&mut m, &idx, "jjjjj");
    assert_eq!((m.view, m.events.selected), (View::Events, 5));
    keys_do_what_the_table_says(m, idx);
}

#[test]
fn svg_plots_mark_gaps_retransmissions_and_naks() {
    let dir = std::env::temp_dir().join(format!("rocescope-plots-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (report, index) = data::analyze(
        &root().join("testdata/analysis/gap_nak_go_back_n.pcap"),
        &Default::default(),
        |_, _| true,
    )
    .unwrap();
    let files = rocescope::tui::plot::write(&index, &report, &dir).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    // The responder flow has no requests: no PSN chart for it.
    assert_eq!(names, ["throughput.svg", "flow-0.svg"]);
    let svg = std::fs::read_to_string(dir.join("flow-0.svg")).unwrap();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.ends_with("</svg>\n"));
    let count = |class: &str| svg.matches(&format!("class=\"{class}\"")).count();
    assert_eq!(count("req"), 4);
    assert_eq!(count("gap"), 1);
    assert_eq!(count("retx"), 3);
    assert_eq!(count("nak"), 1);
    assert_eq!(count("throughput"), 1);
    assert!(svg.contains("1 gaps (2 missing), 3 retransmitted, 1 NAKs"));
    let thr = std::fs::read_to_string(dir.join("throughput.svg")).unwrap();
    assert_eq!(thr.matches("class=\"flow\"").count(), 2);
    assert!(thr.contains("10.0.0.1 → 10.0.0.2 QP 0x000011"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The overview's buckets and the ticks are round: write_loss.pcap lasts 1.177372 s (tshark's last
/// frame.time_relative), a hundredth of it 11.8 ms, the next round width 20 ms: 59 buckets, an axis of
/// 1.18 s, whose ticks step by 0.2 s (1.18 s / 6 = 0.197, rounded up) from 0 to 1.0.
#[test]
fn svg_buckets_and_ticks_are_round() {
    let dir = std::env::temp_dir().join(format!("rocescope-round-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (report, index) = data::analyze(
        &root().join("testdata/lab/write_loss.pcap"),
        &Default::default(),
        |_, _| true,
    )
    .unwrap();
    rocescope::tui::plot::write(&index, &report, &dir).unwrap();
    let thr = std::fs::read_to_string(dir.join("throughput.svg")).unwrap();
    assert!(thr.contains("(per 20.00ms bucket)"), "{thr}");
    let ticks: Vec<String> = thr
        .split("class=\"tick\"")
        .skip(1)
        .map(|t| t[t.find('>').unwrap() + 1..t.find('<').unwrap()].to_string())
        .collect();
    assert_eq!(ticks, ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
    // Each flow's line is a step per bucket: two points each.
    let flows: Vec<&str> = thr.split("class=\"flow\" points=\"").skip(1).collect();
    assert_eq!(flows.len(), 2);
    for f in flows {
        let points = f[..f.find('"').unwrap()].split(' ').count();
        assert_eq!(points, 2 * 59);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- Live capture: the model fed as the capture thread feeds it (no terminal, no interface) ----

use rocescope::analysis::Engine;
use rocescope::capture::ring::{self, Batch, Ring};
use rocescope::report::Report;
use rocescope::source::FileSource;

/// Snapshots as the capture thread sends them: the report and the frames the ring holds.
type Snapshots = Vec<(Arc<Report>, u64)>;

/// Replays a capture file the way the live capture thread runs: each frame into the engine and the ring
/// (bounded at `ring_frames`), and a snapshot (report, frames in the ring) after each of `cuts` frames.
fn live_replay(rel: &str, ring_frames: usize, cuts: &[u64]) -> (Snapshots, Arc<Mutex<Ring>>) {
    let mut src = FileSource::open(&root().join(rel)).unwrap();
    let mut engine = Engine::new(Default::default());
    let ring = Arc::new(Mutex::new(Ring::new(ring_frames, 64 << 20, 1, 65535, "lo")));
    let mut snaps = Vec::new();
    let mut n = 0u64;
    let mut batch = Batch::new();
    let snapshot = |engine: &Engine, ring: &Mutex<Ring>| {
        let mut r = Report::build(engine, "live capture on lo");
        r.capture_stats = Some(rocescope::report::capture::CaptureStats {
            interface: "lo".into(),
            received: engine.totals.frames * 2,
            dropped: 3,
            ..Default::default()
        });
        (Arc::new(r), ring.lock().unwrap().len() as u64)
    };
    while let Some(p) = src.next_packet().unwrap() {
        n += 1;
        let frame =
            parsers::parse_frame(p.linktype, p.data, p.orig_len as usize, &Default::default());
        let classified = engine.ingest(n, p.ts_nanos, &frame);
        batch.push(n, p.ts_nanos, p.orig_len, p.data);
        ring.lock().unwrap().append(&mut batch);
        ring.lock().unwrap().classify(&[(n, classified.counted())]);
        if cuts.contains(&n) {
            snaps.push(snapshot(&engine, &ring));
        }
    }
    snaps.push(snapshot(&engine, &ring));
    (snaps, ring)
}

/// Runs the commands as the live runtime does: rows and packets from the ring.
fn settle_live(m: &mut Model, ring: &Mutex<Ring>, mut cmds: Vec<Cmd>) -> Vec<Cmd> {
    let mut other = Vec::new();
    while let Some(cmd) = cmds.pop() {
        let msg = match cmd {
            Cmd::LoadSeries(f) => {
                let r = m.report.clone().unwrap();
                Msg::Series(Arc::new(
                    data::ring_series(ring, Default::default(), &r, f).unwrap(),
                ))
            }
            Cmd::LoadRows(n) => Msg::Rows(data::ring_rows(ring, Default::default(), &n)),
            Cmd::LoadPacket(n) => match data::ring_detail(ring, Default::default(), n) {
                Ok(d) => Msg::Packet(d),
                Err(e) => Msg::Error(error_line(&e)),
            },
            c @ (Cmd::Save | Cmd::FilterPackets(_)) => {
                other.push(c);
                continue;
            }
        };
        cmds.extend(update(m, msg));
    }
    other
}

fn live_key(m: &mut Model, ring: &Mutex<Ring>, code: KeyCode) -> Vec<Cmd> {
    let cmds = update(m, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    settle_live(m, ring, cmds)
}

const LOSSY: &str = "testdata/lab/write_loss.pcap";

#[test]
fn live_snapshots_replace_each_other_and_pause_keeps_the_shown_one() {
    let (snaps, ring) = live_replay(LOSSY, 1000, &[100, 200]);
    let mut m = Model::new_live("lo", true);
    update(&mut m, Msg::Resize(120, 40));
    assert!(screen(&render(&m)).contains("Starting the capture (live on lo)"));
    let cmds = update(&mut m, Msg::Snapshot(Arc::clone(&snaps[0].0), snaps[0].1));
    settle_live(&mut m, &ring, cmds);
    assert_eq!(m.report.as_ref().unwrap().capture.frames, 100);
    let s = screen(&render(&m));
    assert!(s.contains("LIVE live on lo  100 frames"), "{s}");
    assert!(
        s.contains("pcap received 200 dropped 3 if-dropped 0"),
        "{s}"
    );
    assert!(s.contains("space pause  w save"), "{s}");
    // The next snapshot replaces it.
    let cmds = update(&mut m, Msg::Snapshot(Arc::clone(&snaps[1].0), snaps[1].1));
    settle_live(&mut m, &ring, cmds);
    assert_eq!(m.report.as_ref().unwrap().capture.frames, 200);
    assert!(screen(&render(&m)).contains("200 frames"));
    // Paused: snapshots keep coming and the shown one stays; resumed: the newest shows.
    assert!(live_key(&mut m, &ring, KeyCode::Char(' ')).is_empty());
    assert!(m.live.as_ref().unwrap().paused);
    let cmds = update(&mut m, Msg::Snapshot(Arc::clone(&snaps[2].0), snaps[2].1));
    assert!(cmds.is_empty());
    assert_eq!(
        m.report.as_ref().unwrap().capture.frames,
        200,
        "paused: the shown snapshot stays"
    );
    let s = screen(&render(&m));
    assert!(s.contains("PAUSED live on lo  200 frames"), "{s}");
    assert!(s.contains("space resume"), "{s}");
    live_key(&mut m, &ring, KeyCode::Char(' '));
    assert!(!m.live.as_ref().unwrap().paused);
    assert_eq!(
        m.report.as_ref().unwrap().capture.frames,
        310,
        "resumed: the newest snapshot"
    );
    assert!(screen(&render(&m)).contains("LIVE live on lo  310 frames"));
    // The selected flow stays selected when a snapshot reorders the flows.
    let sel = m.selected_flow();
    let cmds = update(&mut m, Msg::Snapshot(Arc::clone(&snaps[1].0), snaps[1].1));
    settle_live(&mut m, &ring, cmds);
    assert_eq!(m.selected_flow(), sel);
    // The capture's last snapshot says why it stopped (-c, --duration, an error).
    let (mut again, _) = live_replay(LOSSY, 1000, &[]);
    let (mut last, n) = again.pop().unwrap();
    Arc::get_mut(&mut last)
        .unwrap()
        .capture_stats
        .as_mut()
        .unwrap()
        .stopped_by = rocescope::report::capture::StoppedBy::Count;
    update(&mut m, Msg::Snapshot(last, n));
    let s = screen(&render(&m));
    assert!(s.contains("STOPPED (count) live on lo  310 frames"), "{s}");
}

#[test]
fn w_asks_for_a_save_and_the_footer_says_where() {
    let (snaps, ring) = live_replay(LOSSY, 1000, &[]);
    let mut m = Model::new_live("lo", true);
    update(&mut m, Msg::Resize(120, 40));
    update(&mut m, Msg::Snapshot(Arc::clone(&snaps[0].0), snaps[0].1));
    let cmds = update(
        &mut m,
        Msg::Key(KeyEvent::new(KeyCode::Char('w'), KeyModifiers::NONE)),
    );
    assert_eq!(cmds, vec![Cmd::Save]);
    assert!(screen(&render(&m)).contains("saving…"));
    // A second w while the first is under way asks nothing more.
    assert!(
        update(
            &mut m,
            Msg::Key(KeyEvent::new(KeyCode::Char('w'), KeyModifiers::NONE))
        )
        .is_empty()
    );
    update(
        &mut m,
        Msg::Saved(Ok(
            "310 frames saved to /tmp/x/rocescope-lo-20261129-180509Z.pcapng".into(),
        )),
    );
    let s = screen(&render(&m));
    assert!(
        s.contains("w: 310 frames saved to /tmp/x/rocescope-lo-20261129-180509Z.pcapng"),
        "{s}"
    );
    assert_eq!(live_key(&mut m, &ring, KeyCode::Char('w')), vec![Cmd::Save]);
    update(
        &mut m,
        Msg::Saved(Err("cannot create x: Permission denied".into())),
    );
    assert!(screen(&render(&m)).contains("w failed: cannot create x: Permission denied"));
    // A file has nothing to save, and space still pages.
    let (mut f, idx) = load(LOSSY, 120, 40);
    let cmds = update(
        &mut f,
        Msg::Key(KeyEvent::new(KeyCode::Char('w'), KeyModifiers::NONE)),
    );
    assert!(cmds.is_empty());
    key(&mut f, &idx, KeyCode::Tab);
    key(&mut f, &idx, KeyCode::Char(' '));
    assert!(f.packets.selected > 0);
}

#[test]
fn live_packet_list_reads_the_ring_and_follows_the_newest() {
    // A ring of 50 frames: after 100 frames it holds 51..100, after 200 frames 151..200.
    let (snaps, ring) = live_replay(LOSSY, 50, &[100, 200]);
    // The ring now holds the last 50 of the 310 frames; snapshots 0 and 1 name what it held then.
    let mut m = Model::new_live("lo", true);
    update(&mut m, Msg::Resize(120, 40));
    let (r310, n310) = snaps[2].clone();
    let cmds = update(&mut m, Msg::Snapshot(r310, n310));
    settle_live(&mut m, &ring, cmds);
    assert_eq!((m.first_frame, m.indexed), (261, 50));
    live_key(&mut m, &ring, KeyCode::Tab);
    assert_eq!(m.view, View::Packets);
    assert_eq!(m.packet_at(0), Some(261));
    assert_eq!(m.packet_at(49), Some(310));
    assert_eq!(m.packet_at(50), None);
    let s = screen(&render(&m));
    assert!(
        s.contains("Packets: frames 261..310 (the newest, buffered)"),
        "{s}"
    );
    // It follows the newest frame; the rows come from the ring.
    assert!(s.contains("│▶310 "), "{s}");
    assert!(s.contains("RC_"), "rows read from the ring:\n{s}");
    live_key(&mut m, &ring, KeyCode::Home);
    let s = screen(&render(&m));
    assert!(s.contains("│▶261 "), "{s}");
    // Open the last packet: its tree and hex, from the ring.
    live_key(&mut m, &ring, KeyCode::End);
    live_key(&mut m, &ring, KeyCode::Enter);
    let s = screen(&render(&m));
    assert!(s.contains("Frame 310 (-V)"), "{s}");
    // A frame that has left the ring: its row says so, and an event pointing at it says why.
    let rows = data::ring_rows(&ring, Default::default(), &[10, 300]);
    assert!(
        rows.iter()
            .any(|r| r.number == 10 && r.opcode == "(left the buffer)")
    );
    assert!(
        rows.iter()
            .any(|r| r.number == 300 && r.opcode.starts_with("RC_"))
    );
    let e = data::ring_detail(&ring, Default::default(), 10)
        .unwrap_err()
        .to_string();
    assert!(e.contains("frame 10 has left the capture buffer"), "{e}");
}

#[test]
fn live_selection_stays_on_its_frame_as_the_ring_moves() {
    // Snapshots as a growing capture gives them: the ring window moves from 51..100 to 151..200.
    let path = root().join(LOSSY);
    let mut m = Model::new_live("lo", true);
    update(&mut m, Msg::Resize(120, 40));
    let snap = |upto: u64| {
        let mut src = FileSource::open(&path).unwrap();
        let mut engine = Engine::new(Default::default());
        let mut n = 0;
        while n < upto {
            let p = src.next_packet().unwrap().unwrap();
            n += 1;
            let frame =
                parsers::parse_frame(p.linktype, p.data, p.orig_len as usize, &Default::default());
            engine.ingest(n, p.ts_nanos, &frame);
        }
        Msg::Snapshot(Arc::new(Report::build(&engine, "live capture on lo")), 50)
    };
    update(&mut m, snap(100));
    assert_eq!(m.first_frame, 51);
    update(
        &mut m,
        Msg::Key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE)),
    );
    // Following the newest frame.
    assert_eq!(m.packet_at(m.packets.selected), Some(100));
    update(&mut m, snap(120));
    assert_eq!(
        m.packet_at(m.packets.selected),
        Some(120),
        "follows the newest"
    );
    // Moved up: the same frame stays selected while the list start moves.
    for _ in 0..5 {
        update(
            &mut m,
            Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE)),
        );
    }
    assert_eq!(m.packet_at(m.packets.selected), Some(115));
    update(&mut m, snap(130));
    assert_eq!(m.first_frame, 81);
    assert_eq!(
        m.packet_at(m.packets.selected),
        Some(115),
        "the selection stays on its frame"
    );
    // An event whose frame has left: the jump says so instead.
    let cmds = update(&mut m, snap(310));
    assert!(!cmds.is_empty());
    m.view = View::Events;
    let r = m.report.clone().unwrap();
    let pos = m
        .visible_events()
        .iter()
        .position(|&i| r.events[i].frame < m.first_frame)
        .unwrap();
    m.events.selected = pos;
    update(
        &mut m,
        Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
    );
    let e = m.error.clone().unwrap();
    assert!(
        e.contains("has left the capture buffer (it holds frames 261 to 310)"),
        "{e}"
    );
}

#[test]
fn ring_reads_and_saves_the_same_as_the_file() {
    let (snaps, ring) = live_replay(LOSSY, 100_000, &[]);
    let report = Arc::clone(&snaps[0].0);
    let (file_report, idx) =
        data::analyze(&root().join(LOSSY), &Default::default(), |_, _| true).unwrap();
    let numbers: Vec<u64> = vec![1, 38, 200, 310];
    assert_eq!(
        data::ring_rows(&ring, Default::default(), &numbers),
        data::rows(&idx, &numbers).unwrap()
    );
    assert_eq!(
        data::ring_detail(&ring, Default::default(), 38).unwrap(),
        data::detail(&idx, 38).unwrap()
    );
    let worst = report
        .flows
        .iter()
        .max_by_key(|f| f.psn.gap_events)
        .unwrap()
        .id;
    let a = data::ring_series(&ring, Default::default(), &report, worst).unwrap();
    let b = data::flow_series(&idx, &file_report, worst).unwrap();
    assert_eq!(a.points, b.points);
    assert_eq!(a.frames, b.frames);
    assert!(a.points.iter().any(|p| p.kind == PointKind::Gap));
    // Saved to pcapng: the same analysis as the original file.
    let dir = std::env::temp_dir().join(format!("rocescope-tui-ring-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = ring::timestamped_path(&dir, "lo", 1_795_975_509);
    let (recs, lt) = {
        let r = ring.lock().unwrap();
        (r.all(), r.linktype)
    };
    assert_eq!(ring::save(&recs, &path, lt, 65535, "lo").unwrap(), 310);
    let (saved, _) = data::analyze(&path, &Default::default(), |_, _| true).unwrap();
    let flows = |r: &Report| serde_json::to_value(&r.flows).unwrap();
    assert_eq!(flows(&saved), flows(&file_report));
    assert_eq!(saved.capture.frames, 310);
    let _ = std::fs::remove_dir_all(dir);
}

/// A snapshot of 1,200 flows whose gap events overflow the event list: the list stays at its bound. (What a
/// snapshot costs is measured by `cargo bench --bench snapshot`, not here.)
#[test]
fn a_snapshot_of_1200_flows_keeps_its_bounds() {
    use parsers::builder::{Net, RoceFrame};
    let mut engine = Engine::new(Default::default());
    let mut n = 0u64;
    for round in 0..28u32 {
        for flow in 0..1200u32 {
            let mut f = RoceFrame::new(0x04);
            if let Net::V4(h) = &mut f.net {
                h.src = [10, 0, (flow >> 8) as u8, flow as u8];
                h.dst = [10, 1, 0, 1];
            }
            f.bth.dest_qp = 0x100 + flow;
            // Every 3rd round skips a PSN: 9 gaps on every flow (all kept: a flow keeps 9 of a kind), 10,800
            // gap events in all.
            f.bth.psn = round + round / 3;
            f.payload = vec![0; 256];
            let bytes = f.build();
            let frame = parsers::parse_frame(1, &bytes, bytes.len(), &Default::default());
            n += 1;
            engine.ingest(n, n * 1000, &frame);
        }
    }
    assert_eq!(engine.flows.len(), 1200);
    let r = Report::build(&engine, "live capture on lo");
    assert_eq!(r.flows.len(), 1200);
    // 28 packets per flow, a PSN skipped at rounds 3, 6, .. 27: 9 gap events per flow, counted in full,
    // while the event list stops at its bound of 10,000
    assert_eq!(
        r.flows.iter().map(|f| f.psn.gap_events).sum::<u64>(),
        10_800
    );
    assert_eq!(r.events.len(), 10_000, "the event list stops at its bound");
    assert_eq!(r.events_dropped, 800);
}

/// The PSN chart marks what the analysis counted: for every capture of testdata (and of the public corpus
/// when it is there), every flow's chart has as many gap, retransmission and NAK marks as the report has
/// gap events, retransmitted requests, and NAKs plus RNR NAKs of its paired flow. (A frame is marked as it
/// was counted when read; where a later frame showed a packet had been held up on the way, the report's
/// gaps and retransmissions were revised down, by at most its `psn.reordered` each.)
#[test]
fn the_chart_marks_what_the_report_counts() {
    let files = every_capture();
    assert!(files.len() >= 40, "{} captures", files.len());
    let mut marked = (0, 0, 0);
    for path in files {
        let Ok((report, index)) = data::analyze(&path, &Default::default(), |_, _| true) else {
            continue; // a capture the reader refuses (testdata has damaged files): no chart
        };
        let flows: Vec<u64> = report.flows.iter().map(|f| f.id).collect();
        let all = data::series_of(&index, &report, &flows).unwrap();
        for (f, s) in report.flows.iter().zip(&all) {
            let count = |k| s.points.iter().filter(|p| p.kind == k).count() as u64;
            let pair = f.paired_with.and_then(|p| report.flow(p));
            let naks = pair.map_or(0, |p| p.naks.total() + p.rnr_naks);
            let want = (f.psn.gap_events, f.psn.retransmitted, naks);
            let got = (
                count(PointKind::Gap),
                count(PointKind::Retransmission),
                count(PointKind::Nak),
            );
            let revised = |got: u64, want: u64| (want..=want + f.psn.reordered).contains(&got);
            assert!(
                revised(got.0, want.0) && revised(got.1, want.1) && got.2 == want.2,
                "{} flow {}: {got:?}, want {want:?} (reordered {})",
                path.display(),
                f.id,
                f.psn.reordered
            );
            marked.0 += got.0;
            marked.1 += got.1;
            marked.2 += got.2;
        }
    }
    // The captures have loss, resends and NAKs: the comparison is not of zeros only.
    assert!(marked.0 > 0 && marked.1 > 0 && marked.2 > 0, "{marked:?}");
}

/// With the hosts' printout (`tui FILE --expect LOG`), the two directions of the connection sit side by side
/// whatever the sort, and the conn column names the connection and its state: #0, established (up).
#[test]
fn flows_view_groups_a_connections_directions() {
    let path = root().join("testdata/lab/write.pcap");
    let log = std::fs::read_to_string(root().join("testdata/lab/write.log")).unwrap();
    let cfg = rocescope::pipeline::Config {
        expected: rocescope::pipeline::Expected {
            exchanges: rocescope::source::printout::exchanges(&log).into(),
            jobs: Default::default(),
        },
        ..Default::default()
    };
    let (report, index) = data::analyze(&path, &cfg, |_, _| true).unwrap();
    let mut m = Model::new("write.pcap".to_string(), true);
    update(&mut m, Msg::Resize(160, 20));
    let cmds = update(&mut m, Msg::Snapshot(Arc::new(report), index.len()));
    settle(&mut m, &index, cmds);
    let r = m.report.clone().unwrap();
    assert_eq!(r.flows.len(), 2);
    let lines = render(&m);
    for row in ["10.0.0.1 → 10.0.0.2", "10.0.0.2 → 10.0.0.1"] {
        assert_eq!(cell(&lines, row, "conn"), "#0", "{}", screen(&lines));
    }
    assert!(
        lines.iter().filter(|l| l.contains("#0 up")).count() == 2,
        "{}",
        screen(&lines)
    );
}

/// The live header says whether the NIC's counters agree with the capture so far (the snapshot's
/// `counters`), and says nothing without a relation to hold (no RDMA port here).
#[test]
fn the_live_header_says_whether_the_nic_agrees() {
    use rocescope::report::counters::{Holds, NicCounters, Relation};
    let (snaps, _ring) = live_replay(LOSSY, 1000, &[]);
    let relation = |counter, nic, capture| Relation {
        device: "rxe0".into(),
        port: 1,
        counter,
        nic,
        capture,
        capture_figure: "RoCE packets from its addresses",
        relation: Holds::Equal,
        holds: nic == capture,
        meaning: None,
    };
    let header = |relations: Vec<Relation>| {
        let mut r = Report::build(&Engine::new(Default::default()), "live capture on lo");
        r.capture_stats = snaps[0].0.capture_stats.clone();
        r.counters = Some(NicCounters {
            interval_s: 1.0,
            ports: Vec::new(),
            netdevs: Vec::new(),
            disagreements: relations.iter().filter(|r| !r.holds).count(),
            relations,
        });
        let mut m = Model::new_live("lo", true);
        update(&mut m, Msg::Resize(120, 40));
        update(&mut m, Msg::Snapshot(Arc::new(r), 0));
        render(&m)[1].clone()
    };
    let h = header(vec![
        relation("sent_pkts", 9, 8),
        relation("rcvd_pkts", 3, 3),
    ]);
    assert!(h.contains("NIC: 1 of 2 differ"), "{h}");
    let h = header(vec![
        relation("sent_pkts", 8, 8),
        relation("rcvd_pkts", 3, 3),
    ]);
    assert!(h.contains("NIC agrees (2)"), "{h}");
    assert!(!header(Vec::new()).contains("NIC"));
}

/// Every capture of testdata and the public corpus.
fn every_capture() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in [
        "testdata/analysis",
        "testdata/diagnosis",
        "testdata/edge",
        "testdata/lab",
        "testdata/public",
        "../shared/corpus/public",
    ] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("pcap" | "pcapng")
            ) {
                files.push(p);
            }
        }
    }
    files
}

/// The TUI's flows view (sorted by trouble, as it opens) and the text report list a capture's flows in one
/// order, on every capture of testdata and the corpus.
#[test]
fn the_text_report_and_the_tui_list_flows_in_one_order() {
    let mut compared = 0;
    for path in every_capture() {
        let Ok((report, index)) = data::analyze(&path, &Default::default(), |_, _| true) else {
            continue;
        };
        let mut text = Vec::new();
        rocescope::report::text::write(&mut text, &report, None).unwrap();
        let text = String::from_utf8(text).unwrap();
        let from_text: Vec<u64> = text
            .lines()
            .skip_while(|l| !l.starts_with("Flows"))
            .skip(2)
            .map_while(|l| l.split_whitespace().next()?.parse().ok())
            .collect();
        let mut m = Model::new(path.display().to_string(), true);
        update(&mut m, Msg::Resize(200, 60));
        let report = Arc::new(report);
        let cmds = update(&mut m, Msg::Snapshot(report.clone(), index.len()));
        settle(&mut m, &index, cmds);
        assert_eq!(m.sort_key(), SortKey::Trouble);
        let from_tui: Vec<u64> = m
            .visible_flows()
            .iter()
            .map(|&i| report.flows[i].id)
            .collect();
        assert_eq!(from_text, from_tui, "{}", path.display());
        compared += usize::from(from_tui.len() > 1);
    }
    assert!(
        compared >= 30,
        "only {compared} captures with several flows"
    );
}

/// The diagnosis leads every view: testdata/diagnosis/stall_at_end.pcap (built so: WRITEs from 10.0.0.1 to
/// QP 0x11, the last unanswered to the end) lists its requester first, `stalled` in the state column; the
/// banner under the header tells its story on the flows, packets and events views alike; its detail opens
/// with the same story.
#[test]
fn the_diagnosis_leads_every_view() {
    let (mut m, idx) = load("testdata/diagnosis/stall_at_end.pcap", 160, 30);
    let story = "#0 QP 0x000011 10.0.0.1 → 10.0.0.2 stalled: PSN 102";
    let lines = render(&m);
    assert_eq!(cell(&lines, "10.0.0.1 → 10.0.0.2", "state"), "stalled");
    assert_eq!(cell(&lines, "10.0.0.2 → 10.0.0.1", "state"), "ok");
    let rows: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("10.0.0.1 → 10.0.0.2") || l.contains("10.0.0.2 → 10.0.0.1"))
        .skip(1)
        .collect();
    assert!(
        rows[0].contains("10.0.0.1 → 10.0.0.2"),
        "{}",
        screen(&lines)
    );
    for (view, keys) in [("flows", 0), ("packets", 1), ("events", 1)] {
        for _ in 0..keys {
            key(&mut m, &idx, KeyCode::Tab);
        }
        let lines = render(&m);
        assert!(
            lines[2].starts_with(story),
            "{view}: the banner\n{}",
            screen(&lines)
        );
    }
    key(&mut m, &idx, KeyCode::Tab);
    assert_eq!(m.view, View::Flows);
    key(&mut m, &idx, KeyCode::Enter);
    assert_eq!(m.view, View::Detail);
    let lines = render(&m);
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("What happened: {story}"))),
        "{}",
        screen(&lines)
    );
}

//! The real binary in tmux: open a lossy capture, sort by gaps, open the worst flow (chart, events), jump to
//! a packet, quit; the terminal must come back (alternate screen left, cooked mode, shell prompt), also
//! after SIGTERM and after a panic. Needs tmux (scripts/test installs it): without it this test fails.
use std::path::Path;
use std::process::Command;
use std::thread::sleep;
use std::time::Duration;

mod common;

use common::{BIN, Tmux, children_named};

#[test]
fn browse_a_lossy_capture_and_quit() {
    let t = Tmux::start("browse");
    let file = "testdata/lab/write_loss.pcap";
    assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join(file).exists());
    t.type_line(&format!("{BIN} tui {file}; echo EXIT=$?"));
    let s = t.wait_for_all(&["Flows 2/2", "FAIL"]);
    assert!(t.alternate_on(), "the TUI uses the alternate screen");
    // Sort by gaps: s opens the picker on "trouble"; gaps is 8 further down (id, endpoints, QP, role,
    // state, packets, throughput, gaps).
    let _ = s;
    t.keys(&["s"]);
    t.wait_for("Sort by");
    for _ in 0..8 {
        t.keys(&["Down"]);
    }
    t.keys(&["Enter"]);
    let s = t.wait_for("sort: gaps ↓");
    let first = s
        .lines()
        .find(|l| l.contains("│▶"))
        .unwrap_or_else(|| panic!("no selected row:\n{s}"));
    assert!(
        first.contains("10.0.0.1 → 10.0.0.2"),
        "worst flow first: {first}\n{s}"
    );
    // Open it: chart, throughput, events.
    t.keys(&["Enter"]);
    t.wait_for_all(&[
        "PSN vs time: ",
        "10 gaps, 59 retransmissions, 11 NAKs",
        "Throughput over the flow's life",
        // 10 PSN gaps, 11 NAKs and the 11 go-back-N they cause, of which a flow keeps 9 of a kind.
        "Events of this flow (27)",
        "PSN gap: 1 missing after PSN 8421545 (0x8080a9)",
    ]);
    // The first event's packet, with its tree (open at the transport header) and hex.
    t.keys(&["Enter"]);
    t.wait_for_all(&[
        "Frame 38 (-V)",
        "Packets: all frames  38/310",
        "│▶38 ",
        "│Base Transport Header  [bytes 42..54]",
        "[infiniband.bth.opcode]",
    ]);
    // K scrolls the tree up to the frame's first lines.
    for _ in 0..30 {
        t.keys(&["K"]);
    }
    t.wait_for_all(&["Frame 38: ", "Ethernet II  [bytes 0..14]", "[eth.dst]"]);
    t.keys(&["]", "]"]);
    // (checked on the screen that shows the hex, not on one taken while the first frame was still drawing)
    let s = t.wait_for("0020  00 02 c1 b9");
    assert!(s.contains("┌Hex"), "{s}");
    // Help, then quit.
    t.keys(&["?"]);
    t.wait_for("drill down");
    t.keys(&["Escape"]);
    sleep(Duration::from_millis(200));
    t.keys(&["q"]);
    let s = t.wait_for("EXIT=0");
    assert!(!s.contains("Flows 2/2"), "the TUI's screen is gone:\n{s}");
    t.assert_restored("AFTER-QUIT");
}

/// At 80×24 the footer ends with the help key and the packet list shows short opcode names whole; at
/// 200×60 the full names; the PSN chart's legend is its title, never a box over the newest points.
#[test]
fn usable_at_80x24_and_at_200x60() {
    let file = "testdata/lab/write_loss.pcap";
    let small = Tmux::start_sized("small", 80, 24);
    small.type_line(&format!("{BIN} tui {file}"));
    let s = small.wait_for("Flows 2/2");
    let footer = s.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert!(footer.trim_end().ends_with("? help"), "{s}");
    small.keys(&["Tab"]);
    // Frames 1 to 4: the first WRITE of four packets (tshark: opcodes 6, 7, 7, 8).
    let s = small.wait_for("│▶1 ");
    // The list's rows (the banner above names the QP too).
    let ops: Vec<&str> = s
        .lines()
        .filter(|l| l.starts_with('│') && l.contains("0x000015"))
        .take(4)
        .map(|l| {
            let mut words = l.split_whitespace().skip_while(|w| *w != "0x000015");
            words.nth(1).unwrap_or("")
        })
        .collect();
    assert_eq!(ops, ["WR_F", "WR_M", "WR_M", "WR_L"], "{s}");
    let footer = s.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert!(footer.trim_end().ends_with("? help"), "{s}");
    small.keys(&["q"]);

    let big = Tmux::start_sized("big", 200, 60);
    big.type_line(&format!("{BIN} tui {file}"));
    big.wait_for("Flows 2/2");
    big.keys(&["Tab"]);
    let s = big.wait_for("│▶1 ");
    for op in ["RC_WRITE_FIRST", "RC_WRITE_MIDDLE", "RC_WRITE_LAST"] {
        assert!(s.contains(op), "{op} in\n{s}");
    }
    // Back to the flows before Enter: an Escape followed at once by a key reads as Alt and that key.
    big.keys(&["Escape"]);
    big.wait_for("sort: trouble");
    big.keys(&["Enter"]);
    let s = big.wait_for("PSN vs time: ");
    // The chart's box (the story above it tells of requests too).
    let chart: String = s
        .lines()
        .skip_while(|l| !l.starts_with("┌PSN vs time"))
        .take_while(|l| l.starts_with('┌') || l.starts_with('│'))
        .collect();
    assert_eq!(
        chart.matches("requests").count(),
        1,
        "the legend is the title only:\n{s}"
    );
    assert_eq!(chart.matches("retransmissions").count(), 1, "{s}");
    big.keys(&["q"]);
}

#[test]
fn sigterm_and_panic_restore_the_terminal() {
    let t = Tmux::start("signals");
    let pidfile = std::env::temp_dir().join(format!("rocescope-e2e-{}.pid", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    t.type_line(&format!(
        "sh -c 'echo $$ > {}; exec {BIN} tui testdata/analysis/gap_nak_go_back_n.pcap'; echo EXIT=$?",
        pidfile.display()
    ));
    t.wait_for("Flows 2/2");
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let _ = std::fs::remove_file(&pidfile);
    let killed = Command::new("kill")
        .args(["-TERM", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    t.wait_for("EXIT=0");
    t.assert_restored("AFTER-TERM");

    t.type_line(&format!(
        "ROCESCOPE_TUI_TEST_PANIC=1 {BIN} tui testdata/analysis/gap_nak_go_back_n.pcap; echo EXIT=$?"
    ));
    let s = t.wait_for("EXIT=101");
    assert!(
        s.contains("ROCESCOPE_TUI_TEST_PANIC is set"),
        "panic message shown:\n{s}"
    );
    t.assert_restored("AFTER-PANIC");
}

/// A terminal that goes away (window closed, ssh dropped) ends the TUI: it must not stay behind spinning.
/// Started from the interactive shell, as a person would (the shell passes the hang-up on to it).
#[test]
fn a_closed_terminal_ends_the_tui() {
    let pid = {
        let t = Tmux::start("hangup");
        t.type_line(&format!(
            "{BIN} tui testdata/analysis/gap_nak_go_back_n.pcap"
        ));
        t.wait_for("Flows");
        let shell = t
            .run(&["list-panes", "-F", "#{pane_pid}"])
            .trim()
            .to_string();
        // Idle a moment, waiting for keys, as a person's session is when the window closes.
        std::thread::sleep(std::time::Duration::from_secs(1));
        children_named(&shell, "rocescope")
            .pop()
            .expect("the TUI runs under the pane's shell")
        // Dropping `t` kills the tmux server: the TUI's terminal hangs up.
    };
    let proc_dir = Path::new("/proc").join(&pid);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let running = || {
        let stat = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
        !stat.is_empty() && stat.split_whitespace().nth(2) != Some("Z")
    };
    while running() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        !running(),
        "rocescope tui (pid {pid}) still runs 3 s after its terminal closed"
    );
}

/// A capture cut short (its first 5,000 bytes): the header warns where the file broke, as `analyze` does,
/// and the TUI exits 4 with the same warning on standard error once the screen is back.
#[test]
fn a_cut_capture_is_shown_as_cut() {
    let whole =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/lab/write_loss.pcap"))
            .unwrap();
    let cut = std::env::temp_dir().join(format!("rocescope-tui-cut-{}.pcap", std::process::id()));
    std::fs::write(&cut, &whole[..5000]).unwrap();
    let t = Tmux::start("cut");
    t.type_line(&format!("{BIN} tui {}; echo EXIT=$?", cut.display()));
    let s = t.wait_for("Flows ");
    assert!(s.contains("CUT SHORT"), "{s}");
    assert!(s.contains("WARNING: "), "{s}");
    assert!(s.contains("ends in the middle of a packet"), "{s}");
    t.keys(&["q"]);
    // The exit status's own line (the command line typed says EXIT= too).
    let s = t
        .wait_until(Duration::from_secs(10), |s| {
            s.lines().any(|l| l.starts_with("EXIT="))
        })
        .unwrap_or_else(|s| panic!("no exit status:\n{s}"));
    assert!(s.lines().any(|l| l == "EXIT=4"), "{s}");
    assert!(s.contains("rocescope: warning: "), "{s}");
    let _ = std::fs::remove_file(cut);
}

//! The live terminal UI, for real: `rocescope tui -i lo` (and `rocescope capture -i lo --tui`) in tmux while
//! this test sends RoCEv2 frames with a PSN gap to loopback through a raw socket (valid ICRCs: see
//! tests/capture.rs). The flow must show with its gap within 2 s, space must freeze the display while the
//! capture goes on, `w` must save frames that `rocescope analyze` reads back the same, and the terminal must
//! come back after q, SIGTERM, a panic and a hang-up.
//!
//! Needs root (capture, raw sockets) and tmux: without either these tests fail, they do not skip.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

use parsers::builder::{Net, RoceFrame};
use serde_json::Value;

mod common;

use common::{BIN, Tmux, children_named};

const RC_SEND_ONLY: u8 = 0x04;

fn require_root() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        panic!(
            "tests/tui_live.rs needs root (live capture on lo, raw sockets): run `cargo test --test tui_live` \
             as root, as CI does"
        );
    }
}

/// One RoCEv2 packet from the IP header on: RC SEND ONLY 127.0.0.1 -> `dst`, QP `qp`, PSN `psn`.
fn packet(dst: [u8; 4], qp: u32, psn: u32) -> Vec<u8> {
    let mut f = RoceFrame::new(RC_SEND_ONLY);
    if let Net::V4(h) = &mut f.net {
        h.src = [127, 0, 0, 1];
        h.dst = dst;
        h.ecn = 2;
        // Non-zero, so that the kernel keeps it (IP_HDRINCL fills in a zero ID): the ICRC stays valid.
        h.id = 0x2000 + (psn & 0xfff) as u16;
    }
    f.bth.dest_qp = qp;
    f.bth.psn = psn;
    f.bth.ack_req = true;
    f.payload = vec![0xcd; 64];
    f.build()[14..].to_vec()
}

/// Sends RC SEND ONLY packets with these PSNs to `dst`, QP `qp`, through a raw socket.
fn send(dst: [u8; 4], qp: u32, psns: &[u32]) {
    // SAFETY: plain socket calls on a socket this function owns, with a sockaddr_in built here.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW);
        assert!(fd >= 0, "raw socket: {}", std::io::Error::last_os_error());
        for &psn in psns {
            let p = packet(dst, qp, psn);
            let mut sa: libc::sockaddr_in = std::mem::zeroed();
            sa.sin_family = libc::AF_INET as libc::sa_family_t;
            sa.sin_addr.s_addr = u32::from_ne_bytes(dst);
            let n = libc::sendto(
                fd,
                p.as_ptr().cast(),
                p.len(),
                0,
                (&sa as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            );
            assert_eq!(
                n,
                p.len() as isize,
                "sendto: {}",
                std::io::Error::last_os_error()
            );
            sleep(Duration::from_millis(2));
        }
        libc::close(fd);
    }
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocescope-tuilive-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The cells of the flows-table row whose endpoints are `endpoints`, by column title (cells start where
/// their titles do).
fn flow_row(screen: &str, endpoints: &str) -> Option<Vec<(String, String)>> {
    let lines: Vec<Vec<char>> = screen.lines().map(|l| l.chars().collect()).collect();
    let at = lines
        .iter()
        .position(|l| l.iter().collect::<String>().contains(" endpoints "))?;
    let header = &lines[at];
    // below the column titles: the diagnosis lines above the table name the flow's endpoints too
    let row = lines[at + 1..]
        .iter()
        .find(|l| l.iter().collect::<String>().contains(endpoints))?;
    let mut starts = Vec::new();
    let mut i = 1;
    while i < header.len() {
        if header[i] != ' ' && header[i] != '│' && (header[i - 1] == ' ' || header[i - 1] == '│')
        {
            let title: String = header[i..]
                .iter()
                .take_while(|c| **c != ' ' && **c != '│')
                .collect();
            starts.push((i, title));
        }
        i += 1;
    }
    Some(
        starts
            .into_iter()
            .map(|(at, title)| {
                let cell: String = row
                    .get(at..)
                    .unwrap_or(&[])
                    .iter()
                    .take_while(|c| **c != ' ' && **c != '│')
                    .collect();
                (title.trim_end_matches(['↓', '↑']).to_string(), cell)
            })
            .collect(),
    )
}

fn cell(row: &[(String, String)], title: &str) -> String {
    row.iter()
        .find(|(t, _)| t == title)
        .map(|(_, c)| c.clone())
        .unwrap_or_else(|| panic!("no column {title}: {row:?}"))
}

fn analyze(file: &Path) -> Value {
    let o = Command::new(BIN)
        .args(["analyze", "--json"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "analyze {}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The flow 127.0.0.1 -> `dst` with QP `qp` of an analyze report.
fn find_flow<'a>(r: &'a Value, dst: &str, qp: u32) -> &'a Value {
    r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["src"] == "127.0.0.1" && f["dst"] == dst && f["dest_qp"] == qp)
        .unwrap_or_else(|| panic!("no flow 127.0.0.1 -> {dst} QP {qp}: {r}"))
}

/// `rocescope tui -i lo`: the gap shows within 2 s; space pauses the display while the capture goes on; the
/// packet list shows the frames; `w` saves the buffered frames to a timestamped pcapng here, which analyze
/// reads the same; q restores the terminal.
#[test]
fn live_tui_shows_the_gap_pauses_saves_and_quits() {
    require_root();
    let t = Tmux::start("live");
    let dir = tempdir("ring");
    t.type_line(&format!(
        "cd {} && {BIN} tui -i lo; echo EXIT=$?",
        dir.display()
    ));
    // libpcap's counters in the header, the live keys in the footer
    t.wait_for_all(&["pcap received ", "live on lo", "space pause  w save"]);
    assert!(t.alternate_on(), "the TUI uses the alternate screen");

    let (dst, ends) = ([127, 0, 0, 2], "127.0.0.1 → 127.0.0.2");
    send(dst, 0x5a, &[100, 101, 102, 105, 106]);
    let sent = Instant::now();
    let s = t
        .wait_until(Duration::from_secs(2), |s| {
            flow_row(s, ends).is_some_and(|r| cell(&r, "pkts") == "5")
        })
        .unwrap_or_else(|s| panic!("the flow with its 5 packets did not show within 2 s:\n{s}"));
    eprintln!(
        "flow shown {:?} after the last frame was sent",
        sent.elapsed()
    );
    eprintln!("{s}");
    let row = flow_row(&s, ends).unwrap();
    assert_eq!(cell(&row, "QP"), "0x00005a", "{row:?}");
    assert_eq!(cell(&row, "gaps"), "1", "{row:?}\n{s}");
    assert_eq!(cell(&row, "miss"), "2", "{row:?}\n{s}");
    assert_eq!(cell(&row, "ICRC"), "0", "valid ICRCs: {row:?}");

    // Paused: the display keeps its snapshot while the capture goes on.
    t.keys(&["Space"]);
    let s = t.wait_for("PAUSED");
    assert!(s.contains("space resume"), "{s}");
    send(dst, 0x5a, &[107, 108]);
    sleep(Duration::from_millis(1000));
    let s = t.screen();
    assert_eq!(
        cell(&flow_row(&s, ends).unwrap(), "pkts"),
        "5",
        "paused:\n{s}"
    );
    eprintln!("{s}");
    t.keys(&["Space"]);
    t.wait_until(Duration::from_secs(2), |s| {
        s.contains("LIVE") && flow_row(s, ends).is_some_and(|r| cell(&r, "pkts") == "7")
    })
    .unwrap_or_else(|s| panic!("resumed, the 2 frames captured meanwhile show:\n{s}"));

    // The packet list, from the ring.
    t.keys(&["Tab"]);
    let s = t
        .wait_until(Duration::from_secs(2), |s| {
            s.contains("Packets: frames ")
                && s.lines()
                    .any(|l| l.contains("RC_SEND_ONLY") && l.contains(" 108 "))
        })
        .unwrap_or_else(|s| panic!("the packet list shows the frames:\n{s}"));
    eprintln!("{s}");
    assert!(s.contains("127.0.0.2"), "{s}");
    t.keys(&["Tab", "Tab"]);
    t.wait_for("Flows ");
    // The flow's detail: its PSN chart from the frames in the ring.
    t.keys(&["Enter"]);
    let s = t
        .wait_until(Duration::from_secs(3), |s| {
            s.contains("PSN vs time: 6 requests, 1 gaps")
        })
        .unwrap_or_else(|s| panic!("the flow's chart:\n{s}"));
    eprintln!("{s}");
    t.keys(&["Escape"]);
    t.wait_for("Flows ");

    // w: the buffered frames to rocescope-lo-TIME.pcapng in the current directory.
    t.keys(&["w"]);
    let s = t.wait_for(".pcapng");
    eprintln!("{s}");
    let footer = s
        .lines()
        .find(|l| l.contains("saved to "))
        .unwrap_or_else(|| panic!("{s}"));
    let path = footer.split("saved to ").nth(1).unwrap();
    let path = PathBuf::from(&path[..path.find(".pcapng").unwrap() + ".pcapng".len()]);
    assert_eq!(
        path.parent(),
        Some(dir.as_path()),
        "saved in the current directory: {footer}"
    );
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("rocescope-lo-") && name.ends_with("Z.pcapng"),
        "{name}"
    );
    assert!(path.exists(), "{}", path.display());
    let r = analyze(&path);
    let f = find_flow(&r, "127.0.0.2", 0x5a);
    assert_eq!(f["packets"], 7, "{f}");
    assert_eq!(f["psn"]["first"], 100);
    assert_eq!(f["psn"]["last"], 108);
    assert_eq!(f["psn"]["gap_events"], 1);
    assert_eq!(f["psn"]["missing"], 2);
    assert_eq!(f["icrc_bad"], 0);

    t.keys(&["q"]);
    let s = t.wait_for("EXIT=0");
    assert!(!s.contains("LIVE"), "the TUI's screen is gone:\n{s}");
    t.assert_restored("AFTER-QUIT");
    let _ = std::fs::remove_dir_all(dir);
}

/// `rocescope capture -i lo --tui -w FILE`: `w` flushes FILE and says so, analyze reads the flow from it;
/// SIGTERM ends it with the terminal restored and the file whole. Then: a panic restores the terminal, and an
/// unknown interface is one line before the screen changes.
#[test]
fn capture_tui_flushes_its_file_and_restores_on_sigterm_and_panic() {
    require_root();
    let t = Tmux::start("livew");
    let dir = tempdir("w");
    let file = dir.join("live.pcapng");
    let pidfile = dir.join("pid");
    t.type_line(&format!(
        "sh -c 'echo $$ > {}; exec {BIN} capture -i lo --tui -f \"udp dst port 4791 and dst host 127.0.0.3\" -w {}'; echo EXIT=$?",
        pidfile.display(),
        file.display()
    ));
    t.wait_for("pcap received ");
    let ends = "127.0.0.1 → 127.0.0.3";
    send([127, 0, 0, 3], 0x77, &[7, 8, 10]);
    let s = t
        .wait_until(Duration::from_secs(2), |s| {
            flow_row(s, ends).is_some_and(|r| cell(&r, "pkts") == "3")
        })
        .unwrap_or_else(|s| panic!("the flow did not show within 2 s:\n{s}"));
    let row = flow_row(&s, ends).unwrap();
    assert_eq!(cell(&row, "gaps"), "1", "{row:?}");
    assert_eq!(cell(&row, "miss"), "1", "{row:?}");
    // libpcap's counters (on lo the kernel counts each frame going out and coming in).
    let received: u64 = s
        .split("pcap received ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{s}"));
    assert!(received >= 3, "{s}");
    assert!(s.contains(" dropped 0 if-dropped 0"), "{s}");

    t.keys(&["w"]);
    let s = t.wait_for("frames written to");
    eprintln!("{s}");
    assert!(
        s.contains(&format!("w: 3 frames written to {}", file.display())),
        "{s}"
    );
    let r = analyze(&file);
    assert_eq!(r["capture"]["frames"], 3, "{r}");
    let f = find_flow(&r, "127.0.0.3", 0x77);
    assert_eq!(f["psn"]["gap_events"], 1);
    assert_eq!(f["psn"]["missing"], 1);

    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let killed = Command::new("kill")
        .args(["-TERM", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    t.wait_for("EXIT=0");
    t.assert_restored("AFTER-TERM");
    assert_eq!(
        analyze(&file)["capture"]["frames"],
        3,
        "the file is whole after SIGTERM"
    );

    t.type_line(&format!(
        "ROCESCOPE_TUI_TEST_PANIC=1 {BIN} tui -i lo -f 'udp dst port 4791 and dst host 127.0.0.3'; echo EXIT=$?"
    ));
    let s = t.wait_for("EXIT=101");
    assert!(
        s.contains("ROCESCOPE_TUI_TEST_PANIC is set"),
        "panic message shown:\n{s}"
    );
    t.assert_restored("AFTER-PANIC");

    t.type_line(&format!("{BIN} tui -i nosuchif0; echo EXIT=$? ERR"));
    let s = t.wait_for("EXIT=1 ERR");
    assert!(
        s.contains("rocescope: no such interface 'nosuchif0'"),
        "{s}"
    );
    t.assert_restored("AFTER-ERROR");
    let _ = std::fs::remove_dir_all(dir);
}

/// A live TUI whose terminal goes away (window closed, ssh dropped) ends, capture and all.
#[test]
fn a_closed_terminal_ends_the_live_tui() {
    require_root();
    let pid = {
        let t = Tmux::start("livehup");
        t.type_line(&format!(
            "{BIN} tui -i lo -f 'udp dst port 4791 and dst host 127.0.0.4'"
        ));
        t.wait_for("pcap received ");
        let shell = t
            .run(&["list-panes", "-F", "#{pane_pid}"])
            .trim()
            .to_string();
        sleep(Duration::from_secs(1));
        children_named(&shell, "rocescope")
            .pop()
            .expect("the TUI runs under the pane's shell")
    };
    let proc_dir = Path::new("/proc").join(&pid);
    let deadline = Instant::now() + Duration::from_secs(3);
    let running = || {
        let stat = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
        !stat.is_empty() && stat.split_whitespace().nth(2) != Some("Z")
    };
    while running() && Instant::now() < deadline {
        sleep(Duration::from_millis(50));
    }
    assert!(
        !running(),
        "rocescope tui -i lo (pid {pid}) still runs 3 s after its terminal closed"
    );
}

/// `-c N` ends the capture, not the TUI: the header says why, `w` says where the frames are.
#[test]
fn a_capture_that_stops_keeps_the_tui_up() {
    require_root();
    let t = Tmux::start("livec");
    let dir = tempdir("c");
    let file = dir.join("two.pcap");
    t.type_line(&format!(
        "{BIN} capture -i lo --tui -c 2 -f 'udp dst port 4791 and dst host 127.0.0.5' -w {}; echo EXIT=$?",
        file.display()
    ));
    t.wait_for("pcap received ");
    send([127, 0, 0, 5], 0x99, &[1, 2, 3]);
    let s = t.wait_for_all(&["STOPPED (count)", " 2 frames (2 RoCE)"]);
    eprintln!("{s}");
    t.keys(&["w"]);
    t.wait_for(&format!(
        "capture stopped; 2 frames are in {}",
        file.display()
    ));
    assert_eq!(analyze(&file)["capture"]["frames"], 2);
    t.keys(&["q"]);
    t.wait_for("EXIT=0");
    t.assert_restored("AFTER-QUIT");
    let _ = std::fs::remove_dir_all(dir);
}

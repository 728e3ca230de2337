//! Reports of captures with very many flows stay proportionate: a synthetic fabric (crates/synth) with and
//! without thousands of one-packet flows mixed in (`noise_flows`: each an RC SEND from an address and to a QP
//! of its own). The fabric's flows are reported exactly as without the noise, the noise is added up in
//! `other_flows`, and the totals count every flow.
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const NOISE: u64 = 3000;
const LISTED: usize = 50;

fn capture(name: &str, noise_flows: u64) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "rocescope-bounded-{}-{name}.pcap",
        std::process::id()
    ));
    let params = synth::Params {
        frames: 20_000,
        qps: 8,
        seed: 7,
        noise_flows,
        ..synth::Params::default()
    };
    let out = BufWriter::new(File::create(&path).unwrap());
    synth::generate(&params, out).unwrap();
    path
}

fn analyze(path: &Path, args: &[&str]) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["analyze", "--json"])
        .arg(path)
        .args(args)
        .output()
        .expect("run rocescope");
    serde_json::from_slice(&o.stdout).expect("JSON")
}

/// A flow's figures without its ids (which the noise shifts).
fn figures(f: &Value) -> Value {
    let mut f = f.clone();
    for k in ["id", "paired_with", "connection"] {
        f.as_object_mut().unwrap().remove(k);
    }
    f
}

/// Loss, damage and congestion marks: what makes a flow listed whatever its size (docs/json.md).
fn trouble(f: &Value) -> u64 {
    let n = |v: &Value| v.as_u64().unwrap();
    let naks: u64 = f["naks"].as_object().unwrap().values().map(n).sum();
    n(&f["psn"]["gap_events"])
        + n(&f["psn"]["missing"])
        + n(&f["psn"]["retransmitted"])
        + naks
        + n(&f["rnr_naks"])
        + n(&f["implied_naks"])
        + n(&f["icrc_bad"])
        + n(&f["malformed"])
        + n(&f["ecn"]["ce"])
        + n(&f["cnp"])
        + n(&f["ce_without_cnp"])
}

fn key(f: &Value) -> (String, String, u64) {
    (
        f["src"].as_str().unwrap().to_string(),
        f["dst"].as_str().unwrap().to_string(),
        f["dest_qp"].as_u64().unwrap(),
    )
}

#[test]
fn a_scan_among_a_fabric_is_added_up() {
    let (clean, noisy) = (capture("clean", 0), capture("noisy", NOISE));
    let want = analyze(&clean, &[]);
    let got = analyze(&noisy, &["--report-flows", &LISTED.to_string()]);
    let fabric = want["flows"].as_array().unwrap();
    assert!(
        fabric.len() < LISTED,
        "the fabric has {} flows",
        fabric.len()
    );
    let listed = got["flows"].as_array().unwrap();
    // Every fabric flow listed, with the figures it has without the noise.
    for f in fabric {
        let g = listed
            .iter()
            .find(|g| key(g) == key(f))
            .unwrap_or_else(|| panic!("flow {:?} not listed", key(f)));
        assert_eq!(figures(g), figures(f), "flow {:?}", key(f));
    }
    // Listed: every flow with trouble (loss, damage or congestion marks), then the LISTED busiest others
    // (the rest of the fabric, then noise of one packet each).
    let troubled = fabric.iter().filter(|f| trouble(f) > 0).count();
    assert_eq!(listed.len(), troubled + LISTED);
    let total = fabric.len() as u64 + NOISE;
    assert_eq!(got["flow_totals"]["flows"], total);
    let other = &got["other_flows"];
    let rest = total - listed.len() as u64;
    assert_eq!(other["flows"], rest);
    assert_eq!(other["packets"], rest, "one packet each");
    assert_eq!(other["by_role"]["requester"]["flows"], rest);
    // Each noise flow has an address of its own: the first 1000 pairs by pair, the rest in other_pairs.
    assert_eq!(other["by_pair"].as_array().unwrap().len(), 1000);
    assert_eq!(other["other_pairs"]["flows"], rest - 1000);
    let frames = got["capture"]["roce_frames"].as_u64().unwrap();
    let listed_packets: u64 = listed.iter().map(|f| f["packets"].as_u64().unwrap()).sum();
    assert_eq!(listed_packets + other["packets"].as_u64().unwrap(), frames);
    // The verdict counts every flow: the noise adds no trouble.
    assert_eq!(got["verdict"]["problems"], want["verdict"]["problems"]);
    assert_eq!(
        got["flow_totals"]["gap_events"],
        want["flow_totals"]["gap_events"]
    );
    // --all-flows lists them all.
    let all = analyze(&noisy, &["--all-flows"]);
    assert_eq!(all["flows"].as_array().unwrap().len() as u64, total);
    assert!(all.get("other_flows").is_none());
    // The text says how many it did not list.
    let text = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .arg("analyze")
        .arg(&noisy)
        .args(["--report-flows", &LISTED.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("... and {rest} more flows without trouble")),
        "{text}"
    );
    let _ = std::fs::remove_file(clean);
    let _ = std::fs::remove_file(noisy);
}

/// With the flow table capped below the noise (`--max-flows 500`), the least recently seen flows go: the
/// noise (one packet each, old by the time the table fills), never the busy fabric, whose flows are reported
/// exactly as without the noise; the evicted are added up, and the totals count every flow.
#[test]
fn a_capped_table_evicts_the_noise() {
    let (clean, noisy) = (capture("clean-cap", 0), capture("noisy-cap", NOISE));
    let want = analyze(&clean, &[]);
    let got = analyze(&noisy, &["--max-flows", "500"]);
    let fabric = want["flows"].as_array().unwrap();
    let listed = got["flows"].as_array().unwrap();
    for f in fabric {
        let g = listed
            .iter()
            .find(|g| key(g) == key(f))
            .unwrap_or_else(|| panic!("flow {:?} evicted", key(f)));
        assert_eq!(figures(g), figures(f), "flow {:?}", key(f));
    }
    let total = fabric.len() as u64 + NOISE;
    assert_eq!(got["flow_totals"]["flows"], total);
    let evicted = &got["evicted"];
    let kept = listed.len() as u64 + got["other_flows"]["flows"].as_u64().unwrap_or(0);
    assert!(kept <= 500, "{kept} flows kept");
    assert_eq!(evicted["flows"].as_u64().unwrap() + kept, total);
    assert_eq!(
        evicted["requesters"], evicted["flows"],
        "the noise is requesters"
    );
    assert_eq!(evicted["packets"], evicted["flows"], "one packet each");
    assert_eq!(evicted["with_trouble"], 0);
    assert_eq!(got["verdict"]["problems"], want["verdict"]["problems"]);
    let _ = std::fs::remove_file(clean);
    let _ = std::fs::remove_file(noisy);
}

/// `--plot` with a table small enough to evict the noise draws the fabric's flows exactly as without
/// eviction: the same pictures, byte for byte, under the same names (a flow's id never moves).
#[test]
fn plots_of_the_busy_flows_survive_evictions() {
    let noisy = capture("noisy-plot", NOISE);
    let base = std::env::temp_dir().join(format!("rocescope-bounded-plots-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let plot = |name: &str, args: &[&str]| -> PathBuf {
        let dir = base.join(name);
        let o = Command::new(env!("CARGO_BIN_EXE_rocescope"))
            .arg("analyze")
            .arg(&noisy)
            .arg("--plot")
            .arg(&dir)
            .args(args)
            .output()
            .expect("run rocescope");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        dir
    };
    let (whole, capped) = (plot("whole", &[]), plot("capped", &["--max-flows", "500"]));
    // The fabric's requesters (the noise is one packet a flow), by their ids in the whole capture.
    let busy: Vec<String> = analyze(&noisy, &[])["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["packets"].as_u64() > Some(1) && f["role"] != "responder")
        .map(|f| format!("flow-{}.svg", f["id"]))
        .collect();
    assert!(busy.len() >= 8, "{busy:?}");
    for n in busy.iter().chain(["throughput.svg".to_string()].iter()) {
        let (a, b) = (
            std::fs::read(whole.join(n)).unwrap(),
            std::fs::read(capped.join(n)).unwrap(),
        );
        assert!(a == b, "{n} differs after evictions");
    }
    let _ = std::fs::remove_dir_all(&base);
    let _ = std::fs::remove_file(noisy);
}

/// A million one-packet flows, each between a host pair of its own, through the engine with its default
/// table (evicting): the metrics keep the first 1,024 pairs apart and add up the rest as `other`, and
/// every packet is counted once.
#[test]
fn metrics_of_a_million_host_pairs_stay_bounded() {
    use parsers::builder::{Net, RoceFrame};
    use parsers::frame::{LINKTYPE_ETHERNET, parse_frame};
    use rocescope::analysis::{self, Engine, tally::PAIRS_KEPT};

    const FLOWS: u32 = 1_000_000;
    let mut engine = Engine::new(analysis::Config::default());
    let mut f = RoceFrame::new(parsers::opcode::rc::SEND_ONLY);
    f.payload = vec![0; 32];
    let mut bytes = Vec::new();
    for i in 0..FLOWS {
        if let Net::V4(h) = &mut f.net {
            h.src = [10, (i >> 16) as u8, (i >> 8) as u8, i as u8];
            h.dst = [11, 0, 0, 1];
        }
        bytes.clear();
        bytes.extend_from_slice(&f.build());
        let frame = parse_frame(LINKTYPE_ETHERNET, &bytes, bytes.len(), &Default::default());
        engine.ingest(u64::from(i) + 1, u64::from(i) * 1000, &frame);
    }
    let tally = engine.pair_tally();
    assert_eq!(tally.pairs.len(), PAIRS_KEPT);
    assert_eq!(tally.others.flows, u64::from(FLOWS) - PAIRS_KEPT as u64);
    let text = rocescope::report::metrics::render(&engine, &Default::default(), None);
    let packets: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("rdma_roce_packets_total{"))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        packets.len(),
        PAIRS_KEPT + 1,
        "a series per pair kept, and the others'"
    );
    assert_eq!(packets.iter().sum::<f64>(), f64::from(FLOWS));
    assert!(
        text.lines().any(|l| l.starts_with(
            "rdma_roce_packets_total{src=\"other\",dst=\"other\",priority=\"other\"} "
        )),
        "the others' series"
    );
}

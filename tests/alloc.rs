//! "Keep the per-packet path free of allocation", measured: a counting global allocator (this test binary's
//! own) around the live capture's frame ring, `rocescope analyze`'s pipeline and `rocescope export`, each asserting fewer
//! allocations than one per many frames; display filters of every kind, which allocate nothing per frame;
//! and the bytes a flow holds, one-packet or busy.
//!
//! The count is process-wide (the analysis runs two threads), so the tests take a lock and run one at a
//! time. To see where allocations come from, set `ALLOC_TRACE=N`: every Nth allocation while a measurement
//! runs prints its backtrace to standard error (`cargo test --test alloc -- --nocapture`).
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use parsers::builder::RoceFrame;
use proptest::prelude::*;
use rocescope::capture::ring::{BATCH_FRAMES, Batch, MAX_BYTES, Ring};
use rocescope::filter::{Filter, Matcher, Subject};
use rocescope::source::Packet;

/// Counts allocations and reallocations (a growth is an allocation too) while `ARMED`.
struct Counting;

static ARMED: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated and not freed, by the whole process, and the most of them since the last [`held`].
static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);
/// Print a backtrace every this many allocations (0: never); from `ALLOC_TRACE`, read before arming.
static TRACE_EVERY: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set while printing a backtrace, whose own allocations are not counted.
    static TRACING: Cell<bool> = const { Cell::new(false) };
}

fn grow(bytes: usize) {
    let live = LIVE.fetch_add(bytes as u64, Ordering::Relaxed) + bytes as u64;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrink(bytes: usize) {
    LIVE.fetch_sub(bytes as u64, Ordering::Relaxed);
}

fn count() {
    if !ARMED.load(Ordering::Relaxed) {
        return;
    }
    let n = ALLOCS.fetch_add(1, Ordering::Relaxed) + 1;
    let every = TRACE_EVERY.load(Ordering::Relaxed);
    if every > 0 && n.is_multiple_of(every) {
        // try_with: the thread may be going away.
        let _ = TRACING.try_with(|t| {
            if !t.replace(true) {
                ARMED.store(false, Ordering::Relaxed);
                eprintln!(
                    "allocation {n}:\n{}",
                    std::backtrace::Backtrace::force_capture()
                );
                ARMED.store(true, Ordering::Relaxed);
                t.set(false);
            }
        });
    }
}

// SAFETY: every call is passed on to System unchanged; counting touches only atomics and a thread-local.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        grow(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        grow(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        grow(new_size);
        shrink(layout.size());
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrink(layout.size());
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One measurement at a time: the count is process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

/// Allocations made (by any thread) while `f` runs, and its result.
fn allocations<T>(f: impl FnOnce() -> T) -> (u64, T) {
    let every = std::env::var("ALLOC_TRACE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    TRACE_EVERY.store(every, Ordering::Relaxed);
    ALLOCS.store(0, Ordering::SeqCst);
    ARMED.store(true, Ordering::SeqCst);
    let out = f();
    ARMED.store(false, Ordering::SeqCst);
    (ALLOCS.load(Ordering::SeqCst), out)
}

/// Frames of the sizes a RoCE capture has (ACKs, MTU 1024 payloads, the odd short one): the ring copies
/// bytes and does not look at them.
fn frame(n: u64, buf: &mut [u8; 1100]) -> &[u8] {
    let len = match n % 5 {
        0 => 62,
        1 => 300,
        _ => 1082,
    };
    buf[..8].copy_from_slice(&n.to_le_bytes());
    &buf[..len]
}

#[test]
fn the_live_ring_allocates_once_per_batch_not_per_frame() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    const BATCHES: u64 = 10;
    let frames = BATCHES * BATCH_FRAMES as u64;
    // Bounded at 3 batches' frames, so that the ring drops frames (and frees chunks) as the capture does.
    let ring = Arc::new(Mutex::new(Ring::new(
        3 * BATCH_FRAMES,
        MAX_BYTES,
        1,
        65535,
        "eth0",
    )));
    let mut buf = [0u8; 1100];
    let (allocs, ()) = allocations(|| {
        // As the capture thread (src/capture/session.rs) does: a batch made once, each frame pushed into it,
        // the ring locked and appended to when the batch is full.
        let mut batch = Batch::new();
        for n in 1..=frames {
            if batch.is_full() {
                ring.lock().unwrap().append(&mut batch);
            }
            batch.push(n, n * 1000, 1100, frame(n, &mut buf));
        }
        ring.lock().unwrap().append(&mut batch);
    });
    // The bound: one chunk per batch (10), the batch's two buffers made once (2), and the ring's VecDeque
    // doubling up to 4 batches' frames (at most 15 reallocations): 27. Allow 4 per batch (40), i.e. fewer
    // than 0.001 per frame; one allocation per frame would be 40,960.
    let per_frame = allocs as f64 / frames as f64;
    eprintln!("live ring: {allocs} allocations for {frames} frames ({per_frame:.5} per frame)");
    assert!(
        allocs <= 4 * BATCHES,
        "the live ring allocated {allocs} times for {frames} frames in {BATCHES} batches ({per_frame:.5} per \
         frame): at most {} expected (one chunk per batch, the ring's growth); something allocates per frame",
        4 * BATCHES
    );
    let r = ring.lock().unwrap();
    assert_eq!(r.len(), 3 * BATCH_FRAMES);
    assert_eq!(r.first_number(), Some(frames - 3 * BATCH_FRAMES as u64 + 1));
    let last = r.get(frames).unwrap();
    assert_eq!(last.data(), frame(frames, &mut buf));

    // What the TUI does with it: taking frames out shares them (an Arc count each), it copies nothing.
    let (allocs, taken) = allocations(|| {
        let mut held = 0usize;
        for n in frames - 1000..=frames {
            held += r.get(n).map_or(0, |rec| rec.data().len());
        }
        held
    });
    assert!(taken > 0);
    assert_eq!(
        allocs, 0,
        "Ring::get allocated {allocs} times for 1001 frames"
    );
    let (allocs, all) = allocations(|| r.all());
    assert_eq!(all.len(), 3 * BATCH_FRAMES);
    assert_eq!(allocs, 1, "Ring::all: one Vec, no copy of any frame");
}

/// Where each record of a pcap file ends (records one after the other after its 24-byte header).
fn pcap_records(bytes: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let incl = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + incl;
        ends.push(at);
    }
    ends
}

/// Frames of the synthetic capture (64 RC connections, as `benches/compare.sh` makes), and of its prefix.
const FRAMES: u64 = 200_000;
const PREFIX: usize = 20_000;

/// Writes the synthetic capture and a copy of its first `PREFIX` frames; returns their paths.
fn captures() -> (PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let full = dir.join(format!("alloc-synth-{}.pcap", std::process::id()));
    let prefix = dir.join(format!("alloc-synth-{}-prefix.pcap", std::process::id()));
    let params = synth::Params {
        frames: FRAMES,
        qps: 64,
        seed: 1,
        ..synth::Params::default()
    };
    let file = File::create(&full).expect("create the capture");
    synth::generate(&params, BufWriter::with_capacity(1 << 20, file)).expect("generate");
    let mut bytes = Vec::new();
    File::open(&full)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .expect("read the capture");
    let ends = pcap_records(&bytes);
    assert_eq!(ends.len() as u64, FRAMES);
    File::create(&prefix)
        .and_then(|mut f| f.write_all(&bytes[..ends[PREFIX - 1]]))
        .expect("write the prefix");
    (full, prefix)
}

fn analyze(path: &Path, threads: usize) -> rocescope::report::Report {
    let cfg = rocescope::pipeline::Config {
        threads,
        ..Default::default()
    };
    rocescope::report::analyze_file(path, &cfg).expect("analyze")
}

/// Runs `run` (which returns how many frames it counted) on the prefix and on the whole capture: the
/// allocations the rest of the frames added, and per frame.
fn growth(what: &str, run: impl Fn(&Path) -> u64) -> (u64, f64) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (full, prefix) = captures();
    let (short, n) = allocations(|| run(&prefix));
    assert_eq!(n, PREFIX as u64);
    let (long, n) = allocations(|| run(&full));
    assert_eq!(n, FRAMES);
    let _ = std::fs::remove_file(full);
    let _ = std::fs::remove_file(prefix);
    let per_frame = long.saturating_sub(short) as f64 / (FRAMES - PREFIX as u64) as f64;
    eprintln!(
        "{what}: {short} allocations for {PREFIX} frames, {long} for {FRAMES}: {per_frame:.5} per frame \
         past the start-up"
    );
    (long.saturating_sub(short), per_frame)
}

/// At `-j 2` (the reading thread parses) and `-j 4` (two threads between it and the engine parse).
#[test]
fn analyze_does_not_allocate_per_frame() {
    for threads in [2, 4] {
        let what = format!("analyze -j {threads}");
        let (more, per_frame) = growth(&what, |p| analyze(p, threads).capture.frames);
        let frames = FRAMES - PREFIX as u64;
        // Start-up costs (threads, buffers, the report) are the same for both and cancel; what grows with
        // the frames is the batches handed between the threads (1024 frames each, recycled, so a few at
        // most) and what the analysis keeps per event (a gap, a NAK: a few hundred in 180,000 frames, not
        // per frame). Both are far below 0.01 per frame; one allocation per frame, or per RoCE frame, is
        // 0.5 or more.
        assert!(
            per_frame < 0.01,
            "{what} allocated {more} times more for {frames} more frames ({per_frame:.5} per frame, \
             bound 0.01): something allocates per frame (ALLOC_TRACE=N prints every Nth allocation's \
             backtrace)"
        );
    }
}

/// The most bytes held at once (by any thread) while `f` runs, above what was held when it began.
fn held<T>(f: impl FnOnce() -> T) -> (u64, T) {
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let out = f();
    (PEAK.load(Ordering::SeqCst).saturating_sub(before), out)
}

/// What the pipeline took over a synthetic capture made with `params` (the report is not built: its rows
/// are output, not state).
struct Held {
    /// The most bytes held at once.
    bytes: u64,
    /// Allocations made.
    allocations: u64,
    /// The flows it ended with.
    flows: usize,
}

fn state_held(params: synth::Params, name: &str) -> Held {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alloc-{name}-{}.pcap", std::process::id()));
    let file = File::create(&path).expect("create the capture");
    synth::generate(&params, BufWriter::with_capacity(1 << 20, file)).expect("generate");
    let (bytes, (allocations, flows)) = held(|| {
        allocations(|| {
            let mut source = rocescope::source::FileSource::open(&path).expect("open the capture");
            let run = rocescope::pipeline::run(&mut source, &Default::default(), &mut (), ())
                .expect("analyze");
            run.engine.flows.len()
        })
    });
    let _ = std::fs::remove_file(path);
    Held {
        bytes,
        allocations,
        flows,
    }
}

/// Per flow: what `more` flows took beyond `fewer`'s (the pipeline's buffers cancel out), in bytes held
/// and in allocations.
fn per_flow(fewer: &Held, more: &Held) -> (u64, f64) {
    let flows = (more.flows - fewer.flows) as u64;
    (
        more.bytes.saturating_sub(fewer.bytes) / flows,
        more.allocations.saturating_sub(fewer.allocations) as f64 / flows as f64,
    )
}

/// What a flow costs, from the heap (the bytes allocated and not yet freed, at their most): a one-packet
/// flow (an RC SEND from an address of its own: a scan, noise on a mirror port) and a busy one (a
/// direction of an RC connection with a few hundred requests, latencies and a time series). The bounds
/// are what a flow took once its sub-states were allocated on first use, with a tenth more: a flow that
/// grows past them fails here, not in a benchmark nobody ran. Issue 25's goals, 300 bytes and 2 KB, are
/// not met yet. The bytes are those asked for: the allocator's own few bytes an allocation come on top,
/// which is one reason a new flow allocates as few times as it can (the other is time: docs/speed.md
/// "Many flows").
#[test]
fn a_flow_holds_a_bounded_few_hundred_bytes() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let noise = |flows: u64| synth::Params {
        frames: 0,
        noise_flows: flows,
        ..synth::Params::default()
    };
    let few = state_held(noise(4_000), "noise-few");
    let many = state_held(noise(20_000), "noise-many");
    assert_eq!((few.flows, many.flows), (4_000, 20_000));
    let (one_packet, one_packet_allocations) = per_flow(&few, &many);
    // The same frames per flow in both (about 195), so that the difference is flows, not longer flows.
    let busy = |qps: u32| synth::Params {
        frames: u64::from(qps) * 400_000 / 1024,
        qps,
        seed: 1,
        ..synth::Params::default()
    };
    let few = state_held(busy(128), "busy-few");
    let many = state_held(busy(1024), "busy-many");
    assert_eq!((few.flows, many.flows), (256, 2048));
    let (busy, _) = per_flow(&few, &many);
    eprintln!(
        "per flow: one-packet {one_packet} bytes in {one_packet_allocations:.2} allocations, busy \
         {busy} bytes"
    );
    // Measured with this test: one-packet 2,798 and busy 4,754 bytes before sub-states were allocated on
    // first use and rings grew as they filled, 1,774 and 3,651 after (both busy figures with 400,000
    // frames in each run, so flows of 1,560 and 195 frames). With the same frames per flow: busy 3,575
    // with HdrHistogram's dense table for latencies, 2,484 with the buckets in use listed and the opcode
    // counts packed, 2,355 with the CNP reaction's reductions listed too (2,360-2,362 in three more runs:
    // the figure moves by up to 60 bytes between runs); one-packet 1,742, then 1,734. Then busy 2,127
    // with the PSN window inline while what was missing comes (one-packet 1,750: the inline window is 16
    // bytes larger), 2,039-2,066 with requests waiting for their ACK in 24 bytes, 2,014-2,026 with the CE
    // marks held from the first (one-packet 1,686). Issue 25 asks for 2 KB.
    assert!(
        one_packet <= 1_850,
        "a one-packet flow holds {one_packet} bytes (bound 1,850): at 100,000 flows (--max-flows) the \
         256 MB a capture of 10 million flows may take come near"
    );
    assert!(
        busy <= 2_150,
        "a busy flow holds {busy} bytes (bound 2,150; issue 25 asks for 2,048)"
    );
    // The flow and what its request keeps (its PSNs, diagnosis, timing, messages and life in one): two
    // (nine before those were one, and its first gap, time-series bucket and request waiting for its ACK
    // were held in place); the index's and the host pair's tables grow now and then.
    assert!(
        one_packet_allocations < 2.5,
        "a one-packet flow makes {one_packet_allocations:.2} allocations (bound 2.5)"
    );
}

#[cfg(feature = "export")]
fn export(path: &Path) -> rocescope::export::Summary {
    let dir = path.with_extension("export");
    let cfg = rocescope::export::Config {
        dir: dir.clone(),
        files: vec![path.to_path_buf()],
        points: rocescope::export::Points::Path,
        pipeline: Default::default(),
    };
    let summary = rocescope::export::export(&cfg).expect("export");
    let _ = std::fs::remove_dir_all(dir);
    summary
}

#[cfg(feature = "export")]
#[test]
fn export_does_not_allocate_per_frame() {
    let (more, per_frame) = growth("export", |p| export(p).packets);
    let frames = FRAMES - PREFIX as u64;
    // What grows with the frames, past the analysis' own: the Parquet writer's buffers for each batch of
    // 16,384 rows handed over (a few hundred over the 42 columns: the columns' builders start again with
    // room for a batch) and for each row group of 65,536 rows (a few thousand: pages, statistics,
    // metadata), about 0.08 per frame together. One allocation per frame in any column would be 1.
    assert!(
        per_frame < 0.1,
        "export allocated {more} times more for {frames} more frames ({per_frame:.5} per frame, bound \
         0.1): something allocates per frame (ALLOC_TRACE=N prints every Nth allocation's backtrace)"
    );
}

/// RoCE frames 10.0.0.1 → 10.0.0.2 (RC SEND ONLY, PSN `n`, a payload of `n`'s size and bytes), a
/// millisecond apart.
fn roce_frames(count: u64) -> Vec<(u64, Vec<u8>)> {
    (0..count)
        .map(|n| {
            let mut f = RoceFrame::new(parsers::opcode::rc::SEND_ONLY);
            f.bth.psn = n as u32;
            f.payload = vec![n as u8; 64 + (n as usize % 5) * 100];
            (1_000_000_000 + n * 1_000_000, f.build())
        })
        .collect()
}

/// How many frames of `frames` pass `m`.
fn run(m: &mut Matcher, frames: &[(u64, Vec<u8>)]) -> u64 {
    let mut passed = 0;
    for (i, (ts, data)) in frames.iter().enumerate() {
        let packet = Packet {
            ts_nanos: *ts,
            linktype: 1,
            interface: 0,
            data,
            orig_len: data.len() as u32,
        };
        let frame = parsers::parse_frame(1, data, data.len(), &Default::default());
        let s = Subject {
            number: i as u64 + 1,
            packet: &packet,
            frame: &frame,
            interface: None,
            analysis: None,
        };
        passed += u64::from(m.matches(&s));
    }
    passed
}

/// The new kinds of filter (slices, arithmetic, functions, `matches`, protocol `contains`, sets, times)
/// compiled once and run on many frames: once the matcher's buffers have grown (the first pass), a pass
/// over the frames allocates nothing. The frames are parsed outside the measured pass.
#[test]
fn display_filters_allocate_nothing_per_frame() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let frames = roce_frames(2_000);
    let filters = [
        "eth.src[0:3] == 02:00:00 and frame[12:2] == 08:00 and ip[-4:] == 0a:00:00:02",
        "udp.dstport == udp.srcport + 1 or udp.srcport * 2 > 100 or -udp.srcport == -49152",
        "len(eth) == 14 && count(ip.addr) == 2 && len(frame) > 100",
        "string(ip.src) contains \"10.0\" or upper(rocescope.opcode_name) == \"RC_SEND_ONLY\"",
        "frame matches \"(?i)ab[0-9]\" or eth contains ff:ff:ff or udp contains 12:b7",
        "infiniband.bth.psn in {1..100, 200} and frame.time_delta < 0.5",
        "max(udp.srcport, udp.dstport) == 49152 and abs(-udp.srcport) > 3 and min(udp.port) == 4791",
        "frame[-4:] == 00:00:00:00 or frame[0:2,4] == 02:00:00 or frame[5-10] contains 00",
        "frame.time > \"Jan 1, 2000 00:00:00\" and frame.time_relative >= 0 and frame.time_epoch > 1",
        "ip.flags & 0x02 or eth[0] & 1 or ip.dsfield == 0",
        "string(infiniband.bth.psn) matches \"^1\" or lower(rocescope.opcode_name) contains \"send\"",
    ];
    for text in filters {
        let filter = Filter::new(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let mut m = Matcher::new(Arc::new(filter));
        let first = run(&mut m, &frames);
        let (allocs, again) = allocations(|| run(&mut m, &frames));
        let _ = (first, again);
        // Parsing the frames is outside the filter: measure it alone and take it off.
        let mut none = Matcher::new(Arc::new(Filter::new("frame").unwrap()));
        run(&mut none, &frames);
        let (parsing, _) = allocations(|| run(&mut none, &frames));
        assert_eq!(
            allocs.saturating_sub(parsing),
            0,
            "{text}: {allocs} allocations over {} frames ({parsing} for parsing them)",
            frames.len()
        );
    }
}

/// Pieces of filters, valid and not, from which random filters are made.
const TOKENS: &[&str] = &[
    "eth.src",
    "ip.addr",
    "udp.port",
    "frame",
    "eth",
    "ip",
    "udp",
    "infiniband.bth.psn",
    "frame.time",
    "frame.time_delta",
    "rocescope.opcode_name",
    "ip.flags",
    "len(",
    "count(",
    "string(",
    "upper(",
    "max(",
    "min(",
    "abs(",
    "tcp(",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "[0:3]",
    "[-1]",
    "[1-2]",
    "[:4]",
    "[4:]",
    ",",
    "==",
    "!=",
    "===",
    "~=",
    ">",
    "<=",
    "in",
    "not",
    "and",
    "or",
    "&&",
    "||",
    "!",
    "contains",
    "matches",
    "&",
    "+",
    "-",
    "*",
    "/",
    "%",
    "any",
    "all",
    "1",
    "0x10",
    "-1",
    "00:aa:00",
    ":fc",
    "fc:",
    "10.0.0.1/8",
    "::1",
    "'A'",
    "'\\x41'",
    "'\\Z'",
    "\"a\"",
    "\"\\x82\"",
    "\"[\"",
    "\"Jan 1, 2020 00:00:00\"",
    "..",
    "0.5",
    "True",
    ".udp.dstport",
    "99999999999",
    "#2",
];

/// Random token strings and random characters into the filter compiler: each is a filter or a one-line
/// error, never a panic; a filter that compiles runs on frames without one. (A runner inside the test, so
/// that its generating and shrinking hold the measurements' lock too.)
#[test]
fn random_filters_never_panic() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let frames = roce_frames(3);
    let strategy = (prop::collection::vec(0..TOKENS.len(), 0..20), "\\PC{0,12}");
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(512));
    let outcome = runner.run(&strategy, |(picks, junk)| {
        let mut text: String = picks
            .iter()
            .map(|&i| TOKENS[i])
            .collect::<Vec<_>>()
            .join(" ");
        text.push_str(&junk);
        match Filter::new(&text) {
            Ok(f) => {
                run(&mut Matcher::new(Arc::new(f)), &frames);
            }
            Err(e) => prop_assert_eq!(e.to_string().lines().count(), 1, "{}", e),
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

/// Nesting deeper than 64 (parentheses, braces, brackets, function calls) is one line, not a stack
/// overflow.
#[test]
fn deep_nesting_is_refused_in_one_line() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for open in ["(", "{", "len(", "!(", "["] {
        let text = format!("{}ip{}", open.repeat(10_000), ")".repeat(10_000));
        let e = Filter::new(&text).unwrap_err().to_string();
        assert!(e.contains("nested deeper than 64"), "{open}: {e}");
        assert_eq!(e.lines().count(), 1);
    }
    let minus = format!("udp.port == {}1", "-".repeat(10_000));
    assert!(Filter::new(&minus).is_ok());
}

//! tshark's conventions against tshark 4.0 itself: the frames `dissect -Y FILTER` shows are those
//! `tshark -Y FILTER` shows, for filters over fields both decode, on every capture of testdata and the
//! public corpus; `-T fields` writes what tshark writes, byte for byte, for the fields both decode.
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/tshark_fields.rs"]
mod tshark_fields;
use tshark_fields::FIELDS;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn captures(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in dirs {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") && tshark_reads(&p) {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// tshark 4.0 reads no pcap of LINKTYPE_INFINIBAND (247: "network type 247 unknown or unsupported"); the
/// native InfiniBand captures are held to tshark in ERF (tests/tshark_infiniband.rs).
fn tshark_reads(p: &Path) -> bool {
    let head = std::fs::read(p)
        .map(|b| b.get(20..24).map(<[u8]>::to_vec))
        .ok()
        .flatten();
    let le = head
        .as_deref()
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    p.extension().is_some_and(|x| x == "pcapng") || le != Some(247)
}

fn testdata() -> Vec<PathBuf> {
    let dirs = [
        "edge",
        "public",
        "lab",
        "connections",
        "analysis",
        "diagnosis",
    ];
    captures(&dirs.map(|d| root().join("testdata").join(d)))
}

fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e} (the README's test command installs tshark)"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn rocescope(args: &[&str]) -> String {
    run(env!("CARGO_BIN_EXE_rocescope"), args)
}

/// Frame numbers, one a line, as `-T fields -e frame.number` writes them.
fn numbers(text: &str) -> Vec<u64> {
    text.lines().map(|l| l.trim().parse().unwrap()).collect()
}

/// Every capture of testdata and the corpus in one pcapng file (mergecap -a keeps each frame as it is,
/// one interface per file), so that each filter is one run of each tool.
fn merged(dir: &Path) -> PathBuf {
    let mut files = testdata();
    files.extend(captures(&[root().join("../shared/corpus/public")]));
    let out = dir.join("all.pcapng");
    let mut args = vec![
        "-a".to_string(),
        "-w".to_string(),
        out.display().to_string(),
    ];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run("mergecap", &args);
    out
}

/// Filters over fields both decode: simple comparisons, sets and ranges, the quantifiers of `!=` and `~=`,
/// networks, presence, nested boolean expressions.
const FILTERS: &[&str] = &[
    "infiniband",
    "udp",
    "ipv6",
    "eth.type == 0x0800",
    "infiniband.bth.opcode == 0x11",
    "infiniband.bth.opcode in {0x0a, 0x0b, 0x06..0x09}",
    "infiniband.bth.opcode eq 4 or infiniband.bth.opcode eq 0x64",
    "infiniband.bth.destqp == 0x000001",
    "infiniband.bth.psn > 8000000",
    "infiniband.bth.psn >= 1 and infiniband.bth.psn <= 100",
    "infiniband.bth.a == 1",
    "infiniband.bth.se == True",
    "infiniband.bth.padcnt != 0",
    "infiniband.bth.p_key != 65535",
    "infiniband.reth",
    "infiniband.reth.dmalen >= 4096",
    "infiniband.reth.r_key & 0xff00",
    "infiniband.aeth.syndrome & 0x60",
    "infiniband.aeth.msn < 10",
    "infiniband.deth.q_key == 0x80010000",
    "infiniband.immdt",
    "infiniband.mad.mgmtclass == 0x07",
    "infiniband.mad.attributeid in {0x0010, 0x0014}",
    "infiniband.cm.req.startpsn > 0x100000",
    "infiniband.grh",
    "ip.src == 10.0.0.1",
    "ip.addr == 10.1.16.61",
    "ip.addr != 10.1.16.61",
    "ip.addr ~= 10.1.16.61",
    "ip.src in {10.0.0.0/8, 192.168.0.0/16}",
    "ip.dst == 192.168.178.0/24 && !(udp.dstport == 4791)",
    "ip.dsfield.ecn == 3",
    "ip.dsfield.dscp >= 24 or ipv6.tclass.dscp >= 24",
    "ip.ttl < 64",
    "ip.flags.df == 0 and ip",
    "udp.dstport == 4791 and not infiniband.bth.opcode in {0x11, 0x81}",
    "udp.port in {4791, 53, 67..68}",
    "udp.srcport ~= 4791",
    "udp.length > 1000",
    "eth.addr contains 50:56",
    "eth.dst == ff:ff:ff:ff:ff:ff",
    "vlan",
    "macc.opcode == 0x0101",
    "sll.pkttype == 4",
    "frame.len >= 1024 && frame.len < 1500",
    "frame.len > 100 and (infiniband.bth.opcode == 0x0c or infiniband.bth.opcode == 0x10) and not ip.dst == 10.1.16.61",
    "(infiniband.aeth && infiniband.aeth.syndrome != 31) || (infiniband.reth && !(infiniband.reth.dmalen < 64))",
    "not (infiniband or ip)",
    "!!infiniband.bth && ipv6.src == fe80::/10",
];

/// Frames where tshark 4.0 is known to decode otherwise (tests/tshark.rs names each), found with tshark:
/// opcodes it does not parse (XRC, RD, CNP, FLUSH, ATOMIC_WRITE), RoCE it hands to another dissector
/// (a well-known source port), the RPC-over-RDMA heuristic, and damaged or snapped frames (with both tools:
/// each stops at its own point).
fn excepted(all: &str) -> Vec<u64> {
    let mut frames = tshark_excepted(all);
    frames.extend(numbers(&rocescope(&[
        "dissect",
        "-r",
        all,
        "-Y",
        "rocescope.malformed",
        "-T",
        "fields",
        "-e",
        "frame.number",
    ])));
    frames.sort_unstable();
    frames.dedup();
    frames
}

/// The frames of `file` tshark is known to misread, by tshark.
fn tshark_excepted(file: &str) -> Vec<u64> {
    let tshark = "infiniband.bth.opcode in {0x40..0x55, 0xa0..0xb7, 0x81, 0x1c, 0x1d} \
                  || (udp.dstport == 4791 && !infiniband) || rpcordma || _ws.malformed \
                  || frame.cap_len < frame.len";
    numbers(&run(
        "tshark",
        &[
            "-r",
            file,
            "-Y",
            tshark,
            "-T",
            "fields",
            "-e",
            "frame.number",
        ],
    ))
}

#[test]
fn display_filters_show_what_tshark_shows() {
    let dir = std::env::temp_dir().join(format!("rocescope-filter-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let all = merged(&dir);
    let all = all.to_str().unwrap();
    let total = numbers(&rocescope(&[
        "dissect",
        "-r",
        all,
        "-Y",
        "frame",
        "-T",
        "fields",
        "-e",
        "frame.number",
    ]));
    let excepted = excepted(all);
    let mut mismatches = Vec::new();
    let mut shown = 0;
    for filter in FILTERS {
        let fields = ["-Y", filter, "-T", "fields", "-e", "frame.number"];
        let theirs = numbers(&run("tshark", &[&["-r", all][..], &fields].concat()));
        let ours = numbers(&rocescope(&[&["dissect", "-r", all][..], &fields].concat()));
        let keep = |v: Vec<u64>| -> Vec<u64> {
            v.into_iter()
                .filter(|n| excepted.binary_search(n).is_err())
                .collect()
        };
        let (theirs, ours) = (keep(theirs), keep(ours));
        shown += theirs.len();
        if theirs != ours {
            let only_theirs: Vec<_> = theirs
                .iter()
                .filter(|n| !ours.contains(n))
                .take(5)
                .collect();
            let only_ours: Vec<_> = ours
                .iter()
                .filter(|n| !theirs.contains(n))
                .take(5)
                .collect();
            mismatches.push(format!(
                "{filter}: tshark {} frames, rocescope {}; only tshark: {only_theirs:?}, only rocescope: {only_ours:?}",
                theirs.len(),
                ours.len()
            ));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    eprintln!(
        "{} filters over {} frames ({} excepted): {shown} frames shown by tshark in all",
        FILTERS.len(),
        total.len(),
        excepted.len()
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    assert!(FILTERS.len() >= 30);
    // SOURCES.md: the corpus' 8335 frames, and testdata's.
    assert!(total.len() > 8335 + 5000, "{}", total.len());
    assert!(shown > 10_000, "{shown}");
}

/// The fields compared: every field tests/tshark.rs compares but those tshark 4.0 writes twice or misreads
/// and its markers ([`NOT_COLUMNS`]), and a few more ([`MORE_COLUMNS`]).
fn compared_fields() -> Vec<&'static str> {
    FIELDS
        .iter()
        .filter(|f| !NOT_COLUMNS.contains(f))
        .chain(MORE_COLUMNS)
        .copied()
        .collect()
}

/// Written twice by tshark 4.0 (`infiniband.immdt`, `infiniband.ieth`, `infiniband.cm.req.alt_reserved1`),
/// misread by it (the REQ paths' flow label, packet rate and reserved bits: tests/tshark.rs), or tshark's
/// markers of its own verdicts.
const NOT_COLUMNS: &[&str] = &[
    "infiniband.immdt",
    "infiniband.ieth",
    "infiniband.cm.req.prim_flowlabel",
    "infiniband.cm.req.prim_reserved0",
    "infiniband.cm.req.prim_pktrate",
    "infiniband.cm.req.alt_flowlabel",
    "infiniband.cm.req.alt_reserved0",
    "infiniband.cm.req.alt_pktrate",
    "infiniband.cm.req.alt_reserved1",
    "_ws.malformed",
    "rpcordma.xid",
];

/// Columns tests/tshark.rs does not compare: frame numbering, checksums, the aliases, the AETH syndrome's
/// parts.
const MORE_COLUMNS: &[&str] = &[
    "frame.number",
    "frame.time_relative",
    "frame.interface_id",
    "ip.hdr_len",
    "ip.checksum",
    "udp.checksum",
    "ip.addr",
    "udp.port",
    "eth.addr",
    "infiniband.aeth.syndrome.credit_count",
    "infiniband.aeth.syndrome.timer",
    "infiniband.aeth.syndrome.error_code",
];

/// Captures whose damaged frames each tool decodes to its own point (tests/tshark.rs compares what both
/// decode of them).
const DAMAGED: &[&str] = &["edge/damaged.pcap", "analysis/damaged.pcap"];

#[test]
fn fields_are_written_as_tshark_writes_them() {
    let options: [&[&str]; 3] = [
        &["-E", "header=y"],
        &["-E", "header=y", "-E", "separator=,", "-E", "quote=d"],
        &["-E", "separator=/s", "-E", "occurrence=f", "-E", "quote=s"],
    ];
    let mut columns: Vec<&str> = vec!["-T", "fields"];
    let names = compared_fields();
    for c in &names {
        columns.extend(["-e", c]);
    }
    let (mut files, mut lines) = (0, 0);
    for (i, file) in testdata().iter().enumerate() {
        let name = file.strip_prefix(root().join("testdata")).unwrap();
        if DAMAGED.iter().any(|d| Path::new(d) == name) {
            continue;
        }
        let f = file.to_str().unwrap();
        // The frames tshark misreads (tests/tshark.rs) are left out by a filter both tools read.
        let skip: Vec<String> = tshark_excepted(f).iter().map(u64::to_string).collect();
        let keep = match skip.is_empty() {
            true => "frame".to_string(),
            false => format!("not frame.number in {{{}}}", skip.join(", ")),
        };
        let args = [&["-Y", &keep][..], &columns, options[i % options.len()]].concat();
        let theirs = run("tshark", &[&["-r", f][..], &args].concat());
        let ours = rocescope(&[&["dissect", "-r", f][..], &args].concat());
        if theirs != ours {
            let (n, (t, o)) = theirs
                .lines()
                .zip(ours.lines())
                .enumerate()
                .find(|(_, (t, o))| t != o)
                .unwrap_or((0, ("", "")));
            let diff: Vec<String> = t
                .split(['\t', ',', ' '])
                .zip(o.split(['\t', ',', ' ']))
                .filter(|(a, b)| a != b)
                .take(4)
                .map(|(a, b)| format!("tshark {a:?}, rocescope {b:?}"))
                .collect();
            panic!(
                "{}: line {} differs ({} and {} lines): {}",
                name.display(),
                n + 1,
                theirs.lines().count(),
                ours.lines().count(),
                diff.join("; ")
            );
        }
        files += 1;
        lines += ours.lines().count();
    }
    eprintln!(
        "{files} captures, {lines} lines of {} fields byte-identical",
        names.len()
    );
    assert!(files > 70 && lines > 5000, "{files} {lines}");
}

/// TCP's flags as tshark's Info lists them, from its `tcp.flags`.
fn tcp_flags(hex: &str) -> String {
    let bits = u16::from_str_radix(hex.trim_start_matches("0x"), 16).unwrap();
    let names = ["FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"];
    let set: Vec<&str> = (0..8)
        .filter(|i| bits & (1 << i) != 0)
        .map(|i| names[i])
        .collect();
    if set.is_empty() {
        "<None>".to_string()
    } else {
        set.join(", ")
    }
}

/// `dissect --all`'s line for the frames around RoCE against tshark: ARP, ICMPv6 (neighbour discovery,
/// MLD), IGMPv2 as tshark's Info column has them, IGMPv3 and ICMP echo as its start (tshark adds the
/// v3 records, the request's frame); TCP ports, flags and payload length, UDP ports and payload length,
/// and the LLC header of 802.3 frames from tshark's fields.
#[test]
fn other_frames_read_as_tshark_reads_them() {
    let dir = std::env::temp_dir().join(format!("rocescope-info-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let all = merged(&dir);
    let all = all.to_str().unwrap();
    let fields = [
        "frame.number",
        "_ws.col.Protocol",
        "_ws.col.Info",
        "tcp.srcport",
        "tcp.dstport",
        "tcp.flags",
        "tcp.len",
        "udp.srcport",
        "udp.dstport",
        "udp.length",
        "llc.dsap",
        "llc.ssap",
        "eth.len",
    ];
    let mut args = vec![
        "-r",
        all,
        "-Y",
        "not infiniband and not udp.dstport == 4791 and not macc",
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-E",
        "occurrence=f",
    ];
    for f in fields {
        args.extend(["-e", f]);
    }
    let theirs = run("tshark", &args);
    let ours = rocescope(&["dissect", "--all", "-r", all]);
    std::fs::remove_dir_all(&dir).ok();
    let lines: std::collections::HashMap<u64, &str> = ours
        .lines()
        .map(|l| (l.split_whitespace().next().unwrap().parse().unwrap(), l))
        .collect();
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    let mut mismatches = Vec::new();
    for t in theirs.lines() {
        let v: Vec<&str> = t.split('|').collect();
        let [
            n,
            proto,
            info,
            tsport,
            tdport,
            tflags,
            tlen,
            usport,
            udport,
            ulen,
            dsap,
            ssap,
            len,
        ] = v[..]
        else {
            panic!("{t}");
        };
        let line = lines[&n.parse::<u64>().unwrap()];
        // After the number, the time, the source, the arrow and the destination.
        let rest = line.split_once(" → ").unwrap().1.split_once(' ').unwrap().1;
        let (kind, expected, whole) = match proto {
            "ARP" | "ICMPv6" => (proto, format!("{proto} {info}"), true),
            "IGMPv2" => ("IGMPv2", format!("IGMP {info}"), true),
            "IGMPv3" => ("IGMPv3", format!("IGMP {info}"), false),
            "ICMP" => ("ICMP", format!("ICMP {info}"), false),
            _ if !tsport.is_empty() => (
                "TCP",
                format!("TCP {tsport} → {tdport} [{}] Len={tlen}", tcp_flags(tflags)),
                true,
            ),
            _ if !usport.is_empty() => (
                "UDP",
                format!(
                    "UDP {usport} → {udport} Len={}",
                    ulen.parse::<u32>().unwrap() - 8
                ),
                true,
            ),
            _ if !dsap.is_empty() => (
                "LLC",
                format!("LLC DSAP {dsap} SSAP {ssap} (802.3 length {len})"),
                false,
            ),
            _ => ("other", String::new(), false),
        };
        *counts.entry(kind).or_default() += 1;
        let ok = if whole {
            rest == expected
        } else {
            expected.starts_with(rest) || rest.starts_with(&expected)
        };
        if !ok {
            mismatches.push(format!(
                "frame {n} ({proto}): tshark {expected:?}, rocescope {rest:?}"
            ));
        }
    }
    eprintln!("frames around RoCE compared: {counts:?}");
    assert!(
        mismatches.is_empty(),
        "{}\n{}",
        mismatches.len(),
        mismatches[..mismatches.len().min(10)].join("\n")
    );
    for kind in [
        "ARP", "ICMPv6", "IGMPv2", "IGMPv3", "ICMP", "TCP", "UDP", "LLC",
    ] {
        assert!(
            counts.get(kind).is_some_and(|n| *n > 0),
            "no {kind} frame compared"
        );
    }
}

/// How a set may be written, against tshark 4.0 itself (`tshark -v` of the test machine: 4.0.17): commas
/// between members, ranges `a..b` with or without spaces around `..`, ranges and single values mixed. tshark
/// 4.0 refuses whitespace between members (wireshark-filter(4) 4.0: "set elements must be separated using a
/// comma"; 3.x took it), an empty set, an empty member and a range of a range: rocescope refuses each too
/// (exit 2, one line), and shows the same frames for each that both take.
#[test]
fn sets_are_written_as_tshark_writes_them() {
    let file = root().join("testdata/public/rdma_write_bw.pcap");
    let file = file.to_str().unwrap();
    let accepted = [
        "infiniband.bth.opcode in {6,7,8}",
        "infiniband.bth.opcode in {6, 7, 8}",
        "infiniband.bth.opcode in { 6 }",
        "infiniband.bth.opcode in {6..8}",
        "infiniband.bth.opcode in {6 .. 8}",
        "infiniband.bth.opcode in {6 ..8}",
        "infiniband.bth.opcode in {6.. 8}",
        "infiniband.bth.opcode in {6..8, 17}",
        "infiniband.bth.opcode in {0x11,6..7}",
        "infiniband.bth.opcode in {8..6}",
        "infiniband.bth.opcode not in {6..8, 17}",
        "ip.src in {10.1.16.62, 10.1.16.0/24}",
    ];
    let refused = [
        "infiniband.bth.opcode in {6 7 8}",
        "infiniband.bth.opcode in {6\t7}",
        "infiniband.bth.opcode in {6, 7 8}",
        "infiniband.bth.opcode in {6..8 17}",
        "infiniband.bth.opcode not in {6 7 8}",
        "ip.src in {10.1.16.62 10.1.16.61}",
        "ip.src in {\"10.1.16.62\" \"10.1.16.61\"}",
        "infiniband.bth.opcode in {6,,7}",
        "infiniband.bth.opcode in {6,}",
        "infiniband.bth.opcode in {,6}",
        "infiniband.bth.opcode in {}",
        "infiniband.bth.opcode in {6..8..9}",
    ];
    let frames = |program: &str, pre: &[&str], filter: &str| {
        let out = Command::new(program)
            .args(pre)
            .args([
                "-r",
                file,
                "-Y",
                filter,
                "-T",
                "fields",
                "-e",
                "frame.number",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (
            out.status.code(),
            text,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for f in accepted {
        let (tc, theirs, terr) = frames("tshark", &[], f);
        let (rc, ours, rerr) = frames(env!("CARGO_BIN_EXE_rocescope"), &["dissect"], f);
        assert_eq!(tc, Some(0), "tshark refuses {f}: {terr}");
        assert_eq!(rc, Some(0), "rocescope refuses {f}: {rerr}");
        assert_eq!(numbers(&ours), numbers(&theirs), "{f}");
    }
    for f in refused {
        let (tc, _, terr) = frames("tshark", &[], f);
        let (rc, ours, rerr) = frames(env!("CARGO_BIN_EXE_rocescope"), &["dissect"], f);
        assert_ne!(tc, Some(0), "tshark takes {f}");
        assert!(
            terr.contains("was unexpected in this context"),
            "{f}: {terr}"
        );
        assert_eq!((rc, ours.as_str()), (Some(2), ""), "rocescope takes {f}");
        assert!(rerr.starts_with("rocescope: -Y: column "), "{f}: {rerr}");
        assert_eq!(rerr.lines().count(), 1, "{f}: {rerr}");
    }
    // the frames: 6..8 is WRITE FIRST, MIDDLE, LAST (the capture's 15), 17 its ACKs (5)
    let (_, ours, _) = frames(
        env!("CARGO_BIN_EXE_rocescope"),
        &["dissect"],
        "infiniband.bth.opcode in {6..8, 17}",
    );
    assert_eq!(numbers(&ours), (22..=41).collect::<Vec<u64>>());
}

/// How wide each numeric field is, as `tshark -G fields` types it: filter::widths holds every field of
/// rocescope's that tshark types FT_UINT8, 16, 24 or 32, at that width, and nothing else.
#[test]
fn field_widths_are_tshark_s() {
    let out = run("tshark", &["-G", "fields"]);
    let bits = |t: &str| match t {
        "FT_UINT8" => Some(8),
        "FT_UINT16" => Some(16),
        "FT_UINT24" => Some(24),
        "FT_UINT32" => Some(32),
        _ => None,
    };
    let tshark: std::collections::BTreeMap<&str, u8> = out
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.first() == Some(&"F") && f.len() > 3).then(|| (f[2], bits(f[3])))
        })
        .filter_map(|(n, b)| Some((n, b?)))
        .collect();
    let ours: Vec<(&str, u8)> = rocescope::filter::widths::WIDTHS.to_vec();
    let mut names: Vec<&str> = parsers::fields::FIELDS
        .iter()
        .filter(|(_, k)| *k == parsers::fields::Kind::Uint)
        .map(|(n, _)| *n)
        .chain([
            "frame.cap_len",
            "frame.interface_id",
            "frame.len",
            "frame.number",
        ])
        .chain([
            "udp.port",
            "vlan.dei",
            "vlan.etype",
            "vlan.id",
            "vlan.priority",
        ])
        .collect();
    names.sort_unstable();
    names.dedup();
    let expected: Vec<(&str, u8)> = names
        .iter()
        .filter_map(|n| Some((*n, *tshark.get(n)?)))
        .collect();
    assert_eq!(ours, expected);
    assert!(ours.len() > 150, "{}", ours.len());
}

/// Values wider than their field, and strings for a MAC field's `contains`, which tshark refuses: refused
/// (exit 2, one line); the widest values both take show the same frames.
#[test]
fn values_are_refused_where_tshark_refuses_them() {
    let file = root().join("testdata/public/rdma_write_bw.pcap");
    let file = file.to_str().unwrap();
    let outcome = |program: &str, pre: &[&str], filter: &str| {
        let out = Command::new(program)
            .args(pre)
            .args([
                "-r",
                file,
                "-Y",
                filter,
                "-T",
                "fields",
                "-e",
                "frame.number",
            ])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let refused = [
        "infiniband.bth.opcode == 256",
        "infiniband.bth.opcode in {6, 300}",
        "infiniband.bth.psn == 0x1000000",
        "infiniband.bth.destqp in {1..0x1000000}",
        "udp.port == 65536",
        "udp.srcport & 0x10000",
        "ip.ttl > 300",
        "vlan.id == 70000",
        "frame.len == 4294967296",
        "infiniband.bth.padcnt == 256",
        "eth.addr contains \"\"",
        "eth.src contains \"a\"",
    ];
    for f in refused {
        let (tc, _, terr) = outcome("tshark", &[], f);
        let (rc, out, err) = outcome(env!("CARGO_BIN_EXE_rocescope"), &["dissect"], f);
        assert_eq!(tc, Some(2), "tshark takes {f}: {terr}");
        assert_eq!((rc, out.as_str()), (Some(2), ""), "rocescope takes {f}");
        assert!(err.starts_with("rocescope: -Y: column "), "{f}: {err}");
        assert_eq!(err.lines().count(), 1, "{f}: {err}");
    }
    for f in [
        "infiniband.bth.opcode <= 255",
        "infiniband.bth.psn < 0xffffff",
        "udp.port in {4791, 65535}",
        "frame.len < 4294967295",
        "infiniband.bth.padcnt != 255",
        "eth.addr contains 00",
    ] {
        let (tc, theirs, terr) = outcome("tshark", &[], f);
        let (rc, ours, err) = outcome(env!("CARGO_BIN_EXE_rocescope"), &["dissect"], f);
        assert_eq!((tc, rc), (Some(0), Some(0)), "{f}: {terr} {err}");
        assert_eq!(numbers(&ours), numbers(&theirs), "{f}");
    }
}

/// `-E separator=` and `-E aggregator=` take one character, as tshark does: `ab` is `a`, `/t` a tab (for the
/// separator; the aggregator's `/t` is a backslash), `/s` a space, `/` before anything else a backslash;
/// the bytes written equal tshark's.
#[test]
fn separators_are_one_character_as_tshark_s() {
    let file = root().join("testdata/public/rdma_write_bw.pcap");
    let file = file.to_str().unwrap();
    for (option, value) in [
        ("separator", "ab"),
        ("separator", "/t/s"),
        ("separator", "/tx"),
        ("separator", "/sx"),
        ("separator", "/"),
        ("separator", "/x"),
        ("separator", ",,"),
        ("aggregator", "ab"),
        ("aggregator", "/t"),
        ("aggregator", "/s"),
        ("aggregator", "/x"),
        ("aggregator", ";;"),
    ] {
        let e = format!("{option}={value}");
        let args = [
            "-r",
            file,
            "-c",
            "3",
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "ip.addr",
            "-e",
            "frame.len",
            "-E",
            &e,
        ];
        let theirs = run("tshark", &args);
        let ours = rocescope(&[&["dissect", "--all"][..], &args].concat());
        assert_eq!(ours, theirs, "-E {e}");
    }
    let ours = rocescope(&[
        "dissect",
        "--all",
        "-r",
        file,
        "-c",
        "1",
        "-T",
        "fields",
        "-e",
        "frame.number",
        "-e",
        "frame.len",
        "-E",
        "separator=ab",
    ]);
    assert_eq!(ours, "1a74\n", "one character, not two");
}

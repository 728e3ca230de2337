//! Differential test against tshark, the reference dissector: on every capture in testdata/ and in
//! ../shared/corpus/public, every field that both tools decode must agree, frame by frame.
//! Where tshark 4.0 is known to be wrong, the exception is explicit below and counted.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

#[path = "common/tshark_fields.rs"]
mod tshark_fields;
use tshark_fields::FIELDS;

/// tshark fields that are markers, not values to compare.
fn is_marker(f: &str) -> bool {
    f.starts_with("_ws.") || f.starts_with("rpcordma.")
}

/// Fields of the transport headers: what tshark gets wrong in the exceptions below.
fn is_transport_field(f: &str) -> bool {
    f.starts_with("infiniband.") && !f.starts_with("infiniband.grh.")
}

/// MAD and CM fields: counted apart, so that a run that compares none of them fails.
fn is_mad_field(f: &str) -> bool {
    f.starts_with("infiniband.mad.") || f.starts_with("infiniband.cm.")
}

/// CM byte fields, which tshark writes as plain hex digits: private data and reject information.
fn is_cm_bytes(f: &str) -> bool {
    f.starts_with("infiniband.cm.") && (f.ends_with(".private") || f.ends_with(".ari"))
}

/// What tshark shows for a field, from rocescope's value of another.
type Reading = fn(u128) -> u128;

/// The REQ path fields tshark 4.0 misreads: it takes the flow label from the word's first 3 bytes with
/// a 4-byte mask (so shows its top 12 bits) and the reserved bits and packet rate from the word's first
/// byte. Compared with what that reading gives from our flow label, not skipped.
fn tshark_path_word(field: &str) -> Option<(&'static str, Reading)> {
    const PRIM: &str = "infiniband.cm.req.prim_flowlabel";
    const ALT: &str = "infiniband.cm.req.alt_flowlabel";
    let label: Reading = |flow_label| flow_label >> 8;
    let reserved: Reading = |flow_label| (flow_label >> 18) & 0x3;
    let rate: Reading = |flow_label| (flow_label >> 12) & 0x3F;
    Some(match field {
        "infiniband.cm.req.prim_flowlabel" => (PRIM, label),
        "infiniband.cm.req.prim_reserved0" => (PRIM, reserved),
        "infiniband.cm.req.prim_pktrate" => (PRIM, rate),
        "infiniband.cm.req.alt_flowlabel" => (ALT, label),
        "infiniband.cm.req.alt_reserved0" => (ALT, reserved),
        "infiniband.cm.req.alt_pktrate" => (ALT, rate),
        _ => return None,
    })
}

/// A field value in one comparable form.
#[derive(Debug, Clone, PartialEq, Eq)]
enum V {
    Int(u128),
    Text(String),
}

fn from_tshark(field: &str, raw: &str) -> V {
    let raw = raw.trim();
    if field == "frame.time_epoch" {
        return V::Text(raw.to_string());
    }
    if matches!(raw, "True" | "False") {
        return V::Int(u128::from(raw == "True"));
    }
    if is_cm_bytes(field) {
        return V::Text(raw.to_ascii_lowercase());
    }
    // tshark shows the alternate path's GIDs as bytes (rocescope as addresses, like the primary path's).
    if matches!(
        field,
        "infiniband.cm.req.alt_localgid" | "infiniband.cm.req.alt_remotegid"
    ) {
        let gid = u128::from_str_radix(raw, 16).unwrap_or(u128::MAX);
        return V::Text(std::net::Ipv6Addr::from(gid).to_string());
    }
    // Byte fields (ImmDt, IETH, the service ID's prefix) come as plain hex digits.
    if matches!(
        field,
        "infiniband.immdt" | "infiniband.ieth" | "infiniband.cm.req.serviceid.prefix"
    ) {
        return V::Int(
            u128::from_str_radix(raw.replace(':', "").as_str(), 16).unwrap_or(u128::MAX),
        );
    }
    if let Some(Ok(n)) = raw
        .strip_prefix("0x")
        .map(|hex| u128::from_str_radix(hex, 16))
    {
        return V::Int(n);
    }
    match raw.parse::<u128>() {
        Ok(n) => V::Int(n),
        Err(_) => V::Text(raw.to_ascii_lowercase()),
    }
}

fn from_ours(v: &Value) -> V {
    match v {
        Value::Bool(b) => V::Int(u128::from(*b)),
        Value::Number(n) => V::Int(n.as_u64().map(u128::from).unwrap_or(u128::MAX)),
        Value::String(s) => V::Text(s.to_ascii_lowercase()),
        other => V::Text(other.to_string()),
    }
}

fn tshark_frames(file: &Path) -> Vec<BTreeMap<&'static str, V>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r")
        .arg(file)
        .args(["-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd
        .output()
        .expect("tshark must be installed: the README's test command installs it");
    assert!(
        out.status.success(),
        "tshark failed on {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            FIELDS
                .iter()
                .zip(line.split('\t'))
                .filter(|(_, raw)| !raw.is_empty())
                .map(|(f, raw)| (*f, from_tshark(f, raw)))
                .collect()
        })
        .collect()
}

fn our_frames(file: &Path) -> Vec<BTreeMap<String, Value>> {
    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["dissect", "--all", "--json"])
        .arg(file)
        .output()
        .expect("run rocescope");
    assert!(
        out.status.success(),
        "rocescope failed on {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let mut obj: BTreeMap<String, Value> =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l}: {e}"));
            // A float would lose the nanoseconds: keep the number's text as written.
            let epoch = l
                .split("\"frame.time_epoch\":")
                .nth(1)
                .and_then(|r| r.split(',').next())
                .unwrap_or("");
            obj.insert("frame.time_epoch".into(), Value::String(epoch.to_string()));
            obj
        })
        .collect()
}

/// Why tshark's decoding of a frame is not compared (in part): each is a known tshark 4.0 error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Exception {
    /// RoCE frames whose UDP source port is a well-known port (69 in oferby/proxy's roce.pcap) are
    /// handed to that port's dissector (TFTP) instead of InfiniBand: no transport fields at all.
    WellKnownSourcePort,
    /// tshark does not parse XRCETH: it reads every header after the BTH of an XRC request 4 bytes early,
    /// and decodes no header after the BTH of XRC responses (AETH, AtomicAckETH) nor their ICRC.
    XrcEthNotParsed,
    /// CNP (0x81), FLUSH (0x1C) and ATOMIC_WRITE (0x1D) are "Unknown OpCode" to tshark: it decodes the
    /// BTH and then treats the rest as payload, so it has no fields after the BTH (ICRC included).
    OpcodeUnknownToTshark,
    /// A frame cut by the snap length: tshark stops decoding (no ICRC, sometimes less).
    Snapped,
    /// A frame we report as malformed: tshark decodes what it can, differently, and that is expected.
    Malformed,
    /// RD: tshark 4.0 reads the RDETH 8 bytes after the BTH instead of right after it (the bytes it shows
    /// as the E2E context are the end of the DETH), so every RD header after the BTH is misread.
    RdHeadersMisplaced,
    /// Small SEND payloads are taken by tshark's RPC-over-RDMA heuristic, which then reports the frame
    /// malformed and drops the ICRC field (rdma_cm.pcap: 16 frames; their ICRCs are valid).
    RpcRdmaHeuristic,
}

#[derive(Default)]
struct Tally {
    frames: usize,
    roce_frames: usize,
    fields_compared: usize,
    /// Frames tshark decodes a MAD in, and MAD/CM field values that agree.
    mad_frames: usize,
    mad_fields_compared: usize,
    exceptions: BTreeMap<Exception, usize>,
    mismatches: Vec<String>,
}

fn compare_file(file: &Path, tally: &mut Tally) {
    let theirs = tshark_frames(file);
    let ours = our_frames(file);
    let name = file
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .to_string();
    if theirs.len() != ours.len() {
        tally.mismatches.push(format!(
            "{name}: tshark has {} frames, rocescope {}",
            theirs.len(),
            ours.len()
        ));
        return;
    }
    for (t, o) in theirs.iter().zip(&ours) {
        tally.frames += 1;
        let number = o.get("frame.number").and_then(Value::as_u64).unwrap_or(0);
        let opcode = o.get("infiniband.bth.opcode").and_then(Value::as_u64);
        let roce = opcode.is_some();
        tally.roce_frames += usize::from(roce);
        let mut skip_transport = None;
        if roce && !t.contains_key("infiniband.bth.opcode") {
            let sport = o
                .get("udp.srcport")
                .and_then(Value::as_u64)
                .unwrap_or(u64::MAX);
            assert!(
                sport < 1024,
                "{name} frame {number}: tshark did not decode RoCE, and no known reason"
            );
            skip_transport = Some(Exception::WellKnownSourcePort);
        } else if let Some(op) = opcode {
            if (0xA0..=0xB7).contains(&op) {
                skip_transport = Some(Exception::XrcEthNotParsed);
            } else if [0x81, 0x1C, 0x1D].contains(&op) {
                skip_transport = Some(Exception::OpcodeUnknownToTshark);
            } else if (0x40..=0x55).contains(&op) {
                skip_transport = Some(Exception::RdHeadersMisplaced);
            } else if t.contains_key("rpcordma.xid") || t.contains_key("_ws.malformed") {
                skip_transport = Some(Exception::RpcRdmaHeuristic);
            }
        }
        let snapped = o.get("frame.cap_len") != o.get("frame.len");
        let malformed = o.contains_key("rocescope.malformed");
        if skip_transport.is_none() && (snapped || malformed) {
            skip_transport = Some(if malformed {
                Exception::Malformed
            } else {
                Exception::Snapped
            });
        }
        if let Some(e) = skip_transport {
            *tally.exceptions.entry(e).or_default() += 1;
        }
        tally.mad_frames += usize::from(t.contains_key("infiniband.mad.mgmtclass"));
        for field in FIELDS.iter().filter(|f| !is_marker(f)) {
            let skipped = match skip_transport {
                None => false,
                Some(Exception::WellKnownSourcePort) => is_transport_field(field),
                // tshark loses only what follows the payload it misreads.
                Some(Exception::RpcRdmaHeuristic) => *field == "infiniband.invariant.crc",
                // The BTH itself is decoded right in all other cases.
                Some(_) => is_transport_field(field) && !field.starts_with("infiniband.bth."),
            };
            if skipped {
                continue;
            }
            let mut mine = o.get(*field).map(from_ours);
            if let Some((flow, reading)) = tshark_path_word(field) {
                mine = match o.get(flow).map(from_ours) {
                    Some(V::Int(label)) => Some(V::Int(reading(label))),
                    other => other,
                };
            }
            let tshark = t.get(field).cloned();
            // Damaged frames: each tool stops (or goes on) at its own point; what both decoded must agree.
            let one_sided_ok = matches!(
                skip_transport,
                Some(Exception::Malformed | Exception::Snapped)
            );
            match (mine, tshark) {
                (Some(a), Some(b)) if a == b => {
                    tally.fields_compared += 1;
                    tally.mad_fields_compared += usize::from(is_mad_field(field));
                }
                (None, None) => {}
                (None, Some(_)) | (Some(_), None) if one_sided_ok => {}
                (a, b) => tally.mismatches.push(format!(
                    "{name} frame {number} {field}: rocescope {a:?}, tshark {b:?}"
                )),
            }
        }
    }
}

fn captures(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    files.sort();
    files
}

fn run(dirs: &[PathBuf]) -> Tally {
    let mut tally = Tally::default();
    for dir in dirs {
        for file in captures(dir) {
            compare_file(&file, &mut tally);
        }
    }
    eprintln!(
        "compared {} frames ({} RoCE, {} with a MAD), {} field values agree ({} of MADs and CM); \
         exceptions: {:?}",
        tally.frames,
        tally.roce_frames,
        tally.mad_frames,
        tally.fields_compared,
        tally.mad_fields_compared,
        tally.exceptions
    );
    tally
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn agrees_with_tshark_on_the_public_corpus() {
    let tally = run(&[root().join("../shared/corpus/public")]);
    assert!(
        tally.mismatches.is_empty(),
        "{} mismatches:\n{}",
        tally.mismatches.len(),
        tally.mismatches.join("\n")
    );
    // SOURCES.md: 34 files, 8335 frames, 2069 to UDP 4791.
    assert_eq!(tally.frames, 8335);
    assert_eq!(tally.roce_frames, 2069);
    // SOURCES.md: 37 frames of roce.pcap have UDP source port 69, 16 frames of rdma_cm.pcap are taken by
    // the RPC-over-RDMA heuristic; nothing else is excepted.
    assert_eq!(
        tally.exceptions.get(&Exception::WellKnownSourcePort),
        Some(&37)
    );
    assert_eq!(
        tally.exceptions.get(&Exception::RpcRdmaHeuristic),
        Some(&16)
    );
    assert_eq!(tally.exceptions.len(), 2, "{:?}", tally.exceptions);
    // The CM MADs of 15 captures, by tshark's Info column: 17 each of ConnectRequest, ConnectReply,
    // ReadyToUse, DisconnectRequest and DisconnectReply.
    assert_eq!(tally.mad_frames, 85);
    assert!(
        tally.mad_fields_compared > 85 * 10,
        "{}",
        tally.mad_fields_compared
    );
}

#[test]
fn agrees_with_tshark_on_testdata() {
    let tally = run(&[
        root().join("testdata/edge"),
        root().join("testdata/public"),
        root().join("testdata/lab"),
        root().join("testdata/connections"),
    ]);
    assert!(
        tally.mismatches.is_empty(),
        "{} mismatches:\n{}",
        tally.mismatches.len(),
        tally.mismatches.join("\n")
    );
    assert!(tally.roce_frames > 0);
    // rdma_cm.pcap (12 CM MADs), rping.pcap (5), the lab's conn_rping.pcap (5), conn_write_cm.pcap (12) and
    // conn_reject.pcap (4), and testdata/connections' 40: `tshark -Y infiniband.mad`.
    assert_eq!(tally.mad_frames, 78);
    assert!(
        tally.mad_fields_compared > 78 * 10,
        "{}",
        tally.mad_fields_compared
    );
}

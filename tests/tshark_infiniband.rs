//! Native InfiniBand and IP over InfiniBand against tshark 4.0: on the Wireshark wiki's infiniband.pcap
//! (43 frames in ERF records), tcpdump's ipoib.pcap (30 frames, LINKTYPE_IPOIB) and packets built with the
//! builder (LINKTYPE_INFINIBAND), every ERF, LRH, GRH, BTH, DETH, AETH, ICRC and VCRC field of every frame
//! as `rocescope dissect -T fields` writes it equals what `tshark -T fields` writes, byte for byte.
//!
//! One known difference is not compared: `frame.len` of an ERF record, which tshark gives without the
//! ERF header (it reads the header as a pseudo-header) and rocescope as the pcap record's length.
use std::path::{Path, PathBuf};
use std::process::Command;

use parsers::builder::RoceFrame;
use parsers::erf::ErfHeader;
use parsers::lrh::Lrh;
use parsers::opcode;
use parsers::savefile::{self, Resolution};

const IB_FIELDS: &[&str] = &[
    "erf.ts",
    "erf.types.type",
    "erf.flags",
    "erf.rlen",
    "erf.lctr",
    "erf.wlen",
    "infiniband.lrh.vl",
    "infiniband.lrh.lver",
    "infiniband.lrh.sl",
    "infiniband.lrh.lnh",
    "infiniband.lrh.dlid",
    "infiniband.lrh.pktlen",
    "infiniband.lrh.slid",
    "infiniband.grh.tclass",
    "infiniband.grh.flowlabel",
    "infiniband.grh.paylen",
    "infiniband.grh.nxthdr",
    "infiniband.grh.hoplmt",
    "infiniband.grh.sgid",
    "infiniband.grh.dgid",
    "infiniband.bth.opcode",
    "infiniband.bth.se",
    "infiniband.bth.m",
    "infiniband.bth.padcnt",
    "infiniband.bth.tver",
    "infiniband.bth.p_key",
    "infiniband.bth.destqp",
    "infiniband.bth.a",
    "infiniband.bth.psn",
    "infiniband.deth.q_key",
    "infiniband.deth.srcqp",
    "infiniband.aeth.syndrome",
    "infiniband.aeth.msn",
    "infiniband.invariant.crc",
    "infiniband.variant.crc",
];

const IPOIB_FIELDS: &[&str] = &[
    "frame.len",
    "ipoib.daddr.qpn",
    "ipoib.dgid",
    "ipoib.grh.sqpn",
    "ipoib.grh.sgid",
    "ipoib.type",
    "ipoib.reserved",
    "ip.src",
    "ip.dst",
    "ip.proto",
    "ip.len",
    "ip.ttl",
    "ip.id",
];

fn external(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpus/external")
        .join(path)
}

fn fields_args(fields: &[&str]) -> Vec<String> {
    let mut args = vec!["-T".to_string(), "fields".to_string()];
    for f in fields {
        args.extend(["-e".to_string(), f.to_string()]);
    }
    args
}

fn tshark(file: &Path, fields: &[&str]) -> Vec<String> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(fields_args(fields))
        .output()
        .expect("tshark must be installed: the README's test command installs it");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn rocescope(file: &Path, fields: &[&str]) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["dissect", "--all"])
        .arg(file)
        .args(fields_args(fields))
        .output()
        .expect("run rocescope");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Both tools' lines, which must be equal; returns them (tshark's).
fn agree(file: &Path, fields: &[&str]) -> Vec<String> {
    let (theirs, ours) = (tshark(file, fields), rocescope(file, fields));
    assert_eq!(theirs.len(), ours.len(), "frames of {}", file.display());
    for (n, (t, o)) in theirs.iter().zip(&ours).enumerate() {
        assert_eq!(o, t, "{} frame {}: {fields:?}", file.display(), n + 1);
    }
    theirs
}

/// The values of one column (by its place in `fields`) over every line.
fn column<'a>(lines: &'a [String], fields: &[&str], name: &str) -> Vec<&'a str> {
    let i = fields.iter().position(|f| *f == name).unwrap();
    lines
        .iter()
        .map(|l| l.split('\t').nth(i).unwrap_or(""))
        .collect()
}

#[test]
fn infiniband_pcap_every_header_field_as_tshark() {
    let file = external("wireshark-wiki-samplecaptures/infiniband.pcap");
    let lines = agree(&file, IB_FIELDS);
    assert_eq!(lines.len(), 43);
    let lnh = column(&lines, IB_FIELDS, "infiniband.lrh.lnh");
    // tshark's listing: frames 3, 4, 5, 24, 25, 26 carry a GRH (IPoIB multicast); the rest are local.
    let global: Vec<usize> = (1..=43).filter(|n| lnh[n - 1] == "0x03").collect();
    assert_eq!(global, [3, 4, 5, 24, 25, 26]);
    assert!(lnh.iter().all(|l| *l == "0x02" || *l == "0x03"));
    for f in [
        "infiniband.invariant.crc",
        "infiniband.variant.crc",
        "infiniband.bth.psn",
    ] {
        assert!(
            column(&lines, IB_FIELDS, f).iter().all(|v| !v.is_empty()),
            "{f}"
        );
    }
}

/// The IP inside the IB SENDs (IPoIB's datagram and connected modes, RFC 4391's 4-byte header in the
/// payload), as tshark finds it.
const IB_PAYLOAD_FIELDS: &[&str] = &[
    "frame.number",
    "infiniband.rwh.etype",
    "ip.src",
    "ip.dst",
    "ip.proto",
    "ip.len",
    "ip.id",
    "ip.ttl",
    "ip.flags.df",
    "ip.dsfield.dscp",
    "ipv6.src",
    "ipv6.dst",
    "ipv6.nxt",
    "ipv6.plen",
    "ipv6.hlim",
    "ipv6.flow",
    "udp.srcport",
    "udp.dstport",
    "udp.length",
    "udp.checksum",
];

#[test]
fn infiniband_pcap_ip_inside_the_sends_as_tshark() {
    let file = external("wireshark-wiki-samplecaptures/infiniband.pcap");
    let lines = agree(&file, IB_PAYLOAD_FIELDS);
    let etype = column(&lines, IB_PAYLOAD_FIELDS, "infiniband.rwh.etype");
    let with = |value: &str| -> Vec<usize> { (1..=43).filter(|n| etype[n - 1] == value).collect() };
    // tshark's frame.protocols: ethertype:ip in 10 frames (4 UDP, 6 ICMP), ipv6 in 5, arp in 2; the MADs
    // (QP 0 and 1) and the ACKs carry none.
    assert_eq!(with("0x0800"), [3, 4, 10, 14, 16, 18, 20, 22, 24, 25]);
    assert_eq!(with("0x86dd"), [26, 30, 36, 39, 43]);
    assert_eq!(with("0x0806"), [5, 6]);
}

#[test]
fn infiniband_pcap_every_icrc_and_vcrc_valid() {
    let file = external("wireshark-wiki-samplecaptures/infiniband.pcap");
    let verdicts = rocescope(&file, &["rocescope.icrc_status", "rocescope.vcrc_status"]);
    assert_eq!(verdicts.len(), 43);
    assert!(verdicts.iter().all(|v| v == "valid\tvalid"), "{verdicts:?}");
}

#[test]
fn ipoib_pcap_pseudo_header_and_ip_as_tshark() {
    let file = external("tcpdump-tests/ipoib.pcap");
    let lines = agree(&file, IPOIB_FIELDS);
    assert_eq!(lines.len(), 30);
    // tcpdump's ipoib-e.out: 26 frames of ethertype IPv4 and 4 of ARP.
    let types = column(&lines, IPOIB_FIELDS, "ipoib.type");
    assert_eq!(types.iter().filter(|t| **t == "0x0800").count(), 26);
    assert_eq!(types.iter().filter(|t| **t == "0x0806").count(), 4);
}

/// Built packets, local and global, in ERF records (tshark 4.0 does not read LINKTYPE_INFINIBAND pcaps):
/// tshark reads the values they were built with, and rocescope the same.
#[test]
fn built_infiniband_packets_both_ways() {
    let sgid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let dgid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    let lrh = Lrh {
        vl: 1,
        sl: 4,
        dlid: 0x22,
        slid: 0x11,
        ..Lrh::default()
    };
    let mut write = RoceFrame::new(opcode::rc::WRITE_ONLY);
    write.bth.dest_qp = 0x1234;
    write.bth.psn = 0xABCDE;
    write.payload = vec![7; 6];
    let packets = [
        write.build_infiniband(lrh),
        write.clone().rocev1(sgid, dgid).build_infiniband(lrh),
    ];
    let mut pcap = Vec::new();
    savefile::pcap_file_header(&mut pcap, Resolution::Micros, 65535, 197);
    for (i, p) in packets.iter().enumerate() {
        let mut record = Vec::new();
        ErfHeader {
            timestamp: (1_767_225_600 + i as u64) << 32,
            record_type: 21,
            rlen: (16 + p.len()) as u16,
            wlen: p.len() as u16,
            ..ErfHeader::default()
        }
        .emit(&mut record);
        record.extend_from_slice(p);
        let len = record.len() as u32;
        savefile::pcap_record(&mut pcap, Resolution::Micros, i as u64, &record, len);
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let file = dir.join("built_infiniband.pcap");
    std::fs::write(&file, pcap).unwrap();
    let lines = agree(&file, IB_FIELDS);
    let want = |f: &str| column(&lines, IB_FIELDS, f);
    assert_eq!(want("infiniband.lrh.vl"), ["0x01", "0x01"]);
    assert_eq!(want("infiniband.lrh.sl"), ["4", "4"]);
    assert_eq!(want("infiniband.lrh.lnh"), ["0x02", "0x03"]);
    assert_eq!(want("infiniband.lrh.dlid"), ["34", "34"]);
    assert_eq!(want("infiniband.lrh.slid"), ["17", "17"]);
    // LRH 8 + BTH 12 + RETH 16 + 6 payload + 2 pad + ICRC 4 = 48 bytes = 12 words; the GRH adds 10.
    assert_eq!(want("infiniband.lrh.pktlen"), ["12", "22"]);
    assert_eq!(want("infiniband.grh.sgid"), ["", "fe80::1"]);
    assert_eq!(want("infiniband.bth.destqp"), ["0x001234", "0x001234"]);
    assert_eq!(want("infiniband.bth.psn"), ["703710", "703710"]);
    let verdicts = rocescope(&file, &["rocescope.icrc_status", "rocescope.vcrc_status"]);
    assert_eq!(verdicts, ["valid\tvalid", "valid\tvalid"]);
}

/// `analyze` of infiniband.pcap: its RC flows (packets per SLID, DLID and QP, requesters sending and
/// responders acknowledging, no PSN gap, paired by the CM) and its three CM handshakes, as tshark's listing gives them.
#[test]
fn analyze_infiniband_pcap_rc_flows_and_cm_as_tshark_lists_them() {
    use std::collections::BTreeMap;
    let file = external("wireshark-wiki-samplecaptures/infiniband.pcap");
    let fields = [
        "frame.number",
        "infiniband.lrh.slid",
        "infiniband.lrh.dlid",
        "infiniband.bth.destqp",
        "infiniband.bth.opcode",
        "infiniband.cm.req.localqpn",
        "infiniband.cm.rep.localqpn",
        "infiniband.cm.rep.remotecommid",
        "infiniband.cm.rtu.localcommid",
    ];
    let lines = tshark(&file, &fields);
    let rows: Vec<Vec<&str>> = lines.iter().map(|l| l.split('\t').collect()).collect();
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    // RC opcodes are 0x00-0x1F: (source, destination, QP) → (packets, any not an ACK).
    let mut rc: BTreeMap<(String, String, u64), (u64, bool)> = BTreeMap::new();
    for r in &rows {
        let op: u64 = r[4].parse().unwrap();
        if op < 0x20 {
            let e = rc
                .entry((
                    format!("LID: {}", r[1]),
                    format!("LID: {}", r[2]),
                    hex(r[3]),
                ))
                .or_default();
            e.0 += 1;
            e.1 |= op != 0x11;
        }
    }
    assert_eq!(rc.len(), 6, "{rc:?}");

    let out = Command::new(env!("CARGO_BIN_EXE_rocescope"))
        .args(["analyze", "--json"])
        .arg(&file)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // A healthy fabric: the SM's and SA's UD traffic (one PSN sequence per sending QP, whatever the
    // destination: QP 0's directed routes from and to the permissive LID are one flow here) is no loss.
    assert_eq!(
        report["verdict"]["status"], "pass",
        "{:#}",
        report["verdict"]
    );
    let mut ours = BTreeMap::new();
    for f in report["flows"].as_array().unwrap() {
        let role = f["role"].as_str().unwrap();
        if role == "datagram" {
            assert_eq!(f["psn"]["gap_events"], 0, "{f}");
            continue;
        }
        let key = (
            f["src"].as_str().unwrap().to_string(),
            f["dst"].as_str().unwrap().to_string(),
            f["dest_qp"].as_u64().unwrap(),
        );
        assert_eq!(f["psn"]["gap_events"], 0, "{key:?}");
        assert_eq!(f["paired_by"], "cm", "{key:?}");
        ours.insert(key, (f["packets"].as_u64().unwrap(), role == "requester"));
    }
    assert_eq!(ours, rc);

    // Each REQ, the REP after it, and the RTU naming the REP's remote communication ID.
    let mut want = Vec::new();
    for (i, req) in rows.iter().enumerate().filter(|(_, r)| !r[5].is_empty()) {
        let rep = rows[i..].iter().find(|r| !r[6].is_empty()).unwrap();
        let rtu = rows[i..].iter().find(|r| r[8] == rep[7]).unwrap();
        want.push(serde_json::json!({
            "sides": [[format!("LID: {}", req[1]), hex(req[5])], [format!("LID: {}", rep[1]), hex(rep[6])]],
            "frames": [req[0].parse::<u64>().unwrap(), rep[0].parse::<u64>().unwrap(), rtu[0].parse::<u64>().unwrap()],
        }));
    }
    let got: Vec<serde_json::Value> = report["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["state"], "established");
            let h = &c["handshake"];
            let sides: Vec<_> = c["sides"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| serde_json::json!([s["address"], s["qpn"]]))
                .collect();
            serde_json::json!({
                "sides": sides,
                "frames": [h["req"]["frame"], h["rep"]["frame"], h["rtu"]["frame"]],
            })
        })
        .collect();
    assert_eq!(want.len(), 3);
    assert_eq!(got, want);
}

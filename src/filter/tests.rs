//! The language on built frames whose every field is known: what passes, what fails, what is refused.
use std::sync::Arc;

use parsers::builder::RoceFrame;
use parsers::opcode;

use super::{Analysis, Filter, Matcher, Subject};
use crate::analysis::{Class, Counted};
use crate::source::Packet;

/// An RC WRITE_FIRST 10.0.0.1 → 10.0.0.2, QP 0x11, PSN 0x10, RETH length 3000, AckReq, MACs
/// 02:00:00:00:00:01 → 02:00:00:00:00:02, UDP 49152 → 4791.
fn write_first() -> Vec<u8> {
    let mut f = RoceFrame::new(opcode::rc::WRITE_FIRST);
    f.bth.psn = 0x10;
    f.bth.ack_req = true;
    f.ext.reth = Some(parsers::reth::Reth {
        va: 0x1000,
        r_key: 0x22,
        dma_len: 3000,
    });
    f.payload = vec![0xab; 1024];
    f.build()
}

fn passes(filter: &str, data: &[u8], analysis: Option<Analysis>) -> bool {
    let filter = Filter::new(filter).unwrap_or_else(|e| panic!("{filter}: {e}"));
    let packet = Packet {
        ts_nanos: 0,
        linktype: 1,
        interface: 0,
        data,
        orig_len: data.len() as u32,
    };
    let frame = parsers::parse_frame(1, data, data.len(), &Default::default());
    let s = Subject {
        number: 7,
        packet: &packet,
        frame: &frame,
        interface: None,
        analysis,
    };
    Matcher::new(Arc::new(filter)).matches(&s)
}

#[test]
fn comparisons_sets_and_logic() {
    let f = write_first();
    for yes in [
        "infiniband",
        "infiniband.reth",
        "frame.number == 7",
        "infiniband.bth.psn == 0x10",
        "infiniband.bth.psn == 16 && infiniband.bth.destqp == 0x11",
        "infiniband.bth.a == 1 and infiniband.bth.a == True",
        "infiniband.bth.se == 0",
        "infiniband.reth.dmalen >= 3000",
        "infiniband.reth.dmalen in {1..5, 2999..3001}",
        "infiniband.bth.opcode in {6, 10}",
        "infiniband.bth.opcode not in {7, 8}",
        "infiniband.bth.opcode & 0x02",
        "ip.src == 10.0.0.1",
        "ip.addr == 10.0.0.2",
        "ip.addr ~= 10.0.0.2",
        "ip.src == 10.0.0.0/8",
        "ip.src in {192.168.0.0/16, 10.0.0.0/24}",
        "ip.dst > 10.0.0.1",
        "eth.src == 02:00:00:00:00:01",
        "eth.src == 02-00-00-00-00-01",
        "eth.src == 0200.0000.0001",
        "eth.addr contains 00:02",
        "udp.port == 4791",
        "rocescope.opcode_name == \"RC_WRITE_FIRST\" && rocescope.opcode_name == RC_WRITE_FIRST",
        "rocescope.icrc_status == \"valid\"",
        "not udp.srcport == 4791",
        "!(ip.src == 10.0.0.2) && (udp || tcp_is_not_a_field_here_but_never_read)",
        "frame.len > 1000 and not infiniband.aeth",
    ]
    .into_iter()
    .filter(|y| !y.contains("tcp_is"))
    {
        assert!(passes(yes, &f, None), "{yes} should pass");
    }
    for no in [
        "infiniband.aeth",
        "infiniband.bth.psn == 0x11",
        "infiniband.bth.psn != 16",
        "ip.addr != 10.0.0.2",
        "ip.addr === 10.0.0.2",
        "infiniband.bth.opcode in {7, 8}",
        "infiniband.bth.opcode not in {6}",
        "infiniband.aeth.msn != 3",
        "ip.src == 10.0.1.0/24",
        "eth.src contains 03",
        "rocescope.retransmission",
        "frame.number == 1 or frame.number == 7 and frame.number == 3",
    ] {
        assert!(!passes(no, &f, None), "{no} should not pass");
    }
}

#[test]
fn the_analysis_fields() {
    let f = write_first();
    let events = [("psn_gap", "error"), ("go_back_n", "warning")];
    let a = Analysis {
        counted: Counted {
            flow: Some(3),
            class: Class::Retransmission,
        },
        events: &events,
    };
    for yes in [
        "rocescope.retransmission",
        "rocescope.class == \"retransmission\"",
        "rocescope.flow == 3",
        "rocescope.event == \"go_back_n\"",
        "rocescope.event == \"psn_gap\" && rocescope.severity == \"error\"",
        "rocescope.event != \"nak\"",
    ] {
        assert!(passes(yes, &f, Some(a)), "{yes} should pass");
    }
    assert!(!passes("rocescope.event != \"psn_gap\"", &f, Some(a)));
    assert!(!passes("rocescope.event", &f, None));
    let filter = Filter::new("rocescope.event == \"stall\" or ip").unwrap();
    assert!(filter.analysis && filter.events);
    let filter = Filter::new("rocescope.retransmission").unwrap();
    assert!(filter.analysis && !filter.events);
}

/// Each refused filter's one line: the column, and what is wrong there.
#[test]
fn bad_filters_say_where_and_what() {
    for (filter, error) in [
        (
            "infiniband.bth.opcode == 6 or",
            "column 30 (at the end): expected a field name",
        ),
        ("(frame.number == 1", "column 19 (at the end): expected"),
        (
            "udp.port in {4791 53}",
            "column 19 (at \"53}\"): expected \",\" or \"}\": set members are separated by commas, as in \
             tshark 4.0, which refuses whitespace too: {6, 7, 8}, {6..8, 17}",
        ),
        (
            "infiniband.bth.opcode in {6..8 17}",
            "column 32 (at \"17}\"): expected \",\" or \"}\": set members",
        ),
        (
            "ip.src in {\"10.0.0.1\" \"10.0.0.2\"}",
            "column 23 (at \"\"10.0.0.2\"}\"): expected \",\" or \"}\": set members",
        ),
        (
            "udp.port in {4791,,53}",
            "column 19 (at \",53}\"): expected a value",
        ),
        (
            "udp.port in {4791,}",
            "column 19 (at \"}\"): expected a value",
        ),
        ("udp.port in {}", "column 14 (at \"}\"): expected a value"),
        (
            "udp.port in {1..2..3}",
            "column 18 (at \"..3}\"): expected \"}\" or \",\"",
        ),
        (
            "infiniband.bth.psnn == 3",
            "column 1 (at \"infiniband.bth.psnn\"): \"infiniband.bth.psnn\" is neither a field nor a protocol",
        ),
        (
            "ip.src == \"10.0.0.1\"",
            "column 11 (at \"\"10.0.0.1\"\"): \"10.0.0.1\" is a string; this field holds an IPv4 address",
        ),
        (
            "infiniband.bth.psn == 5454383.0",
            "column 23 (at \"5454383.0\"): \"5454383.0\" is not a valid number",
        ),
        ("ip.src == 10.0.0.0/33", "the prefix length must be 0 to 32"),
        ("ip.src > 10.0.0.0/8", "only == and != take a network"),
        ("infiniband.reth == 3", "infiniband.reth is a protocol"),
        ("eth.src == 02:00", "is not a MAC address"),
        (
            "frame.number = 3",
            "column 14 (at \"=\"): expected a comparison",
        ),
        (
            "frame.number == 1 xor frame.number == 2",
            "column 19 (at \"xor\"): expected",
        ),
        ("udp.port contains 3", "\"contains\" needs bytes or text"),
        // Numbers wider than the field tshark holds (tshark -G fields: FT_UINT8, FT_UINT24, FT_UINT16)
        (
            "infiniband.bth.opcode == 256",
            "column 26 (at \"256\"): \"256\" is too big for infiniband.bth.opcode, which tshark holds in 8 \
             bits: at most 255",
        ),
        (
            "infiniband.bth.psn in {1, 0x1000000}",
            "column 27 (at \"0x1000000}\"): \"0x1000000\" is too big for infiniband.bth.psn, which tshark \
             holds in 24 bits: at most 16777215",
        ),
        (
            "infiniband.bth.destqp in {1..0x1000000}",
            "is too big for infiniband.bth.destqp, which tshark holds in 24 bits",
        ),
        (
            "udp.port & 0x10000",
            "is too big for udp.port, which tshark holds in 16 bits: at most 65535",
        ),
        (
            "ip.ttl > 300",
            "is too big for ip.ttl, which tshark holds in 8 bits: at most 255",
        ),
        (
            "frame.len == 4294967296",
            "is too big for frame.len, which tshark holds in 32 bits",
        ),
        // tshark reads a MAC field's contains operand as bytes only
        (
            "eth.addr contains \"\"",
            "column 19 (at \"\"\"\"): eth.addr holds a MAC address: \"contains\" takes bytes (50:56), not a string",
        ),
        (
            "eth.src contains \"ab\"",
            "eth.src holds a MAC address: \"contains\" takes bytes",
        ),
        ("", "column 1 (at the end): expected a field name"),
    ] {
        let e = Filter::new(filter)
            .err()
            .unwrap_or_else(|| panic!("{filter} compiled"))
            .to_string();
        assert!(e.contains(error), "{filter}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    let deep = format!("{}ip{}", "(".repeat(100), ")".repeat(100));
    assert!(
        Filter::new(&deep)
            .unwrap_err()
            .to_string()
            .contains("nested deeper than 64")
    );
    // Hostile text is refused, never a panic.
    for junk in [
        "\"",
        "\\",
        "{",
        "ip.src == \"\\x",
        "ip in {",
        "!!!!",
        "ip.src == 1.2.3.4/",
        "ü == 3",
    ] {
        assert!(Filter::new(junk).is_err(), "{junk}");
    }
}

/// Values as wide as the field are taken, and a set is the same whether its members are few or many, in
/// order or not, overlapping or not.
#[test]
fn the_widest_values_and_large_sets() {
    let f = write_first();
    for yes in [
        "infiniband.bth.opcode != 255",
        "infiniband.bth.psn != 0xffffff",
        "infiniband.bth.destqp in {0x11, 0xffffff}",
        "infiniband.reth.va < 0xffffffffffffffff",
        "rocescope.opcode_name contains \"\"",
        "eth.src contains 02:00",
        "infiniband.bth.opcode in {8..6, 6}",
        "ip.src in {10.0.0.2, 10.0.0.0/31, 11.0.0.0/8}",
        "ip.src in {10.0.0.1..10.0.0.1}",
        "rocescope.opcode_name in {\"RC_SEND_ONLY\", \"RC_WRITE_FIRST\"}",
        "rocescope.opcode_name in {RC_A..RC_X}",
        "eth.dst in {02:00:00:00:00:02, ff:ff:ff:ff:ff:ff}",
        "infiniband.bth.a in {True}",
    ] {
        assert!(passes(yes, &f, None), "{yes} should pass");
    }
    for no in [
        "infiniband.bth.opcode in {8..6}",
        "ip.src in {10.0.0.2, 10.0.0.4/30}",
        "rocescope.opcode_name in {RC_A..RC_W}",
        "eth.dst in {02:00:00:00:00:01}",
        "infiniband.bth.a in {False}",
    ] {
        assert!(!passes(no, &f, None), "{no} should not pass");
    }
    // 14,000 frame numbers (every other one from 2, so none adjacent) and the frame's 7 among them or not
    let even: Vec<String> = (1..=14_000).map(|i| (2 * i).to_string()).collect();
    let odd: Vec<String> = (0..14_000).map(|i| (2 * i + 3).to_string()).collect();
    assert!(!passes(
        &format!("frame.number in {{{}}}", even.join(", ")),
        &f,
        None
    ));
    assert!(passes(
        &format!("frame.number in {{{}}}", odd.join(", ")),
        &f,
        None
    ));
    let mut shuffled = odd.clone();
    shuffled.reverse();
    assert!(passes(
        &format!("frame.number in {{{}}}", shuffled.join(",")),
        &f,
        None
    ));
}

/// Members merge into the fewest intervals: adjacent and overlapping ranges become one, reversed ones none.
#[test]
fn set_members_merge() {
    use super::expr::Val;
    use super::set::Set;
    let u = |lo: i128, hi: Option<i128>| (Val::Num(lo), hi.map(Val::Num));
    let none = |_| &[][..];
    let s = Set::new(
        vec![
            u(5, Some(9)),
            u(1, None),
            u(2, None),
            u(10, Some(12)),
            u(8, Some(11)),
            u(20, Some(19)),
            u(30, None),
        ],
        &[],
    );
    assert_eq!(
        s.intervals(),
        3,
        "1..2, 5..12 and 30: 1 and 2 adjacent, 5..9, 8..11 and 10..12 overlapping"
    );
    let holds: Vec<i128> = (0..35).filter(|n| s.holds(Val::Num(*n), none)).collect();
    assert_eq!(holds, [1, 2, 5, 6, 7, 8, 9, 10, 11, 12, 30]);
    let all = Set::new(
        vec![(Val::Ipv6(0, 0), None), (Val::Ipv6(u128::MAX, 128), None)],
        &[],
    );
    assert_eq!(all.intervals(), 1);
    assert!(all.holds(Val::Ipv6(u128::MAX, 128), none));
}

/// Slices, arithmetic, functions, `matches` and the rest of tshark 4.0's language on the built frame,
/// whose bytes the builder gives: Ethernet II 02:00:00:00:00:02 ← 02:00:00:00:00:01 (type 0x0800), IPv4
/// 10.0.0.1 → 10.0.0.2 (UDP, a 20-byte header), UDP 49152 → 4791 (0x12b7), PSN 16, a payload of 0xab.
#[test]
fn slices_arithmetic_and_functions() {
    let f = write_first();
    for yes in [
        "eth.src[0:3] == 02:00:00",
        "eth.src[-1] == 01",
        "eth.dst[5] == 02 and eth.dst[5] == 0x02",
        "frame[12:2] == 08:00 and eth[12-13] == 08:00 and eth[-2:] == 08:00",
        "frame[0:2,6] == 02:00:02",
        "ip[0] == 45 and ip[12:4] == 0a:00:00:01 and ip.src[2:] == 00:01",
        "udp[2:2] == 12:b7 and udp[:2] == c0:00",
        "len(eth) == 14 and len(ip) == 20 and len(udp) == 8 and len(eth.src) == 6",
        "count(ip.addr) == 2 and count(udp.port) == 2",
        "udp.dstport == udp.srcport - 44361",
        "infiniband.bth.psn + 1 == 17 and -infiniband.bth.psn == -16",
        "udp.dstport % 10 == 1 and {udp.dstport + 9} / 100 == 48",
        "udp.dstport & 0x07 == 7 and udp.dstport & 0x10",
        "max(udp.srcport, udp.dstport) == 49152 and min(udp.srcport, udp.dstport) == 4791",
        "abs(-infiniband.bth.psn) == 16",
        "string(ip.src) == \"10.0.0.1\" and string(eth.src) == \"02:00:00:00:00:01\"",
        "string(infiniband.bth.psn) == \"16\" and string(ip.src)[-1] == \"1\"",
        "upper(rocescope.opcode_name) == \"RC_WRITE_FIRST\"",
        "lower(rocescope.opcode_name) == \"rc_write_first\"",
        "frame contains ab:ab:ab and udp contains ab:ab and eth contains 0a:00:00:02",
        "frame matches \"\\\\xab\\\\xab\" and rocescope.opcode_name matches \"^RC_WRITE\"",
        "ip.proto == 17 and ip.proto == '\\x11' and ip.version == 4",
        "any ip.addr == 10.0.0.1 and all ip.addr != 10.0.0.3 and ip.addr#1 == 10.0.0.2",
        "frame.time_relative == 0 and frame.time_delta == 0 and frame.time_epoch == 0",
        "frame.time == \"1970-01-01 00:00:00Z\" and frame.time < \"Jan  1, 1970 00:00:01 UTC\"",
        "udp.srcport != .udp.dstport",
    ] {
        assert!(passes(yes, &f, None), "{yes} should pass");
    }
    for no in [
        "eth.src[0:3] == 02:00:01",
        "frame[5000]",
        "frame[-5000:2] == 00:00",
        "ip.addr#2 == 10.0.0.1",
        "len(eth) == 15",
        "frame contains cd:cd",
        "rocescope.opcode_name matches \"^rc_\"",
        "udp.dstport == -udp.srcport",
        "max(udp.srcport, udp.dstport) < 49152",
    ] {
        assert!(!passes(no, &f, None), "{no} should not pass");
    }
}

/// What tshark 4.0 refuses (each checked with tshark: tests/tshark_dfilter.rs holds the cases) is refused
/// here too, in one line saying why.
#[test]
fn what_tshark_refuses() {
    for (filter, error) in [
        (
            "6 == ip.proto",
            "the left side of a test must be a field or function",
        ),
        ("1 + 2 == frame.number", "constant arithmetic expression"),
        ("ip AnD eth", "column 4 (at \"AnD\")"),
        ("udp.port[1] == 0x43", "cannot be sliced"),
        ("len(eth.src)", "cannot test whether a function is present"),
        ("max(67, udp.port) == 1", "not constants"),
        ("min(ip.ttl, udp.port) == 1", "numbers of one type"),
        ("string(ip.dst) matches \"[\"", "regular expression"),
        ("string(frame.number) matches 1", "double-quoted string"),
        (
            "frame.number matches \"1\"",
            "\"matches\" needs bytes or text",
        ),
        ("ip.ttl\t== 1", "non-printable"),
        ("frame[37] == fc:", "\":\" was unexpected"),
        ("frame == tcp()", "function 'tcp' does not exist"),
        (
            "udp.dstport == 66+'\\x01'",
            "is not a valid arithmetic operand",
        ),
        ("udp.dstport == 68-1", "\"68-1\" is not a valid number"),
        ("frame[3:0] == 00", "its length positive"),
        ("frame[99999999999] == 00", "within ±2147483647"),
        ("ip.proto == '\\Z'", "isn't a valid character constant"),
        ("frame.time == 1041342931.3", "not a valid absolute time"),
        (
            "frame.time == \"2002-12-31 13:55.3\"",
            "not a valid absolute time",
        ),
        (
            "ip.flags.df == \"True\"",
            "cannot be found among the possible values",
        ),
        (
            "string(ip.dst) == \"\\u0032\"",
            "not a valid universal character name",
        ),
        ("eth.src == ip.src", "are not of compatible types"),
        ("udp.srcport == -{udp.dstport * 20}", "\"{\" was unexpected"),
        ("123 in {ip}", "only a field may be tested for membership"),
    ] {
        let e = Filter::new(filter)
            .err()
            .unwrap_or_else(|| panic!("{filter} compiled"))
            .to_string();
        assert!(e.contains(error), "{filter}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

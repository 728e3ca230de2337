//! The opcode table against the IBTA opcode list, written out independently in `common::OPCODES`.
mod common;

use common::{Kind, OPCODES, Pos, UNSETTLED, expected_headers, lookup};
use parsers::opcode::{Headers, Opcode, Position, Transport};

fn flag(name: &str) -> Headers {
    match name {
        "RDETH" => Headers::RDETH,
        "DETH" => Headers::DETH,
        "XRCETH" => Headers::XRCETH,
        "FETH" => Headers::FETH,
        "RETH" => Headers::RETH,
        "ATOMIC" => Headers::ATOMIC_ETH,
        "AETH" => Headers::AETH,
        "ATOMICACK" => Headers::ATOMIC_ACK_ETH,
        "IMMDT" => Headers::IMMDT,
        "IETH" => Headers::IETH,
        "CNP" => Headers::CNP,
        other => panic!("{other}"),
    }
}

const ALL_FLAGS: [&str; 11] = [
    "RDETH",
    "DETH",
    "XRCETH",
    "FETH",
    "RETH",
    "ATOMIC",
    "AETH",
    "ATOMICACK",
    "IMMDT",
    "IETH",
    "CNP",
];

fn position(p: Option<Pos>) -> Option<Position> {
    p.map(|p| match p {
        Pos::First => Position::First,
        Pos::Middle => Position::Middle,
        Pos::Last => Position::Last,
        Pos::Only => Position::Only,
    })
}

#[test]
fn every_opcode_matches_the_ibta_table() {
    for code in 0..=255u8 {
        if UNSETTLED.contains(&code) {
            continue;
        }
        let op = Opcode(code);
        match lookup(code) {
            Some(e) => {
                assert_eq!(op.name(), e.name, "{code:#04x}");
                assert!(op.is_known(), "{code:#04x}");
                let want = expected_headers(code);
                let headers = op.headers();
                let built = want.iter().fold(Headers::NONE, |h, n| h.with(flag(n)));
                assert_eq!(headers, built, "{code:#04x} {}", e.name);
                for f in ALL_FLAGS {
                    assert_eq!(
                        headers.has(flag(f)),
                        want.contains(&f),
                        "{code:#04x} {} header {f}",
                        e.name
                    );
                }
                assert_eq!(op.is_request(), e.kind == Kind::Request, "{}", e.name);
                assert_eq!(op.is_response(), e.kind == Kind::Response, "{}", e.name);
                assert_eq!(op.has_payload(), e.payload, "{}", e.name);
                assert_eq!(op.position(), position(e.pos), "{}", e.name);
            }
            None => {
                assert_eq!(op.name(), "UNKNOWN", "{code:#04x}");
                assert!(!op.is_known(), "{code:#04x}");
                assert_eq!(op.transport(), Transport::Unknown, "{code:#04x}");
                assert_eq!(op.headers(), Headers::NONE, "{code:#04x}");
                assert!(!op.is_request() && !op.is_response(), "{code:#04x}");
                assert!(!op.has_payload(), "{code:#04x}");
                assert_eq!(op.position(), None, "{code:#04x}");
            }
        }
    }
}

#[test]
fn the_table_has_the_expected_size() {
    // RC 25 (0x00-0x14, 0x16, 0x17, FLUSH, ATOMIC_WRITE), UC 12, RD 22, UD 2, CNP 1, XRC 23.
    assert_eq!(OPCODES.len(), 25 + 12 + 22 + 2 + 1 + 23);
    let known = (0..=255u8)
        .filter(|c| !UNSETTLED.contains(c))
        .filter(|c| Opcode(*c).is_known())
        .count();
    assert_eq!(known, OPCODES.len());
}

#[test]
fn spot_checks_from_the_brief() {
    // UD SEND_ONLY carries a DETH.
    let ud = Opcode(0x64);
    assert_eq!(ud.name(), "UD_SEND_ONLY");
    assert_eq!(ud.headers(), Headers::DETH);
    assert_eq!(ud.transport(), Transport::Ud);
    // RD READ_RESPONSE_FIRST: RDETH + AETH, no DETH.
    let rd = Opcode(0x4D);
    assert!(rd.headers().has(Headers::RDETH) && rd.headers().has(Headers::AETH));
    assert!(!rd.headers().has(Headers::DETH));
    assert_eq!(rd.transport(), Transport::Rd);
    // XRC WRITE_FIRST: XRCETH + RETH.
    assert_eq!(Opcode(0xA6).headers(), Headers::XRCETH.with(Headers::RETH));
    assert_eq!(Opcode(0xA6).transport(), Transport::Xrc);
    // XRC ACKNOWLEDGE: AETH only.
    assert_eq!(Opcode(0xB1).headers(), Headers::AETH);
    // CNP.
    assert_eq!(Opcode(0x81).name(), "CNP");
    assert_eq!(Opcode(0x81).transport(), Transport::Cnp);
    assert_eq!(Opcode(0x81).headers(), Headers::CNP);
    // Holes: 0x15 on RC, UC READ (0x2C), 0xFF.
    for hole in [
        0x15, 0x2C, 0xFF, 0x18, 0x1E, 0x30, 0x56, 0x60, 0x66, 0x80, 0x82, 0xB5, 0xC0,
    ] {
        assert_eq!(Opcode(hole).name(), "UNKNOWN", "{hole:#04x}");
        assert_eq!(Opcode(hole).transport(), Transport::Unknown, "{hole:#04x}");
    }
}

#[test]
fn transport_and_operation_bits() {
    let cases = [
        (0x04, Transport::Rc, 0x04),
        (0x24, Transport::Uc, 0x04),
        (0x44, Transport::Rd, 0x04),
        (0x64, Transport::Ud, 0x04),
        (0xA4, Transport::Xrc, 0x04),
        (0x81, Transport::Cnp, 0x01),
        (0x11, Transport::Rc, 0x11),
        (0xB1, Transport::Xrc, 0x11),
        (0x55, Transport::Rd, 0x15),
    ];
    for (code, transport, operation) in cases {
        assert_eq!(Opcode(code).transport(), transport, "{code:#04x}");
        assert_eq!(Opcode(code).operation(), operation, "{code:#04x}");
    }
}

#[test]
fn read_response_and_ack_predicates() {
    for code in 0..=255u8 {
        let op = Opcode(code);
        let read_response = matches!(
            code,
            0x0D..=0x10 | 0x4D..=0x50 | 0xAD..=0xB0
        );
        let ack = matches!(code, 0x11 | 0x51 | 0xB1);
        assert_eq!(op.is_read_response(), read_response, "{code:#04x}");
        assert_eq!(op.is_ack(), ack, "{code:#04x}");
    }
}

#[test]
fn from_name() {
    // Every name, in any case.
    for e in OPCODES {
        assert_eq!(
            Opcode::from_name(e.name),
            Some(Opcode(e.code)),
            "{}",
            e.name
        );
        assert_eq!(
            Opcode::from_name(&e.name.to_ascii_lowercase()),
            Some(Opcode(e.code)),
            "{}",
            e.name
        );
    }
    assert_eq!(Opcode::from_name("Rc_Send_Only"), Some(Opcode(0x04)));
    assert_eq!(Opcode::from_name("cnp"), Some(Opcode(0x81)));
    assert_eq!(Opcode::from_name("xrc_write_first"), Some(Opcode(0xA6)));
    // Numbers: decimal, 0x / 0X hex.
    assert_eq!(Opcode::from_name("17"), Some(Opcode(0x11)));
    assert_eq!(Opcode::from_name("0"), Some(Opcode(0)));
    assert_eq!(Opcode::from_name("0x11"), Some(Opcode(0x11)));
    assert_eq!(Opcode::from_name("0X64"), Some(Opcode(0x64)));
    assert_eq!(Opcode::from_name("0xff"), Some(Opcode(0xFF)));
    assert_eq!(Opcode::from_name("255"), Some(Opcode(0xFF)));
    // Not opcodes.
    for bad in [
        "",
        "256",
        "0x100",
        "0x",
        "-1",
        "UNKNOWN",
        "unknown",
        "RC_SEND",
        "SEND_ONLY",
        "0xzz",
    ] {
        assert_eq!(Opcode::from_name(bad), None, "{bad:?}");
    }
}

#[test]
fn request_kind_predicates_follow_the_names() {
    // Derived from the IBTA names in the independent table, not from the operation bits.
    for e in OPCODES {
        let op = Opcode(e.code);
        let n = e.name;
        let request = e.kind == Kind::Request;
        assert_eq!(op.is_read_request(), n.ends_with("_READ_REQUEST"), "{n}");
        assert_eq!(
            op.is_atomic(),
            n.ends_with("_COMPARE_SWAP") || n.ends_with("_FETCH_ADD"),
            "{n}"
        );
        assert_eq!(
            op.is_atomic_ack(),
            n.ends_with("_ATOMIC_ACKNOWLEDGE"),
            "{n}"
        );
        let segment = request
            && (n.contains("_SEND_") || n.contains("_WRITE_"))
            && !n.ends_with("_ATOMIC_WRITE");
        assert_eq!(op.is_send_or_write(), segment, "{n}");
        assert_eq!(
            op.has_aeth(),
            expected_headers(e.code).contains(&"AETH"),
            "{n}"
        );
    }
    let read = Opcode(parsers::opcode::rc::READ_REQUEST);
    assert_eq!(read.psns_consumed(Some(3000), Some(1024)), Some(3));
    assert_eq!(read.psns_consumed(Some(3000), None), None);
    assert_eq!(read.psns_consumed(None, None), Some(1));
    let write = Opcode(parsers::opcode::rc::WRITE_ONLY);
    assert_eq!(write.psns_consumed(Some(3000), None), Some(1));
}

#[test]
fn named_rc_opcodes() {
    use parsers::opcode::rc;
    for (code, name) in [
        (rc::SEND_FIRST, "RC_SEND_FIRST"),
        (rc::SEND_ONLY_IMM, "RC_SEND_ONLY_IMM"),
        (rc::WRITE_FIRST, "RC_WRITE_FIRST"),
        (rc::WRITE_ONLY_IMM, "RC_WRITE_ONLY_IMM"),
        (rc::READ_REQUEST, "RC_READ_REQUEST"),
        (rc::READ_RESPONSE_ONLY, "RC_READ_RESPONSE_ONLY"),
        (rc::ACKNOWLEDGE, "RC_ACKNOWLEDGE"),
        (rc::ATOMIC_ACKNOWLEDGE, "RC_ATOMIC_ACKNOWLEDGE"),
        (rc::COMPARE_SWAP, "RC_COMPARE_SWAP"),
        (rc::FETCH_ADD, "RC_FETCH_ADD"),
        (rc::SEND_ONLY_INVALIDATE, "RC_SEND_ONLY_INVALIDATE"),
        (rc::FLUSH, "RC_FLUSH"),
        (rc::ATOMIC_WRITE, "RC_ATOMIC_WRITE"),
    ] {
        assert_eq!(lookup(code).map(|e| e.name), Some(name));
    }
}

/// Short names, written out from the IBTA names: every known opcode has one of at most 13 characters, no two
/// alike.
#[test]
fn short_names() {
    for (op, want) in [
        (0x00, "SEND_F"),
        (0x01, "SEND_M"),
        (0x03, "SEND_LI"),
        (0x04, "SEND_O"),
        (0x08, "WR_L"),
        (0x0B, "WR_OI"),
        (0x0C, "RD_REQ"),
        (0x10, "RD_RSP_O"),
        (0x11, "ACK"),
        (0x12, "AT_ACK"),
        (0x13, "CSWAP"),
        (0xB4, "XRC FADD"),
        (0x17, "SEND_OINV"),
        (0x2A, "UC WR_O"),
        (0x55, "RD RESYNC"),
        (0x64, "UD SEND_O"),
        (0xAE, "XRC RD_RSP_M"),
        (0x81, "CNP"),
        (0x18, "UNKNOWN"),
    ] {
        assert_eq!(
            Opcode(op).short_name().to_string(),
            want,
            "opcode {op:#04x}"
        );
    }
    let known: Vec<String> = (0..=255u8)
        .map(Opcode)
        .filter(|o| o.is_known())
        .map(|o| o.short_name().to_string())
        .collect();
    assert!(
        known.iter().all(|n| n.len() <= 13 && n != "UNKNOWN"),
        "{known:?}"
    );
    let mut unique = known.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), known.len());
}

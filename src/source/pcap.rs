//! Classic pcap records (microsecond, nanosecond and the "modified" format, either byte order).
use pcap_parser::pcap::{parse_pcap_frame, parse_pcap_frame_be, parse_pcap_frame_modified};

use super::input::{Input, u32_at};
use super::{Fail, Found, MAX_BLOCK_SIZE, NANOS_PER_SEC, TruncatedIn};

#[derive(Default)]
pub(super) struct PcapState {
    pub(super) big_endian: bool,
    pub(super) nanos: bool,
    /// Alexey Kuznetsov's patched format: 24-byte record headers.
    pub(super) modified: bool,
    pub(super) linktype: u16,
}

pub(super) fn next_pcap(input: &mut Input, st: &PcapState) -> Result<Option<Found>, Fail> {
    let hdr_len = if st.modified { 24 } else { 16 };
    if !input.fill(hdr_len)? {
        return if input.available().is_empty() {
            Ok(None)
        } else {
            Err(Fail::Truncated(TruncatedIn::Packet))
        };
    }
    let caplen = u32_at(input.available(), 8, st.big_endian);
    let total = hdr_len as u64 + u64::from(caplen);
    if total > MAX_BLOCK_SIZE as u64 {
        return Err(Fail::TooLarge(total));
    }
    let total = total as usize;
    if !input.fill(total)? {
        return Err(Fail::Truncated(TruncatedIn::Packet));
    }
    let rec = &input.available()[..total];
    let parsed = if st.modified {
        parse_pcap_frame_modified(rec)
    } else if st.big_endian {
        parse_pcap_frame_be(rec)
    } else {
        parse_pcap_frame(rec)
    };
    let frame =
        parsed.map_err(|_| Fail::Malformed(format!("invalid pcap record ({total} bytes)")))?;
    let b = frame.1;
    let frac_ns = if st.nanos {
        u64::from(b.ts_usec)
    } else {
        u64::from(b.ts_usec) * 1_000
    };
    let found = Found {
        ts_nanos: u64::from(b.ts_sec) * NANOS_PER_SEC + frac_ns,
        linktype: st.linktype,
        interface: 0,
        start: input.start + hdr_len,
        len: caplen as usize,
        orig_len: b.origlen,
    };
    input.consume(total);
    Ok(Some(found))
}

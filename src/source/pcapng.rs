//! pcapng blocks: sections, interfaces (link type, snap length, timestamp resolution and offset) and the
//! packet blocks (enhanced, simple, obsolete); other blocks are skipped.
use pcap_parser::pcapng::{
    BOM_MAGIC, EPB_MAGIC, IDB_MAGIC, InterfaceDescriptionBlock, SHB_MAGIC, SPB_MAGIC,
    parse_enhancedpacketblock_be, parse_enhancedpacketblock_le, parse_interfacedescriptionblock_be,
    parse_interfacedescriptionblock_le, parse_sectionheaderblock, parse_simplepacketblock_be,
    parse_simplepacketblock_le,
};

use super::input::{Input, pad4, u16_at, u32_at};
use super::{Fail, Found, MAX_BLOCK_SIZE, MAX_INTERFACES, NANOS_PER_SEC, TruncatedIn};

/// Block type of the obsolete pcapng Packet Block.
const PB_MAGIC: u32 = 0x0000_0002;

#[derive(Default)]
pub(super) struct NgState {
    pub(super) big_endian: bool,
    interfaces: Vec<Interface>,
}

struct Interface {
    linktype: u16,
    snaplen: u32,
    /// Timestamp units per second (if_tsresol).
    units_per_sec: u64,
    /// if_tsoffset, seconds.
    offset_secs: i64,
}

/// Timestamp in `units_per_sec` units plus `offset_secs` seconds, as nanoseconds,
/// rounded down and saturated to the u64 range.
fn to_nanos(ts: u64, units_per_sec: u64, offset_secs: i64) -> u64 {
    let ns = u128::from(ts) * u128::from(NANOS_PER_SEC) / u128::from(units_per_sec);
    let total = ns as i128 + i128::from(offset_secs) * i128::from(NANOS_PER_SEC);
    total.clamp(0, i128::from(u64::MAX)) as u64
}

pub(super) fn next_pcapng(
    input: &mut Input,
    st: &mut NgState,
    packets: u64,
) -> Result<Option<Found>, Fail> {
    loop {
        match pcapng_block(input, st, packets)? {
            Block::Packet(p) => return Ok(Some(p)),
            Block::Other => {}
            Block::End => return Ok(None),
        }
    }
}

pub(super) enum Block {
    Packet(Found),
    Other,
    End,
}

/// Reads one pcapng block. `packets` is the number of packets before it (for messages).
pub(super) fn pcapng_block(
    input: &mut Input,
    st: &mut NgState,
    packets: u64,
) -> Result<Block, Fail> {
    let Some((btype, len, be)) = frame_block(input, st)? else {
        return Ok(Block::End);
    };
    let block = &input.available()[..len];
    let data_start = input.start;
    let result = match btype {
        SHB_MAGIC => section_header(block, st, be)?,
        IDB_MAGIC => interface_description(block, st, be)?,
        EPB_MAGIC | PB_MAGIC => packet_block(block, btype, st, be, packets, data_start)?,
        SPB_MAGIC => simple_packet(block, st, be, packets, data_start)?,
        // Name resolution, statistics, custom, decryption secrets, ...: skipped.
        _ => Block::Other,
    };
    input.consume(len);
    Ok(result)
}

/// Makes the next whole block available and checks its framing: returns its type, length and byte order
/// (a section header sets the order of its section), or `None` at a clean end of the input.
fn frame_block(input: &mut Input, st: &NgState) -> Result<Option<(u32, usize, bool)>, Fail> {
    if !input.fill(8)? {
        let avail = input.available();
        if avail.is_empty() {
            return Ok(None);
        }
        let within = if avail.len() >= 4 && is_packet_block(u32_at(avail, 0, st.big_endian)) {
            TruncatedIn::Packet
        } else {
            TruncatedIn::Block
        };
        return Err(Fail::Truncated(within));
    }
    let mut be = st.big_endian;
    let btype = u32_at(input.available(), 0, be);
    if btype == SHB_MAGIC {
        be = section_byte_order(input)?;
    }
    let len = u32_at(input.available(), 4, be);
    if len < 12 || len & 3 != 0 {
        return Err(Fail::Malformed(format!(
            "pcapng block of type 0x{btype:08x} has an invalid length {len}"
        )));
    }
    if len as usize > MAX_BLOCK_SIZE {
        return Err(Fail::TooLarge(u64::from(len)));
    }
    let len = len as usize;
    if !input.fill(len)? {
        let within = if is_packet_block(btype) {
            TruncatedIn::Packet
        } else {
            TruncatedIn::Block
        };
        return Err(Fail::Truncated(within));
    }
    let trailer = u32_at(&input.available()[..len], len - 4, be);
    if trailer as usize != len {
        return Err(Fail::Malformed(format!(
            "pcapng block of type 0x{btype:08x} has length {len} in its header \
             but {trailer} in its trailer"
        )));
    }
    Ok(Some((btype, len, be)))
}

/// The SHB magic reads the same in both byte orders; the byte-order magic that follows the length sets
/// the order of this section.
fn section_byte_order(input: &mut Input) -> Result<bool, Fail> {
    if !input.fill(12)? {
        return Err(Fail::Truncated(TruncatedIn::Block));
    }
    let bom = &input.available()[8..12];
    if u32_at(bom, 0, false) == BOM_MAGIC {
        Ok(false)
    } else if u32_at(bom, 0, true) == BOM_MAGIC {
        Ok(true)
    } else {
        Err(Fail::Malformed(format!(
            "section header block with an invalid byte-order magic 0x{:02x}{:02x}{:02x}{:02x}",
            bom[0], bom[1], bom[2], bom[3]
        )))
    }
}

fn section_header(block: &[u8], st: &mut NgState, be: bool) -> Result<Block, Fail> {
    let len = block.len();
    let (_, shb) = parse_sectionheaderblock(block)
        .map_err(|_| Fail::Malformed(format!("invalid section header block ({len} bytes)")))?;
    if shb.major_version != 1 {
        return Err(Fail::Malformed(format!(
            "unsupported pcapng version {}.{}",
            shb.major_version, shb.minor_version
        )));
    }
    st.big_endian = be;
    st.interfaces.clear();
    Ok(Block::Other)
}

fn interface_description(block: &[u8], st: &mut NgState, be: bool) -> Result<Block, Fail> {
    let len = block.len();
    if len < 20 {
        return Err(Fail::Malformed(format!(
            "interface description block too short ({len} bytes)"
        )));
    }
    let parsed = if be {
        parse_interfacedescriptionblock_be(block)
    } else {
        parse_interfacedescriptionblock_le(block)
    };
    let (_, idb) = parsed.map_err(|_| {
        Fail::Malformed(format!("invalid interface description block ({len} bytes)"))
    })?;
    if st.interfaces.len() >= MAX_INTERFACES {
        return Err(Fail::Malformed(format!(
            "more than {MAX_INTERFACES} interfaces in one section"
        )));
    }
    let iface = interface_from(&idb, be, st.interfaces.len())?;
    st.interfaces.push(iface);
    Ok(Block::Other)
}

/// An enhanced packet block, or the obsolete packet block (a 16-bit interface id, then a drops count).
fn packet_block(
    block: &[u8],
    btype: u32,
    st: &NgState,
    be: bool,
    packets: u64,
    data_start: usize,
) -> Result<Block, Fail> {
    let len = block.len();
    at_least(len, 32, "packet block", packets)?;
    let if_id = if btype == EPB_MAGIC {
        u32_at(block, 8, be)
    } else {
        u32::from(u16_at(block, 8, be))
    };
    let ts_high = u32_at(block, 12, be);
    let ts_low = u32_at(block, 16, be);
    let caplen = u32_at(block, 20, be);
    let orig_len = u32_at(block, 24, be);
    let room = (len - 32) as u64;
    if pad4(u64::from(caplen)) > room {
        return Err(Fail::Malformed(format!(
            "packet {}: captured length {caplen} does not fit in its {len}-byte block",
            packets + 1
        )));
    }
    let iface = interface(st, if_id)?;
    if btype == EPB_MAGIC {
        // Full validation by pcap-parser (lengths, options framing).
        let parsed = if be {
            parse_enhancedpacketblock_be(block)
        } else {
            parse_enhancedpacketblock_le(block)
        };
        parsed.map_err(|_| {
            Fail::Malformed(format!(
                "packet {}: invalid enhanced packet block ({len} bytes)",
                packets + 1
            ))
        })?;
    }
    let ts = (u64::from(ts_high) << 32) | u64::from(ts_low);
    Ok(Block::Packet(Found {
        ts_nanos: to_nanos(ts, iface.units_per_sec, iface.offset_secs),
        linktype: iface.linktype,
        interface: if_id,
        start: data_start + 28,
        len: caplen as usize,
        orig_len,
    }))
}

/// A packet block of `len` bytes is at least `min` long (`packets` before it, for the message).
fn at_least(len: usize, min: usize, what: &str, packets: u64) -> Result<(), Fail> {
    if len < min {
        return Err(Fail::Malformed(format!(
            "packet {}: {what} too short ({len} bytes)",
            packets + 1
        )));
    }
    Ok(())
}

fn simple_packet(
    block: &[u8],
    st: &NgState,
    be: bool,
    packets: u64,
    data_start: usize,
) -> Result<Block, Fail> {
    let len = block.len();
    at_least(len, 16, "simple packet block", packets)?;
    let parsed = if be {
        parse_simplepacketblock_be(block)
    } else {
        parse_simplepacketblock_le(block)
    };
    let (_, spb) = parsed.map_err(|_| {
        Fail::Malformed(format!(
            "packet {}: invalid simple packet block ({len} bytes)",
            packets + 1
        ))
    })?;
    let iface = interface(st, 0)?;
    // Captured length: the original length, cut to the snap length of interface 0 and to the data
    // actually present.
    let mut caplen = (spb.origlen as usize).min(len - 16);
    if iface.snaplen != 0 {
        caplen = caplen.min(iface.snaplen as usize);
    }
    Ok(Block::Packet(Found {
        ts_nanos: 0,
        linktype: iface.linktype,
        interface: 0,
        start: data_start + 12,
        len: caplen,
        orig_len: spb.origlen,
    }))
}

fn is_packet_block(btype: u32) -> bool {
    matches!(btype, EPB_MAGIC | SPB_MAGIC | PB_MAGIC)
}

fn interface(st: &NgState, if_id: u32) -> Result<&Interface, Fail> {
    st.interfaces
        .get(if_id as usize)
        .ok_or(Fail::UndeclaredInterface {
            interface: if_id,
            described: st.interfaces.len() as u32,
        })
}

/// Link type, snap length and timestamp options (if_tsresol, if_tsoffset) of an IDB.
fn interface_from(
    idb: &InterfaceDescriptionBlock<'_>,
    big_endian: bool,
    index: usize,
) -> Result<Interface, Fail> {
    let mut tsresol: u8 = 6;
    let mut offset_secs: i64 = 0;
    // Options with a wrong length are ignored (as Wireshark does).
    for opt in &idb.options {
        let v = opt.value();
        match opt.code.0 {
            9 if opt.len == 1 && !v.is_empty() => tsresol = v[0],
            14 if opt.len == 8 && v.len() >= 8 => {
                let a = [v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]];
                offset_secs = if big_endian {
                    i64::from_be_bytes(a)
                } else {
                    i64::from_le_bytes(a)
                };
            }
            _ => {}
        }
    }
    let exp = u32::from(tsresol & 0x7f);
    let units_per_sec = if tsresol & 0x80 != 0 {
        2u64.checked_pow(exp)
    } else {
        10u64.checked_pow(exp)
    };
    let Some(units_per_sec) = units_per_sec else {
        return Err(Fail::Malformed(format!(
            "interface {index} has an unsupported timestamp resolution (if_tsresol 0x{tsresol:02x})"
        )));
    };
    Ok(Interface {
        linktype: idb.linktype.0 as u16,
        snaplen: idb.snaplen,
        units_per_sec,
        offset_secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(to_nanos(1_500, 1_000, 0), 1_500_000_000);
        assert_eq!(to_nanos(1, 1 << 10, 0), 976_562);
        assert_eq!(to_nanos(1, 1, -2), 0);
        assert_eq!(to_nanos(u64::MAX, 1, i64::MAX), u64::MAX);
        assert_eq!(to_nanos(u64::MAX, 1 << 63, 0), 1_999_999_999);
    }
}

//! The injector's changes to an IPv4 datagram's bytes, with the checksums that must stay right kept right:
//! a CE mark (the ICRC masks the TOS byte, so only the IPv4 header checksum changes) and a flipped bit (the
//! ICRC then fails, which is the point; a UDP checksum, if the sender set one, is made right again so that the
//! packet reaches the RoCE receiver, whose ICRC check must drop it).
use parsers::ipv4;

/// Where the IPv4 header ends, when `datagram` starts with one that fits.
fn header_len(datagram: &[u8]) -> Option<usize> {
    let ihl = usize::from(datagram.first()? & 0x0F) * 4;
    (ihl >= 20 && datagram.len() >= ihl).then_some(ihl)
}

fn set_ip_checksum(datagram: &mut [u8], ihl: usize) {
    if let Some(c) = datagram.get_mut(10..12) {
        c.copy_from_slice(&[0, 0]);
    }
    let sum = ipv4::checksum(datagram.get(..ihl).unwrap_or_default());
    if let Some(c) = datagram.get_mut(10..12) {
        c.copy_from_slice(&sum.to_be_bytes());
    }
}

/// Sets the ECN field to CE (3); returns the ECN it had (`None`: no IPv4 header to mark).
pub fn mark_ce(datagram: &mut [u8]) -> Option<u8> {
    let ihl = header_len(datagram)?;
    let tos = datagram.get_mut(1)?;
    let before = *tos & 3;
    *tos |= 3;
    set_ip_checksum(datagram, ihl);
    Some(before)
}

/// Flips the lowest bit of the last byte before the ICRC (the payload's last, or the last header's for a
/// packet without payload): the ICRC no longer matches. Returns the offset of the byte flipped.
pub fn corrupt(datagram: &mut [u8]) -> Option<usize> {
    let ihl = header_len(datagram)?;
    // UDP header + BTH + ICRC at least.
    let at = datagram
        .len()
        .checked_sub(5)
        .filter(|at| *at >= ihl + 8 + 12)?;
    *datagram.get_mut(at)? ^= 1;
    let udp_checksum = datagram.get(ihl + 6..ihl + 8).map(|c| [c[0], c[1]]);
    if udp_checksum.is_some_and(|c| c != [0, 0]) {
        set_udp_checksum(datagram, ihl);
    }
    Some(at)
}

/// The UDP checksum over the pseudo-header and the datagram's UDP part (RFC 768; 0 is sent as 0xFFFF).
fn set_udp_checksum(datagram: &mut [u8], ihl: usize) {
    let Some(udp_len) = datagram.len().checked_sub(ihl) else {
        return;
    };
    if let Some(c) = datagram.get_mut(ihl + 6..ihl + 8) {
        c.copy_from_slice(&[0, 0]);
    }
    let mut pseudo = Vec::with_capacity(12 + udp_len);
    pseudo.extend_from_slice(datagram.get(12..20).unwrap_or_default());
    pseudo.extend_from_slice(&[0, ipv4::PROTO_UDP]);
    pseudo.extend_from_slice(&(udp_len as u16).to_be_bytes());
    pseudo.extend_from_slice(datagram.get(ihl..).unwrap_or_default());
    let sum = match ipv4::checksum(&pseudo) {
        0 => 0xFFFF,
        s => s,
    };
    if let Some(c) = datagram.get_mut(ihl + 6..ihl + 8) {
        c.copy_from_slice(&sum.to_be_bytes());
    }
}

//! Big-endian field readers with the crate's nom error type fixed, so header parsers read as a layout.
use nom::IResult;
use nom::number::complete as num;

pub(crate) type In<'a> = &'a [u8];
pub(crate) type Res<'a, T> = IResult<In<'a>, T, nom::error::Error<In<'a>>>;

pub(crate) fn u8(i: In) -> Res<u8> {
    num::be_u8(i)
}
pub(crate) fn u16(i: In) -> Res<u16> {
    num::be_u16(i)
}
pub(crate) fn u24(i: In) -> Res<u32> {
    num::be_u24(i)
}
pub(crate) fn u32(i: In) -> Res<u32> {
    num::be_u32(i)
}
pub(crate) fn u64(i: In) -> Res<u64> {
    num::be_u64(i)
}
pub(crate) fn mac(i: In) -> Res<[u8; 6]> {
    array::<6>(i)
}
pub(crate) fn array<const N: usize>(i: In) -> Res<[u8; N]> {
    let (rest, bytes) = nom::bytes::complete::take(N)(i)?;
    let mut out = [0u8; N];
    out.copy_from_slice(bytes);
    Ok((rest, out))
}

/// Appends a 24-bit big-endian value (the top byte of `v` is ignored).
pub(crate) fn put_u24(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes()[1..]);
}

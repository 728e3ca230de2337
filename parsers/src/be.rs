//! Big-endian field readers in nom's parser shape (`input -> IResult`), so header parsers are nom tuples
//! that read as the layout. They read through fixed-size chunks: nom's generic number parsers go through
//! its `Input` trait, which costs more than the rest of a header parse.
use nom::IResult;
use nom::error::{Error, ErrorKind};

pub(crate) type In<'a> = &'a [u8];
pub(crate) type Res<'a, T> = IResult<In<'a>, T, Error<In<'a>>>;

#[inline]
pub(crate) fn array<const N: usize>(i: In) -> Res<[u8; N]> {
    match i.split_first_chunk::<N>() {
        Some((bytes, rest)) => Ok((rest, *bytes)),
        None => Err(nom::Err::Error(Error::new(i, ErrorKind::Eof))),
    }
}

#[inline]
pub(crate) fn u8(i: In) -> Res<u8> {
    array::<1>(i).map(|(r, [b])| (r, b))
}

#[inline]
pub(crate) fn u16(i: In) -> Res<u16> {
    array::<2>(i).map(|(r, b)| (r, u16::from_be_bytes(b)))
}

#[inline]
pub(crate) fn u24(i: In) -> Res<u32> {
    array::<3>(i).map(|(r, [a, b, c])| (r, u32::from_be_bytes([0, a, b, c])))
}

#[inline]
pub(crate) fn u32(i: In) -> Res<u32> {
    array::<4>(i).map(|(r, b)| (r, u32::from_be_bytes(b)))
}

#[inline]
pub(crate) fn u64(i: In) -> Res<u64> {
    array::<8>(i).map(|(r, b)| (r, u64::from_be_bytes(b)))
}

#[inline]
pub(crate) fn mac(i: In) -> Res<[u8; 6]> {
    array::<6>(i)
}

/// Appends a 24-bit big-endian value (the top byte of `v` is ignored).
pub(crate) fn put_u24(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes()[1..]);
}

/// The next `n` bytes as a slice (variable-length data fields: private data, reject information).
pub(crate) fn bytes<'a>(n: usize) -> impl Fn(In<'a>) -> Res<'a, In<'a>> {
    move |i: In<'a>| match i.split_at_checked(n) {
        Some((taken, rest)) => Ok((rest, taken)),
        None => Err(nom::Err::Error(Error::new(i, ErrorKind::Eof))),
    }
}

/// Appends `data` as a field of exactly `len` bytes: cut if longer, zero-filled if shorter.
pub(crate) fn put_field(out: &mut Vec<u8>, data: &[u8], len: usize) {
    let kept = data.get(..len).unwrap_or(data);
    out.extend_from_slice(kept);
    out.extend(core::iter::repeat_n(0u8, len - kept.len()));
}

//! nom parsers for Kafka's primitive types, over byte slices.
//!
//! Each parser takes the remaining input and returns the rest and the value; values
//! borrow from the input (strings and bytes are never copied). Lengths are checked
//! against the bytes left before anything is sized from them. Source: Kafka's protocol
//! guide ("Protocol Primitive Types") and `ByteUtils` for the varint encodings.
//!
//! The walk in [`crate::decode`] turns a parser's consumed length into an absolute
//! offset and size.

use nom::error::{ErrorKind, ParseError};
use nom::number::complete as num;
use nom::{IResult, Parser};

/// Why a primitive could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireErrorKind {
    /// The input ended: `need` bytes were wanted, `have` were left.
    Eof {
        /// Bytes the primitive needs.
        need: u64,
        /// Bytes left in the input.
        have: usize,
    },
    /// A varint with its continuation bit set past `max` bytes (5 for varint, 10 for varlong).
    VarintTooLong {
        /// The longest legal encoding.
        max: usize,
    },
    /// A varint whose continuation bits run to the end of the input.
    VarintCut,
    /// A negative length other than the null marker.
    NegativeLength(i64),
    /// String bytes that are not UTF-8.
    Utf8,
    /// Any other nom failure.
    Nom(ErrorKind),
}

/// A primitive's error, with the input where it stopped (for the offset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError<'a> {
    /// The remaining input at the failing primitive.
    pub input: &'a [u8],
    /// What went wrong.
    pub kind: WireErrorKind,
}

impl<'a> ParseError<&'a [u8]> for WireError<'a> {
    fn from_error_kind(input: &'a [u8], kind: ErrorKind) -> Self {
        WireError {
            input,
            kind: WireErrorKind::Nom(kind),
        }
    }
    fn append(_: &'a [u8], _: ErrorKind, other: Self) -> Self {
        other
    }
}

impl std::fmt::Display for WireErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireErrorKind::Eof { need, have } => write!(f, "needs {need} bytes, {have} left"),
            WireErrorKind::VarintTooLong { max } => write!(f, "varint longer than {max} bytes"),
            WireErrorKind::VarintCut => write!(f, "varint cut by the end of input"),
            WireErrorKind::NegativeLength(n) => write!(f, "negative length {n}"),
            WireErrorKind::Utf8 => write!(f, "string is not valid UTF-8"),
            WireErrorKind::Nom(k) => write!(f, "parse error ({k:?})"),
        }
    }
}

/// The result type of every parser here.
pub type WResult<'a, T> = IResult<&'a [u8], T, WireError<'a>>;

fn fail<T>(input: &[u8], kind: WireErrorKind) -> WResult<'_, T> {
    Err(nom::Err::Error(WireError { input, kind }))
}

fn need(input: &[u8], n: u64) -> Result<(), nom::Err<WireError<'_>>> {
    if (input.len() as u64) < n {
        Err(nom::Err::Error(WireError {
            input,
            kind: WireErrorKind::Eof {
                need: n,
                have: input.len(),
            },
        }))
    } else {
        Ok(())
    }
}

macro_rules! fixed {
    ($(#[$m:meta])* $name:ident, $t:ty, $n:expr, $p:path) => {
        $(#[$m])*
        pub fn $name(i: &[u8]) -> WResult<'_, $t> {
            need(i, $n)?;
            $p(i)
        }
    };
}

fixed!(/// `int8`.
    int8, i8, 1, num::be_i8);
fixed!(/// `int16`, big-endian.
    int16, i16, 2, num::be_i16);
fixed!(/// `uint16`, big-endian.
    uint16, u16, 2, num::be_u16);
fixed!(/// `int32`, big-endian.
    int32, i32, 4, num::be_i32);
fixed!(/// `uint32`, big-endian.
    uint32, u32, 4, num::be_u32);
fixed!(/// `int64`, big-endian.
    int64, i64, 8, num::be_i64);
fixed!(/// `float64`, IEEE 754 big-endian.
    float64, f64, 8, num::be_f64);

/// `bool`: one byte; any non-zero byte is true (as Kafka's `readBoolean`).
pub fn boolean(i: &[u8]) -> WResult<'_, bool> {
    need(i, 1)?;
    num::u8.map(|b| b != 0).parse(i)
}

/// `uuid`: 16 bytes.
pub fn uuid(i: &[u8]) -> WResult<'_, uuid::Uuid> {
    need(i, 16)?;
    let (rest, b) = nom::bytes::complete::take(16usize)(i)?;
    let mut a = [0u8; 16];
    a.copy_from_slice(b);
    Ok((rest, uuid::Uuid::from_bytes(a)))
}

/// Raw bytes of a known length (already checked non-negative).
pub fn take(n: u64) -> impl Fn(&[u8]) -> WResult<'_, &[u8]> {
    move |i: &[u8]| {
        need(i, n)?;
        nom::bytes::complete::take(n as usize)(i)
    }
}

/// `uvarint` (unsigned LEB128, at most 5 bytes for 32 bits).
///
/// # Errors
/// `VarintTooLong` past 5 bytes, `VarintCut` when the input ends mid-varint.
pub fn uvarint(i: &[u8]) -> WResult<'_, u32> {
    let (rest, v) = uvarlong_max(i, 5)?;
    if v > u32::MAX as u64 {
        return fail(i, WireErrorKind::VarintTooLong { max: 5 });
    }
    Ok((rest, v as u32))
}

/// `uvarlong` (unsigned LEB128, at most 10 bytes).
pub fn uvarlong(i: &[u8]) -> WResult<'_, u64> {
    uvarlong_max(i, 10)
}

fn uvarlong_max(i: &[u8], max: usize) -> WResult<'_, u64> {
    let mut v: u64 = 0;
    for (n, b) in i.iter().enumerate() {
        if n >= max {
            return fail(i, WireErrorKind::VarintTooLong { max });
        }
        let shift = 7 * n as u32;
        v |= ((b & 0x7f) as u64).checked_shl(shift).unwrap_or(0);
        if b & 0x80 == 0 {
            return Ok((&i[n + 1..], v));
        }
    }
    if i.len() >= max {
        fail(i, WireErrorKind::VarintTooLong { max })
    } else {
        fail(i, WireErrorKind::VarintCut)
    }
}

/// `varint`: zigzag-encoded signed 32-bit (Kafka's record fields).
pub fn varint(i: &[u8]) -> WResult<'_, i32> {
    let (rest, v) = uvarint(i)?;
    Ok((rest, ((v >> 1) as i32) ^ -((v & 1) as i32)))
}

/// `varlong`: zigzag-encoded signed 64-bit.
pub fn varlong(i: &[u8]) -> WResult<'_, i64> {
    let (rest, v) = uvarlong(i)?;
    Ok((rest, ((v >> 1) as i64) ^ -((v & 1) as i64)))
}

/// How a variable-length value's length was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LenPrefix {
    /// int16 length (strings), -1 for null.
    Int16,
    /// int32 length (bytes, arrays), -1 for null.
    Int32,
    /// uvarint length + 1, 0 for null (compact strings, bytes and arrays).
    Compact,
    /// zigzag varint length, -1 for null (record keys, values and headers).
    Varint,
}

/// A length prefix as read: the raw number and the length it means (`None` = null).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Len {
    /// The number as written (for compact: length + 1).
    pub raw: i64,
    /// The length, or `None` for null.
    pub len: Option<u64>,
}

/// Reads a length prefix of kind `p`.
///
/// # Errors
/// A negative length other than the null marker.
pub fn length(p: LenPrefix) -> impl Fn(&[u8]) -> WResult<'_, Len> {
    move |i: &[u8]| {
        let (rest, raw) = match p {
            LenPrefix::Int16 => int16(i).map(|(r, v)| (r, v as i64))?,
            LenPrefix::Int32 => int32(i).map(|(r, v)| (r, v as i64))?,
            LenPrefix::Compact => uvarint(i).map(|(r, v)| (r, v as i64))?,
            LenPrefix::Varint => varint(i).map(|(r, v)| (r, v as i64))?,
        };
        let len = match p {
            LenPrefix::Compact => (raw > 0).then(|| (raw - 1) as u64),
            _ if raw == -1 => None,
            _ if raw < 0 => return fail(i, WireErrorKind::NegativeLength(raw)),
            _ => Some(raw as u64),
        };
        Ok((rest, Len { raw, len }))
    }
}

/// A length-prefixed byte string (`None` = null); the length is checked against the
/// bytes left before the slice is taken.
pub fn sized(p: LenPrefix) -> impl Fn(&[u8]) -> WResult<'_, (Len, Option<&[u8]>)> {
    move |i: &[u8]| {
        let (rest, l) = length(p)(i)?;
        match l.len {
            None => Ok((rest, (l, None))),
            Some(n) => {
                let (rest2, b) = take(n)(rest)?;
                Ok((rest2, (l, Some(b))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        assert_eq!(uvarint(&[0x00]).unwrap().1, 0);
        assert_eq!(uvarint(&[0x96, 0x01]).unwrap().1, 150);
        assert_eq!(varint(&[0x01]).unwrap().1, -1);
        assert_eq!(varint(&[0x02]).unwrap().1, 1);
        assert_eq!(varlong(&[0x03]).unwrap().1, -2);
        let e = uvarint(&[0x80, 0x80]).unwrap_err();
        assert!(matches!(
            e,
            nom::Err::Error(WireError {
                kind: WireErrorKind::VarintCut,
                ..
            })
        ));
        let e = uvarint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]).unwrap_err();
        assert!(matches!(
            e,
            nom::Err::Error(WireError {
                kind: WireErrorKind::VarintTooLong { max: 5 },
                ..
            })
        ));
        assert!(uvarlong(&[0xff; 11]).is_err());
        assert_eq!(
            uvarlong(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])
                .unwrap()
                .1,
            u64::MAX
        );
        // 5-byte varint above u32 is too long for 32 bits
        assert!(uvarint(&[0xff, 0xff, 0xff, 0xff, 0x7f]).is_err());
    }

    #[test]
    fn lengths() {
        let (_, (l, b)) = sized(LenPrefix::Int16)(&[0, 2, b'h', b'i']).unwrap();
        assert_eq!((l.raw, b), (2, Some(&b"hi"[..])));
        let (_, (l, b)) = sized(LenPrefix::Compact)(&[0]).unwrap();
        assert_eq!((l.raw, b), (0, None));
        let (_, (_, b)) = sized(LenPrefix::Int32)(&[0xff, 0xff, 0xff, 0xff]).unwrap();
        assert_eq!(b, None);
        assert!(sized(LenPrefix::Int32)(&[0xff, 0xff, 0xff, 0xfe]).is_err());
        // huge length with few bytes: an error, no allocation
        let e = sized(LenPrefix::Int32)(&[0x7f, 0xff, 0xff, 0xff, 1]).unwrap_err();
        assert!(matches!(
            e,
            nom::Err::Error(WireError {
                kind: WireErrorKind::Eof {
                    need: 2147483647,
                    have: 1
                },
                ..
            })
        ));
    }
}

//! A MessagePack document read as a stream of values, as far as the AMDGPU
//! metadata note needs: the markers come from `rmp`, the walk is done here
//! with its bounds. The caller asks for one value at a time
//! ([`Reader::next`]): a scalar whole, a map or an array by its count, whose
//! elements follow; what it does not need it skips ([`Reader::skip`]),
//! checked as it goes. Nothing is built that grows with the document:
//! whatever counts it declares, memory stays at what the caller keeps.
//! Strings borrow from the input; a nesting depth over [`MAX_DEPTH`], a
//! length past the end of the input or a reserved marker is an error.

use rmp::Marker;

use crate::bytes::be;
use crate::error::{Error, Result};

/// How deep arrays and maps may nest (the metadata nests four levels).
pub(super) const MAX_DEPTH: usize = 32;

/// One scalar value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Value<'a> {
    Nil,
    Bool(bool),
    /// Every integer that fits; negative ones are kept apart.
    Uint(u64),
    Int(i64),
    Float(f64),
    Str(&'a [u8]),
    /// Binary data and extension types: their bytes.
    Bytes(&'a [u8]),
}

impl<'a> Value<'a> {
    /// A non-negative integer.
    pub(super) fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Uint(n) => Some(n),
            Value::Int(n) => u64::try_from(n).ok(),
            _ => None,
        }
    }

    /// A string, as text.
    pub(super) fn as_str(&self) -> Option<&'a str> {
        match *self {
            Value::Str(s) => std::str::from_utf8(s).ok(),
            _ => None,
        }
    }

    /// A boolean.
    pub(super) fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }
}

/// What [`Reader::next`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Next<'a> {
    /// A scalar, read whole.
    Scalar(Value<'a>),
    /// An array of this many elements, which follow.
    Array(usize),
    /// A map of this many key-value pairs, which follow (key first).
    Map(usize),
}

impl<'a> Next<'a> {
    /// The scalar, or `None` for an array or a map.
    pub(super) fn scalar(self) -> Option<Value<'a>> {
        match self {
            Next::Scalar(v) => Some(v),
            Next::Array(_) | Next::Map(_) => None,
        }
    }
}

fn damaged(detail: impl Into<String>) -> Error {
    Error::invalid("MessagePack metadata", detail)
}

/// A position in a MessagePack document.
pub(super) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `data`.
    pub(super) fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| damaged(format!("{n} bytes at offset {} run past the end", self.pos)))?;
        let b = &self.data[self.pos..end];
        self.pos = end;
        Ok(b)
    }

    fn be<const N: usize>(&mut self) -> Result<[u8; N]> {
        let b = self.take(N)?;
        Ok(b.try_into().unwrap_or([0; N]))
    }

    fn len(&mut self, bytes: usize) -> Result<usize> {
        let n = match bytes {
            1 => u32::from(self.be::<1>()?[0]),
            2 => u32::from(be::<u16>(self.be()?)),
            _ => be::<u32>(self.be()?),
        };
        usize::try_from(n).map_err(|_| damaged("a length too large for this machine"))
    }

    /// A length of `width` bytes, then that many bytes.
    fn sized(&mut self, width: usize) -> Result<&'a [u8]> {
        let n = self.len(width)?;
        self.take(n)
    }

    /// The next value: a scalar whole, or an array's or a map's count (the
    /// elements are the next values).
    pub(super) fn next(&mut self) -> Result<Next<'a>> {
        let at = self.pos;
        let marker = Marker::from_u8(self.be::<1>()?[0]);
        let scalar = match marker {
            Marker::Null => Value::Nil,
            Marker::True => Value::Bool(true),
            Marker::False => Value::Bool(false),
            Marker::FixPos(n) => Value::Uint(u64::from(n)),
            Marker::FixNeg(n) => Value::Int(i64::from(n)),
            Marker::U8 => Value::Uint(u64::from(self.be::<1>()?[0])),
            Marker::U16 => Value::Uint(u64::from(be::<u16>(self.be()?))),
            Marker::U32 => Value::Uint(u64::from(be::<u32>(self.be()?))),
            Marker::U64 => Value::Uint(be::<u64>(self.be()?)),
            Marker::I8 => Value::Int(i64::from(be::<i8>(self.be()?))),
            Marker::I16 => Value::Int(i64::from(be::<i16>(self.be()?))),
            Marker::I32 => Value::Int(i64::from(be::<i32>(self.be()?))),
            Marker::I64 => Value::Int(be::<i64>(self.be()?)),
            Marker::F32 => Value::Float(f64::from(be::<f32>(self.be()?))),
            Marker::F64 => Value::Float(be::<f64>(self.be()?)),
            Marker::FixStr(n) => Value::Str(self.take(usize::from(n))?),
            Marker::Str8 => Value::Str(self.sized(1)?),
            Marker::Str16 => Value::Str(self.sized(2)?),
            Marker::Str32 => Value::Str(self.sized(4)?),
            Marker::Bin8 => Value::Bytes(self.sized(1)?),
            Marker::Bin16 => Value::Bytes(self.sized(2)?),
            Marker::Bin32 => Value::Bytes(self.sized(4)?),
            Marker::FixExt1 => self.ext(1)?,
            Marker::FixExt2 => self.ext(2)?,
            Marker::FixExt4 => self.ext(4)?,
            Marker::FixExt8 => self.ext(8)?,
            Marker::FixExt16 => self.ext(16)?,
            Marker::Ext8 => self.ext_sized(1)?,
            Marker::Ext16 => self.ext_sized(2)?,
            Marker::Ext32 => self.ext_sized(4)?,
            Marker::FixArray(n) => return Ok(Next::Array(usize::from(n))),
            Marker::Array16 => return Ok(Next::Array(self.len(2)?)),
            Marker::Array32 => return Ok(Next::Array(self.len(4)?)),
            Marker::FixMap(n) => return Ok(Next::Map(usize::from(n))),
            Marker::Map16 => return Ok(Next::Map(self.len(2)?)),
            Marker::Map32 => return Ok(Next::Map(self.len(4)?)),
            Marker::Reserved => return Err(damaged(format!("reserved marker at offset {at}"))),
        };
        Ok(Next::Scalar(scalar))
    }

    /// Skips the elements of `next` (a value [`Reader::next`] just read:
    /// nothing for a scalar), `depth` levels deep, each checked.
    pub(super) fn skip_rest(&mut self, next: Next<'a>, depth: usize) -> Result<()> {
        let values = match next {
            Next::Scalar(_) => return Ok(()),
            Next::Array(n) => n,
            Next::Map(n) => n
                .checked_mul(2)
                .ok_or_else(|| damaged("a map of more pairs than this machine counts"))?,
        };
        if depth >= MAX_DEPTH {
            return Err(damaged(format!("nested more than {MAX_DEPTH} levels")));
        }
        for _ in 0..values {
            self.skip(depth + 1)?;
        }
        Ok(())
    }

    /// Skips the next value whole, `depth` levels deep, checked.
    pub(super) fn skip(&mut self, depth: usize) -> Result<()> {
        let next = self.next()?;
        self.skip_rest(next, depth)
    }

    /// An extension value of `n` data bytes after its type byte.
    fn ext(&mut self, n: usize) -> Result<Value<'a>> {
        self.take(1)?;
        Ok(Value::Bytes(self.take(n)?))
    }

    /// An extension value whose data length takes `width` bytes.
    fn ext_sized(&mut self, width: usize) -> Result<Value<'a>> {
        let n = self.len(width)?;
        self.ext(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a whole document, every value checked.
    fn check(doc: &[u8]) -> Result<()> {
        Reader::new(doc).skip(0)
    }

    #[test]
    fn reads_maps_arrays_and_scalars_one_value_at_a_time() {
        // {"a": [1, -1, true, nil, "xy"], "b": {"c": 300}}
        let doc = [
            0x82, 0xa1, b'a', 0x95, 0x01, 0xff, 0xc3, 0xc0, 0xa2, b'x', b'y', 0xa1, b'b', 0x81,
            0xa1, b'c', 0xcd, 0x01, 0x2c,
        ];
        let mut r = Reader::new(&doc);
        assert_eq!(r.next().unwrap(), Next::Map(2));
        assert_eq!(
            r.next().unwrap().scalar().and_then(|v| v.as_str()),
            Some("a")
        );
        assert_eq!(r.next().unwrap(), Next::Array(5));
        let mut scalars = Vec::new();
        for _ in 0..5 {
            scalars.push(r.next().unwrap().scalar().unwrap());
        }
        assert_eq!(scalars[0].as_u64(), Some(1));
        assert_eq!(scalars[1], Value::Int(-1));
        assert_eq!(scalars[2].as_bool(), Some(true));
        assert_eq!(scalars[3], Value::Nil);
        assert_eq!(scalars[4].as_str(), Some("xy"));
        // "b" and its map skipped whole: nothing is left.
        r.skip(1).unwrap();
        r.skip(1).unwrap();
        assert!(r.next().is_err());
        assert!(check(&doc).is_ok());
    }

    #[test]
    fn declared_lengths_past_the_end_are_errors() {
        // An array32 of 4 billion elements in 5 bytes; a str32 likewise.
        for doc in [
            &[0xdd, 0xff, 0xff, 0xff, 0xff][..],
            &[0xdb, 0xff, 0xff, 0xff, 0xff],
        ] {
            assert!(check(doc).is_err());
        }
        // Every prefix of a good document is an error, never a panic.
        let doc = [0x81, 0xa1, b'k', 0x92, 0xcd, 0x01, 0x2c, 0xa1, b'v'];
        for n in 0..doc.len() {
            assert!(check(&doc[..n]).is_err(), "prefix {n}");
        }
        assert!(check(&doc).is_ok());
    }

    #[test]
    fn deep_nesting_is_an_error() {
        let doc = vec![0x91; 10_000];
        let e = check(&doc).unwrap_err().to_string();
        assert!(e.contains("nested more than"), "{e}");
    }

    #[test]
    fn a_reserved_marker_in_a_skipped_value_is_an_error() {
        // {"k": [1, 0xc1]}: 0xc1 is never used.
        let doc = [0x81, 0xa1, b'k', 0x92, 0x01, 0xc1];
        let e = check(&doc).unwrap_err().to_string();
        assert!(e.contains("reserved marker at offset 5"), "{e}");
    }
}

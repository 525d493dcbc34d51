//! A MessagePack document read into a tree, as far as the AMDGPU metadata
//! note needs: the markers come from `rmp`, the tree is built here with
//! its bounds. Strings borrow from the input; a nesting depth over
//! [`MAX_DEPTH`], a length past the end of the input or a reserved marker
//! is an error, and no count declared by the input is trusted for an
//! allocation before its elements have been read.

use rmp::Marker;

use crate::error::{Error, Result};

/// How deep arrays and maps may nest (the metadata nests four levels).
pub(super) const MAX_DEPTH: usize = 32;

/// One value.
#[derive(Debug, Clone, PartialEq)]
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
    Array(Vec<Value<'a>>),
    Map(Vec<(Value<'a>, Value<'a>)>),
}

impl<'a> Value<'a> {
    /// The value of key `key` in a map whose keys are strings.
    pub(super) fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Value::Map(m) => m
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if *s == key.as_bytes()))
                .map(|(_, v)| v),
            _ => None,
        }
    }

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

    /// The elements of an array.
    pub(super) fn as_array(&self) -> Option<&[Value<'a>]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

fn damaged(detail: impl Into<String>) -> Error {
    Error::invalid("MessagePack metadata", detail)
}

/// Reads one value from the start of `data`; what follows it is ignored.
pub(super) fn read(data: &[u8]) -> Result<Value<'_>> {
    let mut r = Reader { data, pos: 0 };
    r.value(0)
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
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
            2 => u32::from(u16::from_be_bytes(self.be()?)),
            _ => u32::from_be_bytes(self.be()?),
        };
        usize::try_from(n).map_err(|_| damaged("a length too large for this machine"))
    }

    /// A length of `width` bytes, then that many bytes.
    fn sized(&mut self, width: usize) -> Result<&'a [u8]> {
        let n = self.len(width)?;
        self.take(n)
    }

    fn value(&mut self, depth: usize) -> Result<Value<'a>> {
        if depth > MAX_DEPTH {
            return Err(damaged(format!("nested more than {MAX_DEPTH} levels")));
        }
        let at = self.pos;
        let marker = Marker::from_u8(self.be::<1>()?[0]);
        Ok(match marker {
            Marker::Null => Value::Nil,
            Marker::True => Value::Bool(true),
            Marker::False => Value::Bool(false),
            Marker::FixPos(n) => Value::Uint(u64::from(n)),
            Marker::FixNeg(n) => Value::Int(i64::from(n)),
            Marker::U8 => Value::Uint(u64::from(self.be::<1>()?[0])),
            Marker::U16 => Value::Uint(u64::from(u16::from_be_bytes(self.be()?))),
            Marker::U32 => Value::Uint(u64::from(u32::from_be_bytes(self.be()?))),
            Marker::U64 => Value::Uint(u64::from_be_bytes(self.be()?)),
            Marker::I8 => Value::Int(i64::from(i8::from_be_bytes(self.be()?))),
            Marker::I16 => Value::Int(i64::from(i16::from_be_bytes(self.be()?))),
            Marker::I32 => Value::Int(i64::from(i32::from_be_bytes(self.be()?))),
            Marker::I64 => Value::Int(i64::from_be_bytes(self.be()?)),
            Marker::F32 => Value::Float(f64::from(f32::from_be_bytes(self.be()?))),
            Marker::F64 => Value::Float(f64::from_be_bytes(self.be()?)),
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
            Marker::FixArray(n) => self.array(usize::from(n), depth)?,
            Marker::Array16 => {
                let n = self.len(2)?;
                self.array(n, depth)?
            }
            Marker::Array32 => {
                let n = self.len(4)?;
                self.array(n, depth)?
            }
            Marker::FixMap(n) => self.map(usize::from(n), depth)?,
            Marker::Map16 => {
                let n = self.len(2)?;
                self.map(n, depth)?
            }
            Marker::Map32 => {
                let n = self.len(4)?;
                self.map(n, depth)?
            }
            Marker::Reserved => return Err(damaged(format!("reserved marker at offset {at}"))),
        })
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

    /// Room for `n` elements of at least `min` bytes each, as far as the
    /// bytes left can hold them.
    fn capacity(&self, n: usize, min: usize) -> usize {
        n.min((self.data.len() - self.pos) / min)
    }

    fn array(&mut self, n: usize, depth: usize) -> Result<Value<'a>> {
        let mut v = Vec::with_capacity(self.capacity(n, 1));
        for _ in 0..n {
            v.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(v))
    }

    fn map(&mut self, n: usize, depth: usize) -> Result<Value<'a>> {
        let mut v = Vec::with_capacity(self.capacity(n, 2));
        for _ in 0..n {
            let k = self.value(depth + 1)?;
            v.push((k, self.value(depth + 1)?));
        }
        Ok(Value::Map(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_maps_arrays_and_scalars() {
        // {"a": [1, -1, true, nil, "xy"], "b": {"c": 300}}
        let doc = [
            0x82, 0xa1, b'a', 0x95, 0x01, 0xff, 0xc3, 0xc0, 0xa2, b'x', b'y', 0xa1, b'b', 0x81,
            0xa1, b'c', 0xcd, 0x01, 0x2c,
        ];
        let v = read(&doc).unwrap();
        let a = v.get("a").and_then(Value::as_array).unwrap();
        assert_eq!(a[0].as_u64(), Some(1));
        assert_eq!(a[1], Value::Int(-1));
        assert_eq!(a[2].as_bool(), Some(true));
        assert_eq!(a[4].as_str(), Some("xy"));
        assert_eq!(
            v.get("b").and_then(|b| b.get("c")).and_then(Value::as_u64),
            Some(300)
        );
    }

    #[test]
    fn declared_lengths_past_the_end_are_errors() {
        // An array32 of 4 billion elements in 5 bytes; a str32 likewise.
        for doc in [
            &[0xdd, 0xff, 0xff, 0xff, 0xff][..],
            &[0xdb, 0xff, 0xff, 0xff, 0xff],
        ] {
            assert!(read(doc).is_err());
        }
        // Every prefix of a good document is an error, never a panic.
        let doc = [0x81, 0xa1, b'k', 0x92, 0xcd, 0x01, 0x2c, 0xa1, b'v'];
        for n in 0..doc.len() {
            assert!(read(&doc[..n]).is_err(), "prefix {n}");
        }
        assert!(read(&doc).is_ok());
    }

    #[test]
    fn deep_nesting_is_an_error() {
        let doc = vec![0x91; 10_000];
        let e = read(&doc).unwrap_err().to_string();
        assert!(e.contains("nested more than"), "{e}");
    }
}

//! A byte cursor for the format readers.
//!
//! Every reader in the crate takes its fields out of untrusted bytes: offsets
//! and sizes read from one place say where to read next. [`Bytes`] keeps that
//! arithmetic in one place. Positions and lengths are `u64`, the type the
//! formats store them in; a read that would pass the end of the data (or
//! overflow on the way there) returns `None` and leaves the cursor where it
//! was, so a reader never panics and can still say at which offset it
//! stopped. The caller turns `None` into its own error, with its own words.
//!
//! Readers that work at fixed offsets of a slice use [`le_at`] (and
//! [`at_in_order`] where the file says its byte order); code that already holds a field's bytes as an array (the hot
//! loops of the LZ4 decoder, the bitcode bit reader, LLVM's hash) turns it
//! into a number with [`le`] or [`be`]. This is the one file that calls
//! the standard `from_le_bytes` family (scripts/module-graph.py checks it).

use zerocopy::FromBytes;
use zerocopy::little_endian::{U32, U64};

use crate::num::{len64, u64_from, usize_from};

/// A position in a byte slice, moved forward by reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bytes<'data> {
    data: &'data [u8],
    /// Never past the end of `data`.
    pos: u64,
}

impl<'data> Bytes<'data> {
    /// A cursor at the start of `data`.
    pub(crate) fn new(data: &'data [u8]) -> Self {
        Bytes { data, pos: 0 }
    }

    /// The offset of the next read.
    pub(crate) fn position(&self) -> u64 {
        self.pos
    }

    /// The bytes from the position to the end.
    pub(crate) fn rest(&self) -> &'data [u8] {
        // `pos <= data.len()`, so `get` always succeeds.
        self.data.get(usize_from(self.pos)..).unwrap_or_default()
    }

    /// Moves `n` bytes forward; `None` (and no move) when fewer remain.
    pub(crate) fn skip(&mut self, n: u64) -> Option<()> {
        self.read_bytes(n).map(|_| ())
    }

    /// The next `n` bytes; `None` (and no move) when fewer remain.
    pub(crate) fn read_bytes(&mut self, n: u64) -> Option<&'data [u8]> {
        let b = self.read_at(self.pos, n)?;
        self.pos += n;
        Some(b)
    }

    /// The `n` bytes at `offset`, wherever the cursor is (it does not move);
    /// `None` when they are not all inside the data.
    pub(crate) fn read_at(&self, offset: u64, n: u64) -> Option<&'data [u8]> {
        let end = offset.checked_add(n).filter(|&e| e <= len64(self.data))?;
        self.data.get(usize_from(offset)..usize_from(end))
    }

    /// The bytes from `offset` to the end (the cursor does not move);
    /// `None` when `offset` is past the end.
    pub(crate) fn tail_at(&self, offset: u64) -> Option<&'data [u8]> {
        let n = len64(self.data).checked_sub(offset)?;
        self.read_at(offset, n)
    }

    /// The next `size_of::<T>()` bytes as a `T`: a layout of the format
    /// (`#[repr(C)]`, its fields zerocopy's byte-order types, so that any
    /// bytes are a value); `None` (and no move) when fewer remain.
    pub(crate) fn read<T: FromBytes>(&mut self) -> Option<T> {
        let b = self.read_bytes(u64_from(size_of::<T>()))?;
        T::read_from_bytes(b).ok()
    }

    /// The `T` at `offset`, as [`Bytes::read`] reads it (the cursor does
    /// not move).
    pub(crate) fn read_at_as<T: FromBytes>(&self, offset: u64) -> Option<T> {
        let b = self.read_at(offset, u64_from(size_of::<T>()))?;
        T::read_from_bytes(b).ok()
    }

    /// The next little-endian `u32`.
    pub(crate) fn read_u32_le(&mut self) -> Option<u32> {
        self.read::<U32>().map(U32::get)
    }

    /// The next little-endian `u64`.
    pub(crate) fn read_u64_le(&mut self) -> Option<u64> {
        self.read::<U64>().map(U64::get)
    }

    /// The little-endian `u32` at `offset` (the cursor does not move).
    pub(crate) fn u32_le_at(&self, offset: u64) -> Option<u32> {
        self.read_at_as::<U32>(offset).map(U32::get)
    }
}

/// A number a format stores in its bytes: read in either byte order.
pub(crate) trait Number: Sized {
    /// The bytes of one value: `[u8; size_of::<Self>()]`.
    type Bytes: for<'a> TryFrom<&'a [u8]>;
    /// The value of little-endian `b`.
    fn from_le(b: Self::Bytes) -> Self;
    /// The value of big-endian `b`.
    fn from_be(b: Self::Bytes) -> Self;
}

macro_rules! number {
    ($($t:ty),*) => {$(
        impl Number for $t {
            type Bytes = [u8; size_of::<$t>()];
            #[inline(always)]
            fn from_le(b: Self::Bytes) -> Self {
                <$t>::from_le_bytes(b)
            }
            #[inline(always)]
            fn from_be(b: Self::Bytes) -> Self {
                <$t>::from_be_bytes(b)
            }
        }
    )*};
}
number!(u16, u32, u64, u128, i8, i16, i32, i64, f32, f64);

/// The little-endian `T` of `b` (the standard `T::from_le_bytes`).
#[inline(always)]
pub(crate) fn le<T: Number>(b: T::Bytes) -> T {
    T::from_le(b)
}

/// The big-endian `T` of `b` (the standard `T::from_be_bytes`).
#[inline(always)]
pub(crate) fn be<T: Number>(b: T::Bytes) -> T {
    T::from_be(b)
}

/// The little-endian `T` at `at` of `data`; `None` when its bytes are not
/// all inside `data`.
#[inline]
pub(crate) fn le_at<T: Number>(data: &[u8], at: usize) -> Option<T> {
    field::<T>(data, at).map(T::from_le)
}

/// The `T` at `at` of `data`, big-endian when `big`, else little-endian;
/// `None` when its bytes are not all inside `data`.
#[inline]
pub(crate) fn at_in_order<T: Number>(data: &[u8], at: usize, big: bool) -> Option<T> {
    field::<T>(data, at).map(if big { T::from_be } else { T::from_le })
}

/// The little-endian unsigned integer of the first `width` (at most 8)
/// bytes of `data`: an address or size field whose width is the file's
/// (4 or 8), or a packed field of a few bytes. `None` when `width` is over
/// 8 or `data` is shorter.
#[inline]
pub(crate) fn uint_le(data: &[u8], width: usize) -> Option<u64> {
    let b = data.get(..width)?;
    let mut v = [0u8; 8];
    v.get_mut(..width)?.copy_from_slice(b);
    Some(u64::from_le_bytes(v))
}

/// The bytes of one `T` at `at` of `data`.
#[inline]
fn field<T: Number>(data: &[u8], at: usize) -> Option<T::Bytes> {
    let b = data.get(at..at.checked_add(size_of::<T>())?)?;
    <T::Bytes as TryFrom<&[u8]>>::try_from(b).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_in_order_and_stops_at_the_end() {
        let data = [1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 9];
        let mut b = Bytes::new(&data);
        assert_eq!(b.read_u32_le(), Some(1));
        assert_eq!(b.position(), 4);
        assert_eq!(b.read_u64_le(), Some(2));
        assert_eq!(b.read_u32_le(), None);
        assert_eq!(b.position(), 12, "a failed read does not move");
        assert_eq!(b.rest(), &[9]);
        assert_eq!(b.read_bytes(1), Some(&[9][..]));
        assert_eq!(b.read_bytes(0), Some(&[][..]));
        assert_eq!(b.read_bytes(1), None);
        assert_eq!(b.rest(), &[] as &[u8]);
    }

    #[test]
    fn offsets_near_u64_max_fail_without_overflow() {
        let data = [0u8; 16];
        let mut b = Bytes::new(&data);
        assert_eq!(b.read_at(u64::MAX, 1), None);
        assert_eq!(b.read_at(1, u64::MAX), None);
        assert_eq!(b.read_at(16, 0), Some(&[][..]));
        assert_eq!(b.tail_at(17), None);
        assert_eq!(b.tail_at(10).map(<[u8]>::len), Some(6));
        assert_eq!(b.u32_le_at(u64::MAX - 1), None);
        assert_eq!(b.u32_le_at(12), Some(0));
        assert_eq!(b.u32_le_at(13), None);
        assert_eq!(b.skip(u64::MAX), None);
        assert_eq!(b.skip(16), Some(()));
        assert_eq!(b.skip(0), Some(()));
        assert_eq!(b.skip(1), None);
        assert_eq!(b.position(), 16);
    }

    #[test]
    fn fixed_offsets_in_either_order() {
        let data = [1, 2, 3, 4, 5];
        assert_eq!(le_at::<u32>(&data, 0), Some(0x0403_0201));
        assert_eq!(at_in_order::<u32>(&data, 1, true), Some(0x0203_0405));
        assert_eq!(le_at::<u32>(&data, 2), None);
        assert_eq!(le_at::<u16>(&data, usize::MAX), None);
        assert_eq!(at_in_order::<u16>(&data, 3, true), Some(0x0405));
        assert_eq!(at_in_order::<u16>(&data, 3, false), Some(0x0504));
        assert_eq!(le::<i16>([0xfe, 0xff]), -2);
        assert_eq!(be::<f32>(1.5f32.to_be_bytes()), 1.5);
        assert_eq!(uint_le(&data, 3), Some(0x03_0201));
        assert_eq!(uint_le(&data, 0), Some(0));
        assert_eq!(uint_le(&data, 6), None);
        assert_eq!(uint_le(&[0; 9], 9), None);
    }
}

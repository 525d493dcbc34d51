//! A byte cursor for the format readers.
//!
//! Every reader in the crate takes its fields out of untrusted bytes: offsets
//! and sizes read from one place say where to read next. [`Bytes`] keeps that
//! arithmetic in one place. Positions and lengths are `u64`, the type the
//! formats store them in; a read that would pass the end of the data (or
//! overflow on the way there) returns `None` and leaves the cursor where it
//! was, so a reader never panics and can still say at which offset it
//! stopped. The caller turns `None` into its own error, with its own words.

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
}

//! The bit cursor: bits least significant first, fixed-width and
//! variable-width (VBR) integers, byte runs and 32-bit alignment.

use crate::bytes::le;
use crate::num::len64;

/// A reader's result: errors are static descriptions.
pub(crate) type Res<T> = Result<T, &'static str>;

pub(super) const EOF: &str = "unexpected end of bitcode";

/// A bit cursor: bits are taken from each byte starting at the least
/// significant one.
#[derive(Debug, Clone)]
pub(crate) struct Bits<'a> {
    data: &'a [u8],
    bit: u64,
}

impl<'a> Bits<'a> {
    /// A cursor at the start of `data`.
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Bits { data, bit: 0 }
    }

    /// The bytes read.
    pub(crate) fn data(&self) -> &'a [u8] {
        self.data
    }

    /// The position, in bits.
    pub(crate) fn pos(&self) -> u64 {
        self.bit
    }

    /// The length of the data, in bits.
    pub(crate) fn len(&self) -> u64 {
        len64(self.data).saturating_mul(8)
    }

    /// Bits left after the position.
    #[cfg(test)]
    pub(crate) fn left(&self) -> u64 {
        self.len().saturating_sub(self.bit)
    }

    /// Moves to bit `bit` (at most the end).
    pub(crate) fn seek(&mut self, bit: u64) -> Res<()> {
        if bit > self.len() {
            return Err(EOF);
        }
        self.bit = bit;
        Ok(())
    }

    /// Skips `n` bits.
    pub(crate) fn skip(&mut self, n: u64) -> Res<()> {
        let to = self.bit.checked_add(n).ok_or(EOF)?;
        self.seek(to)
    }

    /// The next `n` bits (at most 64), as an integer.
    pub(crate) fn read(&mut self, n: u32) -> Res<u64> {
        if n > 64 {
            return Err("field wider than 64 bits");
        }
        let end = self
            .bit
            .checked_add(u64::from(n))
            .filter(|&e| e <= self.len())
            .ok_or(EOF)?;
        if n == 0 {
            return Ok(0);
        }
        let first = usize::try_from(self.bit / 8).map_err(|_| EOF)?;
        let avail = self.data.get(first..).ok_or(EOF)?;
        // At most 7 bits of the first byte are skipped: 9 bytes hold 64 bits.
        let mut buf = [0u8; 9];
        let take = avail.len().min(buf.len());
        buf[..take].copy_from_slice(&avail[..take]);
        let [b0, b1, b2, b3, b4, b5, b6, b7, b8] = buf;
        let lo = le::<u64>([b0, b1, b2, b3, b4, b5, b6, b7]);
        let shift = u32::from(u8::try_from(self.bit % 8).unwrap_or(0));
        let mut v = lo >> shift;
        if shift > 0 {
            v |= u64::from(b8) << (64 - shift);
        }
        if n < 64 {
            v &= (1u64 << n) - 1;
        }
        self.bit = end;
        Ok(v)
    }

    /// The next `n` bytes of 8 bits each, appended to `out` (a fast path
    /// for arrays of bytes, wherever they start).
    pub(crate) fn read_bytes(&mut self, n: u64, out: &mut Vec<u8>) -> Res<()> {
        let end = n
            .checked_mul(8)
            .and_then(|bits| self.bit.checked_add(bits))
            .filter(|&e| e <= self.len())
            .ok_or(EOF)?;
        let start = usize::try_from(self.bit / 8).map_err(|_| EOF)?;
        let n = usize::try_from(n).map_err(|_| EOF)?;
        let shift = u32::from(u8::try_from(self.bit % 8).unwrap_or(0));
        if shift == 0 {
            let src = start.checked_add(n).and_then(|e| self.data.get(start..e));
            out.extend_from_slice(src.ok_or(EOF)?);
        } else {
            // The last byte's high bits are in the byte after it, which
            // `end` being within the data guarantees.
            let src = start
                .checked_add(n + 1)
                .and_then(|e| self.data.get(start..e));
            let src = src.ok_or(EOF)?;
            out.extend(
                src.windows(2)
                    .map(|w| (w[0] >> shift) | (w[1] << (8 - shift))),
            );
        }
        self.bit = end;
        Ok(())
    }

    /// A variable-width integer in pieces of `n` bits (2 to 64).
    pub(crate) fn vbr(&mut self, n: u32) -> Res<u64> {
        if !(2..=64).contains(&n) {
            return Err("invalid VBR width");
        }
        let hi = 1u64 << (n - 1);
        let mut v = 0u64;
        let mut shift = 0u32;
        loop {
            let piece = self.read(n)?;
            if shift >= 64 {
                return Err("unterminated VBR");
            }
            v |= (piece & (hi - 1)) << shift;
            if piece & hi == 0 {
                return Ok(v);
            }
            shift += n - 1;
        }
    }

    /// Moves to the next multiple of 32 bits.
    pub(crate) fn align32(&mut self) -> Res<()> {
        let to = self
            .bit
            .checked_next_multiple_of(32)
            .filter(|&to| to <= self.len());
        self.bit = to.ok_or(EOF)?;
        Ok(())
    }
}

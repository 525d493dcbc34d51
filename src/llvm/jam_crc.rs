//! LLVM's `JamCRC` with an initial value of 0, as its COFF object writer
//! puts it in each section symbol's auxiliary record (`CheckSum`): the
//! reflected CRC-32 (polynomial 0xEDB88320) of the section's bytes,
//! started from 0 and not inverted at the end.
//!
//! With a start of 0 the checksum is linear in the bytes, so the checksum
//! of two pieces one after the other follows from the checksums of each
//! and the length of the second ([`JamCrc::then`]), and zeros appended only
//! shift it. That lets a caller checksum a section made of several inputs
//! and padding without ever holding the section whole.

/// A running JamCRC (initial value 0) over the bytes given so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct JamCrc {
    /// The CRC register.
    reg: u32,
    /// How many bytes it covers.
    len: u64,
}

impl JamCrc {
    /// A checksum of no bytes.
    pub(crate) fn new() -> JamCrc {
        JamCrc::default()
    }

    /// The checksum of `len` bytes whose checksum is `crc`.
    pub(crate) fn resume(crc: u32, len: u64) -> JamCrc {
        JamCrc { reg: crc, len }
    }

    /// Adds `bytes`.
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        // crc32fast keeps the register inverted between calls.
        let mut h = crc32fast::Hasher::new_with_initial(!self.reg);
        h.update(bytes);
        self.reg = !h.finalize();
        self.len = self
            .len
            .saturating_add(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
    }

    /// Adds the bytes whose checksum is `other`, after those so far.
    pub(crate) fn then(&mut self, other: &JamCrc) {
        // crc32fast's combine (zlib's) shifts the first value over the
        // second's length and adds the second: linear in both, so it
        // combines registers started from 0 as well as finished CRC-32s.
        let mut h = crc32fast::Hasher::new_with_initial_len(self.reg, self.len);
        h.combine(&crc32fast::Hasher::new_with_initial_len(
            other.reg, other.len,
        ));
        self.reg = h.finalize();
        self.len = self.len.saturating_add(other.len);
    }

    /// Adds `n` zero bytes.
    pub(crate) fn zeros(&mut self, n: u64) {
        // The checksum of zeros alone is 0.
        self.then(&JamCrc::resume(0, n));
    }

    /// How many bytes were added.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The checksum of the bytes so far.
    pub(crate) fn value(&self) -> u32 {
        self.reg
    }
}

/// The checksum of `bytes`.
pub(crate) fn jam_crc(bytes: &[u8]) -> u32 {
    let mut c = JamCrc::new();
    c.update(bytes);
    c.value()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "123456789" from a register of 0, without the final inversion
    /// (the standard CRC-32 starts from !0 and gives 0xCBF43926).
    #[test]
    fn check_value() {
        assert_eq!(jam_crc(b"123456789"), 0x2dfd_2d88);
        assert_eq!(jam_crc(b""), 0);
    }

    /// Pieces and zeros combine to the checksum of the whole.
    #[test]
    fn pieces() {
        let a: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let b: Vec<u8> = (0..333u32).map(|i| (i * 13 % 241) as u8).collect();
        let mut whole = a.clone();
        whole.extend_from_slice(&[0; 5]);
        whole.extend_from_slice(&b);
        let mut c = JamCrc::resume(jam_crc(&a), a.len() as u64);
        c.zeros(5);
        c.then(&JamCrc::resume(jam_crc(&b), b.len() as u64));
        assert_eq!(c.value(), jam_crc(&whole));
        assert_eq!(c.len(), whole.len() as u64);
    }
}

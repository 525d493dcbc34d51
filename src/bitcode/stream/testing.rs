//! Writing bitstreams, for the tests.

/// Writes bitstreams for the tests: bits least significant first.
#[derive(Default)]
pub(crate) struct Writer {
    pub(crate) bytes: Vec<u8>,
    bit: u64,
}

impl Writer {
    pub(crate) fn fixed(&mut self, v: u64, n: u32) {
        for i in 0..n {
            if self.bit.is_multiple_of(8) {
                self.bytes.push(0);
            }
            if v >> i & 1 == 1 {
                *self.bytes.last_mut().unwrap() |= 1 << (self.bit % 8);
            }
            self.bit += 1;
        }
    }

    pub(crate) fn vbr(&mut self, mut v: u64, n: u32) {
        let hi = 1u64 << (n - 1);
        loop {
            if v < hi {
                self.fixed(v, n);
                return;
            }
            self.fixed(v & (hi - 1) | hi, n);
            v >>= n - 1;
        }
    }

    pub(crate) fn align32(&mut self) {
        while !self.bit.is_multiple_of(32) {
            self.fixed(0, 1);
        }
    }
}

impl Writer {
    /// Whole bytes, at a byte boundary.
    pub(crate) fn raw(&mut self, bytes: &[u8]) {
        assert!(self.bit.is_multiple_of(8));
        self.bytes.extend_from_slice(bytes);
        self.bit += 8 * bytes.len() as u64;
    }

    /// Starts a block (`ENTER_SUBBLOCK` in abbreviation width
    /// `outer`); returns where its length goes, for [`Writer::end`].
    pub(crate) fn enter(&mut self, outer: u32, id: u64, width: u32) -> usize {
        self.fixed(1, outer);
        self.vbr(id, 8);
        self.vbr(u64::from(width), 4);
        self.align32();
        let at = self.bytes.len();
        self.fixed(0, 32);
        at
    }

    /// Ends the block whose length goes at `at` (`END_BLOCK` in
    /// abbreviation width `width`).
    pub(crate) fn end(&mut self, width: u32, at: usize) {
        self.fixed(0, width);
        self.align32();
        let words = u32::try_from((self.bytes.len() - at - 4) / 4).unwrap();
        self.bytes[at..at + 4].copy_from_slice(&words.to_le_bytes());
    }

    /// An unabbreviated record.
    pub(crate) fn record(&mut self, width: u32, code: u64, ops: &[u64]) {
        self.fixed(3, width);
        self.vbr(code, 6);
        self.vbr(ops.len() as u64, 6);
        for &op in ops {
            self.vbr(op, 6);
        }
    }
}

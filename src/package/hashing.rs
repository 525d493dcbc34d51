//! One writer that hashes and counts what passes through it, for every
//! package rewrite that keeps a record of its members' hashes true
//! (a wheel's RECORD with SHA-256, a `.deb`'s `md5sums` with MD5).

use std::io::{self, Write};

/// A writer that hands what it is given to `out`, hashing it with
/// `digest` and counting it on the way.
pub(crate) struct Hashing<W, D> {
    /// Where the bytes go.
    pub(crate) out: W,
    /// Their hash so far.
    pub(crate) digest: D,
    /// How many went.
    pub(crate) n: u64,
}

impl<W, D: md5::Digest> Hashing<W, D> {
    /// A hashing writer into `out`, nothing written yet.
    pub(crate) fn new(out: W) -> Hashing<W, D> {
        Hashing {
            out,
            digest: D::new(),
            n: 0,
        }
    }
}

impl<W: Write, D: md5::Digest> Write for Hashing<W, D> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let k = self.out.write(buf)?;
        self.digest.update(&buf[..k]);
        self.n += k as u64;
        Ok(k)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

//! Taps on a compressed bundle's stream: what the walker takes from each
//! entry while the contents stream past (its first bytes, its hash, its
//! bytes for a visitor) and a check that nothing but zeros follows the
//! bundle, so that the contents are never held whole in memory.

use std::io::{self, Write};

use super::{Hasher, ImageSink};
use crate::num::len64;

/// Where a tapped entry's bytes go.
pub(super) enum TapOut {
    /// Nowhere.
    Nowhere,
    /// A visitor's sink, and the first error writing to it (after which
    /// it gets nothing more).
    Sink(Box<dyn ImageSink>, Option<io::Error>),
    /// Memory: for a visitor that takes bytes in one piece (the entry's
    /// size is within the decompression budget).
    Buffer(Vec<u8>),
}

/// One entry's bytes as they stream past.
pub(super) struct Tap {
    /// The entry's bytes in the contents.
    pub(super) range: std::ops::Range<u64>,
    /// Its first bytes, up to `head_len`.
    pub(super) head: Vec<u8>,
    head_len: usize,
    /// Its hash, when asked for.
    pub(super) hasher: Option<Hasher>,
    /// Its bytes.
    pub(super) out: TapOut,
}

impl Tap {
    pub(super) fn new(range: std::ops::Range<u64>, head_len: usize) -> Tap {
        Tap {
            range,
            head: Vec::new(),
            head_len,
            hasher: None,
            out: TapOut::Nowhere,
        }
    }
}

impl Write for Tap {
    /// Never fails: a sink's error is kept and the stream goes on for the
    /// other entries.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = self.head_len.saturating_sub(self.head.len());
        self.head.extend_from_slice(&buf[..room.min(buf.len())]);
        if let Some(h) = &mut self.hasher {
            h.update(buf);
        }
        match &mut self.out {
            TapOut::Nowhere => {}
            TapOut::Sink(sink, error @ None) => {
                if let Err(e) = sink.write_all(buf) {
                    *error = Some(e);
                }
            }
            TapOut::Sink(_, Some(_)) => {}
            TapOut::Buffer(v) => v.extend_from_slice(buf),
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Finds the first non-zero byte of the contents from `start` on (bytes
/// after a bundle: zero padding is fine, anything else is reported).
pub(super) struct ZeroTail {
    /// Where the checked bytes start.
    pub(super) start: u64,
    /// Bytes seen so far.
    seen: u64,
    /// The offset (in the contents) of the first non-zero byte.
    pub(super) first_non_zero: Option<u64>,
}

impl ZeroTail {
    pub(super) fn new(start: u64) -> ZeroTail {
        ZeroTail {
            start,
            seen: 0,
            first_non_zero: None,
        }
    }
}

impl Write for ZeroTail {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.first_non_zero.is_none()
            && let Some(i) = buf.iter().position(|&b| b != 0)
        {
            self.first_non_zero = Some(self.start + self.seen + len64(&buf[..i]));
        }
        self.seen += len64(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

//! Taps on a stream of decompressed bytes (a compressed bundle's contents,
//! a compressed OffloadBinary, a compressed CUDA fatbin entry): what the
//! walker takes from each image while the stream passes (its first bytes,
//! its hash, its bytes for a visitor) and a check that nothing but zeros
//! follows a bundle, so that the decompressed bytes are never held whole
//! in memory.

use std::io::{self, Read, Write};

use super::{Hasher, ImageReader, ImageSink};
use crate::bundle::ccob::{Wanted, write_wanted};
use crate::error::{Error, Result};
use crate::num::{len64, usize_from};

/// Bytes [`pump`] reads at a time: a quarter of a MiB. Writing a file
/// from a buffer the CPU's cache holds costs a fraction of writing it from
/// one it does not (0.4 s against 1.6 s or more for 1.5 GB here).
const CHUNK: usize = 256 << 10;

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
    /// A visitor's reader, and the bytes for it, collected in memory as
    /// for [`TapOut::Buffer`]: it reads them when they are all there.
    Reader(Box<dyn ImageReader>, Vec<u8>),
    /// A visitor's reader that has read the bytes ([`pump_whole`] ran it
    /// on the thread that decoded them).
    Read(Box<dyn ImageReader>),
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
    /// Whether only the bytes before the first NUL count (PTX text, as
    /// `cuobjdump -xptx` writes it): the rest reaches neither the hash
    /// nor the output.
    text: bool,
    /// Bytes that counted so far (with `text`: up to the first NUL).
    pub(super) taken: u64,
    /// Whether a NUL has ended the text.
    ended: bool,
    /// A buffer [`pump_whole`] may fill instead of allocating one: it held
    /// an earlier image, whose bytes it overwrites (its length is how many
    /// of them are there, so that it need not zero them first).
    pub(super) spare: Vec<u8>,
}

impl Tap {
    pub(super) fn new(range: std::ops::Range<u64>, head_len: usize) -> Tap {
        Tap {
            range,
            head: Vec::new(),
            head_len,
            hasher: None,
            out: TapOut::Nowhere,
            text: false,
            taken: 0,
            ended: false,
            spare: Vec::new(),
        }
    }

    /// The same tap, taking only the bytes before the first NUL (the text
    /// of a PTX entry).
    pub(super) fn text(mut self) -> Tap {
        self.text = true;
        self
    }

    /// Whether the tap keeps the bytes of `0..size` in memory and has
    /// taken none yet: [`pump_whole`] may fill it.
    pub(super) fn takes_whole(&self, size: u64) -> bool {
        self.range == (0..size)
            && self.taken == 0
            && matches!(&self.out, TapOut::Buffer(b) | TapOut::Reader(_, b) if b.is_empty())
    }

    /// Counts `buf`, bytes that count: the head, the hash.
    fn account(&mut self, buf: &[u8]) {
        self.taken += len64(buf);
        let room = self.head_len.saturating_sub(self.head.len());
        self.head.extend_from_slice(&buf[..room.min(buf.len())]);
        if let Some(h) = &mut self.hasher {
            h.update(buf);
        }
    }

    /// Takes `bytes`, the whole stream of a tap that
    /// [`takes_whole`](Tap::takes_whole) them, as [`Write::write`] of them
    /// would, keeping the buffer instead of copying it.
    fn keep_whole(&mut self, mut bytes: Vec<u8>) {
        let n = self.take_whole(&bytes);
        bytes.truncate(n);
        self.out = TapOut::Buffer(bytes);
    }

    /// Counts `bytes`, the whole stream, as [`Write::write`] of them
    /// would, and returns how many of them count (with `text`: those
    /// before the first NUL).
    fn take_whole(&mut self, bytes: &[u8]) -> usize {
        let n = match self.text {
            true => memchr::memchr(0, bytes).inspect(|_| self.ended = true),
            false => None,
        }
        .unwrap_or(bytes.len());
        self.account(&bytes[..n]);
        n
    }
}

impl Write for Tap {
    /// Never fails: a sink's error is kept and the stream goes on for the
    /// other entries.
    fn write(&mut self, all: &[u8]) -> io::Result<usize> {
        let buf = match self.text {
            _ if self.ended => &[][..],
            true => match memchr::memchr(0, all) {
                Some(i) => {
                    self.ended = true;
                    &all[..i]
                }
                None => all,
            },
            false => all,
        };
        self.account(buf);
        match &mut self.out {
            TapOut::Nowhere => {}
            TapOut::Sink(sink, error @ None) => {
                if let Err(e) = sink.write_all(buf) {
                    *error = Some(e);
                }
            }
            TapOut::Sink(_, Some(_)) => {}
            TapOut::Buffer(v) | TapOut::Reader(_, v) => v.extend_from_slice(buf),
            // Never written to: it is made after the whole stream.
            TapOut::Read(_) => {}
        }
        Ok(all.len())
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

/// Reads `r`, decompressed data that is exactly `declared` bytes or fails,
/// to its end, writing each [`Wanted`] range to its writer as the bytes
/// pass; returns the bytes read. Data of another size is an error here
/// too. The bytes pass through `buf` in [`CHUNK`]s, small enough to stay
/// in the CPU's cache between the decoder that writes them and the
/// writers that copy them on (callers keep one `buf` per thread, so that
/// it is allocated once).
pub(super) fn pump(
    r: &mut dyn Read,
    declared: u64,
    wanted: &mut [Wanted<'_>],
    buf: &mut Vec<u8>,
) -> Result<u64> {
    let size = usize_from(declared).clamp(1, CHUNK);
    if buf.len() < size {
        buf.resize(size, 0);
    }
    let buf = &mut buf[..size];
    let mut at = 0u64;
    loop {
        let n = match r.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::from_io(e)),
        };
        let chunk = &buf[..n];
        if at + len64(chunk) > declared {
            return Err(Error::invalid(
                "decompressed data",
                format!("more than the {declared} bytes declared"),
            ));
        }
        write_wanted(wanted, at, chunk)?;
        at += len64(chunk);
    }
    if at != declared {
        return Err(Error::invalid(
            "decompressed data",
            format!("{at} bytes, {declared} declared"),
        ));
    }
    Ok(at)
}

/// [`pump`] into one tap that [`takes_whole`](Tap::takes_whole) the
/// stream: the bytes are read straight into one buffer of the declared
/// size (the tap's spare one, when it has one; a decoder given room for
/// the whole output decodes in one pass), which the tap keeps, so that
/// they are neither chunked nor copied. The
/// caller has reserved `declared` bytes of its budget for them.
///
/// A tap with a reader ([`TapOut::Reader`]) has it read the bytes here,
/// from `own` instead (a buffer the calling thread keeps from entry to
/// entry, overwritten each time, so that it stays in the CPU's cache),
/// and then holds the reader ([`TapOut::Read`]).
pub(super) fn pump_whole(
    r: &mut dyn Read,
    declared: u64,
    tap: &mut Tap,
    own: &mut Vec<u8>,
) -> Result<u64> {
    let size = usize::try_from(declared)
        .map_err(|_| Error::invalid("decompressed data", format!("{declared} bytes declared")))?;
    if matches!(tap.out, TapOut::Reader(..)) {
        // The buffer keeps its length from entry to entry: only what it
        // has never held is zeroed (once) before it is written.
        if own.len() < size {
            own.resize(size, 0);
        }
        let bytes = &mut own[..size];
        read_exactly(r, bytes, declared)?;
        let n = tap.take_whole(bytes);
        if let TapOut::Reader(mut reader, _) = std::mem::replace(&mut tap.out, TapOut::Nowhere) {
            reader.read(&bytes[..n]);
            tap.out = TapOut::Read(reader);
        }
        return Ok(declared);
    }
    let mut bytes = std::mem::take(&mut tap.spare);
    fill(r, &mut bytes, size, declared)?;
    tap.keep_whole(bytes);
    Ok(declared)
}

/// Makes `bytes` `size` long (keeping what it held, not zeroing it again)
/// and fills it from `r`, which must end right after: every byte is
/// written before the bytes are used, so an earlier image's are never
/// handed out.
fn fill(r: &mut dyn Read, bytes: &mut Vec<u8>, size: usize, declared: u64) -> Result<()> {
    if bytes.len() >= size {
        bytes.truncate(size);
    } else {
        bytes.resize(size, 0);
    }
    read_exactly(r, bytes, declared)
}

/// Fills `bytes` from `r`, which must end right after them (`declared`
/// is their number, for messages).
fn read_exactly(r: &mut dyn Read, bytes: &mut [u8], declared: u64) -> Result<()> {
    let size = bytes.len();
    let mut at = 0usize;
    loop {
        let n = match bytes.get_mut(at..).filter(|rest| !rest.is_empty()) {
            Some(rest) => r.read(rest),
            // Full: anything more is too much.
            None => r.read(&mut [0u8; 1]),
        };
        match n {
            Ok(0) => break,
            Ok(_) if at == size => {
                return Err(Error::invalid(
                    "decompressed data",
                    format!("more than the {declared} bytes declared"),
                ));
            }
            Ok(n) => at += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::from_io(e)),
        }
    }
    if at != size {
        return Err(Error::invalid(
            "decompressed data",
            format!("{at} bytes, {declared} declared"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pump_writes_each_range_and_checks_the_size() {
        let data: Vec<u8> = (0..3 * CHUNK + 17)
            .map(|i| u8::try_from(i % 251).unwrap())
            .collect();
        let n = len64(&data);
        let ranges = [
            0..0,
            0..5,
            5..n,
            (CHUNK as u64 - 3)..(CHUNK as u64 + 3),
            n..n,
        ];
        let mut outs: Vec<Vec<u8>> = vec![Vec::new(); ranges.len()];
        let mut wanted: Vec<Wanted<'_>> = ranges
            .iter()
            .zip(outs.iter_mut())
            .map(|(r, o)| Wanted {
                range: r.clone(),
                out: o,
            })
            .collect();
        assert_eq!(
            pump(&mut &data[..], n, &mut wanted, &mut Vec::new()).unwrap(),
            n
        );
        drop(wanted);
        for (r, o) in ranges.iter().zip(&outs) {
            assert_eq!(o[..], data[usize_from(r.start)..usize_from(r.end)]);
        }
        assert!(pump(&mut &data[..], n - 1, &mut [], &mut Vec::new()).is_err());
        assert!(pump(&mut &data[..], n + 1, &mut [], &mut Vec::new()).is_err());
    }

    #[test]
    fn pump_whole_keeps_the_bytes_and_checks_the_size() {
        let data: Vec<u8> = (0..CHUNK + 5)
            .map(|i| u8::try_from(i % 7 + 1).unwrap())
            .collect();
        let n = len64(&data);
        let whole = |n: u64| {
            let mut t = Tap::new(0..n, 4);
            t.out = TapOut::Buffer(Vec::new());
            t
        };
        let mut t = whole(n);
        assert!(t.takes_whole(n));
        assert_eq!(
            pump_whole(&mut &data[..], n, &mut t, &mut Vec::new()).unwrap(),
            n
        );
        assert!(matches!(&t.out, TapOut::Buffer(b) if *b == data));
        assert_eq!((t.taken, &t.head[..]), (n, &data[..4]));
        assert!(pump_whole(&mut &data[..], n - 1, &mut whole(n - 1), &mut Vec::new()).is_err());
        assert!(pump_whole(&mut &data[..], n + 1, &mut whole(n + 1), &mut Vec::new()).is_err());
        // Text: up to the first NUL.
        let text = b"abc\0def".to_vec();
        let mut t = whole(7).text();
        pump_whole(&mut &text[..], 7, &mut t, &mut Vec::new()).unwrap();
        assert!(matches!(&t.out, TapOut::Buffer(b) if b == b"abc"));
        assert_eq!(t.taken, 3);
        // A tap that already took bytes, or writes elsewhere, is not one.
        assert!(!Tap::new(0..n, 0).takes_whole(n));
        assert!(!whole(n).takes_whole(n + 1));
    }

    /// What a reader was given.
    struct Seen(Vec<u8>);

    impl crate::scan::ImageReader for Seen {
        fn read(&mut self, bytes: &[u8]) {
            self.0 = bytes.to_vec();
        }
    }

    #[test]
    fn pump_whole_gives_a_reader_exactly_the_entry_from_a_longer_buffer() {
        // The thread's buffer is longer, and holds an earlier entry: the
        // reader gets this entry's bytes and no more, and a short or long
        // stream gives it nothing.
        let mut own = vec![0xee; 100];
        let reader = |n: u64| {
            let mut t = Tap::new(0..n, 0);
            t.out = TapOut::Reader(Box::new(Seen(Vec::new())), Vec::new());
            t
        };
        let seen = |t: Tap| match t.out {
            TapOut::Read(r) => {
                let r: Box<dyn std::any::Any> = r;
                r.downcast::<Seen>().map(|s| s.0).ok()
            }
            _ => None,
        };
        let mut t = reader(5);
        assert!(t.takes_whole(5));
        pump_whole(&mut &b"hello"[..], 5, &mut t, &mut own).unwrap();
        assert_eq!(seen(t).as_deref(), Some(&b"hello"[..]));
        assert_eq!(own.len(), 100);
        let mut t = reader(6);
        assert!(pump_whole(&mut &b"hello"[..], 6, &mut t, &mut own).is_err());
        assert_eq!(seen(t), None);
        let mut t = reader(150).text();
        let long: Vec<u8> = (1..=150u8).collect();
        pump_whole(&mut &long[..], 150, &mut t, &mut own).unwrap();
        assert_eq!(seen(t).as_deref(), Some(&long[..]));
        assert_eq!(own.len(), 150);
    }
}

//! The images of OffloadBinaries copied to where they go (an output file, a
//! temporary file): a slice of the input file to file, the images of a
//! compressed binary streamed from its compressed data instead of inflated
//! in memory.

use std::io::{self, Read, Write};

use crate::files::{Allowance, Input, Output, Sink};
use crate::offload_binary::{FoundImage, Pending, Streamed};

/// What the files written out of the inputs of `budget` may hold
/// together: its `--max-uncompressed` when given, else the decompression
/// budget of its inputs' size plus their size ([`Allowance::for_input`]).
pub(crate) fn allowance(budget: &crate::offload_binary::Budget) -> std::sync::Arc<Allowance> {
    Allowance::for_input(budget.input(), budget.limits().max_uncompressed)
}

/// Bytes copied at a time from a stream.
const CHUNK: usize = 256 << 10;

/// Copies the bytes of found images to writers: a slice of the input file
/// to file, the bytes of an image of a compressed binary streamed out of
/// its compressed data. Images of one binary asked for in the order of
/// their offsets (as every writer lays them out, and as the commands ask
/// for them) are streamed in one pass; an image before the last one asked
/// for starts the binary's stream again.
pub(crate) struct Streams<'s, 'd> {
    streamed: &'s Streamed<'d>,
    /// The stream open now: its binary, and how far it was read.
    open: Option<(usize, Box<dyn Read + 's>, u64)>,
    buf: Vec<u8>,
}

impl<'s, 'd> Streams<'s, 'd> {
    /// Copies from what `streamed` found.
    pub(crate) fn new(streamed: &'s Streamed<'d>) -> Streams<'s, 'd> {
        Streams {
            streamed,
            open: None,
            buf: Vec::new(),
        }
    }

    /// Copies the bytes of `f` (found in `input`) to `out`.
    pub(crate) fn copy_to<S: Sink>(
        &mut self,
        input: &Input,
        f: &FoundImage<'_>,
        out: &mut S,
    ) -> io::Result<()> {
        match f.pending {
            None => input.copy_to(&f.image.image, out),
            Some(p) => self.stream(p, f.image.image_offset, out),
        }
    }

    /// Copies the `p.size` bytes at `start` of the inflated binary
    /// `p.binary` to `out`.
    fn stream(&mut self, p: Pending, start: u64, out: &mut dyn Write) -> io::Result<()> {
        let reuse = matches!(&self.open, Some((b, _, at)) if *b == p.binary && *at <= start);
        if !reuse {
            let inf = self
                .streamed
                .binaries
                .get(p.binary)
                .ok_or_else(|| io::Error::other("internal error: no such compressed binary"))?;
            let r = inf
                .reader()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            self.open = Some((p.binary, r, 0));
        }
        let Some((_, r, at)) = self.open.as_mut() else {
            return Err(io::Error::other("internal error: no stream"));
        };
        if self.buf.is_empty() {
            self.buf = vec![0u8; CHUNK];
        }
        let skip = start.saturating_sub(*at);
        // A failure leaves the stream somewhere unknown: start again next time.
        let done = pump(&mut r.take(skip), &mut io::sink(), &mut self.buf)
            .and_then(|_| pump(&mut r.take(p.size), out, &mut self.buf));
        match done {
            Ok(n) if n == p.size => {
                *at = start + p.size;
                Ok(())
            }
            Ok(_) => {
                self.open = None;
                Err(io::Error::from(io::ErrorKind::UnexpectedEof))
            }
            Err(e) => {
                self.open = None;
                Err(e)
            }
        }
    }

    /// Writes the bytes of `f` (found in `input`) atomically to `path`,
    /// counted against `allowance`.
    pub(crate) fn write(
        &mut self,
        path: &str,
        input: &Input,
        f: &FoundImage<'_>,
        allowance: &std::sync::Arc<Allowance>,
    ) -> io::Result<()> {
        let mut out = Output::create(std::path::Path::new(path))?.within(allowance);
        self.copy_to(input, f, &mut out)?;
        out.commit()
    }

    /// The bytes of `f` (found in `input`) as an input of their own: for a
    /// pending image, streamed into a new unlinked temporary file that is
    /// then mapped, so that they are never in memory; `None` for the others,
    /// whose bytes are at hand.
    pub(crate) fn inflate_to_temp_file(&mut self, f: &FoundImage<'_>) -> io::Result<Option<Input>> {
        let Some(p) = f.pending else {
            return Ok(None);
        };
        let mut file = tempfile::tempfile()?;
        self.stream(p, f.image.image_offset, &mut file)?;
        file.flush()?;
        Input::from_temp_file(file).map(Some)
    }
}

/// The error of the data an `io::Error` of [`Streams`] carries, when it is
/// one (damaged compressed data), not a failure to read or write a file.
pub(crate) fn data_error(e: &io::Error) -> Option<&crate::Error> {
    e.get_ref()?.downcast_ref::<crate::Error>()
}

/// Copies `r` to its end into `w`, `buf` at a time; the bytes copied.
fn pump(r: &mut dyn Read, w: &mut dyn Write, buf: &mut [u8]) -> io::Result<u64> {
    let mut n = 0u64;
    loop {
        match r.read(buf) {
            Ok(0) => return Ok(n),
            Ok(k) => {
                w.write_all(&buf[..k])?;
                n += k as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;
    use crate::offload_binary::{
        Budget, Compression, ImageSpec, Inflate, compress, find_images_streamed, layout,
    };

    #[test]
    fn images_asked_for_in_any_order_are_streamed_right() {
        let images: Vec<Vec<u8>> = (0..4u8)
            .map(|i| (0..100_000u32).map(|k| (k % 251) as u8 ^ i).collect())
            .collect();
        let specs: Vec<ImageSpec> = images
            .iter()
            .map(|b| ImageSpec {
                size: b.len() as u64,
                ..ImageSpec::default()
            })
            .collect();
        let refs: Vec<&[u8]> = images.iter().map(Vec::as_slice).collect();
        let mut plain = Vec::new();
        layout(&specs, crate::offload_binary::Version::V3)
            .unwrap()
            .write_to(&mut plain, &refs)
            .unwrap();
        let data = compress(&plain, Compression::Zstd, 3).unwrap();
        let budget = Budget::new(Limits::default());
        let found = find_images_streamed(&data, &budget, Inflate::Check).unwrap();
        let mut streams = Streams::new(&found);
        // In order (one pass), then backwards (each starts again), then
        // one twice.
        for i in [0, 1, 2, 3, 3, 1, 0, 2, 2] {
            let f = &found.images[i];
            let p = f.pending.unwrap();
            let mut out = Vec::new();
            streams.stream(p, f.image.image_offset, &mut out).unwrap();
            assert!(out == images[i], "image {i}");
        }
    }
}

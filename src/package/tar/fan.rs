//! One tar read written to any number of outputs at once ([`Fan`]): the
//! writer every package rewrite that streams a tar (a `.deb`'s data
//! archive, a conda payload, an OCI layer) hands each entry to, with the
//! entry's fate in each output ([`Fate`]).
//!
//! A kept entry is written as it was ([`put_header`], its old data); a
//! replaced one gets a header of its new size and its new bytes, whose
//! hash ([`Hash`], `()` for none) the fan hands back output by output
//! (for `md5sums` or `paths.json`); a removed one is not written. An
//! output with no sink (a dry run) is decided but not written; the hash
//! of a replaced file's bytes is still taken for it.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};

use md5::Digest as _;

use super::walk::{Counted, end, put_header, put_pad};
use super::{Fault, Header, Reader};
use crate::package::Fate;

/// A hash a [`Fan`] may take of bytes it writes or copies.
pub(crate) trait Hash: Default {
    /// The hash, once taken.
    type Sum;
    /// Hashes `bytes`, after those before.
    fn update(&mut self, bytes: &[u8]);
    /// The hash of everything given.
    fn sum(self) -> Self::Sum;
}

/// No hash taken.
impl Hash for () {
    type Sum = ();
    fn update(&mut self, _: &[u8]) {}
    fn sum(self) {}
}

/// MD5, as a `.deb`'s `md5sums` gives it.
impl Hash for md5::Md5 {
    type Sum = [u8; 16];
    fn update(&mut self, bytes: &[u8]) {
        md5::Digest::update(self, bytes);
    }
    fn sum(self) -> [u8; 16] {
        self.finalize().into()
    }
}

/// SHA-256, as a conda package's `paths.json` gives it.
impl Hash for sha2::Sha256 {
    type Sum = [u8; 32];
    fn update(&mut self, bytes: &[u8]) {
        sha2::Digest::update(self, bytes);
    }
    fn sum(self) -> [u8; 32] {
        self.finalize().into()
    }
}

/// A writer that hashes what passes through it into `H`.
struct Hashed<'w, H> {
    out: Option<&'w mut dyn Write>,
    hash: H,
}

impl<H: Hash> Write for Hashed<'_, H> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = match self.out.as_mut() {
            Some(out) => out.write(buf)?,
            None => buf.len(),
        };
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.as_mut().map_or(Ok(()), |o| o.flush())
    }
}

/// An entry's old data, for the outputs that keep it.
pub(crate) enum Old<'b, H> {
    /// Still in the archive, after `head` (read already): hashed into
    /// the hash where one is given.
    Stream(&'b [u8], Option<&'b mut H>),
    /// Read whole: what writes it.
    Held(&'b dyn Fn(&mut dyn Write) -> io::Result<()>),
}

/// The outputs of one tar read, each a sink or none (a dry run), the
/// hash of replaced files' bytes taken with `H`.
pub(crate) struct Fan<W, H> {
    sinks: Vec<Option<Counted<W>>>,
    hash: std::marker::PhantomData<H>,
}

impl<W: Write, H: Hash> Fan<W, H> {
    /// A fan of `n` outputs, output `k` written to what `open` makes of
    /// `scratch[k]` (buffered; `None` where there is no scratch file,
    /// and for an output past its end). `open` may answer `None`: that
    /// output is not written.
    pub(crate) fn open<E>(
        n: usize,
        scratch: Vec<Option<File>>,
        mut open: impl FnMut(Option<BufWriter<File>>) -> Result<Option<W>, E>,
    ) -> Result<Fan<W, H>, E> {
        let mut scratch = scratch.into_iter();
        let mut sinks = Vec::with_capacity(n);
        for _ in 0..n {
            let f = scratch
                .next()
                .flatten()
                .map(|f| BufWriter::with_capacity(1 << 20, f));
            sinks.push(open(f)?.map(Counted::new));
        }
        Ok(Fan {
            sinks,
            hash: std::marker::PhantomData,
        })
    }

    /// The sinks, in output order, once the read is over.
    pub(crate) fn into_sinks(self) -> Vec<Option<W>> {
        self.sinks
            .into_iter()
            .map(|s| s.map(Counted::into_inner))
            .collect()
    }

    /// Writes the entry `h` to each output as its fate in `fates` says: a
    /// file replaced with a header of its new size and its new bytes
    /// (their hash handed to `replaced` with the output's index), an
    /// entry kept with its old data (`old`), nothing for one left out.
    pub(crate) fn emit<R: Read>(
        &mut self,
        tar: &mut Reader<R>,
        h: &Header,
        fates: &[Fate],
        old: Old<'_, H>,
        replaced: &mut dyn FnMut(usize, H::Sum),
    ) -> Result<(), Fault> {
        for (k, (sink, fate)) in self.sinks.iter_mut().zip(fates).enumerate() {
            let Fate::Replaced(new) = fate else {
                continue;
            };
            if let Some(s) = sink.as_mut() {
                put_header(s, h, Some(new.size))?;
            }
            let mut hashed = Hashed {
                out: sink.as_mut().map(|s| s as &mut dyn Write),
                hash: H::default(),
            };
            new.copy_to(&mut hashed).map_err(Fault::Write)?;
            let sum = hashed.hash.sum();
            if let Some(s) = sink.as_mut() {
                put_pad(s, new.size)?;
            }
            replaced(k, sum);
        }
        let mut kept: Vec<&mut Counted<W>> = self
            .sinks
            .iter_mut()
            .zip(fates)
            .filter(|(_, f)| matches!(f, Fate::Kept))
            .filter_map(|(s, _)| s.as_mut())
            .collect();
        copy_old(tar, h, &mut kept, old)
    }

    /// With `tar` read to its end, writes what follows its last member
    /// to each output written ([`end`]).
    pub(crate) fn end<R: Read>(&mut self, tar: &mut Reader<R>) -> Result<(), Fault> {
        let mut sinks: Vec<&mut Counted<W>> =
            self.sinks.iter_mut().filter_map(Option::as_mut).collect();
        end(tar, &mut sinks)
    }
}

/// Writes the entry `h` with its old data (`old`) to each of `kept`.
fn copy_old<R: Read, W: Write, H: Hash>(
    tar: &mut Reader<R>,
    h: &Header,
    kept: &mut [&mut Counted<W>],
    old: Old<'_, H>,
) -> Result<(), Fault> {
    let (head, hash) = match old {
        Old::Held(write) => {
            for sink in kept.iter_mut() {
                put_header(*sink, h, None)?;
                write(*sink).map_err(Fault::Write)?;
                put_pad(*sink, h.size)?;
            }
            return Ok(());
        }
        Old::Stream(head, hash) => (head, hash),
    };
    if kept.is_empty() && hash.is_none() {
        return tar.skip_body();
    }
    for sink in kept.iter_mut() {
        put_header(*sink, h, None)?;
        sink.write_all(head).map_err(Fault::Write)?;
    }
    if let Some(hash) = hash {
        hash.update(head);
        hashed_body(tar, h, head.len() as u64, kept, hash)?;
    }
    tar.copy_body(&mut |b| {
        for sink in kept.iter_mut() {
            sink.write_all(b).map_err(Fault::Write)?;
        }
        Ok(())
    })
}

/// Copies the data of `h` left in `tar` (after `n` bytes read already)
/// to each of `kept`, hashing it into `hash`; its padding is left.
fn hashed_body<R: Read, W: Write, H: Hash>(
    tar: &mut Reader<R>,
    h: &Header,
    mut n: u64,
    kept: &mut [&mut Counted<W>],
    hash: &mut H,
) -> Result<(), Fault> {
    let mut buf = vec![0u8; usize::try_from(tar.left().min(256 << 10)).unwrap_or(0)];
    while tar.left() > 0 {
        let k = match tar.body().read(&mut buf) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Fault::Read(e)),
        };
        hash.update(&buf[..k]);
        for sink in kept.iter_mut() {
            sink.write_all(&buf[..k]).map_err(Fault::Write)?;
        }
        n += k as u64;
    }
    if n < h.size {
        return Err(Fault::Damaged(format!(
            "the data of '{}' is cut short ({n} of its {} bytes)",
            h.path_lossy(),
            h.size
        )));
    }
    Ok(())
}

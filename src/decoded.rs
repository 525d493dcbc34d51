//! Decompressed data as a [`Read`] that must come to exactly the size its
//! container declares: what the scanner streams from a compressed
//! OffloadBinary or a compressed CUDA fatbin entry, and what their
//! whole-buffer readers collect, so that both fail alike.

use std::io::{self, Read};

use crate::error::{Error, ErrorKind};

/// How a size mismatch is told: `None` when the data decodes to more than
/// declared, else the bytes it decodes to; then the declared size.
pub(crate) type Mismatch = fn(Option<u64>, u64) -> String;

/// Reads `inner` (a decompressor) to exactly `declared` bytes: data that
/// ends before, or goes on after (one byte more is read to see), is an
/// error, as is any error of `inner`. Errors are ours
/// ([`ErrorKind::Decompress`] of `what`), inside the `io::Error`
/// ([`Error::from_io`] gets them back).
pub(crate) struct Exact<R> {
    inner: R,
    what: &'static str,
    declared: u64,
    got: u64,
    says: Mismatch,
}

impl<R: Read> Exact<R> {
    pub(crate) fn new(inner: R, what: &'static str, declared: u64, says: Mismatch) -> Exact<R> {
        Exact {
            inner,
            what,
            declared,
            got: 0,
            says,
        }
    }

    fn fail(&self, detail: String) -> io::Error {
        Error::from(ErrorKind::Decompress {
            what: self.what,
            detail,
        })
        .into_io()
    }

    /// `inner.read`, its errors ours (an error that already is, from a
    /// decoder of our own, stays as it is).
    fn read_inner(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.inner.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.get_ref().is_some_and(|r| r.is::<Error>()) => return Err(e),
                Err(e) => return Err(self.fail(e.to_string())),
            }
        }
    }
}

impl<R: Read> Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.got == self.declared {
            // Anything more is too much.
            let mut probe = [0u8; 1];
            return match self.read_inner(&mut probe)? {
                0 => Ok(0),
                _ => Err(self.fail((self.says)(None, self.declared))),
            };
        }
        let room = usize::try_from(self.declared - self.got).unwrap_or(usize::MAX);
        let n = buf.len().min(room);
        let n = self.read_inner(&mut buf[..n])?;
        if n == 0 {
            return Err(self.fail((self.says)(Some(self.got), self.declared)));
        }
        self.got += n as u64;
        Ok(n)
    }
}

/// Reads all of `r` into memory (at most `declared` bytes, which the caller
/// has checked against its limit; the first 16 MiB reserved up front), as
/// the whole-buffer readers do; its error is ours again.
pub(crate) fn read_all(mut r: impl Read, declared: u64) -> crate::Result<Vec<u8>> {
    let cap = usize::try_from(declared)
        .unwrap_or(usize::MAX)
        .min(16 << 20);
    let mut out = Vec::with_capacity(cap);
    r.read_to_end(&mut out).map_err(Error::from_io)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn says(got: Option<u64>, declared: u64) -> String {
        match got {
            None => format!("more than {declared}"),
            Some(n) => format!("{n} of {declared}"),
        }
    }

    fn exact(data: &[u8], declared: u64) -> crate::Result<Vec<u8>> {
        read_all(Exact::new(data, "test data", declared, says), declared)
    }

    #[test]
    fn exactly_the_declared_size_or_an_error() {
        assert_eq!(exact(b"abc", 3).unwrap(), b"abc");
        assert_eq!(exact(b"", 0).unwrap(), b"");
        let e = exact(b"abc", 2).unwrap_err();
        assert!(matches!(
            e.kind(),
            ErrorKind::Decompress {
                what: "test data",
                ..
            }
        ));
        assert!(e.to_string().contains("more than 2"), "{e}");
        assert!(exact(b"abc", 4).unwrap_err().to_string().contains("3 of 4"));
    }

    #[test]
    fn the_inner_error_is_named_once() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("bad block"))
            }
        }
        let e = read_all(Exact::new(Broken, "zstd data", 5, says), 5).unwrap_err();
        assert!(matches!(
            e.kind(),
            ErrorKind::Decompress {
                what: "zstd data",
                ..
            }
        ));
        assert!(e.to_string().contains("bad block"), "{e}");
        // Wrapped again, it is still the same error.
        let again = Exact::new(Exact::new(Broken, "inner", 5, says), "outer", 5, says);
        let e = read_all(again, 5).unwrap_err();
        assert!(matches!(
            e.kind(),
            ErrorKind::Decompress { what: "inner", .. }
        ));
    }
}

//! The bytes the outputs made from one input may hold together
//! ([`Allowance`]): what keeps a command from writing more than the
//! decompression budget (`--max-uncompressed`) allows, however its input
//! is arranged.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The bytes the outputs made from one input may still hold, shared by
/// every [`Output`](super::Output) that counts against it
/// ([`Output::within`](super::Output::within)); several threads may take
/// from it at once.
///
/// Each byte handed to an output counts as it is written (a byte written
/// twice, after a seek back, counts twice), and what reached the file by
/// other ways (a copy from file to file, a mapping) counts when the output
/// is committed, by the file's length. Past the limit, the write (or the
/// commit) fails and the output, dropped, leaves nothing behind.
///
/// # Examples
///
/// ```
/// use std::io::Write;
/// use offload_kit::files::{Allowance, Output};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("out.bin");
/// let allowance = Allowance::new(4, "--max-uncompressed");
/// let mut out = Output::create(&path)?.within(&allowance);
/// assert!(out.write_all(b"12345").is_err());
/// drop(out);
/// assert!(!path.exists());
/// assert_eq!(allowance.spent(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Allowance {
    limit: u64,
    spent: AtomicU64,
    /// Where the limit came from, for messages.
    why: String,
}

impl Allowance {
    /// An allowance of `limit` bytes; `why` says where the limit came from
    /// (`--max-uncompressed`), for the error past it.
    pub fn new(limit: u64, why: impl Into<String>) -> Arc<Allowance> {
        Arc::new(Allowance {
            limit,
            spent: AtomicU64::new(0),
            why: why.into(),
        })
    }

    /// The allowance of the outputs made from an input of `size` bytes:
    /// `given` (`--max-uncompressed`), else the decompression budget a
    /// file of that size gets (1024 times its size, at least 128 MiB, at
    /// most 16 GiB) plus its size, which no real output passes: what a
    /// command writes out of an input is what the input holds, pruned, or
    /// what it inflates to within that budget.
    pub fn for_input(size: u64, given: Option<u64>) -> Arc<Allowance> {
        match given {
            Some(limit) => Allowance::new(limit, "--max-uncompressed"),
            None => Allowance::new(
                crate::limits::uncompressed_for(size).saturating_add(size),
                "the decompression budget of the input's size and its size; \
                 --max-uncompressed sets it",
            ),
        }
    }

    /// The bytes the outputs may hold, together.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The bytes counted so far.
    pub fn spent(&self) -> u64 {
        self.spent.load(Ordering::Relaxed)
    }

    /// Takes `n` bytes, or fails ([`io::ErrorKind::FileTooLarge`], saying
    /// the limit) and takes nothing.
    pub(crate) fn take(&self, n: u64) -> io::Result<()> {
        self.spent
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
                s.checked_add(n).filter(|&t| t <= self.limit)
            })
            .map(drop)
            .map_err(|_| self.passed())
    }

    /// Gives back `n` bytes taken and not written.
    pub(crate) fn give_back(&self, n: u64) {
        let _ = self
            .spent
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
                Some(s.saturating_sub(n))
            });
    }

    fn passed(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "the output would pass the {} bytes the outputs of its input may hold ({}); \
                 nothing of it written",
                self.limit, self.why
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_up_to_the_limit_and_no_further() {
        let a = Allowance::new(10, "--max-uncompressed");
        a.take(6).unwrap();
        a.take(4).unwrap();
        let e = a.take(1).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert!(e.to_string().contains("the 10 bytes"), "{e}");
        assert!(e.to_string().contains("--max-uncompressed"), "{e}");
        assert_eq!(a.spent(), 10);
        a.give_back(3);
        assert_eq!(a.spent(), 7);
        assert!(a.take(u64::MAX).is_err());
        assert_eq!(a.spent(), 7);
    }

    #[test]
    fn the_default_passes_what_an_input_holds_and_may_inflate_to() {
        let small = Allowance::for_input(1000, None);
        assert_eq!(small.limit(), (128 << 20) + 1000);
        let huge = Allowance::for_input(20 << 30, None);
        assert_eq!(huge.limit(), (16u64 << 30) + (20 << 30));
        assert_eq!(Allowance::for_input(20 << 30, Some(5)).limit(), 5);
    }
}

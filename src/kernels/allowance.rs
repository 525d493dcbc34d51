//! How many kernels and symbols one command may list.

use crate::error::Result;

/// The default limit of an [`Allowance`]: the kernels and symbols one
/// command may list. A kernel takes about 400 bytes with its figures, so
/// the listings stay under about 100 MiB; the largest library seen
/// (libcusparse) lists about 70,000 kernels.
pub const DEFAULT_MAX_LISTED: u64 = 250_000;

/// How many kernels and symbols listings may hold in all: one allowance
/// for a whole command, shared by every [`Collect`](super::Collect) and
/// [`read_within`](super::read_within) of it, on every thread. Each kernel
/// and symbol read is taken from it before it is kept; past the limit the
/// reading stops with an
/// [`ErrorKind::CountExceeded`](crate::ErrorKind::CountExceeded) error,
/// so that no image, whatever counts its tables declare, makes listings
/// larger than the limit. Clones share one count.
///
/// ```
/// use offload_kit::kernels::{self, Allowance};
///
/// let ptx = b".version 8.0\n.target sm_80\n.entry a\n{\n}\n.entry b\n{\n}\n";
/// let allowance = Allowance::new(1);
/// assert!(kernels::read_within(ptx, &allowance).is_err());
/// assert!(allowance.exhausted());
/// assert_eq!(kernels::read_within(ptx, &Allowance::new(2))?.unwrap().kernels.len(), 2);
/// # Ok::<(), offload_kit::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Allowance(std::sync::Arc<Spending>);

/// An [`Allowance`]'s count, shared by its clones.
#[derive(Debug)]
struct Spending {
    limit: u64,
    spent: std::sync::atomic::AtomicU64,
}

impl Allowance {
    /// An allowance of `limit` kernels and symbols.
    pub fn new(limit: u64) -> Allowance {
        Allowance(std::sync::Arc::new(Spending {
            limit,
            spent: std::sync::atomic::AtomicU64::new(0),
        }))
    }

    /// The limit it started from.
    pub fn limit(&self) -> u64 {
        self.0.limit
    }

    /// Whether some reading went past the limit (and was stopped).
    pub fn exhausted(&self) -> bool {
        self.0.spent.load(std::sync::atomic::Ordering::Relaxed) > self.0.limit
    }

    /// Takes `n` entries; an error once the limit is passed.
    pub(super) fn spend(&self, n: u64) -> Result<()> {
        let before = self
            .0
            .spent
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        if before.saturating_add(n) > self.0.limit {
            return Err(crate::error::ErrorKind::CountExceeded {
                what: "kernels and symbols listed (--max-kernels)".into(),
                limit: self.0.limit,
            }
            .into());
        }
        Ok(())
    }
}

impl Default for Allowance {
    /// An allowance of [`DEFAULT_MAX_LISTED`].
    fn default() -> Allowance {
        Allowance::new(DEFAULT_MAX_LISTED)
    }
}

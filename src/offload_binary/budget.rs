//! One command's budget for reading OffloadBinaries ([`Budget`], whose
//! documentation says what is counted; [`Limits`] holds the defaults).

use std::cell::Cell;

use crate::error::{ErrorKind, Result};
use crate::limits::{DEFAULT_DEPTH, Limits, MIN_FILES, MIN_IMAGES, uncompressed_for};
// What a budget counts lives in the leaf `error` module, which carries it in
// `ErrorKind::BudgetExceeded`.
pub use crate::error::spent::Spent;

/// One command's budget for reading OffloadBinaries: every read it makes,
/// of every input and of every binary nested in an image, spends from the
/// same budget, so that no input — a compressed binary that inflates
/// to gigabytes, binaries nested in each other that fan out — costs more
/// than its limits, however its parts are arranged.
///
/// Four things are counted: bytes inflated out of compressed (version 3)
/// binaries (and decoded out of LLVM bitcode), images read, files written (counted by the caller, which
/// writes them) and levels of binaries nested in images. Each limit is
/// either given or derived from the size of the command's inputs
/// ([`Budget::add_input`]), so that real files (libraries with thousands of
/// images, device code that compresses well) pass while a file of a few
/// kilobytes can cost no more than a fraction of a second and a bounded
/// amount of memory (the defaults: [`Limits`]).
///
/// What one command may still spend ([`Spent`]); shared by reference by
/// every read it makes. Not for several threads at once (the counters are
/// [`Cell`]s).
#[derive(Debug, Default)]
pub struct Budget {
    limits: Limits,
    /// Bytes of input seen, for the derived limits.
    input: Cell<u64>,
    inflated: Cell<u64>,
    images: Cell<u64>,
    files: Cell<u64>,
}

impl Budget {
    /// A budget with these limits, no input seen yet.
    pub fn new(limits: Limits) -> Budget {
        Budget {
            limits,
            ..Budget::default()
        }
    }

    /// A copy of this budget as it stands (limits, inputs, what was
    /// spent): what a trial read spends from it is not spent from this one.
    pub fn fork(&self) -> Budget {
        Budget {
            limits: self.limits,
            input: self.input.clone(),
            inflated: self.inflated.clone(),
            images: self.images.clone(),
            files: self.files.clone(),
        }
    }

    /// A budget with the same limits and inputs and nothing spent: for a
    /// second pass over what a first one read within this budget (which
    /// then costs the same).
    pub fn renewed(&self) -> Budget {
        Budget {
            limits: self.limits,
            input: self.input.clone(),
            ..Budget::default()
        }
    }

    /// The limits it was made with (a limit left at `None` is derived
    /// from the inputs' size).
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The bytes of input noted so far ([`Budget::add_input`]).
    pub fn input(&self) -> u64 {
        self.input.get()
    }

    /// Notes an input of `len` bytes: the derived limits grow with it.
    pub fn add_input(&self, len: u64) {
        self.input.set(self.input.get().saturating_add(len));
    }

    /// The limit on `what` now.
    pub fn limit(&self, what: Spent) -> u64 {
        let input = self.input.get();
        match what {
            Spent::Inflated => self
                .limits
                .max_uncompressed
                .unwrap_or_else(|| uncompressed_for(input)),
            Spent::Images => self
                .limits
                .max_images
                .unwrap_or_else(|| (input / 16).max(MIN_IMAGES)),
            Spent::Files => self
                .limits
                .max_files
                .unwrap_or_else(|| (input / 1024).max(MIN_FILES)),
            Spent::Depth => self.limits.max_depth.unwrap_or(DEFAULT_DEPTH),
        }
    }

    /// How much of `what` was spent (for [`Spent::Depth`], always 0: depth
    /// is checked, not spent).
    pub fn spent(&self, what: Spent) -> u64 {
        match what {
            Spent::Inflated => self.inflated.get(),
            Spent::Images => self.images.get(),
            Spent::Files => self.files.get(),
            Spent::Depth => 0,
        }
    }

    /// What is left of `what`.
    pub fn left(&self, what: Spent) -> u64 {
        self.limit(what).saturating_sub(self.spent(what))
    }

    /// Spends `n` of `what` (not [`Spent::Depth`]), or fails with
    /// [`ErrorKind::BudgetExceeded`] (`detail()` says what would have gone
    /// past the limit) and spends nothing.
    pub fn spend(&self, what: Spent, n: u64, detail: impl FnOnce() -> String) -> Result<()> {
        let cell = match what {
            Spent::Inflated => &self.inflated,
            Spent::Images => &self.images,
            Spent::Files => &self.files,
            Spent::Depth => return self.check_depth(n, detail),
        };
        let limit = self.limit(what);
        match cell.get().checked_add(n) {
            Some(total) if total <= limit => {
                cell.set(total);
                Ok(())
            }
            _ => Err(exceeded(what, limit, detail())),
        }
    }

    /// Fails with [`ErrorKind::BudgetExceeded`] when a binary nested
    /// `depth` levels deep (1: in an image of a binary of the file) is
    /// past the limit.
    pub fn check_depth(&self, depth: u64, detail: impl FnOnce() -> String) -> Result<()> {
        let limit = self.limit(Spent::Depth);
        if depth > limit {
            return Err(exceeded(Spent::Depth, limit, detail()));
        }
        Ok(())
    }
}

fn exceeded(what: Spent, limit: u64, detail: String) -> crate::Error {
    ErrorKind::BudgetExceeded {
        what,
        limit,
        detail,
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_limits_grow_with_the_inputs_within_their_bounds() {
        use crate::limits::{MAX_UNCOMPRESSED as MAX_INFLATED, MIN_UNCOMPRESSED as MIN_INFLATED};
        let b = Budget::default();
        assert_eq!(b.limit(Spent::Inflated), MIN_INFLATED);
        assert_eq!(b.limit(Spent::Images), MIN_IMAGES);
        assert_eq!(b.limit(Spent::Files), MIN_FILES);
        assert_eq!(b.limit(Spent::Depth), DEFAULT_DEPTH);
        b.add_input(1 << 20);
        b.add_input(1 << 20);
        assert_eq!(b.limit(Spent::Inflated), 2 << 30);
        assert_eq!(b.limit(Spent::Images), 2 << 16);
        assert_eq!(b.limit(Spent::Files), MIN_FILES);
        b.add_input(u64::MAX);
        assert_eq!(b.limit(Spent::Inflated), MAX_INFLATED);
        assert_eq!(b.limit(Spent::Images), u64::MAX / 16);
        let given = Budget::new(Limits {
            max_uncompressed: Some(10),
            ..Limits::default()
        });
        given.add_input(1 << 30);
        assert_eq!(given.limit(Spent::Inflated), 10);
    }

    #[test]
    fn spending_past_a_limit_fails_and_spends_nothing() {
        let b = Budget::new(Limits {
            max_images: Some(5),
            max_depth: Some(2),
            ..Limits::default()
        });
        b.spend(Spent::Images, 3, String::new).unwrap();
        let e = b
            .spend(Spent::Images, 3, || "the binary at 0x0 holds 3".into())
            .unwrap_err();
        assert!(
            matches!(
                e.kind(),
                ErrorKind::BudgetExceeded {
                    what: Spent::Images,
                    limit: 5,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "the binary at 0x0 holds 3: over this command's limit of 5 images"
        );
        assert_eq!(b.spent(Spent::Images), 3);
        b.spend(Spent::Images, 2, String::new).unwrap();
        assert_eq!(b.left(Spent::Images), 0);
        assert!(b.spend(Spent::Images, u64::MAX, String::new).is_err());
        b.check_depth(2, String::new).unwrap();
        assert!(b.check_depth(3, String::new).is_err());
        assert!(b.spend(Spent::Depth, 3, String::new).is_err());
    }
}

//! What a plan is made of: each container rewritten where it lies
//! ([`Edit`]), all of a file's ([`Plan`]), and what holds them ([`Host`]).

use crate::error::{Error, Result};
use crate::host::linked::openmp::Registration;
use crate::prune::containers::Pruned;

/// One container rewritten where it lies.
#[derive(Debug, Clone)]
pub struct Edit {
    /// The container's id in the report.
    pub container: usize,
    /// Where it starts in the file.
    pub offset: u64,
    /// Bytes it occupied.
    pub size: u64,
    /// What it becomes: its ranges are of the container's bytes (from
    /// `offset`), or of `built` when the new container was built whole.
    pub pruned: Pruned,
    /// The new container's bytes, when built in memory (a recompressed
    /// CCOB).
    pub built: Option<Vec<u8>>,
}

impl Edit {
    /// Bytes the rewrite frees (zeros after the new container).
    /// [`plan`](super::plan) makes no edit whose new container is larger
    /// than the old (0 for one made otherwise).
    pub fn freed(&self) -> u64 {
        self.size.saturating_sub(self.pruned.layout.size)
    }

    /// Where it ends in the file, when that is in `len` bytes.
    pub(super) fn end_within(&self, len: u64) -> Option<u64> {
        self.offset.checked_add(self.size).filter(|&e| e <= len)
    }
}

/// What pruning a file does.
///
/// A plan that [`plan`](super::plan) makes holds its edits in file
/// order, each inside the file, none overlapping another, and none larger
/// after than before ([`Plan::check`]): what the pruned file written
/// from it relies on.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The containers rewritten, in file order.
    pub edits: Vec<Edit>,
    /// The OpenMP descriptors that register OffloadBinaries the edits
    /// remove (a linked ELF file's), rewritten to register the others.
    pub(crate) registrations: Vec<Registration>,
    /// The bytes those rewrites put in the file, by file offset, when
    /// nothing moves (the file rewritten in place): in order, apart, and
    /// apart from the edits.
    pub(crate) patches: Vec<(u64, Vec<u8>)>,
}

impl Plan {
    /// Whether the file stays as it is.
    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }

    /// Bytes freed in all. (The edits of a plan that
    /// [`plan`](super::plan) makes lie apart in the file, so the sum is at
    /// most its size: saturating never changes it.)
    pub fn freed(&self) -> u64 {
        self.edits
            .iter()
            .map(Edit::freed)
            .fold(0, u64::saturating_add)
    }

    /// Checks that the edits are in file order, inside a file of `len`
    /// bytes, apart from one another, and no larger after than before.
    pub fn check(&self, len: u64) -> Result<()> {
        let mut pos = 0;
        for e in &self.edits {
            let end = e
                .end_within(len)
                .ok_or_else(|| Error::invalid("file", "a container runs past its end"))?;
            if e.offset < pos {
                return Err(Error::unsupported(format!(
                    "two containers to rewrite overlap at {:#x}: nothing is pruned",
                    e.offset
                )));
            }
            if e.pruned.layout.size > e.size {
                return Err(Error::unsupported(format!(
                    "the container at {:#x} would grow: nothing is pruned",
                    e.offset
                )));
            }
            pos = end;
        }
        Ok(())
    }
}

/// What holds the containers, which decides what can be done with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// A linked program or shared library: containers are rewritten where
    /// they lie (OffloadBinaries there go whole, and their OpenMP
    /// descriptor is rewritten).
    Linked,
    /// A relocatable object: sections are rewritten, so OffloadBinaries can
    /// go whole, and a host object's bundle sections are the object
    /// rewrite's to remove (no edit here).
    Relocatable,
    /// A bare container file (or a run of OffloadBinaries): the freed bytes
    /// are cut out, so OffloadBinaries can go whole.
    Raw,
}

//! What pruning a file on disk is asked with ([`PathOptions`]), answers
//! ([`PathReport`]) and fails with ([`PathError`]), what prune made of one
//! file's bytes ([`Pruning`]), and how the result is written (`write.rs`:
//! by position, with no name until [`finish`] gives it one). Both
//! [`prune_path`](super::prune_path) (`by_kind.rs`) and the package
//! rewriters it calls ([`super::rewriters`]: wheels, `.deb`s, conda
//! packages, images) use these, so they sit below both: nothing here
//! calls a rewriter or `by_kind.rs`, and the files this module's own
//! files use (`anchor.rs`, `packed.rs`, `budget.rs`) name what they need
//! of it where it is defined (`path::error`, `path::report`), never
//! through this file, which `scripts/module-graph.py` would see as a
//! circle.

pub(super) mod error;
mod keep;
mod options;
mod pruning;
pub(super) mod report;
mod write;

pub use error::{PathError, PathErrorKind};
pub use options::{Destination, PathOptions};
pub(crate) use pruning::Pruning;
pub(crate) use report::merge;
pub use report::{CondaRecords, ImageGroup, ImageRewritten, PackageBytes, PathReport, RemovedFile};
pub(crate) use write::{create, finish, punch, remove, remove_by_name, write_at, write_through};

//! Conda packages read and rewritten on their bytes, file by file, either
//! container: a `.conda` (a zip of stored members: `metadata.json`,
//! `info-*.tar.zst`, `pkg-*.tar.zst`) or a `.tar.bz2` (one bzip2 tar
//! holding `info/` and the payload).
//!
//! Opening ([`Package`]) reads the info archive for `info/paths.json`,
//! `info/files` and `info/index.json`. One read of the payload
//! ([`rewrite`]) asks a caller's [`Decide`] what each file becomes in
//! each of any number of outputs ([`Fate`](crate::package::Fate): kept,
//! replaced by new bytes, left out), checking each file against its row
//! of `paths.json` on the way; each output is then written from what it
//! answered ([`Plan::write`]) with its records true ([`Plan::records`]:
//! the rows and lines of the files rewritten and removed), its tars
//! compressed again as they came ([`compress`]: zstd at level 19, bzip2
//! at the block size its header gives).
//!
//! A file whose `prefix_placeholder` would move is refused, as is a
//! package that changes without `info/paths.json`, one whose rows do not
//! match its files, and an entry named outside the prefix. Everything
//! here works on the package's bytes and on open files: the caller maps
//! the input, creates the outputs and names the errors.

pub(crate) mod compress;
mod error;
pub(crate) mod info;
mod read;
mod rewrite;
mod rows;
mod write;

pub(crate) use error::Error;
pub(crate) use read::{Container, Package, is_conda};
pub(crate) use rewrite::{Conda, Failed, Member, Plan, rewrite};
pub(crate) use write::{Records, Target};

#[cfg(test)]
mod tests;

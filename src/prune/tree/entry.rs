//! What a [`prune_tree`](super::prune_tree) run reports of each path it
//! met ([`TreeEntry`]).

use std::path::PathBuf;

use crate::prune::path::{PathError, PathReport};

/// One path a [`prune_tree`](super::prune_tree) run met, and what became of it.
#[derive(Debug)]
#[non_exhaustive]
pub struct TreeEntry {
    /// The path: as named, or found (the directory named, joined with
    /// the path below it).
    pub path: PathBuf,
    /// Whether it was named rather than found in a directory.
    pub named: bool,
    /// What became of it.
    pub outcome: TreeOutcome,
    /// For a file the run changed (rewrote or removed; in a dry run,
    /// would): the installed Debian package that lists it, `NAME` or
    /// `NAME:ARCH`, in the dpkg database of the root it lies under (the
    /// nearest directory above it holding `var/lib/dpkg/info`). That
    /// database is not edited: `dpkg --verify` then lists the file until
    /// the package is installed again.
    pub dpkg_package: Option<String>,
}

/// What became of one path of a [`prune_tree`](super::prune_tree) run.
#[derive(Debug)]
#[non_exhaustive]
pub enum TreeOutcome {
    /// Pruned (in a dry run, read), as [`prune_path`](crate::prune::prune_path) reports it: a
    /// file that holds nothing to remove is reported too (with
    /// `containers_rewritten` 0, and no images kept or dropped when it
    /// holds no device code).
    Pruned(Box<PathReport>),
    /// It could not be pruned and is as it was: a file [`prune_path`](crate::prune::prune_path)
    /// failed on ([`PathError::refused`](crate::prune::PathError::refused) tells a refusal from damaged
    /// data or an I/O failure), a directory that could not be read, a
    /// directory given with a destination other than in place or a dry
    /// run.
    Failed(PathError),
    /// Left as it is without being pruned.
    Skipped(Skip),
    /// A pip `*.dist-info/RECORD`, or a conda environment's
    /// `conda-meta/*.json`, found in a directory that names files the run
    /// rewrote or removed, brought up to date (in a dry run, that would
    /// be): the rows of the files rewritten given their new SHA-256 and
    /// size, the rows of the files removed taken out.
    Record {
        /// Rows given a new hash and size.
        rows_rewritten: usize,
        /// Rows taken out.
        rows_removed: usize,
    },
    /// A directory below one named that the run emptied (files removed
    /// whole, directories so emptied) and so removed (in a dry run, that
    /// would be). A directory that was empty before is left.
    DirectoryRemoved,
}

/// Why a path found in a directory was left as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Skip {
    /// A symbolic link: not followed, not rewritten.
    SymbolicLink,
    /// Another name (hard link) of the file handled under this name.
    HardLink(PathBuf),
    /// Found again: a directory given twice, or inside another given.
    Again,
    /// A member file of this thin archive, pruned with it.
    ThinMember(PathBuf),
    /// Its first bytes are of no format prune reads: nothing in it can be
    /// cut.
    NoKnownFormat,
    /// Not a regular file: a FIFO, a socket, a device.
    NotRegular,
    /// A temporary file (`.offload-kit-*`) that an interrupted run left:
    /// a whole copy of the old or the new file beside it, for the user to
    /// remove.
    Leftover,
}

//! The package formats that prune rewrites member by member, one row each
//! ([`PACKAGES`]): how a file of the format is recognised by its bytes,
//! and the function that prunes it whole, from reading it to writing it
//! back where [`PathOptions`] says. Each such function opens the package,
//! prunes each member as a file named alone would be
//! ([`Pruning::of`](super::path::Pruning::of)), removes the per-GPU files
//! the rules drop ([`companion`](super::companion)), brings the package's
//! own list of hashes up to date, and writes it
//! ([`finish`](super::path::finish)); what is particular to a format
//! (a zip's central directory and `RECORD`s, a `.deb`'s streamed
//! `data.tar` and `md5sums`, a conda package's inner tars and
//! `info/paths.json`, an RPM's payload and headers, a squashfs
//! filesystem's tables and a SIF's descriptors) stays in its own file. A new format is a new file
//! and a row here.

use std::path::Path;

use super::model::Selection;
use super::path::{PathError, PathOptions, PathReport};
use super::{conda, deb, oci, rpm, squashfs, wheel};
use crate::files::Input;
use crate::package::{self, Kind};

/// One package format that prune rewrites.
pub(crate) struct Rewriter {
    /// Whether a file whose bytes are these is one.
    pub(crate) is: fn(&[u8]) -> bool,
    /// Prunes the package `input` (with its metadata, mapped) as `opts`
    /// say, keeping what the selection keeps; `None` when reading it shows
    /// it is not of the format after all (a `.tar.bz2` with no conda
    /// `info/`), for the next row or the file's own prune.
    pub(crate) prune: Prune,
}

/// A package format's prune ([`Rewriter::prune`]).
pub(crate) type Prune = fn(
    &Selection,
    &PathOptions,
    &Path,
    &std::fs::Metadata,
    &Input,
) -> Result<Option<PathReport>, PathError>;

/// The package formats prune rewrites, in the order they are tried: a
/// conda package (`.conda`, a zip with conda's members, before the
/// wheel; `.tar.bz2`, a bzip2 tar with conda's `info/`), a wheel (any
/// zip from its first byte), a Debian package, an RPM package, a squashfs
/// filesystem, a SIF image (its squashfs system partition), a `docker
/// save` archive (a plain tar with a `manifest.json` listing images).
pub(crate) const PACKAGES: &[Rewriter] = &[
    Rewriter {
        is: conda::is_conda,
        prune: |s, o, i, m, f| conda::prune_conda(s, o, i, m, f).map(Some),
    },
    Rewriter {
        is: |data| package::detect(data) == Some(Kind::Tar(package::Compression::Bzip2)),
        prune: conda::prune_tar_bz2,
    },
    Rewriter {
        is: |data| package::detect(data) == Some(Kind::Zip),
        prune: |s, o, i, m, f| wheel::prune(s, o, i, m, f).map(Some),
    },
    Rewriter {
        is: |data| package::detect(data) == Some(Kind::Deb),
        prune: |s, o, i, m, f| deb::prune(s, o, i, m, f).map(Some),
    },
    Rewriter {
        is: |data| package::detect(data) == Some(Kind::Rpm),
        prune: |s, o, i, m, f| rpm::prune(s, o, i, m, f).map(Some),
    },
    Rewriter {
        is: squashfs::is_squashfs,
        prune: |s, o, i, m, f| squashfs::prune(s, o, i, m, f).map(Some),
    },
    Rewriter {
        is: squashfs::is_sif,
        prune: |s, o, i, m, f| squashfs::prune(s, o, i, m, f).map(Some),
    },
    Rewriter {
        is: |data| package::detect(data) == Some(Kind::Tar(package::Compression::None)),
        prune: oci::prune_docker,
    },
];

//! Tampering is never laundered. A package's record of its files (a
//! wheel's `RECORD`, a `.deb`'s `md5sums`, an installed package's
//! `*.dist-info/RECORD` or `conda-meta/*.json`) says what each file's
//! bytes hash to; prune rewrites the rows of the files it changes. Were
//! it to rewrite the row of a file whose bytes already differ from what
//! the row said, the output would verify clean and the change before it
//! would be hidden. So each file prune reads is checked against its row
//! first, and a row that does not match refuses the package (or, in a
//! directory, the file) — unless
//! [`PathOptions::trust_bytes`](super::PathOptions::trust_bytes) says to
//! take the bytes as they are, and then the report names each wrong row
//! ([`PathReport::records_wrong`](super::PathReport::records_wrong)).
//!
//! The records are read, and their rows judged, where the scanners read
//! and judge them ([`crate::package::records`]), so that `check` and
//! `prune` agree on every row.

use std::path::Path;

pub(crate) use crate::package::records::{PipRow, Wrong, conda_wrong};

use super::path::{PathError, PathErrorKind, PathOptions, PathReport};

/// What becomes of `wrong`, a row of a record of the package `input`
/// (named `name`): with [`PathOptions::trust_bytes`] it is noted in
/// `rep` and the pruning goes on; otherwise the package is refused as
/// damaged (nothing is written).
pub(crate) fn settle(
    opts: &PathOptions,
    input: &Path,
    name: &str,
    wrong: &Wrong<'_>,
    rep: &mut PathReport,
) -> Result<(), PathError> {
    if opts.trust_bytes {
        rep.records_wrong.push(format!("'{name}': {}", wrong.why()));
        return Ok(());
    }
    Err(refusal(input, name, wrong, PathErrorKind::Content))
}

/// The error for `wrong`, of the kind given, about `input` (named `name`).
pub(crate) fn refusal(
    input: &Path,
    name: &str,
    wrong: &Wrong<'_>,
    kind: PathErrorKind,
) -> PathError {
    let why = format!(
        "{}: prune never rewrites a row its file does not match (--trust-bytes takes the \
         bytes as they are)",
        wrong.why()
    );
    PathError::said(kind, input, name, why)
}

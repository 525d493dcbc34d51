//! The `diff --json` document: the roots, the files shown and a summary
//! (docs/diff.md).

use std::path::Path;

use serde::Serialize;

use super::compared::{Compared, FileStatus};
use crate::diff::FileDiff;
use crate::inputs::Scanned;
use crate::scan::json::Elsewhere;

/// How many files were compared, and what happened to them.
#[derive(Serialize, Default)]
pub(crate) struct Summary {
    pub(crate) files: usize,
    pub(crate) same: usize,
    pub(crate) changed: usize,
    pub(crate) added: usize,
    pub(crate) removed: usize,
    pub(crate) errors: usize,
}

/// The files shown, counted by what happened to them.
pub(crate) fn summary(compared: &[Compared]) -> Summary {
    let mut s = Summary::default();
    for c in compared.iter().filter(|c| c.shown) {
        s.files += 1;
        *match c.status {
            FileStatus::Same => &mut s.same,
            FileStatus::Changed => &mut s.changed,
            FileStatus::Added => &mut s.added,
            FileStatus::Removed => &mut s.removed,
            FileStatus::Error => &mut s.errors,
        } += 1;
    }
    s
}

/// The schema [`Document`] follows (docs/diff.md).
pub(crate) const SCHEMA: &str = "offload-kit/diff/1";

/// The `diff --json` document (schema [`SCHEMA`]): the roots, the files
/// shown and a summary. Serializing it with `serde_json::to_writer_pretty`
/// gives exactly what `offload-kit diff --json` prints.
#[derive(Serialize)]
pub(crate) struct Document<'a> {
    schema: &'static str,
    old: String,
    new: String,
    kernels: bool,
    files: Vec<DocumentFile<'a>>,
    summary: Summary,
}

/// One file of a [`Document`].
#[derive(Serialize)]
struct DocumentFile<'a> {
    path: &'a str,
    old_path: Option<&'a str>,
    new_path: Option<&'a str>,
    status: FileStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// CUDA fatbins in the data sections of each side, which the diff does
    /// not compare (`inspect --json` has the same lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    old_fatbins_elsewhere: Option<Elsewhere<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    new_fatbins_elsewhere: Option<Elsewhere<'a>>,
    #[serde(flatten)]
    diff: Option<&'a FileDiff>,
}

impl<'a> Document<'a> {
    /// The document of `compared`, the files below `old` and `new`
    /// (`kernels`: whether kernels were compared).
    pub(crate) fn new(
        old: &Path,
        new: &Path,
        kernels: bool,
        compared: &'a [Compared],
    ) -> Document<'a> {
        let files = compared
            .iter()
            .filter(|c| c.shown)
            .map(|c| DocumentFile {
                path: &c.path,
                old_path: c.old.as_ref().map(|s| s.path.as_str()),
                new_path: c.new.as_ref().map(|s| s.path.as_str()),
                status: c.status,
                error: error_of(c),
                old_fatbins_elsewhere: elsewhere(c.old.as_ref()),
                new_fatbins_elsewhere: elsewhere(c.new.as_ref()),
                diff: c.diff.as_ref(),
            })
            .collect();
        Document {
            schema: SCHEMA,
            old: crate::files::shown(old).into_owned(),
            new: crate::files::shown(new).into_owned(),
            kernels,
            files,
            summary: summary(compared),
        }
    }
}

/// The fatbins in the data sections of side `s`, when it has some.
fn elsewhere(s: Option<&Scanned>) -> Option<Elsewhere<'_>> {
    Elsewhere::of(s?.result.as_ref().ok()?)
}

/// Why a file could not be compared: each side's error, naming its path.
fn error_of(c: &Compared) -> Option<String> {
    let errors: Vec<String> = [&c.old, &c.new]
        .iter()
        .filter_map(|s| {
            let s = s.as_ref()?;
            let e = s.result.as_ref().err()?;
            Some(format!("'{}': {e}", s.path))
        })
        .collect();
    (!errors.is_empty()).then(|| errors.join("; "))
}

//! One file paired across the two sides, and what happened to it.

use serde::Serialize;

use crate::diff::FileDiff;
use crate::inputs::Scanned;

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FileStatus {
    Same,
    Changed,
    Added,
    Removed,
    /// A side could not be read: nothing is compared.
    Error,
}

/// One file, paired (or not) across the sides, and compared.
pub(crate) struct Compared {
    /// Its path below the roots given (`""`: the files given themselves).
    pub(crate) path: String,
    pub(crate) old: Option<Scanned>,
    pub(crate) new: Option<Scanned>,
    pub(crate) status: FileStatus,
    pub(crate) diff: Option<FileDiff>,
    /// Whether it is reported.
    pub(crate) shown: bool,
}

impl Compared {
    /// The name the table shows.
    pub(crate) fn name(&self) -> String {
        match (&self.old, &self.new) {
            _ if !self.path.is_empty() => self.path.clone(),
            (Some(o), Some(n)) => format!("{} -> {}", o.path, n.path),
            (Some(s), None) | (None, Some(s)) => s.path.clone(),
            (None, None) => String::new(),
        }
    }

    /// Whether it is shown and differs.
    pub(crate) fn differs(&self) -> bool {
        self.shown && !matches!(self.status, FileStatus::Same | FileStatus::Error)
    }
}

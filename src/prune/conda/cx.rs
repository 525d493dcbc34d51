//! What the pruning of one conda package works with, for the package's
//! walk and its records.

use std::collections::HashMap;
use std::path::Path;

use super::super::Selection;
use super::super::job::Job;
use super::super::path::{PathError, PathErrorKind, PathOptions};
use super::info::Row;
use crate::package::tar::walk::{Fault, Header};

/// What the pruning of one package works with: what every package's
/// does ([`Job`], which it derefs to), and what a conda package's walk
/// needs besides.
pub(crate) struct Cx<'a> {
    /// The package and how it is pruned.
    pub(super) job: Job<'a>,
    /// Why the decompression budget is what it is, for messages.
    pub(super) why: &'static str,
    /// Where in the package the walk is, for messages (`member
    /// 'pkg-….tar.zst'`, `its tar archive`).
    pub(super) place: String,
    /// The rows of `info/paths.json`, by path.
    pub(super) rows: HashMap<Vec<u8>, Row>,
    /// Whether the walk meets `info/` (a `.tar.bz2`), to copy as it is.
    pub(super) skip_info: bool,
    /// Why `info/paths.json` could not be read, if it could not.
    pub(super) unreadable: Option<String>,
}

impl<'a> Cx<'a> {
    /// The pruning of `input`, `skip_info` for a `.tar.bz2`.
    pub(super) fn new(
        sel: &'a Selection,
        opts: &'a PathOptions,
        input: &'a Path,
        why: &'static str,
        skip_info: bool,
    ) -> Cx<'a> {
        Cx {
            job: Job::new(sel, opts, input),
            why,
            place: "its tar archive".into(),
            rows: HashMap::new(),
            skip_info,
            unreadable: None,
        }
    }

    /// `'PACKAGE': WHY`, about what it holds.
    pub(super) fn said(&self, why: String) -> PathError {
        PathError::said(PathErrorKind::Content, self.input, &self.name, why)
    }

    /// The error for `fault`, met where the walk is.
    pub(super) fn fault(&self, fault: Fault) -> PathError {
        match fault {
            Fault::Write(e) => {
                let out = self.opts.output_path(self.input).ok().flatten();
                PathError::write(out.as_deref().unwrap_or(self.input), e)
            }
            Fault::Read(e) => self.said(format!("{}: cannot be read: {e}", self.place)),
            Fault::Damaged(why) => self.said(format!("{}: {why}", self.place)),
            Fault::Budget(limit) => self.said(format!(
                "{} inflates to more than the {limit} bytes left of the decompression budget \
                 ({})",
                self.place, self.why
            )),
        }
    }

    /// Checks the `size_in_bytes` of `path`'s row against `size`.
    pub(super) fn check_size(&self, path: &[u8], size: u64) -> Result<(), PathError> {
        match self.rows.get(path).and_then(|r| r.size) {
            Some(said) if said != size => Err(self.lie(path, "size_in_bytes", &said, &size)),
            _ => Ok(()),
        }
    }

    /// Checks the `sha256` of `path`'s row against `sha`.
    pub(super) fn check_sha(&self, path: &[u8], sha: &[u8; 32]) -> Result<(), PathError> {
        let Some(said) = self.rows.get(path).and_then(|r| r.sha256.as_deref()) else {
            return Ok(());
        };
        let is = hex(sha);
        match said == is {
            true => Ok(()),
            false => Err(self.lie(path, "sha256", &said, &is)),
        }
    }

    /// Checks the entry `h` against its row's `path_type`: a `softlink`
    /// row names a symbolic link of the package, and a symbolic link has
    /// no row of another type.
    pub(super) fn check_path_type(&self, h: &Header) -> Result<(), PathError> {
        let Some(row) = self.rows.get(&h.path) else {
            return Ok(());
        };
        let symlink = h.kind() == b'2';
        if row.softlink == symlink {
            return Ok(());
        }
        let (said, is) = match symlink {
            true => ("not softlink", "a symbolic link"),
            false if h.is_hard_link() => ("softlink", "a hard link"),
            false if h.kind() == b'5' => ("softlink", "a directory"),
            false if h.is_file() => ("softlink", "a regular file"),
            false => ("softlink", "no symbolic link"),
        };
        Err(self.said(format!(
            "info/paths.json: the 'path_type' of '{}' is {said}, but the package's entry is {is}",
            String::from_utf8_lossy(&h.path)
        )))
    }

    /// Checks that each `softlink` row of `paths.json` names an entry of
    /// the package, `seen` being every path the walk met.
    pub(super) fn check_softlinks_found(
        &self,
        seen: &std::collections::BTreeSet<Vec<u8>>,
    ) -> Result<(), PathError> {
        let mut missing: Vec<&Vec<u8>> = self
            .rows
            .iter()
            .filter(|(p, r)| r.softlink && !seen.contains(*p))
            .map(|(p, _)| p)
            .collect();
        missing.sort();
        match missing.first() {
            None => Ok(()),
            Some(p) => Err(self.said(format!(
                "info/paths.json: the 'softlink' row of '{}' names no entry of the package",
                String::from_utf8_lossy(p)
            ))),
        }
    }

    /// The error for a row of `paths.json` whose `field` says `said` of
    /// `path`, whose bytes say `is`.
    pub(super) fn lie(
        &self,
        path: &[u8],
        field: &str,
        said: &dyn std::fmt::Display,
        is: &dyn std::fmt::Display,
    ) -> PathError {
        self.said(format!(
            "info/paths.json: the '{field}' of '{}' is {said}, but the file's is {is}",
            String::from_utf8_lossy(path)
        ))
    }
}

impl<'a> std::ops::Deref for Cx<'a> {
    type Target = Job<'a>;

    fn deref(&self) -> &Job<'a> {
        &self.job
    }
}

/// Lowercase hex of `bytes`.
pub(crate) use crate::package::records::hex;

//! A conda package's files checked against the rows of its
//! `info/paths.json` as its payload is walked: each regular file's size
//! and SHA-256, each entry's `path_type` (a `softlink` row names a
//! symbolic link of the package, and a symbolic link has no row of
//! another type). A row the bytes do not match is damage, never
//! rewritten to match.

use std::collections::{BTreeSet, HashMap};

use super::error::Error;
use super::info::{Info, Row, rows};
use crate::package::records::hex;
use crate::package::tar::Header;

/// The rows of a package's `info/paths.json`, by path.
#[derive(Default)]
pub(crate) struct Rows {
    rows: HashMap<Vec<u8>, Row>,
    /// Why `info/paths.json` could not be read, if it could not: an
    /// error only once the package changes.
    pub(super) unreadable: Option<String>,
}

impl Rows {
    /// The rows of `info`'s `paths.json`, if it has one.
    pub(super) fn of(info: &Info) -> Rows {
        let mut r = Rows::default();
        if let Some(text) = info.paths_json.as_deref() {
            match rows(text) {
                Ok(rows) => r.rows = rows,
                Err(why) => r.unreadable = Some(why),
            }
        }
        r
    }

    /// The prefix placeholder of `path`'s row, if it has one.
    pub(super) fn placeholder(&self, path: &[u8]) -> Option<&[u8]> {
        self.rows.get(path).and_then(|r| r.placeholder.as_deref())
    }

    /// Checks the `size_in_bytes` of `path`'s row against `size`.
    pub(super) fn check_size(&self, path: &[u8], size: u64) -> Result<(), Error> {
        match self.rows.get(path).and_then(|r| r.size) {
            Some(said) if said != size => Err(lie(path, "size_in_bytes", &said, &size)),
            _ => Ok(()),
        }
    }

    /// Checks the `sha256` of `path`'s row against `sha`.
    pub(super) fn check_sha(&self, path: &[u8], sha: &[u8; 32]) -> Result<(), Error> {
        let Some(said) = self.rows.get(path).and_then(|r| r.sha256.as_deref()) else {
            return Ok(());
        };
        let is = hex(sha);
        match said == is {
            true => Ok(()),
            false => Err(lie(path, "sha256", &said, &is)),
        }
    }

    /// Checks the entry `h` against its row's `path_type`.
    pub(super) fn check_path_type(&self, h: &Header) -> Result<(), Error> {
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
        Err(Error::Damaged(format!(
            "info/paths.json: the 'path_type' of '{}' is {said}, but the package's entry is {is}",
            String::from_utf8_lossy(&h.path)
        )))
    }

    /// Checks that each `softlink` row names an entry of the package,
    /// `seen` being every symbolic link the walk met.
    pub(super) fn check_softlinks_found(&self, seen: &BTreeSet<Vec<u8>>) -> Result<(), Error> {
        let mut missing: Vec<&Vec<u8>> = self
            .rows
            .iter()
            .filter(|(p, r)| r.softlink && !seen.contains(*p))
            .map(|(p, _)| p)
            .collect();
        missing.sort();
        match missing.first() {
            None => Ok(()),
            Some(p) => Err(Error::Damaged(format!(
                "info/paths.json: the 'softlink' row of '{}' names no entry of the package",
                String::from_utf8_lossy(p)
            ))),
        }
    }
}

/// The error for a row of `paths.json` whose `field` says `said` of
/// `path`, whose bytes say `is`.
fn lie(
    path: &[u8],
    field: &str,
    said: &dyn std::fmt::Display,
    is: &dyn std::fmt::Display,
) -> Error {
    Error::Damaged(format!(
        "info/paths.json: the '{field}' of '{}' is {said}, but the file's is {is}",
        String::from_utf8_lossy(path)
    ))
}

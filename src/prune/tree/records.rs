//! The pip RECORDs of a directory pruned in place, kept true: each
//! `*.dist-info/RECORD` found in the walk that names a file the run
//! rewrote gets its new SHA-256 and size, and loses the rows of the files
//! the run removed ([`crate::package::zipfile::record::new_record_with`], as for a
//! wheel). `pip uninstall` and `pip check`-like tools then find every
//! file as the RECORD says.
//!
//! A RECORD's paths are relative to the directory that holds its
//! `.dist-info` (site-packages), `..` allowed (a script in `bin/`); they
//! are matched against the paths the walk found by their components,
//! `.` and `..` taken lexically. A conda environment's
//! `conda-meta/*.json` is brought up to date the same way
//! ([`super::conda`]).
//!
//! In place, a record is reached as the files pruned are
//! ([`crate::prune::anchor`]): opened in its directory's handle with no
//! symbolic link followed, checked to be the regular file the walk found
//! (device and inode), its new text written in that handle and renamed
//! over it there, with its owner, mode, extended attributes and times
//! kept; a record swapped for a link (to a file outside the tree) since
//! the walk is refused by its name, and what the link leads to is left
//! as it was.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use super::conda;
use super::entry::{Skip, TreeEntry, TreeOutcome};
use crate::files::Input;
use crate::package::zipfile::record::{Change, new_record_with};
use crate::prune::anchor::{Anchor, Lost, Root};
use crate::prune::path::{PathError, PathErrorKind, PathOptions, PathReport, create, finish};

/// Where a record found in the walk lies: below the directory walked
/// (its handle and the path under it), with the device, inode and access
/// time the walk found it with.
pub(super) struct Placed {
    pub(super) root: Arc<Root>,
    pub(super) rel: PathBuf,
    pub(super) id: (u64, u64),
    pub(super) accessed: Option<std::time::SystemTime>,
}

/// The records found in the walk, by their paths.
pub(super) type Places = HashMap<PathBuf, Placed>;

/// Whether `path` is a record of a format kept true.
pub(super) fn is_any_record(path: &Path) -> bool {
    RECORDS.iter().any(|f| (f.is)(path))
}

/// The record `path` opened for reading, with its metadata (taken before
/// it is read): through its directory's handle where the walk placed it
/// (`placed`), so that a link put in its place since is refused and
/// never followed; by its path otherwise.
pub(super) fn open_record(
    path: &Path,
    placed: Option<&Placed>,
) -> Result<(std::fs::Metadata, Input, Option<Anchor>), PathError> {
    #[cfg(test)]
    crate::prune::race::at(crate::prune::race::Phase::Open, path);
    let Some(p) = placed else {
        let meta = std::fs::metadata(path).map_err(|e| PathError::open(path, e))?;
        let file = Input::open(path).map_err(|e| PathError::open(path, e))?;
        return Ok((meta, file, None));
    };
    let a = p
        .root
        .anchor(&p.rel, Some(p.id))
        .map_err(|e| e.error(path))?;
    let f = a.open(false).map_err(|e| e.error(path))?;
    let meta = f.metadata().map_err(|e| PathError::open(path, e))?;
    let file = Input::of_open(f, &meta).map_err(|e| PathError::open(path, e))?;
    Ok((meta, file, Some(a)))
}

/// What became of a file of the run, for the RECORDs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Fate {
    Rewritten,
    Removed,
}

/// What the run did to the file of `e` (in a dry run, would do):
/// `None` when it is not a file the run changed.
pub(super) fn changed(e: &TreeEntry, dry: bool) -> Option<Fate> {
    let TreeOutcome::Pruned(r) = &e.outcome else {
        return None;
    };
    let removed = r.removed.len() == 1 && r.removed[0].path == r.path && r.bytes_after == 0;
    match (removed, dry) {
        (true, _) => Some(Fate::Removed),
        (false, false) if r.output.is_some() => Some(Fate::Rewritten),
        (false, true) if r.containers_rewritten > 0 || !r.removed.is_empty() => {
            Some(Fate::Rewritten)
        }
        _ => None,
    }
}

/// `path` with `.` dropped and `..` taken lexically.
pub(crate) fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// A list of installed files with their hashes that a run keeps true: how
/// it is recognised by its path, and how it is brought up to date with
/// the fates of the files the run changed ([`record`], [`conda_record`]:
/// the rows given a new hash and size and the rows removed, counted;
/// `None` when it names no file of them).
struct RecordFormat {
    is: fn(&Path) -> bool,
    update: Update,
}

/// How a record is brought up to date: the record (and where the walk
/// found it), the fates of the files changed by their lexical paths, the
/// options, whether in a dry run; the rows rewritten and removed.
type Update = fn(
    &Path,
    Option<&Placed>,
    &HashMap<PathBuf, Fate>,
    &PathOptions,
    bool,
) -> Result<Option<(usize, usize)>, PathError>;

/// The record formats kept true, in the order they are tried: pip's
/// `*.dist-info/RECORD`, a conda environment's `conda-meta/*.json`.
const RECORDS: &[RecordFormat] = &[
    RecordFormat {
        is: is_record,
        update: record,
    },
    RecordFormat {
        is: conda::is_conda_meta,
        update: conda_record,
    },
];

/// Whether `path` is a pip RECORD: `RECORD` in a `*.dist-info` directory.
pub(crate) fn is_record(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "RECORD")
        && path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|d| d.as_encoded_bytes().ends_with(b".dist-info"))
}

/// Brings up to date every RECORD (and conda record) among `entries` (files found in the
/// directories, left as of no format prune reads) that names a file the
/// run rewrote or removed: in place, written as a pruned file is (whole
/// or not at all, with the old file's metadata); in a dry run, only
/// counted. Its entry then says so ([`TreeOutcome::Record`]), or why it
/// could not be written ([`TreeOutcome::Failed`]).
pub(super) fn update(entries: &mut [TreeEntry], places: &Places, opts: &PathOptions) {
    let dry = opts.destination == crate::prune::Destination::DryRun;
    let fates: HashMap<PathBuf, Fate> = entries
        .iter()
        .filter_map(|e| Some((lexical(&e.path), changed(e, dry)?)))
        .collect();
    if fates.is_empty() {
        return;
    }
    for e in entries.iter_mut() {
        let found = !e.named && matches!(e.outcome, TreeOutcome::Skipped(Skip::NoKnownFormat));
        let Some(format) = RECORDS.iter().find(|f| found && (f.is)(&e.path)) else {
            continue;
        };
        let updated = (format.update)(&e.path, places.get(&e.path), &fates, opts, dry);
        match updated {
            Ok(Some((rewritten, removed))) => {
                e.outcome = TreeOutcome::Record {
                    rows_rewritten: rewritten,
                    rows_removed: removed,
                };
            }
            Ok(None) => {}
            Err(err) => e.outcome = TreeOutcome::Failed(err),
        }
    }
}

/// A record found in the walk, opened.
struct Opened<'a> {
    /// Its name, for messages.
    name: String,
    meta: std::fs::Metadata,
    /// Its bytes, mapped.
    file: Input,
    /// What the paths in it are relative to: the directory holding the
    /// record's own (a RECORD's `.dist-info`, which site-packages holds; a
    /// conda environment's `conda-meta`).
    base: &'a Path,
    /// In a walked tree, its place: it is then rewritten in its
    /// directory's handle, never by its path.
    anchor: Option<Anchor>,
    /// Its access time as the walk found it, before the run read it.
    accessed: Option<std::time::SystemTime>,
}

impl Opened<'_> {
    fn new<'p>(path: &'p Path, placed: Option<&Placed>) -> Result<Opened<'p>, PathError> {
        let (meta, file, anchor) = open_record(path, placed)?;
        let base = path
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new(""));
        let name = crate::files::shown(path).into_owned();
        Ok(Opened {
            name,
            meta,
            file,
            base,
            anchor,
            accessed: placed.and_then(|p| p.accessed),
        })
    }

    /// The error of a record (at `path`) that cannot be read as `what`.
    fn unreadable(&self, path: &Path, what: &str, e: impl std::fmt::Display) -> PathError {
        let why = format!("it cannot be read as {what}: {e}");
        PathError::said(PathErrorKind::Content, path, &self.name, why)
    }

    /// Replaces the record (at `path`) with `bytes`, as a pruned file is
    /// written: whole or not at all, with the old file's metadata; in a
    /// walked tree, in its directory's handle.
    fn write_back(self, path: &Path, bytes: &[u8], opts: &PathOptions) -> Result<(), PathError> {
        let opts = PathOptions {
            anchor: self.anchor,
            accessed: self.accessed,
            ..opts.clone()
        };
        let cannot = |e| PathError::write(path, e);
        let mut out = create(&opts, path, self.meta.len()).map_err(cannot)?;
        std::io::Write::write_all(&mut out, bytes).map_err(cannot)?;
        let mut rep = PathReport::new(&self.name, self.file.bytes(), &self.meta);
        let through = crate::prune::path::write_through(&opts, path, &self.meta)?;
        drop(self.file);
        finish(&opts, out, &self.meta, path, &mut rep, through)
    }
}

/// The RECORD `path` brought up to date with `fates`: the rows given a new
/// hash and the rows removed, counted; `None` when it names no file of
/// them.
fn record(
    path: &Path,
    placed: Option<&Placed>,
    fates: &HashMap<PathBuf, Fate>,
    opts: &PathOptions,
    dry: bool,
) -> Result<Option<(usize, usize)>, PathError> {
    let o = Opened::new(path, placed)?;
    let text = o.file.bytes();
    let unreadable = |e| o.unreadable(path, "a RECORD (UTF-8 CSV)", e);
    let rows = crate::package::records::pip_rows(text).map_err(unreadable)?;
    // Each file named, with its new hash and size (read back from disk).
    let mut new: BTreeMap<String, (Fate, u64, String)> = BTreeMap::new();
    for (p, _) in &rows {
        let p = p.as_str();
        let Some(&fate) = fates.get(&lexical(&o.base.join(p))) else {
            continue;
        };
        let (size, sha) = match fate {
            Fate::Rewritten if !dry => sha256(&o.base.join(p), placed, p)?,
            _ => (0, String::new()),
        };
        new.insert(p.to_string(), (fate, size, sha));
    }
    if new.is_empty() {
        return Ok(None);
    }
    let changed: BTreeMap<&str, Change<'_>> = new
        .iter()
        .map(|(p, (fate, size, sha))| {
            let c = match fate {
                Fate::Rewritten => Change::Rewritten(*size, sha),
                Fate::Removed => Change::Removed,
            };
            (p.as_str(), c)
        })
        .collect();
    let count = |f: Fate| new.values().filter(|(g, ..)| *g == f).count();
    let counts = (count(Fate::Rewritten), count(Fate::Removed));
    let unwritable = |e| o.unreadable(path, "a RECORD (UTF-8 CSV)", e);
    let Some(bytes) = new_record_with(text, &changed).map_err(unwritable)? else {
        return Ok(None);
    };
    if !dry {
        o.write_back(path, &bytes, opts)?;
    }
    Ok(Some(counts))
}

/// The conda package record `path` (`conda-meta/*.json`) brought up to
/// date with `fates` ([`conda::Record::updated`]): the rows given a new hash and
/// size and the rows removed, counted; `None` when it lists no file of
/// them.
fn conda_record(
    path: &Path,
    placed: Option<&Placed>,
    fates: &HashMap<PathBuf, Fate>,
    opts: &PathOptions,
    dry: bool,
) -> Result<Option<(usize, usize)>, PathError> {
    let o = Opened::new(path, placed)?;
    let text = o.file.bytes();
    let unreadable = |e: serde_json::Error| o.unreadable(path, "a conda package record (JSON)", e);
    let mut new = HashMap::new();
    let record = conda::Record::parse(text).map_err(unreadable)?;
    for p in record.listed() {
        let Some(&fate) = fates.get(&lexical(&o.base.join(&p))) else {
            continue;
        };
        let file = match fate {
            Fate::Removed => None,
            Fate::Rewritten if dry => Some((0, String::new())),
            Fate::Rewritten => {
                let path = o.base.join(&p);
                let (size, sha) = digest(&path, listed_at(placed, &p, &path)?.as_ref())?;
                Some((size, sha.iter().map(|b| format!("{b:02x}")).collect()))
            }
        };
        new.insert(p, file);
    }
    if new.is_empty() {
        return Ok(None);
    }
    let Some((bytes, rewritten, removed)) = record.updated(&new).map_err(unreadable)? else {
        return Ok(None);
    };
    if !dry {
        o.write_back(path, &bytes, opts)?;
    }
    Ok(Some((rewritten, removed)))
}

/// The size of the file `path` and its SHA-256: in a walked tree read
/// through its place `at` (its directory's handle, no link followed,
/// checked to be the file found), else by its path.
pub(super) fn digest(path: &Path, at: Option<&Anchor>) -> Result<(u64, [u8; 32]), PathError> {
    let file = match at {
        Some(a) => {
            let f = a.open(false).map_err(|e| e.error(path))?;
            let meta = f.metadata().map_err(|e| PathError::open(path, e))?;
            Input::of_open(f, &meta)
        }
        None => Input::open(path),
    };
    let file = file.map_err(|e| PathError::open(path, e))?;
    let bytes = file.bytes();
    Ok((bytes.len() as u64, Sha256::digest(bytes).into()))
}

/// The file `p` that the record placed at `placed` names (a path
/// relative to the directory that holds the record's own), reached from
/// the walk's root with no symbolic link followed and no `..` above it
/// (whatever regular file has the name now: the run just wrote it);
/// `path` names it in messages. `None` for a record not found in a walk.
fn listed_at(placed: Option<&Placed>, p: &str, path: &Path) -> Result<Option<Anchor>, PathError> {
    let Some(placed) = placed else {
        return Ok(None);
    };
    let base = placed
        .rel
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new(""));
    let rel = lexical(&base.join(p));
    if rel.is_absolute() || rel.starts_with("..") {
        let why = "a record names it outside the directory pruned: not read".to_string();
        return Err(Lost::Refused(why).error(path));
    }
    let a = placed.root.anchor(&rel, None).map_err(|e| e.error(path))?;
    Ok(Some(a))
}

/// The size of the file `p` that the record placed at `placed` names
/// (`path`: its path) and its SHA-256 as a RECORD gives it (unpadded
/// URL-safe base64).
fn sha256(path: &Path, placed: Option<&Placed>, p: &str) -> Result<(u64, String), PathError> {
    let (size, sha) = digest(path, listed_at(placed, p, path)?.as_ref())?;
    let sha = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha);
    Ok((size, sha))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_compared_by_their_components() {
        assert_eq!(
            lexical(Path::new("venv/lib/site/./x/../../bin/k")),
            PathBuf::from("venv/lib/bin/k")
        );
        assert_eq!(lexical(Path::new("../a/./b")), PathBuf::from("../a/b"));
        assert!(is_record(Path::new("site/x-1.0.dist-info/RECORD")));
        assert!(!is_record(Path::new("site/x-1.0.egg-info/RECORD")));
        assert!(!is_record(Path::new("RECORD")));
    }
}

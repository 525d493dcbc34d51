//! The records of installed packages inside an image kept true: a pip
//! `*.dist-info/RECORD` or a conda `conda-meta/*.json` that a container
//! sees, naming a file the prune rewrote or removed, gets that file's new
//! SHA-256 and size, or loses its row, as `prune --in-place` does for a
//! directory (the same row editing: [`new_record_with`],
//! [`conda::Record::updated`]).
//!
//! A layer's records are held while it streams (each at most
//! [`MAX_RECORD`] bytes), so that a record before or after its files in
//! the tar's order is the same; once the layer is walked, each row naming
//! a changed file is first checked against the file's old bytes — a row
//! they do not match refuses the image ([`tamper`]) unless
//! [`PathOptions::trust_bytes`](super::super::PathOptions::trust_bytes)
//! — and the layer's tar is then copied once more with the records
//! replaced ([`replace`], the package's rewrite of a layer's files).
//!
//! What a container sees is what counts: a record is matched against the
//! files changed in its own layer and in the layers above it (which are
//! read first, [`Down`]). A record in a layer above a file it names (a
//! layer that rewrote the record alone) would have to change after its
//! layer was written: such an image is refused when that file changes,
//! rather than left with a wrong row.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::Path;

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use super::super::path::{PathError, PathErrorKind, PathOptions, PathReport};
use super::super::tamper;
use super::super::tree::conda;
use super::super::tree::records::{is_record, lexical};
use crate::package::oci::{ReplaceError, hex, replace_files};
use crate::package::records::pip_rows;
use crate::package::tar::walk::Fault;
use crate::package::zipfile::record::{Change, new_record_with};

/// What the records of one layer are settled with: the layer's context
/// as [`super::layer`] has it.
pub(super) struct Cx<'a> {
    pub(super) opts: &'a PathOptions,
    /// The image's file.
    pub(super) input: &'a Path,
    /// The image's name for its files (`LAYOUT` or `LAYOUT:NAME`).
    pub(super) name: &'a str,
    /// `'LAYOUT': PLACE: WHY`.
    pub(super) said: &'a dyn Fn(&str) -> PathError,
    /// A fault of the walk, as an error.
    pub(super) fault: &'a dyn Fn(Fault) -> PathError,
}

impl Cx<'_> {
    fn said(&self, why: &str) -> PathError {
        (self.said)(why)
    }
}

/// The most bytes of one record held in memory while its layer streams.
pub(super) const MAX_RECORD: u64 = 16 << 20;

/// The size and SHA-256 of a file's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sum {
    pub(super) size: u64,
    pub(super) sha: [u8; 32],
}

impl Sum {
    /// The sum of `bytes`.
    pub(super) fn of(bytes: &[u8]) -> Sum {
        Sum {
            size: bytes.len() as u64,
            sha: Sha256::digest(bytes).into(),
        }
    }
}

/// What the prune did to a file a container sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fate {
    /// Left out; its old bytes' sum where they were read.
    Removed(Option<Sum>),
    /// Written again: its old bytes' sum and its new ones'.
    Rewritten(Sum, Sum),
}

impl Fate {
    fn old(&self) -> Option<Sum> {
        match *self {
            Fate::Removed(s) => s,
            Fate::Rewritten(s, _) => Some(s),
        }
    }
}

/// Whether the layer path `path` is a record kept true here.
pub(super) fn is_kept(path: &str) -> bool {
    let p = Path::new(path);
    is_record(p) || conda::is_conda_meta(p)
}

/// What one layer's walk found of records and changed files.
#[derive(Default)]
pub(super) struct Found {
    /// The visible files it changed, by path.
    pub(super) fates: BTreeMap<String, Fate>,
    /// The visible records it holds, by path, with their bytes.
    pub(super) held: Vec<(String, Vec<u8>)>,
    /// The visible records over [`MAX_RECORD`], not held.
    pub(super) too_big: Vec<(String, u64)>,
}

/// What the layers above the one being walked tell it.
#[derive(Default)]
pub(super) struct Down {
    /// The files they changed that a container sees, by path.
    changed: HashMap<String, Fate>,
    /// The files that records they hold name, unchanged there: by the
    /// file's path, the record's.
    claimed: HashMap<String, String>,
}

/// The records of the layer that `found` describes brought up to date,
/// checked first (see the module's documentation): each replaced
/// record's path and new bytes; the layers below are then told what
/// changed here (`down`).
pub(super) fn settle(
    cx: &Cx<'_>,
    found: &Found,
    down: &mut Down,
    rep: &mut PathReport,
) -> Result<BTreeMap<String, Vec<u8>>, PathError> {
    for path in found.fates.keys() {
        if let Some(record) = down.claimed.get(path) {
            return Err(cx.said(&format!(
                "'{path}' changes, but the record '{record}' that names it lies in a layer above \
                 (written after this one): prune does not leave it wrong and does not rewrite a \
                 layer it has passed"
            )));
        }
    }
    // A file changed above hides this layer's copy: its old bytes are the
    // ones a container saw.
    let mut seen: HashMap<String, Fate> = found.fates.clone().into_iter().collect();
    seen.extend(down.changed.iter().map(|(p, f)| (p.clone(), *f)));
    let mut out = BTreeMap::new();
    if !seen.is_empty()
        && let Some((path, size)) = found.too_big.first()
    {
        return Err(cx.said(&format!(
            "the record '{path}' is {size} bytes, more than the {MAX_RECORD} prune holds to keep \
             its rows true"
        )));
    }
    for (path, bytes) in &found.held {
        let held = Held {
            cx,
            path,
            full: format!("{}!/{path}", cx.name),
            base: Path::new(path)
                .parent()
                .and_then(Path::parent)
                .unwrap_or(Path::new("")),
        };
        let new = match is_record(Path::new(path)) {
            true => held.pip(bytes, &seen, down, rep)?,
            false => held.conda(bytes, &seen, down, rep)?,
        };
        if let Some(new) = new {
            out.insert(path.clone(), new);
        }
    }
    for (p, f) in &found.fates {
        down.changed.entry(p.clone()).or_insert(*f);
    }
    Ok(out)
}

/// A record of the layer being settled.
struct Held<'a> {
    cx: &'a Cx<'a>,
    /// Its path in the layer.
    path: &'a String,
    /// Its name in messages (`IMAGE!/PATH`).
    full: String,
    /// What the paths in it are relative to.
    base: &'a Path,
}

impl Held<'_> {
    /// The layer path of the file a row names as `p`.
    fn key(&self, p: &str) -> String {
        lexical(&self.base.join(p)).to_string_lossy().into_owned()
    }

    /// The error of a record that cannot be read as `what`.
    fn cannot(&self, what: &str, e: &dyn std::fmt::Display) -> PathError {
        self.cx.said(&format!(
            "the record '{}' cannot be read as {what} to keep its rows true: {e}",
            self.path
        ))
    }

    /// The fate of the file a row names as `p`, if it changed; else the
    /// file is noted as claimed by this record.
    fn fate(&self, p: &str, seen: &HashMap<String, Fate>, down: &mut Down) -> Option<Fate> {
        let key = self.key(p);
        let fate = seen.get(&key).copied();
        if fate.is_none() {
            down.claimed.insert(key, self.path.clone());
        }
        fate
    }

    /// The pip RECORD `bytes` brought up to date; `None` when it names no
    /// changed file.
    fn pip(
        &self,
        bytes: &[u8],
        seen: &HashMap<String, Fate>,
        down: &mut Down,
        rep: &mut PathReport,
    ) -> Result<Option<Vec<u8>>, PathError> {
        let what = "a RECORD (CSV)";
        let rows = pip_rows(bytes).map_err(|e| self.cannot(what, &e))?;
        let mut hits: Vec<(&str, Fate, String)> = Vec::new();
        for (p, row) in &rows {
            let Some(fate) = self.fate(p, seen, down) else {
                continue;
            };
            if let Some(old) = fate.old()
                && let Some(w) = row.wrong(self.path, p, old.size, &old.sha)
            {
                tamper::settle(self.cx.opts, self.cx.input, &self.full, &w, rep)?;
            }
            let sha = match fate {
                Fate::Rewritten(_, n) => b64(&n.sha),
                Fate::Removed(_) => String::new(),
            };
            hits.push((p.as_str(), fate, sha));
        }
        let changes: BTreeMap<&str, Change<'_>> = hits
            .iter()
            .map(|(p, f, sha)| match f {
                Fate::Removed(_) => (*p, Change::Removed),
                Fate::Rewritten(_, n) => (*p, Change::Rewritten(n.size, sha)),
            })
            .collect();
        new_record_with(bytes, &changes).map_err(|e| self.cannot(what, &e))
    }

    /// The conda record `bytes` brought up to date; `None` when it lists
    /// no changed file.
    fn conda(
        &self,
        bytes: &[u8],
        seen: &HashMap<String, Fate>,
        down: &mut Down,
        rep: &mut PathReport,
    ) -> Result<Option<Vec<u8>>, PathError> {
        let what = "a conda package record (JSON)";
        let record = conda::Record::parse(bytes).map_err(|e| self.cannot(what, &e))?;
        let claims: HashMap<String, (Option<String>, Option<u64>)> = record
            .claims()
            .into_iter()
            .map(|(p, s, n)| (p, (s, n)))
            .collect();
        let mut new = HashMap::new();
        for p in record.listed() {
            let Some(fate) = self.fate(&p, seen, down) else {
                continue;
            };
            if let (Some(old), Some((sha, size))) = (fate.old(), claims.get(&p))
                && let Some(w) =
                    tamper::conda_wrong(self.path, &p, (sha.as_deref(), *size), old.size, &old.sha)
            {
                tamper::settle(self.cx.opts, self.cx.input, &self.full, &w, rep)?;
            }
            let file = match fate {
                Fate::Removed(_) => None,
                Fate::Rewritten(_, n) => Some((n.size, hex(&n.sha))),
            };
            new.insert(p, file);
        }
        let updated = record.updated(&new).map_err(|e| self.cannot(what, &e))?;
        Ok(updated.map(|(b, ..)| b))
    }
}

/// A SHA-256 as a RECORD gives it: unpadded URL-safe base64.
fn b64(sha: &[u8; 32]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha)
}

/// Copies the layer's tar `tar` (from its start) to `out` with the data
/// of each visible record in `new` replaced (the package's
/// [`replace_files`]): the new tar, read from its start, and its SHA-256
/// (the layer's new diff_id). Its failures in prune's words.
pub(super) fn replace(
    cx: &Cx<'_>,
    tar: &mut File,
    out: File,
    new: &BTreeMap<String, Vec<u8>>,
) -> Result<(File, String), PathError> {
    replace_files(tar, out, new).map_err(|e| match e {
        ReplaceError::Io(e) => PathError::io(PathErrorKind::Io, cx.input, e),
        ReplaceError::Fault(f) => (cx.fault)(f),
        ReplaceError::OutOfRoot(e) => cx.said(&e.to_string()),
        ReplaceError::PaxSize(path) => cx.said(&format!(
            "the record '{path}': a pax header gives its size, which prune does not rewrite"
        )),
        ReplaceError::Write(e) => PathError::write(cx.input, e),
    })
}

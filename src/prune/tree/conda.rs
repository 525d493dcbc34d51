//! The records of a conda environment pruned in place, kept true: each
//! `conda-meta/<dist>.json` found in the walk that lists a file the run
//! rewrote gets its new `sha256` and `size_in_bytes` (and
//! `sha256_in_prefix`, where the record has it) in `paths_data.paths`,
//! and loses the file's row there and its line in `files` when the run
//! removed it. Its paths are relative to the environment (the directory
//! holding `conda-meta`).
//!
//! The JSON is written back with two-space indents and its keys sorted,
//! as conda writes these files; what is not a listed file's row stays as
//! it was read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::records::{Fate, lexical};
use crate::files::{Input, Output};
use crate::prune::path::{PathError, PathErrorKind, PathOptions, PathReport, finish};

/// Whether `path` is a conda environment's package record:
/// `conda-meta/*.json`.
pub(super) fn is_conda_meta(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
        && path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|d| d == "conda-meta")
}

/// The record `path` brought up to date with `fates`: the rows given a
/// new hash and size and the rows removed, counted; `None` when it lists
/// no file of them.
pub(super) fn update(
    path: &Path,
    fates: &HashMap<PathBuf, Fate>,
    opts: &PathOptions,
    dry: bool,
) -> Result<Option<(usize, usize)>, PathError> {
    let name = crate::files::shown(path).into_owned();
    let meta = std::fs::metadata(path).map_err(|e| PathError::open(path, e))?;
    let file = Input::open(path).map_err(|e| PathError::open(path, e))?;
    let text = file.bytes();
    let unreadable = |why: String| {
        let why = format!("it cannot be read as a conda package record: {why}");
        PathError::said(PathErrorKind::Content, path, &name, why)
    };
    let mut doc: Value = serde_json::from_slice(text).map_err(|e| unreadable(e.to_string()))?;
    // The environment: the directory holding `conda-meta`.
    let base = path
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new(""));
    let fate = |p: &str| fates.get(&lexical(&base.join(p))).copied();
    let (mut rewritten, mut removed) = (0, 0);
    if let Some(rows) = doc
        .get_mut("paths_data")
        .and_then(|d| d.get_mut("paths"))
        .and_then(Value::as_array_mut)
    {
        let mut kept = Vec::with_capacity(rows.len());
        for mut row in std::mem::take(rows) {
            let p = row.get("_path").and_then(Value::as_str).map(str::to_string);
            match p.as_deref().and_then(fate) {
                Some(Fate::Removed) => removed += 1,
                Some(Fate::Rewritten) => {
                    rewritten += 1;
                    if !dry && let (Some(p), Some(obj)) = (p, row.as_object_mut()) {
                        let (size, sha) = sha256(&base.join(p))?;
                        obj.insert("sha256".into(), sha.clone().into());
                        obj.insert("size_in_bytes".into(), size.into());
                        if obj.contains_key("sha256_in_prefix") {
                            obj.insert("sha256_in_prefix".into(), sha.into());
                        }
                    }
                    kept.push(row);
                }
                None => kept.push(row),
            }
        }
        *rows = kept;
    }
    let mut listed = 0;
    if let Some(files) = doc.get_mut("files").and_then(Value::as_array_mut) {
        let before = files.len();
        files.retain(|f| f.as_str().and_then(fate) != Some(Fate::Removed));
        listed = before - files.len();
        // A record with no `paths_data` lists its files here alone.
        if rewritten + removed == 0 {
            removed = listed;
        }
    }
    if rewritten + removed + listed == 0 {
        return Ok(None);
    }
    if dry {
        return Ok(Some((rewritten, removed)));
    }
    let mut bytes = serde_json::to_vec_pretty(&doc).map_err(|e| unreadable(e.to_string()))?;
    if text.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    let cannot = |e| PathError::write(path, e);
    let mut out = Output::create(path).map_err(cannot)?;
    std::io::Write::write_all(&mut out, &bytes).map_err(cannot)?;
    let mut rep = PathReport::new(&name, text, &meta);
    let through = crate::prune::path::write_through(opts, path, &meta)?;
    drop(file);
    finish(opts, out, &meta, path, &mut rep, through)?;
    Ok(Some((rewritten, removed)))
}

/// The size of the file `path` and its SHA-256 in lowercase hex, as conda
/// records it.
fn sha256(path: &Path) -> Result<(u64, String), PathError> {
    let file = Input::open(path).map_err(|e| PathError::open(path, e))?;
    let bytes = file.bytes();
    let hex = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((bytes.len() as u64, hex))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_files_of_conda_meta_are_records() {
        assert!(is_conda_meta(Path::new("env/conda-meta/k-1.0-0.json")));
        assert!(!is_conda_meta(Path::new("env/conda-meta/history")));
        assert!(!is_conda_meta(Path::new("env/lib/k-1.0-0.json")));
    }
}

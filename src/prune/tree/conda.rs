//! A conda environment's package records (`conda-meta/<dist>.json`) on
//! bytes: the files one lists, and the record with the files a run
//! rewrote or removed brought up to date — in `paths_data.paths`, a
//! rewritten file's row gets its new `sha256` and `size_in_bytes` (and
//! `sha256_in_prefix`, where the row has it); a removed file loses its
//! row there and its line in `files`. Paths are relative to the
//! environment (the directory holding `conda-meta`); the file I/O is
//! [`super::records`]'.
//!
//! The JSON is written back with two-space indents and its keys sorted,
//! as conda writes these files; what is not a listed file's row stays as
//! it was read.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

/// What became of a listed file: its new size and SHA-256 (lowercase
/// hex) when rewritten, `None` when removed.
pub(crate) type NewFile = Option<(u64, String)>;

/// Whether `path` is a conda environment's package record:
/// `conda-meta/*.json`.
pub(crate) fn is_conda_meta(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
        && path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|d| d == "conda-meta")
}

/// The rows of `paths_data.paths` in `doc`, if it has them.
fn rows(doc: &mut Value) -> Option<&mut Vec<Value>> {
    doc.get_mut("paths_data")?.get_mut("paths")?.as_array_mut()
}

/// A package record, read once: what it lists, then the record updated.
pub(crate) struct Record {
    doc: Value,
    /// Whether its text ended with a line break (kept when written).
    newline: bool,
}

impl Record {
    /// The record whose text is `text`.
    pub(crate) fn parse(text: &[u8]) -> Result<Record, serde_json::Error> {
        Ok(Record {
            doc: serde_json::from_slice(text)?,
            newline: text.ends_with(b"\n"),
        })
    }

    /// The paths it lists, in `paths_data.paths` and in `files`.
    pub(crate) fn listed(&self) -> Vec<String> {
        let rows = self
            .doc
            .pointer("/paths_data/paths")
            .and_then(Value::as_array);
        let files = self.doc.get("files").and_then(Value::as_array);
        let mut out: Vec<String> = rows
            .into_iter()
            .flatten()
            .filter_map(|r| r.get("_path")?.as_str().map(str::to_string))
            .chain(
                files
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f.as_str().map(str::to_string)),
            )
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// What each row of `paths_data.paths` says its installed file is:
    /// its path, its SHA-256 (`sha256_in_prefix` where the row has it;
    /// else `sha256`, but for a file with a prefix placeholder, which
    /// conda rewrote at install) and its size (`size_in_bytes`, likewise
    /// not for a file with a placeholder), each where known.
    pub(crate) fn claims(&self) -> Vec<(String, Option<String>, Option<u64>)> {
        let rows = self
            .doc
            .pointer("/paths_data/paths")
            .and_then(Value::as_array);
        let text = |r: &Value, k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
        rows.into_iter()
            .flatten()
            .filter_map(|r| {
                let path = text(r, "_path")?;
                let placeholder = r.get("prefix_placeholder").is_some();
                let sha = text(r, "sha256_in_prefix")
                    .or_else(|| text(r, "sha256").filter(|_| !placeholder));
                let size = r
                    .get("size_in_bytes")
                    .and_then(Value::as_u64)
                    .filter(|_| !placeholder);
                Some((path, sha, size))
            })
            .collect()
    }

    /// Its text with `new` applied, and how many rows were given a new
    /// hash and size and how many removed (in `paths_data`, or in `files`
    /// for a record without it); `None` when nothing changes.
    pub(crate) fn updated(
        mut self,
        new: &HashMap<String, NewFile>,
    ) -> Result<Option<(Vec<u8>, usize, usize)>, serde_json::Error> {
        let (mut rewritten, mut removed) = (0, 0);
        if let Some(rows) = rows(&mut self.doc) {
            rows.retain_mut(|row| {
                let p = row.get("_path").and_then(Value::as_str);
                match p.and_then(|p| new.get(p)) {
                    Some(None) => {
                        removed += 1;
                        false
                    }
                    Some(Some((size, sha))) => {
                        rewritten += 1;
                        if let Some(obj) = row.as_object_mut() {
                            obj.insert("sha256".into(), sha.as_str().into());
                            obj.insert("size_in_bytes".into(), (*size).into());
                            if obj.contains_key("sha256_in_prefix") {
                                obj.insert("sha256_in_prefix".into(), sha.as_str().into());
                            }
                        }
                        true
                    }
                    None => true,
                }
            });
        }
        let mut lines = 0;
        if let Some(files) = self.doc.get_mut("files").and_then(Value::as_array_mut) {
            let before = files.len();
            files.retain(|f| !matches!(f.as_str().and_then(|p| new.get(p)), Some(None)));
            lines = before - files.len();
        }
        if rewritten + removed == 0 {
            // A record without `paths_data` lists its files in `files` alone.
            removed = lines;
        }
        if rewritten + removed + lines == 0 {
            return Ok(None);
        }
        let mut bytes = serde_json::to_vec_pretty(&self.doc)?;
        if self.newline {
            bytes.push(b'\n');
        }
        Ok(Some((bytes, rewritten, removed)))
    }
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

    #[test]
    fn rows_of_files_rewritten_and_removed_change_and_nothing_else() {
        let text = br#"{"files": ["a", "b", "c"], "name": "k", "paths_data": {"paths": [
            {"_path": "a", "sha256": "0", "size_in_bytes": 1},
            {"_path": "b", "sha256": "0", "size_in_bytes": 1, "sha256_in_prefix": "0"},
            {"_path": "c", "sha256": "0", "size_in_bytes": 1}], "paths_version": 1}}"#;
        let record = || Record::parse(text).unwrap();
        assert_eq!(record().listed(), ["a", "b", "c"]);
        let new = HashMap::from([
            ("a".to_string(), None),
            ("b".into(), Some((7, "ff".into()))),
        ]);
        let (bytes, rewritten, removed) = record().updated(&new).unwrap().unwrap();
        assert_eq!((rewritten, removed), (1, 1));
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            doc,
            serde_json::json!({"files": ["b", "c"], "name": "k", "paths_data": {"paths": [
                {"_path": "b", "sha256": "ff", "size_in_bytes": 7, "sha256_in_prefix": "ff"},
                {"_path": "c", "sha256": "0", "size_in_bytes": 1}], "paths_version": 1}})
        );
        assert!(record().updated(&HashMap::new()).unwrap().is_none());
        assert!(Record::parse(b"{").is_err());
    }
}

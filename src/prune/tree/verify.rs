//! The files of a directory checked against the records of the
//! installed packages that list them before they are pruned: each pip
//! `*.dist-info/RECORD` and conda `conda-meta/*.json` the walk found says
//! what its files hash to, and `records` rewrites the rows of the files
//! the run changes. A file whose bytes already differ from its row is
//! refused (named, left as it was) rather than pruned, for rewriting the
//! row would hide whatever changed it ([`super::super::tamper`]); with
//! [`PathOptions::trust_bytes`] it is pruned and the wrong row named in
//! its report.
//!
//! A pip row is checked for its hash (`sha256=…`; a hash of another
//! algorithm counts as wrong, being rewritten as a SHA-256) and its size;
//! a conda row for its `sha256_in_prefix` where it has one, else its
//! `sha256` and `size_in_bytes` unless the file has a prefix placeholder
//! (conda rewrote it at install, and no hash of what it became is kept).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::conda;
use super::records::{Places, digest, is_record, lexical, open_record};
use crate::package::records;
use crate::prune::path::{PathError, PathErrorKind, PathOptions};
use crate::prune::tamper::{PipRow, Wrong, conda_wrong, refusal};

/// What a row says of its file.
enum Said {
    /// A pip row: its hash field (`sha256=…`, or empty) and size field.
    Pip(PipRow),
    /// A conda row: the SHA-256 (lowercase hex) and size the installed
    /// file has, each where the row gives it.
    Conda {
        sha256: Option<String>,
        size: Option<u64>,
    },
}

/// One row naming a file.
struct Claim {
    /// The record, as found.
    record: String,
    /// The file, as the row gives it.
    path: String,
    said: Said,
}

/// The rows of the records found, by the lexical path of their file.
#[derive(Default)]
pub(super) struct Claims {
    rows: HashMap<PathBuf, Vec<Claim>>,
    /// The records that cannot be read, each with the lexical path of
    /// the directory its rows are relative to and why: any file below it
    /// may be one it lists.
    unread: Vec<(PathBuf, String, String)>,
}

impl Claims {
    /// The rows of each record among `paths` (files found in the walk
    /// and skipped), each read through its directory's handle where the
    /// walk placed it (`places`). A record that cannot be read (a RECORD
    /// that is not UTF-8 CSV, a conda record that is not JSON) is kept as
    /// such: a file below its directory is not pruned on its word.
    pub(super) fn read<'a>(paths: impl Iterator<Item = &'a Path>, places: &Places) -> Claims {
        let mut claims = Claims::default();
        for path in paths {
            let (pip, conda) = (is_record(path), conda::is_conda_meta(path));
            if !(pip || conda) {
                continue;
            }
            let Ok((_, file, _)) = open_record(path, places.get(path)) else {
                continue;
            };
            let base = path
                .parent()
                .and_then(Path::parent)
                .unwrap_or(Path::new(""));
            let record = crate::files::shown(path).into_owned();
            let rows = match pip {
                true => pip_rows(file.bytes()),
                false => conda_rows(file.bytes()),
            };
            let rows = match rows {
                Ok(rows) => rows,
                Err(why) => {
                    claims.unread.push((lexical(base), record, why));
                    continue;
                }
            };
            for (p, said) in rows {
                let claim = Claim {
                    record: record.clone(),
                    path: p.clone(),
                    said,
                };
                claims
                    .rows
                    .entry(lexical(&base.join(&p)))
                    .or_default()
                    .push(claim);
            }
        }
        claims
    }

    /// Whether a row of a record names the file `path`.
    /// Whether a row of a record names the file `path`, or a record that
    /// cannot be read may.
    pub(super) fn lists(&self, path: &Path) -> bool {
        let path = lexical(path);
        self.rows.contains_key(&path) || self.unread.iter().any(|(b, ..)| path.starts_with(b))
    }

    /// Checks the file `path`, about to be pruned, against every row
    /// naming it: the messages of the wrong rows with
    /// [`PathOptions::trust_bytes`], else the refusal of the first.
    pub(super) fn check(&self, path: &Path, opts: &PathOptions) -> Result<Vec<String>, PathError> {
        let key = lexical(path);
        let mut out = Vec::new();
        for (_, record, why) in self.unread.iter().filter(|(b, ..)| key.starts_with(b)) {
            let why = format!("the record '{record}', which may list it, cannot be read: {why}");
            if !opts.trust_bytes {
                let name = crate::files::shown(path);
                let why = format!(
                    "{why}: prune never changes a file its record cannot vouch for \
                     (--trust-bytes takes the bytes as they are)"
                );
                return Err(PathError::said(PathErrorKind::Refused, path, &name, why));
            }
            out.push(why);
        }
        let Some(claims) = self.rows.get(&key) else {
            return Ok(out);
        };
        // Through the file's place in the tree, as it is pruned.
        let (size, sha) = digest(path, opts.reading())?;
        for c in claims {
            let Some(w) = c.wrong(size, &sha) else {
                continue;
            };
            if !opts.trust_bytes {
                let name = crate::files::shown(path);
                return Err(refusal(path, &name, &w, PathErrorKind::Refused));
            }
            out.push(w.why());
        }
        Ok(out)
    }
}

impl Claim {
    /// What is wrong with the row for a file of `size` bytes whose SHA-256
    /// is `sha`, if anything.
    fn wrong(&self, size: u64, sha: &[u8; 32]) -> Option<Wrong<'_>> {
        match &self.said {
            Said::Pip(row) => row.wrong(&self.record, &self.path, size, sha),
            Said::Conda { sha256, size: said } => {
                let said = (sha256.as_deref(), *said);
                conda_wrong(&self.record, &self.path, said, size, sha)
            }
        }
    }
}

/// The rows of the pip RECORD `text`: each path with what it says
/// ([`records::pip_rows`], the reader the scanners use).
fn pip_rows(text: &[u8]) -> Result<Vec<(String, Said)>, String> {
    let rows = records::pip_rows(text)?;
    Ok(rows.into_iter().map(|(p, r)| (p, Said::Pip(r))).collect())
}

/// The rows of the conda record `text` that say what a file is.
fn conda_rows(text: &[u8]) -> Result<Vec<(String, Said)>, String> {
    let record = conda::Record::parse(text).map_err(|e| format!("it is not JSON: {e}"))?;
    Ok(record
        .claims()
        .into_iter()
        .map(|(p, sha256, size)| (p, Said::Conda { sha256, size }))
        .collect())
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;

    #[test]
    fn pip_and_conda_rows_are_checked() {
        let sha = [1u8; 32];
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha);
        let claim = |said| Claim {
            record: "R".into(),
            path: "a.so".into(),
            said,
        };
        let pip = |hash: &str, size: &str| {
            claim(Said::Pip(PipRow {
                hash: hash.into(),
                size: size.into(),
            }))
        };
        assert!(pip(&format!("sha256={b64}"), "5").wrong(5, &sha).is_none());
        assert!(pip("", "").wrong(5, &sha).is_none());
        assert!(pip("sha256=x", "5").wrong(5, &sha).is_some());
        assert!(pip(&format!("sha256={b64}"), "6").wrong(5, &sha).is_some());
        let hex = "01".repeat(32);
        let conda = |sha256: Option<&str>, size| {
            claim(Said::Conda {
                sha256: sha256.map(str::to_string),
                size,
            })
        };
        assert!(conda(Some(&hex), Some(5)).wrong(5, &sha).is_none());
        assert!(conda(None, None).wrong(5, &sha).is_none());
        let bad = conda(Some("ff"), Some(5));
        let w = bad.wrong(5, &sha).unwrap();
        assert_eq!(
            w.why(),
            format!("R: the 'sha256' of 'a.so' is ff, but the file's is {hex}")
        );
        assert!(conda(Some(&hex), Some(4)).wrong(5, &sha).is_some());
        let rows = conda_rows(
            br#"{"paths_data": {"paths": [
            {"_path": "a", "sha256": "AA", "size_in_bytes": 1},
            {"_path": "b", "sha256": "bb", "sha256_in_prefix": "cc", "size_in_bytes": 1,
             "prefix_placeholder": "/opt/x"},
            {"_path": "c", "sha256": "dd", "size_in_bytes": 1, "prefix_placeholder": "/opt/x"}]}}"#,
        )
        .unwrap();
        let got: Vec<_> = rows
            .iter()
            .map(|(p, s)| match s {
                Said::Conda { sha256, size } => (p.as_str(), sha256.clone(), *size),
                Said::Pip(_) => unreachable!(),
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a", Some("AA".to_string()), Some(1)),
                ("b", Some("cc".to_string()), None),
                ("c", None, None)
            ]
        );
    }

    #[test]
    fn a_file_below_a_record_that_cannot_be_read_is_refused() {
        assert!(pip_rows(b"a.so,sha256=x,1\n\xff.so,,\n").is_err());
        let claims = Claims {
            rows: HashMap::new(),
            unread: vec![(
                PathBuf::from("site"),
                "site/p-1.dist-info/RECORD".into(),
                "it is not UTF-8".into(),
            )],
        };
        assert!(claims.lists(Path::new("site/pkg/k.so")));
        assert!(!claims.lists(Path::new("other/k.so")));
        let mut opts = PathOptions::default();
        let e = claims.check(Path::new("site/pkg/k.so"), &opts).unwrap_err();
        assert!(
            e.to_string()
                .contains("'site/p-1.dist-info/RECORD', which may list it"),
            "{e}"
        );
        opts.trust_bytes = true;
        let said = claims.check(Path::new("site/pkg/k.so"), &opts).unwrap();
        assert_eq!(said.len(), 1);
    }
}

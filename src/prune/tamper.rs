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

use std::path::Path;

use base64::Engine as _;

use super::path::{PathError, PathErrorKind, PathOptions, PathReport};

/// A row of a record that its file's bytes do not match.
pub(crate) struct Wrong<'a> {
    /// The record, as the message names it (`pkg-1.0.dist-info/RECORD`,
    /// `md5sums`).
    pub(crate) record: &'a str,
    /// The file the row names, as the row gives it.
    pub(crate) path: &'a str,
    /// The field that is wrong (`sha256`, `size`, `MD5`).
    pub(crate) field: &'a str,
    /// What the row says.
    pub(crate) said: String,
    /// What the file's bytes are.
    pub(crate) is: String,
}

impl Wrong<'_> {
    /// What is wrong, in the words the conda and image paths use.
    pub(crate) fn why(&self) -> String {
        format!(
            "{}: the '{}' of '{}' is {}, but the file's is {}",
            self.record, self.field, self.path, self.said, self.is
        )
    }
}

/// What a pip RECORD row says of its file: its hash field and its size
/// field, as written.
pub(crate) struct PipRow {
    pub(crate) hash: String,
    pub(crate) size: String,
}

impl PipRow {
    /// What is wrong with the row (of the RECORD `record`, naming `path`)
    /// for a file of `size` bytes whose SHA-256 is `sha`, if anything: a
    /// hash that is not that SHA-256 (one of another algorithm, which
    /// prune does not compute, counts: prune would rewrite it as a
    /// SHA-256), or a size that is not that size. A row with neither
    /// claims nothing.
    pub(crate) fn wrong<'a>(
        &self,
        record: &'a str,
        path: &'a str,
        size: u64,
        sha: &[u8; 32],
    ) -> Option<Wrong<'a>> {
        let wrong = |field, said, is| Wrong {
            record,
            path,
            field,
            said,
            is,
        };
        let is = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha);
        let hash = self.hash.trim();
        if !hash.is_empty() && hash.strip_prefix("sha256=") != Some(is.as_str()) {
            return Some(wrong("hash", format!("'{hash}'"), format!("'sha256={is}'")));
        }
        let said = self.size.trim();
        (!said.is_empty() && said != size.to_string())
            .then(|| wrong("size", format!("'{said}'"), size.to_string()))
    }
}

/// What is wrong with a conda row (of the record `record`, naming
/// `path`) that says the SHA-256 `said_sha` (hex) and the size
/// `said_size` of a file of `size` bytes whose SHA-256 is `sha`, if
/// anything: the hash first, then the size; what the row leaves out
/// claims nothing.
pub(crate) fn conda_wrong<'a>(
    record: &'a str,
    path: &'a str,
    (said_sha, said_size): (Option<&str>, Option<u64>),
    size: u64,
    sha: &[u8; 32],
) -> Option<Wrong<'a>> {
    let wrong = |field, said, is| Wrong {
        record,
        path,
        field,
        said,
        is,
    };
    let is = super::conda::hex(sha);
    if let Some(s) = said_sha.filter(|s| !s.eq_ignore_ascii_case(&is)) {
        return Some(wrong("sha256", s.to_string(), is));
    }
    said_size
        .filter(|s| *s != size)
        .map(|s| wrong("size_in_bytes", s.to_string(), size.to_string()))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_rows_are_wrong_where_their_hash_or_size_differs() {
        let sha = [7u8; 32];
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha);
        let row = |hash: &str, size: &str| PipRow {
            hash: hash.into(),
            size: size.into(),
        };
        let ok = row(&format!("sha256={b64}"), "10");
        assert!(ok.wrong("R", "a.so", 10, &sha).is_none());
        assert!(row("", "").wrong("R", "a.so", 10, &sha).is_none());
        let w = row("sha256=AAAA", "10")
            .wrong("R", "a.so", 10, &sha)
            .unwrap();
        assert_eq!(
            w.why(),
            format!("R: the 'hash' of 'a.so' is 'sha256=AAAA', but the file's is 'sha256={b64}'")
        );
        let w = ok.wrong("R", "a.so", 11, &sha).unwrap();
        assert_eq!(
            w.why(),
            "R: the 'size' of 'a.so' is '10', but the file's is 11"
        );
        // Another algorithm is not checked, so not taken on trust.
        assert!(row("sha512=x", "10").wrong("R", "a.so", 10, &sha).is_some());
    }
}

//! A package's record of its own files, and its members checked against
//! it: a wheel's `*.dist-info/RECORD` (CSV rows `path,sha256=…,size`), a
//! Debian package's `md5sums` (in its `control.tar`), a conda package's
//! `info/paths.json` (`sha256`, `size_in_bytes`). Each reader here is the
//! one the crate has: the scanners check a package's members with it as
//! they read them ([`Ledger`]), and `prune` checks the files it reads
//! before it rewrites their rows with the same readers and the same
//! verdicts ([`Wrong`]).
//!
//! A row that its member's bytes do not match is damage: the package was
//! changed after it was made (or broke on its way), and a gate must not
//! pass it. A record that cannot be read (a RECORD that is not UTF-8 or
//! not CSV, a `paths.json` that is not JSON) is damage too; a row that
//! says nothing of its file (a RECORD's own row, a signature's, an
//! `md5sums` line of no such form) claims nothing.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use base64::Engine as _;
use md5::Digest as _;
use serde_json::Value;
use sha2::Sha256;

use super::compression::{Compression, compression_of, decoder};
use super::is_tar_header;
use super::tar::normalized;
use super::types::{Kind, corrupt};
use crate::error::Result;

/// The most bytes of `md5sums` read.
pub(crate) const MAX_MD5SUMS: u64 = 64 << 20;

/// A row of a record that its file's bytes do not match.
#[derive(Debug)]
pub(crate) struct Wrong<'a> {
    /// The record, as the message names it (`pkg-1.0.dist-info/RECORD`,
    /// `md5sums`).
    pub(crate) record: &'a str,
    /// The file the row names, as the row gives it.
    pub(crate) path: &'a str,
    /// The field that is wrong (`hash`, `size`, `MD5`, `sha256`,
    /// `size_in_bytes`).
    pub(crate) field: &'a str,
    /// What the row says.
    pub(crate) said: String,
    /// What the file's bytes are.
    pub(crate) is: String,
}

impl<'a> Wrong<'a> {
    /// The wrong rows of the record `record` naming `path`: made from the
    /// field, what the row says and what the bytes are.
    fn of(record: &'a str, path: &'a str) -> impl Fn(&'a str, String, String) -> Wrong<'a> {
        move |field, said, is| Wrong {
            record,
            path,
            field,
            said,
            is,
        }
    }

    /// What is wrong: `RECORD: the 'FIELD' of 'PATH' is SAID, but the
    /// file's is IS`.
    pub(crate) fn why(&self) -> String {
        format!(
            "{}: the '{}' of '{}' is {}, but the file's is {}",
            self.record, self.field, self.path, self.said, self.is
        )
    }
}

/// What a pip RECORD row says of its file: its hash field and its size
/// field, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PipRow {
    /// `sha256=…` (unpadded URL-safe base64), another algorithm's, or
    /// empty.
    pub(crate) hash: String,
    /// The size in bytes, or empty.
    pub(crate) size: String,
}

impl PipRow {
    /// What is wrong with the row (of the RECORD `record`, naming `path`)
    /// for a file of `size` bytes whose SHA-256 is `sha`, if anything: a
    /// hash that is not that SHA-256 (one of another algorithm, which is
    /// not computed here, counts: prune would rewrite it as a SHA-256),
    /// or a size that is not that size. A row with neither (the RECORD's
    /// own, a signature's) claims nothing, as pip takes it.
    pub(crate) fn wrong<'a>(
        &self,
        record: &'a str,
        path: &'a str,
        size: u64,
        sha: &[u8; 32],
    ) -> Option<Wrong<'a>> {
        let wrong = Wrong::of(record, path);
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

/// The rows of the pip RECORD `text`, in order: each path with what it
/// says. A RECORD is UTF-8 CSV (pip reads it so): one that is not, or
/// whose CSV breaks, is an error saying where, never read in part.
pub(crate) fn pip_rows(text: &[u8]) -> std::result::Result<Vec<(String, PipRow)>, String> {
    let text = std::str::from_utf8(text).map_err(|e| {
        format!(
            "it is not UTF-8 (at byte {}), as a RECORD is",
            e.valid_up_to()
        )
    })?;
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut out = Vec::new();
    for row in rdr.records() {
        let row = row.map_err(|e| format!("it is not CSV: {e}"))?;
        let field = |i| row.get(i).unwrap_or_default().to_string();
        let said = PipRow {
            hash: field(1),
            size: field(2),
        };
        out.push((field(0), said));
    }
    Ok(out)
}

/// Lowercase hexadecimal of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
    let wrong = Wrong::of(record, path);
    let is = hex(sha);
    if let Some(s) = said_sha.filter(|s| !s.eq_ignore_ascii_case(&is)) {
        return Some(wrong("sha256", s.to_string(), is));
    }
    said_size
        .filter(|s| *s != size)
        .map(|s| wrong("size_in_bytes", s.to_string(), size.to_string()))
}

/// What a conda package's `info/paths.json` says of one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CondaRow {
    /// Its SHA-256, lowercase hex, if given.
    pub(crate) sha256: Option<String>,
    /// Its size, if given.
    pub(crate) size: Option<u64>,
    /// The build prefix written in it, which conda replaces at install.
    pub(crate) placeholder: Option<Vec<u8>>,
    /// Whether its `path_type` is `softlink`: the package holds it as a
    /// symbolic link.
    pub(crate) softlink: bool,
}

/// The rows of a conda package's `info/paths.json` (`{"paths": [{"_path",
/// "path_type", "sha256", "size_in_bytes", "prefix_placeholder", …}],
/// "paths_version": 1}`), by path; an error naming the field that is not
/// as the format says.
pub(crate) fn conda_rows(text: &[u8]) -> std::result::Result<HashMap<Vec<u8>, CondaRow>, String> {
    let doc: Value = serde_json::from_slice(text).map_err(|e| format!("not JSON: {e}"))?;
    let paths = doc
        .get("paths")
        .and_then(Value::as_array)
        .ok_or("it has no 'paths' list")?;
    let mut out = HashMap::with_capacity(paths.len());
    for (i, row) in paths.iter().enumerate() {
        let path = row
            .get("_path")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("row {i} has no '_path' string"))?;
        let sha256 = match row.get("sha256") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.to_ascii_lowercase()),
            Some(_) => return Err(format!("the 'sha256' of '{path}' is not a string")),
        };
        let size = match row.get("size_in_bytes") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .ok_or_else(|| format!("the 'size_in_bytes' of '{path}' is not a size"))?,
            ),
        };
        let placeholder = row
            .get("prefix_placeholder")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(|p| p.as_bytes().to_vec());
        let softlink = row.get("path_type").and_then(Value::as_str) == Some("softlink");
        let row = CondaRow {
            sha256,
            size,
            placeholder,
            softlink,
        };
        out.insert(path.as_bytes().to_vec(), row);
    }
    Ok(out)
}

/// A line of `md5sums` (without its line terminator) as its MD5 (32
/// hexadecimal digits) and its path without a leading `./` or `/` (after
/// a space and a space or `*`); `None` for a line of no such form.
/// (`md5sum(1)`'s output format, which `dpkg --verify` reads.)
pub(crate) fn md5sums_line(body: &[u8]) -> Option<(&[u8], &[u8])> {
    if body.len() < 35 || !body[..32].iter().all(u8::is_ascii_hexdigit) || body[32] != b' ' {
        return None;
    }
    Some((&body[..32], normalized(&body[34..])))
}

/// The MD5 each line of the `md5sums` `text` gives its path (lowercase
/// hexadecimal), by path as [`md5sums_line`] gives it; lines of no such
/// form are skipped. A path listed twice keeps its first line's.
pub(crate) fn md5sums_rows(text: &[u8]) -> BTreeMap<Vec<u8>, String> {
    let mut out = BTreeMap::new();
    for line in text.split(|&b| b == b'\n') {
        let Some((md5, path)) = md5sums_line(line.strip_suffix(b"\r").unwrap_or(line)) else {
            continue;
        };
        let md5 = String::from_utf8_lossy(md5).to_ascii_lowercase();
        out.entry(path.to_vec()).or_insert(md5);
    }
    out
}

/// Whether the zip archive `zip` is a conda package (`.conda`): its
/// `metadata.json`, `pkg-*.tar*` and `info-*.tar*`.
pub(crate) fn is_conda_zip<R: std::io::Read + std::io::Seek>(zip: &zip::ZipArchive<R>) -> bool {
    let names: Vec<_> = zip.file_names().filter_map(|n| n.ok()).collect();
    names.iter().any(|n| n == "metadata.json")
        && names.iter().any(|n| is_conda_inner(n, "pkg-"))
        && names.iter().any(|n| is_conda_inner(n, "info-"))
}

/// Whether the member `name` of a `.conda` is one of its inner tars
/// (`start` being `pkg-` or `info-`).
fn is_conda_inner(name: &str, start: &str) -> bool {
    name.starts_with(start) && name.contains(".tar")
}

/// Where a conda package says what it is.
const INDEX_JSON: &str = "info/index.json";

/// Where a conda package lists its files with their hashes.
const PATHS_JSON: &str = "info/paths.json";

/// What package a [`Ledger`] checks.
enum Form {
    /// A zip holding `*.dist-info/RECORD`s: a wheel.
    Wheel,
    /// A Debian package: the MD5 its `md5sums` gives each file of its
    /// `data.tar`, by path.
    Deb(BTreeMap<Vec<u8>, String>),
    /// A bzip2-compressed tar: a conda package when it holds
    /// `info/index.json`.
    CondaTar,
    /// A `.conda`: its files are the members of its inner tars.
    CondaZip,
}

/// A package's members checked against its record of them: each member
/// read is handed over ([`Ledger::member`]), and once the package is read
/// [`Ledger::finish`] says whether a row is wrong. The rows of members not
/// handed over (links, directories, members that could not be read) are
/// not checked.
pub(crate) struct Ledger {
    form: Form,
    kind: Kind,
    /// Each member's size and SHA-256 (a Debian package's: its MD5 is
    /// checked as it comes), by path.
    seen: HashMap<String, (u64, [u8; 32])>,
    /// The RECORDs (or `info/paths.json`) read, by path.
    records: Vec<(String, Vec<u8>)>,
    /// Whether `info/index.json` was read.
    index: bool,
    /// The first wrong `md5sums` line.
    wrong_md5: Option<String>,
}

impl Ledger {
    /// The ledger of the package `bytes` of kind `kind`, if it is one
    /// whose record is checked: a zip holding a `*.dist-info/RECORD` or a
    /// `.conda`, a Debian package with an `md5sums` (read here from its
    /// `control.tar`, within `budget`, which is charged what that
    /// decompresses to), a bzip2-compressed tar. A package whose
    /// structure cannot be read here has none: reading its members says
    /// why.
    pub(crate) fn of(bytes: &[u8], kind: Kind, budget: &mut u64) -> Result<Option<Ledger>> {
        let form = match kind {
            Kind::Zip => {
                let Ok(zip) = zip::ZipArchive::new(std::io::Cursor::new(bytes)) else {
                    return Ok(None);
                };
                if is_conda_zip(&zip) {
                    Form::CondaZip
                } else if zip
                    .file_names()
                    .any(|n| n.is_ok_and(|n| n.ends_with(".dist-info/RECORD")))
                {
                    Form::Wheel
                } else {
                    return Ok(None);
                }
            }
            Kind::Deb => match md5sums_of(bytes, budget)? {
                Some(rows) if !rows.is_empty() => Form::Deb(rows),
                _ => return Ok(None),
            },
            Kind::Tar(Compression::Bzip2) => Form::CondaTar,
            _ => return Ok(None),
        };
        Ok(Some(Ledger::new(form, kind)))
    }

    /// A ledger of a package of `kind` read as `form`, nothing seen yet.
    fn new(form: Form, kind: Kind) -> Ledger {
        Ledger {
            form,
            kind,
            seen: HashMap::new(),
            records: Vec::new(),
            index: false,
            wrong_md5: None,
        }
    }

    /// Whether the member `path` of this package is a package whose own
    /// members are this package's files (a `.conda`'s inner tars), to be
    /// handed over here with `fed`.
    pub(crate) fn feeds(&self, path: &str) -> bool {
        matches!(self.form, Form::CondaZip)
            && (is_conda_inner(path, "pkg-") || is_conda_inner(path, "info-"))
    }

    /// The member `path` (without a leading `/`), whose bytes are
    /// `bytes`; `fed` when it is a member of a package this one
    /// [`feeds`](Ledger::feeds).
    pub(crate) fn member(&mut self, path: &str, bytes: &[u8], fed: bool) {
        if fed != matches!(self.form, Form::CondaZip) {
            return;
        }
        if let Form::Deb(rows) = &self.form {
            let Some(said) = rows.get(normalized(path.as_bytes())) else {
                return;
            };
            let is = hex(&md5::Md5::digest(bytes));
            if *said != is && self.wrong_md5.is_none() {
                let wrong = Wrong {
                    record: "md5sums",
                    path,
                    field: "MD5",
                    said: said.clone(),
                    is,
                };
                self.wrong_md5 = Some(wrong.why());
            }
            return;
        }
        let is_record = match self.form {
            Form::Wheel => path.ends_with(".dist-info/RECORD"),
            _ => path == PATHS_JSON,
        };
        if is_record {
            self.records.push((path.to_string(), bytes.to_vec()));
        }
        self.index |= path == INDEX_JSON;
        let sha = Sha256::digest(bytes);
        self.seen
            .insert(path.to_string(), (bytes.len() as u64, sha.into()));
    }

    /// The error of the first row that its member's bytes do not match,
    /// or of a record that cannot be read; `Ok` when every row holds.
    pub(crate) fn finish(self) -> Result<()> {
        let damaged = |why: String| {
            corrupt(
                self.kind,
                format!("{why}: a row of the package's record of its files is wrong"),
            )
        };
        if let Some(why) = &self.wrong_md5 {
            return Err(damaged(why.clone()));
        }
        let conda = matches!(self.form, Form::CondaTar | Form::CondaZip);
        if conda && !self.index {
            return Ok(());
        }
        for (record, text) in &self.records {
            let cannot = |why: String| corrupt(self.kind, format!("'{record}': {why}"));
            if !conda {
                for (path, row) in pip_rows(text).map_err(cannot)? {
                    let Some((size, sha)) = self.seen.get(&path) else {
                        continue;
                    };
                    if let Some(w) = row.wrong(record, &path, *size, sha) {
                        return Err(damaged(w.why()));
                    }
                }
                continue;
            }
            let mut rows: Vec<_> = conda_rows(text).map_err(cannot)?.into_iter().collect();
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            for (path, row) in rows {
                let path = String::from_utf8_lossy(&path);
                let Some((size, sha)) = self.seen.get(path.as_ref()).filter(|_| !row.softlink)
                else {
                    continue;
                };
                let said = (row.sha256.as_deref(), row.size);
                if let Some(w) = conda_wrong(record, &path, said, *size, sha) {
                    return Err(damaged(w.why()));
                }
            }
        }
        Ok(())
    }
}

/// The rows of the `md5sums` in the `control.tar` of the Debian package
/// `bytes`, if it has one; what decompressing it takes is charged to
/// `budget`.
fn md5sums_of(bytes: &[u8], budget: &mut u64) -> Result<Option<BTreeMap<Vec<u8>, String>>> {
    let damaged = |why: String| corrupt(Kind::Deb, why);
    let ar = crate::host::ar::Archive::parse(bytes).map_err(|e| corrupt(Kind::Deb, e))?;
    for m in ar.members() {
        let m = m.map_err(|e| corrupt(Kind::Deb, e))?;
        if !m.name().starts_with(b"control.tar") {
            continue;
        }
        let data = m.data().map_err(|e| corrupt(Kind::Deb, e))?;
        let c = match is_tar_header(data) {
            true => Compression::None,
            false => compression_of(data).ok_or_else(|| {
                damaged("its control.tar is neither a tar archive nor compressed".into())
            })?,
        };
        let left = *budget;
        let reader = decoder(data, c).map_err(|e| corrupt(Kind::Deb, e))?;
        let mut reader = reader.take(left);
        let found = md5sums_in(&mut reader);
        *budget = budget.saturating_sub(left - reader.limit());
        if reader.limit() == 0 {
            return Err(damaged(format!(
                "its control.tar inflates to more than the {left} bytes left of the \
                 decompression budget (--max-uncompressed)"
            )));
        }
        return found.map_err(|e| damaged(format!("its control.tar: {e}")));
    }
    Ok(None)
}

/// The rows of the `md5sums` of the tar archive `reader` gives, if it
/// holds one.
fn md5sums_in(reader: &mut dyn Read) -> std::io::Result<Option<BTreeMap<Vec<u8>, String>>> {
    let invalid = |e: super::tar::Fault| match e {
        super::tar::Fault::Read(e) | super::tar::Fault::Write(e) => e,
        e => std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
    };
    let mut tar = super::tar::Reader::new(reader, u64::MAX);
    while let Some(h) = tar.next().map_err(invalid)? {
        if h.path != b"md5sums" || !h.is_file() {
            continue;
        }
        if h.size > MAX_MD5SUMS {
            let why = format!(
                "its md5sums holds {} bytes, more than the {MAX_MD5SUMS} read",
                h.size
            );
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, why));
        }
        let mut text = Vec::new();
        tar.body().read_to_end(&mut text)?;
        return Ok(Some(md5sums_rows(&text)));
    }
    Ok(None)
}

#[cfg(test)]
mod tests;

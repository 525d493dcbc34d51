//! A conda package's records of its files, on bytes: `info/paths.json`
//! (`{"paths": [{"_path", "path_type", "sha256", "size_in_bytes",
//! "prefix_placeholder", …}], "paths_version": 1}`) and `info/files` (one
//! path a line), read before the payload is walked and written again after
//! it, with the rows of the files rewritten given their new `sha256` and
//! `size_in_bytes`, and the rows and lines of the files removed taken out.
//!
//! `paths.json` is written as conda-build writes it (two-space indents,
//! keys sorted); nothing but those rows changes in it, and `files` keeps
//! every other line byte for byte. The tar archive holding them (a
//! `.conda`'s `info-*.tar.zst`, or the whole `.tar.bz2`) is read and
//! rewritten here too ([`read_info`], [`rewrite_info`]).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};

use serde_json::Value;

use crate::package::tar::walk::{Fault, Walk};

/// The most bytes of a record (`paths.json`, `files`) read into memory
/// (what a file spools in memory before a scratch file takes it).
const SPOOL_IN_MEMORY: u64 = 64 << 20;

/// Where the package lists its files with their hashes.
pub(crate) const PATHS_JSON: &[u8] = b"info/paths.json";

/// Where the package lists its files' paths alone.
pub(crate) const FILES: &[u8] = b"info/files";

/// Where the package says what it is: a tar holding it is a conda package.
pub(crate) const INDEX_JSON: &[u8] = b"info/index.json";

/// The most bytes of `info/index.json` kept to be edited (a split's
/// outputs); one larger is still a conda package, but not split.
const INDEX_MAX: u64 = 1 << 20;

/// What `paths.json` says of one file, and its reader: the scanners'
/// ([`crate::package::records`]).
pub(crate) use crate::package::records::{CondaRow as Row, conda_rows as rows};

/// What a file of the payload became: its new size and SHA-256
/// (lowercase hex) when rewritten.
pub(crate) type Changed = BTreeMap<Vec<u8>, (u64, String)>;

/// `paths.json` (`text`) with the rows of the files in `changed` given
/// their new hash and size, and the rows of those in `gone` taken out;
/// with how many rows were rewritten and removed. `None` when it names
/// none of them.
pub(crate) fn new_paths_json(
    text: &[u8],
    changed: &Changed,
    gone: &BTreeSet<Vec<u8>>,
) -> Result<Option<(Vec<u8>, usize, usize)>, serde_json::Error> {
    let mut doc: Value = serde_json::from_slice(text)?;
    let (mut rewritten, mut removed) = (0, 0);
    if let Some(rows) = doc.get_mut("paths").and_then(Value::as_array_mut) {
        rows.retain_mut(|row| {
            let path = row.get("_path").and_then(Value::as_str).unwrap_or_default();
            if gone.contains(path.as_bytes()) {
                removed += 1;
                return false;
            }
            if let (Some((size, sha)), Some(obj)) =
                (changed.get(path.as_bytes()), row.as_object_mut())
            {
                rewritten += 1;
                obj.insert("sha256".into(), sha.as_str().into());
                obj.insert("size_in_bytes".into(), (*size).into());
            }
            true
        });
    }
    if rewritten + removed == 0 {
        return Ok(None);
    }
    let mut bytes = serde_json::to_vec_pretty(&doc)?;
    if text.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    Ok(Some((bytes, rewritten, removed)))
}

/// `info/files` (`text`) without the lines naming a file in `gone`, every
/// other byte as it was, and how many lines went; `None` when none does.
pub(crate) fn new_files(text: &[u8], gone: &BTreeSet<Vec<u8>>) -> Option<(Vec<u8>, usize)> {
    let mut out = Vec::with_capacity(text.len());
    let mut removed = 0;
    for line in text.split_inclusive(|&b| b == b'\n') {
        let path = line.strip_suffix(b"\n").unwrap_or(line);
        let path = path.strip_suffix(b"\r").unwrap_or(path);
        if gone.contains(path) {
            removed += 1;
        } else {
            out.extend_from_slice(line);
        }
    }
    (removed > 0).then_some((out, removed))
}

/// What a package's info archive holds that prune reads.
#[derive(Debug, Default)]
pub(crate) struct Info {
    /// `info/paths.json`'s bytes.
    pub(crate) paths_json: Option<Vec<u8>>,
    /// `info/files`' bytes.
    pub(crate) files: Option<Vec<u8>>,
    /// Whether it has `info/index.json`.
    pub(crate) index: bool,
    /// `info/index.json`'s bytes, where it is a regular file of at most
    /// [`INDEX_MAX`] bytes.
    pub(crate) index_json: Option<Vec<u8>>,
}

/// Reads the tar archive `walk` walks for `info/paths.json`, `info/files`
/// and `info/index.json`: to its end when `whole` (a `.conda`'s info tar,
/// every path of which is checked to be given once, as the payload's
/// are), else stopping once it has all three (a `.tar.bz2`, whose payload
/// walk that follows checks every path).
pub(crate) fn read_info<R: Read, W: Write>(
    walk: &mut Walk<R, W>,
    whole: bool,
) -> Result<Info, Fault> {
    let mut info = Info::default();
    let mut paths = crate::package::TarPaths::default();
    while let Some(h) = walk.next()? {
        if let Some(why) = paths.note(&h.path, h.kind() == b'5') {
            return Err(Fault::Damaged(why));
        }
        let slot = match h.path.as_slice() {
            p if p == INDEX_JSON => {
                info.index = true;
                (h.size <= INDEX_MAX).then_some(&mut info.index_json)
            }
            p if p == PATHS_JSON => Some(&mut info.paths_json),
            p if p == FILES => Some(&mut info.files),
            _ => None,
        };
        if let Some(slot) = slot.filter(|_| h.is_file()) {
            if h.size > SPOOL_IN_MEMORY {
                return Err(Fault::Damaged(format!(
                    "'{}' holds {} bytes, more than the {SPOOL_IN_MEMORY} read",
                    h.path_lossy(),
                    h.size
                )));
            }
            let mut text = Vec::new();
            walk.body().read_to_end(&mut text).map_err(Fault::Read)?;
            if (text.len() as u64) < h.size {
                return Err(Fault::Damaged(format!("'{}' is cut short", h.path_lossy())));
            }
            *slot = Some(text);
        }
        walk.skip_body()?;
        if !whole && info.index && info.paths_json.is_some() && info.files.is_some() {
            break;
        }
    }
    Ok(info)
}

/// The new texts of an info archive's records, where they change.
#[derive(Default, Clone, Copy)]
pub(crate) struct Texts<'a> {
    /// `info/paths.json`.
    pub(crate) paths_json: Option<&'a [u8]>,
    /// `info/files`.
    pub(crate) files: Option<&'a [u8]>,
    /// `info/index.json`.
    pub(crate) index_json: Option<&'a [u8]>,
}

/// Copies the tar archive `walk` walks, entry by entry, but for
/// `info/paths.json`, `info/files` and `info/index.json`, which get the
/// bytes `texts` gives (where given) in their header's size, nothing else
/// of the header changed.
pub(crate) fn rewrite_info<R: Read, W: Write>(
    walk: &mut Walk<R, W>,
    texts: Texts<'_>,
) -> Result<(), Fault> {
    while let Some(h) = walk.next()? {
        let new = match h.path.as_slice() {
            p if p == PATHS_JSON => texts.paths_json,
            p if p == FILES => texts.files,
            p if p == INDEX_JSON => texts.index_json,
            _ => None,
        };
        let Some(new) = new.filter(|_| h.is_file() && !h.size_in_pax) else {
            walk.copy(&h)?;
            continue;
        };
        walk.skip_body()?;
        walk.write_header(&h, new.len() as u64)?;
        walk.out().write_all(new).map_err(Fault::Write)?;
        walk.pad(new.len() as u64)?;
    }
    Ok(())
}

/// The offsets at which `needle` lies in the bytes written to it.
pub(crate) struct Finder<'a> {
    needle: &'a [u8],
    /// The last bytes written, fewer than the needle's: the start of a
    /// match the next write may end.
    carry: Vec<u8>,
    /// Where `carry` starts.
    at: u64,
    /// The offsets found.
    pub(crate) found: Vec<u64>,
}

impl<'a> Finder<'a> {
    /// A finder of `needle` (not empty).
    pub(crate) fn new(needle: &'a [u8]) -> Finder<'a> {
        Finder {
            needle,
            carry: Vec::new(),
            at: 0,
            found: Vec::new(),
        }
    }

    /// The offsets of `needle` in `hay`.
    pub(crate) fn all(needle: &[u8], hay: &[u8]) -> Vec<u64> {
        let mut f = Finder::new(needle);
        f.feed(hay);
        f.found
    }

    fn feed(&mut self, buf: &[u8]) {
        if self.needle.is_empty() {
            return;
        }
        let mut joined = std::mem::take(&mut self.carry);
        joined.extend_from_slice(buf);
        // The carry is shorter than the needle: every match is new.
        for i in memchr::memmem::find_iter(&joined, self.needle) {
            self.found.push(self.at + i as u64);
        }
        let keep = joined.len().min(self.needle.len() - 1);
        self.at += (joined.len() - keep) as u64;
        self.carry = joined.split_off(joined.len() - keep);
    }
}

impl Write for Finder<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.feed(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

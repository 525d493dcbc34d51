//! A wheel's members checked before it is rewritten: every member's
//! bytes against the CRC-32 the zip gives them ([`rest`], for the
//! members prune does not otherwise inflate whole), and every member,
//! read whole or copied as it is stored, device code or not, against the
//! rows of the wheel's `RECORD`s that name it ([`records`]): a row whose
//! hash (SHA-256) or size the bytes do not match refuses the wheel, for
//! writing it anew would launder the change ([`super::super::tamper`]).
//! Members removed by name (another GPU's files) are not read: their rows
//! go with them.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use sha2::{Digest as _, Sha256};

use super::super::budget::{Budget, inflate, said};
use super::super::path::PathError;
use super::super::tamper::Wrong;
use crate::files::Input;
use crate::package::records::pip_rows;

/// The wheel being read: its members, over the mapped bytes.
pub(super) type Zip<'a> = zip::ZipArchive<std::io::Cursor<&'a [u8]>>;

/// A member's bytes: a slice of the wheel where it is stored as is, else
/// inflated.
pub(super) enum Member<'a> {
    /// Stored: within the wheel's bytes.
    Stored(&'a [u8]),
    /// Deflated (or otherwise compressed): inflated into memory or a
    /// temporary file.
    Inflated(Input),
}

impl Member<'_> {
    /// The member's bytes.
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Member::Stored(b) => b,
            Member::Inflated(i) => i.bytes(),
        }
    }
}

/// The bytes of the stored member `f` (named `member`) of the wheel
/// `path`, within its bytes `data`; an error unless they lie within them
/// and match the member's CRC-32.
pub(crate) fn stored<'a>(
    path: &Path,
    member: &str,
    data: &'a [u8],
    f: &zip::read::ZipFile<'_, std::io::Cursor<&'a [u8]>>,
) -> Result<&'a [u8], PathError> {
    let size = f.size();
    let bytes = f
        .data_start()
        .filter(|_| f.compressed_size() == size)
        .and_then(|start| {
            let start = usize::try_from(start).ok()?;
            data.get(start..start.checked_add(usize::try_from(size).ok()?)?)
        })
        .ok_or_else(|| {
            said(
                path,
                format!("member '{member}': its data lies outside the file"),
            )
        })?;
    let mut crc = flate2::Crc::new();
    crc.update(bytes);
    if crc.sum() != f.crc32() {
        let why = format!("member '{member}': its bytes do not match its CRC-32");
        return Err(said(path, why));
    }
    Ok(bytes)
}

/// What prune read of a member: its size and SHA-256.
pub(super) type Seen = (u64, [u8; 32]);

/// Reads the rest of the member `f` (named `mname`, of `size` bytes,
/// `head` of them read already) of the wheel `path` to its end, within
/// `budget`, where the zip reader checks its CRC-32: an error when they
/// do not match or the member gives another number of bytes; else its
/// size and SHA-256, head included.
pub(super) fn rest(
    path: &Path,
    mname: &str,
    head: &[u8],
    f: &mut dyn Read,
    size: u64,
    budget: &mut Budget,
) -> Result<Seen, PathError> {
    let left = size.saturating_sub(head.len() as u64);
    budget.take(path, mname, left)?;
    let mut sha = Hashed(Sha256::new());
    sha.0.update(head);
    let n = std::io::copy(&mut f.take(left.saturating_add(1)), &mut sha).map_err(|e| {
        match e.to_string().contains("checksum") {
            true => said(
                path,
                format!("member '{mname}': its bytes do not match its CRC-32"),
            ),
            false => PathError::member(path, mname, "cannot be inflated", e),
        }
    })?;
    if n != left {
        let why = format!(
            "member '{mname}' inflates to {} bytes, not the {size} it declares",
            (head.len() as u64).saturating_add(n)
        );
        return Err(said(path, why));
    }
    Ok((size, sha.0.finalize().into()))
}

/// A writer that hashes what it is given and keeps nothing.
struct Hashed(Sha256);

impl std::io::Write for Hashed {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Checks each member read whole (`read`, by name) against every row of
/// the wheel's RECORDs that names it; a RECORD `removed` is not read. A
/// row that gives a hash or size its member's bytes do not match goes to
/// `wrong` ([`settle`](super::super::tamper::settle): an error, or with
/// `--trust-bytes` a line of the report).
pub(super) fn records<'a>(
    input: &Path,
    data: &'a [u8],
    zin: &mut Zip<'a>,
    read: &BTreeMap<String, Seen>,
    removed: &BTreeMap<usize, String>,
    budget: &mut Budget,
    wrong_row: &mut dyn FnMut(&Wrong<'_>) -> Result<(), PathError>,
) -> Result<(), PathError> {
    let bad = |e| PathError::zip(input, e);
    for i in 0..zin.len() {
        let mut f = zin.by_index(i).map_err(bad)?;
        let rname = f.name().map_err(bad)?.into_owned();
        if f.is_dir() || !rname.ends_with(".dist-info/RECORD") || removed.contains_key(&i) {
            continue;
        }
        let size = f.size();
        let text = if f.compression() == zip::CompressionMethod::Stored && !f.encrypted() {
            Member::Stored(stored(input, &rname, data, &f)?)
        } else {
            budget.take(input, &rname, size)?;
            Member::Inflated(inflate(input, &rname, &[], &mut f, size)?)
        };
        let rows = pip_rows(text.bytes())
            .map_err(|e| PathError::member(input, &rname, "cannot be read as a RECORD", e))?;
        for (path, row) in rows {
            let Some(&(size, sha)) = read.get(&path) else {
                continue;
            };
            if let Some(w) = row.wrong(&rname, &path, size, &sha) {
                wrong_row(&w)?;
            }
        }
    }
    Ok(())
}

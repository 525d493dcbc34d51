//! A conda package opened ([`Package`]): for a `.conda`, its zip checked
//! and its two tars found, stored as conda stores them; for either
//! container, its info archive read for `info/paths.json`, `info/files`
//! and `info/index.json`.

use std::io::Cursor;

use super::error::Error;
use super::info::{Info, read_info};
use super::rows::Rows;
use crate::package::tar::walk::Walk;
use crate::package::{self, Compression, zipfile};

/// A `.conda`'s zip, read from the package's bytes.
pub(crate) type Zip<'a> = ::zip::ZipArchive<Cursor<&'a [u8]>>;

/// How the package holds its tars.
pub(crate) enum Container<'a> {
    /// A `.conda`: a zip whose stored members `info-*.tar.zst` and
    /// `pkg-*.tar.zst` are the info archive and the payload.
    Conda {
        /// The zip.
        zip: Box<Zip<'a>>,
        /// The info archive: its index in the zip and its bytes.
        info: (usize, &'a [u8]),
        /// The payload: its index and its bytes.
        pkg: (usize, &'a [u8]),
    },
    /// A `.tar.bz2`: one bzip2 tar holding `info/` and the payload,
    /// compressed at `level` (its header's block size).
    TarBz2 {
        /// The bzip2 block size, in units of 100 kB.
        level: u32,
    },
}

/// A conda package opened on its bytes.
pub(crate) struct Package<'a> {
    /// The package's bytes.
    pub(crate) data: &'a [u8],
    /// Its container.
    pub(crate) container: Container<'a>,
    /// What its info archive holds.
    pub(crate) info: Info,
    /// The rows of its `info/paths.json`.
    pub(super) rows: Rows,
}

impl<'a> Package<'a> {
    /// The `.conda` `data`, its info archive read within `limit` bytes.
    pub(crate) fn conda(data: &'a [u8], limit: u64) -> Result<Package<'a>, Error> {
        let zip_error = |e| Error::Zip(zipfile::Error::Zip(e));
        let mut zip = Zip::new(Cursor::new(data)).map_err(zip_error)?;
        zipfile::check_directory(data, &mut zip).map_err(Error::Zip)?;
        let info = tar_member(&mut zip, data, "info-")?;
        let pkg = tar_member(&mut zip, data, "pkg-")?;
        let place = format!("member '{}'", member_name(&zip, info.0));
        let reader = decode(&place, info.1, Compression::Zstd)?;
        let info_read = read_info(&mut Walk::new(reader, std::io::sink(), limit), true)
            .map_err(|f| Error::fault(&place, f))?;
        Ok(Package {
            data,
            rows: Rows::of(&info_read),
            info: info_read,
            container: Container::Conda {
                zip: Box::new(zip),
                info,
                pkg,
            },
        })
    }

    /// The `.tar.bz2` `data`, read within `limit` bytes up to its info
    /// files: `None` when it is not a conda package (no
    /// `info/index.json`).
    pub(crate) fn tar_bz2(data: &'a [u8], limit: u64) -> Result<Option<Package<'a>>, Error> {
        let place = TAR_BZ2;
        let reader = decode(place, data, Compression::Bzip2)?;
        let info = read_info(&mut Walk::new(reader, std::io::sink(), limit), false)
            .map_err(|f| Error::fault(place, f))?;
        if !info.index {
            return Ok(None);
        }
        Ok(Some(Package {
            data,
            rows: Rows::of(&info),
            info,
            container: Container::TarBz2 {
                level: super::compress::bzip2_level(data).unwrap_or(9),
            },
        }))
    }

    /// Where the payload is, in messages, and its bytes and compression.
    pub(super) fn payload(&self) -> (String, &'a [u8], Compression) {
        match &self.container {
            Container::Conda { zip, pkg, .. } => (
                format!("member '{}'", member_name(zip, pkg.0)),
                pkg.1,
                Compression::Zstd,
            ),
            Container::TarBz2 { .. } => (TAR_BZ2.to_string(), self.data, Compression::Bzip2),
        }
    }

    /// Whether the payload's walk meets `info/` (a `.tar.bz2`).
    pub(super) fn info_in_payload(&self) -> bool {
        matches!(self.container, Container::TarBz2 { .. })
    }
}

/// The one tar of a `.tar.bz2`, in messages.
const TAR_BZ2: &str = "its tar archive";

/// A reader of `bytes`, compressed with `c`, the archive `place` names.
pub(super) fn decode<'b>(
    place: &str,
    bytes: &'b [u8],
    c: Compression,
) -> Result<Box<dyn std::io::Read + 'b>, Error> {
    package::decoder(bytes, c).map_err(|e| Error::Damaged(format!("{place}: cannot be read: {e}")))
}

/// The name of the member `i` of `zip`.
pub(super) fn member_name(zip: &Zip<'_>, i: usize) -> String {
    zip.name_for_index(i)
        .and_then(Result::ok)
        .unwrap_or_default()
        .to_string()
}

/// The member of the `.conda` `zip` (bytes `data`) named
/// `prefix…​.tar.zst`: its index and its bytes, which must be stored (as
/// conda writes them) and match their CRC-32.
fn tar_member<'a>(
    zip: &mut Zip<'a>,
    data: &'a [u8],
    prefix: &str,
) -> Result<(usize, &'a [u8]), Error> {
    let at = (0..zip.len())
        .find(|&i| {
            let n = member_name(zip, i);
            n.starts_with(prefix) && n.ends_with(".tar.zst")
        })
        .ok_or_else(|| Error::Damaged(format!("it has no {prefix}*.tar.zst member")))?;
    let name = member_name(zip, at);
    let f = zip
        .by_index_raw(at)
        .map_err(|e| Error::Zip(zipfile::Error::Zip(e)))?;
    if f.compression() != ::zip::CompressionMethod::Stored || f.encrypted() {
        return Err(Error::Damaged(format!(
            "member '{name}' is not stored as is in the zip, as conda stores it: prune does not \
             rewrite such a package"
        )));
    }
    let bytes = zipfile::stored(&name, data, &f).map_err(Error::Zip)?;
    Ok((at, bytes))
}

/// Whether `data` (a zip) is a `.conda`.
pub(crate) fn is_conda(data: &[u8]) -> bool {
    Zip::new(Cursor::new(data)).is_ok_and(|z| package::records::is_conda_zip(&z))
}

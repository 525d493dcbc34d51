//! Packages that ship files: zip archives (Python wheels, `.jar`, conda's
//! `.conda`), tar archives (plain, or compressed with gzip, xz, zstd, bzip2,
//! LZMA, LZ4 frames or lzip: conda's `.tar.bz2` among them), Debian packages (`.deb`: an
//! `ar` archive whose `data.tar.*` holds the files), RPM packages (their
//! compressed cpio payload), squashfs filesystems (alone, as a SIF
//! image's root or after an AppImage's runtime), and single files
//! compressed with one of those methods (`libfoo.so.gz`), whose one member
//! is what they decompress to.
//!
//! GPU code reaches most users inside such packages, so the scanners look
//! into them: [`detect`] says whether bytes are a package, and
//! [`members`] hands over each regular file it holds, one at a time — as a
//! slice of the package's bytes where a member is stored as is, or as a
//! stream that inflates it where it is compressed. Nothing here holds more
//! than one member's buffers, and it never reads the whole package into
//! memory. Members that are packages themselves (a conda package's
//! `pkg-*.tar.zst`) are for the caller to open again.
//!
//! The formats are read by well-kept crates: `zip`, `tar`, `flate2`,
//! `liblzma` (xz, LZMA and lzip), `bzip2`, `zstd` and `lz4_flex`; the Debian `ar` layer by
//! `object`.

mod appimage;
#[cfg(feature = "files")]
mod budget;
pub(crate) mod compression;
#[cfg(feature = "files")]
pub(crate) mod conda;
mod cpio;
#[cfg(feature = "files")]
pub(crate) mod deb;
#[cfg(feature = "files")]
mod decide;
#[cfg(feature = "files")]
mod fate;
#[cfg(feature = "files")]
mod hashing;
#[cfg(feature = "files")]
pub(crate) mod oci;
#[cfg(feature = "files")]
pub(crate) mod records;
mod repeats;
pub(crate) mod rpm;
pub(crate) mod sif;
pub(crate) mod squashfs;
pub(crate) mod tar;
mod types;
#[cfg(feature = "files")]
pub(crate) mod zipfile;

use std::io::{self, Read};

#[cfg(feature = "files")]
pub(crate) use budget::Budget;
pub use compression::Compression;
pub(crate) use compression::{compression_of, decoder};
use cpio::{cpio_header, cpio_members};
#[cfg(feature = "files")]
pub(crate) use decide::{Decide, Failed, Format, Held};
#[cfg(feature = "files")]
pub(crate) use fate::{Fate, New};
#[cfg(feature = "files")]
pub(crate) use hashing::Hashing;
#[cfg(any(test, fuzzing))]
pub(crate) use repeats::REPEAT_COST_FLOOR;
pub(crate) use repeats::{Overlaps, TarPaths, duplicate_names, duplicates_said};
pub(crate) use sif::is_sif;
use tar::BLOCK;
pub(crate) use tar::is_header as is_tar_header;
use types::corrupt;
pub(crate) use types::formats;
pub use types::{Contents, Kind, Members};

use crate::error::Result;
use crate::host::ar::Archive;
use crate::num::usize_from;

/// The `ar` magic that starts a Debian package.
const AR_MAGIC: &[u8] = b"!<arch>\n";

/// What package `bytes` are, if any. Compressed data is a compressed tar
/// archive when what it decompresses to starts with a tar header (only
/// that first block is decompressed here), else a compressed file; an
/// `ar` archive is a package only if its first member is `debian-binary`.
pub fn detect(bytes: &[u8]) -> Option<Kind> {
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        return Some(Kind::Zip);
    }
    if bytes.starts_with(AR_MAGIC) && bytes.get(8..21) == Some(b"debian-binary") {
        return Some(Kind::Deb);
    }
    if is_tar_header(bytes) {
        return Some(Kind::Tar(Compression::None));
    }
    if cpio_header(bytes).is_some() {
        return Some(Kind::Cpio);
    }
    if rpm::is_rpm(bytes) {
        return Some(Kind::Rpm);
    }
    if squashfs::is_squashfs(bytes) {
        return Some(Kind::Squashfs);
    }
    if sif::is_sif(bytes) {
        return Some(Kind::Sif);
    }
    if appimage::is_appimage(bytes) {
        return Some(Kind::AppImage);
    }
    let c = compression_of(bytes)?;
    // The first block; compressed data that fails to decompress (a
    // truncated download) is taken for the package it most likely is, so
    // that reading it reports the damage instead of finding nothing.
    let mut first = Vec::with_capacity(BLOCK);
    let read = decoder(bytes, c).and_then(|r| r.take(BLOCK as u64).read_to_end(&mut first));
    match read {
        Err(_) if c == Compression::Lzma => None,
        Err(_) => Some(Kind::Tar(c)),
        Ok(_) if is_tar_header(&first) => Some(Kind::Tar(c)),
        Ok(_) => Some(Kind::Compressed(c)),
    }
}

/// The name of what the compressed file `name` decompresses to: its file
/// name without the method's suffix (`libfoo.so.gz` → `libfoo.so`;
/// `.tgz`-like suffixes give `.tar`), or the whole file name when it has
/// no such suffix.
pub fn decompressed_name(name: &str) -> &str {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    for suffix in [
        ".gz", ".xz", ".zst", ".zstd", ".bz2", ".lzma", ".lz4", ".lz", ".z", ".Z",
    ] {
        if let Some(stem) = base.strip_suffix(suffix)
            && !stem.is_empty()
        {
            return stem;
        }
    }
    base
}

/// For a zip archive with bytes in front of it (a self-extracting archive,
/// a zip appended to a program), how many: the bytes do not start with a
/// zip record, yet the zip reader finds an archive from their end (its
/// end-of-central-directory record lies in the last 64 KiB, as the format
/// allows). The count is where its first member starts, whether the
/// archive's offsets count from the file's start (`zip -A`) or from its
/// own. `None` for a zip that starts at byte 0, or for no zip.
pub fn zip_prefix(bytes: &[u8]) -> Option<u64> {
    const EOCD: &[u8] = b"PK\x05\x06";
    if bytes.starts_with(b"PK") {
        return None;
    }
    let tail = &bytes[bytes.len().saturating_sub(22 + 0xffff)..];
    memchr::memmem::rfind(tail, EOCD)?;
    let mut zip = zip::ZipArchive::new(io::Cursor::new(bytes)).ok()?;
    let first = (0..zip.len().min(1 << 16))
        .filter_map(|i| zip.by_index_raw(i).ok().map(|f| f.header_start()))
        .min()
        .unwrap_or(0);
    Some(zip.offset().saturating_add(first).max(1))
}

/// Hands every regular file of the package `bytes` (of kind `kind`) to
/// `to`, in the package's order. Directories, links and special files are
/// skipped. A package whose structure is corrupt is an error, after the
/// members before the corruption were handed over. The one member of a
/// compressed file ([`Kind::Compressed`]) has an empty path: the caller
/// names it ([`decompressed_name`]). A zip whose central directory gives
/// several entries one name is corrupt (the zip crate reads one of them),
/// after the members were handed over. A zip may point several entries
/// at the same bytes (each handed over as its own member): the caller
/// counts what reading them again costs.
pub fn members(bytes: &[u8], kind: Kind, to: &mut dyn Members) -> Result<()> {
    match kind {
        Kind::Zip => zip_members(bytes, to),
        Kind::Tar(c) => tar_members(bytes, c, "", to),
        Kind::Deb => deb_members(bytes, to),
        Kind::Cpio => cpio_members(bytes, to),
        Kind::Rpm => rpm::rpm_members(bytes, to),
        Kind::Squashfs => squashfs::squashfs_members(bytes, kind, to),
        Kind::Sif => sif::sif_members(bytes, to),
        Kind::AppImage => appimage::appimage_members(bytes, to),
        Kind::Compressed(c) => {
            let mut reader = decoder(bytes, c).map_err(|e| corrupt(kind, e))?;
            to.member("", Ok(Contents::Unsized(&mut reader)))?;
            to_the_end(&mut reader, kind)
        }
    }
}

fn zip_members(bytes: &[u8], to: &mut dyn Members) -> Result<()> {
    let mut zip = zip::ZipArchive::new(io::Cursor::new(bytes))
        .map_err(|e| corrupt(Kind::Zip, zip_error(&e)))?;
    for i in 0..zip.len() {
        // The entry's name from the central directory (read whole above),
        // for a message about an entry that cannot be opened.
        let name = match zip.name_for_index(i) {
            Some(Ok(n)) => n.into_owned(),
            _ => format!("entry {i}"),
        };
        let file = match zip.by_index(i) {
            Ok(f) => f,
            Err(e) => {
                to.member(&name, Err(zip_error(&e)))?;
                continue;
            }
        };
        if !file.is_file() || file.is_symlink() {
            continue;
        }
        let size = file.size();
        let stored = file.compression() == zip::CompressionMethod::Stored && !file.encrypted();
        if stored {
            let slice = file
                .data_start()
                .filter(|_| file.compressed_size() == size)
                .and_then(|start| {
                    let start = usize_from(start);
                    bytes.get(start..start.checked_add(usize_from(size))?)
                });
            match slice {
                Some(s) if crc32fast::hash(s) != file.crc32() => return Err(bad_crc(&name)),
                Some(s) => to.member(&name, Ok(Contents::Stored(s)))?,
                None => to.member(&name, Err("its data lies outside the archive".into()))?,
            }
        } else {
            let mut file = file;
            to.member(
                &name,
                Ok(Contents::Stream {
                    reader: &mut file,
                    size,
                }),
            )?;
            // Read to its end, where the zip reader checks the CRC-32,
            // whatever the receiver took of it.
            io::copy(&mut file, &mut io::sink()).map_err(|e| match e.kind() {
                io::ErrorKind::InvalidData if e.to_string().contains("checksum") => bad_crc(&name),
                _ => corrupt(Kind::Zip, format!("member '{name}': {e}")),
            })?;
        }
    }
    // Entries of one name: the zip crate kept one; the package is
    // damaged, after the members it kept were handed over.
    if let Some(why) = duplicates_said(&duplicate_names(bytes, &zip)) {
        return Err(corrupt(Kind::Zip, why));
    }
    Ok(())
}

/// The error for a zip member (`name`) whose bytes do not match the CRC-32
/// the archive gives it.
fn bad_crc(name: &str) -> crate::error::Error {
    corrupt(
        Kind::Zip,
        format!("member '{name}': its bytes do not match its CRC-32"),
    )
}

/// Reads what is left of the decompressing `reader` to the end of its
/// data, where each format checks what it carries (gzip's CRC-32 and
/// size, xz's check, zstd's content checksum, bzip2's block and stream
/// CRCs): a member or a tar archive's end blocks may end before it.
fn to_the_end(reader: &mut dyn Read, kind: Kind) -> Result<()> {
    io::copy(reader, &mut io::sink()).map_err(|e| corrupt(kind, e))?;
    Ok(())
}

/// What is wrong, in a zip crate error, without its "invalid Zip archive"
/// prefix (the messages say what the file is).
fn zip_error(e: &zip::result::ZipError) -> String {
    match e {
        zip::result::ZipError::InvalidArchive(m) => m.to_string(),
        zip::result::ZipError::Io(e) => e.to_string(),
        e => e.to_string(),
    }
}

/// The members of a tar archive; `prefix` goes before each path.
fn tar_members(bytes: &[u8], c: Compression, prefix: &str, to: &mut dyn Members) -> Result<()> {
    let mut reader = decoder(bytes, c).map_err(|e| corrupt(Kind::Tar(c), e))?;
    let mut paths = TarPaths::default();
    tar_entries(&mut reader, (bytes, c), prefix, Some(&mut paths), to)?;
    to_the_end(&mut reader, Kind::Tar(c))
}

/// [`members`] of the tar archive `bytes` compressed by `c`, every byte it
/// decompresses to written to `tap` as it is read, to the stream's end
/// (past the archive's end blocks): one pass gives the members and, say,
/// the SHA-256 a container layer's diff ID must be.
pub(crate) fn tar_members_tapped(
    bytes: &[u8],
    c: Compression,
    to: &mut dyn Members,
    tap: &mut dyn io::Write,
) -> Result<()> {
    let kind = Kind::Tar(c);
    let inner = decoder(bytes, c).map_err(|e| corrupt(kind, e))?;
    let mut tapped = Tap { inner, tap };
    // An image layer: a later entry replaces an earlier one by design.
    tar_entries(&mut tapped, (bytes, c), "", None, to)?;
    io::copy(&mut tapped, &mut io::sink()).map_err(|e| corrupt(kind, e))?;
    Ok(())
}

/// A reader that writes what it reads to `tap` too.
struct Tap<'t, R> {
    inner: R,
    tap: &'t mut dyn io::Write,
}

impl<R: Read> Read for Tap<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.tap.write_all(buf.get(..n).unwrap_or(buf))?;
        Ok(n)
    }
}

/// The entries of a tar archive read from `reader`, which gives `bytes`
/// decompressed by `c` (when `c` is none, stored members are slices of
/// `bytes`); `prefix` goes before each path. With `paths`, two members of
/// one path (not directories) make the archive damaged.
fn tar_entries(
    reader: impl Read,
    (bytes, c): (&[u8], Compression),
    prefix: &str,
    mut paths: Option<&mut TarPaths>,
    to: &mut dyn Members,
) -> Result<()> {
    let kind = Kind::Tar(c);
    let mut tar = tar::Reader::new(reader, u64::MAX);
    while let Some(h) = tar.next().map_err(|e| corrupt(kind, e))? {
        let directory = h.kind() == b'5';
        if let Some(why) = paths
            .as_deref_mut()
            .and_then(|p| p.note(&h.path, directory))
        {
            return Err(corrupt(kind, why));
        }
        // The path as the archive gives it, less its leading `./`: an
        // absolute one keeps its `/`.
        let root = if h.path_absolute { "/" } else { "" };
        let path = format!("{prefix}{root}{}", h.path_lossy());
        if !h.is_file() {
            to.skipped(&path, directory);
            continue;
        }
        let size = h.size;
        if c == Compression::None {
            let slice = usize::try_from(tar.read())
                .ok()
                .zip(usize::try_from(size).ok())
                .and_then(|(at, n)| bytes.get(at..at.checked_add(n)?));
            match slice {
                Some(s) => to.member(&path, Ok(Contents::Stored(s)))?,
                None => return Err(corrupt(kind, format!("'{path}' ends past the archive"))),
            }
        } else {
            to.member(
                &path,
                Ok(Contents::Stream {
                    reader: &mut tar.body(),
                    size,
                }),
            )?;
        }
    }
    Ok(())
}

/// A Debian package's files: the members of its `data.tar*`, as absolute
/// paths (as `dpkg` installs them).
fn deb_members(bytes: &[u8], to: &mut dyn Members) -> Result<()> {
    let ar = Archive::parse(bytes).map_err(|e| corrupt(Kind::Deb, e))?;
    for m in ar.members() {
        let m = m.map_err(|e| corrupt(Kind::Deb, e))?;
        if !m.name().starts_with(b"data.tar") {
            continue;
        }
        let data = m.data().map_err(|e| corrupt(Kind::Deb, e))?;
        let c = if is_tar_header(data) {
            Compression::None
        } else {
            compression_of(data).ok_or_else(|| {
                corrupt(
                    Kind::Deb,
                    "its data.tar is neither a tar archive nor compressed",
                )
            })?
        };
        return tar_members(data, c, "/", to);
    }
    Err(corrupt(Kind::Deb, "it has no data.tar member"))
}

#[cfg(test)]
mod tests;

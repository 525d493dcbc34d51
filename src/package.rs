//! Packages that ship files: zip archives (Python wheels, `.jar`, conda's
//! `.conda`), tar archives (plain, or compressed with gzip, xz, zstd, bzip2
//! or LZMA: conda's `.tar.bz2` among them), Debian packages (`.deb`: an
//! `ar` archive whose `data.tar.*` holds the files), and single files
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
//! `liblzma` (xz and LZMA), `bzip2` and `zstd`; the Debian `ar` layer by
//! `object`.

use std::io::{self, Read};

use crate::container::ar::Archive;
use crate::error::{Error, Result};
use crate::num::usize_from;

/// What kind of package bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A zip archive (a wheel, a `.jar`, a `.conda`).
    Zip,
    /// A tar archive, compressed or not.
    Tar(Compression),
    /// A Debian package.
    Deb,
    /// One file compressed, not a tar archive (`libfoo.so.gz`): its one
    /// member is what it decompresses to.
    Compressed(Compression),
    /// A cpio archive in the portable ASCII formats (`newc`, `crc`,
    /// `odc`): RPM payloads, initramfs images.
    Cpio,
}

/// How a tar archive is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    None,
    /// gzip (`.tar.gz`, `.tgz`).
    Gzip,
    /// xz (`.tar.xz`).
    Xz,
    /// zstd (`.tar.zst`).
    Zstd,
    /// bzip2 (`.tar.bz2`, conda's first package format).
    Bzip2,
    /// LZMA, the `.lzma` format of LZMA Utils (`.tar.lzma`): a 13-byte
    /// header, then one LZMA stream with no check.
    Lzma,
}

impl Compression {
    /// The method's name, as a file name's suffix spells it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "uncompressed",
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
            Compression::Bzip2 => "bzip2",
            Compression::Lzma => "LZMA",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kind::Zip => f.write_str("zip archive"),
            Kind::Tar(Compression::None) => f.write_str("tar archive"),
            Kind::Tar(c) => write!(f, "{}-compressed tar archive", c.name()),
            Kind::Deb => f.write_str("Debian package"),
            Kind::Compressed(c) => write!(f, "{}-compressed file", c.name()),
            Kind::Cpio => f.write_str("cpio archive"),
        }
    }
}

/// A tar header block's size.
const BLOCK: usize = 512;

/// Whether `block` (at least 512 bytes) is a tar header: POSIX `ustar` or
/// GNU magic, and a header checksum that adds up.
pub(crate) fn is_tar_header(block: &[u8]) -> bool {
    if block.len() < BLOCK || &block[257..262] != b"ustar" {
        return false;
    }
    let stored = std::str::from_utf8(&block[148..156])
        .ok()
        .map(|s| s.trim_matches(|c: char| c == '\0' || c == ' '))
        .and_then(|s| u32::from_str_radix(s, 8).ok());
    // The checksum counts its own field as eight spaces.
    let sum: u32 = block[..BLOCK]
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                32
            } else {
                u32::from(b)
            }
        })
        .sum();
    stored == Some(sum)
}

/// The decompressing reader for bytes compressed by `c`.
pub(crate) fn decoder<'a>(bytes: &'a [u8], c: Compression) -> io::Result<Box<dyn Read + 'a>> {
    Ok(match c {
        Compression::None => Box::new(bytes),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(bytes)),
        Compression::Xz => Box::new(XzStreams::new(bytes)?),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(bytes)?),
        Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(bytes)),
        Compression::Lzma => {
            let stream =
                liblzma::stream::Stream::new_lzma_decoder(LZMA_MEMORY).map_err(io::Error::other)?;
            Box::new(liblzma::bufread::XzDecoder::new_stream(bytes, stream))
        }
    })
}

/// Memory the LZMA decoder may take (its dictionary, which the header
/// names: `xz --format=lzma -9` asks 64 MiB; the format allows 4 GiB).
/// A stream that asks for more is refused as damaged.
const LZMA_MEMORY: u64 = 1 << 30;

/// Memory liblzma's threaded decoder may use for its threads' buffers
/// (each holds one block); past it, it decodes on one thread.
const XZ_THREADS_MEMORY: u64 = 192 << 20;

/// The xz streams of `bytes`, one after another, each decoded on every CPU
/// when it was written in several blocks (as `xz -T`, and so `dpkg-deb`,
/// write them), and the stream padding between them skipped.
struct XzStreams<'a> {
    bytes: &'a [u8],
    /// Where the current stream starts.
    at: usize,
    current: liblzma::bufread::XzDecoder<&'a [u8]>,
}

impl<'a> XzStreams<'a> {
    fn new(bytes: &'a [u8]) -> io::Result<XzStreams<'a>> {
        Ok(XzStreams {
            bytes,
            at: 0,
            current: Self::stream(bytes)?,
        })
    }

    /// A threaded decoder of the one stream `bytes` start with.
    fn stream(bytes: &'a [u8]) -> io::Result<liblzma::bufread::XzDecoder<&'a [u8]>> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let stream = liblzma::stream::MtStreamBuilder::new()
            .threads(u32::try_from(threads).unwrap_or(1))
            .memlimit_threading(XZ_THREADS_MEMORY)
            .memlimit_stop(u64::MAX)
            .decoder()
            .map_err(io::Error::other)?;
        Ok(liblzma::bufread::XzDecoder::new_stream(bytes, stream))
    }
}

impl Read for XzStreams<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.current.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // The stream has ended: another may follow, after padding
            // (zero bytes, a multiple of four).
            let end = self
                .at
                .saturating_add(usize_from(self.current.total_in()))
                .min(self.bytes.len());
            let rest = &self.bytes[end..];
            let pad = rest.iter().take_while(|&&b| b == 0).count();
            if pad == rest.len() {
                return Ok(0);
            }
            if pad % 4 != 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "xz stream padding that is not a multiple of four bytes",
                ));
            }
            self.at = end + pad;
            self.current = Self::stream(&self.bytes[self.at..])?;
        }
    }
}

/// The compression whose magic `bytes` start with. bzip2 is known by its
/// stream header and the magic of a first block (or of the end of an
/// empty stream); LZMA, which has no magic, by a header whose properties,
/// dictionary size and length are ones `xz --format=lzma` and LZMA Utils
/// write, and the range coder's first byte, which is always zero. (With
/// no magic, LZMA data whose first block does not decode is taken for no
/// package at all by [`detect`].)
pub(crate) fn compression_of(bytes: &[u8]) -> Option<Compression> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        Some(Compression::Gzip)
    } else if bytes.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Some(Compression::Xz)
    } else if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some(Compression::Zstd)
    } else if is_bzip2(bytes) {
        Some(Compression::Bzip2)
    } else if is_lzma_alone(bytes) {
        Some(Compression::Lzma)
    } else {
        None
    }
}

/// Whether `bytes` start a bzip2 stream: `BZh`, the block size digit,
/// then a block's magic (π's digits) or the end of stream's (√π's).
fn is_bzip2(bytes: &[u8]) -> bool {
    const BLOCK: [u8; 6] = [0x31, 0x41, 0x59, 0x26, 0x53, 0x59];
    const END: [u8; 6] = [0x17, 0x72, 0x45, 0x38, 0x50, 0x90];
    bytes.len() >= 10
        && bytes.starts_with(b"BZh")
        && (b'1'..=b'9').contains(&bytes[3])
        && (bytes[4..10] == BLOCK || bytes[4..10] == END)
}

/// Whether `bytes` start an `.lzma` file: a properties byte below 225
/// whose literal context and position bits add up to at most 4 (as
/// liblzma's encoder allows), a dictionary size of 2^n or 2^n + 2^(n-1)
/// bytes from 4 KiB up (what the encoders write), a length that is unknown
/// (all ones) or from 1 to 2^48, and a first range coder byte of zero.
fn is_lzma_alone(bytes: &[u8]) -> bool {
    let Some(header) = bytes.get(..14) else {
        return false;
    };
    let props = header[0];
    if props >= 9 * 5 * 5 {
        return false;
    }
    let (lc, lp) = (props % 9, (props / 9) % 5);
    if lc + lp > 4 {
        return false;
    }
    let dict = u32::from_le_bytes([header[1], header[2], header[3], header[4]]);
    if dict < 4096 {
        return false;
    }
    let odd = dict >> dict.trailing_zeros();
    if odd != 1 && odd != 3 {
        return false;
    }
    let len = u64::from_le_bytes([
        header[5], header[6], header[7], header[8], header[9], header[10], header[11], header[12],
    ]);
    (len == u64::MAX || (len > 0 && len < 1 << 48)) && header[13] == 0
}

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
    for suffix in [".gz", ".xz", ".zst", ".zstd", ".bz2", ".lzma", ".z", ".Z"] {
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

/// A member's contents.
pub enum Contents<'a, 'r> {
    /// Stored as is: the bytes, within the package's.
    Stored(&'a [u8]),
    /// Compressed: a stream of the member's bytes, and how many it says
    /// it has. The stream fails if the member is corrupt.
    Stream {
        /// Gives the member's bytes.
        reader: &'r mut dyn Read,
        /// The size the package declares.
        size: u64,
    },
    /// The one member of a compressed file: a stream of its bytes, whose
    /// number nothing declares (gzip keeps it modulo 2^32 only). The
    /// reader must bound what it takes. The stream fails if the data is
    /// corrupt.
    Unsized(&'r mut dyn Read),
}

/// What [`members`] does with each regular file of a package.
pub trait Members {
    /// One member: its path inside the package, and its contents or why
    /// they cannot be read (the walk goes on with the next member). An
    /// error returned here stops the walk and is returned by [`members`].
    fn member(
        &mut self,
        path: &str,
        contents: std::result::Result<Contents<'_, '_>, String>,
    ) -> Result<()>;
}

/// Hands every regular file of the package `bytes` (of kind `kind`) to
/// `to`, in the package's order. Directories, links and special files are
/// skipped. A package whose structure is corrupt is an error, after the
/// members before the corruption were handed over. The one member of a
/// compressed file ([`Kind::Compressed`]) has an empty path: the caller
/// names it ([`decompressed_name`]).
pub fn members(bytes: &[u8], kind: Kind, to: &mut dyn Members) -> Result<()> {
    match kind {
        Kind::Zip => zip_members(bytes, to),
        Kind::Tar(c) => tar_members(bytes, c, "", to),
        Kind::Deb => deb_members(bytes, to),
        Kind::Cpio => cpio_members(bytes, to),
        Kind::Compressed(c) => {
            let mut reader = decoder(bytes, c).map_err(|e| corrupt(kind, e))?;
            to.member("", Ok(Contents::Unsized(&mut reader)))
        }
    }
}

/// The error for a package whose structure cannot be read.
fn corrupt(kind: Kind, what: impl std::fmt::Display) -> Error {
    Error::invalid(kind.to_string(), what.to_string())
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
        }
    }
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
    let kind = Kind::Tar(c);
    let reader = decoder(bytes, c).map_err(|e| corrupt(kind, e))?;
    let mut tar = tar::Archive::new(reader);
    let entries = tar.entries().map_err(|e| corrupt(kind, e))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| corrupt(kind, e))?;
        let t = entry.header().entry_type();
        if !(t.is_file() || t.is_contiguous()) {
            continue;
        }
        let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let path = format!("{prefix}{}", path.trim_start_matches("./"));
        let size = entry.size();
        if c == Compression::None {
            let at = entry.raw_file_position();
            let at = usize_from(at);
            let slice = at
                .checked_add(usize_from(size))
                .and_then(|end| bytes.get(at..end));
            match slice {
                Some(s) => to.member(&path, Ok(Contents::Stored(s)))?,
                None => return Err(corrupt(kind, format!("'{path}' ends past the archive"))),
            }
        } else {
            to.member(
                &path,
                Ok(Contents::Stream {
                    reader: &mut entry,
                    size,
                }),
            )?;
        }
    }
    Ok(())
}

/// The layout of a cpio header in the portable ASCII formats: its length,
/// how its numbers are written (16: `newc` and `crc`, hexadecimal; 8:
/// `odc`, octal), and where its mode, name size and file size lie.
struct CpioHeader {
    len: usize,
    radix: u32,
    mode: (usize, usize),
    name_size: (usize, usize),
    file_size: (usize, usize),
    /// Whether names and data are padded to four bytes (`newc`, `crc`).
    padded: bool,
}

/// The header layout whose magic `bytes` start with.
fn cpio_header(bytes: &[u8]) -> Option<CpioHeader> {
    if bytes.starts_with(b"070701") || bytes.starts_with(b"070702") {
        Some(CpioHeader {
            len: 110,
            radix: 16,
            mode: (14, 8),
            name_size: (94, 8),
            file_size: (54, 8),
            padded: true,
        })
    } else if bytes.starts_with(b"070707") {
        Some(CpioHeader {
            len: 76,
            radix: 8,
            mode: (18, 6),
            name_size: (59, 6),
            file_size: (65, 11),
            padded: false,
        })
    } else {
        None
    }
}

/// The regular files of a cpio archive, up to its `TRAILER!!!` entry.
/// Every header, name and body must lie within the archive.
fn cpio_members(bytes: &[u8], to: &mut dyn Members) -> Result<()> {
    let bad = |what: String| corrupt(Kind::Cpio, what);
    let past = |at: usize| bad(format!("the entry at offset {at} ends past the archive"));
    let mut at = 0usize;
    loop {
        let rest = bytes.get(at..).unwrap_or_default();
        let layout =
            cpio_header(rest).ok_or_else(|| bad(format!("no cpio header at offset {at}")))?;
        let header = rest
            .get(..layout.len)
            .ok_or_else(|| bad(format!("the header at offset {at} is cut short")))?;
        let number = |(start, len): (usize, usize)| {
            std::str::from_utf8(&header[start..start + len])
                .ok()
                .and_then(|s| u64::from_str_radix(s, layout.radix).ok())
                .ok_or_else(|| {
                    bad(format!(
                        "the header at offset {at} holds a field that is no number"
                    ))
                })
        };
        let (mode, name_size, size) = (
            number(layout.mode)?,
            number(layout.name_size)?,
            number(layout.file_size)?,
        );
        let pad = |n: usize| {
            if layout.padded {
                n.checked_next_multiple_of(4)
            } else {
                Some(n)
            }
        };
        let name_start = at + layout.len;
        let name_end = usize::try_from(name_size)
            .ok()
            .and_then(|n| name_start.checked_add(n));
        let name = name_end
            .and_then(|end| bytes.get(name_start..end))
            .ok_or_else(|| past(at))?;
        let name = name.strip_suffix(b"\0").unwrap_or(name);
        let data = name_end.and_then(pad).ok_or_else(|| past(at))?;
        let end = usize::try_from(size)
            .ok()
            .and_then(|n| data.checked_add(n))
            .ok_or_else(|| past(at))?;
        let body = bytes.get(data..end).ok_or_else(|| past(at))?;
        if name == b"TRAILER!!!" {
            return Ok(());
        }
        if mode & 0o170_000 == 0o100_000 {
            let path = String::from_utf8_lossy(name);
            to.member(path.trim_start_matches("./"), Ok(Contents::Stored(body)))?;
        }
        at = pad(end).ok_or_else(|| past(at))?;
    }
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
mod tests {
    use super::*;

    /// Records what the walk hands over.
    #[derive(Default)]
    struct Record(Vec<(String, std::result::Result<Vec<u8>, String>)>);

    impl Members for Record {
        fn member(
            &mut self,
            path: &str,
            contents: std::result::Result<Contents<'_, '_>, String>,
        ) -> Result<()> {
            let got = contents.map(|c| match c {
                Contents::Stored(b) => b.to_vec(),
                Contents::Stream { reader, .. } | Contents::Unsized(reader) => {
                    let mut v = Vec::new();
                    reader.read_to_end(&mut v).map(|_| v).unwrap_or_default()
                }
            });
            self.0.push((path.to_string(), got));
            Ok(())
        }
    }

    fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in files {
            let mut h = tar::Header::new_ustar();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn plain_tar_members_are_slices() {
        let t = tar_of(&[("a/one.so", b"ONE"), ("two", b"")]);
        assert_eq!(detect(&t), Some(Kind::Tar(Compression::None)));
        let mut r = Record::default();
        members(&t, Kind::Tar(Compression::None), &mut r).unwrap();
        assert_eq!(
            r.0,
            vec![
                ("a/one.so".to_string(), Ok(b"ONE".to_vec())),
                ("two".to_string(), Ok(Vec::new()))
            ]
        );
    }

    #[test]
    fn compressed_tars_are_detected_and_streamed() {
        let t = tar_of(&[("x", b"payload")]);
        let gz = {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            io::Write::write_all(&mut e, &t).unwrap();
            e.finish().unwrap()
        };
        let zst = zstd::encode_all(&t[..], 1).unwrap();
        for (bytes, c) in [(gz, Compression::Gzip), (zst, Compression::Zstd)] {
            assert_eq!(detect(&bytes), Some(Kind::Tar(c)));
            let mut r = Record::default();
            members(&bytes, Kind::Tar(c), &mut r).unwrap();
            assert_eq!(r.0, vec![("x".to_string(), Ok(b"payload".to_vec()))]);
        }
    }

    /// `data` as one xz stream written in blocks of `block` bytes.
    fn xz_blocks(data: &[u8], block: u64) -> Vec<u8> {
        let stream = liblzma::stream::MtStreamBuilder::new()
            .threads(2)
            .block_size(block)
            .preset(1)
            .encoder()
            .unwrap();
        let mut out = Vec::new();
        liblzma::read::XzEncoder::new_stream(data, stream)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn xz_streams_in_blocks_and_one_after_another() {
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let t = tar_of(&[("x", &big), ("y", b"2")]);
        let (a, b) = t.split_at(70_000);
        let mut two = xz_blocks(a, 16 << 10);
        assert!(two.len() > 12 + 12);
        two.extend_from_slice(&[0; 8]);
        two.extend_from_slice(&xz_blocks(b, 1 << 20));
        assert_eq!(detect(&two), Some(Kind::Tar(Compression::Xz)));
        let mut r = Record::default();
        members(&two, Kind::Tar(Compression::Xz), &mut r).unwrap();
        assert_eq!(
            r.0,
            vec![
                ("x".to_string(), Ok(big.clone())),
                ("y".to_string(), Ok(b"2".to_vec()))
            ]
        );
        // Padding that is no multiple of four, and bytes that are no
        // stream, after the first stream: errors.
        for bad in [&[0u8; 3][..], b"garbage!"] {
            let mut x = xz_blocks(a, 16 << 10);
            x.extend_from_slice(bad);
            x.extend_from_slice(&xz_blocks(b, 1 << 20));
            let mut r = Record::default();
            let read = members(&x, Kind::Tar(Compression::Xz), &mut r);
            let whole = r.0.first().is_some_and(|(_, got)| got.as_ref() == Ok(&big));
            assert!(read.is_err() || !whole, "{bad:?}");
        }
    }

    /// `data` compressed with `c` (gzip, xz, zstd, bzip2 or LZMA).
    fn compress(data: &[u8], c: Compression) -> Vec<u8> {
        let mut out = Vec::new();
        match c {
            Compression::None => out.extend_from_slice(data),
            Compression::Gzip => {
                let mut e = flate2::write::GzEncoder::new(&mut out, flate2::Compression::fast());
                io::Write::write_all(&mut e, data).unwrap();
                e.finish().unwrap();
            }
            Compression::Xz => out = xz_blocks(data, 1 << 20),
            Compression::Zstd => out = zstd::encode_all(data, 1).unwrap(),
            Compression::Bzip2 => {
                bzip2::read::BzEncoder::new(data, bzip2::Compression::fast())
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Compression::Lzma => {
                let o = liblzma::stream::LzmaOptions::new_preset(1).unwrap();
                let s = liblzma::stream::Stream::new_lzma_encoder(&o).unwrap();
                liblzma::read::XzEncoder::new_stream(data, s)
                    .read_to_end(&mut out)
                    .unwrap();
            }
        }
        out
    }

    const METHODS: [Compression; 5] = [
        Compression::Gzip,
        Compression::Xz,
        Compression::Zstd,
        Compression::Bzip2,
        Compression::Lzma,
    ];

    #[test]
    fn every_method_gives_a_tar_or_a_compressed_file() {
        let t = tar_of(&[("lib/a.so", b"device code")]);
        let file: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
        for c in METHODS {
            let packed = compress(&t, c);
            assert_eq!(detect(&packed), Some(Kind::Tar(c)), "{c:?}");
            let mut r = Record::default();
            members(&packed, Kind::Tar(c), &mut r).unwrap();
            assert_eq!(
                r.0,
                vec![("lib/a.so".to_string(), Ok(b"device code".to_vec()))]
            );

            let one = compress(&file, c);
            assert_eq!(detect(&one), Some(Kind::Compressed(c)), "{c:?}");
            let mut r = Record::default();
            members(&one, Kind::Compressed(c), &mut r).unwrap();
            assert_eq!(r.0, vec![(String::new(), Ok(file.clone()))], "{c:?}");
        }
    }

    #[test]
    fn a_damaged_compressed_file_is_an_error_not_a_short_member() {
        let file: Vec<u8> = (0..70_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for c in METHODS {
            let mut bad = compress(&file, c);
            let cut = bad.len() * 2 / 3;
            bad.truncate(cut);
            let mut got = Vec::new();
            let read = decoder(&bad, c).and_then(|mut r| r.read_to_end(&mut got));
            assert!(
                read.is_err(),
                "{c:?}: a cut stream read as {} bytes",
                got.len()
            );
        }
    }

    #[test]
    fn lzma_headers_are_told_from_other_bytes() {
        let lz = compress(b"x", Compression::Lzma);
        assert_eq!(compression_of(&lz), Some(Compression::Lzma));
        // Bytes that start like other files are not LZMA.
        for other in [
            &b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0"[..],
            b"BC\xc0\xde5\x14\0\0\x05\0\0\0b\x0c0$",
            b"\xde\xc0\x17\x0b\0\0\0\0\x14\0\0\0\0\0\0\0",
            b"\x03\x02\x23\x07\0\0\x01\0\0\0\0\0\0\0",
            &[0u8; 16],
        ] {
            assert_eq!(compression_of(other), None, "{other:?}");
        }
        // A header asking for a dictionary no encoder writes, or a
        // nonzero first range coder byte.
        let mut odd = lz.clone();
        odd[1..5].copy_from_slice(&0x0012_3456u32.to_le_bytes());
        assert_eq!(compression_of(&odd), None);
        let mut first = lz.clone();
        first[13] = 1;
        assert_eq!(compression_of(&first), None);
        // LZMA-looking bytes that do not decode are no package at all.
        let mut fake = lz[..13].to_vec();
        fake.extend_from_slice(&[0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        fake.extend_from_slice(&[0xa5; 600]);
        assert_eq!(detect(&fake), None);
    }

    /// A cpio entry in the `newc` format (`odc`: the octal one).
    fn cpio_entry(out: &mut Vec<u8>, name: &str, mode: u32, data: &[u8], odc: bool) {
        let namesize = name.len() + 1;
        if odc {
            out.extend_from_slice(
                format!(
                    "070707{:06o}{:06o}{:06o}{:06o}{:06o}{:06o}{:06o}{:011o}{:06o}{:011o}",
                    0,
                    1,
                    mode,
                    0,
                    0,
                    1,
                    0,
                    0,
                    namesize,
                    data.len()
                )
                .as_bytes(),
            );
        } else {
            out.extend_from_slice(
                format!(
                    "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
                    1, mode, 0, 0, 1, 0, data.len(), 0, 0, 0, 0, namesize, 0
                )
                .as_bytes(),
            );
        }
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        let pad = |v: &mut Vec<u8>| {
            while !odc && !v.len().is_multiple_of(4) {
                v.push(0);
            }
        };
        pad(out);
        out.extend_from_slice(data);
        pad(out);
    }

    #[test]
    fn cpio_archives_hand_over_their_regular_files() {
        for odc in [false, true] {
            let mut a = Vec::new();
            cpio_entry(&mut a, "lib", 0o040_755, b"", odc);
            cpio_entry(&mut a, "./lib/a.so", 0o100_644, b"device code!", odc);
            cpio_entry(&mut a, "lib/link", 0o120_777, b"a.so", odc);
            cpio_entry(&mut a, "TRAILER!!!", 0, b"", odc);
            assert_eq!(detect(&a), Some(Kind::Cpio));
            let mut r = Record::default();
            members(&a, Kind::Cpio, &mut r).unwrap();
            assert_eq!(
                r.0,
                vec![("lib/a.so".to_string(), Ok(b"device code!".to_vec()))]
            );
            // Cut anywhere before the trailer, or with a size that lies: an
            // error, never a short archive.
            for cut in [5, 60, a.len() - 20] {
                let mut r = Record::default();
                assert!(
                    members(&a[..cut], Kind::Cpio, &mut r).is_err(),
                    "{odc} {cut}"
                );
            }
            let mut lie = a.clone();
            // The second entry's file size.
            let at = if odc { 80 + 65 } else { 116 + 54 };
            let first = lie.iter().skip(at).position(|&b| b != b'0').unwrap() + at;
            lie[first] = b'f';
            let mut r = Record::default();
            assert!(members(&lie, Kind::Cpio, &mut r).is_err(), "{odc}");
        }
    }

    #[test]
    fn a_compressed_file_s_member_is_named_without_the_suffix() {
        assert_eq!(decompressed_name("lib/libfoo.so.gz"), "libfoo.so");
        assert_eq!(
            decompressed_name("pkg.whl!/a/libfoo.so.12.zst"),
            "libfoo.so.12"
        );
        assert_eq!(decompressed_name("x.bz2"), "x");
        assert_eq!(decompressed_name("data.lzma"), "data");
        assert_eq!(decompressed_name("stdin"), "stdin");
        assert_eq!(decompressed_name(".gz"), ".gz");
    }

    #[test]
    fn not_packages() {
        assert_eq!(detect(b""), None);
        assert_eq!(detect(b"\x7fELF\x02\x01\x01"), None);
        assert_eq!(detect(b"!<arch>\nfoo.o/          "), None);
        // A block with the magic but a wrong checksum.
        let mut t = tar_of(&[("x", b"1")]);
        t[148] = b'7';
        assert_eq!(detect(&t), None);
    }

    #[test]
    fn truncated_compressed_tar_is_an_error() {
        let t = tar_of(&[("x", &[1u8; 5000]), ("y", b"2")]);
        let zst = zstd::encode_all(&t[..], 1).unwrap();
        let cut = &zst[..zst.len() / 2];
        assert_eq!(detect(cut), Some(Kind::Tar(Compression::Zstd)));
        let mut r = Record::default();
        assert!(members(cut, Kind::Tar(Compression::Zstd), &mut r).is_err());
    }

    #[test]
    fn zip_members_stored_and_deflated() {
        let mut w = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        let deflated = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        w.add_directory("lib/", stored).unwrap();
        w.start_file("lib/a.so", stored).unwrap();
        io::Write::write_all(&mut w, b"stored bytes").unwrap();
        w.start_file("lib/b.so", deflated).unwrap();
        io::Write::write_all(&mut w, &[9u8; 4000]).unwrap();
        let z = w.finish().unwrap().into_inner();
        assert_eq!(detect(&z), Some(Kind::Zip));
        let mut r = Record::default();
        members(&z, Kind::Zip, &mut r).unwrap();
        assert_eq!(
            r.0,
            vec![
                ("lib/a.so".to_string(), Ok(b"stored bytes".to_vec())),
                ("lib/b.so".to_string(), Ok(vec![9u8; 4000]))
            ]
        );
    }

    #[test]
    fn corrupt_zip_is_an_error() {
        let mut r = Record::default();
        let e = members(b"PK\x03\x04garbage", Kind::Zip, &mut r).unwrap_err();
        assert!(e.to_string().starts_with("invalid zip archive: "), "{e}");
    }
}

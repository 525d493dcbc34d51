//! An RPM's payload, decompressed, read as a stream: a cpio archive whose
//! entries are in the `newc` form (`070701`: a 110-byte ASCII header,
//! name and data each padded to four bytes), or in the stripped form rpm ≥
//! 4.12 writes for packages with files of 4 GiB or more (`07070X` and the
//! file's index in eight hex digits, padded to four bytes, then its data:
//! path and size come from the main header, [`FileList`]). It ends with a
//! `newc` entry named `TRAILER!!!`.

use std::io::{self, Read};

use super::filelist::FileList;
use super::header::Header;
use crate::error::{Error, Result};
use crate::package::types::{Contents, Kind, Members, corrupt};

/// The longest name a `newc` entry may have (rpm's own paths are far
/// shorter): bounds what a lying name size can make us allocate.
const MAX_NAME: u64 = 1 << 16;

/// The stream and how far into it the reading is.
struct Payload<'r> {
    r: &'r mut dyn Read,
    at: u64,
}

/// The error for the payload, saying `what`.
fn bad(what: impl std::fmt::Display) -> Error {
    corrupt(Kind::Rpm, format!("its payload: {what}"))
}

impl Payload<'_> {
    /// Reads exactly `buf.len()` bytes; `what` says what they are, for
    /// the error when the stream ends first.
    fn exact(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        self.r.read_exact(buf).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => bad(format!("it ends in {what} at offset {}", self.at)),
            _ => bad(e),
        })?;
        self.at += buf.len() as u64;
        Ok(())
    }

    /// Skips `n` bytes, `what` naming them for the error.
    fn skip(&mut self, n: u64, what: &str) -> Result<()> {
        let got = io::copy(&mut Read::take(&mut *self.r, n), &mut io::sink()).map_err(bad)?;
        self.at += got;
        if got < n {
            return Err(bad(format!("it ends in {what} at offset {}", self.at)));
        }
        Ok(())
    }

    /// Skips to the next multiple of four bytes.
    fn align(&mut self, what: &str) -> Result<()> {
        let pad = self.at.next_multiple_of(4) - self.at;
        self.skip(pad, what)
    }

    /// Reads `width` hexadecimal digits as a number.
    fn hex(&mut self, width: usize, at: u64) -> Result<u64> {
        let mut digits = [0u8; 8];
        let digits = &mut digits[..width];
        self.exact(digits, "an entry's header")?;
        std::str::from_utf8(digits)
            .ok()
            .and_then(|s| u64::from_str_radix(s, 16).ok())
            .ok_or_else(|| {
                bad(format!(
                    "the header at offset {at} holds a field that is no number"
                ))
            })
    }
}

/// What one entry is: its path, the size of its data, whether it is a
/// regular file; `None` for the trailer.
type Entry = Option<(String, u64, bool)>;

/// Hands each regular file of the payload `r` to `to`, up to its trailer;
/// `main` is the main header (whose file list names stripped entries).
pub(super) fn entries(r: &mut dyn Read, main: &Header<'_>, to: &mut dyn Members) -> Result<()> {
    let mut p = Payload { r, at: 0 };
    let mut list: Option<FileList> = None;
    loop {
        p.align("the padding before an entry")?;
        let at = p.at;
        let mut magic = [0u8; 6];
        p.exact(&mut magic, "the magic of an entry (before its trailer)")?;
        let entry: Entry = match &magic {
            b"070701" => newc(&mut p, at)?,
            b"07070X" => {
                let fx = p.hex(8, at)?;
                p.align("the padding after an entry's header")?;
                let files = match &mut list {
                    Some(l) => l,
                    None => list.insert(FileList::of(main).map_err(|e| corrupt(Kind::Rpm, e))?),
                };
                let f = files.get(fx).map_err(bad)?;
                Some((f.path.clone(), f.size, f.regular))
            }
            _ => return Err(bad(format!("no cpio entry at offset {at}"))),
        };
        let Some((path, size, regular)) = entry else {
            return Ok(());
        };
        if !regular {
            p.skip(size, "an entry's data")?;
            continue;
        }
        let name = path.trim_start_matches("./").trim_start_matches('/');
        let mut data = Read::take(&mut *p.r, size);
        to.member(
            name,
            Ok(Contents::Stream {
                reader: &mut data,
                size,
            }),
        )?;
        // Whatever the receiver took, the rest is read to the entry's end.
        io::copy(&mut data, &mut io::sink()).map_err(bad)?;
        let left = data.limit();
        p.at += size - left;
        if left > 0 {
            return Err(bad(format!(
                "it ends inside '{name}', {left} of its {size} bytes missing"
            )));
        }
    }
}

/// The rest of a `newc` entry's header (its magic read, at `at`) and its
/// name: `None` for the trailer.
fn newc(p: &mut Payload<'_>, at: u64) -> Result<Entry> {
    // The fields after the magic: inode, mode, uid, gid, nlink, mtime,
    // file size, four device numbers, name size, check.
    let mut fields = [0u64; 13];
    for f in &mut fields {
        *f = p.hex(8, at)?;
    }
    let (mode, size, name_size) = (fields[1], fields[6], fields[11]);
    if name_size == 0 || name_size > MAX_NAME {
        return Err(bad(format!(
            "the entry at offset {at} gives its name {name_size} bytes"
        )));
    }
    // Bounded above: at most 64 KiB.
    let mut name = vec![0u8; crate::num::usize_from(name_size)];
    p.exact(&mut name, "an entry's name")?;
    p.align("the padding after an entry's name")?;
    let name = name.strip_suffix(b"\0").unwrap_or(&name);
    if name == b"TRAILER!!!" {
        return Ok(None);
    }
    let regular = mode & 0o170_000 == 0o100_000;
    Ok(Some((
        String::from_utf8_lossy(name).into_owned(),
        size,
        regular,
    )))
}

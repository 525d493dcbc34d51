//! cpio archives in the portable ASCII formats (`newc`, `crc`, `odc`).

use super::types::{Contents, Kind, Members, corrupt};
use crate::error::Result;

/// The layout of a cpio header in the portable ASCII formats: its length,
/// how its numbers are written (16: `newc` and `crc`, hexadecimal; 8:
/// `odc`, octal), and where its mode, name size and file size lie.
pub(super) struct CpioHeader {
    len: usize,
    radix: u32,
    mode: (usize, usize),
    name_size: (usize, usize),
    file_size: (usize, usize),
    /// Whether names and data are padded to four bytes (`newc`, `crc`).
    padded: bool,
    /// Where the checksum of a regular file's data lies (`crc`: the sum
    /// of its bytes, modulo 2^32); `None` in formats without one.
    check: Option<(usize, usize)>,
}

/// The header layout whose magic `bytes` start with.
pub(super) fn cpio_header(bytes: &[u8]) -> Option<CpioHeader> {
    if bytes.starts_with(b"070701") || bytes.starts_with(b"070702") {
        Some(CpioHeader {
            len: 110,
            radix: 16,
            mode: (14, 8),
            name_size: (94, 8),
            file_size: (54, 8),
            padded: true,
            check: bytes.starts_with(b"070702").then_some((102, 8)),
        })
    } else if bytes.starts_with(b"070707") {
        Some(CpioHeader {
            len: 76,
            radix: 8,
            mode: (18, 6),
            name_size: (59, 6),
            file_size: (65, 11),
            padded: false,
            check: None,
        })
    } else {
        None
    }
}

/// The regular files of a cpio archive, up to its `TRAILER!!!` entry.
/// Every header, name and body must lie within the archive, and in the
/// `crc` format every regular file's data must sum to its checksum.
pub(super) fn cpio_members(bytes: &[u8], to: &mut dyn Members) -> Result<()> {
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
            if let Some(field) = layout.check {
                let said = number(field)?;
                let sum = body.iter().fold(0u32, |s, &b| s.wrapping_add(u32::from(b)));
                if said != u64::from(sum) {
                    return Err(bad(format!(
                        "the data of '{path}' does not match its checksum (it says {said:#010x}, \
                         the bytes sum to {sum:#010x})"
                    )));
                }
            }
            to.member(path.trim_start_matches("./"), Ok(Contents::Stored(body)))?;
        }
        at = pad(end).ok_or_else(|| past(at))?;
    }
}

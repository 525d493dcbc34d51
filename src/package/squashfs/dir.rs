//! squashfs directory listings, read from the decompressed directory
//! table and written anew. A listing is a run of headers, each followed
//! by the entries it covers:
//!
//! | bytes | header field                                          |
//! |-------|-------------------------------------------------------|
//! | 4     | entries under it, less one (at most 256 entries)      |
//! | 4     | the inode table block all their inodes lie in         |
//! | 4     | a base inode number                                   |
//!
//! | bytes | entry field                                           |
//! |-------|-------------------------------------------------------|
//! | 2     | the inode's offset in that block                      |
//! | 2     | its inode number less the base (signed)               |
//! | 2     | its basic type (1-7)                                  |
//! | 2     | its name's length, less one                           |
//! | n     | the name (no `/`, no NUL, never `.` or `..`)          |
//!
//! Entries are sorted by name, bytewise (the kernel's lookup stops at the
//! first name past the one it seeks). A new header starts when 256
//! entries are under the last one, when the next inode lies in another
//! block, when its number is out of a signed 16-bit reach of the base,
//! and when the entries since the last indexed header would pass 8 KiB:
//! that header then gets an index entry in the directory's inode, so a
//! lookup can skip to it ([`super::inode::DirIndex`]). A directory
//! inode's size is its listing's length plus 3.

use std::io;

use super::inode::DirIndex;
use super::meta::{Table, Writer};
use crate::bytes::le_at;
use crate::num::{u64_from, usize_from};

/// The most entries under one header.
const RUN: usize = 256;

/// How many listing bytes may follow an indexed header before the next
/// header is indexed: one metadata block.
const WINDOW: usize = 8192;

/// One directory entry: its name, its inode's basic type, reference and
/// number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) name: Vec<u8>,
    pub(super) kind: u16,
    pub(super) inode: u64,
    pub(super) number: u32,
}

/// Where a listing was written: its block (from the directory table's
/// start), offset, the size its inode gives, and its index.
#[derive(Debug)]
pub(super) struct Listing {
    pub(super) start: u32,
    pub(super) offset: u16,
    pub(super) size: u32,
    pub(super) index: Vec<DirIndex>,
}

/// The entries of the listing at block `start`, `offset`, of inode size
/// `size`, in the directory table `table`.
pub(super) fn read(
    table: &Table,
    start: u32,
    offset: u16,
    size: u32,
) -> Result<Vec<Entry>, String> {
    let len =
        usize_from(u64::from(size.checked_sub(3).ok_or_else(|| {
            format!("a directory's size ({size}) is less than 3")
        })?));
    if len == 0 {
        return Ok(Vec::new());
    }
    let at = table.at((u64::from(start) << 16) | u64::from(offset))?;
    let bytes = at
        .checked_add(len)
        .and_then(|end| table.bytes().get(at..end))
        .ok_or_else(|| {
            format!("a directory's listing ({len} bytes at {at}) lies past its table's end")
        })?;
    let cut = || "a directory's listing is cut short".to_string();
    let u16_at = |at: usize| le_at::<u16>(bytes, at).ok_or_else(cut);
    let u32_at = |at: usize| le_at::<u32>(bytes, at).ok_or_else(cut);
    let (mut out, mut p) = (Vec::new(), 0usize);
    while p < bytes.len() {
        let (count, block, base) = (u32_at(p)?, u32_at(p + 4)?, u32_at(p + 8)?);
        p += 12;
        if usize_from(u64::from(count)) >= RUN {
            return Err(format!(
                "a directory header covers {} entries, more than {RUN}",
                u64::from(count) + 1
            ));
        }
        for _ in 0..=count {
            let (off, delta, kind, n) =
                (u16_at(p)?, u16_at(p + 2)?, u16_at(p + 4)?, u16_at(p + 6)?);
            let name = bytes
                .get(p + 8..p + 9 + usize::from(n))
                .ok_or_else(cut)?
                .to_vec();
            p += 9 + usize::from(n);
            let number = i64::from(base) + i64::from(delta as i16);
            let number = u32::try_from(number)
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("a directory entry has inode number {number}"))?;
            if !(1..=7).contains(&kind) {
                return Err(format!(
                    "a directory entry has type {kind}, which squashfs does not define"
                ));
            }
            if name == b"." || name == b".." || name.iter().any(|&b| b == b'/' || b == 0) {
                return Err(format!(
                    "an entry is named '{}'",
                    String::from_utf8_lossy(&name)
                ));
            }
            let inode = (u64::from(block) << 16) | u64::from(off);
            out.push(Entry {
                name,
                kind,
                inode,
                number,
            });
        }
    }
    Ok(out)
}

/// Writes the listing of `entries` (sorted by name) to the directory
/// table `w`.
pub(super) fn write(entries: &[Entry], w: &mut Writer<'_>) -> io::Result<Listing> {
    let first = w.reference();
    let mut listing = Listing {
        start: block_of(first)?,
        offset: (first & 0xffff) as u16,
        size: 3,
        index: Vec::new(),
    };
    let (mut len, mut window, mut i, mut indexed) = (0usize, 0usize, 0usize, false);
    while i < entries.len() {
        let (block, base) = (entries[i].inode >> 16, entries[i].number);
        let (mut j, mut run) = (i, 12usize);
        let mut full = false;
        while j < entries.len() && j - i < RUN {
            let e = &entries[j];
            let delta = i64::from(e.number) - i64::from(base);
            if e.inode >> 16 != block || i16::try_from(delta).is_err() {
                break;
            }
            let need = 8 + e.name.len();
            if j > i && len + run + need - window > WINDOW {
                full = true;
                break;
            }
            run += need;
            j += 1;
        }
        if indexed {
            window = len;
            listing.index.push(DirIndex {
                index: u32::try_from(len).map_err(io::Error::other)?,
                start: block_of(w.reference())?,
                name: entries[i].name.clone(),
            });
        }
        indexed = full;
        let mut bytes = Vec::with_capacity(run);
        for v in [u64_from(j - i - 1), block, u64::from(base)] {
            bytes.extend_from_slice(&u32::try_from(v).map_err(io::Error::other)?.to_le_bytes());
        }
        for e in &entries[i..j] {
            // Both checked above: the number within reach of the base, and
            // names of 1 to 256 bytes.
            let delta = i16::try_from(i64::from(e.number) - i64::from(base)).unwrap_or_default();
            bytes.extend_from_slice(&e.inode.to_le_bytes()[..2]);
            bytes.extend_from_slice(&delta.to_le_bytes());
            bytes.extend_from_slice(&e.kind.to_le_bytes());
            let n = u16::try_from(e.name.len().max(1) - 1).unwrap_or(u16::MAX);
            bytes.extend_from_slice(&n.to_le_bytes());
            bytes.extend_from_slice(&e.name);
        }
        w.write(&bytes)?;
        len += bytes.len();
        i = j;
    }
    listing.size = u32::try_from(len + 3).map_err(io::Error::other)?;
    Ok(listing)
}

/// The block of a reference, as a 32-bit field holds it.
fn block_of(r: u64) -> io::Result<u32> {
    u32::try_from(r >> 16).map_err(|_| io::Error::other("a squashfs table passes 4 GiB"))
}

#[cfg(test)]
mod tests {
    use super::{Entry, read, write};
    use crate::bytes::le_at;
    use crate::package::squashfs::codec::{Method, Tuning};
    use crate::package::squashfs::meta::{Table, Writer};

    fn tuning() -> Tuning {
        Tuning {
            method: Method::Gzip,
            block: None,
            first: None,
            bcj: 0,
        }
    }

    /// `n` entries named `prefix` and a number, of `width` characters,
    /// their inodes `step` bytes apart in the inode table, numbered from 1
    /// by `gap`.
    fn entries(n: usize, width: usize, step: u64, gap: u32) -> Vec<Entry> {
        (0..n)
            .map(|i| {
                let at = i as u64 * step;
                Entry {
                    name: format!("{i:0width$}").into_bytes(),
                    kind: 2,
                    inode: ((at / 8192) << 16) | (at % 8192),
                    number: 1 + u32::try_from(i).unwrap() * gap,
                }
            })
            .collect()
    }

    /// Writes `e` after `pad` bytes of table, reads it back; gives the
    /// headers' entry counts, the table, and the listing.
    fn round_trip(e: &[Entry], pad: usize) -> (Vec<usize>, Table, super::Listing) {
        let t = tuning();
        let mut w = Writer::new(&t);
        w.write(&vec![0u8; pad]).unwrap();
        let listing = write(e, &mut w).unwrap();
        let (bytes, _) = w.finish().unwrap();
        let table = Table::read(&bytes, Method::Gzip, 0, bytes.len() as u64).unwrap();
        let back = read(&table, listing.start, listing.offset, listing.size).unwrap();
        assert_eq!(back, e);
        let at = table
            .at((u64::from(listing.start) << 16) | u64::from(listing.offset))
            .unwrap();
        let raw = &table.bytes()[at..at + listing.size as usize - 3];
        let mut counts = Vec::new();
        let mut p = 0;
        while p < raw.len() {
            let n = le_at::<u32>(raw, p).unwrap() as usize + 1;
            p += 12;
            for _ in 0..n {
                p += 9 + le_at::<u16>(raw, p + 6).unwrap() as usize;
            }
            counts.push(n);
        }
        (counts, table, listing)
    }

    #[test]
    fn a_header_covers_at_most_256_entries() {
        let (counts, _, l) = round_trip(&entries(600, 4, 0, 1), 100);
        assert_eq!(counts, vec![256, 256, 88]);
        assert!(l.index.is_empty(), "{:?}", l.index);
    }

    #[test]
    fn a_new_header_starts_at_each_inode_block_and_far_number() {
        // 40-byte inodes: 8192 / 40 = 204.8 a block.
        let (counts, _, _) = round_trip(&entries(300, 3, 40, 1), 0);
        assert_eq!(counts, vec![205, 95]);
        let (counts, _, _) = round_trip(&entries(3, 3, 0, 40_000), 0);
        assert_eq!(counts, vec![1, 1, 1]);
    }

    /// Long names make a listing of several metadata blocks: a header
    /// starts within each 8 KiB, is indexed, and each index entry leads
    /// to its header (as the kernel's lookup goes) whose first name it
    /// names.
    #[test]
    fn long_listings_are_indexed_every_8_kib() {
        let e = entries(200, 200, 0, 1);
        let (counts, table, l) = round_trip(&e, 5000);
        assert!(counts.len() >= 5, "{counts:?}");
        assert_eq!(l.index.len(), counts.len() - 1);
        for ix in &l.index {
            let offset = (u64::from(l.offset) + u64::from(ix.index)) % 8192;
            let at = table.at((u64::from(ix.start) << 16) | offset).unwrap();
            let n = le_at::<u16>(table.bytes(), at + 12 + 6).unwrap() as usize + 1;
            assert_eq!(&table.bytes()[at + 20..at + 20 + n], &ix.name[..]);
        }
        // Each indexed header begins less than 8 KiB after the last one.
        let mut last = 0;
        for ix in &l.index {
            assert!(ix.index as usize - last <= 8192);
            last = ix.index as usize;
        }
    }

    #[test]
    fn lying_listings_are_errors() {
        let e = entries(3, 3, 0, 1);
        let t = tuning();
        let mut w = Writer::new(&t);
        let l = write(&e, &mut w).unwrap();
        let (bytes, _) = w.finish().unwrap();
        let table = Table::read(&bytes, Method::Gzip, 0, bytes.len() as u64).unwrap();
        assert!(read(&table, l.start, l.offset, 2).is_err());
        assert!(read(&table, l.start, l.offset, l.size + 1).is_err());
        assert!(read(&table, l.start, l.offset, l.size - 1).is_err());
        assert!(read(&table, l.start + 1, l.offset, l.size).is_err());
        assert_eq!(read(&table, l.start, l.offset, 3).unwrap(), vec![]);
    }
}

//! squashfs inodes (version 4), read from the decompressed inode table
//! and written anew. Every inode starts with the same 16 bytes:
//!
//! | offset | size | field                                     |
//! |--------|------|-------------------------------------------|
//! | 0      | 2    | type: 1-7 basic, 8-14 extended            |
//! | 2      | 2    | mode (permission bits)                    |
//! | 4      | 2    | owner, an index into the id table         |
//! | 6      | 2    | group, an index into the id table         |
//! | 8      | 4    | modification time                         |
//! | 12     | 4    | inode number (1 to the inode count)       |
//!
//! then, by type (all little-endian): a basic directory (1) `start u32,
//! nlink u32, size u16, offset u16, parent u32`; a basic file (2) `start
//! u32, fragment u32, fragment offset u32, size u32, block sizes u32…`; a
//! basic symlink (3) `nlink u32, length u32, target`; a device (4, 5)
//! `nlink u32, rdev u32`; a fifo or socket (6, 7) `nlink u32`. The
//! extended types add the link count and an xattr index (`0xffffffff`:
//! none): a directory (8) `nlink u32, size u32, start u32, parent u32,
//! index count u16, offset u16, xattr u32, index…`; a file (9) `start u64,
//! size u64, sparse u64, nlink u32, fragment u32, fragment offset u32,
//! xattr u32, block sizes…`; the others (10-14) their basic fields then
//! `xattr u32`. A file has one block size per whole block, and one more
//! for a tail kept outside a fragment. (squashfs-tools'
//! `squashfs_fs.h`, and the kernel's `Documentation/filesystems/squashfs.rst`.)

use crate::bytes::le_at;
use crate::num::{u64_from, usize_from};

/// An inode's xattr index when it has none.
pub(super) const NO_XATTR: u32 = 0xffff_ffff;

/// A file's fragment index when its tail is in no fragment.
pub(super) const NO_FRAGMENT: u32 = 0xffff_ffff;

/// The basic type of a directory, a regular file and a symlink.
pub(super) const DIR: u16 = 1;
pub(super) const FILE: u16 = 2;
const SYMLINK: u16 = 3;

/// One entry of an extended directory's index: where a directory header
/// lies in its listing (`index`), the directory table block it is in
/// (`start`), and the first name under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DirIndex {
    pub(super) index: u32,
    pub(super) start: u32,
    pub(super) name: Vec<u8>,
}

/// What follows the common header, by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Body {
    /// A directory: its listing's block (from the directory table's
    /// start), offset and size (3 more than its bytes), its parent's
    /// inode number, and (written only) its index.
    Dir {
        start: u32,
        offset: u16,
        size: u32,
        parent: u32,
        index: Vec<DirIndex>,
    },
    /// A regular file: where its blocks start, its size, the bytes sparse
    /// blocks saved, its fragment and offset in it, each block's stored
    /// size.
    File {
        start: u64,
        size: u64,
        sparse: u64,
        fragment: u32,
        frag_offset: u32,
        blocks: Vec<u32>,
    },
    /// A symlink's target, a device's number (4 bytes), or nothing (a
    /// fifo or a socket).
    Other(Vec<u8>),
}

/// An inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Inode {
    /// The basic type (1-7), whichever form it is stored in.
    pub(super) kind: u16,
    pub(super) mode: u16,
    pub(super) uid: u16,
    pub(super) gid: u16,
    pub(super) mtime: u32,
    pub(super) number: u32,
    pub(super) nlink: u32,
    pub(super) xattr: u32,
    pub(super) body: Body,
}

/// A cursor over the inode table that fails, naming the inode, when cut.
struct At<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl At<'_> {
    fn u16(&mut self) -> Result<u16, String> {
        let v = le_at::<u16>(self.bytes, self.at).ok_or_else(|| self.cut())?;
        self.at += 2;
        Ok(v)
    }
    fn u32(&mut self) -> Result<u32, String> {
        let v = le_at::<u32>(self.bytes, self.at).ok_or_else(|| self.cut())?;
        self.at += 4;
        Ok(v)
    }
    fn u64(&mut self) -> Result<u64, String> {
        let v = le_at::<u64>(self.bytes, self.at).ok_or_else(|| self.cut())?;
        self.at += 8;
        Ok(v)
    }
    fn bytes(&mut self, n: usize) -> Result<Vec<u8>, String> {
        let end = self.at.checked_add(n).ok_or_else(|| self.cut())?;
        let b = self.bytes.get(self.at..end).ok_or_else(|| self.cut())?;
        self.at = end;
        Ok(b.to_vec())
    }
    fn cut(&self) -> String {
        format!(
            "an inode at byte {} of the inode table is cut short",
            self.at
        )
    }
}

/// Reads the inode at `at` of the decompressed inode table `bytes`, of a
/// filesystem of `block_size`-byte blocks.
pub(super) fn read(bytes: &[u8], at: usize, block_size: u32) -> Result<Inode, String> {
    let mut c = At { bytes, at };
    let stored = c.u16()?;
    let (mode, uid, gid, mtime, number) = (c.u16()?, c.u16()?, c.u16()?, c.u32()?, c.u32()?);
    let kind = match stored {
        1..=7 => stored,
        8..=14 => stored - 7,
        t => {
            return Err(format!(
                "an inode has type {t}, which squashfs does not define"
            ));
        }
    };
    let extended = stored > 7;
    let mut i = Inode {
        kind,
        mode,
        uid,
        gid,
        mtime,
        number,
        nlink: 1,
        xattr: NO_XATTR,
        body: Body::Other(Vec::new()),
    };
    match (kind, extended) {
        (DIR, false) => {
            let (start, nlink, size, offset, parent) =
                (c.u32()?, c.u32()?, c.u16()?, c.u16()?, c.u32()?);
            i.nlink = nlink;
            i.body = dir(start, offset, u32::from(size), parent);
        }
        (DIR, true) => {
            let (nlink, size, start, parent) = (c.u32()?, c.u32()?, c.u32()?, c.u32()?);
            let (_count, offset, xattr) = (c.u16()?, c.u16()?, c.u32()?);
            (i.nlink, i.xattr) = (nlink, xattr);
            i.body = dir(start, offset, size, parent);
        }
        (FILE, false) => {
            let (start, fragment, frag_offset, size) = (c.u32()?, c.u32()?, c.u32()?, c.u32()?);
            let blocks = blocks(&mut c, u64::from(size), fragment, block_size)?;
            i.body = Body::File {
                start: u64::from(start),
                size: u64::from(size),
                sparse: 0,
                fragment,
                frag_offset,
                blocks,
            };
        }
        (FILE, true) => {
            let (start, size, sparse) = (c.u64()?, c.u64()?, c.u64()?);
            let (nlink, fragment, frag_offset, xattr) = (c.u32()?, c.u32()?, c.u32()?, c.u32()?);
            (i.nlink, i.xattr) = (nlink, xattr);
            let blocks = blocks(&mut c, size, fragment, block_size)?;
            i.body = Body::File {
                start,
                size,
                sparse,
                fragment,
                frag_offset,
                blocks,
            };
        }
        _ => {
            i.nlink = c.u32()?;
            let rest = match kind {
                SYMLINK => {
                    let n = c.u32()?;
                    c.bytes(usize_from(u64::from(n)))?
                }
                4 | 5 => c.bytes(4)?,
                _ => Vec::new(),
            };
            if extended {
                i.xattr = c.u32()?;
            }
            i.body = Body::Other(rest);
        }
    }
    Ok(i)
}

fn dir(start: u32, offset: u16, size: u32, parent: u32) -> Body {
    Body::Dir {
        start,
        offset,
        size,
        parent,
        index: Vec::new(),
    }
}

/// A file's block sizes: one per whole block, one more for a tail outside
/// any fragment; as many as the table holds at most.
fn blocks(c: &mut At<'_>, size: u64, fragment: u32, block_size: u32) -> Result<Vec<u32>, String> {
    let bs = u64::from(block_size);
    let n = match fragment {
        NO_FRAGMENT => size.div_ceil(bs),
        _ => size / bs,
    };
    let left = u64_from(c.bytes.len().saturating_sub(c.at)) / 4;
    if n > left {
        return Err(format!(
            "a file's inode gives {n} blocks, more than its inode table holds"
        ));
    }
    (0..n).map(|_| c.u32()).collect()
}

/// Appends `i` to `out`: in its basic form when that holds it (no xattr,
/// one link for a file, 32-bit places and sizes, a directory without an
/// index), else in its extended form.
pub(super) fn write(i: &Inode, out: &mut Vec<u8>) {
    let put16 = |out: &mut Vec<u8>, v: u16| out.extend_from_slice(&v.to_le_bytes());
    let put32 = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&v.to_le_bytes());
    let has_xattr = i.xattr != NO_XATTR;
    let extended = has_xattr
        || match &i.body {
            Body::Dir { size, index, .. } => !index.is_empty() || *size > 0xffff,
            Body::File {
                start,
                size,
                sparse,
                ..
            } => i.nlink != 1 || *start > 0xffff_ffff || *size > 0xffff_ffff || *sparse != 0,
            Body::Other(_) => false,
        };
    put16(out, i.kind + if extended { 7 } else { 0 });
    for v in [i.mode, i.uid, i.gid] {
        put16(out, v);
    }
    put32(out, i.mtime);
    put32(out, i.number);
    match &i.body {
        Body::Dir {
            start,
            offset,
            size,
            parent,
            index,
        } => match extended {
            false => {
                // The size fits 16 bits: the basic form is taken only then.
                for v in [*start, i.nlink] {
                    put32(out, v);
                }
                put16(out, u16::try_from(*size).unwrap_or(u16::MAX));
                put16(out, *offset);
                put32(out, *parent);
            }
            true => {
                for v in [i.nlink, *size, *start, *parent] {
                    put32(out, v);
                }
                // An index entry per 8 KiB of listing: far fewer than 65536.
                put16(out, u16::try_from(index.len()).unwrap_or(u16::MAX));
                put16(out, *offset);
                put32(out, i.xattr);
                for e in index {
                    put32(out, e.index);
                    put32(out, e.start);
                    put32(
                        out,
                        u32::try_from(e.name.len().saturating_sub(1)).unwrap_or(u32::MAX),
                    );
                    out.extend_from_slice(&e.name);
                }
            }
        },
        Body::File {
            start,
            size,
            sparse,
            fragment,
            frag_offset,
            blocks,
        } => {
            match extended {
                // Both fit 32 bits: the basic form is taken only then.
                false => {
                    let low = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
                    for v in [low(*start), *fragment, *frag_offset, low(*size)] {
                        put32(out, v);
                    }
                }
                true => {
                    for v in [*start, *size, *sparse] {
                        out.extend_from_slice(&v.to_le_bytes());
                    }
                    for v in [i.nlink, *fragment, *frag_offset, i.xattr] {
                        put32(out, v);
                    }
                }
            }
            for b in blocks {
                put32(out, *b);
            }
        }
        Body::Other(rest) => {
            put32(out, i.nlink);
            if i.kind == SYMLINK {
                // A target read from a 32-bit length.
                put32(out, u32::try_from(rest.len()).unwrap_or(u32::MAX));
            }
            out.extend_from_slice(rest);
            if extended {
                put32(out, i.xattr);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Body, DirIndex, Inode, NO_FRAGMENT, NO_XATTR, read, write};

    fn inode(kind: u16, nlink: u32, xattr: u32, body: Body) -> Inode {
        Inode {
            kind,
            mode: 0o644,
            uid: 1,
            gid: 2,
            mtime: 1_600_000_000,
            number: 7,
            nlink,
            xattr,
            body,
        }
    }

    fn file(size: u64, fragment: u32, blocks: Vec<u32>) -> Body {
        Body::File {
            start: 96,
            size,
            sparse: 0,
            fragment,
            frag_offset: if fragment == NO_FRAGMENT { 0 } else { 12 },
            blocks,
        }
    }

    /// Each inode written, then read back, is itself; the basic form is
    /// taken when it holds the inode, else the extended one.
    #[test]
    fn inodes_round_trip_in_the_form_they_need() {
        let cases = [
            (inode(2, 1, NO_XATTR, file(3000, 0, vec![])), 2),
            (
                inode(
                    2,
                    1,
                    NO_XATTR,
                    file(9000, NO_FRAGMENT, vec![10, 1 << 24 | 808, 0]),
                ),
                2,
            ),
            (inode(2, 3, NO_XATTR, file(3000, 0, vec![])), 9),
            (inode(2, 1, 4, file(3000, 0, vec![])), 9),
            (inode(3, 2, NO_XATTR, Body::Other(b"target".to_vec())), 3),
            (inode(3, 1, 0, Body::Other(b"target".to_vec())), 10),
            (inode(4, 1, NO_XATTR, Body::Other(vec![1, 2, 0, 0])), 4),
            (inode(6, 1, 9, Body::Other(vec![])), 13),
        ];
        for (i, stored) in cases {
            let mut out = Vec::new();
            write(&i, &mut out);
            assert_eq!(u16::from_le_bytes([out[0], out[1]]), stored, "{i:?}");
            assert_eq!(read(&out, 0, 4096).unwrap(), i);
        }
        // A directory with an index is written extended; read back, its
        // index is not kept (only its writer needs it).
        let index = vec![DirIndex {
            index: 8190,
            start: 40,
            name: b"zz".to_vec(),
        }];
        let body = |index| Body::Dir {
            start: 5,
            offset: 6,
            size: 9000,
            parent: 8,
            index,
        };
        let d = inode(1, 4, NO_XATTR, body(index));
        let mut out = Vec::new();
        write(&d, &mut out);
        assert_eq!(out[0], 8);
        assert_eq!(out.len(), 40 + 12 + 2);
        assert_eq!(
            read(&out, 0, 4096).unwrap(),
            inode(1, 4, NO_XATTR, body(vec![]))
        );
    }

    #[test]
    fn cut_or_lying_inodes_are_errors() {
        let mut out = Vec::new();
        write(
            &inode(2, 1, NO_XATTR, file(9000, NO_FRAGMENT, vec![10, 20, 30])),
            &mut out,
        );
        for n in 0..out.len() {
            assert!(read(&out[..n], 0, 4096).is_err(), "cut at {n}");
        }
        // A size that asks for billions of blocks is refused before any is read.
        let mut lie = out.clone();
        lie[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(read(&lie, 0, 4096).unwrap_err().contains("blocks"));
        let mut bad = out;
        bad[0] = 15;
        assert!(read(&bad, 0, 4096).unwrap_err().contains("type 15"));
    }
}

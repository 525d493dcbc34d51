//! A new squashfs filesystem written from the tree [`super::tree`] read,
//! less the names removed, with some files' bytes replaced: the writer of
//! a rewrite whose filesystem has extended attributes or hard links,
//! which backhand's writer cannot keep.
//!
//! The layout is `mksquashfs`'s: the superblock, the compression options
//! block (copied), the data (each file's blocks, then the fragment
//! blocks), then the inode, directory, fragment, export (if the old one
//! had one), id and xattr tables, padded to 4 KiB. A file kept has its
//! stored blocks copied as they are; a file replaced is compressed anew
//! from its reader, one block at a time, its tail in a block of its own
//! (no fragment); fragment blocks still used are copied. Each inode is
//! written once, in its basic form where that holds it, whatever number
//! of names it has: a hard link stays one inode, whose link count is the
//! names kept. Inodes are numbered anew, directory by directory, each
//! directory after its entries (the root last, `mksquashfs`'s order). The
//! xattr table (its key/value blocks, its id blocks, its id table) is
//! copied as it was, its places moved, so every xattr index is the same.
//! Owners, groups, modes, times and every other inode field are kept.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::sync::Arc;

use super::codec::{METADATA_BLOCK, Tuning, compress};
use super::dir::{self, Entry};
use super::inode::{self, Body, DIR, FILE, Inode, NO_FRAGMENT};
use super::meta::{Writer, write_indexed};
use super::superblock::Superblock;
use super::tree::{self, Fs, field};
use crate::bytes::le_at;
use crate::num::{u64_from, usize_from};
use crate::package::New;
use crate::package::rpm::rewrite::Error;

/// What the rewrite decided: the paths removed, each file node replaced
/// and its new bytes.
pub(super) struct Plan<'p> {
    pub(super) gone: &'p BTreeSet<String>,
    pub(super) replaced: &'p HashMap<usize, Arc<New>>,
}

/// The output, with the place of the next byte.
struct Out<'o> {
    w: BufWriter<&'o mut std::fs::File>,
    pos: u64,
}

impl Out<'_> {
    fn put(&mut self, b: &[u8]) -> Result<(), Error> {
        self.w.write_all(b).map_err(Error::Write)?;
        self.pos += u64_from(b.len());
        Ok(())
    }
}

/// The names kept, by directory (sorted by name), and each node's count
/// of names kept.
struct Kept {
    entries: Vec<Vec<(Vec<u8>, usize)>>,
    links: Vec<u32>,
}

/// Writes the filesystem `image` (superblock `sb`, tree `fs`) as `plan`
/// says to `out` from its start, compressed as `tuning` says; each piece
/// of the image copied goes to `release`. Gives the new length.
pub(super) fn write(
    image: &[u8],
    sb: &Superblock,
    fs: &Fs,
    tuning: &Tuning,
    plan: &Plan<'_>,
    (release, out): (super::decide::Release<'_>, &mut std::fs::File),
) -> Result<u64, Error> {
    let kept = kept(fs, plan.gone);
    let mut inodes: Vec<Inode> = fs.nodes.iter().map(|n| n.inode.clone()).collect();
    let mut o = Out {
        w: BufWriter::with_capacity(1 << 20, out),
        pos: 0,
    };
    o.put(&[0; 96])?;
    if sb.flags & super::codec::OPTIONS_PRESENT != 0 {
        o.put(tuning.block.as_deref().unwrap_or_default())?;
    }
    let frags = data(
        image,
        sb,
        (fs, &kept, plan),
        &mut inodes,
        (tuning, release),
        &mut o,
    )?;
    let (order, numbers) = numbered(fs, &kept);
    let count = numbers.iter().copied().max().unwrap_or(0);
    let (itable, dtable, refs) =
        inode_and_dir_tables(fs, &kept, &mut inodes, (&order, &numbers), tuning)?;
    let mut at = [u64::MAX; 6];
    // The inode, directory, fragment, export, id, xattr tables' places.
    at[0] = o.pos;
    o.put(&itable)?;
    at[1] = o.pos;
    o.put(&dtable)?;
    let w = |e: io::Error| Error::Write(e);
    let (bytes, index) = write_indexed(tuning, &frags, o.pos).map_err(w)?;
    o.put(&bytes)?;
    at[2] = index;
    if field(image, 88) != u64::MAX {
        let mut by_number = vec![0u64; usize_from(u64::from(count))];
        for (n, r) in numbers.iter().zip(&refs) {
            if *n > 0 {
                by_number[usize_from(u64::from(*n - 1))] = *r;
            }
        }
        let entries: Vec<u8> = by_number.iter().flat_map(|r| r.to_le_bytes()).collect();
        let (bytes, index) = write_indexed(tuning, &entries, o.pos).map_err(w)?;
        o.put(&bytes)?;
        at[3] = index;
    }
    let ids = tree::ids(image, sb).map_err(Error::Damaged)?;
    let (bytes, index) = write_indexed(tuning, &ids, o.pos).map_err(w)?;
    o.put(&bytes)?;
    at[4] = index;
    at[5] = xattrs(image, release, &mut o)?;
    let root = refs[0];
    let used = o.pos;
    let padded = used.div_ceil(4096) * 4096;
    o.put(&vec![0; usize_from(padded - used)])?;
    let mut head = head(image, (count, u64_from(frags.len() / 16)), root, used, at);
    let flags = written_flags(sb.flags, !plan.replaced.is_empty());
    head[24..26].copy_from_slice(&flags.to_le_bytes());
    let f = o.w.into_inner().map_err(|e| Error::Write(e.into_error()))?;
    f.seek(SeekFrom::Start(0)).map_err(Error::Write)?;
    f.write_all(&head).map_err(Error::Write)?;
    Ok(padded)
}

/// The old superblock with the new counts (inodes, fragments), root
/// reference, length and table places (`at`: inode, directory, fragment,
/// export, id, xattr).
fn head(image: &[u8], (inodes, frags): (u32, u64), root: u64, used: u64, at: [u64; 6]) -> Vec<u8> {
    let mut sb = image[..96].to_vec();
    sb[4..8].copy_from_slice(&inodes.to_le_bytes());
    // A fragment entry per fragment block of the old filesystem at most.
    sb[16..20].copy_from_slice(&u32::try_from(frags).unwrap_or(u32::MAX).to_le_bytes());
    sb[32..40].copy_from_slice(&root.to_le_bytes());
    sb[40..48].copy_from_slice(&used.to_le_bytes());
    for (field, v) in [
        (64, at[0]),
        (72, at[1]),
        (80, at[2]),
        (88, at[3]),
        (48, at[4]),
        (56, at[5]),
    ] {
        sb[field..field + 8].copy_from_slice(&v.to_le_bytes());
    }
    sb
}

/// Superblock flags: inodes and directories, the id table, and data
/// blocks stored uncompressed (`mksquashfs -noI`, `-noId`, `-noD`).
const UNCOMPRESSED_INODES: u16 = 0x0001;
const UNCOMPRESSED_DATA: u16 = 0x0002;
const UNCOMPRESSED_IDS: u16 = 0x0800;

/// The old superblock's flags `old` made true of what [`write`] writes:
/// its inode, directory and id tables are compressed whatever the old ones
/// were, and so are the blocks of files `replaced`; fragments and xattrs
/// are copied as they were, so what the flags say of them still holds.
fn written_flags(old: u16, replaced: bool) -> u16 {
    let mut flags = old & !(UNCOMPRESSED_INODES | UNCOMPRESSED_IDS);
    if replaced {
        flags &= !UNCOMPRESSED_DATA;
    }
    flags
}

/// Which names stay: those not `gone` whose directory stays.
fn kept(fs: &Fs, gone: &BTreeSet<String>) -> Kept {
    let n = fs.nodes.len();
    let mut k = Kept {
        entries: vec![Vec::new(); n],
        links: vec![0; n],
    };
    let mut dir_kept = vec![false; n];
    dir_kept[0] = true;
    // Each directory's name comes before the names below it.
    for name in &fs.names {
        if !dir_kept[name.dir] || gone.contains(&name.path) {
            continue;
        }
        let base = name.path.rsplit('/').next().unwrap_or_default();
        k.entries[name.dir].push((base.as_bytes().to_vec(), name.node));
        k.links[name.node] += 1;
        if fs.nodes[name.node].inode.kind == DIR {
            dir_kept[name.node] = true;
        }
    }
    for e in &mut k.entries {
        e.sort();
    }
    k
}

/// The file data: each kept file's blocks copied, or its new bytes
/// compressed; then the fragment blocks still used, copied. Sets each
/// file inode's new place, blocks and fragment; gives the new fragment
/// table's entries.
fn data(
    image: &[u8],
    sb: &Superblock,
    (fs, kept, plan): (&Fs, &Kept, &Plan<'_>),
    inodes: &mut [Inode],
    (tuning, release): (&Tuning, super::decide::Release<'_>),
    o: &mut Out<'_>,
) -> Result<Vec<u8>, Error> {
    let frags = tree::fragments(image, sb).map_err(Error::Damaged)?;
    let mut files: Vec<(u64, usize)> = (0..fs.nodes.len())
        .filter(|&n| kept.links[n] > 0 && inodes[n].kind == FILE)
        .filter_map(|n| match &inodes[n].body {
            Body::File { start, .. } => Some((*start, n)),
            _ => None,
        })
        .collect();
    files.sort_unstable();
    let mut used: BTreeMap<u32, u32> = BTreeMap::new();
    for (_, n) in files {
        let Body::File {
            start,
            size,
            sparse,
            fragment,
            frag_offset,
            blocks,
        } = &mut inodes[n].body
        else {
            continue;
        };
        if let Some(new) = plan.replaced.get(&n) {
            let at = o.pos;
            let (read, b) = compressed(new, sb.block_size, tuning, o)?;
            (*start, *size, *sparse, *fragment, *frag_offset) = (at, read, 0, NO_FRAGMENT, 0);
            *blocks = b;
            continue;
        }
        let len: u64 = blocks.iter().map(|b| u64::from(b & 0x00ff_ffff)).sum();
        let bytes = stored(image, *start, len)?;
        *start = o.pos;
        o.put(bytes)?;
        release(bytes);
        if *fragment != NO_FRAGMENT {
            let next = u32::try_from(used.len()).unwrap_or(u32::MAX);
            *fragment = *used.entry(*fragment).or_insert(next);
        }
    }
    let mut table = Vec::new();
    let mut by_new: Vec<(u32, u32)> = used.into_iter().map(|(old, new)| (new, old)).collect();
    by_new.sort_unstable();
    for (_, old) in by_new {
        let &(start, raw) = frags.get(usize_from(u64::from(old))).ok_or_else(|| {
            Error::Damaged(format!(
                "a file names fragment {old}, past the fragment table"
            ))
        })?;
        let bytes = stored(image, start, u64::from(raw & 0x00ff_ffff))?;
        table.extend_from_slice(&o.pos.to_le_bytes());
        table.extend_from_slice(&raw.to_le_bytes());
        table.extend_from_slice(&0u32.to_le_bytes());
        o.put(bytes)?;
        release(bytes);
    }
    Ok(table)
}

/// The `len` bytes at `start` of the image (none when `len` is 0,
/// wherever `start` is).
fn stored(image: &[u8], start: u64, len: u64) -> Result<&[u8], Error> {
    if len == 0 {
        return Ok(&[]);
    }
    start
        .checked_add(len)
        .and_then(|end| image.get(usize_from(start)..usize_from(end)))
        .ok_or_else(|| Error::Damaged(format!("data at {start} ({len} bytes) lies past its end")))
}

/// `new`'s bytes compressed a block at a time (stored as is where that
/// is not larger) to `o`; gives how many bytes it read and each block's
/// stored size.
fn compressed(
    new: &New,
    block_size: u32,
    tuning: &Tuning,
    o: &mut Out<'_>,
) -> Result<(u64, Vec<u32>), Error> {
    let mut r = new.reader().map_err(Error::Write)?;
    let mut buf = vec![0u8; usize_from(u64::from(block_size))];
    let (mut len, mut sizes) = (0u64, Vec::new());
    loop {
        let mut n = 0;
        while n < buf.len() {
            match r.read(&mut buf[n..]).map_err(Error::Write)? {
                0 => break,
                k => n += k,
            }
        }
        if n == 0 {
            break;
        }
        let packed = compress(tuning, &buf[..n], block_size).map_err(Error::Write)?;
        // Both at most a block (1 MiB), so below the stored-as-is bit.
        let fit = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let (size, body) = match packed.len() < n {
            true => (fit(packed.len()), &packed[..]),
            false => (fit(n) | 1 << 24, &buf[..n]),
        };
        o.put(body)?;
        len += u64_from(n);
        sizes.push(size);
        if n < buf.len() {
            break;
        }
    }
    Ok((len, sizes))
}

/// The kept directories in the order they are written (each after the
/// directories below it, the root last), and each node's new inode
/// number (0: not kept): each directory's other entries numbered before
/// it, in name order.
fn numbered(fs: &Fs, kept: &Kept) -> (Vec<usize>, Vec<u32>) {
    let mut order = Vec::new();
    let mut stack = vec![(0usize, false)];
    while let Some((d, done)) = stack.pop() {
        if done {
            order.push(d);
            continue;
        }
        stack.push((d, true));
        for (_, c) in kept.entries[d].iter().rev() {
            if fs.nodes[*c].inode.kind == DIR {
                stack.push((*c, false));
            }
        }
    }
    let mut numbers = vec![0u32; fs.nodes.len()];
    let mut next = 0u32;
    for &d in &order {
        for (_, c) in &kept.entries[d] {
            if fs.nodes[*c].inode.kind != DIR && numbers[*c] == 0 {
                next += 1;
                numbers[*c] = next;
            }
        }
        next += 1;
        numbers[d] = next;
    }
    (order, numbers)
}

/// The inode and directory tables: directory by directory in `order`,
/// the inodes of its entries not yet written, its listing, its inode.
/// Gives both tables and each node's inode reference.
fn inode_and_dir_tables(
    fs: &Fs,
    kept: &Kept,
    inodes: &mut [Inode],
    (order, numbers): (&[usize], &[u32]),
    tuning: &Tuning,
) -> Result<Written, Error> {
    let w = |e: io::Error| Error::Write(e);
    let mut t = Inodes {
        w: Writer::new(tuning),
        refs: vec![None; fs.nodes.len()],
        numbers,
        buf: Vec::new(),
    };
    let mut dw = Writer::new(tuning);
    let root_parent = numbers.iter().copied().max().unwrap_or(0) + 1;
    for &d in order {
        let mut entries = Vec::new();
        let mut subdirs = 0;
        for (name, c) in &kept.entries[d] {
            let c = *c;
            if inodes[c].kind == DIR {
                subdirs += 1;
            } else if t.refs[c].is_none() {
                inodes[c].nlink = kept.links[c];
                t.put(c, &mut inodes[c])?;
            }
            entries.push(Entry {
                name: name.clone(),
                kind: inodes[c].kind,
                inode: t.refs[c].unwrap_or_default(),
                number: numbers[c],
            });
        }
        let l = dir::write(&entries, &mut dw).map_err(w)?;
        let parent = match d {
            0 => root_parent,
            _ => numbers[fs.nodes[d].parent],
        };
        inodes[d].nlink = 2 + subdirs;
        if let Body::Dir {
            start,
            offset,
            size,
            parent: p,
            index,
        } = &mut inodes[d].body
        {
            (*start, *offset, *size, *p, *index) = (l.start, l.offset, l.size, parent, l.index);
        }
        t.put(d, &mut inodes[d])?;
    }
    let refs = t.refs.iter().map(|r| r.unwrap_or_default()).collect();
    let (itable, _) = t.w.finish().map_err(w)?;
    let (dtable, _) = dw.finish().map_err(w)?;
    Ok((itable, dtable, refs))
}

/// The inode table, the directory table, and each node's inode reference.
type Written = (Vec<u8>, Vec<u8>, Vec<u64>);

/// The inode table as it is written: each node's reference once written.
struct Inodes<'t, 'n> {
    w: Writer<'t>,
    refs: Vec<Option<u64>>,
    numbers: &'n [u32],
    buf: Vec<u8>,
}

impl Inodes<'_, '_> {
    /// Writes node `n`'s inode `i`, with its new number.
    fn put(&mut self, n: usize, i: &mut Inode) -> Result<(), Error> {
        i.number = self.numbers[n];
        self.refs[n] = Some(self.w.reference());
        self.buf.clear();
        inode::write(i, &mut self.buf);
        self.w.write(&self.buf).map_err(Error::Write)
    }
}

/// Copies the xattr table: its key/value blocks and id blocks as they
/// are, then its id table (where the key/value blocks start, how many
/// ids, each id block's place), the places moved. Gives the id table's
/// new place (all ones when there is none).
fn xattrs(
    image: &[u8],
    release: super::decide::Release<'_>,
    o: &mut Out<'_>,
) -> Result<u64, Error> {
    let at = field(image, 56);
    if at == u64::MAX {
        return Ok(u64::MAX);
    }
    let bad = |why: &str| Error::Damaged(format!("its xattr table at {at}: {why}"));
    let kv = le_at::<u64>(image, usize_from(at)).ok_or_else(|| bad("cut short"))?;
    let ids = tree::xattr_ids(image).map_err(Error::Damaged)?;
    if kv > at {
        return Err(bad("its key/value blocks start after it"));
    }
    let blocks = (ids * 16).div_ceil(METADATA_BLOCK as u64);
    let body = stored(image, kv, at - kv)?;
    let new_kv = o.pos;
    o.put(body)?;
    release(body);
    let table = o.pos;
    let mut head = Vec::new();
    head.extend_from_slice(&new_kv.to_le_bytes());
    head.extend_from_slice(stored(image, at + 8, 8)?);
    for i in 0..blocks {
        let old = le_at::<u64>(image, usize_from(at + 16 + i * 8))
            .ok_or_else(|| bad("its index is cut short"))?;
        if !(kv..at).contains(&old) {
            return Err(bad("an id block lies outside it"));
        }
        head.extend_from_slice(&(old - kv + new_kv).to_le_bytes());
    }
    o.put(&head)?;
    Ok(table)
}

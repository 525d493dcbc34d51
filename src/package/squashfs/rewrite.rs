//! One read of a squashfs filesystem that decides what each regular file
//! becomes ([`Decide`]: kept, removed, or replaced by new bytes), and a
//! new filesystem written with what was decided: the same compressor and
//! options, block size, modes, owners, times, symlinks, device nodes and
//! other special files.
//!
//! The read goes file by file, in path order: the caller may remove a
//! file by its name alone, unread ([`Decide::by_name`]); every other
//! file's first bytes go to [`Decide::wants`], a file wanted is handed to
//! [`Decide::decide`] with a reader of its bytes, and a file not wanted is
//! read to its end, so that a damaged block is found before anything is
//! written. A directory whose entries all went, and that the caller
//! removes by name, goes too.
//!
//! A filesystem without extended attributes or hard links is written by
//! backhand's `FilesystemWriter` with this module's
//! [`codec`](super::codec) (the compressors of flate2, liblzma, zstd and
//! lz4_flex, never backhand's own): the data blocks of the files kept are
//! copied as they are, compressed, and those of the files replaced are
//! compressed from the caller's readers, one block at a time. That new
//! filesystem has no export table (NFS file handles): backhand does not
//! write one. A filesystem with extended attributes or hard links, which
//! backhand's writer cannot keep (it writes no xattrs, and gives each name
//! an inode of its own), is read and written by this crate's own tables
//! ([`super::own`]): its xattrs, hard links and export table kept. An
//! LZO filesystem is written with LZO ([`super::lzo_encode`]).

use std::collections::BTreeSet;
use std::io::{self, BufRead, BufWriter, Cursor, Read, Seek, SeekFrom};
use std::path::Path;

use backhand::kind::Kind as Layout;
use backhand::{FilesystemReader, FilesystemWriter};

use super::codec::{self, CODEC, METADATA_BLOCK, Method, Tuning};
use super::data::Data;
pub(crate) use super::decide::{Member, Release, Rewritten, Squashfs};
use super::decide::{dirs_gone, fate_of, stored};
use super::superblock;
use crate::num::usize_from;
pub(crate) use crate::package::Decide;
pub(crate) use crate::package::rpm::rewrite::{Error, Failed};
use crate::package::{Fate, New};

/// Reads the squashfs filesystem at the start of `fs`, `decide` answering
/// for each file, within `limit` bytes decompressed from file data; when
/// anything changed, writes the new filesystem to `out` from its start.
/// Each file's stored bytes, once read, and each piece of the image the
/// writer reads, go to `release`.
pub(crate) fn rewrite<D: Decide<Squashfs>>(
    fs: &[u8],
    decide: &mut D,
    (limit, release): (u64, Release<'_>),
    out: &mut std::fs::File,
) -> Result<Rewritten, Failed<D::Error>> {
    let sb = superblock::read(fs).map_err(Error::Damaged)?;
    let image = &fs[..usize_from(sb.bytes_used)];
    let xattrs = has_xattrs(image, &sb)?;
    let tree = super::read_tree(image).map_err(Error::Damaged)?;
    let linked = tree.files.len() + tree.others.len() + 1 > usize_from(u64::from(sb.inodes));
    if xattrs || linked {
        let tuning = tuning(image, &sb)?;
        return super::own::rewrite(image, &sb, tuning, decide, (limit, release), out);
    }
    let mut data = Data::new(image, sb.method, sb.block_size, tree.fragments);
    let mut left = limit;
    let mut gone = BTreeSet::new();
    let mut kept = BTreeSet::new();
    let mut replaced = Vec::new();
    for f in &tree.files {
        let fate = fate_of(&mut data, f, decide, &mut left)?;
        release(stored(image, f));
        match fate {
            Fate::Kept => {
                kept.insert(f.path.clone());
            }
            Fate::Removed => {
                gone.insert(f.path.clone());
            }
            Fate::Replaced(new) => {
                kept.insert(f.path.clone());
                replaced.push((f.path.clone(), new));
            }
        }
    }
    if gone.is_empty() && replaced.is_empty() {
        return Ok(Rewritten { len: None });
    }
    dirs_gone(&tree.others, decide, &mut kept, &mut gone)?;
    let tuning = tuning(image, &sb)?;
    let readers = replaced
        .iter()
        .map(|(p, new)| Ok((p.clone(), New::reader(new)?)))
        .collect::<io::Result<Vec<_>>>()
        .map_err(Error::Write)?;
    let image = Released {
        at: Cursor::new(image),
        release,
    };
    let len = write(image, sb.block_size, tuning, &gone, readers, out)?;
    Ok(Rewritten { len: Some(len) })
}

/// Gives whether the filesystem has extended attributes.
fn has_xattrs(image: &[u8], sb: &superblock::Superblock) -> Result<bool, Error> {
    if sb.xattrs == u64::MAX {
        return Ok(false);
    }
    // The xattr id table: where the key/value blocks start, then how many
    // ids there are.
    let ids = crate::bytes::le_at::<u32>(image, usize_from(sb.xattrs).saturating_add(8))
        .ok_or_else(|| {
            Error::Damaged(format!(
                "its xattr table at {} lies past its end",
                sb.xattrs
            ))
        })?;
    Ok(ids > 0)
}

/// How the new filesystem is compressed: the old one's options block,
/// copied, and the numbers in it.
pub(super) fn tuning(image: &[u8], sb: &superblock::Superblock) -> Result<Tuning, Error> {
    let mut t = Tuning {
        method: sb.method,
        block: None,
        first: None,
        bcj: 0,
    };
    if sb.flags & codec::OPTIONS_PRESENT == 0 {
        return Ok(t);
    }
    let bad = || Error::Damaged("its compression options block is cut short".into());
    let header = crate::bytes::le_at::<u16>(image, 96).ok_or_else(bad)?;
    let len = usize::from(header & 0x7fff);
    let stored = image.get(98..98 + len).ok_or_else(bad)?;
    let mut opts = Vec::new();
    if header & 0x8000 != 0 {
        opts.extend_from_slice(stored);
    } else {
        sb.method
            .decompress(stored, METADATA_BLOCK, &mut opts)
            .map_err(Error::Damaged)?;
    }
    let u32_at = |at| crate::bytes::le_at::<u32>(&opts, at);
    t.block = Some(image[96..98 + len].to_vec());
    t.first = u32_at(0);
    if sb.method == Method::Xz {
        t.bcj = u32_at(4).unwrap_or(0);
    }
    Ok(t)
}

/// Writes the filesystem `image` without the entries `gone`, the files
/// `replaced` given their new bytes, to `out`: on a thread of its own with
/// a large stack (backhand reads and writes directories recursively),
/// whose blocks decompress to at most `block_size` bytes. Gives the new
/// length.
fn write(
    image: Released<'_>,
    block_size: u32,
    tuning: Tuning,
    gone: &BTreeSet<String>,
    replaced: Vec<(String, Box<dyn Read + Send + '_>)>,
    out: &mut std::fs::File,
) -> Result<u64, Error> {
    std::thread::scope(|s| {
        let t = std::thread::Builder::new()
            .name("squashfs-write".into())
            .stack_size(super::STACK)
            .spawn_scoped(s, move || {
                written(image, block_size, tuning, gone, replaced, out)
            })
            .map_err(|e| Error::Write(io::Error::other(e)))?;
        t.join().unwrap_or_else(|_| {
            Err(Error::Damaged(
                "its tables are damaged (the squashfs writer failed)".into(),
            ))
        })
    })
}

/// [`write`]'s work, on its thread.
fn written(
    image: Released<'_>,
    block_size: u32,
    tuning: Tuning,
    gone: &BTreeSet<String>,
    replaced: Vec<(String, Box<dyn Read + Send + '_>)>,
    out: &mut std::fs::File,
) -> Result<u64, Error> {
    let said = |e: backhand::BackhandError| match e {
        backhand::BackhandError::StdIo(e) => Error::Write(e),
        e => Error::Damaged(codec::said(&e)),
    };
    codec::set_cap(METADATA_BLOCK, None);
    let layout = Layout::new_v4(&CODEC);
    let mut fs =
        FilesystemReader::from_reader_with_offset_and_kind(image, 0, layout).map_err(said)?;
    fs.root
        .nodes
        .retain(|n| !gone.contains(&relative(&n.fullpath)));
    codec::set_cap(usize_from(u64::from(block_size)), Some(tuning));
    let mut w = FilesystemWriter::from_fs_reader(&fs).map_err(said)?;
    for (path, r) in replaced {
        w.replace_file(format!("/{path}"), r).map_err(said)?;
    }
    let out = BufWriter::with_capacity(1 << 20, out);
    let (_, len) = w.write(out).map_err(said)?;
    codec::set_cap(METADATA_BLOCK, None);
    Ok(len)
}

/// A node's path as the read names it: without its leading `/`.
fn relative(p: &Path) -> String {
    let s = p.to_string_lossy();
    s.trim_start_matches('/').to_string()
}

/// The image as the writer reads it: each piece read goes to `release`.
struct Released<'i> {
    at: Cursor<&'i [u8]>,
    release: Release<'i>,
}

impl Released<'_> {
    /// The `n` bytes before the position, to `release`.
    fn read_back(&self, n: usize) {
        let end = usize_from(self.at.position()).min(self.at.get_ref().len());
        (self.release)(&self.at.get_ref()[end.saturating_sub(n)..end]);
    }
}

impl Read for Released<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.at.read(buf)?;
        self.read_back(k);
        Ok(k)
    }
}

impl BufRead for Released<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.at.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.at.consume(n);
        self.read_back(n);
    }
}

impl Seek for Released<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.at.seek(to)
    }
}

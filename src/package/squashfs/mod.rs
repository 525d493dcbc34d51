//! squashfs filesystems (version 4, little-endian: what `mksquashfs`
//! writes, what SIF images, AppImages and snaps hold), compressed with
//! gzip, LZO, xz, LZ4 or zstd, or stored. Their members are their regular
//! files, named by their paths (`usr/lib/libx.so`); a file hard-linked
//! under several names is handed over under each.
//!
//! The superblock is checked first ([`superblock`]): its size against the
//! bytes there are, and an upper bound on what its inode and directory
//! tables decompress to, counted from their blocks' headers. The `backhand`
//! crate then reads the tables and builds the tree (it refuses directories
//! that hold themselves), with this module's decompressors ([`codec`]),
//! each metadata block bounded to its 8 KiB, on a thread of its own with a
//! large stack (its walk of the directories recurses once per level). The
//! files' data is read here ([`data`]), straight from the bytes: one block
//! at a time, each bounded to the block size, or as one slice of the
//! image when stored as is. Two entries of one path are an error.

mod codec;
mod data;
#[cfg(feature = "files")]
mod decide;
#[cfg(feature = "files")]
mod dir;
#[cfg(feature = "files")]
mod inode;
mod lzo;
#[cfg(feature = "files")]
mod meta;
#[cfg(feature = "files")]
mod own;
#[cfg(feature = "files")]
pub(crate) mod rewrite;
mod superblock;
#[cfg(feature = "files")]
mod tables;
#[cfg(test)]
mod tests;
#[cfg(feature = "files")]
mod tree;

use std::io::Cursor;
use std::path::Component;

use backhand::kind::Kind as Layout;
use backhand::{FilesystemReader, InnerNode};

use super::types::{Contents, Kind, Members, corrupt};
use crate::error::Result;
use crate::num::usize_from;
use data::{Data, File};

/// The stack of the thread that builds the tree: address space only, the
/// pages a deep tree touches are the ones used.
const STACK: usize = 1 << 30;

/// A file's fragment index when it has none.
const NO_FRAGMENT: usize = 0xffff_ffff;

/// Whether `bytes` start with a squashfs superblock's magic.
pub(super) fn is_squashfs(bytes: &[u8]) -> bool {
    bytes.starts_with(superblock::MAGIC)
}

/// What the tables give: each regular file, in path order, each
/// fragment block's start and stored size, and every other entry but the
/// root (its path, and whether it is a directory).
struct Tree {
    files: Vec<File>,
    fragments: Vec<(u64, u32)>,
    others: Vec<(String, bool)>,
}

/// Hands every regular file of the squashfs filesystem at the start of
/// `fs` to `to`, in path order; `kind` is what the file holding it is, for
/// the errors.
pub(super) fn squashfs_members(fs: &[u8], kind: Kind, to: &mut dyn Members) -> Result<()> {
    let sb = superblock::read(fs).map_err(|e| corrupt(kind, e))?;
    let image = &fs[..usize_from(sb.bytes_used)];
    let tree = read_tree(image).map_err(|e| corrupt(kind, e))?;
    let mut data = Data::new(image, sb.method, sb.block_size, tree.fragments);
    for f in &tree.files {
        if let Err(e) = data.check(f) {
            to.member(&f.path, Err(e))?;
            continue;
        }
        if let Some(s) = data.stored(f) {
            to.member(&f.path, Ok(Contents::Stored(s)))?;
            continue;
        }
        let mut r = data.reader(f);
        to.member(
            &f.path,
            Ok(Contents::Stream {
                reader: &mut r,
                size: f.size,
            }),
        )?;
    }
    Ok(())
}

/// Reads the tables of the filesystem `image` with backhand, on a thread
/// with a [`STACK`]-byte stack. A panic in backhand (a fault it does not
/// catch) is an error here, not the program's end.
fn read_tree(image: &[u8]) -> std::result::Result<Tree, String> {
    std::thread::scope(|s| {
        let t = std::thread::Builder::new()
            .name("squashfs".into())
            .stack_size(STACK)
            .spawn_scoped(s, || tree(image))
            .map_err(|e| format!("cannot start a thread to read it: {e}"))?;
        t.join().unwrap_or_else(|p| {
            let why = p
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(format!(
                "its tables are damaged (the squashfs reader failed: {why})"
            ))
        })
    })
}

/// The files and fragments of `image`, read by backhand.
fn tree(image: &[u8]) -> std::result::Result<Tree, String> {
    let layout = Layout::new_v4(&codec::CODEC);
    let fs = FilesystemReader::from_reader_with_offset_and_kind(Cursor::new(image), 0, layout)
        .map_err(|e| codec::said(&e))?;
    let fragments = fs
        .fragments
        .iter()
        .flatten()
        .map(|f| {
            (
                f.start,
                f.size.size() | if f.size.uncompressed() { 1 << 24 } else { 0 },
            )
        })
        .collect();
    let mut files = Vec::new();
    let mut others = Vec::new();
    let mut last: Option<&std::path::Path> = None;
    for node in fs.files() {
        let p = node.fullpath.as_path();
        if last == Some(p) {
            return Err(format!("two entries are named '{}'", p.display()));
        }
        last = Some(p);
        let mut names = Vec::new();
        for c in p.components() {
            match c {
                Component::RootDir => {}
                Component::Normal(n) => names.push(n.to_string_lossy()),
                _ => return Err(format!("an entry is named '{}'", p.display())),
            }
        }
        let InnerNode::File(f) = &node.inner else {
            if !names.is_empty() {
                let dir = matches!(node.inner, InnerNode::Dir(_));
                others.push((names.join("/"), dir));
            }
            continue;
        };
        let fragment = match f.frag_index() {
            NO_FRAGMENT => None,
            i => Some((i, f.block_offset())),
        };
        files.push(File {
            path: names.join("/"),
            start: f.blocks_start(),
            blocks: f.block_sizes().iter().map(raw).collect(),
            fragment,
            size: crate::num::u64_from(f.file_len()),
        });
    }
    Ok(Tree {
        files,
        fragments,
        others,
    })
}

/// A block's stored size with its stored-as-is bit, as the inode keeps it.
fn raw(d: &backhand::DataSize) -> u32 {
    d.size() | if d.uncompressed() { 1 << 24 } else { 0 }
}

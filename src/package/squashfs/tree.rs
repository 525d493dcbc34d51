//! A squashfs filesystem's tree as its own tables give it, read without
//! backhand for a rewrite that keeps what backhand's reader drops: each
//! inode once, with its number, link count and xattr index, however many
//! names it has ([`Fs`]). The walk goes directory by directory from the
//! root inode the superblock names, without recursion; a directory listed
//! twice (inside itself, or hard-linked) is an error, and so are more
//! inodes than the superblock counts.
//!
//! The superblock fields read here (little-endian, from byte 0): the
//! inode count at 4, the fragment count at 16, the id count at 26, the
//! root inode's reference at 32, and the places of the id (48), xattr
//! (56), inode (64), directory (72), fragment (80) and export (88)
//! tables, all ones for one that is absent.

use std::collections::HashMap;

use super::dir;
use super::inode::{self, Body, DIR, Inode};
use super::meta::{self, Table};
use super::superblock::Superblock;
use crate::bytes::le_at;
use crate::num::{u64_from, usize_from};

/// An inode of the tree, with its directory's entries (name, node) and
/// the directory it was found in (the root: itself).
pub(super) struct Node {
    pub(super) inode: Inode,
    pub(super) entries: Vec<(Vec<u8>, usize)>,
    pub(super) parent: usize,
}

/// One name of the tree: its path (without a leading `/`), its node and
/// the node of the directory that lists it.
pub(super) struct Name {
    pub(super) path: String,
    pub(super) node: usize,
    pub(super) dir: usize,
}

/// The tree: its inodes (the root first) and its names, each directory's
/// name before those below it.
pub(super) struct Fs {
    pub(super) nodes: Vec<Node>,
    pub(super) names: Vec<Name>,
}

/// The little-endian u64 at `at` of the superblock (checked present).
pub(super) fn field(image: &[u8], at: usize) -> u64 {
    le_at::<u64>(image, at).unwrap_or(u64::MAX)
}

/// Reads the tree of the filesystem `image`.
pub(super) fn read(image: &[u8], sb: &Superblock) -> Result<Fs, String> {
    let (inodes_at, dirs_at) = (field(image, 64), field(image, 72));
    let dir_end = [48, 56, 80, 88]
        .into_iter()
        .map(|at| field(image, at))
        .filter(|&t| t > dirs_at && t < sb.bytes_used)
        .min()
        .unwrap_or(sb.bytes_used);
    let itable = Table::read(image, sb.method, inodes_at, dirs_at)?;
    let dtable = Table::read(image, sb.method, dirs_at, dir_end)?;
    let inode_at = |r: u64| -> Result<Inode, String> {
        let i = inode::read(itable.bytes(), itable.at(r)?, sb.block_size)?;
        check_ids(image, &i)?;
        Ok(i)
    };
    let root = inode_at(field(image, 32))?;
    if root.kind != DIR {
        return Err("its root inode is not a directory".into());
    }
    let mut fs = Fs {
        nodes: vec![Node {
            inode: root,
            entries: Vec::new(),
            parent: 0,
        }],
        names: Vec::new(),
    };
    let mut seen = HashMap::from([(field(image, 32), 0usize)]);
    let mut stack = vec![(0usize, String::new())];
    while let Some((d, path)) = stack.pop() {
        let Body::Dir {
            start,
            offset,
            size,
            ..
        } = fs.nodes[d].inode.body
        else {
            continue;
        };
        let entries = dir::read(&dtable, start, offset, size)?;
        if entries.windows(2).any(|w| w[0].name >= w[1].name) {
            return Err(format!(
                "the entries of directory '/{path}' are not sorted by name, or repeat one"
            ));
        }
        for e in entries {
            let name = std::str::from_utf8(&e.name)
                .map_err(|_| format!("an entry of directory '/{path}' is not named in UTF-8"))?;
            let full = match path.is_empty() {
                true => name.to_string(),
                false => format!("{path}/{name}"),
            };
            let node = match seen.get(&e.inode) {
                Some(&n) if fs.nodes[n].inode.kind == DIR => {
                    return Err(format!(
                        "the directory '/{full}' is listed twice, or inside itself"
                    ));
                }
                Some(&n) => n,
                None => {
                    let i = inode_at(e.inode)?;
                    if u64_from(fs.nodes.len()) >= u64::from(sb.inodes) {
                        return Err(format!(
                            "it holds more inodes than the {} its superblock counts",
                            sb.inodes
                        ));
                    }
                    seen.insert(e.inode, fs.nodes.len());
                    fs.nodes.push(Node {
                        inode: i,
                        entries: Vec::new(),
                        parent: d,
                    });
                    fs.nodes.len() - 1
                }
            };
            if fs.nodes[node].inode.kind != e.kind {
                return Err(format!(
                    "the entry '/{full}' gives type {}, its inode another",
                    e.kind
                ));
            }
            fs.nodes[d].entries.push((e.name, node));
            if e.kind == DIR {
                stack.push((node, full.clone()));
            }
            fs.names.push(Name {
                path: full,
                node,
                dir: d,
            });
        }
    }
    Ok(fs)
}

/// Checks that the owner, group and xattr indexes of `i` are in their
/// tables.
fn check_ids(image: &[u8], i: &Inode) -> Result<(), String> {
    let ids = le_at::<u16>(image, 26).unwrap_or(0);
    if i.uid >= ids || i.gid >= ids {
        return Err(format!(
            "an inode's owner or group is not in the id table of {ids} ids"
        ));
    }
    if i.xattr != inode::NO_XATTR && u64::from(i.xattr) >= xattr_ids(image)? {
        return Err(format!(
            "an inode names xattr set {}, past the xattr table",
            i.xattr
        ));
    }
    Ok(())
}

/// How many xattr sets the xattr id table holds (0 without one).
pub(super) fn xattr_ids(image: &[u8]) -> Result<u64, String> {
    let at = field(image, 56);
    if at == u64::MAX {
        return Ok(0);
    }
    usize_from(at)
        .checked_add(8)
        .and_then(|at| le_at::<u32>(image, at))
        .map(u64::from)
        .ok_or_else(|| format!("its xattr table at {at} lies past its end"))
}

/// Each fragment block's start and stored size (with its stored-as-is
/// bit), from the fragment table.
pub(super) fn fragments(image: &[u8], sb: &Superblock) -> Result<Vec<(u64, u32)>, String> {
    let n = u64::from(le_at::<u32>(image, 16).unwrap_or(0));
    if n == 0 {
        return Ok(Vec::new());
    }
    let bytes = meta::indexed(image, sb.method, field(image, 80), n * 16)?;
    Ok(bytes
        .chunks_exact(16)
        .map(|e| {
            (
                le_at::<u64>(e, 0).unwrap_or(0),
                le_at::<u32>(e, 8).unwrap_or(0),
            )
        })
        .collect())
}

/// The id table's ids, as its bytes (4 a id).
pub(super) fn ids(image: &[u8], sb: &Superblock) -> Result<Vec<u8>, String> {
    let n = u64::from(le_at::<u16>(image, 26).unwrap_or(0));
    meta::indexed(image, sb.method, field(image, 48), n * 4)
}

/// A regular file's data as [`super::data`] reads it, named `path`.
pub(super) fn file(i: &Inode, path: &str) -> Option<super::data::File> {
    let Body::File {
        start,
        size,
        fragment,
        frag_offset,
        blocks,
        ..
    } = &i.body
    else {
        return None;
    };
    Some(super::data::File {
        path: path.to_string(),
        start: *start,
        blocks: blocks.clone(),
        fragment: match *fragment {
            inode::NO_FRAGMENT => None,
            f => Some((usize_from(u64::from(f)), *frag_offset)),
        },
        size: *size,
    })
}

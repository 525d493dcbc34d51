//! The rewrite of a squashfs filesystem that has extended attributes or
//! hard links: read with this crate's tables ([`super::tree`]), decided
//! file by file as [`super::rewrite`] decides, written with them
//! ([`super::tables`]).
//!
//! A file with several names (a hard link) is one inode: its bytes are
//! read and decided once, under its first name in path order that is not
//! removed by name; every other name is asked about by name only
//! ([`Decide::by_name`]): removed, it goes, and the inode's link count
//! drops by one; else it stays, and with it whatever its bytes became.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::codec::Tuning;
use super::data::Data;
use super::decide::{Member, Release, Rewritten, Squashfs, dirs_gone, fate_of, first, stored};
use super::superblock::Superblock;
use super::tables::{self, Plan};
use super::tree;
use crate::package::Decide;
use crate::package::rpm::rewrite::{Error, Failed};
use crate::package::{Fate, New};

/// [`super::rewrite::rewrite`]'s work for the filesystem `image`, of
/// superblock `sb`, compressed anew as `tuning` says.
pub(super) fn rewrite<D: Decide<Squashfs>>(
    image: &[u8],
    sb: &Superblock,
    tuning: Tuning,
    decide: &mut D,
    (limit, release): (u64, Release<'_>),
    out: &mut std::fs::File,
) -> Result<Rewritten, Failed<D::Error>> {
    let fs = tree::read(image, sb).map_err(Error::Damaged)?;
    let frags = tree::fragments(image, sb).map_err(Error::Damaged)?;
    let mut data = Data::new(image, sb.method, sb.block_size, frags);
    let mut names: Vec<(&str, usize)> = fs
        .names
        .iter()
        .filter(|n| fs.nodes[n.node].inode.kind == super::inode::FILE)
        .map(|n| (n.path.as_str(), n.node))
        .collect();
    names.sort_unstable();
    let (mut left, mut gone, mut kept) = (limit, BTreeSet::new(), BTreeSet::new());
    let mut decided: HashMap<usize, Option<Arc<New>>> = HashMap::new();
    for (path, node) in names {
        let f = tree::file(&fs.nodes[node].inode, path)
            .ok_or_else(|| Error::Damaged(format!("its file '{path}' has no file inode")))?;
        if decided.contains_key(&node) {
            let m = Member {
                path,
                size: f.size,
                regular: true,
            };
            match first(decide.by_name(&m).map_err(Failed::Caller)?) {
                Some(Fate::Removed) => gone.insert(f.path),
                _ => kept.insert(f.path),
            };
            continue;
        }
        let fate = fate_of(&mut data, &f, decide, &mut left)?;
        release(stored(image, &f));
        match fate {
            Fate::Kept => {
                decided.insert(node, None);
                kept.insert(f.path);
            }
            Fate::Removed => {
                gone.insert(f.path);
            }
            Fate::Replaced(new) => {
                decided.insert(node, Some(new));
                kept.insert(f.path);
            }
        }
    }
    let replaced: HashMap<usize, Arc<New>> = decided
        .into_iter()
        .filter_map(|(n, new)| Some((n, new?)))
        .collect();
    if gone.is_empty() && replaced.is_empty() {
        return Ok(Rewritten { len: None });
    }
    let others: Vec<(String, bool)> = fs
        .names
        .iter()
        .filter(|n| fs.nodes[n.node].inode.kind != super::inode::FILE)
        .map(|n| {
            (
                n.path.clone(),
                fs.nodes[n.node].inode.kind == super::inode::DIR,
            )
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    dirs_gone(&others, decide, &mut kept, &mut gone)?;
    let plan = Plan {
        gone: &gone,
        replaced: &replaced,
    };
    let len = tables::write(image, sb, &fs, &tuning, &plan, (release, out))?;
    Ok(Rewritten { len: Some(len) })
}

//! The walk of a conda package's payload tar: each file of a format prune
//! reads pruned as if named alone, each per-GPU file whose GPU the rules
//! drop left out, every other entry copied block for block; and each
//! file's bytes checked against its `paths.json` row on the way.

use std::collections::BTreeSet;
use std::io::{Read, Write};

use sha2::{Digest as _, Sha256};

use super::super::budget::inflate;
use super::super::member::{Became, Member, write_pruned};
use super::super::path::{PathError, PathErrorKind, PathReport, Pruning};
use super::cx::{Cx, hex};
use super::info::{Changed, Finder};
use crate::package::Hashing;
use crate::package::tar::walk::{Fault, Header, Walk};

/// Files smaller than this hold no container worth reading (as for
/// wheels and `.deb`s).
const MIN_SIZE: u64 = 64;

/// What the walk of the payload did.
#[derive(Default)]
pub(crate) struct Walked {
    /// The new size and SHA-256 of each file rewritten (and of its hard
    /// links), by path.
    pub(crate) changed: Changed,
    /// The paths removed: files, their hard links, directories of
    /// per-GPU files.
    pub(crate) gone: BTreeSet<Vec<u8>>,
    /// The refusals of files left as they were, as messages.
    pub(crate) refused: Vec<String>,
    /// The device code of every file, together.
    pub(crate) all: Pruning,
}

impl Walked {
    /// Whether the package changes.
    pub(crate) fn unchanged(&self) -> bool {
        self.changed.is_empty() && self.gone.is_empty()
    }
}

/// Refuses an entry whose name climbs out of the prefix it is unpacked
/// in: a `..` component, or an absolute name (its path or a hard link's
/// target, wherever the archive gives it: the header, a GNU long name, a
/// pax header).
fn check_name(cx: &Cx<'_>, h: &Header) -> Result<(), PathError> {
    let climbs = |p: &[u8]| p.split(|&b| b == b'/').any(|c| c == b"..");
    let absolute = h.path_absolute || (h.is_hard_link() && h.link_absolute);
    if climbs(&h.path) || (h.is_hard_link() && climbs(&h.link)) || absolute {
        return Err(cx.said(format!(
            "{}: the entry '{}' names a path outside the package's prefix",
            cx.place,
            h.path_lossy()
        )));
    }
    Ok(())
}

/// Walks the payload: see the module's documentation. The device code
/// kept and dropped, and the files removed, go into `rep`.
pub(crate) fn walk_payload<R: Read, W: Write>(
    cx: &Cx<'_>,
    walk: &mut Walk<R, W>,
    rep: &mut PathReport,
) -> Result<Walked, PathError> {
    let fault = |f| cx.fault(f);
    let mut w = Walked::default();
    let mut symlinks = BTreeSet::new();
    let mut paths = crate::package::TarPaths::default();
    while let Some(h) = walk.next().map_err(fault)? {
        check_name(cx, &h)?;
        if let Some(why) = paths.note(&h.path, h.kind() == b'5') {
            return Err(fault(Fault::Damaged(why)));
        }
        if cx.skip_info && h.path.starts_with(b"info/") {
            walk.copy(&h).map_err(fault)?;
            continue;
        }
        // A symbolic link is copied as it is, after its row is checked.
        cx.check_path_type(&h)?;
        if h.kind() == b'2' {
            symlinks.insert(h.path.clone());
        }
        if h.is_hard_link() {
            // A link follows the file it names: what became of it is known.
            if w.gone.contains(&h.link) {
                w.gone.insert(h.path.clone());
                continue;
            }
            if let Some(new) = w.changed.get(&h.link).cloned() {
                w.changed.insert(h.path.clone(), new);
            }
            walk.copy(&h).map_err(fault)?;
            continue;
        }
        if by_name(cx, walk, &h, &mut w, rep)? {
            continue;
        }
        if !h.is_file() {
            walk.copy(&h).map_err(fault)?;
            continue;
        }
        cx.check_size(&h.path, h.size)?;
        file(cx, walk, &h, &mut w, rep)?;
    }
    cx.check_softlinks_found(&symlinks)?;
    Ok(w)
}

/// The regular file `h`: pruned, removed or copied (see
/// [`walk_payload`]), its old bytes checked against its row.
fn file<R: Read, W: Write>(
    cx: &Cx<'_>,
    walk: &mut Walk<R, W>,
    h: &Header,
    w: &mut Walked,
    rep: &mut PathReport,
) -> Result<(), PathError> {
    let fault = |f| cx.fault(f);
    let path = h.path_lossy();
    let head = super::super::file::read_head(&mut walk.body(), h.size).map_err(|e| {
        cx.fault(Fault::Damaged(format!(
            "the data of '{path}' is cut short: {e}"
        )))
    })?;
    let readable = match h.size < MIN_SIZE {
        true => None,
        false => super::super::file::readable(&head),
    };
    let Some(kind) = readable else {
        let sha = copy_hashed(walk, h, &head).map_err(fault)?;
        return cx.check_sha(&h.path, &sha);
    };
    let file = inflate(cx.input, &path, &head, &mut walk.body(), h.size)?;
    walk.skip_body().map_err(fault)?;
    let bytes = file.bytes();
    cx.check_sha(&h.path, &Sha256::digest(bytes).into())?;
    let full = cx.full(&path);
    let step = Member::new(cx.sel, cx.opts, cx.input, &full);
    let found = (&mut w.refused, &mut w.all);
    let new = match step.prune(walk, h, (&file, kind), found, rep, &fault)? {
        Became::AsItWas => return Ok(()),
        Became::Removed => {
            w.gone.insert(h.path.clone());
            return Ok(());
        }
        Became::Rewritten(new) => new,
    };
    if let Some(placeholder) = cx.rows.get(&h.path).and_then(|r| r.placeholder.as_deref()) {
        let mut after = Finder::new(placeholder);
        write_pruned(&new, &file, &mut after).map_err(|e| fault(Fault::Write(e)))?;
        if after.found != Finder::all(placeholder, bytes) {
            let why = format!(
                "its prefix placeholder ('{}', which conda rewrites at install) would move: \
                 prune never moves it",
                String::from_utf8_lossy(placeholder)
            );
            return Err(PathError::said(
                PathErrorKind::Refused,
                cx.input,
                &full,
                why,
            ));
        }
    }
    walk.write_header(h, new.size()).map_err(fault)?;
    let mut hashing = Hashing::<_, Sha256>::new(walk.out());
    write_pruned(&new, &file, &mut hashing).map_err(|e| fault(Fault::Write(e)))?;
    let sha = hex(&hashing.digest.finalize());
    walk.pad(new.size()).map_err(fault)?;
    w.changed.insert(h.path.clone(), (new.size(), sha));
    Ok(())
}

/// With the entry `h` read: when it is a library's per-GPU file whose
/// GPU the rules drop ([`super::super::companion`]), a regular file, it
/// is left out unread (its hard links follow it) and reported removed; a
/// directory of such files is left out with it. Whether it was handled
/// so.
fn by_name<R: Read, W: Write>(
    cx: &Cx<'_>,
    walk: &mut Walk<R, W>,
    h: &Header,
    w: &mut Walked,
    rep: &mut PathReport,
) -> Result<bool, PathError> {
    let directory = h.kind() == b'5';
    if !(h.is_file() || directory) {
        return Ok(false);
    }
    let Some(c) = cx.dropped(&h.path_lossy()) else {
        return Ok(false);
    };
    walk.skip_body().map_err(|f| cx.fault(f))?;
    let mut path = h.path.clone();
    if directory {
        // `lib/rocblas/library/gfx906/`: its row, if any, has no slash.
        while path.last() == Some(&b'/') {
            path.pop();
        }
    } else {
        cx.check_size(&h.path, h.size)?;
        cx.removed_by_name(rep, &h.path_lossy(), h.size, &c);
    }
    w.gone.insert(path);
    Ok(true)
}

/// Copies the file `h`, whose first bytes `head` were read, as it is;
/// the SHA-256 of its bytes.
fn copy_hashed<R: Read, W: Write>(
    walk: &mut Walk<R, W>,
    h: &Header,
    head: &[u8],
) -> Result<[u8; 32], Fault> {
    let mut sha = Sha256::new();
    walk.copy_seen(h, head, &mut |b| sha.update(b))?;
    Ok(sha.finalize().into())
}

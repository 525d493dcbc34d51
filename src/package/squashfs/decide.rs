//! What a squashfs rewrite asks its caller ([`Decide`]) about each entry,
//! and what it makes of the answers: shared by the rewrite that writes
//! with backhand ([`super::rewrite`]) and the one that writes its own
//! tables ([`super::own`]).

use std::collections::BTreeSet;
use std::io::{self, Read};

use super::data::Data;
use crate::num::usize_from;
use crate::package::rpm::rewrite::{Error, Failed};
use crate::package::{Decide, Fate, Held};

/// An entry of the filesystem as the read hands it to [`Decide`].
pub(crate) struct Member<'m> {
    /// Its path, without a leading `/` (`usr/lib/libx.so`).
    pub(crate) path: &'m str,
    /// A regular file's size (0 for a directory).
    pub(crate) size: u64,
    /// Whether it is a regular file (else a directory).
    pub(crate) regular: bool,
}

/// A squashfs filesystem as its [`rewrite`] hands its entries to
/// [`Decide`].
pub(crate) struct Squashfs;

impl crate::package::Format for Squashfs {
    type Member<'m> = Member<'m>;
}

/// What a [`rewrite`] gives.
pub(crate) struct Rewritten {
    /// The new filesystem's length, padded as `mksquashfs` pads (to 4 KiB),
    /// written to the caller's file from its start; `None` when nothing
    /// changed and nothing was written.
    pub(crate) len: Option<u64>,
}

/// Gives back the memory that bytes of the image read hold, when the
/// image is a mapped file (for memory only: what they read stays the same).
pub(crate) type Release<'r> = &'r (dyn Fn(&[u8]) + Sync);

/// Adds to `gone` each directory of `others` (path, whether a
/// directory, in path order) that holds nothing `kept` and that `decide`
/// removes by name; adds every other entry of `others` to `kept`.
pub(super) fn dirs_gone<D: Decide<Squashfs>>(
    others: &[(String, bool)],
    decide: &mut D,
    kept: &mut BTreeSet<String>,
    gone: &mut BTreeSet<String>,
) -> Result<(), Failed<D::Error>> {
    for (p, dir) in others {
        if !dir {
            kept.insert(p.clone());
        }
    }
    // Deepest first, so that a directory of directories that all went goes.
    for (p, dir) in others.iter().rev() {
        let prefix = format!("{p}/");
        let holds = kept
            .range(prefix.clone()..)
            .next()
            .is_some_and(|k| k.starts_with(&prefix));
        let m = Member {
            path: p,
            size: 0,
            regular: false,
        };
        if *dir
            && !holds
            && matches!(
                first(decide.by_name(&m).map_err(Failed::Caller)?),
                Some(Fate::Removed)
            )
        {
            gone.insert(p.clone());
        } else if *dir {
            kept.insert(p.clone());
        }
    }
    Ok(())
}

/// What becomes of the file `f`, whose bytes `data` gives within `left`
/// bytes: removed by its name, unread, or as `decide` answers once it
/// read what it wants; every byte of it read, to find a damaged block.
pub(super) fn fate_of<D: Decide<Squashfs>>(
    data: &mut Data<'_>,
    f: &super::data::File,
    decide: &mut D,
    left: &mut u64,
) -> Result<Fate, Failed<D::Error>> {
    data.check(f)
        .map_err(|e| Error::Damaged(format!("its file '{}': {e}", f.path)))?;
    let m = Member {
        path: &f.path,
        size: f.size,
        regular: true,
    };
    let by_name = first(decide.by_name(&m).map_err(Failed::Caller)?);
    match by_name {
        Some(Fate::Removed) => return Ok(Fate::Removed),
        Some(Fate::Replaced(_)) => {
            return Err(Error::Refused(format!(
                "its file '{}' would be replaced by its name alone, unread: a file is \
                 replaced only once read",
                f.path
            ))
            .into());
        }
        Some(Fate::Kept) | None => {}
    }
    let damaged = |e: io::Error| Error::Damaged(format!("its file '{}': {e}", f.path));
    let mut r = Budgeted {
        r: data.reader(f),
        left,
    };
    let mut head = Vec::new();
    (&mut r)
        .take(D::REACH as u64)
        .read_to_end(&mut head)
        .map_err(damaged)?;
    let fate = match by_name.is_none() && decide.wants(&m, &head) {
        true => {
            let bytes = decide.inflate(&m, &head, &mut r).map_err(Failed::Caller)?;
            let fate = decide.decide(&m, Held::Read(&bytes));
            first(fate.map_err(Failed::Caller)?).unwrap_or(Fate::Kept)
        }
        false => Fate::Kept,
    };
    // What the caller left unread is read, to find a damaged block.
    io::copy(&mut r, &mut io::sink()).map_err(damaged)?;
    Ok(fate)
}

/// The fate in output 0 of a one-output answer (the writer writes one
/// output: a caller answering for several gets the first written).
pub(super) fn first(answer: Option<Vec<Fate>>) -> Option<Fate> {
    answer.and_then(|v| v.into_iter().next())
}

/// A reader that gives at most `left` bytes in all, then fails.
struct Budgeted<'l, R> {
    r: R,
    left: &'l mut u64,
}

impl<R: Read> Read for Budgeted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.r.read(buf)?;
        *self.left = self
            .left
            .checked_sub(k as u64)
            .ok_or_else(|| io::Error::other("it decompresses past the decompression budget"))?;
        Ok(k)
    }
}

/// The bytes `f`'s blocks are stored in (its fragment's not counted):
/// from its start, each block's stored size, within `image`.
pub(super) fn stored<'i>(image: &'i [u8], f: &super::data::File) -> &'i [u8] {
    let len = f
        .blocks
        .iter()
        .map(|b| u64::from(b & 0x00ff_ffff))
        .sum::<u64>();
    let start = usize_from(f.start).min(image.len());
    let end = usize_from(f.start.saturating_add(len)).min(image.len());
    &image[start..end]
}

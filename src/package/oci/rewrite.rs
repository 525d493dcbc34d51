//! One read of a layer's tar that decides what each entry becomes in
//! each of any number of outputs ([`Decide`], the seam every package
//! rewrite shares: kept, removed, or replaced by new bytes, [`Fate`]),
//! each output's tar written uncompressed to its own scratch file with
//! its SHA-256 (its diff_id) counted on the way ([`walk`]; [`rewrite`]
//! reads the blob as it streams, [`super::layer::stream`]).
//!
//! The read goes entry by entry, in the tar's order, each entry's path
//! normalized ([`super::normal`]: one leading to `..` is refused):
//! 1. every entry is first asked about by its name ([`Decide::by_name`]:
//!    what a layer above hides is kept, another GPU's files go); a hard
//!    link is told whether the file it names went in each output
//!    ([`Member::link`]) and goes where it went, whatever the answer;
//! 2. an entry that is no regular file is copied as it is;
//! 3. a regular file whose first bytes the caller does not want
//!    ([`Decide::wants`]) is copied as it is;
//! 4. any other regular file is read whole ([`Decide::inflate`]) and
//!    handed to [`Decide::decide`], which answers one [`Fate`] per output.
//!
//! Every entry kept is copied block for block, its extension entries and
//! sparse map with it; a file replaced gets a header of its new size (and
//! its checksum to match), nothing else changed. What follows the last
//! entry is written as the tar has it ([`crate::package::tar::walk::end`]).

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};

use sha2::Digest as _;

use super::layer::{Decoded, Method, Tally, stream};
use super::normal;
use crate::package::tar::fan::{Fan, Old};
use crate::package::tar::{Fault, Header, Reader};
use crate::package::{self, Decide, Fate, Held};

/// An entry of a layer's tar as the read hands it to [`Decide`].
pub(crate) struct Member<'m> {
    /// Its header: kind, size, the path as the tar gives it.
    pub(crate) header: &'m Header,
    /// Its path, normalized (`usr/lib/libx.so`).
    pub(crate) path: &'m str,
    /// For a hard link: the path of the file it names (normalized), and
    /// whether that file went, output by output (the link goes with it).
    pub(crate) link: Option<(&'m str, &'m [bool])>,
}

/// A layer's tar as its [`walk`] hands its entries to [`Decide`].
pub(crate) struct Layer;

impl package::Format for Layer {
    type Member<'m> = Member<'m>;
}

/// What went wrong with a layer's tar.
#[derive(Debug)]
pub(crate) enum Error {
    /// Reading or writing the tar.
    Tar(Fault),
    /// An entry: what is wrong with it.
    Entry(String),
}

impl From<Fault> for Error {
    fn from(f: Fault) -> Error {
        Error::Tar(f)
    }
}

/// Why a [`walk`] stopped: the layer, or the caller.
pub(crate) type Failed<E> = package::Failed<Error, E>;

/// One output of a [`walk`].
pub(crate) struct Out {
    /// Whether an entry changed in it.
    pub(crate) changed: bool,
    /// Its tar, uncompressed (not rewound): `None` for an output not
    /// written.
    pub(crate) tar: Option<File>,
    /// The SHA-256 of its tar (`sha256:…`): its diff_id.
    pub(crate) diff: String,
    /// The paths left out of it (files, their hard links, directories).
    pub(crate) gone: BTreeSet<String>,
}

/// Where an output's tar goes: a scratch file, or nowhere (a dry run).
enum Dest {
    File(BufWriter<File>),
    Nowhere,
}

impl Write for Dest {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Dest::File(f) => f.write(buf),
            Dest::Nowhere => Ok(buf.len()),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Dest::File(f) => f.flush(),
            Dest::Nowhere => Ok(()),
        }
    }
}

/// A writer that tallies what it takes, owning both.
struct Tallied {
    dest: Dest,
    tally: Tally,
}

impl Write for Tallied {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.dest.write(buf)?;
        self.tally.sha.update(&buf[..n]);
        self.tally.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.dest.flush()
    }
}

/// The outputs' tars, no hash taken of a file replaced (each output's
/// whole tar is hashed as it goes, [`Tallied`]).
type Sinks = Fan<Tallied, ()>;

/// An output while the read goes.
struct Going {
    changed: bool,
    gone: BTreeSet<String>,
}

/// A layer read: what the reading thread found of its blob (`Err` when
/// the thread failed), what the walk gave, and the tally of the tar read
/// (its old diff_id).
pub(crate) type Streamed<E> = (Result<Decoded, ()>, Result<Vec<Out>, Failed<E>>, Tally);

/// Reads the blob `src`, compressed with `m`, and walks its tar as it
/// streams ([`walk`]).
pub(crate) fn rewrite<S: Read + Send, D: Decide<Layer>>(
    src: S,
    m: Method,
    limit: &mut u64,
    decide: &mut D,
    scratch: Vec<Option<File>>,
) -> Streamed<D::Error> {
    stream(src, m, |input| walk(input, limit, decide, scratch))
}

/// Walks the tar `input` gives, within `limit` bytes (which it lowers by
/// what it read), `decide` answering for each entry as the module says.
/// Output `k` is written to `scratch[k]`; an output with no scratch file
/// is decided but not written (a dry run), its diff_id counted all the
/// same.
pub(crate) fn walk<D: Decide<Layer>>(
    input: &mut dyn Read,
    limit: &mut u64,
    decide: &mut D,
    scratch: Vec<Option<File>>,
) -> Result<Vec<Out>, Failed<D::Error>> {
    let n = decide.outputs();
    let tallied = |f: Option<BufWriter<File>>| -> Result<_, Error> {
        Ok(Some(Tallied {
            dest: f.map_or(Dest::Nowhere, Dest::File),
            tally: Tally::default(),
        }))
    };
    let mut fan: Sinks = Fan::open(n, scratch, tallied)?;
    let mut outs: Vec<Going> = (0..n)
        .map(|_| Going {
            changed: false,
            gone: BTreeSet::new(),
        })
        .collect();
    let mut tar = Reader::new(input, *limit);
    let walked = entries(&mut tar, decide, &mut outs, &mut fan);
    *limit = limit.saturating_sub(tar.read());
    walked?;
    let mut done = Vec::new();
    for (o, sink) in outs.into_iter().zip(fan.into_sinks()) {
        let Some(Tallied { dest, tally }) = sink else {
            continue;
        };
        let tar = match dest {
            Dest::File(f) => Some(
                f.into_inner()
                    .map_err(|e| Error::Tar(Fault::Write(e.into_error())))?,
            ),
            Dest::Nowhere => None,
        };
        done.push(Out {
            changed: o.changed,
            tar,
            diff: tally.digest(),
            gone: o.gone,
        });
    }
    Ok(done)
}

/// Walks the entries of `tar` into `outs` as the module says.
fn entries<R: Read, D: Decide<Layer>>(
    tar: &mut Reader<R>,
    decide: &mut D,
    outs: &mut [Going],
    fan: &mut Sinks,
) -> Result<(), Failed<D::Error>> {
    let n = outs.len();
    let kept = || vec![Fate::Kept; n];
    let said = |e: &dyn std::fmt::Display| Error::Entry(e.to_string());
    while let Some(h) = tar.next().map_err(Error::Tar)? {
        let path = normal(&h.path_lossy()).map_err(|e| said(&e))?;
        if h.is_hard_link() {
            let to = normal(&String::from_utf8_lossy(&h.link)).map_err(|e| said(&e))?;
            let went: Vec<bool> = outs.iter().map(|o| o.gone.contains(&to)).collect();
            let m = Member {
                header: &h,
                path: &path,
                link: Some((&to, &went)),
            };
            decide.by_name(&m).map_err(Failed::Caller)?;
            let fates: Vec<Fate> = went
                .iter()
                .map(|&w| if w { Fate::Removed } else { Fate::Kept })
                .collect();
            account(&path, &fates, outs);
            fan.emit(tar, &h, &fates, Old::Stream(&[], None), &mut |_, ()| {})
                .map_err(Error::Tar)?;
            continue;
        }
        let m = Member {
            header: &h,
            path: &path,
            link: None,
        };
        if let Some(fates) = decide.by_name(&m).map_err(Failed::Caller)? {
            let fates = Fate::each(Some(fates), n);
            account(&path, &fates, outs);
            fan.emit(tar, &h, &fates, Old::Stream(&[], None), &mut |_, ()| {})
                .map_err(Error::Tar)?;
            continue;
        }
        if !h.is_file() {
            fan.emit(tar, &h, &kept(), Old::Stream(&[], None), &mut |_, ()| {})
                .map_err(Error::Tar)?;
            continue;
        }
        let mut head = Vec::new();
        (&mut tar.body())
            .take(h.size.min(D::REACH as u64))
            .read_to_end(&mut head)
            .map_err(|e| said(&format!("the data of '{path}' is cut short: {e}")))?;
        if !decide.wants(&m, &head) {
            fan.emit(tar, &h, &kept(), Old::Stream(&head, None), &mut |_, ()| {})
                .map_err(Error::Tar)?;
            continue;
        }
        let bytes = decide
            .inflate(&m, &head, &mut tar.body())
            .map_err(Failed::Caller)?;
        tar.skip_body().map_err(Error::Tar)?;
        let fates = Fate::each(
            decide
                .decide(&m, Held::Read(&bytes))
                .map_err(Failed::Caller)?,
            n,
        );
        account(&path, &fates, outs);
        let held = |out: &mut dyn Write| decide.write(&bytes, out);
        fan.emit(tar, &h, &fates, Old::Held(&held), &mut |_, ()| {})
            .map_err(Error::Tar)?;
    }
    fan.end(tar).map_err(Error::Tar)?;
    Ok(())
}

/// Notes in each output what the fate of the entry at `path` did.
fn account(path: &str, fates: &[Fate], outs: &mut [Going]) {
    for (o, fate) in outs.iter_mut().zip(fates) {
        match fate {
            Fate::Kept => {}
            Fate::Removed => {
                o.gone.insert(path.to_string());
                o.changed = true;
            }
            Fate::Replaced(_) => o.changed = true,
        }
    }
}

#[cfg(test)]
mod tests;

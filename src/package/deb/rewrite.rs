//! One read of a `.deb`'s data archive that decides what each file
//! becomes in each of any number of outputs ([`rewrite`] → [`Plan`]),
//! each output's data archive compressed again (with the member's own
//! method, at `dpkg-deb`'s levels: [`super::compress`]): one output as
//! the read goes, several after it, one at a time ([`sinks`]).
//!
//! The read goes entry by entry, in the archive's order:
//! 1. the caller may decide a regular file, sparse file or directory by
//!    its path alone, unread ([`Decide::by_name`]: another GPU's files);
//! 2. a sparse file is copied as it is ([`Decide::sparse`] sees its first
//!    bytes): its data is not the file's bytes;
//! 3. a regular file whose first bytes the caller does not want
//!    ([`Decide::wants`]) is copied as it is, hashed on the way;
//! 4. any other regular file is read whole ([`Decide::inflate`]), hashed,
//!    and handed to [`Decide::decide`], which answers one [`Fate`] per
//!    output.
//!
//! Each regular file read or copied whole is checked against its row of
//! `md5sums`: a row its bytes do not match goes to [`Decide::wrong`],
//! never rewritten to match. A hard link goes where the file it names
//! went: left out with it, and given its new hash where it changed.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufWriter, Read, Seek as _, SeekFrom, Write};

use md5::{Digest as _, Md5};

use super::compress;
use super::control::kib;
use super::error::Error;
use super::md5sums::hex;
use super::read::{Package, method};
use crate::package::compression::encode::Encoder;
use crate::package::records::Wrong;
use crate::package::tar::fan::{Fan, Old};
use crate::package::tar::{Fault, Header, Reader};
use crate::package::{self, Decide, Fate, Held};

/// An entry of the data archive as the read hands it to [`Decide`].
pub(crate) struct Member<'m> {
    /// Its header: path, kind, size.
    pub(crate) header: &'m Header,
    /// Whether `conffiles` lists it (dpkg keeps a user's changes to it).
    pub(crate) conffile: bool,
}

/// A `.deb`'s data archive as its [`rewrite`] hands its files to
/// [`Decide`].
pub(crate) struct Deb;

impl package::Format for Deb {
    type Member<'m> = Member<'m>;
}

/// Why a [`rewrite`] stopped: the package, or the caller.
pub(crate) type Failed<E> = package::Failed<Error, E>;

/// What one read decided, for each output: its data archive written,
/// and what its `md5sums` and `Installed-Size` are to say.
pub(crate) struct Plan {
    pub(super) outs: Vec<Done>,
}

/// One output of a [`Plan`].
pub(super) struct Done {
    /// The new data archive, compressed, in a scratch file from its
    /// start; `None` when nothing changed, or for an output not written.
    pub(super) data: Option<File>,
    /// The new MD5 of each file rewritten, and of its hard links, by path
    /// (as `md5sums` gives it).
    pub(super) changed: BTreeMap<Vec<u8>, [u8; 16]>,
    /// The paths of the files left out, and of their hard links.
    pub(super) gone: BTreeSet<Vec<u8>>,
    /// The KiB an install no longer takes ([`kib`]).
    pub(super) kib_less: u64,
}

impl Plan {
    /// Whether output `k` is the package as it was.
    pub(crate) fn unchanged(&self, k: usize) -> bool {
        self.outs
            .get(k)
            .is_none_or(|o| o.changed.is_empty() && o.gone.is_empty())
    }
}

/// The outputs' compressed data archives, MD5 taken of each file
/// replaced.
type Sinks = Fan<Encoder<BufWriter<File>>, Md5>;

/// One output while the read goes.
struct Out {
    changed: BTreeMap<Vec<u8>, [u8; 16]>,
    /// Each hard link's path and the path of the file it names.
    links: Vec<(Vec<u8>, Vec<u8>)>,
    gone: BTreeSet<Vec<u8>>,
    kib_less: u64,
}

/// Reads the data archive of `p` once, within `limit` bytes inflated
/// (which it lowers by what it read), `decide` answering for each file
/// as the module says. Output `k` is compressed into `scratch[k]` (xz on
/// up to `threads` threads; several outputs are spooled and compressed
/// after the read, see [`sinks`]); an output with no scratch file is
/// decided but not written (a dry run).
pub(crate) fn rewrite<D: Decide<Deb>>(
    p: &Package<'_>,
    limit: &mut u64,
    decide: &mut D,
    scratch: Vec<Option<File>>,
    threads: u32,
) -> Result<Plan, Failed<D::Error>> {
    let member = p.name(p.data_at);
    let bytes = p.bytes(p.data_at);
    let c = method(bytes).ok_or_else(|| {
        Error::Refused(format!(
            "its member '{member}' is neither a tar archive nor compressed with gzip, xz or \
             zstd: prune does not rewrite it"
        ))
    })?;
    let reader = package::decoder(bytes, c).map_err(|e| Error::Member {
        member: member.clone(),
        doing: "cannot be read",
        source: e.into(),
    })?;
    let n = decide.outputs();
    let (mut fan, spools) = sinks(n, scratch, c, threads)?;
    let mut outs: Vec<Out> = (0..n)
        .map(|_| Out {
            changed: BTreeMap::new(),
            links: Vec::new(),
            gone: BTreeSet::new(),
            kib_less: 0,
        })
        .collect();
    let mut tar = Reader::new(reader, *limit);
    walk(p, &mut tar, &member, decide, &mut outs, &mut fan)?;
    *limit = limit.saturating_sub(tar.read());
    let mut done = Vec::new();
    let sinks = fan.into_sinks().into_iter().zip(spools);
    for (o, (sink, spool)) in outs.into_iter().zip(sinks) {
        let changed = with_links(o.changed, &o.links);
        let any = !changed.is_empty() || !o.gone.is_empty();
        let data = match sink {
            Some(sink) if any => Some(finish(sink, spool, c, threads).map_err(Error::Scratch)?),
            _ => None,
        };
        done.push(Done {
            data,
            changed,
            gone: o.gone,
            kib_less: o.kib_less,
        });
    }
    Ok(Plan { outs: done })
}

/// The sinks of the outputs written into `scratch`, and the scratch
/// file of each output spooled. One output is compressed as the read
/// goes, on `threads` threads. Several are spooled as they are, each
/// into a temporary file, and compressed after the read one after
/// another ([`finish`]), each on all `threads`: one encoder's memory at a
/// time (xz's is some 165 MiB a thread at preset 6), and no output
/// waiting on another's compression during the read.
fn sinks(
    n: usize,
    scratch: Vec<Option<File>>,
    c: crate::package::Compression,
    threads: u32,
) -> Result<(Sinks, Vec<Option<File>>), Error> {
    let spooled = scratch.iter().flatten().count() > 1;
    let mut spools = Vec::with_capacity(n);
    let fan = Fan::open(n, scratch, |f| match f {
        None => {
            spools.push(None);
            Ok(None)
        }
        Some(f) if spooled => {
            let f = f.into_inner().map_err(|e| e.into_error())?;
            spools.push(Some(f));
            let spool = BufWriter::with_capacity(1 << 20, tempfile::tempfile()?);
            Ok(Some(Encoder::None(spool)))
        }
        Some(f) => {
            spools.push(None);
            compress::encoder(c, f, threads).map(Some)
        }
    })
    .map_err(Error::Scratch)?;
    Ok((fan, spools))
}

/// The data archive of one output, compressed, in a scratch file from
/// its start: `sink` finished, or, where the output was spooled into it
/// as it is, the spool compressed into `scratch` on `threads` threads.
fn finish(
    sink: Encoder<BufWriter<File>>,
    scratch: Option<File>,
    c: crate::package::Compression,
    threads: u32,
) -> std::io::Result<File> {
    let done = sink
        .finish()
        .and_then(|w| w.into_inner().map_err(|e| e.into_error()))?;
    let Some(scratch) = scratch else {
        return Ok(done);
    };
    let mut spool = done;
    let len = spool.seek(SeekFrom::End(0))?;
    spool.seek(SeekFrom::Start(0))?;
    let mut e = compress::encoder(c, BufWriter::with_capacity(1 << 20, scratch), threads)?;
    let copied = std::io::copy(&mut (&mut spool).take(len), &mut e)?;
    if copied != len {
        return Err(std::io::Error::other(
            "a spooled data archive was cut short",
        ));
    }
    e.finish()?.into_inner().map_err(|e| e.into_error())
}

/// `changed` with each hard link to a changed file added under its own
/// path (`md5sums` lists every name of a file).
pub(crate) fn with_links(
    mut changed: BTreeMap<Vec<u8>, [u8; 16]>,
    links: &[(Vec<u8>, Vec<u8>)],
) -> BTreeMap<Vec<u8>, [u8; 16]> {
    for (path, target) in links {
        if let Some(md5) = changed.get(target).copied() {
            changed.insert(path.clone(), md5);
        }
    }
    changed
}

/// Walks the data archive `tar` (the member `member` of `p`) into `outs`
/// as the module says.
fn walk<R: Read, D: Decide<Deb>>(
    p: &Package<'_>,
    tar: &mut Reader<R>,
    member: &str,
    decide: &mut D,
    outs: &mut [Out],
    fan: &mut Sinks,
) -> Result<(), Failed<D::Error>> {
    let fault = |f| Error::fault(member, f);
    let n = outs.len();
    let kept = || vec![Fate::Kept; n];
    let mut paths = package::TarPaths::default();
    while let Some(h) = tar.next().map_err(fault)? {
        if let Some(why) = paths.note(&h.path, h.kind() == b'5') {
            return Err(fault(Fault::Damaged(why)).into());
        }
        if h.is_hard_link() {
            // A name of a file left out goes with it.
            let mut fates = kept();
            for (o, fate) in outs.iter_mut().zip(&mut fates) {
                if o.gone.contains(&h.link) {
                    o.gone.insert(h.path.clone());
                    *fate = Fate::Removed;
                } else {
                    o.links.push((h.path.clone(), h.link.clone()));
                }
            }
            emit(tar, &h, &fates, Old::Stream(&[], None), outs, fan).map_err(fault)?;
            continue;
        }
        let m = Member {
            header: &h,
            conffile: p.conffiles.contains(&h.path),
        };
        let named = h.is_file() || h.is_sparse() || h.kind() == b'5';
        if named && let Some(fates) = decide.by_name(&m).map_err(Failed::Caller)? {
            let fates = Fate::each(Some(fates), outs.len());
            account(&h, &fates, outs);
            // A regular file kept somewhere is checked as it passes.
            let mut md5 =
                (h.is_file() && fates.iter().any(|f| matches!(f, Fate::Kept))).then(Md5::new);
            emit(tar, &h, &fates, Old::Stream(&[], md5.as_mut()), outs, fan).map_err(fault)?;
            if let Some(md5) = md5 {
                check(p, decide, &h.path, &md5.finalize().into()).map_err(Failed::Caller)?;
            }
            continue;
        }
        if !(h.is_file() || h.is_sparse()) {
            emit(tar, &h, &kept(), Old::Stream(&[], None), outs, fan).map_err(fault)?;
            continue;
        }
        let mut head = Vec::new();
        (&mut tar.body())
            .take(h.size.min(D::REACH as u64))
            .read_to_end(&mut head)
            .map_err(|e| Error::Member {
                member: h.path_lossy(),
                doing: "cannot be read",
                source: e.into(),
            })?;
        if h.is_sparse() {
            decide.sparse(&m, &head).map_err(Failed::Caller)?;
            emit(tar, &h, &kept(), Old::Stream(&head, None), outs, fan).map_err(fault)?;
            continue;
        }
        if !decide.wants(&m, &head) {
            // Copied as it is, and checked against its row on the way.
            let mut md5 = Md5::new();
            emit(
                tar,
                &h,
                &kept(),
                Old::Stream(&head, Some(&mut md5)),
                outs,
                fan,
            )
            .map_err(fault)?;
            check(p, decide, &h.path, &md5.finalize().into()).map_err(Failed::Caller)?;
            continue;
        }
        let bytes = decide
            .inflate(&m, &head, &mut tar.body())
            .map_err(Failed::Caller)?;
        tar.skip_body().map_err(fault)?;
        let md5 = hashed(decide, &bytes, &h)?;
        check(p, decide, &h.path, &md5).map_err(Failed::Caller)?;
        let fates = Fate::each(
            decide
                .decide(&m, Held::Read(&bytes))
                .map_err(Failed::Caller)?,
            outs.len(),
        );
        account(&h, &fates, outs);
        let held = |out: &mut dyn Write| decide.write(&bytes, out);
        emit(tar, &h, &fates, Old::Held(&held), outs, fan).map_err(fault)?;
    }
    fan.end(tar).map_err(fault)?;
    Ok(())
}

/// The MD5 of `bytes`, the file `h` read whole, hashed as the decider
/// writes it ([`Decide::write`]), which may give back the pages of a
/// mapped scratch file as it goes (a file can be a GiB).
fn hashed<D: Decide<Deb>>(decide: &D, bytes: &D::Bytes, h: &Header) -> Result<[u8; 16], Error> {
    let mut md5 = Md5::new();
    decide.write(bytes, &mut md5).map_err(|e| Error::Member {
        member: h.path_lossy(),
        doing: "cannot be read",
        source: e.into(),
    })?;
    Ok(md5.finalize().into())
}

/// Notes in each output what the fate of the entry `h` takes from an
/// install: a file left out its KiB (and its path, for its hard links and
/// its row of `md5sums`), a directory one, a file rewritten the KiB it
/// no longer takes.
fn account(h: &Header, fates: &[Fate], outs: &mut [Out]) {
    for (o, fate) in outs.iter_mut().zip(fates) {
        match fate {
            Fate::Kept => {}
            Fate::Removed if h.kind() == b'5' => o.kib_less += 1,
            Fate::Removed => {
                o.kib_less += kib(h.size);
                o.gone.insert(h.path.clone());
            }
            Fate::Replaced(new) => o.kib_less += kib(h.size).saturating_sub(kib(new.size)),
        }
    }
}

/// Writes the entry `h` to each output as its fate says ([`Fan::emit`]),
/// noting the MD5 of each file replaced for `md5sums`.
fn emit<R: Read>(
    tar: &mut Reader<R>,
    h: &Header,
    fates: &[Fate],
    old: Old<'_, Md5>,
    outs: &mut [Out],
    fan: &mut Sinks,
) -> Result<(), Fault> {
    fan.emit(tar, h, fates, old, &mut |k, md5| {
        if let Some(o) = outs.get_mut(k) {
            o.changed.insert(h.path.clone(), md5);
        }
    })
}

/// Checks `md5`, the MD5 of the file `path`, against its row of
/// `md5sums`, if it has one: a row it does not match goes to
/// [`Decide::wrong`].
fn check<D: Decide<Deb>>(
    p: &Package<'_>,
    decide: &mut D,
    path: &[u8],
    md5: &[u8; 16],
) -> Result<(), D::Error> {
    let Some(said) = p.md5sums.get(path) else {
        return Ok(());
    };
    let is = hex(md5);
    if *said == is {
        return Ok(());
    }
    let path = String::from_utf8_lossy(path);
    decide.wrong(&Wrong {
        record: "md5sums",
        path: &path,
        field: "MD5",
        said: said.clone(),
        is,
    })
}

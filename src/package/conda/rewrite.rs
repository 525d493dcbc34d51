//! One read of a conda package's payload that decides what each file
//! becomes in each of any number of outputs ([`rewrite`] → [`Plan`]),
//! each output's payload tar written as the read goes (compressed with
//! zstd for a `.conda`; as a plain tar for a `.tar.bz2`, whose one
//! bzip2 stream is written once its info files are known).
//!
//! The read goes entry by entry, in the archive's order. Every entry's
//! name must stay inside the prefix it is unpacked in, and be given once;
//! each is checked against its row of `info/paths.json` ([`super::rows`]);
//! a `.tar.bz2`'s `info/` entries are copied as they are. Then:
//! 1. a regular file or directory may be decided by its path alone,
//!    unread ([`Decide::by_name`]: another GPU's files); a directory left
//!    out takes its row with it;
//! 2. a regular file whose first bytes the caller does not want
//!    ([`Decide::wants`]) is copied as it is, hashed on the way;
//! 3. any other regular file is read whole ([`Decide::inflate`]), hashed,
//!    and handed to [`Decide::decide`], which answers one [`Fate`] per
//!    output. A file replaced whose prefix placeholder (which conda
//!    rewrites at install) would move is refused.
//!
//! Every other entry is copied block for block; a hard link goes where
//! the file it names went. Only the headers of the files replaced change,
//! in their size and checksum.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Read, Write};

use sha2::{Digest as _, Sha256};

use super::error::Error;
use super::info::{Changed, Finder};
use super::read::{Package, decode};
use crate::package::compression::encode::Encoder;
use crate::package::records::hex;
use crate::package::tar::fan::{Fan, Old};
use crate::package::tar::{Fault, Header, Reader};
use crate::package::{self, Decide, Fate, Held};

/// An entry of the payload as the read hands it to [`Decide`].
pub(crate) struct Member<'m> {
    /// Its header: path, kind, size.
    pub(crate) header: &'m Header,
}

/// A conda package's payload as its [`rewrite`] hands its files to
/// [`Decide`].
pub(crate) struct Conda;

impl package::Format for Conda {
    type Member<'m> = Member<'m>;
}

/// Why a [`rewrite`] stopped: the package, or the caller.
pub(crate) type Failed<E> = package::Failed<Error, E>;

/// What one read decided, for each output.
pub(crate) struct Plan {
    pub(super) outs: Vec<Done>,
}

/// One output of a [`Plan`].
pub(super) struct Done {
    /// The new payload tar (zstd for a `.conda`, plain for a `.tar.bz2`)
    /// in a scratch file from its start; `None` for an output not
    /// written.
    pub(super) payload: Option<File>,
    /// The new size and SHA-256 of each file rewritten (and of its hard
    /// links), by path.
    pub(super) changed: Changed,
    /// The paths removed: files, their hard links, directories of
    /// per-GPU files.
    pub(super) gone: BTreeSet<Vec<u8>>,
}

impl Plan {
    /// Whether output `k` is the package as it was.
    pub(crate) fn unchanged(&self, k: usize) -> bool {
        self.outs
            .get(k)
            .is_none_or(|o| o.changed.is_empty() && o.gone.is_empty())
    }
}

/// The outputs' payload tars, SHA-256 taken of each file replaced.
type Sinks = Fan<Encoder<BufWriter<File>>, Sha256>;

/// One output while the read goes.
struct Out {
    changed: Changed,
    gone: BTreeSet<Vec<u8>>,
}

/// Reads the payload of `p` once, within `limit` bytes inflated (which it
/// lowers by what it read), `decide` answering for each file as the
/// module says. Output `k` is written into `scratch[k]` (zstd on `threads`
/// worker threads); an output with no scratch file is decided but not
/// written (a dry run).
pub(crate) fn rewrite<D: Decide<Conda>>(
    p: &Package<'_>,
    limit: &mut u64,
    decide: &mut D,
    scratch: Vec<Option<File>>,
    threads: u32,
) -> Result<Plan, Failed<D::Error>> {
    let (place, bytes, c) = p.payload();
    let reader = decode(&place, bytes, c)?;
    let n = decide.outputs();
    let fan = Fan::open(n, scratch, |f| {
        f.map(|f| match p.info_in_payload() {
            true => Ok(Encoder::None(f)),
            false => super::compress::zstd(f, threads),
        })
        .transpose()
        .map_err(Error::Scratch)
    })?;
    let mut outs: Vec<Out> = (0..n)
        .map(|_| Out {
            changed: Changed::new(),
            gone: BTreeSet::new(),
        })
        .collect();
    let mut tar = Reader::new(reader, *limit);
    let mut w = Walker {
        p,
        place: &place,
        outs: &mut outs,
        fan,
    };
    w.walk(&mut tar, decide)?;
    *limit = limit.saturating_sub(tar.read());
    let sinks = w.fan.into_sinks();
    let mut done = Vec::new();
    for (o, sink) in outs.into_iter().zip(sinks) {
        let payload = match sink {
            Some(sink) => Some(
                sink.finish()
                    .and_then(|w| w.into_inner().map_err(|e| e.into_error()))
                    .map_err(Error::Scratch)?,
            ),
            None => None,
        };
        done.push(Done {
            payload,
            changed: o.changed,
            gone: o.gone,
        });
    }
    Ok(Plan { outs: done })
}

/// One read of the payload into its outputs.
struct Walker<'w, 'a> {
    p: &'w Package<'a>,
    /// Where the read is, in messages.
    place: &'w str,
    outs: &'w mut [Out],
    /// Where each output is written.
    fan: Sinks,
}

impl Walker<'_, '_> {
    /// The error for `fault`, met in the payload.
    fn fault(&self, fault: Fault) -> Error {
        Error::fault(self.place, fault)
    }

    /// Walks the payload `tar` as the module says.
    fn walk<R: Read, D: Decide<Conda>>(
        &mut self,
        tar: &mut Reader<R>,
        decide: &mut D,
    ) -> Result<(), Failed<D::Error>> {
        let n = self.outs.len();
        let kept = || vec![Fate::Kept; n];
        let mut symlinks = BTreeSet::new();
        let mut paths = package::TarPaths::default();
        while let Some(h) = tar.next().map_err(|f| self.fault(f))? {
            self.check_name(&h)?;
            if let Some(why) = paths.note(&h.path, h.kind() == b'5') {
                return Err(self.fault(Fault::Damaged(why)).into());
            }
            if self.p.info_in_payload() && h.path.starts_with(b"info/") {
                self.emit(tar, &h, &kept(), Old::Stream(&[], None))?;
                continue;
            }
            self.p.rows.check_path_type(&h)?;
            if h.kind() == b'2' {
                symlinks.insert(h.path.clone());
            }
            if h.is_hard_link() {
                self.link(tar, &h)?;
                continue;
            }
            let (regular, directory) = (h.is_file(), h.kind() == b'5');
            if regular {
                self.p.rows.check_size(&h.path, h.size)?;
            }
            let m = Member { header: &h };
            if (regular || directory)
                && let Some(fates) = decide.by_name(&m).map_err(Failed::Caller)?
            {
                self.named(tar, &h, &Fate::each(Some(fates), n))?;
                continue;
            }
            if !regular {
                self.emit(tar, &h, &kept(), Old::Stream(&[], None))?;
                continue;
            }
            self.file(tar, &h, decide)?;
        }
        self.fan.end(tar).map_err(|f| Error::fault(self.place, f))?;
        self.p.rows.check_softlinks_found(&symlinks)?;
        Ok(())
    }

    /// Refuses an entry whose name climbs out of the prefix it is
    /// unpacked in: a `..` component, or an absolute name (its path or a
    /// hard link's target, wherever the archive gives it).
    fn check_name(&self, h: &Header) -> Result<(), Error> {
        let climbs = |p: &[u8]| p.split(|&b| b == b'/').any(|c| c == b"..");
        let absolute = h.path_absolute || (h.is_hard_link() && h.link_absolute);
        if climbs(&h.path) || (h.is_hard_link() && climbs(&h.link)) || absolute {
            return Err(Error::Damaged(format!(
                "{}: the entry '{}' names a path outside the package's prefix",
                self.place,
                h.path_lossy()
            )));
        }
        Ok(())
    }

    /// The hard link `h`: left out where the file it names was, given its
    /// new hash where that file changed, copied elsewhere.
    fn link<R: Read>(&mut self, tar: &mut Reader<R>, h: &Header) -> Result<(), Error> {
        let mut fates = vec![Fate::Kept; self.outs.len()];
        for (o, fate) in self.outs.iter_mut().zip(&mut fates) {
            if o.gone.contains(&h.link) {
                o.gone.insert(h.path.clone());
                *fate = Fate::Removed;
            } else if let Some(new) = o.changed.get(&h.link).cloned() {
                o.changed.insert(h.path.clone(), new);
            }
        }
        self.emit(tar, h, &fates, Old::Stream(&[], None))
    }

    /// The regular file or directory `h`, decided by its path: left out
    /// where `fates` says (a directory's row goes by its path without
    /// the slash), else copied, a regular file checked as it passes.
    fn named<R: Read>(
        &mut self,
        tar: &mut Reader<R>,
        h: &Header,
        fates: &[Fate],
    ) -> Result<(), Error> {
        let mut path = h.path.clone();
        while h.kind() == b'5' && path.last() == Some(&b'/') {
            path.pop();
        }
        for (o, fate) in self.outs.iter_mut().zip(fates) {
            if matches!(fate, Fate::Removed) {
                o.gone.insert(path.clone());
            }
        }
        let kept = fates.iter().any(|f| !matches!(f, Fate::Removed));
        if !(h.is_file() && kept) {
            return self.emit(tar, h, fates, Old::Stream(&[], None));
        }
        let mut sha = Sha256::new();
        self.emit(tar, h, fates, Old::Stream(&[], Some(&mut sha)))?;
        self.p.rows.check_sha(&h.path, &sha.finalize().into())
    }

    /// The regular file `h`, not decided by its path: copied, or read
    /// whole and decided, as the module says.
    fn file<R: Read, D: Decide<Conda>>(
        &mut self,
        tar: &mut Reader<R>,
        h: &Header,
        decide: &mut D,
    ) -> Result<(), Failed<D::Error>> {
        let n = self.outs.len();
        let mut head = Vec::new();
        (&mut tar.body())
            .take(h.size.min(D::REACH as u64))
            .read_to_end(&mut head)
            .map_err(|e| {
                self.fault(Fault::Damaged(format!(
                    "the data of '{}' is cut short: {e}",
                    h.path_lossy()
                )))
            })?;
        let m = Member { header: h };
        if !decide.wants(&m, &head) {
            let mut sha = Sha256::new();
            self.emit(
                tar,
                h,
                &vec![Fate::Kept; n],
                Old::Stream(&head, Some(&mut sha)),
            )?;
            return Ok(self.p.rows.check_sha(&h.path, &sha.finalize().into())?);
        }
        let bytes = decide
            .inflate(&m, &head, &mut tar.body())
            .map_err(Failed::Caller)?;
        tar.skip_body().map_err(|f| self.fault(f))?;
        self.p
            .rows
            .check_sha(&h.path, &Sha256::digest(bytes.as_ref()).into())?;
        let fates = Fate::each(
            decide
                .decide(&m, Held::Read(&bytes))
                .map_err(Failed::Caller)?,
            n,
        );
        for (o, f) in self.outs.iter_mut().zip(&fates) {
            if matches!(f, Fate::Removed) {
                o.gone.insert(h.path.clone());
            }
        }
        if let Some(placeholder) = self.p.rows.placeholder(&h.path) {
            for f in &fates {
                if let Fate::Replaced(new) = f {
                    placeholder_stays(h, placeholder, bytes.as_ref(), new)?;
                }
            }
        }
        let held = |out: &mut dyn Write| decide.write(&bytes, out);
        Ok(self.emit(tar, h, &fates, Old::Held(&held))?)
    }

    /// Writes the entry `h` to each output as its fate says
    /// ([`Fan::emit`]), noting the size and SHA-256 of each file
    /// replaced for `paths.json`.
    fn emit<R: Read>(
        &mut self,
        tar: &mut Reader<R>,
        h: &Header,
        fates: &[Fate],
        old: Old<'_, Sha256>,
    ) -> Result<(), Error> {
        let outs = &mut *self.outs;
        self.fan
            .emit(tar, h, fates, old, &mut |k, sha| {
                if let (Some(o), Some(Fate::Replaced(new))) = (outs.get_mut(k), fates.get(k)) {
                    o.changed.insert(h.path.clone(), (new.size, hex(&sha)));
                }
            })
            .map_err(|f| Error::fault(self.place, f))
    }
}

/// Refuses `new`, the new bytes of the file `h` (whose old bytes are
/// `old`), where its prefix placeholder `placeholder` would not be found
/// at the offsets it was.
fn placeholder_stays(
    h: &Header,
    placeholder: &[u8],
    old: &[u8],
    new: &package::New,
) -> Result<(), Error> {
    let mut after = Finder::new(placeholder);
    new.copy_to(&mut after).map_err(Error::Write)?;
    if after.found == Finder::all(placeholder, old) {
        return Ok(());
    }
    Err(Error::Member {
        path: h.path_lossy(),
        why: format!(
            "its prefix placeholder ('{}', which conda rewrites at install) would move: prune \
             never moves it",
            String::from_utf8_lossy(placeholder)
        ),
    })
}

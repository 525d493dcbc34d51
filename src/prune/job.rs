//! What pruning one package works with, whatever its format: the rules,
//! the options, the package and its name ([`Job`]: its decompression
//! budget, the per-GPU files the rules drop by name, a member's name in
//! messages), and what its deciders found in its members ([`Found`]: the
//! report, the device code left, the refusals), so that each format's
//! decider says only what is its own.

use std::path::{Path, PathBuf};

use super::Selection;
use super::budget::{Budget, inflate};
use super::member::{Became, spooled};
use super::path::{
    PathError, PathErrorKind, PathOptions, PathReport, Pruning, RemovedFile, create, finish, merge,
    write_through,
};
use crate::companion::Companion;
use crate::files::{Input, Output};
use crate::package::rpm::rewrite as rpm;
use crate::package::{Decide, Fate, Format, Held};
use crate::scan::magic::Magic;

/// How many first bytes of a package's member prune's deciders look at
/// before they read it whole (as far as the farthest magic of a format
/// not read lies, [`crate::scan::UNREAD_REACH`], and at least a tar
/// header's block).
pub(super) const REACH: usize = if crate::scan::UNREAD_REACH > 512 {
    crate::scan::UNREAD_REACH
} else {
    512
};

/// What the pruning of one package works with.
pub(crate) struct Job<'a> {
    pub(super) sel: &'a Selection,
    pub(super) opts: &'a PathOptions,
    /// The package.
    pub(super) input: &'a Path,
    /// Its name, for messages.
    pub(super) name: String,
}

impl<'a> Job<'a> {
    /// The pruning of `input` by `sel` and `opts`.
    pub(super) fn new(sel: &'a Selection, opts: &'a PathOptions, input: &'a Path) -> Job<'a> {
        Job {
            sel,
            opts,
            input,
            name: crate::files::shown(input).into_owned(),
        }
    }

    /// The decompression budget of the package `data`: the one `inspect`
    /// gives a file of its size, or the options'.
    pub(super) fn budget(&self, data: &[u8]) -> Budget {
        Budget::new(data.len() as u64, self.opts.prune.max_uncompressed)
    }

    /// The member `path`'s name in messages and the report
    /// (`PACKAGE!/PATH`).
    pub(super) fn full(&self, path: &str) -> String {
        format!("{}!/{path}", self.name)
    }

    /// The per-GPU file (or directory of them) `path`, when its GPU is
    /// one the rules drop ([`super::companion`]): it goes by its name,
    /// unread. [`PathOptions::keep_files`] keeps every one.
    pub(super) fn dropped(&self, path: &str) -> Option<Companion> {
        if self.opts.keep_files {
            return None;
        }
        super::companion::dropped(self.sel.by(), path)
    }

    /// Reports the per-GPU file `path`, `size` bytes, removed by its name
    /// as `c` says.
    pub(super) fn removed_by_name(
        &self,
        rep: &mut PathReport,
        path: &str,
        size: u64,
        c: &Companion,
    ) {
        rep.removed
            .push(RemovedFile::by_name(self.full(path), size, c));
        rep.freed += size;
    }

    /// The error `e` of the input's reading or of a scratch file.
    pub(super) fn io(&self, e: std::io::Error) -> PathError {
        PathError::io(PathErrorKind::Io, self.input, e)
    }

    /// The package (read with `meta`, `size` bytes) written to `dest` as
    /// the options say, `write` giving its bytes, and noted in `rep`: no
    /// `dest` (a dry run) writes nothing, and in place a package
    /// `unchanged` is left as it is.
    pub(super) fn write(
        &self,
        (meta, size): (&std::fs::Metadata, u64),
        (dest, unchanged): (Option<PathBuf>, bool),
        mut rep: PathReport,
        write: impl FnOnce(&mut Output, &Path) -> Result<(), PathError>,
    ) -> Result<PathReport, PathError> {
        let Some(dest) = dest else {
            return Ok(rep);
        };
        if unchanged && self.opts.destination == super::Destination::InPlace {
            rep.disk_after = Some(rep.disk_before);
            return Ok(rep);
        }
        let through = write_through(self.opts, self.input, meta)?;
        let mut out = create(self.opts, &dest, size).map_err(|e| PathError::write(&dest, e))?;
        write(&mut out, &dest)?;
        finish(self.opts, out, meta, &dest, &mut rep, through)?;
        rep.package_written();
        Ok(rep)
    }
}

/// The error for `e`, met rewriting `job`'s package (an RPM, a squashfs
/// filesystem): damaged (exit 2), refused, or the new one unwritten.
pub(super) fn failed(job: &Job<'_>, e: rpm::Failed<PathError>) -> PathError {
    match e {
        rpm::Failed::Caller(e) => e,
        rpm::Failed::Package(rpm::Error::Damaged(why)) => {
            PathError::said(PathErrorKind::Content, job.input, &job.name, why)
        }
        rpm::Failed::Package(rpm::Error::Refused(why)) => {
            PathError::said(PathErrorKind::Refused, job.input, &job.name, why)
        }
        rpm::Failed::Package(rpm::Error::Write(e)) => job.io(e),
    }
}

/// What a package's deciders found in its members.
pub(super) struct Found {
    /// The report.
    pub(super) rep: PathReport,
    /// The device code of every member, together.
    pub(super) all: Pruning,
    /// Each linked member rewritten in place rather than shrunk, and why.
    pub(super) not_shrunk: Vec<String>,
    /// The refusals of members left as they were, as messages.
    pub(super) refused: Vec<String>,
}

impl Found {
    /// Nothing found yet, reporting into `rep` (the package's
    /// [`PathReport::new`]).
    pub(super) fn new(rep: PathReport) -> Found {
        Found {
            rep: rep.package(),
            all: Pruning::default(),
            not_shrunk: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// The report, once the read is over: refused when no device image
    /// of the package would stay (unless the options allow it), the
    /// groups merged, the refusals and the members not shrunk noted.
    pub(super) fn finish(self, job: &Job<'_>) -> Result<PathReport, PathError> {
        self.all
            .check_device_left(job.input, &job.name, &job.opts.prune)?;
        let mut rep = self.rep;
        if !self.not_shrunk.is_empty() {
            rep.not_shrunk = Some(self.not_shrunk.join("; "));
        }
        rep.kept = merge(rep.kept);
        rep.dropped = merge(rep.dropped);
        rep.members_refused.extend(self.refused);
        Ok(rep)
    }

    /// The member `path` of `job`'s package, read whole as `bytes` (a
    /// zip's or an RPM's): an ELF file, static archive or package pruned
    /// as the file named alone would be (with `each`), a PE image too
    /// where its headers make it one, anything else as it was. A refusal
    /// leaves it as it was, named (unless [`PathOptions::strict`]); what
    /// was kept, dropped, removed and freed goes into the report.
    pub(super) fn whole(
        &mut self,
        job: &Job<'_>,
        each: &super::Options,
        path: &str,
        bytes: &[u8],
    ) -> Result<Became, PathError> {
        let kind = match known(bytes) {
            true => None,
            false => match crate::host::linked::facts::pe::pe_kind(bytes) {
                Some(kind) => Some(kind),
                None => return Ok(Became::AsItWas),
            },
        };
        let full = job.full(path);
        let keep_files = job.opts.keep_files;
        let p = match Pruning::of(job.sel, job.input, &full, (bytes, kind), each, keep_files) {
            Ok(p) => p,
            // Left as it is, and named; the rest is pruned.
            Err(e) if e.refused() && !job.opts.strict => {
                self.rep.members_refused.push(e.chain());
                return Ok(Became::AsItWas);
            }
            Err(e) => return Err(e),
        };
        if let Some(why) = &p.not_shrunk {
            self.not_shrunk.push(format!("'{path}': {why}"));
        }
        self.all.add_device(&p);
        let rep = &mut self.rep;
        rep.kept.extend(p.kept);
        rep.dropped.extend(p.dropped);
        if p.remove.is_some() {
            let size = bytes.len() as u64;
            rep.removed.push(RemovedFile::whole(full, size));
            rep.freed += size;
            return Ok(Became::Removed);
        }
        let Some(new) = p.output else {
            return Ok(Became::AsItWas);
        };
        rep.emptied += p.emptied;
        rep.containers_rewritten += p.rewritten;
        rep.freed += p.freed;
        Ok(Became::Rewritten(new))
    }
}

/// What prune decides of a package whose files are read whole, one
/// output (an RPM's, a squashfs filesystem's): each ELF, PE,
/// static-archive or package file pruned as the file named alone would
/// be, each per-GPU file whose GPU the rules drop removed unread, what it
/// did noted in the report. Each format's `Decide` asks these.
pub(super) struct Wholes<'a> {
    /// The package and how it is pruned.
    pub(super) job: &'a Job<'a>,
    /// The options each file is pruned with.
    each: super::Options,
    /// What its files held.
    pub(super) found: Found,
}

impl<'a> Wholes<'a> {
    /// The decider of `job`'s package, reporting into `rep` (the
    /// package's [`PathReport::new`]).
    pub(super) fn new(job: &'a Job<'a>, rep: PathReport) -> Wholes<'a> {
        Wholes {
            job,
            each: Pruning::member_options(&job.opts.prune),
            found: Found::new(rep),
        }
    }

    /// The entry `path` (`size` bytes; a `regular` file or a
    /// `directory`) by its name: a library's per-GPU file whose GPU the
    /// rules drop ([`super::companion`]) goes, unread, and is reported (a
    /// directory of such files goes with them, unreported).
    /// [`PathOptions::keep_files`] keeps them.
    pub(super) fn by_name(
        &mut self,
        path: &str,
        size: u64,
        (regular, directory): (bool, bool),
    ) -> Option<Vec<Fate>> {
        if !(regular || directory) {
            return None;
        }
        let c = self.job.dropped(path)?;
        if regular {
            self.job
                .removed_by_name(&mut self.found.rep, path, size, &c);
        }
        Some(vec![Fate::Removed])
    }

    /// The file `path`, `size` bytes, whose first bytes `head` were read
    /// already, read whole from `reader`.
    pub(super) fn inflate(
        &self,
        (path, size): (&str, u64),
        head: &[u8],
        reader: &mut dyn std::io::Read,
    ) -> Result<Input, PathError> {
        inflate(self.job.input, path, head, reader, size)
    }

    /// The file `path`, whose bytes are `bytes`: pruned as if named alone
    /// ([`Found::whole`]), its new bytes spooled.
    pub(super) fn decide(
        &mut self,
        path: &str,
        bytes: Held<'_, Input>,
    ) -> Result<Option<Vec<Fate>>, PathError> {
        let new = match self
            .found
            .whole(self.job, &self.each, path, bytes.bytes())?
        {
            Became::AsItWas => return Ok(None),
            Became::Removed => return Ok(Some(vec![Fate::Removed])),
            Became::Rewritten(new) => new,
        };
        let io = |e| self.job.io(e);
        let new = spooled(&new, bytes, tempfile::tempfile().map_err(io)?).map_err(io)?;
        Ok(Some(vec![Fate::Replaced(std::sync::Arc::new(new))]))
    }
}

/// A member of a package whose files prune reads whole ([`Wholes`]),
/// as the format's rewrite hands it (an RPM's payload entry, a squashfs
/// filesystem's file or directory).
pub(super) trait SeenWhole {
    /// Its path in the package (`usr/lib/libx.so`).
    fn path(&self) -> &str;
    /// Its size (a regular file's bytes).
    fn size(&self) -> u64;
    /// Whether it is a regular file, and whether a directory.
    fn kind(&self) -> (bool, bool);
}

/// prune's decider of the files of a package it reads whole, one
/// output: [`Wholes`], whatever the format.
impl<F: Format> Decide<F> for Wholes<'_>
where
    for<'m> F::Member<'m>: SeenWhole,
{
    type Bytes = Input;
    type Error = PathError;
    const REACH: usize = REACH;

    fn outputs(&self) -> usize {
        1
    }

    fn by_name(&mut self, m: &F::Member<'_>) -> Result<Option<Vec<Fate>>, PathError> {
        Ok(Wholes::by_name(self, m.path(), m.size(), m.kind()))
    }

    fn wants(&self, _: &F::Member<'_>, head: &[u8]) -> bool {
        wanted(head)
    }

    fn inflate(
        &mut self,
        m: &F::Member<'_>,
        head: &[u8],
        reader: &mut dyn std::io::Read,
    ) -> Result<Input, PathError> {
        Wholes::inflate(self, (m.path(), m.size()), head, reader)
    }

    fn decide(
        &mut self,
        m: &F::Member<'_>,
        bytes: Held<'_, Input>,
    ) -> Result<Option<Vec<Fate>>, PathError> {
        Wholes::decide(self, m.path(), bytes)
    }
}

/// Copies the scratch file a rewrite wrote, from its start, to `out`.
pub(super) fn copy_scratch(
    scratch: &mut std::fs::File,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    std::io::Seek::rewind(scratch)?;
    std::io::copy(scratch, out).map(|_| ())
}

/// Whether a member starting with `head` is read whole by prune's
/// deciders of wheels and RPMs: an ELF file, a Windows PE image (a DLL
/// or `.pyd`), a static archive or a package (a tar archive, a compressed
/// file, a zip: looked through by [`Pruning::of`]) may start so, as may
/// any DOS program, read whole to tell whether its headers make it a PE
/// image ([`Found::whole`]).
pub(super) fn wanted(head: &[u8]) -> bool {
    known(head) || head.starts_with(&crate::host::ar::MAGIC[..4]) || head.starts_with(b"MZ")
}

/// Whether `b` starts as an ELF file, a static archive, a package, a bare
/// device container or a format the scanners refuse by name: what
/// [`Pruning::of`] reads without asking whether a DOS program is a PE
/// image.
fn known(b: &[u8]) -> bool {
    b.starts_with(b"\x7fELF")
        || b.starts_with(crate::host::ar::MAGIC)
        || crate::package::detect(b).is_some()
        || Magic::at_start(b).is_some()
        || crate::scan::unread_format(b).is_some()
}

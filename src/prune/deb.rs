//! Pruning a Debian package (`.deb`): every file of its `data.tar` pruned
//! as if it were named alone, the archive compressed again with its own
//! method, and the `md5sums` of its control archive given the new hashes,
//! so that `dpkg -i` installs it and `dpkg --verify` finds every file as
//! the package says.
//!
//! A `.deb` is an `ar` archive: `debian-binary`, `control.tar[.gz|.xz|.zst]`
//! (the package's metadata, `md5sums` among it), `data.tar[…]` (the files),
//! in that order (`deb(5)`). The output keeps every member in its order
//! with its header's fields (name, time, owner, mode); only the sizes of
//! the members rewritten change. Of the tar archives, only the headers of
//! the files rewritten change, in their size and checksum
//! ([`tar`]); every other block is copied as it was read.
//!
//! `data.tar` is streamed: inflated, walked and compressed again into a
//! scratch file beside the output, one file of it in memory (or, past
//! 64 MiB, in a temporary file) at a time, within the decompression
//! budget a wheel gets. `control.tar` is rewritten only when `md5sums`
//! changes, and the members not rewritten are copied file to file.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use super::Selection;
use super::budget::inflate;
use super::job::{Found, Job};
use super::member::{Became, Member, spooled, write_input};
use super::path::{PathError, PathErrorKind, PathOptions, PathReport, finish, write_through};
use super::tamper::{Wrong, settle};
use crate::files::{Input, Output, Sink};
use crate::package::deb::{self, Deb, Decide, Error, Failed, Package};
#[cfg(test)]
use crate::package::deb::{method, with_links};
use crate::package::{Fate, Held};

/// Files smaller than this hold no container worth reading (as for wheels).
const MIN_SIZE: u64 = 64;

/// A Debian package, `input` with `meta`, mapped as `file`: each file of
/// its `data.tar` pruned, the package written where `opts` says. A file
/// of it that cannot be pruned for a refusal stays as it was and is
/// listed in [`PathReport::members_refused`]; damaged data anywhere, or a
/// refusal of the whole (no device image left without
/// [`Options::allow_empty`](super::Options::allow_empty); a signed package
/// that would change), is an error and nothing is written.
pub(crate) fn prune(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    file: &Input,
) -> Result<PathReport, PathError> {
    let data = file.bytes();
    let job = Job::new(sel, opts, input);
    let name = &job.name;
    let mut budget = job.budget(data);
    let errors = Errors {
        input,
        name,
        dest: None,
        why: budget.why,
    };
    let package = Package::open(data, budget.left).map_err(|e| errors.map(e))?;
    let dest = opts.output_path(input)?;
    let errors = Errors {
        dest: dest.as_deref(),
        ..errors
    };
    let mut out = match &dest {
        Some(d) => Some(
            crate::prune::path::create(opts, d, data.len() as u64)
                .map_err(|e| PathError::write(d, e))?,
        ),
        None => None,
    };
    let scratch = match &out {
        Some(o) => Some(
            o.scratch_file()
                .unwrap_or_else(tempfile::tempfile)
                .map_err(|e| PathError::io(PathErrorKind::Io, input, e))?,
        ),
        None => None,
    };
    let mut files = Files::new(&job, PathReport::new(name, data, meta));
    files.writing_to(out.as_ref(), dest.as_deref());
    let threads = opts.prune.threads();
    // `data.tar` is read once, front to back: its pages are given back
    // as the walk goes (a package of hundreds of MB would stay mapped).
    let plan = file.releasing(|| {
        deb::rewrite(
            &package,
            &mut budget.left,
            &mut files,
            vec![scratch],
            threads,
        )
    });
    let mut plan = plan.map_err(|e| match e {
        Failed::Package(e) => errors.map(e),
        Failed::Caller(e) => e,
    })?;
    let mut rep = files.finish()?;
    let unchanged = plan.unchanged(0);
    if !unchanged && let Some(sig) = package.signature() {
        let why = format!(
            "it is signed ('{sig}'), and a pruned package's signature would not verify: remove \
             the signature members from it first"
        );
        return Err(PathError::said(PathErrorKind::Refused, input, name, why));
    }
    let (Some(dest), Some(mut out)) = (dest.as_deref(), out.take()) else {
        return Ok(rep);
    };
    if unchanged && opts.destination == super::Destination::InPlace {
        rep.disk_after = Some(rep.disk_before);
        return Ok(rep);
    }
    let through = write_through(opts, input, meta)?;
    let mut sink = Written {
        file,
        out: &mut out,
    };
    plan.write(&package, 0, &mut budget.left, &mut sink)
        .map_err(|e| errors.map(e))?;
    finish(opts, out, meta, dest, &mut rep, through)?;
    rep.package_written();
    Ok(rep)
}

/// What names the errors of one package's rewrite.
pub(super) struct Errors<'a> {
    /// The package.
    pub(super) input: &'a Path,
    /// Its name, for messages.
    pub(super) name: &'a str,
    /// Where it is written, if it is.
    pub(super) dest: Option<&'a Path>,
    /// Why the decompression budget is what it is, for messages.
    pub(super) why: &'static str,
}

impl Errors<'_> {
    /// The error for `e`, met reading or writing the package: damage
    /// about its content, a refusal of the whole, a member that cannot be
    /// read, the budget (and why it is what it is), the output that
    /// cannot be written (a full disk) and a scratch file.
    pub(super) fn map(&self, e: Error) -> PathError {
        let said = |kind, why| PathError::said(kind, self.input, self.name, why);
        match e {
            Error::Damaged(why) => said(PathErrorKind::Content, why),
            Error::Refused(why) => said(PathErrorKind::Refused, why),
            Error::Member {
                member,
                doing,
                source,
            } => PathError::member(self.input, &member, doing, source),
            Error::Budget { member, limit } => said(
                PathErrorKind::Content,
                format!(
                    "member '{member}' inflates to more than the {limit} bytes left of the \
                     decompression budget ({})",
                    self.why
                ),
            ),
            Error::Write(e) => PathError::write(self.dest.unwrap_or(self.input), e),
            Error::Scratch(e) => PathError::io(PathErrorKind::Io, self.input, e),
        }
    }
}

/// The package's output, its unchanged members copied from the mapped
/// input (a file-to-file copy where the offsets allow).
pub(super) struct Written<'a> {
    /// The package read.
    pub(super) file: &'a Input,
    /// Where it is written.
    pub(super) out: &'a mut Output,
}

impl Write for Written<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl deb::Sink for Written<'_> {
    fn old(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.copy_to(bytes, self.out)
    }

    fn scratch(&mut self, f: &std::fs::File, len: u64) -> std::io::Result<()> {
        let dst = self
            .out
            .file()
            .ok_or_else(|| std::io::Error::other("no file to write to"))?;
        crate::files::copy_file_range_all(f, 0, len, dst)
    }
}

/// What prune decides of a package's files, one output: each file of a
/// format prune reads pruned as if named alone, each per-GPU file whose
/// GPU the rules drop left out unread, a conffile never left out; what it
/// did noted in the report.
pub(super) struct Files<'a> {
    /// The package and how it is pruned.
    job: &'a Job<'a>,
    /// Its output, beside which pruned files are spooled.
    out: Option<&'a Output>,
    /// The output's path: a spooled file that cannot be written (a full
    /// disk, a file-size limit) is an error of the output's.
    dest: Option<&'a Path>,
    /// What its files held.
    found: Found,
}

impl<'a> Files<'a> {
    /// The decider of `job`'s package, reporting into `rep` (the
    /// package's [`PathReport::new`]), its pruned files spooled to
    /// temporary files until an output is set.
    pub(super) fn new(job: &'a Job<'a>, rep: PathReport) -> Files<'a> {
        Files {
            job,
            out: None,
            dest: None,
            found: Found::new(rep),
        }
    }

    /// Spools its pruned files beside `out`, whose path is `dest`.
    pub(super) fn writing_to(&mut self, out: Option<&'a Output>, dest: Option<&'a Path>) {
        (self.out, self.dest) = (out, dest);
    }

    /// The report once the read is over ([`Found::finish`]).
    pub(super) fn finish(self) -> Result<PathReport, PathError> {
        self.found.finish(self.job)
    }

    /// The report so far (before [`Files::finish`]).
    pub(super) fn report(&self) -> &PathReport {
        &self.found.rep
    }

    /// The file `full` of the package refused for `why`: noted, to be
    /// left as it was, or with [`PathOptions::strict`] the error.
    fn refuse_member(&mut self, full: &str, why: &str) -> Result<(), PathError> {
        let e = PathError::said(PathErrorKind::Refused, self.job.input, full, why);
        if self.job.opts.strict {
            return Err(e);
        }
        self.found.refused.push(e.chain());
        Ok(())
    }
}

/// Why a conffile that would be removed stays.
const CONFFILE: &str = "it is a conffile of the package (dpkg keeps a user's changes to it): \
                        prune never removes one";

impl Decide<Deb> for Files<'_> {
    type Bytes = Input;
    type Error = PathError;
    const REACH: usize = super::job::REACH;

    fn outputs(&self) -> usize {
        1
    }

    /// A library's per-GPU file whose GPU the rules drop
    /// ([`super::companion`]), a regular file, is left out unread (its
    /// hard links follow it) and reported removed, and a directory of
    /// such files is left out with it; a conffile is refused instead.
    fn by_name(&mut self, m: &deb::Member<'_>) -> Result<Option<Vec<Fate>>, PathError> {
        let h = m.header;
        let Some(c) = self.job.dropped(&h.path_lossy()) else {
            return Ok(None);
        };
        if h.kind() == b'5' {
            // Only a directory of per-GPU files (`library/gfx906/`) matches.
            return Ok(Some(vec![Fate::Removed]));
        }
        if m.conffile {
            // Kept as it is: checked against its row as it passes.
            self.refuse_member(&self.job.full(&h.path_lossy()), CONFFILE)?;
            return Ok(Some(vec![Fate::Kept]));
        }
        let rep = &mut self.found.rep;
        self.job.removed_by_name(rep, &h.path_lossy(), h.size, &c);
        Ok(Some(vec![Fate::Removed]))
    }

    fn wants(&self, m: &deb::Member<'_>, head: &[u8]) -> bool {
        m.header.size >= MIN_SIZE && super::file::readable(head).is_some()
    }

    fn sparse(&mut self, m: &deb::Member<'_>, head: &[u8]) -> Result<(), PathError> {
        if !self.wants(m, head) {
            return Ok(());
        }
        let why = "it is stored sparse (GNU tar's 'S' entry), which prune does not rewrite";
        self.refuse_member(&self.job.full(&m.header.path_lossy()), why)
    }

    fn inflate(
        &mut self,
        m: &deb::Member<'_>,
        head: &[u8],
        reader: &mut dyn std::io::Read,
    ) -> Result<Input, PathError> {
        let h = m.header;
        inflate(self.job.input, &h.path_lossy(), head, reader, h.size)
    }

    fn decide(
        &mut self,
        m: &deb::Member<'_>,
        file: Held<'_, Input>,
    ) -> Result<Option<Vec<Fate>>, PathError> {
        let h = m.header;
        let reach = usize::try_from(super::file::HEAD).unwrap_or(usize::MAX);
        let head = &file.bytes()[..file.bytes().len().min(reach)];
        let kind = super::file::readable(head).flatten();
        let full = self.job.full(&h.path_lossy());
        let job = self.job;
        let step = Member {
            keep: m.conffile.then_some(CONFFILE),
            ..Member::new(job.sel, job.opts, job.input, &full)
        };
        let found = (&mut self.found.refused, &mut self.found.all);
        let rep = &mut self.found.rep;
        // A file spooled to a mapped scratch file (past 64 MiB) gives back
        // the pages its reading touched as it goes.
        let judge = || step.judge(h, (file.bytes(), kind), found, rep);
        let became = match file {
            Held::Read(input) => input.releasing(judge),
            Held::Stored(_) => judge(),
        };
        let new = match became? {
            Became::AsItWas => return Ok(None),
            Became::Removed => return Ok(Some(vec![Fate::Removed])),
            Became::Rewritten(new) => new,
        };
        let spool = match self.out.and_then(Output::scratch_file) {
            Some(f) => f,
            None => tempfile::tempfile(),
        }
        .map_err(|e| job.io(e))?;
        let written = |e| match self.dest {
            Some(d) => PathError::write(d, e),
            None => job.io(e),
        };
        let new = spooled(&new, file, spool).map_err(written)?;
        Ok(Some(vec![Fate::Replaced(Arc::new(new))]))
    }

    fn write(&self, file: &Input, out: &mut dyn Write) -> std::io::Result<()> {
        write_input(out, file)
    }

    fn wrong(&mut self, w: &Wrong<'_>) -> Result<(), PathError> {
        let job = self.job;
        settle(job.opts, job.input, &job.name, w, &mut self.found.rep)
    }
}

#[cfg(test)]
mod tests;

//! Pruning a conda package, either container (`.conda`, `.tar.bz2`):
//! the package layer reads and rewrites it
//! ([`crate::package::conda`]: the payload walked once, every file
//! checked against its `info/paths.json` row, the records kept true, the
//! tars compressed again as they came); prune decides what each file of
//! the payload becomes as it does inside a `.deb` ([`Files`]: each file
//! of a format prune reads pruned as if named alone, each per-GPU file
//! whose GPU the rules drop left out unread) and reports.

use std::path::Path;

use super::Selection;
use super::deb::Files;
use super::job::Job;
use super::path::{
    CondaRecords, PathError, PathErrorKind, PathOptions, PathReport, finish, write_through,
};
use crate::files::Input;
use crate::package::conda::{self, Conda, Error, Failed, Package, Target};
use crate::package::deb;
use crate::package::{Decide, Fate, Held};

pub(crate) use crate::package::conda::is_conda;

/// What [`CondaRecords::next`] says.
pub(super) const REINDEX: &str = "the package's own SHA-256 and size changed: index its channel \
                                  again (conda index, rattler-index) before installing from it";

/// What names the errors of one conda package's rewrite.
pub(super) struct Errors<'a> {
    /// The package and its name.
    pub(super) job: &'a Job<'a>,
    /// Where it is written, if it is.
    pub(super) dest: Option<&'a Path>,
    /// Why the decompression budget is what it is, for messages.
    pub(super) why: &'static str,
}

impl Errors<'_> {
    /// The error for `e`, met reading or writing the package.
    pub(super) fn map(&self, e: Error) -> PathError {
        let (input, name) = (self.job.input, &self.job.name);
        let said = |kind, why| PathError::said(kind, input, name, why);
        match e {
            Error::Damaged(why) => said(PathErrorKind::Content, why),
            Error::Refused(why) => said(PathErrorKind::Refused, why),
            Error::Member { path, why } => {
                PathError::said(PathErrorKind::Refused, input, &self.job.full(&path), why)
            }
            Error::Budget { place, limit } => said(
                PathErrorKind::Content,
                format!(
                    "{place} inflates to more than the {limit} bytes left of the decompression \
                     budget ({})",
                    self.why
                ),
            ),
            Error::Zip(crate::package::zipfile::Error::Write(e)) => PathError::zip(input, e.into()),
            Error::Zip(e) => PathError::zip_file(input, e),
            Error::Write(e) => PathError::write(self.dest.unwrap_or(input), e),
            Error::Scratch(e) => PathError::io(PathErrorKind::Io, input, e),
        }
    }

    /// The error for `e`, met in a rewrite.
    pub(super) fn failed(&self, e: Failed<PathError>) -> PathError {
        match e {
            Failed::Package(e) => self.map(e),
            Failed::Caller(e) => e,
        }
    }
}

/// A `.conda`, `input` with `meta`, mapped as `file`: its payload pruned,
/// its records following, the package written where `opts` says.
pub(crate) fn prune_conda(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    file: &Input,
) -> Result<PathReport, PathError> {
    let job = Job::new(sel, opts, input);
    let budget = job.budget(file.bytes());
    let errors = Errors {
        job: &job,
        dest: None,
        why: budget.why,
    };
    let package = Package::conda(file.bytes(), budget.left).map_err(|e| errors.map(e))?;
    prune(&job, package, meta, file)
}

/// A `.tar.bz2`, `input` with `meta`, mapped as `file`: `None` when it is
/// not a conda package (no `info/index.json`), else as [`prune_conda`].
pub(crate) fn prune_tar_bz2(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    file: &Input,
) -> Result<Option<PathReport>, PathError> {
    if !input.to_string_lossy().ends_with(".tar.bz2") {
        return Ok(None);
    }
    let job = Job::new(sel, opts, input);
    let budget = job.budget(file.bytes());
    let errors = Errors {
        job: &job,
        dest: None,
        why: budget.why,
    };
    let Some(package) = Package::tar_bz2(file.bytes(), budget.left).map_err(|e| errors.map(e))?
    else {
        return Ok(None);
    };
    prune(&job, package, meta, file).map(Some)
}

/// The package `p` of `job`, with `meta`, mapped as `file`: its payload
/// read once, each file decided by [`Files`], the records brought up to
/// it, written where the options say.
fn prune(
    job: &Job<'_>,
    mut p: Package<'_>,
    meta: &std::fs::Metadata,
    file: &Input,
) -> Result<PathReport, PathError> {
    let (opts, input, data) = (job.opts, job.input, file.bytes());
    let mut budget = job.budget(data);
    let dest = opts.output_path(input)?;
    let errors = Errors {
        job,
        dest: dest.as_deref(),
        why: budget.why,
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
                .map_err(|e| job.io(e))?,
        ),
        None => None,
    };
    let mut files = AsConda(Files::new(job, PathReport::new(&job.name, data, meta)));
    files.0.writing_to(out.as_ref(), dest.as_deref());
    let threads = opts.prune.threads();
    // The payload is read once, front to back: its pages are given back
    // as the walk goes.
    let plan =
        file.releasing(|| conda::rewrite(&p, &mut budget.left, &mut files, vec![scratch], threads));
    let mut plan = plan.map_err(|e| errors.failed(e))?;
    let mut rep = files.0.finish()?;
    let records = plan.records(&p, 0).map_err(|e| errors.map(e))?;
    let unchanged = plan.unchanged(0);
    if !unchanged {
        rep.conda = Some(said(&records));
    }
    let (Some(dest), Some(mut out)) = (dest.as_deref(), out.take()) else {
        return Ok(rep);
    };
    if unchanged && opts.destination == super::Destination::InPlace {
        rep.disk_after = Some(rep.disk_before);
        return Ok(rep);
    }
    let through = write_through(opts, input, meta)?;
    if unchanged {
        file.copy_to(data, &mut out)
            .map_err(|e| PathError::write(dest, e))?;
    } else {
        let target = match p.container {
            conda::Container::Conda { .. } => Target::File(
                out.temp_file()
                    .ok_or_else(|| PathError::write(dest, None))?,
            ),
            conda::Container::TarBz2 { .. } => Target::Stream(&mut out),
        };
        plan.write(&mut p, 0, (&records, None, None), target, threads)
            .map_err(|e| errors.map(e))?;
    }
    finish(opts, out, meta, dest, &mut rep, through)?;
    rep.package_written();
    Ok(rep)
}

/// What the report says of the records `r`.
pub(super) fn said(r: &conda::Records) -> CondaRecords {
    CondaRecords {
        rows_rewritten: r.rows_rewritten,
        rows_removed: r.rows_removed,
        files_lines_removed: r.files_lines_removed,
        next: REINDEX,
    }
}

/// A decider of a `.deb`'s files ([`Files`], or a split's groups of
/// them) asked about a conda package's: each file as a `.deb`'s file
/// that is no conffile (a conda package has none).
pub(super) struct AsConda<D>(pub(super) D);

impl<D: Decide<deb::Deb>> Decide<Conda> for AsConda<D> {
    type Bytes = D::Bytes;
    type Error = D::Error;
    const REACH: usize = D::REACH;

    fn outputs(&self) -> usize {
        self.0.outputs()
    }

    fn by_name(&mut self, m: &conda::Member<'_>) -> Result<Option<Vec<Fate>>, D::Error> {
        self.0.by_name(&as_deb(m))
    }

    fn wants(&self, m: &conda::Member<'_>, head: &[u8]) -> bool {
        self.0.wants(&as_deb(m), head)
    }

    fn inflate(
        &mut self,
        m: &conda::Member<'_>,
        head: &[u8],
        reader: &mut dyn std::io::Read,
    ) -> Result<D::Bytes, D::Error> {
        self.0.inflate(&as_deb(m), head, reader)
    }

    fn decide(
        &mut self,
        m: &conda::Member<'_>,
        bytes: Held<'_, D::Bytes>,
    ) -> Result<Option<Vec<Fate>>, D::Error> {
        self.0.decide(&as_deb(m), bytes)
    }

    fn write(&self, bytes: &D::Bytes, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        self.0.write(bytes, out)
    }
}

/// The conda member `m` as a `.deb`'s file that is no conffile.
fn as_deb<'m>(m: &conda::Member<'m>) -> deb::Member<'m> {
    deb::Member {
        header: m.header,
        conffile: false,
    }
}

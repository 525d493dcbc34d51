//! Pruning a squashfs filesystem, alone or as a SIF image's system
//! partition: what becomes of each of its files, as prune decides it
//! inside a `.deb` or an RPM (each library pruned as if named alone, each
//! per-GPU file whose GPU the rules drop removed by name); the filesystem
//! written anew is the format layer's
//! ([`crate::package::squashfs::rewrite`]), and so is the SIF around it
//! ([`crate::package::sif::rebuild`]). A SIF that changes loses its
//! signature objects (they would not verify), and the report names them.

use std::fs::File;
use std::io::{self, Read, Seek as _, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::sync::Arc;

use super::budget::inflate;
use super::job::{Found, Job};
use super::member::Became;
use super::model::Selection;
use super::path::{
    PathError, PathErrorKind, PathOptions, PathReport, Pruning, finish, write_through,
};
use crate::files::Input;
use crate::package::sif::{self, Piece};
use crate::package::squashfs::rewrite::{self, Decide, Error, Failed, Fate, Member};

/// Whether `data` is a squashfs filesystem (alone).
pub(crate) fn is_squashfs(data: &[u8]) -> bool {
    crate::package::detect(data) == Some(crate::package::Kind::Squashfs)
}

/// Whether `data` is a SIF image.
pub(crate) fn is_sif(data: &[u8]) -> bool {
    crate::package::detect(data) == Some(crate::package::Kind::Sif)
}

/// A squashfs filesystem or a SIF image, `input` with `meta`, mapped as
/// `file`: each library of its files pruned, each per-GPU file the rules
/// drop removed, written where `opts` says. Damaged data, or what the
/// writer cannot keep (extended attributes, hard links, LZO), is an error
/// and nothing is written.
pub(crate) fn prune(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    file: &Input,
) -> Result<PathReport, PathError> {
    let data = file.bytes();
    let name = crate::files::shown(input).into_owned();
    let sif = is_sif(data);
    let part = match sif {
        false => 0..data.len(),
        true => sif::system_partition(data).map_err(|(damaged, why)| {
            let kind = match damaged {
                true => PathErrorKind::Content,
                false => PathErrorKind::Refused,
            };
            PathError::said(kind, input, &name, why)
        })?,
    };
    let job = Job::new(sel, opts, input);
    let budget = job.budget(data);
    let mut d = Members {
        job: &job,
        each: Pruning::member_options(&opts.prune),
        found: Found::new(PathReport::new(&name, data, meta)),
        spool: Arc::new(tempfile::tempfile().map_err(|e| job.io(e))?),
        spooled: 0,
    };
    let dest = opts.output_path(input)?;
    let mut scratch = tempfile::tempfile().map_err(|e| job.io(e))?;
    let new = rewrite::rewrite(&data[part.clone()], &mut d, budget.left, &mut scratch)
        .map_err(|e| failed(input, &name, e))?;
    let mut rep = d.found.finish(&job)?;
    let rebuilt = match (sif, new.len) {
        (true, Some(len)) => Some(
            sif::rebuild(data, len)
                .map_err(|why| PathError::said(PathErrorKind::Content, input, &name, why))?,
        ),
        _ => None,
    };
    if let Some(r) = &rebuilt {
        rep.signatures_removed = (0..r.unsigned)
            .map(|i| format!("SIF signature object {}", i + 1))
            .collect();
    }
    let Some(dest) = dest else {
        return Ok(rep);
    };
    if new.len.is_none() && opts.destination == super::Destination::InPlace {
        rep.disk_after = Some(rep.disk_before);
        return Ok(rep);
    }
    let through = write_through(opts, input, meta)?;
    let mut out = crate::prune::path::create(opts, &dest, data.len() as u64)
        .map_err(|e| PathError::write(&dest, e))?;
    let written = match (&new.len, &rebuilt) {
        (None, _) => file.copy_to(data, &mut out),
        (Some(_), None) => copy_scratch(&mut scratch, &mut out),
        (Some(_), Some(r)) => r.pieces.iter().try_for_each(|p| match p {
            Piece::Bytes(b) => out.write_all(b),
            Piece::Copy(range) => out.write_all(&data[range.clone()]),
            Piece::Partition => copy_scratch(&mut scratch, &mut out),
        }),
    };
    written.map_err(|e| PathError::write(&dest, e))?;
    finish(opts, out, meta, &dest, &mut rep, through)?;
    rep.package_written();
    Ok(rep)
}

/// Copies the scratch file from its start to `out`.
fn copy_scratch(scratch: &mut File, out: &mut dyn io::Write) -> io::Result<()> {
    scratch.rewind()?;
    std::io::copy(scratch, out).map(|_| ())
}

/// The error for `e`, met rewriting the filesystem `input` (named
/// `name`): damaged (exit 2), refused, or the new one unwritten.
fn failed(input: &Path, name: &str, e: Failed<PathError>) -> PathError {
    match e {
        Failed::Caller(e) => e,
        Failed::Package(Error::Damaged(why)) => {
            PathError::said(PathErrorKind::Content, input, name, why)
        }
        Failed::Package(Error::Refused(why)) => {
            PathError::said(PathErrorKind::Refused, input, name, why)
        }
        Failed::Package(Error::Write(e)) => PathError::io(PathErrorKind::Io, input, e),
    }
}

/// What prune decides of a filesystem's files (as for an RPM's: each ELF,
/// PE, static-archive or package file pruned as the file named alone
/// would be, each per-GPU file whose GPU the rules drop removed unread),
/// each new file's bytes spooled to one scratch file that the writer
/// reads back.
struct Members<'a> {
    /// The filesystem and how it is pruned.
    job: &'a Job<'a>,
    /// The options each file is pruned with.
    each: super::Options,
    /// What its files held.
    found: Found,
    /// The new files' bytes, one after the other.
    spool: Arc<File>,
    /// How many bytes the spool holds.
    spooled: u64,
}

impl Decide<'static> for Members<'_> {
    type Error = PathError;
    const REACH: usize = super::job::REACH;

    /// A library's per-GPU file whose GPU the rules drop
    /// ([`super::companion`]) goes, unread, and is reported (a directory
    /// left empty by such files goes with them, unreported).
    /// [`PathOptions::keep_files`] keeps them.
    fn by_name(&mut self, m: &Member<'_>) -> Result<bool, PathError> {
        let Some(c) = self.job.dropped(m.path) else {
            return Ok(false);
        };
        if m.regular {
            self.job
                .removed_by_name(&mut self.found.rep, m.path, m.size, &c);
        }
        Ok(true)
    }

    fn wants(&self, head: &[u8]) -> bool {
        super::job::wanted(head)
    }

    fn decide(
        &mut self,
        m: &Member<'_>,
        head: &[u8],
        reader: &mut dyn Read,
    ) -> Result<Fate<'static>, PathError> {
        let file = inflate(self.job.input, m.path, head, reader, m.size)?;
        let new = match self
            .found
            .whole(self.job, &self.each, m.path, file.bytes())?
        {
            Became::AsItWas => return Ok(Fate::Kept),
            Became::Removed => return Ok(Fate::Removed),
            Became::Rewritten(new) => new,
        };
        let at = self.spooled;
        let mut w = io::BufWriter::with_capacity(
            1 << 20,
            Appender {
                file: &self.spool,
                at,
            },
        );
        let end = super::member::write_pruned(&new, &file, &mut w)
            .and_then(|()| w.into_inner().map_err(io::IntoInnerError::into_error))
            .map(|a| a.at)
            .map_err(|e| {
                let full = self.job.full(m.path);
                PathError::member(self.job.input, &full, "cannot be spooled", e)
            })?;
        self.spooled = end;
        Ok(Fate::Replaced(Box::new(Section {
            file: Arc::clone(&self.spool),
            at,
            end,
        })))
    }
}

/// Writes at the end of the spool, by position.
struct Appender<'f> {
    file: &'f File,
    at: u64,
}

impl io::Write for Appender<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let k = self.file.write_at(buf, self.at)?;
        self.at += k as u64;
        Ok(k)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One new file's bytes in the spool, read by position.
struct Section {
    file: Arc<File>,
    at: u64,
    end: u64,
}

impl Read for Section {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.end - self.at).unwrap_or(usize::MAX);
        let n = buf.len().min(left);
        if n == 0 {
            return Ok(0);
        }
        let k = self.file.read_at(&mut buf[..n], self.at)?;
        self.at += k as u64;
        Ok(k)
    }
}

//! Pruning an RPM package: what becomes of each of its files, as prune
//! decides it inside a `.deb` (each library pruned as if named alone,
//! each per-GPU file whose GPU the rules drop removed by name); the
//! payload, headers and digests are the format layer's
//! ([`crate::package::rpm::rewrite`]). A signed package that changes
//! loses its signatures (they would not verify), and the report names
//! them: `rpmsign --addsign` signs it again.

use std::io::{Seek as _, Write as _};
use std::path::Path;
use std::sync::Arc;

use super::budget::{Budget, inflate};
use super::model::Selection;
use super::path::{
    PathError, PathErrorKind, PathOptions, PathReport, Pruning, RemovedFile, finish, merge,
    write_through,
};
use crate::files::Input;
use crate::package::rpm::rewrite::{self, Error, Failed, Member, Rpm};
use crate::package::{Decide, Fate, Held};

/// An RPM, `input` with `meta`, mapped as `file`: each library of its
/// payload pruned, each per-GPU file the rules drop removed, its headers
/// made true, written where `opts` says. Damaged data, or a change the
/// package cannot take (a file removed whose hard links stay, a per-file
/// tag prune does not know), is an error and nothing is written.
pub(crate) fn prune(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    file: &Input,
) -> Result<PathReport, PathError> {
    let data = file.bytes();
    let name = crate::files::shown(input).into_owned();
    let budget = Budget::new(data.len() as u64, opts.prune.max_uncompressed);
    let mut d = Members {
        sel,
        opts,
        input,
        name: &name,
        each: Pruning::member_options(&opts.prune),
        rep: PathReport::new(&name, data, meta).package(),
        all: Pruning::default(),
        not_shrunk: Vec::new(),
    };
    let dest = opts.output_path(input)?;
    let io = |e| PathError::io(PathErrorKind::Io, input, e);
    let mut scratch = match &dest {
        Some(_) => Some(tempfile::tempfile().map_err(io)?),
        None => None,
    };
    let threads = opts.prune.threads();
    let new = rewrite::rewrite(data, &mut d, scratch.as_mut(), (threads, budget.left))
        .map_err(|e| failed(input, &name, e))?;
    d.all.check_device_left(input, &name, &opts.prune)?;
    let mut rep = d.rep;
    if !d.not_shrunk.is_empty() {
        rep.not_shrunk = Some(d.not_shrunk.join("; "));
    }
    rep.kept = merge(rep.kept);
    rep.dropped = merge(rep.dropped);
    if let Some(new) = &new {
        rep.signatures_removed = new.unsigned.iter().map(|s| (*s).to_string()).collect();
    }
    let (Some(dest), Some(mut scratch)) = (dest, scratch) else {
        return Ok(rep);
    };
    if new.is_none() && opts.destination == super::Destination::InPlace {
        rep.disk_after = Some(rep.disk_before);
        return Ok(rep);
    }
    let through = write_through(opts, input, meta)?;
    let mut out = crate::prune::path::create(opts, &dest, data.len() as u64)
        .map_err(|e| PathError::write(&dest, e))?;
    let written = match &new {
        None => file.copy_to(data, &mut out),
        Some(new) => out.write_all(&new.head).and_then(|()| {
            scratch.rewind()?;
            std::io::copy(&mut scratch, &mut out).map(|_| ())
        }),
    };
    written.map_err(|e| PathError::write(&dest, e))?;
    finish(opts, out, meta, &dest, &mut rep, through)?;
    rep.package_written();
    Ok(rep)
}

/// The error for `e`, met rewriting the RPM `input` (named `name`): the
/// package damaged (exit 2), refused, or the new payload unwritten.
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

/// What prune decides of an RPM's files: each ELF, PE, static-archive or
/// package file pruned as the file named alone would be, each per-GPU
/// file whose GPU the rules drop removed unread, noting in the report
/// what it did.
struct Members<'a> {
    sel: &'a Selection,
    opts: &'a PathOptions,
    /// The package.
    input: &'a Path,
    /// Its name, for messages.
    name: &'a str,
    /// The options each file is pruned with.
    each: super::Options,
    /// The report.
    rep: PathReport,
    /// The package's device code, all files together.
    all: Pruning,
    /// Each linked file rewritten in place rather than shrunk, and why.
    not_shrunk: Vec<String>,
}

impl Decide<Rpm> for Members<'_> {
    type Bytes = Input;
    type Error = PathError;
    const REACH: usize = if crate::scan::UNREAD_REACH > 512 {
        crate::scan::UNREAD_REACH
    } else {
        512
    };

    fn outputs(&self) -> usize {
        1
    }

    /// A library's per-GPU file whose GPU the rules drop
    /// ([`super::companion`]) goes, unread, and is reported (a directory
    /// of such files goes with them, unreported).
    /// [`PathOptions::keep_files`] keeps them.
    fn by_name(&mut self, m: &Member<'_>) -> Result<Option<Vec<Fate>>, PathError> {
        if self.opts.keep_files || !(m.regular || m.directory) {
            return Ok(None);
        }
        let Some(c) = super::companion::dropped(self.sel.by(), m.path) else {
            return Ok(None);
        };
        if m.regular {
            let full = format!("{}!/{}", self.name, m.path);
            self.rep
                .removed
                .push(RemovedFile::by_name(full, m.size, &c));
            self.rep.freed += m.size;
        }
        Ok(Some(vec![Fate::Removed]))
    }

    fn wants(&self, _: &Member<'_>, head: &[u8]) -> bool {
        super::wheel::known(head)
            || head.starts_with(&crate::host::ar::MAGIC[..4])
            || head.starts_with(b"MZ")
    }

    fn inflate(
        &mut self,
        m: &Member<'_>,
        head: &[u8],
        reader: &mut dyn std::io::Read,
    ) -> Result<Input, PathError> {
        inflate(self.input, m.path, head, reader, m.size)
    }

    fn decide(
        &mut self,
        m: &Member<'_>,
        bytes: Held<'_, Input>,
    ) -> Result<Option<Vec<Fate>>, PathError> {
        let bytes_of = bytes.bytes();
        let kind = match super::wheel::known(bytes_of) {
            true => None,
            false => match crate::host::linked::facts::pe::pe_kind(bytes_of) {
                Some(kind) => Some(kind),
                None => return Ok(None),
            },
        };
        let full = format!("{}!/{}", self.name, m.path);
        let keep_files = self.opts.keep_files;
        let p = match Pruning::of(
            self.sel,
            self.input,
            &full,
            (bytes_of, kind),
            &self.each,
            keep_files,
        ) {
            Ok(p) => p,
            // Left as it is, and named; the rest is pruned.
            Err(e) if e.refused() && !self.opts.strict => {
                self.rep.members_refused.push(e.chain());
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        if let Some(why) = &p.not_shrunk {
            self.not_shrunk.push(format!("'{}': {why}", m.path));
        }
        self.all.add_device(&p);
        let rep = &mut self.rep;
        rep.kept.extend(p.kept);
        rep.dropped.extend(p.dropped);
        if p.remove.is_some() {
            let size = bytes_of.len() as u64;
            rep.removed.push(RemovedFile::whole(full, size));
            rep.freed += size;
            return Ok(Some(vec![Fate::Removed]));
        }
        let Some(new) = p.output else {
            return Ok(None);
        };
        rep.emptied += p.emptied;
        rep.containers_rewritten += p.rewritten;
        rep.freed += p.freed;
        let io = |e| PathError::io(PathErrorKind::Io, self.input, e);
        let new =
            super::member::spooled(&new, bytes, tempfile::tempfile().map_err(io)?).map_err(io)?;
        Ok(Some(vec![Fate::Replaced(Arc::new(new))]))
    }
}

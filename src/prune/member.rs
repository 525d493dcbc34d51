//! One regular file of a package's tar, read whole, as the tar walks of
//! `.deb`s ([`super::deb`]), conda packages and image layers all treat
//! it: pruned as if named alone, then written as it was, left out, or
//! handed back in its pruned form for the walk to write (each format
//! hashes the new bytes its own way); and the writers those walks share.

use std::io::Write;
use std::path::Path;

use object::FileKind;

use super::Selection;
use super::output::Output as NewFile;
use super::path::{PathError, PathErrorKind, PathOptions, PathReport, Pruning, RemovedFile};
use crate::files::{COPY_CHUNK, Input};
use crate::package::Held;
use crate::package::tar::walk::Header;

/// Why a file whose size a pax header gives stays as it was.
const PAX: &str = "a pax header gives its size, which prune does not rewrite";

/// What pruning one file of a package's tar works with.
pub(super) struct Member<'a> {
    pub(super) sel: &'a Selection,
    pub(super) opts: &'a PathOptions,
    /// The package.
    pub(super) input: &'a Path,
    /// The file's name in messages and the report (`PACKAGE!/PATH`).
    pub(super) full: &'a str,
    /// Why the file may not be removed, where it may not (a `.deb`'s
    /// conffile): a removal is then refused, as any refusal is.
    pub(super) keep: Option<&'static str>,
}

/// What became of a file of the tar.
pub(super) enum Became {
    /// Written as it was: nothing of it changes, or prune refused it (the
    /// refusal noted).
    AsItWas,
    /// Left out (device code alone that the rules drop all of), reported
    /// removed: its path is the walk's to note as gone.
    Removed,
    /// Its pruned form, counted in the report, for the walk to write with
    /// the header of its new size.
    Rewritten(NewFile),
}

impl<'a> Member<'a> {
    /// The file `full` of the package `input`, pruned by `sel` and
    /// `opts`; removed where the rules say.
    pub(super) fn new(
        sel: &'a Selection,
        opts: &'a PathOptions,
        input: &'a Path,
        full: &'a str,
    ) -> Member<'a> {
        Member {
            sel,
            opts,
            input,
            full,
            keep: None,
        }
    }

    /// Prunes the file `h`, its bytes `bytes` (of the format `kind`, where
    /// it was read): a refusal, unless [`PathOptions::strict`] makes it
    /// the error, goes into `refused`, its device code into `all`, what
    /// was kept, dropped, removed and freed into `rep`. What it becomes;
    /// the caller writes it.
    pub(super) fn judge(
        &self,
        h: &Header,
        (bytes, kind): (&[u8], Option<FileKind>),
        (refused, all): (&mut Vec<String>, &mut Pruning),
        rep: &mut PathReport,
    ) -> Result<Became, PathError> {
        let each = Pruning::member_options(&self.opts.prune);
        let keep_files = self.opts.keep_files;
        let p = match Pruning::of(
            self.sel,
            self.input,
            self.full,
            (bytes, kind),
            &each,
            keep_files,
        ) {
            Ok(p) => p,
            Err(e) => return self.as_it_was(e, refused),
        };
        if p.output.is_some() && h.size_in_pax {
            return self.as_it_was(self.refusal(PAX), refused);
        }
        all.add_device(&p);
        rep.kept.extend(p.kept);
        rep.dropped.extend(p.dropped);
        if p.remove.is_some() {
            if let Some(why) = self.keep {
                return self.as_it_was(self.refusal(why), refused);
            }
            rep.removed
                .push(RemovedFile::whole(self.full.to_owned(), h.size));
            rep.freed += h.size;
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

    /// The refusal of the file, for `why`.
    fn refusal(&self, why: &str) -> PathError {
        PathError::said(PathErrorKind::Refused, self.input, self.full, why)
    }

    /// With `e` met: a refusal, unless [`PathOptions::strict`], is noted
    /// in `refused` and the file stays as it was; anything else is the
    /// error.
    fn as_it_was(&self, e: PathError, refused: &mut Vec<String>) -> Result<Became, PathError> {
        if !e.refused() || self.opts.strict {
            return Err(e);
        }
        refused.push(e.chain());
        Ok(Became::AsItWas)
    }
}

/// Writes the bytes of `file` to `out` as [`write_released`] does.
pub(super) fn write_input(out: &mut dyn Write, file: &Input) -> std::io::Result<()> {
    write_released(out, file, file.bytes())
}

/// Writes `bytes` (of `file`) to `out` a chunk at a time, giving back the
/// pages of each once written: a file of a package (spooled into a mapped
/// temporary file past 64 MiB) can be a GiB, and its pages would
/// otherwise stay in memory.
fn write_released(out: &mut dyn Write, file: &Input, bytes: &[u8]) -> std::io::Result<()> {
    for chunk in bytes.chunks(COPY_CHUNK) {
        out.write_all(chunk)?;
        file.release(chunk);
    }
    Ok(())
}

/// Writes the pruned form `new` of `file` to `out`, as
/// [`NewFile::write_to`] does, giving back the pages it reads.
pub(super) fn write_pruned(
    new: &NewFile,
    file: &Input,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    new.write_with(out, &[file.bytes()], |out, span| {
        write_released(out, file, span)
    })
}

/// The pruned form `new` of `file` written into the scratch file
/// `spool` as [`write_pruned`] writes it: the new bytes a package's
/// rewrite copies into its outputs.
pub(super) fn spooled(
    new: &NewFile,
    file: Held<'_, Input>,
    spool: std::fs::File,
) -> std::io::Result<crate::package::New> {
    let mut w = std::io::BufWriter::with_capacity(1 << 20, spool);
    match file {
        Held::Read(file) => write_pruned(new, file, &mut w)?,
        Held::Stored(bytes) => new.write_to(&mut w, &[bytes])?,
    }
    let spool = w
        .into_inner()
        .map_err(std::io::IntoInnerError::into_error)?;
    crate::package::New::file(spool)
}

//! Pruning a squashfs filesystem, alone or as a SIF image's system
//! partition: what becomes of each of its files, as prune decides it
//! inside a `.deb` or an RPM (each library pruned as if named alone, each
//! per-GPU file whose GPU the rules drop removed by name); the filesystem
//! written anew is the format layer's
//! ([`crate::package::squashfs::rewrite`]), and so is the SIF around it
//! ([`crate::package::sif::rebuild`]). A SIF that changes loses its
//! signature objects (they would not verify), and the report names them.

use std::io::Write as _;
use std::path::Path;

use super::job::{Job, SeenWhole, Wholes, copy_scratch, failed};
use super::model::Selection;
use super::path::{PathError, PathErrorKind, PathOptions, PathReport};
use crate::files::Input;
use crate::package::sif::{self, Piece};
use crate::package::squashfs::rewrite::{self, Member};

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
/// drop removed, written where `opts` says (extended attributes and hard
/// links kept). Damaged data, or what prune refuses (an AppImage, a SIF
/// without exactly one squashfs partition), is an error and nothing is
/// written.
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
    let mut d = Wholes::new(&job, PathReport::new(&name, data, meta));
    let dest = opts.output_path(input)?;
    let mut scratch = tempfile::tempfile().map_err(|e| job.io(e))?;
    // The rewrite reads every byte of the image, some twice: the pages
    // read are given back as it goes (each file's once read, each piece
    // the writer copies, and all of them every 50 ms, for a large file),
    // or a large image would stay mapped whole.
    let release = |b: &[u8]| file.release(b);
    let new = file
        .releasing(|| {
            rewrite::rewrite(
                &data[part.clone()],
                &mut d,
                (budget.left, &release),
                &mut scratch,
            )
        })
        .map_err(|e| failed(&job, e))?;
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
    let size = data.len() as u64;
    job.write((meta, size), (dest, new.len.is_none()), rep, |out, dest| {
        let written = match (&new.len, &rebuilt) {
            (None, _) => file.copy_to(data, out),
            (Some(_), None) => copy_scratch(&mut scratch, out),
            (Some(_), Some(r)) => r.pieces.iter().try_for_each(|p| match p {
                Piece::Bytes(b) => out.write_all(b),
                Piece::Copy(range) => out.write_all(&data[range.clone()]),
                Piece::Partition => copy_scratch(&mut scratch, out),
            }),
        };
        written.map_err(|e| PathError::write(dest, e))
    })
}

/// A squashfs filesystem's file or directory, as prune's decider sees
/// it ([`Wholes`], as of an RPM's). The rewrite asks about a directory
/// only when all its entries went.
impl SeenWhole for Member<'_> {
    fn path(&self) -> &str {
        self.path
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn kind(&self) -> (bool, bool) {
        (self.regular, !self.regular)
    }
}

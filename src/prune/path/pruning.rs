//! One file's bytes pruned, by its kind, before anything is written
//! ([`Pruning`]): what [`prune_path`](crate::prune::prune_path) and the package
//! rewriters write.

use std::path::Path;

use super::error::{PathError, PathErrorKind};
use super::report::{self, ImageGroup, merge};
use crate::error::Error;
use crate::host::ar;
use crate::prune::file::Class;
use crate::prune::model::{Options, Selection, Verdict};
use crate::prune::output::Output as NewFile;

/// One file's bytes pruned: what stays and goes, and the file to write.
#[derive(Default)]
pub(crate) struct Pruning {
    pub(crate) kept: Vec<ImageGroup>,
    pub(crate) dropped: Vec<ImageGroup>,
    /// Containers rewritten (sections removed count one each).
    pub(crate) rewritten: usize,
    /// Containers that keep no device image ([`crate::prune::FilePruning::emptied`]).
    pub(crate) emptied: usize,
    /// Whether the file (an archive's members, all of them) holds device
    /// code, and whether some of it stays.
    pub(crate) device: (bool, bool),
    /// For a linked file rewritten in place rather than shrunk: why.
    pub(crate) not_shrunk: Option<String>,
    /// For a linked file shrunk: what became of its layout.
    pub(crate) shrunk: Option<crate::prune::Shrunk>,
    /// For a PE image whose signature went: its certificate table's bytes.
    pub(crate) signature_removed: Option<u64>,
    /// Bytes freed: zeroed in place, or cut out.
    pub(crate) freed: u64,
    /// The pruned file; `None` when nothing changes.
    pub(crate) output: Option<NewFile>,
    /// The file is device code alone that the rules drop all of, to be
    /// removed whole ([`crate::prune::FilePruning::remove`]): what it is, in
    /// words.
    pub(crate) remove: Option<&'static str>,
}

/// A member's failure, or the archive's own, while a static archive is
/// pruned.
enum InArchive {
    Member(PathError),
    Archive(Error),
}

impl From<Error> for InArchive {
    fn from(e: Error) -> InArchive {
        InArchive::Archive(e)
    }
}

impl Pruning {
    /// A file that stays as it is: the images it keeps, whether it holds
    /// device code.
    pub(crate) fn unchanged(kept: Vec<ImageGroup>, device: bool) -> Pruning {
        Pruning {
            kept,
            device: (device, device),
            ..Pruning::default()
        }
    }

    /// Scans `data` (the file `name`: `path`, or a member of it) and works
    /// out its pruned form: a static archive member by member, a
    /// relocatable object with its sections shrunk, a linked program or
    /// library rewritten where each container lies, anything else (a bare
    /// container) with the freed bytes cut out. A package (a tar archive, a
    /// compressed file, a zip or `.deb` inside another package) is looked
    /// through, and refused when it holds images the rules drop
    /// (`packed`). A file that is device code alone the rules
    /// drop all of is marked to be removed ([`Pruning::remove`]), unless
    /// `keep_files`. `kind`: the format of `data` when the caller read it
    /// already ([`crate::host::file_kind`]); `None`: read here if needed.
    pub(crate) fn of(
        sel: &Selection,
        path: &Path,
        name: &str,
        (data, kind): (&[u8], Option<object::FileKind>),
        opts: &Options,
        keep_files: bool,
    ) -> Result<Pruning, PathError> {
        let class = Class::of(data, kind);
        Pruning::of_class(sel, path, name, (data, class), opts, keep_files)
    }

    /// [`Pruning::of`] of `data`, whose kind the caller read as `class`.
    pub(crate) fn of_class(
        sel: &Selection,
        path: &Path,
        name: &str,
        (data, class): (&[u8], Class),
        opts: &Options,
        keep_files: bool,
    ) -> Result<Pruning, PathError> {
        if let Some(kind) = class.package {
            let (kept, device) = crate::prune::packed::pruning(sel, path, name, data, kind, opts)?;
            return Ok(Pruning::unchanged(kept, device));
        }
        if ar::is_archive(data) {
            return Pruning::of_archive(sel, path, name, data, opts);
        }
        if let Some(format) = crate::scan::unread_format(data) {
            let why = format.why();
            return Err(PathError::said(PathErrorKind::Refused, path, name, why));
        }
        let f = crate::prune::file::prune_file_as(data, class.host, sel, opts, keep_files)
            .map_err(|e| PathError::content(path, name, e))?;
        let groups = |kept: bool| {
            report::groups(
                f.report.images.iter().filter(|i| {
                    let v = f.verdicts[i.id];
                    v != Verdict::Always && v.stays() == kept
                }),
                |i| match kept {
                    true => sel.why(i),
                    false => None,
                },
            )
        };
        let image_file = f
            .report
            .containers
            .iter()
            .any(|c| c.kind == crate::scan::ContainerKind::ImageFile);
        let remove = f.remove.then_some(match image_file {
            true => "the file is itself one device image",
            false => "the file is a bare container file",
        });
        Ok(Pruning {
            remove,
            kept: groups(true),
            dropped: groups(false),
            rewritten: f.rewritten,
            emptied: f.emptied.len(),
            device: crate::prune::plan::device_code(&f.report, &f.verdicts),
            freed: f.freed,
            output: f.output,
            not_shrunk: f.not_shrunk,
            shrunk: f.shrunk,
            signature_removed: f.signature_removed,
        })
    }

    /// The options a member of an archive or wheel is pruned with: those
    /// of the whole, except that a member may keep no device code (that is
    /// judged of the whole, [`Pruning::check_device_left`]).
    pub(crate) fn member_options(opts: &Options) -> Options {
        Options {
            allow_empty: true,
            ..opts.clone()
        }
    }

    /// Adds what pruning a member did to the whole's device code.
    pub(crate) fn add_device(&mut self, member: &Pruning) {
        self.device = (
            self.device.0 || member.device.0,
            self.device.1 || member.device.1,
        );
        self.emptied += member.emptied;
    }

    /// Refuses, unless `opts` allow it, an archive or wheel (`path`, named
    /// `name`) whose members would keep no device image of those they hold
    /// (each member pruned with [`Pruning::member_options`]).
    pub(crate) fn check_device_left(
        &self,
        path: &Path,
        name: &str,
        opts: &Options,
    ) -> Result<(), PathError> {
        let (held, left) = self.device;
        if opts.allow_empty || !held || left {
            return Ok(());
        }
        let why = format!(
            "no device image of it would stay ({} container(s) would keep none): \
             --allow-empty allows that",
            self.emptied
        );
        Err(PathError::said(PathErrorKind::Refused, path, name, why))
    }

    /// A static archive: each member pruned as a file of its own would be.
    fn of_archive(
        sel: &Selection,
        path: &Path,
        name: &str,
        data: &[u8],
        opts: &Options,
    ) -> Result<Pruning, PathError> {
        if ar::is_thin(data) {
            let why = "a thin archive's members are files of their own: prune them (the \
                       archive follows their sizes when rebuilt with ar)";
            return Err(PathError::said(PathErrorKind::Refused, path, name, why));
        }
        let mut p = Pruning::default();
        let each = Pruning::member_options(opts);
        let output = crate::prune::archive::prune(data, |member, bytes| {
            // A member stays, whatever it holds: no file is removed.
            let m = Pruning::of(
                sel,
                path,
                &format!("{name}({member})"),
                (bytes, None),
                &each,
                true,
            )
            .map_err(InArchive::Member)?;
            p.add_device(&m);
            p.kept.extend(m.kept);
            p.dropped.extend(m.dropped);
            p.rewritten += m.rewritten;
            p.freed += m.freed;
            Ok(m.output)
        })
        .map_err(|e| match e {
            InArchive::Member(e) => e,
            InArchive::Archive(e) => PathError::content(path, name, e),
        })?;
        p.check_device_left(path, name, opts)?;
        p.kept = merge(std::mem::take(&mut p.kept));
        p.dropped = merge(std::mem::take(&mut p.dropped));
        p.output = output;
        Ok(p)
    }
}

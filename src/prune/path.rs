//! Pruning a file on disk, [`prune_path`]: read it, prune what it holds
//! by its kind, and write the result where [`PathOptions`] says, whole or
//! not at all, reporting what was kept and dropped ([`PathReport`]).
//!
//! By kind: a static archive member by member ([`super::archive`]), a
//! thin archive's member files where they lie (in place only), a wheel
//! (any zip) member by member with its RECORDs following
//! ([`super::wheel`]), a Debian package file by file with its `md5sums`
//! following ([`super::deb`]), packages it cannot rewrite refused, anything else
//! as [`prune_file`](super::prune_file) says. The output is written with
//! no name and given it in one step ([`crate::files::Output`]), by
//! position, the input's ranges copied file to file and freed bytes left
//! as holes (`write.rs`); in place it keeps the input's mode, owner and
//! times, and with [`PathOptions::keep_hard_links`] it is copied over the
//! old file, which every link then shows.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::output::Output as NewFile;
use super::{Options, Selection, Verdict};
use crate::error::Error;
use crate::files::{Input, Output, copy_file_range_all};
use crate::host::ar;
use crate::package;

pub(super) mod error;
mod report;
mod write;

pub use error::{PathError, PathErrorKind};
pub use report::{CondaRecords, ImageGroup, PathReport, RemovedFile};
pub(crate) use report::{groups, merge};

/// Where [`prune_path`] puts the pruned file.
///
/// # Examples
///
/// A dry run says what would go and writes nothing; in place, the file
/// is replaced:
///
/// ```
/// use offload_kit::prune::{Destination, PathOptions, prune_path};
/// # use offload_kit::bundle::{self, Format};
/// # use offload_kit::prune::{Ptx, Rules, Selection};
/// # use offload_kit::scan::Rule;
/// # let dir = tempfile::tempdir()?;
/// # let (host, gfx90a, gfx942) = (b"host".to_vec(), vec![1u8; 64], vec![2u8; 64]);
/// # let entries = [
/// #     ("host-x86_64-unknown-linux-gnu-".to_string(), host.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), gfx90a.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx942".to_string(), gfx942.len() as u64),
/// # ];
/// # let mut file = Vec::new();
/// # bundle::layout(Format::Binary, &entries, 8)?.write_to(&mut file, &[&host, &gfx90a, &gfx942])?;
/// # let input = dir.path().join("kernels.hipfb");
/// # std::fs::write(&input, &file)?;
/// # let keep = Selection { rules: Rules::Keep(vec![Rule::parse("gfx90a")?]), ptx: Ptx::Newest };
///
/// let mut opts = PathOptions::default();
/// assert_eq!(opts.destination, Destination::DryRun);
/// let would = prune_path(&input, &keep, &opts)?;
/// assert_eq!((would.output, std::fs::read(&input)?), (None, file.clone()));
///
/// opts.destination = Destination::InPlace;
/// let did = prune_path(&input, &keep, &opts)?;
/// assert_eq!(did.freed, would.freed);
/// assert_eq!(std::fs::metadata(&input)?.len(), file.len() as u64 - did.freed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Destination {
    /// Nowhere: say what would be removed, write nothing.
    #[default]
    DryRun,
    /// This file (replaced whole if it exists).
    File(PathBuf),
    /// This directory, under the input's own file name.
    Directory(PathBuf),
    /// Over the input (a thin archive's members over themselves).
    InPlace,
}

/// How [`prune_path`] prunes a file and where it writes it.
///
/// # Examples
///
/// In place, through every hard link of the file, letting the bundle
/// lose every device image:
///
/// ```
/// use offload_kit::prune::{Destination, PathOptions, prune_path};
/// # use offload_kit::bundle::{self, Format};
/// # use offload_kit::prune::{Ptx, Rules, Selection};
/// # use offload_kit::scan::Rule;
/// # let dir = tempfile::tempdir()?;
/// # let (host, gfx90a, gfx942) = (b"host".to_vec(), vec![1u8; 64], vec![2u8; 64]);
/// # let entries = [
/// #     ("host-x86_64-unknown-linux-gnu-".to_string(), host.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), gfx90a.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx942".to_string(), gfx942.len() as u64),
/// # ];
/// # let mut file = Vec::new();
/// # bundle::layout(Format::Binary, &entries, 8)?.write_to(&mut file, &[&host, &gfx90a, &gfx942])?;
/// # let input = dir.path().join("kernels.hipfb");
/// # std::fs::write(&input, &file)?;
/// # let keep = Selection { rules: Rules::Keep(vec![Rule::parse("gfx90a")?]), ptx: Ptx::Newest };
/// let link = dir.path().join("link.hipfb");
/// std::fs::hard_link(&input, &link)?;
///
/// let mut opts = PathOptions::default();
/// opts.destination = Destination::InPlace;
/// opts.keep_hard_links = true;
/// opts.prune.allow_empty = true;
/// let none = Selection { rules: Rules::Keep(vec![Rule::parse("gfx1100")?]), ptx: Ptx::Newest };
/// let report = prune_path(&input, &none, &opts)?;
/// assert_eq!((report.hard_links, report.kept.len(), report.dropped.len()), (2, 0, 2));
/// assert_eq!(std::fs::read(&link)?, std::fs::read(&input)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PathOptions {
    /// Where the pruned file goes.
    pub destination: Destination,
    /// In place, a file that has other hard links is rewritten through
    /// them, so that every link sees the pruned file (the whole of it is
    /// made first, then copied over the old contents); otherwise it is
    /// replaced by a new file, and the other links keep the old one.
    pub keep_hard_links: bool,
    /// Keep a file that is device code alone, every image of which the
    /// rules drop (a code object, a cubin, a bundle, fatbin or
    /// OffloadBinary file), refusing it as any file that would keep no
    /// device image; without it such a file is removed whole (in place;
    /// reported so in a dry run; refused with a file or directory to
    /// write to), and so is such a file of a wheel or `.deb`
    /// ([`PathReport::removed`]).
    pub keep_files: bool,
    /// A file of a package (a wheel or `.deb`) that prune refuses — of a
    /// kind it does not rewrite, sections it cannot take out of a linked
    /// file, a signed DLL — fails the whole package, and nothing is
    /// written. Without it such a file stays byte for byte as it was,
    /// named with the reason in [`PathReport::members_refused`], and the
    /// rest of the package is pruned.
    pub strict: bool,
    /// How the file's bytes are pruned.
    pub prune: Options,
}

impl PathOptions {
    fn in_place(&self) -> bool {
        self.destination == Destination::InPlace
    }

    fn dry_run(&self) -> bool {
        self.destination == Destination::DryRun
    }

    /// Where the pruned form of `input` goes; `None` in a dry run.
    pub(crate) fn output_path(&self, input: &Path) -> Result<Option<PathBuf>, PathError> {
        Ok(match &self.destination {
            Destination::DryRun => None,
            Destination::File(o) => Some(o.clone()),
            Destination::Directory(d) => {
                let name = input.file_name().ok_or_else(|| {
                    let name = crate::files::shown(input).into_owned();
                    PathError::said(PathErrorKind::Refused, input, &name, "no file name")
                })?;
                Some(d.join(name))
            }
            Destination::InPlace => Some(input.to_path_buf()),
        })
    }
}

/// Prunes the file `input`: keeps only the device images `selection`
/// keeps, rewriting each container that loses entries (see
/// [`prune_file`](super::prune_file) for how each kind of file is
/// rewritten), and writes the result where `opts` says, atomically: the
/// path holds the old file until the new one takes its name in one step.
/// Returns what it kept and dropped, and what it wrote.
///
/// Static archives are pruned member by member (the symbol table
/// following), thin archives' member files where they lie (in place or
/// in a dry run only; every member is worked out before any is written),
/// and wheels (any zip) member by member, every `.dist-info/RECORD`
/// naming a pruned member given its new hash and size (a signed wheel
/// that would change is refused, and members are inflated within one
/// decompression budget, [`Options::max_uncompressed`] or what a scan of
/// a file that size gets). Debian packages are pruned file by file, their
/// `data.tar` streamed and compressed again with its own method, `md5sums`
/// given the new hashes (a file of one that prune refuses stays as it was,
/// listed in [`PathReport::members_refused`]). Tar archives, cpio
/// packages, and zips with bytes in front of them are refused, the file
/// untouched.
///
/// # Errors
///
/// A [`PathError`] naming the file and what failed: it cannot be opened,
/// is of a kind not pruned, holds what cannot be pruned, or the output
/// cannot be written (the old file then stays as it was).
///
/// # Examples
///
/// Keep only what a gfx90a loads of a HIP bundle file, into another file:
///
/// ```
/// use offload_kit::bundle::{self, Format};
/// use offload_kit::prune::{Destination, PathOptions, Ptx, Rules, Selection, prune_path};
/// use offload_kit::scan::Rule;
///
/// let dir = tempfile::tempdir()?;
/// let (host, gfx90a, gfx942) = (b"host".to_vec(), vec![1u8; 64], vec![2u8; 64]);
/// let entries = [
///     ("host-x86_64-unknown-linux-gnu-".to_string(), host.len() as u64),
///     ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), gfx90a.len() as u64),
///     ("hip-amdgcn-amd-amdhsa--gfx942".to_string(), gfx942.len() as u64),
/// ];
/// let mut file = Vec::new();
/// bundle::layout(Format::Binary, &entries, 8)?.write_to(&mut file, &[&host, &gfx90a, &gfx942])?;
/// let input = dir.path().join("kernels.hipfb");
/// std::fs::write(&input, &file)?;
///
/// let keep = Selection { rules: Rules::Keep(vec![Rule::parse("gfx90a")?]), ptx: Ptx::Newest };
/// let mut opts = PathOptions::default();
/// opts.destination = Destination::File(dir.path().join("pruned.hipfb"));
/// let report = prune_path(&input, &keep, &opts)?;
///
/// assert_eq!((report.kept[0].target.as_str(), report.dropped[0].target.as_str()), ("gfx90a", "gfx942"));
/// let pruned = std::fs::read(dir.path().join("pruned.hipfb"))?;
/// assert_eq!(pruned.len() as u64, report.bytes_after);
/// assert_eq!(report.bytes_after, report.bytes_before - report.freed);
/// assert_eq!(bundle::entries(&pruned, Format::Binary)?.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn prune_path(
    input: &Path,
    selection: &Selection,
    opts: &PathOptions,
) -> Result<PathReport, PathError> {
    let name = crate::files::shown(input).into_owned();
    let meta = std::fs::metadata(input).map_err(|e| PathError::open(input, e))?;
    let file = Input::open(input).map_err(|e| PathError::open(input, e))?;
    let data = file.bytes();
    match package::detect(data) {
        Some(package::Kind::Zip) if super::conda::is_conda(data) => {
            return super::conda::prune_conda(selection, opts, input, &meta, &file);
        }
        Some(package::Kind::Tar(package::Compression::Bzip2)) => {
            if let Some(r) = super::conda::prune_tar_bz2(selection, opts, input, &meta, &file)? {
                return Ok(r);
            }
        }
        Some(package::Kind::Zip) => {
            return super::wheel::prune(selection, opts, input, &meta, data);
        }
        Some(package::Kind::Deb) => return super::deb::prune(selection, opts, input, &meta, &file),
        _ => {}
    }
    let read_through = matches!(
        package::detect(data),
        Some(package::Kind::Tar(_) | package::Kind::Compressed(_) | package::Kind::Cpio)
    );
    if !read_through && let Some(what) = super::package_not_pruned(data) {
        let why = format!(
            "it is {what}: prune does not rewrite such archives (unpack it, prune its files, \
             pack it again)"
        );
        return Err(PathError::said(PathErrorKind::Refused, input, &name, why));
    }
    if ar::is_thin(data) {
        return thin(selection, opts, input, &meta, data);
    }
    let p = Pruning::of(selection, input, &name, data, &opts.prune, opts.keep_files)?;
    if let Some(what) = p.remove {
        let mut rep = PathReport {
            kept: p.kept,
            dropped: p.dropped,
            ..PathReport::new(&name, data, &meta)
        };
        remove(opts, input, &meta, what, &mut rep)?;
        return Ok(rep);
    }
    let mut rep = PathReport {
        containers_rewritten: p.rewritten,
        emptied: p.emptied,
        not_shrunk: p.not_shrunk,
        shrunk: p.shrunk,
        signature_removed: p.signature_removed,
        freed: p.freed,
        kept: p.kept,
        dropped: p.dropped,
        ..PathReport::new(&name, data, &meta)
    };
    let Some(dest) = opts.output_path(input)? else {
        return Ok(rep);
    };
    if p.output.is_none() && opts.in_place() {
        rep.disk_after = Some(rep.disk_before);
        return Ok(rep);
    }
    let pruned = p
        .output
        .unwrap_or_else(|| NewFile::unchanged(data.len() as u64));
    let cannot = |e| PathError::write(&dest, e);
    let through = write_through(opts, input, &meta)?;
    let mut out = Output::create(&dest).map_err(cannot)?;
    match (file.file(), out.temp_file()) {
        (Some(input), Some(f)) => write::write_at(input, data, &pruned, f).map_err(cannot)?,
        _ => {
            pruned.write_to(data, &mut out).map_err(cannot)?;
            if let Some(f) = out.temp_file() {
                write::punch(f, &pruned);
            }
        }
    }
    finish(opts, out, &meta, &dest, &mut rep, through)?;
    Ok(rep)
}

/// One file's bytes pruned: what stays and goes, and the file to write.
#[derive(Default)]
pub(crate) struct Pruning {
    pub(crate) kept: Vec<ImageGroup>,
    pub(crate) dropped: Vec<ImageGroup>,
    /// Containers rewritten (sections removed count one each).
    pub(crate) rewritten: usize,
    /// Containers that keep no device image ([`super::FilePruning::emptied`]).
    pub(crate) emptied: usize,
    /// Whether the file (an archive's members, all of them) holds device
    /// code, and whether some of it stays.
    pub(crate) device: (bool, bool),
    /// For a linked file rewritten in place rather than shrunk: why.
    pub(crate) not_shrunk: Option<String>,
    /// For a linked file shrunk: what became of its layout.
    shrunk: Option<super::Shrunk>,
    /// For a PE image whose signature went: its certificate table's bytes.
    signature_removed: Option<u64>,
    /// Bytes freed: zeroed in place, or cut out.
    pub(crate) freed: u64,
    /// The pruned file; `None` when nothing changes.
    pub(crate) output: Option<NewFile>,
    /// The file is device code alone that the rules drop all of, to be
    /// removed whole ([`super::FilePruning::remove`]): what it is, in
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
    /// ([`super::packed`]). A file that is device code alone the rules
    /// drop all of is marked to be removed ([`Pruning::remove`]), unless
    /// `keep_files`.
    pub(crate) fn of(
        sel: &Selection,
        path: &Path,
        name: &str,
        data: &[u8],
        opts: &Options,
        keep_files: bool,
    ) -> Result<Pruning, PathError> {
        if let Some(kind) = package::detect(data) {
            return super::packed::pruning(sel, path, name, data, kind, opts);
        }
        if ar::is_archive(data) {
            return Pruning::of_archive(sel, path, name, data, opts);
        }
        let f = super::file::prune_file_as(data, sel, opts, keep_files)
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
            device: super::plan::device_code(&f.report, &f.verdicts),
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
        let output = super::archive::prune(data, |member, bytes| {
            // A member stays, whatever it holds: no file is removed.
            let m = Pruning::of(sel, path, &format!("{name}({member})"), bytes, &each, true)
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

/// With [`PathOptions::keep_hard_links`] in place, the input opened for
/// writing when it has other links (the pruned file is copied into it
/// once complete).
pub(crate) fn write_through(
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
) -> Result<Option<std::fs::File>, PathError> {
    if !(opts.in_place() && opts.keep_hard_links && meta.nlink() > 1) {
        return Ok(None);
    }
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(input)
        .map_err(|e| PathError::write(input, e))?;
    Ok(Some(f))
}

/// Gives the output the input's metadata (all of it in place, the mode
/// otherwise: a pruned program stays a program), renames it into
/// place and notes its sizes.
pub(crate) fn finish(
    opts: &PathOptions,
    mut out: Output,
    meta: &std::fs::Metadata,
    dest: &Path,
    rep: &mut PathReport,
    through: Option<std::fs::File>,
) -> Result<(), PathError> {
    let cannot = |e| PathError::write(dest, e);
    let bare = |e| PathError::io(PathErrorKind::Write, dest, e);
    if opts.in_place() {
        still_the_file_read(dest, meta)?;
    }
    if let Some(mut target) = through {
        // Every link is to see the pruned file: the whole of it, made
        // and synced in the temporary file, is copied over the file's
        // old contents. Only while that copy runs does the file hold
        // part of each (docs/prune.md); a failure before it leaves the
        // old file whole.
        let tmp = out
            .temp_file()
            .ok_or_else(|| cannot(std::io::Error::other("no temporary file")))?;
        tmp.sync_all().map_err(cannot)?;
        let len = tmp.metadata().map_err(bare)?.len();
        copy_file_range_all(tmp, 0, len, &mut target).map_err(cannot)?;
        target.set_len(len).map_err(cannot)?;
        let times = write::times(meta).map_err(bare)?;
        target.set_times(times).map_err(bare)?;
        target.sync_all().map_err(cannot)?;
        drop(out);
    } else {
        if let Some(f) = out.temp_file() {
            match opts.in_place() {
                true => write::keep_metadata(f, meta),
                false => f.set_permissions(meta.permissions()),
            }
            .map_err(bare)?;
        }
        out.commit().map_err(cannot)?;
    }
    let after = std::fs::metadata(dest).map_err(|e| PathError::io(PathErrorKind::Io, dest, e))?;
    rep.output = Some(crate::files::shown(dest).into_owned());
    rep.bytes_after = after.len();
    rep.disk_after = Some(after.blocks() * 512);
    Ok(())
}

/// The file `input` (whose report is `rep`), which is device code alone
/// that the rules drop all of (`what` it is, in words), removed: in place,
/// its name goes (other hard links keep the file, unless
/// [`PathOptions::keep_hard_links`], which refuses it); in a dry run,
/// reported as removed; with a file or directory to write to, refused, as
/// there would be no file to write.
fn remove(
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    what: &str,
    rep: &mut PathReport,
) -> Result<(), PathError> {
    let gone = format!("{what}, and the rules keep none of its images");
    let file = RemovedFile::whole(rep.path.clone(), rep.bytes_before);
    remove_as(opts, input, meta, &gone, file, rep)
}

/// The file `input` (with `meta`), a library's per-GPU file `c` whose
/// GPU the rules drop, removed by its name as [`remove`] removes device
/// code (its bytes are never read); `name` is how reports show it.
pub(crate) fn remove_by_name(
    opts: &PathOptions,
    input: &Path,
    name: &str,
    meta: &std::fs::Metadata,
    c: &crate::companion::Companion,
) -> Result<PathReport, PathError> {
    let mut rep = PathReport::new(name, &[], meta);
    rep.bytes_before = meta.len();
    let gone = format!(
        "it is a {}, which the rules do not keep",
        super::companion::reason(c)
    );
    let file = RemovedFile::by_name(name.to_string(), meta.len(), c);
    remove_as(opts, input, meta, &gone, file, &mut rep)?;
    Ok(rep)
}

/// [`remove`] of a file that goes because `gone` (in words), reported as
/// `file`.
fn remove_as(
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    gone: &str,
    file: RemovedFile,
    rep: &mut PathReport,
) -> Result<(), PathError> {
    let refuse = |why: String| PathError::said(PathErrorKind::Refused, input, &rep.path, why);
    if !(opts.in_place() || opts.dry_run()) {
        return Err(refuse(format!(
            "{gone}: it would be removed whole, and -o or -d would have no file to write \
             (--in-place removes it, --dry-run lists it; --keep-files refuses it)"
        )));
    }
    if opts.in_place() && opts.keep_hard_links && meta.nlink() > 1 {
        return Err(refuse(format!(
            "{gone}, but it has {} hard links: --keep-hard-links asks that every name see \
             the pruned file, and a file removed has none (remove its names yourself)",
            meta.nlink()
        )));
    }
    rep.removed.push(file);
    rep.freed = rep.bytes_before;
    rep.bytes_after = 0;
    if opts.in_place() {
        still_the_file_read(input, meta)?;
        std::fs::remove_file(input).map_err(|e| PathError::write(input, e))?;
        rep.disk_after = Some(0);
    }
    Ok(())
}

/// In place, before the pruned file takes the old one's place: fails,
/// leaving the file as it is, unless the file at `path` is still the one
/// read (`meta`: the same device, inode, size, and modification and
/// change times). Something that replaced it, or wrote to it, while it
/// was pruned would otherwise see its work lost.
fn still_the_file_read(path: &Path, meta: &std::fs::Metadata) -> Result<(), PathError> {
    let now = std::fs::metadata(path).map_err(|e| PathError::io(PathErrorKind::Io, path, e))?;
    let key = |m: &std::fs::Metadata| {
        (
            (m.dev(), m.ino(), m.len()),
            (m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()),
        )
    };
    if key(&now) == key(meta) {
        return Ok(());
    }
    let why = "it changed while it was pruned (another program replaced it or wrote to it): \
               left as it now is, not pruned";
    Err(PathError::said(
        PathErrorKind::Write,
        path,
        &crate::files::shown(path),
        why,
    ))
}

/// A thin archive: its members are pruned where they lie (in place;
/// every one worked out first, so that a refusal leaves all of them as
/// they were), then the archive is given their new sizes.
fn thin(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    data: &[u8],
) -> Result<PathReport, PathError> {
    let name = crate::files::shown(input).into_owned();
    if !opts.in_place() && !opts.dry_run() {
        let why = "a thin archive's members are files of their own: --in-place prunes them \
                   where they lie (and the archive follows their sizes)";
        return Err(PathError::said(PathErrorKind::Refused, input, &name, why));
    }
    let members =
        super::archive::thin_members(data).map_err(|e| PathError::content(input, &name, e))?;
    let paths: Vec<PathBuf> = members
        .iter()
        .map(|m| ar::thin_member_path(input, m))
        .collect();
    // The archive's device code, all members together.
    let mut all = Pruning::default();
    let mut each = opts.clone();
    each.prune = Pruning::member_options(&opts.prune);
    // A member file the archive names stays, whatever it holds.
    each.keep_files = true;
    for p in &paths {
        let pname = crate::files::shown(p);
        let f = Input::open(p).map_err(|e| PathError::open(p, e))?;
        all.add_device(&Pruning::of(sel, p, &pname, f.bytes(), &each.prune, true)?);
    }
    all.check_device_left(input, &name, &opts.prune)?;
    let mut rep = PathReport::new(&name, data, meta);
    let mut sizes = Vec::with_capacity(paths.len());
    for p in &paths {
        let r = prune_path(p, sel, &each)?;
        rep.containers_rewritten += r.containers_rewritten;
        rep.emptied += r.emptied;
        rep.freed += r.freed;
        rep.kept.extend(r.kept);
        rep.dropped.extend(r.dropped);
        sizes.push(r.bytes_after);
    }
    rep.kept = merge(std::mem::take(&mut rep.kept));
    rep.dropped = merge(std::mem::take(&mut rep.dropped));
    if opts.dry_run() {
        return Ok(rep);
    }
    let new = super::archive::resize_thin(data, &sizes)
        .map_err(|e| PathError::content(input, &name, e))?;
    let cannot = |e| PathError::write(input, e);
    let mut out = Output::create(input).map_err(cannot)?;
    new.write_to(data, &mut out).map_err(cannot)?;
    let through = write_through(opts, input, meta)?;
    finish(opts, out, meta, input, &mut rep, through)?;
    Ok(rep)
}

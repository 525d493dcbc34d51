//! Pruning a file on disk, [`prune_path`]: read it, prune what it holds
//! by its kind, and write the result where [`PathOptions`] says, whole or
//! not at all, reporting what was kept and dropped ([`PathReport`]).
//!
//! By kind: a static archive member by member ([`super::archive`]), a
//! thin archive's member files where they lie (in place only), a package
//! of a format [`super::rewriters`] lists by its own rewriter (a wheel,
//! any zip, member by member with its RECORDs following,
//! [`super::wheel`]; a Debian package file by file with its `md5sums`
//! following, [`super::deb`]), packages it cannot rewrite refused, anything else
//! as [`prune_file`](super::prune_file) says. The output is written with
//! no name and given it in one step ([`crate::files::Output`]), by
//! position, the input's ranges copied file to file and freed bytes left
//! as holes (`path/write.rs`); in place it keeps the input's mode, owner
//! and times, and with [`PathOptions::keep_hard_links`] it is copied over
//! the old file, which every link then shows.
//!
//! What a prune of a file is asked with, answers and fails with, and the
//! writing of its result, live below, in [`super::path`], which the
//! package rewriters share: this file calls them, they never call it.

use std::path::{Path, PathBuf};

use super::file::{Class, package_not_pruned_as};
use super::model::Selection;
use super::output::Output as NewFile;
use super::path::{
    PathError, PathErrorKind, PathOptions, PathReport, Pruning, create, finish, merge, punch,
    remove, write_at, write_through,
};
use crate::files::Input;
use crate::host::ar;
use crate::package;

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
/// decompression budget,
/// [`Options::max_uncompressed`](super::Options::max_uncompressed) or
/// what a scan of a file that size gets). Debian packages are pruned file by file, their
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
    prune_path_of(input, None, selection, opts)
}

/// Whether the archive `data`, which prune does not rewrite, holds
/// anything a prune could be asked to remove: a device image (in its
/// bytes as they are, or, for a zip with bytes in front of it, in a
/// member), or damage, a package in a member, data the scan could not
/// read or more than the budget allows (which a refusal must name). An
/// archive that holds none of these (an Excel workbook whose OLE2
/// container carries a small zip, say) is a file without device code, not
/// a refusal.
fn holds_device_code(data: &[u8], opts: &super::Options) -> bool {
    use std::io::Read as _;
    let mut budget = opts
        .max_uncompressed
        .unwrap_or_else(|| crate::scan::default_max_uncompressed(data.len() as u64));
    let scan_opts = crate::scan::Options {
        max_uncompressed: budget,
        ptx_text: false,
        ..crate::scan::Options::default()
    };
    let holds = |bytes: &[u8]| {
        if package::detect(bytes).is_some() || crate::scan::unread_format(bytes).is_some() {
            return true;
        }
        let report = crate::scan::scan_of(bytes, &scan_opts, &mut crate::scan::NoVisit, None);
        !report.images.is_empty() || !report.problems.is_empty()
    };
    if holds(data) || package::zip_prefix(data).is_none() {
        return true;
    }
    /// Each member read whole (within the budget) and judged.
    struct Judge<'h, F> {
        holds: &'h F,
        budget: &'h mut u64,
        found: bool,
    }
    impl<F: Fn(&[u8]) -> bool> package::Members for Judge<'_, F> {
        fn member(
            &mut self,
            _: &str,
            contents: Result<package::Contents<'_, '_>, String>,
        ) -> crate::error::Result<()> {
            let mut whole = Vec::new();
            let bytes = match contents {
                Ok(package::Contents::Stored(b)) => b,
                Ok(
                    package::Contents::Stream { reader, .. } | package::Contents::Unsized(reader),
                ) => {
                    let read = std::io::Read::take(reader, self.budget.saturating_add(1))
                        .read_to_end(&mut whole);
                    if read.is_err() {
                        self.found = true;
                        return Ok(());
                    }
                    &whole[..]
                }
                Err(_) => {
                    self.found = true;
                    return Ok(());
                }
            };
            match self.budget.checked_sub(bytes.len() as u64) {
                Some(left) if !(self.holds)(bytes) => *self.budget = left,
                _ => self.found = true,
            }
            Ok(())
        }
    }
    let mut judge = Judge {
        holds: &holds,
        budget: &mut budget,
        found: false,
    };
    let read = package::members(data, package::Kind::Zip, &mut judge);
    read.is_err() || judge.found
}

/// [`prune_path`] of a file whose format the caller read from its first
/// bytes already (`kind`; `None`: read here if needed).
pub(crate) fn prune_path_of(
    input: &Path,
    kind: Option<object::FileKind>,
    selection: &Selection,
    opts: &PathOptions,
) -> Result<PathReport, PathError> {
    let name = crate::files::shown(input).into_owned();
    let (meta, file) = open_input(input, opts)?;
    let data = file.bytes();
    for r in super::rewriters::PACKAGES.iter().filter(|r| (r.is)(data)) {
        if let Some(report) = (r.prune)(selection, opts, input, &meta, &file)? {
            return Ok(report);
        }
    }
    // What kind of file this is, read once for the checks below and the
    // prune of its contents.
    let class = Class::of(data, kind);
    let read_through = matches!(
        class.package,
        Some(package::Kind::Tar(_) | package::Kind::Compressed(_) | package::Kind::Cpio)
    );
    if !read_through
        && let Some(what) = package_not_pruned_as(data, class.package)
        && holds_device_code(data, &opts.prune)
    {
        let why = format!(
            "it is {what}: prune does not rewrite such archives (unpack it, prune its files, \
             pack it again)"
        );
        return Err(PathError::said(PathErrorKind::Refused, input, &name, why));
    }
    if ar::is_thin(data) {
        return thin(selection, opts, input, &meta, data);
    }
    let p = Pruning::of_class(
        selection,
        input,
        &name,
        (data, class),
        &opts.prune,
        opts.keep_files,
    )?;
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
    let mut out = create(opts, &dest, data.len() as u64).map_err(cannot)?;
    match (file.file(), out.temp_file()) {
        (Some(input), Some(f)) => write_at(input, data, &pruned, f).map_err(cannot)?,
        _ => {
            pruned.write_to(&mut out, &[data]).map_err(cannot)?;
            if let Some(f) = out.temp_file() {
                punch(f, &pruned);
            }
        }
    }
    finish(opts, out, &meta, &dest, &mut rep, through)?;
    Ok(rep)
}

/// The file `input` opened, with its metadata: in a walked tree (in place
/// or in a dry run), through its directory's handle
/// ([`PathOptions::anchor`]), checked to be the file the walk found.
fn open_input(input: &Path, opts: &PathOptions) -> Result<(std::fs::Metadata, Input), PathError> {
    let Some(a) = opts.reading() else {
        let meta = std::fs::metadata(input).map_err(|e| PathError::open(input, e))?;
        let file = Input::open(input).map_err(|e| PathError::open(input, e))?;
        return Ok((meta, file));
    };
    let f = a.open(false).map_err(|e| e.error(input))?;
    let meta = f.metadata().map_err(|e| PathError::open(input, e))?;
    let file = Input::of_open(f, &meta).map_err(|e| PathError::open(input, e))?;
    Ok((meta, file))
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
    // In a walked tree (in place or in a dry run), each member reached
    // from the tree's root as the archive is (one outside the tree, or
    // behind a link, refused).
    let mut anchors = Vec::with_capacity(paths.len());
    for (p, m) in paths.iter().zip(&members) {
        anchors.push(match opts.reading() {
            Some(a) => Some(a.member(Path::new(m)).map_err(|e| e.error(p))?),
            None => None,
        });
    }
    // Each member's access time before this run's reads.
    let mut accessed = Vec::with_capacity(paths.len());
    for (p, a) in paths.iter().zip(&anchors) {
        let pname = crate::files::shown(p);
        each.anchor.clone_from(a);
        each.accessed = None;
        let (m, f) = open_input(p, &each)?;
        accessed.push(m.accessed().ok());
        all.add_device(&Pruning::of(
            sel,
            p,
            &pname,
            (f.bytes(), None),
            &each.prune,
            true,
        )?);
    }
    all.check_device_left(input, &name, &opts.prune)?;
    let mut rep = PathReport::new(&name, data, meta);
    let mut sizes = Vec::with_capacity(paths.len());
    for ((p, a), t) in paths.iter().zip(anchors).zip(accessed) {
        each.anchor = a;
        each.accessed = t;
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
    let mut out = create(opts, input, data.len() as u64).map_err(cannot)?;
    new.write_to(&mut out, &[data]).map_err(cannot)?;
    let through = write_through(opts, input, meta)?;
    finish(opts, out, meta, input, &mut rep, through)?;
    Ok(rep)
}

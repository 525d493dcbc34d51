//! Pruning files and whole directory trees in one run, [`prune_tree`]:
//! what `offload-kit prune --in-place DIR` does to a virtual environment,
//! an unpacked image layer or `/opt/rocm`.
//!
//! Every regular file under each directory is pruned as [`prune_path`]
//! prunes a file named alone (the same bytes), one file at a time, each
//! replaced in one step; so a run killed at any instant leaves every file
//! whole, the old one or the new one. The walk (walkdir, each directory
//! sorted by name, symbolic links not followed) is made first, then the
//! files are handled in its order:
//! - a symbolic link is left as it is, neither followed nor rewritten
//!   (the file it leads to is pruned where the walk finds it);
//! - a file with several names (hard links) is handled once, under the
//!   first name met; the others are reported as its names (and a file
//!   found again, in a directory given twice or inside another, once). In place
//!   without [`PathOptions::keep_hard_links`] the pruned file is a new one
//!   under that name and the other names keep the old bytes, as for a file
//!   named alone;
//! - a file whose first bytes are of no format that prune reads (ELF, PE,
//!   COFF, an `ar` archive, a zip, a tar or cpio package, compressed data,
//!   a container from its first byte) is skipped after reading those
//!   bytes: nothing in it could be cut;
//! - the member files of a thin archive are pruned with it (the archive
//!   records their new sizes), not again where the walk finds them;
//! - a `.offload-kit-*` temporary file (a copy a killed run can leave
//!   beside the file it was replacing) is left alone and reported;
//! - an OCI image layout found in a directory (a directory holding a file
//!   `oci-layout`) is pruned as one image, as if named
//!   ([`super::image`]), its files never one by one: a blob rewritten
//!   alone would no longer be the digest the layout names it by.
//!
//! A file that is device code alone the rules drop all of (a per-GPU
//! code object) is removed, as [`prune_path`] removes it, unless
//! [`PathOptions::keep_files`]; then each pip `*.dist-info/RECORD` found
//! that names a file rewritten or removed is brought up to date
//! (`records`).
//!
//! Directories are pruned in place or in a dry run only: writing each
//! pruned file elsewhere would leave out the files it does not change.

use std::collections::{HashMap, HashSet};
use std::io::Read as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::anchor::Root;
use super::by_kind::prune_path;
use super::file::readable;
use super::model::Selection;
use super::path::{PathError, PathErrorKind, PathOptions, PathReport};
use crate::files::Input;
use crate::host::ar;

pub(super) mod conda;
mod dpkg;
mod emptied;
mod entry;
pub(super) mod records;
mod verify;

pub use entry::{Skip, TreeEntry, TreeOutcome};

/// The name a temporary output starts with ([`crate::files::Output`]).
const TEMPORARY: &str = ".offload-kit-";

/// Bytes read of a found file to tell whether prune reads its format: a
/// tar header's block, or as far as the magic of a format not read lies
/// ([`crate::scan::UNREAD_REACH`]: an ISO 9660 image's, 32 KiB in).
const HEAD: u64 = match crate::scan::UNREAD_REACH {
    r if r > 512 => r as u64,
    _ => 512,
};

/// A path of the run, before it is handled.
enum Slot {
    /// Decided while walking.
    Done(TreeEntry),
    /// A regular file to look at.
    File(Found),
    /// An OCI image layout, named (true) or found, pruned as one image
    /// ([`super::image`]), and where it lies below the directory walked.
    Layout(PathBuf, bool, Beneath),
}

/// Where a path lies in the directory walked: that directory's handle and
/// the path below it ([`super::anchor`]); `None` for a file named.
type Beneath = Option<(Arc<Root>, PathBuf)>;

/// A regular file named or found.
struct Found {
    path: PathBuf,
    named: bool,
    /// Its device and inode, as the walk found them (before any file of
    /// the run is replaced, so no two files of the run share them);
    /// `None` for a named file that cannot be read.
    id: Option<(u64, u64)>,
    /// The path its name is matched with against the libraries' per-GPU
    /// file conventions ([`crate::companion`]): a found file's path below
    /// the directory named, that directory's own name first
    /// (`library/TensileLibrary_gfx906.co` when `…/rocblas/library` was
    /// named); a named file's path as given; `None` when not UTF-8.
    rel: Option<String>,
    /// Its format, when its first bytes were read as one ([`readable`]),
    /// for its prune not to read it again.
    kind: Option<object::FileKind>,
    /// Where a found file lies below the directory walked.
    beneath: Beneath,
    /// Its access time as the walk found it, before the run read any of
    /// its bytes (which, under `relatime`, sets it): the pruned file's.
    accessed: Option<std::time::SystemTime>,
}

/// What becomes of the file `f` of the walk: pruned (or removed by its
/// name), or skipped as a member of a thin archive in `members` or as a
/// file already met (`first`, by device and inode). A named file is
/// pruned even when it is a thin archive's member, but only once,
/// whether it was also named, or found in a directory given, before.
fn file_outcome(
    f: &Found,
    claims: &verify::Claims,
    members: &HashMap<(u64, u64), PathBuf>,
    first: &mut HashMap<(u64, u64), PathBuf>,
    selection: &Selection,
    opts: &PathOptions,
) -> TreeOutcome {
    let id = f.id.filter(|_| !f.named);
    if let Some(archive) = id.and_then(|id| members.get(&id)).filter(|a| **a != f.path) {
        return TreeOutcome::Skipped(Skip::ThinMember(archive.clone()));
    }
    if let Some(name) = f.id.and_then(|id| first.get(&id)) {
        return TreeOutcome::Skipped(match *name == f.path {
            true => Skip::Again,
            false => Skip::HardLink(name.clone()),
        });
    }
    if let Some(id) = f.id {
        first.entry(id).or_insert_with(|| f.path.clone());
    }
    #[cfg(test)]
    super::race::at(super::race::Phase::Open, &f.path);
    // A file found is reached through its directory's handle, in place
    // and in a dry run alike: read, as written, never by its path.
    let placed;
    let opts = match (&f.beneath, opts.in_place()) {
        (Some((root, rel)), _) => match root.anchor(rel, f.id) {
            Ok(a) => {
                placed = PathOptions {
                    anchor: Some(a),
                    accessed: f.accessed,
                    ..opts.clone()
                };
                &placed
            }
            Err(e) => return TreeOutcome::Failed(e.error(&f.path)),
        },
        (None, true) => {
            placed = PathOptions {
                accessed: f.accessed,
                ..opts.clone()
            };
            &placed
        }
        _ => opts,
    };
    let done = match by_name(f, selection, opts) {
        Some(c) => remove_named(&f.path, &c, selection, opts),
        None => checked_prune(f, claims, selection, opts),
    };
    match done {
        Ok(r) => TreeOutcome::Pruned(Box::new(r)),
        Err(e) => TreeOutcome::Failed(e),
    }
}

/// Prunes the file `f`, checked first against the records that list it
/// when the run would change it: a refusal, or the wrong rows trusted. A
/// file the run leaves as it is keeps its row, right or wrong, so only
/// the files that change are hashed (hashing every file a record lists
/// read a whole venv, gigabytes of host libraries, in each run); which
/// those are, a dry run of the file says first.
fn checked_prune(
    f: &Found,
    claims: &verify::Claims,
    selection: &Selection,
    opts: &PathOptions,
) -> Result<PathReport, PathError> {
    use super::by_kind::prune_path_of;
    if !claims.lists(&f.path) {
        return prune_path_of(&f.path, f.kind, selection, opts);
    }
    let probe = PathOptions {
        destination: super::path::Destination::DryRun,
        ..opts.clone()
    };
    let would = prune_path_of(&f.path, f.kind, selection, &probe)?;
    let changes = would.containers_rewritten > 0
        || would.emptied > 0
        || would.freed > 0
        || would.signature_removed.is_some()
        || !would.dropped.is_empty()
        || !would.removed.is_empty();
    let wrong = match changes {
        true => claims.check(&f.path, opts)?,
        false => Vec::new(),
    };
    let mut r = match opts.dry_run() {
        true => would,
        false => prune_path_of(&f.path, f.kind, selection, opts)?,
    };
    r.records_wrong.extend(wrong);
    Ok(r)
}

/// Where the walk found `f`, a record (a pip RECORD, a conda record) to
/// keep true: `None` for another file, or one named.
fn placed_record(f: &Found) -> Option<records::Placed> {
    let ((root, rel), id) = (f.beneath.as_ref()?, f.id?);
    records::is_any_record(&f.path).then(|| records::Placed {
        root: Arc::clone(root),
        rel: rel.clone(),
        id,
        accessed: f.accessed,
    })
}

/// The rows of the records among the files of `slots` found and left as
/// of no format prune reads, each read where the walk found it
/// (`places`).
fn read_claims(slots: &[Slot], places: &records::Places) -> verify::Claims {
    let found = slots.iter().filter_map(|s| match s {
        Slot::Done(e)
            if !e.named && matches!(e.outcome, TreeOutcome::Skipped(Skip::NoKnownFormat)) =>
        {
            Some(e.path.as_path())
        }
        _ => None,
    });
    verify::Claims::read(found, places)
}

/// The entry of an image layout named on the command line (`named`) or
/// found in a directory, pruned as one input
/// ([`prune_layout`](super::oci::prune_layout)).
fn layout_entry(
    path: PathBuf,
    named: bool,
    beneath: Beneath,
    selection: &Selection,
    opts: &PathOptions,
) -> TreeEntry {
    #[cfg(test)]
    super::race::at(super::race::Phase::Open, &path);
    // In place or in a dry run, a layout with a link to follow out of the
    // tree is refused; else it is read, and written, through the handles
    // of its directory and blob store.
    let mut at = None;
    if let Some((root, rel)) = beneath.filter(|_| opts.in_place() || opts.dry_run()) {
        match root.check_layout(&rel).and_then(|()| root.layout(&rel)) {
            Ok(l) => at = Some(l),
            Err(e) => {
                return TreeEntry {
                    outcome: TreeOutcome::Failed(e.error(&path)),
                    path,
                    named,
                    dpkg_package: None,
                };
            }
        }
    }
    let outcome = match super::oci::prune_layout(selection, opts, &path, at) {
        Ok(r) => TreeOutcome::Pruned(Box::new(r)),
        Err(e) => TreeOutcome::Failed(e),
    };
    TreeEntry {
        path,
        named,
        outcome,
        dpkg_package: None,
    }
}

/// Prunes every file of `inputs`: a file named as [`prune_path`] does, a
/// directory every regular file under it (see the module's doc for what
/// is left as it is: symbolic links, other names of a file, files of no
/// format prune reads). Files are handled one at a time, in the order of
/// `inputs` and of each directory's walk, each pruned whole or left as
/// it was: a failure is reported in its place and the run goes on.
/// `progress(done, total)` is called after each regular file.
///
/// A directory is pruned in place or in a dry run only
/// ([`Destination::InPlace`](super::Destination::InPlace),
/// [`Destination::DryRun`](super::Destination::DryRun)); with another
/// destination it is a [`TreeOutcome::Failed`] of kind
/// [`PathErrorKind::Refused`], and nothing under it is read.
///
/// # Examples
///
/// A dry run over a directory holding a HIP bundle, a text file and a
/// symbolic link to the bundle:
///
/// ```
/// use offload_kit::prune::{PathOptions, Ptx, Rules, Selection, Skip, TreeOutcome, prune_tree};
/// # use offload_kit::bundle::{self, Format};
/// use offload_kit::scan::Rule;
///
/// let dir = tempfile::tempdir()?;
/// # let (host, gfx90a, gfx942) = (b"host".to_vec(), vec![1u8; 64], vec![2u8; 64]);
/// # let entries = [
/// #     ("host-x86_64-unknown-linux-gnu-".to_string(), host.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), gfx90a.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx942".to_string(), gfx942.len() as u64),
/// # ];
/// # let mut file = Vec::new();
/// # bundle::layout(Format::Binary, &entries, 8)?.write_to(&mut file, &[&host, &gfx90a, &gfx942])?;
/// std::fs::write(dir.path().join("k.hipfb"), &file)?;
/// std::fs::write(dir.path().join("notes.txt"), "no device code")?;
/// std::os::unix::fs::symlink("k.hipfb", dir.path().join("link.hipfb"))?;
///
/// let keep = Selection { rules: Rules::Keep(vec![Rule::parse("gfx90a")?]), ptx: Ptx::Newest };
/// let found = prune_tree(&[dir.path().to_path_buf()], &keep, &PathOptions::default(), &mut |_, _| {});
/// let names: Vec<_> = found.iter().map(|e| e.path.file_name().unwrap().to_owned()).collect();
/// assert_eq!(names, ["k.hipfb", "link.hipfb", "notes.txt"]);
/// assert!(matches!(&found[0].outcome, TreeOutcome::Pruned(r) if r.freed > 0));
/// assert!(matches!(&found[1].outcome, TreeOutcome::Skipped(Skip::SymbolicLink)));
/// assert!(matches!(&found[2].outcome, TreeOutcome::Skipped(Skip::NoKnownFormat)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn prune_tree(
    inputs: &[PathBuf],
    selection: &Selection,
    opts: &PathOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Vec<TreeEntry> {
    let mut slots = Vec::new();
    for input in inputs {
        walk(input, opts, &mut slots);
    }
    #[cfg(test)]
    for input in inputs {
        super::race::at(super::race::Phase::Walked, input);
    }
    // Every regular file counts once toward `progress`: when its first
    // bytes show it is left, or when it is pruned.
    let total = slots.iter().filter(|s| matches!(s, Slot::File(_))).count();
    let mut done = 0;
    // The member files of the thin archives, each with its archive: they
    // are pruned with it, wherever the walk finds them.
    let mut members: HashMap<(u64, u64), PathBuf> = HashMap::new();
    // The records found (pip RECORDs, conda records), by where the walk
    // found them: read and rewritten through their directories' handles.
    let mut places = records::Places::new();
    for slot in &mut slots {
        let Slot::File(f) = slot else { continue };
        if by_name(f, selection, opts).is_some() {
            // Removed by its name, never read.
            continue;
        }
        let left = match look(f) {
            Look::Prune(kind) => {
                f.kind = kind;
                continue;
            }
            Look::Thin(ids) => {
                for id in ids {
                    members.entry(id).or_insert_with(|| f.path.clone());
                }
                continue;
            }
            Look::Skip(why) => {
                if let Some(p) = placed_record(f).filter(|_| why == Skip::NoKnownFormat) {
                    places.insert(f.path.clone(), p);
                }
                TreeOutcome::Skipped(why)
            }
            Look::Failed(e) => TreeOutcome::Failed(e),
        };
        *slot = Slot::Done(TreeEntry {
            path: std::mem::take(&mut f.path),
            named: false,
            outcome: left,
            dpkg_package: None,
        });
        done += 1;
        progress(done, total);
    }
    let claims = read_claims(&slots, &places);
    let mut first: HashMap<(u64, u64), PathBuf> = HashMap::new();
    let mut out = Vec::with_capacity(slots.len());
    for slot in slots {
        let f = match slot {
            Slot::Done(e) => {
                out.push(e);
                continue;
            }
            Slot::Layout(path, named, beneath) => {
                out.push(layout_entry(path, named, beneath, selection, opts));
                continue;
            }
            Slot::File(f) => f,
        };
        let outcome = file_outcome(&f, &claims, &members, &mut first, selection, opts);
        out.push(TreeEntry {
            path: f.path,
            named: f.named,
            outcome,
            dpkg_package: None,
        });
        done += 1;
        progress(done, total);
    }
    directories_emptied(inputs, &mut out, opts);
    records::update(&mut out, &places, opts);
    let dry = opts.destination == super::Destination::DryRun;
    let changed = out
        .iter()
        .enumerate()
        .filter(|(_, e)| records::changed(e, dry).is_some());
    for (i, package) in dpkg::owners(changed.map(|(i, e)| (i, e.path.as_path()))) {
        out[i].dpkg_package = Some(package);
    }
    out
}

/// The directories of `inputs` whose files are walked: all but OCI image
/// layouts, each pruned as one image (into a new layout too).
pub(crate) fn walked_dirs(inputs: &[PathBuf]) -> Vec<&PathBuf> {
    inputs
        .iter()
        .filter(|p| p.is_dir() && !super::oci::is_layout(p))
        .collect()
}

/// Adds to `out` the directories under the directories of `inputs` that
/// the run emptied ([`emptied`]), removed in place.
fn directories_emptied(inputs: &[PathBuf], out: &mut Vec<TreeEntry>, opts: &PathOptions) {
    let gone = out.iter().filter_map(|e| match &e.outcome {
        TreeOutcome::Pruned(r)
            if r.bytes_after == 0 && r.removed.iter().any(|f| f.path == r.path) =>
        {
            Some(e.path.clone())
        }
        _ => None,
    });
    let roots: Vec<&Path> = inputs
        .iter()
        .map(PathBuf::as_path)
        .filter(|p| p.is_dir())
        .collect();
    let in_place = opts.destination == super::Destination::InPlace;
    let remove: emptied::RemoveDir<'_> = &remove_dir;
    let remove = in_place.then_some(remove);
    let list: emptied::ListDir<'_> = &list_dir;
    for (path, done) in emptied::emptied(&roots, gone.collect::<Vec<_>>(), list, remove) {
        let outcome = match done {
            Ok(()) => TreeOutcome::DirectoryRemoved,
            Err(e) => TreeOutcome::Failed(PathError::write(&path, e)),
        };
        out.push(TreeEntry {
            path,
            named: false,
            outcome,
            dpkg_package: None,
        });
    }
}

/// The names in the directory `dir` below `root`, listed through its
/// handle reached from `root` with no link followed ([`Root::dir`]):
/// `None` when a link, or another file system, is on its way now (what
/// it leads to is never listed) or it cannot be read.
fn list_dir(dir: &Path, root: &Path) -> Option<Vec<std::ffi::OsString>> {
    let rel = dir.strip_prefix(root).ok()?;
    let fd = Root::open(root).ok()?.dir(rel).ok()?;
    super::anchor::names(&fd).ok()
}

/// Removes the empty directory `dir` below `root`, through the handle of
/// its parent reached from `root` with no link followed
/// ([`Root::dir`]): a link put on its way is refused, not followed.
fn remove_dir(dir: &Path, root: &Path) -> std::io::Result<()> {
    let refused = |_| std::io::Error::other("a symbolic link is on its path now: left alone");
    let rel = dir
        .strip_prefix(root)
        .map_err(|_| std::io::Error::other("outside the tree"))?;
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return Err(std::io::Error::other("the directory pruned itself"));
    };
    let parent = Root::open(root)?.dir(parent).map_err(|e| match e {
        super::anchor::Lost::Io(e) => e,
        e => refused(e),
    })?;
    let flags = rustix::fs::AtFlags::REMOVEDIR;
    Ok(rustix::fs::unlinkat(&parent, name, flags)?)
}

/// The per-GPU file of a library that `f` is, when the rules drop its
/// GPU and it is to go by its name: in place or in a dry run, without
/// [`PathOptions::keep_files`].
fn by_name(f: &Found, sel: &Selection, opts: &PathOptions) -> Option<crate::companion::Companion> {
    let removes = matches!(
        opts.destination,
        super::Destination::InPlace | super::Destination::DryRun
    );
    if opts.keep_files || !removes {
        return None;
    }
    super::companion::dropped(sel.by(), f.rel.as_deref()?)
}

/// The library's per-GPU file `path` (`c`) removed by its name
/// ([`super::path::remove_by_name`]); a named path that is no regular
/// file (a symbolic link) is left to [`prune_path`].
fn remove_named(
    path: &Path,
    c: &crate::companion::Companion,
    sel: &Selection,
    opts: &PathOptions,
) -> Result<PathReport, PathError> {
    let meta = match opts.reading() {
        Some(a) => a.metadata().map_err(|e| e.error(path))?,
        None => std::fs::symlink_metadata(path).map_err(|e| PathError::open(path, e))?,
    };
    if !meta.is_file() {
        return prune_path(path, sel, opts);
    }
    let name = crate::files::shown(path).into_owned();
    super::path::remove_by_name(opts, path, &name, &meta, c)
}

/// A path found in a directory, left as it is for `why`.
fn found(path: &Path, why: Skip) -> TreeEntry {
    TreeEntry {
        path: path.to_path_buf(),
        named: false,
        outcome: TreeOutcome::Skipped(why),
        dpkg_package: None,
    }
}

/// Adds the paths of `input` to `slots`: itself when it is no directory,
/// else what the walk finds under it.
fn walk(input: &Path, opts: &PathOptions, slots: &mut Vec<Slot>) {
    let named = |meta: Option<&std::fs::Metadata>| {
        Slot::File(Found {
            path: input.to_path_buf(),
            named: true,
            id: meta.map(|m| (m.dev(), m.ino())),
            rel: input.to_str().map(str::to_string),
            kind: None,
            beneath: None,
            accessed: meta.and_then(|m| m.accessed().ok()),
        })
    };
    match std::fs::metadata(input) {
        // `prune_path` says why it cannot be opened.
        Err(_) => return slots.push(named(None)),
        Ok(meta) if !meta.is_dir() => return slots.push(named(Some(&meta))),
        Ok(_) if super::oci::is_layout(input) => {
            let beneath = Root::open(input)
                .ok()
                .map(|r| (Arc::new(r), PathBuf::new()));
            return slots.push(Slot::Layout(input.to_path_buf(), true, beneath));
        }
        Ok(_) => {}
    }
    if !matches!(
        opts.destination,
        super::Destination::InPlace | super::Destination::DryRun
    ) {
        let name = crate::files::shown(input);
        let why = "it is a directory: the files under it are pruned in place (--in-place) or \
                   in a dry run only";
        slots.push(Slot::Done(TreeEntry {
            path: input.to_path_buf(),
            named: true,
            outcome: TreeOutcome::Failed(PathError::said(
                PathErrorKind::Refused,
                input,
                &name,
                why,
            )),
            dpkg_package: None,
        }));
        return;
    }
    // Every file found is reached again from this handle, never by its
    // path ([`super::anchor`]).
    let root = match Root::open(input) {
        Ok(r) => Arc::new(r),
        Err(e) => {
            let mut failed = found(input, Skip::NotRegular);
            (failed.named, failed.outcome) = (true, TreeOutcome::Failed(PathError::open(input, e)));
            return slots.push(Slot::Done(failed));
        }
    };
    walk_dir(input, &root, slots);
}

/// Adds to `slots` what the walk finds under the directory `input`, whose
/// handle is `root`: a directory or file on another file system is
/// refused, not walked.
fn walk_dir(input: &Path, root: &Arc<Root>, slots: &mut Vec<Slot>) {
    let below = |p: &Path| Some((Arc::clone(root), p.strip_prefix(input).ok()?.to_path_buf()));
    let mut entries = walkdir::WalkDir::new(input)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter();
    while let Some(e) = entries.next() {
        let e = match e {
            Ok(e) => e,
            Err(e) => {
                slots.push(Slot::Done(walk_failed(input, e)));
                continue;
            }
        };
        let ft = e.file_type();
        let path = e.path();
        if ft.is_dir() {
            if e.depth() > 0 && e.metadata().is_ok_and(|m| m.dev() != root.dev()) {
                slots.push(Slot::Done(other_file_system(path)));
                entries.skip_current_dir();
            } else if e.depth() > 0 && super::oci::is_layout(path) {
                // A layout is one image: none of its files is walked.
                slots.push(Slot::Layout(path.to_path_buf(), false, below(path)));
                entries.skip_current_dir();
            }
            continue;
        }
        if ft.is_symlink() {
            slots.push(Slot::Done(found(path, Skip::SymbolicLink)));
            continue;
        }
        if !ft.is_file() {
            slots.push(Slot::Done(found(path, Skip::NotRegular)));
            continue;
        }
        if e.file_name()
            .as_encoded_bytes()
            .starts_with(TEMPORARY.as_bytes())
        {
            slots.push(Slot::Done(found(path, Skip::Leftover)));
            continue;
        }
        match e.metadata() {
            Ok(m) if m.dev() != root.dev() => slots.push(Slot::Done(other_file_system(path))),
            Ok(m) => slots.push(Slot::File(Found {
                path: path.to_path_buf(),
                named: false,
                id: Some((m.dev(), m.ino())),
                rel: crate::companion::below(input, path),
                kind: None,
                beneath: below(path),
                accessed: m.accessed().ok(),
            })),
            Err(err) => slots.push(Slot::Done(TreeEntry {
                outcome: TreeOutcome::Failed(PathError::open(path, err.into())),
                dpkg_package: None,
                path: path.to_path_buf(),
                named: false,
            })),
        }
    }
}

/// The entry of a path found on another file system than the directory
/// walked (a mount point in the tree): refused, not walked.
fn other_file_system(path: &Path) -> TreeEntry {
    let why = "it is on another file system than the directory pruned (a mount point in the \
               tree): not walked, nothing in it touched";
    let name = crate::files::shown(path);
    TreeEntry {
        outcome: TreeOutcome::Failed(PathError::said(PathErrorKind::Refused, path, &name, why)),
        path: path.to_path_buf(),
        named: false,
        dpkg_package: None,
    }
}

/// The entry of a path the walk of `input` could not read.
fn walk_failed(input: &Path, e: walkdir::Error) -> TreeEntry {
    let path = e.path().unwrap_or(input).to_path_buf();
    // The system's error alone: walkdir's own words repeat the path, which
    // the message names already.
    let e = match e.io_error().and_then(std::io::Error::raw_os_error) {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => e.into(),
    };
    TreeEntry {
        outcome: TreeOutcome::Failed(PathError::open(&path, e)),
        dpkg_package: None,
        path,
        named: false,
    }
}

/// What to do with a file, by its first bytes.
enum Look {
    /// Prune it (its format, when [`readable`] read it).
    Prune(Option<object::FileKind>),
    /// Prune it, a thin archive with these member files.
    Thin(Vec<(u64, u64)>),
    /// Leave it.
    Skip(Skip),
    /// It cannot be read.
    Failed(PathError),
}

/// Reads the first bytes of `f` (all of it, for a thin archive) and says
/// what to do with it. A named file is always pruned. A file found is
/// read through its directory's handle, checked to be the file the walk
/// found ([`Root::anchor`]): one swapped for a link since is refused,
/// what the link leads to never opened.
fn look(f: &Found) -> Look {
    let opened = match &f.beneath {
        Some((root, rel)) => root
            .anchor(rel, f.id)
            .and_then(|a| Ok((a.open(false)?, Some(a))))
            .map_err(|e| e.error(&f.path)),
        None => crate::files::open_nonblocking(&f.path)
            .map(|(file, _)| (file, None))
            .map_err(|e| PathError::open(&f.path, e)),
    };
    let head = opened.and_then(|(file, a)| Ok((head(&f.path, &file)?, file, a)));
    let (head, file, anchor) = match head {
        Ok(h) => h,
        Err(_) if f.named => return Look::Prune(None),
        Err(e) => return Look::Failed(e),
    };
    if ar::is_thin(&head) {
        return Look::Thin(thin_members(&f.path, file, anchor.as_ref()));
    }
    if f.named {
        return Look::Prune(None);
    }
    match readable(&head) {
        Some(kind) => Look::Prune(kind),
        None => Look::Skip(Skip::NoKnownFormat),
    }
}

/// Up to [`HEAD`] bytes from the start of the file `path`, opened
/// (without blocking: a FIFO put there since the walk is no regular file).
fn head(path: &Path, file: &std::fs::File) -> Result<Vec<u8>, PathError> {
    let meta = file.metadata().map_err(|e| PathError::open(path, e))?;
    if !meta.is_file() {
        let e = std::io::Error::other("not a regular file");
        return Err(PathError::open(path, e));
    }
    let mut head = Vec::new();
    file.take(HEAD)
        .read_to_end(&mut head)
        .map_err(|e| PathError::open(path, e))?;
    Ok(head)
}

/// The device and inode of each member file of the thin archive `path`
/// (opened: `file`) that can be found (the archive's own prune reports
/// the others): in a walked tree, each reached from the tree's root
/// through `anchor`, the archive's place ([`Anchor::member`]), so that a
/// member outside the tree or behind a link is neither opened nor
/// followed.
///
/// [`Anchor::member`]: super::anchor::Anchor::member
fn thin_members(
    path: &Path,
    file: std::fs::File,
    anchor: Option<&super::anchor::Anchor>,
) -> Vec<(u64, u64)> {
    let input = file.metadata().and_then(|meta| Input::of_open(file, &meta));
    let Ok(input) = input else {
        return Vec::new();
    };
    let Ok(names) = super::archive::thin_members(input.bytes()) else {
        return Vec::new();
    };
    let mut seen = HashSet::new();
    names
        .iter()
        .filter_map(|m| match anchor {
            Some(a) => a.member(Path::new(m)).and_then(|m| m.metadata()).ok(),
            None => std::fs::metadata(ar::thin_member_path(path, m)).ok(),
        })
        .map(|m| (m.dev(), m.ino()))
        .filter(|id| seen.insert(*id))
        .collect()
}

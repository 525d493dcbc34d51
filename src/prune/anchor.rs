//! The files of a walked tree reached through directory handles, never
//! by their paths again ([`Root`], [`Anchor`]): what keeps `prune
//! --in-place DIR` inside `DIR` while other programs change the tree.
//!
//! The directory named is opened once, when its walk starts ([`Root`]).
//! Each file the walk found is reached from that handle: its directory
//! opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_XDEV)` (where the kernel has no `openat2`, one `openat`
//! with `O_NOFOLLOW` per component, each checked to be a directory on
//! the root's file system), the file itself opened in that directory
//! with `O_NOFOLLOW` and checked to be the device and inode the walk
//! saw ([`Anchor`]). The pruned file then takes its name by a rename in
//! that same directory, and a file removed is unlinked there, once its
//! name is checked to still be that inode. A symbolic link put anywhere
//! on the way since the walk, a file or directory replaced, a mount
//! point crossed: the file is refused by its name and nothing is
//! followed, so nothing outside the tree is read for writing, replaced
//! or removed.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::path::error::{PathError, PathErrorKind};

/// The directory a walk started on, opened once (`O_PATH`), and the file
/// system it is on: every file of the walk is reached from it.
pub(crate) struct Root {
    fd: OwnedFd,
    dev: u64,
}

/// Why a file of the tree was not reached: refused (in words: something
/// was put on its way since the walk), or an I/O error.
#[derive(Debug)]
pub(crate) enum Lost {
    Refused(String),
    Io(io::Error),
}

impl From<Errno> for Lost {
    fn from(e: Errno) -> Lost {
        match e {
            Errno::LOOP | Errno::NOTDIR | Errno::XDEV | Errno::MLINK => {
                Lost::Refused(MOVED.to_string())
            }
            e => Lost::Io(e.into()),
        }
    }
}

/// What a file is refused for whose path now holds a symbolic link, a
/// file that is no directory, or another file system.
const MOVED: &str = "a symbolic link, or another file system, is on its path now (put there since \
                     the walk): left alone, nothing it leads to touched";

/// What a file is refused for that is no longer the one the walk found.
const REPLACED: &str = "it was replaced since the walk (another file, or a symbolic link, has its \
                        name now): left alone, nothing it leads to touched";

impl Lost {
    /// The error of the file `path`: a refusal (exit 1 in a walked tree)
    /// or an error opening it.
    pub(crate) fn error(self, path: &Path) -> PathError {
        match self {
            Lost::Refused(why) => PathError::said(
                PathErrorKind::Refused,
                path,
                &crate::files::shown(path),
                why,
            ),
            Lost::Io(e) => PathError::open(path, e),
        }
    }
}

/// Whether `openat2` is to be tried (not in tests of the fallback).
fn with_openat2() -> bool {
    #[cfg(test)]
    if NO_OPENAT2.with(std::cell::Cell::get) {
        return false;
    }
    true
}

#[cfg(test)]
thread_local! {
    /// Set by a test to take the path of a kernel with no `openat2`.
    pub(crate) static NO_OPENAT2: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Root {
    /// Opens the directory `path` that a walk starts on.
    pub(crate) fn open(path: &Path) -> io::Result<Root> {
        let fd = rustix::fs::openat(
            CWD,
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let dev = rustix::fs::fstat(&fd)?.st_dev;
        Ok(Root { fd, dev })
    }

    /// A handle (`O_PATH`) on the directory `rel` below the root (the
    /// root itself when empty), reached with no symbolic link, no `..`
    /// and no other file system on the way.
    pub(crate) fn dir(&self, rel: &Path) -> Result<OwnedFd, Lost> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let rel = match rel.as_os_str().is_empty() {
            true => Path::new("."),
            false => rel,
        };
        if rel.components().any(|c| c == Component::ParentDir) || rel.is_absolute() {
            return Err(Lost::Refused(MOVED.to_string()));
        }
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_XDEV;
        let fd = match with_openat2() {
            true => rustix::fs::openat2(&self.fd, rel, flags, Mode::empty(), resolve),
            false => Err(Errno::NOSYS),
        };
        let fd = match fd {
            Ok(fd) => fd,
            // No `openat2` (an older kernel, or a sandbox that hides it):
            // one component at a time.
            Err(Errno::NOSYS | Errno::PERM) => self.dir_by_components(rel)?,
            Err(e) => return Err(e.into()),
        };
        self.same_device(&fd)?;
        Ok(fd)
    }

    /// [`Root::dir`] one `openat(O_NOFOLLOW)` per component.
    fn dir_by_components(&self, rel: &Path) -> Result<OwnedFd, Lost> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut fd = rustix::fs::openat(&self.fd, ".", flags, Mode::empty())?;
        for c in rel.components() {
            let name = match c {
                Component::Normal(n) => n,
                Component::CurDir => continue,
                _ => return Err(Lost::Refused(MOVED.to_string())),
            };
            let next = rustix::fs::openat(&fd, name, flags, Mode::empty())?;
            self.same_device(&next)?;
            fd = next;
        }
        Ok(fd)
    }

    /// Fails unless `fd` is a directory on the root's file system.
    fn same_device(&self, fd: &OwnedFd) -> Result<(), Lost> {
        let st = rustix::fs::fstat(fd)?;
        if st.st_dev != self.dev || FileType::from_raw_mode(st.st_mode) != FileType::Directory {
            return Err(Lost::Refused(MOVED.to_string()));
        }
        Ok(())
    }

    /// The device of the root's file system.
    pub(crate) fn dev(&self) -> u64 {
        self.dev
    }

    /// The regular file `rel` below the root, which the walk found with
    /// the device and inode `id` (`None`: whatever file is there now, a
    /// thin archive's member), reached through its directory's handle.
    pub(crate) fn anchor(
        self: &Arc<Root>,
        rel: &Path,
        id: Option<(u64, u64)>,
    ) -> Result<Anchor, Lost> {
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
            return Err(Lost::Refused(REPLACED.to_string()));
        };
        let dir = self.dir(parent)?;
        let mut a = Anchor {
            root: Arc::clone(self),
            dir: Arc::new(dir),
            rel: rel.to_path_buf(),
            name: name.to_os_string(),
            id: id.unwrap_or_default(),
        };
        let meta = a.metadata_any()?;
        if id.is_none() {
            a.id = (meta.dev(), meta.ino());
        }
        a.check(&meta)?;
        Ok(a)
    }
}

/// A regular file of a walked tree: the handle of its directory, its name
/// there, and the device and inode the walk found it with.
#[derive(Clone)]
pub(crate) struct Anchor {
    root: Arc<Root>,
    dir: Arc<OwnedFd>,
    /// Its path below the root.
    rel: PathBuf,
    name: OsString,
    id: (u64, u64),
}

impl std::fmt::Debug for Anchor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anchor")
            .field("rel", &self.rel)
            .field("id", &self.id)
            .finish()
    }
}

impl Anchor {
    /// The handle of the file's directory.
    pub(crate) fn dir(&self) -> Arc<OwnedFd> {
        Arc::clone(&self.dir)
    }

    /// The file's name in its directory.
    pub(crate) fn name(&self) -> &OsStr {
        &self.name
    }

    /// Whether `dir` is the file's directory (the same device and inode).
    pub(crate) fn is_dir(&self, dir: &impl AsFd) -> bool {
        let (Ok(a), Ok(b)) = (rustix::fs::fstat(dir), rustix::fs::fstat(&*self.dir)) else {
            return false;
        };
        (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
    }

    /// The metadata of what has the file's name now, not followed (the
    /// pruned file, once committed).
    pub(crate) fn metadata_any(&self) -> Result<std::fs::Metadata, Lost> {
        let fd = rustix::fs::openat(
            &*self.dir,
            &self.name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        File::from(fd).metadata().map_err(Lost::Io)
    }

    /// Fails unless `meta` is of the file the walk found: a regular file
    /// of its device and inode.
    fn check(&self, meta: &std::fs::Metadata) -> Result<(), Lost> {
        if !meta.is_file() || (meta.dev(), meta.ino()) != self.id || meta.dev() != self.root.dev {
            return Err(Lost::Refused(REPLACED.to_string()));
        }
        Ok(())
    }

    /// The metadata of the file as it is now, checked to be the one the
    /// walk found.
    pub(crate) fn metadata(&self) -> Result<std::fs::Metadata, Lost> {
        let meta = self.metadata_any()?;
        self.check(&meta)?;
        Ok(meta)
    }

    /// The file opened for reading (or for writing, `write`), without
    /// following a link and without blocking, checked to be the one the
    /// walk found.
    pub(crate) fn open(&self, write: bool) -> Result<File, Lost> {
        let access = match write {
            true => OFlags::WRONLY,
            false => OFlags::RDONLY | OFlags::NONBLOCK,
        };
        let flags = access | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&*self.dir, &self.name, flags, Mode::empty())?;
        let file = File::from(fd);
        self.check(&file.metadata().map_err(Lost::Io)?)?;
        Ok(file)
    }

    /// Before the file `path` is replaced or removed: fails unless its
    /// name is still the file read (`meta`: the same device, inode, size,
    /// and modification and change times), refused when another file or a
    /// link has the name.
    pub(crate) fn still(&self, path: &Path, meta: &std::fs::Metadata) -> Result<(), PathError> {
        // Its directory is still where the walk found it in the tree.
        let parent = self.rel.parent().unwrap_or(Path::new(""));
        let dir = self.root.dir(parent).map_err(|e| e.error(path))?;
        if !self.is_dir(&dir) {
            let why = "its directory was moved or replaced since the walk: left alone";
            return Err(Lost::Refused(why.to_string()).error(path));
        }
        let now = self.metadata().map_err(|e| e.error(path))?;
        let key = |m: &std::fs::Metadata| {
            (
                (m.dev(), m.ino(), m.len()),
                (m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()),
            )
        };
        if key(&now) == key(meta) {
            return Ok(());
        }
        let why = "it changed while it was pruned (another program wrote to it): left as it \
                   now is, not pruned";
        let name = crate::files::shown(path);
        Err(PathError::said(PathErrorKind::Write, path, &name, why))
    }

    /// Removes the file's name from its directory.
    pub(crate) fn unlink(&self) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(
            &*self.dir,
            &self.name,
            AtFlags::empty(),
        )?)
    }

    /// The file `member` (a thin archive's member, its path relative to
    /// this file's directory), reached from the root as this file is; one
    /// whose path leaves the tree is refused.
    pub(crate) fn member(&self, member: &Path) -> Result<Anchor, Lost> {
        let mut rel = PathBuf::new();
        let base = self.rel.parent().unwrap_or(Path::new(""));
        for c in base.components().chain(member.components()) {
            match c {
                Component::Normal(n) => rel.push(n),
                Component::CurDir => {}
                Component::ParentDir if rel.pop() => {}
                _ => {
                    return Err(Lost::Refused(
                        "a thin archive's member outside the directory pruned: left alone"
                            .to_string(),
                    ));
                }
            }
        }
        self.root.anchor(&rel, None)
    }
}

impl Root {
    /// Fails, refused, when the OCI image layout `rel` below the root has
    /// a symbolic link (or something on another file system, or of the
    /// wrong kind) where its `oci-layout`, `index.json`, `blobs`, a blob
    /// store (`blobs/sha256`) or a blob lies: pruned, it would be
    /// followed out of the tree. What is missing is left to the layout's
    /// own prune to report.
    pub(crate) fn check_layout(&self, rel: &Path) -> Result<(), Lost> {
        let dir = self.dir(rel)?;
        for name in ["oci-layout", "index.json"] {
            self.plain(&dir, Path::new(name), FileType::RegularFile)?;
        }
        self.plain(&dir, Path::new("blobs"), FileType::Directory)?;
        let blobs = match self.dir(&rel.join("blobs")) {
            Err(Lost::Io(e)) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            r => r?,
        };
        for alg in names(&blobs)? {
            let store = Path::new("blobs").join(&alg);
            self.plain(&blobs, &store, FileType::Directory)?;
            let fd = self.dir(&rel.join(&store))?;
            for blob in names(&fd)? {
                self.plain(&fd, &store.join(blob), FileType::RegularFile)?;
            }
        }
        Ok(())
    }

    /// Fails, refused, unless what has the name of `shown`'s last
    /// component in `dir` is missing, or is of the kind `want` on the
    /// root's file system (not followed).
    fn plain(&self, dir: &OwnedFd, shown: &Path, want: FileType) -> Result<(), Lost> {
        let name = shown.file_name().unwrap_or(shown.as_os_str());
        let st = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => return Ok(()),
            Err(e) => return Err(Lost::Io(e.into())),
        };
        let kind = FileType::from_raw_mode(st.st_mode);
        if kind == want && st.st_dev == self.dev {
            return Ok(());
        }
        let what = match (kind, st.st_dev == self.dev) {
            (FileType::Symlink, _) => "a symbolic link",
            (_, false) => "on another file system",
            (_, true) if want == FileType::Directory => "not a directory",
            _ => "not a regular file",
        };
        Err(Lost::Refused(format!(
            "an image layout whose {} is {what}: refused, nothing of it touched (its blobs and \
             index would be reached outside the directory pruned)",
            shown.display()
        )))
    }
}

/// An OCI image layout below a walk's root, reached through handles
/// (`O_PATH`, [`Root::dir`]: no symbolic link followed on the way): its
/// directory and its blob store (`blobs/sha256`, where it has one). In
/// place its new blobs and `index.json` are written, and its old blobs
/// removed, in these handles, never by path ([`Root::layout`]); in place
/// and in a dry run alike, its `index.json`, manifests, configs and
/// layers are read in them.
#[derive(Clone)]
pub(crate) struct LayoutAt {
    root: Arc<Root>,
    /// Its path below the root.
    rel: PathBuf,
    /// The layout's directory.
    pub(crate) dir: Arc<OwnedFd>,
    /// Its blob store; `None` when it has none.
    pub(crate) blobs: Option<Arc<OwnedFd>>,
}

/// What a layout is refused for whose directory or blob store is no
/// longer the one its handles hold.
const LAYOUT_MOVED: &str = "its directory or its blob store (blobs/sha256) was moved, replaced or                             swapped for a symbolic link while it was pruned: left alone, nothing                             it leads to touched";

impl Root {
    /// The handles of the image layout `rel` below the root.
    pub(crate) fn layout(self: &Arc<Root>, rel: &Path) -> Result<LayoutAt, Lost> {
        let dir = self.dir(rel)?;
        let blobs = match self.dir(&rel.join("blobs").join("sha256")) {
            Err(Lost::Io(e)) if e.kind() == io::ErrorKind::NotFound => None,
            r => Some(Arc::new(r?)),
        };
        Ok(LayoutAt {
            root: Arc::clone(self),
            rel: rel.to_path_buf(),
            dir: Arc::new(dir),
            blobs,
        })
    }
}

impl LayoutAt {
    /// The device of the tree's file system, which every file of the
    /// layout is on.
    pub(crate) fn dev(&self) -> u64 {
        self.root.dev
    }

    /// Before the layout is written: fails, refused, unless its directory
    /// and blob store, reached again from the root with no link followed,
    /// are still the directories its handles hold.
    pub(crate) fn still(&self) -> Result<(), Lost> {
        let same = |a: &OwnedFd, b: &OwnedFd| -> Result<bool, Lost> {
            let (a, b) = (rustix::fs::fstat(a)?, rustix::fs::fstat(b)?);
            Ok((a.st_dev, a.st_ino) == (b.st_dev, b.st_ino))
        };
        let moved = || Lost::Refused(LAYOUT_MOVED.to_string());
        let dir = self.root.dir(&self.rel).map_err(|_| moved())?;
        if !same(&dir, &self.dir)? {
            return Err(moved());
        }
        if let Some(blobs) = &self.blobs {
            let rel = self.rel.join("blobs").join("sha256");
            let now = self.root.dir(&rel).map_err(|_| moved())?;
            if !same(&now, blobs)? {
                return Err(moved());
            }
        }
        Ok(())
    }
}

/// The names in the directory `dir` (an `O_PATH` handle), sorted.
pub(crate) fn names(dir: &OwnedFd) -> Result<Vec<OsString>, Lost> {
    use std::os::unix::ffi::OsStrExt;
    let fd = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut out = Vec::new();
    for e in rustix::fs::Dir::read_from(&fd)? {
        let e = e?;
        let name = e.file_name().to_bytes();
        if name != b"." && name != b".." {
            out.push(OsStr::from_bytes(name).to_os_string());
        }
    }
    out.sort();
    Ok(out)
}

/// A handle (`O_PATH`) on the directory `rel` below the directory `base`,
/// reached with no symbolic link and no `..` on the way; unlike
/// [`Root::dir`], a mount point may be crossed (a `/var` mounted apart):
/// for reading a database of the tree's root, dpkg's.
pub(crate) fn dir_beneath(base: &impl AsFd, rel: &Path) -> Result<OwnedFd, Lost> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(Lost::Refused(MOVED.to_string()));
    }
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS;
    let fd = match with_openat2() {
        true => rustix::fs::openat2(base, rel, flags, Mode::empty(), resolve),
        false => Err(Errno::NOSYS),
    };
    match fd {
        Ok(fd) => Ok(fd),
        Err(Errno::NOSYS | Errno::PERM) => {
            let mut fd = rustix::fs::openat(base, ".", flags, Mode::empty())?;
            for c in rel.components() {
                fd = rustix::fs::openat(&fd, c.as_os_str(), flags, Mode::empty())?;
            }
            Ok(fd)
        }
        Err(e) => Err(e.into()),
    }
}

//! The copies a tree split prunes ([`super::tree`]): the input walked
//! once (symbolic links not followed), then copied per group as hard
//! links to its files, with its directories, links, modes, owners and
//! times.

use std::os::fd::OwnedFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, CWD, Mode, OFlags};

use crate::companion::Gpu;
use crate::prune::path::PathError;

/// One thing the walk found.
struct Entry {
    /// Its path below the input (empty for the input itself).
    rel: PathBuf,
    /// What it is.
    kind: Kind,
    /// Its metadata (not followed).
    meta: std::fs::Metadata,
}

/// What a found thing is.
enum Kind {
    Dir,
    File,
    /// A symbolic link, with what it holds.
    Link(PathBuf),
}

/// What the walk of a split's input found.
pub(super) struct Found {
    /// Everything copied, each directory before what it holds.
    entries: Vec<Entry>,
    /// Each per-GPU file, named as prune's tree walk names it in a copy
    /// (the copy's name, then the path below it), with its GPU.
    pub(super) companions: Vec<(String, Gpu)>,
    /// What no output holds (sockets, FIFOs, devices), said why.
    pub(super) left_out: Vec<String>,
}

/// Walks `input` (a directory when `is_dir`, else a file), in name
/// order; its name in every copy is `base`.
pub(super) fn walk(input: &Path, is_dir: bool, base: &str) -> Result<Found, PathError> {
    let mut found = Found {
        entries: Vec::new(),
        companions: Vec::new(),
        left_out: Vec::new(),
    };
    if !is_dir {
        let meta = std::fs::metadata(input).map_err(|e| PathError::open(input, e))?;
        found.entries.push(Entry {
            rel: PathBuf::new(),
            kind: Kind::File,
            meta,
        });
        return Ok(found);
    }
    let walker = walkdir::WalkDir::new(input)
        .follow_links(false)
        .follow_root_links(true)
        .sort_by_file_name();
    for e in walker {
        let e = e.map_err(|e| {
            let at = e.path().unwrap_or(input).to_path_buf();
            PathError::open(&at, e.into())
        })?;
        let path = e.path();
        let rel = path.strip_prefix(input).unwrap_or(path).to_path_buf();
        let meta = if rel.as_os_str().is_empty() {
            std::fs::metadata(path)
        } else {
            std::fs::symlink_metadata(path)
        }
        .map_err(|err| PathError::open(path, err))?;
        let t = meta.file_type();
        let kind = if t.is_dir() {
            Kind::Dir
        } else if t.is_file() {
            let name = format!("{base}/{}", rel.display());
            if let Some(c) = crate::companion::companion(&name) {
                found.companions.push((name, c.gpu));
            }
            Kind::File
        } else if t.is_symlink() {
            Kind::Link(std::fs::read_link(path).map_err(|err| PathError::open(path, err))?)
        } else {
            found.left_out.push(format!(
                "{}: not a regular file, directory or symbolic link: in no output",
                crate::files::shown(path)
            ));
            continue;
        };
        found.entries.push(Entry { rel, kind, meta });
    }
    Ok(found)
}

impl Found {
    /// Copies what was found in `input` to `root` (which must not exist):
    /// directories made writable by their owner until
    /// [`Found::restore_dirs`], files as hard links (copies where a link
    /// cannot be made), links as links. The input is reached through its
    /// directories' handles, each opened without following a link and
    /// checked to be the directory the walk found, and each file linked
    /// or opened by its name in its directory's handle, never followed:
    /// a directory swapped for a link since the walk is refused, and
    /// nothing outside the input is ever linked or read.
    pub(super) fn copy_to(&self, input: &Path, root: &Path) -> Result<(), PathError> {
        let mut dirs: std::collections::HashMap<&Path, OwnedFd> = Default::default();
        for e in &self.entries {
            let (from, to) = joined(input, root, &e.rel);
            let parent = e.rel.parent().and_then(|p| dirs.get(p));
            let name = e.rel.file_name();
            let at = match (parent, name) {
                (Some(fd), Some(n)) => Some((fd, n)),
                _ => None,
            };
            let made = match &e.kind {
                Kind::Dir => std::fs::create_dir(&to).and_then(|()| {
                    let mode = (e.meta.mode() & 0o7777) | 0o700;
                    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(mode))?;
                    let fd = open_dir(at, &from).map_err(|err| match err.raw_os_error() {
                        // A link (O_NOFOLLOW) or a file at the name now.
                        Some(code)
                            if code == rustix::io::Errno::NOTDIR.raw_os_error()
                                || code == rustix::io::Errno::LOOP.raw_os_error() =>
                        {
                            changed(&from)
                        }
                        _ => err,
                    })?;
                    same_file(&fd, &e.meta, &from)?;
                    Ok(Some(fd))
                }),
                Kind::File => link_or_copy(at, &from, &to, &e.meta).map(|()| None),
                Kind::Link(target) => std::os::unix::fs::symlink(target, &to)
                    .and_then(|()| owner(&to, &e.meta))
                    .map(|()| None),
            };
            if let Some(fd) = made.map_err(|err| PathError::write(&to, err))? {
                dirs.insert(&e.rel, fd);
            }
        }
        Ok(())
    }

    /// Gives the directories of the copy at `root` their input's modes,
    /// owners and times back, deepest first (a directory the prune
    /// emptied and removed is passed over).
    pub(super) fn restore_dirs(&self, root: &Path) -> Result<(), PathError> {
        for e in self.entries.iter().rev() {
            if !matches!(e.kind, Kind::Dir) {
                continue;
            }
            let to = if e.rel.as_os_str().is_empty() {
                root.to_path_buf()
            } else {
                root.join(&e.rel)
            };
            let done = match std::fs::symlink_metadata(&to) {
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                Err(err) => Err(err),
                Ok(_) => owner(&to, &e.meta)
                    .and_then(|()| {
                        let mode = e.meta.mode() & 0o7777;
                        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(mode))
                    })
                    .and_then(|()| times(&to, &e.meta)),
            };
            done.map_err(|err| PathError::write(&to, err))?;
        }
        Ok(())
    }
}

/// The paths of the found `rel` in the input and in the copy at `root`.
fn joined(input: &Path, root: &Path, rel: &Path) -> (PathBuf, PathBuf) {
    if rel.as_os_str().is_empty() {
        (input.to_path_buf(), root.to_path_buf())
    } else {
        (input.join(rel), root.join(rel))
    }
}

/// The directory `name` of the directory handle `at` (not followed), or
/// the input's own directory `path` (the one the user named).
fn open_dir(at: Option<(&OwnedFd, &std::ffi::OsStr)>, path: &Path) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    Ok(match at {
        Some((fd, name)) => rustix::fs::openat(fd, name, flags | OFlags::NOFOLLOW, Mode::empty())?,
        None => rustix::fs::open(path, flags, Mode::empty())?,
    })
}

/// Fails unless `fd` is the file the walk found as `meta` (at `path`).
fn same_file(fd: &OwnedFd, meta: &std::fs::Metadata, path: &Path) -> std::io::Result<()> {
    let st = rustix::fs::fstat(fd)?;
    if st.st_dev as u64 != meta.dev() || st.st_ino as u64 != meta.ino() {
        return Err(changed(path));
    }
    Ok(())
}

/// The error of the input's `path` no longer being what the walk found.
fn changed(path: &Path) -> std::io::Error {
    std::io::Error::other(format!(
        "'{}' changed while the split ran (another file or a link is at its name now)",
        crate::files::shown(path)
    ))
}

/// Gives the copy the input's file `from` (`name` in the directory
/// handle of `at`; the input itself when `at` is `None`) at `to`: a hard
/// link made without following a link at the name, or, where no link
/// can be made (another file system), a copy of the file opened the same
/// way; either checked to be the file the walk found as `meta`.
fn link_or_copy(
    at: Option<(&OwnedFd, &std::ffi::OsStr)>,
    from: &Path,
    to: &Path,
    meta: &std::fs::Metadata,
) -> std::io::Result<()> {
    let Some((dir, name)) = at else {
        return std::fs::hard_link(from, to)
            .or_else(|_| copy(std::fs::File::open(from)?, to, meta));
    };
    if rustix::fs::linkat(dir, name, CWD, to, AtFlags::empty()).is_ok() {
        let linked = std::fs::symlink_metadata(to)?;
        if linked.dev() == meta.dev() && linked.ino() == meta.ino() {
            return Ok(());
        }
        std::fs::remove_file(to)?;
        return Err(changed(from));
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::empty())?;
    same_file(&fd, meta, from)?;
    copy(std::fs::File::from(fd), to, meta)
}

/// Copies the open file `input` (whose metadata is `meta`) to the new
/// file `to`, with its mode, owner (where this process may give it) and
/// times.
fn copy(mut input: std::fs::File, to: &Path, meta: &std::fs::Metadata) -> std::io::Result<()> {
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    std::io::copy(&mut input, &mut out)?;
    owner(to, meta)?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
    times(to, meta)
}

/// Gives `to` (not followed) the owner and group of `meta`; one this
/// process may not give (not root) is left as made.
fn owner(to: &Path, meta: &std::fs::Metadata) -> std::io::Result<()> {
    match std::os::unix::fs::lchown(to, Some(meta.uid()), Some(meta.gid())) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Ok(()),
        r => r,
    }
}

/// Gives the file or directory `to` the access and modification times of
/// `meta`.
fn times(to: &Path, meta: &std::fs::Metadata) -> std::io::Result<()> {
    let mut t = std::fs::FileTimes::new();
    if let Ok(m) = meta.modified() {
        t = t.set_modified(m);
    }
    if let Ok(a) = meta.accessed() {
        t = t.set_accessed(a);
    }
    std::fs::File::open(to)?.set_times(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `e` and every error under it, each on its own.
    fn chain(e: &dyn std::error::Error) -> String {
        let mut s = e.to_string();
        let mut at = e.source();
        while let Some(x) = at {
            s = format!("{s}: {x}");
            at = x.source();
        }
        s
    }

    /// A tree `in/d/f` walked, then `in/d` swapped for a link to a
    /// directory outside holding its own `f`: the copy is refused at
    /// `d`, and nothing of the outside directory is linked into it.
    #[test]
    fn a_directory_swapped_for_a_link_after_the_walk_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let (input, outside) = (t.path().join("in"), t.path().join("outside"));
        for d in [input.join("d"), outside.clone()] {
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("f"), b"x").unwrap();
        }
        let found = walk(&input, true, "in").unwrap();
        // Unchanged, the copy is whole: f is a link to the input's f.
        found.copy_to(&input, &t.path().join("c1")).unwrap();
        let (a, b) = (input.join("d/f"), t.path().join("c1/d/f"));
        assert_eq!(a.metadata().unwrap().ino(), b.metadata().unwrap().ino());
        std::fs::rename(input.join("d"), t.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&outside, input.join("d")).unwrap();
        let e = chain(&found.copy_to(&input, &t.path().join("c2")).unwrap_err());
        assert!(e.contains("changed while the split ran"), "{e}");
        assert!(!t.path().join("c2/d/f").exists());
        // A file swapped for a link: refused too, no link to the outside.
        std::fs::remove_file(input.join("d")).unwrap();
        std::fs::rename(t.path().join("moved"), input.join("d")).unwrap();
        let found = walk(&input, true, "in").unwrap();
        std::fs::remove_file(input.join("d/f")).unwrap();
        std::os::unix::fs::symlink(outside.join("f"), input.join("d/f")).unwrap();
        let e = chain(&found.copy_to(&input, &t.path().join("c3")).unwrap_err());
        assert!(e.contains("changed while the split ran"), "{e}");
        assert!(t.path().join("c3/d/f").symlink_metadata().is_err());
    }
}

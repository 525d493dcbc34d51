//! The copies a tree split prunes ([`super::tree`]): the input walked
//! once (symbolic links not followed), then copied per group as hard
//! links to its files, with its directories, links, modes, owners and
//! times.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

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
    /// cannot be made), links as links.
    pub(super) fn copy_to(&self, input: &Path, root: &Path) -> Result<(), PathError> {
        for e in &self.entries {
            let (from, to) = joined(input, root, &e.rel);
            let made = match &e.kind {
                Kind::Dir => std::fs::create_dir(&to).and_then(|()| {
                    let mode = (e.meta.mode() & 0o7777) | 0o700;
                    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(mode))
                }),
                Kind::File => std::fs::hard_link(&from, &to).or_else(|_| copy(&from, &to, &e.meta)),
                Kind::Link(target) => {
                    std::os::unix::fs::symlink(target, &to).and_then(|()| owner(&to, &e.meta))
                }
            };
            made.map_err(|err| PathError::write(&to, err))?;
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

/// Copies the file `from` (whose metadata is `meta`) to `to`, with its
/// mode, owner (where this process may give it) and times.
fn copy(from: &Path, to: &Path, meta: &std::fs::Metadata) -> std::io::Result<()> {
    std::fs::copy(from, to)?;
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

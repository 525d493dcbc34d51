//! Which installed Debian package owns a file the run changed, as
//! `dpkg -S` would say: dpkg's database is never edited (its `md5sums`
//! then differ from the file, and `dpkg --verify` lists it until the
//! package is installed again), so the report names the package instead.
//!
//! The database is the one of the root the tree lies under: the nearest
//! directory, from each path named up to `/`, that holds
//! `var/lib/dpkg/info` (an installed system, a chroot, an unpacked image's
//! root). Each `info/*.list` names the files of one package, one absolute
//! path a line; a file the run changed is looked up by its path below that
//! root. On a merged-`/usr` root (`/lib` a link to `usr/lib`), a package
//! that lists `/lib/…` owns `/usr/lib/…` too. Diversions are not followed.
//! The lists are read only when the run changed a file, and at most once
//! per root.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::prune::anchor;

/// The directories a merged-`/usr` root makes links into `usr/`.
const MERGED: [&str; 6] = ["bin", "sbin", "lib", "lib32", "lib64", "libx32"];

/// The installed package that lists each of `files` (a file the run
/// changed, by its index in the run), where one does: `(index, NAME or
/// NAME:ARCH)`, sorted by index.
pub(super) fn owners<'a>(files: impl Iterator<Item = (usize, &'a Path)>) -> Vec<(usize, String)> {
    // The files, by the root they lie under and their path there; each
    // directory's root found once.
    let mut roots: HashMap<PathBuf, HashMap<Vec<u8>, Vec<usize>>> = HashMap::new();
    let mut dirs: HashMap<&Path, Option<(PathBuf, PathBuf)>> = HashMap::new();
    for (i, path) in files {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            continue;
        };
        let Some((root, below)) = dirs.entry(parent).or_insert_with(|| under_root(parent)) else {
            continue;
        };
        let mut key = b"/".to_vec();
        key.extend_from_slice(below.join(name).as_os_str().as_encoded_bytes());
        let root = root.clone();
        roots
            .entry(root)
            .or_default()
            .entry(key)
            .or_default()
            .push(i);
    }
    let mut found: HashMap<usize, String> = HashMap::new();
    for (root, files) in roots {
        // The database is read through handles from the root: a symbolic
        // link on the way to `info`, or a list that is one, is not
        // followed (it could lead out of the tree).
        let Some((root, info)) = database(&root) else {
            continue;
        };
        let merged: Vec<&str> = MERGED
            .iter()
            .copied()
            .filter(|d| {
                rustix::fs::readlinkat(&root, *d, Vec::new()).is_ok_and(|t| {
                    let t = Path::new(std::ffi::OsStr::from_bytes(t.as_bytes()));
                    t == Path::new("usr").join(d) || t == Path::new("/usr").join(d)
                })
            })
            .collect();
        for package in packages(&info) {
            // A list that cannot be read is passed over.
            let Some(list) = read_list(&info, &package) else {
                continue;
            };
            for line in list.split(|&b| b == b'\n') {
                let Some(idx) = files
                    .get(line)
                    .or_else(|| files.get(&merged_path(line, &merged)?))
                else {
                    continue;
                };
                for &i in idx {
                    found.entry(i).or_insert_with(|| package.clone());
                }
            }
        }
    }
    let mut out: Vec<(usize, String)> = found.into_iter().collect();
    out.sort();
    out
}

/// The root of a dpkg database that the directory `dir` lies under, and
/// `dir` below it, made absolute with its links resolved.
fn under_root(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let dir = std::fs::canonicalize(dir).ok()?;
    let root = dir
        .ancestors()
        .find(|a| a.join("var/lib/dpkg/info").is_dir())?;
    let below = dir.strip_prefix(root).ok()?.to_path_buf();
    Some((root.to_path_buf(), below))
}

/// `/usr/DIR/…` for a line `/DIR/…` of a package's list, where the root
/// links `DIR` to `usr/DIR`.
fn merged_path(line: &[u8], merged: &[&str]) -> Option<Vec<u8>> {
    let rest = line.strip_prefix(b"/")?;
    let dir = merged.iter().find(|d| {
        rest.strip_prefix(d.as_bytes())
            .is_some_and(|r| r.starts_with(b"/"))
    })?;
    let mut out = b"/usr/".to_vec();
    out.extend_from_slice(dir.as_bytes());
    out.extend_from_slice(&rest[dir.len()..]);
    Some(out)
}

/// The handles (`O_PATH`) of the dpkg root `root` and of its database
/// directory `var/lib/dpkg/info`, reached with no symbolic link followed.
fn database(root: &Path) -> Option<(OwnedFd, OwnedFd)> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let root = rustix::fs::openat(rustix::fs::CWD, root, flags, Mode::empty()).ok()?;
    let info = anchor::dir_beneath(&root, Path::new("var/lib/dpkg/info")).ok()?;
    Some((root, info))
}

/// The packages that have a list of files in the database directory
/// whose handle is `info`, sorted (`NAME` or `NAME:ARCH`, as the list file
/// is named).
fn packages(info: &OwnedFd) -> Vec<String> {
    let Ok(names) = anchor::names(info) else {
        return Vec::new();
    };
    names
        .into_iter()
        .filter_map(|n| n.into_string().ok())
        .filter_map(|n| Some(n.strip_suffix(".list")?.to_string()))
        .collect()
}

/// The bytes of `PACKAGE.list` in the database directory whose handle is
/// `info`, when it is a regular file there (a link is not followed).
fn read_list(info: &OwnedFd, package: &str) -> Option<Vec<u8>> {
    let name = format!("{package}.list");
    let (file, _) = crate::files::open_regular_at(info, std::ffi::OsStr::new(&name)).ok()?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut &file, &mut bytes).ok()?;
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merged_usr_line_names_the_usr_path() {
        let merged = ["lib", "bin"];
        assert_eq!(
            merged_path(b"/lib/x86_64-linux-gnu/libk.so", &merged).as_deref(),
            Some(&b"/usr/lib/x86_64-linux-gnu/libk.so"[..])
        );
        // Not `lib64`, which this root does not link, nor `/library`.
        assert_eq!(merged_path(b"/lib64/ld.so", &merged), None);
        assert_eq!(merged_path(b"/library/k", &merged), None);
        assert_eq!(merged_path(b"/usr/lib/k", &merged), None);
    }
}

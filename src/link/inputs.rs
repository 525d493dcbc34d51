//! The files a link reads device code from, as LLVM 22's
//! `clang-linker-wrapper` finds them (`getDeviceInput`, `searchLibrary`):
//! the positional inputs and the `-l` libraries, in command-line order,
//! each with whether `--whole-archive` is on for it.
//!
//! * A positional input that does not exist, or is a directory, is left
//!   to the host linker.
//! * `-l<name>` is looked up in the search directories in order (`-L`,
//!   `--library-path`, LLVM's `--library` alias of it, lld-link's
//!   `-libpath:`), trying `lib<name>.so` then `lib<name>.a` in each; the
//!   first file that exists wins, even a shared object (which holds no
//!   device code for the link). `-l:<file>` looks for `<file>` exactly; a
//!   name ending in `.lib` takes LLVM's exact-name branch too, which drops
//!   the name's first character. A directory starting with `=` is under
//!   `--sysroot`. `-Bstatic` and the like are the host linker's business:
//!   LLVM's wrapper does not look at them, and neither does this.
//! * Any lld-link `wholearchive` option turns `--whole-archive` on from
//!   the start.

use std::path::{Path, PathBuf};

use super::HostArg;

/// One file the link reads, or a library that is not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostFile {
    /// A file to read device code from; `whole`: under `--whole-archive`.
    File {
        /// Its path, as given or as found.
        path: String,
        /// `--whole-archive` is on for it.
        whole: bool,
    },
    /// `-l<name>` found in no search directory: LLVM's fatal
    /// `unable to find library -l<name>`, at this point of the inputs.
    Missing(String),
}

/// A search directory given in lld-link style (`-libpath:<dir>`,
/// `/libpath:<dir>`), which the host linker gets verbatim.
pub fn lld_link_libpath(arg: &str) -> Option<&str> {
    arg.strip_prefix("-libpath:")
        .or_else(|| arg.strip_prefix("/libpath:"))
}

/// Whether a verbatim argument is one of lld-link's `wholearchive`
/// options (`-wholearchive`, `/wholearchive:<lib>`).
fn is_lld_link_wholearchive(arg: &str) -> bool {
    arg.strip_prefix('-')
        .or_else(|| arg.strip_prefix('/'))
        .is_some_and(|a| a.starts_with("wholearchive"))
}

/// `--sysroot=<dir>` (the last one), if given.
fn sysroot(host: &[HostArg]) -> &str {
    host.iter()
        .rev()
        .find_map(|a| match a {
            HostArg::Verbatim(v) => v.strip_prefix("--sysroot="),
            _ => None,
        })
        .unwrap_or("")
}

/// `dir/name` (a directory starting with `=` is under `root`) if it
/// exists.
fn find_file(dir: &str, root: &str, name: &str) -> Option<PathBuf> {
    let path = match dir.strip_prefix('=') {
        Some(rest) => Path::new(root)
            .join(rest.trim_start_matches('/'))
            .join(name),
        None => Path::new(dir).join(name),
    };
    path.exists().then_some(path)
}

/// Looks `-l<name>` up as LLVM 22's wrapper does (see the module
/// documentation).
pub fn search_library(name: &str, root: &str, dirs: &[&str]) -> Option<PathBuf> {
    if name.starts_with(':') || name.ends_with(".lib") {
        let exact = name.get(1..).unwrap_or("");
        return dirs.iter().find_map(|d| find_file(d, root, exact));
    }
    dirs.iter().find_map(|d| {
        find_file(d, root, &format!("lib{name}.so"))
            .or_else(|| find_file(d, root, &format!("lib{name}.a")))
    })
}

/// The files the link reads device code from, in order (see the module
/// documentation).
pub fn host_files(host: &[HostArg]) -> Vec<HostFile> {
    let dirs: Vec<&str> = host
        .iter()
        .filter_map(|a| match a {
            HostArg::LibraryPath(d) => Some(d.as_str()),
            HostArg::Verbatim(v) => lld_link_libpath(v),
            _ => None,
        })
        .collect();
    let root = sysroot(host);
    let mut whole = host
        .iter()
        .any(|a| matches!(a, HostArg::Verbatim(v) if is_lld_link_wholearchive(v)));
    let mut files = Vec::new();
    for arg in host {
        match arg {
            HostArg::WholeArchive => whole = true,
            HostArg::NoWholeArchive => whole = false,
            HostArg::Input(f) => {
                let p = Path::new(f);
                if p.exists() && !p.is_dir() {
                    files.push(HostFile::File {
                        path: f.clone(),
                        whole,
                    });
                }
            }
            HostArg::Library(l) => files.push(match search_library(l, root, &dirs) {
                Some(p) => HostFile::File {
                    path: p.to_string_lossy().into_owned(),
                    whole,
                },
                None => HostFile::Missing(l.clone()),
            }),
            _ => {}
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"x").unwrap();
    }

    #[test]
    fn libraries_as_llvm_finds_them() {
        let t = tempfile::tempdir().unwrap();
        let (d1, d2) = (t.path().join("d1"), t.path().join("d2"));
        touch(&d1.join("libfoo.so"));
        touch(&d2.join("libfoo.a"));
        touch(&d2.join("libbar.a"));
        touch(&d2.join("oo.lib"));
        touch(&d2.join("exact.o"));
        touch(&t.path().join("sys/usr/lib/libsys.a"));
        let (s1, s2) = (d1.to_str().unwrap(), d2.to_str().unwrap());
        let dirs = [s1, s2];
        let root = t.path().join("sys");
        let root = root.to_str().unwrap();
        // The shared object of the first directory wins.
        assert_eq!(search_library("foo", "", &dirs), Some(d1.join("libfoo.so")));
        assert_eq!(search_library("bar", "", &dirs), Some(d2.join("libbar.a")));
        assert_eq!(
            search_library(":exact.o", "", &dirs),
            Some(d2.join("exact.o"))
        );
        // LLVM's quirk: a `.lib` name loses its first character.
        assert_eq!(
            search_library("foo.lib", "", &dirs),
            Some(d2.join("oo.lib"))
        );
        assert_eq!(search_library("nothere", "", &dirs), None);
        assert_eq!(
            search_library("sys", root, &["=/usr/lib"]),
            Some(Path::new(root).join("usr/lib/libsys.a"))
        );
    }

    #[test]
    fn files_in_order_with_whole_archive() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a.o");
        touch(&a);
        touch(&t.path().join("lib/libz.a"));
        let a = a.to_string_lossy().into_owned();
        let lib = t.path().join("lib").to_string_lossy().into_owned();
        let host = vec![
            HostArg::Input(a.clone()),
            HostArg::Input(t.path().to_string_lossy().into_owned()),
            HostArg::Input("not-there.o".into()),
            HostArg::Verbatim("-Bstatic".into()),
            HostArg::WholeArchive,
            HostArg::Verbatim(format!("-libpath:{lib}")),
            HostArg::Library("z".into()),
            HostArg::NoWholeArchive,
            HostArg::Library("missing".into()),
        ];
        let files = host_files(&host);
        assert_eq!(
            files,
            [
                HostFile::File {
                    path: a.clone(),
                    whole: false
                },
                HostFile::File {
                    path: format!("{lib}/libz.a"),
                    whole: true
                },
                HostFile::Missing("missing".into()),
            ]
        );
        // lld-link's /wholearchive turns it on from the start.
        let host = vec![
            HostArg::Input(a.clone()),
            HostArg::Verbatim("/wholearchive:x.lib".into()),
        ];
        assert_eq!(
            host_files(&host),
            [HostFile::File {
                path: a,
                whole: true
            }]
        );
    }
}

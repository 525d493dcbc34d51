//! Two builds compared file by file (the `diff` command's work): the
//! files of each side paired by their paths below the path given (wheels
//! and .debs by their names: [`source_keys`]), scanned (directories
//! walked, packages opened, one member at a time), and each pair compared
//! with [`compare`](super::compare). What comes back is data, in path
//! order, for the caller to print.

mod compared;
mod json;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::Side;
use crate::inputs::{
    Scanned, Source, over_allowance, par_map, scan_file, scan_file_kernels, with_threads,
};
use crate::kernels;
use crate::scan::{self, Report};

pub(crate) use compared::{Compared, FileStatus};
pub(crate) use json::{Document, summary};

/// How two sides are compared.
pub(crate) struct Options<'a> {
    /// How each file is scanned (`hash` set: images pair by contents).
    pub(crate) scan: &'a scan::Options,
    /// Files scanned at once.
    pub(crate) jobs: usize,
    /// The command's one allowance of kernels and symbols listed.
    pub(crate) allowance: &'a kernels::Allowance,
    /// Whether kernels are read and compared.
    pub(crate) kernels: bool,
    /// Whether kernel names are demangled.
    pub(crate) demangle: bool,
    /// Whether files on one side only that hold no device code are shown.
    pub(crate) all: bool,
}

/// Scans `sides` (the inputs below `roots[0]`, the old side, and
/// `roots[1]`, the new), pairs their units by path and compares each pair
/// (`done` as for [`par_map`], over both sides' inputs).
///
/// The inputs are paired first ([`source_keys`]), so that a pair whose two
/// files have the same bytes is scanned once. Inputs that are packages are
/// scanned one at a time (each reads its compressed data on every CPU and
/// spools its large members to files), the others `how.jobs` at a time;
/// what is kept of each is its report and kernels, never its bytes.
pub(crate) fn compare_paths(
    roots: [&PathBuf; 2],
    sides: [Vec<Source>; 2],
    how: &Options<'_>,
    done: &(dyn Fn(usize) + Sync),
) -> Vec<Compared> {
    let keys = source_keys([
        &sides[0]
            .iter()
            .map(|s| below(roots[0], s))
            .collect::<Vec<_>>(),
        &sides[1]
            .iter()
            .map(|s| below(roots[1], s))
            .collect::<Vec<_>>(),
    ]);
    let mut jobs: BTreeMap<&str, [Vec<usize>; 2]> = BTreeMap::new();
    for (side, ks) in keys.iter().enumerate() {
        for (i, k) in ks.iter().enumerate() {
            jobs.entry(k.as_str()).or_default()[side].push(i);
        }
    }
    let jobs: Vec<[Option<usize>; 2]> = jobs
        .into_values()
        .flat_map(|[o, n]| {
            let len = o.len().max(n.len());
            (0..len).map(move |j| [o.get(j).copied(), n.get(j).copied()])
        })
        .collect();
    let finished = AtomicUsize::new(0);
    let tick = |n: usize| done(finished.fetch_add(n, Ordering::Relaxed) + n);
    let (packages, files): (Vec<_>, Vec<_>) = jobs.into_iter().partition(|job| {
        job.iter()
            .zip(&sides)
            .any(|(i, srcs)| i.and_then(|i| srcs.get(i)).is_some_and(is_package))
    });
    let file_opts = with_threads(how.scan, how.jobs, files.len() * 2);
    let package_opts = with_threads(how.scan, how.jobs, 1);
    let run = |job: &[Option<usize>; 2], opts: &scan::Options| {
        let o = job[0].and_then(|i| Some((i, sides[0].get(i)?)));
        let n = job[1].and_then(|i| Some((i, sides[1].get(i)?)));
        let scan = |src: &Source| {
            let s = if how.kernels {
                scan_file_kernels(src, opts, how.allowance)
            } else {
                scan_file(src, opts, &mut scan::NoVisit)
            };
            tick(1);
            s
        };
        let once = match (o, n) {
            (Some((_, a)), Some((_, b))) => same_contents(a, b),
            _ => false,
        };
        let old = o.map(|(i, src)| (i, scan(src)));
        let new = match (n, &old) {
            (Some((i, src)), Some((_, done_old))) if once => {
                tick(1);
                let from = o.map(|(_, s)| s.name()).unwrap_or_default();
                Some((i, done_old.iter().map(|s| copied(s, &from, src)).collect()))
            }
            (Some((i, src)), _) => Some((i, scan(src))),
            (None, _) => None,
        };
        [old, new]
    };
    let mut results = par_map(&files, how.jobs, &|_| {}, |_, job| run(job, &file_opts));
    results.extend(packages.iter().map(|job| run(job, &package_opts)));
    over_allowance(
        results
            .iter_mut()
            .flatten()
            .flatten()
            .flat_map(|(_, s)| s.iter_mut()),
        how.allowance,
    );
    let mut keyed: [Vec<(String, Scanned)>; 2] = [Vec::new(), Vec::new()];
    for job in results {
        for (side, r) in job.into_iter().enumerate() {
            let Some((i, scanned)) = r else { continue };
            let (Some(src), Some(key)) = (sides[side].get(i), keys[side].get(i)) else {
                continue;
            };
            for mut s in scanned {
                if how.demangle {
                    s.demangle();
                }
                keyed[side].push((unit_key(key, src, &s.path), s));
            }
        }
    }
    let [old, new] = keyed;
    pair(old, new)
        .into_iter()
        .map(|(path, o, n)| compare(how, path, o, n))
        .collect()
}

/// Whether `src` is a package (read one at a time: see [`compare_paths`]).
/// Only regular files are looked at (standard input is read once, by its
/// scan).
fn is_package(src: &Source) -> bool {
    if src.error.is_some() || !std::fs::metadata(&src.path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    src.open().is_ok_and(|input| {
        let p = crate::package::detect(input.bytes()).is_some();
        input.close();
        p
    })
}

/// Whether the files of `a` and `b` hold the same bytes, so that what a
/// scan finds in one it finds in the other: the same file, or two regular
/// files of the same size read and compared (a megabyte at a time). A thin
/// archive is never the same: its members are looked up next to it.
fn same_contents(a: &Source, b: &Source) -> bool {
    use std::os::unix::fs::MetadataExt;
    let regular = |s: &Source| {
        (s.error.is_none() && s.path.as_os_str() != "-")
            .then(|| std::fs::metadata(&s.path).ok())
            .flatten()
            .filter(std::fs::Metadata::is_file)
    };
    let (Some(ma), Some(mb)) = (regular(a), regular(b)) else {
        return false;
    };
    if ma.len() != mb.len() {
        return false;
    }
    let (Ok(mut fa), Ok(mut fb)) = (std::fs::File::open(&a.path), std::fs::File::open(&b.path))
    else {
        return false;
    };
    let same_file = (ma.dev(), ma.ino()) == (mb.dev(), mb.ino());
    let mut bufs = [vec![0u8; 1 << 20], vec![0u8; 1 << 20]];
    let mut first = true;
    loop {
        let [ba, bb] = &mut bufs;
        let (Ok(n), Ok(m)) = (read_full(&mut fa, ba), read_full(&mut fb, bb)) else {
            return false;
        };
        if first && ba.get(..n).is_some_and(|b| b.starts_with(b"!<thin>\n")) {
            return false;
        }
        first = false;
        if same_file {
            return true;
        }
        if n != m || ba.get(..n) != bb.get(..m) {
            return false;
        }
        if n == 0 {
            return true;
        }
    }
}

/// Reads into all of `buf`, or up to the end of `r`: how many bytes.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while let Some(rest) = buf.get_mut(n..).filter(|r| !r.is_empty()) {
        match r.read(rest) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A unit of the input named `from`, as a scan of `to` (a file of the same
/// bytes) would have found it.
fn copied(s: &Scanned, from: &str, to: &Source) -> Scanned {
    let to_name = to.name();
    let (path, found) = match s.path.strip_prefix(from) {
        Some("") => (to_name, to.in_dir),
        Some(member) => (format!("{to_name}{member}"), true),
        None => (s.path.clone(), s.found),
    };
    Scanned {
        path,
        size: s.size,
        found,
        result: s.result.clone(),
        kernels: s.kernels.clone(),
    }
}

/// Compares the two sides of one path.
fn compare(
    how: &Options<'_>,
    path: String,
    old: Option<Scanned>,
    new: Option<Scanned>,
) -> Compared {
    let empty = Report::default();
    let unreadable = [&old, &new]
        .iter()
        .any(|s| s.as_ref().is_some_and(|s| s.result.is_err()));
    let (o, n) = (
        side(old.as_ref(), how.kernels),
        side(new.as_ref(), how.kernels),
    );
    let (status, d) = match (o, n) {
        _ if unreadable => (FileStatus::Error, None),
        (Some(o), Some(n)) => {
            let d = super::compare(o, n);
            let status = if d.differs() {
                FileStatus::Changed
            } else {
                FileStatus::Same
            };
            (status, Some(d))
        }
        (Some(o), None) => (
            FileStatus::Removed,
            Some(super::compare(o, Side::new(&empty))),
        ),
        (None, Some(n)) => (
            FileStatus::Added,
            Some(super::compare(Side::new(&empty), n)),
        ),
        (None, None) => (FileStatus::Same, None),
    };
    let device_code = d.as_ref().is_some_and(|d| d.old.images + d.new.images > 0);
    let named = [&old, &new]
        .iter()
        .any(|s| s.as_ref().is_some_and(|s| !s.found));
    let shown = match status {
        FileStatus::Error | FileStatus::Changed => true,
        FileStatus::Same => device_code || named,
        FileStatus::Added | FileStatus::Removed => device_code || named || how.all,
    };
    Compared {
        path,
        old,
        new,
        status,
        diff: d,
        shown,
    }
}

/// What `s` compares: its report (and its kernels, with `kernels`);
/// `None` when there is no such unit or it could not be read.
fn side(s: Option<&Scanned>, kernels: bool) -> Option<Side<'_>> {
    let s = s?;
    let r = s.result.as_ref().ok()?;
    Some(if kernels {
        Side::with_kernels(r, &s.kernels)
    } else {
        Side::new(r)
    })
}

/// The path of `src` below `root` (the path given for its side); `""`
/// for the path given itself.
fn below(root: &Path, src: &Source) -> String {
    src.path
        .strip_prefix(root)
        .map(|p| crate::files::shown(p).into_owned())
        .unwrap_or_default()
}

/// The key a unit is paired by: the key of its input (`key`: its path
/// below the root, a package's file name made its name: see
/// [`source_keys`]), then, inside a package, its member path. A file given
/// itself is `""` (so two files given pair whatever their names), and a
/// package given is its member paths.
fn unit_key(key: &str, src: &Source, unit: &str) -> String {
    let base = src.name();
    let member = unit.strip_prefix(base.as_str()).unwrap_or(unit);
    match member.strip_prefix("!/") {
        Some(m) if key.is_empty() => m.to_string(),
        _ => format!("{key}{member}"),
    }
}

/// The keys the inputs of each side pair by, from their paths below the
/// roots (`below`): the path itself, except that a wheel or a Debian
/// package pairs by its name, across versions ([`PackageName`]): a wheel
/// `dist/pkg-1.0-py3-none-any.whl` is `dist/pkg-*.whl`, a .deb
/// `pool/libfoo1_1.0-1_amd64.deb` is `pool/libfoo1_*.deb`. When a
/// directory holds several packages of one name (on either side), those of
/// that name pair by name and tags (`dist/pkg-*-cp312-cp312-win_amd64.whl`,
/// `pool/libfoo1_*_arm64.deb`), and when that is not enough either, by
/// their file names.
fn source_keys(below: [&[String]; 2]) -> [Vec<String>; 2] {
    let named: [Vec<Option<PackageName>>; 2] =
        below.map(|b| b.iter().map(|p| PackageName::of(p)).collect());
    // How many inputs of a side have each key, at each level.
    let count = |level: fn(&PackageName) -> String| {
        let mut n: BTreeMap<(usize, String), usize> = BTreeMap::new();
        for (side, names) in named.iter().enumerate() {
            for p in names.iter().flatten() {
                *n.entry((side, level(p))).or_default() += 1;
            }
        }
        n
    };
    let (by_name, by_tags) = (count(PackageName::by_name), count(PackageName::by_tags));
    let unique = |n: &BTreeMap<(usize, String), usize>, k: &str| {
        (0..2).all(|side| n.get(&(side, k.to_string())).is_none_or(|&c| c <= 1))
    };
    let mut out = [Vec::new(), Vec::new()];
    for (side, names) in named.iter().enumerate() {
        for (path, name) in below[side].iter().zip(names) {
            let key = match name {
                Some(p) if unique(&by_name, &p.by_name()) => p.by_name(),
                Some(p) if unique(&by_tags, &p.by_tags()) => p.by_tags(),
                _ => path.clone(),
            };
            out[side].push(key);
        }
    }
    out
}

/// What a wheel's or a Debian package's file name says (below a root).
#[derive(Debug, PartialEq, Eq)]
struct PackageName {
    /// The directory part of the path, with its final `/` (or empty).
    dir: String,
    /// The distribution or package name, normalized: a wheel's lowercased
    /// with each run of `-`, `_` and `.` made one `_` (PEP 503's rule,
    /// with the `_` PEP 427 puts in file names).
    name: String,
    /// What follows the version: a wheel's `python-abi-platform` tags, a
    /// .deb's architecture.
    tags: String,
    /// `whl` or `deb`.
    ext: &'static str,
}

impl PackageName {
    /// The name in `path` of a wheel (`{name}-{version}(-{build})?-{python}-
    /// {abi}-{platform}.whl`, PEP 427) or a .deb (`{name}_{version}_{arch}
    /// .deb`); `None` for other paths, or names of another shape.
    fn of(path: &str) -> Option<PackageName> {
        let (dir, file) = match path.rfind('/') {
            Some(i) => path.split_at(i + 1),
            None => ("", path),
        };
        let (name, tags, ext) = if let Some(stem) = file.strip_suffix(".whl") {
            let parts: Vec<&str> = stem.split('-').collect();
            if !(5..=6).contains(&parts.len()) || parts.iter().any(|p| p.is_empty()) {
                return None;
            }
            let mut name = String::new();
            let mut sep = false;
            for c in parts[0].chars() {
                if matches!(c, '-' | '_' | '.') {
                    sep = true;
                } else {
                    if sep && !name.is_empty() {
                        name.push('_');
                    }
                    sep = false;
                    name.extend(c.to_lowercase());
                }
            }
            (name, parts[parts.len() - 3..].join("-"), "whl")
        } else if let Some(stem) = file.strip_suffix(".deb") {
            let parts: Vec<&str> = stem.split('_').collect();
            let [name, version, arch] = parts[..] else {
                return None;
            };
            if name.is_empty() || version.is_empty() || arch.is_empty() {
                return None;
            }
            (name.to_string(), arch.to_string(), "deb")
        } else {
            return None;
        };
        (!name.is_empty()).then(|| PackageName {
            dir: dir.to_string(),
            name,
            tags,
            ext,
        })
    }

    /// Its key by name: `dir/pkg-*.whl`, `dir/libfoo1_*.deb`.
    fn by_name(&self) -> String {
        let sep = if self.ext == "whl" { '-' } else { '_' };
        format!("{}{}{sep}*.{}", self.dir, self.name, self.ext)
    }

    /// Its key by name and tags: `dir/pkg-*-py3-none-any.whl`,
    /// `dir/libfoo1_*_amd64.deb`.
    fn by_tags(&self) -> String {
        let sep = if self.ext == "whl" { '-' } else { '_' };
        format!(
            "{}{}{sep}*{sep}{}.{}",
            self.dir, self.name, self.tags, self.ext
        )
    }
}

/// The units of both sides paired by key, in key order (units of the same
/// key on one side, such as a package's duplicate member names, pair in
/// order).
fn pair(
    old: Vec<(String, Scanned)>,
    new: Vec<(String, Scanned)>,
) -> Vec<(String, Option<Scanned>, Option<Scanned>)> {
    let mut by_key: BTreeMap<String, [Vec<Scanned>; 2]> = BTreeMap::new();
    for (side, units) in [(0, old), (1, new)] {
        for (k, s) in units {
            by_key.entry(k).or_default()[side].push(s);
        }
    }
    let mut out = Vec::new();
    for (k, [o, n]) in by_key {
        let (mut o, mut n) = (o.into_iter(), n.into_iter());
        loop {
            match (o.next(), n.next()) {
                (None, None) => break,
                (a, b) => out.push((k.clone(), a, b)),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;

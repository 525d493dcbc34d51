//! Two builds compared file by file (the `diff` command's work): the
//! files of each side scanned (directories walked, packages opened),
//! paired by their paths below the path given, and each pair compared
//! with [`compare`](super::compare). What comes back is data, in path
//! order, for the caller to print.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{FileDiff, Side};
use crate::inputs::{
    Scanned, Source, over_allowance, par_map, scan_file, scan_file_kernels, with_threads,
};
use crate::kernels;
use crate::scan::{self, Report};

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
pub(crate) fn compare_paths(
    roots: [&PathBuf; 2],
    sides: [Vec<Source>; 2],
    how: &Options<'_>,
    done: &(dyn Fn(usize) + Sync),
) -> Vec<Compared> {
    let items: Vec<(usize, Source)> = sides
        .into_iter()
        .enumerate()
        .flat_map(|(side, files)| files.into_iter().map(move |s| (side, s)))
        .collect();
    let sopts = with_threads(how.scan, how.jobs, items.len());
    let mut results = par_map(&items, how.jobs, done, |_, (_, src)| {
        if how.kernels {
            scan_file_kernels(src, &sopts, how.allowance)
        } else {
            scan_file(src, &sopts, &mut scan::NoVisit)
        }
    });
    over_allowance(results.iter_mut().flatten(), how.allowance);
    let mut keyed: [Vec<(String, Scanned)>; 2] = [Vec::new(), Vec::new()];
    for ((side, src), scanned) in items.iter().zip(results) {
        for mut s in scanned {
            if how.demangle {
                s.demangle();
            }
            keyed[*side].push((relative_key(roots[*side], src, &s.path), s));
        }
    }
    let [old, new] = keyed;
    pair(old, new)
        .into_iter()
        .map(|(path, o, n)| compare(how, path, o, n))
        .collect()
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FileStatus {
    Same,
    Changed,
    Added,
    Removed,
    /// A side could not be read: nothing is compared.
    Error,
}

/// One file, paired (or not) across the sides, and compared.
pub(crate) struct Compared {
    /// Its path below the roots given (`""`: the files given themselves).
    pub(crate) path: String,
    pub(crate) old: Option<Scanned>,
    pub(crate) new: Option<Scanned>,
    pub(crate) status: FileStatus,
    pub(crate) diff: Option<FileDiff>,
    /// Whether it is reported.
    pub(crate) shown: bool,
}

impl Compared {
    /// The name the table shows.
    pub(crate) fn name(&self) -> String {
        match (&self.old, &self.new) {
            _ if !self.path.is_empty() => self.path.clone(),
            (Some(o), Some(n)) => format!("{} -> {}", o.path, n.path),
            (Some(s), None) | (None, Some(s)) => s.path.clone(),
            (None, None) => String::new(),
        }
    }

    /// Whether it is shown and differs.
    pub(crate) fn differs(&self) -> bool {
        self.shown && !matches!(self.status, FileStatus::Same | FileStatus::Error)
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

/// The path a unit is paired by: its path below `root` (the path given
/// for its side), then, inside a package, its member path. A file given
/// itself is `""` (so two files given pair whatever their names), and a
/// package given is its member paths.
fn relative_key(root: &Path, src: &Source, unit: &str) -> String {
    let base = src.name();
    let member = unit.strip_prefix(base.as_str()).unwrap_or(unit);
    let below = src
        .path
        .strip_prefix(root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    match member.strip_prefix("!/") {
        Some(m) if below.is_empty() => m.to_string(),
        _ => format!("{below}{member}"),
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

/// How many files were compared, and what happened to them.
#[derive(Serialize, Default)]
pub(crate) struct Summary {
    pub(crate) files: usize,
    pub(crate) same: usize,
    pub(crate) changed: usize,
    pub(crate) added: usize,
    pub(crate) removed: usize,
    pub(crate) errors: usize,
}

/// The files shown, counted by what happened to them.
pub(crate) fn summary(compared: &[Compared]) -> Summary {
    let mut s = Summary::default();
    for c in compared.iter().filter(|c| c.shown) {
        s.files += 1;
        *match c.status {
            FileStatus::Same => &mut s.same,
            FileStatus::Changed => &mut s.changed,
            FileStatus::Added => &mut s.added,
            FileStatus::Removed => &mut s.removed,
            FileStatus::Error => &mut s.errors,
        } += 1;
    }
    s
}

/// The schema [`Document`] follows (docs/diff.md).
pub(crate) const SCHEMA: &str = "offload-kit/diff/1";

/// The `diff --json` document (schema [`SCHEMA`]): the roots, the files
/// shown and a summary. Serializing it with `serde_json::to_writer_pretty`
/// gives exactly what `offload-kit diff --json` prints.
#[derive(Serialize)]
pub(crate) struct Document<'a> {
    schema: &'static str,
    old: String,
    new: String,
    kernels: bool,
    files: Vec<DocumentFile<'a>>,
    summary: Summary,
}

/// One file of a [`Document`].
#[derive(Serialize)]
struct DocumentFile<'a> {
    path: &'a str,
    old_path: Option<&'a str>,
    new_path: Option<&'a str>,
    status: FileStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(flatten)]
    diff: Option<&'a FileDiff>,
}

impl<'a> Document<'a> {
    /// The document of `compared`, the files below `old` and `new`
    /// (`kernels`: whether kernels were compared).
    pub(crate) fn new(
        old: &Path,
        new: &Path,
        kernels: bool,
        compared: &'a [Compared],
    ) -> Document<'a> {
        let files = compared
            .iter()
            .filter(|c| c.shown)
            .map(|c| DocumentFile {
                path: &c.path,
                old_path: c.old.as_ref().map(|s| s.path.as_str()),
                new_path: c.new.as_ref().map(|s| s.path.as_str()),
                status: c.status,
                error: error_of(c),
                diff: c.diff.as_ref(),
            })
            .collect();
        Document {
            schema: SCHEMA,
            old: old.to_string_lossy().into_owned(),
            new: new.to_string_lossy().into_owned(),
            kernels,
            files,
            summary: summary(compared),
        }
    }
}

/// Why a file could not be compared: each side's error, naming its path.
fn error_of(c: &Compared) -> Option<String> {
    let errors: Vec<String> = [&c.old, &c.new]
        .iter()
        .filter_map(|s| {
            let s = s.as_ref()?;
            let e = s.result.as_ref().err()?;
            Some(format!("'{}': {e}", s.path))
        })
        .collect();
    (!errors.is_empty()).then(|| errors.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(path: &str, in_dir: bool) -> Source {
        Source {
            path: PathBuf::from(path),
            error: None,
            in_dir,
        }
    }

    fn unit(path: &str) -> Scanned {
        Scanned {
            path: path.into(),
            size: 0,
            found: true,
            result: Ok(Report::default()),
            kernels: Vec::new(),
        }
    }

    #[test]
    fn keys_are_paths_below_the_roots() {
        let file = source("build/v1.so", false);
        assert_eq!(
            relative_key(Path::new("build/v1.so"), &file, "build/v1.so"),
            ""
        );
        let wheel = source("old.whl", false);
        assert_eq!(
            relative_key(Path::new("old.whl"), &wheel, "old.whl!/torch/lib/a.so"),
            "torch/lib/a.so"
        );
        let walked = source("old/lib/a.so", true);
        assert_eq!(
            relative_key(Path::new("old"), &walked, "old/lib/a.so"),
            "lib/a.so"
        );
        assert_eq!(
            relative_key(Path::new("old/"), &walked, "old/lib/a.so"),
            "lib/a.so"
        );
        // A directory named like a package member is still a directory.
        let odd = source("old/x!/a.so", true);
        assert_eq!(
            relative_key(Path::new("old"), &odd, "old/x!/a.so"),
            "x!/a.so"
        );
        let in_dir_pkg = source("old/p.whl", true);
        assert_eq!(
            relative_key(Path::new("old"), &in_dir_pkg, "old/p.whl!/lib/b.so"),
            "p.whl!/lib/b.so"
        );
    }

    #[test]
    fn units_pair_by_key_in_order() {
        let old = vec![
            ("a".to_string(), unit("o/a")),
            ("b".to_string(), unit("o/b")),
            ("d".to_string(), unit("o/d1")),
            ("d".to_string(), unit("o/d2")),
        ];
        let new = vec![
            ("c".to_string(), unit("n/c")),
            ("b".to_string(), unit("n/b")),
            ("d".to_string(), unit("n/d1")),
        ];
        let paired: Vec<(String, Option<String>, Option<String>)> = pair(old, new)
            .into_iter()
            .map(|(k, o, n)| (k, o.map(|s| s.path), n.map(|s| s.path)))
            .collect();
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            paired,
            [
                ("a".into(), s("o/a"), None),
                ("b".into(), s("o/b"), s("n/b")),
                ("c".into(), None, s("n/c")),
                ("d".into(), s("o/d1"), s("n/d1")),
                ("d".into(), s("o/d2"), None),
            ]
        );
    }

    #[test]
    fn the_json_document_shows_the_files_shown_and_why_they_failed() {
        let mut gone = unit("n/b");
        gone.result = Err("cannot open".into());
        let compared = [
            Compared {
                path: "a".into(),
                old: Some(unit("o/a")),
                new: Some(unit("n/a")),
                status: FileStatus::Same,
                diff: None,
                shown: true,
            },
            Compared {
                path: "b".into(),
                old: Some(unit("o/b")),
                new: Some(gone),
                status: FileStatus::Error,
                diff: None,
                shown: true,
            },
            Compared {
                path: "c".into(),
                old: None,
                new: Some(unit("n/c")),
                status: FileStatus::Added,
                diff: None,
                shown: false,
            },
        ];
        let doc = Document::new(Path::new("o"), Path::new("n"), false, &compared);
        let text = serde_json::to_string(&doc).unwrap();
        assert!(
            text.starts_with(r#"{"schema":"offload-kit/diff/1","old":"o","new":"n","kernels":false,"files":[{"path":"a","old_path":"o/a","new_path":"n/a","status":"same"}"#),
            "{text}"
        );
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["files"].as_array().unwrap().len(), 2);
        assert_eq!(value["files"][1]["error"], "'n/b': cannot open");
        assert_eq!(value["summary"]["files"], 2);
        assert_eq!(value["summary"]["errors"], 1);
    }
}

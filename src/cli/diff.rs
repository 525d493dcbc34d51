//! `offload-kit diff OLD NEW`: the device code of two builds compared,
//! file by file, as a table or JSON (schema [`SCHEMA`], documented in
//! docs/diff.md). The files are paired here; what differs between two
//! files is the library's [`crate::diff::compare`].

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use super::io::{print_line, printable};
use super::scan::{
    Common, Scanned, Source, demangle, exit, exit_code_after_inputs, kernel_errors, over_allowance,
    par_map, scan_file, scan_file_kernels, with_threads,
};
use crate::diff::{self, FileDiff, Side};
use crate::scan::{self, HashAlgo, Report};

mod table;

/// The `schema` of the `--json` document.
pub const SCHEMA: &str = "offload-kit/diff/1";

/// Compare the device code of two builds: files, directories or packages.
#[derive(clap::Args)]
#[command(
    mut_arg("paths", |a| {
        let help = "The old and the new build: two files (compared with each other whatever \
            their names), two directories or two packages (wheels, .conda and other zip \
            archives, tar archives, .deb packages), whose files are paired by their paths \
            below the path given. `-` is standard input.";
        a.num_args(2).action(clap::ArgAction::Set).value_names(["OLD", "NEW"]).help(help).long_help(help)
    }),
    after_help = "Images are compared per target key (offload kind, triple, target ID, image \
kind) by their content hashes (xxh3-128): images of the same contents pair first, those left \
pair in scan order (changed), the rest are added or removed. With --kernels, the kernels of \
each target key on both sides are compared by name: added, removed, or changed when a \
resource figure (registers, LDS, scratch, ...) differs. Files found in directories or \
packages are reported only when they hold device code (--all: also those on one side only \
 without device code). The matching \
rules and the --json schema (\"offload-kit/diff/1\") are documented in docs/diff.md.\n\n\
Examples:\n  \
offload-kit diff build-old/libfoo.so build-new/libfoo.so\n  \
offload-kit diff --kernels --demangle old.whl new.whl\n  \
offload-kit diff --json old/ new/ > diff.json\n\n\
Exit codes, as diff(1): 0 no differences in device code, 1 differences, 2 an input could \
not be read, held damaged data (--allow-corrupt: compared as far as it could be read) or \
went past a limit."
)]
pub struct DiffOpts {
    #[command(flatten)]
    common: Common,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also compare the kernels of each target: added, removed, and those
    /// whose registers or memory changed (AMDGPU code objects, CUDA
    /// cubins, PTX, CPU images).
    #[arg(long)]
    kernels: bool,
    /// Show C++ kernel names demangled (with --kernels).
    #[arg(long, requires = "kernels")]
    demangle: bool,
    /// Also report the files found on one side only that hold no device
    /// code (by default only those with device code are).
    #[arg(long)]
    all: bool,
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum FileStatus {
    Same,
    Changed,
    Added,
    Removed,
    /// A side could not be read: nothing is compared.
    Error,
}

/// One file, paired (or not) across the sides, and compared.
struct Compared {
    /// Its path below the roots given (`""`: the files given themselves).
    path: String,
    old: Option<Scanned>,
    new: Option<Scanned>,
    status: FileStatus,
    diff: Option<FileDiff>,
    /// Whether it is reported.
    shown: bool,
}

impl Compared {
    /// The name the table shows.
    fn name(&self) -> String {
        match (&self.old, &self.new) {
            _ if !self.path.is_empty() => self.path.clone(),
            (Some(o), Some(n)) => format!("{} -> {}", o.path, n.path),
            (Some(s), None) | (None, Some(s)) => s.path.clone(),
            (None, None) => String::new(),
        }
    }

    fn differs(&self) -> bool {
        self.shown && !matches!(self.status, FileStatus::Same | FileStatus::Error)
    }
}

impl DiffOpts {
    pub fn run(self) -> Result<std::process::ExitCode> {
        let mut opts = self.common.options();
        opts.hash = Some(HashAlgo::Xxh3_128);
        let roots: Vec<PathBuf> = self.common.paths().to_vec();
        let [old_root, new_root] = &roots[..] else {
            anyhow::bail!("diff compares two paths (OLD NEW), not {}", roots.len());
        };
        if old_root.as_os_str() == "-" && new_root.as_os_str() == "-" {
            anyhow::bail!("'-' (standard input) is given for both sides");
        }
        let mut items = Vec::new();
        for (side, root) in [(0, old_root), (1, new_root)] {
            items.extend(self.common.files_of(root)?.into_iter().map(|s| (side, s)));
        }
        let jobs = self.common.jobs();
        let sopts = with_threads(&opts, jobs, items.len());
        let kernels = self.kernels;
        let allowance = self.common.allowance();
        let mut results = par_map(&items, jobs, |_, (_, src)| {
            if kernels {
                scan_file_kernels(src, &sopts, &allowance)
            } else {
                scan_file(src, &sopts, &mut scan::NoVisit)
            }
        });
        over_allowance(results.iter_mut().flatten(), &allowance);
        let mut sides: [Vec<(String, Scanned)>; 2] = [Vec::new(), Vec::new()];
        for ((side, src), scanned) in items.iter().zip(results) {
            let root = if *side == 0 { old_root } else { new_root };
            for mut s in scanned {
                if self.demangle {
                    demangle(&mut s);
                }
                sides[*side].push((relative_key(root, src, &s.path), s));
            }
        }
        let [old, new] = sides;
        let compared: Vec<Compared> = pair(old, new)
            .into_iter()
            .map(|(path, o, n)| self.compare(path, o, n))
            .collect();
        let mut out = super::io::Report::stdout();
        if self.json {
            write_json(&mut out, old_root, new_root, self.kernels, &compared)?;
        } else {
            table::print(&mut out, &compared)?;
        }
        out.flush()?;
        Ok(self.exit_code(&compared).into())
    }

    /// Compares the two sides of one path.
    fn compare(&self, path: String, old: Option<Scanned>, new: Option<Scanned>) -> Compared {
        let empty = Report::default();
        let unreadable = [&old, &new]
            .iter()
            .any(|s| s.as_ref().is_some_and(|s| s.result.is_err()));
        let (o, n) = (
            side(old.as_ref(), self.kernels),
            side(new.as_ref(), self.kernels),
        );
        let (status, d) = match (o, n) {
            _ if unreadable => (FileStatus::Error, None),
            (Some(o), Some(n)) => {
                let d = diff::compare(o, n);
                let status = if d.differs() {
                    FileStatus::Changed
                } else {
                    FileStatus::Same
                };
                (status, Some(d))
            }
            (Some(o), None) => (
                FileStatus::Removed,
                Some(diff::compare(o, Side::new(&empty))),
            ),
            (None, Some(n)) => (FileStatus::Added, Some(diff::compare(Side::new(&empty), n))),
            (None, None) => (FileStatus::Same, None),
        };
        let device_code = d.as_ref().is_some_and(|d| d.old.images + d.new.images > 0);
        let named = [&old, &new]
            .iter()
            .any(|s| s.as_ref().is_some_and(|s| !s.found));
        let shown = match status {
            FileStatus::Error | FileStatus::Changed => true,
            FileStatus::Same => device_code || named,
            FileStatus::Added | FileStatus::Removed => device_code || named || self.all,
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

    /// 2 when an input could not be read, or held damaged data (unless
    /// --allow-corrupt); else 1 when a file differs; else 0. Prints a line
    /// on standard error for each input error.
    fn exit_code(&self, compared: &[Compared]) -> u8 {
        let scanned: Vec<&Scanned> = compared
            .iter()
            .flat_map(|c| [c.old.as_ref(), c.new.as_ref()])
            .flatten()
            .collect();
        let damaged = report_damage(&scanned, self.common.allow_corrupt);
        let owned: Vec<Scanned> = scanned.iter().filter_map(|s| unreadable(s)).collect();
        let mut code = exit_code_after_inputs(&owned, self.common.allow_corrupt);
        if self.kernels && kernel_errors(scanned.iter().copied()) && !self.common.allow_corrupt {
            code = exit::INPUT_ERROR;
        }
        if damaged && !self.common.allow_corrupt {
            code = exit::INPUT_ERROR;
        }
        if code == exit::OK && compared.iter().any(Compared::differs) {
            code = exit::FAILED;
        }
        code
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

/// A copy of `s` for [`exit_code_after_inputs`] when it could not be read
/// (what that reports), else `None`.
fn unreadable(s: &Scanned) -> Option<Scanned> {
    let e = s.result.as_ref().err()?;
    Some(Scanned {
        path: s.path.clone(),
        size: s.size,
        found: s.found,
        result: Err(e.clone()),
        kernels: Vec::new(),
    })
}

/// Prints a line on standard error for each damaged thing an input holds
/// (an error, or with `allow_corrupt` a warning); whether there was one.
fn report_damage(scanned: &[&Scanned], allow_corrupt: bool) -> bool {
    let mut any = false;
    for s in scanned {
        for p in s.result.iter().flat_map(|r| &r.problems) {
            if p.kind == scan::ProblemKind::Damage {
                let line = if allow_corrupt {
                    format!("'{}': warning: {}", s.path, p.message)
                } else {
                    format!("error: '{}': {}", s.path, p.message)
                };
                eprintln!("{}", printable(&line));
                any = true;
            }
        }
        if let Ok(r) = &s.result
            && r.stopped.is_some()
        {
            any = true;
        }
    }
    any
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

/// One file of the `--json` document.
#[derive(Serialize)]
struct JsonFile<'a> {
    path: &'a str,
    old_path: Option<&'a str>,
    new_path: Option<&'a str>,
    status: FileStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(flatten)]
    diff: Option<&'a FileDiff>,
}

/// How many files were compared, and what happened to them.
#[derive(Serialize, Default)]
struct Summary {
    files: usize,
    same: usize,
    changed: usize,
    added: usize,
    removed: usize,
    errors: usize,
}

fn summary(compared: &[Compared]) -> Summary {
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

fn write_json(
    out: &mut impl Write,
    old: &Path,
    new: &Path,
    kernels: bool,
    compared: &[Compared],
) -> Result<()> {
    #[derive(Serialize)]
    struct Doc<'a> {
        schema: &'static str,
        old: String,
        new: String,
        kernels: bool,
        files: Vec<JsonFile<'a>>,
        summary: Summary,
    }
    let files = compared
        .iter()
        .filter(|c| c.shown)
        .map(|c| JsonFile {
            path: &c.path,
            old_path: c.old.as_ref().map(|s| s.path.as_str()),
            new_path: c.new.as_ref().map(|s| s.path.as_str()),
            status: c.status,
            error: error_of(c),
            diff: c.diff.as_ref(),
        })
        .collect();
    let doc = Doc {
        schema: SCHEMA,
        old: old.to_string_lossy().into_owned(),
        new: new.to_string_lossy().into_owned(),
        kernels,
        files,
        summary: summary(compared),
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
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
mod tests;

//! `check`'s gate that every required GPU still has its per-GPU files
//! (issue #59): in a tree or a package, a library that installs files per
//! GPU ([`super::TABLE`]) and has them for some GPUs but not for a
//! required one is missing that GPU, whatever its other files hold (the
//! fault of split packages that leave whole GPUs out).
//!
//! [`Found`] collects the names of what a command scanned, each placed in
//! its input ([`Found::add`]): a package (its members, by their paths in
//! it), a directory named (the files its walk found, by their paths below
//! it, its own name first, as `prune` reads them), or the files named
//! themselves, all together (by their paths as given). With `--any` every
//! input is one. In each input the per-GPU files are grouped by
//! convention (a row of the table) and by the directory holding them (the
//! per-GPU directories' parent for a row of directories): one group is
//! one library's files for that convention.
//!
//! [`judge`] takes each `--require` rule that names a processor (an
//! AMDGPU processor or generic target, or a CUDA `sm_XY`) and each group
//! of the same vendor: the rule holds when a GPU with files there serves
//! the processor, as `prune --keep` of it would keep those files
//! ([`super::judge::serves`]: a `gfx90a` rule is served by
//! `gfx90a-xnack+` files, `gfx1100` by AOTriton's `amd-gfx11xx`, `sm_89`
//! by TensorRT's `sm86` resource). A rule without a processor (`*:hip`)
//! and a group with no per-GPU file are not judged.

use std::collections::BTreeMap;
use std::path::Path;

use super::judge::serves;
use super::{Convention, Gpu, TABLE, below, companion};
use crate::scan::rule::Rule;
use crate::scan::sort::arch_sort;
use crate::targets;

/// One group's files: the paths (in the input) of each GPU's.
type Files = BTreeMap<Gpu, Vec<String>>;

/// An input's groups: by the row of [`TABLE`] and the directory holding
/// the files.
type Groups = BTreeMap<(usize, String), Files>;

/// The per-GPU files of the inputs of a command, by input, convention
/// and directory.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Whether every input is one (`--any`).
    any: bool,
    /// The inputs in the order first met (`None`: the files named, or all
    /// inputs with `--any`), each with its groups.
    inputs: Vec<(Option<String>, Groups)>,
}

/// Where a scanned unit lies for the gate: its input (`None` for a file
/// named, not found in a directory or package) and its path in it.
/// `unit` is the name scans give it (`pkg.whl!/lib/x.so` inside a
/// package, the innermost package being its input); `dirs` are the
/// directories named, in the order given, as they were named (a file
/// found walking one is below the first that holds it).
pub(crate) fn place(unit: &str, dirs: &[&str]) -> (Option<String>, String) {
    if let Some((package, member)) = unit.rsplit_once("!/") {
        return (Some(package.to_string()), member.to_string());
    }
    for d in dirs {
        if let Some(rel) = below(Path::new(d), Path::new(unit)) {
            return (Some((*d).to_string()), rel);
        }
    }
    (None, unit.to_string())
}

/// The directory that makes `path`'s group: the per-GPU directory's
/// parent, or the file's.
fn location(path: &str, directory: usize) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let end = if directory > 0 {
        directory - 1
    } else {
        parts.len().saturating_sub(1)
    };
    parts[..end.min(parts.len())].join("/")
}

impl Found {
    /// Nothing found yet; with `any`, every input is one.
    pub(crate) fn new(any: bool) -> Found {
        Found {
            any,
            inputs: Vec::new(),
        }
    }

    /// Records the scanned unit named `unit` (placed by [`place`] among
    /// the directories named, `dirs`), when it is a per-GPU file.
    pub(crate) fn add(&mut self, unit: &str, dirs: &[&str]) {
        let (input, path) = place(unit, dirs);
        let Some(c) = companion(&path) else {
            return;
        };
        let Some(row) = TABLE.iter().position(|t| t == c.convention) else {
            return;
        };
        let input = input.filter(|_| !self.any);
        let i = match self.inputs.iter().position(|(n, _)| *n == input) {
            Some(i) => i,
            None => {
                self.inputs.push((input, BTreeMap::new()));
                self.inputs.len() - 1
            }
        };
        let group = (row, location(&path, c.directory));
        self.inputs[i]
            .1
            .entry(group)
            .or_default()
            .entry(c.gpu)
            .or_default()
            .push(path);
    }
}

/// One `--require` rule judged on one library's per-GPU files: in a tree
/// or package, a library that installs files per GPU (Tensile's code
/// objects and indexes, MIOpen's databases, AOTriton's and TensorRT's
/// files: the table in docs/prune.md) must have one that serves each
/// processor a required rule names, as `prune --keep` of it would keep
/// it. [`PerGpuJudgement::judge`] makes them; `offload-kit check` reports
/// them, as [`CheckReport`](crate::kernels::CheckReport) does.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PerGpuJudgement {
    /// The input (`None`: the files named, or all inputs with `--any`).
    pub input: Option<String>,
    /// The convention the files follow.
    pub(crate) convention: &'static Convention,
    /// The directory holding them (or their per-GPU directories) in the
    /// input; empty for its top.
    pub location: String,
    /// The rule as given.
    pub rule: String,
    /// The processor it names.
    pub gpu: String,
    /// Whether some GPU with files here serves it.
    pub passed: bool,
    /// The GPUs with files here that serve it, in architecture order.
    pub serving: Vec<String>,
    /// Their files' paths in the input, sorted.
    pub files: Vec<String>,
    /// Every GPU with files here, in architecture order.
    pub present: Vec<String>,
}

impl PerGpuJudgement {
    /// Every processor a required rule of `req` names, judged on the
    /// per-GPU files among `units`: the names of what was scanned, as
    /// `offload-kit check` names them (`pkg.whl!/a/b.so` for a package's
    /// member, its innermost package being its input; a file found
    /// walking a directory named in `dirs` below it, its input that
    /// directory; any other, the files named, together). With `req.any`
    /// every unit is in one input. In input order, then by library and
    /// directory, then by rule.
    pub fn judge<'a>(
        units: impl IntoIterator<Item = &'a str>,
        dirs: &[&str],
        req: &crate::scan::Requirements,
    ) -> Vec<PerGpuJudgement> {
        let mut found = Found::new(req.any);
        for u in units {
            found.add(u, dirs);
        }
        judge(&found, &req.require_rules())
    }

    /// The library whose files these are (`Tensile`, `MIOpen`, ...).
    pub fn library(&self) -> &'static str {
        self.convention.library
    }

    /// What it says, for a report line after the input's name: `per-GPU
    /// files of LIBRARY (WHAT) in DIR/: gfx942 has 3 file(s) (gfx942)`, or
    /// `…: none for gfx942 (files for: gfx90a)`.
    pub fn summary(&self) -> String {
        let at = if self.location.is_empty() {
            String::new()
        } else {
            format!(" in {}/", self.location)
        };
        let what = format!(
            "per-GPU files of {} ({}){at}",
            self.convention.library, self.convention.holds
        );
        if self.passed {
            format!(
                "{what}: {} has {} file(s) ({})",
                self.gpu,
                self.files.len(),
                self.serving.join(" ")
            )
        } else {
            format!(
                "{what}: none for {} (files for: {})",
                self.gpu,
                self.present.join(" ")
            )
        }
    }
}

/// Whether a key is AMD's (else CUDA's).
fn is_amd(gpu: &Gpu) -> bool {
    matches!(gpu, Gpu::Amd(_) | Gpu::AmdFamily(_))
}

/// Whether the processor `arch` names is AMD's (`Some(true)`), CUDA's
/// (`Some(false)`), or neither (a CPU, SPIR: not judged).
fn vendor(arch: &str) -> Option<bool> {
    let processor = arch.split(':').next().unwrap_or(arch);
    if targets::parse_sm(processor).is_some() {
        return Some(false);
    }
    let amd = targets::amdgpu(processor).is_some_and(|g| g.canonical.starts_with("gfx"))
        || targets::generic(processor).is_some();
    amd.then_some(true)
}

/// The GPUs of `files` as reports name them, in architecture order.
fn names<'a>(gpus: impl Iterator<Item = &'a Gpu>) -> Vec<String> {
    let mut v: Vec<String> = gpus.map(ToString::to_string).collect();
    arch_sort(&mut v);
    v
}

/// Every required rule that names a processor, judged on every group of
/// per-GPU files of its vendor in every input: by input, group, then
/// rule, in order.
pub(crate) fn judge(found: &Found, require: &[Rule]) -> Vec<PerGpuJudgement> {
    let rules: Vec<(&Rule, &str, bool)> = require
        .iter()
        .filter_map(|r| {
            let arch = r.arch.as_deref()?;
            Some((r, arch, vendor(arch)?))
        })
        .collect();
    let mut out = Vec::new();
    for (input, groups) in &found.inputs {
        for ((row, location), files) in groups {
            for &(rule, arch, amd) in &rules {
                if !files.keys().any(|g| is_amd(g) == amd) {
                    continue;
                }
                let serving: Vec<&Gpu> = files
                    .keys()
                    .filter(|g| is_amd(g) == amd && serves(rule, g))
                    .collect();
                let mut paths: Vec<String> = serving
                    .iter()
                    .flat_map(|g| files[*g].iter().cloned())
                    .collect();
                paths.sort();
                out.push(PerGpuJudgement {
                    input: input.clone(),
                    convention: &TABLE[*row],
                    location: location.clone(),
                    rule: rule.text.clone(),
                    gpu: arch.to_string(),
                    passed: !serving.is_empty(),
                    serving: names(serving.into_iter()),
                    files: paths,
                    present: names(files.keys()),
                });
            }
        }
    }
    out
}

/// The exit code of `check` (`code`, that of its other rules) with the
/// judgements on per-GPU files: 1 for a failed one, unless it is 2.
pub(crate) fn exit_code(code: u8, judged: &[PerGpuJudgement]) -> u8 {
    if code == 0 && judged.iter().any(|j| !j.passed) {
        1
    } else {
        code
    }
}

#[cfg(test)]
mod tests;

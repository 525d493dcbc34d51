//! Splitting a directory tree (an install prefix, an unpacked layer), or
//! one file that prune reads but that is no package split knows (a
//! library, a program, an RPM, a squashfs image), into one directory per
//! group: `OUTDIR/LABEL/NAME`, holding what `cp -a INPUT t; prune --keep
//! GROUP --in-place t` leaves in `t`, byte for byte.
//!
//! Each group's copy is made of hard links to the input's files (copies
//! where the output directory lies on another file system, or a link is
//! refused), so a file no group changes takes no room; then prune's own
//! tree walk prunes the copy in place. An in-place prune never writes into
//! a file it found: it writes a new one and renames it over the name, so
//! the input's files, which the copy's names share, are never changed.
//! Every copy is built inside one temporary directory in OUTDIR and moved
//! to its name only when every group has been pruned.

use std::path::Path;

use super::coverage::coverage;
use super::deb::unserved;
use super::report::{SplitOptions, SplitOutput, SplitReport, named_once};
use super::targets::Held;
use crate::files::TempTree;
use crate::prune::path::{PathError, PathErrorKind, PathOptions};
use crate::prune::tree::{TreeOutcome, prune_tree};
use crate::prune::{Destination, ImageGroup, Rules, Selection};
use crate::scan::rule::Rule;

/// Whether `input` is split as a tree: a directory (not an OCI image
/// layout), or a regular file.
pub(super) fn is_tree(input: &Path) -> bool {
    let dir_or_file = std::fs::metadata(input).is_ok_and(|m| m.is_dir() || m.is_file());
    dir_or_file && !crate::prune::oci::is_layout(input)
}

/// Splits the directory or file `input` as `o` says, writing every
/// output into `o.dir` or none of them.
pub(super) fn split(input: &Path, o: &SplitOptions) -> Result<SplitReport, PathError> {
    let name = crate::files::shown(input).into_owned();
    let refuse = |why: String| PathError::said(PathErrorKind::Refused, input, &name, why);
    let meta = std::fs::metadata(input).map_err(|e| PathError::open(input, e))?;
    let base =
        base_name(input).ok_or_else(|| refuse("it has no name to give its copies".into()))?;
    let mut opts = o.path_options();
    // What it holds, read whole first: a group's prune refuses a file it
    // would leave without device code, so the groups' reports miss it.
    let held = everything(input, o, &opts, &base.to_string_lossy())?;
    let groups = o.groups(|| Ok(held.targets()), refuse)?;
    unserved(&groups, &held).map_err(&refuse)?;
    let labels = super::variant::labels(&groups).map_err(&refuse)?;
    if meta.is_dir() && inside(&o.dir, input) {
        return Err(refuse(format!(
            "the output directory '{}' lies inside it: give one outside",
            crate::files::shown(&o.dir)
        )));
    }
    // Taken names are refused before anything is written.
    for l in &labels {
        let to = o.dir.join(l).join(&base);
        if std::fs::symlink_metadata(&to).is_ok() {
            let why = format!("'{}' exists: remove it first", crate::files::shown(&to));
            return Err(refuse(why));
        }
    }
    let sels = o.selections(&groups);
    std::fs::create_dir_all(&o.dir).map_err(|e| PathError::write(&o.dir, e))?;
    let stage = TempTree::new_in(&o.dir).map_err(|e| PathError::write(&o.dir, e))?;
    let found = super::tree_copy::walk(input, meta.is_dir(), &base.to_string_lossy())?;
    opts.destination = Destination::InPlace;
    let mut pruned = Vec::with_capacity(sels.len());
    for (label, sel) in labels.iter().zip(&sels) {
        let root = stage.path().join(label).join(&base);
        std::fs::create_dir(stage.path().join(label))
            .map_err(|e| PathError::write(stage.path(), e))?;
        found.copy_to(input, &root)?;
        let group = Pruned::of(&root, input, sel, &opts)?;
        found.restore_dirs(&root)?;
        pruned.push(group);
    }
    let kept: Vec<&[ImageGroup]> = pruned.iter().map(|p| p.kept.as_slice()).collect();
    let c = coverage(&held, &labels, &kept, &found.companions, &sels);
    let mut outputs = Vec::new();
    for ((label, g), p) in labels.iter().zip(&groups).zip(&pruned) {
        let to = o.dir.join(label).join(&base);
        outputs.push(SplitOutput {
            label: label.clone(),
            gpus: g.iter().map(Rule::to_string).collect(),
            path: crate::files::shown(&to).into_owned(),
            properties: Vec::new(),
            index: None,
            kept: crate::prune::path::merge(p.kept.clone()),
        });
    }
    // Every copy is whole: each now takes its name.
    for l in &labels {
        let dir = o.dir.join(l);
        std::fs::create_dir_all(&dir).map_err(|e| PathError::write(&dir, e))?;
        let to = dir.join(&base);
        std::fs::rename(stage.path().join(l).join(&base), &to)
            .map_err(|e| PathError::write(&to, e))?;
    }
    let members_refused = named_once(
        found.left_out.clone(),
        pruned.iter().flat_map(|p| &p.refused),
    );
    Ok(SplitReport::of(
        name,
        if meta.is_dir() { "tree" } else { "file" },
        outputs,
        c,
        members_refused,
    ))
}

/// Whether the directory `dir` (which may not exist yet) is the
/// directory `input` or lies below it.
fn inside(dir: &Path, input: &Path) -> bool {
    let Ok(input) = std::fs::canonicalize(input) else {
        return false;
    };
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    // The nearest directory that exists, resolved; what lies below it is
    // made by the split, so it cannot be a link elsewhere.
    abs.ancestors()
        .find_map(|a| std::fs::canonicalize(a).ok())
        .is_some_and(|real| real.starts_with(&input))
}

/// The last component of `input` (of its absolute form for `.` or `..`).
fn base_name(input: &Path) -> Option<std::ffi::OsString> {
    match input.file_name() {
        Some(n) => Some(n.to_owned()),
        None => std::fs::canonicalize(input)
            .ok()?
            .file_name()
            .map(ToOwned::to_owned),
    }
}

/// What the input holds for devices, read in a dry run that keeps
/// everything (`--per-gpu` makes its groups of it; a read before the
/// split's own).
fn everything(
    input: &Path,
    o: &SplitOptions,
    opts: &PathOptions,
    base: &str,
) -> Result<Held, PathError> {
    let all = Selection {
        rules: Rules::Drop(Vec::new()),
        ptx: o.ptx,
    };
    let dry = PathOptions {
        destination: Destination::DryRun,
        ..opts.clone()
    };
    let p = Pruned::of(input, input, &all, &dry)?;
    let is_dir = std::fs::metadata(input).is_ok_and(|m| m.is_dir());
    let found = super::tree_copy::walk(input, is_dir, base)?;
    Ok(Held::of(
        p.kept.iter().chain(&p.dropped),
        found.companions.iter().map(|(_, g)| g.clone()),
    ))
}

/// One group's prune of its copy, gathered over every file.
struct Pruned {
    /// The image groups kept, over every file.
    kept: Vec<ImageGroup>,
    /// The image groups dropped.
    dropped: Vec<ImageGroup>,
    /// Files or members prune refused, left as they were, named as in the
    /// input.
    refused: Vec<String>,
}

impl Pruned {
    /// Prunes the copy `root` of `input` by `sel` with `opts`; a file
    /// that is damaged or cannot be read or written fails the split (named
    /// as in the input), a refusal is noted.
    fn of(
        root: &Path,
        input: &Path,
        sel: &Selection,
        opts: &PathOptions,
    ) -> Result<Pruned, PathError> {
        let shown_root = crate::files::shown(root).into_owned();
        let shown_input = crate::files::shown(input).into_owned();
        let as_input = |s: &str| s.replace(&shown_root, &shown_input);
        let mut p = Pruned {
            kept: Vec::new(),
            dropped: Vec::new(),
            refused: Vec::new(),
        };
        for e in prune_tree(&[root.to_path_buf()], sel, opts, &mut |_, _| {}) {
            match e.outcome {
                TreeOutcome::Pruned(r) => {
                    p.kept.extend(r.kept.iter().cloned());
                    p.dropped.extend(r.dropped.iter().cloned());
                    p.refused
                        .extend(r.members_refused.iter().map(|m| as_input(m)));
                }
                // The read that keeps everything (of the input itself)
                // refuses only what it cannot read (a format not read): what
                // the split would serve is then unknown.
                TreeOutcome::Failed(err) if root == input => return Err(err),
                TreeOutcome::Failed(err) => {
                    let why = as_input(&err.chain());
                    if !err.refused() {
                        let shown = crate::files::shown(input).into_owned();
                        return Err(PathError::said(PathErrorKind::Content, input, &shown, why));
                    }
                    p.refused.push(why);
                }
                _ => {}
            }
        }
        Ok(p)
    }
}

//! A layout read once into one new image per group of GPUs (for
//! `offload-kit split`, [`crate::prune::split`]): each layer is read once
//! and decided for every group by prune's own decider of a layer's
//! entries, so that each group's manifest, config and layers are the
//! blobs `prune --keep GROUP -o` writes; the new blobs of every group go
//! into one new layout, beside the input's own, which the caller names
//! in its `index.json`.

use std::path::Path;

use super::commit::Stage;
use super::{Opened, Run, no_longer_shared, opened};
use crate::package::oci::Index;
use crate::prune::Selection;
use crate::prune::path::{PathError, PathOptions, PathReport, merge};

/// A layout rewritten for each group, its new blobs staged, not yet
/// written.
pub(crate) struct Grouped<'a> {
    input: &'a Path,
    /// The input's `index.json`.
    pub(crate) index: Index,
    /// Each group's report, as its prune gives it.
    pub(crate) reps: Vec<PathReport>,
    /// For each group, the entries of `index.json` that changed in it:
    /// their index, new blob's hex and size.
    pub(crate) tops: Vec<Vec<(usize, String, u64)>>,
    /// The per-GPU files met, with their GPUs.
    pub(crate) companions: Vec<(String, crate::companion::Gpu)>,
    /// For each group, whether device code is left in it, as prune
    /// checks it: the error prune would give where none is.
    pub(crate) left: Vec<Result<(), PathError>>,
    /// The layout before, as reports give it.
    pub(crate) before: PathReport,
    stage: Option<Stage>,
}

/// Reads the layout `input` once into one output per selection of
/// `sels`, as `prune` with each and `opts` would (`opts`' destination,
/// a directory, is where the one new layout goes, under the input's
/// name; in a dry run nothing is staged). The entries of `index.json`
/// `carried` names (given the index) are carried as they are, read for
/// no group.
pub(crate) fn rewrite_groups<'a>(
    sels: &[&'a Selection],
    opts: &'a PathOptions,
    input: &'a Path,
    carried: impl FnOnce(&Index) -> Vec<usize>,
) -> Result<Grouped<'a>, PathError> {
    let o: Opened<'a> = opened(input, None)?;
    // Every group's new blobs are written: each may write as much as
    // prune would.
    let n = sels.len() as u64 + 1;
    let stage = Stage::new(opts, input, None, o.size.saturating_mul(n))?;
    let mut run = Run::new(sels, opts, input, &o, stage);
    run.carried = carried(&o.index);
    run.index(&o.index, true)?;
    let name = crate::files::shown(input).into_owned();
    let mut reps = Vec::new();
    let mut tops = Vec::new();
    let mut left = Vec::new();
    for out in run.outs {
        left.push(out.all.check_device_left(input, &name, &opts.prune));
        let mut rep = out.rep;
        rep.images = no_longer_shared(out.changes, &out.layers_after);
        rep.kept = merge(std::mem::take(&mut rep.kept));
        rep.dropped = merge(std::mem::take(&mut rep.dropped));
        reps.push(rep);
        tops.push(out.top);
    }
    Ok(Grouped {
        input,
        index: o.index,
        reps,
        tops,
        left,
        companions: run.companions,
        before: o.rep,
        stage: run.stage,
    })
}

impl Grouped<'_> {
    /// Writes the new layout with `index_json` as its `index.json`: the
    /// staged blobs, and every blob of the input it reaches, into a
    /// temporary directory renamed to the destination once whole; its
    /// sizes into `rep`. Nothing in a dry run.
    pub(crate) fn commit(self, index_json: &[u8], rep: &mut PathReport) -> Result<(), PathError> {
        match self.stage {
            Some(stage) => stage.commit(self.input, &self.index, Some(index_json), rep),
            None => Ok(()),
        }
    }
}

/// Whether `l` could be a group's label: `.`-separated tokens of
/// `[0-9a-z_]`, each a GPU architecture's token as `split`'s `variant::token`
/// writes it (`sm86`, `gfx90a`, `gfx90a_xnackp`, `sm90_cubin`, `__ptx`
/// of `*:ptx`), not `null`; a CPU's architecture (`arm64`) or a word
/// (`dev`) is none.
pub(crate) fn label_shaped(l: &str) -> bool {
    let chars = |t: &str| {
        t.bytes()
            .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'z' | b'_'))
    };
    l != "null"
        && l.split('.')
            .all(|t| !t.is_empty() && chars(t) && gpu_token(t))
}

/// Whether the token `t` starts with a GPU architecture's token (itself,
/// or followed by `_` and a feature or kind), or is a `*` rule's.
fn gpu_token(t: &str) -> bool {
    let gpu = |p: &str| {
        let sm = p.strip_prefix("sm").map(|n| format!("sm_{n}"));
        let arch = sm
            .as_deref()
            .filter(|a| crate::targets::is_known_arch(a))
            .unwrap_or(p);
        let cpu = crate::llvm::triple::parse_arch(arch) != crate::llvm::triple::Arch::Unknown;
        p.is_empty() || (crate::targets::is_known_arch(arch) && !cpu)
    };
    let ends = t.match_indices('_').map(|(i, _)| i).chain([t.len()]);
    ends.filter_map(|i| t.get(..i)).any(gpu)
}

/// Whether `name` is as a split names a group's copy of an image: its
/// name, `-` and a label (`t-sm86`), where `other(NAME)` says another
/// image is named `NAME`.
pub(crate) fn is_copy_name(name: &str, other: impl Fn(&str) -> bool) -> bool {
    name.rsplit_once('-')
        .is_some_and(|(base, l)| label_shaped(l) && other(base))
}

/// The items of `names` (each item's names; none for an unnamed one)
/// that are a split's earlier outputs: named, and each name `NAME-LABEL`
/// where another item is named `NAME` ([`is_copy_name`]). An image of a
/// layout, of a `docker save` archive (its RepoTags) or of the index
/// inside one (by one annotation).
pub(crate) fn copies_among(names: &[Vec<&str>]) -> Vec<usize> {
    let copy = |i: usize, n: &str| {
        let other = |b: &str| (names.iter().enumerate()).any(|(j, m)| j != i && m.contains(&b));
        is_copy_name(n, other)
    };
    (names.iter().enumerate())
        .filter(|(i, n)| !n.is_empty() && n.iter().all(|n| copy(*i, n)))
        .map(|(i, _)| i)
        .collect()
}

/// Why a group's copy of an image cannot be added: the input names
/// another image `name` already, which is not that copy as a split
/// makes it.
pub(crate) fn named_otherwise(name: &str) -> String {
    format!(
        "its image '{name}' would be named twice: the input names another image so (not this \
         group's copy, as a split makes it)"
    )
}

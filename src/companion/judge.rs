//! Whether rules keep a per-GPU companion file's GPU ([`super::Gpu`]):
//! the one comparison that `prune` (which files go) and `check`'s gate
//! (which required GPU a library has files for) share. A file's GPU is
//! judged as an image built for it would be, by [`Rule::loaded_by_some`]
//! and [`Rule::built_for`]: so a `gfx90a` rule keeps `…-gfx90a-xnack+`
//! and `…-gfx90a-xnack-` files (a gfx90a device loads either, by its
//! mode), and `gfx90a:xnack-` keeps the `xnack-` one and the one that
//! names no mode, not the `xnack+` one.
//!
//! Two keys are judged more cautiously than images, since a library, not
//! a loader, picks the file: a family key (AOTriton's `amd-gfx11xx`) is
//! kept when some `--keep` rule names a processor of the family (and
//! never dropped by `--drop`); a CUDA key is kept when some `--keep` rule
//! names an SM of its major version (which resource an sm_87 device uses
//! is TensorRT's own choice).

use super::Gpu;
use crate::bundle::id::TargetId;
use crate::offload_binary::{ImageKind, OffloadKind};
use crate::scan::rule::{Meets, Rule};
use crate::scan::{Content, Image, Offload};
use crate::targets;

/// Rules, as `prune`'s selection lends them (`Selection::by`), or as
/// `check`'s gate asks ([`serves`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum By<'a> {
    /// Keep what devices of these targets load.
    Keep(&'a [Rule]),
    /// Drop what is built for these targets.
    Drop(&'a [Rule]),
}

/// Whether a device of `rule`'s processor has a file of `gpu` to load:
/// whether `--keep` of that processor alone keeps such a file (the
/// rule's kind, if it names one, does not matter).
pub(crate) fn serves(rule: &Rule, gpu: &Gpu) -> bool {
    let Some(arch) = &rule.arch else {
        return true;
    };
    !drops(By::Keep(&[Rule::arch(arch)]), gpu)
}

/// Whether the rules `by` drop what is built for `gpu`.
pub(crate) fn drops(by: By<'_>, gpu: &Gpu) -> bool {
    match (gpu, by) {
        (Gpu::AmdFamily(stem), By::Keep(rules)) => !rules.iter().any(|r| in_family(r, stem)),
        (Gpu::AmdFamily(_), By::Drop(_)) => false,
        (Gpu::Amd(id), by) => image_dropped(by, &stand_in(id, false)),
        (Gpu::Cuda(sm), By::Keep(rules)) if rules.iter().any(|r| same_major(r, sm)) => false,
        (Gpu::Cuda(sm), by) => image_dropped(by, &stand_in(sm, true)),
    }
}

/// Whether the rules drop `img`: with `--keep`, no rule's device loads
/// it (or might); with `--drop`, a rule takes it.
fn image_dropped(by: By<'_>, img: &Image) -> bool {
    match by {
        By::Keep(rules) => rules
            .iter()
            .all(|r| r.loaded_by_some(img, false) == Meets::No),
        By::Drop(rules) => rules.iter().any(|r| r.built_for(img, false).yes()),
    }
}

/// Whether the rule names a processor of the family `stem` (or any
/// processor): itself, or one that a generic target it names covers.
fn in_family(rule: &Rule, stem: &str) -> bool {
    let Some(arch) = &rule.arch else {
        return true;
    };
    let Some(id) = TargetId::parse(arch) else {
        return false;
    };
    let canonical = targets::amdgpu(id.processor).map_or(id.processor, |g| g.canonical);
    let starts = |p: &str| p.starts_with(stem) && p.len() > stem.len();
    starts(canonical)
        || targets::generic(canonical).is_some_and(|g| g.members.iter().any(|m| starts(m)))
}

/// Whether the rule names a CUDA SM of `sm`'s major version (or any).
fn same_major(rule: &Rule, sm: &str) -> bool {
    let Some(arch) = &rule.arch else {
        return true;
    };
    match (targets::parse_sm(arch), targets::parse_sm(sm)) {
        (Some((a, _)), Some((b, _))) => a / 10 == b / 10,
        _ => false,
    }
}

/// An image standing for the code of `target` (an AMDGPU target ID, or
/// with `cuda` an `sm_NN`): a HIP code object, or a CUDA cubin.
fn stand_in(target: &str, cuda: bool) -> Image {
    let (triple, kind, offload) = match cuda {
        true => (
            "nvptx64-nvidia-cuda",
            ImageKind::IMG_Cubin,
            OffloadKind::OFK_Cuda,
        ),
        false => (
            "amdgcn-amd-amdhsa",
            ImageKind::IMG_Object,
            OffloadKind::OFK_HIP,
        ),
    };
    crate::scan::stand_in_image(
        triple,
        target,
        Offload::Kind(offload),
        Some(Content::Image(kind)),
    )
}

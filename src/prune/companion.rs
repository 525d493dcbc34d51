//! Which per-GPU companion files ([`crate::companion`]) a selection drops:
//! a file named after a GPU goes when the rules would drop an image built
//! for that GPU, judged as [`Selection::decide`] judges one. So a `gfx90a`
//! rule keeps `…-gfx90a-xnack+` and `…-gfx90a-xnack-` files (a gfx90a
//! device loads either, by its mode), and `gfx90a:xnack-` keeps the
//! `xnack-` one and the one that names no mode, not the `xnack+` one.
//!
//! Two keys are judged more cautiously than images, since a library, not
//! a loader, picks the file: a family key (AOTriton's `amd-gfx11xx`) goes
//! only when no `--keep` rule names a processor of the family (never with
//! `--drop`); a CUDA key goes only when no `--keep` rule names an SM of
//! its major version (which resource an sm_87 device uses is TensorRT's
//! own choice).

use crate::bundle::id::TargetId;
use crate::companion::{Companion, Gpu, companion};
use crate::offload_binary::{ImageKind, OffloadKind};
use crate::scan::rule::{Meets, Rule};
use crate::scan::{Content, Image, Offload};
use crate::targets;

/// A selection's rules, as [`super::Selection::by`] lends them (this
/// file names nothing of the rest of `prune`, so that every part of it
/// can use it).
#[derive(Debug, Clone, Copy)]
pub(crate) enum By<'a> {
    /// Keep what devices of these targets load.
    Keep(&'a [Rule]),
    /// Drop what is built for these targets.
    Drop(&'a [Rule]),
}

/// The companion file `path` (relative, `/`-separated) is, when the
/// rules `by` drop its GPU; `None` when it is none or its GPU stays.
pub(crate) fn dropped(by: By<'_>, path: &str) -> Option<Companion> {
    companion(path).filter(|c| drops(by, &c.gpu))
}

/// Why a companion file goes, in words for a report: `rocBLAS/… per-GPU
/// file for gfx906 (the GPU's kernels: raw AMDGPU code objects)`.
pub(crate) fn reason(c: &Companion) -> String {
    format!(
        "{} per-GPU file for {} ({})",
        c.convention.library, c.gpu, c.convention.holds
    )
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
    let mut parts = target.split(':');
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
    Image {
        id: 0,
        container: 0,
        index: 0,
        bundle_id: None,
        offload_kind: Offload::Kind(offload),
        image_kind: Some(Content::Image(kind)),
        triple: triple.into(),
        arch: parts.next().unwrap_or_default().into(),
        target_id: target.into(),
        features: parts.map(str::to_string).collect(),
        cuda_arch: None,
        strings: Vec::new(),
        section: None,
        member: None,
        offset: None,
        relative_offset: 0,
        size: 1,
        uncompressed_size: None,
        in_compressed: false,
        hash: None,
        nested: None,
        overlaps: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prune::{Ptx, Rules, Selection};

    fn keep(rules: &[&str]) -> Selection {
        Selection {
            rules: Rules::Keep(rules.iter().map(|r| Rule::parse(r).unwrap()).collect()),
            ptx: Ptx::Newest,
        }
    }

    fn drop(rules: &[&str]) -> Selection {
        Selection {
            rules: Rules::Drop(rules.iter().map(|r| Rule::parse(r).unwrap()).collect()),
            ptx: Ptx::Newest,
        }
    }

    fn gone(sel: &Selection, path: &str) -> bool {
        dropped(sel.by(), path).is_some()
    }

    #[test]
    fn a_processor_rule_keeps_both_xnack_modes_and_a_mode_rule_its_own() {
        let lib = "library/Kernels.so-000-";
        let (plus, minus, any) = (
            format!("{lib}gfx90a-xnack+.hsaco"),
            format!("{lib}gfx90a-xnack-.hsaco"),
            format!("{lib}gfx90a.hsaco"),
        );
        let sel = keep(&["gfx90a"]);
        assert!(!gone(&sel, &plus) && !gone(&sel, &minus) && !gone(&sel, &any));
        let sel = keep(&["gfx90a:xnack-"]);
        assert!(gone(&sel, &plus));
        assert!(!gone(&sel, &minus) && !gone(&sel, &any));
        let sel = keep(&["gfx1100"]);
        assert!(gone(&sel, &plus) && gone(&sel, &minus) && gone(&sel, &any));
        assert!(!gone(&sel, "library/TensileLibrary_gfx1100.co"));
        assert!(gone(&sel, "library/TensileLibrary_lazy_gfx906.dat"));
        // Arch-neutral files and unknown names never go.
        assert!(!gone(&sel, "library/TensileLibrary.dat"));
        assert!(!gone(&sel, "library/notes_gfx906.txt"));
        // Several rules: a file stays when one keeps its GPU.
        let two = keep(&["gfx1100", "gfx906"]);
        assert!(!gone(&two, "library/TensileLibrary_lazy_gfx906.dat"));
        assert!(gone(&two, "library/TensileLibrary_lazy_gfx908.dat"));
    }

    #[test]
    fn drop_rules_take_what_is_built_for_them() {
        let sel = drop(&["gfx906"]);
        assert!(gone(&sel, "library/TensileLibrary_gfx906.co"));
        assert!(!gone(&sel, "library/TensileLibrary_gfx908.co"));
        let sel = drop(&["gfx90a:xnack+"]);
        assert!(gone(&sel, "library/Kernels.so-000-gfx90a-xnack+.hsaco"));
        assert!(!gone(&sel, "library/Kernels.so-000-gfx90a-xnack-.hsaco"));
        // A family is never dropped by --drop rules.
        assert!(!gone(
            &drop(&["gfx1100"]),
            "aotriton.images/amd-gfx11xx/a.aks2"
        ));
    }

    #[test]
    fn a_family_goes_only_when_no_kept_processor_is_in_it() {
        let tree = "torch/lib/aotriton.images/amd-gfx11xx/flash/a.aks2";
        assert!(!gone(&keep(&["gfx1100"]), tree));
        assert!(!gone(&keep(&["gfx1151"]), tree));
        assert!(!gone(&keep(&["gfx11-generic"]), tree));
        assert!(!gone(&keep(&["*"]), tree));
        assert!(gone(&keep(&["gfx942"]), tree));
        assert!(gone(&keep(&["gfx942", "sm_90"]), tree));
        let navi3 = "aotriton.images/amd-gfx110x/a.aks2";
        assert!(gone(&keep(&["gfx1151"]), navi3));
        assert!(!gone(&keep(&["gfx1101"]), navi3));
    }

    #[test]
    fn tensorrt_resources_stay_for_their_major_version() {
        let r = |sm: u32| format!("lib/libnvinfer_builder_resource_sm{sm}.so.10");
        let sel = keep(&["sm_89"]);
        assert!(!gone(&sel, &r(86)) && !gone(&sel, &r(89)) && !gone(&sel, &r(80)));
        assert!(gone(&sel, &r(90)) && gone(&sel, &r(75)));
        assert!(!gone(&sel, "lib/libnvinfer_builder_resource_ptx.so.10"));
        // An AMD rule keeps no CUDA resource.
        assert!(gone(&keep(&["gfx942"]), &r(90)));
        assert!(gone(&drop(&["sm_90"]), &r(90)));
        assert!(!gone(&drop(&["sm_90"]), &r(89)));
    }

    #[test]
    fn the_reason_names_the_library_and_the_gpu() {
        let c = dropped(
            keep(&["gfx1100"]).by(),
            "library/TensileLibrary_lazy_gfx906.dat",
        )
        .unwrap();
        let why = reason(&c);
        assert!(
            why.starts_with("rocBLAS/hipBLASLt/hipSPARSELt (Tensile) per-GPU file for gfx906 ("),
            "{why}"
        );
    }
}

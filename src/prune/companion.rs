//! Which per-GPU companion files ([`crate::companion`]) a selection drops:
//! a file named after a GPU goes when the rules would drop an image built
//! for that GPU, judged as [`Selection::decide`] judges one
//! ([`crate::companion::judge`], which `check`'s gate shares, says how).
//! This file names nothing of the rest of `prune`, so that every part of
//! it can use it.
//!
//! [`Selection::decide`]: super::Selection::decide

pub(crate) use crate::companion::judge::By;
use crate::companion::judge::drops;
use crate::companion::{Companion, companion};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prune::{Ptx, Rules, Selection};
    use crate::scan::rule::Rule;

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

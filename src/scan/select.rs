//! Choosing images of a [`Report`](super::Report) by triple, architecture
//! and kind: what `extract` writes and what `check` counts.

use super::Image;
use crate::bundle::id::{TargetId, canonical_amdgpu_processor};
use crate::llvm::triple::{self, CanonicalForm, Triple};
use crate::targets;

/// Whether `want` names the image's architecture: the same processor
/// (ignoring case; for AMDGPU triples an LLVM alias such as `tahiti` names
/// its `gfx` processor), and every feature `want` gives present with the
/// same sign (`gfx90a` matches `gfx90a:xnack+`; `gfx90a:xnack+` does not
/// match `gfx90a`). A CUDA name's `a` or `f` is read the same way: `sm_90`
/// matches `sm_90a` images, `sm_90a` only those ([`cuda_code_matches`]). `want` is read as a target ID
/// ([`TargetId::parse`]); one that is malformed (`gfx90a:xnack`) only
/// matches an image whose features are written the same way.
pub fn arch_matches(img: &Image, want: &str) -> bool {
    if let Some(m) = spir_matches(img, want) {
        return m;
    }
    if img.arch.is_empty() {
        return cpu_matches(img, want);
    }
    if let Some(m) = cuda_code_matches(img, want) {
        return m;
    }
    let Some(id) = TargetId::parse(want) else {
        let mut parts = want.split(':');
        let processor = parts.next().unwrap_or_default();
        return img.arch.eq_ignore_ascii_case(processor)
            && parts.all(|f| img.features.iter().any(|g| g == f));
    };
    same_processor(img, id.processor)
        && id.features.iter().all(|(name, on)| {
            img.features
                .iter()
                .any(|g| g.strip_suffix(if *on { '+' } else { '-' }) == Some(name))
        })
}

/// Whether the CUDA name `want` (`sm_90`, `sm_90a`, `sm_100f`) names the
/// image's code ([`Image::code_arch`]): the same SM, and the same variant
/// when `want` gives one. `sm_90` names every sm_90 image, plain,
/// arch-specific (`sm_90a`) and family, as `cuobjdump -arch sm_90` takes
/// them all; `sm_90a` only arch-specific code, `sm_100f` only family code
/// (a family cubin too, which `cuobjdump` names `sm_100`). `None` when
/// `want` or the image's arch is no CUDA name.
pub(super) fn cuda_code_matches(img: &Image, want: &str) -> Option<bool> {
    let (n, s) = targets::parse_sm(want)?;
    let (m, t) = targets::parse_sm(img.code_arch())?;
    Some(n == m && (s.is_none() || s == t))
}

/// Whether the SPIR or SPIR-V target `want` ([`targets::is_spir_target`]:
/// `spir64`, `spir64_gen`, `spirv64`) names the image's triple: its first
/// component is `want`, ignoring case, or, for a `want` that gives no
/// SPIR-V version, that target of any version (`spirv64` names
/// `spirv64v1.5`). `spir64` does not name `spir64_gen` images: those hold
/// code made ahead of time for Intel GPUs, not SPIR-V. `None` when `want`
/// is no SPIR target; an image with no triple is named by none.
pub(super) fn spir_matches(img: &Image, want: &str) -> Option<bool> {
    let want = want.to_ascii_lowercase();
    if !targets::is_spir_target(&want) {
        return None;
    }
    let first = img.triple.split('-').next().unwrap_or_default();
    let first = first.to_ascii_lowercase();
    let versionless = triple::parse_sub_arch(&want) == triple::SubArch::None;
    Some(
        first == want
            || (versionless
                && triple::parse_arch(&first) == triple::parse_arch(&want)
                && triple::parse_arch(&want) != triple::Arch::Unknown),
    )
}

/// Whether `processor` is the image's processor: equal ignoring case, or
/// the same AMDGPU processor after LLVM's aliases. A SPIR target names
/// the images of its triple ([`spir_matches`]).
pub(super) fn same_processor(img: &Image, processor: &str) -> bool {
    if let Some(m) = spir_matches(img, processor) {
        return m;
    }
    if img.arch.is_empty() {
        return cpu_matches(img, processor);
    }
    if img.arch.eq_ignore_ascii_case(processor) {
        return true;
    }
    let triple = Triple::parse(&img.triple);
    let canonical = |p: &str| canonical_amdgpu_processor(&triple, &p.to_ascii_lowercase());
    canonical(processor).is_some_and(|c| canonical(&img.arch) == Some(c))
}

/// The CPU an image that names no processor is built for, as its
/// triple's architecture (`x86_64` for `x86_64-unknown-linux-gnu`): the
/// image of a host CPU offload target, which OpenMP's CPU plugins load.
/// `None` for an image that names a processor and for GPU and virtual
/// ISA triples (AMDGPU, NVPTX, SPIR, SPIR-V).
pub fn cpu_arch(img: &Image) -> Option<triple::Arch> {
    use triple::Arch;
    if !img.arch.is_empty() {
        return None;
    }
    let first = img.triple.split('-').next()?;
    match triple::parse_arch(&first.to_ascii_lowercase()) {
        Arch::Unknown | Arch::Spir | Arch::Spir64 | Arch::Spirv | Arch::Spirv32 | Arch::Spirv64 => {
            None
        }
        a if is_gpu_triple_arch(a) => None,
        a => Some(a),
    }
}

/// Whether `arch` is the architecture of a GPU or virtual ISA triple whose
/// images name their processor (AMDGPU, NVPTX, AMDIL, HSAIL): a rule
/// naming it (`nvptx64`) would name no image, so none may.
pub(crate) fn is_gpu_triple_arch(arch: triple::Arch) -> bool {
    use triple::Arch;
    matches!(
        arch,
        Arch::Amdgcn
            | Arch::R600
            | Arch::Nvptx
            | Arch::Nvptx64
            | Arch::Amdil
            | Arch::Amdil64
            | Arch::Hsail
            | Arch::Hsail64
    )
}

/// Whether `want` (`x86_64`, `aarch64`) names the CPU image `img` is built
/// for ([`cpu_arch`]), as LLVM's triples spell it or an alias of it
/// (`arm64`, `amd64`).
fn cpu_matches(img: &Image, want: &str) -> bool {
    cpu_arch(img).is_some_and(|a| triple::parse_arch(&want.to_ascii_lowercase()) == a)
}

/// Whether `want`'s dash-separated components start the image's triple
/// (`amdgcn` and `amdgcn-amd-amdhsa` both match `amdgcn-amd-amdhsa`). Both
/// are also compared in LLVM's normalized form, ignoring case, so
/// `x86_64-linux-gnu` matches `x86_64-unknown-linux-gnu` and
/// `AMDGCN-AMD-AMDHSA` matches `amdgcn-amd-amdhsa`.
pub fn triple_matches(img: &Image, want: &str) -> bool {
    let want = want.trim_end_matches('-');
    if components_start(&img.triple, want) {
        return true;
    }
    let normal = |t: &str| triple::normalize(&t.to_ascii_lowercase(), CanonicalForm::Any);
    let (have, want) = (normal(&img.triple), normal(want));
    components_start(have.trim_end_matches('-'), want.trim_end_matches('-'))
}

/// Whether the dash-separated components of `want` are the first ones of
/// `have`.
fn components_start(have: &str, want: &str) -> bool {
    let have: Vec<&str> = have.split('-').collect();
    let want: Vec<&str> = want.split('-').collect();
    want.len() <= have.len() && want.iter().zip(&have).all(|(a, b)| a == b)
}

/// Whether `want` is the image's offload kind or image kind (`hipv4`
/// names HIP, as the scanner reports both spellings as `hip`).
/// An NVPTX image packed as an `object` (how clang-linker-wrapper packs
/// OpenMP's linked NVPTX images) is NVIDIA machine code, so it is a
/// `cubin` too.
pub fn kind_matches(img: &Image, want: &str) -> bool {
    let want = if want == "hipv4" { "hip" } else { want };
    img.offload_kind == want
        || img.image_kind.is_some_and(|k| k.to_string() == want)
        || (want == "cubin" && is_nvptx_object(img))
}

/// Whether `img` is an `object` image for an NVPTX triple: a cubin.
pub(crate) fn is_nvptx_object(img: &Image) -> bool {
    img.triple.starts_with("nvptx") && img.image_kind.is_some_and(|k| k.to_string() == "object")
}

/// Which images to take: each list that is not empty must have an entry
/// matching the image. A triple matches when its dash-separated components
/// start the image's (also compared in LLVM's normalized form, ignoring
/// case: `x86_64-linux-gnu` matches `x86_64-unknown-linux-gnu`); an
/// architecture is a target ID whose processor is the image's (ignoring
/// case; an LLVM alias such as `tahiti` names its `gfx` processor) and whose
/// features the image has with the same sign (`gfx90a` matches
/// `gfx90a:xnack+`, not the other way round); a kind is the image's offload
/// kind or image kind (`hipv4` is `hip`; an NVPTX `object` is a `cubin`).
/// Start from [`Selection::default`] and set fields: more may be added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Selection {
    /// Triples, or prefixes of their components.
    pub triples: Vec<String>,
    /// Architectures (target IDs; features optional).
    pub archs: Vec<String>,
    /// Offload kinds or image kinds.
    pub kinds: Vec<String>,
}

impl Selection {
    /// Whether the selection takes every image (no list is set).
    pub fn is_empty(&self) -> bool {
        self.triples.is_empty() && self.archs.is_empty() && self.kinds.is_empty()
    }

    /// Whether the selection takes `img`.
    pub fn matches(&self, img: &Image) -> bool {
        (self.triples.is_empty() || self.triples.iter().any(|t| triple_matches(img, t)))
            && (self.archs.is_empty() || self.archs.iter().any(|a| arch_matches(img, a)))
            && (self.kinds.is_empty() || self.kinds.iter().any(|k| kind_matches(img, k)))
    }
}

/// The images of `images` that `sel` takes.
pub fn select<'a>(images: &'a [Image], sel: &'a Selection) -> impl Iterator<Item = &'a Image> {
    images.iter().filter(|i| sel.matches(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(triple: &str, target_id: &str, kind: &str) -> Image {
        use crate::offload_binary::ImageKind;
        crate::scan::test_image(
            triple,
            target_id,
            super::super::Offload::of_bundle_kind(kind),
            Some(super::super::Content::Image(ImageKind::IMG_Object)),
        )
    }

    #[test]
    fn matching_rules() {
        let i = image("amdgcn-amd-amdhsa", "gfx90a:xnack+", "hip");
        assert!(arch_matches(&i, "gfx90a"));
        assert!(arch_matches(&i, "GFX90A:xnack+"));
        assert!(!arch_matches(&i, "gfx90a:xnack-"));
        assert!(triple_matches(&i, "amdgcn"));
        assert!(triple_matches(&i, "amdgcn-amd-amdhsa-"));
        assert!(!triple_matches(&i, "amdgcn-amd-amdhsa-gnu"));
        assert!(kind_matches(&i, "hipv4"));
        assert!(kind_matches(&i, "object"));
        let sel = Selection {
            archs: vec!["gfx942".into(), "gfx90a".into()],
            kinds: vec!["openmp".into()],
            ..Selection::default()
        };
        assert!(!sel.matches(&i));
        let imgs = [i, image("nvptx64-nvidia-cuda", "sm_80", "openmp")];
        let sel = Selection {
            triples: vec!["nvptx64".into()],
            ..Selection::default()
        };
        assert_eq!(select(&imgs, &sel).count(), 1);
    }

    #[test]
    fn arch_as_a_target_id() {
        let i = image("amdgcn-amd-amdhsa", "gfx90a:sramecc-:xnack+", "hip");
        assert!(arch_matches(&i, "gfx90a:xnack+:sramecc-"));
        assert!(arch_matches(&i, "gfx90a:xnack+:"));
        assert!(arch_matches(&i, "Gfx90A:sramecc-"));
        assert!(!arch_matches(&i, "gfx90a:sramecc+"));
        assert!(!arch_matches(&i, "gfx90a:xnack"));
        assert!(!arch_matches(&i, "gfx90a:xnack+:xnack-"));
        assert!(!arch_matches(&i, ":xnack+"));
        assert!(!arch_matches(&i, ""));
        // LLVM's AMDGPU aliases, for AMDGPU triples only.
        let old = image("amdgcn-amd-amdhsa", "gfx600", "hip");
        assert!(arch_matches(&old, "tahiti"));
        assert!(arch_matches(&old, "TAHITI"));
        assert!(!arch_matches(&old, "gfx601"));
        let nv = image("nvptx64-nvidia-cuda", "gfx600", "cuda");
        assert!(!arch_matches(&nv, "tahiti"));
        // A malformed target ID is compared as written.
        let odd = image("amdgcn-amd-amdhsa", "gfx90a:xnack", "hip");
        assert!(arch_matches(&odd, "gfx90a:xnack"));
    }

    #[test]
    fn triple_normalized_and_any_case() {
        let i = image("x86_64-unknown-linux-gnu", "", "host");
        assert!(triple_matches(&i, "x86_64-linux-gnu"));
        assert!(triple_matches(&i, "x86_64-unknown-linux"));
        assert!(triple_matches(&i, "X86_64-Unknown-Linux-GNU"));
        assert!(!triple_matches(&i, "x86_64-pc-linux-gnu"));
        assert!(!triple_matches(&i, "aarch64-linux-gnu"));
        assert!(!triple_matches(&i, "x86_64-unknown-linux-musl"));
        let g = image("amdgcn-amd-amdhsa", "gfx90a", "hip");
        assert!(triple_matches(&g, "AMDGCN"));
        assert!(triple_matches(&g, "amdgcn-amd-amdhsa--"));
        assert!(!triple_matches(&g, "amdgcn-amd-amdpal"));
        assert!(!triple_matches(&g, "nvptx64"));
    }
}

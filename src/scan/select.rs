//! Choosing images of a [`Report`](super::Report) by triple, architecture
//! and kind: what `extract` writes and what `check` counts.

use super::Image;

/// Whether `want` names the image's architecture: the same processor
/// (ignoring case), and every feature `want` gives present with the same
/// sign (`gfx90a` matches `gfx90a:xnack+`; `gfx90a:xnack+` does not match
/// `gfx90a`).
pub fn arch_matches(img: &Image, want: &str) -> bool {
    let mut parts = want.split(':');
    let processor = parts.next().unwrap_or_default();
    !img.arch.is_empty()
        && img.arch.eq_ignore_ascii_case(processor)
        && parts.all(|f| img.features.iter().any(|g| g == f))
}

/// Whether `want`'s dash-separated components start the image's triple
/// (`amdgcn` and `amdgcn-amd-amdhsa` both match `amdgcn-amd-amdhsa`).
pub fn triple_matches(img: &Image, want: &str) -> bool {
    let have: Vec<&str> = img.triple.split('-').collect();
    let want: Vec<&str> = want.trim_end_matches('-').split('-').collect();
    want.len() <= have.len() && want.iter().zip(&have).all(|(a, b)| a == b)
}

/// Whether `want` is the image's offload kind or image kind (`hipv4`
/// names HIP, as the scanner reports both spellings as `hip`).
pub fn kind_matches(img: &Image, want: &str) -> bool {
    let want = if want == "hipv4" { "hip" } else { want };
    img.offload_kind == want || img.image_kind.is_some_and(|k| k.to_string() == want)
}

/// Which images to take: each list that is not empty must have an entry
/// matching the image (see [`triple_matches`], [`arch_matches`],
/// [`kind_matches`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Triples, or prefixes of their components.
    pub triples: Vec<String>,
    /// Architectures (target IDs; features optional).
    pub archs: Vec<String>,
    /// Offload kinds or image kinds.
    pub kinds: Vec<String>,
}

impl Selection {
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
        let mut parts = target_id.split(':');
        Image {
            id: 0,
            container: 0,
            index: 0,
            bundle_id: None,
            offload_kind: super::super::Offload::of_bundle_kind(kind),
            image_kind: Some(super::super::Content::Image(ImageKind::IMG_Object)),
            triple: triple.into(),
            arch: parts.next().unwrap_or_default().into(),
            target_id: target_id.into(),
            features: parts.map(str::to_string).collect(),
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
        }
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
}

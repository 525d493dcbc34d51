//! The device targets a wheel serves, as split names them: each SASS
//! target (`sm_86`; an arch-specific `sm_90a` as the `sm_90` device that
//! runs it), each AMD processor (`gfx90a`, whatever xnack mode its images
//! were built for), and each GPU a per-GPU file is named after; and
//! whether a rule's device loads something of the wheel.

use crate::companion::Gpu;
use crate::companion::judge::serves;
use crate::offload_binary::{ImageKind, OffloadKind};
use crate::prune::ImageGroup;
use crate::prune::path::PathReport;
use crate::scan::rule::Rule;
use crate::scan::sort::arch_cmp;
use crate::scan::{Content, Image, Offload, stand_in_image};
use crate::targets;

/// What a wheel holds for devices: its image groups (target and kind) and
/// the GPU of each per-GPU file.
#[derive(Default)]
pub(super) struct Held {
    /// Each image group's target and kind.
    pub(super) images: Vec<(String, String)>,
    /// Each per-GPU file's GPU.
    pub(super) gpus: Vec<Gpu>,
}

impl Held {
    /// What the groups `images` and the files of `gpus` hold.
    pub(super) fn of<'g>(
        images: impl Iterator<Item = &'g ImageGroup>,
        gpus: impl Iterator<Item = Gpu>,
    ) -> Held {
        let mut h = Held::default();
        for g in images {
            let key = (g.target.clone(), g.kind.clone());
            if !h.images.contains(&key) {
                h.images.push(key);
            }
        }
        for g in gpus {
            if !h.gpus.contains(&g) {
                h.gpus.push(g);
            }
        }
        h
    }

    /// What the report `rep` of a read (a keep-everything read, or a
    /// group's prune: its images kept and dropped) and the per-GPU files
    /// `companions` (each name with its GPU) hold.
    pub(super) fn of_report(rep: Option<&PathReport>, companions: &[(String, Gpu)]) -> Held {
        let images = rep.map(|r| r.kept.iter().chain(&r.dropped));
        Held::of(
            images.into_iter().flatten(),
            companions.iter().map(|(_, g)| g.clone()),
        )
    }

    /// The device targets held, folded as a device's loader folds them
    /// and sorted: one per SASS target and AMD processor (not PTX, which
    /// no device is named after, nor a generic AMD target, which no
    /// device reports), and per GPU of a per-GPU file (not a family).
    ///
    /// An AMD processor keeps the features (`xnack-`) that every image of
    /// it was built for alike: a processor whose images are all
    /// `gfx900:xnack-` is `gfx900:xnack-`, since a device in the other
    /// mode loads none of them; images of both modes, or of neither, or
    /// a per-GPU file, serve the bare processor.
    pub(super) fn targets(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        // Each AMD processor's feature sets, an image (or file) each.
        let mut amd: Vec<(String, Vec<Vec<String>>)> = Vec::new();
        let mut met = |t: &str, features: Vec<String>| {
            let Some(p) = device(t, false) else {
                return;
            };
            if !p.starts_with("gfx") {
                if !out.contains(&p) {
                    out.push(p);
                }
                return;
            }
            match amd.iter_mut().find(|(q, _)| *q == p) {
                Some((_, sets)) => sets.push(features),
                None => amd.push((p, vec![features])),
            }
        };
        for (t, _) in self.images.iter().filter(|(_, k)| k != "ptx") {
            met(t, t.split(':').skip(1).map(str::to_string).collect());
        }
        for g in &self.gpus {
            match g {
                Gpu::Amd(id) | Gpu::Cuda(id) => met(id, Vec::new()),
                Gpu::AmdFamily(_) => {}
            }
        }
        for (p, sets) in amd {
            let mut common: Vec<String> = sets.first().cloned().unwrap_or_default();
            common.retain(|f| sets.iter().all(|s| s.contains(f)));
            let t = std::iter::once(p)
                .chain(common)
                .collect::<Vec<_>>()
                .join(":");
            if !out.contains(&t) {
                out.push(t);
            }
        }
        out.sort_by(|a, b| arch_cmp(a, b));
        out
    }

    /// Whether a device of `rule` loads something held: an image (a
    /// cubin, PTX it compiles, a code object) or a per-GPU file. A rule
    /// that names no processor loads everything.
    pub(super) fn served(&self, rule: &Rule) -> bool {
        if rule.arch.is_none() {
            return true;
        }
        let image = self
            .images
            .iter()
            .filter_map(|(t, k)| stand_in(t, k))
            .any(|img| rule.loaded_by_some(&img, false).yes());
        image || self.gpus.iter().any(|g| serves(rule, g))
    }
}

/// The device a `target` (an image group's) names, folded: `sm_90a` →
/// `sm_90`, `gfx90a:xnack+` → `gfx90a`; `None` for PTX, a generic AMD
/// target, and what is no GPU's.
fn device(target: &str, ptx: bool) -> Option<String> {
    if ptx {
        return None;
    }
    if let Some((n, _)) = targets::parse_sm(target) {
        return Some(format!("sm_{n}"));
    }
    let processor = target.split(':').next()?;
    let plain = processor.starts_with("gfx")
        && processor
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase());
    plain.then(|| processor.to_string())
}

/// An image standing for a group of `target` and `kind` (a CUDA cubin or
/// PTX, an AMD code object), to judge rules by.
fn stand_in(target: &str, kind: &str) -> Option<Image> {
    let (triple, offload, content) = if targets::parse_sm(target).is_some() {
        let k = match kind {
            "ptx" => ImageKind::IMG_PTX,
            "cubin" => ImageKind::IMG_Cubin,
            _ => return None,
        };
        ("nvptx64-nvidia-cuda", OffloadKind::OFK_Cuda, k)
    } else if target.starts_with("gfx") {
        (
            "amdgcn-amd-amdhsa",
            OffloadKind::OFK_HIP,
            ImageKind::IMG_Object,
        )
    } else {
        return None;
    };
    Some(stand_in_image(
        triple,
        target,
        Offload::Kind(offload),
        Some(Content::Image(content)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(images: &[(&str, &str)], gpus: Vec<Gpu>) -> Held {
        Held {
            images: images
                .iter()
                .map(|(t, k)| (t.to_string(), k.to_string()))
                .collect(),
            gpus,
        }
    }

    #[test]
    fn targets_fold_as_the_loader_does() {
        let h = held(
            &[
                ("sm_86", "cubin"),
                ("sm_80", "cubin"),
                ("sm_90a", "cubin"),
                ("sm_90", "ptx"),
                ("gfx90a:xnack+", "object"),
                ("gfx90a:xnack-", "object"),
                ("gfx9-generic", "object"),
                ("x86_64-unknown-linux-gnu", "host"),
            ],
            vec![Gpu::Amd("gfx1100".into()), Gpu::AmdFamily("gfx11".into())],
        );
        assert_eq!(
            h.targets(),
            ["gfx90a", "gfx1100", "sm_80", "sm_86", "sm_90"]
        );
    }

    #[test]
    fn a_processor_built_for_one_xnack_mode_only_keeps_it() {
        let h = held(
            &[
                ("gfx900:xnack-", "object"),
                ("gfx906:sramecc+:xnack-", "object"),
                ("gfx906:sramecc-:xnack-", "object"),
                ("gfx908:xnack-", "object"),
                ("gfx908", "object"),
                ("gfx1030", "object"),
            ],
            vec![Gpu::Amd("gfx942".into())],
        );
        assert_eq!(
            h.targets(),
            [
                "gfx900:xnack-",
                "gfx906:xnack-",
                "gfx908",
                "gfx942",
                "gfx1030"
            ]
        );
        let files = held(
            &[("gfx942:xnack+", "object")],
            vec![Gpu::Amd("gfx942".into())],
        );
        assert_eq!(files.targets(), ["gfx942"]);
    }

    #[test]
    fn a_rule_is_served_by_what_its_device_loads() {
        let rule = |r: &str| Rule::parse(r).unwrap();
        let h = held(&[("sm_80", "cubin"), ("gfx90a:xnack+", "object")], vec![]);
        assert!(h.served(&rule("sm_86")), "an 8.6 device runs sm_80 SASS");
        assert!(h.served(&rule("sm_80")));
        assert!(!h.served(&rule("sm_75")));
        assert!(!h.served(&rule("sm_90")));
        assert!(h.served(&rule("gfx90a")));
        assert!(!h.served(&rule("gfx942")));
        let ptx = held(&[("sm_80", "ptx")], vec![]);
        assert!(
            ptx.served(&rule("sm_90")),
            "PTX is compiled for newer devices"
        );
        let files = held(&[], vec![Gpu::Amd("gfx942".into())]);
        assert!(files.served(&rule("gfx942")));
        assert!(!files.served(&rule("gfx1100")));
    }
}

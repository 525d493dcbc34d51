//! The rules of `check`: `ARCH[:KIND]` ([`Rule`]), and whether an image
//! meets one ([`Rule::served_by`], for `--require`) or is built for one
//! ([`Rule::built_for`], for `--forbid`), as the loaders match code to
//! devices:
//!
//! - **AMDGPU target IDs**: an image's feature left unset (xnack-any)
//!   serves devices with the feature on and off; an image with `xnack+`
//!   serves only `xnack+` devices. A rule names a set of devices: `gfx90a`
//!   is every gfx90a, so only an image that leaves every feature unset
//!   serves it; `gfx90a:xnack-` is the gfx90a devices with xnack off,
//!   served by `gfx90a` and `gfx90a:xnack-` images.
//! - **CUDA**: a cubin for `sm_XY` runs on devices of the same major
//!   version with a minor version of at least Y (`sm_86` code runs on
//!   `sm_87` and `sm_89`, not on `sm_90`); arch-specific code (`sm_90a`)
//!   only on its own version. PTX for `sm_XY` is compiled by the driver for
//!   any device of at least that version (reported as such). An NVPTX
//!   image packed as an `object` (as clang-linker-wrapper packs OpenMP's
//!   linked NVPTX images) is a cubin.
//! - Anything else (bitcode, objects, other processors) serves only its
//!   own processor.
//!
//! An image whose kind is not known (inside a compressed bundle read only
//! as far as its header) never meets a rule that names a kind: it is
//! *undetermined*, which fails a `--forbid` rule it could match.
//! With `exact`, architectures are compared as strings: the processor, and
//! the rule's features present with the same sign.

use std::fmt;

use super::Image;
use super::select::{arch_matches, kind_matches, same_processor};
use crate::bundle::id::TargetId;
use crate::targets;

/// One rule: an architecture (a target ID; `None` for `*`, any) and, if
/// given, a kind (an offload kind such as `hip`, or an image kind such as
/// `cubin`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rule {
    /// The rule as written.
    pub text: String,
    /// The architecture; `None`: any.
    pub arch: Option<String>,
    /// The kind; `None`: any.
    pub kind: Option<String>,
}

/// Whether an image meets a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meets {
    /// It does.
    Yes,
    /// It does, as PTX the driver compiles for the rule's (newer) arch.
    ByPtxJit,
    /// It does not.
    No,
    /// It might: its kind is not known.
    Undetermined,
}

impl Meets {
    /// Whether it does (also through PTX).
    pub fn yes(self) -> bool {
        matches!(self, Meets::Yes | Meets::ByPtxJit)
    }
}

impl Rule {
    /// Parses `ARCH[:KIND]`: `sm_90:cubin`, `gfx942`, `gfx90a:xnack+`,
    /// `gfx90a:xnack-:object`, `*:ptx`, `*`. The last `:`-separated part is
    /// the kind when it does not end in `+` or `-` (a target-ID feature).
    pub fn parse(text: &str) -> Result<Rule, String> {
        let t = text.trim();
        let (arch, kind) = match t.rsplit_once(':') {
            Some((a, k)) if !k.is_empty() && !k.ends_with(['+', '-']) => (a, Some(k)),
            _ => (t, None),
        };
        let arch = arch.trim_end_matches(':');
        if arch.is_empty() {
            return Err(format!(
                "'{text}': no architecture (write `*` for any: `*:{}`)",
                kind.unwrap_or("KIND")
            ));
        }
        if let Some(k) = kind {
            // `gfx90a:xnack` reads as a kind; it is a feature without its
            // sign.
            if ["xnack", "sramecc"].contains(&k) {
                return Err(format!(
                    "'{text}': the feature '{k}' needs a sign: {k}+ or {k}-"
                ));
            }
            check_kind(k).map_err(|e| format!("'{text}': {e}"))?;
        }
        if arch != "*" {
            check_arch(arch).map_err(|e| format!("'{text}': {e}"))?;
        }
        Ok(Rule {
            text: t.to_string(),
            arch: (arch != "*").then(|| arch.to_string()),
            kind: kind.map(str::to_string),
        })
    }

    /// Parses a rule on the architecture alone (`--require-arch`): a
    /// target ID [`check_arch`] accepts, or `*`.
    pub fn parse_arch(arch: &str) -> Result<Rule, String> {
        let arch = arch.trim();
        if arch != "*" {
            check_arch(arch).map_err(|e| format!("'{arch}': {e}"))?;
        }
        Ok(Rule {
            text: arch.to_string(),
            arch: (arch != "*").then(|| arch.to_string()),
            kind: None,
        })
    }

    /// Parses a rule on the kind alone (`--require-kind`): a kind
    /// [`check_kind`] accepts.
    pub fn parse_kind(kind: &str) -> Result<Rule, String> {
        let kind = kind.trim();
        check_kind(kind).map_err(|e| format!("'{kind}': {e}"))?;
        Ok(Rule::kind(kind))
    }

    /// A rule on the architecture alone (`--require-arch`), unchecked.
    pub fn arch(arch: &str) -> Rule {
        Rule {
            text: arch.to_string(),
            arch: Some(arch.to_string()),
            kind: None,
        }
    }

    /// A rule on the kind alone (`--require-kind`), unchecked.
    pub fn kind(kind: &str) -> Rule {
        Rule {
            text: format!("*:{kind}"),
            arch: None,
            kind: Some(kind.to_string()),
        }
    }

    fn kind_meets(&self, img: &Image) -> Meets {
        match &self.kind {
            None => Meets::Yes,
            Some(k) if kind_matches(img, k) => Meets::Yes,
            Some(_) if img.image_kind.is_none() => Meets::Undetermined,
            Some(_) => Meets::No,
        }
    }

    /// Whether `img` serves every device the rule names (see the
    /// [module docs](self)); `exact` compares architectures as strings.
    pub fn served_by(&self, img: &Image, exact: bool) -> Meets {
        let arch = match &self.arch {
            None => Meets::Yes,
            Some(a) if exact => yes_no(arch_matches(img, a)),
            Some(a) => serves(img, a),
        };
        both(arch, self.kind_meets(img))
    }

    /// Whether `img` is built for a device the rule names: its processor,
    /// with no feature set against the rule's (`--forbid gfx90a` takes
    /// every gfx90a image; `gfx90a:xnack+` takes xnack+ and xnack-any
    /// ones).
    pub fn built_for(&self, img: &Image, exact: bool) -> Meets {
        let arch = match &self.arch {
            None => Meets::Yes,
            Some(a) if exact => yes_no(arch_matches(img, a)),
            Some(a) => yes_no(
                TargetId::parse(a).is_some_and(|id| {
                    !img.arch.is_empty()
                        && same_processor(img, id.processor)
                        && id
                            .features
                            .iter()
                            .all(|(f, on)| feature(img, f).is_none_or(|g| g == *on))
                }) || cuda_arch(a)
                    .zip(cuda_arch(&img.arch))
                    .is_some_and(|((n, _), (m, _))| n == m),
            ),
        };
        both(arch, self.kind_meets(img))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether `arch` is a target ID naming something known: a processor
/// [`targets::is_known_arch`] knows, spelt as LLVM spells it (case
/// included), with only features that processor has. The error says what
/// is wrong and names the closest known names.
pub fn check_arch(arch: &str) -> Result<(), String> {
    let Some(id) = TargetId::parse(arch) else {
        return Err(format!(
            "'{arch}' is not an architecture or target ID (gfx90a, gfx90a:xnack+, sm_90)"
        ));
    };
    let p = id.processor;
    if !targets::is_known_arch(p) {
        let suggestions = match p.strip_prefix("compute_") {
            // PTX is named by its SM and the kind.
            Some(n) => vec![format!("sm_{n}:ptx")],
            None => targets::suggest(p, &targets::arch_names()),
        };
        return Err(format!(
            "unknown architecture '{p}'{}",
            targets::did_you_mean(&suggestions)
        ));
    }
    let allowed = targets::amdgpu(p).map_or(&[][..], |g| g.features());
    if let Some(f) = id.features.keys().find(|f| !allowed.contains(f)) {
        return Err(if allowed.is_empty() {
            format!("{p} has no target-ID features ('{f}')")
        } else {
            format!(
                "{p} has no feature '{f}'{} (its features: {})",
                targets::did_you_mean(&targets::suggest(f, allowed)),
                allowed.join(", ")
            )
        });
    }
    Ok(())
}

/// Whether `kind` is a kind rules may name ([`targets::is_known_kind`]);
/// the error names the closest known kinds.
pub fn check_kind(kind: &str) -> Result<(), String> {
    if targets::is_known_kind(kind) {
        return Ok(());
    }
    let suggestions = targets::suggest(kind, targets::KINDS);
    Err(if suggestions.is_empty() {
        format!(
            "unknown kind '{kind}' (kinds: {})",
            targets::KINDS.join(", ")
        )
    } else {
        format!(
            "unknown kind '{kind}'{}",
            targets::did_you_mean(&suggestions)
        )
    })
}

fn yes_no(b: bool) -> Meets {
    if b { Meets::Yes } else { Meets::No }
}

/// Both conditions: `No` wins, then `Undetermined`, then `ByPtxJit`.
fn both(a: Meets, b: Meets) -> Meets {
    match (a, b) {
        (Meets::No, _) | (_, Meets::No) => Meets::No,
        (Meets::Undetermined, _) | (_, Meets::Undetermined) => Meets::Undetermined,
        (Meets::ByPtxJit, _) | (_, Meets::ByPtxJit) => Meets::ByPtxJit,
        _ => Meets::Yes,
    }
}

/// The image's setting of feature `name`: `Some(true)` for `name+`,
/// `Some(false)` for `name-`, `None` when unset (any).
fn feature(img: &Image, name: &str) -> Option<bool> {
    img.features.iter().find_map(|g| {
        if g.strip_suffix('+') == Some(name) {
            Some(true)
        } else if g.strip_suffix('-') == Some(name) {
            Some(false)
        } else {
            None
        }
    })
}

/// `sm_86` → (86, None); `sm_90a` → (90, Some('a')); `sm_100f` → (100,
/// Some('f')); anything else `None`.
fn cuda_arch(a: &str) -> Option<(u32, Option<char>)> {
    let rest = a.strip_prefix("sm_")?;
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let n: u32 = rest[..digits].parse().ok()?;
    let mut suffix = rest[digits..].chars();
    let s = suffix.next();
    (suffix.next().is_none() && s.is_none_or(|c| c.is_ascii_lowercase())).then_some((n, s))
}

/// Whether `img` serves every device `want` names.
fn serves(img: &Image, want: &str) -> Meets {
    if img.arch.is_empty() {
        return Meets::No;
    }
    if let (Some((dev, _)), Some((code, suffix))) = (cuda_arch(want), cuda_arch(&img.arch)) {
        let kind = match super::select::is_nvptx_object(img) {
            true => Some("cubin".to_string()),
            false => img.image_kind.map(|k| k.to_string()),
        };
        return match kind.as_deref() {
            Some("cubin") => yes_no(if suffix == Some('a') {
                dev == code
            } else {
                dev / 10 == code / 10 && dev % 10 >= code % 10
            }),
            Some("ptx") if dev == code => Meets::Yes,
            Some("ptx") if suffix != Some('a') && dev > code => Meets::ByPtxJit,
            Some(_) => yes_no(dev == code),
            None => Meets::Undetermined,
        };
    }
    let Some(id) = TargetId::parse(want) else {
        return Meets::No;
    };
    if !same_processor(img, id.processor) {
        return Meets::No;
    }
    // Every feature the image sets must be set the same way by the rule.
    let ok = img.features.iter().all(|g| {
        let (name, on) = match (g.strip_suffix('+'), g.strip_suffix('-')) {
            (Some(n), _) => (n, true),
            (_, Some(n)) => (n, false),
            _ => return false,
        };
        id.features.get(name) == Some(&on)
    });
    yes_no(ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offload_binary::ImageKind;
    use crate::scan::{Content, Offload};

    fn image(triple: &str, target_id: &str, kind: Option<ImageKind>) -> Image {
        crate::scan::test_image(
            triple,
            target_id,
            Offload::of_bundle_kind("hip"),
            kind.map(Content::Image),
        )
    }

    #[test]
    fn parsing() {
        let r = Rule::parse("gfx90a:xnack+").unwrap();
        assert_eq!(
            (r.arch.as_deref(), r.kind.as_deref()),
            (Some("gfx90a:xnack+"), None)
        );
        let r = Rule::parse("sm_90:cubin").unwrap();
        assert_eq!(
            (r.arch.as_deref(), r.kind.as_deref()),
            (Some("sm_90"), Some("cubin"))
        );
        let r = Rule::parse("*:ptx").unwrap();
        assert_eq!((r.arch, r.kind.as_deref()), (None, Some("ptx")));
        let r = Rule::parse("gfx90a:xnack-:object").unwrap();
        assert_eq!(r.arch.as_deref(), Some("gfx90a:xnack-"));
        assert!(Rule::parse(":ptx").is_err());
        assert!(Rule::parse("gfx90a:xnack+:xnack-").is_err());
        assert!(Rule::parse("").is_err());
        assert!(Rule::parse("gfx9-4-generic:sramecc+:xnack-").is_ok());
        assert!(Rule::parse("sm_100f:ptx").is_ok());
        assert!(Rule::parse("tahiti").is_ok());
        assert!(Rule::parse("x86_64").is_ok());
    }

    /// Rules naming nothing known are errors that name the closest known
    /// names.
    #[test]
    fn unknown_names_are_errors_with_suggestions() {
        for (rule, says) in [
            ("sm90", "did you mean sm_90?"),
            ("sm_90:cubn", "did you mean cubin?"),
            ("gfx90A", "did you mean gfx90a?"),
            ("GFX942", "did you mean gfx942?"),
            ("gfx9999", "gfx909"),
            ("sm_91", "sm_90"),
            ("sm_86a", "unknown architecture 'sm_86a'"),
            ("compute_90", "did you mean sm_90:ptx?"),
            ("gfx90a:xnak+", "did you mean xnack?"),
            ("gfx1030:xnack+", "no target-ID features"),
            ("gfx942:xnak+", "did you mean xnack?"),
            ("sm_90:xnack-", "no target-ID features"),
            ("gfx90a:xnack", "needs a sign"),
            ("*:objekt", "did you mean object?"),
        ] {
            let e = Rule::parse(rule).unwrap_err();
            assert!(e.contains(says) && e.contains(rule), "{rule}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(Rule::parse_arch("gfx90A").is_err());
        assert!(Rule::parse_arch("*").unwrap().arch.is_none());
        assert!(Rule::parse_kind("cubn").is_err());
        assert_eq!(Rule::parse_kind("ptx").unwrap().text, "*:ptx");
    }

    /// (rule, image target ID, image kind, served_by, built_for)
    const AMD: &[(&str, &str, Option<ImageKind>, Meets, Meets)] = &[
        ("gfx90a", "gfx90a", None, Meets::Yes, Meets::Yes),
        ("gfx90a", "gfx90a:xnack+", None, Meets::No, Meets::Yes),
        ("gfx90a:xnack-", "gfx90a", None, Meets::Yes, Meets::Yes),
        ("gfx90a:xnack+", "gfx90a", None, Meets::Yes, Meets::Yes),
        (
            "gfx90a:xnack+",
            "gfx90a:xnack+",
            None,
            Meets::Yes,
            Meets::Yes,
        ),
        ("gfx90a:xnack+", "gfx90a:xnack-", None, Meets::No, Meets::No),
        ("gfx90a:xnack-", "gfx90a:xnack+", None, Meets::No, Meets::No),
        (
            "gfx90a:xnack+",
            "gfx90a:sramecc+:xnack+",
            None,
            Meets::No,
            Meets::Yes,
        ),
        (
            "gfx90a:sramecc+:xnack+",
            "gfx90a:xnack+",
            None,
            Meets::Yes,
            Meets::Yes,
        ),
        ("gfx942", "gfx90a", None, Meets::No, Meets::No),
        ("tahiti", "gfx600", None, Meets::Yes, Meets::Yes),
        (
            "gfx90a:object",
            "gfx90a",
            Some(ImageKind::IMG_Object),
            Meets::Yes,
            Meets::Yes,
        ),
        (
            "gfx90a:object",
            "gfx90a",
            None,
            Meets::Undetermined,
            Meets::Undetermined,
        ),
        (
            "gfx90a:bitcode",
            "gfx90a",
            Some(ImageKind::IMG_Object),
            Meets::No,
            Meets::No,
        ),
        ("gfx90a:hip", "gfx90a", None, Meets::Yes, Meets::Yes),
        (
            "*:object",
            "gfx1030",
            Some(ImageKind::IMG_Object),
            Meets::Yes,
            Meets::Yes,
        ),
    ];

    const CUBIN: Option<ImageKind> = Some(ImageKind::IMG_Cubin);
    const PTX: Option<ImageKind> = Some(ImageKind::IMG_PTX);

    /// (rule, image arch, image kind, served_by, built_for)
    const CUDA: &[(&str, &str, Option<ImageKind>, Meets, Meets)] = &[
        ("sm_86", "sm_86", CUBIN, Meets::Yes, Meets::Yes),
        ("sm_87", "sm_86", CUBIN, Meets::Yes, Meets::No),
        ("sm_89", "sm_86", CUBIN, Meets::Yes, Meets::No),
        ("sm_90", "sm_86", CUBIN, Meets::No, Meets::No),
        ("sm_80", "sm_86", CUBIN, Meets::No, Meets::No),
        ("sm_90:cubin", "sm_90", PTX, Meets::No, Meets::No),
        ("sm_90:cubin", "sm_80", CUBIN, Meets::No, Meets::No),
        ("sm_90", "sm_80", PTX, Meets::ByPtxJit, Meets::No),
        ("sm_90:ptx", "sm_80", PTX, Meets::ByPtxJit, Meets::No),
        ("sm_100", "sm_90", PTX, Meets::ByPtxJit, Meets::No),
        ("sm_80", "sm_90", PTX, Meets::No, Meets::No),
        ("sm_90", "sm_90a", CUBIN, Meets::Yes, Meets::Yes),
        ("sm_100", "sm_90a", CUBIN, Meets::No, Meets::No),
        ("sm_100", "sm_90a", PTX, Meets::No, Meets::No),
        (
            "sm_52",
            "sm_52",
            Some(ImageKind::IMG_Bitcode),
            Meets::Yes,
            Meets::Yes,
        ),
        (
            "sm_53",
            "sm_52",
            Some(ImageKind::IMG_Bitcode),
            Meets::No,
            Meets::No,
        ),
        ("sm_120", "sm_100", CUBIN, Meets::No, Meets::No),
        ("*:ptx", "sm_50", PTX, Meets::Yes, Meets::Yes),
        ("*:cubin", "sm_50", PTX, Meets::No, Meets::No),
        // OpenMP's NVPTX images are packed as objects: cubins.
        ("sm_80:cubin", "sm_80", OBJECT, Meets::Yes, Meets::Yes),
        ("sm_86", "sm_80", OBJECT, Meets::Yes, Meets::No),
        ("sm_90", "sm_80", OBJECT, Meets::No, Meets::No),
        ("sm_80:ptx", "sm_80", OBJECT, Meets::No, Meets::No),
    ];

    const OBJECT: Option<ImageKind> = Some(ImageKind::IMG_Object);

    #[test]
    fn loader_compatible_matching() {
        for (triple, table) in [("amdgcn-amd-amdhsa", AMD), ("nvptx64-nvidia-cuda", CUDA)] {
            for &(rule, target, kind, served, built) in table {
                let r = Rule::parse(rule).unwrap();
                let img = image(triple, target, kind);
                assert_eq!(
                    r.served_by(&img, false),
                    served,
                    "{rule} served by {target}"
                );
                assert_eq!(r.built_for(&img, false), built, "{rule} built for {target}");
            }
        }
    }

    #[test]
    fn exact_is_string_matching() {
        let img = image("amdgcn-amd-amdhsa", "gfx90a:xnack+", None);
        assert_eq!(Rule::arch("gfx90a").served_by(&img, true), Meets::Yes);
        let img = image("nvptx64-nvidia-cuda", "sm_86", CUBIN);
        assert_eq!(Rule::arch("sm_87").served_by(&img, true), Meets::No);
    }
}

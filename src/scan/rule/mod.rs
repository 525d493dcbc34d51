//! The rules of `check`: `ARCH[:KIND]` ([`Rule`]), whether a set of
//! images covers one ([`Rule::coverage`], for `--require`) and whether an
//! image is built for one ([`Rule::built_for`], for `--forbid`), as the
//! loaders match code to devices: how, [`Rule`] says.

use std::fmt;

use super::Image;
use super::select::{arch_matches, cuda_code_matches, kind_matches, same_processor, spir_matches};
use crate::bundle::id::TargetId;
use crate::targets;

/// One rule: an architecture (a target ID; `None` for `*`, any) and, if
/// given, a kind (an offload kind such as `hip`, or an image kind such as
/// `cubin`).
///
/// Rules are matched as the loaders match code to devices. A rule names a
/// set of device configurations, and images cover it when each
/// configuration is served by one of them:
///
/// - **AMDGPU target IDs**: a device runs in a definite mode for each
///   target-ID feature its processor has (`xnack`, `sramecc`). An image
///   that leaves a feature unset serves both modes; `xnack+` only devices
///   with xnack on. `gfx90a` names every gfx90a configuration (four: two
///   features), so a `gfx90a` image covers it, and so do a `gfx90a:xnack+`
///   and a `gfx90a:xnack-` image together; `gfx90a:xnack-` names the two
///   with xnack off. A generic target's image (`gfx9-4-generic`) serves
///   the processors it covers ([`targets::GENERICS`]).
/// - **CUDA**: a cubin for `sm_XY` (or `sm_XYf`) runs on devices of the
///   same major version with a minor version of at least Y (`sm_86` code
///   runs on `sm_87` and `sm_89`, not on `sm_90`); arch-specific code
///   (`sm_90a`) only on its own version. A rule `sm_XY` names the device
///   X.Y, which an `sm_XYa` cubin serves too (a 9.0 device loads `sm_90a`
///   code; a 10.3 device does not load `sm_100a` code); `sm_XYa` asks for
///   arch-specific code for it, met only by `sm_XYa` code (a plain `sm_90`
///   cubin does not meet `sm_90a`); `sm_XYf` names the family's devices
///   from X.Y on (`sm_100f`: 10.0 and 10.3), each to be served. An image's
///   code is what it is built for ([`Image::code_arch`]: `sm_100f` for a
///   family cubin that `cuobjdump` names `sm_100`). PTX counts for the devices the driver can compile it for
///   (reported as through PTX JIT when it is not for that very arch):
///   plain `compute_XY` PTX for every device of at least X.Y, `XYf` PTX
///   for the family's devices from X.Y on, `XYa` PTX for X.Y only. A rule
///   with the kind `cubin` counts no PTX. An NVPTX image packed as an
///   `object` (as clang-linker-wrapper packs OpenMP's linked NVPTX images)
///   is a cubin.
/// - **SPIR and SPIR-V** ([`targets::SPIR_TARGETS`]: `spir64`,
///   `spir64_gen`, `spir64_x86_64`, `spirv64`): their images (Intel's
///   SYCL images, SPIR-V) name no processor, only a triple. A rule naming
///   one is met by, and takes, the images of that triple (its first
///   component: `spir64` names SPIR-V, not the `spir64_gen` code made
///   ahead of time for Intel GPUs). An image with no processor meets no
///   rule that names one (`prune --keep gfx90a` drops SPIR-V).
/// - Anything else (bitcode, objects, other processors) serves only its
///   own processor. A triple's GPU architecture (`nvptx64`, `amdgcn`) is
///   no rule: its images name their processors.
///
/// Which images a rule takes ([`Rule::built_for`], `--forbid`, `prune
/// --drop`) is the images built for its processor; a CUDA rule's `a` or
/// `f` narrows it to that variant's code (`sm_90` takes plain and
/// arch-specific sm_90 images, `sm_90a` arch-specific ones only).
///
/// An image whose kind is not known (inside a compressed bundle read only
/// as far as its header) never meets a rule that names a kind: it is
/// *undetermined*, which fails a `--forbid` rule it could match.
/// With `exact`, architectures are compared as strings: the processor, and
/// the rule's features present with the same sign, and one image must
/// meet the rule.
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
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let t = text.trim();
        let (arch, kind) = match t.rsplit_once(':') {
            Some((a, k)) if !k.is_empty() && !k.ends_with(['+', '-']) => (a, Some(k)),
            _ => (t, None),
        };
        let arch = arch.trim_end_matches(':');
        if arch.is_empty() {
            return Err(RuleError::new(format!(
                "'{text}': no architecture (write `*` for any: `*:{}`)",
                kind.unwrap_or("KIND")
            )));
        }
        if let Some(k) = kind {
            // `gfx90a:xnack` reads as a kind; it is a feature without its
            // sign.
            if ["xnack", "sramecc"].contains(&k) {
                return Err(RuleError::new(format!(
                    "'{text}': the feature '{k}' needs a sign: {k}+ or {k}-"
                )));
            }
            check_kind(k).map_err(|e| e.within(text))?;
        }
        if arch != "*" {
            check_arch(arch).map_err(|e| e.within(text))?;
        }
        Ok(Rule {
            text: t.to_string(),
            arch: (arch != "*").then(|| arch.to_string()),
            kind: kind.map(str::to_string),
        })
    }

    /// Parses a rule on the architecture alone (`--require-arch`): a
    /// target ID naming a processor [`targets::is_known_arch`] knows, spelt
    /// as LLVM spells it, with only features that processor has; or `*`.
    pub fn parse_arch(arch: &str) -> Result<Rule, RuleError> {
        let arch = arch.trim();
        if arch != "*" {
            check_arch(arch).map_err(|e| e.within(arch))?;
        }
        Ok(Rule {
            text: arch.to_string(),
            arch: (arch != "*").then(|| arch.to_string()),
            kind: None,
        })
    }

    /// Parses a rule on the kind alone (`--require-kind`): a kind
    /// [`targets::is_known_kind`] knows.
    pub fn parse_kind(kind: &str) -> Result<Rule, RuleError> {
        let kind = kind.trim();
        check_kind(kind).map_err(|e| e.within(kind))?;
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

    /// Whether `img` alone serves every device configuration the rule
    /// names (see [`Rule`]); `exact` compares architectures
    /// as strings.
    pub fn served_by(&self, img: &Image, exact: bool) -> Meets {
        self.devices(exact)
            .iter()
            .map(|d| self.serves(img, d, exact))
            .fold(Meets::Yes, both)
    }

    /// Whether some device the rule names would load `img`: it serves at
    /// least one of the rule's device configurations (`prune --keep
    /// gfx90a` keeps a `gfx90a:xnack+` image: gfx90a devices with xnack on
    /// load it). The best answer over the configurations: [`Meets::Yes`]
    /// before [`Meets::ByPtxJit`] before [`Meets::Undetermined`].
    pub fn loaded_by_some(&self, img: &Image, exact: bool) -> Meets {
        let rank = |m: Meets| match m {
            Meets::Yes => 3,
            Meets::ByPtxJit => 2,
            Meets::Undetermined => 1,
            Meets::No => 0,
        };
        self.devices(exact)
            .iter()
            .map(|d| self.serves(img, d, exact))
            .max_by_key(|&m| rank(m))
            .unwrap_or(Meets::No)
    }

    /// How a device the rule names loads `img`, in words for a report
    /// (`prune` says why it keeps an image): a configuration that runs it
    /// as it is before one that compiles it (PTX), and `None` when none
    /// does. For `sm_90` and an `sm_90a` cubin: "sm_90 devices load sm_90a
    /// code (arch-specific: sm_90 devices only)".
    pub fn loading(&self, img: &Image) -> Option<String> {
        let devices = self.devices(false);
        let first = |want: Meets| devices.iter().find(|d| self.serves(img, d, false) == want);
        let (d, jit) = match (first(Meets::Yes), first(Meets::ByPtxJit)) {
            (Some(d), _) => (d, false),
            (None, Some(d)) => (d, true),
            (None, None) => return None,
        };
        Some(match d {
            _ if self.arch.is_none() => "the rule takes any architecture".to_string(),
            Device::Cuda { sm, a } => cuda_loading(img, *sm, *a, jit),
            Device::Amd { processor, .. } if canonical_amdgpu(&img.arch) != *processor => format!(
                "{d} devices load {} code (a generic target that covers {processor})",
                img.target_id
            ),
            Device::Amd { .. } => format!("{d} devices load {} code", img.target_id),
            Device::Named(a) => format!("built for {a}"),
        })
    }

    /// Whether `images` together serve every device configuration the
    /// rule names, and which of them do (see [`Rule`]);
    /// `exact` compares architectures as strings (one image must then
    /// meet the rule).
    pub fn coverage(&self, images: &[&Image], exact: bool) -> Coverage {
        let mut c = Coverage {
            passed: true,
            images: Vec::new(),
            by_ptx_jit: false,
            undetermined: Vec::new(),
            unserved: Vec::new(),
        };
        for d in self.devices(exact) {
            let (mut native, mut jit) = (false, false);
            for img in images {
                match self.serves(img, &d, exact) {
                    Meets::Yes => native = true,
                    Meets::ByPtxJit => jit = true,
                    Meets::Undetermined => {
                        if !c.undetermined.contains(&img.id) {
                            c.undetermined.push(img.id);
                        }
                        continue;
                    }
                    Meets::No => continue,
                }
                if !c.images.contains(&img.id) {
                    c.images.push(img.id);
                }
            }
            if !native && !jit {
                c.passed = false;
                c.unserved.push(d.to_string());
            } else if !native {
                c.by_ptx_jit = true;
            }
        }
        c.images.sort_unstable();
        c.undetermined.sort_unstable();
        c.by_ptx_jit &= c.passed;
        c
    }

    /// The device configurations the rule names.
    fn devices(&self, exact: bool) -> Vec<Device> {
        let Some(arch) = self.arch.as_deref().filter(|_| !exact) else {
            return vec![Device::Named(self.arch.clone().unwrap_or_default())];
        };
        if let Some((n, suffix)) = targets::parse_sm(arch) {
            return match suffix {
                Some('a') => vec![Device::Cuda { sm: n, a: true }],
                Some('f') => {
                    let family: Vec<Device> = targets::CUDA_SMS
                        .iter()
                        .map(|c| c.number)
                        .filter(|&m| m / 10 == n / 10 && m % 10 >= n % 10)
                        .filter(|m| !targets::NO_DEVICE_SMS.contains(m))
                        .map(|sm| Device::Cuda { sm, a: false })
                        .collect();
                    if family.is_empty() {
                        vec![Device::Cuda { sm: n, a: false }]
                    } else {
                        family
                    }
                }
                _ => vec![Device::Cuda { sm: n, a: false }],
            };
        }
        let Some(id) = TargetId::parse(arch) else {
            return vec![Device::Named(arch.to_string())];
        };
        let gpu = targets::amdgpu(id.processor)
            .or_else(|| targets::amdgpu(&id.processor.to_ascii_lowercase()));
        let (processor, features): (String, &[&str]) = match gpu {
            Some(g) => (g.canonical.to_string(), g.features()),
            None if targets::RETIRED_AMDGCN.contains(&id.processor) => {
                (id.processor.to_string(), &["sramecc", "xnack"])
            }
            None => return vec![Device::Named(arch.to_string())],
        };
        // Every on/off assignment of the processor's features that agrees
        // with the rule's.
        let mut configs: Vec<Vec<(&'static str, bool)>> = vec![Vec::new()];
        for &f in features {
            let modes: Vec<bool> = match id.features.get(f) {
                Some(&on) => vec![on],
                None => vec![true, false],
            };
            configs = configs
                .into_iter()
                .flat_map(|c| {
                    modes.iter().map(move |&on| {
                        let mut c = c.clone();
                        c.push((f, on));
                        c
                    })
                })
                .collect();
        }
        configs
            .into_iter()
            .map(|features| Device::Amd {
                processor: processor.clone(),
                features,
            })
            .collect()
    }

    /// Whether `img` serves the device configuration `d`.
    fn serves(&self, img: &Image, d: &Device, exact: bool) -> Meets {
        let arch = match d {
            _ if self.arch.is_none() => Meets::Yes,
            Device::Named(a) if exact => yes_no(arch_matches(img, a)),
            Device::Named(a) => serves(img, a),
            Device::Cuda { sm, a } => serves_cuda(img, *sm, *a),
            Device::Amd {
                processor,
                features,
            } => yes_no(serves_amd(img, processor, features)),
        };
        both(arch, self.kind_meets(img))
    }

    /// Whether `img` is built for a device the rule names: its processor,
    /// with no feature set against the rule's (`--forbid gfx90a` takes
    /// every gfx90a image; `gfx90a:xnack+` takes xnack+ and xnack-any
    /// ones). A CUDA rule takes the code of its SM, of its variant when it
    /// names one: `sm_90` every sm_90 image, plain, arch-specific and
    /// family; `sm_90a` only arch-specific code, `sm_100f` only family
    /// code ([`Image::code_arch`]).
    pub fn built_for(&self, img: &Image, exact: bool) -> Meets {
        let arch = match &self.arch {
            None => Meets::Yes,
            Some(a) if exact => yes_no(arch_matches(img, a)),
            Some(a) => yes_no(match cuda_code_matches(img, a).or(spir_matches(img, a)) {
                Some(m) => m,
                None => TargetId::parse(a).is_some_and(|id| {
                    same_processor(img, id.processor)
                        && id
                            .features
                            .iter()
                            .all(|(f, on)| feature(img, f).is_none_or(|g| g == *on))
                }),
            }),
        };
        both(arch, self.kind_meets(img))
    }
}

/// Whether a set of images covers a rule, and how ([`Rule::coverage`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Coverage {
    /// Whether every device configuration the rule names is served.
    pub passed: bool,
    /// The images that serve one or more of them (ids, ascending).
    pub images: Vec<usize>,
    /// Whether some configuration is served only through PTX the driver
    /// compiles (only when the rule passes).
    pub by_ptx_jit: bool,
    /// Images whose kind is not known that could serve one.
    pub undetermined: Vec<usize>,
    /// The configurations no image serves (`gfx90a:sramecc+:xnack-`,
    /// `sm_103`).
    pub unserved: Vec<String>,
}

/// One device configuration a rule names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Device {
    /// An AMDGPU processor (canonical) with a mode for each of its
    /// target-ID features.
    Amd {
        processor: String,
        features: Vec<(&'static str, bool)>,
    },
    /// A CUDA device of compute capability `sm` (major × 10 + minor);
    /// with `a`, arch-specific code for it is asked for.
    Cuda { sm: u32, a: bool },
    /// Anything else: the rule's architecture as written (matched as
    /// one image's before).
    Named(String),
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Amd {
                processor,
                features,
            } => {
                f.write_str(processor)?;
                for (name, on) in features {
                    write!(f, ":{name}{}", if *on { '+' } else { '-' })?;
                }
                Ok(())
            }
            Device::Cuda { sm, a } => write!(f, "sm_{sm}{}", if *a { "a" } else { "" }),
            Device::Named(a) => f.write_str(a),
        }
    }
}

/// The canonical AMDGPU processor `arch` names (case and aliases aside),
/// or `arch` lowercased.
fn canonical_amdgpu(arch: &str) -> String {
    let lower = arch.to_ascii_lowercase();
    targets::amdgpu(&lower).map_or(lower, |g| g.canonical.to_string())
}

/// Whether `img` serves AMDGPU `processor` in the modes `features`: it is
/// for that processor (or a generic target covering it), and every
/// feature it sets is one of the modes.
fn serves_amd(img: &Image, processor: &str, features: &[(&str, bool)]) -> bool {
    if img.arch.is_empty() || !targets::runs_on(&canonical_amdgpu(&img.arch), processor) {
        return false;
    }
    img.features.iter().all(|g| {
        let (name, on) = match (g.strip_suffix('+'), g.strip_suffix('-')) {
            (Some(n), _) => (n, true),
            (_, Some(n)) => (n, false),
            _ => return false,
        };
        features.contains(&(name, on))
    })
}

/// Whether `img` serves a CUDA device of compute capability `dev` (with
/// `a`: with arch-specific code for it).
fn serves_cuda(img: &Image, dev: u32, a: bool) -> Meets {
    let Some((code, suffix)) = targets::parse_sm(img.code_arch()) else {
        return Meets::No;
    };
    let kind = match super::select::is_nvptx_object(img) {
        true => Some("cubin".to_string()),
        false => img.image_kind.map(|k| k.to_string()),
    };
    let same_family = code / 10 == dev / 10 && dev % 10 >= code % 10;
    let ptx = |ok: bool| match ok {
        true if code == dev => Meets::Yes,
        true => Meets::ByPtxJit,
        false => Meets::No,
    };
    match kind.as_deref() {
        None => Meets::Undetermined,
        // Arch-specific code is asked for: only that arch's `a` code.
        _ if a => yes_no(code == dev && suffix == Some('a')),
        Some("cubin") => yes_no(match suffix {
            Some('a') => code == dev,
            _ => same_family,
        }),
        Some("ptx") => ptx(match suffix {
            Some('a') => code == dev,
            Some('f') => same_family,
            _ => dev >= code,
        }),
        Some(_) => yes_no(code == dev),
    }
}

/// How a CUDA device of compute capability `dev` (asking for
/// arch-specific code with `a`) loads `img`, which it does (compiling PTX
/// with `jit`), in words ([`Rule::loading`]).
fn cuda_loading(img: &Image, dev: u32, a: bool, jit: bool) -> String {
    let code = img.code_arch();
    let (n, suffix) = targets::parse_sm(code).unwrap_or((dev, None));
    let ptx = img.image_kind.is_some_and(|k| k.to_string() == "ptx");
    match suffix {
        _ if jit => format!("sm_{dev} devices compile {code} PTX for themselves"),
        _ if ptx => format!("{code} PTX, which sm_{dev} devices compile"),
        _ if a => format!("arch-specific {code} code, for sm_{dev} devices"),
        Some('a') => {
            format!("sm_{dev} devices load {code} code (arch-specific: sm_{n} devices only)")
        }
        Some(_) => format!(
            "sm_{dev} devices load {code} code (family: sm_{n} and the later {}.x devices)",
            n / 10
        ),
        None if n == dev => format!("{code} code, for sm_{dev} devices"),
        None => {
            format!("sm_{dev} devices load {code} code (the same major version, an older minor)")
        }
    }
}

/// Why a rule, or the architecture or kind it names, is not one: what is
/// wrong, with the text given and the closest known names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    message: String,
}

impl RuleError {
    pub(crate) fn new(message: String) -> RuleError {
        RuleError { message }
    }

    /// The same error, said of the rule `text` it was found in.
    pub(crate) fn within(self, text: &str) -> RuleError {
        RuleError::new(format!("'{text}': {}", self.message))
    }
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RuleError {}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether `arch` is a target ID naming something known: a processor
/// [`targets::is_known_arch`] knows, spelt as LLVM spells it (case
/// included), with only features that processor has, and not a GPU
/// triple's architecture (`nvptx64`), which names no image. The error says what
/// is wrong and names the closest known names.
pub fn check_arch(arch: &str) -> Result<(), RuleError> {
    let Some(id) = TargetId::parse(arch) else {
        return Err(RuleError::new(format!(
            "'{arch}' is not an architecture or target ID (gfx90a, gfx90a:xnack+, sm_90)"
        )));
    };
    let p = id.processor;
    let triple_arch = crate::llvm::triple::parse_arch(p);
    if targets::amdgpu(p).is_none() && super::select::is_gpu_triple_arch(triple_arch) {
        // `nvptx64` and `amdgcn` are triples' architectures; their images
        // are named by their processors.
        return Err(RuleError::new(format!(
            "'{p}' is the architecture of a triple, not a processor: name the \
             processor (sm_90, gfx942), or the kind (*:cuda, *:hip)"
        )));
    }
    if !targets::is_known_arch(p) {
        let suggestions = match p.strip_prefix("compute_") {
            // PTX is named by its SM and the kind.
            Some(n) => vec![format!("sm_{n}:ptx")],
            None => targets::suggest(p, &targets::arch_names()),
        };
        return Err(RuleError::new(format!(
            "unknown architecture '{p}'{}",
            targets::did_you_mean(&suggestions)
        )));
    }
    let allowed = targets::amdgpu(p).map_or(&[][..], |g| g.features());
    if let Some(f) = id.features.keys().find(|f| !allowed.contains(f)) {
        return Err(RuleError::new(if allowed.is_empty() {
            format!("{p} has no target-ID features ('{f}')")
        } else {
            format!(
                "{p} has no feature '{f}'{} (its features: {})",
                targets::did_you_mean(&targets::suggest(f, allowed)),
                allowed.join(", ")
            )
        }));
    }
    Ok(())
}

/// Whether `kind` is a kind rules may name ([`targets::is_known_kind`]);
/// the error names the closest known kinds.
pub fn check_kind(kind: &str) -> Result<(), RuleError> {
    if targets::is_known_kind(kind) {
        return Ok(());
    }
    let suggestions = targets::suggest(kind, targets::KINDS);
    Err(RuleError::new(if suggestions.is_empty() {
        format!(
            "unknown kind '{kind}' (kinds: {})",
            targets::KINDS.join(", ")
        )
    } else {
        format!(
            "unknown kind '{kind}'{}",
            targets::did_you_mean(&suggestions)
        )
    }))
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

/// Whether `img` serves every device `want` (no AMDGPU processor or CUDA
/// arch: the table does not know it) names: the same processor, and every
/// feature the image sets set the same way by `want`.
fn serves(img: &Image, want: &str) -> Meets {
    if let Some(m) = spir_matches(img, want) {
        return yes_no(m);
    }
    if img.arch.is_empty() {
        // A host CPU image: its CPU runs it.
        return yes_no(same_processor(img, want));
    }
    let Some(id) = TargetId::parse(want) else {
        return Meets::No;
    };
    if !same_processor(img, id.processor) {
        return Meets::No;
    }
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
mod tests;

//! The targets the scanners know by name, so that a rule naming nothing
//! real is an error instead of a rule that never matches:
//!
//! - [`AMDGCN`] and [`R600`]: LLVM 22's AMDGPU processors, their aliases and
//!   target-ID features (generic targets such as `gfx9-4-generic`
//!   included), and [`RETIRED_AMDGCN`], processors older LLVMs had;
//! - [`GENERICS`]: which processors each generic target's code runs on;
//! - [`CUDA_SMS`]: the CUDA compute capabilities a fatbin can hold, with
//!   their `a` (architecture-specific) and `f` (family) variants;
//! - [`KINDS`]: the offload kinds and image kinds reports name;
//! - [`SPIR_TARGETS`]: the SPIR and SPIR-V targets (Intel's SYCL targets
//!   among them) that name images by their triple, having no processor;
//! - [`is_known_arch`] and [`is_known_kind`]: whether a rule names
//!   something real.
//!
//! Names are case-sensitive, as LLVM and the loaders compare them.

/// An AMDGPU processor name from LLVM's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AmdGpu {
    /// The name as written (a canonical name or an alias).
    pub name: &'static str,
    /// The canonical `gfx…` (or R600 family) name.
    pub canonical: &'static str,
    /// Has the `xnack` target feature.
    pub xnack: bool,
    /// Has the `sramecc` target feature.
    pub sramecc: bool,
}

impl AmdGpu {
    /// The target-ID features the processor accepts, alphabetically.
    pub fn features(&self) -> &'static [&'static str] {
        match (self.sramecc, self.xnack) {
            (true, true) => &["sramecc", "xnack"],
            (true, false) => &["sramecc"],
            (false, true) => &["xnack"],
            (false, false) => &[],
        }
    }
}

const fn gpu(name: &'static str, canonical: &'static str, sramecc: bool, xnack: bool) -> AmdGpu {
    AmdGpu {
        name,
        canonical,
        xnack,
        sramecc,
    }
}

/// LLVM 22's AMDGCN processors and aliases with their target-ID features
/// (`FEATURE_SRAMECC`, `FEATURE_XNACK` of `getArchAttrAMDGCN`; gfx1250's
/// always-on XNACK is not a target-ID feature). Dumped from `libLLVM-22`
/// (`fillValidArchListAMDGCN`, `getArchAttrAMDGCN`), generic targets
/// included; the linker tests compare the canonical names with what
/// `llc -march=amdgcn -mcpu=help` lists.
pub const AMDGCN: &[AmdGpu] = &[
    gpu("gfx600", "gfx600", false, false),
    gpu("tahiti", "gfx600", false, false),
    gpu("gfx601", "gfx601", false, false),
    gpu("pitcairn", "gfx601", false, false),
    gpu("verde", "gfx601", false, false),
    gpu("gfx602", "gfx602", false, false),
    gpu("hainan", "gfx602", false, false),
    gpu("oland", "gfx602", false, false),
    gpu("gfx700", "gfx700", false, false),
    gpu("kaveri", "gfx700", false, false),
    gpu("gfx701", "gfx701", false, false),
    gpu("hawaii", "gfx701", false, false),
    gpu("gfx702", "gfx702", false, false),
    gpu("gfx703", "gfx703", false, false),
    gpu("kabini", "gfx703", false, false),
    gpu("mullins", "gfx703", false, false),
    gpu("gfx704", "gfx704", false, false),
    gpu("bonaire", "gfx704", false, false),
    gpu("gfx705", "gfx705", false, false),
    gpu("gfx801", "gfx801", false, true),
    gpu("carrizo", "gfx801", false, true),
    gpu("gfx802", "gfx802", false, false),
    gpu("iceland", "gfx802", false, false),
    gpu("tonga", "gfx802", false, false),
    gpu("gfx803", "gfx803", false, false),
    gpu("fiji", "gfx803", false, false),
    gpu("polaris10", "gfx803", false, false),
    gpu("polaris11", "gfx803", false, false),
    gpu("gfx805", "gfx805", false, false),
    gpu("tongapro", "gfx805", false, false),
    gpu("gfx810", "gfx810", false, true),
    gpu("stoney", "gfx810", false, true),
    gpu("gfx900", "gfx900", false, true),
    gpu("gfx902", "gfx902", false, true),
    gpu("gfx904", "gfx904", false, true),
    gpu("gfx906", "gfx906", true, true),
    gpu("gfx908", "gfx908", true, true),
    gpu("gfx909", "gfx909", false, true),
    gpu("gfx90a", "gfx90a", true, true),
    gpu("gfx90c", "gfx90c", false, true),
    gpu("gfx942", "gfx942", true, true),
    gpu("gfx950", "gfx950", true, true),
    gpu("gfx1010", "gfx1010", false, true),
    gpu("gfx1011", "gfx1011", false, true),
    gpu("gfx1012", "gfx1012", false, true),
    gpu("gfx1013", "gfx1013", false, true),
    gpu("gfx1030", "gfx1030", false, false),
    gpu("gfx1031", "gfx1031", false, false),
    gpu("gfx1032", "gfx1032", false, false),
    gpu("gfx1033", "gfx1033", false, false),
    gpu("gfx1034", "gfx1034", false, false),
    gpu("gfx1035", "gfx1035", false, false),
    gpu("gfx1036", "gfx1036", false, false),
    gpu("gfx1100", "gfx1100", false, false),
    gpu("gfx1101", "gfx1101", false, false),
    gpu("gfx1102", "gfx1102", false, false),
    gpu("gfx1103", "gfx1103", false, false),
    gpu("gfx1150", "gfx1150", false, false),
    gpu("gfx1151", "gfx1151", false, false),
    gpu("gfx1152", "gfx1152", false, false),
    gpu("gfx1153", "gfx1153", false, false),
    gpu("gfx1200", "gfx1200", false, false),
    gpu("gfx1201", "gfx1201", false, false),
    gpu("gfx1250", "gfx1250", false, false),
    gpu("gfx1251", "gfx1251", false, false),
    gpu("gfx9-generic", "gfx9-generic", false, true),
    gpu("gfx10-1-generic", "gfx10-1-generic", false, true),
    gpu("gfx10-3-generic", "gfx10-3-generic", false, false),
    gpu("gfx11-generic", "gfx11-generic", false, false),
    gpu("gfx12-generic", "gfx12-generic", false, false),
    gpu("gfx9-4-generic", "gfx9-4-generic", true, true),
];

/// LLVM 22's R600 processors and aliases (none has target-ID features).
pub const R600: &[AmdGpu] = &[
    gpu("r600", "r600", false, false),
    gpu("rv630", "r600", false, false),
    gpu("rv635", "r600", false, false),
    gpu("r630", "r630", false, false),
    gpu("rs780", "rs880", false, false),
    gpu("rs880", "rs880", false, false),
    gpu("rv610", "rs880", false, false),
    gpu("rv620", "rs880", false, false),
    gpu("rv670", "rv670", false, false),
    gpu("rv710", "rv710", false, false),
    gpu("rv730", "rv730", false, false),
    gpu("rv740", "rv770", false, false),
    gpu("rv770", "rv770", false, false),
    gpu("cedar", "cedar", false, false),
    gpu("palm", "cedar", false, false),
    gpu("cypress", "cypress", false, false),
    gpu("hemlock", "cypress", false, false),
    gpu("juniper", "juniper", false, false),
    gpu("redwood", "redwood", false, false),
    gpu("sumo", "sumo", false, false),
    gpu("sumo2", "sumo", false, false),
    gpu("barts", "barts", false, false),
    gpu("caicos", "caicos", false, false),
    gpu("aruba", "cayman", false, false),
    gpu("cayman", "cayman", false, false),
    gpu("turks", "turks", false, false),
];

/// AMDGPU processors LLVM 22 no longer knows but that code objects of
/// shipped ROCm 6 libraries are built for (their `EF_AMDGPU_MACH` values
/// are reserved in LLVM 22): rules may still name them.
pub const RETIRED_AMDGCN: &[&str] = &["gfx940", "gfx941"];

/// A generic AMDGPU target and the processors its code runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Generic {
    /// The generic target (`gfx9-4-generic`).
    pub name: &'static str,
    /// The processors it covers (LLVM's "AMDGPU Generic Processors" table,
    /// as ROCr and CLR map them; gfx940 and gfx941, which LLVM 22 dropped,
    /// still listed for the code objects built for them).
    pub members: &'static [&'static str],
}

/// LLVM 22's generic AMDGPU targets. No generic covers gfx6xx–gfx8xx,
/// gfx908, gfx90a, gfx1250 or gfx1251.
pub const GENERICS: &[Generic] = &[
    Generic {
        name: "gfx9-generic",
        members: &["gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"],
    },
    Generic {
        name: "gfx9-4-generic",
        members: &["gfx940", "gfx941", "gfx942", "gfx950"],
    },
    Generic {
        name: "gfx10-1-generic",
        members: &["gfx1010", "gfx1011", "gfx1012", "gfx1013"],
    },
    Generic {
        name: "gfx10-3-generic",
        members: &[
            "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036",
        ],
    },
    Generic {
        name: "gfx11-generic",
        members: &[
            "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
        ],
    },
    Generic {
        name: "gfx12-generic",
        members: &["gfx1200", "gfx1201"],
    },
];

/// The AMDGCN processor (or alias) `name`, exactly as LLVM spells it.
pub(crate) fn amdgcn(name: &str) -> Option<&'static AmdGpu> {
    AMDGCN.iter().find(|g| g.name == name)
}

/// The AMDGPU processor (or alias) `name` of either table, exactly as LLVM
/// spells it.
pub fn amdgpu(name: &str) -> Option<&'static AmdGpu> {
    amdgcn(name).or_else(|| R600.iter().find(|g| g.name == name))
}

/// The generic target `name`, if it is one.
pub fn generic(name: &str) -> Option<&'static Generic> {
    GENERICS.iter().find(|g| g.name == name)
}

/// Whether code for `image` (a processor or generic target, canonical)
/// runs on `processor` (canonical): the same name, or a generic target
/// that lists it.
pub fn runs_on(image: &str, processor: &str) -> bool {
    image == processor || generic(image).is_some_and(|g| g.members.contains(&processor))
}

/// A CUDA compute capability as `sm_XY` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CudaSm {
    /// `XY`: major version × 10 + minor (sm_121 is 12.1).
    pub number: u32,
    /// Whether `sm_XYa` (architecture-specific code) exists.
    pub a: bool,
    /// Whether `sm_XYf` (family code) exists.
    pub f: bool,
}

const fn sm(number: u32, a: bool, f: bool) -> CudaSm {
    CudaSm { number, a, f }
}

/// The CUDA compute capabilities a fatbin can hold, from sm_10 (CUDA 1) to
/// sm_121 (CUDA 13); `a` variants from sm_90, `f` variants from sm_100.
/// sm_101 is what CUDA 12.8–12.9 called sm_110; sm_107 is past CUDA 13.0.
pub const CUDA_SMS: &[CudaSm] = &[
    sm(10, false, false),
    sm(11, false, false),
    sm(12, false, false),
    sm(13, false, false),
    sm(20, false, false),
    sm(21, false, false),
    sm(30, false, false),
    sm(32, false, false),
    sm(35, false, false),
    sm(37, false, false),
    sm(50, false, false),
    sm(52, false, false),
    sm(53, false, false),
    sm(60, false, false),
    sm(61, false, false),
    sm(62, false, false),
    sm(70, false, false),
    sm(72, false, false),
    sm(75, false, false),
    sm(80, false, false),
    sm(86, false, false),
    sm(87, false, false),
    sm(88, false, false),
    sm(89, false, false),
    sm(90, true, false),
    sm(100, true, true),
    sm(101, true, true),
    sm(103, true, true),
    sm(107, true, true),
    sm(110, true, true),
    sm(120, true, true),
    sm(121, true, true),
];

/// Numbers of [`CUDA_SMS`] no device reports under CUDA 13.0: sm_101 was
/// renamed sm_110, sm_107 is newer. A family rule (`sm_100f`) does not ask
/// for them.
pub(crate) const NO_DEVICE_SMS: &[u32] = &[101, 107];

/// `sm_XY`, `sm_XYa` or `sm_XYf` with any number: (XY, suffix). The name
/// need not be in [`CUDA_SMS`] (images are named as they come).
pub fn parse_sm(name: &str) -> Option<(u32, Option<char>)> {
    let rest = name.strip_prefix("sm_")?;
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 4 {
        return None;
    }
    let n: u32 = rest[..digits].parse().ok()?;
    match &rest[digits..] {
        "" => Some((n, None)),
        "a" => Some((n, Some('a'))),
        "f" => Some((n, Some('f'))),
        _ => None,
    }
}

/// Whether `name` is a known CUDA arch: `sm_XY` of [`CUDA_SMS`], with an
/// `a` or `f` where that variant exists.
pub(crate) fn is_cuda_sm(name: &str) -> bool {
    parse_sm(name).is_some_and(|(n, s)| {
        CUDA_SMS.iter().any(|c| {
            c.number == n
                && match s {
                    None => true,
                    Some('a') => c.a,
                    Some(_) => c.f,
                }
        })
    })
}

/// Every known CUDA arch name, in [`CUDA_SMS`] order.
pub(crate) fn cuda_names() -> impl Iterator<Item = String> {
    CUDA_SMS.iter().flat_map(|c| {
        let n = c.number;
        std::iter::once(format!("sm_{n}"))
            .chain(c.f.then(|| format!("sm_{n}f")))
            .chain(c.a.then(|| format!("sm_{n}a")))
    })
}

/// Other architectures an offload image may name: clang 22's offload
/// archs that are neither AMDGPU nor CUDA processors.
pub(crate) const OTHER_ARCHS: &[&str] = &["amdgcnspirv", "bmg_g21", "generic", "graniterapids"];

/// The SPIR and SPIR-V targets a rule may name besides the spellings
/// LLVM's triples give them ([`is_spir_target`]): the targets of Intel's
/// SYCL compiler (`-fsycl-targets`: `spir64` SPIR-V, `spir64_gen` code
/// for Intel GPUs made ahead of time, `spir64_x86_64` for CPUs,
/// `spir64_fpga`) and the SPIR-V triples' `spirv64`, `spirv32`, `spirv`.
/// Their images name no processor: the first component of the image's
/// triple (a SYCL table's section name, a bundle ID's triple) is the
/// target.
pub const SPIR_TARGETS: &[&str] = &[
    "spir64",
    "spir64_gen",
    "spir64_x86_64",
    "spir64_fpga",
    "spirv64",
    "spirv32",
    "spirv",
    "spir",
];

/// Whether `name` is a SPIR or SPIR-V target: one of [`SPIR_TARGETS`], or
/// a name LLVM's triples read as SPIR or SPIR-V (`spirv64v1.5`).
pub fn is_spir_target(name: &str) -> bool {
    use crate::llvm::triple::{Arch, parse_arch};
    SPIR_TARGETS.contains(&name)
        || matches!(
            parse_arch(name),
            Arch::Spir | Arch::Spir64 | Arch::Spirv | Arch::Spirv32 | Arch::Spirv64
        )
}

/// Whether `name` is an architecture the scanners know: an AMDGPU
/// processor, alias or generic target of LLVM 22 (or a
/// [retired](RETIRED_AMDGCN) one), a CUDA arch (`sm_XY` of [`CUDA_SMS`],
/// with an `a` or `f` where that variant exists), a CPU architecture LLVM's
/// triples name (`x86_64`, `aarch64`, …), a [SPIR target](is_spir_target)
/// or one of clang 22's other offload archs (`amdgcnspirv`, `bmg_g21`,
/// `generic`, `graniterapids`).
pub fn is_known_arch(name: &str) -> bool {
    amdgpu(name).is_some()
        || RETIRED_AMDGCN.contains(&name)
        || is_cuda_sm(name)
        || OTHER_ARCHS.contains(&name)
        || is_spir_target(name)
        || crate::llvm::triple::parse_arch(name) != crate::llvm::triple::Arch::Unknown
}

/// The offload kinds (`hipv4` is HIP) and image kinds reports name, which
/// rules may name as their kind.
pub const KINDS: &[&str] = &[
    "openmp",
    "cuda",
    "hip",
    "hipv4",
    "sycl",
    "opencl",
    "host",
    "none",
    "object",
    "bitcode",
    "cubin",
    "ptx",
    "nvvm",
    "fatbinary",
    "spirv",
    "archive",
    "offload-binary",
    "bundle",
    "ccob",
    "unknown",
];

/// Whether `kind` is a kind rules may name: one of [`KINDS`], or
/// `unknown-N` (an image kind no reader knows).
pub fn is_known_kind(kind: &str) -> bool {
    KINDS.contains(&kind)
        || kind
            .strip_prefix("unknown-")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Every known architecture name (AMDGPU, CUDA, SPIR, other offload archs),
/// for [`suggest`].
pub(crate) fn arch_names() -> Vec<String> {
    AMDGCN
        .iter()
        .chain(R600)
        .map(|g| g.name.to_string())
        .chain(RETIRED_AMDGCN.iter().map(|s| s.to_string()))
        .chain(cuda_names())
        .chain(OTHER_ARCHS.iter().map(|s| s.to_string()))
        .chain(SPIR_TARGETS.iter().map(|s| s.to_string()))
        .chain(
            ["x86_64", "aarch64", "ppc64le", "ppc64", "riscv64", "i386"]
                .iter()
                .map(|s| s.to_string()),
        )
        .collect()
}

/// The names of `known` closest to `name`: the one equal to it ignoring
/// case if there is one, else those at the least edit distance (ignoring
/// case), if that distance is small for the name's length; at most three,
/// in `known`'s order.
pub(crate) fn suggest<S: AsRef<str>>(name: &str, known: &[S]) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    if let Some(k) = known.iter().find(|k| k.as_ref().eq_ignore_ascii_case(name)) {
        return vec![k.as_ref().to_string()];
    }
    let limit = (lower.chars().count() / 3).max(2);
    // Ties go to the longest common start (sm_91 is nearer sm_90 than
    // sm_11), then to `known`'s order.
    let common = |k: &str| {
        lower
            .bytes()
            .zip(k.to_ascii_lowercase().bytes())
            .take_while(|(a, b)| a == b)
            .count()
    };
    let mut scored: Vec<(usize, std::cmp::Reverse<usize>, &str)> = known
        .iter()
        .map(|k| {
            let k = k.as_ref();
            let d = distance(&lower, &k.to_ascii_lowercase());
            (d, std::cmp::Reverse(common(k)), k)
        })
        .filter(|&(d, _, _)| d <= limit)
        .collect();
    scored.sort_by_key(|&(d, c, _)| (d, c));
    let Some(&(best, prefix, _)) = scored.first() else {
        return Vec::new();
    };
    scored
        .into_iter()
        .filter(|&(d, c, _)| (d, c) == (best, prefix))
        .take(3)
        .map(|(_, _, k)| k.to_string())
        .collect()
}

/// " (did you mean a, b?)" for suggestions, or nothing.
pub(crate) fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", suggestions.join(" or "))
    }
}

/// The Levenshtein distance between `a` and `b`, in characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names() {
        for ok in [
            "gfx90a",
            "tahiti",
            "gfx9-4-generic",
            "gfx940",
            "cayman",
            "sm_90",
            "sm_90a",
            "sm_100f",
            "sm_121a",
            "sm_10",
            "x86_64",
            "aarch64",
            "generic",
        ] {
            assert!(is_known_arch(ok), "{ok}");
        }
        for bad in [
            "gfx90A",
            "GFX90A",
            "gfx9999",
            "sm90",
            "sm_90f",
            "sm_91",
            "sm_86a",
            "sm_1000",
            "",
            "gfx9-5-generic",
            "compute_90",
        ] {
            assert!(!is_known_arch(bad), "{bad}");
        }
        assert!(is_known_kind("cubin") && is_known_kind("hipv4") && is_known_kind("unknown-7"));
        assert!(!is_known_kind("cubn") && !is_known_kind("unknown-") && !is_known_kind("CUBIN"));
    }

    #[test]
    fn suggestions() {
        let archs = arch_names();
        assert_eq!(suggest("sm90", &archs), ["sm_90"]);
        assert_eq!(suggest("gfx90A", &archs), ["gfx90a"]);
        assert_eq!(suggest("GFX942", &archs), ["gfx942"]);
        assert!(suggest("gfx9999", &archs).contains(&"gfx909".to_string()));
        assert_eq!(suggest("sm_91", &archs), ["sm_90"]);
        assert_eq!(suggest("cubn", KINDS), ["cubin"]);
        assert!(suggest("something-else-entirely", &archs).is_empty());
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn generics_cover_their_members() {
        assert!(runs_on("gfx9-4-generic", "gfx942"));
        assert!(runs_on("gfx9-generic", "gfx906"));
        assert!(!runs_on("gfx9-generic", "gfx90a"));
        assert!(!runs_on("gfx9-generic", "gfx908"));
        assert!(runs_on("gfx90a", "gfx90a"));
        // Every generic and member is a processor LLVM 22 (or an older
        // one) knows.
        for g in GENERICS {
            assert!(amdgcn(g.name).is_some(), "{}", g.name);
            for m in g.members {
                assert!(amdgcn(m).is_some() || RETIRED_AMDGCN.contains(m), "{m}");
            }
        }
    }
}

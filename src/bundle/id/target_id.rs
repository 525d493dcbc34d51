//! Target IDs (`processor[:feature±]…`, `clang/lib/Basic/TargetID.cpp`):
//! their format, the processor looked up in LLVM's AMDGPU table, and
//! clang's `OffloadArch` list of the processors a bundle-entry ID keeps.

use std::collections::BTreeMap;

use crate::llvm::triple::Triple;
use crate::targets::{self, AmdGpu};

/// Feature name → on (`+`) or off (`-`).
pub(super) type Features<'a> = BTreeMap<&'a str, bool>;

/// A target ID split into its processor and features, checked for format
/// only (`clang::parseTargetIDWithFormatCheckingOnly`): the processor is
/// not looked up, so any name is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetId<'a> {
    /// The processor as written (`gfx90a`, `sm_80`).
    pub processor: &'a str,
    /// Feature name → on (`+`) or off (`-`).
    pub features: BTreeMap<&'a str, bool>,
}

impl<'a> TargetId<'a> {
    /// `processor[:feature±]…` (one trailing `:` allowed, as in LLVM);
    /// `None` for an empty processor, a feature without `+` or `-`, or a
    /// repeated feature.
    pub fn parse(id: &'a str) -> Option<TargetId<'a>> {
        let (processor, features) = split_target_id(id).ok()?;
        (!processor.is_empty()).then_some(TargetId {
            processor,
            features,
        })
    }
}

/// The canonical name of an AMDGPU processor or alias (`tahiti` is
/// `gfx600`) in LLVM's table for `triple` (AMDGCN or R600), if it is there
/// (names are case-sensitive, as in LLVM).
pub fn canonical_amdgpu_processor(triple: &Triple, name: &str) -> Option<&'static str> {
    triple
        .is_amdgpu()
        .then(|| amdgpu_processor(triple, name))
        .flatten()
        .map(|g| g.canonical)
}

/// `parseTargetIDWithFormatCheckingOnly`: `processor[:feature±]…`. An empty
/// ID gives an empty processor. On a format error (empty processor, a
/// feature without `+`/`-`, a repeated feature) the error carries the
/// features read before it.
pub(super) fn split_target_id(id: &str) -> Result<(&str, Features<'_>), Features<'_>> {
    let mut features = Features::new();
    if id.is_empty() {
        return Ok(("", features));
    }
    let (processor, rest) = id.split_once(':').unwrap_or((id, ""));
    if processor.is_empty() {
        return Err(features);
    }
    if rest.is_empty() {
        return Ok((processor, features));
    }
    // LLVM's loop: take the text up to the next ':' while any text is left,
    // so one trailing ':' is harmless but an empty item before another ':'
    // is a feature without a sign.
    let mut rest = rest;
    while !rest.is_empty() {
        let (item, after) = rest.split_once(':').unwrap_or((rest, ""));
        let (on, name) = match item.as_bytes().last() {
            Some(b'+') => (true, &item[..item.len() - 1]),
            Some(b'-') => (false, &item[..item.len() - 1]),
            _ => return Err(features),
        };
        // A repeated feature fails; LLVM's map keeps the first value.
        if features.contains_key(name) {
            return Err(features);
        }
        features.insert(name, on);
        rest = after;
    }
    Ok((processor, features))
}

/// `clang::parseTargetID`: the canonical processor and the features, when
/// the ID is well formed, names a processor valid for the triple, and uses
/// only features that processor has. AMDGPU processors are looked up in
/// LLVM's AMDGPU table (aliases canonicalised); for other triples the
/// processor is taken as is and no feature is allowed. An empty ID never
/// parses.
pub(super) fn parse_target_id<'a>(triple: &Triple, id: &'a str) -> Option<(&'a str, Features<'a>)> {
    let (processor, features) = split_target_id(id).ok()?;
    let (canonical, allowed): (&'a str, &[&str]) = if triple.is_amdgpu() {
        let gpu = amdgpu_processor(triple, processor)?;
        (gpu.canonical, gpu.features())
    } else {
        (processor, &[])
    };
    if canonical.is_empty() {
        return None;
    }
    if features.keys().any(|f| !allowed.contains(f)) {
        return None;
    }
    Some((canonical, features))
}

/// Whether `name` is a clang 22 `OffloadArch` (case-sensitive). Only target
/// IDs whose processor is one of these survive in a bundle-entry ID.
pub fn is_offload_arch(name: &str) -> bool {
    OFFLOAD_ARCHS.binary_search(&name).is_ok()
}

/// clang 22's `OffloadArch` names (`clang/lib/Basic/OffloadArch.cpp`), sorted
/// for binary search. Checked against the installed bundler: it keeps
/// exactly these (and drops e.g. `gfx940`, `gfx941`, `sm_100f`, `fiji`).
pub(super) const OFFLOAD_ARCHS: &[&str] = &[
    "amdgcnspirv",
    "bmg_g21",
    "generic",
    "gfx10-1-generic",
    "gfx10-3-generic",
    "gfx1010",
    "gfx1011",
    "gfx1012",
    "gfx1013",
    "gfx1030",
    "gfx1031",
    "gfx1032",
    "gfx1033",
    "gfx1034",
    "gfx1035",
    "gfx1036",
    "gfx11-generic",
    "gfx1100",
    "gfx1101",
    "gfx1102",
    "gfx1103",
    "gfx1150",
    "gfx1151",
    "gfx1152",
    "gfx1153",
    "gfx12-generic",
    "gfx1200",
    "gfx1201",
    "gfx1250",
    "gfx1251",
    "gfx600",
    "gfx601",
    "gfx602",
    "gfx700",
    "gfx701",
    "gfx702",
    "gfx703",
    "gfx704",
    "gfx705",
    "gfx801",
    "gfx802",
    "gfx803",
    "gfx805",
    "gfx810",
    "gfx9-4-generic",
    "gfx9-generic",
    "gfx900",
    "gfx902",
    "gfx904",
    "gfx906",
    "gfx908",
    "gfx909",
    "gfx90a",
    "gfx90c",
    "gfx942",
    "gfx950",
    "graniterapids",
    "sm_100",
    "sm_100a",
    "sm_101",
    "sm_101a",
    "sm_103",
    "sm_103a",
    "sm_110",
    "sm_110a",
    "sm_120",
    "sm_120a",
    "sm_121",
    "sm_121a",
    "sm_20",
    "sm_21",
    "sm_30",
    "sm_32",
    "sm_35",
    "sm_37",
    "sm_50",
    "sm_52",
    "sm_53",
    "sm_60",
    "sm_61",
    "sm_62",
    "sm_70",
    "sm_72",
    "sm_75",
    "sm_80",
    "sm_86",
    "sm_87",
    "sm_88",
    "sm_89",
    "sm_90",
    "sm_90a",
];

/// `AMDGPU::parseArchAMDGCN` / `parseArchR600` by the triple's architecture
/// (exact, case-sensitive names).
fn amdgpu_processor(triple: &Triple, name: &str) -> Option<&'static AmdGpu> {
    let table = if triple.is_amdgcn() {
        targets::AMDGCN
    } else {
        targets::R600
    };
    table.iter().find(|g| g.name == name)
}

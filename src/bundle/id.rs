//! Bundle-entry IDs: `<kind>-<arch>-<vendor>-<os>-<env>[-<target id>]`, as
//! `clang-offload-bundler` 22 parses, normalizes, matches and checks them.
//!
//! Spec: docs/formats/bundles.md §5 (syntax, normalization, kinds,
//! code-object compatibility, conflicts) and §6 (messages). LLVM sources:
//! `OffloadTargetInfo` and `isCodeObjectCompatible` in
//! `clang/lib/Driver/OffloadBundler.cpp`, the target checks in
//! `clang/tools/clang-offload-bundler/ClangOffloadBundler.cpp`, target-ID
//! parsing in `clang/lib/Basic/TargetID.cpp`, the processor list in
//! `clang/lib/Basic/OffloadArch.cpp`, and the AMDGPU processor table of
//! `llvm/lib/TargetParser/TargetParser.cpp`. Every table here was checked
//! against the installed LLVM 22.1.8 (the bundler itself, and `libLLVM-22`).
//!
//! In short:
//! * [`BundleId::parse`] splits on `-` into 5 or 6 parts. Part 1 is the
//!   offload kind, parts 2–5 the triple (each parsed *in its position*),
//!   part 6 the target ID, kept only when its processor is a clang
//!   `OffloadArch` name.
//! * [`BundleId::normalized`] is the ID written to files: the triple in
//!   LLVM's four-part normal form, or three parts plus an empty environment
//!   for `amdhsa`, then `-` and the target ID (so often a trailing `-`).
//! * [`BundleId::serves`] is LLVM's code-object compatibility (§5.3).
//! * [`check_targets`] runs the bundler's checks on `-targets`, in LLVM's
//!   order, and fails with LLVM's exact message ([`TargetError`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::llvm::triple::{CanonicalForm, Os, Triple, UnsupportedShaderModel};
use crate::targets::{self, AmdGpu};

/// The message LLVM prints for a target that does not have 5 or 6 dash
/// separated parts.
pub const FORMAT_MESSAGE: &str = "Targets need to follow the format '<offload kind>-<target triple>', \
     where '<target triple>' follows the format \
     '<kind>-<arch>-<vendor>-<os>-<env>[-<target id>[:target features]]'.";

/// A `-targets` problem, displayed as LLVM 22's message for it (without the
/// `<argv0>: error: ` prefix).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetError {
    /// The same target text appears twice: `Duplicate targets are not allowed`.
    Duplicate,
    /// Not 5 or 6 dash-separated parts: [`FORMAT_MESSAGE`].
    Format,
    /// Unknown offload kind and/or unknown architecture:
    /// `invalid target 'X', unknown offloading kind 'K', unknown target triple 'T'`
    /// (each clause only when it applies).
    Invalid {
        /// The target as given.
        target: String,
        /// The offload kind, when it is not a valid one.
        bad_kind: Option<String>,
        /// The four triple parts as given, when the architecture is unknown.
        bad_triple: Option<String>,
    },
    /// Two target IDs for one processor in one kind+triple group, where the
    /// later one names a feature the earlier one lacks (§5.4):
    /// `Cannot bundle inputs with conflicting targets: 'A' and 'B'`. The IDs
    /// are the kind, the triple *as given* and the target ID.
    Conflict {
        /// The first ID seen for the processor.
        first: String,
        /// The ID that conflicts with it.
        second: String,
    },
    /// Not exactly one `host` target when bundling (unless every target is
    /// `hip`/`hipv4`), or more than one when unbundling:
    /// `expecting exactly one host target but got N`.
    HostCount(usize),
    /// A target ID whose features do not parse (a feature without `+` or
    /// `-`, an empty one, one named twice, features without a processor).
    /// LLVM 22's conflict check reads such an ID through an empty
    /// `std::optional`: it crashes (a segfault) or goes on with whatever
    /// that memory holds, from machine to machine. Ours is an error:
    /// `invalid target ID 'I' in target 'T'; …`.
    InvalidTargetId {
        /// The whole target (kind, triple as given, target ID).
        target: String,
        /// Its target ID.
        id: String,
    },
    /// A `dxil` triple with OS `shadermodel6.Y`, Y ≥ 10, which LLVM 22
    /// cannot normalize: it prints `LLVM ERROR: Unsupported Shader Model
    /// version` (with no `<argv0>: error:` prefix) and exits with 1. Displays
    /// as `Unsupported Shader Model version`.
    UnsupportedShaderModel,
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::Duplicate => f.write_str("Duplicate targets are not allowed"),
            TargetError::Format => f.write_str(FORMAT_MESSAGE),
            TargetError::Invalid {
                target,
                bad_kind,
                bad_triple,
            } => {
                write!(f, "invalid target '{target}'")?;
                if let Some(kind) = bad_kind {
                    write!(f, ", unknown offloading kind '{kind}'")?;
                }
                if let Some(triple) = bad_triple {
                    write!(f, ", unknown target triple '{triple}'")?;
                }
                Ok(())
            }
            TargetError::Conflict { first, second } => write!(
                f,
                "Cannot bundle inputs with conflicting targets: '{first}' and '{second}'"
            ),
            TargetError::HostCount(n) => {
                write!(f, "expecting exactly one host target but got {n}")
            }
            TargetError::InvalidTargetId { target, id } => write!(
                f,
                "invalid target ID '{id}' in target '{target}'; a target ID is a processor \
                 and features, each ':name+' or ':name-' and named once"
            ),
            TargetError::UnsupportedShaderModel => f.write_str("Unsupported Shader Model version"),
        }
    }
}

impl std::error::Error for TargetError {}

impl From<TargetError> for crate::Error {
    #[cold]
    fn from(e: TargetError) -> crate::Error {
        crate::Error::usage(e.to_string())
    }
}

/// A bundle-entry ID (LLVM's `OffloadTargetInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BundleId {
    /// The offload kind, as given (`host`, `openmp`, `hip`, `hipv4`, or
    /// anything else for an invalid ID).
    pub kind: String,
    /// The triple, built from parts 2–5 each parsed in its own position.
    /// [`Triple::as_str`] gives the four parts as given, joined by `-`
    /// (what LLVM's messages and conflict groups use).
    pub triple: Triple,
    /// The target ID with its features (`gfx90a:xnack+`), or empty when there
    /// is none or its processor is not a known `OffloadArch`.
    pub target_id: String,
}

impl BundleId {
    /// Parses a target or a stored ID. Fails only on the part count, with
    /// [`TargetError::Format`]; unknown kinds and triples parse (see
    /// [`BundleId::kind_is_valid`] and [`BundleId::triple_is_valid`]).
    pub fn parse(target: &str) -> Result<BundleId, TargetError> {
        let parts: Vec<&str> = target.splitn(6, '-').collect();
        let &[kind, arch, vendor, os, env, ref rest @ ..] = parts.as_slice() else {
            return Err(TargetError::Format);
        };
        let with_features = rest.first().copied().unwrap_or("");
        let processor = with_features.split(':').next().unwrap_or("");
        let target_id = if is_offload_arch(processor) {
            with_features
        } else {
            ""
        };
        Ok(BundleId {
            kind: kind.to_owned(),
            triple: Triple::from_components(arch, vendor, os, env),
            target_id: target_id.to_owned(),
        })
    }

    /// The normalized triple text: four parts, or for an `amdhsa` OS three
    /// parts and a `-` (an empty environment; whatever the environment
    /// part held is dropped).
    pub fn normalized_triple(&self) -> String {
        match self.try_normalized_triple() {
            Ok(t) => t,
            Err(e) => e.normalized,
        }
    }

    fn try_normalized_triple(&self) -> Result<String, UnsupportedShaderModel> {
        if self.triple.os() == Os::AmdHsa {
            let mut t = self.triple.try_normalize(CanonicalForm::ThreeIdent)?;
            t.push('-');
            Ok(t)
        } else {
            self.triple.try_normalize(CanonicalForm::FourIdent)
        }
    }

    /// [`BundleId::normalized`], failing with
    /// [`TargetError::UnsupportedShaderModel`] where LLVM 22 aborts.
    pub fn try_normalized(&self) -> Result<String, TargetError> {
        let triple = self
            .try_normalized_triple()
            .map_err(|_| TargetError::UnsupportedShaderModel)?;
        Ok(format!("{}-{}-{}", self.kind, triple, self.target_id))
    }

    /// The ID LLVM writes to files and prints: kind, normalized triple and
    /// target ID joined by `-` (so a trailing `-` when there is no target
    /// ID), e.g. `host-x86_64-unknown-linux-gnu-` or
    /// `hip-amdgcn-amd-amdhsa--gfx906`.
    pub fn normalized(&self) -> String {
        format!(
            "{}-{}-{}",
            self.kind,
            self.normalized_triple(),
            self.target_id
        )
    }

    /// Whether the kind is one the bundler accepts: `host`, `openmp`, `hip`
    /// or `hipv4` (`cuda` and `sycl` are not).
    pub fn kind_is_valid(&self) -> bool {
        matches!(self.kind.as_str(), "host" | "openmp" | "hip" | "hipv4")
    }

    /// Whether the architecture is known (the only triple check LLVM makes).
    pub fn triple_is_valid(&self) -> bool {
        self.triple.arch() != crate::llvm::triple::Arch::Unknown
    }

    /// Whether the kind is `host`.
    pub fn is_host(&self) -> bool {
        self.kind == "host"
    }

    /// LLVM's `OffloadTargetInfo::operator==`: same kind text, compatible
    /// triples ([`Triple::is_compatible_with`]) and the same target-ID text.
    pub fn same_target(&self, other: &BundleId) -> bool {
        self.kind == other.kind
            && self.triple.is_compatible_with(&other.triple)
            && self.target_id == other.target_id
    }

    /// Whether a code object of this kind may serve a request of kind
    /// `requested` (§5.2): equal kinds, or `hip` and `hipv4`; with
    /// `-hip-openmp-compatible` also any kind starting with `hip` (in any
    /// case) and `openmp`, both ways.
    pub fn kind_compatible(&self, requested: &str, hip_openmp_compatible: bool) -> bool {
        let mine = self.kind.as_str();
        if mine == requested
            || (mine == "hip" && requested == "hipv4")
            || (mine == "hipv4" && requested == "hip")
        {
            return true;
        }
        hip_openmp_compatible
            && ((starts_with_hip(mine) && requested == "openmp")
                || (mine == "openmp" && starts_with_hip(requested)))
    }

    /// Whether a code object with this ID (as read from a file) can serve
    /// the request `requested` (§5.3, LLVM's `isCodeObjectCompatible`).
    ///
    /// Like LLVM, the request is taken in its normalized form (LLVM only
    /// keeps normalized requested IDs), so it does not matter whether
    /// `requested` was parsed from the `-targets` text or from the
    /// normalized ID. The code object is used as parsed.
    ///
    /// True for an exact match ([`BundleId::same_target`]), or when the kinds
    /// and triples are compatible, both target IDs parse for their triples
    /// (AMDGPU processors canonicalised, only the processor's own
    /// `sramecc`/`xnack` allowed; an empty target ID never parses), the
    /// processors are equal, and every feature the code object names is in
    /// the request with the same sign.
    pub fn serves(&self, requested: &BundleId, hip_openmp_compatible: bool) -> bool {
        match BundleId::parse(&requested.normalized()) {
            Ok(request) => self.compatible_with(&request, hip_openmp_compatible),
            // A normalized ID always has six parts; keep a defined answer.
            Err(_) => self.compatible_with(requested, hip_openmp_compatible),
        }
    }

    fn compatible_with(&self, request: &BundleId, hip_openmp_compatible: bool) -> bool {
        if self.same_target(request) {
            return true;
        }
        if !self.kind_compatible(&request.kind, hip_openmp_compatible)
            || !self.triple.is_compatible_with(&request.triple)
        {
            return false;
        }
        let (Some((object_proc, object_features)), Some((request_proc, request_features))) = (
            parse_target_id(&self.triple, &self.target_id),
            parse_target_id(&request.triple, &request.target_id),
        ) else {
            return false;
        };
        object_proc == request_proc
            && object_features.len() <= request_features.len()
            && object_features
                .iter()
                .all(|(name, on)| request_features.get(name) == Some(on))
    }
}

/// What a stored bundle-entry ID says, as reports show it: every part as
/// written where [`BundleId::parse`] would drop it (see [`describe`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Description {
    /// The offload kind as written (`hipv4` stays `hipv4`).
    pub kind: String,
    /// The normalized triple without its trailing `-`; for an ID with too
    /// few parts, everything after the kind.
    pub triple: String,
    /// The target ID (processor and features), also when its processor is
    /// one clang does not know; empty when there is none.
    pub target_id: String,
}

/// Describes the stored ID `id` for a report: [`BundleId::parse`], keeping
/// the target ID even when its processor is unknown, and reading an ID
/// with too few parts as `<kind>-<rest>`.
pub fn describe(id: &str) -> Description {
    match BundleId::parse(id) {
        Ok(b) => {
            let triple = b.normalized_triple().trim_end_matches('-').to_string();
            let target_id = if b.target_id.is_empty() {
                id.splitn(6, '-').nth(5).unwrap_or_default().to_string()
            } else {
                b.target_id
            };
            Description {
                kind: b.kind,
                triple,
                target_id,
            }
        }
        Err(_) => {
            let (kind, rest) = id.split_once('-').unwrap_or((id, ""));
            Description {
                kind: kind.to_string(),
                triple: rest.trim_end_matches('-').to_string(),
                target_id: String::new(),
            }
        }
    }
}

impl fmt::Display for BundleId {
    /// The normalized ID.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.normalized())
    }
}

fn starts_with_hip(kind: &str) -> bool {
    kind.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("hip"))
}

/// Runs the bundler's checks on the `-targets` list, in LLVM 22's order,
/// and returns the parsed IDs in the same order.
///
/// For each target in turn: a repeat of an earlier target's exact text
/// ([`TargetError::Duplicate`]), the part count ([`TargetError::Format`]),
/// normalization ([`TargetError::UnsupportedShaderModel`]), then kind and
/// architecture ([`TargetError::Invalid`]). Then the
/// target-ID conflict check over kind+triple groups in sorted order
/// ([`TargetError::Conflict`], [`conflicting_target_ids`]), where a target
/// ID that does not parse is [`TargetError::InvalidTargetId`] (LLVM 22's
/// undefined behaviour there). Last the host
/// count ([`TargetError::HostCount`]): when `bundling`, exactly one `host`
/// unless every kind is `hip` or `hipv4`; when unbundling, at most one.
pub fn check_targets<S: AsRef<str>>(
    targets: &[S],
    bundling: bool,
) -> Result<Vec<BundleId>, TargetError> {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut ids = Vec::with_capacity(targets.len());
    // kind + "-" + raw triple → the target IDs of that group.
    let mut groups: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut hosts = 0usize;
    let mut hip_only = true;
    for target in targets {
        let target = target.as_ref();
        if !seen.insert(target) {
            return Err(TargetError::Duplicate);
        }
        let id = BundleId::parse(target)?;
        // LLVM normalizes each target here, before the validity checks.
        id.try_normalized()?;
        let kind_ok = id.kind_is_valid();
        let triple_ok = id.triple_is_valid();
        if !kind_ok || !triple_ok {
            return Err(TargetError::Invalid {
                target: target.to_owned(),
                bad_kind: (!kind_ok).then(|| id.kind.clone()),
                bad_triple: (!triple_ok).then(|| id.triple.as_str().to_owned()),
            });
        }
        groups
            .entry(format!("{}-{}", id.kind, id.triple.as_str()))
            .or_default()
            .insert(id.target_id.clone());
        if id.is_host() {
            hosts += 1;
        }
        if id.kind != "hip" && id.kind != "hipv4" {
            hip_only = false;
        }
        ids.push(id);
    }
    for (group, target_ids) in &groups {
        if let Some(bad) = target_ids.iter().find(|t| split_target_id(t).is_err()) {
            return Err(TargetError::InvalidTargetId {
                target: format!("{group}-{bad}"),
                id: bad.clone(),
            });
        }
        if let Some((first, second)) = conflicting_target_ids(target_ids.iter().map(String::as_str))
        {
            return Err(TargetError::Conflict {
                first: format!("{group}-{first}"),
                second: format!("{group}-{second}"),
            });
        }
    }
    if (bundling && hosts != 1 && !hip_only) || (!bundling && hosts > 1) {
        return Err(TargetError::HostCount(hosts));
    }
    Ok(ids)
}

/// clang's `getConflictTargetIDCombination` (§5.4): takes the IDs in sorted
/// order (duplicates once); for each processor the first ID is the
/// reference, and a later ID for the same processor conflicts if it names
/// any feature the reference does not. Returns the reference and the
/// conflicting ID.
///
/// The IDs are split by format only (no processor or feature validation).
/// An ID whose features do not parse counts, as in LLVM 22, as processor
/// `""` (the empty ID's processor) with the features read before the bad
/// one. `-check-input-archive` passes whole bundle IDs here, whose
/// "processor" is then everything before the first `:`.
pub fn conflicting_target_ids<'a>(
    ids: impl IntoIterator<Item = &'a str>,
) -> Option<(&'a str, &'a str)> {
    let sorted: BTreeSet<&'a str> = ids.into_iter().collect();
    let mut reference: BTreeMap<&'a str, (&'a str, Features<'a>)> = BTreeMap::new();
    for id in sorted {
        let (processor, features) = match split_target_id(id) {
            Ok(parsed) => parsed,
            Err(partial) => ("", partial),
        };
        match reference.get(processor) {
            None => {
                reference.insert(processor, (id, features));
            }
            Some((first, known)) => {
                if features.keys().any(|name| !known.contains_key(name)) {
                    return Some((first, id));
                }
            }
        }
    }
    None
}

// ---------------------------------------------------------------------------
// Target IDs
// ---------------------------------------------------------------------------

/// Feature name → on (`+`) or off (`-`).
type Features<'a> = BTreeMap<&'a str, bool>;

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
fn split_target_id(id: &str) -> Result<(&str, Features<'_>), Features<'_>> {
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
fn parse_target_id<'a>(triple: &Triple, id: &'a str) -> Option<(&'a str, Features<'a>)> {
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
const OFFLOAD_ARCHS: &[&str] = &[
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

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> BundleId {
        BundleId::parse(s).unwrap()
    }

    #[test]
    fn target_id_format() {
        let t = TargetId::parse("gfx90a:sramecc-:xnack+").unwrap();
        assert_eq!(t.processor, "gfx90a");
        assert_eq!(t.features.get("xnack"), Some(&true));
        assert_eq!(t.features.get("sramecc"), Some(&false));
        assert_eq!(TargetId::parse("gfx90a:").unwrap().features.len(), 0);
        assert_eq!(TargetId::parse("sm_80").unwrap().processor, "sm_80");
        for bad in [
            "",
            ":xnack+",
            "gfx90a:xnack",
            "gfx90a:xnack+:xnack-",
            "gfx90a::xnack+",
        ] {
            assert_eq!(TargetId::parse(bad), None, "{bad}");
        }
        let amdgcn = Triple::parse("amdgcn-amd-amdhsa");
        assert_eq!(
            canonical_amdgpu_processor(&amdgcn, "tahiti"),
            Some("gfx600")
        );
        assert_eq!(
            canonical_amdgpu_processor(&amdgcn, "gfx90a"),
            Some("gfx90a")
        );
        assert_eq!(canonical_amdgpu_processor(&amdgcn, "sm_80"), None);
        let nvptx = Triple::parse("nvptx64-nvidia-cuda");
        assert_eq!(canonical_amdgpu_processor(&nvptx, "gfx90a"), None);
    }

    #[test]
    fn offload_arch_table_is_sorted() {
        assert!(OFFLOAD_ARCHS.windows(2).all(|w| w[0] < w[1]));
    }

    /// §5.1 examples.
    #[test]
    fn normalizes_like_llvm() {
        let cases = [
            (
                "host-x86_64-unknown-linux-gnu",
                "host-x86_64-unknown-linux-gnu-",
            ),
            (
                "host-x86_64-unknown-linux-",
                "host-x86_64-unknown-linux-unknown-",
            ),
            (
                "openmp-nvptx64-nvidia-cuda--sm_70",
                "openmp-nvptx64-nvidia-cuda-unknown-sm_70",
            ),
            (
                "openmp-nvptx64-nvidia-cuda-unknown-foo",
                "openmp-nvptx64-nvidia-cuda-unknown-",
            ),
            (
                "hip-amdgcn-amd-amdhsa-unknown-gfx906",
                "hip-amdgcn-amd-amdhsa--gfx906",
            ),
            (
                "hip-spirv64-amd-amdhsa--amdgcnspirv",
                "hip-spirv64-amd-amdhsa--amdgcnspirv",
            ),
            (
                "openmp-spirv64-intel-unknown-",
                "openmp-spirv64-intel-unknown-unknown-",
            ),
            (
                "host-x86_64-apple-darwin-",
                "host-x86_64-apple-darwin-unknown-",
            ),
            (
                "openmp-aarch64-linux-gnu-",
                "openmp-aarch64-unknown-linux-gnu-",
            ),
            (
                "openmp-x86_64--linux-gnu",
                "openmp-x86_64-unknown-linux-gnu-",
            ),
            (
                "openmp-aarch64-none-elf-",
                "openmp-aarch64-unknown-none-elf-",
            ),
            (
                "openmp-nvptx64-nvidia-cuda-foo",
                "openmp-nvptx64-nvidia-cuda-foo-",
            ),
            (
                "openmp-amdgcn-amd-amdhsa-elf-gfx906",
                "openmp-amdgcn-amd-amdhsa--gfx906",
            ),
            ("hip-amdgcn-amd-amdhsa-gfx906", "hip-amdgcn-amd-amdhsa--"),
            (
                "hip-amdgcn-amd-amdhsa--gfx906:xnack+:sramecc-",
                "hip-amdgcn-amd-amdhsa--gfx906:xnack+:sramecc-",
            ),
            (
                "hip-amdgcn-amd-amdhsa--gfx906:foo+",
                "hip-amdgcn-amd-amdhsa--gfx906:foo+",
            ),
            ("hip-amdgcn-amd-amdhsa--gfx940", "hip-amdgcn-amd-amdhsa--"),
            ("hip-amdgcn-amd-amdhsa--GFX906", "hip-amdgcn-amd-amdhsa--"),
            (
                "openmp-nvptx64-nvidia-cuda--Sm_70",
                "openmp-nvptx64-nvidia-cuda-unknown-",
            ),
        ];
        for (target, want) in cases {
            assert_eq!(id(target).normalized(), want, "{target}");
        }
    }

    #[test]
    fn part_count() {
        for bad in [
            "openmp-nvptx64-nvidia-cuda",
            "host-x86_64-unknown-linux",
            "",
            "host",
        ] {
            assert_eq!(BundleId::parse(bad), Err(TargetError::Format), "{bad}");
        }
        // The sixth part keeps its dashes (and here names no known processor).
        assert_eq!(
            id("hip-amdgcn-amd-amdhsa--gfx9-generic").target_id,
            "gfx9-generic"
        );
        assert_eq!(id("hip-amdgcn-amd-amdhsa--a-b-c").target_id, "");
    }

    #[test]
    fn validity() {
        let x = id("cuda-x86_64-unknown-linux-gnu");
        assert!(!x.kind_is_valid() && x.triple_is_valid());
        let y = id("host-X86_64-Unknown-Linux-GNU");
        assert!(y.kind_is_valid() && !y.triple_is_valid());
        for k in ["host", "openmp", "hip", "hipv4"] {
            assert!(id(&format!("{k}-x86_64---")).kind_is_valid());
        }
        assert!(!id("sycl-x86_64---").kind_is_valid());
    }

    fn serves(object: &str, request: &str) -> bool {
        id(object).serves(&id(request), false)
    }

    /// §5.3 examples.
    #[test]
    fn code_object_compatibility() {
        let h = "hip-amdgcn-amd-amdhsa--";
        let s = |a: &str, b: &str| serves(&format!("{h}{a}"), &format!("{h}{b}"));
        assert!(s("gfx906", "gfx906"));
        assert!(s("gfx906", "gfx906:xnack+"));
        assert!(s("gfx906", "gfx906:xnack-:sramecc+"));
        assert!(!s("gfx906:xnack+", "gfx906"));
        assert!(!s("gfx906:xnack+", "gfx906:xnack-"));
        assert!(s("gfx90a:sramecc-:xnack+", "gfx90a:xnack+:sramecc-"));
        assert!(!s("gfx1030:xnack+", "gfx1030:xnack+:foo+"));
        assert!(!s("gfx1030", "gfx1030:xnack+"));
        assert!(s("gfx1030:xnack+", "gfx1030:xnack+"), "exact text match");
        assert!(!s("gfx906", "gfx90a"));
        // An empty target ID only matches an identical request.
        assert!(s("", ""));
        assert!(!s("", "gfx906"));
        assert!(!s("gfx906", ""));
        // Non-AMDGPU: no features.
        let n = "openmp-nvptx64-nvidia-cuda--";
        assert!(serves(&format!("{n}sm_70"), &format!("{n}sm_70")));
        assert!(!serves(&format!("{n}sm_70"), &format!("{n}sm_70:foo+")));
        assert!(!serves(
            &format!("{n}sm_70:foo+"),
            &format!("{n}sm_70:foo+:bar+")
        ));
        // Triples compare as parsed enums; vendor `pc` is not `unknown`.
        assert!(serves(
            "host-x86_64-unknown-linux5.0-gnu-",
            "host-x86_64-unknown-linux-gnu"
        ));
        assert!(!serves(
            "host-x86_64-pc-linux-gnu-",
            "host-x86_64-unknown-linux-gnu"
        ));
        assert!(serves(
            "openmp-x86_64-unknown-linux-unknown-",
            "openmp-x86_64-unknown-linux-"
        ));
    }

    #[test]
    fn kinds() {
        let hip = id("hip-amdgcn-amd-amdhsa--gfx906");
        assert!(hip.kind_compatible("hipv4", false));
        assert!(!hip.kind_compatible("openmp", false));
        assert!(hip.kind_compatible("openmp", true));
        assert!(id("HIPx-amdgcn-amd-amdhsa--").kind_compatible("openmp", true));
        assert!(id("openmp-amdgcn-amd-amdhsa--").kind_compatible("hipv4", true));
        assert!(!id("openmp-amdgcn-amd-amdhsa--").kind_compatible("host", true));
        let omp = id("openmp-amdgcn-amd-amdhsa--gfx906");
        assert!(omp.serves(&id("hip-amdgcn-amd-amdhsa--gfx906"), true));
        assert!(!omp.serves(&id("hip-amdgcn-amd-amdhsa--gfx906"), false));
        // The exact match needs the same kind text.
        assert!(!id("hip-amdgcn-amd-amdhsa--").serves(&id("hipv4-amdgcn-amd-amdhsa--"), false));
    }

    fn check(targets: &[&str]) -> Result<Vec<BundleId>, String> {
        check_targets(targets, true).map_err(|e| e.to_string())
    }

    /// §5.4 examples and the §6 messages.
    #[test]
    fn target_checks() {
        let g = |ids: &[&str]| -> Vec<String> {
            ids.iter()
                .map(|t| format!("hip-amdgcn-amd-amdhsa--{t}"))
                .collect()
        };
        let run = |ids: &[&str]| check_targets(&g(ids), true).map_err(|e| e.to_string());
        assert!(run(&["gfx906:sramecc+:xnack+", "gfx906:xnack+"]).is_ok());
        assert_eq!(
            run(&["gfx906:xnack+", "gfx906:xnack+:sramecc+"]).unwrap_err(),
            "Cannot bundle inputs with conflicting targets: \
             'hip-amdgcn-amd-amdhsa--gfx906:xnack+' and \
             'hip-amdgcn-amd-amdhsa--gfx906:xnack+:sramecc+'"
        );
        assert!(run(&["gfx906", "gfx906:xnack+"]).is_err());
        assert!(run(&["gfx906:xnack-", "gfx906:xnack+"]).is_ok());
        // Sorted order decides the reference, not the command line.
        assert!(run(&["gfx906:xnack+", "gfx906"]).is_err());
        // Malformed features (LLVM 22: undefined behaviour) are an error
        // naming the first such ID in sorted order.
        let invalid = |id: &str| {
            format!(
                "invalid target ID '{id}' in target 'hip-amdgcn-amd-amdhsa--{id}'; a target ID \
                 is a processor and features, each ':name+' or ':name-' and named once"
            )
        };
        assert_eq!(
            run(&["gfx906:xnack+", "gfx906:xnack"]).unwrap_err(),
            invalid("gfx906:xnack")
        );
        assert_eq!(
            run(&["gfx906:sramecc+:foo", "gfx90a:xnack+:foo"]).unwrap_err(),
            invalid("gfx906:sramecc+:foo")
        );
        assert_eq!(run(&["", "gfx906::"]).unwrap_err(), invalid("gfx906::"));
        assert_eq!(
            run(&["gfx906:xnack+:xnack-"]).unwrap_err(),
            invalid("gfx906:xnack+:xnack-")
        );
        // One trailing ':' and an empty ID parse.
        assert!(run(&["gfx906:", "gfx906:xnack+"]).is_err_and(|e| e.starts_with("Cannot")));
        assert!(run(&["", "gfx906"]).is_ok());
        // The message shows the triple as given.
        assert_eq!(
            check(&[
                "hip-amdgcn-amd-amdhsa-unknown-gfx906",
                "hip-amdgcn-amd-amdhsa-unknown-gfx906:xnack+"
            ])
            .unwrap_err(),
            "Cannot bundle inputs with conflicting targets: \
             'hip-amdgcn-amd-amdhsa-unknown-gfx906' and \
             'hip-amdgcn-amd-amdhsa-unknown-gfx906:xnack+'"
        );

        assert_eq!(
            check(&[
                "host-x86_64-unknown-linux-gnu",
                "host-x86_64-unknown-linux-gnu"
            ])
            .unwrap_err(),
            "Duplicate targets are not allowed"
        );
        assert_eq!(
            check(&["host-x86_64-unknown-linux"]).unwrap_err(),
            FORMAT_MESSAGE
        );
        assert_eq!(
            check(&["cuda-amdgcn-amd-amdhsa--gfx906"]).unwrap_err(),
            "invalid target 'cuda-amdgcn-amd-amdhsa--gfx906', unknown offloading kind 'cuda'"
        );
        assert_eq!(
            check(&["host-foo-bar-baz-qux"]).unwrap_err(),
            "invalid target 'host-foo-bar-baz-qux', unknown target triple 'foo-bar-baz-qux'"
        );
        assert_eq!(
            check(&["sycl-foo-bar-baz-"]).unwrap_err(),
            "invalid target 'sycl-foo-bar-baz-', unknown offloading kind 'sycl', \
             unknown target triple 'foo-bar-baz-'"
        );
        assert_eq!(
            check(&["openmp-x86_64-unknown-linux-gnu"]).unwrap_err(),
            "expecting exactly one host target but got 0"
        );
        assert_eq!(
            check(&["host-x86_64-unknown-linux-gnu", "host-x86_64-pc-linux-gnu"]).unwrap_err(),
            "expecting exactly one host target but got 2"
        );
        assert!(
            check(&[
                "hip-amdgcn-amd-amdhsa--gfx906",
                "hipv4-amdgcn-amd-amdhsa--gfx90a"
            ])
            .is_ok()
        );
        // Unbundling allows no host, not two.
        assert!(check_targets(&["openmp-x86_64-unknown-linux-gnu"], false).is_ok());
        assert!(check_targets(&["host-x86_64---", "host-i386---"], false).is_err());
        // Duplicates are checked before the format, one target at a time.
        assert_eq!(check(&["a", "a"]).unwrap_err(), FORMAT_MESSAGE);
        assert_eq!(
            check(&["host-x86_64---", "host-x86_64---", "x"]).unwrap_err(),
            "Duplicate targets are not allowed"
        );
    }

    #[test]
    fn conflict_helper_on_whole_ids() {
        let ids = [
            "hip-amdgcn-amd-amdhsa--gfx906",
            "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
        ];
        assert_eq!(conflicting_target_ids(ids), Some((ids[0], ids[1])));
        assert_eq!(
            conflicting_target_ids(["gfx906:xnack+", "gfx906:xnack-"]),
            None
        );
    }
}

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
//!
//! Target IDs and the processor tables are in `target_id.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::llvm::triple::{CanonicalForm, Os, Triple, UnsupportedShaderModel};

mod target_id;
#[cfg(test)]
mod tests;

use target_id::{Features, parse_target_id, split_target_id};
pub use target_id::{TargetId, canonical_amdgpu_processor, is_offload_arch};

// The errors live in the leaf `error` module, which carries them in
// `ErrorKind::Target`.
pub use crate::error::target::TargetError;

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
/// ([`TargetError::Conflict`]), where a target
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

//! Checking scanned files against requirements (which architectures and
//! kinds must, or must not, be present): [`check`] takes the reports and
//! [`Requirements`] and returns an [`Outcome`]; printing it is the
//! caller's business.

use std::fmt;

use super::select::{arch_matches, kind_matches};
use super::{Image, Report};

/// What the device code must (or must not) hold. Start from
/// [`Requirements::default`] and set fields: more may be added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Requirements {
    /// Architectures that must be present (`gfx90a` is satisfied by
    /// `gfx90a:xnack+`).
    pub require_arch: Vec<String>,
    /// Architectures that must not be present.
    pub forbid_arch: Vec<String>,
    /// Offload kinds (or image kinds) that must be present.
    pub require_kind: Vec<String>,
    /// Offload kinds (or image kinds) that must not be present.
    pub forbid_kind: Vec<String>,
    /// The required architectures and kinds must be present in all inputs
    /// together, not in each input that carries device code.
    pub any: bool,
    /// Problems met while scanning fail the check.
    pub strict: bool,
}

impl Requirements {
    /// Whether nothing is required or forbidden.
    pub fn is_empty(&self) -> bool {
        self.require_arch.is_empty()
            && self.forbid_arch.is_empty()
            && self.require_kind.is_empty()
            && self.forbid_kind.is_empty()
    }

    fn requires(&self) -> bool {
        !self.require_arch.is_empty() || !self.require_kind.is_empty()
    }
}

/// One reason a file (or all inputs together) fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A forbidden architecture is present, in these images.
    ForbiddenArch {
        /// The architecture as required.
        arch: String,
        /// The images that have it.
        images: Vec<usize>,
    },
    /// A forbidden kind is present, in these images.
    ForbiddenKind {
        /// The kind as required.
        kind: String,
        /// The images that have it.
        images: Vec<usize>,
    },
    /// A problem met while scanning (with [`Requirements::strict`]).
    Problem(String),
    /// Required architectures that are missing.
    MissingArchs(Vec<String>),
    /// Required kinds that are missing.
    MissingKinds(Vec<String>),
}

fn ids(images: &[usize]) -> String {
    images
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::ForbiddenArch { arch, images } => {
                write!(f, "forbidden arch {arch} (image {})", ids(images))
            }
            Failure::ForbiddenKind { kind, images } => {
                write!(f, "forbidden kind {kind} (image {})", ids(images))
            }
            Failure::Problem(p) => write!(f, "problem: {p}"),
            Failure::MissingArchs(a) => write!(f, "missing arch {}", a.join(",")),
            Failure::MissingKinds(k) => write!(f, "missing kind {}", k.join(",")),
        }
    }
}

/// The verdict on one input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The input could not be read (why); a failure.
    Unreadable(String),
    /// The input was scanned.
    Checked {
        /// How many device images it carries.
        device_images: usize,
        /// The target IDs present, sorted, each once.
        present: Vec<String>,
        /// Why it fails; empty when it passes.
        failures: Vec<Failure>,
    },
}

impl Verdict {
    /// Whether the input fails the check.
    pub fn failed(&self) -> bool {
        match self {
            Verdict::Unreadable(_) => true,
            Verdict::Checked { failures, .. } => !failures.is_empty(),
        }
    }
}

/// The result of [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Outcome {
    /// One verdict per input, in the order given.
    pub files: Vec<Verdict>,
    /// Something is required but no input carries device images.
    pub no_device_code: bool,
    /// With [`Requirements::any`]: what all inputs together miss.
    pub all_inputs: Vec<Failure>,
}

impl Outcome {
    /// How many failures there are: failing inputs, no device code at all,
    /// and what all inputs together miss (one failure).
    pub fn failures(&self) -> usize {
        self.files.iter().filter(|v| v.failed()).count()
            + usize::from(self.no_device_code)
            + usize::from(!self.all_inputs.is_empty())
    }

    /// Whether the requirements hold.
    pub fn passed(&self) -> bool {
        self.failures() == 0
    }
}

/// Device images of a report: not host entries, not empty placeholders.
pub fn device_images(r: &Report) -> impl Iterator<Item = &Image> {
    r.images
        .iter()
        .filter(|i| !(i.offload_kind.is_host() || (i.size == 0 && i.arch.is_empty())))
}

/// The required architectures and kinds no image of `imgs` has.
fn missing(req: &Requirements, imgs: &[&Image]) -> Vec<Failure> {
    let archs: Vec<String> = req
        .require_arch
        .iter()
        .filter(|a| !imgs.iter().any(|i| arch_matches(i, a)))
        .cloned()
        .collect();
    let kinds: Vec<String> = req
        .require_kind
        .iter()
        .filter(|k| !imgs.iter().any(|i| kind_matches(i, k)))
        .cloned()
        .collect();
    let mut out = Vec::new();
    if !archs.is_empty() {
        out.push(Failure::MissingArchs(archs));
    }
    if !kinds.is_empty() {
        out.push(Failure::MissingKinds(kinds));
    }
    out
}

/// Checks the inputs (each a scan report, or why it could not be read)
/// against `req`: every input carrying device code must satisfy the
/// requirements on its own (all together with [`Requirements::any`]);
/// forbidden architectures and kinds fail wherever they are.
pub fn check<'a>(
    inputs: impl IntoIterator<Item = Result<&'a Report, &'a str>>,
    req: &Requirements,
) -> Outcome {
    let mut files = Vec::new();
    let mut any_device = false;
    let mut all: Vec<&Image> = Vec::new();
    for input in inputs {
        let r = match input {
            Ok(r) => r,
            Err(e) => {
                files.push(Verdict::Unreadable(e.to_string()));
                continue;
            }
        };
        let imgs: Vec<&Image> = device_images(r).collect();
        let mut failures = Vec::new();
        for a in &req.forbid_arch {
            let hits: Vec<usize> = imgs
                .iter()
                .filter(|i| arch_matches(i, a))
                .map(|i| i.id)
                .collect();
            if !hits.is_empty() {
                failures.push(Failure::ForbiddenArch {
                    arch: a.clone(),
                    images: hits,
                });
            }
        }
        for k in &req.forbid_kind {
            let hits: Vec<usize> = imgs
                .iter()
                .filter(|i| kind_matches(i, k))
                .map(|i| i.id)
                .collect();
            if !hits.is_empty() {
                failures.push(Failure::ForbiddenKind {
                    kind: k.clone(),
                    images: hits,
                });
            }
        }
        if req.strict {
            failures.extend(
                r.problems
                    .iter()
                    .map(|p| Failure::Problem(p.message.clone())),
            );
        }
        if !imgs.is_empty() {
            any_device = true;
            if !req.any {
                failures.extend(missing(req, &imgs));
            }
        }
        let mut present: Vec<String> = imgs
            .iter()
            .filter(|i| !i.target_id.is_empty())
            .map(|i| i.target_id.clone())
            .collect();
        present.sort_unstable();
        present.dedup();
        files.push(Verdict::Checked {
            device_images: imgs.len(),
            present,
            failures,
        });
        all.extend(imgs);
    }
    Outcome {
        files,
        no_device_code: req.requires() && !any_device,
        all_inputs: if req.any {
            missing(req, &all)
        } else {
            Vec::new()
        },
    }
}

//! Checking scanned files against rules (which architectures and kinds
//! must, or must not, be present): [`check`] takes the reports and
//! [`Requirements`] and returns an [`Outcome`] with the result of every
//! rule for every file; printing it is the caller's business. How an image
//! meets a rule is [`Rule`]'s business (loader-compatible matching).

use std::fmt;

use super::rule::{Meets, Rule};
use super::{Image, Report, Unread};

/// What the device code must (or must not) hold. Start from
/// [`Requirements::default`] and set fields: more may be added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Requirements {
    /// Rules some image must meet (`--require ARCH[:KIND]`).
    pub require: Vec<Rule>,
    /// Rules no image may be built for (`--forbid ARCH[:KIND]`).
    pub forbid: Vec<Rule>,
    /// Architectures that must be present: shorthands for
    /// [`Rule::arch`] rules in [`Requirements::require`].
    pub require_arch: Vec<String>,
    /// Architectures that must not be present (shorthands).
    pub forbid_arch: Vec<String>,
    /// Offload kinds (or image kinds) that must be present (shorthands
    /// for [`Rule::kind`] rules).
    pub require_kind: Vec<String>,
    /// Offload kinds (or image kinds) that must not be present
    /// (shorthands).
    pub forbid_kind: Vec<String>,
    /// Compare architectures as strings, not as the loaders do.
    pub exact: bool,
    /// The required rules must be met in all inputs together, not in each
    /// input that carries device code.
    pub any: bool,
    /// With [`Requirements::allow_corrupt`]: problems met while scanning
    /// fail the check (without it they are input errors anyway).
    pub strict: bool,
    /// A file with problems (a corrupt or truncated container, say) is
    /// checked on the images that could be read, instead of being an input
    /// error ([`Verdict::Corrupt`]).
    pub allow_corrupt: bool,
}

impl Requirements {
    /// Whether nothing is required or forbidden.
    pub fn is_empty(&self) -> bool {
        self.require_rules().is_empty() && self.forbid_rules().is_empty()
    }

    /// Every required rule: [`Requirements::require`], then the shorthands.
    pub fn require_rules(&self) -> Vec<Rule> {
        let mut v = self.require.clone();
        v.extend(self.require_arch.iter().map(|a| Rule::arch(a)));
        v.extend(self.require_kind.iter().map(|k| Rule::kind(k)));
        v
    }

    /// Every forbidding rule: [`Requirements::forbid`], then the
    /// shorthands.
    pub fn forbid_rules(&self) -> Vec<Rule> {
        let mut v = self.forbid.clone();
        v.extend(self.forbid_arch.iter().map(|a| Rule::arch(a)));
        v.extend(self.forbid_kind.iter().map(|k| Rule::kind(k)));
        v
    }

    /// Whether the kinds of images matter (some rule names a kind).
    pub fn needs_kinds(&self) -> bool {
        self.require_rules()
            .iter()
            .chain(&self.forbid_rules())
            .any(|r| r.kind.is_some())
    }
}

/// The result of one rule for one input (or for all inputs together).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuleResult {
    /// The rule.
    pub rule: Rule,
    /// `true` for a `--require` rule, `false` for a `--forbid` rule.
    pub required: bool,
    /// Whether the rule holds.
    pub passed: bool,
    /// Required: the images that meet it. Forbidden: the images built for
    /// it.
    pub images: Vec<usize>,
    /// Required: whether it is met only through PTX the driver compiles.
    pub by_ptx_jit: bool,
    /// Images whose kind is not known that the rule could concern (they
    /// never meet a required rule, and fail a forbidding one).
    pub undetermined: Vec<usize>,
    /// Required: what the images in [`RuleResult::images`] are built for,
    /// sorted and each once (target IDs, and for CUDA images their kind
    /// too: `gfx90a:xnack+`, `sm_80:ptx`).
    pub serving: Vec<String>,
    /// Required: the device configurations the rule names that no image
    /// serves (`gfx90a:sramecc+:xnack-`, `sm_103`); empty when it passes.
    pub unserved: Vec<String>,
}

/// An image's target ID, or for a host CPU image the CPU
/// ([`cpu_arch`](super::select::cpu_arch)), or else its triple; empty
/// when it has none of them.
fn image_label_plain(img: &Image) -> String {
    match super::select::cpu_arch(img) {
        Some(cpu) => cpu.name().to_string(),
        None => img.target_or_triple().to_string(),
    }
}

/// What an image is built for, as reports name it: its target ID (for a
/// host CPU image, the CPU), and for CUDA images their kind too
/// (`sm_80:cubin`, `sm_80:ptx`).
pub fn image_label(img: &Image) -> String {
    match img.image_kind {
        Some(k) if img.triple.starts_with("nvptx") => {
            let kind = if super::select::is_nvptx_object(img) {
                "cubin".to_string()
            } else {
                k.to_string()
            };
            format!("{}:{kind}", img.target_id)
        }
        _ => image_label_plain(img),
    }
}

impl RuleResult {
    /// What a required rule that holds is served by, as the reports say
    /// it (`sm_80: sm_80:cubin sm_86:cubin`, `… through PTX JIT: …`);
    /// `None` for any other rule.
    pub(crate) fn serving_note(&self) -> Option<String> {
        (self.required && self.passed).then(|| {
            let jit = if self.by_ptx_jit {
                " through PTX JIT"
            } else {
                ""
            };
            format!("{}{jit}: {}", self.rule.text, self.serving.join(" "))
        })
    }

    fn required(rule: Rule, imgs: &[&Image], exact: bool) -> RuleResult {
        let c = rule.coverage(imgs, exact);
        let mut serving: Vec<String> = imgs
            .iter()
            .filter(|i| c.images.contains(&i.id))
            .map(|i| image_label(i))
            .collect();
        super::sort::arch_sort(&mut serving);
        serving.dedup();
        RuleResult {
            rule,
            required: true,
            passed: c.passed,
            images: c.images,
            by_ptx_jit: c.by_ptx_jit,
            undetermined: c.undetermined,
            serving,
            unserved: c.unserved,
        }
    }

    fn forbidden(rule: Rule, imgs: &[&Image], exact: bool) -> RuleResult {
        let mut r = RuleResult {
            rule,
            required: false,
            passed: false,
            images: Vec::new(),
            by_ptx_jit: false,
            undetermined: Vec::new(),
            serving: Vec::new(),
            unserved: Vec::new(),
        };
        for i in imgs {
            match r.rule.built_for(i, exact) {
                Meets::Yes | Meets::ByPtxJit => r.images.push(i.id),
                Meets::Undetermined => r.undetermined.push(i.id),
                Meets::No => {}
            }
        }
        r.passed = r.images.is_empty() && r.undetermined.is_empty();
        r
    }
}

/// One reason a file (or all inputs together) fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A required rule is not met.
    Missing(RuleResult),
    /// A forbidden rule matches images (or images of unknown kind).
    Forbidden(RuleResult),
    /// A problem met while scanning (with [`Requirements::strict`]).
    Problem(String),
}

fn ids(images: &[usize]) -> String {
    images
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// `arch X`, `kind Y` or `X:Y`, as the rule was given.
fn what(r: &Rule) -> String {
    match (&r.arch, &r.kind) {
        (Some(a), None) => format!("arch {a}"),
        (None, Some(k)) => format!("kind {k}"),
        _ => r.text.clone(),
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Missing(r) => {
                write!(f, "missing {}", what(&r.rule))?;
                // Partly served: say what is missing, and what serves the
                // rest.
                if !r.serving.is_empty() {
                    write!(
                        f,
                        " for {} (the rest served by {})",
                        r.unserved.join(" "),
                        r.serving.join(" ")
                    )?;
                }
                if !r.undetermined.is_empty() {
                    write!(
                        f,
                        " (the kind of image {} is not known)",
                        ids(&r.undetermined)
                    )?;
                }
                Ok(())
            }
            Failure::Forbidden(r) => {
                write!(f, "forbidden {}", what(&r.rule))?;
                if !r.images.is_empty() {
                    write!(f, " (image {})", ids(&r.images))?;
                }
                if !r.undetermined.is_empty() {
                    write!(
                        f,
                        " (cannot tell for image {}: kind not known)",
                        ids(&r.undetermined)
                    )?;
                }
                Ok(())
            }
            Failure::Problem(p) => write!(f, "problem: {p}"),
        }
    }
}

/// The verdict on one input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The input could not be read (why); an input error.
    Unreadable(Unread),
    /// The scan met problems (a corrupt or truncated container): an input
    /// error, whatever the images that could be read hold, unless
    /// [`Requirements::allow_corrupt`].
    Corrupt {
        /// The problems' messages.
        problems: Vec<String>,
    },
    /// The input was scanned.
    Checked {
        /// How many device images it carries.
        device_images: usize,
        /// The target IDs present, in architecture order (AMDGPU by ISA version, then CUDA by
        /// number, then the others),
        /// each once.
        present: Vec<String>,
        /// Every rule's result (required rules only when it carries device
        /// code and without [`Requirements::any`]).
        rules: Vec<RuleResult>,
        /// Why it fails; empty when it passes.
        failures: Vec<Failure>,
    },
}

impl Verdict {
    /// Whether the input fails the check.
    pub fn failed(&self) -> bool {
        match self {
            Verdict::Unreadable(_) | Verdict::Corrupt { .. } => true,
            Verdict::Checked { failures, .. } => !failures.is_empty(),
        }
    }

    /// Whether the input could not be read, or not wholly parsed.
    pub fn is_input_error(&self) -> bool {
        matches!(self, Verdict::Unreadable(_) | Verdict::Corrupt { .. })
    }
}

/// The result of [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Outcome {
    /// One verdict per input, in the order given.
    pub files: Vec<Verdict>,
    /// Something is required but no input carries device images (never
    /// concluded when an input could not be judged: an input error).
    pub no_device_code: bool,
    /// With [`Requirements::any`]: the required rules over all inputs.
    pub all_inputs_rules: Vec<RuleResult>,
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

    /// The exit code `offload-kit check` gives: 2 when an input could not
    /// be read or parsed, else 1 when a requirement is not met, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.files.iter().any(Verdict::is_input_error) {
            2
        } else if self.passed() {
            0
        } else {
            1
        }
    }
}

/// Device images of a report: not host entries, not empty placeholders.
pub fn device_images(r: &Report) -> impl Iterator<Item = &Image> {
    r.images
        .iter()
        .filter(|i| !(i.offload_kind.is_host() || (i.size == 0 && i.arch.is_empty())))
}

/// Checks the inputs (each a scan report, or why it could not be read)
/// against `req`: every input carrying device code must meet the required
/// rules on its own (all together with [`Requirements::any`]); forbidding
/// rules fail wherever they match. A file with scan problems is an input
/// error unless [`Requirements::allow_corrupt`].
pub fn check<'a>(
    inputs: impl IntoIterator<Item = Result<&'a Report, &'a str>>,
    req: &Requirements,
) -> Outcome {
    let (require, forbid) = (req.require_rules(), req.forbid_rules());
    let mut files = Vec::new();
    let mut any_device = false;
    let mut all: Vec<&Image> = Vec::new();
    for input in inputs {
        let r = match input {
            Ok(r) => r,
            Err(e) => {
                files.push(Verdict::Unreadable(Unread::new(e)));
                continue;
            }
        };
        if let Some(why) = r.unread_why() {
            // Never judged, whatever damage is allowed: nothing was read.
            files.push(Verdict::Unreadable(Unread::new(why)));
            continue;
        }
        if !req.allow_corrupt && r.damaged() {
            files.push(Verdict::Corrupt {
                problems: damage(r).collect(),
            });
            continue;
        }
        let imgs: Vec<&Image> = device_images(r).collect();
        let mut rules = Vec::new();
        let mut failures = Vec::new();
        if !imgs.is_empty() {
            any_device = true;
            if !req.any {
                for rule in &require {
                    let res = RuleResult::required(rule.clone(), &imgs, req.exact);
                    if !res.passed {
                        failures.push(Failure::Missing(res.clone()));
                    }
                    rules.push(res);
                }
            }
        }
        for rule in &forbid {
            let res = RuleResult::forbidden(rule.clone(), &imgs, req.exact);
            if !res.passed {
                failures.push(Failure::Forbidden(res.clone()));
            }
            rules.push(res);
        }
        if req.strict && req.allow_corrupt {
            failures.extend(damage(r).map(Failure::Problem));
        }
        let mut present: Vec<String> = imgs
            .iter()
            .map(|i| image_label_plain(i))
            .filter(|l| !l.is_empty())
            .collect();
        super::sort::arch_sort(&mut present);
        present.dedup();
        files.push(Verdict::Checked {
            device_images: imgs.len(),
            present,
            rules,
            failures,
        });
        all.extend(imgs);
    }
    // What all inputs together carry is not known when one of them could
    // not be judged (unreadable, or damaged): nothing is concluded from
    // the others, and the input error is the outcome.
    let judged = !files.iter().any(Verdict::is_input_error);
    let mut all_inputs_rules = Vec::new();
    let mut all_inputs = Vec::new();
    if req.any && judged {
        for rule in &require {
            let res = RuleResult::required(rule.clone(), &all, req.exact);
            if !res.passed {
                all_inputs.push(Failure::Missing(res.clone()));
            }
            all_inputs_rules.push(res);
        }
    }
    Outcome {
        files,
        no_device_code: judged && !require.is_empty() && !any_device,
        all_inputs_rules,
        all_inputs,
    }
}

/// The messages of what was damaged in `r`: its problems of kind
/// [`ProblemKind::Damage`](super::ProblemKind::Damage), and the limit
/// that stopped it.
fn damage(r: &Report) -> impl Iterator<Item = String> + '_ {
    r.problems
        .iter()
        .filter(|p| p.kind == super::ProblemKind::Damage)
        .map(|p| p.message.clone())
        .chain(r.stopped.map(|l| format!("the scan stopped: {l}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::Problem;

    fn corrupt() -> Report {
        Report {
            problems: vec![Problem {
                offset: Some(0),
                section: None,
                member: None,
                container: None,
                message: "invalid bundle: truncated".into(),
                kind: crate::scan::ProblemKind::Damage,
                within: None,
                whole_file: false,
            }],
            ..Report::default()
        }
    }

    #[test]
    fn exit_codes() {
        let mut req = Requirements::default();
        req.require.push(Rule::parse("gfx90a").unwrap());
        let bad = corrupt();
        let empty = Report::default();
        // A corrupt file is an input error, never "ok".
        let o = check([Ok(&bad)], &req);
        assert!(matches!(o.files[0], Verdict::Corrupt { .. }));
        assert_eq!(o.exit_code(), 2);
        // An unreadable one too, and it wins over a rule not met.
        let o = check([Err("no such file"), Ok(&empty)], &req);
        assert_eq!(o.exit_code(), 2);
        // Neither says that no input carries device code: the damaged or
        // unreadable one may, and the input error is the outcome.
        for o in [
            check([Ok(&bad)], &req),
            check([Err("no such file"), Ok(&empty)], &req),
        ] {
            assert!(!o.no_device_code, "{o:?}");
            assert_eq!(o.failures(), 1, "{o:?}");
        }
        let mut any = req.clone();
        any.any = true;
        let o = check([Ok(&bad), Ok(&empty)], &any);
        assert!(o.all_inputs.is_empty() && o.all_inputs_rules.is_empty() && !o.no_device_code);
        assert_eq!(o.exit_code(), 2);
        // Once every input is read, nothing anywhere is a failure.
        let o = check([Ok(&empty)], &req);
        assert!(o.no_device_code);
        assert_eq!(o.exit_code(), 1);
        // --allow-corrupt: checked on what could be read (nothing here).
        req.allow_corrupt = true;
        let o = check([Ok(&bad)], &req);
        assert!(matches!(o.files[0], Verdict::Checked { .. }));
        assert!(o.no_device_code);
        assert_eq!(o.exit_code(), 1);
        // --strict then makes the problem a failure of the file.
        req.strict = true;
        let o = check([Ok(&bad)], &req);
        assert!(o.files[0].failed() && !o.files[0].is_input_error());
    }
}

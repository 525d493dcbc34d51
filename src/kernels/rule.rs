//! Kernel rules for CI (`check --require-kernel` / `--forbid-kernel`):
//! `NAME[@TARGET]`, where NAME is a glob pattern and TARGET a
//! [`Rule`](crate::scan::Rule) (`gfx942`, `sm_90`, `gfx90a:xnack+`).

use std::cell::OnceCell;

use super::{ImageKernels, Listing};
use crate::scan::{Image, Meets, Report, Rule, RuleError};

/// A kernel that must be present, or must not.
///
/// NAME is a glob pattern (`*`, `?`, `[...]`) matched against a kernel's
/// mangled name, its demangled name, and its demangled name up to its
/// parameter list (`ns::gemm<float>` for `ns::gemm<float>(float*, int)`).
/// With `@TARGET`, only the images a device of that target would load
/// count for a required kernel ([`Rule::loaded_by_some`]), and only the
/// images built for it for a forbidden one ([`Rule::built_for`]), as
/// `check --require` and `--forbid` count them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct KernelRule {
    /// The rule as written.
    pub text: String,
    /// The name pattern.
    pub pattern: glob::Pattern,
    /// The target, if one was given.
    pub target: Option<Rule>,
}

impl PartialEq for KernelRule {
    fn eq(&self, other: &KernelRule) -> bool {
        self.text == other.text
    }
}

impl KernelRule {
    /// Parses `NAME[@TARGET]` (the last `@` splits: C++ names hold none).
    pub fn parse(text: &str) -> Result<KernelRule, RuleError> {
        let t = text.trim();
        let (name, target) = match t.rsplit_once('@') {
            Some((n, t)) => (n, Some(Rule::parse(t).map_err(|e| e.within(text))?)),
            None => (t, None),
        };
        if name.is_empty() {
            return Err(RuleError::new("no kernel name before '@'".into()).within(text));
        }
        let pattern = glob::Pattern::new(name)
            .map_err(|e| RuleError::new(format!("not a glob pattern: {e}")).within(text))?;
        Ok(KernelRule {
            text: t.to_string(),
            pattern,
            target,
        })
    }

    /// Whether the kernel named `name` matches the pattern (mangled, or
    /// demangled whole or up to its parameters).
    pub fn matches_name(&self, name: &str) -> bool {
        self.matches(name, || super::demangle(name))
    }

    /// [`KernelRule::matches_name`], the demangled name (`None`: not a
    /// mangled name) from `demangled`, asked only when the mangled name
    /// does not match.
    fn matches(&self, name: &str, demangled: impl FnOnce() -> Option<String>) -> bool {
        self.pattern.matches(name)
            || demangled().is_some_and(|d| {
                self.pattern.matches(&d) || self.pattern.matches(without_params(&d))
            })
    }
}

/// A demangled name up to its top-level parameter list.
fn without_params(d: &str) -> &str {
    // The parameter list is the last top-level `(...)`; templates nest
    // in `<...>` (and `operator()` names hold parentheses of their own).
    let mut depth = 0i32;
    let mut cut = d.len();
    for (i, c) in d.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    cut = i;
                    break;
                }
            }
            _ => {}
        }
    }
    d[..cut].trim_end()
}

/// The result of one kernel rule for one input (or all inputs together).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct KernelRuleResult {
    /// The rule.
    pub rule: KernelRule,
    /// `true` for `--require-kernel`, `false` for `--forbid-kernel`.
    pub required: bool,
    /// Whether the rule holds.
    pub passed: bool,
    /// The images (ids) the rule looked at: those of its target.
    pub images: usize,
    /// The kernels that match, with their image: `(image id, name)`.
    pub found: Vec<(usize, String)>,
    /// Images the rule looked at whose kernels could not be read (damaged,
    /// or a format with no symbol reader, such as bitcode): a required
    /// kernel not found elsewhere, or a forbidden one, cannot be ruled
    /// out, and the rule fails.
    pub unlisted: Vec<usize>,
}

impl KernelRuleResult {
    /// One line on why it failed (or what it found).
    pub fn summary(&self) -> String {
        let target = self.rule.target.as_ref().map_or("", |t| t.text.as_str());
        let mut s = if self.images == 0 && !target.is_empty() {
            format!("kernel {}: no image for {target}", self.rule.text)
        } else if self.required && self.found.is_empty() {
            format!(
                "kernel {} not found in {} image(s)",
                self.rule.text, self.images
            )
        } else if self.required {
            format!(
                "kernel {} found in image(s) {}",
                self.rule.text,
                ids(&self.found)
            )
        } else if self.found.is_empty() {
            format!(
                "kernel {} absent from {} image(s)",
                self.rule.text, self.images
            )
        } else {
            format!(
                "forbidden kernel {} present: {}",
                self.rule.text,
                self.found
                    .iter()
                    .map(|(i, n)| format!("{n} (image {i})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        if !self.unlisted.is_empty() && !self.passed {
            s += &format!(
                "; the kernels of {} image(s) could not be listed",
                self.unlisted.len()
            );
        }
        s
    }
}

fn ids(found: &[(usize, String)]) -> String {
    let mut v: Vec<usize> = found.iter().map(|f| f.0).collect();
    v.dedup();
    v.iter().map(usize::to_string).collect::<Vec<_>>().join(" ")
}

/// Checks the kernel rules against one scanned file: its report and what
/// [`Collect`](super::Collect) read of its images (`exact` compares
/// targets as strings, as [`Rule`] does).
pub fn check(
    report: &Report,
    kernels: &[ImageKernels],
    require: &[KernelRule],
    forbid: &[KernelRule],
    exact: bool,
) -> Vec<KernelRuleResult> {
    // An image's listing, with its kernels' demangled names, made once
    // whatever the number of rules that ask.
    let demangled: Vec<OnceCell<Vec<Option<String>>>> =
        kernels.iter().map(|_| OnceCell::new()).collect();
    let listing = |id: usize| -> Option<(&Listing, &[Option<String>])> {
        let i = kernels.binary_search_by_key(&id, |k| k.image).ok()?;
        let l = kernels[i].listing.as_ref().ok()?;
        let names = demangled[i]
            .get_or_init(|| l.kernels.iter().map(|k| super::demangle(&k.name)).collect());
        Some((l, names))
    };
    let devices: Vec<&Image> = report
        .images
        .iter()
        .filter(|i| !i.offload_kind.is_host() && i.is_leaf() && i.is_read())
        .collect();
    let one = |rule: &KernelRule, required: bool| {
        let candidates: Vec<&Image> = devices
            .iter()
            .copied()
            .filter(|img| match &rule.target {
                None => true,
                Some(t) if required => t.loaded_by_some(img, exact) != Meets::No,
                Some(t) => t.built_for(img, exact) != Meets::No,
            })
            .collect();
        let mut found = Vec::new();
        let mut unlisted = Vec::new();
        for img in &candidates {
            match listing(img.id) {
                Some((l, names)) => found.extend(
                    l.kernels
                        .iter()
                        .zip(names)
                        .filter(|(k, d)| rule.matches(&k.name, || (*d).clone()))
                        .map(|(k, _)| (img.id, k.name.clone())),
                ),
                None => unlisted.push(img.id),
            }
        }
        let passed = passes(required, &found, &unlisted);
        KernelRuleResult {
            rule: rule.clone(),
            required,
            passed,
            images: candidates.len(),
            found,
            unlisted,
        }
    };
    require
        .iter()
        .map(|r| one(r, true))
        .chain(forbid.iter().map(|r| one(r, false)))
        .collect()
}

/// The results of the same rules over several files, as one result per
/// rule for all of them together (`check --any`): a required kernel found
/// in any file, a forbidden one in none (image ids are each file's own).
pub fn combine(per_file: &[Vec<KernelRuleResult>]) -> Vec<KernelRuleResult> {
    let Some(first) = per_file.first() else {
        return Vec::new();
    };
    let mut out: Vec<KernelRuleResult> = first.clone();
    for results in &per_file[1..] {
        for (acc, r) in out.iter_mut().zip(results) {
            acc.images += r.images;
            acc.found.extend(r.found.iter().cloned());
            acc.unlisted.extend(r.unlisted.iter().copied());
        }
    }
    for r in &mut out {
        r.passed = passes(r.required, &r.found, &r.unlisted);
    }
    out
}

/// Whether a rule holds: a required kernel was found; a forbidden one was
/// not, and no image the rule looked at had kernels that could not be
/// listed.
fn passes(required: bool, found: &[(usize, String)], unlisted: &[usize]) -> bool {
    if required {
        !found.is_empty()
    } else {
        found.is_empty() && unlisted.is_empty()
    }
}

//! `check --junit FILE`: the check as JUnit XML, for the CI systems that
//! show test results (docs/scanners.md). One `<testcase>` per rule and
//! input (its `classname` the input, its `name` the rule's type and text:
//! `require gfx90a`, `forbid-kernel *debug*`); a rule that does not hold
//! has a `<failure>` whose message is the reason the text report gives, an
//! input that could not be judged (unreadable, corrupt, its symbols
//! damaged) an `<error>` in each of its cases. With `--any`, the required
//! rules are cases of `(all inputs)`; so are "device images present" (when
//! something is required) and, per library, the per-GPU files. The
//! document holds nothing that changes from run to run (no time, no host).

use std::fmt::Write as _;

use crate::kernels::CheckReport;
use crate::kernels::gate::ALL_INPUTS;
use crate::scan::{Failure, RuleResult, Verdict};
use crate::text::xml;

/// What a case found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CaseResult {
    /// The rule holds.
    Passed,
    /// It does not: why.
    Failed(String),
    /// The input could not be judged: why.
    Error(String),
}

/// One test case: a rule (or another judgement) on an input.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    /// The input, or `(all inputs)`.
    pub(crate) input: String,
    /// The rule: its type and text.
    pub(crate) name: String,
    pub(crate) result: CaseResult,
}

/// Why a case whose input could not be read is not judged (`--any`).
const NOT_JUDGED: &str = "not judged: an input could not be read or is corrupt";

/// A target rule's result as a case result: the reason a failing rule
/// gives in the text report.
fn rule_result(r: Option<&RuleResult>) -> CaseResult {
    match r {
        Some(r) if !r.passed => {
            let f = if r.required {
                Failure::Missing(r.clone())
            } else {
                Failure::Forbidden(r.clone())
            };
            CaseResult::Failed(f.to_string())
        }
        _ => CaseResult::Passed,
    }
}

/// Every case of the report, in order: per input its target rules
/// (required, then forbidden), its kernel rules and its scan problems
/// (`--strict`); then the cases of all inputs together; then the per-GPU
/// files.
pub(crate) fn cases(r: &CheckReport<'_>) -> Vec<Case> {
    let (require, forbid) = (r.req.require_rules(), r.req.forbid_rules());
    let mut cases = Vec::new();
    for (i, (path, v)) in r.paths.iter().zip(&r.outcome.files).enumerate() {
        let error = r.error(i);
        let mut push = |name: String, result: CaseResult| {
            let result = match &error {
                Some(e) => CaseResult::Error(e.clone()),
                None => result,
            };
            cases.push(Case {
                input: (*path).to_string(),
                name,
                result,
            });
        };
        let (rules, failures): (&[RuleResult], &[Failure]) = match v {
            Verdict::Checked {
                rules, failures, ..
            } => (rules.as_slice(), failures.as_slice()),
            _ => (&[], &[]),
        };
        // The forbidding rules are judged on every input checked, the
        // required ones before them only on one with device images.
        let (required, forbidden) = rules.split_at(rules.len().saturating_sub(forbid.len()));
        if !r.req.any {
            for (j, rule) in require.iter().enumerate() {
                push(
                    format!("require {}", rule.text),
                    rule_result(required.get(j)),
                );
            }
        }
        for (j, rule) in forbid.iter().enumerate() {
            push(
                format!("forbid {}", rule.text),
                rule_result(forbidden.get(j)),
            );
        }
        let kernel_rules = r.gate.require.iter().map(|k| (k, "require-kernel"));
        let kernel_rules = kernel_rules.chain(r.gate.forbid.iter().map(|k| (k, "forbid-kernel")));
        if !r.req.any {
            let results = r.gate.files.get(i).map_or(&[][..], Vec::as_slice);
            for (j, (rule, ty)) in kernel_rules.enumerate() {
                let result = match results.get(j) {
                    Some(k) if !k.passed => CaseResult::Failed(k.summary()),
                    _ => CaseResult::Passed,
                };
                push(format!("{ty} {}", rule.text), result);
            }
        }
        if r.req.strict && r.req.allow_corrupt {
            let problems: Vec<String> = failures
                .iter()
                .filter(|f| matches!(f, Failure::Problem(_)))
                .map(ToString::to_string)
                .collect();
            let result = match problems.is_empty() {
                true => CaseResult::Passed,
                false => CaseResult::Failed(problems.join("; ")),
            };
            push("no scan problems (--strict)".to_string(), result);
        }
    }
    all_inputs_cases(r, &require, &mut cases);
    for j in r.per_gpu {
        cases.push(Case {
            input: r.per_gpu_input(j).to_string(),
            name: format!(
                "per-GPU files of {} in {}/: {}",
                j.convention.library, j.location, j.rule
            ),
            result: match j.passed {
                true => CaseResult::Passed,
                false => CaseResult::Failed(j.summary()),
            },
        });
    }
    cases
}

/// The cases of all inputs together: with `--any`, the required rules and
/// kernel rules; with any required rule, that some input carries device
/// images. None of them is judged when an input could not be.
fn all_inputs_cases(r: &CheckReport<'_>, require: &[crate::scan::Rule], cases: &mut Vec<Case>) {
    let judged = (0..r.paths.len()).all(|i| r.error(i).is_none());
    let mut push = |name: String, result: CaseResult| {
        cases.push(Case {
            input: ALL_INPUTS.to_string(),
            name,
            result: if judged {
                result
            } else {
                CaseResult::Error(NOT_JUDGED.to_string())
            },
        });
    };
    if r.req.any {
        for (j, rule) in require.iter().enumerate() {
            push(
                format!("require {}", rule.text),
                rule_result(r.outcome.all_inputs_rules.get(j)),
            );
        }
        let kernel_rules = r.gate.require.iter().map(|k| (k, "require-kernel"));
        let kernel_rules = kernel_rules.chain(r.gate.forbid.iter().map(|k| (k, "forbid-kernel")));
        for (j, (rule, ty)) in kernel_rules.enumerate() {
            let result = match r.gate.all_inputs.get(j) {
                Some(k) if !k.passed => CaseResult::Failed(k.summary()),
                _ => CaseResult::Passed,
            };
            push(format!("{ty} {}", rule.text), result);
        }
    }
    if !require.is_empty() {
        let result = match r.outcome.no_device_code {
            true => CaseResult::Failed("no input carries device images".to_string()),
            false => CaseResult::Passed,
        };
        push("device images present".to_string(), result);
    }
}

/// The JUnit XML document of the report: a `<testsuites>` holding one
/// `<testsuite>` named `offload-kit check` (its exit code as a property),
/// with the counts of its cases, failures and errors.
pub(crate) fn document(r: &CheckReport<'_>) -> String {
    let cases = cases(r);
    let failures = cases
        .iter()
        .filter(|c| matches!(c.result, CaseResult::Failed(_)))
        .count();
    let errors = cases
        .iter()
        .filter(|c| matches!(c.result, CaseResult::Error(_)))
        .count();
    let counts = format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\"",
        cases.len()
    );
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(out, "<testsuites name=\"offload-kit check\" {counts}>");
    let _ = writeln!(
        out,
        "  <testsuite name=\"offload-kit check\" {counts} skipped=\"0\">"
    );
    let _ = writeln!(
        out,
        "    <properties>\n      <property name=\"exit_code\" value=\"{}\"/>\n    </properties>",
        r.exit_code()
    );
    for c in &cases {
        let head = format!(
            "    <testcase classname=\"{}\" name=\"{}\"",
            xml(&c.input),
            xml(&c.name)
        );
        let _ = match &c.result {
            CaseResult::Passed => writeln!(out, "{head}/>"),
            CaseResult::Failed(why) => writeln!(
                out,
                "{head}>\n      <failure message=\"{0}\" type=\"fail\">{0}</failure>\n    </testcase>",
                xml(why)
            ),
            CaseResult::Error(why) => writeln!(
                out,
                "{head}>\n      <error message=\"{0}\" type=\"input error\">{0}</error>\n    </testcase>",
                xml(why)
            ),
        };
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

impl CheckReport<'_> {
    /// The JUnit XML document of `check --junit` (docs/scanners.md): a
    /// `<testcase>` per rule and input, a `<failure>` where a rule does
    /// not hold and an `<error>` where the input could not be judged.
    pub fn junit(&self) -> String {
        document(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::KernelGate;
    use crate::kernels::KernelRule;
    use crate::scan::{Report, Requirements, Rule, Unread};

    /// An unreadable input with an awkward name and a readable one with
    /// no device images, against a required and a forbidden rule and a
    /// required kernel: a case per rule and input, errors for the first,
    /// the kernel's failure for the second, the counts right and every
    /// name escaped.
    #[test]
    fn a_case_per_rule_and_input_with_counts_and_escapes() {
        let req = Requirements {
            require: vec![Rule::parse("gfx90a").unwrap()],
            forbid_arch: vec!["sm_80".into()],
            ..Requirements::default()
        };
        let gone: Result<Report, Unread> = Err(Unread::new("cannot open: <gone> & \"lost\""));
        let empty: Result<Report, Unread> = Ok(Report::default());
        let inputs = [&gone, &empty];
        let outcome = crate::scan::check(
            inputs.iter().map(|r| r.as_ref().map_err(Unread::as_str)),
            &req,
        );
        let require = [KernelRule::parse("gemm*@gfx90a").unwrap()];
        let gate = KernelGate::judge(
            inputs.iter().map(|r| (*r, &[][..])),
            &outcome,
            &require,
            &[],
            &req,
        );
        let paths = ["a<&\"'\u{1b}.so", "b.so"];
        let report = CheckReport::new(&req, &paths, &outcome)
            .with_kernel_rules(&gate)
            .with_walked(&[false, false]);
        let cases = cases(&report);
        let names: Vec<(&str, &str)> = cases
            .iter()
            .map(|c| (c.input.as_str(), c.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                (paths[0], "require gfx90a"),
                (paths[0], "forbid sm_80"),
                (paths[0], "require-kernel gemm*@gfx90a"),
                ("b.so", "require gfx90a"),
                ("b.so", "forbid sm_80"),
                ("b.so", "require-kernel gemm*@gfx90a"),
                (ALL_INPUTS, "device images present"),
            ]
        );
        assert!(matches!(cases[0].result, CaseResult::Error(_)));
        assert_eq!(cases[3].result, CaseResult::Passed, "no device images");
        assert_eq!(
            cases[5].result,
            CaseResult::Failed("kernel gemm*@gfx90a: no image for gfx90a".into())
        );
        assert!(matches!(cases[6].result, CaseResult::Error(_)));
        let doc = document(&report);
        assert!(
            doc.contains("tests=\"7\" failures=\"1\" errors=\"4\""),
            "{doc}"
        );
        assert!(
            doc.contains("classname=\"a&lt;&amp;&quot;&apos;\\e.so\""),
            "{doc}"
        );
        assert!(doc.contains("message=\"cannot open: &lt;gone&gt; &amp; &quot;lost&quot;\""));
        assert!(doc.contains("<property name=\"exit_code\" value=\"2\"/>"));
        assert!(!doc.contains('\u{1b}'));
        assert_eq!(doc, document(&report), "deterministic");
    }

    /// With `--any`, the required rules are cases of all inputs together;
    /// the library's entry makes the same document with no kernel rules.
    #[test]
    fn any_judges_required_rules_over_all_inputs() {
        let req = Requirements {
            require: vec![Rule::parse("gfx90a").unwrap()],
            any: true,
            ..Requirements::default()
        };
        let empty = Report::default();
        let outcome = crate::scan::check([Ok(&empty)], &req);
        let cases = cases(&CheckReport::new(&req, &["a.so"], &outcome));
        let names: Vec<(&str, &str)> = cases
            .iter()
            .map(|c| (c.input.as_str(), c.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                (ALL_INPUTS, "require gfx90a"),
                (ALL_INPUTS, "device images present")
            ]
        );
        assert_eq!(
            cases[0].result,
            CaseResult::Failed("missing arch gfx90a".into()),
            "no device images at all"
        );
        assert_eq!(
            cases[1].result,
            CaseResult::Failed("no input carries device images".into())
        );
    }
}

//! `check --markdown`: the check as a GitHub-flavoured Markdown report,
//! for a CI job summary (docs/scanners.md): a heading with the verdict and
//! the exit code, the counts the text report ends with, the rules, and a
//! table with a row per input (its status as `check --json` has it, its
//! device images, the targets present and why it passes or fails); the
//! files found in directories and packages that pass with no device
//! images share one row, as in the text. Then a row for what concerns all
//! inputs together and for each judgement on per-GPU files.

use std::fmt::Write as _;

use crate::kernels::CheckReport;
use crate::kernels::gate::ALL_INPUTS;
use crate::scan::{RuleResult, Verdict};
use crate::text::{Cell, Table, num};

/// Why a checked input passes, as the text report notes it: what serves
/// each required rule (`gfx90a: gfx90a:xnack+ gfx90a:xnack-`), and what
/// the required kernel rules found.
fn serving(r: &CheckReport<'_>, i: usize, rules: &[RuleResult]) -> String {
    let mut notes: Vec<String> = rules.iter().filter_map(RuleResult::serving_note).collect();
    if let Some(k) = r.gate.files.get(i).filter(|_| !r.gate.any) {
        notes.extend(k.iter().filter(|k| k.required).map(|k| k.summary()));
    }
    notes.join("; ")
}

/// The counts the text report ends with: inputs in error, and the other
/// failures (failing inputs, no device code at all, all inputs together,
/// per-GPU files).
fn counts(r: &CheckReport<'_>) -> (usize, usize) {
    let mut errors = 0;
    let mut failures = usize::from(r.outcome.no_device_code)
        + usize::from(!r.outcome.all_inputs.is_empty() || !r.gate.all_inputs_failures().is_empty())
        + r.per_gpu.iter().filter(|j| !j.passed).count();
    for (i, v) in r.outcome.files.iter().enumerate() {
        match r.gate.status(i, v) {
            "error" => errors += 1,
            "fail" => failures += 1,
            _ => {}
        }
    }
    (errors, failures)
}

/// The status word of a row: `ok`, `FAIL` or `ERROR` (`check --json`'s
/// `ok`, `fail`, `error`).
fn word(status: &str) -> &'static str {
    match status {
        "ok" => "ok",
        "fail" => "FAIL",
        _ => "ERROR",
    }
}

/// The report's input rows, and how many inputs found walking were left
/// out of them (passing with no device images).
fn input_rows(r: &CheckReport<'_>, t: &mut Table) -> usize {
    let mut unlisted = 0;
    for (i, (path, v)) in r.paths.iter().zip(&r.outcome.files).enumerate() {
        let status = r.gate.status(i, v);
        let (images, present, details) = match (r.error(i), v) {
            (Some(e), _) => (String::new(), String::new(), e),
            (
                None,
                Verdict::Checked {
                    device_images,
                    present,
                    rules,
                    failures,
                },
            ) => {
                let mut failed: Vec<String> = failures.iter().map(ToString::to_string).collect();
                failed.extend(r.gate.failures(i));
                let details = if !failed.is_empty() {
                    failed.join("; ")
                } else if *device_images == 0 {
                    if r.walked.get(i).copied().unwrap_or(false) {
                        unlisted += 1;
                        continue;
                    }
                    "no device images".to_string()
                } else {
                    serving(r, i, rules)
                };
                (device_images.to_string(), present.join(" "), details)
            }
            (None, _) => (String::new(), String::new(), String::new()),
        };
        t.row(vec![
            Cell::Text(path),
            Cell::Raw(word(status).to_string()),
            Cell::Raw(images),
            Cell::Text(&present),
            Cell::Text(&details),
        ]);
    }
    unlisted
}

/// The Markdown report of the check.
pub(crate) fn document(r: &CheckReport<'_>) -> String {
    let code = r.exit_code();
    let mut out = String::new();
    let verdict = if code == 0 { "passed" } else { "failed" };
    let _ = writeln!(out, "## offload-kit check: {verdict} (exit code {code})\n");
    let (errors, failures) = counts(r);
    let _ = writeln!(
        out,
        "{} input(s); {errors} input error(s), {failures} failure(s).\n",
        r.paths.len()
    );
    let mut rules = Table::new(&["Rule", "Type"]);
    for rule in r.req.require_rules() {
        rules.row(vec![Cell::Text(&rule.text), Cell::Raw("require".into())]);
    }
    for rule in r.req.forbid_rules() {
        rules.row(vec![Cell::Text(&rule.text), Cell::Raw("forbid".into())]);
    }
    for (rs, ty) in [
        (&r.gate.require, "require-kernel"),
        (&r.gate.forbid, "forbid-kernel"),
    ] {
        for rule in rs {
            rules.row(vec![Cell::Text(&rule.text), Cell::Raw(ty.into())]);
        }
    }
    if !rules.is_empty() {
        rules.write(&mut out);
    }
    let mut t = Table::new(&["Input", "Status", "Device images>", "Targets", "Details"]);
    let unlisted = input_rows(r, &mut t);
    if unlisted > 0 {
        let others = format!("{unlisted} other file(s) in the directories and packages");
        t.row(vec![
            Cell::Text(&others),
            Cell::Raw("ok".into()),
            num(0),
            Cell::Raw(String::new()),
            Cell::Text("no device images"),
        ]);
    }
    let mut all: Vec<String> = r
        .outcome
        .all_inputs
        .iter()
        .map(ToString::to_string)
        .collect();
    all.extend(r.gate.all_inputs_failures());
    if r.outcome.no_device_code {
        all.insert(0, "no input carries device images".to_string());
    }
    if !all.is_empty() {
        let details = all.join("; ");
        t.row(vec![
            Cell::Text(ALL_INPUTS),
            Cell::Raw("FAIL".into()),
            Cell::Raw(String::new()),
            Cell::Raw(String::new()),
            Cell::Text(&details),
        ]);
    }
    for j in r.per_gpu {
        let summary = j.summary();
        t.row(vec![
            Cell::Text(r.per_gpu_input(j)),
            Cell::Raw(if j.passed { "ok" } else { "FAIL" }.into()),
            Cell::Raw(String::new()),
            Cell::Raw(String::new()),
            Cell::Text(&summary),
        ]);
    }
    t.write(&mut out);
    out
}

impl CheckReport<'_> {
    /// The GitHub-flavoured Markdown of `check --markdown`: the verdict,
    /// the rules, and a table row per input, its status and why.
    pub fn markdown(&self) -> String {
        document(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{Report, Requirements, Rule};

    /// A passing input with a pipe and a backquote in its name and an
    /// unreadable one: the verdict, the counts, and every row of the
    /// tables with the header's number of cells.
    #[test]
    fn tables_are_well_formed_and_counts_right() {
        let req = Requirements {
            forbid: vec![Rule::parse("sm_80").unwrap()],
            ..Requirements::default()
        };
        let ok = Report::default();
        let outcome = crate::scan::check([Ok(&ok), Err("cannot open")], &req);
        let text = document(&CheckReport::new(&req, &["a|b`c.so", "gone.so"], &outcome));
        assert!(
            text.starts_with("## offload-kit check: failed (exit code 2)\n"),
            "{text}"
        );
        assert!(
            text.contains("2 input(s); 1 input error(s), 0 failure(s)."),
            "{text}"
        );
        assert!(
            text.contains("| a\\|b\\`c.so | ok | 0 | - | no device images |"),
            "{text}"
        );
        assert!(
            text.contains("| gone.so | ERROR | - | - | cannot open |"),
            "{text}"
        );
        crate::text::assert_tables_well_formed(&text);
    }
}

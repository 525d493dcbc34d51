//! The text report of `offload-kit check`: a line per input (`ok`,
//! `FAIL` or `ERROR`, with what serves each rule or what fails), a line
//! for each quiet directory and per-GPU library, what concerns all inputs
//! together, and the count of failures; from the [`Outcome`], the
//! [`KernelGate`] and the judgements on per-GPU files the command has.

use std::io::Write;

use anyhow::Result;

use super::dirs::quiet_dirs;
use super::print_line;
use super::problems::{one_line, summary};
use crate::inputs::Scanned;
use crate::kernels::{KernelGate, KernelRuleResult, PerGpuJudgement};
use crate::scan::{self, Outcome, RuleResult, Verdict};
use crate::text::printable;

/// How the report is printed beside the outcome: per input, whether it
/// was found walking a directory and what its scan says of fatbins it did
/// not read; the per-GPU files' judgements; `--any` and `--quiet`.
pub(crate) struct Shown<'a> {
    pub(crate) walked: &'a [bool],
    /// The files scanned (as `walked`) and the paths named: a directory
    /// named of which no file gets a line gets its own.
    pub(crate) scanned: &'a [Scanned],
    pub(crate) named: &'a [std::path::PathBuf],
    pub(crate) notes: &'a [Option<String>],
    pub(crate) per_gpu: &'a [PerGpuJudgement],
    pub(crate) any: bool,
    pub(crate) quiet: bool,
}

/// Prints a line per judgement of per-GPU files (failures only with
/// `quiet`): `FAIL INPUT: per-GPU files of …: none for gfx942 (files for:
/// gfx90a)`. Returns how many fail.
fn print_per_gpu(out: &mut impl Write, shown: &Shown<'_>) -> Result<usize> {
    let mut failed = 0;
    for j in shown.per_gpu {
        let input = match (&j.input, shown.any) {
            (Some(i), _) => i.as_str(),
            (None, true) => "(all inputs)",
            (None, false) => "(files named)",
        };
        if !j.passed {
            failed += 1;
            print_line(out, &format!("FAIL {input}: {}", j.summary()))?;
        } else if !shown.quiet {
            print_line(out, &format!("ok   {input}: {}", j.summary()))?;
        }
    }
    Ok(failed)
}

/// What the required kernel rules found, as a note: `; kernel
/// gemm*@gfx942 found in image(s) 3 4`.
fn kernel_note(results: &[KernelRuleResult]) -> String {
    results
        .iter()
        .filter(|r| r.required)
        .map(|r| format!("; {}", r.summary()))
        .collect()
}

/// What serves each required rule, as a note: `(gfx90a: gfx90a:xnack+
/// gfx90a:xnack-; sm_90 through PTX JIT: sm_80:ptx)`.
fn serving_note(rules: &[RuleResult]) -> String {
    let notes: Vec<String> = rules.iter().filter_map(RuleResult::serving_note).collect();
    if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    }
}

/// What an input whose rules were checked found (a [`Verdict::Checked`]).
struct Checked<'a> {
    device_images: usize,
    present: &'a [String],
    rules: &'a [RuleResult],
    failures: &'a [scan::Failure],
}

/// What [`checked_line`] says of an input.
enum Line {
    /// This line.
    Print(String),
    /// Nothing: found walking a directory or package, it passes with no
    /// device images (counted in one line for them all).
    Unlisted,
    /// Nothing: it passes and `--quiet` was given.
    Quiet,
}

/// The line for input `i`, `path`: `ok` with what it holds (and why the
/// rules hold), or `FAIL` with what failed; `note` is what its scan says
/// of fatbins it did not read.
fn checked_line(
    path: &str,
    i: usize,
    c: &Checked<'_>,
    kernels: &KernelGate,
    note: Option<&str>,
    walked: bool,
    quiet: bool,
) -> Line {
    let mut failed: Vec<String> = c.failures.iter().map(ToString::to_string).collect();
    failed.extend(kernels.failures(i));
    if !failed.is_empty() {
        let has = if c.present.is_empty() {
            "-".into()
        } else {
            c.present.join(" ")
        };
        failed.extend(note.map(str::to_owned));
        return Line::Print(format!("FAIL {path}: {} (has: {has})", failed.join("; ")));
    }
    if quiet {
        return Line::Quiet;
    }
    if c.device_images == 0 {
        return match note {
            None if walked => Line::Unlisted,
            None => Line::Print(format!("ok   {path}: no device images")),
            Some(n) => Line::Print(format!("ok   {path}: no device images ({n})")),
        };
    }
    let mut said = serving_note(c.rules);
    if let Some(k) = kernels.files.get(i).filter(|_| !kernels.any) {
        said += &kernel_note(k);
    }
    if let Some(n) = note {
        said += &format!("; {n}");
    }
    Line::Print(format!("ok   {path}: {}{said}", c.present.join(" ")))
}

/// Prints a line for each directory named none of whose files got a line
/// (`listed`, per file scanned); the count of `unlisted` files left for
/// the line on the other files.
fn print_quiet_dirs(
    out: &mut impl Write,
    shown: &Shown<'_>,
    listed: Vec<bool>,
    mut unlisted: usize,
) -> Result<usize> {
    for d in quiet_dirs(shown.named, shown.scanned.iter().zip(listed)) {
        unlisted = unlisted.saturating_sub(d.entries);
        print_line(&mut *out, &format!("ok   {}", d.line()))?;
    }
    Ok(unlisted)
}

/// Prints the report to `out`: a line per input (failures only with
/// `quiet`), then what concerns all inputs, then the count of failures.
/// Returns the lines for standard error that say again which inputs are
/// in error, for the caller to print after the report.
pub(crate) fn print_outcome(
    mut out: &mut impl Write,
    paths: &[&str],
    outcome: &Outcome,
    kernels: &KernelGate,
    shown: &Shown<'_>,
) -> Result<Vec<String>> {
    let (walked, notes, quiet) = (shown.walked, shown.notes, shown.quiet);
    let mut unlisted = 0usize;
    // Whether each input got a line of its own.
    let mut listed = vec![false; paths.len()];
    // The inputs in error, said again on standard error after the report.
    let mut stderr = Vec::new();
    for (i, ((path, verdict), walked)) in paths.iter().zip(&outcome.files).zip(walked).enumerate() {
        if let Some(line) = error_line(path, kernels.damaged.get(i), verdict, &mut stderr) {
            print_line(&mut out, &line)?;
            listed[i] = true;
            continue;
        }
        match verdict {
            Verdict::Unreadable(_) | Verdict::Corrupt { .. } => {}
            Verdict::Checked {
                device_images,
                present,
                rules,
                failures,
            } => {
                let checked = Checked {
                    device_images: *device_images,
                    present,
                    rules,
                    failures,
                };
                let note = notes.get(i).and_then(Option::as_deref);
                match checked_line(path, i, &checked, kernels, note, *walked, quiet) {
                    Line::Print(line) => {
                        print_line(&mut out, &line)?;
                        listed[i] = true;
                    }
                    Line::Unlisted => unlisted += 1,
                    Line::Quiet => {}
                }
            }
        }
    }
    if !quiet {
        unlisted = print_quiet_dirs(&mut out, shown, listed, unlisted)?;
    }
    if unlisted > 0 && !quiet {
        print_line(
            &mut out,
            &format!(
                "ok   {unlisted} other file(s) in the directories and packages: no device images"
            ),
        )?;
    }
    let per_gpu_failures = print_per_gpu(&mut out, shown)?;
    if outcome.no_device_code {
        print_line(&mut out, &no_device_code(notes))?;
    }
    let mut all: Vec<String> = outcome.all_inputs.iter().map(ToString::to_string).collect();
    all.extend(kernels.all_inputs_failures());
    if !all.is_empty() {
        print_line(&mut out, &format!("FAIL (all inputs): {}", all.join("; ")))?;
    }
    // Per input: an error (unreadable, corrupt, damaged symbols) or a
    // failure (a rule that does not hold); then what concerns them all.
    let mut errors = 0usize;
    let mut failures =
        usize::from(outcome.no_device_code) + usize::from(!all.is_empty()) + per_gpu_failures;
    for (i, v) in outcome.files.iter().enumerate() {
        match kernels.status(i, v) {
            "error" => errors += 1,
            "fail" => failures += 1,
            _ => {}
        }
    }
    if let Some(hint) = per_gpu_hint(outcome, shown) {
        print_line(&mut out, &hint)?;
    }
    if errors > 0 {
        print_line(
            &mut out,
            &format!("check failed: {errors} input error(s), {failures} other failure(s)"),
        )?;
    } else if failures > 0 {
        print_line(&mut out, &format!("check failed: {failures} failure(s)"))?;
    }
    Ok(stderr)
}

/// The failure line when no input carries device images, with a hint
/// when some hold CUDA fatbins not read (`notes`).
fn no_device_code(notes: &[Option<String>]) -> String {
    let hint = if notes.iter().any(Option::is_some) {
        " (some hold CUDA fatbins in other data sections, not read: --raw reads them)"
    } else {
        ""
    };
    format!("FAIL: no input carries device images{hint}")
}

/// When rules fail for several files that are each one device image
/// alone (a cubin, a code object, PTX: a library that ships a file per
/// GPU and kernel, as flashinfer's cubins do), and not with `--any`: the
/// hint that each such file holds one GPU's code, so that `--any` may be
/// the question meant.
fn per_gpu_hint(outcome: &Outcome, shown: &Shown<'_>) -> Option<String> {
    if shown.any {
        return None;
    }
    let alone = |s: &Scanned| {
        s.result.as_ref().is_ok_and(|r| {
            let mut tops = r.containers.iter().filter(|c| c.parent.is_none());
            tops.next()
                .is_some_and(|c| c.kind == scan::ContainerKind::ImageFile)
                && tops.next().is_none()
        })
    };
    let failed = outcome
        .files
        .iter()
        .zip(shown.scanned)
        .filter(|(v, s)| {
            matches!(v, Verdict::Checked { failures, .. } if !failures.is_empty()) && alone(s)
        })
        .count();
    (failed > 1).then(|| {
        format!(
            "hint: {failed} of the files that fail are each one device image alone (a cubin, \
             code object or PTX file): a library shipped as a file per GPU has no file for \
             every GPU, and the rules judge each file; --any judges the inputs together"
        )
    })
}

/// The report's `ERROR` line of an input that is in error (its kernels'
/// symbols `damaged`, unreadable, or corrupt), its problems grouped; the
/// line for standard error goes to `stderr`. `None` for an input that was
/// checked.
fn error_line(
    path: &str,
    damaged: Option<&Vec<String>>,
    verdict: &Verdict,
    stderr: &mut Vec<String>,
) -> Option<String> {
    if let Some(d) = damaged.filter(|d| !d.is_empty()) {
        stderr.push(summary(path, d.iter().map(String::as_str), None, "error"));
        return Some(format!(
            "ERROR {path}: {}",
            one_line(d.iter().map(String::as_str))
        ));
    }
    match verdict {
        Verdict::Unreadable(e) => {
            stderr.push(printable(&format!("error: '{path}': {e}")).into_owned());
            Some(format!("ERROR {path}: {e}"))
        }
        Verdict::Corrupt { problems } => {
            stderr.push(summary(
                path,
                problems.iter().map(String::as_str),
                None,
                "error",
            ));
            let line = one_line(problems.iter().map(String::as_str));
            Some(format!(
                "ERROR {path}: corrupt: {line} (--allow-corrupt checks what could be read)"
            ))
        }
        Verdict::Checked { .. } => None,
    }
}

//! The verdicts of `check`'s kernel rules over a command's inputs, and
//! the reports they complete: the `check --json` document (`json.rs`),
//! JUnit XML (`junit.rs`) and Markdown (`markdown.rs`).

use crate::companion::gate::Judgement;
use crate::kernel_listing::ImageKernels;
use crate::scan::{Outcome, Report, Requirements, Unread, Verdict};

use super::{KernelRule, KernelRuleResult, check, combine};

pub(crate) mod json;
pub(crate) mod junit;
pub(crate) mod markdown;

/// Everything a `check` report says, in the order of its inputs: the
/// rules, each input's name and verdict, the kernel rules' [`Gate`], the
/// judgements on per-GPU files, and which inputs were found walking a
/// directory or package (the Markdown report counts those that pass with
/// no device images in one row, as the text does).
pub(crate) struct CheckReport<'a> {
    pub(crate) req: &'a Requirements,
    pub(crate) paths: &'a [&'a str],
    pub(crate) outcome: &'a Outcome,
    pub(crate) gate: &'a Gate,
    pub(crate) per_gpu: &'a [Judgement],
    pub(crate) walked: &'a [bool],
}

impl CheckReport<'_> {
    /// Why input `i` could not be judged (its kernels' symbols damaged,
    /// unreadable, or corrupt), as the text report's `ERROR` line says it
    /// after the name; `None` for an input that was checked.
    pub(crate) fn error(&self, i: usize) -> Option<String> {
        if let Some(d) = self.gate.damaged.get(i).filter(|d| !d.is_empty()) {
            return Some(d.join("; "));
        }
        match self.outcome.files.get(i)? {
            Verdict::Unreadable(e) => Some(e.to_string()),
            Verdict::Corrupt { problems } => Some(format!(
                "corrupt: {} (--allow-corrupt checks what could be read)",
                problems.join("; ")
            )),
            Verdict::Checked { .. } => None,
        }
    }

    /// The exit code of the check.
    pub(crate) fn exit_code(&self) -> u8 {
        crate::companion::gate::exit_code(self.gate.exit_code(self.outcome), self.per_gpu)
    }

    /// Where a judgement on per-GPU files applies: its input, or all
    /// inputs (`--any`), or the files named.
    pub(crate) fn per_gpu_input<'j>(&self, j: &'j Judgement) -> &'j str {
        match (&j.input, self.req.any) {
            (Some(i), _) => i.as_str(),
            (None, true) => ALL_INPUTS,
            (None, false) => "(files named)",
        }
    }
}

/// How the reports name all inputs together.
pub(crate) const ALL_INPUTS: &str = "(all inputs)";

/// A [`CheckReport`] of `paths` judged against `req` (their `outcome`,
/// from [`crate::scan::check`]) with no kernel rules and no per-GPU files,
/// as a library user has them; `f` makes the report of it.
pub(crate) fn with_report<T>(
    req: &Requirements,
    paths: &[&str],
    outcome: &Outcome,
    f: impl FnOnce(&CheckReport<'_>) -> T,
) -> T {
    let gate = Gate::judge([], outcome, &[], &[], req);
    let walked = vec![false; paths.len()];
    f(&CheckReport {
        req,
        paths,
        outcome,
        gate: &gate,
        per_gpu: &[],
        walked: &walked,
    })
}

/// What the kernel rules of `check` (`--require-kernel`,
/// `--forbid-kernel`) decide: their results per input and over all of
/// them (`--any`), each input's status, and the command's exit code.
pub(crate) struct Gate {
    /// Per input (empty for one not checked: unreadable or corrupt).
    pub(crate) files: Vec<Vec<KernelRuleResult>>,
    /// Per input: the images whose symbols are damaged (an input error
    /// unless `--allow-corrupt`), as messages.
    pub(crate) damaged: Vec<Vec<String>>,
    /// With `--any`: the rules over all inputs together.
    pub(crate) all_inputs: Vec<KernelRuleResult>,
    /// Whether `--any` was given.
    pub(crate) any: bool,
    /// The rules.
    pub(crate) require: Vec<KernelRule>,
    pub(crate) forbid: Vec<KernelRule>,
}

impl Gate {
    /// The rules `require` and `forbid` judged on each input: its scan
    /// (or why it could not be read) and the kernels read of its images,
    /// beside its verdict in `outcome` (the other rules' judgement of the
    /// same inputs, in the same order).
    pub(crate) fn judge<'a>(
        inputs: impl IntoIterator<Item = (&'a Result<Report, Unread>, &'a [ImageKernels])>,
        outcome: &Outcome,
        require: &[KernelRule],
        forbid: &[KernelRule],
        req: &Requirements,
    ) -> Gate {
        let mut k = Gate {
            files: Vec::new(),
            damaged: Vec::new(),
            all_inputs: Vec::new(),
            any: req.any,
            require: require.to_vec(),
            forbid: forbid.to_vec(),
        };
        if require.is_empty() && forbid.is_empty() {
            return k;
        }
        for ((result, image_kernels), v) in inputs.into_iter().zip(&outcome.files) {
            let damaged: Vec<String> = image_kernels
                .iter()
                .filter_map(|ik| ik.listing.as_ref().err().map(|e| (ik.image, e)))
                .map(|(i, e)| format!("image {i}: cannot read its symbols: {e}"))
                .collect();
            let results = match (v, result) {
                (Verdict::Checked { .. }, Ok(r)) => {
                    check(r, image_kernels, require, forbid, req.exact)
                }
                _ => Vec::new(),
            };
            k.damaged.push(if req.allow_corrupt {
                Vec::new()
            } else {
                damaged
            });
            k.files.push(results);
        }
        if req.any {
            let checked: Vec<Vec<KernelRuleResult>> =
                k.files.iter().filter(|f| !f.is_empty()).cloned().collect();
            k.all_inputs = combine(&checked);
        }
        k
    }

    /// The failed rules of input `i` (none with `--any`: those are judged
    /// over all inputs).
    pub(crate) fn failures(&self, i: usize) -> Vec<String> {
        if self.any {
            return Vec::new();
        }
        self.files.get(i).map_or_else(Vec::new, |f| {
            f.iter()
                .filter(|r| !r.passed)
                .map(KernelRuleResult::summary)
                .collect()
        })
    }

    /// The failed rules over all inputs (`--any`).
    pub(crate) fn all_inputs_failures(&self) -> Vec<String> {
        self.all_inputs
            .iter()
            .filter(|r| !r.passed)
            .map(KernelRuleResult::summary)
            .collect()
    }

    /// Input `i` (its verdict `v`): `error` (unreadable, corrupt, or its
    /// symbols damaged), `fail` (a rule does not hold) or `ok`.
    pub(crate) fn status(&self, i: usize, v: &Verdict) -> &'static str {
        if v.is_input_error() || self.damaged.get(i).is_some_and(|d| !d.is_empty()) {
            "error"
        } else if v.failed() || !self.failures(i).is_empty() {
            "fail"
        } else {
            "ok"
        }
    }

    /// The exit code: `outcome`'s, made 2 by damaged symbols, 1 by a
    /// failed kernel rule.
    pub(crate) fn exit_code(&self, outcome: &Outcome) -> u8 {
        let code = outcome.exit_code();
        let status = |s| (0..outcome.files.len()).any(|i| self.status(i, &outcome.files[i]) == s);
        if code == 2 || status("error") {
            2
        } else if code == 1 || status("fail") || !self.all_inputs_failures().is_empty() {
            1
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One input that cannot be read and one with no kernels: a required
    /// kernel is missing from the second (fail), the first is an input
    /// error, and the command's exit code is the input error's. Without the
    /// unreadable input, the missing kernel alone makes it 1; with `--any`
    /// the rule is judged over all inputs, not per input.
    #[test]
    fn statuses_and_exit_codes() {
        let require = [KernelRule::parse("gemm*@gfx90a").unwrap()];
        let empty = Report::default();
        let unreadable: Result<Report, Unread> = Err(Unread::new("cannot open: No such file"));
        let readable: Result<Report, Unread> = Ok(empty.clone());
        let judge = |inputs: &[&Result<Report, Unread>], req: &Requirements| {
            let outcome = crate::scan::check(
                inputs.iter().map(|r| r.as_ref().map_err(Unread::as_str)),
                req,
            );
            let gate = Gate::judge(
                inputs.iter().map(|r| (*r, &[][..])),
                &outcome,
                &require,
                &[],
                req,
            );
            let statuses: Vec<&str> = (0..inputs.len())
                .map(|i| gate.status(i, &outcome.files[i]))
                .collect();
            (statuses, gate.exit_code(&outcome))
        };
        let req = Requirements::default();
        assert_eq!(
            judge(&[&unreadable, &readable], &req),
            (vec!["error", "fail"], 2)
        );
        assert_eq!(judge(&[&readable], &req), (vec!["fail"], 1));
        let any = Requirements {
            any: true,
            ..Requirements::default()
        };
        let (statuses, code) = judge(&[&readable, &readable], &any);
        assert_eq!(
            (statuses, code),
            (vec!["ok", "ok"], 1),
            "judged over all inputs"
        );
    }
}

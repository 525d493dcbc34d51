//! The verdicts of `check`'s kernel rules over a command's inputs
//! ([`KernelGate`]), and the reports of a whole check they complete
//! ([`CheckReport`]): the `check --json` document (`json.rs`); its JUnit
//! XML and Markdown are made in `crate::report`.

use crate::companion::gate::PerGpuJudgement;
use crate::kernel_listing::ImageKernels;
use crate::scan::{Outcome, Report, Requirements, Unread, Verdict};

use super::{KernelRule, KernelRuleResult, check, combine};

pub(crate) mod json;

/// Everything a check says, as `offload-kit check` reports it: the
/// rules, each input's name and verdict, the kernel rules' verdicts
/// ([`KernelGate`]), the judgements on per-GPU files
/// ([`PerGpuJudgement`](super::PerGpuJudgement)), and which inputs were
/// found walking a directory or package. It makes the JUnit XML of
/// `check --junit` ([`CheckReport::junit`]), the Markdown of `check
/// --markdown` ([`CheckReport::markdown`]) and the document of `check
/// --json` ([`CheckReport::json`]), byte for byte, from the same parts the
/// command has.
///
/// ```
/// use offload_kit::kernels::{CheckReport, KernelGate, KernelRule, PerGpuJudgement};
/// use offload_kit::scan::{self, Report, Requirements, Rule, Unread};
///
/// let mut req = Requirements::default();
/// req.require.push(Rule::parse("gfx90a")?);
/// let inputs: Vec<Result<Report, Unread>> = vec![Ok(Report::default())];
/// let outcome = scan::check(inputs.iter().map(|r| r.as_ref().map_err(Unread::as_str)), &req);
/// // Each input's scan beside the kernels read of its images
/// // (`kernels::Collect`): none here.
/// let require = [KernelRule::parse("gemm*@gfx90a")?];
/// let gate = KernelGate::judge(inputs.iter().map(|r| (r, &[][..])), &outcome, &require, &[], &req);
/// // A tree holding Tensile's files for gfx942 only.
/// let units = ["rocblas/library/TensileLibrary_lazy_gfx942.dat"];
/// let per_gpu = PerGpuJudgement::judge(units, &[], &req);
/// let report = CheckReport::new(&req, &["libfoo.so"], &outcome)
///     .with_kernel_rules(&gate)
///     .with_per_gpu_files(&per_gpu);
/// assert_eq!(report.exit_code(), 1);
/// assert!(report.junit().contains("name=\"require-kernel gemm*@gfx90a\""));
/// assert!(report.markdown().contains("none for gfx90a"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct CheckReport<'a> {
    pub(crate) req: &'a Requirements,
    pub(crate) paths: &'a [&'a str],
    pub(crate) outcome: &'a Outcome,
    pub(crate) gate: &'a KernelGate,
    pub(crate) per_gpu: &'a [PerGpuJudgement],
    pub(crate) walked: &'a [bool],
    pub(crate) scans: &'a [Result<Report, Unread>],
}

/// The verdicts of no kernel rule.
static NO_KERNEL_RULES: KernelGate = KernelGate {
    files: Vec::new(),
    damaged: Vec::new(),
    all_inputs: Vec::new(),
    any: false,
    require: Vec::new(),
    forbid: Vec::new(),
};

impl<'a> CheckReport<'a> {
    /// The report of the inputs named `paths`, in the order
    /// [`scan::check`](crate::scan::check) was given them, whose
    /// `outcome` it judged against `req`; with no kernel rule, no per-GPU
    /// file, and every input named (none found walking a directory).
    pub fn new(req: &'a Requirements, paths: &'a [&'a str], outcome: &'a Outcome) -> Self {
        CheckReport {
            req,
            paths,
            outcome,
            gate: &NO_KERNEL_RULES,
            per_gpu: &[],
            walked: &[],
            scans: &[],
        }
    }

    /// The report with the verdicts of the kernel rules (`--require-kernel`,
    /// `--forbid-kernel`) on the same inputs.
    pub fn with_kernel_rules(self, gate: &'a KernelGate) -> Self {
        CheckReport { gate, ..self }
    }

    /// The report with the judgements on the inputs' per-GPU files.
    pub fn with_per_gpu_files(self, judged: &'a [PerGpuJudgement]) -> Self {
        CheckReport {
            per_gpu: judged,
            ..self
        }
    }

    /// The report knowing, per input, whether it was found walking a
    /// directory or package (`true`) or named: the Markdown report counts
    /// those found that pass with no device images in one row, as the
    /// text does.
    pub fn with_walked(self, walked: &'a [bool]) -> Self {
        CheckReport { walked, ..self }
    }

    /// The report with each input's scan (or why it could not be read), in
    /// the same order, as [`KernelGate::judge`] takes them: `check --json`
    /// lists the CUDA fatbins each holds in other data sections, which the
    /// rules did not see.
    pub fn with_scans(self, scans: &'a [Result<Report, Unread>]) -> Self {
        CheckReport { scans, ..self }
    }

    // `json`, `junit` and `markdown` are in the files of those reports.

    /// The exit code of the check: 0 when every rule holds, 1 when one
    /// does not, 2 when an input could not be judged.
    pub fn exit_code(&self) -> u8 {
        crate::companion::gate::exit_code(self.gate.exit_code(self.outcome), self.per_gpu)
    }

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

    /// Where a judgement on per-GPU files applies: its input, or all
    /// inputs (`--any`), or the files named.
    pub(crate) fn per_gpu_input<'j>(&self, j: &'j PerGpuJudgement) -> &'j str {
        match (&j.input, self.req.any) {
            (Some(i), _) => i.as_str(),
            (None, true) => ALL_INPUTS,
            (None, false) => "(files named)",
        }
    }
}

/// How the reports name all inputs together.
pub(crate) const ALL_INPUTS: &str = "(all inputs)";

/// What the kernel rules of `check` (`--require-kernel`,
/// `--forbid-kernel`) decide over a command's inputs: their results per
/// input and over all of them (`--any`), each input's status, and the
/// exit code they make. [`CheckReport::with_kernel_rules`] takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelGate {
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

impl KernelGate {
    /// The rules `require` and `forbid` judged on each input: its scan
    /// (or why it could not be read) and the kernels read of its images
    /// ([`Collect`](super::Collect), sorted by image), beside its verdict
    /// in `outcome` (the other rules' judgement of the same inputs, in the
    /// same order, against `req`).
    pub fn judge<'a>(
        inputs: impl IntoIterator<Item = (&'a Result<Report, Unread>, &'a [ImageKernels])>,
        outcome: &Outcome,
        require: &[KernelRule],
        forbid: &[KernelRule],
        req: &Requirements,
    ) -> KernelGate {
        let mut k = KernelGate {
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

    /// The results of the rules on input `i` (none for one not checked:
    /// unreadable or corrupt).
    pub fn results(&self, i: usize) -> &[KernelRuleResult] {
        self.files.get(i).map_or(&[], Vec::as_slice)
    }

    /// With `--any`, the results of the rules over all inputs together.
    pub fn all_inputs(&self) -> &[KernelRuleResult] {
        &self.all_inputs
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
    pub fn exit_code(&self, outcome: &Outcome) -> u8 {
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
            let gate = KernelGate::judge(
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

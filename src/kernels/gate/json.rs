//! The `check --json` document (schema `offload-kit/check/1`, in
//! docs/scanners.md): the rules, each input's verdict with its rules' and
//! kernel rules' results, and what concerns all inputs together.
//! Serializing a [`Document`] with `serde_json::to_writer_pretty` gives
//! exactly what `offload-kit check --json` prints.
//!
//! Every object's fields are declared in alphabetical order: the order the
//! document has always had (it was built of `serde_json` maps, whose keys
//! are sorted).

use serde::Serialize;

use super::{CheckReport, KernelGate};
use crate::kernels::KernelRuleResult;
use crate::scan::check::Failure;
use crate::scan::json::Elsewhere;
use crate::scan::{Requirements, Rule, RuleResult, Verdict};

/// The schema [`Document`] follows.
pub(crate) const SCHEMA: &str = "offload-kit/check/1";

/// The `check --json` document of a command's inputs.
#[derive(Debug, Serialize)]
pub(crate) struct Document<'a> {
    /// With `--any`: the rules over all inputs together.
    all_inputs: Option<AllInputs<'a>>,
    exit_code: u8,
    files: Vec<File<'a>>,
    no_device_code: bool,
    passed: bool,
    /// The gate on per-GPU files: each required processor judged on each
    /// library's per-GPU files in each input.
    per_gpu_files: Vec<PerGpuDoc<'a>>,
    rules: Vec<RuleDoc>,
    schema: &'static str,
}

/// A required processor judged on one library's per-GPU files.
#[derive(Debug, Serialize)]
struct PerGpuDoc<'a> {
    /// The files of the GPUs that serve it, by their paths in the input.
    files: &'a [String],
    gpu: &'a str,
    /// The package or directory; `null` for the files named (all inputs
    /// with `--any`).
    input: Option<&'a str>,
    library: &'static str,
    location: &'a str,
    passed: bool,
    pattern: &'static str,
    /// Every GPU with files there.
    present: &'a [String],
    rule: &'a str,
    /// The GPUs with files there that serve it.
    serving: &'a [String],
}

/// A rule, as given: an architecture and kind rule, or a kernel rule.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum RuleDoc {
    /// `--require` or `--forbid` (and their shorthands).
    Target {
        arch: Option<String>,
        kind: Option<String>,
        rule: String,
        #[serde(rename = "type")]
        ty: &'static str,
    },
    /// `--require-kernel` or `--forbid-kernel`.
    Kernel {
        pattern: String,
        rule: String,
        target: Option<String>,
        #[serde(rename = "type")]
        ty: &'static str,
    },
}

/// One input.
#[derive(Debug, Serialize)]
struct File<'a> {
    device_images: usize,
    /// Why it could not be read, it is corrupt, or its symbols damaged.
    error: Option<String>,
    failures: Vec<String>,
    /// CUDA fatbins in its other data sections, which the rules did not
    /// see (`inspect --json` has the same list).
    #[serde(skip_serializing_if = "Option::is_none")]
    fatbins_elsewhere: Option<Elsewhere<'a>>,
    /// Only when kernel rules were judged on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel_rules: Option<Vec<KernelResultDoc<'a>>>,
    path: &'a str,
    present: &'a [String],
    problems: &'a [String],
    rules: Vec<ResultDoc<'a>>,
    /// `ok`, `fail` or `error`.
    status: &'static str,
}

/// A rule's result, on one input or on all of them.
#[derive(Debug, Serialize)]
struct ResultDoc<'a> {
    by_ptx_jit: bool,
    images: &'a [usize],
    passed: bool,
    rule: &'a str,
    serving: &'a [String],
    #[serde(rename = "type")]
    ty: &'static str,
    undetermined: &'a [usize],
    unserved: &'a [String],
}

/// A kernel rule's result.
#[derive(Debug, Serialize)]
struct KernelResultDoc<'a> {
    found: Vec<FoundKernel<'a>>,
    images: usize,
    passed: bool,
    rule: &'a str,
    #[serde(rename = "type")]
    ty: &'static str,
    unlisted: &'a [usize],
}

/// A kernel a rule matched, and its image.
#[derive(Debug, Serialize)]
struct FoundKernel<'a> {
    image: usize,
    name: &'a str,
}

/// What all inputs together give (`--any`).
#[derive(Debug, Serialize)]
struct AllInputs<'a> {
    failures: Vec<String>,
    kernel_rules: Vec<KernelResultDoc<'a>>,
    rules: Vec<ResultDoc<'a>>,
}

impl<'a> CheckReport<'a> {
    /// The `check --json` document (schema `offload-kit/check/1`, in
    /// docs/scanners.md): the rules, each input's verdict with its rules'
    /// and kernel rules' results ([`CheckReport::with_scans`] adds the
    /// fatbins it holds in other data sections), what concerns all inputs
    /// together, and the judgements on per-GPU files. Written by
    /// `serde_json::to_writer_pretty` and a newline, it is what the
    /// command prints for inputs whose names are UTF-8.
    pub fn json(&self) -> impl Serialize + '_ {
        let elsewhere: Vec<Option<Elsewhere<'_>>> = self
            .scans
            .iter()
            .map(|r| r.as_ref().ok().and_then(Elsewhere::of))
            .collect();
        self.document(&elsewhere)
    }

    /// The document, with the fatbins each input holds elsewhere (in the
    /// order of the inputs; fewer: none for the rest).
    pub(crate) fn document<'e>(&'e self, elsewhere: &[Option<Elsewhere<'e>>]) -> Document<'e> {
        let (req, outcome, gate, per_gpu) = (self.req, self.outcome, self.gate, self.per_gpu);
        let exit_code = self.exit_code();
        Document {
            all_inputs: req.any.then(|| AllInputs {
                failures: strings(&outcome.all_inputs)
                    .into_iter()
                    .chain(gate.all_inputs_failures())
                    .collect(),
                kernel_rules: gate.all_inputs.iter().map(KernelResultDoc::of).collect(),
                rules: outcome.all_inputs_rules.iter().map(ResultDoc::of).collect(),
            }),
            exit_code,
            files: self
                .paths
                .iter()
                .zip(&outcome.files)
                .enumerate()
                .map(|(i, (path, v))| {
                    let mut f = File::of(i, path, v, gate);
                    f.fatbins_elsewhere = elsewhere.get(i).copied().flatten();
                    f
                })
                .collect(),
            no_device_code: outcome.no_device_code,
            passed: exit_code == 0,
            per_gpu_files: per_gpu
                .iter()
                .map(|j| PerGpuDoc {
                    files: &j.files,
                    gpu: &j.gpu,
                    input: j.input.as_deref(),
                    library: j.convention.library,
                    location: &j.location,
                    passed: j.passed,
                    pattern: j.convention.pattern,
                    present: &j.present,
                    rule: &j.rule,
                    serving: &j.serving,
                })
                .collect(),
            rules: rules(req, gate),
            schema: SCHEMA,
        }
    }
}

/// Every rule, in the order given: required, forbidden, required kernels,
/// forbidden kernels.
fn rules(req: &Requirements, gate: &KernelGate) -> Vec<RuleDoc> {
    let target = |r: Rule, required: bool| RuleDoc::Target {
        arch: r.arch,
        kind: r.kind,
        rule: r.text,
        ty: if required { "require" } else { "forbid" },
    };
    let mut rules: Vec<RuleDoc> = req
        .require_rules()
        .into_iter()
        .map(|r| target(r, true))
        .collect();
    rules.extend(req.forbid_rules().into_iter().map(|r| target(r, false)));
    for (rs, ty) in [
        (&gate.require, "require-kernel"),
        (&gate.forbid, "forbid-kernel"),
    ] {
        rules.extend(rs.iter().map(|r| RuleDoc::Kernel {
            pattern: r.pattern.as_str().to_string(),
            rule: r.text.clone(),
            target: r.target.as_ref().map(|t| t.text.clone()),
            ty,
        }));
    }
    rules
}

/// The failures' texts.
fn strings(failures: &[Failure]) -> Vec<String> {
    failures.iter().map(ToString::to_string).collect()
}

impl<'a> File<'a> {
    /// Input `i`, named `path`, with its verdict `v`.
    fn of(i: usize, path: &'a str, v: &'a Verdict, gate: &'a KernelGate) -> File<'a> {
        let mut f = File {
            device_images: 0,
            error: None,
            failures: Vec::new(),
            fatbins_elsewhere: None,
            kernel_rules: None,
            path,
            present: &[],
            problems: &[],
            rules: Vec::new(),
            status: gate.status(i, v),
        };
        match v {
            Verdict::Unreadable(e) => f.error = Some(e.to_string()),
            Verdict::Corrupt { problems } => {
                f.error = Some("corrupt or truncated container".into());
                f.problems = problems;
            }
            Verdict::Checked {
                device_images,
                present,
                rules,
                failures,
            } => {
                f.device_images = *device_images;
                f.present = present;
                f.rules = rules.iter().map(ResultDoc::of).collect();
                f.failures = strings(failures);
                f.failures.extend(gate.failures(i));
            }
        }
        if let Some(d) = gate.damaged.get(i).filter(|d| !d.is_empty()) {
            f.error = Some(d.join("; "));
        }
        if let Some(k) = gate.files.get(i).filter(|k| !k.is_empty()) {
            f.kernel_rules = Some(k.iter().map(KernelResultDoc::of).collect());
        }
        f
    }
}

impl<'a> ResultDoc<'a> {
    /// `r` in the document.
    fn of(r: &'a RuleResult) -> ResultDoc<'a> {
        ResultDoc {
            by_ptx_jit: r.by_ptx_jit,
            images: &r.images,
            passed: r.passed,
            rule: &r.rule.text,
            serving: &r.serving,
            ty: if r.required { "require" } else { "forbid" },
            undetermined: &r.undetermined,
            unserved: &r.unserved,
        }
    }
}

impl<'a> KernelResultDoc<'a> {
    /// `r` in the document.
    fn of(r: &'a KernelRuleResult) -> KernelResultDoc<'a> {
        KernelResultDoc {
            found: r
                .found
                .iter()
                .map(|(image, name)| FoundKernel {
                    image: *image,
                    name,
                })
                .collect(),
            images: r.images,
            passed: r.passed,
            rule: &r.rule.text,
            ty: if r.required {
                "require-kernel"
            } else {
                "forbid-kernel"
            },
            unlisted: &r.unlisted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::KernelRule;
    use crate::scan::{Report, Unread};

    /// The document of `inputs` checked against `req` and a required
    /// kernel rule, serialized as `check --json` prints it.
    fn document(inputs: &[(&str, Result<Report, Unread>)], req: &Requirements) -> String {
        let require = [KernelRule::parse("gemm*@gfx90a").unwrap()];
        let outcome = crate::scan::check(
            inputs
                .iter()
                .map(|(_, r)| r.as_ref().map_err(Unread::as_str)),
            req,
        );
        let gate = KernelGate::judge(
            inputs.iter().map(|(_, r)| (r, &[][..])),
            &outcome,
            &require,
            &[],
            req,
        );
        let paths: Vec<&str> = inputs.iter().map(|(p, _)| *p).collect();
        let report = CheckReport::new(req, &paths, &outcome).with_kernel_rules(&gate);
        serde_json::to_string_pretty(&report.json()).unwrap()
    }

    #[test]
    fn fields_come_in_alphabetical_order_as_the_schema_always_had_them() {
        let req = Requirements {
            require: vec![Rule::parse("gfx90a").unwrap()],
            forbid_arch: vec!["sm_80".into()],
            ..Requirements::default()
        };
        let inputs = [
            ("gone.so", Err(Unread::new("cannot open"))),
            ("empty.so", Ok(Report::default())),
        ];
        let text = document(&inputs, &req);
        // serde_json's maps sort their keys: the same text back means
        // every object's fields were in that order.
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string_pretty(&value).unwrap(), text);
        assert_eq!(value["schema"], SCHEMA);
        assert_eq!(value["exit_code"], 2);
        assert_eq!(value["passed"], false);
        assert_eq!(value["all_inputs"], serde_json::Value::Null);
        let rules: Vec<(&str, &str)> = value["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["rule"].as_str().unwrap(), r["type"].as_str().unwrap()))
            .collect();
        assert_eq!(
            rules,
            [
                ("gfx90a", "require"),
                ("sm_80", "forbid"),
                ("gemm*@gfx90a", "require-kernel")
            ]
        );
        let gone = &value["files"][0];
        assert_eq!(gone["status"], "error");
        assert_eq!(gone["error"], "cannot open");
        assert!(gone.get("kernel_rules").is_none());
        let empty = &value["files"][1];
        assert_eq!(empty["error"], serde_json::Value::Null);
        assert_eq!(empty["device_images"], 0);
        assert_eq!(empty["kernel_rules"][0]["type"], "require-kernel");
        assert_eq!(empty["kernel_rules"][0]["passed"], false);
    }

    #[test]
    fn all_inputs_are_judged_together_with_any() {
        let req = Requirements {
            require: vec![Rule::parse("gfx90a").unwrap()],
            any: true,
            ..Requirements::default()
        };
        let text = document(&[("a.so", Ok(Report::default()))], &req);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string_pretty(&value).unwrap(), text);
        let all = &value["all_inputs"];
        assert_eq!(all["rules"][0]["rule"], "gfx90a");
        assert_eq!(all["rules"][0]["passed"], false);
        assert_eq!(all["kernel_rules"][0]["rule"], "gemm*@gfx90a");
        assert!(!all["failures"].as_array().unwrap().is_empty());
    }

    /// An input with CUDA fatbins in its other data sections: listed when
    /// the report has the scans, left out when it has not.
    #[test]
    fn fatbins_elsewhere_come_from_the_scans() {
        let req = Requirements {
            require: vec![Rule::parse("sm_90").unwrap()],
            ..Requirements::default()
        };
        let scans: Vec<Result<Report, Unread>> = vec![Ok(Report {
            fatbins_elsewhere: vec![(".data".into(), 2)],
            ..Report::default()
        })];
        let outcome = crate::scan::check(
            scans.iter().map(|r| r.as_ref().map_err(Unread::as_str)),
            &req,
        );
        let report = CheckReport::new(&req, &["host.so"], &outcome);
        let without = serde_json::to_value(report.json()).unwrap();
        assert!(without["files"][0].get("fatbins_elsewhere").is_none());
        let with = serde_json::to_value(report.with_scans(&scans).json()).unwrap();
        assert_eq!(with["files"][0]["fatbins_elsewhere"][0]["section"], ".data");
        assert_eq!(with["files"][0]["fatbins_elsewhere"][0]["fatbins"], 2);
    }

    /// A library with gfx90a's per-GPU files and not gfx942's: the
    /// document lists the judgement, in field order, and fails.
    #[test]
    fn per_gpu_files_are_listed_and_a_missing_gpu_fails() {
        let req = Requirements {
            require: vec![Rule::parse("gfx942").unwrap()],
            ..Requirements::default()
        };
        let mut found = crate::companion::gate::Found::new(false);
        found.add(
            "x.deb!/usr/lib/rocblas/library/TensileLibrary_gfx90a.co",
            &[],
        );
        let judged = crate::companion::gate::judge(&found, &req.require_rules());
        // The other rules pass (none is judged), so the exit code is the
        // gate's alone.
        let report = Report::default();
        let none = Requirements::default();
        let outcome = crate::scan::check([Ok(&report)], &none);
        let gate = KernelGate::judge([], &outcome, &[], &[], &none);
        let report = CheckReport::new(&req, &["x.deb!/a"], &outcome).with_kernel_rules(&gate);
        assert_eq!(report.document(&[]).exit_code, 0);
        let judged_report = report.with_per_gpu_files(&judged);
        let text = serde_json::to_string_pretty(&judged_report.json()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string_pretty(&value).unwrap(), text);
        let j = &value["per_gpu_files"][0];
        assert_eq!(j["input"], "x.deb");
        assert_eq!(j["location"], "usr/lib/rocblas/library");
        assert_eq!(j["gpu"], "gfx942");
        assert_eq!(j["passed"], false);
        assert_eq!(j["present"][0], "gfx90a");
        assert_eq!(j["files"].as_array().map(Vec::len), Some(0));
        assert_eq!(value["exit_code"], 1);
        assert_eq!(value["passed"], false);
    }
}

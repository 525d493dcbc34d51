//! `offload-kit check`: a CI gate over the architectures and kinds of the
//! device code in files. The rules and their matching are
//! `crate::scan::{rule, check}`'s; this file maps the options to
//! [`Requirements`] and prints the [`Outcome`] as text or JSON (schema
//! `offload-kit/check/1`).

use std::io::Write;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use super::io::print_line;
use super::scan::{Common, Kinds, Scanned, list, scan_files};
use crate::scan::{self, Outcome, Requirements, Rule, RuleResult, Verdict};

/// Check that files carry (or do not carry) device code for given targets.
#[derive(clap::Args)]
#[command(
    after_help = "A rule is ARCH[:KIND]: sm_90:cubin, gfx942, gfx90a:xnack+, gfx90a:xnack-:object,\n\
*:ptx (`*`: any arch). KIND is an image kind (object, bitcode, cubin, ptx, fatbinary,\n\
spirv) or an offload kind (hip, openmp, cuda, ...). ARCH is spelt as LLVM spells it,\n\
case included: an AMDGPU processor LLVM 22 knows (or its alias, or a generic target such\n\
as gfx9-4-generic), a CUDA sm_XY (sm_90a, sm_100f where those exist) or a CPU arch; a\n\
rule naming no known arch or kind is a usage error (exit 2) that names the closest known\n\
names. A --require rule must be covered by the images; a --forbid rule must match none.\n\n\
Coverage follows the loaders (--exact: one image, archs compared as strings). A rule\n\
names device configurations, each to be served by some image. AMDGPU: a device has\n\
xnack (and sramecc) on or off; an image that leaves a feature unset serves both, an\n\
xnack+ image only xnack-on devices. So gfx90a is covered by a gfx90a image, or by\n\
gfx90a:xnack+ and gfx90a:xnack- together; gfx90a:xnack- by gfx90a or gfx90a:xnack-\n\
images. A generic target's image (gfx9-4-generic) serves the processors it covers (not\n\
gfx908 or gfx90a). CUDA: a cubin for sm_86 runs on sm_87 and sm_89, not sm_90;\n\
sm_90a asks for arch-specific code and is met only by sm_90a code (a plain sm_90 cubin\n\
does not meet it); sm_100f names the family's devices from 10.0 on (10.0, 10.3), each to\n\
be served. PTX counts for the devices the driver can compile it for, reported as\n\
'through PTX JIT' when it is not for the rule's own arch: plain PTX for every newer\n\
arch, sm_XYf PTX for its family's devices from X.Y on, sm_XYa PTX for X.Y only;\n\
sm_90:cubin counts no PTX. An ok line says which images serve each rule; a FAIL line\n\
which configurations nothing serves. --forbid ARCH matches images built for that\n\
processor (with no feature set against the rule's). An image whose kind is not known\n\
fails a rule that needs it (compressed bundles are decompressed to tell).\n\n\
By default every input that carries device images must meet each --require rule on its\n\
own (host-only files are listed and pass), and at least one input must carry device\n\
images. With --any, the inputs together must meet them. Host entries of bundles count\n\
for no architecture. --require-arch A is --require A; --require-kind K is --require '*:K'\n\
(the same for --forbid-*).\n\n\
Exit codes: 0 every rule holds; 1 a rule does not hold; 2 an input could not be read or\n\
holds a corrupt or truncated container (unless --allow-corrupt).\n\n\
Example (CI):\n  offload-kit check dist/ --require gfx90a,gfx942 --require sm_90:cubin --forbid gfx803"
)]
pub struct CheckOpts {
    #[command(flatten)]
    common: Common,
    /// Rules some image must meet: ARCH[:KIND] (comma-separated,
    /// repeatable).
    #[arg(long, value_name = "RULE")]
    require: Vec<String>,
    /// Rules no image may match: ARCH[:KIND].
    #[arg(long, value_name = "RULE")]
    forbid: Vec<String>,
    /// Architectures that must be present (shorthand for --require ARCH).
    #[arg(long, value_name = "ARCH")]
    require_arch: Vec<String>,
    /// Architectures that must not be present (--forbid ARCH).
    #[arg(long, value_name = "ARCH")]
    forbid_arch: Vec<String>,
    /// Offload kinds (or image kinds) that must be present (--require
    /// '*:KIND').
    #[arg(long, value_name = "KIND")]
    require_kind: Vec<String>,
    /// Offload kinds (or image kinds) that must not be present.
    #[arg(long, value_name = "KIND")]
    forbid_kind: Vec<String>,
    /// Compare architectures as strings (processor, and the rule's
    /// features present with the same sign), not as the loaders do.
    #[arg(long)]
    exact: bool,
    /// Requirements hold for all inputs together, not for each.
    #[arg(long)]
    any: bool,
    /// With --allow-corrupt, problems found while scanning fail the check
    /// (without it they are input errors anyway).
    #[arg(long)]
    strict: bool,
    /// Print only failures.
    #[arg(short, long)]
    quiet: bool,
    /// Print JSON (schema `offload-kit/check/1`) instead of text.
    #[arg(long)]
    json: bool,
}

/// The rules of option `--{option}`, each parsed by `parse`; one naming
/// nothing known is a usage error naming the option and the rule.
fn rules(
    option: &str,
    values: &[String],
    parse: fn(&str) -> Result<Rule, String>,
) -> Result<Vec<Rule>> {
    list(values)
        .iter()
        .map(|r| parse(r).map_err(|e| anyhow::anyhow!("--{option} {e}")))
        .collect()
}

/// The values of a shorthand option, each checked as `parse` checks it.
fn shorthands(
    option: &str,
    values: &[String],
    parse: fn(&str) -> Result<Rule, String>,
) -> Result<Vec<String>> {
    rules(option, values, parse)?;
    Ok(list(values))
}

impl CheckOpts {
    pub fn run(self) -> Result<std::process::ExitCode> {
        let mut req = Requirements::default();
        req.require = rules("require", &self.require, Rule::parse)?;
        req.forbid = rules("forbid", &self.forbid, Rule::parse)?;
        req.require_arch = shorthands("require-arch", &self.require_arch, Rule::parse_arch)?;
        req.forbid_arch = shorthands("forbid-arch", &self.forbid_arch, Rule::parse_arch)?;
        req.require_kind = shorthands("require-kind", &self.require_kind, Rule::parse_kind)?;
        req.forbid_kind = shorthands("forbid-kind", &self.forbid_kind, Rule::parse_kind)?;
        req.exact = self.exact;
        req.any = self.any;
        req.strict = self.strict;
        req.allow_corrupt = self.common.allow_corrupt;
        if req.is_empty() {
            bail!("nothing to check: give --require or --forbid (or --require-arch, ...)");
        }
        // A gate never passes damaged data: everything compressed is
        // decoded and every stored hash checked, `--verify` or not.
        let mut opts = self.common.options();
        opts.verify = true;
        let files = self.common.files()?;
        let needs_kinds = req.needs_kinds();
        let scanned = scan_files(&files, self.common.jobs(), &opts, || {
            if needs_kinds {
                Box::new(Kinds)
            } else {
                Box::new(scan::NoVisit)
            }
        });
        let outcome = scan::check(
            scanned
                .iter()
                .map(|s| s.result.as_ref().map_err(String::as_str)),
            &req,
        );
        if self.json {
            let mut out = super::io::Report::stdout();
            serde_json::to_writer_pretty(&mut out, &json_outcome(&req, &scanned, &outcome))?;
            writeln!(out)?;
            out.flush()?;
        } else {
            let paths: Vec<&str> = scanned.iter().map(|s| s.path.as_str()).collect();
            // Files found walking a directory that hold no device code and
            // pass are not listed one by one (there may be thousands).
            let walked: Vec<bool> = scanned.iter().map(|s| s.found).collect();
            print_outcome(&paths, &walked, &outcome, self.quiet)?;
        }
        Ok(outcome.exit_code().into())
    }
}

fn joined(failures: &[scan::check::Failure]) -> String {
    failures
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// What serves each required rule, as a note: `(gfx90a: gfx90a:xnack+
/// gfx90a:xnack-; sm_90 through PTX JIT: sm_80:ptx)`.
fn serving_note(rules: &[RuleResult]) -> String {
    let notes: Vec<String> = rules
        .iter()
        .filter(|r| r.required && r.passed)
        .map(|r| {
            let jit = if r.by_ptx_jit { " through PTX JIT" } else { "" };
            format!("{}{jit}: {}", r.rule.text, r.serving.join(" "))
        })
        .collect();
    if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    }
}

/// Prints the report: a line per input (failures only with `quiet`), then
/// what concerns all inputs, then the count of failures.
fn print_outcome(paths: &[&str], walked: &[bool], outcome: &Outcome, quiet: bool) -> Result<()> {
    let mut out = super::io::Report::stdout();
    let mut unlisted = 0usize;
    for ((path, verdict), walked) in paths.iter().zip(&outcome.files).zip(walked) {
        match verdict {
            Verdict::Unreadable(e) => print_line(&mut out, &format!("ERROR {path}: {e}"))?,
            Verdict::Corrupt { problems } => print_line(
                &mut out,
                &format!(
                    "ERROR {path}: corrupt: {} (--allow-corrupt checks what could be read)",
                    problems.join("; ")
                ),
            )?,
            Verdict::Checked {
                device_images,
                present,
                rules,
                failures,
            } => {
                if failures.is_empty() {
                    if quiet {
                        continue;
                    }
                    if *device_images == 0 && *walked {
                        unlisted += 1;
                    } else if *device_images == 0 {
                        print_line(&mut out, &format!("ok   {path}: no device images"))?;
                    } else {
                        print_line(
                            &mut out,
                            &format!("ok   {path}: {}{}", present.join(" "), serving_note(rules)),
                        )?;
                    }
                } else {
                    let has = if present.is_empty() {
                        "-".into()
                    } else {
                        present.join(" ")
                    };
                    print_line(
                        &mut out,
                        &format!("FAIL {path}: {} (has: {has})", joined(failures)),
                    )?;
                }
            }
        }
    }
    if unlisted > 0 && !quiet {
        print_line(
            &mut out,
            &format!(
                "ok   {unlisted} other file(s) in the directories and packages: no device images"
            ),
        )?;
    }
    if outcome.no_device_code {
        print_line(&mut out, "FAIL: no input carries device images")?;
    }
    if !outcome.all_inputs.is_empty() {
        print_line(
            &mut out,
            &format!("FAIL (all inputs): {}", joined(&outcome.all_inputs)),
        )?;
    }
    let errors = outcome.files.iter().filter(|v| v.is_input_error()).count();
    let failures = outcome.failures() - errors;
    if errors > 0 {
        print_line(
            &mut out,
            &format!("check failed: {errors} input error(s), {failures} other failure(s)"),
        )?;
    } else if failures > 0 {
        print_line(&mut out, &format!("check failed: {failures} failure(s)"))?;
    }
    out.flush()?;
    Ok(())
}

/// A rule as JSON: its text, type, and parts.
fn json_rule(r: &Rule, required: bool) -> Value {
    json!({
        "rule": r.text,
        "type": if required { "require" } else { "forbid" },
        "arch": r.arch,
        "kind": r.kind,
    })
}

fn json_result(r: &RuleResult) -> Value {
    json!({
        "rule": r.rule.text,
        "type": if r.required { "require" } else { "forbid" },
        "passed": r.passed,
        "images": r.images,
        "by_ptx_jit": r.by_ptx_jit,
        "undetermined": r.undetermined,
        "serving": r.serving,
        "unserved": r.unserved,
    })
}

fn strings(failures: &[scan::check::Failure]) -> Vec<String> {
    failures.iter().map(ToString::to_string).collect()
}

/// The `check --json` document (schema `offload-kit/check/1`, in
/// docs/scanners.md).
fn json_outcome(req: &Requirements, scanned: &[Scanned], outcome: &Outcome) -> Value {
    let mut rules: Vec<Value> = req
        .require_rules()
        .iter()
        .map(|r| json_rule(r, true))
        .collect();
    rules.extend(req.forbid_rules().iter().map(|r| json_rule(r, false)));
    let files: Vec<Value> = scanned
        .iter()
        .zip(&outcome.files)
        .map(|(s, v)| {
            let mut f = json!({
                "path": s.path,
                "status": if v.is_input_error() { "error" } else if v.failed() { "fail" } else { "ok" },
                "error": null,
                "problems": [],
                "device_images": 0,
                "present": [],
                "rules": [],
                "failures": [],
            });
            match v {
                Verdict::Unreadable(e) => f["error"] = json!(e),
                Verdict::Corrupt { problems } => {
                    f["error"] = json!("corrupt or truncated container");
                    f["problems"] = json!(problems);
                }
                Verdict::Checked {
                    device_images,
                    present,
                    rules,
                    failures,
                } => {
                    f["device_images"] = json!(device_images);
                    f["present"] = json!(present);
                    f["rules"] = rules.iter().map(json_result).collect();
                    f["failures"] = json!(strings(failures));
                }
            }
            f
        })
        .collect();
    let all_inputs = req.any.then(|| {
        json!({
            "rules": outcome.all_inputs_rules.iter().map(json_result).collect::<Vec<_>>(),
            "failures": strings(&outcome.all_inputs),
        })
    });
    json!({
        "schema": "offload-kit/check/1",
        "passed": outcome.passed(),
        "exit_code": outcome.exit_code(),
        "rules": rules,
        "files": files,
        "no_device_code": outcome.no_device_code,
        "all_inputs": all_inputs,
    })
}

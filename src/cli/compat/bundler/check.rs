//! The bundler's command-line checks, in LLVM 22's order, with its
//! messages; then the environment variables.

use super::env::EnvSettings;
use super::{Fail, Job, comma_list};
use crate::bundle::ccob::Method;
use crate::cli::llvm_cl::Parsed;

/// LLVM's checks, in LLVM's order.
pub(super) fn check(argv0: &str, p: &Parsed, align: u64, level: Option<i32>) -> Result<Job, Fail> {
    let fail = |m: &str| Err(Fail::new(m));
    let has = |n: &str| p.all(n).next().is_some();
    if has("input") && has("inputs") {
        return fail("-inputs and -input cannot be used together, use only -input instead");
    }
    if has("output") && has("outputs") {
        return fail("-outputs and -output cannot be used together, use only -output instead");
    }
    if has("inputs") {
        eprintln!("{argv0}: warning: -inputs is deprecated, use -input instead");
    }
    if has("outputs") {
        eprintln!("{argv0}: warning: -outputs is deprecated, use -output instead");
    }
    let inputs: Vec<String> = if has("inputs") {
        comma_list(p, "inputs")
    } else {
        p.all("input").map(str::to_string).collect()
    };
    let outputs: Vec<String> = if has("outputs") {
        comma_list(p, "outputs")
    } else {
        p.all("output").map(str::to_string).collect()
    };
    let targets = comma_list(p, "targets");
    let (unbundle, list) = (p.flag("unbundle"), p.flag("list"));
    let file_type = p.last("type").unwrap_or_default().to_string();
    if list && unbundle {
        return fail("-unbundle and -list cannot be used together");
    }
    if list {
        if inputs.len() != 1 {
            return fail("only one input file supported for -list");
        }
        if !outputs.is_empty() {
            return fail("-outputs option is invalid for -list");
        }
        if !targets.is_empty() {
            return fail("-targets option is invalid for -list");
        }
    } else {
        if p.flag("check-input-archive") {
            if !unbundle {
                return fail("-check-input-archive cannot be used while bundling");
            }
            if file_type != "a" {
                return fail(
                    "-check-input-archive can only be used for unbundling archives (-type=a)",
                );
            }
        }
        if outputs.is_empty() {
            return fail("no output file specified!");
        }
        if targets.is_empty() {
            return fail("for the --targets option: must be specified at least once!");
        }
        if unbundle {
            if inputs.len() != 1 {
                return fail("only one input file supported in unbundling mode");
            }
            if outputs.len() != targets.len() {
                return fail("number of output files and targets should match in unbundling mode");
            }
        } else {
            if file_type == "a" {
                return fail("Archive files are only supported for unbundling");
            }
            if outputs.len() != 1 {
                return fail("only one output file supported in bundling mode");
            }
            if inputs.len() != targets.len() {
                return fail("number of input files and targets should match in bundling mode");
            }
        }
    }
    if align == 0 {
        // LLVM 22 divides by zero here.
        return fail("-bundle-align must be at least 1");
    }
    // The environment is read when LLVM builds its configuration, after the
    // checks above; its warnings go to stderr as they are found.
    let env = EnvSettings::from_lookup(|k| std::env::var(k).ok());
    for w in &env.warnings {
        eprintln!("{w}");
    }
    let flag = |n: &str| p.last(n).map(|v| v == "true");
    let comp = env.resolve(flag("compress"), flag("verbose"), level, Method::ZSTD);
    Ok(Job {
        file_type,
        targets,
        inputs,
        outputs,
        unbundle,
        list,
        allow_missing: p.flag("allow-missing-bundles"),
        align,
        hip_openmp: p.flag("hip-openmp-compatible"),
        comp,
        check_archive: p.flag("check-input-archive"),
        objcopy: None,
    })
}

//! The bundler's command-line checks, in LLVM 22's order, with its
//! messages; then the environment variables: the checked [`Job`], and
//! what it implies for reading (the targets, the CCOB read options).

use std::ffi::OsString;
use std::path::PathBuf;

use super::env::{BundlerCompression, EnvSettings};
use super::failure::{Failure, Note, Say};
use crate::bundle::ccob::{self, Method};
use crate::bundle::id::BundleId;

/// The bundler's command line as LLVM's `cl` parsed it, before its checks:
/// every occurrence of a repeatable option, in order, and the flags.
#[derive(Debug, Clone, Default)]
pub struct Args {
    /// `-type` (the last one; empty when not given).
    pub file_type: String,
    /// Each `-targets` value, not yet split on commas.
    pub targets: Vec<String>,
    /// Each `-input`.
    pub input: Vec<String>,
    /// Each `-inputs` value, not yet split on commas.
    pub inputs: Vec<String>,
    /// Each `-output`.
    pub output: Vec<String>,
    /// Each `-outputs` value, not yet split on commas.
    pub outputs: Vec<String>,
    /// `-unbundle`.
    pub unbundle: bool,
    /// `-list`.
    pub list: bool,
    /// `-allow-missing-bundles`.
    pub allow_missing: bool,
    /// `-hip-openmp-compatible`.
    pub hip_openmp: bool,
    /// `-check-input-archive`.
    pub check_archive: bool,
    /// `-compress`, `-compress=true` or `-compress=false` (the last one).
    pub compress: Option<bool>,
    /// `-verbose` likewise.
    pub verbose: Option<bool>,
    /// `-bundle-align` (1 when not given).
    pub align: u64,
    /// `-compression-level`.
    pub level: Option<i32>,
}

/// A checked `clang-offload-bundler` command line (made by [`check()`],
/// carried out by [`run()`]).
#[derive(Debug, Clone)]
pub struct Job {
    /// `-type`.
    pub file_type: String,
    /// `-targets`, split on commas.
    pub targets: Vec<String>,
    /// `-input` (or `-inputs`, split on commas).
    pub inputs: Vec<String>,
    /// `-output` (or `-outputs`, split on commas).
    pub outputs: Vec<String>,
    /// `-unbundle`.
    pub unbundle: bool,
    /// `-list`.
    pub list: bool,
    /// `-allow-missing-bundles`.
    pub allow_missing: bool,
    /// `-bundle-align`, at least 1.
    pub align: u64,
    /// `-hip-openmp-compatible`.
    pub hip_openmp: bool,
    /// Compression and verbosity, from the flags and the environment.
    pub comp: BundlerCompression,
    /// `-check-input-archive`.
    pub check_archive: bool,
    /// `-###`: the llvm-objcopy whose command lines are printed instead of
    /// writing object bundles.
    pub objcopy: Option<String>,
    /// Where LLVM makes its temporary files (`-###` names them): the first
    /// of `TMPDIR`, `TMP`, `TEMP`, `TEMPDIR` that is set, else `/tmp`.
    pub temp_dir: PathBuf,
}

/// The values of a repeatable comma-separated option, split.
fn comma_list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::to_string)
        .collect()
}

/// LLVM's checks, in LLVM's order, then the environment (`env` looks a
/// variable up): the [`Job`] to run. Warnings go to `say` as they are
/// found.
pub fn check(
    a: &Args,
    env: &dyn Fn(&str) -> Option<OsString>,
    say: &mut Say<'_>,
) -> Result<Job, Failure> {
    let fail = |m: &str| Err(Failure::new(m));
    if !a.input.is_empty() && !a.inputs.is_empty() {
        return fail("-inputs and -input cannot be used together, use only -input instead");
    }
    if !a.output.is_empty() && !a.outputs.is_empty() {
        return fail("-outputs and -output cannot be used together, use only -output instead");
    }
    if !a.inputs.is_empty() {
        say(Note::Warning(
            "-inputs is deprecated, use -input instead".into(),
        ));
    }
    if !a.outputs.is_empty() {
        say(Note::Warning(
            "-outputs is deprecated, use -output instead".into(),
        ));
    }
    let inputs: Vec<String> = if a.inputs.is_empty() {
        a.input.clone()
    } else {
        comma_list(&a.inputs)
    };
    let outputs: Vec<String> = if a.outputs.is_empty() {
        a.output.clone()
    } else {
        comma_list(&a.outputs)
    };
    let targets = comma_list(&a.targets);
    check_mode(a, &inputs, &outputs, &targets)?;
    if a.align == 0 {
        // LLVM 22 divides by zero here.
        return fail("-bundle-align must be at least 1");
    }
    // The environment is read when LLVM builds its configuration, after the
    // checks above; its warnings go to stderr as they are found.
    let settings = EnvSettings::from_lookup(|k| env(k)?.into_string().ok());
    for w in &settings.warnings {
        say(Note::Text(format!("{w}\n")));
    }
    let comp = settings.resolve(a.compress, a.verbose, a.level, Method::ZSTD);
    Ok(Job {
        file_type: a.file_type.clone(),
        targets,
        inputs,
        outputs,
        unbundle: a.unbundle,
        list: a.list,
        allow_missing: a.allow_missing,
        align: a.align,
        hip_openmp: a.hip_openmp,
        comp,
        check_archive: a.check_archive,
        objcopy: None,
        temp_dir: temp_dir(env),
    })
}

/// LLVM's checks of the mode (`-list`, `-unbundle` or bundling) against
/// the inputs, outputs and targets given, in its order.
fn check_mode(
    a: &Args,
    inputs: &[String],
    outputs: &[String],
    targets: &[String],
) -> Result<(), Failure> {
    let fail = |m: &str| Err(Failure::new(m));
    let (unbundle, list, file_type) = (a.unbundle, a.list, a.file_type.as_str());
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
        if a.check_archive {
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
    Ok(())
}

/// Where LLVM makes temporary files: the first of `TMPDIR`, `TMP`, `TEMP`,
/// `TEMPDIR` that is set, else `/tmp`.
fn temp_dir(env: &dyn Fn(&str) -> Option<OsString>) -> PathBuf {
    ["TMPDIR", "TMP", "TEMP", "TEMPDIR"]
        .iter()
        .find_map(|k| env(k))
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

/// The hash policy of the drop-in: LLVM computes the hash only for
/// `-verbose`, and so do we, but a mismatch is then an error (LLVM only
/// prints `Hashes match: No`).
pub(super) fn hash_policy(job: &Job) -> ccob::HashCheck {
    if job.comp.verbose {
        ccob::HashCheck::Enforce
    } else {
        ccob::HashCheck::Skip
    }
}

/// The read options of the drop-in: LLVM's limits, [`hash_policy`].
pub(super) fn read_options(job: &Job) -> ccob::ReadOptions {
    ccob::ReadOptions {
        hash: hash_policy(job),
        ..ccob::ReadOptions::default()
    }
}

/// The targets, checked and normalized (LLVM's target checks, in its order).
pub(super) fn targets(job: &Job) -> Result<Vec<BundleId>, Failure> {
    crate::bundle::id::check_targets(&job.targets, !job.unbundle && !job.list)
        .map_err(|e| Failure::new(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command line that bundles two inputs into one output.
    fn bundling() -> Args {
        Args {
            file_type: "bc".into(),
            targets: vec!["host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx90a".into()],
            input: vec!["h.bc".into(), "d.bc".into()],
            output: vec!["fat.bc".into()],
            align: 1,
            ..Args::default()
        }
    }

    /// `check` with an environment of `vars`: the job or why not, and the
    /// notes.
    fn run_check(a: &Args, vars: &[(&str, &str)]) -> (Result<Job, Failure>, Vec<Note>) {
        let mut notes = Vec::new();
        let env = |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        };
        let r = check(a, &env, &mut |n| notes.push(n));
        (r, notes)
    }

    /// LLVM's line for the failed check of `a` (the path, for a file).
    fn error(a: &Args) -> String {
        match run_check(a, &[]).0.unwrap_err() {
            Failure::Said { llvm, .. } => llvm,
            Failure::File { path, .. } => path,
        }
    }

    #[test]
    fn a_good_command_line_becomes_a_job() {
        let (job, notes) = run_check(&bundling(), &[("TMP", "/scratch")]);
        let job = job.unwrap();
        assert!(notes.is_empty());
        assert_eq!(job.targets.len(), 2);
        assert_eq!(job.inputs, ["h.bc", "d.bc"]);
        assert_eq!(job.outputs, ["fat.bc"]);
        assert!(!job.comp.compress);
        assert_eq!(job.temp_dir, PathBuf::from("/scratch"));
        let (job, _) = run_check(&bundling(), &[]);
        assert_eq!(job.unwrap().temp_dir, PathBuf::from("/tmp"));
    }

    #[test]
    fn deprecated_options_warn_and_split_on_commas() {
        let a = Args {
            input: vec![],
            inputs: vec!["h.bc,d.bc".into()],
            output: vec![],
            outputs: vec!["fat.bc".into()],
            ..bundling()
        };
        let (job, notes) = run_check(&a, &[]);
        assert_eq!(job.unwrap().inputs, ["h.bc", "d.bc"]);
        assert_eq!(
            notes,
            [
                Note::Warning("-inputs is deprecated, use -input instead".into()),
                Note::Warning("-outputs is deprecated, use -output instead".into()),
            ]
        );
    }

    #[test]
    fn checks_come_in_llvms_order() {
        // Both input options beat everything else, even with -list and
        // -unbundle together.
        let a = Args {
            inputs: vec!["x".into()],
            list: true,
            unbundle: true,
            ..bundling()
        };
        assert_eq!(
            error(&a),
            "-inputs and -input cannot be used together, use only -input instead"
        );
        let a = Args {
            list: true,
            unbundle: true,
            ..bundling()
        };
        assert_eq!(error(&a), "-unbundle and -list cannot be used together");
        let a = Args {
            list: true,
            ..bundling()
        };
        assert_eq!(error(&a), "only one input file supported for -list");
        let a = Args {
            list: true,
            input: vec!["fat.bc".into()],
            ..bundling()
        };
        assert_eq!(error(&a), "-outputs option is invalid for -list");
        // -check-input-archive is checked before the outputs.
        let a = Args {
            check_archive: true,
            output: vec![],
            ..bundling()
        };
        assert_eq!(
            error(&a),
            "-check-input-archive cannot be used while bundling"
        );
        let a = Args {
            check_archive: true,
            unbundle: true,
            ..bundling()
        };
        assert_eq!(
            error(&a),
            "-check-input-archive can only be used for unbundling archives (-type=a)"
        );
        let a = Args {
            targets: vec![],
            ..bundling()
        };
        assert_eq!(
            error(&a),
            "for the --targets option: must be specified at least once!"
        );
        let a = Args {
            unbundle: true,
            ..bundling()
        };
        assert_eq!(
            error(&a),
            "only one input file supported in unbundling mode"
        );
        let a = Args {
            file_type: "a".into(),
            ..bundling()
        };
        assert_eq!(error(&a), "Archive files are only supported for unbundling");
        let a = Args {
            input: vec!["h.bc".into()],
            ..bundling()
        };
        assert_eq!(
            error(&a),
            "number of input files and targets should match in bundling mode"
        );
        let a = Args {
            align: 0,
            ..bundling()
        };
        assert_eq!(error(&a), "-bundle-align must be at least 1");
    }

    #[test]
    fn the_environment_is_read_after_the_checks() {
        let bad = [("COMPRESSED_BUNDLE_FORMAT_VERSION", "9")];
        // A failed check: the environment's warning is not given.
        let a = Args {
            align: 0,
            ..bundling()
        };
        let (r, notes) = run_check(&a, &bad);
        assert!(r.is_err() && notes.is_empty());
        let (r, notes) = run_check(&bundling(), &bad);
        assert_eq!(r.unwrap().comp.options.version, 3);
        assert_eq!(
            notes,
            [Note::Text(
                "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: 9. Valid values \
                 are 2 or 3. Using default version 3.\n"
                    .into()
            )]
        );
        // Flags beat the environment.
        let a = Args {
            compress: Some(false),
            ..bundling()
        };
        let (r, _) = run_check(&a, &[("OFFLOAD_BUNDLER_COMPRESS", "1")]);
        assert!(!r.unwrap().comp.compress);
        let (r, _) = run_check(&bundling(), &[("OFFLOAD_BUNDLER_COMPRESS", "1")]);
        assert!(r.unwrap().comp.compress);
    }
}

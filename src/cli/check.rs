//! `offload-kit check`: a CI gate over the architectures and kinds of the
//! device code in files. The rules are `offload_kit::scan::check`'s; this
//! file maps the options to [`Requirements`] and prints the [`Outcome`].

use anyhow::{Result, bail};

use super::io::print_line;
use super::scan::{Common, list, par_map, scan_file};
use offload_kit::scan::{self, Outcome, Requirements, Verdict};

/// Check that files carry (or do not carry) device code for given targets:
/// exit 0 when satisfied, 1 with a report otherwise.
#[derive(clap::Args)]
#[command(
    after_help = "By default every input that carries device images must satisfy each\n\
--require-* on its own (host-only files are listed and pass), and at least one input must\n\
carry device images. With --any, the inputs together must satisfy them. --forbid-* fails\n\
on any image anywhere. Host entries of bundles count for no architecture.\n\n\
Example (CI):\n  offload-kit check dist/ --require-arch gfx90a,gfx942 --forbid-arch gfx803"
)]
pub struct CheckOpts {
    #[command(flatten)]
    common: Common,
    /// Architectures that must be present (comma-separated, repeatable;
    /// `gfx90a` is satisfied by `gfx90a:xnack+`).
    #[arg(long, value_name = "ARCH")]
    require_arch: Vec<String>,
    /// Architectures that must not be present.
    #[arg(long, value_name = "ARCH")]
    forbid_arch: Vec<String>,
    /// Offload kinds (or image kinds) that must be present.
    #[arg(long, value_name = "KIND")]
    require_kind: Vec<String>,
    /// Offload kinds (or image kinds) that must not be present.
    #[arg(long, value_name = "KIND")]
    forbid_kind: Vec<String>,
    /// Requirements hold for all inputs together, not for each.
    #[arg(long)]
    any: bool,
    /// Problems found while scanning (corrupt containers) fail the check.
    #[arg(long)]
    strict: bool,
    /// Print only failures.
    #[arg(short, long)]
    quiet: bool,
}

impl CheckOpts {
    pub fn run(self) -> Result<std::process::ExitCode> {
        let mut req = Requirements::default();
        req.require_arch = list(&self.require_arch);
        req.forbid_arch = list(&self.forbid_arch);
        req.require_kind = list(&self.require_kind);
        req.forbid_kind = list(&self.forbid_kind);
        req.any = self.any;
        req.strict = self.strict;
        if req.is_empty() {
            bail!(
                "nothing to check: give --require-arch, --forbid-arch, --require-kind or --forbid-kind"
            );
        }
        let opts = self.common.options();
        let files = self.common.files()?;
        let scanned = par_map(&files, self.common.jobs(), |_, p| {
            scan_file(p, &opts, &mut scan::NoVisit)
        });
        let outcome = scan::check(
            scanned
                .iter()
                .map(|s| s.result.as_ref().map_err(String::as_str)),
            &req,
        );
        let paths: Vec<&str> = scanned.iter().map(|s| s.path.as_str()).collect();
        print_outcome(&paths, &outcome, self.quiet)?;
        if outcome.passed() {
            Ok(std::process::ExitCode::SUCCESS)
        } else {
            Ok(std::process::ExitCode::FAILURE)
        }
    }
}

fn joined(failures: &[scan::check::Failure]) -> String {
    failures
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Prints the report: a line per input (failures only with `quiet`), then
/// what concerns all inputs, then the count of failures.
fn print_outcome(paths: &[&str], outcome: &Outcome, quiet: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for (path, verdict) in paths.iter().zip(&outcome.files) {
        match verdict {
            Verdict::Unreadable(e) => print_line(&mut out, &format!("FAIL {path}: {e}"))?,
            Verdict::Checked {
                device_images,
                present,
                failures,
            } => {
                if failures.is_empty() {
                    if quiet {
                        continue;
                    }
                    if *device_images == 0 {
                        print_line(&mut out, &format!("ok   {path}: no device images"))?;
                    } else {
                        print_line(&mut out, &format!("ok   {path}: {}", present.join(" ")))?;
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
    if outcome.no_device_code {
        print_line(&mut out, "FAIL: no input carries device images")?;
    }
    if !outcome.all_inputs.is_empty() {
        print_line(
            &mut out,
            &format!("FAIL (all inputs): {}", joined(&outcome.all_inputs)),
        )?;
    }
    let failures = outcome.failures();
    if failures > 0 {
        print_line(&mut out, &format!("check failed: {failures} failure(s)"))?;
    }
    Ok(())
}

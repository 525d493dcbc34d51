//! `offload-kit check`: a CI gate over the architectures and kinds of the
//! device code in files. The rules and their matching are
//! `crate::scan::{rule, check}`'s and `crate::kernels::gate`'s, as is the
//! JSON document (schema `offload-kit/check/1`), and the text report is
//! `crate::report`'s; this file maps the options to [`Requirements`] and
//! prints the [`Outcome`](crate::scan::Outcome) as text or JSON.

use std::io::Write;

use anyhow::{Result, bail};

use super::scan::{Common, Kinds, list, scan_files, scan_files_kernels};
use crate::kernels::{CheckReport, KernelGate, KernelRule, PerGpuJudgement};
use crate::report::{CheckShown as Shown, print_check as print_outcome};
use crate::scan::{self, Requirements, Rule, RuleError, Unread};

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
does not meet it), while an sm_90a cubin meets sm_90 and nothing else (sm_120a code does\n\
not run on sm_121); sm_100f names the family's devices from 10.0 on (10.0, 10.3), each to\n\
be served. Images are named as cuobjdump names them (a family cubin is sm_100). PTX\n\
counts for the devices the driver can compile it for, reported as 'through PTX JIT'\n\
when it is not for the rule's own arch: plain PTX for every newer arch, sm_XYf PTX for\n\
its family's devices from X.Y on, sm_XYa PTX for X.Y only;\n\
sm_90:cubin counts no PTX. An ok line says which images serve each rule; a FAIL line\n\
which configurations nothing serves. --forbid ARCH matches images built for that\n\
processor (with no feature set against the rule's; sm_90 takes sm_90a images too, sm_90a\n\
and sm_100f only arch-specific or family code). An image whose kind is not known\n\
fails a rule that needs it (compressed bundles are decompressed to tell).\n\n\
By default every input that carries device images must meet each --require rule on its\n\
own (host-only files are listed and pass), and at least one input must carry device\n\
images. With --any, the inputs together must meet them. Host entries of bundles count\n\
for no architecture. --require-arch A is --require A; --require-kind K is --require '*:K'\n\
(the same for --forbid-*).\n\n\
--require-kernel NAME[@TARGET] needs a kernel whose name matches the glob pattern NAME\n\
(mangled, demangled, or demangled up to its parameters: 'gemm*', '*ns::gemm<float>') in\n\
an image a device of TARGET would load (any image without @TARGET); --forbid-kernel\n\
NAME[@TARGET] fails if an image built for TARGET holds one. An image whose kernels\n\
cannot be listed (bitcode, SPIR-V) fails a forbidding kernel rule, and counts for no\n\
required one; one whose symbols are damaged is an input error.\n\n\
Per-GPU files: a library that installs files per GPU (the table in docs/prune.md: Tensile's\n\
code objects and indexes, MIOpen's databases, AOTriton's and TensorRT's files) and has\n\
some GPUs' files in a tree or package (the files named: together; --any: all inputs\n\
together) must have one that serves each processor a --require rule names, as `prune\n\
--keep` of it would keep it; FAIL names the library, its directory, the GPU and the GPUs\n\
it has files for. A library with no per-GPU file, and a rule naming no processor\n\
(*:hip), are not judged.\n\n\
Exit codes: 0 every rule holds; 1 a rule does not hold; 2 an input could not be read or\n\
holds a corrupt or truncated container (unless --allow-corrupt).\n\n\
Examples (CI):\n  offload-kit check dist/ --require gfx90a,gfx942 --require sm_90:cubin --forbid gfx803\n  \
offload-kit check libfoo.so --require-kernel 'gemm_kernel*@gfx942' --forbid-kernel '*debug*'"
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
    /// A kernel that must be present: NAME[@TARGET], NAME a glob pattern
    /// matched against mangled and demangled names (repeatable; not
    /// comma-separated, as C++ names hold commas).
    #[arg(long, value_name = "NAME[@TARGET]")]
    require_kernel: Vec<String>,
    /// A kernel that must not be present: NAME[@TARGET].
    #[arg(long, value_name = "NAME[@TARGET]")]
    forbid_kernel: Vec<String>,
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
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print a GitHub-flavoured Markdown report instead of text (for a CI
    /// job summary).
    #[arg(long)]
    markdown: bool,
    /// Also write the check as JUnit XML to FILE: a test case per rule and
    /// input (standard output and the exit code stay as they are).
    #[arg(long, value_name = "FILE")]
    junit: Option<std::path::PathBuf>,
}

/// The rules of option `--{option}`, each parsed by `parse`; one naming
/// nothing known is a usage error naming the option and the rule.
fn rules(
    option: &str,
    values: &[String],
    parse: fn(&str) -> Result<Rule, RuleError>,
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
    parse: fn(&str) -> Result<Rule, RuleError>,
) -> Result<Vec<String>> {
    rules(option, values, parse)?;
    Ok(list(values))
}

impl CheckOpts {
    /// The rules and modes of the options (a rule naming nothing known is
    /// a usage error).
    fn requirements(&self) -> Result<Requirements> {
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
        Ok(req)
    }

    pub fn run(self) -> Result<std::process::ExitCode> {
        let req = self.requirements()?;
        let kernel_rules = |option: &str, values: &[String]| -> Result<Vec<KernelRule>> {
            values
                .iter()
                .map(|v| KernelRule::parse(v).map_err(|e| anyhow::anyhow!("--{option} {e}")))
                .collect()
        };
        let require_kernel = kernel_rules("require-kernel", &self.require_kernel)?;
        let forbid_kernel = kernel_rules("forbid-kernel", &self.forbid_kernel)?;
        let with_kernels = !require_kernel.is_empty() || !forbid_kernel.is_empty();
        if req.is_empty() && !with_kernels {
            bail!(
                "nothing to check: give --require or --forbid (or --require-arch, \
                 --require-kernel, ...)"
            );
        }
        // A gate never passes damaged data: everything compressed is
        // decoded and every stored hash checked, `--verify` or not.
        let mut opts = self.common.options();
        opts.verify = true;
        let files = self.common.files()?;
        let names = super::io::RawNames::of(files.iter().map(|s| s.path.as_path()));
        let needs_kinds = req.needs_kinds();
        let scanned = if with_kernels {
            scan_files_kernels(&files, self.common.jobs(), &opts, &self.common.allowance())
        } else {
            scan_files(&files, self.common.jobs(), &opts, || {
                if needs_kinds {
                    Box::new(Kinds)
                } else {
                    Box::new(scan::NoVisit)
                }
            })
        };
        let outcome = scan::check(
            scanned
                .iter()
                .map(|s| s.result.as_ref().map_err(Unread::as_str)),
            &req,
        );
        let kernels = KernelGate::judge(
            scanned.iter().map(|s| (&s.result, &s.kernels[..])),
            &outcome,
            &require_kernel,
            &forbid_kernel,
            &req,
        );
        let paths: Vec<&str> = scanned.iter().map(|s| s.path.as_str()).collect();
        let judged = per_gpu_files(&self.common, &paths, &req);
        let walked: Vec<bool> = scanned.iter().map(|s| s.found).collect();
        let report = CheckReport::new(&req, &paths, &outcome)
            .with_kernel_rules(&kernels)
            .with_per_gpu_files(&judged)
            .with_walked(&walked);
        if let Some(path) = &self.junit {
            super::io::write_whole(path, report.junit().as_bytes())?;
        }
        let mut out = super::io::Report::stdout();
        // Lines for standard error, said after the report.
        let mut stderr = Vec::new();
        if self.markdown {
            out.write_all(report.markdown().as_bytes())?;
        } else if self.json {
            let elsewhere: Vec<_> = scanned
                .iter()
                .map(|s| s.result.as_ref().ok().and_then(scan::json::Elsewhere::of))
                .collect();
            let doc = report.document(&elsewhere);
            super::io::write_json(&mut out, &doc, &names)?;
        } else {
            // Files found walking a directory that hold no device code and
            // pass are not listed one by one (there may be thousands).
            let notes: Vec<Option<String>> = scanned
                .iter()
                .map(|s| {
                    s.result
                        .as_ref()
                        .ok()
                        .and_then(scan::Report::elsewhere_note)
                })
                .collect();
            let shown = Shown {
                walked: &walked,
                scanned: &scanned,
                named: self.common.paths(),
                notes: &notes,
                per_gpu: &judged,
                any: req.any,
                quiet: self.quiet,
            };
            stderr = print_outcome(&mut out, &paths, &outcome, &kernels, &shown)?;
        }
        out.flush()?;
        for line in stderr {
            eprintln!("{line}");
        }
        Ok(report.exit_code().into())
    }
}

/// The gate on per-GPU files ([`per_gpu`]): the names scanned (`units`),
/// placed in the directories named, judged against the required rules.
fn per_gpu_files(common: &Common, units: &[&str], req: &Requirements) -> Vec<PerGpuJudgement> {
    let dirs: Vec<String> = common
        .paths()
        .iter()
        .filter(|p| p.as_os_str() != "-" && p.is_dir())
        .map(|p| crate::files::shown(p).into_owned())
        .collect();
    let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
    PerGpuJudgement::judge(units.iter().copied(), &dirs, req)
}

//! `offload-kit split`: one wheel becomes one wheel per group of GPUs and
//! a null variant, one Debian or conda package one package per group,
//! with the metadata installers pick them by, and a directory or other
//! file one directory per group; the job is
//! `crate::prune::split`'s, this parses, prints and picks the exit code.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};

use super::io::printable;
use crate::prune::Ptx;
use crate::prune::split::{Gpus, SplitOptions, split_path};
use crate::scan::rule::Rule;

/// Splits a fat wheel into per-GPU wheels (PEP 825 variants), a .deb or a
/// conda package into per-GPU packages, a directory or another file into a
/// directory per GPU.
#[derive(clap::Args)]
#[command(
    after_help = "Each group's wheel holds exactly what `prune --keep GROUP` keeps (the \
same members, byte for byte), plus `*.dist-info/variant.json` and its RECORD row; its name \
ends in the group's variant label (`sm86`, `gfx942`, `gfx90a.gfx942`). A `null` variant \
holds everything the input held (but for a variant wheel split again: its label's \
variant.json is replaced, and it gets no null variant, as it holds only its own GPUs' code). Beside them go `{name}-{version}-variants.json` and, for \
pip, one PEP 503 index per group under OUTDIR/index/LABEL (pip install --index-url \
file://OUTDIR/index/LABEL NAME). A .deb becomes one package per group, \
PACKAGE-LABEL_VERSION_ARCH.deb: prune's output with its control file renamed and given \
`Provides: PACKAGE (= VERSION)`, `Conflicts:` and `Replaces:` the original and its siblings. \
A conda package (.conda, .tar.bz2) becomes one build per group, its build string ending in \
_LABEL, with `__cuda_arch` or `__amdgpu_arch` run constraints and build numbers that make \
solvers prefer the most specific. A directory (or any other file prune reads) becomes \
OUTDIR/LABEL/NAME, what `cp -a` then `prune --keep GROUP --in-place` would leave, its \
unchanged files hard links to the input's (copies across file systems). \
An OCI image layout (a directory) becomes one new layout OUTDIR/NAME holding the input's \
images under their names and each group's under TAG-LABEL (umoci unpack --image \
OUTDIR/NAME:TAG-LABEL), each the blobs prune writes, shared by digest; a `docker save` \
archive becomes one new archive OUTDIR/NAME holding its images under their RepoTags and \
each group's copy tagged REPO:TAG-LABEL (skopeo copy docker-archive:OUTDIR/NAME:REPO:TAG-LABEL \
…), unchanged layers stored once. \
--per-gpu makes one group per device target the wheel holds \
code or per-GPU files for (both xnack modes folded into their processor, one built for one \
mode only kept as gfx900:xnack-; sm_90a into sm_90). An output split again for its own group \
gives the same bytes. A \
group the input does not serve is refused by name and nothing is written; outputs appear \
whole or not at all.\n\nExit codes: 0 success; 1 a member some group's prune refused (left \
as it was, named); 2 an input that could not be read or is \
damaged, a group the input does not serve, an output name already taken, or a usage error."
)]
pub struct SplitOpts {
    /// Wheels, Debian and conda packages, directories and other files
    /// prune reads.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// One output per device target the input serves.
    #[arg(long, conflicts_with = "gpus", required_unless_present = "gpus")]
    per_gpu: bool,
    /// One output keeping what devices of these targets load (separate
    /// by commas; repeat for more outputs).
    #[arg(long, value_name = "LIST")]
    gpus: Vec<String>,
    /// The directory the outputs go to (made when missing).
    #[arg(short, long, value_name = "OUTDIR", required = true)]
    dir: PathBuf,
    /// Which PTX each group keeps, as prune's --ptx.
    #[arg(long, value_name = "WHICH", default_value = "newest", value_parser = super::prune::ptx_parser())]
    ptx: Ptx,
    /// Most bytes decompressed while reading, as prune's --max-uncompressed.
    #[arg(long, value_name = "SIZE", value_parser = super::scan::parse_size)]
    max_uncompressed: Option<u64>,
    /// Threads that write outputs side by side and compress each (default:
    /// every CPU); fewer hold less memory (xz takes some 110 MiB a thread).
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    threads: u32,
    /// Print JSON (schema `offload-kit/split/1`) instead of text.
    #[arg(long)]
    json: bool,
}

impl SplitOpts {
    /// The groups of the command line.
    fn gpus(&self) -> Result<Gpus> {
        if self.per_gpu {
            return Ok(Gpus::PerGpu);
        }
        let mut groups = Vec::new();
        for list in &self.gpus {
            let group: Vec<Rule> = list
                .split(',')
                .filter(|v| !v.trim().is_empty())
                .map(|r| Rule::parse(r.trim()).map_err(|e| anyhow!("--gpus {e}")))
                .collect::<Result<_>>()?;
            if group.is_empty() {
                bail!("--gpus '{list}' names no GPU");
            }
            groups.push(group);
        }
        Ok(Gpus::Given(groups))
    }

    pub fn run(self) -> Result<std::process::ExitCode> {
        let o = SplitOptions {
            gpus: self.gpus()?,
            ptx: self.ptx,
            dir: self.dir.clone(),
            max_uncompressed: self.max_uncompressed,
            threads: self.threads,
        };
        let mut reports = Vec::new();
        let mut failed = false;
        for input in &self.inputs {
            match split_path(input, &o) {
                Ok(r) => reports.push(r),
                Err(e) => {
                    eprintln!("error: {}", printable(&e.chain()));
                    failed = true;
                }
            }
        }
        let mut out = super::io::Report::stdout();
        if self.json {
            crate::report::split::write_json(&mut out, &reports)?;
        } else {
            crate::report::split::print_text(&mut out, &reports)?;
        }
        out.flush()?;
        let refused = reports.iter().any(|r| !r.members_refused.is_empty());
        Ok(std::process::ExitCode::from(match (failed, refused) {
            (true, _) => 2,
            (false, true) => 1,
            (false, false) => 0,
        }))
    }
}

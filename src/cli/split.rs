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
use crate::prune::split::{Gpus, SplitOptions, SplitReport, split_path};
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
            let doc = serde_json::json!({ "schema": "offload-kit/split/1", "files": reports });
            serde_json::to_writer_pretty(&mut out, &doc)?;
            out.write_all(b"\n")?;
        } else {
            for line in reports.iter().flat_map(text) {
                writeln!(out, "{}", printable(&line))?;
            }
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

/// The text report of one split, line by line.
fn text(r: &SplitReport) -> Vec<String> {
    // A layout's or archive's `null` is the input's own images, carried:
    // what the split made is each group's (a wheel's null is a new wheel).
    let carried = matches!(r.format, "oci" | "docker");
    let made = r
        .outputs
        .iter()
        .filter(|o| !(carried && o.gpus.is_empty()))
        .count();
    let one = made == 1;
    let noun = match (r.format, one) {
        ("wheel", true) => "wheel",
        ("wheel", false) => "wheels",
        ("tree" | "file", true) => "directory",
        ("tree" | "file", false) => "directories",
        ("oci" | "docker", true) => "image",
        ("oci" | "docker", false) => "images",
        (_, true) => "package",
        (_, false) => "packages",
    };
    let mut s = vec![format!("{}: split into {made} {noun}", r.input)];
    for o in &r.outputs {
        let gpus = match o.gpus.is_empty() {
            true => "every GPU, as the input".to_string(),
            false => o.gpus.join(","),
        };
        s.push(format!("  {} ({gpus})", o.path));
        s.extend(o.properties.iter().map(|p| format!("    {p}")));
        if let Some(i) = &o.index {
            s.push(format!("    pip index: {i}"));
        }
    }
    s.extend(r.variants_json.iter().map(|v| format!("  {v}")));
    let lists = [
        (
            "device targets, and the outputs that serve them",
            &r.targets,
        ),
        ("images, and the outputs that hold them", &r.images),
        ("per-GPU files, and the outputs that hold them", &r.files),
    ];
    // A variant wheel split again has no null variant.
    let null = r.variants_json.is_some() && r.outputs.iter().any(|o| o.gpus.is_empty());
    for (what, list) in lists.into_iter().filter(|(_, l)| !l.is_empty()) {
        s.push(format!("  {what}:"));
        for t in list {
            let by = match t.outputs.is_empty() {
                true if null => "none (only in null)".to_string(),
                true => "none".to_string(),
                false => t.outputs.join(", "),
            };
            s.push(format!("    {}: {by}", t.what));
        }
    }
    s.extend(
        r.members_refused
            .iter()
            .map(|m| format!("  refused, left as it was: {m}")),
    );
    s
}

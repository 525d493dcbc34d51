//! `offload-kit prune`: keeps only the device images the GPUs named would
//! load, rewriting each container that loses entries where it lies; the
//! selection and the rewrite are `offload_kit::prune`'s.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;

use super::io::{Input, Output, print_line, printable};
use offload_kit::container::elf;
use offload_kit::layout::Piece;
use offload_kit::prune::plan::{self, Plan};
use offload_kit::prune::{Ptx, Rules, Selection, Verdict};
use offload_kit::scan::rule::Rule;
use offload_kit::scan::sort::arch_cmp;
use offload_kit::scan::{self, Image, Options, Report};

/// Keeps only the device images the GPUs you ship to would load.
#[derive(clap::Args)]
#[command(
    after_help = "Rules are written as `check` reads them (ARCH[:KIND], target IDs with \
features, `*`). With --keep an image stays when a device of a kept target would load it: \
gfx90a keeps gfx90a, gfx90a:xnack+ and gfx90a:xnack- images and generic ones that cover \
gfx90a; sm_86 keeps the sm_80 and sm_86 cubins an 8.6 device runs, and (--ptx newest) the \
newest PTX it can compile, per fat binary. With --drop an image goes when it is built for a \
target named. A bundle's host entry always stays.\n\n\
Each container that loses entries is rewritten where it lies, so whatever points at it still \
does; the bytes it frees are zeros, and holes on disk (the file keeps its size). Handled today: \
clang offload bundles (plain, and compressed: recompressed with the same method at LLVM's \
default level) and CUDA fatbins, in linked programs and shared libraries or on their own. \
Refused with an error, the file untouched: OffloadBinaries, host objects and archives, \
containers inside others.\n\n\
The output appears whole or not at all (a temporary file renamed into place); --in-place keeps \
the file's mode, owner and times (a new file gets the input's mode). Exit codes: 0 success, 2 an input that could not be read, \
held damaged data or cannot be pruned, or a usage error."
)]
pub struct PruneOpts {
    /// Files to prune.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// Write the pruned file here (one input).
    #[arg(short, long, value_name = "OUT", conflicts_with_all = ["dir", "in_place"])]
    output: Option<PathBuf>,
    /// Write each pruned file into this directory, under its own name.
    #[arg(short, long, value_name = "DIR", conflicts_with = "in_place")]
    dir: Option<PathBuf>,
    /// Replace each input with its pruned form.
    #[arg(long)]
    in_place: bool,
    /// Keep what devices of these targets load (repeat, or separate by commas).
    #[arg(long, value_name = "RULE", conflicts_with = "drop")]
    keep: Vec<String>,
    /// Drop what is built for these targets.
    #[arg(long, value_name = "RULE")]
    drop: Vec<String>,
    /// Which PTX --keep keeps: the newest a kept device can compile, all of them, or none.
    #[arg(long, value_name = "WHICH", default_value = "newest", value_parser = ["newest", "all", "none"])]
    ptx: String,
    /// Let a container lose every device image (a bundle keeps its host entry).
    #[arg(long)]
    allow_empty: bool,
    /// Say what would be removed; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print JSON (schema `offload-kit/prune/1`) instead of text.
    #[arg(long)]
    json: bool,
}

/// The rules of the command line.
fn selection(o: &PruneOpts) -> Result<Selection> {
    let parse = |option: &str, values: &[String]| -> Result<Vec<Rule>> {
        values
            .iter()
            .flat_map(|v| v.split(','))
            .filter(|v| !v.trim().is_empty())
            .map(|r| Rule::parse(r).map_err(|e| anyhow!("--{option} {e}")))
            .collect()
    };
    let rules = match (o.keep.is_empty(), o.drop.is_empty()) {
        (false, _) => Rules::Keep(parse("keep", &o.keep)?),
        (true, false) => Rules::Drop(parse("drop", &o.drop)?),
        (true, true) => bail!("say what to keep (--keep RULE) or what to drop (--drop RULE)"),
    };
    if matches!(&rules, Rules::Keep(r) | Rules::Drop(r) if r.is_empty()) {
        bail!("no rule given");
    }
    let ptx = match o.ptx.as_str() {
        "all" => Ptx::All,
        "none" => Ptx::None,
        _ => Ptx::Newest,
    };
    Ok(Selection { rules, ptx })
}

/// Images kept or dropped, per target and kind.
#[derive(Serialize, Clone)]
struct Group {
    target: String,
    kind: String,
    images: usize,
    bytes: u64,
}

/// What pruning one file did (or would do).
#[derive(Serialize)]
struct FileReport {
    path: String,
    output: Option<String>,
    containers_rewritten: usize,
    bytes_before: u64,
    bytes_after: u64,
    disk_before: u64,
    disk_after: Option<u64>,
    freed: u64,
    kept: Vec<Group>,
    dropped: Vec<Group>,
}

fn groups<'a>(images: impl Iterator<Item = &'a Image>) -> Vec<Group> {
    let mut m: BTreeMap<(String, String), Group> = BTreeMap::new();
    for i in images {
        let kind = i
            .image_kind
            .as_ref()
            .map_or("unknown".to_string(), |k| k.to_string());
        let g = m
            .entry((i.target_id.clone(), kind.clone()))
            .or_insert(Group {
                target: i.target_id.clone(),
                kind,
                images: 0,
                bytes: 0,
            });
        g.images += 1;
        g.bytes += i.size;
    }
    let mut v: Vec<Group> = m.into_values().collect();
    v.sort_by(|a, b| arch_cmp(&a.target, &b.target).then_with(|| a.kind.cmp(&b.kind)));
    v
}

/// Writes `data` with `plan`'s edits to `out`, then punches the freed
/// ranges out of the file (they read as zeros either way).
fn write(data: &[u8], plan: &Plan, out: &mut Output) -> Result<()> {
    static ZEROS: [u8; 1 << 16] = [0; 1 << 16];
    let zeros = |out: &mut Output, mut n: u64| -> std::io::Result<()> {
        while n > 0 {
            let k = n.min(ZEROS.len() as u64);
            out.write_all(&ZEROS[..usize::try_from(k).unwrap_or(ZEROS.len())])?;
            n -= k;
        }
        Ok(())
    };
    let slice =
        |a: u64, b: u64| &data[usize::try_from(a).unwrap_or(0)..usize::try_from(b).unwrap_or(0)];
    let mut pos = 0u64;
    for e in &plan.edits {
        out.write_all(slice(pos, e.offset))?;
        for p in &e.pruned.layout.pieces {
            match p {
                Piece::Bytes(b) => out.write_all(b)?,
                Piece::Zeros(n) => zeros(out, *n)?,
                Piece::Image(i) => {
                    let r = &e.pruned.ranges[*i];
                    match &e.built {
                        Some(b) => out.write_all(
                            &b[usize::try_from(r.start).unwrap_or(0)
                                ..usize::try_from(r.end).unwrap_or(0)],
                        )?,
                        None => out.write_all(slice(e.offset + r.start, e.offset + r.end))?,
                    }
                }
            }
        }
        zeros(out, e.freed())?;
        pos = e.offset + e.size;
    }
    out.write_all(slice(pos, data.len() as u64))?;
    if let Some(f) = out.temp_file() {
        for e in &plan.edits {
            let start = (e.offset + e.pruned.layout.size).next_multiple_of(4096);
            let end = (e.offset + e.size) / 4096 * 4096;
            if end > start {
                let flags =
                    rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
                // A filesystem without holes keeps the zeros written.
                let _ = rustix::fs::fallocate(f, flags, start, end - start);
            }
        }
    }
    Ok(())
}

/// Copies the input's mode, owner and times to the file about to replace
/// it.
fn keep_metadata(out: &mut Output, meta: &std::fs::Metadata) -> Result<()> {
    if let Some(f) = out.temp_file() {
        f.set_permissions(meta.permissions())?;
        // Only root may give a file away; otherwise the owner is already ours.
        let _ = rustix::fs::fchown(
            f,
            Some(rustix::fs::Uid::from_raw(meta.uid())),
            Some(rustix::fs::Gid::from_raw(meta.gid())),
        );
        let times = std::fs::FileTimes::new()
            .set_accessed(meta.accessed()?)
            .set_modified(meta.modified()?);
        f.set_times(times)?;
    }
    Ok(())
}

impl PruneOpts {
    /// Where the pruned form of `input` goes.
    fn destination(&self, input: &Path) -> Result<Option<PathBuf>> {
        if self.dry_run {
            return Ok(None);
        }
        if let Some(o) = &self.output {
            return Ok(Some(o.clone()));
        }
        if let Some(d) = &self.dir {
            let name = input
                .file_name()
                .ok_or_else(|| anyhow!("'{}': no file name", input.display()))?;
            return Ok(Some(d.join(name)));
        }
        Ok(self.in_place.then(|| input.to_path_buf()))
    }

    fn one(&self, sel: &Selection, input: &Path) -> Result<FileReport> {
        let name = input.to_string_lossy().into_owned();
        let meta = std::fs::metadata(input).with_context(|| format!("'{name}': cannot open"))?;
        let file = Input::open(&name).with_context(|| format!("'{name}': cannot open"))?;
        let data = file.bytes();
        let mut opts = Options::default();
        opts.max_uncompressed = scan::default_max_uncompressed(data.len() as u64);
        let report: Report = scan::scan(data, &opts);
        let verdicts = sel.decide(&report);
        let linked = elf::peek(data)
            .and_then(|p| p.file_type())
            .is_some_and(|t| t != object::elf::ET_REL);
        let plan = plan::plan(data, &report, &verdicts, linked, self.allow_empty)
            .map_err(|e| anyhow!("'{name}': {e}"))?;
        let device = |v: Verdict, stays: bool| v != Verdict::Always && v.stays() == stays;
        let kept = groups(
            report
                .images
                .iter()
                .filter(|i| device(verdicts[i.id], true)),
        );
        let dropped = groups(
            report
                .images
                .iter()
                .filter(|i| device(verdicts[i.id], false)),
        );
        let mut rep = FileReport {
            path: name.clone(),
            output: None,
            containers_rewritten: plan.edits.len(),
            bytes_before: data.len() as u64,
            bytes_after: data.len() as u64,
            disk_before: meta.blocks() * 512,
            disk_after: None,
            freed: plan.freed(),
            kept,
            dropped,
        };
        let Some(dest) = self.destination(input)? else {
            return Ok(rep);
        };
        if plan.is_empty() && self.in_place {
            rep.disk_after = Some(rep.disk_before);
            return Ok(rep);
        }
        let mut out =
            Output::create(&dest).with_context(|| format!("'{}': cannot write", dest.display()))?;
        write(data, &plan, &mut out)
            .with_context(|| format!("'{}': cannot write", dest.display()))?;
        if self.in_place {
            keep_metadata(&mut out, &meta)?;
        } else if let Some(f) = out.temp_file() {
            // A pruned program stays a program: the input's mode, as
            // `install` gives it (owner and times are the new file's).
            f.set_permissions(meta.permissions())?;
        }
        out.commit()
            .with_context(|| format!("'{}': cannot write", dest.display()))?;
        let after = std::fs::metadata(&dest)?;
        rep.output = Some(dest.to_string_lossy().into_owned());
        rep.bytes_after = after.len();
        rep.disk_after = Some(after.blocks() * 512);
        Ok(rep)
    }

    pub fn run(self) -> Result<std::process::ExitCode> {
        if self.output.is_some() && self.inputs.len() > 1 {
            bail!("-o takes one input; write several with -d DIR or --in-place");
        }
        if self.output.is_none() && self.dir.is_none() && !self.in_place && !self.dry_run {
            bail!("say where the pruned files go: -o OUT, -d DIR, --in-place or --dry-run");
        }
        let sel = selection(&self)?;
        let mut reports = Vec::new();
        let mut failed = false;
        for input in &self.inputs {
            match self.one(&sel, input) {
                Ok(r) => reports.push(r),
                Err(e) => {
                    failed = true;
                    eprintln!("error: {}", printable(&super::io::error_text(&e)));
                }
            }
        }
        let mut out = super::io::Report::stdout();
        if self.json {
            #[derive(Serialize)]
            struct Doc<'a> {
                schema: &'static str,
                dry_run: bool,
                files: &'a [FileReport],
            }
            serde_json::to_writer_pretty(
                &mut out,
                &Doc {
                    schema: "offload-kit/prune/1",
                    dry_run: self.dry_run,
                    files: &reports,
                },
            )?;
            writeln!(out)?;
        } else {
            for r in &reports {
                print_text(&mut out, r, self.dry_run)?;
            }
        }
        out.flush()?;
        Ok(std::process::ExitCode::from(if failed { 2 } else { 0 }))
    }
}

fn print_text(out: &mut impl Write, r: &FileReport, dry_run: bool) -> Result<()> {
    let verb = if dry_run { "would free" } else { "freed" };
    let what = if r.containers_rewritten == 0 {
        "nothing to remove".to_string()
    } else {
        format!(
            "{} container(s) rewritten, {verb} {} bytes",
            r.containers_rewritten, r.freed
        )
    };
    print_line(out, &format!("{}: {what}", r.path))?;
    if let (Some(o), Some(d)) = (&r.output, r.disk_after) {
        print_line(
            out,
            &format!(
                "  {o}: {} bytes ({} before); on disk {} bytes ({} before)",
                r.bytes_after, r.bytes_before, d, r.disk_before
            ),
        )?;
    }
    for (label, gs) in [("kept", &r.kept), ("dropped", &r.dropped)] {
        for g in gs {
            print_line(
                out,
                &format!(
                    "  {label:<8} {:<28} {:<6} {:>5} image(s) {:>14} bytes",
                    g.target, g.kind, g.images, g.bytes
                ),
            )?;
        }
    }
    Ok(())
}

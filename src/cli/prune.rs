//! `offload-kit prune`: keeps only the device images the GPUs named would
//! load, rewriting each container that loses entries where it lies; the
//! selection, the rewrite and the writing of each file are
//! `crate::prune`'s ([`prune::prune_path`]).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use serde::Serialize;

use super::io::{print_line, printable};
use crate::prune::{self, Destination, PathOptions, PathReport, Ptx, Rules, Selection};
use crate::scan::rule::Rule;

/// Keeps only the device images the GPUs you ship to would load.
#[derive(clap::Args)]
#[command(
    after_help = "Rules are written as `check` reads them (ARCH[:KIND], target IDs with \
features, `*`). With --keep an image stays when a device of a kept target would load it: \
gfx90a keeps gfx90a, gfx90a:xnack+ and gfx90a:xnack- images and generic ones that cover \
gfx90a; sm_86 keeps the sm_80 and sm_86 cubins an 8.6 device runs, and (--ptx newest) the \
newest PTX it can compile, per fat binary; sm_90 keeps the sm_90a cubins a 9.0 device runs \
(arch-specific code), and the report says which rule keeps each group and why. With --drop an \
image goes when it is built for a target named (sm_90 takes sm_90a images too, sm_90a only \
those). A bundle's host entry always stays.\n\n\
What is rewritten depends on the file. A linked program or shared library: the containers of \
its fat-binary section are packed together, every reference to one that moved is fixed, and the \
freed pages are cut out of the file, every address the code uses unchanged; where that cannot \
be done safely (or with --no-shrink) each container is rewritten where it lies and the bytes it \
frees are zeros and holes on disk, and the report says why. A relocatable object: the sections \
holding them shrink, as llvm-objcopy --update-section/--remove-section writes them (bundle \
sections of -fgpu-rdc objects removed, OffloadBinaries dropped whole). A static archive: each \
member pruned so, the symbol table following. A bare bundle or fatbin (a file made of containers \
from its first byte to its last): the freed bytes cut out. Wheels: each ELF member pruned (inflated \
within --max-uncompressed), every RECORD naming it updated (a signed wheel that would change is \
refused). Containers: clang offload bundles (plain, and \
compressed: recompressed with the same method at LLVM's default level, on --threads), CUDA \
fatbins (entries kept as stored) and OffloadBinaries. A container no device of the rules loads anything of is emptied (a fatbin with no entry, a bundle with its host entry alone: still registered, with nothing to load), and counted; a file that would keep no device image at all needs --allow-empty. Refused with an error, the file untouched: \
OpenMP images registered in a linked program, containers inside others, thin archives without --in-place (with it, their \
member files are pruned where they lie), objects where something points past a container that would shrink, \
tar archives, .deb and cpio packages and zips with bytes in front of them, files of an unknown format, \
a container found twice (one section listed twice), a linked file whose headers or other sections lie \
in the bytes a rewrite changes.\n\n\
The output appears whole or not at all: written with no name, it takes the file's name in one step \
(the old file until then, the new one after, even when killed); --in-place keeps \
the file's mode, owner and times (a new file gets the input's mode); a file with other hard \
links becomes a new file, the others keeping the old one, unless --keep-hard-links (the pruned file \
is then copied over the old one once complete). Exit codes: 0 success, 2 an input that could not be read, \
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
    /// Let a file lose every device image it holds (by default such a file
    /// is refused; containers that lose all theirs are emptied while the file
    /// keeps some: a CUDA fatbin then holds no entry, a bundle its host entry).
    #[arg(long)]
    allow_empty: bool,
    /// With --in-place, rewrite a file that has other hard links through
    /// them, so that every link sees the pruned file (by default it is
    /// replaced by a new file, and the other links keep the old one).
    #[arg(long, requires = "in_place")]
    keep_hard_links: bool,
    /// Rewrite a linked program or library only where each fat binary lies
    /// (the file keeps its layout and size), instead of shrinking it.
    #[arg(long)]
    no_shrink: bool,
    /// Remove a Windows DLL's or EXE's Authenticode signature (pruning
    /// breaks it; a signed file is refused without this).
    #[arg(long)]
    strip_signature: bool,
    /// Most bytes decompressed: by the scan of each file (and of each wheel
    /// member), and by the inflation of one wheel's members together
    /// (suffixes K, M, G; default: 1024 times the file's size, at least
    /// 128M and at most 16G). Past it the file is an error.
    #[arg(long, value_name = "SIZE", value_parser = super::scan::parse_size)]
    max_uncompressed: Option<u64>,
    /// Threads that compress a rebuilt compressed bundle (default: every CPU).
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    threads: u32,
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

impl PruneOpts {
    /// The library's options.
    fn options(&self) -> PathOptions {
        let mut o = PathOptions::default();
        o.destination = match (&self.output, &self.dir) {
            _ if self.dry_run => Destination::DryRun,
            (Some(o), _) => Destination::File(o.clone()),
            (None, Some(d)) => Destination::Directory(d.clone()),
            (None, None) if self.in_place => Destination::InPlace,
            (None, None) => Destination::DryRun,
        };
        o.keep_hard_links = self.keep_hard_links;
        o.prune.allow_empty = self.allow_empty;
        o.prune.threads = self.threads;
        o.prune.no_shrink = self.no_shrink;
        o.prune.strip_signature = self.strip_signature;
        o.prune.max_uncompressed = self.max_uncompressed;
        o
    }

    pub fn run(self) -> Result<std::process::ExitCode> {
        if self.output.is_some() && self.inputs.len() > 1 {
            bail!("-o takes one input; write several with -d DIR or --in-place");
        }
        if self.output.is_none() && self.dir.is_none() && !self.in_place && !self.dry_run {
            bail!("say where the pruned files go: -o OUT, -d DIR, --in-place or --dry-run");
        }
        let sel = selection(&self)?;
        let opts = self.options();
        let mut reports = Vec::new();
        let mut failed = false;
        for input in &self.inputs {
            match prune::prune_path(input, &sel, &opts) {
                Ok(r) => reports.push(r),
                Err(e) => {
                    failed = true;
                    let e = anyhow::Error::from(e);
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
                files: &'a [PathReport],
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
                print_text(&mut out, r, self.dry_run, self.keep_hard_links)?;
            }
        }
        out.flush()?;
        Ok(std::process::ExitCode::from(if failed { 2 } else { 0 }))
    }
}

fn print_text(out: &mut impl Write, r: &PathReport, dry_run: bool, keep_links: bool) -> Result<()> {
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
    if r.emptied > 0 {
        print_line(
            out,
            &format!(
                "  {} container(s) emptied: no device of the rules loads any of their images",
                r.emptied
            ),
        )?;
    }
    if let (Some(o), Some(d)) = (&r.output, r.disk_after) {
        print_line(
            out,
            &format!(
                "  {o}: {} bytes ({} before); on disk {} bytes ({} before)",
                r.bytes_after, r.bytes_before, d, r.disk_before
            ),
        )?;
    }
    if let Some(s) = &r.shrunk {
        let seg = |p: prune::Segment| {
            format!(
                "offset {:#x} address {:#x} size {:#x}",
                p.offset, p.address, p.size
            )
        };
        print_line(
            out,
            &format!(
                "  {} packed from {} to {} bytes; file bytes {:#x}..{:#x} removed",
                s.section, s.section_size.0, s.section_size.1, s.removed.0, s.removed.1
            ),
        )?;
        print_line(out, &format!("  {} {}", s.mapping, seg(s.segment)))?;
        for p in &s.segments {
            print_line(out, &format!("    becomes {}", seg(*p)))?;
        }
    }
    if let Some(n) = r.signature_removed {
        print_line(
            out,
            &format!("  Authenticode signature removed ({n} bytes of certificates)"),
        )?;
    }
    if let Some(why) = &r.not_shrunk {
        print_line(out, &format!("  rewritten in place, not shrunk: {why}"))?;
    }
    if r.hard_links > 1 && r.output.as_deref() == Some(r.path.as_str()) {
        print_line(
            out,
            &format!(
                "  it had {} hard links: {}",
                r.hard_links,
                if keep_links {
                    "rewritten through them, every link sees the pruned file"
                } else {
                    "the others keep the old file (--keep-hard-links rewrites through them)"
                }
            ),
        )?;
    }
    for (label, gs) in [("kept", &r.kept), ("dropped", &r.dropped)] {
        for g in gs {
            let why = g
                .why
                .as_ref()
                .map_or_else(String::new, |w| format!("  ({w})"));
            print_line(
                out,
                &format!(
                    "  {label:<8} {:<28} {:<6} {:>5} image(s) {:>14} bytes{why}",
                    g.target, g.kind, g.images, g.bytes
                ),
            )?;
        }
    }
    Ok(())
}

//! `offload-kit prune`: keeps only the device images the GPUs named would
//! load, rewriting each container that loses entries where it lies; the
//! selection, the rewrite, the writing of each file and the walk of
//! directories are `crate::prune`'s ([`prune::prune_tree`], which runs
//! [`prune::prune_path`] on each file); this prints the report and the
//! total, and picks the exit code.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;

use super::io::{print_line, printable};
use crate::prune::summary::{Left, NotPruned, Owner, RecordLine, Run, Total};
use crate::prune::{
    self, Destination, PackageBytes, PathOptions, PathReport, Ptx, Rules, Selection,
};
use crate::scan::rule::Rule;

mod names;

/// The help of prune's inputs: what it rewrites, and the packages the
/// scanners read that it refuses, from the table their readers tell them
/// by ([`crate::package::formats`]).
fn inputs_help() -> String {
    format!(
        "Files to prune, and directories whose files to prune (with --in-place or --dry-run). \
         Rewritten: ELF and COFF programs, libraries and objects; static and thin archives; \
         bare bundles, CCOBs, OffloadBinaries and CUDA fatbins; files that are one device \
         image (cubins, code objects, PTX, SPIR-V, GPU bitcode), removed whole when the rules \
         drop all of it; wheels, Debian .deb packages, conda packages (.conda, .tar.bz2), OCI \
         image layouts and docker save archives. Refused by name, never passed as holding \
         nothing: the other packages the scanners read ({}).",
        crate::package::formats()
    )
}

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
within --max-uncompressed), every RECORD naming it updated; a member that is refused stays as it \
was and is listed (exit 1), a signed wheel that would change is refused. Debian packages: each file of data.tar pruned as if named alone (its tar header changing \
only in size and checksum), data.tar compressed again with its own method, the md5sums lines of \
the files rewritten updated; a file of it that is refused stays as it was and is listed (exit 1), \
a signed package that would change is refused. With --strict a refused file of a wheel or .deb \
fails the whole package instead, and nothing is written. Containers: clang offload bundles (plain, and \
compressed: recompressed with the same method at LLVM's default level, on --threads), CUDA \
fatbins (entries kept as stored) and OffloadBinaries. A container no device of the rules loads anything of is emptied (a fatbin with no entry, a bundle with its host entry alone: still registered, with nothing to load), and counted; a file that would keep no device image at all needs --allow-empty. Refused with an error, the file untouched: \
OpenMP images registered in a linked program, containers inside others, thin archives without --in-place (with it, their \
member files are pruned where they lie), objects where something points past a container that would shrink, \
tar archives, cpio packages and zips with bytes in front of them, files of an unknown format, \
a container found twice (one section listed twice), a linked file whose headers or other sections lie \
in the bytes a rewrite changes.\n\n\
The output appears whole or not at all: written with no name, it takes the file's name in one step \
(the old file until then, the new one after, even when killed); --in-place keeps \
the file's mode, owner and times (a new file gets the input's mode); a file with other hard \
links becomes a new file, the others keeping the old one, unless --keep-hard-links (the pruned file \
is then copied over the old one once complete).\n\n\
A directory is pruned with --in-place (or looked at with --dry-run; -o and -d take files only): \
every regular file under it, one at a time, as if named alone. Symbolic links are left as they \
are (not followed); a file with several names is pruned once, under the first name met; files \
whose first bytes are of no format prune reads are skipped; the members of a thin archive are \
pruned with it; .offload-kit-* files an interrupted run left are reported, not pruned. A file \
found there that cannot be pruned is listed with why and the run goes on; the report ends with \
a total.\n\n\
Exit codes: 0 success; 1 files found in a directory or in a wheel or .deb were refused (of a kind or \
asking for a rewrite prune does not do), the others pruned; 2 a file that could not be read or written, held \
damaged data, or was named and cannot be pruned, or a usage error."
)]
pub struct PruneOpts {
    // Files to prune, and directories: the help lists the formats
    // (`inputs_help`).
    #[arg(required = true, value_name = "INPUT", help = inputs_help())]
    inputs: Vec<PathBuf>,
    /// Write the pruned file here (one input).
    #[arg(short, long, value_name = "OUT", conflicts_with_all = ["dir", "in_place"])]
    output: Option<PathBuf>,
    /// Write each pruned file into this directory, under its own name.
    #[arg(short, long, value_name = "DIR", conflicts_with = "in_place")]
    dir: Option<PathBuf>,
    /// Replace each input (each file under a directory) with its pruned form.
    #[arg(long)]
    in_place: bool,
    /// Keep what devices of these targets load (repeat, or separate by commas).
    #[arg(long, value_name = "RULE", conflicts_with = "drop")]
    keep: Vec<String>,
    /// Drop what is built for these targets.
    #[arg(long, value_name = "RULE")]
    drop: Vec<String>,
    /// Which PTX --keep keeps: the newest a kept device can compile, all of them, or none.
    #[arg(long, value_name = "WHICH", default_value = "newest", value_parser = ptx_parser())]
    ptx: Ptx,
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
    /// Keep (refuse, as before) a file that is device code alone, every
    /// image of which the rules drop: a per-GPU code object or cubin, a
    /// bundle, fatbin or OffloadBinary file (by default it is removed, in a
    /// directory, in place, and inside a wheel or .deb).
    #[arg(long)]
    keep_files: bool,
    /// Fail a whole wheel or .deb when one of its files is refused (by
    /// default that file is left as it was, named, and the rest of the
    /// package is pruned; exit 1).
    #[arg(long)]
    strict: bool,
    /// Prune a package's files whose bytes do not match its record of them
    /// (a wheel's RECORD, a .deb's md5sums, an installed package's RECORD
    /// or conda-meta record), naming each wrong row in the report (by
    /// default such a package is refused as damaged, exit 2; such a file
    /// of a directory is left as it was, exit 1).
    #[arg(long)]
    trust_bytes: bool,
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
    /// Say what would be removed (in all, for directories); write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print JSON (schema `offload-kit/prune/1`) instead of text.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// With --dry-run: print a GitHub-flavoured Markdown report instead of
    /// text (for a CI job summary).
    #[arg(long, requires = "dry_run")]
    markdown: bool,
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
    Ok(Selection { rules, ptx: o.ptx })
}

/// `--ptx`'s values, each read as its [`Ptx`].
fn ptx_parser() -> impl clap::builder::TypedValueParser<Value = Ptx> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(["newest", "all", "none"]).map(|s| match s.as_str() {
        "all" => Ptx::All,
        "none" => Ptx::None,
        _ => Ptx::Newest,
    })
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
        o.keep_files = self.keep_files;
        o.strict = self.strict;
        o.trust_bytes = self.trust_bytes;
        o.prune.allow_empty = self.allow_empty;
        o.prune.threads = self.threads;
        o.prune.no_shrink = self.no_shrink;
        o.prune.strip_signature = self.strip_signature;
        o.prune.max_uncompressed = self.max_uncompressed;
        o
    }

    /// The names of the paths in `entries` and of the outputs they go
    /// to whose bytes are not UTF-8 (for `--json`).
    fn raw_names(&self, entries: &[prune::TreeEntry]) -> super::io::RawNames {
        let mut names = super::io::RawNames::of(entries.iter().map(|e| e.path.as_path()));
        names.extend(self.output.iter().map(PathBuf::as_path));
        if let Some(dir) = &self.dir {
            let outputs: Vec<PathBuf> = entries
                .iter()
                .filter_map(|e| Some(dir.join(e.path.file_name()?)))
                .collect();
            names.extend(outputs.iter().map(PathBuf::as_path));
        }
        names
    }

    pub fn run(self) -> Result<std::process::ExitCode> {
        if self.output.is_some() && self.inputs.len() > 1 {
            bail!("-o takes one input; write several with -d DIR or --in-place");
        }
        if self.output.is_none() && self.dir.is_none() && !self.in_place && !self.dry_run {
            bail!("say where the pruned files go: -o OUT, -d DIR, --in-place or --dry-run");
        }
        let trees = prune::walked_dirs(&self.inputs);
        if let Some(dir) = trees.first()
            && !self.in_place
            && !self.dry_run
        {
            bail!(
                "'{}' is a directory: its files are pruned in place (--in-place) or looked at \
                 (--dry-run); -o and -d take files",
                crate::files::shown(dir)
            );
        }
        // -d DIR is made when missing, as extract -o makes its directory.
        if let Some(dir) = self.dir.as_ref().filter(|_| !self.dry_run) {
            std::fs::create_dir_all(dir).with_context(|| {
                format!("'{}': cannot create directory", crate::files::shown(dir))
            })?;
        }
        let sel = selection(&self)?;
        let opts = self.options();
        let entries = {
            let line = super::scan::Progress::new("pruned", !trees.is_empty());
            prune::prune_tree(&self.inputs, &sel, &opts, &mut |n, total| {
                line.done(n, total);
            })
        };
        let names = self.raw_names(&entries);
        let run = Run::of(entries, self.dry_run, self.in_place && self.keep_hard_links);
        for e in &run.errors {
            eprintln!("error: {}", printable(e));
        }
        // A package written under a name its installer refuses.
        if let (Some(out), [input]) = (&self.output, &self.inputs[..])
            && run.files.iter().any(|r| r.output.is_some())
            && let Some(w) = names::warning(input, out)
        {
            eprintln!("{}", printable(&w));
        }
        let mut out = super::io::Report::stdout();
        if self.markdown {
            out.write_all(crate::report::prune_markdown(&run, self.dry_run).as_bytes())?;
        } else if self.json {
            #[derive(Serialize)]
            struct Doc<'a> {
                schema: &'static str,
                dry_run: bool,
                files: &'a [PathReport],
                not_pruned: &'a [NotPruned],
                skipped: &'a [Left],
                #[serde(skip_serializing_if = "<[RecordLine]>::is_empty")]
                records: &'a [RecordLine],
                #[serde(skip_serializing_if = "<[Owner]>::is_empty")]
                dpkg_packages: &'a [Owner],
                #[serde(skip_serializing_if = "<[String]>::is_empty")]
                directories_removed: &'a [String],
                total: &'a Total,
            }
            let doc = Doc {
                schema: "offload-kit/prune/1",
                dry_run: self.dry_run,
                files: &run.files,
                not_pruned: &run.not_pruned,
                skipped: &run.skipped,
                records: &run.records,
                dpkg_packages: &run.owners,
                directories_removed: &run.directories_removed,
                total: &run.total,
            };
            super::io::write_json(&mut out, &doc, &names)?;
        } else {
            self.print_run(&mut out, &run, !trees.is_empty())?;
        }
        out.flush()?;
        Ok(std::process::ExitCode::from(run.exit_code()))
    }

    /// Prints the text report of `run` (its total when directories were
    /// `walked`).
    fn print_run(&self, out: &mut super::io::Report, run: &Run, walked: bool) -> Result<()> {
        for r in &run.files {
            print_text(out, r, self.dry_run, self.keep_hard_links)?;
        }
        for n in run.not_pruned.iter().filter(|n| n.refused && !n.named) {
            print_line(out, &format!("not pruned: {}", n.error))?;
        }
        for l in &run.skipped {
            print_line(out, &format!("{}: {}", l.path, l.text))?;
        }
        for r in &run.records {
            print_line(out, &r.text(self.dry_run))?;
        }
        for o in &run.owners {
            print_line(out, &o.text(self.dry_run))?;
        }
        for d in &run.directories_removed {
            let verb = if self.dry_run {
                "would be removed"
            } else {
                "removed"
            };
            print_line(out, &format!("{d}/: directory {verb}: the run emptied it"))?;
        }
        if walked {
            print_line(out, &run.total.text(self.dry_run))?;
        }
        Ok(())
    }
}

/// What was done to the file `r` reports, in a few words.
fn what_was_done(r: &PathReport, dry_run: bool) -> String {
    let verb = if dry_run { "would free" } else { "freed" };
    if r.removed.len() == 1 && r.removed[0].path == r.path && r.bytes_after == 0 {
        let removed = if dry_run {
            "would be removed"
        } else {
            "removed"
        };
        let why = r.removed[0]
            .why
            .as_deref()
            .unwrap_or("device code alone that the rules drop all of");
        return format!("{removed}: {why}, {verb} {} bytes", r.freed);
    }
    let mut parts = Vec::new();
    if r.containers_rewritten > 0 {
        parts.push(format!("{} container(s) rewritten", r.containers_rewritten));
    }
    if !r.removed.is_empty() {
        let removed = if dry_run {
            "would be removed"
        } else {
            "removed"
        };
        parts.push(format!("{} file(s) {removed}", r.removed.len()));
    }
    if parts.is_empty() {
        return match r.members_refused.len() {
            0 => "nothing to remove".to_string(),
            n => format!("nothing pruned: {n} file(s) in it refused, left as they were (below)"),
        };
    }
    let done = parts.join(", ");
    match r.package_bytes {
        None => format!("{done}, {verb} {} bytes", r.freed),
        Some(p) => format!(
            "{done}, {verb} {} bytes installed; {}",
            r.freed,
            package_line(p)
        ),
    }
}

/// What a package's own file lost or gained, in words.
fn package_line(p: PackageBytes) -> String {
    match p {
        PackageBytes::Unknown => {
            "the package's own size is known once written (compression decides it)".into()
        }
        PackageBytes::Freed(n) => format!("the package is {n} bytes smaller"),
        PackageBytes::Grew(n) => format!("the package grew by {n} bytes, compressed again"),
    }
}

/// The lines about the records of a package's files: a conda package's,
/// and each row found wrong and trusted (`--trust-bytes`).
fn print_records(out: &mut impl Write, r: &PathReport, dry_run: bool) -> Result<()> {
    if let Some(c) = &r.conda {
        print_line(out, &c.line(dry_run))?;
    }
    for w in &r.records_wrong {
        print_line(
            out,
            &format!("  record wrong, bytes trusted (--trust-bytes): {w}"),
        )?;
    }
    Ok(())
}

fn print_text(out: &mut impl Write, r: &PathReport, dry_run: bool, keep_links: bool) -> Result<()> {
    print_line(out, &format!("{}: {}", r.path, what_was_done(r, dry_run)))?;
    let removed = if dry_run {
        "would be removed"
    } else {
        "removed"
    };
    for f in r.removed.iter().filter(|f| f.path != r.path) {
        let why = f
            .why
            .as_deref()
            .map_or_else(String::new, |w| format!(": {w}"));
        print_line(
            out,
            &format!("  {removed}  {} ({} bytes){why}", f.path, f.bytes),
        )?;
    }
    print_records(out, r, dry_run)?;
    for line in r.images.iter().flat_map(|i| i.lines(dry_run)) {
        print_line(out, &line)?;
    }
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

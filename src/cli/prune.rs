//! `offload-kit prune`: keeps only the device images the GPUs named would
//! load, rewriting each container that loses entries where it lies; the
//! selection, the rewrite, the writing of each file and the walk of
//! directories are `crate::prune`'s ([`prune::prune_tree`], which runs
//! [`prune::prune_path`] on each file), the report and the total
//! `crate::report`'s; this prints them and picks the exit code.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, anyhow, bail};

use super::io::printable;
use crate::prune::summary::Run;
use crate::prune::{self, Destination, PathOptions, Ptx, Rules, Selection};
use crate::report::prune_text;
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
pub(super) fn ptx_parser() -> impl clap::builder::TypedValueParser<Value = Ptx> {
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
            prune_text::write_json(&mut out, &run, self.dry_run, &names)?;
        } else {
            let keep_links = self.keep_hard_links;
            prune_text::print_text(&mut out, &run, self.dry_run, keep_links, !trees.is_empty())?;
        }
        out.flush()?;
        Ok(std::process::ExitCode::from(run.exit_code()))
    }
}

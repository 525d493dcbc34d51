//! `offload-kit prune`: keeps only the device images the GPUs named would
//! load, rewriting each container that loses entries where it lies; the
//! selection and the rewrite are `crate::prune`'s.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;

use super::io::{Input, Output, print_line, printable};
use crate::container::ar;
use crate::layout::Piece;
use crate::package;
use crate::prune::output::Output as NewFile;
use crate::prune::{self, Ptx, Rules, Selection, Verdict};
use crate::scan::Image;
use crate::scan::rule::Rule;
use crate::scan::sort::arch_cmp;

mod wheel;

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
fatbins (entries kept as stored) and OffloadBinaries. Refused with an error, the file untouched: \
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
    /// Let a container lose every device image (a bundle keeps its host
    /// entry; a CUDA fatbin, which needs an entry, is left whole).
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

/// Images kept or dropped, per target and kind.
#[derive(Serialize, Clone)]
struct Group {
    target: String,
    kind: String,
    images: usize,
    bytes: u64,
    /// For kept images: the rule that keeps them, and how a device it
    /// names loads them.
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<String>,
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
    /// For a linked file rewritten in place rather than shrunk: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_shrunk: Option<String>,
    /// For a linked file shrunk: what became of its layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    shrunk: Option<prune::shrink::Shrunk>,
    /// Links the input had (with --in-place and more than one, the others
    /// keep the old file unless --keep-hard-links).
    hard_links: u64,
    freed: u64,
    kept: Vec<Group>,
    dropped: Vec<Group>,
}

impl FileReport {
    /// The report on `data` (the file `name`, with `meta`) before anything
    /// is pruned: nothing rewritten, nothing written yet.
    fn new(name: &str, data: &[u8], meta: &std::fs::Metadata) -> FileReport {
        FileReport {
            path: name.to_string(),
            output: None,
            containers_rewritten: 0,
            bytes_before: data.len() as u64,
            bytes_after: data.len() as u64,
            disk_before: meta.blocks() * 512,
            disk_after: None,
            not_shrunk: None,
            shrunk: None,
            hard_links: meta.nlink(),
            freed: 0,
            kept: Vec::new(),
            dropped: Vec::new(),
        }
    }
}

/// The images, one group per target, kind and reason (`why`, for kept
/// images).
fn groups<'a>(
    images: impl Iterator<Item = &'a Image>,
    why: impl Fn(&Image) -> Option<String>,
) -> Vec<Group> {
    merge(
        images
            .map(|i| Group {
                target: i.target_id.clone(),
                kind: i
                    .image_kind
                    .as_ref()
                    .map_or("unknown".to_string(), |k| k.to_string()),
                images: 1,
                bytes: i.size,
                why: why(i),
            })
            .collect(),
    )
}

/// Writes `output` (`data` pruned, `input` being its file) into the new
/// file `out` by position: ranges of the input copied file to file by the
/// kernel (`copy_file_range`, as `cp` does), built pieces written, and
/// nothing where zeros lie: the file is sized at the end, so they are
/// holes from the start.
fn write_at(
    input: &std::fs::File,
    data: &[u8],
    output: &NewFile,
    out: &std::fs::File,
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut w = 0u64;
    for p in &output.layout.pieces {
        match p {
            Piece::Bytes(b) => out.write_all_at(b, w)?,
            Piece::Zeros(_) => {}
            Piece::Image(k) => match output.spans[*k] {
                s if s.source == 0 => copy_range(input, s.offset as u64, out, w, s.len as u64)?,
                _ => out.write_all_at(output.span_bytes(*k, data).unwrap_or_default(), w)?,
            },
        }
        w = w.saturating_add(piece_len(output, p));
    }
    out.set_len(w)
}

/// Bytes a piece of `output` stands for.
fn piece_len(output: &NewFile, p: &Piece) -> u64 {
    match p {
        Piece::Bytes(b) => b.len() as u64,
        Piece::Zeros(n) => *n,
        Piece::Image(k) => output.spans[*k].len as u64,
    }
}

/// Copies `len` bytes of `input` from `from` to `out` at `to`, by the
/// kernel (`copy_file_range`: no copy through memory, and shared blocks
/// where the filesystem has them).
fn copy_range(
    input: &std::fs::File,
    from: u64,
    out: &std::fs::File,
    to: u64,
    len: u64,
) -> std::io::Result<()> {
    let (mut src, mut dst, end) = (from, to, from.saturating_add(len));
    while src < end {
        let want = usize::try_from(end - src)
            .unwrap_or(usize::MAX)
            .min(1 << 30);
        if rustix::fs::copy_file_range(input, Some(&mut src), out, Some(&mut dst), want)? == 0 {
            // The input shrank under us.
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        }
    }
    Ok(())
}

/// Punches the whole pages of each run of zeros in `output` out of `file`
/// (they read as zeros either way; a filesystem without holes keeps them).
fn punch(file: &std::fs::File, output: &NewFile) {
    let mut at = 0u64;
    for p in &output.layout.pieces {
        let n = piece_len(output, p);
        if let Piece::Zeros(_) = p {
            let start = at.next_multiple_of(4096);
            let end = (at + n) / 4096 * 4096;
            if end > start {
                let flags =
                    rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
                let _ = rustix::fs::fallocate(file, flags, start, end - start);
            }
        }
        at = at.saturating_add(n);
    }
}

/// One file's bytes pruned: what stays and goes, and the file to write.
#[derive(Default)]
struct Pruning {
    kept: Vec<Group>,
    dropped: Vec<Group>,
    /// Containers rewritten (sections removed count one each).
    rewritten: usize,
    /// For a linked file rewritten in place rather than shrunk: why.
    not_shrunk: Option<String>,
    /// For a linked file shrunk: what became of its layout.
    shrunk: Option<prune::shrink::Shrunk>,
    /// Bytes freed: zeroed in place, or cut out.
    freed: u64,
    /// The pruned file; `None` when nothing changes.
    output: Option<NewFile>,
}

impl Pruning {
    /// Scans `data` (the file `name`) and works out its pruned form: a
    /// static archive member by member, a relocatable object with its
    /// sections shrunk, a linked program or library rewritten where each
    /// container lies, anything else (a bare container) with the freed
    /// bytes cut out.
    fn of(sel: &Selection, name: &str, data: &[u8], opts: &prune::Options) -> Result<Pruning> {
        if ar::is_archive(data) {
            return Pruning::of_archive(sel, name, data, opts);
        }
        let f = prune::prune_file(data, sel, opts).map_err(|e| anyhow!("'{name}': {e}"))?;
        let groups = |kept: bool| {
            groups(
                f.report.images.iter().filter(|i| {
                    let v = f.verdicts[i.id];
                    v != Verdict::Always && v.stays() == kept
                }),
                |i| match kept {
                    true => sel.why(i).or_else(|| {
                        f.kept_whole
                            .contains(&i.container)
                            .then(|| prune::KEPT_WHOLE.to_string())
                    }),
                    false => None,
                },
            )
        };
        Ok(Pruning {
            kept: groups(true),
            dropped: groups(false),
            rewritten: f.rewritten,
            freed: f.freed,
            output: f.output,
            not_shrunk: f.not_shrunk,
            shrunk: f.shrunk,
        })
    }

    /// A static archive: each member pruned as a file of its own would be.
    fn of_archive(
        sel: &Selection,
        name: &str,
        data: &[u8],
        opts: &prune::Options,
    ) -> Result<Pruning> {
        if ar::is_thin(data) {
            bail!(
                "'{name}': a thin archive's members are files of their own: prune them \
                 (the archive follows their sizes when rebuilt with ar)"
            );
        }
        let mut p = Pruning::default();
        let output = prune::archive::prune(data, |member, bytes| -> Result<Option<NewFile>> {
            let m = Pruning::of(sel, &format!("{name}({member})"), bytes, opts)?;
            p.kept.extend(m.kept);
            p.dropped.extend(m.dropped);
            p.rewritten += m.rewritten;
            p.freed += m.freed;
            Ok(m.output)
        })?;
        p.kept = merge(std::mem::take(&mut p.kept));
        p.dropped = merge(std::mem::take(&mut p.dropped));
        p.output = output;
        Ok(p)
    }
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
    /// The library's options.
    fn options(&self) -> prune::Options {
        let mut o = prune::Options::default();
        o.allow_empty = self.allow_empty;
        o.threads = self.threads;
        o.no_shrink = self.no_shrink;
        o.max_uncompressed = self.max_uncompressed;
        o
    }

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
        if package::detect(data) == Some(package::Kind::Zip) {
            return self.wheel(sel, input, &meta, data);
        }
        if let Some(what) = prune::package_not_pruned(data) {
            bail!(
                "'{name}': it is {what}: prune does not rewrite such archives (unpack it, \
                 prune its files, pack it again)"
            );
        }
        if ar::is_thin(data) {
            return self.thin(sel, input, &meta, data);
        }
        let p = Pruning::of(sel, &name, data, &self.options())?;
        let mut rep = FileReport {
            containers_rewritten: p.rewritten,
            not_shrunk: p.not_shrunk,
            shrunk: p.shrunk,
            freed: p.freed,
            kept: p.kept,
            dropped: p.dropped,
            ..FileReport::new(&name, data, &meta)
        };
        let Some(dest) = self.destination(input)? else {
            return Ok(rep);
        };
        if p.output.is_none() && self.in_place {
            rep.disk_after = Some(rep.disk_before);
            return Ok(rep);
        }
        let pruned = p
            .output
            .unwrap_or_else(|| NewFile::unchanged(data.len() as u64));
        let cannot = || format!("'{}': cannot write", dest.display());
        let through = self.write_through(input, &meta)?;
        let mut out = Output::create(&dest).with_context(cannot)?;
        match (file.file(), out.temp_file()) {
            (Some(input), Some(f)) => write_at(input, data, &pruned, f).with_context(cannot)?,
            _ => {
                pruned.write_to(data, &mut out).with_context(cannot)?;
                if let Some(f) = out.temp_file() {
                    punch(f, &pruned);
                }
            }
        }
        self.finish(out, &meta, &dest, &mut rep, through)?;
        Ok(rep)
    }

    /// With --keep-hard-links, the input opened for writing when it has
    /// other links (the pruned file is copied into it once complete).
    fn write_through(
        &self,
        input: &Path,
        meta: &std::fs::Metadata,
    ) -> Result<Option<std::fs::File>> {
        if !(self.in_place && self.keep_hard_links && meta.nlink() > 1) {
            return Ok(None);
        }
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(input)
            .with_context(|| format!("'{}': cannot write", input.display()))?;
        Ok(Some(f))
    }

    /// Gives the output the input's metadata (all of it in place, the mode
    /// otherwise: a pruned program stays a program), renames it into
    /// place and notes its sizes.
    fn finish(
        &self,
        mut out: Output,
        meta: &std::fs::Metadata,
        dest: &Path,
        rep: &mut FileReport,
        through: Option<std::fs::File>,
    ) -> Result<()> {
        let cannot = || format!("'{}': cannot write", dest.display());
        if let Some(mut target) = through {
            // Every link is to see the pruned file: the whole of it, made
            // and synced in the temporary file, is copied over the file's
            // old contents. Only while that copy runs does the file hold
            // part of each (docs/prune.md); a failure before it leaves the
            // old file whole.
            let tmp = out
                .temp_file()
                .ok_or_else(|| anyhow!("{}: no temporary file", cannot()))?;
            tmp.sync_all().with_context(cannot)?;
            let len = tmp.metadata()?.len();
            super::io::copy_file_range_all(tmp, 0, len, &mut target).with_context(cannot)?;
            target.set_len(len).with_context(cannot)?;
            let times = std::fs::FileTimes::new()
                .set_accessed(meta.accessed()?)
                .set_modified(meta.modified()?);
            target.set_times(times)?;
            target.sync_all().with_context(cannot)?;
            drop(out);
        } else {
            if self.in_place {
                keep_metadata(&mut out, meta)?;
            } else if let Some(f) = out.temp_file() {
                f.set_permissions(meta.permissions())?;
            }
            out.commit().with_context(cannot)?;
        }
        let after = std::fs::metadata(dest)?;
        rep.output = Some(dest.to_string_lossy().into_owned());
        rep.bytes_after = after.len();
        rep.disk_after = Some(after.blocks() * 512);
        Ok(())
    }

    /// A thin archive: its members are pruned where they lie (with
    /// --in-place; every one worked out first, so that a refusal leaves all
    /// of them as they were), then the archive is given their new sizes.
    fn thin(
        &self,
        sel: &Selection,
        input: &Path,
        meta: &std::fs::Metadata,
        data: &[u8],
    ) -> Result<FileReport> {
        let name = input.to_string_lossy().into_owned();
        if !self.in_place && !self.dry_run {
            bail!(
                "'{name}': a thin archive's members are files of their own: --in-place prunes \
                 them where they lie (and the archive follows their sizes)"
            );
        }
        let members = prune::archive::thin_members(data).map_err(|e| anyhow!("'{name}': {e}"))?;
        let paths: Vec<PathBuf> = members
            .iter()
            .map(|m| ar::thin_member_path(input, m))
            .collect();
        for p in &paths {
            let pname = p.to_string_lossy();
            let f = Input::open(&pname).with_context(|| format!("'{pname}': cannot open"))?;
            Pruning::of(sel, &pname, f.bytes(), &self.options())?;
        }
        let mut rep = FileReport::new(&name, data, meta);
        let mut sizes = Vec::with_capacity(paths.len());
        for p in &paths {
            let r = self.one(sel, p)?;
            rep.containers_rewritten += r.containers_rewritten;
            rep.freed += r.freed;
            rep.kept.extend(r.kept);
            rep.dropped.extend(r.dropped);
            sizes.push(r.bytes_after);
        }
        rep.kept = merge(std::mem::take(&mut rep.kept));
        rep.dropped = merge(std::mem::take(&mut rep.dropped));
        if self.dry_run {
            return Ok(rep);
        }
        let new =
            prune::archive::resize_thin(data, &sizes).map_err(|e| anyhow!("'{name}': {e}"))?;
        let cannot = || format!("'{name}': cannot write");
        let mut out = Output::create(input).with_context(cannot)?;
        new.write_to(data, &mut out).with_context(cannot)?;
        self.finish(out, meta, input, &mut rep, self.write_through(input, meta)?)?;
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
                print_text(&mut out, r, self.dry_run, self.keep_hard_links)?;
            }
        }
        out.flush()?;
        Ok(std::process::ExitCode::from(if failed { 2 } else { 0 }))
    }
}

fn print_text(out: &mut impl Write, r: &FileReport, dry_run: bool, keep_links: bool) -> Result<()> {
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
    if let Some(s) = &r.shrunk {
        let seg = |p: prune::shrink::Segment| {
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
        print_line(out, &format!("  load segment {}", seg(s.segment)))?;
        for p in &s.segments {
            print_line(out, &format!("    becomes {}", seg(*p)))?;
        }
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

/// Groups merged: one row per target, kind and reason.
fn merge(gs: Vec<Group>) -> Vec<Group> {
    let mut m: BTreeMap<(String, String, Option<String>), Group> = BTreeMap::new();
    for g in gs {
        let e = m
            .entry((g.target.clone(), g.kind.clone(), g.why.clone()))
            .or_insert(Group {
                images: 0,
                bytes: 0,
                ..g.clone()
            });
        e.images += g.images;
        e.bytes += g.bytes;
    }
    let mut v: Vec<Group> = m.into_values().collect();
    v.sort_by(|a, b| {
        arch_cmp(&a.target, &b.target)
            .then_with(|| a.kind.cmp(&b.kind))
            .then_with(|| a.why.cmp(&b.why))
    });
    v
}

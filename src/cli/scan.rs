//! `offload-kit inspect | extract | check | size`: the scanners, over any
//! files and directory trees (walked in parallel, reported in sorted order).
//!
//! # `inspect --json` schema (version 1)
//!
//! ```text
//! {
//!   "schema": "offload-kit/inspect/1",
//!   "files": [{
//!     "path": string,              // as given, or joined below a directory given
//!     "size": number,              // file size in bytes
//!     "format": string,            // ELF32 ELF64 COFF PE Mach-O archive object
//!                                  // offload-binary bundle ccob cuda-fatbin data
//!     "scan": [string],            // "sections" and/or "raw": how images were found
//!     "error": string | null,      // the file could not be read (nothing else is set)
//!     "containers": [{
//!       "id": number,              // index in this list
//!       "kind": string,            // offload-binary bundle text-bundle object-bundle
//!                                  // ccob cuda-fatbin fatbin-wrapper
//!       "version": number | null,
//!       "parent": {"image": number} | {"container": number} | null,
//!       "member": string | null,   // archive member, "outer(inner)" when nested
//!       "section": string | null,
//!       "offset": number | null,   // file offset; null inside decompressed data and thin archive members
//!       "relative_offset": number, // offset in the parent's bytes, else in the
//!                                  // section, member or file
//!       "size": number,            // bytes it occupies
//!       "images": number,          // images it holds directly
//!       "compression": {           // ccob, compressed offload-binary; else null
//!         "method": string,        // zstd | zlib
//!         "compressed_size": number, "uncompressed_size": number,
//!         "stored_hash": string | null,  // CCOB: 0x-prefixed LE64 of the MD5
//!         "decompressed": bool,    // false: only the bundle header was read
//!         "hash_ok": bool | null   // with --verify
//!       } | null,
//!       "wrapper": {               // fatbin-wrapper only; else null
//!         "flavor": string,        // cuda | hip | hipk
//!         "magic": number, "version": number,
//!         "target": number | null,            // file offset its pointer resolves to
//!         "target_container": number | null   // the container there
//!       } | null
//!     }],
//!     "images": [{
//!       "id": number, "container": number, "index": number,
//!       "bundle_id": string | null,     // bundle entries
//!       "offload_kind": string,         // openmp cuda hip sycl host opencl none ...
//!       "image_kind": string | null,    // object bitcode cubin fatbinary ptx spirv
//!                                       // none unknown unknown-N ...; null: not read
//!       "triple": string,
//!       "arch": string,                 // processor: gfx90a, sm_80
//!       "target_id": string,            // with features: gfx90a:xnack+
//!       "features": [string],
//!       "strings": [{"key": string, "value": string}],  // other metadata
//!       "section": string | null, "member": string | null,
//!       "offset": number | null,        // file offset; null inside decompressed data and thin archive members
//!       "relative_offset": number,      // in its container
//!       "size": number,                 // bytes (what extract writes)
//!       "uncompressed_size": number | null,  // compressed CUDA fatbin entries
//!       "in_compressed": bool,
//!       "hash": string | null,          // "xxh3-128:<hex>" or "md5:<hex>" with --hash
//!       "nested": number | null         // first container found inside its bytes
//!     }],
//!     "problems": [{
//!       "offset": number | null, "section": string | null, "member": string | null,
//!       "container": number | null, "message": string
//!     }]
//!   }]
//! }
//! ```
//!
//! New fields may be added to objects; existing ones keep their meaning.
//! A change that breaks a consumer bumps the version in `schema`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::io::{Input, print_line, printable, safe_component, write_bytes};
use offload_kit::scan::{self, HashAlgo, Image, Mode, Options, Parent, Report};

/// Options shared by the four commands.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    /// Files to scan; directories are walked (regular files only).
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Ignore section headers and scan every byte for container magics.
    #[arg(long, conflicts_with = "sections_only")]
    raw: bool,
    /// Never fall back to a raw scan (files without section headers then
    /// yield only what starts at byte 0).
    #[arg(long)]
    sections_only: bool,
    /// Decompress every compressed bundle whole and check its stored hash
    /// (by default only the bundle header is decompressed).
    #[arg(long)]
    verify: bool,
    /// How deeply containers may nest.
    #[arg(long, default_value_t = 8, value_name = "N")]
    max_depth: u32,
    /// Most bytes decompression may produce per file (suffixes K, M, G).
    #[arg(long, default_value = "16G", value_name = "SIZE", value_parser = parse_size)]
    max_uncompressed: u64,
    /// Files scanned at once (default: the number of CPUs).
    #[arg(short, long, value_name = "N")]
    jobs: Option<usize>,
}

pub fn parse_size(s: &str) -> Result<u64, String> {
    let (num, mult) = match s.as_bytes().last() {
        Some(b'K' | b'k') => (&s[..s.len() - 1], 1u64 << 10),
        Some(b'M' | b'm') => (&s[..s.len() - 1], 1 << 20),
        Some(b'G' | b'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("'{s}' is not a size (a number, optionally with K, M or G)"))
}

impl Common {
    fn options(&self) -> Options {
        Options {
            mode: if self.raw {
                Mode::Raw
            } else if self.sections_only {
                Mode::Sections
            } else {
                Mode::Auto
            },
            max_depth: self.max_depth,
            max_uncompressed: self.max_uncompressed,
            verify: self.verify,
            hash: None,
            report_rejects: false,
        }
    }

    /// The input files, in a stable order: each argument in turn, a
    /// directory's files sorted by path.
    fn files(&self) -> Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for p in &self.paths {
            let meta = std::fs::metadata(p).with_context(|| format!("'{}'", p.display()))?;
            if meta.is_dir() {
                let mut found = Vec::new();
                walk(p, &mut found)?;
                found.sort();
                out.extend(found);
            } else {
                out.push(p.clone());
            }
        }
        Ok(out)
    }

    fn jobs(&self) -> usize {
        self.jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1)
    }
}

/// Regular files below `dir`. Symbolic links to files are followed; links
/// to directories are not (no loops).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let rd = std::fs::read_dir(dir).with_context(|| format!("'{}'", dir.display()))?;
    for e in rd {
        let e = e.with_context(|| format!("'{}'", dir.display()))?;
        let p = e.path();
        let ft = e.file_type()?;
        if ft.is_dir() {
            walk(&p, out)?;
        } else if ft.is_file() || (ft.is_symlink() && p.is_file()) {
            out.push(p);
        }
    }
    Ok(())
}

/// Runs `f` on every file, `jobs` at a time; the results come back in the
/// files' order.
fn par_map<T: Send>(
    files: &[PathBuf],
    jobs: usize,
    f: impl Fn(usize, &Path) -> T + Sync,
) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<T>>> = files.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..jobs.min(files.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = files.get(i) else { break };
                    let r = f(i, path);
                    *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    slots
        .into_iter()
        .filter_map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect()
}

/// A visitor that also reads thin archives' members from their files
/// (named relative to the archive's directory, as `ar` and linkers do).
struct ThinFiles<'v> {
    inner: &'v mut dyn scan::Visit,
    /// The file being scanned.
    archive: &'v Path,
}

impl<'v> ThinFiles<'v> {
    fn new(inner: &'v mut dyn scan::Visit, archive: &'v Path) -> ThinFiles<'v> {
        ThinFiles { inner, archive }
    }
}

impl scan::Visit for ThinFiles<'_> {
    fn wants(&mut self, image: &Image) -> bool {
        self.inner.wants(image)
    }

    fn image(&mut self, image: &Image, bytes: &[u8]) {
        self.inner.image(image, bytes);
    }

    fn thin_member(&mut self, name: &str) -> scan::ThinMember {
        let path = super::io::thin_member_path(self.archive, name);
        let same = |a: &Path, b: &Path| {
            std::fs::canonicalize(a).is_ok_and(|a| std::fs::canonicalize(b).is_ok_and(|b| a == b))
        };
        if same(&path, self.archive) {
            return Some(Err("it is the archive itself".into()));
        }
        Some(
            Input::open(&path.to_string_lossy())
                .map(Input::boxed)
                .map_err(|e| super::io::strerror(&e)),
        )
    }
}

/// One scanned file.
struct Scanned {
    path: String,
    size: u64,
    result: Result<Report, String>,
}

fn scan_file(path: &Path, opts: &Options, visit: &mut dyn scan::Visit) -> Scanned {
    let name = path.to_string_lossy().into_owned();
    match Input::open(&name) {
        Ok(input) => {
            let data = input.bytes();
            Scanned {
                path: name,
                size: data.len() as u64,
                result: Ok(scan::scan_with(
                    data,
                    opts,
                    &mut ThinFiles::new(visit, path),
                )),
            }
        }
        Err(e) => Scanned {
            path: name,
            size: 0,
            result: Err(format!("cannot open: {}", super::io::strerror(&e))),
        },
    }
}

// ---------------------------------------------------------------------------
// inspect

/// List every device image inside files: where it is, what it is, for whom.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    offload-kit inspect libtorch_hip.so\n  \
    offload-kit inspect --json --hash build/ > images.json\n  \
    offload-kit inspect --raw --verify core.dump\n\n\
    The --json schema is documented in the README (schema \"offload-kit/inspect/1\").")]
pub struct InspectOpts {
    #[command(flatten)]
    common: Common,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Hash every image: `--hash` (xxh3-128) or `--hash=md5`.
    #[arg(long, value_name = "ALGO", num_args = 0..=1, require_equals = true,
          default_missing_value = "xxh3-128", value_parser = ["xxh3-128", "md5"])]
    hash: Option<String>,
    /// Also report raw-scan candidates that turned out not to be containers.
    #[arg(long)]
    rejects: bool,
}

impl InspectOpts {
    pub fn run(self) -> Result<()> {
        let mut opts = self.common.options();
        opts.hash = self.hash.as_deref().map(|h| {
            if h == "md5" {
                HashAlgo::Md5
            } else {
                HashAlgo::Xxh3_128
            }
        });
        opts.report_rejects = self.rejects;
        let files = self.common.files()?;
        let scanned = par_map(&files, self.common.jobs(), |_, p| {
            scan_file(p, &opts, &mut scan::NoVisit)
        });
        let mut out = std::io::stdout().lock();
        let failed = scanned.iter().any(|s| s.result.is_err());
        if self.json {
            let doc = JsonDoc {
                schema: "offload-kit/inspect/1",
                files: scanned.iter().map(json_file).collect(),
            };
            serde_json::to_writer_pretty(&mut out, &doc)?;
            writeln!(out)?;
        } else {
            for s in &scanned {
                print_table(&mut out, s)?;
            }
        }
        if failed {
            bail!("some files could not be read");
        }
        Ok(())
    }
}

#[derive(Serialize)]
struct JsonDoc {
    schema: &'static str,
    files: Vec<JsonFile>,
}

#[derive(Serialize)]
struct JsonFile {
    path: String,
    size: u64,
    format: Option<&'static str>,
    scan: Vec<&'static str>,
    error: Option<String>,
    containers: Vec<JsonContainer>,
    images: Vec<JsonImage>,
    problems: Vec<JsonProblem>,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum JsonParent {
    Image(usize),
    Container(usize),
}

#[derive(Serialize)]
struct JsonCompression {
    method: String,
    compressed_size: u64,
    uncompressed_size: u64,
    stored_hash: Option<String>,
    decompressed: bool,
    hash_ok: Option<bool>,
}

#[derive(Serialize)]
struct JsonWrapper {
    flavor: &'static str,
    magic: u32,
    version: u32,
    target: Option<u64>,
    target_container: Option<usize>,
}

#[derive(Serialize)]
struct JsonContainer {
    id: usize,
    kind: &'static str,
    version: Option<u32>,
    parent: Option<JsonParent>,
    member: Option<String>,
    section: Option<String>,
    offset: Option<u64>,
    relative_offset: u64,
    size: u64,
    images: usize,
    compression: Option<JsonCompression>,
    wrapper: Option<JsonWrapper>,
}

#[derive(Serialize)]
struct JsonString {
    key: String,
    value: String,
}

#[derive(Serialize)]
struct JsonImage {
    id: usize,
    container: usize,
    index: usize,
    bundle_id: Option<String>,
    offload_kind: String,
    image_kind: Option<String>,
    triple: String,
    arch: String,
    target_id: String,
    features: Vec<String>,
    strings: Vec<JsonString>,
    section: Option<String>,
    member: Option<String>,
    offset: Option<u64>,
    relative_offset: u64,
    size: u64,
    uncompressed_size: Option<u64>,
    in_compressed: bool,
    hash: Option<String>,
    nested: Option<usize>,
}

#[derive(Serialize)]
struct JsonProblem {
    offset: Option<u64>,
    section: Option<String>,
    member: Option<String>,
    container: Option<usize>,
    message: String,
}

fn json_file(s: &Scanned) -> JsonFile {
    let r = match &s.result {
        Ok(r) => r,
        Err(e) => {
            return JsonFile {
                path: s.path.clone(),
                size: s.size,
                format: None,
                scan: Vec::new(),
                error: Some(e.clone()),
                containers: Vec::new(),
                images: Vec::new(),
                problems: Vec::new(),
            };
        }
    };
    let mut how = Vec::new();
    if r.used_sections {
        how.push("sections");
    }
    if r.used_raw_scan {
        how.push("raw");
    }
    JsonFile {
        path: s.path.clone(),
        size: s.size,
        format: Some(r.format),
        scan: how,
        error: None,
        containers: r
            .containers
            .iter()
            .map(|c| JsonContainer {
                id: c.id,
                kind: c.kind.name(),
                version: c.version,
                parent: c.parent.map(|p| match p {
                    Parent::Image(i) => JsonParent::Image(i),
                    Parent::Container(i) => JsonParent::Container(i),
                }),
                member: c.member.clone(),
                section: c.section.clone(),
                offset: c.offset,
                relative_offset: c.relative_offset,
                size: c.size,
                images: c.images,
                compression: c.compression.as_ref().map(|z| JsonCompression {
                    method: z.method.clone(),
                    compressed_size: z.compressed_size,
                    uncompressed_size: z.uncompressed_size,
                    stored_hash: z.stored_hash.clone(),
                    decompressed: z.decompressed,
                    hash_ok: z.hash_ok,
                }),
                wrapper: c.wrapper.as_ref().map(|w| JsonWrapper {
                    flavor: w.flavor,
                    magic: w.magic,
                    version: w.version,
                    target: w.target,
                    target_container: w.target_container,
                }),
            })
            .collect(),
        images: r
            .images
            .iter()
            .map(|i| JsonImage {
                id: i.id,
                container: i.container,
                index: i.index,
                bundle_id: i.bundle_id.clone(),
                offload_kind: i.offload_kind.clone(),
                image_kind: i.image_kind.clone(),
                triple: i.triple.clone(),
                arch: i.arch.clone(),
                target_id: i.target_id.clone(),
                features: i.features.clone(),
                strings: i
                    .strings
                    .iter()
                    .map(|(k, v)| JsonString {
                        key: k.clone(),
                        value: v.clone(),
                    })
                    .collect(),
                section: i.section.clone(),
                member: i.member.clone(),
                offset: i.offset,
                relative_offset: i.relative_offset,
                size: i.size,
                uncompressed_size: i.uncompressed_size,
                in_compressed: i.in_compressed,
                hash: i.hash.clone(),
                nested: i.nested,
            })
            .collect(),
        problems: r
            .problems
            .iter()
            .map(|p| JsonProblem {
                offset: p.offset,
                section: p.section.clone(),
                member: p.member.clone(),
                container: p.container,
                message: p.message.clone(),
            })
            .collect(),
    }
}

fn hex(o: Option<u64>) -> String {
    o.map_or_else(|| "-".into(), |o| format!("{o:#x}"))
}

fn dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

fn print_table(mut out: &mut impl Write, s: &Scanned) -> Result<()> {
    let r = match &s.result {
        Ok(r) => r,
        Err(e) => {
            print_line(&mut out, &format!("{}: error: {e}", s.path))?;
            return Ok(());
        }
    };
    let how = match (r.used_sections, r.used_raw_scan) {
        (true, true) => "section headers and raw scan",
        (true, false) => "section headers",
        (false, true) => "raw scan",
        (false, false) => "file header",
    };
    print_line(
        &mut out,
        &format!(
            "{}: {}, {} bytes, {}; {} container(s), {} image(s)",
            s.path,
            r.format,
            s.size,
            how,
            r.containers.len(),
            r.images.len()
        ),
    )?;
    // Column widths over this file's images.
    let w = |f: &dyn Fn(&Image) -> usize, min: usize| r.images.iter().map(f).fold(min, usize::max);
    let widths = [
        w(&|i| i.id.to_string().len(), 1),
        w(&|i| i.offload_kind.len(), 7),
        w(&|i| i.image_kind.as_deref().unwrap_or("-").len(), 5),
        w(&|i| dash(&i.triple).len(), 6),
        w(&|i| dash(&i.target_id).len(), 6),
        w(&|i| i.size.to_string().len(), 4),
    ];
    // Who is inside whom, found once (not by a pass over every container
    // for each image: quadratic with many).
    let mut tree = Tree::default();
    for (k, i) in r.images.iter().enumerate() {
        tree.images_in.entry(i.container).or_default().push(k);
    }
    for c in &r.containers {
        match c.parent {
            Some(Parent::Image(i)) => tree.in_image.entry(i).or_default().push(c.id),
            Some(Parent::Container(p)) => tree.in_container.entry(p).or_default().push(c.id),
            None => {}
        }
    }
    let mut printer = TablePrinter {
        r,
        out,
        widths,
        tree,
    };
    for c in r.containers.iter().filter(|c| c.parent.is_none()) {
        printer.container(c.id, 1)?;
    }
    for p in &r.problems {
        let mut where_ = String::new();
        if let Some(m) = &p.member {
            where_ += &format!(" [{m}]");
        }
        if let Some(sec) = &p.section {
            where_ += &format!(" {sec}");
        }
        if let Some(o) = p.offset {
            where_ += &format!(" @{o:#x}");
        }
        print_line(&mut out, &format!("  problem{where_}: {}", p.message))?;
    }
    Ok(())
}

/// The containment of a report's containers and images, by id.
#[derive(Default)]
struct Tree {
    /// Container id → indices of its images.
    images_in: HashMap<usize, Vec<usize>>,
    /// Image id → ids of the containers found in it.
    in_image: HashMap<usize, Vec<usize>>,
    /// Container id → ids of the containers directly inside it.
    in_container: HashMap<usize, Vec<usize>>,
}

struct TablePrinter<'a, W: Write> {
    r: &'a Report,
    out: &'a mut W,
    widths: [usize; 6],
    tree: Tree,
}

impl<W: Write> TablePrinter<'_, W> {
    fn container(&mut self, id: usize, depth: usize) -> Result<()> {
        let c = &self.r.containers[id];
        let pad = "  ".repeat(depth);
        let mut line = format!("{pad}[{}] {}", c.id, c.kind);
        if let Some(v) = c.version {
            line += &format!(" v{v}");
        }
        if let Some(m) = &c.member {
            line += &format!(" [{m}]");
        }
        if let Some(s) = &c.section {
            line += &format!(" {s}");
        }
        match c.offset {
            Some(o) => line += &format!(" @{o:#x}"),
            None => line += &format!(" +{:#x}", c.relative_offset),
        }
        line += &format!(", {} bytes", c.size);
        if let Some(z) = &c.compression {
            line += &format!(
                ", {} {} -> {} bytes",
                z.method, z.compressed_size, z.uncompressed_size
            );
            if let Some(h) = &z.stored_hash {
                line += &format!(", hash {h}");
            }
            match z.hash_ok {
                Some(true) => line += " (verified)",
                Some(false) => line += " (HASH MISMATCH)",
                None => {}
            }
        }
        if let Some(w) = &c.wrapper {
            line += &format!(", {} wrapper -> {}", w.flavor, hex(w.target));
            if let Some(t) = w.target_container {
                line += &format!(" [{t}]");
            }
        }
        print_line(&mut self.out, &line)?;
        let r = self.r;
        let images: Vec<&Image> = self
            .tree
            .images_in
            .get(&id)
            .map(|v| v.iter().map(|&k| &r.images[k]).collect())
            .unwrap_or_default();
        let [wi, wo, wk, wt, wa, ws] = self.widths;
        for i in images {
            let mut row = format!(
                "{pad}  {:>wi$}  {:<wo$}  {:<wk$}  {:<wt$}  {:<wa$}  {:>ws$}  {}",
                i.id,
                i.offload_kind,
                i.image_kind.as_deref().unwrap_or("-"),
                dash(&i.triple),
                dash(&i.target_id),
                i.size,
                hex(i.offset),
            );
            if let Some(h) = &i.hash {
                row += &format!("  {h}");
            }
            let other: Vec<String> = i.strings.iter().map(|(k, v)| format!("{k}={v}")).collect();
            if !other.is_empty() {
                row += &format!("  {}", other.join(","));
            }
            print_line(&mut self.out, row.trim_end())?;
            let nested = self.tree.in_image.get(&i.id).cloned().unwrap_or_default();
            for n in nested {
                self.container(n, depth + 2)?;
            }
        }
        let inside = self.tree.in_container.get(&id).cloned().unwrap_or_default();
        for n in inside {
            self.container(n, depth + 1)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Image selection, shared by extract and check

/// A comma-separated, repeatable list option, flattened.
fn list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether `want` names the image's architecture: the same processor, and
/// every feature `want` gives present with the same sign (`gfx90a` matches
/// `gfx90a:xnack+`; `gfx90a:xnack+` does not match `gfx90a`).
fn arch_matches(img: &Image, want: &str) -> bool {
    let mut parts = want.split(':');
    let proc_ = parts.next().unwrap_or_default();
    !img.arch.is_empty()
        && img.arch.eq_ignore_ascii_case(proc_)
        && parts.all(|f| img.features.iter().any(|g| g == f))
}

/// Whether `want`'s dash-separated components start the image's triple
/// (`amdgcn` and `amdgcn-amd-amdhsa` both match `amdgcn-amd-amdhsa`).
fn triple_matches(img: &Image, want: &str) -> bool {
    let have: Vec<&str> = img.triple.split('-').collect();
    let want: Vec<&str> = want.trim_end_matches('-').split('-').collect();
    want.len() <= have.len() && want.iter().zip(&have).all(|(a, b)| a == b)
}

/// Whether `want` is the image's offload kind or image kind.
fn kind_matches(img: &Image, want: &str) -> bool {
    let want = if want == "hipv4" { "hip" } else { want };
    img.offload_kind == want || img.image_kind.as_deref() == Some(want)
}

#[derive(Debug, Clone, Default)]
struct Filter {
    triples: Vec<String>,
    archs: Vec<String>,
    kinds: Vec<String>,
}

impl Filter {
    fn matches(&self, img: &Image) -> bool {
        (self.triples.is_empty() || self.triples.iter().any(|t| triple_matches(img, t)))
            && (self.archs.is_empty() || self.archs.iter().any(|a| arch_matches(img, a)))
            && (self.kinds.is_empty() || self.kinds.iter().any(|k| kind_matches(img, k)))
    }
}

// ---------------------------------------------------------------------------
// extract

/// Write device images to files in a directory.
#[derive(clap::Args)]
#[command(
    after_help = "Each image goes to DIR/<input>.<image id>.<label>.<ext>: <input> is the\n\
input's file name (its path, with / as _, when several inputs are given), <image id> the\n\
id `inspect` shows, <label> the bundle-entry ID or <offload kind>-<triple>-<target id>, and\n\
<ext> comes from the image kind (o, bc, cubin, ptx, fatbin, spv; else bin). Characters other\n\
than letters, digits and ._+- become _, so names taken from the file cannot leave DIR.\n\
Images inside compressed bundles are decompressed to be written."
)]
pub struct ExtractOpts {
    #[command(flatten)]
    common: Common,
    /// Directory to write into (created if missing).
    #[arg(short, long = "output-dir", value_name = "DIR")]
    output_dir: PathBuf,
    /// Only images for these triples (comma-separated; a prefix of the
    /// triple's components matches).
    #[arg(long, value_name = "T")]
    triple: Vec<String>,
    /// Only images for these architectures (`gfx90a` also matches
    /// `gfx90a:xnack+`).
    #[arg(long, value_name = "A")]
    arch: Vec<String>,
    /// Only images of these offload kinds (openmp, hip, cuda, host, …) or
    /// image kinds (object, bitcode, cubin, ptx, …).
    #[arg(long, value_name = "K")]
    kind: Vec<String>,
}

fn extension(kind: Option<&str>) -> &'static str {
    match kind {
        Some("object") => "o",
        Some("bitcode") => "bc",
        Some("cubin") => "cubin",
        Some("ptx") => "ptx",
        Some("fatbinary") => "fatbin",
        Some("spirv") => "spv",
        Some("offload-binary") => "offload",
        Some("bundle") => "bundle",
        Some("ccob") => "ccob",
        Some("archive") => "a",
        _ => "bin",
    }
}

/// The label naming an input in output file names.
fn input_label(path: &Path, several: bool) -> String {
    let s = if several {
        let s = path.to_string_lossy();
        let s = s.trim_start_matches("./").trim_start_matches('/');
        s.replace('/', "_")
    } else {
        path.file_name()
            .map_or_else(|| "input".into(), |n| n.to_string_lossy().into_owned())
    };
    safe_component(&s, 120)
}

/// The file name of an image.
fn image_file_name(label: &str, img: &Image) -> String {
    let what = match &img.bundle_id {
        Some(id) => id.clone(),
        None => format!("{}-{}-{}", img.offload_kind, img.triple, img.target_id),
    };
    format!(
        "{label}.{}.{}.{}",
        img.id,
        safe_component(&what, 100),
        extension(img.image_kind.as_deref())
    )
}

struct Extractor<'a> {
    filter: &'a Filter,
    dir: &'a Path,
    label: String,
    input: &'a Input,
    written: Vec<String>,
    errors: Vec<String>,
}

impl scan::Visit for Extractor<'_> {
    fn wants(&mut self, image: &Image) -> bool {
        self.filter.matches(image)
    }

    fn image(&mut self, image: &Image, bytes: &[u8]) {
        let path = self.dir.join(image_file_name(&self.label, image));
        let shown = path.to_string_lossy().into_owned();
        match write_bytes(&shown, self.input, bytes) {
            Ok(()) => self.written.push(shown),
            Err(e) => self.errors.push(format!(
                "'{shown}': cannot write: {}",
                super::io::strerror(&e)
            )),
        }
    }
}

impl ExtractOpts {
    pub fn run(self) -> Result<()> {
        let filter = Filter {
            triples: list(&self.triple),
            archs: list(&self.arch),
            kinds: list(&self.kind),
        };
        let opts = self.common.options();
        let files = self.common.files()?;
        std::fs::create_dir_all(&self.output_dir)
            .with_context(|| format!("'{}': cannot create directory", self.output_dir.display()))?;
        let several = files.len() > 1;
        let labels: Vec<String> = files.iter().map(|f| input_label(f, several)).collect();
        let mut seen = HashSet::new();
        if let Some(dup) = labels.iter().find(|l| !seen.insert(*l)) {
            bail!("two inputs would write files named '{dup}.*'; extract them separately");
        }
        let results = par_map(&files, self.common.jobs(), |i, p| {
            let name = p.to_string_lossy().into_owned();
            let input = match Input::open(&name) {
                Ok(i) => i,
                Err(e) => {
                    return (
                        Vec::new(),
                        vec![format!(
                            "'{name}': cannot open: {}",
                            super::io::strerror(&e)
                        )],
                        Vec::new(),
                    );
                }
            };
            let mut ex = Extractor {
                filter: &filter,
                dir: &self.output_dir,
                label: labels[i].clone(),
                input: &input,
                written: Vec::new(),
                errors: Vec::new(),
            };
            let report = scan::scan_with(input.bytes(), &opts, &mut ThinFiles::new(&mut ex, p));
            let problems = report
                .problems
                .iter()
                .map(|p| format!("'{name}': warning: {}", p.message))
                .collect();
            (ex.written, ex.errors, problems)
        });
        let mut out = std::io::stdout().lock();
        let mut failed = false;
        for (written, errors, problems) in results {
            for w in written {
                print_line(&mut out, &w)?;
            }
            for p in problems {
                eprintln!("{}", printable(&p));
            }
            for e in errors {
                eprintln!("error: {}", printable(&e));
                failed = true;
            }
        }
        if failed {
            bail!("some images could not be extracted");
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// check

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

/// Device images of a report: not host entries, not containers of others.
fn device_images(r: &Report) -> impl Iterator<Item = &Image> {
    r.images
        .iter()
        .filter(|i| i.offload_kind != "host" && !(i.size == 0 && i.arch.is_empty()))
}

impl CheckOpts {
    pub fn run(self) -> Result<std::process::ExitCode> {
        let req_arch = list(&self.require_arch);
        let forbid_arch = list(&self.forbid_arch);
        let req_kind = list(&self.require_kind);
        let forbid_kind = list(&self.forbid_kind);
        if req_arch.is_empty()
            && forbid_arch.is_empty()
            && req_kind.is_empty()
            && forbid_kind.is_empty()
        {
            bail!(
                "nothing to check: give --require-arch, --forbid-arch, --require-kind or --forbid-kind"
            );
        }
        let opts = self.common.options();
        let files = self.common.files()?;
        let scanned = par_map(&files, self.common.jobs(), |_, p| {
            scan_file(p, &opts, &mut scan::NoVisit)
        });
        let mut out = std::io::stdout().lock();
        let mut failures = 0usize;
        let mut any_device = false;
        let mut all_archs: Vec<&Image> = Vec::new();
        for s in &scanned {
            let r = match &s.result {
                Ok(r) => r,
                Err(e) => {
                    print_line(&mut out, &format!("FAIL {}: {e}", s.path))?;
                    failures += 1;
                    continue;
                }
            };
            let imgs: Vec<&Image> = device_images(r).collect();
            let mut why = Vec::new();
            for a in &forbid_arch {
                let ids: Vec<String> = imgs
                    .iter()
                    .filter(|i| arch_matches(i, a))
                    .map(|i| i.id.to_string())
                    .collect();
                if !ids.is_empty() {
                    why.push(format!("forbidden arch {a} (image {})", ids.join(",")));
                }
            }
            for k in &forbid_kind {
                let ids: Vec<String> = imgs
                    .iter()
                    .filter(|i| kind_matches(i, k))
                    .map(|i| i.id.to_string())
                    .collect();
                if !ids.is_empty() {
                    why.push(format!("forbidden kind {k} (image {})", ids.join(",")));
                }
            }
            if self.strict {
                for p in &r.problems {
                    why.push(format!("problem: {}", p.message));
                }
            }
            if !imgs.is_empty() {
                any_device = true;
                if !self.any {
                    let missing_a: Vec<&str> = req_arch
                        .iter()
                        .filter(|a| !imgs.iter().any(|i| arch_matches(i, a)))
                        .map(String::as_str)
                        .collect();
                    if !missing_a.is_empty() {
                        why.push(format!("missing arch {}", missing_a.join(",")));
                    }
                    let missing_k: Vec<&str> = req_kind
                        .iter()
                        .filter(|k| !imgs.iter().any(|i| kind_matches(i, k)))
                        .map(String::as_str)
                        .collect();
                    if !missing_k.is_empty() {
                        why.push(format!("missing kind {}", missing_k.join(",")));
                    }
                }
            }
            all_archs.extend(imgs.iter().copied());
            let mut present: Vec<&str> = imgs
                .iter()
                .filter(|i| !i.target_id.is_empty())
                .map(|i| i.target_id.as_str())
                .collect();
            present.sort_unstable();
            present.dedup();
            if why.is_empty() {
                if !self.quiet {
                    if imgs.is_empty() {
                        print_line(&mut out, &format!("ok   {}: no device images", s.path))?;
                    } else {
                        print_line(&mut out, &format!("ok   {}: {}", s.path, present.join(" ")))?;
                    }
                }
            } else {
                failures += 1;
                print_line(
                    &mut out,
                    &format!(
                        "FAIL {}: {} (has: {})",
                        s.path,
                        why.join("; "),
                        if present.is_empty() {
                            "-".into()
                        } else {
                            present.join(" ")
                        }
                    ),
                )?;
            }
        }
        if (!req_arch.is_empty() || !req_kind.is_empty()) && !any_device {
            failures += 1;
            print_line(&mut out, "FAIL: no input carries device images")?;
        }
        if self.any {
            let missing_a: Vec<&str> = req_arch
                .iter()
                .filter(|a| !all_archs.iter().any(|i| arch_matches(i, a)))
                .map(String::as_str)
                .collect();
            let missing_k: Vec<&str> = req_kind
                .iter()
                .filter(|k| !all_archs.iter().any(|i| kind_matches(i, k)))
                .map(String::as_str)
                .collect();
            if !missing_a.is_empty() || !missing_k.is_empty() {
                failures += 1;
                let mut why = Vec::new();
                if !missing_a.is_empty() {
                    why.push(format!("missing arch {}", missing_a.join(",")));
                }
                if !missing_k.is_empty() {
                    why.push(format!("missing kind {}", missing_k.join(",")));
                }
                print_line(&mut out, &format!("FAIL (all inputs): {}", why.join("; ")))?;
            }
        }
        if failures > 0 {
            print_line(&mut out, &format!("check failed: {failures} failure(s)"))?;
            return Ok(std::process::ExitCode::FAILURE);
        }
        Ok(std::process::ExitCode::SUCCESS)
    }
}

// ---------------------------------------------------------------------------
// size

/// Bytes of device code per architecture and per kind.
#[derive(clap::Args)]
#[command(
    after_help = "Only innermost images count (an OffloadBinary image holding a fatbin is\n\
counted through the fatbin's entries). `bytes` is the images' size; `stored` what they take\n\
in the file: for images inside a compressed bundle, its compressed size shared out in\n\
proportion to their sizes (an estimate: compression is not per image)."
)]
pub struct SizeOpts {
    #[command(flatten)]
    common: Common,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize, Default, Clone)]
struct Tally {
    images: u64,
    bytes: u64,
    stored: u64,
}

impl Tally {
    fn add(&mut self, bytes: u64, stored: u64) {
        self.images += 1;
        self.bytes += bytes;
        self.stored += stored;
    }
}

#[derive(Serialize, Default)]
struct SizeReport {
    path: String,
    file_size: u64,
    total: Tally,
    by_target: BTreeMap<String, Tally>,
    by_kind: BTreeMap<String, Tally>,
}

/// What an image takes in the file: its share of the nearest compressed
/// container around it, else its size.
fn stored_size(r: &Report, img: &Image) -> u64 {
    let mut c = Some(img.container);
    while let Some(id) = c {
        let cont = &r.containers[id];
        if let Some(z) = &cont.compression
            && z.uncompressed_size > 0
        {
            let share = u128::from(img.size) * u128::from(z.compressed_size)
                / u128::from(z.uncompressed_size);
            return u64::try_from(share).unwrap_or(u64::MAX);
        }
        c = match cont.parent {
            Some(Parent::Container(p)) => Some(p),
            Some(Parent::Image(i)) => Some(r.images[i].container),
            None => None,
        };
    }
    img.size
}

fn size_report(s: &Scanned) -> Option<SizeReport> {
    let r = s.result.as_ref().ok()?;
    let mut rep = SizeReport {
        path: s.path.clone(),
        file_size: s.size,
        ..SizeReport::default()
    };
    for img in r.images.iter().filter(|i| i.is_leaf()) {
        let stored = stored_size(r, img);
        let target = if img.offload_kind == "host" {
            format!("host {}", dash(&img.triple))
        } else {
            format!(
                "{} {} {}",
                img.offload_kind,
                dash(&img.triple),
                dash(&img.target_id)
            )
        };
        rep.total.add(img.size, stored);
        rep.by_target
            .entry(target)
            .or_default()
            .add(img.size, stored);
        rep.by_kind
            .entry(img.image_kind.clone().unwrap_or_else(|| "-".into()))
            .or_default()
            .add(img.size, stored);
    }
    Some(rep)
}

impl SizeOpts {
    pub fn run(self) -> Result<()> {
        let opts = self.common.options();
        let files = self.common.files()?;
        let scanned = par_map(&files, self.common.jobs(), |_, p| {
            scan_file(p, &opts, &mut scan::NoVisit)
        });
        let mut reports: Vec<SizeReport> = Vec::new();
        let mut failed = false;
        for s in &scanned {
            match size_report(s) {
                Some(r) => reports.push(r),
                None => {
                    failed = true;
                    if let Err(e) = &s.result {
                        eprintln!("{}", printable(&format!("error: '{}': {e}", s.path)));
                    }
                }
            }
        }
        let mut all = SizeReport {
            path: "(all inputs)".into(),
            ..SizeReport::default()
        };
        for r in &reports {
            all.file_size += r.file_size;
            for (k, t) in &r.by_target {
                let e = all.by_target.entry(k.clone()).or_default();
                e.images += t.images;
                e.bytes += t.bytes;
                e.stored += t.stored;
            }
            for (k, t) in &r.by_kind {
                let e = all.by_kind.entry(k.clone()).or_default();
                e.images += t.images;
                e.bytes += t.bytes;
                e.stored += t.stored;
            }
            all.total.images += r.total.images;
            all.total.bytes += r.total.bytes;
            all.total.stored += r.total.stored;
        }
        let several = reports.len() > 1;
        let mut out = std::io::stdout().lock();
        if self.json {
            #[derive(Serialize)]
            struct Doc<'a> {
                schema: &'static str,
                files: &'a [SizeReport],
                total: Option<&'a SizeReport>,
            }
            serde_json::to_writer_pretty(
                &mut out,
                &Doc {
                    schema: "offload-kit/size/1",
                    files: &reports,
                    total: several.then_some(&all),
                },
            )?;
            writeln!(out)?;
        } else {
            for r in &reports {
                print_size(&mut out, r)?;
            }
            if several {
                print_size(&mut out, &all)?;
            }
        }
        if failed {
            bail!("some files could not be read");
        }
        Ok(())
    }
}

fn print_size(mut out: &mut impl Write, r: &SizeReport) -> Result<()> {
    let pct = if r.file_size > 0 {
        r.total.stored as f64 * 100.0 / r.file_size as f64
    } else {
        0.0
    };
    print_line(
        &mut out,
        &format!(
            "{}: {} bytes; device code {} bytes in {} image(s), {} stored ({pct:.1}% of the file)",
            r.path, r.file_size, r.total.bytes, r.total.images, r.total.stored
        ),
    )?;
    let w = r
        .by_target
        .keys()
        .chain(r.by_kind.keys())
        .map(String::len)
        .fold(6, usize::max);
    print_line(
        &mut out,
        &format!(
            "  {:<w$}  {:>6}  {:>14}  {:>14}",
            "target", "images", "bytes", "stored"
        ),
    )?;
    for (k, t) in &r.by_target {
        print_line(
            &mut out,
            &format!(
                "  {k:<w$}  {:>6}  {:>14}  {:>14}",
                t.images, t.bytes, t.stored
            ),
        )?;
    }
    print_line(
        &mut out,
        &format!(
            "  {:<w$}  {:>6}  {:>14}  {:>14}",
            "kind", "images", "bytes", "stored"
        ),
    )?;
    for (k, t) in &r.by_kind {
        print_line(
            &mut out,
            &format!(
                "  {k:<w$}  {:>6}  {:>14}  {:>14}",
                t.images, t.bytes, t.stored
            ),
        )?;
    }
    Ok(())
}

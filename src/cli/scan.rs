//! What the scanner commands (`inspect`, `extract`, `check`, `size`; one
//! file each) share: the common options, the input files (directories
//! walked, files scanned in parallel, results in the files' order) and
//! thin archives' member files.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};

use super::io::Input;
use offload_kit::scan::{self, Image, Mode, Options, Report};

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
    pub(super) fn options(&self) -> Options {
        let mut opts = Options::default();
        opts.mode = if self.raw {
            Mode::Raw
        } else if self.sections_only {
            Mode::Sections
        } else {
            Mode::Auto
        };
        opts.max_depth = self.max_depth;
        opts.max_uncompressed = self.max_uncompressed;
        opts.verify = self.verify;
        opts
    }

    /// The input files, in a stable order: each argument in turn, a
    /// directory's files sorted by path.
    pub(super) fn files(&self) -> Result<Vec<PathBuf>> {
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

    pub(super) fn jobs(&self) -> usize {
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
pub(super) fn par_map<T: Send>(
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
pub(super) struct ThinFiles<'v> {
    inner: &'v mut dyn scan::Visit,
    /// The file being scanned.
    archive: &'v Path,
}

impl<'v> ThinFiles<'v> {
    pub(super) fn new(inner: &'v mut dyn scan::Visit, archive: &'v Path) -> ThinFiles<'v> {
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
pub(super) struct Scanned {
    /// The path as given or found.
    pub(super) path: String,
    /// The file's size.
    pub(super) size: u64,
    /// What was found, or why the file could not be read.
    pub(super) result: Result<Report, String>,
}

pub(super) fn scan_file(path: &Path, opts: &Options, visit: &mut dyn scan::Visit) -> Scanned {
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

/// A comma-separated, repeatable list option, flattened.
pub(super) fn list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect()
}

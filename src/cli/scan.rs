//! What the scanner commands (`inspect`, `extract`, `check`, `size`; one
//! file each) share: the common options, the progress line, and the
//! messages and exit codes of inputs that could not be read. The inputs
//! themselves (directories walked, packages opened, files scanned in
//! parallel) are the library's `inputs`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::inputs;
pub(super) use crate::inputs::{BY_SIZE, Kinds, Scanned, Source};
use crate::kernels;
pub(super) use crate::report::quiet_dirs;
use crate::scan::{self, Mode, Options};

/// Options shared by the four commands.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    // What to scan: the help lists the packages read from the table the
    // readers tell them by (`paths_help`).
    #[arg(required = true, value_name = "PATH", help = paths_help())]
    paths: Vec<PathBuf>,
    /// Follow symbolic links met walking a directory (by default they are
    /// skipped). Either way a file reached twice (through a link, or a hard
    /// link: the same device and inode) is scanned once.
    #[arg(long)]
    follow: bool,
    /// Ignore section headers and scan every byte for container magics.
    #[arg(long, conflicts_with = "sections_only")]
    raw: bool,
    /// Never fall back to a raw scan (files without section headers then
    /// yield only what starts at byte 0).
    #[arg(long)]
    sections_only: bool,
    /// Decode every compressed thing to its end (compressed bundles,
    /// compressed OffloadBinaries, LZ4 and zstd CUDA fatbin entries) and
    /// check every stored hash; whatever fails is damaged data (by default
    /// only what a listing needs is decoded, such as a compressed bundle's
    /// header). `extract` and `check` always do this.
    #[arg(long)]
    verify: bool,
    /// How deeply containers may nest.
    #[arg(long, default_value_t = 8, value_name = "N")]
    max_depth: u32,
    /// Most bytes all decompression of one file may produce together, at
    /// every depth (suffixes K, M, G; default: 1024 times the file's size,
    /// at least 128M and at most 16G). Past it the file is an error.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_uncompressed: Option<u64>,
    /// Most images one file may hold, at every depth together. Past it the
    /// file is an error.
    #[arg(long, default_value_t = scan::DEFAULT_MAX_IMAGES, value_name = "N")]
    max_images: usize,
    /// Most containers one file may hold, at every depth together. Past it
    /// the file is an error.
    #[arg(long, default_value_t = scan::DEFAULT_MAX_CONTAINERS, value_name = "N")]
    max_containers: usize,
    /// Most kernels and symbols the kernel listings of all inputs may hold
    /// together (--kernels, --require-kernel, --forbid-kernel); past it
    /// nothing is listed and every input is an error. About 400 bytes of
    /// memory each.
    #[arg(long, value_name = "N", default_value_t = kernels::DEFAULT_MAX_LISTED)]
    max_kernels: u64,
    /// Exit 0 although some input holds damaged data (it is still
    /// reported; `check` then judges what could be read).
    #[arg(long)]
    pub(super) allow_corrupt: bool,
    /// Threads: files scanned at once, and the compressed CUDA fatbin
    /// entries of one file decoded at once (default: the number of CPUs).
    #[arg(short, long, value_name = "N")]
    jobs: Option<usize>,
}

/// Why an option's (or an environment variable's) value is not one; clap
/// prints it after its own "invalid value" line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadValue {
    /// Not a size: a number, optionally with K, M or G.
    Size(String),
    /// Not a decimal number of threads.
    Threads(String),
    /// No threads (`0`).
    NoThreads,
    /// The environment variable named holds a bad value.
    Variable(&'static str, Box<BadValue>),
    /// The environment variable named cannot be read (not Unicode).
    Unreadable(&'static str, std::env::VarError),
}

impl std::fmt::Display for BadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadValue::Size(s) => {
                write!(
                    f,
                    "'{s}' is not a size (a number, optionally with K, M or G)"
                )
            }
            BadValue::Threads(s) => write!(f, "'{s}' is not a number of threads"),
            BadValue::NoThreads => f.write_str("at least 1 thread is needed"),
            BadValue::Variable(name, e) => write!(f, "{name}: {e}"),
            BadValue::Unreadable(name, e) => write!(f, "{name}: {e}"),
        }
    }
}

impl std::error::Error for BadValue {}

pub fn parse_size(s: &str) -> Result<u64, BadValue> {
    let (num, mult) = match s.as_bytes().last() {
        Some(b'K' | b'k') => (&s[..s.len() - 1], 1u64 << 10),
        Some(b'M' | b'm') => (&s[..s.len() - 1], 1 << 20),
        Some(b'G' | b'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| BadValue::Size(s.to_string()))
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
        opts.max_uncompressed = self.max_uncompressed.unwrap_or(BY_SIZE);
        opts.max_images = self.max_images;
        opts.max_containers = self.max_containers;
        opts.verify = self.verify;
        opts
    }

    /// The inputs, in a stable order: each path in turn, a directory's
    /// files sorted by path (see [`inputs::sources`]).
    pub(super) fn files(&self) -> Result<Vec<Source>> {
        inputs::sources(&self.paths, self.follow).map_err(anyhow::Error::msg)
    }

    /// The paths given, in order.
    pub(super) fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// [`Common::files`] of `path` alone (`diff` walks each side apart).
    pub(super) fn files_of(&self, path: &Path) -> Result<Vec<Source>> {
        Common {
            paths: vec![path.to_path_buf()],
            ..self.clone()
        }
        .files()
    }

    /// The command's one allowance of kernels and symbols listed.
    pub(super) fn allowance(&self) -> kernels::Allowance {
        kernels::Allowance::new(self.max_kernels)
    }

    pub(super) fn jobs(&self) -> usize {
        self.jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1)
    }
}

/// The help of the paths the scanners read: the package formats come
/// from the table their readers tell them by ([`crate::package::formats`]).
fn paths_help() -> String {
    format!(
        "What to scan: files (ELF, COFF and Mach-O executables, shared libraries and objects; \
         static and thin archives; bare bundles, binary or text, CCOBs, OffloadBinaries and \
         CUDA fatbins; files that are one device image: cubins, code objects, PTX, SPIR-V, \
         GPU bitcode; any other file, such as a core dump, is raw-scanned), directories \
         (walked; an OCI image layout is read as its images), packages, recognised by their \
         contents ({}; docker save archives), and `-` for standard input. A path named here \
         is always read, even through a symbolic link.",
        crate::package::formats()
    )
}

/// `scanned N of M files` (or another verb), kept on standard error while
/// several files are worked on when it is a terminal (in a pipe or a log
/// nothing is printed), redrawn at most every 100 ms and for the last
/// file, and erased when dropped.
pub(super) struct Progress {
    verb: &'static str,
    shown: bool,
    drawn: Mutex<Option<Instant>>,
}

impl Progress {
    /// A progress line saying `verb N of M files`, shown when `wanted`
    /// and standard error is a terminal.
    pub(super) fn new(verb: &'static str, wanted: bool) -> Progress {
        use std::io::IsTerminal;
        Progress {
            verb,
            shown: wanted && std::io::stderr().is_terminal(),
            drawn: Mutex::new(None),
        }
    }

    /// `n` files of `total` are done.
    pub(super) fn done(&self, n: usize, total: usize) {
        if !self.shown {
            return;
        }
        let mut drawn = self.drawn.lock().unwrap_or_else(PoisonError::into_inner);
        if n < total && drawn.is_some_and(|t| t.elapsed() < Duration::from_millis(100)) {
            return;
        }
        *drawn = Some(Instant::now());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{} {n} of {total} files", self.verb);
        let _ = err.flush();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

/// Runs `f` on `total` files with the progress line on a terminal: `f`
/// hands the callback it is given to the library's work, which calls it
/// as each file is done.
pub(super) fn with_progress<T>(total: usize, f: impl FnOnce(&(dyn Fn(usize) + Sync)) -> T) -> T {
    let p = Progress::new("scanned", total > 1);
    p.done(0, total);
    f(&|n| p.done(n, total))
}

/// [`inputs::scan_files`], with the progress line on a terminal.
pub(super) fn scan_files(
    files: &[Source],
    jobs: usize,
    opts: &Options,
    visit: impl Fn() -> Box<dyn scan::Visit> + Sync,
) -> Vec<Scanned> {
    with_progress(files.len(), |done| {
        inputs::scan_files(files, jobs, opts, done, visit)
    })
}

/// [`inputs::scan_files_kernels`], with the progress line on a terminal.
pub(super) fn scan_files_kernels(
    files: &[Source],
    jobs: usize,
    opts: &Options,
    allowance: &kernels::Allowance,
) -> Vec<Scanned> {
    with_progress(files.len(), |done| {
        inputs::scan_files_kernels(files, jobs, opts, allowance, done)
    })
}

/// Prints a line on standard error for each image whose kernels could not
/// be read (it is damaged); whether there was one.
pub(super) fn kernel_errors<'a>(scanned: impl IntoIterator<Item = &'a Scanned>) -> bool {
    let mut any = false;
    for s in scanned {
        for k in &s.kernels {
            if let Err(e) = &k.listing {
                eprintln!(
                    "{}",
                    super::io::printable(&format!(
                        "error: '{}': image {}: cannot read its symbols: {e}",
                        s.path, k.image
                    ))
                );
                any = true;
            }
        }
    }
    any
}

/// Prints one line on standard error for each input that could not be
/// read; returns whether there was one.
pub(super) fn report_unreadable(scanned: &[Scanned]) -> bool {
    let mut any = false;
    for s in scanned {
        if let Err(e) = &s.result {
            eprintln!(
                "{}",
                super::io::printable(&format!("error: '{}': {e}", s.path))
            );
            any = true;
        }
    }
    any
}

/// Says on standard error, one line per input, which inputs hold damaged
/// data ([`scan::Report::damaged`]): how many problems, the first of each kind
/// (`error:`, or `warning:` when `allow_corrupt` lets the command succeed);
/// whether there were any.
pub(super) fn report_damaged<'a>(
    scanned: impl IntoIterator<Item = &'a Scanned>,
    allow_corrupt: bool,
) -> bool {
    let level = if allow_corrupt { "warning" } else { "error" };
    let mut any = false;
    for s in scanned {
        let Ok(r) = &s.result else { continue };
        if !r.damaged() {
            continue;
        }
        any = true;
        let damage = r
            .problems
            .iter()
            .filter(|p| p.kind == scan::ProblemKind::Damage)
            .map(|p| p.message.as_str());
        let stopped = r.stopped.as_ref().map(ToString::to_string);
        eprintln!(
            "{}",
            super::io::problems::summary(&s.path, damage, stopped.as_deref(), level)
        );
    }
    any
}

/// Reports every unreadable input (as [`report_unreadable`]) and every
/// damaged one (as [`report_damaged`]), and gives the exit code of a
/// command that has no requirement to fail: success, or an input error
/// when any input could not be read or, unless `allow_corrupt`, holds
/// damaged data ([`scan::Report::damaged`]).
pub(super) fn exit_code_after_inputs(scanned: &[Scanned], allow_corrupt: bool) -> u8 {
    let unreadable = report_unreadable(scanned);
    let damaged = report_damaged(scanned, allow_corrupt);
    if unreadable || (damaged && !allow_corrupt) {
        exit::INPUT_ERROR
    } else {
        exit::OK
    }
}

/// The exit code of a scanner command: 0 success, 1 a `check`
/// requirement not met (or an `extract` selection that matched nothing),
/// 2 an input that could not be read or parsed (or any other error).
pub(super) mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// A requirement not met.
    pub const FAILED: u8 = 1;
    /// An input that could not be read or parsed.
    pub const INPUT_ERROR: u8 = 2;
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

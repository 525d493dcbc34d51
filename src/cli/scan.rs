//! What the scanner commands (`inspect`, `extract`, `check`, `size`; one
//! file each) share: the common options, the input files (directories
//! walked, files scanned in parallel, results in the files' order) and
//! thin archives' member files.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Result;

use super::io::Input;
use super::units;
use crate::kernels;
use crate::scan::{self, Image, Mode, Options, Report};

/// Options shared by the four commands.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    /// What to scan: files (ELF, COFF and Mach-O executables, shared
    /// libraries and objects; static and thin archives; bare bundles,
    /// binary or text, CCOBs, OffloadBinaries and CUDA fatbins; any other
    /// file, such as a core dump, is raw-scanned), directories (walked),
    /// packages, recognised by their contents (wheels, .conda and other zip
    /// archives; tar archives, plain or gzip-, xz- or zstd-compressed;
    /// Debian .deb packages), and `-` for standard input. A path named here
    /// is always read, even through a symbolic link.
    #[arg(required = true, value_name = "PATH")]
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
        opts.max_uncompressed = self.max_uncompressed.unwrap_or(BY_SIZE);
        opts.max_images = self.max_images;
        opts.max_containers = self.max_containers;
        opts.verify = self.verify;
        opts
    }

    /// The inputs, in a stable order: each argument in turn (`-` is
    /// standard input, at most once), a directory's files sorted by path.
    /// A path that cannot be read is kept, with why, so that it is reported
    /// in its place while the others are scanned. Symbolic links met in a
    /// walk are skipped unless `--follow`; a walked file already reached
    /// (the same device and inode: a link, a hard link, a named file) is
    /// left out. Named files are always kept.
    pub(super) fn files(&self) -> Result<Vec<Source>> {
        let mut out = Vec::new();
        let mut stdin = false;
        let mut seen = Seen::default();
        for p in &self.paths {
            if p.as_os_str() == "-" {
                if stdin {
                    anyhow::bail!("'-' (standard input) is given more than once");
                }
                stdin = true;
                out.push(Source::new(p.clone()));
                continue;
            }
            match std::fs::metadata(p) {
                Ok(meta) if meta.is_dir() => {
                    let mut found = Vec::new();
                    let mut dirs = Seen::default();
                    dirs.insert(&meta);
                    walk(p, self.follow, &mut dirs, &mut found);
                    out.extend(seen.first_of_each(found));
                }
                Ok(meta) => {
                    seen.insert(&meta);
                    out.push(Source::new(p.clone()));
                }
                Err(e) => out.push(Source {
                    error: Some(format!("cannot open: {}", super::io::strerror(&e))),
                    ..Source::new(p.clone())
                }),
            }
        }
        Ok(out)
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

/// [`Options::max_uncompressed`] when none was given: the budget of each
/// file then follows its size ([`for_size`]).
pub(super) const BY_SIZE: u64 = u64::MAX;

/// `opts` for a file of `size` bytes: the decompression budget its size
/// gives ([`scan::default_max_uncompressed`]) unless one was given.
pub(super) fn for_size(opts: &Options, size: usize) -> std::borrow::Cow<'_, Options> {
    if opts.max_uncompressed != BY_SIZE {
        return std::borrow::Cow::Borrowed(opts);
    }
    let mut o = opts.clone();
    o.max_uncompressed = scan::default_max_uncompressed(size as u64);
    std::borrow::Cow::Owned(o)
}

/// The outcome of one scan for a command: its report, or, when a limit
/// stopped it, the error naming the limit.
pub(super) fn finished(report: Report) -> Result<Report, String> {
    match report.stopped {
        Some(limit) => Err(format!("the scan stopped: {limit}")),
        None => Ok(report),
    }
}

/// One input: a path (`-`: standard input), and why it cannot be read
/// when that is known before it is opened (it does not exist, a directory
/// cannot be listed).
#[derive(Debug, Clone)]
pub(super) struct Source {
    /// The path as given or found.
    pub(super) path: PathBuf,
    /// Why it cannot be read.
    pub(super) error: Option<String>,
    /// Whether it was found walking a directory (not named).
    pub(super) in_dir: bool,
}

impl Source {
    fn new(path: PathBuf) -> Source {
        Source {
            path,
            error: None,
            in_dir: false,
        }
    }

    fn found(path: PathBuf) -> Source {
        Source {
            in_dir: true,
            ..Source::new(path)
        }
    }

    /// The path as shown in reports.
    pub(super) fn name(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }

    /// Opens the input, or says why it cannot be read.
    pub(super) fn open(&self) -> Result<Input, String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        Input::open(&self.name()).map_err(|e| format!("cannot open: {}", super::io::strerror(&e)))
    }
}

/// Files and directories already reached, by device and inode.
#[derive(Default)]
struct Seen(std::collections::HashSet<(u64, u64)>);

impl Seen {
    /// Records the file of `meta`; whether it is new.
    fn insert(&mut self, meta: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.0.insert((meta.dev(), meta.ino()))
    }

    /// The files of `found` (a directory's walk) not reached before, each
    /// once, sorted by path: of several paths to one file, its own name
    /// (not a symbolic link) is kept if the walk met it, else the first
    /// path.
    fn first_of_each(&mut self, mut found: Vec<Walked>) -> Vec<Source> {
        found.sort_by(|a, b| a.source.path.cmp(&b.source.path));
        // Own names first, then links, each in path order; the survivors
        // go back in path order.
        let mut order: Vec<usize> = (0..found.len()).collect();
        order.sort_by_key(|&i| found[i].link);
        let mut keep = vec![false; found.len()];
        for i in order {
            keep[i] = match &found[i].meta {
                Some(meta) => self.insert(meta),
                None => true,
            };
        }
        found
            .into_iter()
            .zip(keep)
            .filter_map(|(w, k)| k.then_some(w.source))
            .collect()
    }
}

/// A file met walking a directory.
struct Walked {
    source: Source,
    /// Whether it was reached through a symbolic link.
    link: bool,
    /// What it is (after the link), when that could be read.
    meta: Option<std::fs::Metadata>,
}

/// Regular files below `dir`. Symbolic links are skipped unless `follow`,
/// when links to files are taken and links to directories walked (each
/// directory once: `dirs` holds those reached, so a loop ends). A
/// directory that cannot be listed is an input with its error.
fn walk(dir: &Path, follow: bool, dirs: &mut Seen, out: &mut Vec<Walked>) {
    let unreadable = |e: std::io::Error| Walked {
        source: Source {
            error: Some(format!(
                "cannot read the directory: {}",
                super::io::strerror(&e)
            )),
            ..Source::new(dir.to_path_buf())
        },
        link: false,
        meta: None,
    };
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => return out.push(unreadable(e)),
    };
    for e in rd {
        let e = match e {
            Ok(e) => e,
            Err(e) => return out.push(unreadable(e)),
        };
        let p = e.path();
        let Ok(ft) = e.file_type() else {
            out.push(Walked {
                source: Source::found(p),
                link: false,
                meta: None,
            });
            continue;
        };
        let link = ft.is_symlink();
        if link && !follow {
            continue;
        }
        // What the entry is: itself, or what its link leads to (a broken
        // link leads nowhere and is skipped).
        let Ok(meta) = std::fs::metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            if dirs.insert(&meta) {
                walk(&p, follow, dirs, out);
            }
        } else if meta.is_file() {
            out.push(Walked {
                source: Source::found(p),
                link,
                meta: Some(meta),
            });
        }
    }
}

/// Runs `f` on every file, `jobs` at a time; the results come back in the
/// files' order. When standard error is a terminal and there are several
/// files, a progress line (`scanned N of M files`) is kept on it while
/// they run, and erased at the end; in a pipe or a log nothing is printed.
pub(super) fn par_map<I: Sync, T: Send>(
    files: &[I],
    jobs: usize,
    f: impl Fn(usize, &I) -> T + Sync,
) -> Vec<T> {
    use std::io::IsTerminal;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let finished = std::sync::atomic::AtomicBool::new(false);
    let slots: Vec<Mutex<Option<T>>> = files.iter().map(|_| Mutex::new(None)).collect();
    let progress = files.len() > 1 && std::io::stderr().is_terminal();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..jobs.min(files.len()))
            .map(|_| {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(path) = files.get(i) else { break };
                        let r = f(i, path);
                        *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        let shown = progress.then(|| s.spawn(|| show_progress(&done, &finished, files.len())));
        for w in workers {
            let _ = w.join();
        }
        finished.store(true, Ordering::Release);
        if let Some(p) = shown {
            p.thread().unpark();
        }
    });
    slots
        .into_iter()
        .filter_map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect()
}

/// Keeps `scanned N of M files` on standard error (a terminal) until
/// `finished`, then erases it.
fn show_progress(done: &AtomicUsize, finished: &std::sync::atomic::AtomicBool, total: usize) {
    use std::io::Write;
    let mut err = std::io::stderr();
    loop {
        // `finished` first: once it is set every file is counted, so the
        // last line written says so (read after `done`, the workers could
        // finish in between and the last line say fewer).
        let last = finished.load(Ordering::Acquire);
        let n = done.load(Ordering::Relaxed);
        let _ = write!(err, "\r\x1b[Kscanned {n} of {total} files");
        let _ = err.flush();
        if last {
            break;
        }
        // Woken early when the files are done.
        std::thread::park_timeout(std::time::Duration::from_millis(100));
    }
    let _ = write!(err, "\r\x1b[K");
    let _ = err.flush();
}

/// A visitor that also reads thin archives' members from their files
/// (named relative to the archive's directory, as `ar` and linkers do).
pub(super) struct ThinFiles<'v> {
    inner: &'v mut dyn scan::Visit,
    /// The file being scanned; `None` inside a package, where a thin
    /// archive's members cannot be looked up.
    archive: Option<&'v Path>,
}

impl<'v> ThinFiles<'v> {
    pub(super) fn new(inner: &'v mut dyn scan::Visit, archive: Option<&'v Path>) -> ThinFiles<'v> {
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

    fn unavailable(&mut self, image: &Image, why: &str) {
        self.inner.unavailable(image, why);
    }

    fn sink(&mut self, image: &Image) -> Option<Box<dyn scan::ImageSink>> {
        self.inner.sink(image)
    }

    fn streamed(
        &mut self,
        image: &Image,
        sink: Box<dyn scan::ImageSink>,
        end: Result<(), scan::SinkError>,
    ) {
        self.inner.streamed(image, sink, end);
    }

    fn reader(&mut self, image: &Image) -> Option<Box<dyn scan::ImageReader>> {
        self.inner.reader(image)
    }

    fn read(&mut self, image: &Image, reader: Box<dyn scan::ImageReader>, end: Result<(), String>) {
        self.inner.read(image, reader, end);
    }

    fn thin_member(&mut self, name: &str) -> scan::ThinMember {
        let Some(archive) = self.archive else {
            return Some(Err(
                "a thin archive's members are not looked up inside a package".into(),
            ));
        };
        let path = super::io::thin_member_path(archive, name);
        let same = |a: &Path, b: &Path| {
            std::fs::canonicalize(a).is_ok_and(|a| std::fs::canonicalize(b).is_ok_and(|b| a == b))
        };
        if same(&path, archive) {
            return Some(Err("it is the archive itself".into()));
        }
        Some(
            Input::open(&path.to_string_lossy())
                .map(Input::boxed)
                .map_err(|e| super::io::strerror(&e)),
        )
    }
}

/// A visitor that asks for every image whose kind is not known, so that
/// compressed bundles are decompressed and their entries' kinds read.
pub(super) struct Kinds;

impl scan::Visit for Kinds {
    fn wants(&mut self, image: &Image) -> bool {
        image.image_kind.is_none() && !image.offload_kind.is_host()
    }
    fn image(&mut self, _: &Image, _: &[u8]) {}
}

/// One scanned file, or file inside a package.
pub(super) struct Scanned {
    /// The path as given or found (`package!/member` inside a package).
    pub(super) path: String,
    /// The file's size.
    pub(super) size: u64,
    /// Whether the user did not name it (found walking a directory or
    /// inside a package): reports may leave it out when it holds nothing.
    pub(super) found: bool,
    /// What was found, or why the file could not be read.
    pub(super) result: Result<Report, String>,
    /// The kernels of its images, when they were asked for
    /// ([`scan_files_kernels`]).
    pub(super) kernels: Vec<kernels::ImageKernels>,
}

/// Scans `src`: one [`Scanned`] for a file, one for each file inside a
/// package ([`units`](super::units)).
pub(super) fn scan_file(src: &Source, opts: &Options, visit: &mut dyn scan::Visit) -> Vec<Scanned> {
    scan_units(src, opts, visit, |v| v, |_, _| Vec::new())
}

/// [`scan_file`], the kernels of every image read too
/// ([`Scanned::kernels`]), taken from the command's `allowance` (see
/// [`over_allowance`]).
pub(super) fn scan_file_kernels(
    src: &Source,
    opts: &Options,
    allowance: &kernels::Allowance,
) -> Vec<Scanned> {
    let mut collect = kernels::Collect::within(allowance.clone());
    scan_units(src, opts, &mut collect, |v| v, kernels::Collect::take)
}

/// Scans each unit of `src` with `visit` (as `as_visit` gives it), then
/// asks `kernels` what the visitor read of that unit's kernels.
fn scan_units<V: ?Sized>(
    src: &Source,
    opts: &Options,
    visit: &mut V,
    as_visit: fn(&mut V) -> &mut dyn scan::Visit,
    kernels: fn(&mut V, Option<&Report>) -> Vec<kernels::ImageKernels>,
) -> Vec<Scanned> {
    units::for_each(src, opts.max_uncompressed, &mut |unit, data| {
        let size = data.as_ref().map_or(0, |d| d.bytes.len() as u64);
        let result = data.and_then(|d| {
            let opts = for_size(opts, d.bytes.len());
            finished(scan::scan_with(
                d.bytes,
                &opts,
                &mut ThinFiles::new(as_visit(visit), unit.thin_base),
            ))
        });
        Scanned {
            path: unit.name.clone(),
            size,
            found: unit.found,
            kernels: kernels(visit, result.as_ref().ok()),
            result,
        }
    })
}

/// `opts` for `files` inputs scanned by `jobs` threads: the threads each
/// file's scan may use for itself ([`Options::threads`]), so that the
/// command uses about `jobs` in all.
pub(super) fn with_threads(opts: &Options, jobs: usize, files: usize) -> Options {
    let mut o = opts.clone();
    o.threads = (jobs / files.clamp(1, jobs.max(1))).max(1);
    o
}

/// [`par_map`] of [`scan_file`] over `files`, flattened: every scanned
/// unit in the inputs' order.
pub(super) fn scan_files(
    files: &[Source],
    jobs: usize,
    opts: &Options,
    visit: impl Fn() -> Box<dyn scan::Visit> + Sync,
) -> Vec<Scanned> {
    let opts = &with_threads(opts, jobs, files.len());
    par_map(files, jobs, |_, src| scan_file(src, opts, &mut *visit()))
        .into_iter()
        .flatten()
        .collect()
}

/// [`scan_files`] with the kernels of every image read
/// ([`Scanned::kernels`]), within `allowance` ([`over_allowance`]).
pub(super) fn scan_files_kernels(
    files: &[Source],
    jobs: usize,
    opts: &Options,
    allowance: &kernels::Allowance,
) -> Vec<Scanned> {
    let opts = &with_threads(opts, jobs, files.len());
    let mut scanned: Vec<Scanned> = par_map(files, jobs, |_, src| {
        scan_file_kernels(src, opts, allowance)
    })
    .into_iter()
    .flatten()
    .collect();
    over_allowance(&mut scanned, allowance);
    scanned
}

/// When the listings went past the command's `allowance`, every input is
/// an error, its kernels not listed: which of several inputs scanned at
/// once were cut depends on their timing, and a gate must not judge a
/// listing that was cut, so nothing of any is kept (the outcome is the
/// same whatever the timing).
pub(super) fn over_allowance<'a>(
    scanned: impl IntoIterator<Item = &'a mut Scanned>,
    allowance: &kernels::Allowance,
) {
    if !allowance.exhausted() {
        return;
    }
    for s in scanned {
        s.kernels.clear();
        if s.result.is_ok() {
            s.result = Err(format!(
                "its kernels are not listed: the listings of this command's inputs hold more \
                 than {} kernels and symbols (--max-kernels)",
                allowance.limit()
            ));
        }
    }
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

/// Fills in the demangled names of the kernels and symbols read of `s`.
pub(super) fn demangle(s: &mut Scanned) {
    for k in &mut s.kernels {
        if let Ok(l) = &mut k.listing {
            l.demangle();
        }
    }
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

/// Reports every unreadable input (as [`report_unreadable`]) and gives the
/// exit code of a command that has no requirement to fail: success, or an
/// input error when any input could not be read or, unless
/// `allow_corrupt`, holds damaged data ([`Report::damaged`]).
pub(super) fn exit_code_after_inputs(scanned: &[Scanned], allow_corrupt: bool) -> u8 {
    let unreadable = report_unreadable(scanned);
    let damaged = scanned
        .iter()
        .any(|s| s.result.as_ref().is_ok_and(Report::damaged));
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

//! The inputs of the scanner commands, as files: the paths given walked
//! (directories sorted, links followed or not, each file once), packages
//! opened member by member ([`units`]), and the files scanned on several
//! threads, each result in its file's place ([`Scanned`]). The command
//! line words and prints what comes back.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::files::Input;
use crate::kernels;
use crate::scan::{self, Image, Options, Report, Unread};

pub(crate) mod oci;
mod source;
pub(crate) mod units;

pub(crate) use source::Source;
use source::cannot_open;
pub(crate) use units::BY_SIZE;

/// The inputs of `paths`, in a stable order: each path in turn (`-` is
/// standard input, at most once), a directory's files sorted by path.
/// A path that cannot be read is kept, with why, so that it is reported
/// in its place while the others are scanned. Symbolic links met in a
/// walk are skipped unless `follow`; a walked file already reached
/// (the same device and inode: a link, a hard link, a named file) is
/// left out, and so is a named file that a directory given before it
/// holds (it is read once, under the name the walk found). A file named
/// twice is read twice.
pub(crate) fn sources(paths: &[PathBuf], follow: bool) -> Result<Vec<Source>, StdinTwice> {
    let mut out = Vec::new();
    let mut stdin = false;
    let mut seen = Seen::default();
    // The files the walks reached.
    let mut walked = Seen::default();
    for p in paths {
        if p.as_os_str() == "-" {
            if stdin {
                return Err(StdinTwice);
            }
            stdin = true;
            out.push(Source::new(p.clone()));
            continue;
        }
        match std::fs::metadata(p) {
            Ok(meta) if meta.is_dir() && oci::is_layout(p) => out.push(Source {
                layout: true,
                ..Source::new(p.clone())
            }),
            Ok(meta) if meta.is_dir() => {
                let mut found = Vec::new();
                let mut dirs = Seen::default();
                dirs.insert(&meta);
                walk(p, follow, &mut dirs, &mut found);
                for w in &found {
                    if let Some(meta) = &w.meta {
                        walked.insert(meta);
                    }
                }
                out.extend(seen.first_of_each(found));
            }
            Ok(meta) => {
                seen.insert(&meta);
                if !walked.contains(&meta) {
                    out.push(Source::new(p.clone()));
                }
            }
            Err(e) => out.push(Source {
                error: Some(cannot_open(&e)),
                ..Source::new(p.clone())
            }),
        }
    }
    Ok(out)
}

/// Why [`sources`] takes no inputs: `-` (standard input) is named more
/// than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StdinTwice;

impl std::fmt::Display for StdinTwice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("'-' (standard input) is given more than once")
    }
}

impl std::error::Error for StdinTwice {}

/// `opts` for a file of `size` bytes: the decompression budget its size
/// gives ([`scan::default_max_uncompressed`]) unless one was given.
pub(crate) fn for_size(opts: &Options, size: usize) -> std::borrow::Cow<'_, Options> {
    if opts.max_uncompressed != BY_SIZE {
        return std::borrow::Cow::Borrowed(opts);
    }
    let mut o = opts.clone();
    o.max_uncompressed = scan::default_max_uncompressed(size as u64);
    std::borrow::Cow::Owned(o)
}

/// The outcome of one scan for a command: its report, or, when a limit
/// stopped it, the error naming the limit.
pub(crate) fn finished(report: Report) -> Result<Report, Unread> {
    match report.stopped {
        Some(limit) => Err(Unread::from(limit)),
        None => Ok(report),
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

    /// Whether the file of `meta` was recorded.
    fn contains(&self, meta: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.0.contains(&(meta.dev(), meta.ino()))
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
            error: Some(Unread::new(format!(
                "cannot read the directory: {}",
                crate::files::strerror(&e)
            ))),
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
        // link, or a loop of links, leads nowhere and is skipped). Any
        // other failure (a path longer than the system takes, a
        // directory that cannot be searched) is an input with its error.
        let meta = match std::fs::metadata(&p) {
            Ok(meta) => meta,
            Err(e) if link && leads_nowhere(&e) => continue,
            Err(e) => {
                out.push(Walked {
                    source: Source {
                        error: Some(cannot_open(&e)),
                        ..Source::found(p)
                    },
                    link,
                    meta: None,
                });
                continue;
            }
        };
        if meta.is_dir() && oci::is_layout(&p) {
            if dirs.insert(&meta) {
                out.push(Walked {
                    source: Source {
                        layout: true,
                        ..Source::found(p)
                    },
                    link,
                    meta: None,
                });
            }
        } else if meta.is_dir() {
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

/// Whether `e`, met following a symbolic link, says it leads nowhere: to
/// no file, or round a loop of links.
fn leads_nowhere(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound
        || e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
}

/// Runs `f` on every file, `jobs` at a time; the results come back in the
/// files' order. `done(n)` is called (on the worker that finished it) each
/// time a file is done, with how many are done so far: a caller shows
/// progress with it.
pub(crate) fn par_map<I: Sync, T: Send>(
    files: &[I],
    jobs: usize,
    done: &(dyn Fn(usize) + Sync),
    f: impl Fn(usize, &I) -> T + Sync,
) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<T>>> = files.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..jobs.min(files.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = files.get(i) else { break };
                    let r = f(i, path);
                    *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                    done(finished.fetch_add(1, Ordering::Relaxed) + 1);
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
pub(crate) struct ThinFiles<'v> {
    inner: &'v mut dyn scan::Visit,
    /// The file being scanned; `None` inside a package, where a thin
    /// archive's members cannot be looked up.
    archive: Option<&'v Path>,
}

impl<'v> ThinFiles<'v> {
    pub(crate) fn new(inner: &'v mut dyn scan::Visit, archive: Option<&'v Path>) -> ThinFiles<'v> {
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

    fn unavailable(&mut self, image: &Image, why: &Unread) {
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

    fn read(&mut self, image: &Image, reader: Box<dyn scan::ImageReader>, end: Result<(), Unread>) {
        self.inner.read(image, reader, end);
    }

    fn thin_member(&mut self, name: &str) -> scan::ThinMember {
        let Some(archive) = self.archive else {
            return Some(Err(
                "a thin archive's members are not looked up inside a package".into(),
            ));
        };
        let path = crate::host::ar::thin_member_path(archive, name);
        let same = |a: &Path, b: &Path| {
            std::fs::canonicalize(a).is_ok_and(|a| std::fs::canonicalize(b).is_ok_and(|b| a == b))
        };
        if same(&path, archive) {
            return Some(Err("it is the archive itself".into()));
        }
        Some(
            Input::open(&path)
                .map(Input::boxed)
                .map_err(|e| crate::files::strerror(&e)),
        )
    }
}

/// A visitor that asks for every image whose kind is not known, so that
/// compressed bundles are decompressed and their entries' kinds read.
pub(crate) struct Kinds;

impl scan::Visit for Kinds {
    fn wants(&mut self, image: &Image) -> bool {
        image.image_kind.is_none() && !image.offload_kind.is_host()
    }
    fn image(&mut self, _: &Image, _: &[u8]) {}
}

/// One scanned file, or file inside a package.
pub(crate) struct Scanned {
    /// The path as given or found (`package!/member` inside a package).
    pub(crate) path: String,
    /// The file's size.
    pub(crate) size: u64,
    /// Whether the user did not name it (found walking a directory or
    /// inside a package): reports may leave it out when it holds nothing.
    pub(crate) found: bool,
    /// What was found, or why the file could not be read.
    pub(crate) result: Result<Report, Unread>,
    /// The kernels of its images, when they were asked for
    /// ([`scan_files_kernels`]).
    pub(crate) kernels: Vec<kernels::ImageKernels>,
}

impl Scanned {
    /// Fills in the demangled names of the kernels and symbols read.
    pub(crate) fn demangle(&mut self) {
        for k in &mut self.kernels {
            if let Ok(l) = &mut k.listing {
                l.demangle();
            }
        }
    }
}

/// Scans `src`: one [`Scanned`] for a file, one for each file inside a
/// package ([`units`]).
pub(crate) fn scan_file(src: &Source, opts: &Options, visit: &mut dyn scan::Visit) -> Vec<Scanned> {
    scan_units(src, opts, visit, |v| v, |_, _| Vec::new())
}

/// [`scan_file`], the kernels of every image read too
/// ([`Scanned::kernels`]), taken from the command's `allowance` (see
/// [`over_allowance`]).
pub(crate) fn scan_file_kernels(
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
pub(crate) fn with_threads(opts: &Options, jobs: usize, files: usize) -> Options {
    let mut o = opts.clone();
    o.threads = (jobs / files.clamp(1, jobs.max(1))).max(1);
    o
}

/// [`par_map`] of [`scan_file`] over `files`, flattened: every scanned
/// unit in the inputs' order (`done` as for [`par_map`]).
pub(crate) fn scan_files(
    files: &[Source],
    jobs: usize,
    opts: &Options,
    done: &(dyn Fn(usize) + Sync),
    visit: impl Fn() -> Box<dyn scan::Visit> + Sync,
) -> Vec<Scanned> {
    let opts = &with_threads(opts, jobs, files.len());
    par_map(files, jobs, done, |_, src| {
        scan_file(src, opts, &mut *visit())
    })
    .into_iter()
    .flatten()
    .collect()
}

/// [`scan_files`] with the kernels of every image read
/// ([`Scanned::kernels`]), within `allowance` ([`over_allowance`]).
pub(crate) fn scan_files_kernels(
    files: &[Source],
    jobs: usize,
    opts: &Options,
    allowance: &kernels::Allowance,
    done: &(dyn Fn(usize) + Sync),
) -> Vec<Scanned> {
    let opts = &with_threads(opts, jobs, files.len());
    let mut scanned: Vec<Scanned> = par_map(files, jobs, done, |_, src| {
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
pub(crate) fn over_allowance<'a>(
    scanned: impl IntoIterator<Item = &'a mut Scanned>,
    allowance: &kernels::Allowance,
) {
    if !allowance.exhausted() {
        return;
    }
    for s in scanned {
        s.kernels.clear();
        if s.result.is_ok() {
            s.result = Err(Unread::new(format!(
                "its kernels are not listed: the listings of this command's inputs hold more \
                 than {} kernels and symbols (--max-kernels)",
                allowance.limit()
            )));
        }
    }
}

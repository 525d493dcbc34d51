//! Writing the selected device images of files into a directory (the
//! `extract` command's work): each image under a name built from what
//! `inspect` shows, those inside compressed data as they are decoded, and
//! nothing kept of what lies in damaged data. Inputs are scanned on
//! several threads; what each gave comes back as data, in the inputs'
//! order, for the caller to print. `unpack.rs` is the `unpack` command's
//! work: the images of a file's OffloadBinaries written into a directory.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::files::{Allowance, Input, Output, safe_component};
use crate::inputs::{Source, ThinFiles, finished, for_size, par_map, units, with_threads};
use crate::scan::{self, Image, Selection};

mod unpack;

pub(crate) use unpack::{UnpackError, unpack};

/// What to extract, and where.
pub(crate) struct Options<'a> {
    /// The images wanted (empty: every one).
    pub(crate) filter: &'a Selection,
    /// Whether bundles' empty host entries are written too.
    pub(crate) include_host: bool,
    /// The directory to write into (created if missing).
    pub(crate) dir: &'a Path,
    /// Most files written, all inputs together.
    pub(crate) max_files: usize,
    /// Inputs scanned at once.
    pub(crate) jobs: usize,
    /// How each input is scanned (`verify` is set: everything written is
    /// checked).
    pub(crate) scan: &'a scan::Options,
}

/// Why [`extract`] wrote nothing.
#[derive(Debug)]
pub(crate) enum ExtractError {
    /// The directory (as shown) cannot be made.
    CreateDir(String, std::io::Error),
    /// Two inputs would write files of this label.
    SameLabel(String),
}

impl std::fmt::Display for ExtractError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExtractError::CreateDir(dir, e) => write!(
                f,
                "'{dir}': cannot create directory: {}",
                crate::files::strerror(e)
            ),
            ExtractError::SameLabel(label) => write!(
                f,
                "two inputs would write files named '{label}.*'; extract them separately"
            ),
        }
    }
}

impl std::error::Error for ExtractError {}

/// Extracts the images `opts` selects from each of `files` into
/// `opts.dir`: what each unit (an input, or a file in a package) gave, in
/// order (`done` as for [`par_map`]). An error (the directory cannot be
/// made, two inputs would write the same names) comes before anything is
/// written.
pub(crate) fn extract(
    files: &[Source],
    opts: &Options<'_>,
    done: &(dyn Fn(usize) + Sync),
) -> Result<Vec<Extracted>, ExtractError> {
    // Everything written is checked: every compressed stream decoded to
    // its end, every stored hash compared.
    let mut scan_opts = with_threads(opts.scan, opts.jobs, files.len());
    scan_opts.verify = true;
    std::fs::create_dir_all(opts.dir)
        .map_err(|e| ExtractError::CreateDir(crate::files::shown(opts.dir).into_owned(), e))?;
    let several = files.len() > 1;
    let labels: Vec<String> = files
        .iter()
        .map(|f| input_label(&f.path, several))
        .collect();
    let mut seen = HashSet::new();
    if let Some(dup) = labels.iter().find(|l| !seen.insert(*l)) {
        return Err(ExtractError::SameLabel(dup.clone()));
    }
    // Files the whole command may still write, shared by the threads.
    let files_left = AtomicUsize::new(opts.max_files);
    // What the files of each unit may hold together: `--max-uncompressed`,
    // else what the unit's size allows (`Allowance::for_input`).
    let given = (scan_opts.max_uncompressed != crate::inputs::BY_SIZE)
        .then_some(scan_opts.max_uncompressed);
    let stopped = AtomicBool::new(false);
    let results = par_map(files, opts.jobs, done, |i, src| {
        // Members of a package are named after the package and their
        // path; a name met twice (a hostile zip) gets a number.
        let mut member_labels = HashSet::new();
        units::for_each(src, scan_opts.max_uncompressed, &mut |unit, data| {
            if stopped.load(Ordering::Relaxed) {
                return Extracted::default();
            }
            let name = &unit.name;
            let data = match data {
                Ok(d) => d,
                Err(e) => return Extracted::unreadable(format!("'{name}': {e}")),
            };
            let label = if unit.thin_base.is_some() {
                labels[i].clone()
            } else {
                member_label(&labels[i], &unit.name, &mut member_labels)
            };
            let ex = Extractor {
                filter: opts.filter,
                include_host: opts.include_host,
                dir: opts.dir,
                label,
                name: name.to_string(),
                input: data.input,
                written: Vec::new(),
                errors: Vec::new(),
                files: &files_left,
                taken: HashSet::new(),
                over_limit: false,
                stopped: &stopped,
                allowance: Allowance::for_input(data.bytes.len() as u64, given),
                passed: false,
            };
            extract_unit(ex, data.bytes, unit.thin_base, &scan_opts, opts.max_files)
        })
    });
    Ok(results.into_iter().flatten().collect())
}

/// The file-name extension of an image of `kind`.
fn extension(kind: Option<&str>) -> &'static str {
    match kind {
        Some("object") => "o",
        Some("bitcode") => "bc",
        Some("cubin") => "cubin",
        Some("ptx") => "ptx",
        Some("fatbinary") => "fatbin",
        Some("spirv") => "spv",
        Some("nvvm") => "nvvm",
        Some("offload-binary") => "offload",
        Some("bundle") => "bundle",
        Some("ccob") => "ccob",
        Some("archive") => "a",
        _ => "bin",
    }
}

/// The label naming an input in output file names.
fn input_label(path: &Path, several: bool) -> String {
    if path.as_os_str() == "-" {
        return "stdin".into();
    }
    let s = if several {
        let s = crate::files::shown(path);
        let s = s.trim_start_matches("./").trim_start_matches('/');
        s.replace('/', "_")
    } else {
        path.file_name().map_or_else(
            || "input".into(),
            |n| crate::files::shown_os(n).into_owned(),
        )
    };
    safe_component(&s, 120)
}

/// The label of a file inside a package (`unit` is `package!/path`):
/// the package's label and the member's path, `/` as `_`, unique among
/// `taken`.
fn member_label(package: &str, unit: &str, taken: &mut HashSet<String>) -> String {
    let path = unit.split_once("!/").map_or(unit, |(_, p)| p);
    let base = safe_component(&format!("{package}!{}", path.replace('/', "_")), 160);
    let mut label = base.clone();
    let mut n = 1;
    while !taken.insert(label.clone()) {
        n += 1;
        label = format!("{base}-{n}");
    }
    label
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
        extension(img.image_kind.map(|k| k.to_string()).as_deref())
    )
}

/// The scan visitor that writes one unit's selected images into the
/// directory.
struct Extractor<'a> {
    filter: &'a Selection,
    include_host: bool,
    dir: &'a Path,
    label: String,
    /// The input, as error messages name it.
    name: String,
    input: &'a Input,
    /// The files written, with their images' ids.
    written: Vec<(usize, String)>,
    errors: Vec<String>,
    /// Files the command may still write ([`Options::max_files`]).
    files: &'a AtomicUsize,
    /// The images a file was reserved for.
    taken: HashSet<usize>,
    /// Whether this input was the one to find the command's files spent.
    over_limit: bool,
    /// Set by the first image that cannot be written, on any thread: no
    /// image is written after it (every other would fail alike on a full
    /// disk or a directory gone), and its error is the only one.
    stopped: &'a AtomicBool,
    /// What the unit's files may hold together (`--max-uncompressed`).
    allowance: std::sync::Arc<Allowance>,
    /// Whether a file would have passed it: then nothing of the unit is
    /// kept.
    passed: bool,
}

impl Extractor<'_> {
    /// An image could not be written: the first such error stops the
    /// extraction and is reported; any later one (on another thread) is
    /// not.
    fn write_failed(&mut self, shown: &str, e: &std::io::Error) {
        self.passed |= e.kind() == std::io::ErrorKind::FileTooLarge;
        if !self.stopped.swap(true, Ordering::Relaxed) {
            self.errors.push(format!(
                "'{shown}': cannot write: {}; no further image written",
                crate::files::strerror(e)
            ));
        }
    }
}

impl scan::Visit for Extractor<'_> {
    fn wants(&mut self, image: &Image) -> bool {
        let empty_host = image.offload_kind.is_host() && image.size == 0;
        if self.stopped.load(Ordering::Relaxed)
            || (empty_host && !self.include_host)
            || !self.filter.matches(image)
        {
            return false;
        }
        if self.taken.contains(&image.id) {
            return true;
        }
        // One file reserved per image, the first time it is wanted.
        let reserved = self
            .files
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok();
        if reserved {
            self.taken.insert(image.id);
        } else {
            // The command's files are spent: it stops, as after a write
            // failure, with this input's one error.
            self.over_limit = !self.stopped.swap(true, Ordering::Relaxed);
        }
        reserved
    }

    fn image(&mut self, image: &Image, bytes: &[u8]) {
        let name = image_file_name(&self.label, image);
        let shown = self.dir.join(&name).to_string_lossy().into_owned();
        if self.stopped.load(Ordering::Relaxed) {
            return;
        }
        let write = || -> std::io::Result<()> {
            let mut out = Output::create_in(self.dir, name.as_ref())?.within(&self.allowance);
            self.input.copy_to(bytes, &mut out)?;
            out.commit()
        };
        match write() {
            Ok(()) => self.written.push((image.id, shown)),
            Err(e) => self.write_failed(&shown, &e),
        }
    }

    fn unavailable(&mut self, image: &Image, why: &scan::Unread) {
        self.errors.push(format!(
            "'{}': image {} not written: {why}",
            self.name, image.id
        ));
    }

    /// Images inside compressed data are written as they are
    /// decompressed, to a temporary file renamed into place once the
    /// stream has ended well.
    fn sink(&mut self, image: &Image) -> Option<Box<dyn scan::ImageSink>> {
        let name = std::ffi::OsString::from(image_file_name(&self.label, image));
        if self.stopped.load(Ordering::Relaxed) {
            return Some(Box::new(FileSink::Failed(None)));
        }
        // Created at the first write, on the thread that decodes the
        // image: creating a file is most of what writing a small one costs
        // (the filesystem's inode allocation), and this way it runs on
        // every core instead of one at a time on the walker's thread.
        Some(Box::new(FileSink::Pending(
            self.dir.to_path_buf(),
            name,
            std::sync::Arc::clone(&self.allowance),
        )))
    }

    fn streamed(
        &mut self,
        image: &Image,
        sink: Box<dyn scan::ImageSink>,
        end: Result<(), scan::SinkError>,
    ) {
        let path = self.dir.join(image_file_name(&self.label, image));
        let shown = crate::files::shown(&path).into_owned();
        match end.and_then(|()| sink.keep().map_err(scan::SinkError::Write)) {
            Ok(()) => self.written.push((image.id, shown)),
            Err(scan::SinkError::Write(e)) => self.write_failed(&shown, &e),
            Err(scan::SinkError::Data(why)) => self.unavailable(image, &why),
        }
    }
}

/// An image's output file while it is streamed into: not created yet (its
/// path), a temporary file, or why it could not be created (the first
/// write reports it).
enum FileSink {
    Pending(
        std::path::PathBuf,
        std::ffi::OsString,
        std::sync::Arc<Allowance>,
    ),
    Open(Output),
    Failed(Option<std::io::Error>),
}

impl FileSink {
    /// The temporary file, created now if it was not yet.
    fn open(&mut self) -> std::io::Result<&mut Output> {
        if let FileSink::Pending(dir, name, allowance) = self {
            *self = match Output::create_in(dir, name) {
                Ok(out) => FileSink::Open(out.within(allowance)),
                Err(e) => FileSink::Failed(Some(e)),
            };
        }
        match self {
            FileSink::Open(out) => Ok(out),
            FileSink::Failed(e) => Err(e
                .take()
                .unwrap_or_else(|| std::io::Error::other("the output could not be created"))),
            FileSink::Pending(..) => Err(std::io::Error::other("the output could not be created")),
        }
    }
}

impl std::io::Write for FileSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            FileSink::Pending(..) => self.open()?.write(buf),
            FileSink::Open(out) => out.write(buf),
            FileSink::Failed(e) => Err(e
                .take()
                .unwrap_or_else(|| std::io::Error::other("the output could not be created"))),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            FileSink::Open(out) => out.flush(),
            FileSink::Pending(..) | FileSink::Failed(_) => Ok(()),
        }
    }
}

impl scan::ImageSink for FileSink {
    fn keep(mut self: Box<Self>) -> std::io::Result<()> {
        // An empty image was never written to: its file is made now.
        self.open()?;
        match *self {
            FileSink::Open(out) => out.commit(),
            FileSink::Pending(..) => Err(std::io::Error::other("the output could not be created")),
            FileSink::Failed(e) => {
                Err(e.unwrap_or_else(|| std::io::Error::other("the output could not be created")))
            }
        }
    }
}

/// Scans one unit's `bytes` (thin archive members found beside
/// `thin_base`), `ex` writing the selected images; then keeps only what
/// lies outside damaged data, in image order.
fn extract_unit(
    mut ex: Extractor<'_>,
    bytes: &[u8],
    thin_base: Option<&Path>,
    opts: &scan::Options,
    max_files: usize,
) -> Extracted {
    let name = ex.name.clone();
    let opts = for_size(opts, bytes.len());
    let report = scan::scan_with(bytes, &opts, &mut ThinFiles::new(&mut ex, thin_base));
    let report = match finished(report) {
        Ok(r) => r,
        Err(e) => {
            // Nothing of an input whose scan stopped is kept.
            for (_, w) in &ex.written {
                let _ = std::fs::remove_file(w);
            }
            return Extracted::unreadable(format!("'{name}': {e}"));
        }
    };
    if ex.passed {
        // Nor of one whose files would pass what it may write: the file
        // that would have is not there, and those before it go too.
        for (_, w) in &ex.written {
            let _ = std::fs::remove_file(w);
        }
        return Extracted {
            errors: ex.errors,
            ..Extracted::default()
        };
    }
    if ex.over_limit {
        ex.errors.push(format!(
            "'{name}': stopped: the command would write more than {} files \
             (--max-files)",
            max_files
        ));
    }
    let damaged = report.damaged();
    let problems: Vec<String> = report
        .problems
        .iter()
        .map(|p| format!("'{name}': warning: {}", p.message))
        .collect();
    let mut errors = ex.errors;
    // Nothing that lies in damaged data is kept (what was
    // written of it before the damage was found is removed).
    let in_damage = report.in_damaged_data();
    let (dropped, written): (Vec<_>, Vec<_>) = ex
        .written
        .into_iter()
        .partition(|(id, _)| in_damage.get(*id).copied().unwrap_or(true));
    for (_, w) in &dropped {
        let _ = std::fs::remove_file(w);
    }
    if !dropped.is_empty() {
        errors.push(format!(
            "'{name}': {} image(s) not kept: they lie in damaged data \
             (what is wrong is said above)",
            dropped.len()
        ));
    }
    // In image order, whatever the order of the threads that
    // wrote them.
    let mut written = written;
    written.sort_by_key(|(id, _)| *id);
    let written = written.into_iter().map(|(_, w)| w).collect();
    // Damaged containers and no image at all is no success:
    // the input is an input error, as `check` has it.
    if report.images.is_empty() && errors.is_empty() && !problems.is_empty() {
        errors.push(format!(
            "'{name}': nothing extracted: its device code is in a damaged container \
             (what is wrong is said above)"
        ));
    }
    Extracted {
        written,
        errors,
        problems,
        damaged,
    }
}

/// What extracting one input gave.
#[derive(Default)]
pub(crate) struct Extracted {
    /// The files written.
    pub(crate) written: Vec<String>,
    /// Errors: the input could not be read, an image could not be written.
    pub(crate) errors: Vec<String>,
    /// Problems met in the scan (warnings).
    pub(crate) problems: Vec<String>,
    /// Whether the input held damaged data.
    pub(crate) damaged: bool,
}

impl Extracted {
    fn unreadable(error: String) -> Extracted {
        Extracted {
            written: Vec::new(),
            errors: vec![error],
            problems: Vec::new(),
            damaged: false,
        }
    }
}

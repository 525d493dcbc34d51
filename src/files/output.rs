//! Outputs written atomically: a file with no name in the output's
//! directory (`O_TMPFILE`; a named temporary file where the file system has
//! none), given its name on commit; devices and FIFOs written in place.
//!
//! Every step after the start works inside a handle on the output's
//! directory, opened once when the output begins (`openat`, `linkat`,
//! `renameat`, `unlinkat`), never by its path again: a directory renamed or
//! moved while the command runs gets its file under its name (in the
//! directory where it now is), and no temporary file is left anywhere,
//! committed, dropped or interrupted by a signal alike.
//!
//! The file at the output's path is the old one until the commit and the
//! new one after it, with nothing in between: the new file takes the name
//! by exchanging names with the old one (`renameat2(RENAME_EXCHANGE)`), and
//! the old one is deleted afterwards. The path is never empty, not even for
//! a process killed with SIGKILL at any instant, and two commands replacing
//! the same file one after the other each find a file there. A rename
//! over the old file would be as atomic, but ext4 then writes the new
//! file's data back before the rename returns (its `auto_da_alloc`
//! safeguard: over half a second per GiB); an exchange does not.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use rustix::fs::{AtFlags, CWD, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::cleanup::{Pending, pending, unregister_locked};
use super::input::{O_NONBLOCK, Sink, not_regular};

mod allowance;

pub use allowance::Allowance;

/// An output file written atomically: to a temporary file in the same
/// directory, given its name by [`Output::commit`]. Dropped without
/// commit, it leaves nothing behind and the old file as it was. `-` writes
/// standard output.
///
/// An existing file at the path stays there, untouched, until the commit
/// puts the new file in its place in one step (see the module's
/// documentation).
///
/// # Examples
///
/// ```
/// use std::io::Write;
/// use offload_kit::files::Output;
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("report.txt");
/// std::fs::write(&path, b"old")?;
/// let mut out = Output::create(&path)?;
/// out.write_all(b"new")?;
/// assert_eq!(std::fs::read(&path)?, b"old");
/// out.commit()?;
/// assert_eq!(std::fs::read(&path)?, b"new");
///
/// // Dropped without a commit: the old file stays, nothing is left beside it.
/// let mut out = Output::create(&path)?;
/// out.write_all(b"half")?;
/// drop(out);
/// assert_eq!(std::fs::read(&path)?, b"new");
/// assert_eq!(std::fs::read_dir(dir.path())?.count(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Output {
    inner: OutInner,
    /// Where a temporary file goes (none for standard output and
    /// devices).
    place: Option<Place>,
    /// What the output's bytes count against ([`Output::within`]).
    allowance: Option<Arc<Allowance>>,
    /// The bytes counted against it so far.
    counted: u64,
}

/// The names of an output written through a temporary file, all in one
/// directory handle, and its entry in the list of pending outputs
/// (`cleanup.rs`).
struct Place {
    dir: Arc<OwnedFd>,
    /// The temporary file's name: `None` for a file with no name
    /// (`O_TMPFILE`), which a killed process leaves nowhere.
    temp: Option<OsString>,
    /// The output's file name.
    name: OsString,
    id: u64,
}

enum OutInner {
    Temp(io::BufWriter<File>),
    /// A character device (`/dev/null`, a terminal) or a FIFO with a
    /// reader, written in place.
    Device(io::BufWriter<File>),
    /// Standard output, locked for each write (not for the whole output:
    /// an output may be written from another thread than the one that
    /// created it).
    Stdout(io::Stdout),
    Done,
}

impl Drop for Output {
    fn drop(&mut self) {
        // Not committed: a named temporary file is removed, under the lock,
        // so that a signal finds it either still to remove or removed. A
        // file with no name goes with its descriptor.
        if let Some(p) = self.place.take() {
            // Nothing of it stays: what it counted is free again.
            let counted = usize::try_from(self.counted).unwrap_or(usize::MAX);
            self.give_back(counted);
            let mut list = pending();
            if let Some(temp) = &p.temp {
                let _ = rustix::fs::unlinkat(&*p.dir, temp, AtFlags::empty());
            }
            unregister_locked(&mut list, p.id);
        }
    }
}

/// A name in `dir` that no file has now, starting `prefix`: a temporary
/// file's (created with `O_EXCL`, or linked, so a name taken meanwhile is
/// never used).
fn fresh_name(prefix: &str, attempt: u32) -> OsString {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{prefix}{}-{n}-{:08x}",
        std::process::id(),
        stamp.wrapping_add(attempt)
    )
    .into()
}

/// How many names [`fresh_name`] may try before giving up.
const ATTEMPTS: u32 = 100;

fn no_free_name() -> io::Error {
    io::Error::new(io::ErrorKind::AlreadyExists, "no free temporary name")
}

/// The directory handle of the output begun last, for the next ones in
/// the same directory: `extract` may hold thousands of outputs open at
/// once in one directory, each with one descriptor, not two.
static LAST_DIR: Mutex<Option<(PathBuf, Weak<OwnedFd>)>> = Mutex::new(None);

/// A handle on the directory `dir` (`O_PATH`), shared with the outputs
/// being written there that opened the same directory.
fn open_dir(dir: &Path) -> io::Result<Arc<OwnedFd>> {
    let now = rustix::fs::stat(dir)?;
    let mut last = LAST_DIR.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((p, weak)) = &*last
        && p == dir
        && let Some(fd) = weak.upgrade()
        && let Ok(st) = rustix::fs::fstat(&*fd)
        && (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino)
    {
        return Ok(fd);
    }
    let fd = Arc::new(rustix::fs::openat(
        CWD,
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?);
    *last = Some((dir.to_path_buf(), Arc::downgrade(&fd)));
    Ok(fd)
}

/// Creates a new file in `dir` under a fresh name starting
/// `.offload-kit-`, for reading and writing, with `mode` less the umask.
fn create_temp(dir: &OwnedFd, mode: u32) -> io::Result<(File, OsString)> {
    for attempt in 0..ATTEMPTS {
        let name = fresh_name(".offload-kit-", attempt);
        match rustix::fs::openat(
            dir,
            &name,
            OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        ) {
            Ok(fd) => return Ok((File::from(fd), name)),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(no_free_name())
}

/// A file with no name in `dir` (`O_TMPFILE`) with `mode` less the umask,
/// for reading and writing; `None` where the file system has none.
fn tmpfile(dir: &OwnedFd, mode: u32) -> io::Result<Option<File>> {
    match rustix::fs::openat(
        dir,
        ".",
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    ) {
        Ok(fd) => Ok(Some(File::from(fd))),
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::NOENT | Errno::INVAL) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A file with no name in `dir`, for reading and writing: `O_TMPFILE`, or
/// where the file system has none, a file created and removed at once.
pub(crate) fn unnamed_file(dir: &OwnedFd) -> io::Result<File> {
    if let Some(f) = tmpfile(dir, 0o600)? {
        return Ok(f);
    }
    let (file, name) = create_temp(dir, 0o600)?;
    rustix::fs::unlinkat(dir, &name, AtFlags::empty())?;
    Ok(file)
}

/// Whether a file with no name can be given one (`linkat` of its
/// `/proc/self/fd` entry, which needs `/proc`): outputs are written with
/// no name only then.
fn can_link_unnamed() -> bool {
    static PROC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PROC.get_or_init(|| Path::new("/proc/self/fd").is_dir())
}

/// Gives `file` (with no name) the name `name` in `dir`; fails with
/// `EEXIST` when the name is taken.
fn link_unnamed(file: &File, dir: &OwnedFd, name: &OsStr) -> rustix::io::Result<()> {
    let fd_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    rustix::fs::linkat(CWD, fd_path.as_str(), dir, name, AtFlags::SYMLINK_FOLLOW)
}

/// Puts the file named `temp` in `dir` at `name` in one step: by exchanging
/// the two names when `name` exists (then deleting the old file, now at
/// `temp`), by a rename otherwise. A directory found at `name` is put back
/// and the commit fails.
fn replace(dir: &OwnedFd, temp: &OsStr, name: &OsStr) -> io::Result<()> {
    match rustix::fs::renameat_with(dir, temp, dir, name, RenameFlags::EXCHANGE) {
        Ok(()) => {
            match rustix::fs::unlinkat(dir, temp, AtFlags::empty()) {
                Ok(()) => Ok(()),
                Err(Errno::ISDIR | Errno::PERM) => {
                    // A directory was made at the path meanwhile: put it
                    // back.
                    let _ = rustix::fs::renameat_with(dir, temp, dir, name, RenameFlags::EXCHANGE);
                    Err(io::Error::from_raw_os_error(21)) // EISDIR
                }
                // The new file is in place; the old one is only left over.
                Err(_) => Ok(()),
            }
        }
        // Nothing at `name`, or a file system without exchange: a rename
        // (atomic too).
        Err(Errno::NOENT | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
            Ok(rustix::fs::renameat(dir, temp, dir, name)?)
        }
        Err(e) => Err(e.into()),
    }
}

/// A new id for an output's entry in the list of pending temporaries.
fn next_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Output {
    /// An output written to `inner`, counted against nothing yet.
    fn bare(inner: OutInner, place: Option<Place>) -> Output {
        Output {
            inner,
            place,
            allowance: None,
            counted: 0,
        }
    }

    /// The output, its bytes counted against `allowance` (with those of
    /// every other output counted against it): a write that would pass
    /// it fails, and so does the commit of a file that grew past it by
    /// other ways than writes (see [`Allowance`]). The output, then
    /// dropped, leaves nothing behind.
    pub fn within(mut self, allowance: &Arc<Allowance>) -> Output {
        self.allowance = Some(Arc::clone(allowance));
        self
    }

    /// Takes `n` bytes about to be written from the allowance, if any.
    fn take(&mut self, n: usize) -> io::Result<()> {
        if let Some(a) = &self.allowance {
            a.take(n as u64)?;
            self.counted += n as u64;
        }
        Ok(())
    }

    /// Gives back `n` bytes taken and not written.
    fn give_back(&mut self, n: usize) {
        if let Some(a) = &self.allowance {
            let n = (n as u64).min(self.counted);
            a.give_back(n);
            self.counted -= n;
        }
    }

    /// Counts what reached the temporary file by other ways than writes
    /// (a copy from file to file, a mapping: its length past what was
    /// counted) against the allowance: fails when that passes it. Done by
    /// [`Output::commit`]; for a caller that takes the file's bytes
    /// elsewhere without committing, first.
    pub(crate) fn settle(&mut self) -> io::Result<()> {
        let (Some(a), OutInner::Temp(w)) = (&self.allowance, &mut self.inner) else {
            return Ok(());
        };
        w.flush()?;
        let len = w.get_ref().metadata()?.len();
        if len > self.counted {
            a.take(len - self.counted)?;
            self.counted = len;
        }
        Ok(())
    }

    /// Starts writing the file `name` (one path component, which the
    /// caller made) in the existing directory `dir`, for a caller that
    /// writes many files there (`extract`). Unlike [`Output::create`], no
    /// link is followed and no special file is written in place: the
    /// temporary file is renamed over whatever holds the name (a directory
    /// there makes the commit fail). `dir` is still looked up each time
    /// (two system calls, its handle kept between calls), so a directory
    /// moved away meanwhile is an error, not written into where it went.
    pub fn create_in(dir: &Path, name: &OsStr) -> io::Result<Output> {
        Output::temporary(open_dir(dir)?, name)
    }

    /// Starts writing the file `name` in the directory whose handle is
    /// `dir` (a file of a tree reached through its directory, never by
    /// its path): as [`Output::create_in`], the temporary file created and
    /// given the name in that directory.
    pub(crate) fn create_at(dir: Arc<OwnedFd>, name: &OsStr) -> io::Result<Output> {
        Output::temporary(dir, name)
    }

    /// The handle of the directory the output is written in and the name
    /// it takes there; `None` for standard output and devices.
    pub(crate) fn place(&self) -> Option<(&OwnedFd, &OsStr)> {
        self.place.as_ref().map(|p| (&*p.dir, p.name.as_os_str()))
    }

    /// A new temporary file in `dir`, with no name where it can have
    /// none, else registered to be removed on a signal and on drop; it
    /// becomes `name` on commit.
    fn temporary(dir: Arc<OwnedFd>, name: &OsStr) -> io::Result<Output> {
        // Registered under the lock, so a signal finds every temporary.
        let mut list = pending();
        // Created with mode 0666, which the kernel reduces by the umask:
        // the mode a tool's output gets.
        let unnamed = if can_link_unnamed() {
            tmpfile(&dir, 0o666)?
        } else {
            None
        };
        let (file, temp) = match unnamed {
            Some(f) => (f, None),
            None => create_temp(&dir, 0o666).map(|(f, n)| (f, Some(n)))?,
        };
        let id = next_id();
        list.push(Pending {
            id,
            dir: Arc::clone(&dir),
            temp: temp.clone(),
        });
        drop(list);
        // From here on, dropping the output removes the temporary file.
        let place = Place {
            dir,
            temp,
            name: name.to_os_string(),
            id,
        };
        Ok(Output::bare(
            OutInner::Temp(io::BufWriter::with_capacity(1 << 16, file)),
            Some(place),
        ))
    }

    /// Starts writing `path`.
    pub fn create(path: &Path) -> io::Result<Output> {
        if path.as_os_str() == "-" {
            let inner = OutInner::Stdout(io::stdout());
            return Ok(Output::bare(inner, None));
        }
        // A symbolic link is written through, as LLVM's tools (which open
        // the path) write it: the file it leads to is replaced, never the
        // link. A link into /proc (`/dev/stdout`, `/dev/fd/N`) names an
        // open file, which is written in place.
        let resolved = follow_links(path)?;
        let path = resolved.as_path();
        // A name ending in a slash names a directory (to open(2) too).
        if path.is_dir() || path.as_os_str().as_encoded_bytes().ends_with(b"/") {
            return Err(io::Error::from_raw_os_error(21)); // EISDIR
        }
        if path.starts_with("/proc") && path != Path::new("/proc") {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(path)?;
            return Ok(Output::bare(
                OutInner::Device(io::BufWriter::new(file)),
                None,
            ));
        }
        // An existing path that is not a regular file is not renamed over
        // (as root, `-o /dev/null` replaced the device with a file): a
        // character device, or a FIFO with a reader (`-o >(gzip > f)`), is
        // written in place; anything else is refused.
        if let Ok(meta) = std::fs::metadata(path)
            && !meta.is_file()
        {
            use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
            let t = meta.file_type();
            let file = if t.is_fifo() {
                // Without a reader, a plain open would wait for one. The
                // descriptor that found the reader is the one written
                // (blocking again): closed and opened anew, it would let a
                // reader such as `cat` see the end of its input first.
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(O_NONBLOCK)
                    .open(path)
                    .map_err(|e| match e.raw_os_error() {
                        Some(6) => io::Error::new(
                            io::ErrorKind::BrokenPipe,
                            "a FIFO that nothing reads (ENXIO)",
                        ),
                        _ => e,
                    })?;
                let flags = rustix::fs::fcntl_getfl(&file)?;
                rustix::fs::fcntl_setfl(&file, flags - OFlags::NONBLOCK)?;
                file
            } else if t.is_char_device() {
                std::fs::OpenOptions::new().write(true).open(path)?
            } else {
                return Err(not_regular(&meta));
            };
            return Ok(Output::bare(
                OutInner::Device(io::BufWriter::new(file)),
                None,
            ));
        }
        let (dir, name) = match (path.parent(), path.file_name()) {
            (Some(p), Some(n)) if !p.as_os_str().is_empty() => (p, n),
            (_, Some(n)) => (Path::new("."), n),
            (_, None) => return Err(io::Error::from_raw_os_error(21)), // EISDIR
        };
        Output::temporary(open_dir(dir)?, name)
    }

    /// The underlying file, flushed, for direct file-to-file copies.
    pub(super) fn file_mut(&mut self) -> Option<&mut File> {
        match &mut self.inner {
            OutInner::Temp(w) | OutInner::Device(w) => {
                w.flush().ok()?;
                Some(w.get_mut())
            }
            OutInner::Stdout(_) | OutInner::Done => None,
        }
    }

    /// The temporary file of an output to a path, flushed (for mapping it
    /// and writing it in place; its length is the output's once
    /// committed); `None` for standard output and devices.
    pub fn temp_file(&mut self) -> Option<&File> {
        match &mut self.inner {
            OutInner::Temp(w) => {
                w.flush().ok()?;
                Some(w.get_ref())
            }
            OutInner::Device(_) | OutInner::Stdout(_) | OutInner::Done => None,
        }
    }

    /// A new file with no name in the output's directory (through the
    /// handle the output holds), for scratch data as large as the output:
    /// `None` for standard output and devices, which have no directory of
    /// their own.
    pub fn scratch_file(&self) -> Option<io::Result<File>> {
        self.place.as_ref().map(|p| unnamed_file(&p.dir))
    }

    /// Gives an output written through a temporary file another name in
    /// its directory (one path component), for a writer that learns the
    /// name from what it wrote (a blob named by its digest).
    pub(crate) fn rename(&mut self, name: &OsStr) {
        if let Some(p) = self.place.as_mut() {
            p.name = name.to_os_string();
        }
    }

    /// Puts the finished file in place, in one step (the old file, if
    /// any, is then deleted).
    pub fn commit(mut self) -> io::Result<()> {
        self.settle()?;
        let inner = std::mem::replace(&mut self.inner, OutInner::Done);
        match inner {
            OutInner::Temp(w) => {
                // Written before it is named; on an error, `self` dropped
                // removes the temporary file.
                let file = w.into_inner().map_err(|e| e.into_error())?;
                let Some(p) = self.place.take() else {
                    return Ok(());
                };
                // Under the lock: a signal finds the output either still
                // pending or in place.
                let mut list = pending();
                let placed = match &p.temp {
                    Some(temp) => replace(&p.dir, temp, &p.name),
                    None => place_unnamed(&file, &p.dir, &p.name),
                };
                if let Err(e) = placed {
                    drop(list);
                    self.place = Some(p);
                    return Err(e);
                }
                unregister_locked(&mut list, p.id);
                Ok(())
            }
            OutInner::Stdout(mut s) => s.flush(),
            OutInner::Device(mut w) => w.flush(),
            OutInner::Done => Ok(()),
        }
    }
}

/// Gives the unnamed `file` the name `name` in `dir`: linked there when
/// the name is free, else linked under a fresh name that then replaces
/// the old file ([`replace`]).
fn place_unnamed(file: &File, dir: &OwnedFd, name: &OsStr) -> io::Result<()> {
    match link_unnamed(file, dir, name) {
        Ok(()) => return Ok(()),
        Err(Errno::EXIST) => {}
        Err(e) => return Err(e.into()),
    }
    for attempt in 0..ATTEMPTS {
        let temp = fresh_name(".offload-kit-", attempt);
        match link_unnamed(file, dir, &temp) {
            Ok(()) => {
                let r = replace(dir, &temp, name);
                if r.is_err() {
                    let _ = rustix::fs::unlinkat(dir, &temp, AtFlags::empty());
                }
                return r;
            }
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(no_free_name())
}

/// `path` with symbolic links followed to the path they lead to (which
/// need not exist: a dangling link names the file to create); a link into
/// `/proc` (such as `/dev/stdout`) is followed only to the `/proc` path.
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    // As the kernel: at most 40 links.
    for _ in 0..40 {
        // In /proc (`/dev/fd/N` is `/proc/self/fd/N`), links name open
        // files, not paths to follow.
        if let (Some(dir), Some(name)) = (p.parent(), p.file_name()) {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            if let Ok(real) = std::fs::canonicalize(dir)
                && real.starts_with("/proc")
            {
                return Ok(real.join(name));
            }
        }
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::from_raw_os_error(40)) // ELOOP
}

impl Sink for Output {
    fn file(&mut self) -> Option<&mut File> {
        self.file_mut()
    }
}

impl Seek for Output {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        match &mut self.inner {
            OutInner::Temp(w) => w.seek(pos),
            OutInner::Device(w) => w.seek(pos),
            OutInner::Stdout(_) | OutInner::Done => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this output must be a file, not standard output",
            )),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.take(buf.len())?;
        let r = match &mut self.inner {
            OutInner::Temp(w) => w.write(buf),
            OutInner::Device(w) => w.write(buf),
            OutInner::Stdout(s) => s.write(buf),
            OutInner::Done => Err(io::ErrorKind::BrokenPipe.into()),
        };
        self.give_back(buf.len() - r.as_ref().map_or(0, |&n| n));
        r
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.take(buf.len())?;
        match &mut self.inner {
            OutInner::Temp(w) => w.write_all(buf),
            OutInner::Device(w) => w.write_all(buf),
            OutInner::Stdout(s) => s.write_all(buf),
            OutInner::Done => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            OutInner::Temp(w) => w.flush(),
            OutInner::Device(w) => w.flush(),
            OutInner::Stdout(s) => s.flush(),
            OutInner::Done => Ok(()),
        }
    }
}

/// A writer to an [`Output`] that keeps its first error, to tell which of
/// several outputs written together failed.
///
/// # Examples
///
/// ```
/// use std::io::Write;
/// use offload_kit::files::{Noting, Output};
///
/// let dir = tempfile::tempdir()?;
/// let mut out = Output::create(&dir.path().join("a.txt"))?;
/// let mut error = None;
/// writeln!(Noting::new(&mut out, &mut error), "line")?;
/// assert!(error.is_none());
/// out.commit()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Noting<'a> {
    out: &'a mut Output,
    error: &'a mut Option<io::Error>,
}

impl<'a> Noting<'a> {
    /// Writes to `out`, keeping its first error in `error`.
    pub fn new(out: &'a mut Output, error: &'a mut Option<io::Error>) -> Noting<'a> {
        Noting { out, error }
    }
}

impl Write for Noting<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf).inspect_err(|e| {
            self.error.get_or_insert_with(|| match e.raw_os_error() {
                Some(code) => io::Error::from_raw_os_error(code),
                None => io::Error::new(e.kind(), e.to_string()),
            });
        })
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests;

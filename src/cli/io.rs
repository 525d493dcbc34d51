//! File input and output at the binary's edge: mapped inputs, atomic outputs,
//! and file-to-file copies of image ranges.
//!
//! This is the only module with `unsafe`: mapping a file.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// An input file, mapped (or read, for stdin and special files).
pub struct Input {
    file: Option<File>,
    data: Data,
}

enum Data {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

/// Inputs at least this large keep their file open for file-to-file copies
/// (and reflinks); smaller ones are only mapped.
pub const KEEP_FILE_FROM: u64 = 1 << 20;

/// Most bytes read from standard input (or from a regular file whose size
/// reads as 0, as `/proc` files do), which cannot be mapped: 4 GiB. More is
/// an error, so `/dev/zero` piped in cannot exhaust memory.
pub const MAX_STREAM_BYTES: u64 = 4 << 30;

/// `O_NONBLOCK` on Linux (x86-64 and AArch64): opening a FIFO that has no
/// writer returns at once instead of waiting for one.
const O_NONBLOCK: i32 = 0o4000;

/// The error for an input that is neither a regular file nor a directory.
fn not_regular(meta: &std::fs::Metadata) -> io::Error {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    let what = if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    };
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file ({what})"),
    )
}

/// Most bytes read from a character device given as an input: 64 MiB.
/// `/dev/null` is an empty input (the clang driver passes it to
/// clang-offload-bundler as the host of a HIP fatbin); `/dev/zero` or
/// `/dev/urandom` is an error after that much, at once.
pub const MAX_DEVICE_BYTES: u64 = 64 << 20;

/// Reads all of `r`, failing beyond `max` bytes (`what` says from where).
fn read_bounded(r: impl Read, max: u64, what: &str) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    r.take(max + 1).read_to_end(&mut v)?;
    if v.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "{what} that gives more than {} MiB (the most read into memory)",
                max >> 20
            ),
        ));
    }
    Ok(v)
}

/// Opens `path` for reading without blocking (a FIFO without a writer
/// opens at once), with its metadata.
fn open_nonblocking(path: &Path) -> io::Result<(File, std::fs::Metadata)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    Ok((file, meta))
}

impl Input {
    /// Opens `name` (`-` is standard input, read up to
    /// [`MAX_STREAM_BYTES`]), mapping regular files. A character device is
    /// read up to [`MAX_DEVICE_BYTES`]; a FIFO, a socket or a block device
    /// is an error. Opening never blocks.
    pub fn open(name: &str) -> io::Result<Input> {
        if name == "-" {
            let v = read_bounded(io::stdin().lock(), MAX_STREAM_BYTES, "standard input")?;
            return Ok(Input {
                file: None,
                data: Data::Owned(v),
            });
        }
        let (file, meta) = open_nonblocking(Path::new(name))?;
        if meta.is_dir() {
            return Err(io::Error::from_raw_os_error(21)); // EISDIR, as LLVM reports
        }
        if std::os::unix::fs::FileTypeExt::is_char_device(&meta.file_type()) {
            let v = read_bounded(&file, MAX_DEVICE_BYTES, "a character device")?;
            return Ok(Input {
                file: None,
                data: Data::Owned(v),
            });
        }
        if !meta.is_file() {
            return Err(not_regular(&meta));
        }
        if meta.len() == 0 {
            let v = read_bounded(&file, MAX_STREAM_BYTES, "a file of size 0")?;
            return Ok(Input {
                file: None,
                data: Data::Owned(v),
            });
        }
        let map = map_file(&file)?;
        // The mapping outlives the descriptor; keeping the descriptor only
        // for large files (copied file to file) lets a command take
        // thousands of small inputs without running out of descriptors.
        let keep = meta.len() >= KEEP_FILE_FROM;
        Ok(Input {
            file: keep.then_some(file),
            data: Data::Map(map),
        })
    }

    /// Bytes made in memory (a decompressed bundle, say), as an input.
    pub fn from_vec(v: Vec<u8>) -> Input {
        Input {
            file: None,
            data: Data::Owned(v),
        }
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.data {
            Data::Map(m) => m,
            Data::Owned(v) => v,
        }
    }

    /// The contents, owned by a box: what a scan gets for a thin archive's
    /// member.
    pub fn boxed(self) -> Box<dyn AsRef<[u8]>> {
        Box::new(self)
    }

    /// Where `sub` lies in the underlying file, if it is a slice of this
    /// input's mapping (and not, say, decompressed data).
    pub fn file_offset(&self, sub: &[u8]) -> Option<u64> {
        let Data::Map(_) = self.data else {
            return None;
        };
        let base = self.bytes().as_ptr() as usize;
        let start = sub.as_ptr() as usize;
        let end = start.checked_add(sub.len())?;
        (start >= base && end <= base + self.bytes().len()).then(|| (start - base) as u64)
    }

    /// Copies `sub` (a slice of this input, or any bytes) to `out`, with a
    /// kernel file-to-file copy when `sub` comes from a mapped file of at
    /// least [`KEEP_FILE_FROM`] bytes, so the bytes never pass through this
    /// process's memory (smaller ones are written from the mapping).
    pub fn copy_to(&self, sub: &[u8], out: &mut Output) -> io::Result<()> {
        if let (Some(off), Some(file), Some(dst)) =
            (self.file_offset(sub), &self.file, out.file_mut())
        {
            return copy_file_range_all(file, off, sub.len() as u64, dst);
        }
        out.write_all(sub)
    }
}

impl AsRef<[u8]> for Input {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

/// Copies `len` bytes at `off` of `src` to the current position of `dst`.
pub fn copy_file_range_all(src: &File, off: u64, len: u64, dst: &mut File) -> io::Result<()> {
    let mut src = src;
    src.seek(SeekFrom::Start(off))?;
    // std's io::copy uses copy_file_range/sendfile between files on Linux.
    let n = io::copy(&mut src.take(len), dst)?;
    if n != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "input file shrank while reading",
        ));
    }
    Ok(())
}

#[expect(
    unsafe_code,
    reason = "mapping a file is the one unsafe operation of the crate"
)]
fn map_file(file: &File) -> io::Result<memmap2::Mmap> {
    // SAFETY: the mapping is read-only and private to this process. If another
    // process truncates the file while we read it, we get SIGBUS, as every
    // tool that maps its input does (ripgrep documents the same contract);
    // the contents changing underneath only changes what we read, and every
    // read is bounds-checked against the length fixed at map time.
    unsafe { memmap2::Mmap::map(file) }
}

/// An output file written atomically: to a temporary file in the same
/// directory, renamed into place by [`Output::commit`]. Dropped without
/// commit, it leaves nothing behind and the old file as it was. `-` writes
/// standard output.
///
/// An existing file at the path is first moved aside (renamed to a fresh
/// name), and deleted only once the new file is in place. The reason is
/// ext4: renaming a file *over* an existing one makes it write the new
/// file's data back first (its `auto_da_alloc` safeguard), which costs over a
/// second per GiB, more than producing the file; a rename to a free name does
/// not. Between the two renames the path briefly does not exist, but it never
/// holds a partial file.
pub struct Output {
    path: PathBuf,
    inner: OutInner,
    aside: Option<PathBuf>,
    /// Its entry in [`PENDING`] (0 for standard output).
    pending: u64,
}

/// An output being written, for the signal handler: its temporary file,
/// and the old file moved aside (to be put back at `path`).
struct Pending {
    id: u64,
    temp: PathBuf,
    aside: Option<PathBuf>,
    path: PathBuf,
}

/// Every output being written now (outputs are written on several threads
/// by `extract`).
static PENDING: std::sync::Mutex<Vec<Pending>> = std::sync::Mutex::new(Vec::new());

fn pending() -> std::sync::MutexGuard<'static, Vec<Pending>> {
    PENDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn unregister(id: u64) {
    if id != 0 {
        pending().retain(|p| p.id != id);
    }
}

/// Starts a thread that, on SIGINT, SIGTERM or SIGHUP, removes every
/// temporary output and puts back every old file moved aside, then ends the
/// process as the signal would have (so no `.offload-kit-*` file outlives
/// an interrupted command). Called once, at start.
pub fn clean_up_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            // Held until the process ends: no output starts or commits
            // after the clean-up.
            let list = pending();
            for p in list.iter() {
                let _ = std::fs::remove_file(&p.temp);
                if let Some(old) = &p.aside {
                    let _ = std::fs::rename(old, &p.path);
                }
            }
            let _ = signal_hook::low_level::emulate_default_handler(sig);
            std::process::exit(128 + sig);
        }
    });
}

enum OutInner {
    Temp(io::BufWriter<tempfile::NamedTempFile>),
    /// A character device (`/dev/null`, a terminal) or a FIFO with a
    /// reader, written in place.
    Device(io::BufWriter<File>),
    Stdout(io::StdoutLock<'static>),
    Done,
}

impl Drop for Output {
    fn drop(&mut self) {
        // Not committed: put the old file back (the temporary file removes
        // itself).
        if let Some(old) = self.aside.take() {
            let _ = std::fs::rename(old, &self.path);
        }
        unregister(self.pending);
    }
}

/// A name in `dir` that no file has now, for moving an old output aside.
fn free_name(dir: &Path) -> io::Result<PathBuf> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for n in 0..100u32 {
        let p = dir.join(format!(
            ".offload-kit-old-{}-{stamp:08x}-{n}",
            std::process::id()
        ));
        if std::fs::symlink_metadata(&p).is_err() {
            return Ok(p);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary name",
    ))
}

impl Output {
    /// Starts writing `path`.
    pub fn create(path: &Path) -> io::Result<Output> {
        if path.as_os_str() == "-" {
            let inner = OutInner::Stdout(io::stdout().lock());
            return Ok(Output {
                path: path.into(),
                inner,
                aside: None,
                pending: 0,
            });
        }
        if path.is_dir() {
            return Err(io::Error::from_raw_os_error(21)); // EISDIR
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
            if t.is_fifo() {
                // Without a reader, a plain open would wait for one.
                std::fs::OpenOptions::new()
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
            } else if !t.is_char_device() {
                return Err(not_regular(&meta));
            }
            let file = std::fs::OpenOptions::new().write(true).open(path)?;
            return Ok(Output {
                path: path.into(),
                inner: OutInner::Device(io::BufWriter::new(file)),
                aside: None,
                pending: 0,
            });
        }
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        // Registered under the lock, so a signal finds every temporary.
        let mut list = pending();
        // Created with mode 0666, which the kernel reduces by the umask: the
        // mode a tool's output gets (tempfile's default is 0600).
        let tmp = tempfile::Builder::new()
            .prefix(".offload-kit-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)?;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let aside = match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_file() => {
                let name = free_name(dir)?;
                std::fs::rename(path, &name)?;
                Some(name)
            }
            _ => None,
        };
        list.push(Pending {
            id,
            temp: tmp.path().to_path_buf(),
            aside: aside.clone(),
            path: path.into(),
        });
        drop(list);
        let inner = OutInner::Temp(io::BufWriter::with_capacity(1 << 16, tmp));
        Ok(Output {
            path: path.into(),
            inner,
            aside,
            pending: id,
        })
    }

    /// The underlying file, flushed, for direct file-to-file copies.
    fn file_mut(&mut self) -> Option<&mut File> {
        match &mut self.inner {
            OutInner::Temp(w) => {
                w.flush().ok()?;
                Some(w.get_mut().as_file_mut())
            }
            OutInner::Device(w) => {
                w.flush().ok()?;
                Some(w.get_mut())
            }
            OutInner::Stdout(_) | OutInner::Done => None,
        }
    }

    /// Renames the finished file into place (and deletes the old file).
    pub fn commit(mut self) -> io::Result<()> {
        let inner = std::mem::replace(&mut self.inner, OutInner::Done);
        match inner {
            OutInner::Temp(w) => {
                let tmp = w.into_inner().map_err(|e| e.into_error())?;
                tmp.persist(&self.path).map_err(|e| e.error)?;
                // In place: a signal from now on leaves it there.
                unregister(std::mem::take(&mut self.pending));
                if let Some(old) = self.aside.take() {
                    let _ = std::fs::remove_file(old);
                }
                Ok(())
            }
            OutInner::Stdout(mut s) => s.flush(),
            OutInner::Device(mut w) => w.flush(),
            OutInner::Done => Ok(()),
        }
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
        match &mut self.inner {
            OutInner::Temp(w) => w.write(buf),
            OutInner::Device(w) => w.write(buf),
            OutInner::Stdout(s) => s.write(buf),
            OutInner::Done => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
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

/// A file-name component made safe: only `[A-Za-z0-9._+-]`, no leading dot,
/// never empty, at most `max` bytes: what the commands that write files
/// derive names from (triples, arches, bundle IDs, input stems) goes through
/// this, whatever a file says.
pub fn safe_component(s: &str, max: usize) -> String {
    let mut t: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._+-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if t.starts_with('.') {
        t.replace_range(..1, "_");
    }
    t.truncate(max);
    if t.is_empty() { "none".into() } else { t }
}

/// `s` safe to show on a terminal or in a CI log: control characters (C0,
/// DEL, C1, among them ESC, CR and LF) and the bidirectional-text controls
/// become visible escapes (`\e`, `\r`, `\n`, `\x07`, `\u{9b}`, `\u{202e}`),
/// so a name from a file can neither send terminal commands nor start a
/// line of its own. Everything else, backslashes included, stays as it is.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    let bad =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !s.chars().any(bad) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if bad(c) && u32::from(c) < 0x80 => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if bad(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Writes `line` made [`printable`], then a newline: how the native
/// commands print every human-readable line that holds text from a file.
pub fn print_line<W: Write + ?Sized>(out: &mut W, line: &str) -> io::Result<()> {
    writeln!(out, "{}", printable(line))
}

/// The C library's text for an I/O error (what LLVM prints), without Rust's
/// " (os error N)" suffix or any path a library added.
pub fn strerror(e: &io::Error) -> String {
    let s = match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code).to_string(),
        None => e.to_string(),
    };
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// `e` as one line: its context chain joined by ": ", each I/O error as the
/// C library's text ([`strerror`]) and Rust's " (os error N)" suffix
/// removed from the rest; a cause that repeats the one before is left out.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = match cause.downcast_ref::<io::Error>() {
            Some(io) => strerror(io),
            None => strip_os_error(&cause.to_string()),
        };
        if parts.last().is_none_or(|last| !last.ends_with(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

/// `s` without any " (os error N)".
fn strip_os_error(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(" (os error ") {
        let tail = &rest[i + " (os error ".len()..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail[digits..].starts_with(')') {
            out.push_str(&rest[..i]);
            rest = &tail[digits + 1..];
        } else {
            out.push_str(&rest[..i + 1]);
            rest = &rest[i + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// The file of a thin archive's member `name`: relative to the archive's
/// directory unless absolute, as `ar`, linkers and LLVM resolve it.
pub fn thin_member_path(archive: &Path, name: &str) -> PathBuf {
    archive.parent().unwrap_or(Path::new("")).join(name)
}

/// Opens an input, with the file name in the error.
pub fn open_input(name: &str) -> Result<Input> {
    Input::open(name).with_context(|| format!("'{name}': cannot open"))
}

/// Writes `layout` atomically to `path`, taking payload `i` from
/// `payload(i)`: the input it lies in and the bytes (copied file to file
/// when they are a slice of that input's mapping).
pub fn write_layout<'a>(
    path: &str,
    layout: &offload_kit::layout::Layout,
    payload: impl Fn(usize) -> (&'a Input, &'a [u8]),
) -> io::Result<()> {
    use offload_kit::layout::{Piece, write_zeros};
    let mut out = Output::create(Path::new(path))?;
    for piece in &layout.pieces {
        match piece {
            Piece::Bytes(b) => out.write_all(b)?,
            Piece::Zeros(n) => write_zeros(&mut out, *n)?,
            Piece::Image(i) => {
                let (input, bytes) = payload(*i);
                input.copy_to(bytes, &mut out)?;
            }
        }
    }
    out.commit()
}

/// Writes an object made by `offload_kit::bundle::object` to `path`:
/// `sources[k]` is span source `k` and the input its bytes lie in, so the
/// spans are copied file to file.
pub fn write_object(
    path: &str,
    w: &offload_kit::bundle::object::Written,
    sources: &[(&Input, &[u8])],
) -> io::Result<()> {
    let views: Vec<&[u8]> = sources.iter().map(|s| s.1).collect();
    let images: Vec<(&Input, &[u8])> = w
        .spans
        .iter()
        .enumerate()
        .map(|(k, s)| Some((sources.get(s.source)?.0, w.image(k, &views)?)))
        .collect::<Option<_>>()
        .ok_or_else(|| io::Error::other("internal error: object layout out of range"))?;
    write_layout(path, &w.layout, |k| images[k])
}

/// Writes `bytes` (a slice of `input`, or any bytes) atomically to `path`.
pub fn write_bytes(path: &str, input: &Input, bytes: &[u8]) -> io::Result<()> {
    let mut out = Output::create(Path::new(path))?;
    input.copy_to(bytes, &mut out)?;
    out.commit()
}

#[cfg(test)]
mod error_text_tests {
    use super::*;

    #[test]
    fn os_error_suffixes_and_repeats_go() {
        assert_eq!(strip_os_error("a (os error 2) b (os error 13)"), "a b");
        assert_eq!(
            strip_os_error("keep (os error x) (os error"),
            "keep (os error x) (os error"
        );
        let missing = io::Error::from_raw_os_error(2);
        let e = anyhow::Error::new(missing).context("'f': cannot open");
        assert_eq!(
            error_text(&e),
            "'f': cannot open: No such file or directory"
        );
        // A library's own wrapping (the path a temporary file had).
        let wrapped = io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} at path \"/d/.tmp123\"", io::Error::from_raw_os_error(2)),
        );
        let e = anyhow::Error::new(wrapped).context("'/d/x': cannot write");
        assert_eq!(
            error_text(&e),
            "'/d/x': cannot write: No such file or directory"
        );
    }
}

#[cfg(test)]
mod output_tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn umask() -> u32 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find_map(|l| l.strip_prefix("Umask:"));
        u32::from_str_radix(line.unwrap().trim(), 8).unwrap()
    }

    #[test]
    fn a_new_output_gets_0666_less_the_umask_and_replaces_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.o");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut out = Output::create(&path).unwrap();
        out.write_all(b"new").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666 & !umask());
        // Nothing else is left in the directory: no temporary, no old file.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn dev_null_is_written_in_place_and_a_fifo_refused() {
        let mut out = Output::create(Path::new("/dev/null")).unwrap();
        out.write_all(b"discarded").unwrap();
        out.commit().unwrap();
        let meta = std::fs::metadata("/dev/null").unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_char_device(
            &meta.file_type()
        ));
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let st = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(st.success());
        // No reader: an error at once, not a wait for one.
        let e = Output::create(&fifo).err().unwrap();
        assert!(e.to_string().contains("a FIFO that nothing reads"), "{e}");
        // With a reader, written in place.
        let reader = std::process::Command::new("cat")
            .arg(&fifo)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = loop {
            match Output::create(&fifo) {
                Ok(o) => break o,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        };
        out.write_all(b"through the pipe").unwrap();
        out.commit().unwrap();
        let got = reader.wait_with_output().unwrap();
        assert_eq!(got.stdout, b"through the pipe");
        // Nothing was created beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_output_dropped_without_commit_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.o");
        std::fs::write(&path, b"old").unwrap();
        let mut out = Output::create(&path).unwrap();
        out.write_all(b"partial").unwrap();
        drop(out);
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}

#[cfg(test)]
mod printable_tests {
    use super::*;

    #[test]
    fn terminal_controls_become_visible() {
        assert_eq!(printable("gfx90a:xnack+"), "gfx90a:xnack+");
        assert!(matches!(printable("plain"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}]0;owned\u{7}b\u{1b}[2Jc\rd\ne\tf\u{7f}\u{9b}g\u{202e}h"),
            "a\\e]0;owned\\x07b\\e[2Jc\\rd\\ne\\tf\\x7f\\u{9b}g\\u{202e}h"
        );
        let mut v = Vec::new();
        print_line(&mut v, "id\nFAKE ROW").unwrap();
        assert_eq!(v, b"id\\nFAKE ROW\n");
    }
}

#[cfg(test)]
mod safe_component_tests {
    use super::*;

    #[test]
    fn names_from_files_cannot_escape_or_hide() {
        assert_eq!(
            safe_component("amdgcn-amd-amdhsa", 100),
            "amdgcn-amd-amdhsa"
        );
        assert_eq!(safe_component("gfx90a:xnack+", 100), "gfx90a_xnack+");
        assert_eq!(safe_component("../../etc/passwd", 100), "_._.._etc_passwd");
        assert_eq!(safe_component(".hidden", 100), "_hidden");
        assert_eq!(safe_component("", 100), "none");
        assert_eq!(safe_component("héllo wörld", 100), "h_llo_w_rld");
        assert_eq!(safe_component(&"x".repeat(500), 100).len(), 100);
    }
}

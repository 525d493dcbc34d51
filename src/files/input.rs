//! Inputs: regular files mapped into memory, standard input and character
//! devices read (bounded), every other kind of file refused without
//! blocking; and file-to-file copies out of a mapped input.
//!
//! This is the only module with `unsafe`: mapping a file, and giving back
//! the resident pages of a mapping (`MADV_DONTNEED`) while it is in use.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::mpsc;

/// An input file, mapped (or read, for stdin and special files).
///
/// # Examples
///
/// ```
/// use offload_kit::files::Input;
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("lib.so");
/// std::fs::write(&path, b"\x7fELF...")?;
/// let input = Input::open(path.to_str().unwrap())?;
/// assert!(input.bytes().starts_with(b"\x7fELF"));
/// // Directories and FIFOs are refused, without blocking.
/// assert!(Input::open(dir.path().to_str().unwrap()).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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

/// File offsets that allow a reflink: [`Input::copy_to`] copies file to
/// file in the kernel when both ends are multiples of this.
pub const COPY_BLOCK: u64 = 4096;

/// How many bytes [`Input::copy_to`] maps and writes at a time when it
/// writes from the mapping.
pub const COPY_CHUNK: usize = 8 << 20;

pub use crate::limits::MAX_STREAM_BYTES;

/// `O_NONBLOCK` on Linux (x86-64 and AArch64): opening a FIFO that has no
/// writer returns at once instead of waiting for one.
pub(super) const O_NONBLOCK: i32 = 0o4000;

/// The error for an input that is neither a regular file nor a directory.
pub(super) fn not_regular(meta: &std::fs::Metadata) -> io::Error {
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
    read_at_most(r, max)?.ok_or_else(|| too_much(what, max))
}

/// The error for `what` giving more than `max` bytes.
fn too_much(what: &str, max: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "{what} that gives more than {} MiB (the most read)",
            max >> 20
        ),
    )
}

/// Standard input, and a package member, up to this size is read into
/// memory; past it, into a temporary file.
pub const SPOOL_IN_MEMORY: u64 = 64 << 20;

/// Bytes [`copy_in_pieces`] reads and writes at a time: large enough that
/// system calls cost little, small enough to stay in the CPU's caches.
const PIECE: usize = 512 << 10;

/// Pieces [`copy_in_pieces`] lets wait for the writer.
const IN_FLIGHT: usize = 2;

/// Copies all of `r` to `w` in pieces of 512 KiB (`io::copy` takes 8 KiB at a
/// time, a system call each); returns the bytes copied. Reading (most
/// often decompressing) and writing overlap: a second thread writes each
/// piece while the next is read, and hands the buffer back. A failed
/// read or write stops both; the read's error is told first.
///
/// # Examples
///
/// ```
/// use offload_kit::files::copy_in_pieces;
///
/// let data = vec![7u8; 3 << 20];
/// let mut out = Vec::new();
/// let n = copy_in_pieces(&mut &data[..], &mut out)?;
/// assert_eq!(n, 3 << 20);
/// assert_eq!(out, data);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn copy_in_pieces(r: &mut dyn Read, w: &mut (dyn Write + Send)) -> io::Result<u64> {
    let (full_tx, full_rx) = mpsc::sync_channel::<(Vec<u8>, usize)>(IN_FLIGHT);
    let (empty_tx, empty_rx) = mpsc::channel::<Vec<u8>>();
    for _ in 0..=IN_FLIGHT {
        // Cannot fail: the receiver is alive.
        let _ = empty_tx.send(vec![0u8; PIECE]);
    }
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> io::Result<()> {
            for (buf, k) in full_rx {
                w.write_all(&buf[..k])?;
                // The reader may have stopped: then nobody wants it.
                let _ = empty_tx.send(buf);
            }
            Ok(())
        });
        let mut n = 0u64;
        let read = loop {
            // No buffer back means the writer stopped (its error follows).
            let Ok(mut buf) = empty_rx.recv() else {
                break Ok(());
            };
            let k = match r.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(k) => k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    let _ = full_tx.send((buf, 0));
                    continue;
                }
                Err(e) => break Err(e),
            };
            n += k as u64;
            if full_tx.send((buf, k)).is_err() {
                break Ok(());
            }
        };
        drop(full_tx);
        let written = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        read.and(written).map(|()| n)
    })
}

/// Opens `path` for reading without blocking (a FIFO without a writer
/// opens at once), with its metadata.
pub(crate) fn open_nonblocking(path: &Path) -> io::Result<(File, std::fs::Metadata)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    Ok((file, meta))
}

/// Opens the regular file `path` for reading, with its size: without
/// blocking (`O_NONBLOCK`; close-on-exec, as every open here), and
/// anything that is not a regular file once opened (a FIFO, a socket, a
/// device, a link to `/dev/zero`, a directory) refused before a byte is
/// read. For small files read whole ([`read_at_most`]): the JSON of
/// container images.
pub(crate) fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    let (file, meta) = open_nonblocking(path)?;
    if meta.is_dir() {
        return Err(io::Error::from_raw_os_error(21)); // EISDIR
    }
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    Ok((file, meta.len()))
}

/// [`open_regular`] for the file `name` in the directory whose handle is
/// `dir`, a symbolic link there refused (`O_NOFOLLOW`: `ELOOP`), not
/// followed, and with no controlling terminal taken (`O_NOCTTY`).
pub(crate) fn open_regular_at(
    dir: &impl std::os::fd::AsFd,
    name: &std::ffi::OsStr,
) -> io::Result<(File, u64)> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY;
    let file = File::from(rustix::fs::openat(
        dir,
        name,
        flags | OFlags::CLOEXEC,
        Mode::empty(),
    )?);
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::from_raw_os_error(21)); // EISDIR
    }
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    Ok((file, meta.len()))
}

/// What `r` gives, read to its end, or `None` when that is more than
/// `max` bytes (never more than `max + 1` are read, so a file that grows
/// while it is read costs no more).
pub(crate) fn read_at_most(r: impl Read, max: u64) -> io::Result<Option<Vec<u8>>> {
    let mut v = Vec::new();
    r.take(max.saturating_add(1)).read_to_end(&mut v)?;
    Ok((v.len() as u64 <= max).then_some(v))
}

/// Why a small file was not read whole ([`read_small`]).
#[derive(Debug)]
pub(crate) enum Small {
    /// It could not be opened, or is not a regular file.
    Open(io::Error),
    /// It holds more bytes than the cap.
    Big,
    /// Reading it failed.
    Read(io::Error),
}

/// The whole of the small file `opened` gives (its handle and size, as
/// [`open_regular`] or [`open_regular_at`] return them), when that is at
/// most `cap` bytes: the JSON documents of a container image. What is
/// not a regular file was refused as it was opened, before a byte is
/// read; one that grows past `cap` while it is read is refused too.
pub(crate) fn read_small(opened: io::Result<(File, u64)>, cap: u64) -> Result<Vec<u8>, Small> {
    let (file, len) = opened.map_err(Small::Open)?;
    if len > cap {
        return Err(Small::Big);
    }
    match read_at_most(file, cap) {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(Small::Big),
        Err(e) => Err(Small::Read(e)),
    }
}

/// Mappings at least this large are given back by [`Input::close`] on a
/// thread of their own.
pub const CLOSE_APART_FROM: usize = 64 << 20;

impl Input {
    /// Drops this input. A mapping of at least [`CLOSE_APART_FROM`] bytes
    /// is given back on a thread of its own while the caller goes on:
    /// taking down the page tables of a large file takes a while (about
    /// 20 ms for 500 MB), time a command can spend printing its report.
    /// The pages go [`COPY_CHUNK`] bytes at a time before the mapping is
    /// unmapped: one `munmap` of it all would keep every other thread's
    /// `mmap` and `brk` (a growing buffer) waiting until it is done. If
    /// the process ends first, the kernel finishes the job.
    pub fn close(self) {
        if matches!(&self.data, Data::Map(m) if m.len() >= CLOSE_APART_FROM) {
            // A thread that cannot be started drops it here, with the
            // closure that owns it.
            let _ = std::thread::Builder::new()
                .name("unmap".into())
                .spawn(move || {
                    for chunk in self.bytes().chunks(COPY_CHUNK) {
                        self.release(chunk);
                    }
                });
        }
    }

    /// Opens `name` (`-` is standard input, read up to
    /// [`MAX_STREAM_BYTES`]), mapping regular files. A character device is
    /// read up to [`MAX_DEVICE_BYTES`]; a FIFO, a socket or a block device
    /// is an error. Opening never blocks.
    pub fn open(name: impl AsRef<Path>) -> io::Result<Input> {
        let name = name.as_ref();
        if name.as_os_str() == "-" {
            return Input::stdin();
        }
        let (file, meta) = open_nonblocking(name)?;
        Input::of_open(file, &meta)
    }

    /// The file `file` (with `meta`), opened: mapped when regular, read
    /// when a character device, else an error.
    pub(crate) fn of_open(file: File, meta: &std::fs::Metadata) -> io::Result<Input> {
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
            return Err(not_regular(meta));
        }
        if meta.len() == 0 {
            let v = read_bounded(&file, MAX_STREAM_BYTES, "a file of size 0")?;
            return Ok(Input {
                file: None,
                data: Data::Owned(v),
            });
        }
        Input::mapped(file, meta.len())
    }

    /// The regular file `file` of `len` bytes, mapped.
    fn mapped(file: File, len: u64) -> io::Result<Input> {
        let map = map_file(&file)?;
        // The mapping outlives the descriptor; keeping the descriptor only
        // for large files (copied file to file) lets a command take
        // thousands of small inputs without running out of descriptors.
        let keep = len >= KEEP_FILE_FROM;
        Ok(Input {
            file: keep.then_some(file),
            data: Data::Map(map),
        })
    }

    /// Standard input: mapped when it is a regular file read from its
    /// start (`< FILE`); else read, up to [`SPOOL_IN_MEMORY`] bytes into
    /// memory and the rest, with what came before, into an unlinked
    /// temporary file that is then mapped, so that memory does not grow
    /// with the input. More than [`MAX_STREAM_BYTES`] is an error.
    fn stdin() -> io::Result<Input> {
        use std::os::fd::AsFd;
        let fd = io::stdin().as_fd().try_clone_to_owned()?;
        let mut file = File::from(fd);
        let meta = file.metadata()?;
        if meta.is_file() && meta.len() > 0 && file.stream_position()? == 0 {
            return Input::mapped(file, meta.len());
        }
        Input::spool(&mut io::stdin().lock(), MAX_STREAM_BYTES)?
            .ok_or_else(|| too_much("standard input", MAX_STREAM_BYTES))
    }

    /// What `r` gives, read to its end: up to [`SPOOL_IN_MEMORY`] bytes
    /// into memory and the rest, with what came before, into an unlinked
    /// temporary file that is then mapped, so that memory does not grow
    /// with the stream. `None` when it gives more than `limit` bytes.
    pub(crate) fn spool(r: &mut dyn Read, limit: u64) -> io::Result<Option<Input>> {
        let mut r = r.take(limit.saturating_add(1));
        let mut head = Vec::new();
        (&mut r).take(SPOOL_IN_MEMORY).read_to_end(&mut head)?;
        if (head.len() as u64) < SPOOL_IN_MEMORY {
            return Ok((head.len() as u64 <= limit).then(|| Input::from_vec(head)));
        }
        let mut spool = tempfile::tempfile()?;
        spool.write_all(&head)?;
        drop(head);
        let n = SPOOL_IN_MEMORY + copy_in_pieces(&mut r, &mut spool)?;
        if n > limit {
            return Ok(None);
        }
        Input::from_temp_file(spool).map(Some)
    }

    /// Bytes made in memory (a decompressed bundle, say), as an input.
    pub fn from_vec(v: Vec<u8>) -> Input {
        Input {
            file: None,
            data: Data::Owned(v),
        }
    }

    /// A file made to hold bytes too many for memory (a member inflated
    /// out of a package), mapped. The file is kept for file-to-file copies.
    pub fn from_temp_file(file: File) -> io::Result<Input> {
        if file.metadata()?.len() == 0 {
            return Ok(Input::from_vec(Vec::new()));
        }
        let map = map_file(&file)?;
        Ok(Input {
            file: Some(file),
            data: Data::Map(map),
        })
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.data {
            Data::Map(m) => m,
            Data::Owned(v) => v,
        }
    }

    /// The open file, kept for file-to-file copies when the input is a
    /// mapped file of at least [`KEEP_FILE_FROM`] bytes.
    pub fn file(&self) -> Option<&File> {
        match self.data {
            Data::Map(_) => self.file.as_ref(),
            Data::Owned(_) => None,
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

    /// Gives back the pages of `sub` (a slice of this input's mapping;
    /// anything else is ignored) that are mapped into this process, so
    /// that they no longer count toward its resident memory; a later read
    /// maps them again from the page cache (or the file). For memory only:
    /// nothing fails, nothing changes what the bytes read.
    pub fn release(&self, sub: &[u8]) {
        if let (Data::Map(map), Some(off)) = (&self.data, self.file_offset(sub))
            && let Ok(off) = usize::try_from(off)
        {
            dont_need(map, off, sub.len());
        }
    }

    /// Runs `f` with the bytes of this input and the first `len` bytes of `out`
    /// (a file at least that long, open for reading and writing) mapped shared
    /// and writable, so that what `f` writes there lands in the file. While
    /// `f` runs, a helper thread gives back the pages of both mappings that
    /// are mapped into this process every 50 ms: `f` then holds in memory only
    /// what it touched in the last 50 ms, whatever the sizes, rather than
    /// everything it touched so far. (For one long library call, such as a
    /// compressor reading a window of the input behind its position, that
    /// gives no word of its progress.) Reading or writing a page given back
    /// maps it again from the page cache, with the bytes it had.
    ///
    /// `out` must be a file this process created for itself (an output's
    /// temporary file), as this input is under the contract of `map_file`.
    #[expect(
        unsafe_code,
        reason = "the bytes of a writable mapping of a file this process made"
    )]
    pub fn with_mapped_output<R>(
        &self,
        out: &File,
        len: u64,
        f: impl FnOnce(&[u8], &mut [u8]) -> R,
    ) -> io::Result<R> {
        let len = usize::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::FileTooLarge))?;
        if len == 0 {
            return Ok(f(self.bytes(), &mut []));
        }
        let raw = memmap2::MmapOptions::new().len(len).map_raw(out)?;
        let map = match &self.data {
            Data::Map(m) => Some(m),
            Data::Owned(_) => None,
        };
        let release = || {
            if let Some(m) = map {
                dont_need(m, 0, m.len());
            }
            release_shared(&raw);
        };
        // SAFETY: the pointer and length are those of a live mapping,
        // readable and writable, which `raw` keeps alive until after the
        // slice is gone. Only `f` gets the slice; the helper thread only
        // advises the kernel about the pages (see `release_shared`), it
        // never reads or writes them. The file is the caller's own new
        // temporary, so no one else writes it (the contract of `map_file`).
        let bytes = unsafe { std::slice::from_raw_parts_mut(raw.as_mut_ptr(), raw.len()) };
        Ok(while_releasing(release, || f(self.bytes(), bytes)))
    }

    /// Runs `f` while a helper thread gives back the pages of this input's
    /// mapping every 50 ms, so that reading all of a large input once
    /// (through a decompressor, say) holds in memory only the pages read
    /// in the last 50 ms rather than every page read so far. Reading a
    /// page given back maps it again from the page cache, with the same
    /// bytes. An input held in memory runs `f` alone.
    pub fn releasing<R>(&self, f: impl FnOnce() -> R) -> R {
        let Data::Map(map) = &self.data else {
            return f();
        };
        while_releasing(|| dont_need(map, 0, map.len()), f)
    }

    /// A reader over `sub` (a slice of this input's mapping) that reads the
    /// file instead, so that the pages read do not stay mapped into this
    /// process (they count toward its resident memory as long as they are
    /// mapped). `None` when the input keeps no file (see [`Input::file`])
    /// or `sub` is not from its mapping.
    pub fn reader(&self, sub: &[u8]) -> Option<FileRange<'_>> {
        Some(FileRange {
            file: self.file()?,
            start: self.file_offset(sub)?,
            len: sub.len() as u64,
            pos: 0,
        })
    }

    /// Copies `sub` (a slice of this input, or any bytes) to `out`. When
    /// `sub` comes from a mapped file of at least [`KEEP_FILE_FROM`] bytes
    /// and `out` is a file:
    /// - if the source and destination offsets are both multiples of
    ///   [`COPY_BLOCK`], with a kernel file-to-file copy (which a file
    ///   system with shared extents makes a reflink);
    /// - else from the mapping, [`COPY_CHUNK`] bytes at a time, each chunk's
    ///   pages mapped in one call before it is written and given back after
    ///   (see [`Input::release`]), so that memory holds one chunk. On Linux
    ///   6 with ext4 this writes a misaligned 256 MiB in about 60% of the
    ///   time the kernel's file-to-file copy takes, which goes a page at a
    ///   time through a pipe.
    ///
    /// Smaller inputs are written from the mapping.
    pub fn copy_to<S: Sink>(&self, sub: &[u8], out: &mut S) -> io::Result<()> {
        if let (Data::Map(map), Some(off), Some(file), Some(dst)) =
            (&self.data, self.file_offset(sub), &self.file, out.file())
        {
            // (A pipe or terminal has no position: written from the mapping.)
            let aligned =
                off % COPY_BLOCK == 0 && dst.stream_position().is_ok_and(|p| p % COPY_BLOCK == 0);
            if aligned {
                return copy_file_range_all(file, off, sub.len() as u64, dst);
            }
            let start = usize::try_from(off).map_err(io::Error::other)?;
            let mut at = start;
            for chunk in sub.chunks(COPY_CHUNK) {
                // Errors only mean the pages are faulted in one by one.
                let _ = map.advise_range(memmap2::Advice::PopulateRead, at, chunk.len());
                // Pages past the end of a file that shrank after it was
                // mapped make the kernel's read of them fail (EFAULT).
                dst.write_all(chunk).map_err(|e| {
                    if e.raw_os_error() == Some(rustix::io::Errno::FAULT.raw_os_error()) {
                        shrank()
                    } else {
                        e
                    }
                })?;
                dont_need(map, at, chunk.len());
                at += chunk.len();
            }
            return Ok(());
        }
        out.write_all(sub)
    }
}

/// Where pieces of output go: a writer, and the file under it (if any,
/// with everything written so far flushed into it) for file-to-file copies.
///
/// # Examples
///
/// A writer with no file under it: every copy goes through `write`.
///
/// ```
/// use offload_kit::files::{Input, Sink};
///
/// struct Counter(u64);
/// impl std::io::Write for Counter {
///     fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
///         self.0 += b.len() as u64;
///         Ok(b.len())
///     }
///     fn flush(&mut self) -> std::io::Result<()> {
///         Ok(())
///     }
/// }
/// impl Sink for Counter {
///     fn file(&mut self) -> Option<&mut std::fs::File> {
///         None
///     }
/// }
/// let input = Input::from_vec(vec![1; 100]);
/// let mut c = Counter(0);
/// input.copy_to(&input.bytes()[10..], &mut c)?;
/// assert_eq!(c.0, 90);
/// # Ok::<(), std::io::Error>(())
/// ```
pub trait Sink: Write {
    /// The file to copy into at the current position, if there is one.
    fn file(&mut self) -> Option<&mut File>;
}

impl Sink for File {
    fn file(&mut self) -> Option<&mut File> {
        Some(self)
    }
}

impl AsRef<[u8]> for Input {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

/// Copies `len` bytes at `off` of `src` to the current position of `dst`
/// (in the kernel, as `copy_file_range`); fewer bytes there is an error.
///
/// # Examples
///
/// ```
/// use std::io::{Seek, Write};
/// use offload_kit::files::copy_file_range_all;
///
/// let mut src = tempfile::tempfile()?;
/// src.write_all(b"0123456789")?;
/// let mut dst = tempfile::tempfile()?;
/// copy_file_range_all(&src, 2, 5, &mut dst)?;
/// assert_eq!(dst.stream_position()?, 5);
/// assert!(copy_file_range_all(&src, 8, 5, &mut dst).is_err(), "only 2 bytes there");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn copy_file_range_all(src: &File, off: u64, len: u64, dst: &mut File) -> io::Result<()> {
    let mut src = src;
    src.seek(SeekFrom::Start(off))?;
    // std's io::copy uses copy_file_range/sendfile between files on Linux.
    let n = io::copy(&mut src.take(len), dst)?;
    if n != len {
        return Err(shrank());
    }
    Ok(())
}

/// The error for an input file that shrank while it was read.
fn shrank() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "input file shrank while reading",
    )
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

/// How often [`Input::with_mapped_output`] gives back resident pages.
const RELEASE_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// `MADV_DONTNEED` on `len` bytes at `off` of `map` (the kernel widens the
/// range to whole pages). Errors are ignored: the advice only saves memory.
#[expect(
    unsafe_code,
    reason = "giving back the pages of a read-only mapping while it is borrowed"
)]
fn dont_need(map: &memmap2::Mmap, off: usize, len: usize) {
    // SAFETY: memmap2 marks this advice unsafe because on a private
    // mapping it throws away what was written to its pages. Ours are
    // read-only (`map_file`): nothing was ever written, so the pages are
    // only unmapped from this process, and the next read maps the same
    // bytes again from the page cache. What a borrow of the mapping reads
    // stays the same, under the contract of `map_file` (no one changes the
    // file while we read it; if someone does, a read may see the change,
    // as it could before).
    let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, off, len) };
}

/// Runs `f` while a helper thread calls `release` every
/// [`RELEASE_EVERY`] (and not after `f` returns). Should the thread not
/// start, `f` runs alone: the release only saves memory.
fn while_releasing<R>(release: impl Fn() + Sync, f: impl FnOnce() -> R) -> R {
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let release = &release;
        let releaser = std::thread::Builder::new()
            .name("release-pages".into())
            .spawn_scoped(scope, move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(RELEASE_EVERY)
                {
                    release();
                }
            });
        let r = f();
        drop(stop);
        if let Ok(t) = releaser {
            let _ = t.join();
        }
        r
    })
}

/// `MADV_DONTNEED` on all of a shared file mapping. Errors are ignored: the
/// advice only saves memory.
#[expect(
    unsafe_code,
    reason = "giving back the pages of a shared mapping while it is written"
)]
fn release_shared(raw: &memmap2::MmapRaw) {
    // SAFETY: on a shared file mapping the pages are the file's page-cache
    // pages: the advice unmaps them from this process and loses nothing
    // (written pages stay dirty in the page cache and reach the file). A
    // write racing with it either lands before (and is kept) or faults the
    // page back in and lands then; a read sees what was written either way.
    let _ = unsafe { raw.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
}

/// Part of a file, read with positional reads (see [`Input::reader`]):
/// positions count from the start of the part, and reads end at its end.
///
/// # Examples
///
/// ```
/// use std::io::Read;
/// use offload_kit::files::{Input, KEEP_FILE_FROM};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("big.bin");
/// // Large enough that the input keeps its file for such reads.
/// let mut data = vec![0u8; KEEP_FILE_FROM as usize];
/// data[1000..1004].copy_from_slice(b"code");
/// std::fs::write(&path, &data)?;
/// let input = Input::open(path.to_str().unwrap())?;
/// let mut r = input.reader(&input.bytes()[1000..1004]).expect("a slice of the mapping");
/// let mut got = String::new();
/// r.read_to_string(&mut got)?;
/// assert_eq!(got, "code");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FileRange<'a> {
    file: &'a File,
    start: u64,
    len: u64,
    pos: u64,
}

impl io::Read for FileRange<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let left = self.len.saturating_sub(self.pos);
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        if n == 0 {
            return Ok(0);
        }
        let got = self.file.read_at(&mut buf[..n], self.start + self.pos)?;
        self.pos += got as u64;
        Ok(got)
    }
}

impl io::Seek for FileRange<'_> {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        let pos = match to {
            io::SeekFrom::Start(p) => Some(p),
            io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            io::SeekFrom::End(d) => self.len.checked_add_signed(d),
        };
        self.pos = pos
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.pos)
    }
}

#[cfg(test)]
mod tests;

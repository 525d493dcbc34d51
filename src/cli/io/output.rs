//! Outputs written atomically: a temporary file in the same directory,
//! renamed into place on commit; devices and FIFOs written in place.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::cleanup::{Pending, pending, unregister};
use super::input::{O_NONBLOCK, not_regular};

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
    /// Its entry in the list of pending outputs (`cleanup.rs`; 0 for
    /// standard output).
    pending: u64,
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
        // A symbolic link is written through, as LLVM's tools (which open
        // the path) write it: the file it leads to is replaced, never the
        // link. A link into /proc (`/dev/stdout`, `/dev/fd/N`) names an
        // open file, which is written in place.
        let resolved = follow_links(path)?;
        let path = resolved.as_path();
        if path.is_dir() {
            return Err(io::Error::from_raw_os_error(21)); // EISDIR
        }
        if path.starts_with("/proc") && path != Path::new("/proc") {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(path)?;
            return Ok(Output {
                path: path.into(),
                inner: OutInner::Device(io::BufWriter::new(file)),
                aside: None,
                pending: 0,
            });
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
    pub(super) fn file_mut(&mut self) -> Option<&mut File> {
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

    /// The temporary file of an output to a path, flushed (for mapping it
    /// and writing it in place; its length is the output's once
    /// committed); `None` for standard output and devices.
    pub fn temp_file(&mut self) -> Option<&File> {
        match &mut self.inner {
            OutInner::Temp(w) => {
                w.flush().ok()?;
                Some(w.get_ref().as_file())
            }
            OutInner::Device(_) | OutInner::Stdout(_) | OutInner::Done => None,
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

/// A writer to an [`Output`] that keeps its first error, to tell which of
/// several outputs written together failed.
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
mod tests {
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

    #[test]
    fn a_link_is_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.o");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.o");
        std::os::unix::fs::symlink("real.o", &link).unwrap();
        let dangling = dir.path().join("dangling.o");
        std::os::unix::fs::symlink("sub/new.o", &dangling).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        for (name, target) in [(&link, &real), (&dangling, &dir.path().join("sub/new.o"))] {
            let mut out = Output::create(name).unwrap();
            out.write_all(b"new").unwrap();
            out.commit().unwrap();
            assert!(
                std::fs::symlink_metadata(name)
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
            assert_eq!(std::fs::read(target).unwrap(), b"new");
        }
    }

    #[test]
    fn an_open_file_named_in_proc_is_written_in_place() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("f");
        std::fs::write(&real, b"old contents").unwrap();
        let held = std::fs::File::open(&real).unwrap();
        let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let before = inode(&real);
        let name = PathBuf::from(format!("/dev/fd/{}", held.as_raw_fd()));
        let mut out = Output::create(&name).unwrap();
        out.write_all(b"new").unwrap();
        out.commit().unwrap();
        // The same file (not a new one renamed over it), truncated.
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        assert_eq!(inode(&real), before);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        drop(held);
    }
}

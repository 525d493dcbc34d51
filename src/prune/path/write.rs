//! A pruned file written to disk: by position, ranges of the input
//! copied file to file, zeros left as holes; given the input's metadata
//! and put in its place in one step ([`finish`]), or through its hard
//! links; and a file that goes whole removed ([`remove`]).

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use super::error::{PathError, PathErrorKind};
use super::keep;
use super::options::PathOptions;
use super::report::{PathReport, RemovedFile};
use crate::files::{Allowance, Output, copy_file_range_all, shown};
use crate::layout::Piece;
use crate::prune::output::Output as NewFile;

/// Writes `output` (`data` pruned, `input` being its file) into the new
/// file `out` by position, through [`Layout::write_pieces`]: ranges of
/// the input copied file to file by the kernel (`copy_file_range`, as
/// `cp` does), built pieces written, and nothing where zeros lie: the
/// file is sized at the end, so they are holes from the start.
///
/// [`Layout::write_pieces`]: crate::layout::Layout::write_pieces
pub(crate) fn write_at(input: &File, data: &[u8], output: &NewFile, out: &File) -> io::Result<()> {
    let mut at = At { file: out, pos: 0 };
    let hole = |at: &mut At<'_>, n: u64| {
        at.pos = at.pos.saturating_add(n);
        Ok(())
    };
    output.layout.write_pieces(&mut at, hole, |at, k| {
        let s = output.spans[k];
        let len = s.len as u64;
        if s.source == 0 {
            copy_range(input, s.offset as u64, at.file, at.pos, len)?;
        } else {
            at.file
                .write_all_at(output.image(k, &[data]).unwrap_or_default(), at.pos)?;
        }
        at.pos = at.pos.saturating_add(len);
        Ok(())
    })?;
    out.set_len(at.pos)
}

/// A file written by position (`pwrite`), from `pos` on: what
/// [`write_at`] writes through.
struct At<'f> {
    file: &'f File,
    /// Where the next byte goes.
    pos: u64,
}

impl io::Write for At<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write_at(buf, self.pos)?;
        self.pos = self.pos.saturating_add(n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Bytes a piece of `output` stands for.
fn piece_len(output: &NewFile, p: &Piece) -> u64 {
    match p {
        Piece::Bytes(b) => b.len() as u64,
        Piece::Zeros(n) => *n,
        Piece::Image(k) => output.spans[*k].len as u64,
    }
}

/// Copies `len` bytes of `input` from `from` to `out` at `to`, by the
/// kernel (`copy_file_range`: no copy through memory, and shared blocks
/// where the filesystem has them).
fn copy_range(input: &File, from: u64, out: &File, to: u64, len: u64) -> io::Result<()> {
    let (mut src, mut dst, end) = (from, to, from.saturating_add(len));
    while src < end {
        let want = usize::try_from(end - src)
            .unwrap_or(usize::MAX)
            .min(1 << 30);
        if rustix::fs::copy_file_range(input, Some(&mut src), out, Some(&mut dst), want)? == 0 {
            // The input shrank under us.
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
    }
    Ok(())
}

/// Punches the whole pages of each run of zeros in `output` out of `file`
/// (they read as zeros either way; a filesystem without holes keeps them).
pub(crate) fn punch(file: &File, output: &NewFile) {
    let mut at = 0u64;
    for p in &output.layout.pieces {
        let n = piece_len(output, p);
        if let Piece::Zeros(_) = p {
            let start = at.next_multiple_of(4096);
            let end = (at + n) / 4096 * 4096;
            if end > start {
                let flags =
                    rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
                let _ = rustix::fs::fallocate(file, flags, start, end - start);
            }
        }
        at = at.saturating_add(n);
    }
}

/// In place, gives `file` (the temporary file about to replace `dest`,
/// the input, whose metadata as read is `meta`) the input's owner, group,
/// mode bits, extended attributes and times ([`keep::keep_all`]); refuses
/// the file, left as it was, when one of them cannot be given.
pub(super) fn keep_metadata(
    opts: &PathOptions,
    file: &File,
    dest: &Path,
    meta: &std::fs::Metadata,
) -> Result<(), PathError> {
    // In a walked tree, through its directory's handle, as the file was
    // read; a file named alone, by its path.
    let src = match opts.anchored() {
        Some(a) => a.open(false).map_err(|e| e.error(dest))?,
        None => opened_again(dest, meta)?,
    };
    keep::keep_all(file, &src, meta, opts.accessed, &keep::set_xattr)
        .map_err(|e| PathError::said(PathErrorKind::Refused, dest, &shown(dest), e.reason()))
}

/// The input `path` (with `meta` as read) opened again to read its
/// extended attributes: fails, as [`still_the_file_read`] does, where
/// another file now has its name.
fn opened_again(path: &Path, meta: &std::fs::Metadata) -> Result<File, PathError> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let io = |e: std::io::Error| PathError::io(PathErrorKind::Io, path, e);
    let fd =
        rustix::fs::open(path, flags | OFlags::CLOEXEC, Mode::empty()).map_err(|e| io(e.into()))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| io(e.into()))?;
    if (st.st_dev, st.st_ino) != (meta.dev(), meta.ino()) {
        let why = "it changed while it was pruned (another program replaced it): \
                   left as it now is, not pruned";
        return Err(PathError::said(
            PathErrorKind::Write,
            path,
            &shown(path),
            why,
        ));
    }
    Ok(File::from(fd))
}

/// The permission bits an output written elsewhere (`-o`, `-d`) gets: the
/// input's read, write and execute bits, never setuid, setgid or sticky
/// (it belongs to whoever runs prune, not to the input's owner).
fn output_mode(meta: &std::fs::Metadata) -> std::fs::Permissions {
    std::os::unix::fs::PermissionsExt::from_mode(meta.mode() & 0o777)
}

/// With [`PathOptions::keep_hard_links`] in place, the input opened for
/// writing when it has other links (the pruned file is copied into it
/// once complete).
pub(crate) fn write_through(
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
) -> Result<Option<std::fs::File>, PathError> {
    if !(opts.in_place() && opts.keep_hard_links && meta.nlink() > 1) {
        return Ok(None);
    }
    if let Some(a) = opts.anchored() {
        return a.open(true).map(Some).map_err(|e| e.error(input));
    }
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(input)
        .map_err(|e| PathError::write(input, e))?;
    Ok(Some(f))
}

/// Starts the output `dest` made from an input of `size` bytes: in a
/// walked tree in place, in the handle of the file's directory under its
/// name ([`PathOptions::anchor`]), never by its path (a file, a wheel, a
/// `.deb`, a conda package, a `docker save` archive, a record alike). Its
/// bytes count against the input's [`Allowance`] (`--max-uncompressed`):
/// past it, writing fails and nothing is left.
pub(crate) fn create(opts: &PathOptions, dest: &Path, size: u64) -> io::Result<Output> {
    #[cfg(test)]
    crate::prune::race::at(crate::prune::race::Phase::Create, dest);
    let out = match opts.anchored() {
        Some(a) => Output::create_at(a.dir(), a.name()),
        None => Output::create(dest),
    }?;
    Ok(out.within(&Allowance::for_input(size, opts.prune.max_uncompressed)))
}

/// In a walked tree in place, before the output `out` takes the name of
/// the file `dest` (read with `meta`): fails unless `out` is written in the
/// handle of the file's directory, under its name, and the name is still
/// the file read. Elsewhere in place, [`still_the_file_read`].
fn still_in_place(
    opts: &PathOptions,
    out: &Output,
    meta: &std::fs::Metadata,
    dest: &Path,
) -> Result<(), PathError> {
    #[cfg(test)]
    crate::prune::race::at(crate::prune::race::Phase::Commit, dest);
    let Some(a) = opts.anchored() else {
        return still_the_file_read(dest, meta);
    };
    if !out
        .place()
        .is_some_and(|(dir, name)| name == a.name() && a.is_dir(&dir))
    {
        let why = "its directory was replaced since the walk (the new file would have gone \
                   elsewhere): left alone, nothing outside the tree touched";
        let name = crate::files::shown(dest);
        return Err(PathError::said(PathErrorKind::Refused, dest, &name, why));
    }
    a.still(dest, meta)
}

/// Gives the output the input's metadata (in place all of it, owner,
/// group, mode bits, extended attributes and times, or the file is
/// refused as it was; otherwise the read, write and execute bits alone,
/// never setuid or setgid: a pruned program stays a program, owned by
/// whoever ran prune), renames it into place and notes its sizes.
pub(crate) fn finish(
    opts: &PathOptions,
    mut out: Output,
    meta: &std::fs::Metadata,
    dest: &Path,
    rep: &mut PathReport,
    through: Option<std::fs::File>,
) -> Result<(), PathError> {
    let cannot = |e| PathError::write(dest, e);
    let bare = |e| PathError::io(PathErrorKind::Write, dest, e);
    // Past the allowance, nothing is written anywhere (in place with
    // other links, before their file is touched).
    out.settle().map_err(cannot)?;
    if opts.in_place() {
        still_in_place(opts, &out, meta, dest)?;
    }
    if let Some(mut target) = through {
        // Every link is to see the pruned file: the whole of it, made
        // and synced in the temporary file, is copied over the file's
        // old contents. Only while that copy runs does the file hold
        // part of each (docs/prune.md); a failure before it leaves the
        // old file whole.
        // Written to, the file loses its capabilities (and, but for root,
        // setuid and setgid): given back once the new bytes are in.
        let saved = keep::Saved::of(&target).map_err(bare)?;
        let tmp = out
            .temp_file()
            .ok_or_else(|| cannot(std::io::Error::other("no temporary file")))?;
        tmp.sync_all().map_err(cannot)?;
        let len = tmp.metadata().map_err(bare)?.len();
        copy_file_range_all(tmp, 0, len, &mut target).map_err(cannot)?;
        target.set_len(len).map_err(cannot)?;
        saved.restore(&target).map_err(|e| {
            let why = format!("{}: its links see the pruned bytes without it", e.text());
            PathError::said(PathErrorKind::Write, dest, &shown(dest), why)
        })?;
        let times = keep::times(meta, opts.accessed).map_err(bare)?;
        target.set_times(times).map_err(bare)?;
        target.sync_all().map_err(cannot)?;
        drop(out);
    } else {
        if let Some(f) = out.temp_file() {
            match opts.in_place() {
                true => keep_metadata(opts, f, dest, meta)?,
                false => f.set_permissions(output_mode(meta)).map_err(bare)?,
            }
        }
        out.commit().map_err(cannot)?;
    }
    let after = match opts.anchored() {
        Some(a) => a.metadata_any().map_err(|e| e.error(dest))?,
        None => std::fs::metadata(dest).map_err(|e| PathError::io(PathErrorKind::Io, dest, e))?,
    };
    rep.output = Some(crate::files::shown(dest).into_owned());
    rep.bytes_after = after.len();
    rep.disk_after = Some(after.blocks() * 512);
    Ok(())
}

/// The file `input` (whose report is `rep`), which is device code alone
/// that the rules drop all of (`what` it is, in words), removed: in place,
/// its name goes (other hard links keep the file, unless
/// [`PathOptions::keep_hard_links`], which refuses it); in a dry run,
/// reported as removed; with a file or directory to write to, refused, as
/// there would be no file to write.
pub(crate) fn remove(
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    what: &str,
    rep: &mut PathReport,
) -> Result<(), PathError> {
    let gone = format!("{what}, and the rules keep none of its images");
    let file = RemovedFile::whole(rep.path.clone(), rep.bytes_before);
    remove_as(opts, input, meta, &gone, file, rep)
}

/// The file `input` (with `meta`), a library's per-GPU file `c` whose
/// GPU the rules drop, removed by its name as [`remove`] removes device
/// code (its bytes are never read); `name` is how reports show it.
pub(crate) fn remove_by_name(
    opts: &PathOptions,
    input: &Path,
    name: &str,
    meta: &std::fs::Metadata,
    c: &crate::companion::Companion,
) -> Result<PathReport, PathError> {
    let mut rep = PathReport::new(name, &[], meta);
    rep.bytes_before = meta.len();
    let gone = format!(
        "it is a {}, which the rules do not keep",
        crate::prune::companion::reason(c)
    );
    let file = RemovedFile::by_name(name.to_string(), meta.len(), c);
    remove_as(opts, input, meta, &gone, file, &mut rep)?;
    Ok(rep)
}

/// [`remove`] of a file that goes because `gone` (in words), reported as
/// `file`.
fn remove_as(
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    gone: &str,
    file: RemovedFile,
    rep: &mut PathReport,
) -> Result<(), PathError> {
    let refuse = |why: String| PathError::said(PathErrorKind::Refused, input, &rep.path, why);
    if !(opts.in_place() || opts.dry_run()) {
        return Err(refuse(format!(
            "{gone}: it would be removed whole, and -o or -d would have no file to write \
             (--in-place removes it, --dry-run lists it; --keep-files refuses it)"
        )));
    }
    if opts.in_place() && opts.keep_hard_links && meta.nlink() > 1 {
        return Err(refuse(format!(
            "{gone}, but it has {} hard links: --keep-hard-links asks that every name see \
             the pruned file, and a file removed has none (remove its names yourself)",
            meta.nlink()
        )));
    }
    rep.removed.push(file);
    rep.freed = rep.bytes_before;
    rep.bytes_after = 0;
    if let Some(a) = opts.anchored() {
        #[cfg(test)]
        crate::prune::race::at(crate::prune::race::Phase::Commit, input);
        a.still(input, meta)?;
        a.unlink().map_err(|e| PathError::write(input, e))?;
        rep.disk_after = Some(0);
    } else if opts.in_place() {
        still_the_file_read(input, meta)?;
        std::fs::remove_file(input).map_err(|e| PathError::write(input, e))?;
        rep.disk_after = Some(0);
    }
    Ok(())
}

/// In place, before the pruned file takes the old one's place: fails,
/// leaving the file as it is, unless the file at `path` is still the one
/// read (`meta`: the same device, inode, size, and modification and
/// change times). Something that replaced it, or wrote to it, while it
/// was pruned would otherwise see its work lost.
fn still_the_file_read(path: &Path, meta: &std::fs::Metadata) -> Result<(), PathError> {
    let now = std::fs::metadata(path).map_err(|e| PathError::io(PathErrorKind::Io, path, e))?;
    let key = |m: &std::fs::Metadata| {
        (
            (m.dev(), m.ino(), m.len()),
            (m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()),
        )
    };
    if key(&now) == key(meta) {
        return Ok(());
    }
    let why = "it changed while it was pruned (another program replaced it or wrote to it): \
               left as it now is, not pruned";
    Err(PathError::said(
        PathErrorKind::Write,
        path,
        &crate::files::shown(path),
        why,
    ))
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    /// A file written by position is the layout's bytes, its zeros holes.
    #[test]
    fn zeros_are_holes_and_the_rest_the_layouts_bytes() {
        let data: Vec<u8> = (0..3 * 4096u32).map(|i| (i % 251) as u8 | 1).collect();
        let mut input = tempfile::tempfile().unwrap();
        input.write_all(&data).unwrap();
        let mut new = NewFile::default();
        new.span(0, 0, 4096);
        new.piece(Piece::Zeros(1 << 20));
        new.piece(Piece::Bytes(b"built".to_vec()));
        new.built.push(b"from memory".to_vec());
        new.span(1, 5, 6);
        new.span(0, 4096, 8192);
        let mut out = tempfile::tempfile().unwrap();
        write_at(&input, &data, &new, &out).unwrap();
        let mut got = Vec::new();
        out.read_to_end(&mut got).unwrap();
        assert_eq!(got, new.to_vec(&[&data]).unwrap());
        assert_eq!(got.len() as u64, new.size());
        // The megabyte of zeros takes no blocks.
        let disk = out.metadata().unwrap().blocks() * 512;
        assert!(disk < 1 << 19, "{disk} bytes on disk");
    }
}

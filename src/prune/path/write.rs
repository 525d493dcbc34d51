//! A pruned file written to disk: by position, ranges of the input
//! copied file to file, zeros left as holes; and given the input's
//! metadata when it replaces it.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;

use super::super::output::Output as NewFile;
use crate::layout::Piece;

/// Writes `output` (`data` pruned, `input` being its file) into the new
/// file `out` by position: ranges of the input copied file to file by the
/// kernel (`copy_file_range`, as `cp` does), built pieces written, and
/// nothing where zeros lie: the file is sized at the end, so they are
/// holes from the start.
pub(super) fn write_at(input: &File, data: &[u8], output: &NewFile, out: &File) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut w = 0u64;
    for p in &output.layout.pieces {
        match p {
            Piece::Bytes(b) => out.write_all_at(b, w)?,
            Piece::Zeros(_) => {}
            Piece::Image(k) => match output.spans[*k] {
                s if s.source == 0 => copy_range(input, s.offset as u64, out, w, s.len as u64)?,
                _ => out.write_all_at(output.image(*k, &[data]).unwrap_or_default(), w)?,
            },
        }
        w = w.saturating_add(piece_len(output, p));
    }
    out.set_len(w)
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
pub(super) fn punch(file: &File, output: &NewFile) {
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

/// Copies the input's mode, owner and times (`meta`) to `file`, the
/// temporary file about to replace it.
pub(super) fn keep_metadata(file: &File, meta: &std::fs::Metadata) -> io::Result<()> {
    file.set_permissions(meta.permissions())?;
    // Only root may give a file away; otherwise the owner is already ours.
    let _ = rustix::fs::fchown(
        file,
        Some(rustix::fs::Uid::from_raw(meta.uid())),
        Some(rustix::fs::Gid::from_raw(meta.gid())),
    );
    file.set_times(times(meta)?)
}

/// The access and modification times of `meta`, to set on another file.
pub(super) fn times(meta: &std::fs::Metadata) -> io::Result<std::fs::FileTimes> {
    Ok(std::fs::FileTimes::new()
        .set_accessed(meta.accessed()?)
        .set_modified(meta.modified()?))
}

//! Files in and out: what every command reads and writes, for a program
//! that works on files rather than byte slices.
//!
//! - [`Input`]: a file mapped into memory (standard input and character
//!   devices read, bounded; FIFOs, sockets and block devices refused
//!   without blocking), with file-to-file copies of its ranges
//!   ([`Input::copy_to`]) and its pages given back while it is in use.
//! - [`Output`]: a file written atomically. Until [`Output::commit`] the
//!   new bytes have no name, and the commit puts them at the path in one
//!   step. Killed at any instant, the path holds the old file or the new
//!   one, never nothing and never part of one.
//! - [`write_layout`] and [`write_pieces`]: a writer's [`Layout`] written
//!   out, its image bytes copied from the inputs they lie in.
//! - [`clean_up_on_signals`]: named temporaries removed when SIGINT,
//!   SIGTERM or SIGHUP ends the process.
//!
//! This is the crate's one module with `unsafe` (mapping a file and giving
//! back its pages, in `input.rs`). It needs the `files` feature (on by
//! default, and part of `cli`).
//!
//! # Examples
//!
//! Read a file and write part of it somewhere else, atomically:
//!
//! ```
//! use offload_kit::files::{Input, Output};
//!
//! let dir = tempfile::tempdir()?;
//! let src = dir.path().join("in.bin");
//! std::fs::write(&src, b"header|device code|trailer")?;
//!
//! let input = Input::open(src.to_str().unwrap())?;
//! let code = &input.bytes()[7..18];
//! let dst = dir.path().join("out.bin");
//! let mut out = Output::create(&dst)?;
//! input.copy_to(code, &mut out)?;
//! assert!(!dst.exists(), "no file at the path before the commit");
//! out.commit()?;
//! assert_eq!(std::fs::read(&dst)?, b"device code");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Layout`]: crate::Layout

use std::io;
use std::path::Path;

pub(crate) use crate::error::strerror;
use crate::layout::Layout;
pub(crate) use input::{Small, open_nonblocking, open_regular, open_regular_at, read_small};
pub(crate) use name::{raw_bytes, shown, shown_os};

mod cleanup;
mod input;
mod name;
mod output;

pub(crate) use cleanup::TempTree;
pub use cleanup::clean_up_on_signals;
pub use input::{
    CLOSE_APART_FROM, COPY_BLOCK, COPY_CHUNK, FileRange, Input, KEEP_FILE_FROM, MAX_DEVICE_BYTES,
    MAX_STREAM_BYTES, SPOOL_IN_MEMORY, Sink, copy_file_range_all, copy_in_pieces,
};
pub(crate) use output::unnamed_file;
pub use output::{Allowance, Noting, Output};

/// Writes `layout` atomically to `path`, taking image `i` from
/// `payload(i)`: the input it lies in and its bytes (copied file to file
/// when they are a slice of that input's mapping).
///
/// # Examples
///
/// ```
/// use offload_kit::files::{Input, write_layout};
/// use offload_kit::{Layout, Piece};
///
/// let dir = tempfile::tempdir()?;
/// let image = Input::from_vec(b"device code".to_vec());
/// let mut layout = Layout::default();
/// layout.push(Piece::Bytes(b"head:".to_vec()), 5);
/// layout.push(Piece::Image(0), 11);
/// layout.push(Piece::Zeros(3), 3);
/// let path = dir.path().join("packed.bin");
/// write_layout(&path, &layout, |_| (&image, image.bytes()))?;
/// assert_eq!(std::fs::read(&path)?, b"head:device code\0\0\0");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_layout<'a>(
    path: impl AsRef<Path>,
    layout: &Layout,
    payload: impl Fn(usize) -> (&'a Input, &'a [u8]),
) -> io::Result<()> {
    let mut out = Output::create(path.as_ref())?;
    write_pieces(layout, |i| Some(payload(i)), &mut out)?;
    out.commit()
}

/// Writes `layout` to `out` at its position, taking image `i` from
/// `payload(i)` as [`write_layout`] does; an image it gives none for is an
/// error.
///
/// # Examples
///
/// ```
/// use offload_kit::files::{Input, write_pieces};
/// use offload_kit::{Layout, Piece};
///
/// let image = Input::from_vec(b"code".to_vec());
/// let mut layout = Layout::default();
/// layout.push(Piece::Image(0), 4);
/// layout.push(Piece::Bytes(b"!".to_vec()), 1);
/// let mut file = tempfile::tempfile()?;
/// write_pieces(&layout, |i| (i == 0).then(|| (&image, image.bytes())), &mut file)?;
/// assert_eq!(file.metadata()?.len(), 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_pieces<'a, S: Sink>(
    layout: &Layout,
    payload: impl Fn(usize) -> Option<(&'a Input, &'a [u8])>,
    out: &mut S,
) -> io::Result<()> {
    layout.write_each(out, |out, i| {
        let (input, bytes) =
            payload(i).ok_or_else(|| io::Error::other("internal error: no such payload"))?;
        input.copy_to(bytes, out)
    })
}

/// Writes `bytes` (a slice of `input`, copied file to file where it can
/// be, or any bytes) atomically to `path`.
///
/// # Examples
///
/// ```
/// use offload_kit::files::{Input, write_bytes};
///
/// let dir = tempfile::tempdir()?;
/// let input = Input::from_vec(b"a cubin".to_vec());
/// let path = dir.path().join("k.cubin");
/// write_bytes(&path, &input, input.bytes())?;
/// assert_eq!(std::fs::read(&path)?, b"a cubin");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_bytes(path: impl AsRef<Path>, input: &Input, bytes: &[u8]) -> io::Result<()> {
    let mut out = Output::create(path.as_ref())?;
    input.copy_to(bytes, &mut out)?;
    out.commit()
}

/// A file-name component made safe: only `[A-Za-z0-9._+-]`, no leading dot,
/// never empty, at most `max` bytes: what the commands that write files
/// derive names from (triples, arches, bundle IDs, input stems) goes through
/// this, whatever a file says.
pub(crate) fn safe_component(s: &str, max: usize) -> String {
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

//! A pruned file, described before it is written: pieces in order, the
//! large ones byte ranges of the input or of containers built in memory
//! (a recompressed CCOB), so that a file of any size is written by copying
//! ranges and nothing of it is held twice.
//!
//! Three shapes, one per kind of input:
//! - a linked program or library ([`Output::in_place`]): each container
//!   rewritten where it lies, zeros (holes on disk) up to its old end,
//!   every other byte where it was;
//! - a relocatable object ([`super::object`]) and an archive of them
//!   ([`super::archive`]): sections that really shrink, as llvm-objcopy
//!   writes them;
//! - a bare container file (a `.hipfb` bundle, a `.fatbin`, a run of
//!   OffloadBinaries) ([`Output::cut`]): the freed bytes cut out.

use std::io::{self, Write};

use super::plan::{Edit, Plan};
use crate::host::object::Span;
use crate::layout::{Layout, Piece, write_zeros};
use crate::num::usize_from;

/// Edit `e`'s place after `pos` in an input of `len` bytes: the bytes
/// from `pos` to its start, and its end; `None` when it starts before
/// `pos`, ends past `len` or would grow (no edit of a plan that
/// [`plan`](super::plan::plan) makes: [`Plan::check`]).
fn place(e: &Edit, pos: u64, len: u64) -> Option<(u64, u64)> {
    let gap = e.offset.checked_sub(pos)?;
    let end = e.offset.checked_add(e.size).filter(|&end| end <= len)?;
    (e.pruned.layout.size <= e.size).then_some((gap, end))
}

/// A pruned file: `layout`'s image piece `k` is `spans[k]`, a range of the
/// input (source 0) or of `built[j]` (source `j + 1`).
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// The pieces, in order.
    pub layout: Layout,
    /// The ranges the layout's image pieces stand for.
    pub spans: Vec<Span>,
    /// Containers built in memory.
    pub built: Vec<Vec<u8>>,
}

impl Output {
    /// Appends `len` bytes of source `source` from `offset`.
    pub(crate) fn span(&mut self, source: usize, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        self.layout.push(Piece::Image(self.spans.len()), len);
        self.spans.push(Span {
            source,
            offset: usize_from(offset),
            len: usize_from(len),
        });
    }

    /// Appends a piece that is not an image.
    pub(crate) fn piece(&mut self, p: Piece) {
        let len = match &p {
            Piece::Bytes(b) => b.len() as u64,
            Piece::Zeros(n) => *n,
            Piece::Image(_) => return,
        };
        self.layout.push(p, len);
    }

    /// Appends edit `e`'s new container (its image ranges are of the
    /// container, which starts at `e.offset` in the input, or of the
    /// container built for it, which becomes a source of its own: taken
    /// from the edit, not copied).
    fn container(&mut self, e: &mut Edit) {
        let source = match e.built.take() {
            Some(b) => {
                self.built.push(b);
                self.built.len()
            }
            None => 0,
        };
        let base = if source == 0 { e.offset } else { 0 };
        for p in &e.pruned.layout.pieces {
            match p {
                Piece::Image(i) => {
                    let r = &e.pruned.ranges[*i];
                    // A range that ends before it starts is empty; one
                    // whose start, moved to the container's, passes 2^64
                    // becomes a span past any input, which writing refuses
                    // ("a piece lies outside its input").
                    self.span(
                        source,
                        base.saturating_add(r.start),
                        r.end.saturating_sub(r.start),
                    );
                }
                other => self.piece(other.clone()),
            }
        }
    }

    /// `data` with `plan`'s edits made where each container lies, zeros up
    /// to its old end, and its patches (OpenMP descriptors rewritten):
    /// nothing moves.
    /// The containers built in memory move from the plan to the output.
    ///
    /// `plan` is one that [`plan`](super::plan::plan) made for an input of
    /// `data_len` bytes ([`Plan::check`]); an edit that breaks that (out
    /// of order, overlapping the one before, past the end, larger after)
    /// is left out rather than written over other bytes.
    pub fn in_place(data_len: u64, plan: &mut Plan) -> Output {
        let mut out = Output::default();
        let mut pos = 0;
        let mut patches = plan.patches.iter().peekable();
        for e in &mut plan.edits {
            while let Some((at, bytes)) = patches.next_if(|(at, _)| *at < e.offset) {
                out.patch(&mut pos, *at, bytes, data_len);
            }
            let Some((gap, end)) = place(e, pos, data_len) else {
                continue;
            };
            out.span(0, pos, gap);
            out.container(e);
            out.piece(Piece::Zeros(e.freed()));
            pos = end;
        }
        for (at, bytes) in patches {
            out.patch(&mut pos, *at, bytes, data_len);
        }
        // `place` keeps `pos` at most `data_len`.
        out.span(0, pos, data_len.saturating_sub(pos));
        out
    }

    /// Appends the input from `pos` up to `at`, then `bytes` in place of
    /// the input's there, and moves `pos` past them; left out when they
    /// start before `pos` or end past `len` (no patch of a plan that
    /// [`plan`](super::plan::plan) makes).
    fn patch(&mut self, pos: &mut u64, at: u64, bytes: &[u8], len: u64) {
        let end = at.checked_add(bytes.len() as u64).filter(|&e| e <= len);
        let (Some(gap), Some(end)) = (at.checked_sub(*pos), end) else {
            return;
        };
        self.span(0, *pos, gap);
        self.piece(Piece::Bytes(bytes.to_vec()));
        *pos = end;
    }

    /// `data` with `plan`'s edits made and the bytes each frees cut out:
    /// what follows a container moves down.
    /// The containers built in memory move from the plan to the output.
    ///
    /// `plan` is one that [`plan`](super::plan::plan) made, as for
    /// [`Output::in_place`].
    pub fn cut(data_len: u64, plan: &mut Plan) -> Output {
        let mut out = Output::default();
        let mut pos = 0;
        for e in &mut plan.edits {
            let Some((gap, end)) = place(e, pos, data_len) else {
                continue;
            };
            out.span(0, pos, gap);
            out.container(e);
            pos = end;
        }
        out.span(0, pos, data_len.saturating_sub(pos));
        out
    }

    /// The input as it is (`len` bytes).
    pub fn unchanged(len: u64) -> Output {
        let mut out = Output::default();
        out.span(0, 0, len);
        out
    }

    /// The file's size.
    pub fn size(&self) -> u64 {
        self.layout.size
    }

    /// The bytes of span `k`, from `input` or a built container.
    pub fn span_bytes<'a>(&'a self, k: usize, input: &'a [u8]) -> Option<&'a [u8]> {
        let s = self.spans.get(k)?;
        let src: &[u8] = match s.source {
            0 => input,
            j => self.built.get(j - 1)?,
        };
        src.get(s.offset..s.offset.checked_add(s.len)?)
    }

    /// Writes the file to `out`, `input` being the input's bytes.
    pub fn write_to(&self, input: &[u8], out: &mut dyn Write) -> io::Result<()> {
        for p in &self.layout.pieces {
            match p {
                Piece::Bytes(b) => out.write_all(b)?,
                Piece::Zeros(n) => write_zeros(out, *n)?,
                Piece::Image(k) => {
                    out.write_all(self.span_bytes(*k, input).ok_or_else(|| {
                        io::Error::new(
                            io::ErrorKind::InvalidInput,
                            "a piece lies outside its input",
                        )
                    })?)?
                }
            }
        }
        Ok(())
    }

    /// The file's bytes (for tests and small files).
    pub fn to_vec(&self, input: &[u8]) -> io::Result<Vec<u8>> {
        let mut v = Vec::with_capacity(usize_from(self.size()));
        self.write_to(input, &mut v)?;
        Ok(v)
    }

    /// Appends `other`, whose source 0 is the range of this output's
    /// source 0 starting at `base` (an archive member's bytes), its built
    /// containers becoming this output's.
    pub(crate) fn append_at(&mut self, base: u64, other: Output) {
        let shift = self.built.len();
        for p in other.layout.pieces {
            match p {
                Piece::Image(k) => {
                    let s = other.spans[k];
                    // Past 2^64, a span past any input, which writing
                    // refuses.
                    let (source, offset) = match s.source {
                        0 => (0, base.saturating_add(s.offset as u64)),
                        j => (j + shift, s.offset as u64),
                    };
                    self.span(source, offset, s.len as u64);
                }
                p => self.piece(p),
            }
        }
        self.built.extend(other.built);
    }
}

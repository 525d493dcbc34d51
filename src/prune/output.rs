//! A pruned file, described before it is written: pieces in order, the
//! large ones byte ranges of the input or of containers built in memory
//! (a recompressed CCOB), so that a file of any size is written by copying
//! ranges and nothing of it is held twice.
//!
//! Three shapes, one per kind of input:
//! - a linked program or library ([`in_place`]): each container
//!   rewritten where it lies, zeros (holes on disk) up to its old end,
//!   every other byte where it was;
//! - a relocatable object ([`super::object`]) and an archive of them
//!   ([`super::archive`]): sections that really shrink, as llvm-objcopy
//!   writes them;
//! - a bare container file (a `.hipfb` bundle, a `.fatbin`, a run of
//!   OffloadBinaries) ([`cut`]): the freed bytes cut out.
//!
//! Each is a [`Written`](crate::layout::Written) with one input, the
//! file's bytes (source 0); the containers built in memory are its
//! built sources.

use super::plan::{Edit, Plan};
use crate::layout::Piece;
/// A pruned file: a [`Written`](crate::layout::Written) whose source 0 is
/// the input.
pub(crate) use crate::layout::Written as Output;

/// Edit `e`'s place after `pos` in an input of `len` bytes: the bytes
/// from `pos` to its start, and its end; `None` when it starts before
/// `pos`, ends past `len` or would grow (no edit of a plan that
/// [`plan`](super::plan::plan) makes: [`Plan::check`]).
fn place(e: &Edit, pos: u64, len: u64) -> Option<(u64, u64)> {
    let gap = e.offset.checked_sub(pos)?;
    let end = e.offset.checked_add(e.size).filter(|&end| end <= len)?;
    (e.pruned.layout.size <= e.size).then_some((gap, end))
}

/// Appends edit `e`'s new container to `out` (its image ranges are of
/// the container, which starts at `e.offset` in the input, or of the
/// container built for it, which becomes a source of its own: taken from
/// the edit, not copied).
fn container(out: &mut Output, e: &mut Edit) {
    let source = match e.built.take() {
        Some(b) => {
            out.built.push(b);
            out.built.len()
        }
        None => 0,
    };
    let base = if source == 0 { e.offset } else { 0 };
    for p in &e.pruned.layout.pieces {
        match p {
            Piece::Image(i) => {
                let r = &e.pruned.ranges[*i];
                // A range that ends before it starts is empty; one whose
                // start, moved to the container's, passes 2^64 becomes a
                // span past any input, which writing refuses ("a piece
                // lies outside its input").
                out.span(
                    source,
                    base.saturating_add(r.start),
                    r.end.saturating_sub(r.start),
                );
            }
            other => out.piece(other.clone()),
        }
    }
}

/// `data` with `plan`'s edits made where each container lies, zeros up
/// to its old end, and its patches (OpenMP descriptors rewritten):
/// nothing moves.
/// The containers built in memory move from the plan to the output.
///
/// `plan` is one that [`plan`](super::plan::plan) made for an input of
/// `data_len` bytes ([`Plan::check`]); an edit that breaks that (out of
/// order, overlapping the one before, past the end, larger after) is
/// left out rather than written over other bytes.
pub(crate) fn in_place(data_len: u64, plan: &mut Plan) -> Output {
    let mut out = Output::default();
    let mut pos = 0;
    let mut patches = plan.patches.iter().peekable();
    for e in &mut plan.edits {
        while let Some((at, bytes)) = patches.next_if(|(at, _)| *at < e.offset) {
            patch(&mut out, &mut pos, *at, bytes, data_len);
        }
        let Some((gap, end)) = place(e, pos, data_len) else {
            continue;
        };
        out.span(0, pos, gap);
        container(&mut out, e);
        out.piece(Piece::Zeros(e.freed()));
        pos = end;
    }
    for (at, bytes) in patches {
        patch(&mut out, &mut pos, *at, bytes, data_len);
    }
    // `place` keeps `pos` at most `data_len`.
    out.span(0, pos, data_len.saturating_sub(pos));
    out
}

/// Appends the input from `pos` up to `at` to `out`, then `bytes` in
/// place of the input's there, and moves `pos` past them; left out when
/// they start before `pos` or end past `len` (no patch of a plan that
/// [`plan`](super::plan::plan) makes).
fn patch(out: &mut Output, pos: &mut u64, at: u64, bytes: &[u8], len: u64) {
    let end = at.checked_add(bytes.len() as u64).filter(|&e| e <= len);
    let (Some(gap), Some(end)) = (at.checked_sub(*pos), end) else {
        return;
    };
    out.span(0, *pos, gap);
    out.piece(Piece::Bytes(bytes.to_vec()));
    *pos = end;
}

/// `data` with `plan`'s edits made and the bytes each frees cut out:
/// what follows a container moves down.
/// The containers built in memory move from the plan to the output.
///
/// `plan` is one that [`plan`](super::plan::plan) made, as for
/// [`in_place`].
pub(crate) fn cut(data_len: u64, plan: &mut Plan) -> Output {
    let mut out = Output::default();
    let mut pos = 0;
    for e in &mut plan.edits {
        let Some((gap, end)) = place(e, pos, data_len) else {
            continue;
        };
        out.span(0, pos, gap);
        container(&mut out, e);
        pos = end;
    }
    out.span(0, pos, data_len.saturating_sub(pos));
    out
}

//! The loop that decodes most of a block: whole sequences, far enough from
//! the end of the input and of the output that every copy may move whole
//! 16-byte pieces, reading and writing past what the sequence needs.
//!
//! This is the crate's one exception to its no-`unsafe` rule outside the
//! mmap helper (docs/development.md, "Unsafe code"): the copies are raw
//! pointer moves of 8 and 16 bytes, each after the one comparison that
//! keeps it inside its slice, where safe code paid for a bounds check per
//! piece and ran at 0.75× the speed of liblz4's `LZ4_decompress_safe` on
//! the cubins of libcusparse (docs/performance.md has what it runs at now).
//! Every `unsafe` block says which check made it sound; the loop itself
//! trusts nothing of the block. What it does
//! not decode it leaves, untouched, to the careful code in `mod.rs`, which
//! also names the fault.

use std::ptr;

use crate::bytes::le;

/// Input [`sequences`] needs from a sequence's token on to take it without
/// checking the input again: the token, up to 14 literals read as one piece
/// of 16, and the offset.
const FAST_IN: usize = 32;

/// Output [`sequences`] needs from a sequence's first byte on to take a
/// short one without checking the output again: 16 literals written at
/// once, then a match of up to 18 bytes from at most 14 bytes in (32 in
/// all), with room to spare.
const FAST_OUT: usize = 64;

/// A copy's piece.
const PIECE: usize = 16;

/// Literal runs and matches longer than this (and for a match, whose
/// source ends before it starts) go in one `memcpy`, not in pieces.
const LONG: usize = 256;

/// For a match offset under 16, the largest multiple of it within 16: how
/// far apart the pieces of its repeating pattern go (a table, where
/// `16 - 16 % offset` is a division).
const STEP: [usize; PIECE] = [
    16, 16, 16, 15, 16, 15, 12, 14, 16, 9, 10, 11, 12, 13, 14, 15,
];

/// Decodes whole sequences of the block `input`, from its byte `ip`, into
/// `out` from its byte `op`, and returns where it stopped in both.
///
/// `out[..op]` is output already decoded (a match may reach back into any
/// of it), no sequence may take the output past `end`, and `out[end..]`,
/// if there is any, is slack the copies may write into; they may also write
/// past a sequence's end into bytes the next sequences overwrite. It stops
/// once `op` reaches `goal`, and before a sequence that starts less than
/// [`FAST_IN`] bytes from the end of the input or [`FAST_OUT`] bytes from
/// `end`, that ends the block, or that has anything wrong with it: that one
/// is left for the careful decoder, which checks each byte (what this loop
/// wrote past its stopping point is output no one has been given yet).
///
/// Nothing is assumed of the arguments: ones that make no sense (`end`
/// past `out`'s length, `op` past `end`, `ip` past the input) stop it
/// before anything is written.
#[inline(never)]
pub(super) fn sequences(
    input: &[u8],
    ip: usize,
    out: &mut [u8],
    op: usize,
    end: usize,
    goal: usize,
) -> (usize, usize) {
    let olen = out.len();
    let Some(p) = pointers(input, ip, out, op, end, goal) else {
        return (ip, op);
    };
    let (src, dst, mut i0, mut o0) = (p.src, p.dst, p.i0, p.o0);
    while i0 <= p.ilastp && o0 <= p.olastp {
        // From here i0 + FAST_IN <= the input's end, and o0 + FAST_OUT <=
        // endp <= olenp.
        // SAFETY: i0 is inside the input.
        let token = unsafe { *i0 };
        // SAFETY: i0 + 1 is inside the input.
        let mut i = unsafe { i0.add(1) };
        let mut lit = usize::from(token >> 4);
        if lit < 15 {
            // SAFETY: 16 bytes from i (i + 16 = i0 + 17) are inside the
            // input, and 16 from o0 inside `out` (FAST_OUT >= 16); `input`
            // and `out` are a shared and a mutable borrow, so the two do
            // not overlap.
            unsafe { copy_piece(i, o0) };
        } else {
            // SAFETY: i and o0 are inside their slices; `dst` is valid for
            // writing `olen` bytes, none of them the input's.
            let Some((n, next)) = (unsafe { literals_at(input, src, i, dst, olen, o0, end) })
            else {
                break;
            };
            (lit, i) = (n, next);
        }
        // SAFETY: the literals and the two bytes of the offset after them
        // are inside the input (i + lit + 2 <= i0 + 17 for short literals,
        // checked by long_literals for long ones), and the literals end by
        // endp (FAST_OUT > 14, or checked).
        let (offset, o) = unsafe {
            i = i.add(lit);
            let offset = usize::from(le::<u16>(ptr::read_unaligned(i.cast())));
            i = i.add(2);
            (offset, o0.add(lit))
        };
        // Output before the match: how far back its offset may reach.
        let behind = o.addr() - dst.addr();
        let nibble = usize::from(token & 15);
        if nibble < 15 && offset >= 8 && offset <= behind {
            // The common case (three sequences in four in the cubins of
            // libcusparse): a match of at most 18 bytes, from at least 8
            // back, in pieces of 8, 8 and 2.
            // SAFETY: the pieces written, o..o + 18, end before olenp:
            // after short literals o + 18 <= o0 + 14 + 18 < o0 + FAST_OUT
            // <= endp, after long ones o + FAST_OUT <= endp (long_literals
            // checked it), and endp <= olenp; each piece read ends at or
            // before the one written starts (offset >= 8), inside `out`
            // (offset <= behind = o - dst), so they do not overlap.
            unsafe {
                let from = o.sub(offset);
                ptr::copy_nonoverlapping(from, o, 8);
                ptr::copy_nonoverlapping(from.add(8), o.add(8), 8);
                ptr::copy_nonoverlapping(from.add(16), o.add(16), 2);
                i0 = i;
                o0 = o.add(nibble + 4);
            }
            continue;
        }
        // 0, or before the start of `out`, in one comparison.
        if offset.wrapping_sub(1) >= behind {
            break;
        }
        // SAFETY: i is inside the input or one past its end.
        let Some((len, next)) = (unsafe { match_length(input, src, p.iendp, i, nibble) }) else {
            break;
        };
        i = next;
        // o is at most endp (FAST_OUT > 14, or checked).
        let room = p.endp.addr() - o.addr();
        if len > room {
            break;
        }
        // SAFETY: o + len is at most endp <= olenp, and the offset reaches
        // back into `out` at most to its start (both checked above).
        unsafe { copy_longer(dst, olen, p.olenp, o, offset, len) };
        i0 = i;
        // SAFETY: len <= room: o + len is at most endp.
        o0 = unsafe { o.add(len) };
    }
    // SAFETY: both are inside their slices or at their ends.
    unsafe {
        (
            i0.offset_from(src).cast_unsigned(),
            o0.offset_from(dst).cast_unsigned(),
        )
    }
}

/// [`sequences`]' bounds as pointers into `input` and `out`: where the
/// input starts, where the loop is in it (`ip`), the last start of a
/// sequence the loop takes and the input's end; where the output starts,
/// where the loop is in it (`op`), the last start of a sequence, `end` and
/// the output's end. `None` for arguments that make no sense or leave no
/// room for the loop (`end` past `out`, `op` past `end`, `ip` past the
/// input, too little input or output, `goal` 0).
#[derive(Clone, Copy)]
struct Pointers {
    src: *const u8,
    dst: *mut u8,
    i0: *const u8,
    ilastp: *const u8,
    iendp: *const u8,
    o0: *mut u8,
    olastp: *mut u8,
    endp: *mut u8,
    olenp: *mut u8,
}

/// [`Pointers`] of `sequences`' arguments.
#[inline(always)]
fn pointers(
    input: &[u8],
    ip: usize,
    out: &mut [u8],
    op: usize,
    end: usize,
    goal: usize,
) -> Option<Pointers> {
    let (ilen, olen) = (input.len(), out.len());
    if end > olen || op > end || ip > ilen || ilen < FAST_IN || end < FAST_OUT || goal == 0 {
        return None;
    }
    // The last starts of a sequence the loop takes, in the input and in
    // the output (before `goal`, and early enough for a short sequence).
    let ilast = ilen - FAST_IN;
    let olast = (end - FAST_OUT).min(goal - 1);
    let src = input.as_ptr();
    let dst = out.as_mut_ptr();
    // The loop works on pointers into the two slices (on indices, it kept
    // fewer of its values in registers and ran 2-4 % slower).
    // SAFETY: each is at most its slice's length (ip <= ilen, ilast <
    // ilen, op <= end <= olen, olast < end, all checked above): inside
    // the slice or one past its end.
    unsafe {
        Some(Pointers {
            src,
            dst,
            i0: src.add(ip),
            ilastp: src.add(ilast),
            iendp: src.add(ilen),
            o0: dst.add(op),
            olastp: dst.add(olast),
            endp: dst.add(end),
            olenp: dst.add(olen),
        })
    }
}

/// A match's length from its token's nibble: `nibble + 4`, and with a
/// nibble of 15 the length bytes from `i` on added. Returns it and where
/// the input goes on; `None` when the length bytes run past the input.
///
/// # Safety
///
/// `i` is inside `input` (which starts at `src` and ends at `iendp`) or
/// one past its end.
#[inline(always)]
unsafe fn match_length(
    input: &[u8],
    src: *const u8,
    iendp: *const u8,
    i: *const u8,
    nibble: usize,
) -> Option<(usize, *const u8)> {
    let len = nibble + 4;
    if nibble != 15 {
        return Some((len, i));
    }
    // SAFETY: i is inside the input (checked first).
    let byte = (i < iendp).then(|| unsafe { *i });
    if let Some(b) = byte.filter(|&b| b < 255) {
        // One more byte, the usual case.
        // SAFETY: i is inside the input, so one past it is inside or its end.
        return Some((len + usize::from(b), unsafe { i.add(1) }));
    }
    // SAFETY: i is inside the input or one past its end.
    let mut at = unsafe { i.offset_from(src).cast_unsigned() };
    let more = more_length(input, &mut at)?;
    // SAFETY: more_length leaves `at` at most at the input's end.
    Some((len.saturating_add(more), unsafe { src.add(at) }))
}

/// [`long_literals`] on pointers: the literals at `i` (inside the input,
/// which starts at `src`) copied to `o0` (inside `out`, which starts at
/// `dst` and has `olen` bytes); their count and where the input goes on.
///
/// # Safety
///
/// As [`long_literals`], with `i` and `o0` inside their slices.
#[inline(always)]
unsafe fn literals_at(
    input: &[u8],
    src: *const u8,
    i: *const u8,
    dst: *mut u8,
    olen: usize,
    o0: *mut u8,
    end: usize,
) -> Option<(usize, *const u8)> {
    // SAFETY: i and o0 are inside their slices (the caller's promise).
    let (at, o_at) = unsafe {
        (
            i.offset_from(src).cast_unsigned(),
            o0.offset_from(dst).cast_unsigned(),
        )
    };
    // SAFETY: as the caller promises.
    let (n, next) = unsafe { long_literals(input, at, dst, olen, o_at, end) }?;
    // SAFETY: `next` is an index into the input.
    Some((n, unsafe { src.add(next) }))
}

/// A match that is not the common short one, copied to `o`: in pieces
/// when it is from 16 or more back and short enough (most of the rest,
/// one sequence in five in the cubins of libcusparse), else byte-exact.
///
/// # Safety
///
/// `out` starts at `dst`, has `olen` bytes and ends at `olenp`; `o + len`
/// is inside `out` or at its end, and `1 <= offset <= o - dst`.
#[inline(always)]
unsafe fn copy_longer(
    dst: *mut u8,
    olen: usize,
    olenp: *mut u8,
    o: *mut u8,
    offset: usize,
    len: usize,
) {
    if offset >= PIECE && len <= LONG && len + 2 * PIECE <= olenp.addr() - o.addr() {
        // SAFETY: the pairs of pieces written start before o + len, so
        // they end before o + len + 32 <= olenp; the piece read for each
        // ends 16 - offset <= 0 bytes after the one written starts: inside
        // `out` (offset <= o - dst), not overlapping it, and holding only
        // bytes written before, as the format means.
        unsafe { copy_pieces(o.sub(offset), o, len) };
    } else {
        // SAFETY: o is inside `out` or at its end, `dst` is valid for
        // reading and writing `olen` bytes, and the offset and the length
        // were checked by the caller.
        unsafe { copy_match(dst, olen, o.offset_from(dst).cast_unsigned(), offset, len) };
    }
}

/// The literals of a token whose literal nibble is 15, from its length
/// bytes at `input[p..]` on, copied to `out[op..]`: their count, and where
/// the first of them is; `None` (nothing copied) unless they,
/// and the offset after them, are inside the input (literals that end the
/// input end the block: the careful decoder takes those), and they end
/// [`FAST_OUT`] bytes or more before `end` (at most `out`'s length). Out of the loop's way: one sequence in
/// 500 in the cubins of libcusparse.
///
/// # Safety
///
/// `dst` must be valid for writing `olen` bytes, none of them the
/// input's, and nothing else may use them meanwhile.
#[cold]
#[inline(never)]
unsafe fn long_literals(
    input: &[u8],
    mut p: usize,
    dst: *mut u8,
    olen: usize,
    op: usize,
    end: usize,
) -> Option<(usize, usize)> {
    let lit = more_length(input, &mut p)?.saturating_add(15);
    let ilen = input.len();
    // After them, as after short literals, FAST_OUT bytes before `end`:
    // the short match that may follow writes 18 bytes unchecked.
    if p > ilen
        || ilen - p < 2
        || lit > ilen - p - 2
        || end > olen
        || op > end
        || lit.saturating_add(FAST_OUT) > end - op
    {
        return None;
    }
    let from = input.as_ptr();
    if lit <= LONG && 2 * PIECE <= ilen - p - lit && 2 * PIECE <= olen - op - lit {
        // SAFETY: the pairs of pieces start before p + lit and op + lit,
        // so those read end before p + lit + 32 <= ilen and those written
        // before op + lit + 32 <= olen (both checked above), and the
        // caller promised `dst` is not the input.
        unsafe { copy_pieces(from.add(p), dst.add(op), lit) };
    } else {
        // SAFETY: input[p..p + lit] and out[op..op + lit] are inside their
        // slices (checked above), and not the same bytes (as above).
        unsafe { ptr::copy_nonoverlapping(from.add(p), dst.add(op), lit) };
    }
    Some((lit, p))
}

/// A length continued past a token's nibble of 15: the bytes from `*ip`
/// on, each 255 meaning another follows. `None` when the input ends
/// first.
#[inline(always)]
pub(super) fn more_length(input: &[u8], ip: &mut usize) -> Option<usize> {
    let mut n = 0usize;
    loop {
        let b = *input.get(*ip)?;
        *ip += 1;
        // At most 255 per input byte: far from overflowing.
        n = n.saturating_add(usize::from(b));
        if b != 255 {
            return Some(n);
        }
    }
}

/// Copies 16 bytes from `from` to `to`, unaligned.
///
/// # Safety
///
/// `from` must be valid for reading 16 bytes and `to` for writing 16, and
/// the two ranges must not overlap.
#[inline(always)]
unsafe fn copy_piece(from: *const u8, to: *mut u8) {
    // SAFETY: the caller's promise; `ptr::copy_nonoverlapping` of a
    // constant 16 compiles to one unaligned load and one store.
    unsafe { ptr::copy_nonoverlapping(from, to, PIECE) }
}

/// Copies `len` bytes (at least 1) from `from` to `to` in pieces of 16,
/// two at a time, first to last, so that a piece may read what an earlier
/// one wrote; the last pieces may go up to 31 bytes further.
///
/// # Safety
///
/// `from` must be valid for reading, and `to` for writing, `len` bytes
/// rounded up to a multiple of 32, and each piece read must not overlap
/// the piece written with it (`from` at least 16 bytes before `to`, or in
/// another allocation).
#[inline(always)]
unsafe fn copy_pieces(mut from: *const u8, mut to: *mut u8, len: usize) {
    // SAFETY: the caller's promise, piece by piece.
    unsafe {
        let stop = to.add(len);
        loop {
            copy_piece(from, to);
            copy_piece(from.add(PIECE), to.add(PIECE));
            from = from.add(2 * PIECE);
            to = to.add(2 * PIECE);
            if to >= stop {
                break;
            }
        }
    }
}

/// Writes `len` bytes of output at `dst + op`, of the `olen` bytes at
/// `dst`, as a match `offset` back: `offset` is in `1..=op` and `op + len`
/// at most `olen` (the caller checked both). Where there are 32 bytes of
/// room past the match, it goes in pieces of 16 (the
/// last may write past the match); otherwise byte-exact. Out of the
/// loop's way: the loop copies most matches itself.
///
/// # Safety
///
/// `dst` must be valid for reading and writing `olen` bytes, and nothing
/// else may use them meanwhile.
#[inline(never)]
unsafe fn copy_match(dst: *mut u8, olen: usize, op: usize, offset: usize, len: usize) {
    if offset == 0 || offset > op || op > olen || len > olen - op {
        // Not reached: the caller checked. Kept so that the function
        // checks what its callers promise it.
        return;
    }
    let start = op - offset;
    if len + 2 * PIECE > olen - op {
        // SAFETY: the caller's promise.
        exact_match(
            unsafe { std::slice::from_raw_parts_mut(dst, olen) },
            op,
            offset,
            len,
        );
        return;
    }
    if offset >= len && len > LONG {
        // SAFETY: out[start..start + len] ends at or before op (offset >=
        // len), where out[op..op + len] starts, and op + len <= olen.
        unsafe { ptr::copy_nonoverlapping(dst.add(start), dst.add(op), len) };
    } else if offset >= PIECE {
        // SAFETY: the pairs of pieces written start before op + len, so
        // they end before op + len + 32 <= olen; the piece read for each ends
        // 16 - offset <= 0 bytes after the one written starts: inside
        // `out`, not overlapping it, and holding only bytes written
        // before (by the sequences before, or by this match's earlier
        // pieces), as the format means.
        unsafe { copy_pieces(dst.add(start), dst.add(op), len) };
    } else {
        // An offset under 16: the match repeats its first `offset` bytes.
        // They are made into a 16-byte pattern of that period in a
        // register, written every `step` bytes (the largest multiple of
        // the period within 16, so each piece continues the pattern).
        // SAFETY: out[start..start + 16] ends at op - offset + 16 < op +
        // 16 <= olen: inside `out` (its bytes from op on are not this
        // match's yet; they are masked off below).
        let head = le::<u128>(unsafe { ptr::read_unaligned(dst.add(start).cast()) });
        let mut pattern = head & ((1u128 << (8 * offset)) - 1);
        let mut span = offset;
        while span < PIECE {
            pattern |= pattern << (8 * span);
            span *= 2;
        }
        let piece = pattern.to_le_bytes();
        let step = STEP[offset];
        // SAFETY: the pieces start before op + len, so they end before
        // op + len + 16 <= olen.
        unsafe {
            let mut to = dst.add(op);
            let stop = to.add(len);
            while to < stop {
                ptr::write_unaligned(to.cast::<[u8; PIECE]>(), piece);
                to = to.add(step);
            }
        }
    }
}

/// [`copy_match`] near the end of `out`: every byte written is the
/// match's. The bytes from `start` repeat with period `offset`; each copy
/// takes all of them so far (a whole number of periods), doubling the span.
pub(super) fn exact_match(out: &mut [u8], op: usize, offset: usize, len: usize) {
    let start = op - offset;
    let mut done = 0;
    while done < len {
        let k = (len - done).min(op + done - start);
        out.copy_within(start..start + k, op + done);
        done += k;
    }
}

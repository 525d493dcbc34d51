//! A streaming decoder of one raw LZ4 block: what a compressed CUDA fatbin
//! entry with flag 0x2000 holds (no frame, no checksum, no size prefix).
//!
//! The block format (lz4's `doc/lz4_Block_format.md`) is a run of
//! *sequences*, each:
//!
//! | field | size | meaning |
//! |---|---|---|
//! | token | 1 | high nibble: literal count; low nibble: match length − 4 |
//! | literal count, continued | 0+ | only when the nibble is 15: bytes added to it, each 255 meaning another follows |
//! | literals | count | copied to the output |
//! | offset | 2 | little-endian: how far back in the output the match starts (1..=65535) |
//! | match length, continued | 0+ | only when the nibble is 15, as for the literal count |
//!
//! The last sequence stops after its literals, where the block ends. A
//! match copies `length` bytes from `offset` bytes back and may overlap the
//! bytes it writes (offset 1 repeats one byte). The offset is 16 bits, so
//! only the last 65,535 bytes of output can ever be referred to: the
//! decoder keeps those and hands everything else out through [`Read`], so
//! an entry of any size decodes in constant memory (the history, plus one
//! step of output waiting to be read).
//!
//! It accepts what lz4_flex's block decoder accepts when given an output
//! buffer of the declared size, and then requires the output to be exactly
//! that size (the tests hold it to that):
//! - a block has at least one token, and ends only where the input ends
//!   right after a sequence's literals; input that ends elsewhere
//!   (after a match, inside a length or an offset) is truncated;
//! - literals past the end of the input, an offset of 0 and an offset
//!   further back than the output reaches are corrupt;
//! - a length that would take the output past the declared size is an
//!   error before anything of it is written.
//!
//! C liblz4's `LZ4_decompress_safe`, given the declared size, differs
//! (the fuzz target `lz4_fast` holds it to exactly these): it accepts an
//! offset of 0 (copying whatever its buffer held); it refuses blocks that
//! break the rules the format sets for encoders at a block's end (a match
//! ending in the last 5 bytes of the output, a sequence before the last
//! whose literals end in its last 12, or in the last 8 bytes of the
//! input); and for an empty output it takes only the block `00`.
//!
//! Most of a block is decoded by [`fast::sequences`] (the module's
//! `unsafe`); the code here takes what it leaves: a block's last
//! sequences, the sequences at the window's edges, and every fault.

use std::fmt;
use std::io::{self, Read};

use fast::more_length;

use crate::bytes::le;

#[expect(
    unsafe_code,
    reason = "the decoding loop's copies of 8- and 16-byte pieces (see fast.rs, and the unsafe \
              code policy in docs/development.md)"
)]
mod fast;

/// The output kept for matches: the longest offset a block can encode.
const HISTORY: usize = 0xFFFF;

/// Bytes decoded at a time, before they are handed out.
const STEP: usize = 256 << 10;

/// A match is at least this long (the token's low nibble adds to it).
const MIN_MATCH: u64 = 4;

/// [`MIN_MATCH`], for lengths counted in memory.
const MIN_MATCH_USIZE: usize = 4;

/// What is wrong with a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The input ends inside a sequence, or after a match (no block ends
    /// there), or holds no token at all: `at` is where another byte was
    /// needed.
    Truncated { at: usize },
    /// Literals that run past the end of the input.
    LiteralsPastEnd { at: usize, count: u64 },
    /// A match offset of 0, at input byte `at`.
    OffsetZero { at: usize },
    /// A match that starts before the first byte of the output.
    OffsetBeforeStart { at: usize, offset: u16, output: u64 },
    /// The output would grow past the declared size.
    TooLong { declared: u64 },
    /// The block ends with fewer bytes than declared.
    TooShort { got: u64, declared: u64 },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Fault::Truncated { at } => write!(f, "the block ends inside a sequence (byte {at})"),
            Fault::LiteralsPastEnd { at, count } => write!(
                f,
                "{count} literals at byte {at} run past the end of the block"
            ),
            Fault::OffsetZero { at } => write!(f, "a match offset of 0 at byte {at}"),
            Fault::OffsetBeforeStart { at, offset, output } => write!(
                f,
                "the match at byte {at} reaches {offset} bytes back, before the start of the \
                 output ({output} bytes so far)"
            ),
            Fault::TooLong { declared } => write!(f, "{}", too_long(declared)),
            Fault::TooShort { got, declared } => write!(f, "{}", too_short(got, declared)),
        }
    }
}

impl std::error::Error for Fault {}

/// How an entry that decodes further than declared is told (by either
/// method).
pub(super) fn too_long(declared: u64) -> String {
    format!("it decodes to more than the {declared} bytes the entry declares")
}

/// How an entry that decodes to fewer bytes than declared is told.
pub(super) fn too_short(got: u64, declared: u64) -> String {
    format!("it decodes to {got} bytes, the entry declares {declared}")
}

/// Where the decoder stands in the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At a token.
    Token,
    /// Copying literals (`left` more, all inside the input); `nibble` is
    /// the token's match nibble, for the match that may follow.
    Literals { left: usize, nibble: u8 },
    /// Copying a match of `left` more bytes from `offset` back.
    Match { offset: usize, left: u64 },
    /// The block has ended.
    End,
    /// The block is faulty; every later read says so again.
    Failed(Fault),
}

/// Slack after the window's output room: copies move 16 bytes at a time
/// and may write up to 15 bytes past what they need (later output
/// overwrites them; they are never handed out).
const SLACK: usize = 32;

/// Copies shorter than this go 16 bytes at a time (a few register moves
/// each), longer ones in one `memcpy`.
const SHORT: usize = 64;

/// Decodes one raw LZ4 block, which must decode to exactly `declared`
/// bytes, as a [`Read`] of its output. Errors are [`io::ErrorKind::InvalidData`]
/// carrying a [`Fault`].
pub(crate) struct BlockDecoder<'d> {
    input: &'d [u8],
    /// The next input byte.
    pos: usize,
    declared: u64,
    /// The window, a fixed size: `win[..len]` is output, up to [`HISTORY`]
    /// bytes already handed out and then the bytes not handed out yet;
    /// after `room` come [`SLACK`] bytes no output reaches.
    win: Vec<u8>,
    /// Output bytes in `win`.
    len: usize,
    /// Where in `win` the bytes not handed out yet start.
    handed: usize,
    /// Bytes of `win` output may fill.
    room: usize,
    /// Bytes decoded so far.
    total: u64,
    state: State,
}

impl<'d> BlockDecoder<'d> {
    pub(crate) fn new(input: &'d [u8], declared: u64) -> BlockDecoder<'d> {
        let room = usize::try_from(declared).map_or(HISTORY + STEP, |d| d.min(HISTORY + STEP));
        BlockDecoder {
            input,
            pos: 0,
            declared,
            // Allocated on the first read: a decoder made only to be
            // checked, or never read, costs nothing.
            win: Vec::new(),
            len: 0,
            handed: 0,
            room,
            total: 0,
            state: State::Token,
        }
    }

    /// The next input byte.
    fn byte(&mut self) -> Result<u8, Fault> {
        let b = *self
            .input
            .get(self.pos)
            .ok_or(Fault::Truncated { at: self.pos })?;
        self.pos += 1;
        Ok(b)
    }

    /// A length from a token's nibble: 15 continues in the bytes after.
    fn length(&mut self, nibble: u8) -> Result<u64, Fault> {
        let mut n = u64::from(nibble);
        if nibble == 15 {
            loop {
                let b = self.byte()?;
                // At most 255 per input byte: far from overflowing.
                n = n.saturating_add(u64::from(b));
                if b != 255 {
                    break;
                }
            }
        }
        Ok(n)
    }

    /// Fails unless `n` more bytes of output stay within the declared size.
    fn room_for(&self, n: u64) -> Result<(), Fault> {
        match self.total.checked_add(n) {
            Some(end) if end <= self.declared => Ok(()),
            _ => Err(Fault::TooLong {
                declared: self.declared,
            }),
        }
    }

    /// Decodes up to [`STEP`] more bytes of output into the window (the
    /// window then holds at most [`HISTORY`] handed-out bytes before them,
    /// so it has room).
    fn decode(&mut self) -> Result<(), Fault> {
        if self.win.is_empty() {
            self.win = vec![0; self.room + SLACK];
        }
        let goal = (self.len + STEP).min(self.room);
        // With all the declared output decoded, what is left of the block
        // is still read: sequences without output up to its end, or the
        // first that would go past the size.
        while self.len < goal || self.total == self.declared {
            match self.state {
                State::Token => {
                    if self.fast_sequences(goal) {
                        continue;
                    }
                    let token = self.byte()?;
                    let at = self.pos;
                    let count = self.length(token >> 4)?;
                    let rest = self.input.len() - self.pos;
                    let left = usize::try_from(count)
                        .ok()
                        .filter(|&c| c <= rest)
                        .ok_or(Fault::LiteralsPastEnd { at, count })?;
                    self.room_for(count)?;
                    self.state = State::Literals {
                        left,
                        nibble: token & 15,
                    };
                }
                State::Literals { left, nibble } => {
                    let n = left.min(goal - self.len);
                    self.copy_literals(n);
                    if n < left {
                        self.state = State::Literals {
                            left: left - n,
                            nibble,
                        };
                        continue;
                    }
                    if self.pos == self.input.len() {
                        self.state = State::End;
                        break;
                    }
                    self.state = self.match_header(nibble)?;
                }
                State::Match { offset, left } => {
                    let copied = self.copy_match(offset, left, goal);
                    self.state = if copied < left {
                        State::Match {
                            offset,
                            left: left - copied,
                        }
                    } else {
                        State::Token
                    };
                }
                State::End | State::Failed(_) => break,
            }
        }
        Ok(())
    }

    /// Decodes whole sequences with [`fast::sequences`] while each fits in
    /// the window's room and within the declared size, and the block goes
    /// on after it: the common case, in one tight loop with none of the
    /// steps' bookkeeping, stopping once the output reaches `goal`.
    /// Returns whether it decoded any. It leaves the sequence it stops at untouched (a match that
    /// must be split over steps, the block's end, anything faulty) to the
    /// steps, which decode it or name its fault.
    fn fast_sequences(&mut self, goal: usize) -> bool {
        let start_len = self.len;
        // Output this loop may add: up to the room, and the declared size.
        let allowed = usize::try_from(self.declared - self.total).unwrap_or(usize::MAX);
        let end = self.room.min(start_len.saturating_add(allowed));
        let (ip, op) = fast::sequences(self.input, self.pos, &mut self.win, self.len, end, goal);
        self.pos = ip;
        self.len = op;
        self.total += u64_from(op - start_len);
        op > start_len
    }

    /// Copies `n` literals (all inside the input, all within the window's
    /// room) to the output.
    fn copy_literals(&mut self, n: usize) {
        let (from, to) = (self.pos, self.len);
        if n <= SHORT && from + n.next_multiple_of(16) <= self.input.len() {
            // 16 at a time, reading ahead in the input and writing into
            // the slack.
            let mut i = 0;
            while i < n {
                self.win[to + i..to + i + 16].copy_from_slice(&self.input[from + i..from + i + 16]);
                i += 16;
            }
        } else {
            self.win[to..to + n].copy_from_slice(&self.input[from..from + n]);
        }
        self.pos += n;
        self.len += n;
        self.total += u64_from(n);
    }

    /// Reads a match's offset and length (after the literals of a token
    /// whose low nibble is `nibble`).
    fn match_header(&mut self, nibble: u8) -> Result<State, Fault> {
        let at = self.pos;
        let offset = le::<u16>([self.byte()?, self.byte()?]);
        let offset = self.check_offset(at, offset)?;
        let length = MIN_MATCH + self.length(nibble)?;
        self.room_for(length)?;
        Ok(State::Match {
            offset,
            left: length,
        })
    }

    /// A match offset read at input byte `at`: not 0, and not before the
    /// start of the output decoded so far.
    fn check_offset(&self, at: usize, offset: u16) -> Result<usize, Fault> {
        if offset == 0 {
            return Err(Fault::OffsetZero { at });
        }
        if u64::from(offset) > self.total {
            return Err(Fault::OffsetBeforeStart {
                at,
                offset,
                output: self.total,
            });
        }
        Ok(usize::from(offset))
    }

    /// Copies up to `left` bytes of a match from `offset` back, stopping at
    /// `goal` bytes of output; returns the bytes copied. The window holds
    /// at least `offset` bytes: the offset is within the output decoded so
    /// far, and [`HISTORY`] bytes of it are kept.
    fn copy_match(&mut self, offset: usize, left: u64, goal: usize) -> u64 {
        let n = usize::try_from(left)
            .unwrap_or(usize::MAX)
            .min(goal - self.len);
        let start = self.len - offset;
        if offset >= 16 && n <= SHORT {
            // 16 at a time: each piece's source ends at or before where
            // it is written (the offset is at least 16), so the bytes a
            // piece reads were written by the pieces before it, as the
            // format means; the last may write into the slack.
            let mut i = 0;
            while i < n {
                let (done, rest) = self.win.split_at_mut(self.len + i);
                rest[..16].copy_from_slice(&done[start + i..start + i + 16]);
                i += 16;
            }
        } else if offset >= n {
            self.win.copy_within(start..start + n, self.len);
        } else {
            // The bytes from `start` repeat with period `offset`; each copy
            // takes all of them so far (a whole number of periods, so the
            // next copy continues the pattern), doubling the span.
            let mut copied = 0;
            while copied < n {
                let span = self.len + copied - start;
                let k = (n - copied).min(span);
                self.win.copy_within(start..start + k, self.len + copied);
                copied += k;
            }
        }
        self.len += n;
        self.total += u64_from(n);
        u64_from(n)
    }

    /// Drops handed-out output older than the history (called when all of
    /// the output has been handed out).
    fn compact(&mut self) {
        if self.handed > HISTORY {
            let from = self.handed - HISTORY;
            self.win.copy_within(from..self.len, 0);
            self.len -= from;
            self.handed = HISTORY;
        }
    }

    fn fail(&mut self, f: Fault) -> io::Error {
        self.state = State::Failed(f);
        io::Error::new(io::ErrorKind::InvalidData, f)
    }
}

impl Read for BlockDecoder<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // A first read that can take the whole output decodes straight
        // into it. Anything [`decode_whole`] does not accept is decoded
        // again below, step by step, which names the fault (the bytes it
        // left in `buf` are not handed out).
        if self.total == 0
            && self.state == State::Token
            && let Ok(declared) = usize::try_from(self.declared)
            && let Some(out) = buf.get_mut(..declared)
            && decode_whole(self.input, out)
        {
            self.total = self.declared;
            self.pos = self.input.len();
            self.state = State::End;
            return Ok(declared);
        }
        loop {
            if self.handed < self.len {
                let n = buf.len().min(self.len - self.handed);
                buf[..n].copy_from_slice(&self.win[self.handed..self.handed + n]);
                self.handed += n;
                return Ok(n);
            }
            match self.state {
                State::End if self.total == self.declared => return Ok(0),
                State::End => {
                    let f = Fault::TooShort {
                        got: self.total,
                        declared: self.declared,
                    };
                    return Err(self.fail(f));
                }
                State::Failed(f) => return Err(self.fail(f)),
                _ => {}
            }
            self.compact();
            if let Err(f) = self.decode() {
                return Err(self.fail(f));
            }
        }
    }
}

/// A count of bytes in memory as a `u64` (every `usize` fits: the
/// targets are 64-bit or less). The module uses nothing else of the crate,
/// so that `scripts/lz4-bench` can compile it on its own.
fn u64_from(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Decodes the whole block `input` into `out`, which it must fill
/// exactly: the fast path for an output held whole in memory, with none
/// of [`BlockDecoder`]'s stepping. Returns whether the block is good; it
/// accepts exactly what [`BlockDecoder`] accepts (the tests hold the two
/// to each other) but does not say what is wrong: the decoder, run again,
/// does. On `false`, `out` holds garbage.
///
/// Most sequences are decoded by [`fast::sequences`]; the loop here takes
/// the ones it leaves (the block's last sequences, and any with something
/// wrong), one by one, each byte checked.
// Compiled on its own: inlined into its callers, its loop lost registers
// to their state and ran half as fast.
#[inline(never)]
pub(crate) fn decode_whole(input: &[u8], out: &mut [u8]) -> bool {
    let (mut ip, mut op) = (0usize, 0usize);
    let (ilen, olen) = (input.len(), out.len());
    loop {
        (ip, op) = fast::sequences(input, ip, out, op, olen, olen);
        let Some(&token) = input.get(ip) else {
            return false;
        };
        ip += 1;
        let mut lit = usize::from(token >> 4);
        if lit == 15 {
            let Some(n) = more_length(input, &mut ip) else {
                return false;
            };
            lit = lit.saturating_add(n);
        }
        if lit > ilen - ip || lit > olen - op {
            return false;
        }
        out[op..op + lit].copy_from_slice(&input[ip..ip + lit]);
        ip += lit;
        op += lit;
        if ip == ilen {
            return op == olen;
        }
        let Some(&[lo, hi]) = input.get(ip..ip + 2) else {
            return false;
        };
        ip += 2;
        let offset = usize::from(le::<u16>([lo, hi]));
        if offset == 0 || offset > op {
            return false;
        }
        let mut len = usize::from(token & 15);
        if len == 15 {
            let Some(n) = more_length(input, &mut ip) else {
                return false;
            };
            len = len.saturating_add(n);
        }
        let len = len.saturating_add(MIN_MATCH_USIZE);
        if len > olen - op {
            return false;
        }
        fast::exact_match(out, op, offset, len);
        op += len;
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "the test data takes the low bits of a random generator"
)]
mod tests;

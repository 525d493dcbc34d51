//! The `lz4_fast` fuzz body: LZ4 blocks made to reach every path of the
//! decoding loop (src/fatbin/lz4/fast.rs), held to lz4_flex and, under the
//! fuzzer, to C liblz4 as well.

#[cfg(fuzzing)]
use std::io::Read;

use super::lz4_block::{lz4_flex_decode, streamed};
use crate::bytes::le;
#[cfg(fuzzing)]
use crate::fatbin::lz4::BlockDecoder;
use crate::fatbin::lz4::decode_whole;

/// Most output a made-up block of `lz4_fast` decodes to.
const MADE_UP_MAX: usize = 4 << 20;

/// An LZ4 block and its declared size from `data`, decoded by both of our
/// decoders and by lz4_flex (and, in the fuzzer, by C liblz4): the same
/// output and the same refusals, but where liblz4 is known to differ (see
/// [`liblz4_may_differ`]). Must never panic.
///
/// The first byte says how the block is made from the rest:
/// - `% 4 == 0`: the rest is the block, after a 24-bit declared size;
/// - `% 4 == 1`: lz4_flex compresses the rest, and the bytes of the block
///   the first byte's high bits pick are changed;
/// - otherwise: the rest is a script of sequences ([`made_up`]): offsets
///   from 1 to far back, literal runs and matches from short to hundreds
///   of bytes, the block's end anywhere near a sequence; the declared size
///   is the output's, or one more or less.
pub fn lz4_fast(data: &[u8]) {
    let Some((&how, rest)) = data.split_first() else {
        return;
    };
    let (block, declared) = match how % 4 {
        0 => {
            let Some((size, block)) = rest.split_first_chunk::<3>() else {
                return;
            };
            let declared = le::<u32>([size[0], size[1], size[2], 0]);
            (
                block.to_vec(),
                usize::try_from(declared).expect("24 bits fit"),
            )
        }
        1 => {
            let mut block = lz4_flex::block::compress(rest);
            // Up to three bytes changed, where the data's first bytes say.
            for (k, pick) in rest.chunks(2).take(usize::from(how >> 6)).enumerate() {
                let at = (usize::from(pick[0]) * 257 + k * 31) % block.len().max(1);
                if let Some(b) = block.get_mut(at) {
                    *b ^= pick.get(1).copied().unwrap_or(0x5a);
                }
            }
            (block, rest.len())
        }
        _ => {
            let (block, len) = made_up(rest);
            let declared = match how >> 6 {
                1 => len + 1,
                2 => len.saturating_sub(1),
                _ => len,
            };
            (block, declared)
        }
    };
    let reference = lz4_flex_decode(&block, declared);
    // Nothing written past the output: 64 bytes after it watched.
    let mut out = vec![0xA5u8; declared + 64];
    let ok = decode_whole(&block, &mut out[..declared]);
    assert!(
        out[declared..].iter().all(|&b| b == 0xA5),
        "decode_whole wrote past the output"
    );
    out.truncate(declared);
    let whole = ok.then_some(out);
    assert!(whole == reference, "decode_whole and lz4_flex differ");
    // The streaming decoder: its window's edges, every 256 KiB, fall in
    // the made-up blocks longer than that.
    for chunk in [1 + usize::from(how), 1 << 16] {
        let ours = streamed(&block, declared, chunk).ok();
        assert!(
            ours == reference,
            "the streaming decoder and lz4_flex differ, {chunk} at a time"
        );
    }
    #[cfg(fuzzing)]
    {
        let c = liblz4_decode(&block, declared);
        match (&whole, &c) {
            (Some(a), Some(b)) => assert!(a == b, "ours and liblz4 differ"),
            (Some(_), None) => assert!(
                liblz4_may_differ(&block, declared),
                "liblz4 refuses a block ours accepts, and not at its end"
            ),
            (None, Some(_)) => {
                let mut d = BlockDecoder::new(&block, declared as u64);
                let e = d.read_to_end(&mut Vec::new()).expect_err("ours refuses");
                let fault = e
                    .get_ref()
                    .and_then(|f| f.downcast_ref::<crate::fatbin::lz4::Fault>());
                assert!(
                    matches!(fault, Some(crate::fatbin::lz4::Fault::OffsetZero { .. })),
                    "liblz4 accepts a block ours refuses, not for an offset of 0: {fault:?}"
                );
            }
            (None, None) => {}
        }
    }
}

/// C liblz4's `LZ4_decompress_safe` (liblz4 1.10.0, through the `lz4`
/// crate, a dependency of the fuzz build only) into a buffer of the
/// declared size; less than that counts as refusing.
#[cfg(fuzzing)]
fn liblz4_decode(block: &[u8], declared: usize) -> Option<Vec<u8>> {
    let size = i32::try_from(declared).ok()?;
    let mut out = vec![0u8; declared];
    match lz4::block::decompress_to_buffer(block, Some(size), &mut out) {
        Ok(n) if n == declared => Some(out),
        _ => None,
    }
}

/// Whether `block` (one our decoders accept, of `declared` bytes) breaks
/// one of the rules liblz4 holds a block's end to, beyond the format's: a
/// match ends 5 bytes or fewer before the output's end, or a sequence
/// other than the last ends its literals 12 bytes or fewer before the
/// output's end or 8 or fewer before the input's. (lz4's block format
/// document states the first two as what every encoder must do; lz4_flex
/// and our decoders accept blocks that do not, liblz4 may refuse them.)
/// And for an empty output, liblz4 takes only the one-byte block `00`,
/// where we take any token with no literals (its match nibble unread).
pub(crate) fn liblz4_may_differ(block: &[u8], declared: usize) -> bool {
    if declared == 0 {
        return block != [0];
    }
    let (mut ip, mut op) = (0usize, 0usize);
    let more = |ip: &mut usize| -> usize {
        let mut n = 0usize;
        while let Some(&b) = block.get(*ip) {
            *ip += 1;
            n = n.saturating_add(usize::from(b));
            if b != 255 {
                break;
            }
        }
        n
    };
    while let Some(&token) = block.get(ip) {
        ip += 1;
        let mut lit = usize::from(token >> 4);
        if lit == 15 {
            lit = lit.saturating_add(more(&mut ip));
        }
        ip = ip.saturating_add(lit);
        op = op.saturating_add(lit);
        if ip >= block.len() {
            return false;
        }
        if op.saturating_add(12) > declared || ip.saturating_add(8) > block.len() {
            return true;
        }
        ip += 2;
        let mut len = usize::from(token & 15);
        if len == 15 {
            len = len.saturating_add(more(&mut ip));
        }
        op = op.saturating_add(len).saturating_add(4);
        if op.saturating_add(5) > declared {
            return true;
        }
    }
    false
}

/// A block made from a script: each sequence reads a control byte `c`
/// and what it needs after it. Literal count: `c & 7` (0 to 7), or when
/// `c & 8`, the next byte times 3 (up to 765); the literals are the next
/// bytes of the script (zeros once it ends). Match: the next byte `m`
/// gives its length, `4 + m % 32` or, when `m >= 224`, `4 + m * 5`
/// (over a thousand); its offset comes from `c >> 4`: 1 to 15 as it is,
/// else the next two bytes, within the output so far (or one past it, or
/// 0, when the script's byte says so: damage). The last sequence is
/// literals alone. Returns the block and the output's length.
fn made_up(script: &[u8]) -> (Vec<u8>, usize) {
    let mut s = script.iter().copied();
    let mut next = || s.next().unwrap_or(0);
    let (mut block, mut out) = (Vec::new(), 0usize);
    let mut sequences = usize::from(next()) + 1;
    loop {
        let c = next();
        let lit = if c & 8 != 0 {
            usize::from(next()) * 3
        } else {
            usize::from(c & 7)
        };
        let last = sequences == 0 || out > MADE_UP_MAX;
        let token_at = block.len();
        block.push(0);
        let lit_nibble = push_length(&mut block, lit);
        block.extend((0..lit).map(|_| next()));
        out += lit;
        if last {
            block[token_at] = lit_nibble << 4;
            return (block, out);
        }
        sequences -= 1;
        let m = next();
        let len = if m >= 224 {
            4 + usize::from(m) * 5
        } else {
            4 + usize::from(m % 32)
        };
        let offset = match c >> 4 {
            0 => {
                let raw = usize::from(le::<u16>([next(), next()]));
                match raw % 64 {
                    0 => 0,
                    1 => out + 1,
                    _ => 1 + raw % out.clamp(1, 0xFFFF),
                }
            }
            small => usize::from(small).min(out.max(1)),
        };
        block.extend(u16::try_from(offset).unwrap_or(u16::MAX).to_le_bytes());
        let match_nibble = push_length(&mut block, len - 4);
        block[token_at] = lit_nibble << 4 | match_nibble;
        out += len;
    }
}

/// Writes the bytes after a token that continue a length of `n` (its
/// nibble 15, then 255s and the rest) and returns the nibble.
fn push_length(block: &mut Vec<u8>, n: usize) -> u8 {
    if n < 15 {
        return u8::try_from(n).expect("under 15");
    }
    let mut left = n - 15;
    while left >= 255 {
        block.push(255);
        left -= 255;
    }
    block.push(u8::try_from(left).expect("under 255"));
    15
}

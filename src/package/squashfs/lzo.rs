//! An LZO1X decoder (the form `mksquashfs -comp lzo` writes, whichever
//! of its compression levels), for one block held whole in memory. Every
//! length and distance is checked: a block that asks for more output
//! than `cap`, reads past its input, copies from before the output's start
//! or leaves input after its end marker is an error, never a panic.
//!
//! The stream is a sequence of instructions, each a copy of earlier output
//! (a match) followed by up to three literal bytes, or a run of literals.
//! How an instruction byte below 16 is read depends on how many literals
//! the instruction before it copied (the `state`: 0, 1–3, or 4 for a run).

/// Reads LZO1X input, one byte at a time.
struct Input<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn byte(&mut self) -> Result<u8, &'static str> {
        let b = *self.bytes.get(self.at).ok_or("its input ends early")?;
        self.at += 1;
        Ok(b)
    }

    fn le16(&mut self) -> Result<usize, &'static str> {
        let lo = self.byte()?;
        let hi = self.byte()?;
        Ok(usize::from(lo) | usize::from(hi) << 8)
    }

    /// A length that goes on past its instruction: `base` plus 255 for
    /// each zero byte, plus the first byte that is not zero.
    fn long(&mut self, base: usize) -> Result<usize, &'static str> {
        let mut n = base;
        loop {
            match self.byte()? {
                0 => n = n.checked_add(255).ok_or("a length overflows")?,
                b => return n.checked_add(usize::from(b)).ok_or("a length overflows"),
            }
        }
    }

    fn literals(&mut self, n: usize, out: &mut Vec<u8>, cap: usize) -> Result<(), &'static str> {
        let end = self.at.checked_add(n).ok_or("a length overflows")?;
        let run = self.bytes.get(self.at..end).ok_or("its input ends early")?;
        if out.len() + n > cap {
            return Err("it decompresses to more than a block");
        }
        out.extend_from_slice(run);
        self.at = end;
        Ok(())
    }
}

/// Copies `len` bytes from `dist` bytes back in `out` (the copy may
/// overlap what it writes).
fn copy_back(out: &mut Vec<u8>, dist: usize, len: usize, cap: usize) -> Result<(), &'static str> {
    if dist == 0 || dist > out.len() {
        return Err("a match reaches before the start of its output");
    }
    if out.len() + len > cap {
        return Err("it decompresses to more than a block");
    }
    let from = out.len() - dist;
    for i in 0..len {
        let b = out[from + i];
        out.push(b);
    }
    Ok(())
}

/// Decodes the LZO1X block `input`, which must decode to at most `cap`
/// bytes and end with its end marker exactly at its last byte.
pub(super) fn decompress(input: &[u8], cap: usize) -> Result<Vec<u8>, &'static str> {
    let mut out = Vec::with_capacity(cap.min(input.len().saturating_mul(4)));
    let mut r = Input {
        bytes: input,
        at: 0,
    };
    let mut state = 0usize;
    // A first byte above 17 is a literal run with no instruction before it.
    if let Some(&first) = input.first()
        && first > 17
    {
        r.at = 1;
        let n = usize::from(first - 17);
        r.literals(n, &mut out, cap)?;
        state = n.min(4);
    }
    loop {
        let inst = usize::from(r.byte()?);
        let (dist, len);
        if inst >= 64 {
            // A match of 3 to 8 bytes within 2 KiB.
            len = (inst >> 5) + 1;
            dist = (usize::from(r.byte()?) << 3) + ((inst >> 2) & 7) + 1;
            state = inst & 3;
        } else if inst >= 32 {
            // A match within 16 KiB.
            let l = match inst & 31 {
                0 => r.long(31)?,
                l => l,
            };
            len = l + 2;
            let d = r.le16()?;
            dist = (d >> 2) + 1;
            state = d & 3;
        } else if inst >= 16 {
            // A match from 16 to 48 KiB back, or the end marker.
            let l = match inst & 7 {
                0 => r.long(7)?,
                l => l,
            };
            len = l + 2;
            let d = r.le16()?;
            let back = ((inst & 8) << 11) + (d >> 2);
            if back == 0 {
                if len != 3 {
                    return Err("its end marker is malformed");
                }
                if r.at != input.len() {
                    return Err("input follows its end marker");
                }
                return Ok(out);
            }
            dist = back + 16384;
            state = d & 3;
        } else if state == 0 {
            // A run of literals, at least four.
            let n = match inst {
                0 => r.long(15)?,
                n => n,
            } + 3;
            r.literals(n, &mut out, cap)?;
            state = 4;
            continue;
        } else if state < 4 {
            // Two bytes within 1 KiB, after a match that copied literals.
            len = 2;
            dist = (inst >> 2) + (usize::from(r.byte()?) << 2) + 1;
            state = inst & 3;
        } else {
            // Three bytes 2 to 3 KiB back, after a run of literals.
            len = 3;
            dist = (inst >> 2) + (usize::from(r.byte()?) << 2) + 2049;
            state = inst & 3;
        }
        copy_back(&mut out, dist, len, cap)?;
        r.literals(state, &mut out, cap)?;
    }
}

#[cfg(test)]
mod tests {
    use super::decompress;

    #[test]
    fn literals_a_match_and_the_end_marker() {
        // "abcd" as a literal run (22 = 17 + 5: five literals), then a
        // match of 3 bytes 4 back (64: len 3, dist 1 + low bits; here the
        // high byte 0 and bits 3 → dist 4), then the end marker.
        let mut s = vec![17 + 5];
        s.extend_from_slice(b"abcde");
        s.extend_from_slice(&[64 | (3 << 2), 0]);
        s.extend_from_slice(&[0x11, 0, 0]);
        assert_eq!(decompress(&s, 1024).unwrap(), b"abcdebcd");
    }

    #[test]
    fn lies_are_errors() {
        let mut s = vec![17 + 5];
        s.extend_from_slice(b"abcde");
        // A match 9 bytes back, before the start.
        let far = [s.clone(), vec![64, 1], vec![0x11, 0, 0]].concat();
        assert!(decompress(&far, 1024).is_err());
        // More than the cap.
        assert!(decompress(&[s.clone(), vec![0x11, 0, 0]].concat(), 4).is_err());
        // Cut before its end marker; bytes after it.
        assert!(decompress(&s, 1024).is_err());
        assert!(decompress(&[s.clone(), vec![0x11, 0, 0, 7]].concat(), 1024).is_err());
        // A long zero run (a bomb's length) stays within the cap.
        let bomb = [vec![0x20], vec![0; 4200], vec![1, 4, 0], vec![0x11, 0, 0]].concat();
        assert!(decompress(&[s, bomb].concat(), 1 << 20).is_err());
        assert!(decompress(&[], 16).is_err());
    }

    /// Blocks `lzokay` compresses (what prune writes an LZO squashfs
    /// with) decode to their input: literal runs short and long, near and
    /// far matches, long lengths, text, noise.
    #[test]
    fn blocks_prune_writes_decode_to_their_input() {
        let round_trip = |input: &[u8]| -> usize {
            let packed = lzokay::compress::compress(input).unwrap();
            assert_eq!(decompress(&packed, input.len().max(1)).unwrap(), input);
            packed.len()
        };
        round_trip(b"a");
        round_trip(b"abc");
        let mut x = 7u64;
        let mut noise = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    u8::try_from((x >> 24) & 0xff).unwrap_or(0)
                })
                .collect()
        };
        let first = noise(400);
        let mut v = first.clone();
        for gap in [0, 1, 2, 3, 4, 5, 20, 300] {
            v.extend(noise(gap));
            v.extend_from_slice(&first[..5 + gap]);
        }
        v.extend(noise(20_000));
        v.extend_from_slice(&first[..100]);
        v.extend(noise(20_000));
        v.extend_from_within(30_000..31_000);
        v.extend(vec![0u8; 70_000]);
        let n = round_trip(&v);
        assert!(n < v.len() - 60_000, "{n} of {}", v.len());
        let text = b"the device code of each GPU, ".repeat(2000);
        assert!(round_trip(&text) < text.len() / 10);
        round_trip(&noise(1 << 17));
    }
}

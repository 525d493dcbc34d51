//! LZ4 frames (`.tar.lz4`, `libfoo.so.lz4`, what the `lz4` tool writes by
//! default), decoded by `lz4_flex`'s frame decoder.
//!
//! That decoder takes an input that ends between two blocks, or before a
//! frame's end mark, for the end of the data, it stops at a skippable
//! frame, and its reads give 0 bytes (the end) at the end of each frame.
//! So the frames are walked here first, from block header to block
//! header (no data is decompressed): each must end with its end mark
//! inside the input, and nothing but frames may follow; skippable frames
//! (user data `lz4` leaves alone) are left out, and each frame is decoded
//! by a decoder of its own, one after another.
//! A legacy frame (`lz4 -l`) has no end mark to check and is not read.

use std::io::{self, Read};

use crate::bytes::le;
use crate::num::usize_from;

/// An LZ4 frame's magic, little-endian.
pub(super) const FRAME_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];

/// The range of skippable frames' magics (0x184D2A50 to 0x184D2A5F).
const SKIPPABLE: std::ops::RangeInclusive<u32> = 0x184d_2a50..=0x184d_2a5f;

/// Frame flags: a checksum after each block, a content checksum after
/// the end mark, a content size and a dictionary ID in the header.
const BLOCK_CHECKSUM: u8 = 0x10;
const CONTENT_SIZE: u8 = 0x08;
const CONTENT_CHECKSUM: u8 = 0x04;
const DICT_ID: u8 = 0x01;

/// The decompressing reader of the LZ4 frames `bytes` hold, once their
/// structure was found whole.
pub(super) fn decoder(bytes: &[u8]) -> io::Result<impl Read + '_> {
    let frames = frames(bytes).map_err(|why| io::Error::new(io::ErrorKind::InvalidData, why))?;
    Ok(Frames {
        frames: frames.into_iter().map(|r| &bytes[r]).collect(),
        at: 0,
        current: None,
    })
}

/// The byte ranges of the (not skippable) frames of `bytes`, in order, or
/// why they are not a whole sequence of LZ4 frames.
fn frames(bytes: &[u8]) -> Result<Vec<std::ops::Range<usize>>, String> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let magic = word(bytes, at).ok_or("a frame's magic is cut short")?;
        if SKIPPABLE.contains(&magic) {
            let size = word(bytes, at + 4).ok_or("a skippable frame is cut short")?;
            at = end(bytes, at + 8, usize_from(size.into()))
                .ok_or("a skippable frame ends past the data")?;
            continue;
        }
        if magic.to_le_bytes() != FRAME_MAGIC {
            return Err(format!(
                "bytes at offset {at} are no LZ4 frame (a legacy frame, or data after the \
                 frames)"
            ));
        }
        let start = at;
        at = frame_end(bytes, at).ok_or_else(|| {
            format!("the frame at offset {start} is cut short (no end mark before the data ends)")
        })?;
        out.push(start..at);
    }
    Ok(out)
}

/// Where the frame that starts at `at` ends, after its end mark (and
/// content checksum): `None` if that lies past `bytes`.
fn frame_end(bytes: &[u8], at: usize) -> Option<usize> {
    let flags = *bytes.get(at + 4)?;
    let mut header = 7usize;
    if flags & CONTENT_SIZE != 0 {
        header += 8;
    }
    if flags & DICT_ID != 0 {
        header += 4;
    }
    let mut at = end(bytes, at, header)?;
    loop {
        let size = word(bytes, at)?;
        at += 4;
        if size == 0 {
            let tail = if flags & CONTENT_CHECKSUM != 0 { 4 } else { 0 };
            return end(bytes, at, tail);
        }
        let data = usize_from((size & 0x7fff_ffff).into());
        let check = if flags & BLOCK_CHECKSUM != 0 { 4 } else { 0 };
        at = end(bytes, at, data.checked_add(check)?)?;
    }
}

/// `at + len`, if that is within `bytes`.
fn end(bytes: &[u8], at: usize, len: usize) -> Option<usize> {
    at.checked_add(len).filter(|&e| e <= bytes.len())
}

/// The little-endian 32-bit word at `at`.
fn word(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(le::<u32>([b[0], b[1], b[2], b[3]]))
}

/// The data of whole frames, each decoded in turn.
struct Frames<'a> {
    frames: Vec<&'a [u8]>,
    /// The next frame to start.
    at: usize,
    current: Option<lz4_flex::frame::FrameDecoder<&'a [u8]>>,
}

impl Read for Frames<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some(d) = &mut self.current {
                let n = d.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                // The decoder gives 0 bytes for a block that holds none,
                // too: the frame goes on while its bytes do (each read
                // takes a block header at least).
                if !d.get_ref().is_empty() {
                    continue;
                }
            }
            let Some(&next) = self.frames.get(self.at) else {
                return Ok(0);
            };
            self.at += 1;
            self.current = Some(lz4_flex::frame::FrameDecoder::new(next));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(data: &[u8], block_checksums: bool) -> Vec<u8> {
        let info = lz4_flex::frame::FrameInfo::new()
            .block_checksums(block_checksums)
            .content_checksum(true)
            .block_size(lz4_flex::frame::BlockSize::Max64KB);
        let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
        io::Write::write_all(&mut e, data).unwrap();
        e.finish().unwrap()
    }

    fn decoded(bytes: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        decoder(bytes)?.read_to_end(&mut out)?;
        Ok(out)
    }

    /// Frames one after another, skippable frames between them, read
    /// as their data in order; a frame cut anywhere (between blocks too,
    /// which the crate's decoder takes for an end) or followed by other
    /// bytes is an error.
    #[test]
    fn whole_frames_are_read_and_cut_ones_are_errors() {
        let one: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let two = b"second frame".to_vec();
        for checks in [false, true] {
            let mut bytes = framed(&one, checks);
            let first = bytes.len();
            bytes.extend_from_slice(&[0x5a, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3]);
            bytes.extend(framed(&two, checks));
            let mut want = one.clone();
            want.extend_from_slice(&two);
            let got = decoded(&bytes).unwrap();
            assert!(
                got == want,
                "{} bytes read, {} written",
                got.len(),
                want.len()
            );
            let cuts = (1..bytes.len()).step_by(997).chain([bytes.len() - 1]);
            // Cut where a frame ends, the rest is whole frames.
            for cut in cuts.filter(|&c| c != first && c != first + 11) {
                assert!(decoded(&bytes[..cut]).is_err(), "cut at {cut}");
            }
            let mut trailing = bytes.clone();
            trailing.extend_from_slice(b"junk");
            assert!(decoded(&trailing).is_err());
        }
        // A block that holds nothing (stored, of length 0) ends no frame:
        // the blocks after it are read.
        let mut plain = lz4_flex::frame::FrameEncoder::new(Vec::new());
        io::Write::write_all(&mut plain, &two).unwrap();
        let mut bytes = plain.finish().unwrap();
        bytes.splice(7..7, [0, 0, 0, 0x80]);
        assert_eq!(decoded(&bytes).unwrap(), two);
        // A legacy frame is not this format.
        assert!(decoded(&[0x02, 0x21, 0x4c, 0x18, 0, 0, 0, 0]).is_err());
    }
}

//! The `lz4_block` fuzz body: any bytes as an LZ4 block, decoded by the
//! streaming decoder of compressed CUDA fatbin entries and held to
//! lz4_flex; and the two decodings `lz4_fast` shares with it.

use std::io::Read;

use crate::bytes::le;
use crate::fatbin::lz4::{BlockDecoder, decode_whole};

/// Decodes `data[3..]` as a raw LZ4 block declared to decode to the
/// 24-bit little-endian size in `data[..3]`, with the streaming decoder of
/// compressed CUDA fatbin entries, read a few bytes at a time and in big
/// pieces, and with lz4_flex's whole-block decoder into a buffer of the
/// declared size: the same bytes, or both refuse (lz4_flex filling less
/// than the declared size counts as refusing, as the entry is then wrong).
/// Must never panic.
pub fn lz4_block(data: &[u8]) {
    let Some((size, block)) = data.split_first_chunk::<3>() else {
        return;
    };
    let declared = le::<u32>([size[0], size[1], size[2], 0]);
    let declared = usize::try_from(declared).expect("24 bits fit");
    let reference = lz4_flex_decode(block, declared);
    // The whole-block path on its own, into exactly the declared size.
    let mut whole = vec![0u8; declared];
    let whole = decode_whole(block, &mut whole).then_some(whole);
    assert!(whole == reference, "decode_whole and lz4_flex differ");
    // Read sizes from the block's first byte: 1 to 256 bytes, and 1 MiB
    // (which takes a block of up to 1 MiB whole).
    let small = 1 + usize::from(block.first().copied().unwrap_or(0));
    for chunk in [small, 1 << 20] {
        let ours = streamed(block, declared, chunk).ok();
        assert!(
            ours == reference,
            "ours and lz4_flex differ, {chunk} at a time"
        );
    }
}

/// Reads `block` through a [`BlockDecoder`], `chunk` bytes at a time.
pub(super) fn streamed(block: &[u8], declared: usize, chunk: usize) -> std::io::Result<Vec<u8>> {
    let mut d = BlockDecoder::new(block, declared as u64);
    let mut out = Vec::new();
    let mut buf = vec![0u8; chunk];
    loop {
        match d.read(&mut buf)? {
            0 => return Ok(out),
            n => {
                out.extend_from_slice(&buf[..n]);
                assert!(out.len() <= declared, "more than declared");
            }
        }
    }
}

/// lz4_flex's whole-block decoder into a buffer of the declared size; less
/// than that counts as refusing.
pub(super) fn lz4_flex_decode(block: &[u8], declared: usize) -> Option<Vec<u8>> {
    let mut out = vec![0u8; declared];
    match lz4_flex::block::decompress_into(block, &mut out) {
        Ok(n) if n == declared => Some(out),
        _ => None,
    }
}

//! The optional wrapper header in front of a bitstream.

use super::stream::Res;
use crate::bytes::Bytes;

/// The magic of LLVM's bitcode wrapper header (0x0B17C0DE little-endian).
const WRAPPER_MAGIC: &[u8; 4] = b"\xde\xc0\x17\x0b";

/// The bitstream inside an optional wrapper header (magic, version,
/// offset, size, CPU type; little-endian words), and where it starts.
pub(super) fn unwrap_at(data: &[u8]) -> Res<(u64, &[u8])> {
    let (at, bc) = if data.starts_with(WRAPPER_MAGIC) {
        if data.len() < 20 {
            return Err("truncated wrapper header");
        }
        let b = Bytes::new(data);
        let (off, size) = (b.u32_le_at(8), b.u32_le_at(12));
        let (off, size) = off.zip(size).ok_or("truncated wrapper header")?;
        let bc = b
            .read_at(u64::from(off), u64::from(size))
            .ok_or("wrapper header points outside the file")?;
        (u64::from(off), bc)
    } else {
        (0, data)
    };
    if bc.len() % 4 != 0 {
        return Err("size is not a multiple of 4 bytes");
    }
    if !bc.starts_with(b"BC\xc0\xde") {
        return Err("invalid bitcode signature");
    }
    Ok((at, bc))
}

/// [`unwrap_at`] without the offset.
pub(crate) fn unwrap(data: &[u8]) -> Res<&[u8]> {
    unwrap_at(data).map(|(_, bc)| bc)
}

//! A squashfs superblock (the first 96 bytes, little-endian), read and
//! checked before backhand is given the filesystem: its size against the
//! bytes there are, its block size, its tables' places, and an upper bound
//! on what its metadata decompresses to.

use super::codec::{METADATA_BLOCK, Method};
use crate::bytes::le_at;
use crate::num::{u64_from, usize_from};

/// The magic a (little-endian) squashfs starts with.
pub(super) const MAGIC: &[u8; 4] = b"hsqs";

/// The superblock's length.
const LEN: usize = 96;

/// The most the inode and directory tables (an upper bound counted from
/// their blocks' headers, before anything is decompressed), the fragment
/// and the export tables (as long as the superblock's counts make them)
/// may decompress to together: some two million files. backhand holds
/// them, and the tree built from them, in memory.
pub(super) const MAX_METADATA: u64 = 256 << 20;

/// What is read of a superblock.
#[derive(Debug)]
pub(super) struct Superblock {
    pub(super) method: Method,
    pub(super) block_size: u32,
    /// The filesystem's length: the bytes past it are padding.
    pub(super) bytes_used: u64,
    /// How many inodes it has (fewer than its entries: hard links).
    pub(super) inodes: u32,
    /// Where its xattr id table starts (all ones: none).
    pub(super) xattrs: u64,
    /// Its flags.
    pub(super) flags: u16,
}

/// Reads and checks the superblock at the start of `fs`.
pub(super) fn read(fs: &[u8]) -> Result<Superblock, String> {
    let sb = fs
        .get(..LEN)
        .ok_or_else(|| format!("its superblock is cut short ({} of {LEN} bytes)", fs.len()))?;
    let u16_at = |at| le_at::<u16>(sb, at).unwrap_or(0);
    let u32_at = |at| le_at::<u32>(sb, at).unwrap_or(0);
    let u64_at = |at| le_at::<u64>(sb, at).unwrap_or(0);
    if !sb.starts_with(MAGIC) {
        return Err("it does not start with the squashfs magic 'hsqs'".into());
    }
    let (major, minor) = (u16_at(28), u16_at(30));
    if (major, minor) != (4, 0) {
        return Err(format!(
            "it is squashfs version {major}.{minor}; offload-kit reads version 4.0"
        ));
    }
    let method = Method::of(u16_at(20))?;
    let block_size = u32_at(12);
    let block_log = u16_at(22);
    if !(12..=20).contains(&block_log) || block_size != 1 << block_log {
        return Err(format!(
            "its superblock gives block size {block_size} (log {block_log}): a power of two \
             from 4 KiB to 1 MiB"
        ));
    }
    let bytes_used = u64_at(40);
    if bytes_used > u64_from(fs.len()) {
        return Err(format!(
            "it is cut short: its superblock says {bytes_used} bytes, {} are there",
            fs.len()
        ));
    }
    // id, xattr, inode, directory, fragment and export tables; the last
    // three may be absent (all ones).
    let table = |at| u64_at(at);
    let (inodes, dirs) = (table(64), table(72));
    for (name, at) in [("id", 48), ("inode", 64), ("directory", 72)] {
        if table(at) >= bytes_used {
            return Err(format!(
                "its {name} table starts at {}, past its end ({bytes_used})",
                table(at)
            ));
        }
    }
    if !(LEN as u64 <= inodes && inodes <= dirs) {
        return Err(format!(
            "its inode table ({inodes}) does not lie between its superblock and its directory \
             table ({dirs})"
        ));
    }
    let image = &fs[..usize_from(bytes_used)];
    // The directory table runs up to the next table after it.
    let dir_end = [48, 56, 80, 88]
        .into_iter()
        .map(table)
        .filter(|&t| t > dirs && t < bytes_used)
        .min()
        .unwrap_or(bytes_used);
    // backhand reads the fragment table (16 bytes an entry) and the export
    // table (8 bytes an inode) whole, as many entries as the superblock
    // says: they count against the same bound.
    let fragments = u64::from(u32_at(16)) * 16;
    let exports = if table(88) == u64::MAX {
        0
    } else {
        u64::from(u32_at(4)) * 8
    };
    let bound = metadata_blocks(image, inodes, dir_end)?
        .saturating_mul(METADATA_BLOCK as u64)
        .saturating_add(fragments + exports);
    if bound > MAX_METADATA {
        return Err(format!(
            "its inode, directory, fragment and export tables may decompress to {bound} bytes, \
             more than the {MAX_METADATA} offload-kit reads"
        ));
    }
    Ok(Superblock {
        method,
        block_size,
        bytes_used,
        inodes: u32_at(4),
        xattrs: table(56),
        flags: u16_at(24),
    })
}

/// How many metadata blocks lie from `from` to `to` in `image`, counted by
/// their two-byte headers (the low 15 bits: the block's stored length).
fn metadata_blocks(image: &[u8], from: u64, to: u64) -> Result<u64, String> {
    let (mut at, mut n) = (from, 0u64);
    while at < to {
        let h = le_at::<u16>(image, usize_from(at))
            .ok_or_else(|| format!("a metadata block's header at {at} is cut short"))?;
        let len = u64::from(h & 0x7fff);
        if len == 0 {
            return Err(format!("the metadata block at {at} has no length"));
        }
        at += 2 + len;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::{MAX_METADATA, read};

    /// A superblock with `patch` applied (offset, bytes), and `tail` after it.
    fn image(patch: &[(usize, &[u8])], tail: &[u8]) -> Vec<u8> {
        let mut sb = vec![0u8; 96];
        sb[..4].copy_from_slice(b"hsqs");
        sb[12..16].copy_from_slice(&(1u32 << 17).to_le_bytes());
        sb[20..22].copy_from_slice(&1u16.to_le_bytes());
        sb[22..24].copy_from_slice(&17u16.to_le_bytes());
        sb[28..30].copy_from_slice(&4u16.to_le_bytes());
        let len = (96 + tail.len()) as u64;
        sb[40..48].copy_from_slice(&len.to_le_bytes());
        // Inode and directory tables at 96, the id table just before the end.
        for at in [64, 72] {
            sb[at..at + 8].copy_from_slice(&96u64.to_le_bytes());
        }
        sb[48..56].copy_from_slice(&(len - 1).to_le_bytes());
        for (at, b) in patch {
            sb[*at..*at + b.len()].copy_from_slice(b);
        }
        [sb, tail.to_vec()].concat()
    }

    #[test]
    fn lies_in_the_superblock_are_errors() {
        assert!(read(&image(&[], &[1, 0, 0])).is_ok());
        let cut = image(&[], &[1, 0, 0]);
        assert!(read(&cut[..50]).unwrap_err().contains("cut short"));
        let e = read(&image(&[(40, &1000u64.to_le_bytes())], &[1, 0, 0])).unwrap_err();
        assert!(e.contains("says 1000 bytes"), "{e}");
        let e = read(&image(&[(12, &5000u32.to_le_bytes())], &[1, 0, 0])).unwrap_err();
        assert!(e.contains("block size"), "{e}");
        let e = read(&image(&[(16, &u32::MAX.to_le_bytes())], &[1, 0, 0])).unwrap_err();
        assert!(e.contains("fragment"), "{e}");
        let e = read(&image(&[(28, &3u16.to_le_bytes())], &[1, 0, 0])).unwrap_err();
        assert!(e.contains("version 3.0"), "{e}");
        let e = read(&image(&[(20, &2u16.to_le_bytes())], &[1, 0, 0])).unwrap_err();
        assert!(e.contains("LZMA"), "{e}");
        let e = read(&image(&[(64, &9999u64.to_le_bytes())], &[1, 0, 0])).unwrap_err();
        assert!(e.contains("inode table"), "{e}");
    }

    #[test]
    fn a_metadata_bomb_is_refused_before_anything_is_decompressed() {
        // Metadata blocks of one stored byte each, enough to pass the bound.
        let blocks = crate::num::usize_from(MAX_METADATA / 8192 + 1);
        let tail: Vec<u8> = [1u8, 0, 0].repeat(blocks + 1);
        let len = (96 + tail.len()) as u64;
        let dirs = len - 3;
        let e = read(&image(&[(72, &dirs.to_le_bytes())], &tail)).unwrap_err();
        assert!(e.contains("may decompress to"), "{e}");
    }
}

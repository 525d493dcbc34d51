//! AppImages (type 2): an ELF program, the runtime, whose identification
//! bytes carry `AI` and the type 2 after the ELF magic, followed by a
//! squashfs filesystem that starts where the ELF file ends (after its
//! section headers, the last thing the runtime's linker wrote). Its
//! members are the filesystem's files.

use super::squashfs;
use super::types::{Kind, Members, corrupt};
use crate::bytes::at_in_order;
use crate::error::Result;
use crate::num::usize_from;

/// Whether `bytes` are an ELF file marked as a type 2 AppImage.
pub(super) fn is_appimage(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF") && bytes.get(8..11) == Some(b"AI\x02")
}

/// Where the ELF file at the start of `bytes` ends: after its section
/// header table.
fn elf_end(bytes: &[u8]) -> std::result::Result<u64, String> {
    let big = match bytes.get(5) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err("its ELF header gives no byte order".into()),
    };
    let (shoff, entsize, count) = match bytes.get(4) {
        Some(1) => (
            at_in_order::<u32>(bytes, 0x20, big).map(u64::from),
            at_in_order::<u16>(bytes, 0x2e, big),
            at_in_order::<u16>(bytes, 0x30, big),
        ),
        Some(2) => (
            at_in_order::<u64>(bytes, 0x28, big),
            at_in_order::<u16>(bytes, 0x3a, big),
            at_in_order::<u16>(bytes, 0x3c, big),
        ),
        _ => return Err("its ELF header gives no class".into()),
    };
    let (Some(shoff), Some(entsize), Some(count)) = (shoff, entsize, count) else {
        return Err("its ELF header is cut short".into());
    };
    Ok(shoff.saturating_add(u64::from(entsize) * u64::from(count)))
}

/// Hands every file of the AppImage `bytes`'s squashfs to `to`.
pub(super) fn appimage_members(bytes: &[u8], to: &mut dyn Members) -> Result<()> {
    let at = elf_end(bytes).map_err(|e| corrupt(Kind::AppImage, e))?;
    let fs = bytes
        .get(usize_from(at)..)
        .filter(|fs| squashfs::is_squashfs(fs))
        .ok_or_else(|| {
            corrupt(
                Kind::AppImage,
                format!("no squashfs starts where its runtime ends (byte {at})"),
            )
        })?;
    squashfs::squashfs_members(fs, Kind::AppImage, to)
}

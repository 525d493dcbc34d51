//! What a cubin says about the code it holds: its SM number and whether
//! it is architecture-specific (`sm_90a`), read as `cuobjdump` 13 reads
//! them to name the cubin. Found by experiment (docs/formats/cuda-fatbin.md,
//! "Arch-specific and family code"): cubins from CUDA 13.0's `ptxas`, a
//! CUDA 12.8 build of onnxruntime and NVIDIA's libnvjpeg for CUDA 12.4, one
//! field changed at a time and named again by `cuobjdump -lelf`.
//!
//! | `EI_ABIVERSION` | SM | arch-specific mark |
//! |---|---|---|
//! | 7 and before (`EI_OSABI` 0x33) | `e_flags & 0xff` | `e_flags & 0x800` (LLVM's `EF_CUDA_ACCELERATORS_V1`) |
//! | 8 (`EI_OSABI` 0x41) | `(e_flags >> 8) & 0xff` | the `.nv.compat` record 9 holding 1; without that record, `e_flags & 0x8` (`EF_CUDA_ACCELERATORS`) |
//!
//! `ptxas` 12.8 and later write the `.nv.compat` record in every cubin (0
//! or 1) and leave `e_flags` the same for `sm_90` and `sm_90a`. Nothing in
//! a family cubin (`sm_100f`) marks it apart from a plain one but the
//! `ptxas` command line it keeps in its `.note.nv.tkinfo` note; `cuobjdump`
//! names it as the plain one. A fatbin entry's flags carry both marks
//! ([`super::Variant`]).

use object::Endianness;
use object::elf::{FileHeader32, FileHeader64};
use object::read::elf::{FileHeader, SectionHeader};

use crate::bytes::le;

/// `.nv.compat`'s record that marks architecture-specific code.
const COMPAT_ARCH_SPECIFIC: u8 = 9;
/// Record formats: no value, a byte, a half-word (all four bytes long),
/// sized data (four bytes, then as many as the half-word says).
const FMT_NVAL: u8 = 1;
const FMT_BVAL: u8 = 2;
const FMT_HVAL: u8 = 3;
const FMT_SVAL: u8 = 4;

/// `e_flags` bit of architecture-specific code in the ABI-7 layout.
const ACCELERATORS_V1: u32 = 0x800;
/// `e_flags` bit of architecture-specific code in the ABI-8 layout.
const ACCELERATORS: u32 = 0x8;

/// The SM number and the arch-specific mark a cubin's header gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Target {
    /// `XY` of `sm_XY` (0 when the header names none).
    pub sm: u32,
    /// Architecture-specific code (`sm_XYa`).
    pub arch_specific: bool,
}

/// The target of a cubin whose ELF header has `EI_ABIVERSION`
/// `abi_version` and `e_flags` `flags`, and whose `.nv.compat` section
/// holds `compat` (`None` without one).
pub(crate) fn target(abi_version: u8, flags: u32, compat: Option<&[u8]>) -> Target {
    if abi_version >= 8 {
        let marked = compat
            .and_then(arch_specific_record)
            .map_or(flags & ACCELERATORS != 0, |v| v == 1);
        Target {
            sm: (flags >> 8) & 0xff,
            arch_specific: marked,
        }
    } else {
        Target {
            sm: flags & 0xff,
            arch_specific: flags & ACCELERATORS_V1 != 0,
        }
    }
}

/// The value of the `.nv.compat` record 9 among the records `data` holds
/// (a format byte, an attribute byte, two bytes; a sized record's value
/// after them), if there is one before the records end or stop making
/// sense.
fn arch_specific_record(data: &[u8]) -> Option<u8> {
    let mut at = 0usize;
    while let Some(&[format, attr, lo, hi]) = data.get(at..at.checked_add(4)?) {
        match format {
            FMT_BVAL | FMT_HVAL if attr == COMPAT_ARCH_SPECIFIC => return Some(lo),
            FMT_NVAL | FMT_BVAL | FMT_HVAL => at += 4,
            FMT_SVAL => at += 4 + usize::from(le::<u16>([lo, hi])),
            _ => return None,
        }
    }
    None
}

/// The target of the cubin `data`, read from its ELF header and its
/// `.nv.compat` section; `None` when `data` is no ELF file whose section
/// table can be read, or its header names no SM.
pub(crate) fn read(data: &[u8]) -> Option<Target> {
    let t = match crate::host::elf::peek(data)? {
        p if p.is_64() => read_as::<FileHeader64<Endianness>>(data)?,
        _ => read_as::<FileHeader32<Endianness>>(data)?,
    };
    (t.sm != 0).then_some(t)
}

fn read_as<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> Option<Target> {
    let header = H::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, data).ok()?;
    let compat = match sections.section_by_name(endian, b".nv.compat") {
        Some((_, s)) => Some(s.data(endian, data).ok()?),
        None => None,
    };
    Some(target(
        header.e_ident().abi_version,
        header.e_flags(endian).0,
        compat,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `.nv.compat` as `ptxas` 13.0 writes it for `sm_100a` (record 9 is
    /// 1), ending in a sized record.
    const COMPAT_100A: &[u8] = &[
        2, 9, 1, 0, 2, 2, 1, 0, 2, 5, 5, 0, 3, 7, 1, 1, 2, 3, 0, 0, 2, 6, 1, 0, 4, 11, 8, 0, 9, 0,
        0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn marks_of_each_abi() {
        // ABI 8: the record decides; the e_flags bit only without it.
        let t = |flags, compat: Option<&[u8]>| target(8, flags, compat);
        assert_eq!(
            t(0x0600_6402, Some(COMPAT_100A)),
            Target {
                sm: 100,
                arch_specific: true
            }
        );
        let mut plain = COMPAT_100A.to_vec();
        plain[2] = 0;
        assert!(!t(0x0600_6402, Some(&plain)).arch_specific);
        assert!(!t(0x0600_6402 | 0x8, Some(&plain)).arch_specific);
        // Only 1 marks it (cuobjdump names 2 and 3 plain).
        plain[2] = 2;
        assert!(!t(0x0600_6402, Some(&plain)).arch_specific);
        assert!(t(0x0500_6402 | 0x8, None).arch_specific);
        assert!(t(0x0500_6402 | 0x8, Some(&COMPAT_100A[4..])).arch_specific);
        assert!(!t(0x0500_6402, None).arch_specific);
        assert_eq!(t(0x0600_5a04, None).sm, 90);
        // ABI 7: the low byte, and 0x800; `.nv.compat` is not looked at.
        let t7 = |flags, compat: Option<&[u8]>| target(7, flags, compat);
        assert_eq!(
            t7(0x005a_0d5a, None),
            Target {
                sm: 90,
                arch_specific: true
            }
        );
        assert!(!t7(0x005a_055a, Some(COMPAT_100A)).arch_specific);
    }

    #[test]
    fn damaged_records_end_the_search() {
        assert_eq!(arch_specific_record(&[]), None);
        assert_eq!(arch_specific_record(&[2, 9, 1]), None);
        assert_eq!(arch_specific_record(&[7, 9, 1, 0]), None);
        // A sized record that claims more than there is.
        assert_eq!(arch_specific_record(&[4, 11, 0xff, 0xff, 2, 9, 1, 0]), None);
        assert_eq!(
            arch_specific_record(&[4, 11, 4, 0, 2, 9, 1, 0, 2, 9, 1, 0]),
            Some(1)
        );
        assert_eq!(arch_specific_record(&[1, 9, 0, 0, 2, 9, 1, 0]), Some(1));
    }

    #[test]
    fn no_cubin_no_target() {
        assert_eq!(read(b""), None);
        assert_eq!(read(b"\x7fELF\x02\x01\x01\x41garbage"), None);
        assert_eq!(read(b"not an ELF file at all, not even close"), None);
    }
}

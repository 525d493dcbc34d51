//! What an AMDGPU code object's ELF header says about its target: the
//! processor (`EF_AMDGPU_MACH`, the low byte of `e_flags`), the target-ID
//! features `sramecc` and `xnack`, and the triple its OS ABI names. This
//! is the target ID the code object's own metadata (`amdhsa.target`)
//! repeats, read from 4 bytes instead of a MessagePack note.
//!
//! | `e_flags` bits | meaning | code object |
//! |---|---|---|
//! | `0x000000ff` | `EF_AMDGPU_MACH`: the processor ([`MACHS`]) | all |
//! | `0x00000300` | xnack: 0 unsupported, `0x100` any, `0x200` off (`xnack-`), `0x300` on (`xnack+`) | v4 and later |
//! | `0x00000c00` | sramecc: 0 unsupported, `0x400` any, `0x800` off, `0xc00` on | v4 and later |
//! | `0x00000100`, `0x00000200` | xnack on, sramecc on (set: `+`; clear: not said) | v3 |
//! | `0x00000001` | xnack on | v2 |
//! | `0xff000000` | the generic target's version (`gfx9-4-generic` v1) | v6 |
//!
//! The code object version is `EI_ABIVERSION` under `ELFOSABI_AMDGPU_HSA`
//! (0 is v2, 1 v3, 2 v4, 3 v5, 4 v6). Source: LLVM 22
//! `llvm/BinaryFormat/ELF.h` and AMDGPUUsage ("ELF Header"), checked
//! against `llvm-readelf --notes` of code objects clang-22 builds
//! (linker-tests/bare.rs). A target ID lists `sramecc` before `xnack`, as
//! LLVM writes them.

/// `ELFOSABI_AMDGPU_HSA`, `ELFOSABI_AMDGPU_PAL`, `ELFOSABI_AMDGPU_MESA3D`.
const OSABI_HSA: u8 = 64;
const OSABI_PAL: u8 = 65;
const OSABI_MESA3D: u8 = 66;

/// `EF_AMDGPU_MACH` values and the processors they name (LLVM 22; the
/// values LLVM reserves, or that name processors it dropped, are left
/// out). R600 processors from 0x01 to 0x10, AMDGCN ones from 0x20.
pub(crate) const MACHS: &[(u8, &str)] = &[
    (0x01, "r600"),
    (0x02, "r630"),
    (0x03, "rs880"),
    (0x04, "rv670"),
    (0x05, "rv710"),
    (0x06, "rv730"),
    (0x07, "rv770"),
    (0x08, "cedar"),
    (0x09, "cypress"),
    (0x0a, "juniper"),
    (0x0b, "redwood"),
    (0x0c, "sumo"),
    (0x0d, "barts"),
    (0x0e, "caicos"),
    (0x0f, "cayman"),
    (0x10, "turks"),
    (0x20, "gfx600"),
    (0x21, "gfx601"),
    (0x22, "gfx700"),
    (0x23, "gfx701"),
    (0x24, "gfx702"),
    (0x25, "gfx703"),
    (0x26, "gfx704"),
    (0x28, "gfx801"),
    (0x29, "gfx802"),
    (0x2a, "gfx803"),
    (0x2b, "gfx810"),
    (0x2c, "gfx900"),
    (0x2d, "gfx902"),
    (0x2e, "gfx904"),
    (0x2f, "gfx906"),
    (0x30, "gfx908"),
    (0x31, "gfx909"),
    (0x32, "gfx90c"),
    (0x33, "gfx1010"),
    (0x34, "gfx1011"),
    (0x35, "gfx1012"),
    (0x36, "gfx1030"),
    (0x37, "gfx1031"),
    (0x38, "gfx1032"),
    (0x39, "gfx1033"),
    (0x3a, "gfx602"),
    (0x3b, "gfx705"),
    (0x3c, "gfx805"),
    (0x3d, "gfx1035"),
    (0x3e, "gfx1034"),
    (0x3f, "gfx90a"),
    (0x41, "gfx1100"),
    (0x42, "gfx1013"),
    (0x43, "gfx1150"),
    (0x44, "gfx1103"),
    (0x45, "gfx1036"),
    (0x46, "gfx1101"),
    (0x47, "gfx1102"),
    (0x48, "gfx1200"),
    (0x49, "gfx1250"),
    (0x4a, "gfx1151"),
    (0x4c, "gfx942"),
    (0x4e, "gfx1201"),
    (0x4f, "gfx950"),
    (0x51, "gfx9-generic"),
    (0x52, "gfx10-1-generic"),
    (0x53, "gfx10-3-generic"),
    (0x54, "gfx11-generic"),
    (0x55, "gfx1152"),
    (0x58, "gfx1153"),
    (0x59, "gfx12-generic"),
    (0x5a, "gfx1251"),
    (0x5f, "gfx9-4-generic"),
];

/// What an AMDGPU code object's header says it is built for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// `amdgcn-amd-amdhsa` (or `-amdpal`, `-mesa3d`), `r600` for an R600
    /// processor, `amdgcn` under another OS ABI.
    pub triple: &'static str,
    /// The processor (`gfx90a`), empty when `EF_AMDGPU_MACH` names none
    /// LLVM 22 knows.
    pub processor: &'static str,
    /// The target-ID features the flags set (`sramecc+`, `xnack-`), in
    /// LLVM's order.
    pub features: Vec<&'static str>,
}

impl Target {
    /// The target ID: `gfx90a:sramecc+:xnack-`.
    pub(crate) fn target_id(&self) -> String {
        std::iter::once(self.processor)
            .chain(self.features.iter().copied())
            .collect::<Vec<_>>()
            .join(":")
    }
}

/// The processor `EF_AMDGPU_MACH` value `mach` names.
pub(crate) fn processor(mach: u8) -> Option<&'static str> {
    MACHS.iter().find(|(m, _)| *m == mach).map(|(_, n)| *n)
}

/// The target of a code object with `EI_OSABI` `os_abi`, `EI_ABIVERSION`
/// `abi_version` and `e_flags` `flags`.
pub(crate) fn target(os_abi: u8, abi_version: u8, flags: u32) -> Target {
    let mach = flags.to_le_bytes()[0];
    let triple = match os_abi {
        _ if (0x01..=0x10).contains(&mach) => "r600",
        OSABI_HSA => "amdgcn-amd-amdhsa",
        OSABI_PAL => "amdgcn-amd-amdpal",
        OSABI_MESA3D => "amdgcn-amd-mesa3d",
        _ => "amdgcn",
    };
    let mut features = Vec::new();
    if os_abi == OSABI_HSA && abi_version >= 2 {
        // v4 on: two bits each, "any" and "unsupported" saying nothing.
        let mode = |bits: u32, on, off| match bits & 3 {
            2 => Some(off),
            3 => Some(on),
            _ => None,
        };
        features.extend(mode(flags >> 10, "sramecc+", "sramecc-"));
        features.extend(mode(flags >> 8, "xnack+", "xnack-"));
    } else if os_abi == OSABI_HSA && abi_version == 1 {
        if flags & 0x200 != 0 {
            features.push("sramecc+");
        }
        if flags & 0x100 != 0 {
            features.push("xnack+");
        }
    } else if flags & 0x01 != 0 {
        features.push("xnack+");
    }
    Target {
        triple,
        processor: processor(mach).unwrap_or(""),
        features,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_ids_as_llvm_writes_them() {
        // Flags of code objects clang-22 built, and the `amdhsa.target`
        // of each (v6 unless said).
        let id = |abi, flags| target(OSABI_HSA, abi, flags).target_id();
        assert_eq!(id(4, 0x53f), "gfx90a");
        assert_eq!(id(4, 0x63f), "gfx90a:xnack-");
        assert_eq!(id(4, 0xe3f), "gfx90a:sramecc+:xnack-");
        assert_eq!(id(4, 0xb3f), "gfx90a:sramecc-:xnack+");
        assert_eq!(id(4, 0x74c), "gfx942:xnack+");
        assert_eq!(id(4, 0x41), "gfx1100");
        assert_eq!(id(4, 0x0100_055f), "gfx9-4-generic");
        assert_eq!(id(2, 0x53f), "gfx90a");
        // v3: a set bit is `+`, a clear one says nothing.
        assert_eq!(id(1, 0x32f), "gfx906:sramecc+:xnack+");
        assert_eq!(id(1, 0x02f), "gfx906");
        let t = target(OSABI_HSA, 4, 0x53f);
        assert_eq!((t.triple, t.processor), ("amdgcn-amd-amdhsa", "gfx90a"));
    }

    #[test]
    fn other_abis_and_unknown_processors() {
        assert_eq!(target(OSABI_PAL, 0, 0x36).triple, "amdgcn-amd-amdpal");
        assert_eq!(target(OSABI_MESA3D, 0, 0x36).triple, "amdgcn-amd-mesa3d");
        assert_eq!(target(0, 0, 0x36).triple, "amdgcn");
        // v2's xnack bit, outside HSA's later layouts.
        assert_eq!(target(0, 0, 0x2f | 1).target_id(), "gfx906:xnack+");
        let r600 = target(0, 0, 0x0f);
        assert_eq!((r600.triple, r600.processor), ("r600", "cayman"));
        // Reserved and unknown values name no processor.
        for mach in [0x00, 0x27, 0x40, 0x4b, 0x4d, 0x50, 0x56, 0x60, 0xff] {
            assert_eq!(processor(mach), None, "{mach:#x}");
            assert_eq!(target(OSABI_HSA, 4, u32::from(mach)).target_id(), "");
        }
    }

    #[test]
    fn every_processor_is_one_llvm_knows() {
        for (mach, name) in MACHS {
            let known = crate::targets::amdgpu(name).is_some();
            assert!(known, "{mach:#x} {name}");
        }
    }
}

//! The CUDA and HIP registration objects.

use super::*;

/// The CUDA and HIP objects hold what docs/formats/wrapper-objects.md lists: the fatbin
/// unchanged, its wrapper struct pointing at it, the handle in `.bss`, the
/// three functions of the documented sizes, the constructor at priority
/// 101, and the runtime functions each kind calls.
#[test]
fn cuda_and_hip_objects() {
    let fatbin = filler(21, 1000);
    for (kind, p, magic, sizes, calls) in [
        (
            Kind::Cuda,
            "cuda",
            0x4662_43b1u32,
            [53, 15, 206],
            &[
                "__cudaRegisterFatBinary",
                "__cudaRegisterFatBinaryEnd",
                "atexit",
                "__cudaUnregisterFatBinary",
                "__cudaRegisterFunction",
                "__cudaRegisterVar",
                "__cudaRegisterManagedVar",
            ][..],
        ),
        (
            Kind::Hip,
            "hip",
            0x4849_5046,
            [42, 15, 284],
            &[
                "__hipRegisterFatBinary",
                "atexit",
                "__hipUnregisterFatBinary",
                "__hipRegisterFunction",
                "__hipRegisterVar",
                "__hipRegisterSurface",
                "__hipRegisterTexture",
                "__hipRegisterManagedVar",
            ][..],
        ),
    ] {
        let mut o = opts(Abi::Llvm);
        o.kind = kind;
        let out = to_vec(&o, &[Image::raw(&fatbin)]).unwrap();
        let image_sec = if kind == Kind::Cuda {
            ".nv_fatbin"
        } else {
            ".hip_fatbin"
        };
        let wrapper_sec = if kind == Kind::Cuda {
            ".nvFatBinSegment"
        } else {
            ".hipFatBinSegment"
        };
        assert_eq!(contents(&out, image_sec), fatbin, "{p}");
        let secs = sections(&out);
        assert_eq!(section(&secs, image_sec).3, 16, "{p}: fatbin alignment");
        let wrapper = contents(&out, wrapper_sec);
        assert_eq!(wrapper.len(), 24);
        assert_eq!(wrapper[..4], magic.to_le_bytes(), "{p}: magic");
        assert_eq!(wrapper[4..8], 1u32.to_le_bytes(), "{p}: version");
        assert_eq!(relocs(&out, wrapper_sec), [r(8, R_64, image_sec, 0)], "{p}");
        let bss = section(&secs, ".bss");
        assert_eq!((bss.1, bss.4), (elf::SHT_NOBITS.0, 8), "{p}");
        assert_eq!(
            relocs(&out, ".init_array.101"),
            [r(0, R_64, ".text.startup", 0)],
            "{p}"
        );
        let syms = symbols(&out);
        for (name, size) in ["fatbin_reg", "fatbin_unreg", "globals_reg"]
            .iter()
            .zip(sizes)
        {
            let name = format!(".{p}.{name}");
            let s = syms.iter().find(|s| s.0 == name).unwrap();
            assert_eq!((s.2, s.6), (FUNC, size), "{name}");
        }
        let undefined: Vec<&str> = syms
            .iter()
            .filter(|s| s.4.is_empty() && s.1 == GLOBAL)
            .map(|s| s.0.as_str())
            .filter(|n| !n.starts_with("__st"))
            .collect();
        assert_eq!(undefined, calls, "{p}");
        // The unwind table reads back: one FDE per function.
        let eh = contents(&out, ".eh_frame");
        assert_eq!(eh.len() % 8, 0, "{p}: .eh_frame ends on 8 bytes");
        assert_eq!(fdes(&eh), 3, "{p}");
    }
}

/// The FDEs of a little-endian `.eh_frame`, each parsed with its CIE.
fn fdes(eh: &[u8]) -> usize {
    use gimli::UnwindSection as _;
    let frame = gimli::EhFrame::new(eh, gimli::LittleEndian);
    let bases = gimli::BaseAddresses::default().set_eh_frame(0);
    let mut entries = frame.entries(&bases);
    let mut fdes = 0;
    while let Some(e) = entries.next().unwrap() {
        if let gimli::CieOrFde::Fde(partial) = e {
            partial
                .parse(|_, b, o| frame.cie_from_offset(b, o))
                .unwrap();
            fdes += 1;
        }
    }
    fdes
}

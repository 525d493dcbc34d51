//! Small PE images for tests, written with `object`'s PE writer: the
//! layout of a Windows CUDA DLL (a `.text`, the fatbins in `.nv_fatb`, the
//! wrappers in `.nvFatBi` holding absolute addresses, and a `.reloc` whose
//! `IMAGE_REL_BASED_DIR64` entries fix those addresses up), small enough
//! to corrupt field by field.

use object::pe;
use object::write::pe::{NtHeaders, SectionRange, Writer};

/// The image base the test images are linked at (a DLL's usual one).
pub(crate) const IMAGE_BASE: u64 = 0x1_8000_0000;

/// A PE image built by [`cuda_dll`], with where its parts lie.
pub(crate) struct CudaDll {
    /// The file.
    pub bytes: Vec<u8>,
    /// `.text`, `.nv_fatb`, `.nvFatBi`, `.reloc`, in that order.
    pub sections: Vec<SectionRange>,
    /// The file offset of each fatbin.
    pub fatbins: Vec<u32>,
}

/// What [`cuda_dll_with`] builds besides the fatbins.
#[derive(Default)]
pub(crate) struct Extras {
    /// AArch64 rather than x86-64.
    pub arm64: bool,
    /// An absolute pointer in `.text` (base-relocated) to this offset of
    /// `.nv_fatb`.
    pub text_pointer: Option<u32>,
    /// A certificate table (an Authenticode signature's place).
    pub certificates: Option<Vec<u8>>,
    /// Bytes appended after everything (an overlay).
    pub overlay: Vec<u8>,
    /// Set the optional header's checksum (as a signed or system DLL has).
    pub checksum: bool,
}

/// A 64-bit x86-64 (or, with `arm64`, AArch64) PE DLL holding `fatbins`
/// back to back in `.nv_fatb` (each 8-byte aligned, as nvcc places them),
/// one wrapper per fatbin in `.nvFatBi` pointing at it, and a base
/// relocation for each wrapper's pointer.
pub(crate) fn cuda_dll(fatbins: &[Vec<u8>], arm64: bool) -> CudaDll {
    cuda_dll_with(
        fatbins,
        &Extras {
            arm64,
            ..Extras::default()
        },
    )
}

/// [`cuda_dll`] with `extras`.
pub(crate) fn cuda_dll_with(fatbins: &[Vec<u8>], extras: &Extras) -> CudaDll {
    let arm64 = extras.arm64;
    let mut fat = Vec::new();
    let mut at = Vec::new();
    for f in fatbins {
        while fat.len() % 8 != 0 {
            fat.push(0);
        }
        at.push(u32::try_from(fat.len()).expect("small"));
        fat.extend_from_slice(f);
    }
    let wrappers_len = u32::try_from(24 * fatbins.len()).expect("small");
    let mut text = [0xc3u8; 16];

    let mut out = Vec::new();
    let mut w = Writer::new(true, 0x1000, 0x200, &mut out);
    w.reserve_dos_header_and_stub();
    w.reserve_nt_headers(16);
    w.reserve_section_headers(4);
    let text_r = w.reserve_text_section(16);
    let data = pe::IMAGE_SCN_CNT_INITIALIZED_DATA | pe::IMAGE_SCN_MEM_READ;
    let fat_r = w.reserve_section(
        *b".nv_fatb",
        data,
        u32::try_from(fat.len()).expect("small"),
        u32::try_from(fat.len()).expect("small"),
    );
    let seg_r = w.reserve_section(
        *b".nvFatBi",
        data | pe::IMAGE_SCN_MEM_WRITE,
        wrappers_len,
        wrappers_len,
    );
    let mut segment = Vec::new();
    // object's writer takes base relocations in address order.
    let mut relocs = Vec::new();
    for (i, off) in at.iter().enumerate() {
        let mut wrapper = crate::fatbin::write_wrapper(crate::fatbin::WRAPPER_CUDA, 1, false);
        let va = IMAGE_BASE + u64::from(fat_r.virtual_address + off);
        wrapper[8..16].copy_from_slice(&va.to_le_bytes());
        segment.extend_from_slice(&wrapper);
        let field = seg_r.virtual_address + u32::try_from(24 * i + 8).expect("small");
        relocs.push(field);
    }
    if let Some(off) = extras.text_pointer {
        let va = IMAGE_BASE + u64::from(fat_r.virtual_address + off);
        text[..8].copy_from_slice(&va.to_le_bytes());
        relocs.push(text_r.virtual_address);
    }
    relocs.sort_unstable();
    for r in relocs {
        w.add_reloc(r, pe::IMAGE_REL_BASED_DIR64);
    }
    let reloc_r = w.reserve_reloc_section();
    if let Some(c) = &extras.certificates {
        w.reserve_certificate_table(u32::try_from(c.len()).expect("small"));
    }

    w.write_dos_header_and_stub().expect("writes");
    w.write_nt_headers(dll_headers(if arm64 {
        pe::IMAGE_FILE_MACHINE_ARM64
    } else {
        pe::IMAGE_FILE_MACHINE_AMD64
    }));
    w.write_section_headers();
    w.write_section(text_r.file_offset, &text);
    w.write_section(fat_r.file_offset, &fat);
    w.write_section(seg_r.file_offset, &segment);
    w.write_reloc_section();
    if let Some(c) = &extras.certificates {
        w.write_certificate_table(c);
    }
    out.extend_from_slice(&extras.overlay);
    if extras.checksum {
        let at = checksum_at(&out);
        let sum = checksum(&out);
        out[at..at + 4].copy_from_slice(&sum.to_le_bytes());
    }
    let fatbins = at.iter().map(|a| fat_r.file_offset + a).collect();
    CudaDll {
        bytes: out,
        sections: vec![text_r, fat_r, seg_r, reloc_r],
        fatbins,
    }
}

/// Where the optional header's checksum lies in the PE image `b`.
pub(crate) fn checksum_at(b: &[u8]) -> usize {
    let nt = u32::from_le_bytes(b[0x3c..0x40].try_into().expect("4 bytes")) as usize;
    nt + 4 + 20 + 64
}

/// The PE checksum of `b` as the image help library computes it: the
/// 16-bit little-endian words summed, carries folded back in, the
/// checksum field read as zeros, plus the file's length.
pub(crate) fn checksum(b: &[u8]) -> u32 {
    let at = checksum_at(b);
    let mut sum: u32 = 0;
    for (i, pair) in b.chunks(2).enumerate() {
        let k = 2 * i;
        let lo = if (at..at + 4).contains(&k) {
            0
        } else {
            pair[0]
        };
        let hi = match pair.get(1) {
            Some(_) if (at..at + 4).contains(&(k + 1)) => 0,
            Some(&h) => h,
            None => 0,
        };
        sum += u32::from(u16::from_le_bytes([lo, hi]));
        sum = (sum & 0xffff) + (sum >> 16);
    }
    (sum & 0xffff) + u32::try_from(b.len()).expect("small")
}

/// A COFF object as clang writes one for `x86_64-pc-windows-msvc` (or
/// `aarch64`): `.nv_fatbin` with `fatbins` (each at a symbol), and one
/// wrapper per fatbin in `.nvFatBinSegment`, whose pointer a relocation
/// fills in.
pub(crate) fn coff_object(fatbins: &[Vec<u8>], arm64: bool) -> Vec<u8> {
    use object::write::{Object, Relocation, Symbol, SymbolSection};
    use object::{
        Architecture, BinaryFormat, Endianness, RelocationFlags, SectionKind, SymbolFlags,
        SymbolKind, SymbolScope,
    };
    let arch = if arm64 {
        Architecture::Aarch64
    } else {
        Architecture::X86_64
    };
    let mut o = Object::new(BinaryFormat::Coff, arch, Endianness::Little);
    let fat = o.add_section(
        Vec::new(),
        b".nv_fatbin".to_vec(),
        SectionKind::ReadOnlyData,
    );
    let seg = o.add_section(Vec::new(), b".nvFatBinSegment".to_vec(), SectionKind::Data);
    // A section symbol, with its definition record, as LLVM writes one for
    // every section.
    o.section_symbol(fat);
    for (i, f) in fatbins.iter().enumerate() {
        let at = o.append_section_data(fat, f, 8);
        let sym = o.add_symbol(Symbol {
            name: format!("fatbin{i}").into_bytes(),
            value: at,
            size: 0,
            kind: SymbolKind::Data,
            scope: SymbolScope::Compilation,
            weak: false,
            section: SymbolSection::Section(fat),
            flags: SymbolFlags::None,
        });
        let wrapper = crate::fatbin::write_wrapper(crate::fatbin::WRAPPER_CUDA, 1, false);
        let w = o.append_section_data(seg, &wrapper, 8);
        let typ = if arm64 {
            object::pe::IMAGE_REL_ARM64_ADDR64
        } else {
            object::pe::IMAGE_REL_AMD64_ADDR64
        };
        o.add_relocation(
            seg,
            Relocation {
                offset: w + 8,
                symbol: sym,
                addend: 0,
                flags: RelocationFlags::Coff { typ },
            },
        )
        .expect("writes");
    }
    o.write().expect("writes")
}

/// A 64-bit x86-64 PE DLL with one initialized-data section `name`
/// holding `data`, and nothing else of note (no relocations).
pub(crate) fn dll_with_section(name: [u8; 8], data: &[u8]) -> Vec<u8> {
    let len = u32::try_from(data.len()).expect("small");
    let mut out = Vec::new();
    let mut w = Writer::new(true, 0x1000, 0x200, &mut out);
    w.reserve_dos_header_and_stub();
    w.reserve_nt_headers(16);
    w.reserve_section_headers(1);
    let r = w.reserve_section(
        name,
        pe::IMAGE_SCN_CNT_INITIALIZED_DATA | pe::IMAGE_SCN_MEM_READ,
        len,
        len,
    );
    w.write_dos_header_and_stub().expect("writes");
    w.write_nt_headers(dll_headers(pe::IMAGE_FILE_MACHINE_AMD64));
    w.write_section_headers();
    w.write_section(r.file_offset, data);
    out
}

/// The NT headers of a test DLL for `machine`, linked at [`IMAGE_BASE`].
fn dll_headers(machine: pe::Machine) -> NtHeaders {
    NtHeaders {
        machine,
        time_date_stamp: 0,
        characteristics: pe::IMAGE_FILE_EXECUTABLE_IMAGE
            | pe::IMAGE_FILE_LARGE_ADDRESS_AWARE
            | pe::IMAGE_FILE_DLL,
        major_linker_version: 14,
        minor_linker_version: 0,
        address_of_entry_point: 0,
        image_base: IMAGE_BASE,
        major_operating_system_version: 6,
        minor_operating_system_version: 0,
        major_image_version: 0,
        minor_image_version: 0,
        major_subsystem_version: 6,
        minor_subsystem_version: 0,
        subsystem: pe::IMAGE_SUBSYSTEM_WINDOWS_GUI,
        dll_characteristics: pe::IMAGE_DLLCHARACTERISTICS_DYNAMIC_BASE
            | pe::IMAGE_DLLCHARACTERISTICS_NX_COMPAT,
        size_of_stack_reserve: 0x10_0000,
        size_of_stack_commit: 0x1000,
        size_of_heap_reserve: 0x10_0000,
        size_of_heap_commit: 0x1000,
    }
}

//! PE images (Windows DLLs): fatbins found through the 8-byte section
//! names, wrappers followed through their absolute addresses, and a
//! wrapper that leads nowhere reported, never a silent zero.

use super::*;
use crate::tests::pe::{self, IMAGE_BASE};

fn fatbins() -> Vec<Vec<u8>> {
    vec![
        fatbin::build(&[
            (2, 80, 0x11, b"\x7fELF-sm80-cubin"),
            (2, 90, 0x11, b"\x7fELF-sm90-cubin"),
        ]),
        fatbin::build(&[(1, 90, 0x11, b".version 8.0\n.target sm_90\0")]),
    ]
}

/// The wrappers' containers' kinds and their targets' kinds.
fn wrapped(r: &Report) -> Vec<Option<ContainerKind>> {
    r.containers
        .iter()
        .filter_map(|c| c.wrapper.as_ref())
        .map(|w| w.target_container.map(|t| r.containers[t].kind))
        .collect()
}

#[test]
fn a_cuda_dll_is_read_through_its_sections() {
    for arm64 in [false, true] {
        let dll = pe::cuda_dll(&fatbins(), arm64);
        let r = scan(&dll.bytes, &Options::default());
        sane(&r, dll.bytes.len());
        assert_eq!(r.format, "PE");
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert!(r.used_sections && !r.used_raw_scan);
        assert_eq!(r.images.len(), 3, "arm64 {arm64}");
        assert_eq!(
            wrapped(&r),
            vec![
                Some(ContainerKind::CudaFatbin),
                Some(ContainerKind::CudaFatbin)
            ]
        );
        let at: Vec<Option<u64>> = r
            .containers
            .iter()
            .filter(|c| c.kind == ContainerKind::CudaFatbin)
            .map(|c| c.offset)
            .collect();
        let want: Vec<Option<u64>> = dll.fatbins.iter().map(|&o| Some(u64::from(o))).collect();
        assert_eq!(at, want);
        // The raw scan, which reads no section table, finds the same.
        let raw = scan(&dll.bytes, &raw());
        assert_eq!(raw.images.len(), 3);
    }
}

/// `dll` with wrapper `i`'s data pointer set to `va`.
fn pointing(dll: &pe::CudaDll, i: usize, va: u64) -> Vec<u8> {
    let mut b = dll.bytes.clone();
    let at = dll.sections[2].file_offset as usize + 24 * i + 8;
    b[at..at + 8].copy_from_slice(&va.to_le_bytes());
    b
}

#[test]
fn a_wrapper_that_leads_nowhere_is_damage() {
    let dll = pe::cuda_dll(&fatbins(), false);
    let text = IMAGE_BASE + u64::from(dll.sections[0].virtual_address);
    for (va, says) in [
        (text, "where no container was found"),
        (0x1234, "lies in no section of the file"),
        (IMAGE_BASE + 0x7fff_0000, "lies in no section of the file"),
        (0, "lies in no section of the file"),
    ] {
        let bytes = pointing(&dll, 1, va);
        let r = scan(&bytes, &Options::default());
        sane(&r, bytes.len());
        assert_eq!(r.problems.len(), 1, "{va:#x}: {:?}", r.problems);
        let p = &r.problems[0];
        assert!(p.message.contains(says), "{va:#x}: {}", p.message);
        assert_eq!(p.section.as_deref(), Some(".nvFatBi"));
        assert_eq!(p.offset, Some(u64::from(dll.sections[2].file_offset) + 24));
        // The other wrapper and every image are still there.
        assert_eq!(r.images.len(), 3);
        assert_eq!(wrapped(&r)[0], Some(ContainerKind::CudaFatbin));
    }
}

#[test]
fn a_hostile_pe_header_is_one_problem_never_a_panic() {
    let dll = pe::cuda_dll(&fatbins(), false);
    let pe_at = u32::from_le_bytes(dll.bytes[0x3c..0x40].try_into().unwrap()) as usize;
    let opt_at = pe_at + 4 + 20;
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    // NumberOfSections far past what the file holds.
    let mut b = dll.bytes.clone();
    b[pe_at + 6..pe_at + 8].copy_from_slice(&0xffffu16.to_le_bytes());
    cases.push(("section count", b));
    // NumberOfRvaAndSizes huge (PE32+: at 108 in the optional header).
    let mut b = dll.bytes.clone();
    b[opt_at + 108..opt_at + 112].copy_from_slice(&u32::MAX.to_le_bytes());
    cases.push(("data directories", b));
    // The fatbin section's raw data past the end of the file.
    let mut b = dll.bytes.clone();
    let sh = opt_at + usize::from(u16::from_le_bytes([b[pe_at + 20], b[pe_at + 21]])) + 40;
    b[sh + 20..sh + 24].copy_from_slice(&0x7fff_0000u32.to_le_bytes());
    cases.push(("section data", b));
    for (what, bytes) in cases {
        let r = scan(&bytes, &Options::default());
        sane(&r, bytes.len());
        assert!(!r.problems.is_empty(), "{what}: no problem reported");
    }
    // e_lfanew past the end: no PE header, so no PE file; the bytes are
    // scanned raw and their fatbins found.
    let mut b = dll.bytes.clone();
    b[0x3c..0x40].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    let r = scan(&b, &Options::default());
    assert_ne!(r.format, "PE");
    assert!(r.used_raw_scan && r.images.len() == 3);
    // Cut anywhere: no panic, and what is found lies in what is left.
    for len in (0..dll.bytes.len()).step_by(7) {
        let r = scan(&dll.bytes[..len], &Options::default());
        sane(&r, len);
    }
}

/// The hostile variants of a CUDA DLL whose damage lies outside the
/// device sections: each names what it breaks.
pub(crate) fn hostile_dlls() -> Vec<(&'static str, Vec<u8>)> {
    let dll = pe::cuda_dll(&fatbins(), false);
    let b = &dll.bytes;
    let pe_at = u32::from_le_bytes(b[0x3c..0x40].try_into().unwrap()) as usize;
    let opt_at = pe_at + 4 + 20;
    let dirs_at = opt_at + 112;
    let table = opt_at + usize::from(u16::from_le_bytes([b[pe_at + 20], b[pe_at + 21]]));
    let reloc = &dll.sections[3];
    let reloc_at = reloc.file_offset as usize;
    let put = |at: usize, v: u32| {
        let mut c = b.clone();
        c[at..at + 4].copy_from_slice(&v.to_le_bytes());
        c
    };
    vec![
        // `.reloc`'s raw data moved past the end of the file.
        ("reloc past the end", put(table + 3 * 40 + 20, 0x7fff_0000)),
        // The file cut in the middle of `.reloc`.
        ("file cut in .reloc", b[..reloc_at + 4].to_vec()),
        // A block longer than the table.
        ("block size past the table", put(reloc_at + 4, 0x1000)),
        // A block shorter than its header.
        ("block size below 8", put(reloc_at + 4, 4)),
        // A block whose size is no multiple of 4.
        ("block size not aligned", put(reloc_at + 4, 10)),
        // A fixup past the end of the image.
        ("fixup past the image", put(reloc_at, 0x7fff_0000)),
        // The base relocation table's size past its section.
        (
            "table size past its section",
            put(dirs_at + 5 * 8 + 4, 0x10_0000),
        ),
        // The export table far outside the image.
        ("export table outside", {
            let mut c = put(dirs_at, 0x7fff_0000);
            c[dirs_at + 4..dirs_at + 8].copy_from_slice(&0x100u32.to_le_bytes());
            c
        }),
        // A certificate table past the end of the file.
        ("certificates outside", {
            let mut c = put(dirs_at + 4 * 8, 0x7fff_0000);
            c[dirs_at + 36..dirs_at + 40].copy_from_slice(&0x100u32.to_le_bytes());
            c
        }),
        // NumberOfRvaAndSizes more than the optional header holds.
        ("data directory count", put(opt_at + 108, u32::MAX)),
        // NumberOfSections past what the file holds.
        ("section count", {
            let mut c = b.clone();
            c[pe_at + 6..pe_at + 8].copy_from_slice(&0xffffu16.to_le_bytes());
            c
        }),
    ]
}

/// Hostile variants of a COFF object holding CUDA fatbins: tables past
/// the end of the file, a string table whose size lies.
pub(crate) fn hostile_objects() -> Vec<(&'static str, Vec<u8>)> {
    let obj = pe::coff_object(&fatbins(), false);
    let u32_at = |at: usize| u32::from_le_bytes(obj[at..at + 4].try_into().unwrap());
    let put = |at: usize, v: u32| {
        let mut c = obj.clone();
        c[at..at + 4].copy_from_slice(&v.to_le_bytes());
        c
    };
    // Section headers from offset 20 (no optional header); which one is
    // the wrapper section, found by its relocations.
    let count = usize::from(u16::from_le_bytes([obj[2], obj[3]]));
    let with_relocs = (0..count)
        .map(|i| 20 + 40 * i)
        .find(|&h| u16::from_le_bytes([obj[h + 32], obj[h + 33]]) != 0)
        .unwrap();
    let fat = (0..count)
        .map(|i| 20 + 40 * i)
        .find(|&h| u32_at(h + 16) > 100)
        .unwrap();
    let symtab = u32_at(8) as usize;
    let strtab = symtab + 18 * u32_at(12) as usize;
    vec![
        ("raw data past the end", put(fat + 20, 0x7fff_0000)),
        ("raw size past the end", put(fat + 16, 0x7fff_0000)),
        (
            "relocations past the end",
            put(with_relocs + 24, 0x7fff_0000),
        ),
        ("symbol table past the end", put(8, 0x7fff_0000)),
        ("string table size lies", put(strtab, 0x7fff_0000)),
        ("file cut in the symbol table", obj[..symtab + 5].to_vec()),
    ]
}

#[test]
fn damaged_windows_headers_are_one_problem_never_clean() {
    for (what, bytes) in hostile_dlls().into_iter().chain(hostile_objects()) {
        let r = scan(&bytes, &Options::default());
        sane(&r, bytes.len());
        assert!(r.damaged(), "{what}: not damaged: {:?}", r.problems);
    }
    // The undamaged ones are clean.
    let dll = pe::cuda_dll(&fatbins(), false);
    assert!(!scan(&dll.bytes, &Options::default()).damaged());
    let obj = pe::coff_object(&fatbins(), false);
    assert!(!scan(&obj, &Options::default()).damaged());
}

#[test]
fn coff_objects_keep_long_names_and_64_bit_wrappers() {
    for arm64 in [false, true] {
        let obj = pe::coff_object(&fatbins(), arm64);
        let r = scan(&obj, &Options::default());
        sane(&r, obj.len());
        assert_eq!(r.format, "COFF");
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(r.images.len(), 3);
        // Two wrappers of 24 bytes, each leading to its fatbin.
        assert_eq!(
            wrapped(&r),
            vec![
                Some(ContainerKind::CudaFatbin),
                Some(ContainerKind::CudaFatbin)
            ]
        );
        assert!(
            r.containers
                .iter()
                .filter(|c| c.kind == ContainerKind::FatbinWrapper)
                .all(|c| c.size == 24)
        );
    }
}

/// What lld-link makes of an OpenMP program's `.llvm.offloading` and
/// `.llvm.rodata.offloading`: one `.llvm` section, the OffloadBinaries
/// first and the entries' names after them.
fn llvm_section(obs: &[u8]) -> Vec<u8> {
    let mut data = obs.to_vec();
    // Names that hold a bundle's and a CCOB's magic are still names.
    data.extend_from_slice(b"__omp_offloading_fe00_1_main_l3\0__CLANG_OFFLOAD_BUNDLE__\0CCOB\0");
    data
}

#[test]
fn openmp_images_in_an_lld_link_dll_share_the_llvm_section_with_names() {
    let obs = [
        offload_binary(&[("amdgcn-amd-amdhsa", "gfx90a", b"\x7fELF-gfx90a")]),
        offload_binary(&[("amdgcn-amd-amdhsa", "gfx1030", b"\x7fELF-gfx1030")]),
    ]
    .concat();
    let dll = pe::dll_with_section(*b".llvm\0\0\0", &llvm_section(&obs));
    let r = scan(&dll, &Options::default());
    sane(&r, dll.len());
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert!(r.used_sections && !r.used_raw_scan);
    let arches: Vec<&str> = r.images.iter().map(|i| i.arch.as_str()).collect();
    assert_eq!(arches, ["gfx90a", "gfx1030"]);

    // A damaged OffloadBinary there is damage, not other data.
    let mut bad = obs.clone();
    bad[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    let dll = pe::dll_with_section(*b".llvm\0\0\0", &llvm_section(&bad));
    let r = scan(&dll, &Options::default());
    assert!(
        r.problems.iter().any(|p| p.kind == ProblemKind::Damage),
        "{:?}",
        r.problems
    );

    // Another section of the image is not read.
    let names_only = pe::dll_with_section(*b".rdata\0\0", &llvm_section(&obs));
    let r = scan(&names_only, &Options::default());
    assert!(r.images.is_empty() && r.problems.is_empty(), "{r:?}");
}

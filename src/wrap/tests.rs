//! The wrapper object read back with `object::read` and `gimli::read`, and
//! checked against the facts of docs/formats/wrapper-objects.md (LLVM 22's PIC output).

use object::elf;
use object::read::elf::{ElfFile64, FileHeader as _, SectionHeader as _};
use object::{LittleEndian as LE, Object as _, ObjectSection as _, ObjectSymbol as _};

use super::*;
use crate::layout::Piece;
use crate::offload_binary::{ImageKind, ImageSpec, OffloadKind};

fn opts(abi: Abi) -> Options {
    Options {
        kind: Kind::OpenMp,
        abi,
        triple: "x86_64-unknown-linux-gnu".into(),
        llc_layout: false,
        relocatable: false,
    }
}

/// Deterministic filler bytes.
fn filler(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from((i * 31 + usize::from(seed) * 7) % 251).unwrap())
        .collect()
}

/// An OffloadBinary (version 1) holding `image`, as llvm-offload-binary
/// writes it.
fn offload_binary(image: &[u8], arch: &str) -> Vec<u8> {
    let spec = ImageSpec {
        image_kind: ImageKind::IMG_Object,
        offload_kind: OffloadKind::OFK_OpenMP,
        flags: 0,
        strings: vec![
            (b"triple".to_vec(), b"x86_64-unknown-linux-gnu".to_vec()),
            (b"arch".to_vec(), arch.as_bytes().to_vec()),
        ],
        size: image.len() as u64,
    };
    let layout = crate::offload_binary::layout(&[spec], 1).unwrap();
    let mut out = Vec::new();
    layout.write_to(&mut out, &[image]).unwrap();
    out
}

/// Section header facts: (name, sh_type, sh_flags, sh_addralign, size).
fn sections(data: &[u8]) -> Vec<(String, u32, u64, u64, u64)> {
    let f = ElfFile64::<LE>::parse(data).unwrap();
    f.sections()
        .map(|s| {
            let h = s.elf_section_header();
            (
                s.name().unwrap().to_string(),
                h.sh_type(LE).0,
                h.sh_flags(LE).0,
                h.sh_addralign(LE),
                h.sh_size(LE),
            )
        })
        .collect()
}

fn section<'a>(
    all: &'a [(String, u32, u64, u64, u64)],
    name: &str,
) -> &'a (String, u32, u64, u64, u64) {
    all.iter()
        .find(|s| s.0 == name)
        .unwrap_or_else(|| panic!("no section {name}"))
}

/// Symbol facts: (name, bind, type, visibility, section name, value, size),
/// in symbol-table order, from index 1.
type Sym = (String, u8, u8, u8, String, u64, u64);

fn symbols(data: &[u8]) -> Vec<Sym> {
    let f = ElfFile64::<LE>::parse(data).unwrap();
    f.symbols()
        .map(|s| {
            let e = s.elf_symbol();
            let sec = match s.section_index() {
                Some(i) => f.section_by_index(i).unwrap().name().unwrap().to_string(),
                None => String::new(),
            };
            let name = if e.st_type() == elf::STT_SECTION {
                format!("[{sec}]")
            } else {
                s.name().unwrap().to_string()
            };
            (
                name,
                e.st_bind().0,
                e.st_type().0,
                e.st_visibility().0,
                sec,
                s.address(),
                s.size(),
            )
        })
        .collect()
}

/// Relocations of a section: (offset, r_type, symbol name, addend).
fn relocs(data: &[u8], section: &str) -> Vec<(u64, u32, String, i64)> {
    let f = ElfFile64::<LE>::parse(data).unwrap();
    let s = f.section_by_name(section).unwrap();
    s.relocations()
        .map(|(off, r)| {
            let object::RelocationFlags::Elf { r_type } = r.flags() else {
                panic!("not ELF")
            };
            let object::RelocationTarget::Symbol(i) = r.target() else {
                panic!("not a symbol")
            };
            let sym = f.symbol_by_index(i).unwrap();
            let name = if sym.kind() == object::SymbolKind::Section {
                f.section_by_index(sym.section_index().unwrap())
                    .unwrap()
                    .name()
                    .unwrap()
                    .to_string()
            } else {
                sym.name().unwrap().to_string()
            };
            (off, r_type.0, name, r.addend())
        })
        .collect()
}

fn contents(data: &[u8], name: &str) -> Vec<u8> {
    // Either byte order.
    let f = object::File::parse(data).unwrap();
    f.section_by_name(name).unwrap().data().unwrap().to_vec()
}

const LOCAL: u8 = elf::STB_LOCAL.0;
const GLOBAL: u8 = elf::STB_GLOBAL.0;
const DEFAULT: u8 = elf::STV_DEFAULT.0;
const HIDDEN: u8 = elf::STV_HIDDEN.0;
const NOTYPE: u8 = elf::STT_NOTYPE.0;
const OBJECT: u8 = elf::STT_OBJECT.0;
const FUNC: u8 = elf::STT_FUNC.0;
const R_64: u32 = elf::R_X86_64_64.0;
const R_PC32: u32 = elf::R_X86_64_PC32.0;
const R_PLT32: u32 = elf::R_X86_64_PLT32.0;

fn sym(name: &str, bind: u8, ty: u8, vis: u8, sec: &str, value: u64, size: u64) -> Sym {
    (name.into(), bind, ty, vis, sec.into(), value, size)
}

fn r(off: u64, ty: u32, sym: &str, addend: i64) -> (u64, u32, String, i64) {
    (off, ty, sym.into(), addend)
}

/// One OffloadBinary input: every fact of Appendix A.
#[test]
fn openmp_one_image_matches_llvm() {
    let image = filler(1, 15824);
    let ob = offload_binary(&image, "generic");
    let img = Image::new(&ob).unwrap();
    let start = (ob.len() - image.len()) as u64;
    assert_eq!(img.image, start..start + image.len() as u64);
    assert_eq!(
        &ob[usize::try_from(img.image.start).unwrap()..usize::try_from(img.image.end).unwrap()],
        &image[..]
    );
    let out = to_vec(&opts(Abi::Llvm), &[img]).unwrap();

    let f = ElfFile64::<LE>::parse(&*out).unwrap();
    let h = f.elf_header();
    assert_eq!(h.e_type(LE), elf::ET_REL);
    assert_eq!(h.e_machine(LE), elf::EM_X86_64);
    assert_eq!(h.e_flags(LE).0, 0);

    let secs = sections(&out);
    let want: &[(&str, u32, u64, u64, u64)] = &[
        (".text", elf::SHT_PROGBITS.0, 6, 4, 0),
        (".text.startup", elf::SHT_PROGBITS.0, 6, 16, 0x2f),
        ("llvm_offload_entries", elf::SHT_PROGBITS.0, 2, 8, 0),
        (
            ".llvm.offloading",
            SHT_LLVM_OFFLOADING,
            2,
            8,
            ob.len() as u64,
        ),
        (".data.rel.ro", elf::SHT_PROGBITS.0, 3, 16, 0x40),
        (".init_array.101", elf::SHT_INIT_ARRAY.0, 3, 8, 8),
        (".note.GNU-stack", elf::SHT_PROGBITS.0, 0, 1, 0),
        (".eh_frame", elf::SHT_X86_64_UNWIND.0, 2, 8, 0x48),
    ];
    for w in want {
        let got = section(&secs, w.0);
        assert_eq!(
            (got.1, got.2, got.3, got.4),
            (w.1, w.2, w.3, w.4),
            "section {}",
            w.0
        );
    }
    assert!(secs.iter().all(|s| !s.0.starts_with(".fini")));

    assert_eq!(
        symbols(&out),
        [
            sym(
                "offload.wrapper.module",
                LOCAL,
                elf::STT_FILE.0,
                DEFAULT,
                "",
                0,
                0
            ),
            sym(
                "[.text.startup]",
                LOCAL,
                elf::STT_SECTION.0,
                DEFAULT,
                ".text.startup",
                0,
                0
            ),
            sym(
                ".omp_offloading.descriptor_reg",
                LOCAL,
                FUNC,
                DEFAULT,
                ".text.startup",
                0,
                27
            ),
            sym(
                ".omp_offloading.descriptor",
                LOCAL,
                OBJECT,
                DEFAULT,
                ".data.rel.ro",
                0x20,
                32
            ),
            sym(
                ".omp_offloading.descriptor_unreg",
                LOCAL,
                FUNC,
                DEFAULT,
                ".text.startup",
                0x20,
                15
            ),
            sym(
                "__dummy.llvm_offload_entries",
                LOCAL,
                OBJECT,
                DEFAULT,
                "llvm_offload_entries",
                0,
                0
            ),
            sym(
                ".omp_offloading.device_image",
                LOCAL,
                OBJECT,
                DEFAULT,
                ".llvm.offloading",
                0,
                ob.len() as u64
            ),
            sym(
                "[.llvm.offloading]",
                LOCAL,
                elf::STT_SECTION.0,
                DEFAULT,
                ".llvm.offloading",
                0,
                0
            ),
            sym(
                ".omp_offloading.device_images",
                LOCAL,
                OBJECT,
                DEFAULT,
                ".data.rel.ro",
                0,
                32
            ),
            sym(
                "[.data.rel.ro]",
                LOCAL,
                elf::STT_SECTION.0,
                DEFAULT,
                ".data.rel.ro",
                0,
                0
            ),
            sym("__tgt_register_lib", GLOBAL, NOTYPE, DEFAULT, "", 0, 0),
            sym("atexit", GLOBAL, NOTYPE, DEFAULT, "", 0, 0),
            sym("__tgt_unregister_lib", GLOBAL, NOTYPE, DEFAULT, "", 0, 0),
            sym(
                "__start_llvm_offload_entries",
                GLOBAL,
                NOTYPE,
                HIDDEN,
                "",
                0,
                0
            ),
            sym(
                "__stop_llvm_offload_entries",
                GLOBAL,
                NOTYPE,
                HIDDEN,
                "",
                0,
                0
            ),
        ]
    );

    assert_eq!(
        relocs(&out, ".text.startup"),
        [
            r(0x4, R_PC32, ".data.rel.ro", 0x1c),
            r(0x9, R_PLT32, "__tgt_register_lib", -4),
            r(0x15, R_PLT32, "atexit", -4),
            r(0x24, R_PC32, ".data.rel.ro", 0x1c),
            r(0x29, R_PLT32, "__tgt_unregister_lib", -4),
        ]
    );
    let s = start as i64;
    let e = s + image.len() as i64;
    assert_eq!(
        relocs(&out, ".data.rel.ro"),
        [
            r(0x00, R_64, ".llvm.offloading", s),
            r(0x08, R_64, ".llvm.offloading", e),
            r(0x10, R_64, "__start_llvm_offload_entries", 0),
            r(0x18, R_64, "__stop_llvm_offload_entries", 0),
            r(0x28, R_64, ".data.rel.ro", 0),
            r(0x30, R_64, "__start_llvm_offload_entries", 0),
            r(0x38, R_64, "__stop_llvm_offload_entries", 0),
        ]
    );
    assert_eq!(
        relocs(&out, ".init_array.101"),
        [r(0, R_64, ".text.startup", 0)]
    );
    assert_eq!(
        relocs(&out, ".eh_frame"),
        [
            r(0x20, R_PC32, ".text.startup", 0),
            r(0x38, R_PC32, ".text.startup", 0x20),
        ]
    );

    #[rustfmt::skip]
    let code: &[u8] = &[
        // .omp_offloading.descriptor_reg
        0x50,                                     // push rax
        0x48, 0x8d, 0x3d, 0, 0, 0, 0,             // lea rdi, [rip + desc]
        0xe8, 0, 0, 0, 0,                         // call __tgt_register_lib
        0x48, 0x8d, 0x3d, 0x0c, 0, 0, 0,          // lea rdi, [rip + unreg]
        0xe8, 0, 0, 0, 0,                         // call atexit
        0x58,                                     // pop rax
        0xc3,                                     // ret
        0x0f, 0x1f, 0x44, 0x00, 0x00,             // nop (padding to 0x20)
        // .omp_offloading.descriptor_unreg
        0x50,                                     // push rax
        0x48, 0x8d, 0x3d, 0, 0, 0, 0,             // lea rdi, [rip + desc]
        0xe8, 0, 0, 0, 0,                         // call __tgt_unregister_lib
        0x58,                                     // pop rax
        0xc3,                                     // ret
    ];
    assert_eq!(contents(&out, ".text.startup"), code);
    let mut data = vec![0u8; 0x40];
    data[0x20] = 1; // NumDeviceImages
    assert_eq!(contents(&out, ".data.rel.ro"), data);
    assert_eq!(contents(&out, ".llvm.offloading"), ob);
    // The .eh_frame bytes LLVM 22 writes for the same functions.
    #[rustfmt::skip]
    let eh: &[u8] = &[
        0x14, 0, 0, 0, 0, 0, 0, 0,                 // CIE: length, id 0
        0x01, b'z', b'R', 0,                       // version 1, "zR"
        0x01, 0x78, 0x10,                          // code align 1, data align -8, RA 16
        0x01, 0x1b,                                // aug. data: pcrel|sdata4
        0x0c, 0x07, 0x08,                          // def_cfa rsp+8
        0x90, 0x01,                                // offset rip, cfa-8
        0, 0,                                      // nop padding
        0x14, 0, 0, 0, 0x1c, 0, 0, 0,              // FDE: length, CIE pointer
        0, 0, 0, 0, 0x1b, 0, 0, 0, 0,              // pc begin (reloc), range 27, no aug.
        0x41, 0x0e, 0x10,                          // advance 1; def_cfa_offset 16
        0x59, 0x0e, 0x08, 0,                       // advance 25; def_cfa_offset 8; nop
        0x14, 0, 0, 0, 0x34, 0, 0, 0,              // FDE
        0, 0, 0, 0, 0x0f, 0, 0, 0, 0,              // pc begin (reloc), range 15
        0x41, 0x0e, 0x10,                          // advance 1; def_cfa_offset 16
        0x4d, 0x0e, 0x08, 0,                       // advance 13; def_cfa_offset 8; nop
    ];
    assert_eq!(contents(&out, ".eh_frame"), eh);
}

/// Raw input: the whole file is the image.
#[test]
fn raw_input_is_whole_image() {
    let raw = filler(2, 1001);
    let img = Image::new(&raw).unwrap();
    assert_eq!(img.image, 0..1001);
    assert_eq!(img.arch, None);
    let out = to_vec(&opts(Abi::Llvm), &[img]).unwrap();
    let rel = relocs(&out, ".data.rel.ro");
    assert_eq!(rel[0], r(0, R_64, ".llvm.offloading", 0));
    assert_eq!(rel[1], r(8, R_64, ".llvm.offloading", 1001));
    assert_eq!(contents(&out, ".llvm.offloading"), raw);
}

/// Two inputs: one descriptor, images 8-aligned one after the other, and the
/// symbol order of LLVM 22 (`.1` after the section symbol).
#[test]
fn openmp_two_images() {
    let a = offload_binary(&filler(3, 15824), "generic");
    let b = filler(4, 2263); // odd length: the next image would need padding
    let c = filler(5, 8);
    let imgs = [
        Image::new(&a).unwrap(),
        Image::new(&b).unwrap(),
        Image::new(&c).unwrap(),
    ];
    let out = to_vec(&opts(Abi::Llvm), &imgs).unwrap();
    let b_off = a.len() as u64; // a's length is a multiple of 8
    let c_off = (b_off + 2263).next_multiple_of(8);
    let mut embedded = a.clone();
    embedded.extend_from_slice(&b);
    embedded.resize(usize::try_from(c_off).unwrap(), 0);
    embedded.extend_from_slice(&c);
    assert_eq!(contents(&out, ".llvm.offloading"), embedded);

    let syms = symbols(&out);
    let names: Vec<&str> = syms.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names[5..11],
        [
            "__dummy.llvm_offload_entries",
            ".omp_offloading.device_image",
            "[.llvm.offloading]",
            ".omp_offloading.device_image.1",
            ".omp_offloading.device_image.2",
            ".omp_offloading.device_images",
        ]
    );
    assert_eq!((syms[8].5, syms[8].6), (b_off, 2263));
    assert_eq!((syms[9].5, syms[9].6), (c_off, 8));
    assert_eq!((syms[10].5, syms[10].6), (0, 96));
    assert_eq!(
        (syms[3].0.as_str(), syms[3].5),
        (".omp_offloading.descriptor", 96)
    );

    let rel = relocs(&out, ".data.rel.ro");
    let s0 = imgs[0].image.start as i64;
    assert_eq!(rel[0], r(0x00, R_64, ".llvm.offloading", s0));
    assert_eq!(rel[4], r(0x20, R_64, ".llvm.offloading", b_off as i64));
    assert_eq!(
        rel[5],
        r(0x28, R_64, ".llvm.offloading", (b_off + 2263) as i64)
    );
    assert_eq!(rel[8], r(0x40, R_64, ".llvm.offloading", c_off as i64));
    assert_eq!(rel[12], r(0x68, R_64, ".data.rel.ro", 0));
    assert_eq!(rel.len(), 3 * 4 + 3);
    let data = contents(&out, ".data.rel.ro");
    assert_eq!(data[0x60..0x64], 3i32.to_le_bytes());
    assert_eq!(
        relocs(&out, ".text.startup")[0],
        r(4, R_PC32, ".data.rel.ro", 0x5c)
    );
}

/// The `.eh_frame` parses with gimli, and its rows describe the push/pop.
#[test]
fn eh_frame_reads_back() {
    use gimli::{BaseAddresses, CieOrFde, EhFrame, UnwindContext, UnwindSection};
    let raw = filler(6, 64);
    let out = to_vec(&opts(Abi::Llvm), &[Image::new(&raw).unwrap()]).unwrap();
    let data = contents(&out, ".eh_frame");
    let eh = EhFrame::new(&data, gimli::LittleEndian);
    // Unrelocated, pc-relative initial locations read as -(field offset);
    // relocations say where each FDE really points.
    let bases = BaseAddresses::default().set_eh_frame(0);
    let mut entries = eh.entries(&bases);
    let mut fdes = Vec::new();
    while let Some(e) = entries.next().unwrap() {
        match e {
            CieOrFde::Cie(cie) => {
                assert_eq!(cie.code_alignment_factor(), 1);
                assert_eq!(cie.data_alignment_factor(), -8);
                assert_eq!(cie.return_address_register(), gimli::X86_64::RA);
            }
            CieOrFde::Fde(p) => {
                let fde = p.parse(EhFrame::cie_from_offset).unwrap();
                let mut ctx = UnwindContext::new();
                let mut rows = fde.rows(&eh, &bases, &mut ctx).unwrap();
                let mut cfa = Vec::new();
                while let Some(row) = rows.next_row().unwrap() {
                    let gimli::CfaRule::RegisterAndOffset { register, offset } = *row.cfa() else {
                        panic!("CFA rule")
                    };
                    assert_eq!(register, gimli::X86_64::RSP);
                    cfa.push((
                        row.start_address().wrapping_sub(fde.initial_address()),
                        offset,
                    ));
                }
                fdes.push((fde.len(), cfa));
            }
        }
    }
    assert_eq!(
        fdes,
        [
            (27, vec![(0, 8), (1, 16), (26, 8)]),
            (15, vec![(0, 8), (1, 16), (14, 8)]),
        ]
    );
    // Each FDE's pc-begin is relocated to its function.
    let rel = relocs(&out, ".eh_frame");
    assert_eq!(rel.iter().map(|r| r.3).collect::<Vec<_>>(), [0, 0x20]);
}

/// The legacy ABI: old entry section, priority-1 constructor, `.fini_array`
/// destructor and no `atexit`.
#[test]
fn legacy_abi() {
    let raw = filler(7, 100);
    let out = to_vec(&opts(Abi::Legacy), &[Image::new(&raw).unwrap()]).unwrap();
    let secs = sections(&out);
    assert!(
        secs.iter()
            .all(|s| s.0 != "llvm_offload_entries" && s.0 != ".init_array.101")
    );
    assert_eq!(section(&secs, "omp_offloading_entries").2, 2);
    assert_eq!(section(&secs, ".init_array.1").1, elf::SHT_INIT_ARRAY.0);
    assert_eq!(section(&secs, ".fini_array.1").1, elf::SHT_FINI_ARRAY.0);
    assert_eq!(
        relocs(&out, ".init_array.1"),
        [r(0, R_64, ".text.startup", 0)]
    );
    assert_eq!(
        relocs(&out, ".fini_array.1"),
        [r(0, R_64, ".text.startup", 0x10)]
    );
    let syms = symbols(&out);
    assert!(syms.iter().all(|s| s.0 != "atexit"));
    assert!(syms.contains(&sym(
        "offload.wrapper.object",
        LOCAL,
        elf::STT_FILE.0,
        DEFAULT,
        "",
        0,
        0
    )));
    assert!(syms.contains(&sym(
        "__dummy.omp_offloading.entry",
        GLOBAL,
        OBJECT,
        HIDDEN,
        "omp_offloading_entries",
        0,
        0
    )));
    assert!(syms.contains(&sym(
        "__start_omp_offloading_entries",
        GLOBAL,
        NOTYPE,
        HIDDEN,
        "",
        0,
        0
    )));
    assert!(syms.contains(&sym(
        ".omp_offloading.descriptor_reg",
        LOCAL,
        FUNC,
        DEFAULT,
        ".text.startup",
        0,
        15
    )));
    assert!(syms.contains(&sym(
        ".omp_offloading.descriptor_unreg",
        LOCAL,
        FUNC,
        DEFAULT,
        ".text.startup",
        0x10,
        15
    )));
    assert_eq!(
        relocs(&out, ".text.startup"),
        [
            r(0x4, R_PC32, ".data.rel.ro", 0x1c),
            r(0x9, R_PLT32, "__tgt_register_lib", -4),
            r(0x14, R_PC32, ".data.rel.ro", 0x1c),
            r(0x19, R_PLT32, "__tgt_unregister_lib", -4),
        ]
    );
    let rel = relocs(&out, ".data.rel.ro");
    assert_eq!(rel[2], r(0x10, R_64, "__start_omp_offloading_entries", 0));
    assert_eq!(rel[3], r(0x18, R_64, "__stop_omp_offloading_entries", 0));
}

/// The ROCm flavour: target IDs in `.offload_arch_list`, one image info per
/// image, registered before the descriptor.
#[test]
fn rocm_abi() {
    let a = offload_binary(&filler(8, 500), "gfx90a:xnack+");
    let b = filler(9, 64);
    let mut imgs = vec![Image::new(&a).unwrap(), Image::new(&b).unwrap()];
    assert_eq!(imgs[0].arch.as_deref(), Some("gfx90a:xnack+"));
    // A raw input has no arch of its own.
    let e = to_vec(&opts(Abi::Rocm), &imgs).unwrap_err().to_string();
    assert!(e.contains("image 1 has no offload arch"), "{e}");
    imgs[1].arch = Some("gfx1030".into());
    let out = to_vec(&opts(Abi::Rocm), &imgs).unwrap();

    assert_eq!(
        contents(&out, ".offload_arch_list"),
        b"gfx90a:xnack+\0gfx1030\0"
    );
    let data = contents(&out, ".data.rel.ro");
    // images (2 × 32), descriptor (32), infos (2 × 32)
    assert_eq!(data.len(), 0xa0);
    #[rustfmt::skip]
    let info1: &[u8] = &[
        1, 0, 0, 0,  // version
        1, 0, 0, 0,  // image number
        2, 0, 0, 0,  // number of images
        0, 0, 0, 0,  // padding
        0, 0, 0, 0, 0, 0, 0, 0, // offload_arch (relocated)
        0, 0, 0, 0, 0, 0, 0, 0, // compile_opts: null
    ];
    assert_eq!(&data[0x80..0xa0], info1);
    let rel = relocs(&out, ".data.rel.ro");
    assert!(rel.contains(&r(0x70, R_64, ".offload_arch_list", 0)));
    assert!(rel.contains(&r(0x90, R_64, ".offload_arch_list", 14)));
    let calls: Vec<(u32, String, i64)> = relocs(&out, ".text.startup")
        .into_iter()
        .map(|r| (r.1, r.2, r.3))
        .collect();
    assert_eq!(
        calls,
        [
            (R_PC32, ".data.rel.ro".to_string(), 0x60 - 4),
            (R_PLT32, "__tgt_register_image_info".to_string(), -4),
            (R_PC32, ".data.rel.ro".to_string(), 0x80 - 4),
            (R_PLT32, "__tgt_register_image_info".to_string(), -4),
            (R_PC32, ".data.rel.ro".to_string(), 0x40 - 4),
            (R_PLT32, "__tgt_register_lib".to_string(), -4),
            (R_PC32, ".data.rel.ro".to_string(), 0x40 - 4),
            (R_PLT32, "__tgt_unregister_lib".to_string(), -4),
        ]
    );
    let syms = symbols(&out);
    assert!(syms.contains(&sym(
        "__offload_arch_1",
        LOCAL,
        OBJECT,
        DEFAULT,
        ".offload_arch_list",
        14,
        8
    )));
    assert!(syms.contains(&sym(
        ".offload_image_info_0",
        LOCAL,
        OBJECT,
        DEFAULT,
        ".data.rel.ro",
        0x60,
        32
    )));
    assert!(sections(&out).iter().any(|s| s.0 == ".fini_array.1"));
    // Listed as llc lists them: the infos where the constructor first
    // refers to them, the target IDs' section symbol after the first.
    let names: Vec<&str> = syms.iter().map(|s| s.0.as_str()).collect();
    let at = |n: &str| names.iter().position(|&m| m == n).unwrap();
    assert_eq!(
        at(".offload_image_info_0"),
        at(".omp_offloading.descriptor_reg") + 1
    );
    assert_eq!(
        at(".offload_image_info_1") + 1,
        at(".omp_offloading.descriptor")
    );
    assert_eq!(
        names[at("__offload_arch_0")..=at("__offload_arch_1")],
        [
            "__offload_arch_0",
            "[.offload_arch_list]",
            "__offload_arch_1"
        ]
    );
}

/// riscv64 relocates against symbols: in the legacy and ROCm objects the
/// constructor's `.Lpcrel_hiN` labels are numbered in code order (no
/// `atexit` address in between), the destructor pointer refers to the
/// destructor's own symbol, each image info is listed where the
/// constructor first refers to it, and each target ID is relocated
/// against its own symbol, the one longer than 16 bytes aligned to 16
/// (llc 22's bytes; `wrap::legacy_like_llc` and `wrap::rocm_like_llc`
/// compare whole objects).
#[test]
fn riscv64_legacy_and_rocm() {
    let (hi20, lo12, call, abs64) = (23, 24, 19, 2);
    let a = filler(13, 300);
    let b = filler(14, 3);
    let riscv = |abi: Abi| Options {
        triple: "riscv64-unknown-linux-gnu".into(),
        ..opts(abi)
    };
    let out = to_vec(&riscv(Abi::Legacy), &[Image::raw(&a)]).unwrap();
    assert_eq!(
        relocs(&out, ".text.startup"),
        [
            r(0x4, hi20, ".omp_offloading.descriptor", 0),
            r(0x8, lo12, ".Lpcrel_hi0", 0),
            r(0xc, call, "__tgt_register_lib", 0),
            r(0x1e, hi20, ".omp_offloading.descriptor", 0),
            r(0x22, lo12, ".Lpcrel_hi1", 0),
            r(0x26, call, "__tgt_unregister_lib", 0),
        ]
    );
    assert_eq!(
        relocs(&out, ".init_array.1"),
        [r(0, abs64, ".omp_offloading.descriptor_reg", 0)]
    );
    assert_eq!(
        relocs(&out, ".fini_array.1"),
        [r(0, abs64, ".omp_offloading.descriptor_unreg", 0)]
    );
    let names: Vec<String> = symbols(&out).into_iter().map(|s| s.0).collect();
    assert_eq!(
        names[..9],
        [
            "offload.wrapper.object",
            ".omp_offloading.descriptor_reg",
            ".L0 ",
            "$x",
            ".Lpcrel_hi0",
            ".omp_offloading.descriptor",
            ".omp_offloading.descriptor_unreg",
            ".L0 ",
            ".Lpcrel_hi1",
        ]
    );
    assert!(!names.iter().any(|n| n == "atexit"));

    let long = "gfx90a:sramecc+:xnack+";
    let mut imgs = [Image::raw(&a), Image::raw(&b)];
    imgs[0].arch = Some("gfx906".into());
    imgs[1].arch = Some(long.into());
    let out = to_vec(&riscv(Abi::Rocm), &imgs).unwrap();
    let calls: Vec<(u64, u32, String)> = relocs(&out, ".text.startup")
        .into_iter()
        .map(|r| (r.0, r.1, r.2))
        .collect();
    let c = |off: u64, ty: u32, name: &str| (off, ty, name.to_string());
    assert_eq!(
        calls,
        [
            c(0x4, hi20, ".offload_image_info_0"),
            c(0x8, lo12, ".Lpcrel_hi0"),
            c(0xc, call, "__tgt_register_image_info"),
            c(0x14, hi20, ".offload_image_info_1"),
            c(0x18, lo12, ".Lpcrel_hi1"),
            c(0x1c, call, "__tgt_register_image_info"),
            c(0x24, hi20, ".omp_offloading.descriptor"),
            c(0x28, lo12, ".Lpcrel_hi2"),
            c(0x2c, call, "__tgt_register_lib"),
            c(0x3e, hi20, ".omp_offloading.descriptor"),
            c(0x42, lo12, ".Lpcrel_hi3"),
            c(0x46, call, "__tgt_unregister_lib"),
        ]
    );
    let syms = symbols(&out);
    let names: Vec<&str> = syms.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names[4..13],
        [
            ".Lpcrel_hi0",
            ".offload_image_info_0",
            ".Lpcrel_hi1",
            ".offload_image_info_1",
            ".Lpcrel_hi2",
            ".omp_offloading.descriptor",
            ".omp_offloading.descriptor_unreg",
            ".L0 ",
            ".Lpcrel_hi3",
        ]
    );
    let arch1 = names.iter().position(|&n| n == "__offload_arch_1").unwrap();
    assert_eq!(names[arch1 - 2..arch1], ["__offload_arch_0", "$d"]);
    assert_eq!(
        syms[arch1],
        sym(
            "__offload_arch_1",
            LOCAL,
            OBJECT,
            DEFAULT,
            ".offload_arch_list",
            16,
            23
        )
    );
    let rel = relocs(&out, ".data.rel.ro");
    assert_eq!(
        rel[rel.len() - 2..],
        [
            r(0x70, abs64, "__offload_arch_0", 0),
            r(0x90, abs64, "__offload_arch_1", 0),
        ]
    );
    let list = contents(&out, ".offload_arch_list");
    assert_eq!(
        list,
        [&b"gfx906\0\0\0\0\0\0\0\0\0\0"[..], long.as_bytes(), b"\0"].concat()
    );
    assert_eq!(section(&sections(&out), ".offload_arch_list").3, 16);
}

/// The layout refers to the image instead of holding its bytes.
#[test]
fn layout_does_not_copy_images() {
    for n in [1usize, 2] {
        let big = filler(10, 1 << 20);
        let imgs: Vec<Image> = (0..n).map(|_| Image::new(&big).unwrap()).collect();
        let layout = layout(&opts(Abi::Llvm), &imgs).unwrap();
        let built: u64 = layout
            .pieces
            .iter()
            .map(|p| match p {
                Piece::Bytes(b) => b.len() as u64,
                _ => 0,
            })
            .sum();
        assert!(built < 4096, "{built} bytes built");
        let images = layout.image_indices();
        assert_eq!(images, (0..n).collect::<Vec<_>>());
        let v = to_vec(&opts(Abi::Llvm), &imgs).unwrap();
        assert_eq!(v.len() as u64, layout.size);
        // Deterministic.
        assert_eq!(v, to_vec(&opts(Abi::Llvm), &imgs).unwrap());
    }
}

#[test]
fn empty_image() {
    let out = to_vec(&opts(Abi::Llvm), &[Image::new(&[]).unwrap()]).unwrap();
    assert_eq!(section(&sections(&out), ".llvm.offloading").4, 0);
}

#[test]
fn errors() {
    let raw = filler(11, 16);
    let img = || Image::new(&raw).unwrap();
    let err = |o: Options, imgs: &[Image]| to_vec(&o, imgs).unwrap_err().to_string();
    assert!(err(opts(Abi::Llvm), &[]).contains("no input"));
    // riscv64 writes every ABI (see `riscv64_legacy_and_rocm`).
    let mut o = opts(Abi::Llvm);
    o.triple = "riscv64-unknown-linux-gnu".into();
    for abi in [Abi::Llvm, Abi::Legacy] {
        o.abi = abi;
        assert!(to_vec(&o, &[img()]).is_ok());
    }
    o.abi = Abi::Rocm;
    assert!(err(o.clone(), &[img()]).contains("image 0 has no offload arch"));

    assert_eq!(Kind::parse("cuda").unwrap(), Kind::Cuda);
    assert_eq!(Kind::parse("hip").unwrap(), Kind::Hip);
    // CUDA and HIP take exactly one input, and only the default ABI.
    for kind in [Kind::Cuda, Kind::Hip] {
        let mut o = opts(Abi::Llvm);
        o.kind = kind;
        let two = err(o.clone(), &[Image::raw(&raw), Image::raw(&raw)]);
        assert!(two.contains("single fatbinary or offload bundle"), "{two}");
        let mut o = opts(Abi::Legacy);
        o.kind = kind;
        assert!(err(o, &[Image::raw(&raw)]).contains("only for --kind=openmp"));
    }
    assert!(
        Kind::parse("sycl")
            .unwrap_err()
            .to_string()
            .contains("unknown offload kind")
    );
    assert!(
        Abi::parse("new")
            .unwrap_err()
            .to_string()
            .contains("unknown ABI")
    );
    assert_eq!(Abi::parse("rocm").unwrap(), Abi::Rocm);

    // A damaged OffloadBinary is an error, not a wrong range.
    let ob = offload_binary(&filler(12, 100), "generic");
    for cut in [4, 20, 60, ob.len() - 1] {
        assert!(Image::new(&ob[..cut]).is_err(), "cut at {cut}");
    }
    // A compressed (v3) binary has no image bytes in place to point at.
    let spec = ImageSpec {
        image_kind: ImageKind::IMG_Object,
        offload_kind: OffloadKind::OFK_OpenMP,
        flags: 0,
        strings: vec![],
        size: 64,
    };
    let mut v3 = Vec::new();
    crate::offload_binary::layout(&[spec], 3)
        .unwrap()
        .write_to(&mut v3, &[&filler(13, 64)])
        .unwrap();
    let packed =
        crate::offload_binary::compress_v3(&v3, crate::offload_binary::Compression::Zlib, 6)
            .unwrap();
    assert_eq!(
        Image::new(&v3).unwrap().image.end - Image::new(&v3).unwrap().image.start,
        64
    );
    let e = Image::new(&packed).unwrap_err().to_string();
    assert!(e.contains("compressed"), "{e}");
    let mut bad = ob.clone();
    bad[4] = 9; // version
    assert!(Image::new(&bad).is_err());
    for f in std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/offload_binary/malformed"
    ))
    .unwrap()
    {
        let p = f.unwrap().path();
        if p.file_name().unwrap() == "trailing-bytes.bin" {
            continue; // only the first binary is read, as in LLVM
        }
        let bytes = std::fs::read(&p).unwrap();
        assert!(Image::new(&bytes).is_err(), "{}", p.display());
    }
}

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
        let f = object::File::parse(&*out).unwrap();
        let eh = f
            .section_by_name(".eh_frame")
            .unwrap()
            .data()
            .unwrap()
            .to_vec();
        assert_eq!(eh.len() % 8, 0, "{p}: .eh_frame ends on 8 bytes");
        use gimli::UnwindSection as _;
        let frame = gimli::EhFrame::new(&eh, gimli::LittleEndian);
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
        assert_eq!(fdes, 3, "{p}");
    }
}

/// Every CPU row: each kind's object reads back with its machine, `e_flags`
/// and byte order, the descriptor's image count and the fatbin wrapper's
/// magic in that byte order, and an `.eh_frame` of one FDE per function.
#[test]
fn every_cpu_row_reads_back_in_its_byte_order() {
    use gimli::UnwindSection as _;
    use object::Endian as _;
    let raw = filler(31, 100);
    for cpu in arch::CPUS {
        let triple = format!("{}-unknown-linux-gnu", cpu.names[0]);
        for (kind, functions) in [(Kind::OpenMp, 2), (Kind::Cuda, 3), (Kind::Hip, 3)] {
            let o = Options {
                kind,
                triple: triple.clone(),
                ..opts(Abi::Llvm)
            };
            let out = to_vec(&o, &[Image::raw(&raw)]).unwrap();
            let f = object::File::parse(&*out).unwrap();
            let object::FileFlags::Elf { e_flags, .. } = f.flags() else {
                panic!("{triple}: not ELF")
            };
            assert_eq!(e_flags.0, cpu.e_flags, "{triple}");
            assert_eq!(f.is_little_endian(), cpu.endian.is_little_endian());
            let elf = object::read::elf::ElfFile64::<object::Endianness>::parse(&*out).unwrap();
            assert_eq!(elf.elf_header().e_machine(cpu.endian), cpu.machine);
            let word = |name: &str, at: usize| {
                let data = contents(&out, name);
                cpu.endian.read_u32(data[at..at + 4].try_into().unwrap())
            };
            match kind {
                Kind::OpenMp => assert_eq!(word(".data.rel.ro", 32), 1, "{triple}"),
                Kind::Cuda => assert_eq!(word(".nvFatBinSegment", 0), 0x4662_43b1),
                _ => assert_eq!(word(".hipFatBinSegment", 0), 0x4849_5046),
            }
            let eh = contents(&out, ".eh_frame");
            let endian = if cpu.endian.is_little_endian() {
                gimli::RunTimeEndian::Little
            } else {
                gimli::RunTimeEndian::Big
            };
            let frame = gimli::EhFrame::new(&eh, endian);
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
            assert_eq!(fdes, functions, "{triple} {kind:?}");
        }
    }
}

/// powerpc64le (ELFv2), as llc 22 writes it: `e_flags` 2, functions with
/// their local entry 8 bytes in (`st_other` 0x60), `.TOC.` the first
/// undefined symbol, and GlobalMerge's layout: with more than one image the
/// descriptor leads the merged `.data.rel.ro`, and images under 32 KiB are
/// merged by size after the others, their section after the constructor's.
#[test]
fn powerpc64le_elfv2_and_merged_constants() {
    use object::read::elf::Sym as _;
    let big = filler(41, 40000);
    let (a, b) = (filler(42, 100), filler(43, 50));
    let imgs = [Image::raw(&big), Image::raw(&a), Image::raw(&b)];
    let o = Options {
        triple: "powerpc64le-unknown-linux-gnu".into(),
        ..opts(Abi::Llvm)
    };
    let out = to_vec(&o, &imgs).unwrap();
    let f = ElfFile64::<LE>::parse(&*out).unwrap();
    assert_eq!(f.elf_header().e_machine(LE), elf::EM_PPC64);
    assert_eq!(f.elf_header().e_flags(LE).0, 2);
    for s in f.symbols().filter(|s| s.kind() == object::SymbolKind::Text) {
        assert_eq!(s.elf_symbol().st_other().0, 0x60, "{:?}", s.name());
    }
    let syms = symbols(&out);
    let first_global = syms.iter().position(|s| s.1 == GLOBAL).unwrap();
    assert_eq!(syms[first_global].0, ".TOC.");
    let at = |name: &str| {
        syms.iter()
            .find(|s| s.0 == name)
            .map(|s| (s.5, s.6))
            .unwrap()
    };
    // The 40000-byte image stays first; 50 then 100 bytes follow it.
    assert_eq!(at(".omp_offloading.device_image"), (0, 40000));
    assert_eq!(at(".omp_offloading.device_image.2"), (40000, 50));
    assert_eq!(at(".omp_offloading.device_image.1"), (40056, 100));
    assert_eq!(at(".omp_offloading.descriptor"), (0, 32));
    assert_eq!(at(".omp_offloading.device_images"), (32, 96));
    let names: Vec<String> = sections(&out).into_iter().map(|s| s.0).collect();
    let pos = |n: &str| names.iter().position(|s| s == n).unwrap();
    assert!(pos(".llvm.offloading") < pos(".init_array.101"));
    assert!(pos(".init_array.101") < pos(".data.rel.ro"));
    let mut embedded = big.clone();
    embedded.extend_from_slice(&b);
    embedded.resize(40056, 0);
    embedded.extend_from_slice(&a);
    assert_eq!(contents(&out, ".llvm.offloading"), embedded);
    // Small images only: all merged, their section after the constructor's.
    let out = to_vec(&o, &[Image::raw(&a), Image::raw(&b)]).unwrap();
    let names: Vec<String> = sections(&out).into_iter().map(|s| s.0).collect();
    let pos = |n: &str| names.iter().position(|s| s == n).unwrap();
    assert!(pos(".init_array.101") < pos(".llvm.offloading"));
    // The legacy ABI: the same merged layout, its priority-1 sections
    // before the merged data (llc 22's bytes for the legacy IR).
    let legacy = Options {
        abi: Abi::Legacy,
        ..o.clone()
    };
    let out = to_vec(&legacy, &[Image::raw(&a)]).unwrap();
    let names: Vec<String> = sections(&out).into_iter().map(|s| s.0).collect();
    let pos = |n: &str| names.iter().position(|s| s == n).unwrap();
    assert!(pos(".init_array.1") < pos(".fini_array.1"));
    assert!(pos(".fini_array.1") < pos(".data.rel.ro"));
    // ROCm: GlobalMerge merges the image infos with the descriptor and the
    // array (llc 22's bytes for the ROCm IR). One image: the three in the
    // module's order; the one target ID left alone, before the
    // constructor's sections.
    let rocm = Options {
        abi: Abi::Rocm,
        ..o.clone()
    };
    let mut img = Image::raw(&a);
    img.arch = Some("gfx90a".into());
    let out = to_vec(&rocm, std::slice::from_ref(&img)).unwrap();
    let syms = symbols(&out);
    let at = |name: &str| {
        let s = syms.iter().find(|s| s.0 == name).unwrap();
        (s.5, s.6)
    };
    assert_eq!(at(".omp_offloading.device_images"), (0, 32));
    assert_eq!(at(".omp_offloading.descriptor"), (32, 32));
    assert_eq!(at(".offload_image_info_0"), (64, 32));
    let names: Vec<String> = sections(&out).into_iter().map(|s| s.0).collect();
    let pos = |n: &str| names.iter().position(|s| s == n).unwrap();
    assert!(pos(".offload_arch_list") < pos(".init_array.1"));
    assert!(pos(".fini_array.1") < pos(".data.rel.ro"));
    // Two images: the descriptor, the infos, then the array; the target
    // IDs merged too, shortest first, their section last.
    let mut img2 = Image::raw(&b);
    img2.arch = Some("gfx1030:xnack+".into());
    let mut img3 = Image::raw(&b);
    img3.arch = Some("gfx906".into());
    let out = to_vec(&rocm, &[img2, img3]).unwrap();
    let syms = symbols(&out);
    let at = |name: &str| {
        let s = syms.iter().find(|s| s.0 == name).unwrap();
        (s.5, s.6)
    };
    assert_eq!(at(".omp_offloading.descriptor"), (0, 32));
    assert_eq!(at(".offload_image_info_0"), (32, 32));
    assert_eq!(at(".offload_image_info_1"), (64, 32));
    assert_eq!(at(".omp_offloading.device_images"), (96, 64));
    assert_eq!(at("__offload_arch_1"), (0, 7));
    assert_eq!(at("__offload_arch_0"), (7, 15));
    assert_eq!(
        contents(&out, ".offload_arch_list"),
        b"gfx906\0gfx1030:xnack+\0"
    );
    let names: Vec<String> = sections(&out).into_iter().map(|s| s.0).collect();
    let pos = |n: &str| names.iter().position(|s| s == n).unwrap();
    assert!(pos(".fini_array.1") < pos(".llvm.offloading"));
    assert!(pos(".data.rel.ro") < pos(".offload_arch_list"));
    assert!(pos(".offload_arch_list") < pos(".note.GNU-stack"));
    // The constructor keeps the merged global's address in r30: each info,
    // then the descriptor (`mr 3, 30`).
    let code = contents(&out, ".text.startup");
    let word = |at: usize| u32::from_le_bytes(code[at..at + 4].try_into().unwrap());
    assert_eq!(word(0x1c), 0x3bc3_0000); // addi 30, 3, 0
    assert_eq!(word(0x20), 0x387e_0020); // addi 3, 30, 32
    assert_eq!(word(0x38), 0x7fc3_f378); // mr 3, 30
    // 1024 images: the array (32 KiB) is too large to merge; the
    // descriptor and 1022 infos fill one merged global, the last two infos
    // another, whose address the constructor keeps in r29.
    let mut many = vec![img; 1024];
    for (i, img) in many.iter_mut().enumerate() {
        img.arch = Some(["gfx906", "gfx1030"][i % 2].into());
    }
    let out = to_vec(&rocm, &many).unwrap();
    let syms = symbols(&out);
    let at = |name: &str| {
        let s = syms.iter().find(|s| s.0 == name).unwrap();
        (s.5, s.6)
    };
    assert_eq!(at(".omp_offloading.device_images"), (0, 0x8000));
    assert_eq!(at(".omp_offloading.descriptor"), (0x8000, 32));
    assert_eq!(at(".offload_image_info_1021"), (0xffc0, 32));
    assert_eq!(at(".offload_image_info_1022"), (0xffe0, 32));
    assert_eq!(at(".offload_image_info_1023"), (0x1_0000, 32));
    let rel = relocs(&out, ".text.startup");
    assert_eq!(
        rel[2],
        r(0x18, elf::R_PPC64_TOC16_HA.0, ".data.rel.ro", 0x8000)
    );
    assert!(rel.contains(&r(0x300c, elf::R_PPC64_TOC16_HA.0, ".data.rel.ro", 0xffe0)));
    let code = contents(&out, ".text.startup");
    let word = |at: usize| u32::from_le_bytes(code[at..at + 4].try_into().unwrap());
    assert_eq!(word(0x0c), 0xfba1_ffe8); // std 29, -24(1)
    assert_eq!(word(0x3010), 0x3ba3_0000); // addi 29, 3, 0
    assert_eq!(word(0x3014), 0x7fa3_eb78); // mr 3, 29
    // More than 1022 images: the image array (32 × 1023 bytes) and the
    // descriptor no longer fit together in one merged global (0x7fff
    // bytes), so neither is merged and they lie as on other CPUs; the
    // images still merge.
    let many = vec![Image::raw(&b); 1023];
    let out = to_vec(&o, &many).unwrap();
    let syms = symbols(&out);
    let at = |name: &str| {
        let s = syms.iter().find(|s| s.0 == name).unwrap();
        (s.5, s.6)
    };
    assert_eq!(at(".omp_offloading.device_images"), (0, 32 * 1023));
    assert_eq!(at(".omp_offloading.descriptor"), (32 * 1023, 32));
    let names: Vec<String> = sections(&out).into_iter().map(|s| s.0).collect();
    let pos = |n: &str| names.iter().position(|s| s == n).unwrap();
    assert!(pos(".data.rel.ro") < pos(".init_array.101"));
    assert!(pos(".init_array.101") < pos(".llvm.offloading"));
    // The descriptor's address is relocated directly, not from the
    // section's start.
    let rel = relocs(&out, ".text.startup");
    assert_eq!(
        rel[2],
        r(0x14, elf::R_PPC64_TOC16_HA.0, ".data.rel.ro", 32 * 1023)
    );
}

/// An object written from input shapes with the packed binaries spliced in
/// (how the linker wrapper wraps without writing each binary out first)
/// is the object written from the packed binaries themselves, for every
/// ABI and relocatable or not.
#[test]
fn shapes_with_spliced_binaries_match_whole_inputs() {
    let images = [filler(1, 100), filler(2, 4099), Vec::new()];
    let specs: Vec<ImageSpec> = images
        .iter()
        .enumerate()
        .map(|(i, img)| ImageSpec {
            image_kind: ImageKind::IMG_Object,
            offload_kind: OffloadKind::OFK_OpenMP,
            flags: 0,
            strings: vec![
                (b"triple".to_vec(), b"x86_64-unknown-linux-gnu".to_vec()),
                (b"arch".to_vec(), format!("gfx90{i}").into_bytes()),
            ],
            size: img.len() as u64,
        })
        .collect();
    let packed: Vec<Vec<u8>> = images
        .iter()
        .enumerate()
        .map(|(i, img)| offload_binary(img, &format!("gfx90{i}")))
        .collect();
    let parts: Vec<_> = specs
        .iter()
        .map(|s| crate::offload_binary::layout_v1_one(s).unwrap())
        .collect();
    let shapes: Vec<InputShape> = parts
        .iter()
        .zip(&specs)
        .map(|((l, range), s)| {
            let arch = String::from_utf8(s.strings[1].1.clone()).unwrap();
            InputShape::new(l.size, range.clone(), Some(arch))
        })
        .collect();
    let layouts: Vec<Layout> = parts.into_iter().map(|(l, _)| l).collect();
    for abi in [Abi::Llvm, Abi::Legacy, Abi::Rocm] {
        for relocatable in [false, true] {
            let o = Options {
                relocatable: relocatable && abi == Abi::Llvm,
                llc_layout: true,
                ..opts(abi)
            };
            let whole: Vec<Image<'_>> = packed.iter().map(|p| Image::new(p).unwrap()).collect();
            let expected = to_vec(&o, &whole).unwrap();
            let spliced = layout_shapes(&o, &shapes)
                .unwrap()
                .splice(&layouts)
                .unwrap();
            let mut got = Vec::new();
            let payloads: Vec<&[u8]> = images.iter().map(Vec::as_slice).collect();
            spliced.write_to(&mut got, &payloads).unwrap();
            assert_eq!(got, expected, "{abi:?}, relocatable {relocatable}");
        }
    }
}

//! The OpenMP object on x86-64: one image against every fact of
//! Appendix A, two images, and `.eh_frame` read back.

use super::*;

/// Appendix A's object: one OffloadBinary input (a 15824-byte image for
/// `generic`) wrapped with the LLVM ABI; returns the input, the object and
/// where the image starts in the input.
fn appendix_a() -> (Vec<u8>, Vec<u8>, u64) {
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
    (ob, out, start)
}

/// One OffloadBinary input: the header and the sections of Appendix A.
#[test]
fn openmp_one_image_sections_match_llvm() {
    let (ob, out, _) = appendix_a();
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
}

/// One OffloadBinary input: the symbols of Appendix A, in LLVM 22's order.
#[test]
fn openmp_one_image_symbols_match_llvm() {
    let (ob, out, _) = appendix_a();
    let n = ob.len() as u64;
    let section = elf::STT_SECTION.0;
    #[rustfmt::skip]
    let want = [
        sym("offload.wrapper.module", LOCAL, elf::STT_FILE.0, DEFAULT, "", 0, 0),
        sym("[.text.startup]", LOCAL, section, DEFAULT, ".text.startup", 0, 0),
        sym(".omp_offloading.descriptor_reg", LOCAL, FUNC, DEFAULT, ".text.startup", 0, 27),
        sym(".omp_offloading.descriptor", LOCAL, OBJECT, DEFAULT, ".data.rel.ro", 0x20, 32),
        sym(".omp_offloading.descriptor_unreg", LOCAL, FUNC, DEFAULT, ".text.startup", 0x20, 15),
        sym("__dummy.llvm_offload_entries", LOCAL, OBJECT, DEFAULT, "llvm_offload_entries", 0, 0),
        sym(".omp_offloading.device_image", LOCAL, OBJECT, DEFAULT, ".llvm.offloading", 0, n),
        sym("[.llvm.offloading]", LOCAL, section, DEFAULT, ".llvm.offloading", 0, 0),
        sym(".omp_offloading.device_images", LOCAL, OBJECT, DEFAULT, ".data.rel.ro", 0, 32),
        sym("[.data.rel.ro]", LOCAL, section, DEFAULT, ".data.rel.ro", 0, 0),
        sym("__tgt_register_lib", GLOBAL, NOTYPE, DEFAULT, "", 0, 0),
        sym("atexit", GLOBAL, NOTYPE, DEFAULT, "", 0, 0),
        sym("__tgt_unregister_lib", GLOBAL, NOTYPE, DEFAULT, "", 0, 0),
        sym("__start_llvm_offload_entries", GLOBAL, NOTYPE, HIDDEN, "", 0, 0),
        sym("__stop_llvm_offload_entries", GLOBAL, NOTYPE, HIDDEN, "", 0, 0),
    ];
    assert_eq!(symbols(&out), want);
}

/// One OffloadBinary input: the relocations of Appendix A.
#[test]
fn openmp_one_image_relocations_match_llvm() {
    let image_len = 15824;
    let (_, out, start) = appendix_a();
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
    let e = s + image_len;
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
}

/// One OffloadBinary input: the code, the data and the `.eh_frame` bytes
/// of Appendix A.
#[test]
fn openmp_one_image_contents_match_llvm() {
    let (ob, out, _) = appendix_a();
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

//! CPUs other than x86-64: riscv64 (relocations against symbols), every
//! CPU row in its byte order, ppc64le (ELFv2, merged constants).

use super::*;

/// riscv64's relocation types: `R_RISCV_PCREL_HI20`, `R_RISCV_PCREL_LO12_I`,
/// `R_RISCV_CALL_PLT`, `R_RISCV_64`.
const RISCV_RELOCS: (u32, u32, u32, u32) = (23, 24, 19, 2);

/// Options for a riscv64 host with `abi`.
fn riscv(abi: Abi) -> Options {
    Options {
        triple: "riscv64-unknown-linux-gnu".into(),
        ..opts(abi)
    }
}

/// riscv64 relocates against symbols: in the legacy and ROCm objects the
/// constructor's `.Lpcrel_hiN` labels are numbered in code order (no
/// `atexit` address in between), the destructor pointer refers to the
/// destructor's own symbol, each image info is listed where the
/// constructor first refers to it, and each target ID is relocated
/// against its own symbol, the one longer than 16 bytes aligned to 16
/// (llc 22's bytes; `wrap::llc::legacy_like_llc` and `wrap::llc::rocm_like_llc`
/// compare whole objects).
#[test]
fn riscv64_legacy() {
    let (hi20, lo12, call, abs64) = RISCV_RELOCS;
    let a = filler(13, 300);
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
}

/// riscv64's ROCm object: see [`riscv64_legacy`].
#[test]
fn riscv64_rocm() {
    let (hi20, lo12, call, abs64) = RISCV_RELOCS;
    let a = filler(13, 300);
    let b = filler(14, 3);
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
                triple: triple.as_str().into(),
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
    let o = ppc64le(Abi::Llvm);
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
}

/// Options for a powerpc64le host with `abi`.
fn ppc64le(abi: Abi) -> Options {
    Options {
        triple: "powerpc64le-unknown-linux-gnu".into(),
        ..opts(abi)
    }
}

/// powerpc64le, legacy ABI: see [`powerpc64le_elfv2_and_merged_constants`].
#[test]
fn powerpc64le_legacy_merged_layout() {
    let a = filler(42, 100);
    // The legacy ABI: the same merged layout, its priority-1 sections
    // before the merged data (llc 22's bytes for the legacy IR).
    let legacy = ppc64le(Abi::Legacy);
    let out = to_vec(&legacy, &[Image::raw(&a)]).unwrap();
    let names: Vec<String> = sections(&out).into_iter().map(|s| s.0).collect();
    let pos = |n: &str| names.iter().position(|s| s == n).unwrap();
    assert!(pos(".init_array.1") < pos(".fini_array.1"));
    assert!(pos(".fini_array.1") < pos(".data.rel.ro"));
}

/// powerpc64le, ROCm ABI, one and two images: see
/// [`powerpc64le_elfv2_and_merged_constants`].
#[test]
fn powerpc64le_rocm_merged_infos() {
    let (a, b) = (filler(42, 100), filler(43, 50));
    // ROCm: GlobalMerge merges the image infos with the descriptor and the
    // array (llc 22's bytes for the ROCm IR). One image: the three in the
    // module's order; the one target ID left alone, before the
    // constructor's sections.
    let rocm = ppc64le(Abi::Rocm);
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
}

/// powerpc64le, ROCm ABI, 1024 images: two merged globals.
#[test]
fn powerpc64le_rocm_1024_images() {
    let a = filler(42, 100);
    let rocm = ppc64le(Abi::Rocm);
    let mut img = Image::raw(&a);
    img.arch = Some("gfx90a".into());
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
}

/// powerpc64le, LLVM ABI, 1023 images: the image array and the descriptor
/// too large to merge.
#[test]
fn powerpc64le_large_arrays_are_not_merged() {
    let b = filler(43, 50);
    let o = ppc64le(Abi::Llvm);
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

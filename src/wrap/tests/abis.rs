//! The legacy and the ROCm ABIs' OpenMP objects.

use super::*;

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

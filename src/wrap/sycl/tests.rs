//! Unit tests of the SYCL object.

use super::*;
use crate::offload_binary::{ImageKind, ImageSpec, layout_v1};
use object::read::elf::{ElfFile64, SectionHeader};
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

/// The bytes of `r` in `b`.
fn at<'b>(b: &'b [u8], r: &Range<u64>) -> &'b [u8] {
    &b[usize::try_from(r.start).unwrap()..usize::try_from(r.end).unwrap()]
}

#[test]
fn names_are_made_unique_as_llvm_does() {
    let mut n = Names::default();
    assert_eq!(n.unique(b".a"), b".a");
    assert_eq!(n.unique(b".a"), b".a.1");
    assert_eq!(n.unique(b".b"), b".b");
    // One counter for the whole module.
    assert_eq!(n.unique(b".b"), b".b.2");
    assert_eq!(n.unique(b".a"), b".a.3");
}

/// Two OffloadBinaries as a SYCL device link writes them.
fn linked() -> (Vec<u8>, Vec<(SyclImage, Range<u64>)>) {
    let spec = |symbols: &[u8], size| ImageSpec {
        image_kind: ImageKind(0),
        offload_kind: OffloadKind::OFK_SYCL,
        flags: 0,
        strings: vec![
            (b"triple".to_vec(), b"spirv64-unknown-unknown".to_vec()),
            (b"symbols".to_vec(), symbols.to_vec()),
        ],
        size,
    };
    let images: [&[u8]; 2] = [&[0x11; 40], &[0x22; 24]];
    let layout = layout_v1(&[spec(b"k1\nk2", 40), spec(b"\nk1\n", 24)]).unwrap();
    let mut bytes = Vec::new();
    layout.write_to(&mut bytes, &images).unwrap();
    let read = SyclImage::read_all(&bytes).unwrap();
    (bytes, read)
}

#[test]
fn reads_the_device_link_output() {
    let (bytes, read) = linked();
    assert_eq!(read.len(), 2);
    assert_eq!(read[0].0.symbols, [b"k1".to_vec(), b"k2".to_vec()]);
    // Empty lines are no names.
    assert_eq!(read[1].0.symbols, [b"k1".to_vec()]);
    assert_eq!(read[0].0.offload_kind, 8);
    let r = &read[1].1;
    assert!(at(&bytes, r).iter().all(|&b| b == 0x22));
    assert!(SyclImage::read_all(b"not an offload binary").is_err());
    assert!(SyclImage::read_all(&bytes[..bytes.len() - 1]).is_err());
}

#[test]
fn object_registers_each_image_and_entry() {
    let (bytes, read) = linked();
    let shapes: Vec<SyclImage> = read.iter().map(|(s, _)| s.clone()).collect();
    let layout = sycl_layout("x86_64-unknown-linux-gnu", &shapes).unwrap();
    let slices: Vec<&[u8]> = read.iter().map(|(_, r)| at(&bytes, r)).collect();
    let mut obj = Vec::new();
    layout.write_to(&mut obj, &slices).unwrap();
    let file = ElfFile64::<object::Endianness>::parse(&obj[..]).unwrap();
    let sym = |name: &str| file.symbols().find(|s| s.name() == Ok(name));
    // The second image's k1 gets LLVM's unique name (its entry name took .2).
    for weak in [
        ".offloading.entry.k1",
        ".offloading.entry.k2",
        ".offloading.entry.k1.3",
    ] {
        let s = sym(weak).unwrap_or_else(|| panic!("{weak} missing"));
        assert!(s.is_weak() && s.kind() == SymbolKind::Data, "{weak}");
        assert_eq!(s.size(), ENTRY_SIZE);
    }
    for undefined in ["__sycl_register_lib", "__sycl_unregister_lib"] {
        assert!(sym(undefined).unwrap().is_undefined());
    }
    let images = file.section_by_name(".llvm.offloading").unwrap();
    assert_eq!(
        images.elf_section_header().sh_type(file.endian()),
        elf::SectionType(SHT_LLVM_OFFLOADING)
    );
    let data = images.data().unwrap();
    assert_eq!(&data[..40], &[0x11; 40]);
    assert_eq!(&data[48..72], &[0x22; 24]);
    let desc = sym(".sycl_offloading.descriptor").unwrap();
    assert_eq!(desc.size(), DESC_SIZE);
    let rodata = file
        .section_by_name(".data.rel.ro")
        .unwrap()
        .data()
        .unwrap();
    let off = usize::try_from(desc.address()).unwrap();
    // Version 1, two images.
    assert_eq!(&rodata[off..off + 4], &[1, 0, 2, 0]);
    assert!(file.section_by_name(".init_array.1").is_some());
    assert!(file.section_by_name(".fini_array.1").is_some());
    // Nor yet powerpc64le and riscv64 hosts.
    for host in ["powerpc64le-unknown-linux-gnu", "riscv64-unknown-linux-gnu"] {
        let e = sycl_layout(host, &shapes).unwrap_err();
        assert!(e.to_string().contains("not yet"), "{e}");
    }
    assert!(sycl_layout("aarch64-unknown-linux-gnu", &shapes).is_ok());
    assert!(sycl_layout("x86_64-unknown-linux-gnu", &[]).is_err());
}

use super::*;
use crate::host::object::{check_alignments, edit_sections, is_aligned};
use object::write::{Object as WObject, StandardSection, Symbol, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness as E, Object, ObjectSection, SectionKind, SymbolFlags,
};

/// A small relocatable object made with object's writer.
fn host_object(arch: Architecture, endian: E) -> Vec<u8> {
    let mut o = WObject::new(BinaryFormat::Elf, arch, endian);
    let text = o.section_id(StandardSection::Text);
    let off = o.append_section_data(text, &[0xc3; 16], 16);
    o.add_symbol(Symbol {
        name: b"f".to_vec(),
        value: off,
        size: 16,
        kind: object::SymbolKind::Text,
        scope: object::SymbolScope::Linkage,
        weak: false,
        section: SymbolSection::Section(text),
        flags: SymbolFlags::None,
    });
    let data = o.section_id(StandardSection::Data);
    o.append_section_data(data, &[7; 8], 8);
    let extra = o.add_section(Vec::new(), b".note.GNU-stack".to_vec(), SectionKind::Other);
    let _ = extra;
    o.write().unwrap()
}

fn sections_of(data: &[u8]) -> Vec<(String, Vec<u8>)> {
    let f = object::File::parse(data).unwrap();
    f.sections()
        .map(|s| {
            (
                s.name().unwrap().to_string(),
                s.data().unwrap_or(&[]).to_vec(),
            )
        })
        .collect()
}

fn round_trip(arch: Architecture, endian: E) {
    let host = host_object(arch, endian);
    let dev = vec![0x5a; 10_000];
    let written = bundle(
        &host,
        &[
            NewSection {
                id: "host-x86_64-unknown-linux-gnu-",
                data: HOST_MARKER,
            },
            NewSection {
                id: "hip-amdgcn-amd-amdhsa--gfx906",
                data: &dev,
            },
        ],
    )
    .unwrap();
    // The large device image is a span of its input, not a copy.
    assert!(written.spans.iter().any(|s| s.source == 2));
    let fat = written.to_vec(&[&host, HOST_MARKER, &dev]).unwrap();
    assert_eq!(fat.len() as u64, written.layout.size);
    let found = entries(&fat).unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].id, b"host-x86_64-unknown-linux-gnu-");
    assert_eq!(found[0].data, HOST_MARKER);
    assert_eq!(found[1].id, b"hip-amdgcn-amd-amdhsa--gfx906");
    assert_eq!(found[1].data, &dev[..]);
    // String tables are rebuilt; compare the rest.
    let keep = |mut v: Vec<(String, Vec<u8>)>| {
        v.retain(|(n, _)| !matches!(n.as_str(), ".strtab" | ".shstrtab"));
        v
    };
    let want = keep(sections_of(&host));
    let got = keep(sections_of(&fat));
    assert_eq!(got[..want.len()], want[..]);
    assert_eq!(got.len(), want.len() + 2);
    let stripped = strip(&fat).unwrap().to_vec(&[&fat]).unwrap();
    assert_eq!(keep(sections_of(&stripped)), want);
    assert!(entries(&stripped).unwrap().is_empty());
}

#[test]
fn bundle_and_strip_round_trip() {
    round_trip(Architecture::X86_64, E::Little);
    round_trip(Architecture::I386, E::Little);
    round_trip(Architecture::PowerPc64, E::Big);
    round_trip(Architecture::Mips, E::Big);
}

#[test]
fn misaligned_input_reads_the_same() {
    let host = host_object(Architecture::X86_64, E::Little);
    let fat = bundle(
        &host,
        &[NewSection {
            id: "openmp-x86_64-unknown-linux-gnu-",
            data: b"DEV",
        }],
    )
    .unwrap()
    .to_vec(&[&host, b"DEV"])
    .unwrap();
    let mut shifted = vec![0u8; 3];
    shifted.extend_from_slice(&fat);
    let view = &shifted[3..];
    assert!(!is_aligned(view));
    let e = entries(view).unwrap();
    assert_eq!(e[0].data, b"DEV");
    assert_eq!(
        entry_ids(view).unwrap(),
        [&b"openmp-x86_64-unknown-linux-gnu-"[..]]
    );
    let s = strip(view).unwrap().to_vec(&[view]).unwrap();
    assert!(entries(&s).unwrap().is_empty());
}

#[test]
fn entry_names_need_an_id() {
    assert!(!is_entry_section(b"__CLANG_OFFLOAD_BUNDLE__"));
    assert!(is_bundle_section(b"__CLANG_OFFLOAD_BUNDLE__"));
    assert!(is_entry_section(b"__CLANG_OFFLOAD_BUNDLE__x"));
    assert!(!is_bundle_section(b"x__CLANG_OFFLOAD_BUNDLE__x"));
}

#[test]
fn coff_objects_are_bundled_and_stripped() {
    let mut o = WObject::new(BinaryFormat::Coff, Architecture::X86_64, E::Little);
    let text = o.section_id(StandardSection::Text);
    o.append_section_data(text, &[0xc3], 1);
    let coff = o.write().unwrap();
    let add = [NewSection {
        id: "host-x86_64-pc-windows-msvc-",
        data: HOST_MARKER,
    }];
    let fat = bundle(&coff, &add)
        .unwrap()
        .to_vec(&[&coff, HOST_MARKER])
        .unwrap();
    let found = entries(&fat).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, b"host-x86_64-pc-windows-msvc-");
    let stripped = strip(&fat).unwrap().to_vec(&[&fat]).unwrap();
    assert!(entries(&stripped).unwrap().is_empty());
    // Pruning removes sections of COFF objects too.
    let fewer = edit_sections(&coff, None, &[1], &[], &[], false)
        .unwrap()
        .to_vec(&[&coff])
        .unwrap();
    assert_eq!(
        sections_of(&fewer).len() + 1,
        sections_of(&coff).len(),
        "{:?}",
        sections_of(&fewer)
    );
}

#[test]
fn other_formats_are_refused() {
    let mut o = WObject::new(BinaryFormat::MachO, Architecture::X86_64, E::Little);
    let text = o.section_id(StandardSection::Text);
    o.append_section_data(text, &[0xc3], 1);
    let macho = o.write().unwrap();
    let e = bundle(&macho, &[]).unwrap_err().to_string();
    assert!(e.contains("Mach-O") && e.contains("not supported"), "{e}");
    let e = strip(&macho).unwrap_err().to_string();
    assert!(e.contains("Mach-O"), "{e}");
}

#[test]
fn an_object_without_section_headers_keeps_none() {
    let mut host = host_object(Architecture::X86_64, E::Little);
    // No section header table: e_shoff, e_shnum and e_shstrndx cleared.
    host[0x28..0x30].fill(0);
    host[0x3c..0x40].fill(0);
    assert!(entries(&host).unwrap().is_empty());
    // llvm-objcopy writes the header and the added contents, without a
    // section header table.
    let extra = [NewSection {
        id: "x",
        data: b"DEV",
    }];
    let out = bundle(&host, &extra)
        .unwrap()
        .to_vec(&[&host, b"DEV"])
        .unwrap();
    assert_eq!(out.len(), 67);
    assert_eq!(&out[..0x28], &host[..0x28]);
    assert_eq!(&out[64..], b"DEV");
}

#[test]
fn truncations_never_panic() {
    let host = host_object(Architecture::X86_64, E::Little);
    let fat = bundle(
        &host,
        &[NewSection {
            id: "host-x86_64-unknown-linux-gnu-",
            data: HOST_MARKER,
        }],
    )
    .unwrap()
    .to_vec(&[&host, HOST_MARKER])
    .unwrap();
    for cut in 0..fat.len() {
        let d = &fat[..cut];
        let _ = entries(d);
        let _ = entry_ids(d);
        let _ = strip(d);
        let _ = bundle(d, &[]);
    }
    for i in 0..fat.len() {
        let mut d = fat.clone();
        d[i] ^= 0xff;
        let _ = entries(&d);
        let _ = strip(&d);
        let _ = bundle(&d, &[]);
    }
}

#[test]
fn alignments_are_bounded_per_section_and_in_all() {
    let ok = [(&b".text"[..], true, 16), (b".data.huge", true, 1 << 21)];
    assert!(check_alignments(ok).is_ok());
    let e = check_alignments([(&b".text"[..], true, 16), (b".big", true, 1 << 32)])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("section '.big'") && e.contains("0x100000000"),
        "{e}"
    );
    // Sections without file contents still may not ask for more.
    assert!(check_alignments([(&b".bss"[..], false, (1 << 24) + 1)]).is_err());
    assert!(check_alignments([(&b".bss"[..], false, 1 << 24); 100]).is_ok());
    // Five 16 MiB sections with contents: 80 MiB of padding.
    let e = check_alignments([(&b".d"[..], true, 1 << 24); 5])
        .unwrap_err()
        .to_string();
    assert!(e.contains("padding"), "{e}");
}

//! Unit tests of the COFF rewrite, without LLVM: round trips through the
//! `object` crate's COFF reader and hostile inputs. The bytes are checked
//! against llvm-objcopy by the linker tests (`bundler::object_bundles::coff`).

use object::write::{Object as WObject, Relocation, StandardSection, Symbol, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness, Object, ObjectSection, ObjectSymbol, RelocationFlags,
    SectionKind, SymbolFlags, SymbolKind, SymbolScope,
};

use super::read::{u16_at, u32_at};
use super::strtab::long_section_name;
use super::write::jam_crc;
use crate::bundle::object::{HOST_MARKER, NewSection, bundle, entries, entry_ids, strip};

/// A relocatable COFF object with code, data, relocations, long section
/// and symbol names.
fn host(arch: Architecture) -> Vec<u8> {
    let mut o = WObject::new(BinaryFormat::Coff, arch, Endianness::Little);
    let text = o.section_id(StandardSection::Text);
    let code = o.append_section_data(text, &[0x90; 32], 16);
    let data = o.section_id(StandardSection::Data);
    let d = o.append_section_data(data, &[7; 16], 8);
    let long = o.add_section(
        Vec::new(),
        b".rdata$a_rather_long_section_name".to_vec(),
        SectionKind::ReadOnlyData,
    );
    o.append_section_data(long, b"constant", 1);
    let f = o.add_symbol(Symbol {
        name: b"a_function_with_a_long_name".to_vec(),
        value: code,
        size: 32,
        kind: SymbolKind::Text,
        scope: SymbolScope::Linkage,
        weak: false,
        section: SymbolSection::Section(text),
        flags: SymbolFlags::None,
    });
    let g = o.add_symbol(Symbol {
        name: b"g".to_vec(),
        value: d,
        size: 16,
        kind: SymbolKind::Data,
        scope: SymbolScope::Linkage,
        weak: false,
        section: SymbolSection::Section(data),
        flags: SymbolFlags::None,
    });
    let ext = o.add_symbol(Symbol {
        name: b"an_undefined_function".to_vec(),
        value: 0,
        size: 0,
        kind: SymbolKind::Text,
        scope: SymbolScope::Linkage,
        weak: false,
        section: SymbolSection::Undefined,
        flags: SymbolFlags::None,
    });
    let (abs, rel) = match arch {
        Architecture::Aarch64 => (
            object::pe::IMAGE_REL_ARM64_ADDR64,
            object::pe::IMAGE_REL_ARM64_BRANCH26,
        ),
        _ => (
            object::pe::IMAGE_REL_AMD64_ADDR64,
            object::pe::IMAGE_REL_AMD64_REL32,
        ),
    };
    for (section, offset, symbol, typ) in [
        (data, d, f, abs),
        (data, d + 8, g, abs),
        (text, code + 4, ext, rel),
    ] {
        o.add_relocation(
            section,
            Relocation {
                offset,
                symbol,
                addend: 0,
                flags: RelocationFlags::Coff { typ },
            },
        )
        .unwrap();
    }
    o.write().unwrap()
}

/// Names and contents of the sections, as `object` reads them.
fn sections(data: &[u8]) -> Vec<(String, Vec<u8>)> {
    let f = object::File::parse(data).unwrap();
    f.sections()
        .map(|s| (s.name().unwrap().to_string(), s.data().unwrap().to_vec()))
        .collect()
}

/// Symbols (name, section name, value) and relocations (section, offset,
/// symbol name).
type SymbolsAndRelocations = (Vec<(String, String, u64)>, Vec<(String, u64, String)>);

/// The symbols and relocations of `data`, as `object` reads them.
fn symbols_and_relocations(data: &[u8]) -> SymbolsAndRelocations {
    let f = object::File::parse(data).unwrap();
    let name = |i| f.symbol_by_index(i).unwrap().name().unwrap().to_string();
    let symbols = f
        .symbols()
        .map(|s| {
            let sec = s
                .section_index()
                .map(|i| f.section_by_index(i).unwrap().name().unwrap().to_string())
                .unwrap_or_default();
            (s.name().unwrap().to_string(), sec, s.address())
        })
        .collect();
    let mut relocs = Vec::new();
    for s in f.sections() {
        for (at, r) in s.relocations() {
            let object::RelocationTarget::Symbol(i) = r.target() else {
                panic!("not a symbol");
            };
            relocs.push((s.name().unwrap().to_string(), at, name(i)));
        }
    }
    (symbols, relocs)
}

const DEVICE: &str = "hip-amdgcn-amd-amdhsa--gfx90a";

fn round_trip(arch: Architecture, triple: &str) {
    let h = host(arch);
    let dev: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    let host_id = format!("host-{triple}-");
    let add = [
        NewSection {
            id: &host_id,
            data: HOST_MARKER,
        },
        NewSection {
            id: DEVICE,
            data: &dev,
        },
    ];
    let written = bundle(&h, &add).unwrap();
    // The device image is a span of its input, not a copy.
    assert!(written.spans.iter().any(|s| s.source == 2 && s.len == 5000));
    let fat = written.to_vec(&[&h, HOST_MARKER, &dev]).unwrap();
    assert_eq!(fat.len() as u64, written.layout.size);
    let want = sections(&h);
    let got = sections(&fat);
    assert_eq!(got[..want.len()], want[..]);
    assert_eq!(got.len(), want.len() + 2);
    assert_eq!(
        got[want.len()].0,
        format!("__CLANG_OFFLOAD_BUNDLE__{host_id}")
    );
    assert_eq!(got[want.len() + 1].1, dev);
    assert_eq!(symbols_and_relocations(&fat), symbols_and_relocations(&h));
    // The added sections: read-only, removed at link time, alignment 1.
    let first_added = 20 + 40 * want.len();
    for k in 0..2 {
        let flags = u32_at(&fat, first_added + 40 * k + 36).unwrap();
        assert_eq!(flags, 0x4000_0800);
    }
    let found = entries(&fat).unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].data, HOST_MARKER);
    assert_eq!(found[1].id, DEVICE.as_bytes());
    assert_eq!(found[1].data, &dev[..]);
    assert_eq!(entry_ids(&fat).unwrap().len(), 2);
    // Stripping the bundle gives what the rewrite makes of the host alone.
    let stripped = strip(&fat).unwrap().to_vec(&[&fat]).unwrap();
    let plain = strip(&h).unwrap().to_vec(&[&h]).unwrap();
    assert_eq!(stripped, plain);
    assert_eq!(sections(&stripped), want);
    assert_eq!(
        symbols_and_relocations(&stripped),
        symbols_and_relocations(&h)
    );
    // The rewrite is stable: a second pass changes nothing.
    assert_eq!(strip(&plain).unwrap().to_vec(&[&plain]).unwrap(), plain);
}

#[test]
fn bundle_and_strip_round_trip() {
    round_trip(Architecture::X86_64, "x86_64-pc-windows-msvc");
    round_trip(Architecture::Aarch64, "aarch64-pc-windows-msvc");
    round_trip(Architecture::I386, "i386-pc-windows-msvc");
}

/// `data` as a `/bigobj` file: the 56-byte header, 20-byte symbol records.
fn to_bigobj(data: &[u8]) -> Vec<u8> {
    let n = u32::from(u16_at(data, 2).unwrap());
    let symtab = u32_at(data, 8).unwrap();
    let nsyms = u32_at(data, 12).unwrap();
    let shift = 36u32;
    let mut out = vec![0u8; 56];
    out[2..4].copy_from_slice(&[0xff, 0xff]);
    out[4] = 2;
    out[6..8].copy_from_slice(&data[0..2]);
    out[8..12].copy_from_slice(&data[4..8]);
    out[12..28].copy_from_slice(&super::read::BIGOBJ_MAGIC);
    out[44..48].copy_from_slice(&n.to_le_bytes());
    out[48..52].copy_from_slice(&(symtab + shift).to_le_bytes());
    out[52..56].copy_from_slice(&nsyms.to_le_bytes());
    let (n, symtab, nsyms) = (n as usize, symtab as usize, nsyms as usize);
    for k in 0..n {
        let mut h = data[20 + 40 * k..60 + 40 * k].to_vec();
        for field in [20, 24] {
            let v = u32_at(&h, field).unwrap();
            if v != 0 {
                h[field..field + 4].copy_from_slice(&(v + shift).to_le_bytes());
            }
        }
        out.extend_from_slice(&h);
    }
    out.extend_from_slice(&data[20 + 40 * n..symtab]);
    let mut i = 0;
    while i < nsyms {
        let r = &data[symtab + 18 * i..symtab + 18 * (i + 1)];
        // The special section numbers (-1, -2) are negative in both.
        let number = i32::from(i16::from_le_bytes([r[12], r[13]]));
        out.extend_from_slice(&r[..12]);
        out.extend_from_slice(&number.to_le_bytes());
        out.extend_from_slice(&r[14..18]);
        for a in 0..usize::from(r[17]) {
            let at = symtab + 18 * (i + 1 + a);
            out.extend_from_slice(&data[at..at + 18]);
            out.extend_from_slice(&[0, 0]);
        }
        i += 1 + usize::from(r[17]);
    }
    out.extend_from_slice(&data[symtab + 18 * nsyms..]);
    out
}

#[test]
fn a_bigobj_input_with_few_sections_is_written_as_a_regular_object() {
    let h = host(Architecture::X86_64);
    let big = to_bigobj(&h);
    assert_eq!(sections(&big), sections(&h));
    let add = [NewSection {
        id: DEVICE,
        data: b"DEV",
    }];
    let from_big = bundle(&big, &add).unwrap().to_vec(&[&big, b"DEV"]).unwrap();
    let from_regular = bundle(&h, &add).unwrap().to_vec(&[&h, b"DEV"]).unwrap();
    assert_eq!(from_big, from_regular);
}

/// The offset of the `/bigobj` symbol record named `name` (8 bytes or
/// fewer) in `big`.
fn bigobj_symbol(big: &[u8], name: &[u8]) -> usize {
    let (symtab, count) = (u32_at(big, 48).unwrap(), u32_at(big, 52).unwrap());
    let mut i = 0;
    while i < count {
        let at = (symtab + 20 * i) as usize;
        if &big[at..at + name.len()] == name && big[at + name.len()] == 0 {
            return at;
        }
        i += 1 + u32::from(big[at + 19]);
    }
    panic!("no symbol {name:?}");
}

#[test]
fn a_bigobj_input_keeps_special_section_numbers_a_regular_object_cannot_hold() {
    let mut big = to_bigobj(&host(Architecture::X86_64));
    let g = bigobj_symbol(&big, b"g");
    // 0xfffff004: -4092, a special number (`IMAGE_SYM_*` are -1 and -2)
    // that 16 bits would read as section 61444.
    big[g + 12..g + 16].copy_from_slice(&(-4092i32).to_le_bytes());
    let add = [NewSection {
        id: DEVICE,
        data: b"DEV",
    }];
    let out = bundle(&big, &add).unwrap().to_vec(&[&big, b"DEV"]).unwrap();
    assert_eq!(&out[..4], &[0, 0, 0xff, 0xff], "written as /bigobj");
    let g = bigobj_symbol(&out, b"g");
    assert_eq!(
        i32::from_le_bytes(out[g + 12..g + 16].try_into().unwrap()),
        -4092
    );
    // -1 (`IMAGE_SYM_ABSOLUTE`) fits 16 bits: a regular object.
    let mut big = to_bigobj(&host(Architecture::X86_64));
    let g = bigobj_symbol(&big, b"g");
    big[g + 12..g + 16].copy_from_slice(&(-1i32).to_le_bytes());
    let out = bundle(&big, &add).unwrap().to_vec(&[&big, b"DEV"]).unwrap();
    assert_ne!(&out[2..4], &[0xff, 0xff]);
}

#[test]
fn long_section_names_are_encoded_as_llvm_does() {
    assert_eq!(&long_section_name(4).unwrap(), b"/4\0\0\0\0\0\0");
    assert_eq!(&long_section_name(9_999_999).unwrap(), b"/9999999");
    // 10,000,000 = 38 * 64^3 + 9 * 64^2 + 26 * 64 + 0 in base 64.
    assert_eq!(&long_section_name(10_000_000).unwrap(), b"//AAmJaA");
    assert_eq!(&long_section_name((1 << 36) - 1).unwrap(), b"////////");
    assert_eq!(long_section_name(1 << 36), None);
}

#[test]
fn jam_crc_is_crc32_without_the_final_inversion() {
    // zlib's CRC-32 of the same bytes seeded so that its pre-inversion
    // starts from 0, inverted back: ~crc32(data, 0xffffffff).
    assert_eq!(jam_crc(b"123456789"), 0x2dfd_2d88);
    assert_eq!(jam_crc(b""), 0);
}

/// The error bundling `data` gives.
fn bundle_error(data: &[u8]) -> String {
    let add = [NewSection {
        id: DEVICE,
        data: b"DEV",
    }];
    bundle(data, &add).unwrap_err().to_string()
}

#[test]
fn hostile_headers_and_tables_are_clear_errors() {
    let h = host(Architecture::X86_64);
    // Section table past the end of the file.
    let mut d = h.clone();
    d[2..4].copy_from_slice(&5000u16.to_le_bytes());
    let e = bundle_error(&d);
    assert!(
        e.contains("section table") && e.contains("past the end"),
        "{e}"
    );
    // A symbol table past the end.
    let mut d = h.clone();
    d[8..12].copy_from_slice(&0x00ff_ffffu32.to_le_bytes());
    let e = bundle_error(&d);
    assert!(e.contains("symbol table"), "{e}");
    // Symbols but no symbol table.
    let mut d = h.clone();
    d[8..12].fill(0);
    let e = bundle_error(&d);
    assert!(e.contains("symbol table missing"), "{e}");
    // A long section name whose string table offset is past its end.
    let mut d = h.clone();
    let at = (0..usize::from(u16_at(&h, 2).unwrap()))
        .map(|k| 20 + 40 * k)
        .find(|&at| h[at] == b'/')
        .unwrap();
    d[at..at + 8].copy_from_slice(b"/9999999");
    let e = bundle_error(&d);
    assert!(e.contains("string table offset 9999999"), "{e}");
    d[at..at + 8].copy_from_slice(b"/12x\0\0\0\0");
    let e = bundle_error(&d);
    assert!(e.contains("invalid name '/12x'"), "{e}");
    // A string table without its final null byte.
    let mut d = h.clone();
    *d.last_mut().unwrap() = b'x';
    let e = bundle_error(&d);
    assert!(e.contains("null terminator"), "{e}");
    // Section contents past the end.
    let mut d = h.clone();
    d[20 + 16..20 + 20].copy_from_slice(&0x10_0000u32.to_le_bytes());
    let e = bundle_error(&d);
    assert!(e.contains("contents of section '.text'"), "{e}");
    // A relocation naming a symbol past the table.
    let mut d = h.clone();
    let text_relocs = u32_at(&h, 20 + 24).unwrap() as usize;
    d[text_relocs + 4..text_relocs + 8].copy_from_slice(&1000u32.to_le_bytes());
    let e = bundle_error(&d);
    assert!(
        e.contains("relocation symbol index 1000 is out of range"),
        "{e}"
    );
    // Too short for a header.
    let e = super::check(&h[..10]).unwrap_err().to_string();
    assert!(e.contains("too few"), "{e}");
}

#[test]
fn truncations_and_flips_never_panic() {
    let h = host(Architecture::Aarch64);
    let fat = bundle(
        &h,
        &[NewSection {
            id: DEVICE,
            data: b"DEV",
        }],
    )
    .unwrap()
    .to_vec(&[&h, b"DEV"])
    .unwrap();
    for cut in 0..fat.len() {
        let d = &fat[..cut];
        let _ = entries(d);
        let _ = strip(d).map(|w| w.to_vec(&[d]));
        let _ = bundle(d, &[]).map(|w| w.to_vec(&[d]));
    }
    for i in 0..fat.len() {
        for flip in [0xff, 0x80, 0x01] {
            let mut d = fat.clone();
            d[i] ^= flip;
            let _ = entries(&d);
            let _ = strip(&d).map(|w| w.to_vec(&[&d]));
        }
    }
}

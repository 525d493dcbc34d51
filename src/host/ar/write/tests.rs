//! Tests of the archive writer: layouts against what LLVM 22 writes.
use super::*;
use object::read::archive::ArchiveFile;
use object::write::{Object, StandardSection, Symbol, SymbolSection};
use object::{Architecture, BinaryFormat, Endianness, SymbolFlags, SymbolKind, SymbolScope};

fn write(members: &[Member<'_>], symtab: bool) -> Vec<u8> {
    write_with(members, symtab, SYM64_THRESHOLD)
}

fn write_with(members: &[Member<'_>], symtab: bool, threshold: u64) -> Vec<u8> {
    let layout = layout_gnu_with_threshold(members, symtab, threshold).unwrap();
    let images: Vec<&[u8]> = members.iter().map(|m| m.data).collect();
    let mut out = Vec::new();
    layout.write_to(&mut out, &images).unwrap();
    assert_eq!(out.len() as u64, layout.size);
    out
}

/// A member without a name is refused: written as `/`, it would read
/// back as the symbol table (a fuzz finding: a hostile archive's member
/// whose name reads as empty, written again).
#[test]
fn empty_member_name_is_refused() {
    let e = layout_gnu(&[member("", b"data")], false).unwrap_err();
    assert!(
        e.to_string().contains("archive member 0 has an empty name"),
        "{e}"
    );
    assert!(layout_gnu(&[member("a", b"data"), member("", b"")], true).is_err());
}

fn member<'a>(name: &str, data: &'a [u8]) -> Member<'a> {
    Member {
        name: name.into(),
        data,
    }
}

/// A relocatable x86-64 ELF object defining `defined`, a weak `weak`, a
/// hidden `hidden`, a local, and referring to `undef`.
fn elf_object() -> Vec<u8> {
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let text = obj.section_id(StandardSection::Text);
    obj.append_section_data(text, &[0xc3; 4], 1);
    let mut add = |name: &str, scope, weak, section| {
        obj.add_symbol(Symbol {
            name: name.as_bytes().to_vec(),
            value: 0,
            size: 0,
            kind: SymbolKind::Text,
            scope,
            weak,
            section,
            flags: SymbolFlags::None,
        });
    };
    add(
        "local",
        SymbolScope::Compilation,
        false,
        SymbolSection::Section(text),
    );
    add(
        "defined",
        SymbolScope::Dynamic,
        false,
        SymbolSection::Section(text),
    );
    add(
        "weak",
        SymbolScope::Dynamic,
        true,
        SymbolSection::Section(text),
    );
    add(
        "hidden",
        SymbolScope::Linkage,
        false,
        SymbolSection::Section(text),
    );
    add(
        "undef",
        SymbolScope::Dynamic,
        false,
        SymbolSection::Undefined,
    );
    obj.write().unwrap()
}

/// Checks members, sizes and contents with object's archive reader.
fn check_members(bytes: &[u8], members: &[Member<'_>]) {
    let ar = ArchiveFile::parse(bytes).unwrap();
    // Without either table object cannot tell GNU from BSD.
    use object::read::archive::ArchiveKind as K;
    assert!(
        matches!(ar.kind(), K::Gnu | K::Gnu64 | K::Unknown),
        "{:?}",
        ar.kind()
    );
    let got: Vec<_> = ar.members().map(|m| m.unwrap()).collect();
    assert_eq!(got.len(), members.len());
    for (g, m) in got.iter().zip(members) {
        assert_eq!(g.name(), m.name.as_bytes());
        assert_eq!(g.size(), m.data.len() as u64);
        assert_eq!(g.data(bytes).unwrap(), m.data);
        assert_eq!(g.date(), Some(0));
        assert_eq!(g.uid(), Some(0));
        assert_eq!(g.gid(), Some(0));
        assert_eq!(g.mode(), Some(0o644));
    }
}

/// The symbol table as (name, member offset) pairs.
fn armap(bytes: &[u8]) -> Vec<(Vec<u8>, u64)> {
    let ar = ArchiveFile::parse(bytes).unwrap();
    let Some(syms) = ar.symbols().unwrap() else {
        return Vec::new();
    };
    syms.map(|s| {
        let s = s.unwrap();
        (s.name().to_vec(), s.offset().0)
    })
    .collect()
}

fn member_offsets(bytes: &[u8]) -> Vec<u64> {
    let ar = ArchiveFile::parse(bytes).unwrap();
    // A member's data starts right after its 60-byte header.
    ar.members()
        .map(|m| m.unwrap().file_range().0 - 60)
        .collect()
}

#[test]
fn empty_archive_is_the_magic() {
    assert_eq!(write(&[], true), b"!<arch>\n");
    assert_eq!(write(&[], false), b"!<arch>\n");
}

#[test]
fn raw_members_have_no_symbol_table() {
    let members = [member("a.bin", b"hello"), member("b.bin", b"xy")];
    let bytes = write(&members, true);
    #[rustfmt::skip]
    let expected: &[u8] = b"!<arch>\n\
        a.bin/          0           0     0     644     5         `\n\
        hello\n\
        b.bin/          0           0     0     644     2         `\n\
        xy";
    assert_eq!(bytes, expected);
    check_members(&bytes, &members);
    assert!(armap(&bytes).is_empty());
}

#[test]
fn elf_symbols_in_symtab_order() {
    let obj = elf_object();
    let syms = member_symbols(&obj).unwrap().unwrap();
    assert_eq!(syms, [&b"defined"[..], b"weak", b"hidden"]);
}

#[test]
fn symbol_table_points_at_member_headers() {
    let obj = elf_object();
    let members = [
        member("raw.bin", b"odd"),
        member("x.o", &obj),
        member("y.o", &obj),
    ];
    let bytes = write(&members, true);
    check_members(&bytes, &members);
    let offsets = member_offsets(&bytes);
    let expected: Vec<(Vec<u8>, u64)> = [1, 2]
        .iter()
        .flat_map(|&i| ["defined", "weak", "hidden"].map(|n| (n.as_bytes().to_vec(), offsets[i])))
        .collect();
    assert_eq!(armap(&bytes), expected);
    // Count 6, six offsets, names, padded to even.
    let body = 4 + 6 * 4 + 2 * "defined\0weak\0hidden\0".len();
    assert_eq!(&bytes[8..24], b"/               ");
    assert_eq!(&bytes[56..66], format!("{:<10}", body).as_bytes());
}

#[test]
fn symtab_flag_off_leaves_it_out() {
    let obj = elf_object();
    let members = [member("x.o", &obj)];
    let bytes = write(&members, false);
    assert!(bytes[8..].starts_with(b"x.o/ "));
}

#[test]
fn object_without_symbols_gets_an_empty_table() {
    let obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little)
        .write()
        .unwrap();
    assert_eq!(member_symbols(&obj).unwrap(), Some(vec![]));
    let bytes = write(&[member("e.o", &obj)], true);
    #[rustfmt::skip]
    let expected: &[u8] = b"!<arch>\n\
        /               0           0     0     0       8         `\n\
        \0\0\0\0\0\0\0\0\
        e.o/            0           0     0     644     ";
    assert!(bytes.starts_with(expected));
}

#[test]
fn long_and_slashed_names_share_one_table() {
    let members = [
        member("fifteen_chars_x", b"a"),
        member("sixteen_chars_xy", b"bb"),
        member("dir/x", b"c"),
        member("sixteen_chars_xy", b"dd"),
    ];
    let bytes = write(&members, true);
    check_members(&bytes, &members);
    #[rustfmt::skip]
    let expected: &[u8] = b"!<arch>\n\
        //                                              26        `\n\
        sixteen_chars_xy/\ndir/x/\n\n\
        fifteen_chars_x/0           0     0     644     1         `\n\
        a\n\
        /0              0           0     0     644     2         `\n\
        bb\
        /18             0           0     0     644     1         `\n\
        c\n\
        /0              0           0     0     644     2         `\n\
        dd";
    assert_eq!(bytes, expected);
}

#[test]
fn odd_long_name_table_is_padded() {
    let members = [member("./sub/p.bin", b"x")];
    let bytes = write(&members, false);
    assert!(bytes.starts_with(
        b"!<arch>\n//                                              14        `\n./sub/p.bin/\n\n/0 "
    ));
    check_members(&bytes, &members);
}

#[test]
fn same_short_name_twice() {
    let members = [member("p.bin", b"one"), member("p.bin", b"two!")];
    let bytes = write(&members, true);
    check_members(&bytes, &members);
}

#[test]
fn layout_refers_to_members_by_index() {
    let members = [member("a", b"abc"), member("b", b"de")];
    let layout = layout_gnu(&members, true).unwrap();
    let images = layout.image_indices();
    assert_eq!(images, [0, 1]);
    assert!(layout.pieces.iter().all(|p| match p {
        Piece::Bytes(b) => !b.windows(3).any(|w| w == b"abc"),
        _ => true,
    }));
}

#[test]
fn sym64_when_the_last_header_passes_the_threshold() {
    let obj = elf_object();
    let members = [member("x.o", &obj), member("raw", b"zz")];
    let small = write(&members, true);
    // Magic, 32-bit table header and body, then x.o: the last header's
    // offset with a 32-bit table.
    let body = 4 + 3 * 4 + "defined\0weak\0hidden\0".len() as u64;
    let last = 8 + 60 + body.next_multiple_of(2) + 60 + (obj.len() as u64).next_multiple_of(2);
    assert_eq!(member_offsets(&small)[1], last);
    assert_eq!(write_with(&members, true, last + 1), small);
    let big = write_with(&members, true, last);
    assert_eq!(&big[8..24], b"/SYM64/         ");
    check_members(&big, &members);
    let offsets = member_offsets(&big);
    let expected: Vec<_> = ["defined", "weak", "hidden"]
        .map(|n| (n.as_bytes().to_vec(), offsets[0]))
        .into();
    assert_eq!(armap(&big), expected);
    // Count and offsets are 8-byte big-endian words.
    assert_eq!(big[68..76], 3u64.to_be_bytes());
    assert_eq!(big[76..84], offsets[0].to_be_bytes());
}

#[test]
fn classifies_like_identify_magic() {
    assert_eq!(llvm_format(b"\x7fELF"), Format::Raw);
    assert_eq!(
        llvm_format(&[b"\x7fELF".as_slice(), &[0; 13]].concat()),
        Format::Raw
    );
    assert_eq!(
        llvm_format(&[b"\x7fELF".as_slice(), &[0; 14]].concat()),
        Format::Elf
    );
    assert_eq!(llvm_format(b"\x10\xff\x10\xad...."), Format::Raw);
    assert_eq!(llvm_format(b"\x03\x02\x23\x07"), Format::Raw);
    assert_eq!(llvm_format(b"\x64\x86\0"), Format::Raw);
    assert_eq!(llvm_format(b"\x64\x86\0\0"), Format::Coff);
    assert_eq!(llvm_format(b"\0\0\0\0"), Format::Coff);
    assert_eq!(llvm_format(b"\x4c\x02GG"), Format::Coff);
    assert_eq!(llvm_format(b"\x90\x01GG"), Format::Raw);
    assert_eq!(llvm_format(b"BC\xc0\xde"), Format::Bitcode);
    assert_eq!(
        llvm_format(b"\xfe\xed\xfa\xceGGGGGGGGGGGGGGGGGGGGGGGGGG"),
        Format::Raw
    );
    let mut macho = b"\xfe\xed\xfa\xce\0\0\0\x07\0\0\0\x03\0\0\0\x01".to_vec();
    macho.resize(28, 0);
    assert_eq!(llvm_format(&macho), Format::Other("Mach-O"));
}

#[test]
fn refuses_objects_it_cannot_index() {
    let members = [member("w.o", b"\0asm\x01\0\0\0")];
    assert!(layout_gnu(&members, true).is_err());
    // Without a symbol table the format does not matter.
    assert!(layout_gnu(&members, false).is_ok());
    // Truncated ELF fails, as in LLVM.
    assert!(
        layout_gnu(
            &[member(
                "e",
                &[b"\x7fELF\x02\x01\x01".as_slice(), &[0; 20]].concat()
            )],
            true
        )
        .is_err()
    );
    assert!(layout_gnu(&[member("b.bc", b"BC\xc0\xde\0\0\0\0")], true).is_err());
}

#[test]
fn never_panics_on_short_or_odd_input() {
    let obj = elf_object();
    for n in 0..obj.len().min(400) {
        let _ = member_symbols(&obj[..n]);
        let mut bc = b"BC\xc0\xde".to_vec();
        bc.extend(obj.iter().take(n).copied());
        let _ = member_symbols(&bc);
        let mut w = b"\xde\xc0\x17\x0b".to_vec();
        w.extend(obj.iter().take(n).copied());
        let _ = member_symbols(&w);
    }
}

/// A COFF object with a defined global, a long-named global, a static and
/// an undefined symbol.
fn coff_object() -> Vec<u8> {
    use object::write::{Object as WObject, StandardSection, Symbol, SymbolSection};
    use object::{Architecture, BinaryFormat, SymbolFlags, SymbolKind, SymbolScope};
    let mut o = WObject::new(BinaryFormat::Coff, Architecture::X86_64, Endianness::Little);
    let text = o.section_id(StandardSection::Text);
    o.append_section_data(text, &[0xc3; 8], 4);
    for (name, scope, section) in [
        (
            &b"g"[..],
            SymbolScope::Linkage,
            SymbolSection::Section(text),
        ),
        (
            b"a_global_with_a_long_name",
            SymbolScope::Dynamic,
            SymbolSection::Section(text),
        ),
        (
            b"local",
            SymbolScope::Compilation,
            SymbolSection::Section(text),
        ),
        (
            b"undefined_one",
            SymbolScope::Linkage,
            SymbolSection::Undefined,
        ),
    ] {
        o.add_symbol(Symbol {
            name: name.to_vec(),
            value: 0,
            size: 0,
            kind: SymbolKind::Text,
            scope,
            weak: false,
            section,
            flags: SymbolFlags::None,
        });
    }
    o.write().unwrap()
}

#[test]
fn coff_members_list_their_defined_globals() {
    let obj = coff_object();
    assert_eq!(llvm_format(&obj), Format::Coff);
    assert_eq!(
        member_symbols(&obj).unwrap().unwrap(),
        [&b"g"[..], b"a_global_with_a_long_name"]
    );
    for n in 0..obj.len() {
        let _ = member_symbols(&obj[..n]);
    }
    for i in 0..obj.len() {
        let mut d = obj.clone();
        d[i] ^= 0xff;
        let _ = member_symbols(&d);
    }
}

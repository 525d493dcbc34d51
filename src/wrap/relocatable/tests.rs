//! Unit tests of the relocatable writer: llc's order of sections, symbols
//! and names, and the file alignment of an image section.

use object::read::elf::{ElfFile64, FileHeader as _, SectionHeader as _};
use object::{LittleEndian as LE, Object as _, ObjectSection as _, ObjectSymbol as _};

use super::*;
use crate::layout::{Layout, Piece};

fn sample(file_align: u64) -> Relocatable {
    let mut o = Relocatable::new(elf::EM_X86_64, 0, Endianness::Little);
    let text = o.add_section(b".text", elf::SHT_PROGBITS, elf::SHF_ALLOC, 16);
    o.set_bytes(text, vec![0xc3; 5]);
    let data = o.add_section(b"data", elf::SHT_PROGBITS, elf::SHF_ALLOC, 8);
    o.set_images(data, vec![(0, 3), (8, 5)], file_align);
    o.add_file_symbol(b"f.c");
    let sec = o.section_symbol(data);
    assert_eq!(
        o.section_symbol(data),
        sec,
        "one section symbol per section"
    );
    let (info, other) = (
        elf::SymbolInfo::new(elf::STB_LOCAL, elf::STT_FUNC),
        elf::SymbolOther::from(elf::STV_DEFAULT),
    );
    let f = o.add_symbol(b"f", info, other, Place::Section(text), 0, 0);
    o.set_extent(f, 0, 5);
    let g = o.add_symbol(
        b"g",
        elf::SymbolInfo::new(elf::STB_GLOBAL, elf::STT_NOTYPE),
        other,
        Place::Undefined,
        0,
        0,
    );
    o.add_reloc(
        text,
        Reloc {
            offset: 1,
            symbol: g,
            r_type: elf::R_X86_64_PLT32,
            addend: -4,
        },
    );
    o.add_reloc(
        text,
        Reloc {
            offset: 2,
            symbol: sec,
            r_type: elf::R_X86_64_PC32,
            addend: 8,
        },
    );
    o
}

fn bytes(layout: &Layout, images: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    layout.write_to(&mut out, images).unwrap();
    assert_eq!(out.len() as u64, layout.size);
    out
}

#[test]
fn sections_symbols_and_names_in_llc_order() {
    let layout = sample(8).write().unwrap();
    let out = bytes(&layout, &[b"abc", b"defgh"]);
    let f = ElfFile64::<LE>::parse(&*out).unwrap();
    assert_eq!(f.elf_header().e_shstrndx(LE), elf::SymbolSection::new(1));
    let names: Vec<_> = f
        .sections()
        .map(|s| s.name().unwrap().to_string())
        .collect();
    assert_eq!(names, [".strtab", ".text", ".rela.text", "data", ".symtab"]);
    // One table: ".text" is the tail of ".rela.text".
    let sh = |i: usize| {
        f.elf_section_table()
            .section(object::SectionIndex(i))
            .unwrap()
    };
    assert_eq!(sh(2).sh_name(LE), sh(3).sh_name(LE) + 5);
    let rela = sh(3);
    assert_eq!((rela.sh_link(LE), rela.sh_info(LE)), (5, 2));
    let symtab = sh(5);
    assert_eq!((symtab.sh_link(LE), symtab.sh_info(LE)), (1, 4));
    // File order: contents, .symtab, .rela, .strtab, section headers.
    let at = |i: usize| sh(i).sh_offset(LE);
    assert!(at(2) < at(4) && at(4) < at(5) && at(5) < at(3) && at(3) < at(1));
    assert_eq!(f.elf_header().e_shoff(LE) % 8, 0);
    assert!(f.elf_header().e_shoff(LE) >= at(1) + sh(1).sh_size(LE));
    // The images, with the gap between them zeroed.
    let data = f.section_by_name("data").unwrap();
    assert_eq!(data.data().unwrap(), b"abc\0\0\0\0\0defgh");
    let syms: Vec<_> = f
        .symbols()
        .map(|s| (s.name().unwrap().to_string(), s.index().0, s.size()))
        .collect();
    assert_eq!(syms[0], ("f.c".to_string(), 1, 0));
    assert_eq!(syms[2], ("f".to_string(), 3, 5));
    assert_eq!(syms[3], ("g".to_string(), 4, 0));
    let relocs: Vec<_> = f
        .section_by_name(".text")
        .unwrap()
        .relocations()
        .map(|(off, r)| (off, r.target(), r.addend()))
        .collect();
    assert_eq!(relocs.len(), 2);
    assert_eq!(
        relocs[0],
        (
            1,
            object::RelocationTarget::Symbol(object::SymbolIndex(4)),
            -4
        )
    );
    assert_eq!(
        relocs[1],
        (
            2,
            object::RelocationTarget::Symbol(object::SymbolIndex(2)),
            8
        )
    );
    // The images are pieces, not bytes.
    let images = layout.image_indices();
    assert_eq!(images, [0, 1]);
}

#[test]
fn a_file_alignment_moves_only_the_image_section() {
    let near = bytes(&sample(8).write().unwrap(), &[b"abc", b"defgh"]);
    let far_layout = sample(1 << 16).write().unwrap();
    let far = bytes(&far_layout, &[b"abc", b"defgh"]);
    let a = ElfFile64::<LE>::parse(&*near).unwrap();
    let b = ElfFile64::<LE>::parse(&*far).unwrap();
    let (sa, sb) = (
        a.section_by_name("data").unwrap(),
        b.section_by_name("data").unwrap(),
    );
    assert_eq!(sb.file_range().unwrap().0, 1 << 16);
    assert_eq!((sa.align(), sb.align()), (8, 8));
    assert_eq!(sa.data().unwrap(), sb.data().unwrap());
    // The padding is one zero piece, not 64 KiB of built bytes.
    assert!(
        far_layout
            .pieces
            .iter()
            .any(|p| matches!(p, Piece::Zeros(n) if *n > 60000))
    );
}

#[test]
fn a_local_symbol_added_late_is_listed_with_the_locals() {
    let mut o = sample(8);
    let other = elf::SymbolOther::from(elf::STV_DEFAULT);
    let late = o.add_symbol(
        b"late",
        elf::SymbolInfo::new(elf::STB_LOCAL, elf::STT_OBJECT),
        other,
        Place::Absolute,
        0,
        0,
    );
    let text = SectionId(0);
    o.add_reloc(
        text,
        Reloc {
            offset: 3,
            symbol: late,
            r_type: elf::R_X86_64_PC32,
            addend: 0,
        },
    );
    let out = bytes(&o.write().unwrap(), &[b"abc", b"defgh"]);
    let f = ElfFile64::<LE>::parse(&*out).unwrap();
    let names: Vec<_> = f.symbols().map(|s| s.name().unwrap().to_string()).collect();
    assert_eq!(names, ["f.c", "", "f", "late", "g"]);
    let symtab = f
        .elf_section_table()
        .section(object::SectionIndex(5))
        .unwrap();
    assert_eq!(symtab.sh_info(LE), 5, "first global");
    let targets: Vec<_> = f
        .section_by_name(".text")
        .unwrap()
        .relocations()
        .map(|(_, r)| r.target())
        .collect();
    assert_eq!(
        targets,
        [5, 2, 4].map(|i| object::RelocationTarget::Symbol(object::SymbolIndex(i)))
    );
}

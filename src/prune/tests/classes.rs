//! Shrinking reads a linked file in its own class and byte order (issue
//! #42): the small library of [`super::linked`], written here by
//! `object`'s ELF encoder as a 64-bit or 32-bit, little- or big-endian
//! file, has its headers read back as they were written, whatever the
//! class and order. Files of a machine, class or byte order that
//! shrinking does not know are refused for that reason, after their
//! headers are read, and pruned in place. In the 32-bit files it knows,
//! relocations, the pointers they relocate and symbols move with the
//! bundle they point at, as in 64-bit ones ([`referring_library`]).

use object::elf;
use object::pod::bytes_of;
use object::read::elf::{ProgramHeader as _, Rel as _, Rela as _, SectionHeader as _, Sym as _};
use object::write::elf::{
    Encoder, FileHeader, FileHeaderLayout, ProgramHeader, Rel, SectionHeader, Sym,
};
use object::{Endian as _, Endianness, U32, U64};

use super::linked::{AT, hip_bundle, prune};
use crate::scan;

/// A library written by `object`'s encoder.
struct Library {
    bytes: Vec<u8>,
    /// The headers it was written with.
    phdrs: Vec<ProgramHeader>,
    shdrs: Vec<SectionHeader>,
}

/// A linked shared library for `machine`, of class `is_64` and byte order
/// `endian`, laid out as [`super::linked::library`] lays out its own: the
/// ELF header, one program header (a read-only load segment from the
/// file's start to `fatbin`'s end, at address 0), `fatbin` in
/// `.hip_fatbin` at 0x1000, then `.shstrtab` and the section header table.
fn library(endian: Endianness, is_64: bool, machine: elf::Machine, fatbin: &[u8]) -> Library {
    let enc = Encoder::new(endian, is_64, machine);
    let names = b"\0.hip_fatbin\0.shstrtab\0";
    let end = AT + fatbin.len();
    let shoff = (end + names.len()).next_multiple_of(8);
    let phdrs = vec![ProgramHeader {
        p_type: elf::PT_LOAD,
        p_flags: elf::PF_R,
        p_offset: 0,
        p_vaddr: 0,
        p_paddr: 0,
        p_filesz: end as u64,
        p_memsz: end as u64,
        p_align: 0x1000,
    }];
    let shdrs = vec![
        SectionHeader::default(),
        SectionHeader {
            sh_name: 1,
            sh_type: elf::SHT_PROGBITS,
            sh_flags: elf::SHF_ALLOC,
            sh_addr: AT as u64,
            sh_offset: AT as u64,
            sh_size: fatbin.len() as u64,
            sh_addralign: 4096,
            ..SectionHeader::default()
        },
        SectionHeader {
            sh_name: 13,
            sh_type: elf::SHT_STRTAB,
            sh_offset: end as u64,
            sh_size: names.len() as u64,
            sh_addralign: 1,
            ..SectionHeader::default()
        },
    ];
    let header = FileHeader {
        e_type: elf::ET_DYN,
        e_machine: machine,
        ..FileHeader::default()
    };
    let layout = FileHeaderLayout {
        e_phoff: enc.file_header_size(),
        segment_num: 1,
        e_shoff: shoff as u64,
        section_num: 3,
        shstrtab_index: 2,
    };
    let mut bytes = Vec::new();
    enc.file_header(&mut bytes, &header, &layout).unwrap();
    enc.program_header(&mut bytes, &phdrs[0]);
    bytes.resize(AT, 0);
    bytes.extend_from_slice(fatbin);
    bytes.extend_from_slice(names);
    bytes.resize(shoff, 0);
    for s in &shdrs {
        enc.section_header(&mut bytes, s);
    }
    Library {
        bytes,
        phdrs,
        shdrs,
    }
}

/// Each class and byte order, with a machine of its kind, and x32
/// (x86-64 in 32-bit files).
const KINDS: [(Endianness, bool, elf::Machine); 5] = [
    (Endianness::Little, true, elf::EM_X86_64),
    (Endianness::Little, false, elf::EM_386),
    (Endianness::Big, true, elf::EM_PPC64),
    (Endianness::Big, false, elf::EM_PPC),
    (Endianness::Little, false, elf::EM_X86_64),
];

/// What shrinking reads of each library is what it was written with.
#[test]
fn headers_are_read_in_the_files_class_and_byte_order() {
    for (endian, is_64, machine) in KINDS {
        let lib = library(endian, is_64, machine, &hip_bundle(3 * 4096));
        let (phdrs, shdrs) = crate::host::linked::headers(&lib.bytes).unwrap();
        let what = format!("{endian:?}, 64-bit {is_64}");
        assert_eq!(format!("{phdrs:?}"), format!("{:?}", lib.phdrs), "{what}");
        assert_eq!(format!("{shdrs:?}"), format!("{:?}", lib.shdrs), "{what}");
    }
}

/// The little-endian x86-64 and i386 libraries shrink; the others are
/// refused, each saying why (its byte order, or its machine and class, as
/// its header gives them), and pruned in place: gfx942 gone, gfx90a there.
#[test]
fn files_of_another_machine_class_or_byte_order_are_refused_saying_why() {
    let big = "big-endian files are not shrunk (the scan does not read their fatbin wrappers; ";
    let says = [
        None,
        None,
        Some(format!("{big}this one: 64-bit, machine 21)")),
        Some(format!("{big}this one: 32-bit, machine 20)")),
        Some(
            "machine 62 in 32-bit files is not shrunk (64-bit x86-64 and AArch64, \
             32-bit i386 and Arm are)"
                .to_string(),
        ),
    ];
    for ((endian, is_64, machine), says) in KINDS.into_iter().zip(says) {
        let f = library(endian, is_64, machine, &hip_bundle(3 * 4096)).bytes;
        let p = prune(&f, false).unwrap();
        assert_eq!(p.not_shrunk, says, "{endian:?}, 64-bit {is_64}");
        let out = p.output.unwrap().to_vec(&[&f]).unwrap();
        if says.is_some() {
            assert_eq!(out.len(), f.len());
        } else {
            assert!(out.len() + 3 * 4096 <= f.len(), "{}", out.len());
        }
        let r = scan::scan(&out, &scan::Options::default());
        let archs: Vec<&str> = r.images.iter().map(|i| i.arch.as_str()).collect();
        assert_eq!(archs, ["", "gfx90a"], "{endian:?}, 64-bit {is_64}");
    }
}

/// A little-endian library for `machine`, of class `is_64`, that refers
/// to the two bundles of `fatbin` (in `.hip_fatbin` at 0x1000, the second
/// at `second` in it): a read-only load segment holds the ELF header, the
/// program headers, `.hip_fatbin` and, after it, `.rela.dyn` (`rela`) or
/// `.rel.dyn` with a relative relocation (type `relative`) of each pointer
/// in `.data.rel.ro`, which a writable load segment on the next page
/// holds; each pointer holds its bundle's address (the addend of a REL);
/// `.symtab` defines `a` and `b` at the bundles. Addresses are file
/// offsets.
fn referring_library(
    is_64: bool,
    machine: elf::Machine,
    (rela, relative): (bool, elf::RelocationType),
    fatbin: &[u8],
    second: u64,
) -> Vec<u8> {
    let endian = Endianness::Little;
    let enc = Encoder::new(endian, is_64, machine);
    let word = enc.address_size();
    let starts = [AT as u64, AT as u64 + second];
    let len = |f: &[u8]| f.len() as u64;
    let pad = |f: &mut Vec<u8>, to: u64| f.resize(usize::try_from(to).unwrap(), 0);
    let mut f = vec![0; AT];
    f.extend_from_slice(fatbin);
    let fatbin_end = len(&f);
    let rel_at = fatbin_end.next_multiple_of(8);
    pad(&mut f, rel_at);
    let data_at = (rel_at + 2 * enc.rel_size(rela)).next_multiple_of(0x1000);
    for (k, start) in (0..).zip(starts) {
        let rel = Rel {
            r_offset: data_at + k * word,
            r_sym: 0,
            r_type: relative,
            r_addend: i64::try_from(start).unwrap(),
        };
        enc.relocation(&mut f, rela, &rel);
    }
    let rel_end = len(&f);
    pad(&mut f, data_at);
    for start in starts {
        if is_64 {
            f.extend_from_slice(bytes_of(&U64::new(endian, start)));
        } else {
            let start = u32::try_from(start).unwrap();
            f.extend_from_slice(bytes_of(&U32::new(endian, start)));
        }
    }
    let data_end = len(&f);
    let symtab_at = data_end.next_multiple_of(8);
    pad(&mut f, symtab_at);
    enc.null_symbol(&mut f);
    for (st_name, start) in [1, 3].into_iter().zip(starts) {
        let sym = Sym {
            section: Some(1),
            st_name,
            st_info: elf::SymbolInfo::new(elf::STB_LOCAL, elf::STT_OBJECT),
            st_other: elf::SymbolOther(0),
            st_shndx: elf::SymbolSection(0),
            st_value: start,
            st_size: 0,
        };
        enc.symbol(&mut f, &sym);
    }
    let strtab_at = len(&f);
    f.extend_from_slice(b"\0a\0b\0");
    let places = Places {
        fatbin_end,
        rel: (rel_at, rel_end),
        data: (data_at, data_end),
        symtab: (symtab_at, strtab_at),
    };
    finish(&enc, machine, rela, &mut f, &places);
    f
}

/// Where [`referring_library`] puts its sections (`[start, end)`).
struct Places {
    fatbin_end: u64,
    rel: (u64, u64),
    data: (u64, u64),
    symtab: (u64, u64),
}

/// `f`, which holds the sections of [`referring_library`] at `places`
/// and `.strtab` at its end, given `.shstrtab`, the section header table,
/// the ELF header and the program headers.
fn finish(
    enc: &Encoder<Endianness>,
    machine: elf::Machine,
    rela: bool,
    f: &mut Vec<u8>,
    places: &Places,
) {
    let len = |f: &[u8]| f.len() as u64;
    let word = enc.address_size();
    let (rel_at, rel_end) = places.rel;
    let (data_at, data_end) = places.data;
    let (symtab_at, strtab_at) = places.symtab;
    let fatbin_end = places.fatbin_end;
    // The section names, and where each starts in `.shstrtab`.
    let rel_name = if rela { ".rela.dyn" } else { ".rel.dyn" };
    let mut names = vec![0];
    let mut name = |n: &str| {
        let at = u32::try_from(names.len()).unwrap();
        names.extend_from_slice(n.as_bytes());
        names.push(0);
        at
    };
    let ids = [
        ".hip_fatbin",
        rel_name,
        ".data.rel.ro",
        ".symtab",
        ".strtab",
        ".shstrtab",
    ]
    .map(&mut name);
    let names_at = len(f);
    f.extend_from_slice(&names);
    let shoff = len(f).next_multiple_of(8);
    f.resize(usize::try_from(shoff).unwrap(), 0);
    let section =
        |k: usize, sh_type, sh_flags: elf::SectionFlags, from: u64, to: u64, align| SectionHeader {
            sh_name: ids[k],
            sh_type,
            sh_flags,
            sh_addr: if sh_flags.contains(elf::SHF_ALLOC) {
                from
            } else {
                0
            },
            sh_offset: from,
            sh_size: to - from,
            sh_addralign: align,
            ..SectionHeader::default()
        };
    let (none, alloc) = (elf::SectionFlags(0), elf::SHF_ALLOC);
    let rel_type = if rela { elf::SHT_RELA } else { elf::SHT_REL };
    let shdrs = [
        SectionHeader::default(),
        section(0, elf::SHT_PROGBITS, alloc, AT as u64, fatbin_end, 4096),
        SectionHeader {
            sh_entsize: enc.rel_size(rela),
            ..section(1, rel_type, alloc, rel_at, rel_end, word)
        },
        section(
            2,
            elf::SHT_PROGBITS,
            alloc | elf::SHF_WRITE,
            data_at,
            data_end,
            word,
        ),
        SectionHeader {
            sh_link: 5,
            sh_info: 1,
            sh_entsize: enc.sym_size(),
            ..section(3, elf::SHT_SYMTAB, none, symtab_at, strtab_at, word)
        },
        section(4, elf::SHT_STRTAB, none, strtab_at, names_at, 1),
        section(
            5,
            elf::SHT_STRTAB,
            none,
            names_at,
            names_at + len(&names),
            1,
        ),
    ];
    for s in &shdrs {
        enc.section_header(f, s);
    }
    let head = head(enc, machine, shoff, places);
    f[..head.len()].copy_from_slice(&head);
}

/// The ELF header of [`referring_library`] (its section header table at
/// `shoff`) and its program headers: a read-only load segment from the
/// file's start to the relocations' end, a writable one for
/// `.data.rel.ro`.
fn head(enc: &Encoder<Endianness>, machine: elf::Machine, shoff: u64, places: &Places) -> Vec<u8> {
    let ((_, rel_end), (data_at, data_end)) = (places.rel, places.data);
    let load = |p_flags, from: u64, to: u64| ProgramHeader {
        p_type: elf::PT_LOAD,
        p_flags,
        p_offset: from,
        p_vaddr: from,
        p_paddr: from,
        p_filesz: to - from,
        p_memsz: to - from,
        p_align: 0x1000,
    };
    let header = FileHeader {
        e_type: elf::ET_DYN,
        e_machine: machine,
        ..FileHeader::default()
    };
    let layout = FileHeaderLayout {
        e_phoff: enc.file_header_size(),
        segment_num: 2,
        e_shoff: shoff,
        section_num: 7,
        shstrtab_index: 6,
    };
    let mut head = Vec::new();
    enc.file_header(&mut head, &header, &layout).unwrap();
    enc.program_header(&mut head, &load(elf::PF_R, 0, rel_end));
    enc.program_header(&mut head, &load(elf::PF_R | elf::PF_W, data_at, data_end));
    head
}

/// What refers to the bundles of the little-endian file `f` of class `H`:
/// the words its relocations relocate, their addends (RELA), and the
/// values of its symbols.
fn references<H: object::read::elf::FileHeader<Endian = Endianness>>(f: &[u8]) -> [Vec<u64>; 3] {
    let h = H::parse(f).unwrap();
    let e = h.endian().unwrap();
    let phdrs = h.program_headers(e, f).unwrap();
    let word_at = |v: u64| {
        let p = phdrs
            .iter()
            .find(|p| {
                let (at, size) = (p.p_vaddr(e).into(), p.p_filesz(e).into());
                at <= v && v < at + size
            })
            .unwrap();
        let at = usize::try_from(v - p.p_vaddr(e).into() + p.p_offset(e).into()).unwrap();
        if H::is_type_64_sized() {
            e.read_u64(f[at..at + 8].try_into().unwrap())
        } else {
            u64::from(e.read_u32(f[at..at + 4].try_into().unwrap()))
        }
    };
    let [mut words, mut addends, mut values] = [vec![], vec![], vec![]];
    for s in h.section_headers(e, f).unwrap() {
        if let Some((rels, _)) = s.rel(e, f).unwrap() {
            words.extend(rels.iter().map(|r| word_at(r.r_offset(e).into())));
        }
        if let Some((relas, _)) = s.rela(e, f).unwrap() {
            for r in relas {
                words.push(word_at(r.r_offset(e).into()));
                addends.push(u64::try_from(r.r_addend(e).into()).unwrap());
            }
        }
        if s.sh_type(e) == elf::SHT_SYMTAB {
            let syms: &[H::Sym] = s.data_as_array(e, f).unwrap();
            values.extend(syms[1..].iter().map(|s| s.st_value(e).into()));
        }
    }
    [words, addends, values]
}

/// In 32-bit i386 and Arm libraries (`SHT_REL`) as in a 64-bit x86-64
/// one (`SHT_RELA`), the relocations, the pointers they relocate and the
/// symbols that pointed at the second bundle point at it where it now
/// lies, packed after the first one pruned.
#[test]
fn references_move_with_their_bundle_in_32_bit_files() {
    let first = hip_bundle(3 * 4096);
    let second = first.len().next_multiple_of(4096);
    let mut fatbin = first.clone();
    fatbin.resize(second, 0);
    fatbin.extend_from_slice(&hip_bundle(2 * 4096));
    let second = second as u64;
    let kinds = [
        (false, elf::EM_386, (false, elf::R_386_RELATIVE)),
        (false, elf::EM_ARM, (false, elf::R_ARM_RELATIVE)),
        (true, elf::EM_X86_64, (true, elf::R_X86_64_RELATIVE)),
    ];
    for (is_64, machine, relocation) in kinds {
        let f = referring_library(is_64, machine, relocation, &fatbin, second);
        let read = if is_64 {
            references::<elf::FileHeader64<Endianness>>
        } else {
            references::<elf::FileHeader32<Endianness>>
        };
        let before = [AT as u64, AT as u64 + second].to_vec();
        let rela = if relocation.0 { before.clone() } else { vec![] };
        assert_eq!(read(&f), [before.clone(), rela, before], "{machine:?}");
        let p = prune(&f, false).unwrap();
        assert_eq!(p.not_shrunk, None, "{machine:?}");
        let out = p.output.unwrap().to_vec(&[&f]).unwrap();
        assert!(
            out.len() + 4 * 4096 <= f.len(),
            "{machine:?}: {}",
            out.len()
        );
        // Both bundles stay in `.hip_fatbin` at 0x1000, the second packed
        // after the first (addresses are still file offsets there).
        let r = scan::scan(&out, &scan::Options::default());
        let after: Vec<u64> = r.containers.iter().filter_map(|c| c.offset).collect();
        assert_eq!(after.len(), 2, "{machine:?}");
        assert!(after[1] < AT as u64 + second, "{machine:?}: {after:x?}");
        let rela = if relocation.0 { after.clone() } else { vec![] };
        assert_eq!(read(&out), [after.clone(), rela, after], "{machine:?}");
        let archs: Vec<&str> = r.images.iter().map(|i| i.arch.as_str()).collect();
        assert_eq!(archs, ["", "gfx90a", "", "gfx90a"], "{machine:?}");
    }
}

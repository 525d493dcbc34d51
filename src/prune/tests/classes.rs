//! Shrinking reads a linked file in its own class and byte order (issue
//! #42): the small library of [`super::linked`], written here by
//! `object`'s ELF encoder as a 64-bit or 32-bit, little- or big-endian
//! file, has its headers read back as they were written, whatever the
//! class and order. Files of a machine or byte order that shrinking does
//! not know are refused for that reason, after their headers are read,
//! and pruned in place.

use object::Endianness;
use object::elf;
use object::write::elf::{Encoder, FileHeader, FileHeaderLayout, ProgramHeader, SectionHeader};

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

/// Each class and byte order, with a machine of its kind.
const KINDS: [(Endianness, bool, elf::Machine); 4] = [
    (Endianness::Little, true, elf::EM_X86_64),
    (Endianness::Little, false, elf::EM_386),
    (Endianness::Big, true, elf::EM_PPC64),
    (Endianness::Big, false, elf::EM_PPC),
];

/// What shrinking reads of each library is what it was written with.
#[test]
fn headers_are_read_in_the_files_class_and_byte_order() {
    for (endian, is_64, machine) in KINDS {
        let lib = library(endian, is_64, machine, &hip_bundle(3 * 4096));
        let (phdrs, shdrs) = super::super::shrink::headers(&lib.bytes).unwrap();
        let what = format!("{endian:?}, 64-bit {is_64}");
        assert_eq!(format!("{phdrs:?}"), format!("{:?}", lib.phdrs), "{what}");
        assert_eq!(format!("{shdrs:?}"), format!("{:?}", lib.shdrs), "{what}");
    }
}

/// The 64-bit little-endian library shrinks; the others are refused, each
/// saying why (its machine and class, or its byte order, as its header
/// gives them), and pruned in place: gfx942 gone, gfx90a there.
#[test]
fn files_of_another_class_or_byte_order_are_refused_saying_why() {
    let says = [
        None,
        Some("machine 3 in 32-bit files is not shrunk (64-bit x86-64 and AArch64 are)"),
        Some("big-endian files are not shrunk (this one: 64-bit, machine 21)"),
        Some("big-endian files are not shrunk (this one: 32-bit, machine 20)"),
    ];
    for ((endian, is_64, machine), says) in KINDS.into_iter().zip(says) {
        let f = library(endian, is_64, machine, &hip_bundle(3 * 4096)).bytes;
        let p = prune(&f, false).unwrap();
        assert_eq!(p.not_shrunk.as_deref(), says, "{endian:?}, 64-bit {is_64}");
        let out = p.output.unwrap().to_vec(&f).unwrap();
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

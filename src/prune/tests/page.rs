//! Shrinking in pages of the system, whatever the load segments'
//! alignment (issue #44): a shared library linked, as NVIDIA links its
//! own, with 2 MiB `p_align` ([`library`]: `.hip_fatbin` in a read-only
//! load segment with a section after it, then a writable load segment),
//! pruned to gfx90a, loses its freed bytes in 4 KiB pages on x86-64 and
//! 64 KiB ones on AArch64, not in 2 MiB units. Every load segment keeps
//! its offset congruent to its address modulo its `p_align` (lowered
//! where the move needs it, never below the page), and every allocated
//! section's bytes are still where a loader mapping the segments finds
//! them.

use object::elf::{self, FileHeader64, ProgramHeader64, SectionHeader64};
use object::pod::{bytes_of, bytes_of_slice};
use object::read::elf::{FileHeader as _, ProgramHeader as _, SectionHeader as _};
use object::{LittleEndian as LE, U16, U32, U64};

use super::linked::hip_bundle;
use super::{Ptx, keep};
use crate::prune::{Options, prune_file};

/// The load segments' alignment NVIDIA's libraries ask for.
const TWO_MIB: u64 = 0x20_0000;

/// What [`library`] puts after `.hip_fatbin`, in the read-only segment
/// and in the writable one.
const TAIL: [u8; 64] = [0xab; 64];
const DATA: [u8; 64] = [0xcd; 64];

fn section(
    name: u32,
    flags: elf::SectionFlags,
    offset: u64,
    addr: u64,
    size: u64,
) -> SectionHeader64<LE> {
    let sh_type = if name == 0 {
        elf::SHT_NULL
    } else if flags.0 == 0 {
        elf::SHT_STRTAB
    } else {
        elf::SHT_PROGBITS
    };
    SectionHeader64 {
        sh_name: U32::new(LE, name),
        sh_type: U32::new(LE, sh_type),
        sh_flags: U64::new(LE, flags),
        sh_addr: U64::new(LE, addr),
        sh_offset: U64::new(LE, offset),
        sh_size: U64::new(LE, size),
        sh_link: U32::new(LE, 0),
        sh_info: U32::new(LE, 0),
        sh_addralign: U64::new(LE, 16),
        sh_entsize: U64::new(LE, 0),
    }
}

fn load(flags: elf::ProgramFlags, offset: u64, addr: u64, size: u64) -> ProgramHeader64<LE> {
    ProgramHeader64 {
        p_type: U32::new(LE, elf::PT_LOAD),
        p_flags: U32::new(LE, flags),
        p_offset: U64::new(LE, offset),
        p_vaddr: U64::new(LE, addr),
        p_paddr: U64::new(LE, addr),
        p_filesz: U64::new(LE, size),
        p_memsz: U64::new(LE, size),
        p_align: U64::new(LE, TWO_MIB),
    }
}

/// A shared library for `machine` laid out in units of `page`, its load
/// segments aligned to 2 MiB: the headers; `.hip_fatbin` at `page`
/// holding a bundle of gfx90a and gfx942 code objects of 4 pages each;
/// `.tail` right after it, in the same read-only segment; `.data` at the
/// next page, in a writable segment 2 MiB higher in memory than in the
/// file; `.shstrtab` and the section header table.
fn library(machine: elf::Machine, page: u64) -> Vec<u8> {
    let bundle = hip_bundle(usize::try_from(4 * page).unwrap());
    let at = usize::try_from(page).unwrap();
    let mut f = vec![0u8; at];
    f.extend_from_slice(&bundle);
    f.resize(f.len().next_multiple_of(16), 0);
    let tail = f.len() as u64;
    f.extend_from_slice(&TAIL);
    let tail_end = f.len() as u64;
    f.resize(f.len().next_multiple_of(at), 0);
    let data = f.len() as u64;
    f.extend_from_slice(&DATA);
    let names = b"\0.hip_fatbin\0.tail\0.data\0.shstrtab\0";
    let names_at = f.len() as u64;
    f.extend_from_slice(names);
    f.resize(f.len().next_multiple_of(8), 0);
    let shoff = f.len() as u64;
    let (a, aw) = (
        elf::SHF_ALLOC,
        elf::SectionFlags(elf::SHF_ALLOC.0 | elf::SHF_WRITE.0),
    );
    let size = |b: &[u8]| b.len() as u64;
    let sections = [
        section(0, elf::SectionFlags(0), 0, 0, 0),
        section(1, a, page, page, size(&bundle)),
        section(13, a, tail, tail, size(&TAIL)),
        section(19, aw, data, data + TWO_MIB, size(&DATA)),
        section(25, elf::SectionFlags(0), names_at, 0, size(names)),
    ];
    f.extend_from_slice(bytes_of_slice(&sections));
    let header = FileHeader64::<LE> {
        e_ident: elf::Ident {
            magic: elf::ELFMAG,
            class: elf::ELFCLASS64,
            data: elf::ELFDATA2LSB,
            version: elf::EV_CURRENT,
            os_abi: elf::ELFOSABI_NONE,
            abi_version: 0,
            padding: [0; 7],
        },
        e_type: U16::new(LE, elf::ET_DYN),
        e_machine: U16::new(LE, machine),
        e_version: U32::new(LE, 1),
        e_entry: U64::new(LE, 0),
        e_phoff: U64::new(LE, 64),
        e_shoff: U64::new(LE, shoff),
        e_flags: U32::new(LE, elf::FileFlags(0)),
        e_ehsize: U16::new(LE, 64),
        e_phentsize: U16::new(LE, 56),
        e_phnum: U16::new(LE, 2),
        e_shentsize: U16::new(LE, 64),
        e_shnum: U16::new(LE, 5),
        e_shstrndx: U16::new(LE, elf::SymbolSection(4)),
    };
    let phdrs = [
        load(elf::PF_R, 0, 0, tail_end),
        load(elf::PF_R | elf::PF_W, data, data + TWO_MIB, size(&DATA)),
    ];
    f[..64].copy_from_slice(bytes_of(&header));
    f[64..64 + 112].copy_from_slice(bytes_of_slice(&phdrs));
    f
}

/// `f` pruned to gfx90a and shrunk: checks that it shrank by at least
/// three of the four pages the gfx942 code object took, in whole pages,
/// and that a loader finds every allocated section's bytes where they
/// were in memory; returns the load segments' `(offset, address,
/// alignment)`.
fn shrunk(f: &[u8], page: u64) -> Vec<(u64, u64, u64)> {
    let p = prune_file(f, &keep(&["gfx90a"], Ptx::Newest), &Options::default()).unwrap();
    assert_eq!(p.not_shrunk, None);
    let out = p.output.unwrap().to_vec(&[f]).unwrap();
    let removed = (f.len() - out.len()) as u64;
    assert!(
        removed >= 3 * page && removed.is_multiple_of(page),
        "{removed:#x} bytes removed"
    );
    let h = FileHeader64::<LE>::parse(&*out).unwrap();
    let loads: Vec<(u64, u64, u64, u64)> = h
        .program_headers(LE, &*out)
        .unwrap()
        .iter()
        .filter(|p| p.p_type(LE) == elf::PT_LOAD)
        .map(|p| (p.p_offset(LE), p.p_vaddr(LE), p.p_align(LE), p.p_filesz(LE)))
        .collect();
    for &(offset, addr, align, _) in &loads {
        assert!(align.is_power_of_two() && align >= page, "{align:#x}");
        assert_eq!(
            offset % align,
            addr % align,
            "{offset:#x} {addr:#x} {align:#x}"
        );
    }
    // Each allocated section: mapped from the file bytes it holds, at the
    // address it had, with the bytes it had.
    let before = FileHeader64::<LE>::parse(f).unwrap();
    let old = before.section_headers(LE, f).unwrap();
    let new = h.section_headers(LE, &*out).unwrap();
    for (o, n) in old
        .iter()
        .zip(new)
        .filter(|(o, _)| o.sh_flags(LE).contains(elf::SHF_ALLOC))
    {
        let addr = n.sh_addr(LE);
        assert_eq!(addr, o.sh_addr(LE));
        let &(offset, vaddr, _, _) = loads
            .iter()
            .find(|l| l.1 <= addr && addr < l.1 + l.3)
            .expect("a load segment maps the section");
        assert_eq!(offset + (addr - vaddr), n.sh_offset(LE));
        if n.sh_size(LE) == 64 {
            let at = |d: &[u8], s: &SectionHeader64<LE>| {
                d[s.file_range(LE)
                    .map(|(o, n)| usize::try_from(o).unwrap()..usize::try_from(o + n).unwrap())
                    .unwrap()]
                .to_vec()
            };
            assert_eq!(at(&out, n), at(f, o));
        }
    }
    let again = prune_file(&out, &keep(&["gfx90a"], Ptx::Newest), &Options::default()).unwrap();
    assert!(again.output.is_none(), "the shrunk file prunes again");
    loads.into_iter().map(|(o, a, al, _)| (o, a, al)).collect()
}

/// x86-64 with 2 MiB `p_align`: 4 KiB pages come out, the segments
/// before the hole keep 2 MiB, those after it get the largest power of
/// two they moved by.
#[test]
fn a_library_aligned_to_2_mib_shrinks_by_4_kib_pages_on_x86_64() {
    let f = library(elf::EM_X86_64, 0x1000);
    let loads = shrunk(&f, 0x1000);
    assert_eq!(loads.len(), 3, "{loads:x?}");
    assert_eq!(loads[0], (0, 0, TWO_MIB));
    assert!(loads[1..].iter().all(|l| l.2 < TWO_MIB), "{loads:x?}");
}

/// AArch64 with 2 MiB `p_align`: 64 KiB pages (a kernel there may use
/// them), and no alignment below that.
#[test]
fn a_library_aligned_to_2_mib_shrinks_by_64_kib_pages_on_aarch64() {
    let f = library(elf::EM_AARCH64, 0x10000);
    let loads = shrunk(&f, 0x10000);
    assert_eq!(loads[0], (0, 0, TWO_MIB));
    assert!(
        loads[1..].iter().all(|l| l.2 >= 0x10000 && l.2 < TWO_MIB),
        "{loads:x?}"
    );
}

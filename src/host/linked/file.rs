//! The linked file as shrinking reads it: its headers, read with
//! `object`'s ELF reader in the file's class and byte order ([`Class`]:
//! one generic path for 32- and 64-bit, little- and big-endian files),
//! the tables it follows references in, and the words it patches, written
//! in the same class and order.

use std::mem::offset_of;

use object::elf::{self, FileHeader32, FileHeader64};
use object::pod::bytes_of;
use object::read::elf::{FileHeader, SectionHeader as _};
use object::write::elf::{Encoder, ProgramHeader as Phdr, SectionHeader as Shdr};
use object::{Endianness, ReadRef as _, U32, U64};

use super::checked::{Refusal, add};
use crate::num::{len64, u64_from};

/// An ELF class, in either byte order, as shrinking reads and patches
/// it: `object`'s reader for the class, and where the fields shrinking
/// rewrites lie in its structures.
pub(super) trait Class: FileHeader<Endian = Endianness> {
    /// `e_phoff`, `e_shoff` and `e_phnum` in the file header.
    const E_PHOFF: usize;
    const E_SHOFF: usize;
    const E_PHNUM: usize;
    /// `sh_offset` and `sh_size` in a section header.
    const SH_OFFSET: usize;
    const SH_SIZE: usize;
    /// `r_addend` in a relocation with an addend.
    const R_ADDEND: usize;
    /// `st_value` and `st_size` in a symbol.
    const ST_VALUE: usize;
    const ST_SIZE: usize;
    /// The largest word (address, offset or size) of the class.
    const WORD_MAX: u64;

    /// `v` as a word of the class in byte order `endian` (`None` when it
    /// does not fit).
    fn word(endian: Endianness, v: u64) -> Option<Vec<u8>>;

    /// The word at file offset `at`, when `data` holds it.
    fn word_at(endian: Endianness, data: &[u8], at: u64) -> Option<u64>;
}

impl Class for FileHeader64<Endianness> {
    const E_PHOFF: usize = offset_of!(FileHeader64<Endianness>, e_phoff);
    const E_SHOFF: usize = offset_of!(FileHeader64<Endianness>, e_shoff);
    const E_PHNUM: usize = offset_of!(FileHeader64<Endianness>, e_phnum);
    const SH_OFFSET: usize = offset_of!(elf::SectionHeader64<Endianness>, sh_offset);
    const SH_SIZE: usize = offset_of!(elf::SectionHeader64<Endianness>, sh_size);
    const R_ADDEND: usize = offset_of!(elf::Rela64<Endianness>, r_addend);
    const ST_VALUE: usize = offset_of!(elf::Sym64<Endianness>, st_value);
    const ST_SIZE: usize = offset_of!(elf::Sym64<Endianness>, st_size);
    const WORD_MAX: u64 = u64::MAX;

    fn word(endian: Endianness, v: u64) -> Option<Vec<u8>> {
        Some(bytes_of(&U64::new(endian, v)).to_vec())
    }

    fn word_at(endian: Endianness, data: &[u8], at: u64) -> Option<u64> {
        let w: &U64<Endianness> = data.read_at(at).ok()?;
        Some(w.get(endian))
    }
}

impl Class for FileHeader32<Endianness> {
    const E_PHOFF: usize = offset_of!(FileHeader32<Endianness>, e_phoff);
    const E_SHOFF: usize = offset_of!(FileHeader32<Endianness>, e_shoff);
    const E_PHNUM: usize = offset_of!(FileHeader32<Endianness>, e_phnum);
    const SH_OFFSET: usize = offset_of!(elf::SectionHeader32<Endianness>, sh_offset);
    const SH_SIZE: usize = offset_of!(elf::SectionHeader32<Endianness>, sh_size);
    const R_ADDEND: usize = offset_of!(elf::Rela32<Endianness>, r_addend);
    const ST_VALUE: usize = offset_of!(elf::Sym32<Endianness>, st_value);
    const ST_SIZE: usize = offset_of!(elf::Sym32<Endianness>, st_size);
    const WORD_MAX: u64 = 0xffff_ffff;

    fn word(endian: Endianness, v: u64) -> Option<Vec<u8>> {
        let v = u32::try_from(v).ok()?;
        Some(bytes_of(&U32::new(endian, v)).to_vec())
    }

    fn word_at(endian: Endianness, data: &[u8], at: u64) -> Option<u64> {
        let w: &U32<Endianness> = data.read_at(at).ok()?;
        Some(u64::from(w.get(endian)))
    }
}

/// A linked ELF file's headers, read with `object` in the file's class
/// `H` and byte order.
pub(super) struct Elf<'data, H: Class> {
    pub(super) header: &'data H,
    pub(super) endian: Endianness,
    /// Writes program headers in the file's class and byte order.
    pub(super) encoder: Encoder<Endianness>,
    pub(super) machine: elf::Machine,
    pub(super) phoff: u64,
    pub(super) shoff: u64,
    pub(super) phdrs: Vec<Phdr>,
    /// The section headers as they lie in the file, and their values.
    pub(super) sections: &'data [H::SectionHeader],
    pub(super) shdrs: Vec<Shdr>,
}

/// The relative relocation type of machine `machine` in files of the
/// class `is_64` says, for the machines whose files are shrunk: the
/// relocation a position-independent file's pointers into the fat-binary
/// section carry. Each is tested with files clang and the linkers make
/// (linker-tests/prune/shrink.rs); other machines are refused.
pub(super) fn relative_type(machine: elf::Machine, is_64: bool) -> Option<elf::RelocationType> {
    match (machine, is_64) {
        (elf::EM_X86_64, true) => Some(elf::R_X86_64_RELATIVE),
        (elf::EM_AARCH64, true) => Some(elf::R_AARCH64_RELATIVE),
        (elf::EM_386, false) => Some(elf::R_386_RELATIVE),
        (elf::EM_ARM, false) => Some(elf::R_ARM_RELATIVE),
        _ => None,
    }
}

impl<'data, H: Class> Elf<'data, H> {
    pub(super) fn read(data: &'data [u8]) -> Result<Self, Refusal> {
        let bad = |e: object::read::Error| format!("the ELF headers cannot be read ({e})");
        let header = H::parse(data).map_err(bad)?;
        let endian = header.endian().map_err(bad)?;
        let phdrs = header.program_headers(endian, data).map_err(bad)?;
        let sections = header.section_headers(endian, data).map_err(bad)?;
        if sections.is_empty() || phdrs.is_empty() {
            return Err("the file has no section or program headers".into());
        }
        let phdrs: Vec<Phdr> = phdrs.iter().map(|p| Phdr::from_raw(endian, p)).collect();
        let shdrs: Vec<Shdr> = sections.iter().map(|s| Shdr::from_raw(endian, s)).collect();
        // Every range the headers give lies in the file (so no sum below
        // overflows and no slice runs past the end).
        let len = len64(data);
        let inside = |off: u64, size: u64| off.checked_add(size).is_some_and(|e| e <= len);
        let vm = |addr: u64, size: u64| addr.checked_add(size).is_some();
        if !phdrs.iter().all(|p| {
            inside(p.p_offset, p.p_filesz) && vm(p.p_vaddr, p.p_memsz) && vm(p.p_paddr, p.p_memsz)
        }) || !shdrs.iter().all(|h| {
            (h.sh_type == elf::SHT_NOBITS || inside(h.sh_offset, h.sh_size))
                && vm(h.sh_addr, h.sh_size)
        }) {
            return Err("the headers point outside the file".into());
        }
        let machine = header.e_machine(endian);
        Ok(Elf {
            header,
            endian,
            encoder: Encoder::new(endian, header.is_type_64(), machine),
            machine,
            phoff: header.e_phoff(endian).into(),
            shoff: header.e_shoff(endian).into(),
            phdrs,
            sections,
            shdrs,
        })
    }

    /// The relative relocation type of the file's machine, or why files
    /// like it are not shrunk. Big-endian files are refused whatever
    /// their machine: the scan does not read their fatbin wrappers (it
    /// reports them damaged, and nothing is pruned), so no linked
    /// big-endian HIP file is tested.
    pub(super) fn relative(&self) -> Result<elf::RelocationType, Refusal> {
        let is_64 = self.encoder.is_64();
        let bits = if is_64 { 64 } else { 32 };
        if self.endian == Endianness::Big {
            return Err(format!(
                "big-endian files are not shrunk (the scan does not read their fatbin \
                 wrappers; this one: {bits}-bit, machine {})",
                self.machine.0
            ));
        }
        relative_type(self.machine, is_64).ok_or_else(|| {
            format!(
                "machine {} in {bits}-bit files is not shrunk (64-bit x86-64 and AArch64, \
                 32-bit i386 and Arm are)",
                self.machine.0
            )
        })
    }

    /// `v` as a word of the file (a refusal when it does not fit).
    pub(super) fn word(&self, v: u64) -> Result<Vec<u8>, Refusal> {
        H::word(self.endian, v).ok_or_else(|| format!("{v:#x} does not fit in a word of the file"))
    }

    /// The word of the file at offset `at`, when it lies in `data`.
    pub(super) fn word_at(&self, data: &[u8], at: u64) -> Option<u64> {
        H::word_at(self.endian, data, at)
    }

    /// Where section `i`'s header lies in the file.
    pub(super) fn section_header_at(&self, i: usize) -> Result<u64, Refusal> {
        // The table was read from the file: no product overflows.
        add(self.shoff, u64_from(i * size_of::<H::SectionHeader>()))
    }

    /// The program header table `phdrs` in the file's class and byte
    /// order (a refusal when a value does not fit its field).
    pub(super) fn program_header_table(&self, phdrs: &[Phdr]) -> Result<Vec<u8>, Refusal> {
        let mut table = Vec::new();
        for p in phdrs {
            let values = [
                p.p_offset, p.p_vaddr, p.p_paddr, p.p_filesz, p.p_memsz, p.p_align,
            ];
            if let Some(v) = values.into_iter().find(|&v| v > H::WORD_MAX) {
                return Err(format!(
                    "{v:#x} does not fit in a program header of the file"
                ));
            }
            self.encoder.program_header(&mut table, p);
        }
        Ok(table)
    }
}

/// Section `i`'s name, from the section-name table.
pub(super) fn section_name<H: Class>(data: &[u8], elf: &Elf<'_, H>, i: usize) -> String {
    let name = || -> Option<String> {
        let strings = elf
            .header
            .section_strings(elf.endian, data, elf.sections)
            .ok()?;
        let name = elf.sections.get(i)?.name(elf.endian, strings).ok()?;
        Some(String::from_utf8_lossy(name).into_owned())
    };
    name().unwrap_or_default()
}

/// Section `i`'s bytes as `T`s, read with `object`; refused when they
/// are not a whole number of them.
pub(super) fn table<'data, H: Class, T: object::Pod>(
    data: &'data [u8],
    elf: &Elf<'data, H>,
    i: usize,
) -> Result<&'data [T], Refusal> {
    elf.sections[i]
        .data_as_array(elf.endian, data)
        .map_err(|e| format!("section {i} cannot be read ({e})"))
}

/// The entries of table section `i` as `T`s ([`table`]); refused, too,
/// when the section says its entries are of another size.
pub(super) fn entries<'data, H: Class, T: object::Pod>(
    data: &'data [u8],
    elf: &Elf<'data, H>,
    i: usize,
) -> Result<&'data [T], Refusal> {
    let h = &elf.shdrs[i];
    if h.sh_entsize != u64_from(size_of::<T>()) {
        return Err(format!(
            "section {i} (type {:#x}) has entries of {} bytes, not {}",
            h.sh_type,
            h.sh_entsize,
            size_of::<T>()
        ));
    }
    table(data, elf, i)
}

/// The places (addresses) the packed relative relocations of `SHT_RELR`
/// section `i` fix up: an even entry is an address; an odd one, a bitmap
/// of the `COUNT` words after the last address or bitmap.
pub(super) fn relr_places<H: Class>(
    data: &[u8],
    elf: &Elf<'_, H>,
    i: usize,
) -> Result<Vec<u64>, Refusal> {
    let relr: &[H::Relr] = table(data, elf, i)?;
    let word = u64_from(size_of::<H::Word>());
    let count = u64::from(<H::Relr as object::read::elf::Relr>::COUNT);
    let mut places = Vec::new();
    let mut base = 0u64;
    for r in relr {
        let entry: u64 = object::read::elf::Relr::get(r, elf.endian).into();
        if entry & 1 == 0 {
            places.push(entry);
            base = add(entry, word)?;
        } else {
            for bit in 1..=count {
                if entry >> bit & 1 == 1 {
                    places.push(add(base, (bit - 1) * word)?);
                }
            }
            base = add(base, count * word)?;
        }
    }
    Ok(places)
}

/// The file offset of address `v`, in a load segment's file bytes that
/// hold `size` bytes from there.
pub(super) fn file_offset(phdrs: &[Phdr], v: u64, size: u64) -> Option<u64> {
    phdrs.iter().find_map(|p| {
        let into = v.checked_sub(p.p_vaddr)?;
        let fits = into.checked_add(size).is_some_and(|e| e <= p.p_filesz);
        (p.p_type == elf::PT_LOAD && fits).then(|| p.p_offset.checked_add(into))?
    })
}

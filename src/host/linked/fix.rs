//! What is fixed when the containers move and the pages after them go:
//! relative relocations, fatbin wrappers' data pointers and symbols that
//! point into the fat-binary section, and the section headers and table
//! after the hole; each a patch in the file's class and byte order.

use std::collections::{BTreeMap, HashSet};

use object::elf;
use object::read::elf::{Rel as _, Rela as _, Sym as _};

use super::checked::{Refusal, add, sub};
use super::file::{Class, Elf, entries, file_offset, relr_places};
use super::hole::Hole;
use super::pack::Patches;
use crate::num::u64_from;

/// Where addresses go: whether one lies in the fat-binary section, and
/// the new address of one a reference may point at (a container's start).
pub(super) type Moves<'a> = (
    &'a dyn Fn(u64) -> bool,
    &'a dyn Fn(u64) -> Result<u64, Refusal>,
);

/// Section headers after the hole move down, the section ends where its
/// packed containers end, and so does the section header table.
pub(super) fn fix_headers<H: Class>(
    elf: &Elf<'_, H>,
    s_index: usize,
    hole: &Hole,
    pack_end: u64,
    patches: &mut Patches,
) -> Result<(), Refusal> {
    for (i, h) in elf.shdrs.iter().enumerate() {
        let at = elf.section_header_at(i)?;
        if i == s_index {
            let size = sub(pack_end, h.sh_offset)?;
            patches.put(add(at, u64_from(H::SH_SIZE))?, elf.word(size)?)?;
        } else if h.sh_offset >= hole.b {
            let offset = hole.moved(h.sh_offset);
            patches.put(add(at, u64_from(H::SH_OFFSET))?, elf.word(offset)?)?;
        } else if h.sh_type != elf::SHT_NOBITS
            && h.sh_size > 0
            && h.sh_offset < hole.b
            && add(h.sh_offset, h.sh_size)? > hole.a
        {
            return Err("another section lies in the pages to remove".into());
        }
    }
    let e_shoff = u64_from(H::E_SHOFF);
    patches.put(e_shoff, elf.word(hole.moved(elf.shoff))?)
}

/// Relative relocations (REL, RELA and RELR) whose target is in the
/// section: given the target's new address (a RELA's addend, and the
/// address stored at the place relocated, which is the addend of the
/// others). Relocations against a symbol follow the symbol, which
/// [`fix_symbols`] moves. Those at the places in `skip` are left alone:
/// an OpenMP descriptor's image pointers, which point inside containers
/// and are rewritten whole ([`super::openmp`]).
pub(super) fn fix_relocations<H: Class>(
    data: &[u8],
    elf: &Elf<'_, H>,
    relative: elf::RelocationType,
    (in_s, new_vaddr): Moves<'_>,
    skip: &HashSet<u64>,
    patches: &mut Patches,
) -> Result<(), Refusal> {
    let (endian, word) = (elf.endian, u64_from(size_of::<H::Word>()));
    let stored = |patches: &mut Patches, v: u64| -> Result<(), Refusal> {
        if skip.contains(&v) {
            return Ok(());
        }
        let Some(at) = file_offset(&elf.phdrs, v, word) else {
            return Ok(());
        };
        let old = elf.word_at(data, at).unwrap_or(0);
        if in_s(old) {
            patches.put(at, elf.word(new_vaddr(old)?)?)?;
        }
        Ok(())
    };
    let is_mips64el = elf.header.is_mips64el(endian);
    for (i, h) in elf.shdrs.iter().enumerate() {
        if h.sh_type == elf::SHT_REL {
            for r in entries::<H, H::Rel>(data, elf, i)? {
                if r.r_type(endian) == relative {
                    stored(patches, r.r_offset(endian).into())?;
                }
            }
        } else if h.sh_type == elf::SHT_RELA {
            let size = size_of::<H::Rela>();
            for (k, r) in entries::<H, H::Rela>(data, elf, i)?.iter().enumerate() {
                // The addend of a relative relocation is an address: the
                // field's bits as a word of the class.
                let addend: i64 = r.r_addend(endian).into();
                let addend = addend.cast_unsigned() & H::WORD_MAX;
                let place: u64 = r.r_offset(endian).into();
                if r.r_type(endian, is_mips64el) == relative
                    && in_s(addend)
                    && !skip.contains(&place)
                {
                    // `k * size` is at most the table's size: no overflow.
                    let at = add(h.sh_offset, u64_from(k * size))?;
                    let new = new_vaddr(addend)?;
                    patches.put(add(at, u64_from(H::R_ADDEND))?, elf.word(new)?)?;
                    stored(patches, place)?;
                }
            }
        } else if h.sh_type == elf::SHT_RELR {
            for place in relr_places(data, elf, i)? {
                stored(patches, place)?;
            }
        }
    }
    Ok(())
}

/// Each word at the file offsets `pointers` (fatbin wrappers' data
/// pointers, [`Edits::pointers`](super::Edits::pointers)), where the file
/// stores it (non-PIE programs, and some linkers' PIE output too).
pub(super) fn fix_wrappers<H: Class>(
    data: &[u8],
    elf: &Elf<'_, H>,
    pointers: &[u64],
    in_s: &dyn Fn(u64) -> bool,
    new_vaddr: &dyn Fn(u64) -> Result<u64, Refusal>,
    patches: &mut Patches,
) -> Result<(), Refusal> {
    for &at in pointers {
        let v = elf.word_at(data, at).unwrap_or(0);
        if in_s(v) {
            patches.put(at, elf.word(new_vaddr(v)?)?)?;
        }
    }
    Ok(())
}

/// Symbols defined in the section (`.symtab`, `.dynsym`): moved with the
/// container they start, and one whose size was the container's given its
/// new size (`resized`: a container's old address to its old and new
/// sizes); one inside a container is refused.
pub(super) fn fix_symbols<H: Class>(
    data: &[u8],
    elf: &Elf<'_, H>,
    s_index: usize,
    (in_s, new_vaddr): Moves<'_>,
    resized: &BTreeMap<u64, (u64, u64)>,
    patches: &mut Patches,
) -> Result<(), Refusal> {
    let size = size_of::<H::Sym>();
    for (i, h) in elf.shdrs.iter().enumerate() {
        if h.sh_type != elf::SHT_SYMTAB && h.sh_type != elf::SHT_DYNSYM {
            continue;
        }
        for (k, sym) in entries::<H, H::Sym>(data, elf, i)?.iter().enumerate() {
            let value = sym.st_value(elf.endian).into();
            if usize::from(sym.st_shndx(elf.endian).0) == s_index && in_s(value) {
                // `k * size` is at most the table's size: no overflow.
                let at = add(h.sh_offset, u64_from(k * size))?;
                let new = new_vaddr(value)?;
                patches.put(add(at, u64_from(H::ST_VALUE))?, elf.word(new)?)?;
                let size: u64 = sym.st_size(elf.endian).into();
                if let Some(&(old, new)) = resized.get(&value)
                    && old == size
                    && old != new
                {
                    patches.put(add(at, u64_from(H::ST_SIZE))?, elf.word(new)?)?;
                }
            }
        }
    }
    Ok(())
}

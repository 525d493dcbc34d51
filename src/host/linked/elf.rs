//! Shrinking a linked ELF program or library (see [`super`]).

use std::collections::{BTreeMap, HashSet};

use object::elf::{self, FileHeader32, FileHeader64};
use object::pod::bytes_of;
use object::write::elf::{ProgramHeader as Phdr, SectionHeader as Shdr};
use object::{Endianness, U16};

use super::checked::{Refusal, add, sub};
use super::edits::Edits;
use super::facts::Facts;
use super::facts::fixed::Part;
use super::file::{Class, Elf, section_name};
use super::fix::{fix_headers, fix_relocations, fix_symbols, fix_wrappers};
use super::hole::Hole;
use super::pack::{Packed, Patches, Segment, Shrunk, pack, up_to_packed};
use crate::layout::{Piece, Written as Output};
use crate::num::{len64, u64_from};

/// The shrunk form of the linked file `data` (of the format `kind`) that
/// `plan` edits in place, with what became of its layout, or why there is
/// none; the parts of the file that must stay are read from `facts`.
pub(crate) fn shrink(
    data: &[u8],
    kind: Option<object::FileKind>,
    plan: &Edits<'_>,
    facts: &Facts<'_>,
) -> Result<(Output, Shrunk), Refusal> {
    let of = (data, plan);
    match kind {
        Some(object::FileKind::Elf32) => shrink_as::<FileHeader32<Endianness>>(of, facts),
        Some(object::FileKind::Elf64) => shrink_as::<FileHeader64<Endianness>>(of, facts),
        _ => Err("the ELF header cannot be read".into()),
    }
}

/// The program and section headers of `data` as [`shrink`] reads them,
/// in the file's class and byte order.
#[cfg(test)]
pub(crate) fn headers(data: &[u8]) -> Result<(Vec<Phdr>, Vec<Shdr>), Refusal> {
    fn read<H: Class>(data: &[u8]) -> Result<(Vec<Phdr>, Vec<Shdr>), Refusal> {
        Elf::<H>::read(data).map(|elf| (elf.phdrs, elf.shdrs))
    }
    match crate::host::elf::peek(data).map(|p| p.is_64()) {
        Some(false) => read::<FileHeader32<Endianness>>(data),
        Some(true) => read::<FileHeader64<Endianness>>(data),
        None => Err("the ELF header cannot be read".into()),
    }
}

/// [`shrink`] for a file of class `H`.
fn shrink_as<H: Class>(
    (data, plan): (&[u8], &Edits<'_>),
    facts: &Facts<'_>,
) -> Result<(Output, Shrunk), Refusal> {
    let elf = Elf::<H>::read(data)?;
    let relative = elf.relative()?;
    // The one section holding every container that changes.
    let holds = |s: &Shdr| -> Option<bool> {
        let end = s.sh_offset.checked_add(s.sh_size)?;
        Some(plan.changes.iter().all(|e| {
            s.sh_offset <= e.offset
                && e.offset
                    .checked_add(e.size)
                    .is_some_and(|e_end| e_end <= end)
        }))
    };
    let s_index = elf
        .shdrs
        .iter()
        .position(|s| s.sh_type != elf::SHT_NOBITS && holds(s) == Some(true))
        .ok_or("the containers lie in more than one section")?;
    let s = &elf.shdrs[s_index];
    let (packed, pack_end) = pack(data, plan, (s.sh_offset, s.sh_size, s.sh_addralign))?;
    let hole = Hole::find(&elf, s, pack_end)?;
    keeps_fixed_parts(facts, s_index, hole.li, (s.sh_offset, hole.b))?;
    let moved: BTreeMap<u64, u64> = packed
        .iter()
        .map(|p| {
            let old = add(s.sh_addr, sub(p.old, s.sh_offset)?)?;
            Ok((old, add(s.sh_addr, sub(p.new, s.sh_offset)?)?))
        })
        .collect::<Result<_, Refusal>>()?;
    // Section addresses end by 2^64 (`Elf::read` checks).
    let in_s = |v: u64| v.checked_sub(s.sh_addr).is_some_and(|d| d < s.sh_size);
    let new_vaddr = |v: u64| -> Result<u64, Refusal> {
        moved
            .get(&v)
            .copied()
            .ok_or_else(|| format!("something points at {v:#x}, inside a container"))
    };
    let mut patches = Patches::default();
    let registered = fix_registrations(plan, &new_vaddr, &mut patches)?;
    fix_relocations(
        data,
        &elf,
        relative,
        (&in_s, &new_vaddr),
        &registered,
        &mut patches,
    )?;
    fix_wrappers(data, &elf, &plan.pointers, &in_s, &new_vaddr, &mut patches)?;
    let resized = resized(s, &packed)?;
    fix_symbols(
        data,
        &elf,
        s_index,
        (&in_s, &new_vaddr),
        &resized,
        &mut patches,
    )?;
    fix_headers(&elf, s_index, &hole, pack_end, &mut patches)?;
    let new_phdrs = hole.program_headers(&elf, pack_end)?;
    let table = elf.program_header_table(&new_phdrs)?;
    let part = |p: &Phdr| Segment {
        offset: p.p_offset,
        address: p.p_vaddr,
        size: p.p_filesz,
    };
    let shrunk = Shrunk {
        section: section_name(data, &elf, s_index),
        section_size: (s.sh_size, sub(pack_end, s.sh_offset)?),
        removed: (hole.a, hole.b),
        segment: part(&hole.l),
        segments: new_phdrs[hole.li..=hole.li + usize::from(hole.splits)]
            .iter()
            .map(part)
            .collect(),
        mapping: "load segment",
    };
    let e_phoff = u64_from(H::E_PHOFF);
    if hole.splits {
        patches.put(e_phoff, elf.word(hole.table)?)?;
        // A count of `PN_XNUM` or more would be read from section 0.
        let n = u16::try_from(elf.phdrs.len() + 1)
            .ok()
            .filter(|&n| n < elf::PN_XNUM)
            .ok_or("too many program headers")?;
        let n = bytes_of(&U16::new(elf.endian, n)).to_vec();
        patches.put(u64_from(H::E_PHNUM), n)?;
    } else {
        // The table stays where it is, or moves down with what follows
        // the hole.
        patches.put(e_phoff, elf.word(hole.moved(elf.phoff))?)?;
        patches.put(elf.phoff, table.clone())?;
    }
    let out = assemble(data, s, &packed, &hole, table, &patches)?;
    Ok((out, shrunk))
}

/// The OpenMP descriptors of `plan` rewritten, their images where
/// `new_vaddr` says their OffloadBinaries now start; the places of their
/// image pointers, which the relocations fixed elsewhere leave to them.
fn fix_registrations(
    plan: &Edits<'_>,
    new_vaddr: &dyn Fn(u64) -> Result<u64, Refusal>,
    patches: &mut Patches,
) -> Result<HashSet<u64>, Refusal> {
    let mut places = HashSet::new();
    for r in plan.registrations {
        for (at, bytes) in r.patches(new_vaddr)? {
            patches.put(at, bytes)?;
        }
        places.extend(r.places());
    }
    Ok(places)
}

/// The containers of section `s` by old address: their old and new sizes.
fn resized(s: &Shdr, packed: &[Packed<'_>]) -> Result<BTreeMap<u64, (u64, u64)>, Refusal> {
    packed
        .iter()
        .map(|p| {
            let old = add(s.sh_addr, sub(p.old, s.sh_offset)?)?;
            let new_size = p.edit.map_or(p.size, |e| e.layout.size);
            Ok((old, (p.size, new_size)))
        })
        .collect()
}

/// Refuses shrinking when a part of the file that must stay
/// ([`Fixed`](super::facts::fixed::Fixed)), other than section `s_index` and load segment
/// `li`, has bytes in `[from, to)`: the bytes that shrinking rewrites (the
/// containers packed, the new program header table) or removes. (The
/// plan refused those in the containers that are rewritten, which a file
/// rewritten in place changes alone: that file is safe to write.)
fn keeps_fixed_parts(
    facts: &Facts<'_>,
    s_index: usize,
    li: usize,
    (from, to): (u64, u64),
) -> Result<(), Refusal> {
    let parts = facts.fixed().map_err(|e| e.to_string())?;
    for p in parts {
        let own = match p.part {
            Part::Section(i) => i == s_index,
            Part::Segment(i, _) => i == li,
            Part::Header => false,
        };
        if !own && p.overlaps(from, to) {
            return Err(format!(
                "{p} lies in the bytes shrinking rewrites or removes ({from:#x}..{to:#x})"
            ));
        }
    }
    Ok(())
}

/// The shrunk file: up to the section, the packed containers, the new
/// program header `table` (when the segment splits), zeros to the hole,
/// and the rest moved down; `patches` made on the way.
fn assemble(
    data: &[u8],
    s: &Shdr,
    packed: &[Packed<'_>],
    hole: &Hole,
    table: Vec<u8>,
    patches: &Patches,
) -> Result<Output, Refusal> {
    let mut out = Output::default();
    let mut at = up_to_packed(&mut out, s.sh_offset, packed, patches)?;
    if hole.splits {
        out.piece(Piece::Zeros(sub(hole.table, at)?));
        out.piece(Piece::Bytes(table));
        at = add(hole.table, hole.need)?;
    }
    out.piece(Piece::Zeros(sub(hole.a, at)?));
    patches.copy(&mut out, hole.b, len64(data))?;
    Ok(out)
}

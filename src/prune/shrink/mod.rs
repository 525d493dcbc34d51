//! Making a pruned linked program or shared library smaller (issue #29):
//! the containers of its fat-binary section are packed together at the
//! section's start, every reference to one that moved is fixed, and the
//! whole pages freed at the section's end are removed from the file.
//! Everything after them keeps its address and moves down in the file by
//! whole pages, so that offsets and addresses stay congruent; the load
//! segment holding the section is split around the hole (the addresses in
//! between are no longer mapped), and the program header table, one entry
//! longer, moves into the freed space the first part keeps.
//!
//! References are recognised by what they are: relative dynamic
//! relocations (`R_X86_64_RELATIVE`, `R_AARCH64_RELATIVE`,
//! `R_386_RELATIVE`, `R_ARM_RELATIVE`, in `SHT_RELA` or `SHT_REL` tables,
//! and packed `SHT_RELR` ones) whose target is a container's start, the
//! data pointer of each fatbin wrapper (the only reference a non-PIE
//! program has), and symbols defined at a container's start. A reference
//! into a container other than at its start, a relocation of another kind
//! against the section, or a layout this does not know (a machine whose
//! relative relocation is not known here, see [`file::relative_type`]; a
//! big-endian file; one fat-binary section; the section in a read-only,
//! file-backed load segment) makes [`shrink`] say why, and the caller
//! rewrites the file in place instead.
//!
//! The file is read with `object`'s ELF reader, in its class and byte
//! order ([`file`]); the hole and the program headers around it are worked
//! out in [`hole`]; what points into the section, and the headers after
//! the hole, are fixed in [`fix`], each patch written with `object`'s
//! types in the file's class and order.

mod file;
mod fix;
mod hole;
pub(crate) mod openmp;
pub(crate) mod pe;

use std::collections::{BTreeMap, HashSet};

use object::elf::{self, FileHeader32, FileHeader64};
use object::pod::bytes_of;
use object::write::elf::{ProgramHeader as Phdr, SectionHeader as Shdr};
use object::{Endianness, U16};

use self::file::{Class, Elf, section_name};
use self::fix::{fix_headers, fix_relocations, fix_symbols, fix_wrappers};
use self::hole::Hole;
use super::output::Output;
use super::plan::{Edit, Part, Plan};
use crate::layout::Piece;
use crate::num::{len64, u64_from, usize_from};
use crate::scan::{ContainerKind, Report};

/// Why a file was not shrunk.
pub type Refusal = String;

/// `a + b`, or a refusal when the sum passes 2^64.
pub(super) fn add(a: u64, b: u64) -> Result<u64, Refusal> {
    a.checked_add(b)
        .ok_or_else(|| format!("an offset or address overflows ({a:#x} + {b:#x})"))
}

/// `a - b`, or a refusal when `b` is the larger.
pub(super) fn sub(a: u64, b: u64) -> Result<u64, Refusal> {
    a.checked_sub(b)
        .ok_or_else(|| format!("an offset or address lies before another ({a:#x} - {b:#x})"))
}

/// `a` rounded up to a multiple of `m`, or a refusal when that passes
/// 2^64 (or `m` is 0).
pub(super) fn round_up(a: u64, m: u64) -> Result<u64, Refusal> {
    a.checked_next_multiple_of(m)
        .ok_or_else(|| format!("{a:#x} rounded up to a multiple of {m:#x} overflows"))
}

/// Byte edits to the input, by file offset.
#[derive(Default)]
pub(super) struct Patches(BTreeMap<u64, Vec<u8>>);

impl Patches {
    /// Puts `bytes` at `at`; refused when they overlap other bytes put
    /// before (the same bytes at the same place again are one edit: a
    /// pointer both a relocation and a wrapper name).
    pub(super) fn put(&mut self, at: u64, bytes: Vec<u8>) -> Result<(), Refusal> {
        let end = add(at, len64(&bytes))?;
        if self.0.get(&at) == Some(&bytes) {
            return Ok(());
        }
        // The patches lie apart: only the last one to start before `end`
        // can reach into `[at, end)`.
        if let Some((&p, b)) = self.0.range(..end).next_back()
            && add(p, len64(b))? > at
        {
            return Err(format!(
                "two edits of the file overlap at {:#x} (a relocation, symbol or \
                 header in the bytes of another)",
                p.max(at)
            ));
        }
        self.0.insert(at, bytes);
        Ok(())
    }

    /// Appends the input's bytes `[from, to)` to `out`, patched.
    pub(super) fn copy(&self, out: &mut Output, from: u64, to: u64) -> Result<(), Refusal> {
        let mut pos = from;
        for (&at, b) in self.0.range(from..to) {
            let end = add(at, len64(b))?.min(to);
            out.span(0, pos, sub(at, pos)?);
            out.piece(Piece::Bytes(b[..usize_from(sub(end, at)?)].to_vec()));
            pos = end;
        }
        out.span(0, pos, sub(to, pos)?);
        Ok(())
    }
}

/// The fat-binary section's containers: old start, old size, new start,
/// and the edit that rewrites it (`None`: copied as it is).
pub(super) struct Packed<'p> {
    pub(super) old: u64,
    pub(super) size: u64,
    pub(super) new: u64,
    pub(super) edit: Option<&'p Edit>,
}

/// What shrinking did to the file's layout (what `--dry-run` shows).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Shrunk {
    /// The fat-binary section.
    pub section: String,
    /// Its size before and after packing.
    pub section_size: (u64, u64),
    /// The file range removed (whole pages).
    pub removed: (u64, u64),
    /// The load segment that held the section.
    pub segment: Segment,
    /// What it became: one segment, or two around the hole.
    pub segments: Vec<Segment>,
    /// What [`Shrunk::segment`] is, in words: `load segment` (ELF), or
    /// `section` (PE, where the section's raw data is what is mapped).
    #[serde(skip)]
    pub mapping: &'static str,
}

/// Where a load segment lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Segment {
    /// Its file offset.
    pub offset: u64,
    /// Its address.
    pub address: u64,
    /// Its size in the file (and in memory).
    pub size: u64,
}

/// The shrunk form of the linked file `data` (scanned as `report`) that
/// `plan` prunes in place, with what became of its layout, or why there is
/// none.
pub fn shrink(data: &[u8], report: &Report, plan: &Plan) -> Result<(Output, Shrunk), Refusal> {
    match report.host {
        Some(object::FileKind::Elf32) => shrink_as::<FileHeader32<Endianness>>(data, report, plan),
        Some(object::FileKind::Elf64) => shrink_as::<FileHeader64<Endianness>>(data, report, plan),
        _ => Err("the ELF header cannot be read".into()),
    }
}

/// The program and section headers of `data` as [`shrink`] reads them,
/// in the file's class and byte order.
#[cfg(test)]
pub(super) fn headers(data: &[u8]) -> Result<(Vec<Phdr>, Vec<Shdr>), Refusal> {
    fn read<H: Class>(data: &[u8]) -> Result<(Vec<Phdr>, Vec<Shdr>), Refusal> {
        Elf::<H>::read(data).map(|elf| (elf.phdrs, elf.shdrs))
    }
    match object::FileKind::parse(data) {
        Ok(object::FileKind::Elf32) => read::<FileHeader32<Endianness>>(data),
        Ok(object::FileKind::Elf64) => read::<FileHeader64<Endianness>>(data),
        _ => Err("the ELF header cannot be read".into()),
    }
}

/// [`shrink`] for a file of class `H`.
fn shrink_as<H: Class>(
    data: &[u8],
    report: &Report,
    plan: &Plan,
) -> Result<(Output, Shrunk), Refusal> {
    let elf = Elf::<H>::read(data)?;
    let relative = elf.relative()?;
    // The one section holding every container that changes.
    let holds = |s: &Shdr| -> Option<bool> {
        let end = s.sh_offset.checked_add(s.sh_size)?;
        Some(plan.edits.iter().all(|e| {
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
    let (packed, pack_end) = pack(data, report, plan, (s.sh_offset, s.sh_size, s.sh_addralign))?;
    let hole = Hole::find(&elf, s, pack_end)?;
    keeps_fixed_parts(data, report, s_index, hole.li, (s.sh_offset, hole.b))?;
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
    fix_wrappers(data, &elf, report, &in_s, &new_vaddr, &mut patches)?;
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
    plan: &Plan,
    new_vaddr: &dyn Fn(u64) -> Result<u64, Refusal>,
    patches: &mut Patches,
) -> Result<HashSet<u64>, Refusal> {
    let mut places = HashSet::new();
    for r in &plan.registrations {
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
            let new_size = p.edit.map_or(p.size, |e| e.pruned.layout.size);
            Ok((old, (p.size, new_size)))
        })
        .collect()
}

/// Refuses shrinking when a part of the file that must stay
/// ([`super::plan::Fixed`]), other than section `s_index` and load segment
/// `li`, has bytes in `[from, to)`: the bytes that shrinking rewrites (the
/// containers packed, the new program header table) or removes. (The
/// plan refused those in the containers that are rewritten, which a file
/// rewritten in place changes alone: that file is safe to write.)
fn keeps_fixed_parts(
    data: &[u8],
    report: &Report,
    s_index: usize,
    li: usize,
    (from, to): (u64, u64),
) -> Result<(), Refusal> {
    let parts = super::plan::fixed_parts(data, report.host).map_err(|e| e.to_string())?;
    for p in &parts {
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

/// Appends to `out` the input up to the fat-binary section (at file
/// offset `start`), patched, then the section's `packed` containers, each
/// at its new place; returns where the last one ends. Both ELF and PE
/// shrinking lay the file out this way up to their holes.
pub(super) fn up_to_packed(
    out: &mut Output,
    start: u64,
    packed: &[Packed<'_>],
    patches: &Patches,
) -> Result<u64, Refusal> {
    patches.copy(out, 0, start)?;
    let mut at = start;
    for p in packed {
        out.piece(Piece::Zeros(sub(p.new, at)?));
        match p.edit {
            Some(e) => container(out, e)?,
            None => patches.copy(out, p.old, add(p.old, p.size)?)?,
        }
        at = add(p.new, p.edit.map_or(p.size, |e| e.pruned.layout.size))?;
    }
    Ok(at)
}

/// Edit `e`'s new container, appended to `out` (its built bytes copied:
/// the in-place form keeps them).
pub(super) fn container(out: &mut Output, e: &Edit) -> Result<(), Refusal> {
    let bad = || {
        format!(
            "the new container at {:#x} names bytes it has not",
            e.offset
        )
    };
    for p in &e.pruned.layout.pieces {
        match p {
            Piece::Image(i) => {
                let r = e.pruned.ranges.get(*i).ok_or_else(bad)?;
                match &e.built {
                    Some(b) => out.piece(Piece::Bytes(
                        b.get(usize_from(r.start)..usize_from(r.end))
                            .ok_or_else(bad)?
                            .to_vec(),
                    )),
                    None => out.span(0, add(e.offset, r.start)?, sub(r.end, r.start)?),
                }
            }
            other => out.piece(other.clone()),
        }
    }
    Ok(())
}

/// The containers of the section at file offset `s_offset` (`s_size`
/// bytes, aligned to `s_align`), packed from its start at its alignment
/// (at least 8), and where the last of them ends; refused when bytes other
/// than zeros lie between them.
pub(super) fn pack<'p>(
    data: &[u8],
    report: &Report,
    plan: &'p Plan,
    (s_offset, s_size, s_align): (u64, u64, u64),
) -> Result<(Vec<Packed<'p>>, u64), Refusal> {
    let end = add(s_offset, s_size)?;
    let mut found: Vec<(u64, u64)> = report
        .containers
        .iter()
        .filter(|c| c.parent.is_none() && c.kind != ContainerKind::FatbinWrapper)
        .filter_map(|c| Some((c.offset?, c.size)))
        .filter(|&(o, _)| s_offset <= o && o < end)
        .collect();
    found.sort_unstable();
    let align = s_align.clamp(8, 1 << 16);
    let mut out = Vec::with_capacity(found.len());
    let (mut seen, mut cursor) = (s_offset, s_offset);
    for (old, size) in found {
        if old < seen || old.saturating_add(size) > end {
            return Err("containers overlap, or run past their section".into());
        }
        let gap = &data[usize_from(seen)..usize_from(old)];
        if gap.iter().any(|&b| b != 0) {
            return Err(format!(
                "bytes that belong to no container lie at {seen:#x}"
            ));
        }
        let edit = plan.edits.iter().find(|e| e.offset == old);
        let new = add(round_up(sub(cursor, s_offset)?, align)?, s_offset)?;
        cursor = add(new, edit.map_or(size, |e| e.pruned.layout.size))?;
        seen = add(old, size)?;
        out.push(Packed {
            old,
            size,
            new,
            edit,
        });
    }
    if data[usize_from(seen)..usize_from(end)]
        .iter()
        .any(|&b| b != 0)
    {
        return Err("bytes that belong to no container end the section".into());
    }
    Ok((out, cursor))
}

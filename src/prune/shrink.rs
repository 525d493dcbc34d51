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
//! relocations (`R_X86_64_RELATIVE`, `R_AARCH64_RELATIVE`, and packed
//! `SHT_RELR` ones) whose target is a container's start, the data pointer
//! of each fatbin wrapper (the only reference a non-PIE program has), and
//! symbols defined at a container's start. A reference into a container
//! other than at its start, a relocation of another kind against the
//! section, or a layout this does not know (64-bit little-endian x86-64 and
//! AArch64 only; one fat-binary section; the section in a read-only,
//! file-backed load segment) makes [`shrink`] say why, and the caller
//! rewrites the file in place instead.

use std::collections::BTreeMap;

use object::elf;

use super::output::Output;
use super::plan::{Edit, Part, Plan};
use crate::layout::Piece;
use crate::num::{len64, usize_from};
use crate::scan::{ContainerKind, Report};

/// Why a file was not shrunk.
pub type Refusal = String;

/// `a + b`, or a refusal when the sum passes 2^64.
fn add(a: u64, b: u64) -> Result<u64, Refusal> {
    a.checked_add(b)
        .ok_or_else(|| format!("an offset or address overflows ({a:#x} + {b:#x})"))
}

/// `a - b`, or a refusal when `b` is the larger.
fn sub(a: u64, b: u64) -> Result<u64, Refusal> {
    a.checked_sub(b)
        .ok_or_else(|| format!("an offset or address lies before another ({a:#x} - {b:#x})"))
}

/// `a` rounded up to a multiple of `m`, or a refusal when that passes
/// 2^64 (or `m` is 0).
fn round_up(a: u64, m: u64) -> Result<u64, Refusal> {
    a.checked_next_multiple_of(m)
        .ok_or_else(|| format!("{a:#x} rounded up to a multiple of {m:#x} overflows"))
}

const PHENT: u64 = 56;
const SHENT: u64 = 64;

fn u16_at(d: &[u8], at: u64) -> Option<u16> {
    Some(u16::from_le_bytes(
        d.get(usize_from(at)..)?.get(..2)?.try_into().ok()?,
    ))
}
fn u32_at(d: &[u8], at: u64) -> Option<u32> {
    Some(u32::from_le_bytes(
        d.get(usize_from(at)..)?.get(..4)?.try_into().ok()?,
    ))
}
fn u64_at(d: &[u8], at: u64) -> Option<u64> {
    Some(u64::from_le_bytes(
        d.get(usize_from(at)..)?.get(..8)?.try_into().ok()?,
    ))
}

/// A program header's fields.
#[derive(Debug, Clone, Copy)]
struct Phdr {
    p_type: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    paddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
}

impl Phdr {
    fn read(d: &[u8], at: u64) -> Option<Phdr> {
        let d = d.get(usize_from(at)..)?.get(..56)?;
        Some(Phdr {
            p_type: u32_at(d, 0)?,
            flags: u32_at(d, 4)?,
            offset: u64_at(d, 8)?,
            vaddr: u64_at(d, 16)?,
            paddr: u64_at(d, 24)?,
            filesz: u64_at(d, 32)?,
            memsz: u64_at(d, 40)?,
            align: u64_at(d, 48)?,
        })
    }

    fn bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(56);
        b.extend_from_slice(&self.p_type.to_le_bytes());
        b.extend_from_slice(&self.flags.to_le_bytes());
        for v in [
            self.offset,
            self.vaddr,
            self.paddr,
            self.filesz,
            self.memsz,
            self.align,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }
}

/// A section header's fields that matter here.
#[derive(Debug, Clone, Copy)]
struct Shdr {
    /// Where the header lies.
    at: u64,
    sh_type: u32,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
    align: u64,
    entsize: u64,
}

impl Shdr {
    fn read(data: &[u8], at: u64) -> Option<Shdr> {
        let d = data.get(usize_from(at)..)?.get(..64)?;
        Some(Shdr {
            at,
            sh_type: u32_at(d, 4)?,
            flags: u64_at(d, 8)?,
            addr: u64_at(d, 16)?,
            offset: u64_at(d, 24)?,
            size: u64_at(d, 32)?,
            align: u64_at(d, 48)?,
            entsize: u64_at(d, 56)?,
        })
    }
}

/// Byte edits to the input, by file offset.
#[derive(Default)]
struct Patches(BTreeMap<u64, Vec<u8>>);

impl Patches {
    /// Puts `bytes` at `at`; refused when they overlap other bytes put
    /// before (the same bytes at the same place again are one edit: a
    /// pointer both a relocation and a wrapper name).
    fn put(&mut self, at: u64, bytes: Vec<u8>) -> Result<(), Refusal> {
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
    fn copy(&self, out: &mut Output, from: u64, to: u64) -> Result<(), Refusal> {
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
struct Packed<'p> {
    old: u64,
    size: u64,
    new: u64,
    edit: Option<&'p Edit>,
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

/// The headers of a 64-bit little-endian ELF file.
struct Elf {
    phoff: u64,
    shoff: u64,
    /// The relative relocation type of the file's machine.
    relative: u32,
    phdrs: Vec<Phdr>,
    shdrs: Vec<Shdr>,
}

impl Elf {
    fn read(data: &[u8]) -> Result<Elf, Refusal> {
        let bad = || "the ELF headers cannot be read".to_string();
        if data.get(..6) != Some(b"\x7fELF\x02\x01") {
            return Err("only 64-bit little-endian files are shrunk".into());
        }
        let machine = u16_at(data, 18).ok_or_else(bad)?;
        let relative = match machine {
            m if m == elf::EM_X86_64.0 => elf::R_X86_64_RELATIVE.0,
            m if m == elf::EM_AARCH64.0 => elf::R_AARCH64_RELATIVE.0,
            m => {
                return Err(format!(
                    "machine {m} is not shrunk (x86-64 and AArch64 are)"
                ));
            }
        };
        let phoff = u64_at(data, 32).ok_or_else(bad)?;
        let shoff = u64_at(data, 40).ok_or_else(bad)?;
        let phnum = u64::from(u16_at(data, 56).ok_or_else(bad)?);
        let shnum = u64::from(u16_at(data, 60).ok_or_else(bad)?);
        if shnum == 0 || phnum == 0 {
            return Err("the file has no section or program headers".into());
        }
        let phdrs: Vec<Phdr> = (0..phnum)
            .map(|i| Phdr::read(data, phoff.checked_add(i * PHENT)?))
            .collect::<Option<_>>()
            .ok_or_else(bad)?;
        let shdrs: Vec<Shdr> = (0..shnum)
            .map(|i| Shdr::read(data, shoff.checked_add(i * SHENT)?))
            .collect::<Option<_>>()
            .ok_or_else(bad)?;
        // Every range the headers give lies in the file (so no sum below
        // overflows and no slice runs past the end).
        let len = data.len() as u64;
        let inside = |off: u64, size: u64| off.checked_add(size).is_some_and(|e| e <= len);
        let vm = |addr: u64, size: u64| addr.checked_add(size).is_some();
        if !phdrs.iter().all(|p: &Phdr| {
            inside(p.offset, p.filesz) && vm(p.vaddr, p.memsz) && vm(p.paddr, p.memsz)
        }) || !shdrs.iter().all(|h| {
            (h.sh_type == elf::SHT_NOBITS.0 || inside(h.offset, h.size)) && vm(h.addr, h.size)
        }) {
            return Err("the headers point outside the file".into());
        }
        Ok(Elf {
            phoff,
            shoff,
            relative,
            phdrs,
            shdrs,
        })
    }
}

/// The pages to remove from the file, and what that does to the segment
/// holding the fat-binary section.
struct Hole {
    /// The segment (index in the program headers) and its header.
    li: usize,
    l: Phdr,
    /// The file range removed, `[a, b)`, whole pages.
    a: u64,
    b: u64,
    /// Whether the segment goes on after the hole (and is split in two).
    splits: bool,
    /// Where the new program header table goes (when the segment splits),
    /// and its size.
    table: u64,
    need: u64,
}

impl Hole {
    /// The hole after `pack_end` in section `s`, in the load segment that
    /// holds it.
    fn find(elf: &Elf, s: &Shdr, pack_end: u64) -> Result<Hole, Refusal> {
        let phdrs = &elf.phdrs;
        let load = |p: &&Phdr| p.p_type == elf::PT_LOAD.0;
        let page = phdrs
            .iter()
            .filter(load)
            .map(|p| p.align)
            .max()
            .unwrap_or(4096)
            .max(4096);
        let s_end = add(s.offset, s.size)?;
        let li = phdrs
            .iter()
            .position(|p| {
                p.p_type == elf::PT_LOAD.0
                    && p.offset <= s.offset
                    && p.offset.checked_add(p.filesz).is_some_and(|e| s_end <= e)
            })
            .ok_or("the section is not in one load segment")?;
        let l = phdrs[li];
        if l.memsz != l.filesz || l.flags & elf::PF_W.0 != 0 {
            return Err(
                "the section's load segment is writable or longer in memory than on disk".into(),
            );
        }
        let splits = add(l.offset, l.filesz)? > s_end;
        // At most 65,536 headers (e_phnum is 16 bits): no overflow.
        let need = if splits {
            (len64(phdrs) + 1) * PHENT
        } else {
            0
        };
        let table = round_up(pack_end, 8)?;
        let a = round_up(add(table, need)?, page)?;
        let b = s_end / page * page;
        if b <= a {
            return Err("pruning frees less than a page at the section's end".into());
        }
        for (i, p) in phdrs.iter().enumerate() {
            if i != li && p.filesz > 0 && p.offset < b && add(p.offset, p.filesz)? > a {
                return Err(format!(
                    "a segment of type {:#x} covers the pages to remove",
                    p.p_type
                ));
            }
        }
        Ok(Hole {
            li,
            l,
            a,
            b,
            splits,
            table,
            need,
        })
    }

    /// How far the bytes after the hole move down (`b > a`, as
    /// [`Hole::find`] checks: saturating never changes it).
    fn shift(&self) -> u64 {
        self.b.saturating_sub(self.a)
    }

    /// Where a file offset goes (one past the hole is at least `b`, more
    /// than the shift: saturating never changes it).
    fn moved(&self, off: u64) -> u64 {
        if off >= self.b {
            off.saturating_sub(self.shift())
        } else {
            off
        }
    }

    /// The new program headers: the segment cut at the hole (in two when
    /// it goes on after it, each part executable only if it holds code),
    /// the header table's own entry where the table now lies, every later
    /// offset moved down.
    fn program_headers(&self, elf: &Elf, pack_end: u64) -> Result<Vec<Phdr>, Refusal> {
        let (l, a, b) = (self.l, self.a, self.b);
        // Whether file range [from, to) holds an executable section.
        let code = |from: u64, to: u64| {
            elf.shdrs.iter().any(|h| {
                h.flags & elf::SHF_EXECINSTR.0 != 0
                    && h.sh_type != elf::SHT_NOBITS.0
                    && h.offset < to
                    && h.offset.checked_add(h.size).is_some_and(|e| e > from)
            })
        };
        let flags = |from: u64, to: u64| {
            if code(from, to) {
                l.flags
            } else {
                l.flags & !elf::PF_X.0
            }
        };
        let mut out = Vec::with_capacity(elf.phdrs.len() + 1);
        for (i, p) in elf.phdrs.iter().enumerate() {
            let mut q = *p;
            if i == self.li && self.splits {
                let end = add(l.offset, l.filesz)?;
                let (first, skipped) = (sub(a, l.offset)?, sub(b, l.offset)?);
                out.push(Phdr {
                    flags: flags(l.offset, a),
                    filesz: first,
                    memsz: first,
                    ..l
                });
                q = Phdr {
                    flags: flags(b, end),
                    offset: self.moved(b),
                    vaddr: add(l.vaddr, skipped)?,
                    paddr: add(l.paddr, skipped)?,
                    filesz: sub(end, b)?,
                    memsz: sub(end, b)?,
                    ..l
                };
            } else if i == self.li {
                q.filesz = sub(pack_end, l.offset)?;
                q.memsz = q.filesz;
            } else if q.p_type == elf::PT_PHDR.0 && self.splits {
                let into = sub(self.table, l.offset)?;
                q.offset = self.table;
                q.vaddr = add(l.vaddr, into)?;
                q.paddr = add(l.paddr, into)?;
                q.filesz = self.need;
                q.memsz = self.need;
            } else {
                q.offset = self.moved(q.offset);
            }
            out.push(q);
        }
        Ok(out)
    }
}

/// The shrunk form of the linked file `data` (scanned as `report`) that
/// `plan` prunes in place, with what became of its layout, or why there is
/// none.
pub fn shrink(data: &[u8], report: &Report, plan: &Plan) -> Result<(Output, Shrunk), Refusal> {
    let elf = Elf::read(data)?;
    // The one section holding every container that changes.
    let holds = |s: &Shdr| -> Option<bool> {
        let end = s.offset.checked_add(s.size)?;
        Some(plan.edits.iter().all(|e| {
            s.offset <= e.offset
                && e.offset
                    .checked_add(e.size)
                    .is_some_and(|e_end| e_end <= end)
        }))
    };
    let s_index = elf
        .shdrs
        .iter()
        .position(|s| s.sh_type != elf::SHT_NOBITS.0 && holds(s) == Some(true))
        .ok_or("the containers lie in more than one section")?;
    let s = elf.shdrs[s_index];
    let (packed, pack_end) = pack(data, report, plan, &s)?;
    let hole = Hole::find(&elf, &s, pack_end)?;
    keeps_fixed_parts(data, s_index, hole.li, s.offset, hole.b)?;
    let moved: BTreeMap<u64, u64> = packed
        .iter()
        .map(|p| {
            let old = add(s.addr, sub(p.old, s.offset)?)?;
            Ok((old, add(s.addr, sub(p.new, s.offset)?)?))
        })
        .collect::<Result<_, Refusal>>()?;
    // Section addresses end by 2^64 (`Elf::read` checks).
    let in_s = |v: u64| v.checked_sub(s.addr).is_some_and(|d| d < s.size);
    let new_vaddr = |v: u64| -> Result<u64, Refusal> {
        moved
            .get(&v)
            .copied()
            .ok_or_else(|| format!("something points at {v:#x}, inside a container"))
    };
    let mut patches = Patches::default();
    fix_relocations(data, &elf, &in_s, &new_vaddr, &mut patches)?;
    fix_wrappers(data, report, &in_s, &new_vaddr, &mut patches)?;
    fix_symbols(data, &elf.shdrs, s_index, &in_s, &new_vaddr, &mut patches)?;
    fix_headers(&elf, s_index, &hole, pack_end, &mut patches)?;
    let new_phdrs = hole.program_headers(&elf, pack_end)?;
    let table: Vec<u8> = new_phdrs.iter().flat_map(Phdr::bytes).collect();
    let part = |p: &Phdr| Segment {
        offset: p.offset,
        address: p.vaddr,
        size: p.filesz,
    };
    let shrunk = Shrunk {
        section: section_name(data, &elf, s_index),
        section_size: (s.size, sub(pack_end, s.offset)?),
        removed: (hole.a, hole.b),
        segment: part(&hole.l),
        segments: new_phdrs[hole.li..=hole.li + usize::from(hole.splits)]
            .iter()
            .map(part)
            .collect(),
    };
    if hole.splits {
        patches.put(32, hole.table.to_le_bytes().to_vec())?;
        let n = u16::try_from(elf.phdrs.len() + 1).map_err(|_| "too many program headers")?;
        patches.put(56, n.to_le_bytes().to_vec())?;
    } else {
        // The table stays where it is, or moves down with what follows
        // the hole.
        patches.put(32, hole.moved(elf.phoff).to_le_bytes().to_vec())?;
        patches.put(elf.phoff, table.clone())?;
    }
    let out = assemble(data, &s, &packed, &hole, table, &patches)?;
    Ok((out, shrunk))
}

/// Refuses shrinking when a part of the file that must stay
/// ([`super::plan::Fixed`]), other than section `s_index` and load segment
/// `li`, has bytes in `[from, to)`: the bytes that shrinking rewrites (the
/// containers packed, the new program header table) or removes. (The
/// plan refused those in the containers that are rewritten, which a file
/// rewritten in place changes alone: that file is safe to write.)
fn keeps_fixed_parts(
    data: &[u8],
    s_index: usize,
    li: usize,
    from: u64,
    to: u64,
) -> Result<(), Refusal> {
    let parts = super::plan::fixed_parts(data).map_err(|e| e.to_string())?;
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
    patches.copy(&mut out, 0, s.offset)?;
    let mut at = s.offset;
    for p in packed {
        out.piece(Piece::Zeros(sub(p.new, at)?));
        match p.edit {
            Some(e) => container(&mut out, e)?,
            None => patches.copy(&mut out, p.old, add(p.old, p.size)?)?,
        }
        at = add(p.new, p.edit.map_or(p.size, |e| e.pruned.layout.size))?;
    }
    if hole.splits {
        out.piece(Piece::Zeros(sub(hole.table, at)?));
        out.piece(Piece::Bytes(table));
        at = add(hole.table, hole.need)?;
    }
    out.piece(Piece::Zeros(sub(hole.a, at)?));
    patches.copy(&mut out, hole.b, len64(data))?;
    Ok(out)
}

/// Section `i`'s name, from the section-name table.
fn section_name(data: &[u8], elf: &Elf, i: usize) -> String {
    let name = || -> Option<String> {
        let strndx = usize::from(u16_at(data, 62)?);
        let table = elf.shdrs.get(strndx)?;
        let name = u64::from(u32_at(data, elf.shdrs.get(i)?.at)?);
        let at = usize_from(table.offset.checked_add(name)?);
        let bytes = data.get(at..)?;
        let end = bytes.iter().position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
    };
    name().unwrap_or_default()
}

/// Section headers after the hole move down, the section ends where its
/// packed containers end, and so does the section header table.
fn fix_headers(
    elf: &Elf,
    s_index: usize,
    hole: &Hole,
    pack_end: u64,
    patches: &mut Patches,
) -> Result<(), Refusal> {
    for (i, h) in elf.shdrs.iter().enumerate() {
        if i == s_index {
            let size = sub(pack_end, h.offset)?;
            patches.put(add(h.at, 32)?, size.to_le_bytes().to_vec())?;
        } else if h.offset >= hole.b {
            let offset = hole.moved(h.offset);
            patches.put(add(h.at, 24)?, offset.to_le_bytes().to_vec())?;
        } else if h.sh_type != elf::SHT_NOBITS.0
            && h.size > 0
            && h.offset < hole.b
            && add(h.offset, h.size)? > hole.a
        {
            return Err("another section lies in the pages to remove".into());
        }
    }
    patches.put(40, hole.moved(elf.shoff).to_le_bytes().to_vec())
}

/// Edit `e`'s new container, appended to `out` (its built bytes copied:
/// the in-place form keeps them).
fn container(out: &mut Output, e: &Edit) -> Result<(), Refusal> {
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

/// The containers of section `s`, packed from its start at its alignment,
/// and where the last of them ends; refused when bytes other than zeros
/// lie between them.
fn pack<'p>(
    data: &[u8],
    report: &Report,
    plan: &'p Plan,
    s: &Shdr,
) -> Result<(Vec<Packed<'p>>, u64), Refusal> {
    let end = add(s.offset, s.size)?;
    let mut found: Vec<(u64, u64)> = report
        .containers
        .iter()
        .filter(|c| c.parent.is_none() && c.kind != ContainerKind::FatbinWrapper)
        .filter_map(|c| Some((c.offset?, c.size)))
        .filter(|&(o, _)| s.offset <= o && o < end)
        .collect();
    found.sort_unstable();
    let align = s.align.clamp(8, 1 << 16);
    let mut out = Vec::with_capacity(found.len());
    let (mut seen, mut cursor) = (s.offset, s.offset);
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
        let new = add(round_up(sub(cursor, s.offset)?, align)?, s.offset)?;
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

/// The file offset of address `v`, in a load segment's file bytes.
fn file_offset(phdrs: &[Phdr], v: u64) -> Option<u64> {
    phdrs.iter().find_map(|p| {
        let into = v.checked_sub(p.vaddr)?;
        let fits = into.checked_add(8).is_some_and(|e| e <= p.filesz);
        (p.p_type == elf::PT_LOAD.0 && fits).then(|| p.offset.checked_add(into))?
    })
}

/// Relative relocations (RELA and RELR) whose target is in the section:
/// given the target's new address. Relocations against a symbol follow the
/// symbol, which [`fix_symbols`] moves.
fn fix_relocations(
    data: &[u8],
    elf: &Elf,
    in_s: &dyn Fn(u64) -> bool,
    new_vaddr: &dyn Fn(u64) -> Result<u64, Refusal>,
    patches: &mut Patches,
) -> Result<(), Refusal> {
    let stored = |patches: &mut Patches, v: u64| -> Result<(), Refusal> {
        let Some(at) = file_offset(&elf.phdrs, v) else {
            return Ok(());
        };
        let old = u64_at(data, at).unwrap_or(0);
        if in_s(old) {
            patches.put(at, new_vaddr(old)?.to_le_bytes().to_vec())?;
        }
        Ok(())
    };
    // `k * 24` and `k * 8` are at most the table's size: no overflow.
    for h in &elf.shdrs {
        if h.sh_type == elf::SHT_RELA.0 && h.entsize == 24 {
            for k in 0..h.size / 24 {
                let at = add(h.offset, k * 24)?;
                let (Some(r_offset), Some(info), Some(addend)) = (
                    u64_at(data, at),
                    u64_at(data, add(at, 8)?),
                    u64_at(data, add(at, 16)?),
                ) else {
                    return Err("a relocation runs past the file".into());
                };
                if (info & 0xffff_ffff) as u32 == elf.relative && in_s(addend) {
                    let new = new_vaddr(addend)?;
                    patches.put(add(at, 16)?, new.to_le_bytes().to_vec())?;
                    stored(patches, r_offset)?;
                }
            }
        } else if h.sh_type == elf::SHT_RELR.0 {
            let mut base = 0u64;
            for k in 0..h.size / 8 {
                let entry =
                    u64_at(data, add(h.offset, k * 8)?).ok_or("a RELR entry runs past the file")?;
                if entry & 1 == 0 {
                    stored(patches, entry)?;
                    base = add(entry, 8)?;
                } else {
                    for bit in 1..64 {
                        if entry >> bit & 1 == 1 {
                            stored(patches, add(base, (bit - 1) * 8)?)?;
                        }
                    }
                    base = add(base, 63 * 8)?;
                }
            }
        }
    }
    Ok(())
}

/// Each fatbin wrapper's data pointer, where the file stores it (non-PIE
/// programs, and some linkers' PIE output too).
fn fix_wrappers(
    data: &[u8],
    report: &Report,
    in_s: &dyn Fn(u64) -> bool,
    new_vaddr: &dyn Fn(u64) -> Result<u64, Refusal>,
    patches: &mut Patches,
) -> Result<(), Refusal> {
    for c in &report.containers {
        if c.kind != ContainerKind::FatbinWrapper || c.parent.is_some() {
            continue;
        }
        let Some(at) = c.offset.and_then(|o| o.checked_add(8)) else {
            continue;
        };
        let v = u64_at(data, at).unwrap_or(0);
        if in_s(v) {
            patches.put(at, new_vaddr(v)?.to_le_bytes().to_vec())?;
        }
    }
    Ok(())
}

/// Symbols defined in the section (`.symtab`, `.dynsym`): moved with the
/// container they start; one inside a container is refused.
fn fix_symbols(
    data: &[u8],
    shdrs: &[Shdr],
    s_index: usize,
    in_s: &dyn Fn(u64) -> bool,
    new_vaddr: &dyn Fn(u64) -> Result<u64, Refusal>,
    patches: &mut Patches,
) -> Result<(), Refusal> {
    for h in shdrs {
        if (h.sh_type != elf::SHT_SYMTAB.0 && h.sh_type != elf::SHT_DYNSYM.0) || h.entsize != 24 {
            continue;
        }
        // `k * 24` is at most the table's size: no overflow.
        for k in 0..h.size / 24 {
            let at = add(h.offset, k * 24)?;
            let shndx = u16_at(data, add(at, 6)?).ok_or("a symbol runs past the file")?;
            let value = u64_at(data, add(at, 8)?).ok_or("a symbol runs past the file")?;
            if usize::from(shndx) == s_index && in_s(value) {
                patches.put(add(at, 8)?, new_vaddr(value)?.to_le_bytes().to_vec())?;
            }
        }
    }
    Ok(())
}

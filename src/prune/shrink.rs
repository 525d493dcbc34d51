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
//! section, or a layout this does not know (a machine whose relative
//! relocation is not known here, see [`relative_type`]; one fat-binary
//! section; the section in a read-only, file-backed load segment) makes
//! [`shrink`] say why, and the caller rewrites the file in place instead.
//!
//! The file is read with `object`'s ELF reader, in its class and byte
//! order ([`Class`]), and what changes is written with `object`'s types
//! in the same class and order: the program header table through its
//! [`Encoder`], each field patched as its `U16`/`U32`/`U64`, where
//! `offset_of!` on `object::elf`'s structures places it.

use std::collections::BTreeMap;
use std::mem::offset_of;

use object::elf::{self, FileHeader32, FileHeader64};
use object::pod::bytes_of;
use object::read::elf::{FileHeader, Rel as _, Rela as _, Relr as _, SectionHeader as _, Sym as _};
use object::write::elf::{Encoder, ProgramHeader as Phdr, SectionHeader as Shdr};
use object::{Endianness, ReadRef as _, U16, U32, U64};

use super::output::Output;
use super::plan::{Edit, Part, Plan};
use crate::layout::Piece;
use crate::num::{len64, u64_from, usize_from};
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

/// An ELF class, in either byte order, as shrinking reads and patches
/// it: `object`'s reader for the class, and where the fields shrinking
/// rewrites lie in its structures.
trait Class: FileHeader<Endian = Endianness> {
    /// `e_phoff`, `e_shoff` and `e_phnum` in the file header.
    const E_PHOFF: usize;
    const E_SHOFF: usize;
    const E_PHNUM: usize;
    /// `sh_offset` and `sh_size` in a section header.
    const SH_OFFSET: usize;
    const SH_SIZE: usize;
    /// `r_addend` in a relocation with an addend.
    const R_ADDEND: usize;
    /// `st_value` in a symbol.
    const ST_VALUE: usize;
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

/// A linked ELF file's headers, read with `object` in the file's class
/// `H` and byte order.
struct Elf<'data, H: Class> {
    header: &'data H,
    endian: Endianness,
    /// Writes program headers in the file's class and byte order.
    encoder: Encoder<Endianness>,
    machine: elf::Machine,
    phoff: u64,
    shoff: u64,
    phdrs: Vec<Phdr>,
    /// The section headers as they lie in the file, and their values.
    sections: &'data [H::SectionHeader],
    shdrs: Vec<Shdr>,
}

/// The relative relocation type of machine `machine` in files of the
/// class `is_64` says, for the machines whose files are shrunk: the
/// relocation a position-independent file's pointers into the fat-binary
/// section carry.
fn relative_type(machine: elf::Machine, is_64: bool) -> Option<elf::RelocationType> {
    match (machine, is_64) {
        (elf::EM_X86_64, true) => Some(elf::R_X86_64_RELATIVE),
        (elf::EM_AARCH64, true) => Some(elf::R_AARCH64_RELATIVE),
        _ => None,
    }
}

impl<'data, H: Class> Elf<'data, H> {
    fn read(data: &'data [u8]) -> Result<Self, Refusal> {
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
    /// like it are not shrunk.
    fn relative(&self) -> Result<elf::RelocationType, Refusal> {
        let is_64 = self.encoder.is_64();
        let bits = if is_64 { 64 } else { 32 };
        if self.endian == Endianness::Big {
            return Err(format!(
                "big-endian files are not shrunk (this one: {bits}-bit, machine {})",
                self.machine.0
            ));
        }
        relative_type(self.machine, is_64).ok_or_else(|| {
            format!(
                "machine {} in {bits}-bit files is not shrunk (64-bit x86-64 and AArch64 are)",
                self.machine.0
            )
        })
    }

    /// `v` as a word of the file (a refusal when it does not fit).
    fn word(&self, v: u64) -> Result<Vec<u8>, Refusal> {
        H::word(self.endian, v).ok_or_else(|| format!("{v:#x} does not fit in a word of the file"))
    }

    /// The word of the file at offset `at`, when it lies in `data`.
    fn word_at(&self, data: &[u8], at: u64) -> Option<u64> {
        H::word_at(self.endian, data, at)
    }

    /// Where section `i`'s header lies in the file.
    fn section_header_at(&self, i: usize) -> Result<u64, Refusal> {
        // The table was read from the file: no product overflows.
        add(self.shoff, u64_from(i * size_of::<H::SectionHeader>()))
    }

    /// The program header table `phdrs` in the file's class and byte
    /// order (a refusal when a value does not fit its field).
    fn program_header_table(&self, phdrs: &[Phdr]) -> Result<Vec<u8>, Refusal> {
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
    fn find<H: Class>(elf: &Elf<'_, H>, s: &Shdr, pack_end: u64) -> Result<Hole, Refusal> {
        let phdrs = &elf.phdrs;
        let load = |p: &&Phdr| p.p_type == elf::PT_LOAD;
        let page = phdrs
            .iter()
            .filter(load)
            .map(|p| p.p_align)
            .max()
            .unwrap_or(4096)
            .max(4096);
        let s_end = add(s.sh_offset, s.sh_size)?;
        let li = phdrs
            .iter()
            .position(|p| {
                p.p_type == elf::PT_LOAD
                    && p.p_offset <= s.sh_offset
                    && p.p_offset
                        .checked_add(p.p_filesz)
                        .is_some_and(|e| s_end <= e)
            })
            .ok_or("the section is not in one load segment")?;
        let l = phdrs[li].clone();
        if l.p_memsz != l.p_filesz || l.p_flags.contains(elf::PF_W) {
            return Err(
                "the section's load segment is writable or longer in memory than on disk".into(),
            );
        }
        let splits = add(l.p_offset, l.p_filesz)? > s_end;
        // At most 65,536 headers (e_phnum is 16 bits) of at most 56
        // bytes: no overflow.
        let need = if splits {
            (len64(phdrs) + 1) * elf.encoder.program_header_size()
        } else {
            0
        };
        let table = round_up(pack_end, elf.encoder.address_size())?;
        let a = round_up(add(table, need)?, page)?;
        let b = s_end / page * page;
        if b <= a {
            return Err("pruning frees less than a page at the section's end".into());
        }
        for (i, p) in phdrs.iter().enumerate() {
            if i != li && p.p_filesz > 0 && p.p_offset < b && add(p.p_offset, p.p_filesz)? > a {
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
    fn program_headers<H: Class>(
        &self,
        elf: &Elf<'_, H>,
        pack_end: u64,
    ) -> Result<Vec<Phdr>, Refusal> {
        let (l, a, b) = (&self.l, self.a, self.b);
        // Whether file range [from, to) holds an executable section.
        let code = |from: u64, to: u64| {
            elf.shdrs.iter().any(|h| {
                h.sh_flags.contains(elf::SHF_EXECINSTR)
                    && h.sh_type != elf::SHT_NOBITS
                    && h.sh_offset < to
                    && h.sh_offset.checked_add(h.sh_size).is_some_and(|e| e > from)
            })
        };
        let flags = |from: u64, to: u64| {
            if code(from, to) {
                l.p_flags
            } else {
                l.p_flags.without(elf::PF_X)
            }
        };
        let mut out = Vec::with_capacity(elf.phdrs.len() + 1);
        for (i, p) in elf.phdrs.iter().enumerate() {
            let mut q = p.clone();
            if i == self.li && self.splits {
                let end = add(l.p_offset, l.p_filesz)?;
                let (first, skipped) = (sub(a, l.p_offset)?, sub(b, l.p_offset)?);
                out.push(Phdr {
                    p_flags: flags(l.p_offset, a),
                    p_filesz: first,
                    p_memsz: first,
                    ..l.clone()
                });
                q = Phdr {
                    p_flags: flags(b, end),
                    p_offset: self.moved(b),
                    p_vaddr: add(l.p_vaddr, skipped)?,
                    p_paddr: add(l.p_paddr, skipped)?,
                    p_filesz: sub(end, b)?,
                    p_memsz: sub(end, b)?,
                    ..l.clone()
                };
            } else if i == self.li {
                q.p_filesz = sub(pack_end, l.p_offset)?;
                q.p_memsz = q.p_filesz;
            } else if q.p_type == elf::PT_PHDR && self.splits {
                let into = sub(self.table, l.p_offset)?;
                q.p_offset = self.table;
                q.p_vaddr = add(l.p_vaddr, into)?;
                q.p_paddr = add(l.p_paddr, into)?;
                q.p_filesz = self.need;
                q.p_memsz = self.need;
            } else {
                q.p_offset = self.moved(q.p_offset);
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
    match object::FileKind::parse(data) {
        Ok(object::FileKind::Elf32) => shrink_as::<FileHeader32<Endianness>>(data, report, plan),
        Ok(object::FileKind::Elf64) => shrink_as::<FileHeader64<Endianness>>(data, report, plan),
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
    let (packed, pack_end) = pack(data, report, plan, s)?;
    let hole = Hole::find(&elf, s, pack_end)?;
    keeps_fixed_parts(data, s_index, hole.li, s.sh_offset, hole.b)?;
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
    fix_relocations(data, &elf, relative, &in_s, &new_vaddr, &mut patches)?;
    fix_wrappers(data, &elf, report, &in_s, &new_vaddr, &mut patches)?;
    fix_symbols(data, &elf, s_index, &in_s, &new_vaddr, &mut patches)?;
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
    patches.copy(&mut out, 0, s.sh_offset)?;
    let mut at = s.sh_offset;
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
fn section_name<H: Class>(data: &[u8], elf: &Elf<'_, H>, i: usize) -> String {
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

/// Section headers after the hole move down, the section ends where its
/// packed containers end, and so does the section header table.
fn fix_headers<H: Class>(
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
    let end = add(s.sh_offset, s.sh_size)?;
    let mut found: Vec<(u64, u64)> = report
        .containers
        .iter()
        .filter(|c| c.parent.is_none() && c.kind != ContainerKind::FatbinWrapper)
        .filter_map(|c| Some((c.offset?, c.size)))
        .filter(|&(o, _)| s.sh_offset <= o && o < end)
        .collect();
    found.sort_unstable();
    let align = s.sh_addralign.clamp(8, 1 << 16);
    let mut out = Vec::with_capacity(found.len());
    let (mut seen, mut cursor) = (s.sh_offset, s.sh_offset);
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
        let new = add(round_up(sub(cursor, s.sh_offset)?, align)?, s.sh_offset)?;
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

/// The file offset of address `v`, in a load segment's file bytes that
/// hold `size` bytes from there.
fn file_offset(phdrs: &[Phdr], v: u64, size: u64) -> Option<u64> {
    phdrs.iter().find_map(|p| {
        let into = v.checked_sub(p.p_vaddr)?;
        let fits = into.checked_add(size).is_some_and(|e| e <= p.p_filesz);
        (p.p_type == elf::PT_LOAD && fits).then(|| p.p_offset.checked_add(into))?
    })
}

/// The entries of table section `i` as `T`s, read with `object`; refused
/// when the section cannot be read as such, or says its entries are of
/// another size.
fn entries<'data, H: Class, T: object::Pod>(
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
    elf.sections[i]
        .data_as_array(elf.endian, data)
        .map_err(|e| format!("section {i} cannot be read ({e})"))
}

/// Relative relocations (REL, RELA and RELR) whose target is in the
/// section: given the target's new address (a RELA's addend, and the
/// address stored at the place relocated, which is the addend of the
/// others). Relocations against a symbol follow the symbol, which
/// [`fix_symbols`] moves.
fn fix_relocations<H: Class>(
    data: &[u8],
    elf: &Elf<'_, H>,
    relative: elf::RelocationType,
    in_s: &dyn Fn(u64) -> bool,
    new_vaddr: &dyn Fn(u64) -> Result<u64, Refusal>,
    patches: &mut Patches,
) -> Result<(), Refusal> {
    let (endian, word) = (elf.endian, u64_from(size_of::<H::Word>()));
    let stored = |patches: &mut Patches, v: u64| -> Result<(), Refusal> {
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
                if r.r_type(endian, is_mips64el) == relative && in_s(addend) {
                    // `k * size` is at most the table's size: no overflow.
                    let at = add(h.sh_offset, u64_from(k * size))?;
                    let new = new_vaddr(addend)?;
                    patches.put(add(at, u64_from(H::R_ADDEND))?, elf.word(new)?)?;
                    stored(patches, r.r_offset(endian).into())?;
                }
            }
        } else if h.sh_type == elf::SHT_RELR {
            let relr: &[H::Relr] = elf.sections[i]
                .data_as_array(endian, data)
                .map_err(|e| format!("section {i} cannot be read ({e})"))?;
            // An even entry is an address; an odd one, a bitmap of the
            // `COUNT` words after the last address or bitmap.
            let count = u64::from(<H::Relr as object::read::elf::Relr>::COUNT);
            let mut base = 0u64;
            for r in relr {
                let entry: u64 = r.get(endian).into();
                if entry & 1 == 0 {
                    stored(patches, entry)?;
                    base = add(entry, word)?;
                } else {
                    for bit in 1..=count {
                        if entry >> bit & 1 == 1 {
                            stored(patches, add(base, (bit - 1) * word)?)?;
                        }
                    }
                    base = add(base, count * word)?;
                }
            }
        }
    }
    Ok(())
}

/// Each fatbin wrapper's data pointer (the word after its magic and
/// version), where the file stores it (non-PIE programs, and some
/// linkers' PIE output too).
fn fix_wrappers<H: Class>(
    data: &[u8],
    elf: &Elf<'_, H>,
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
        let v = elf.word_at(data, at).unwrap_or(0);
        if in_s(v) {
            patches.put(at, elf.word(new_vaddr(v)?)?)?;
        }
    }
    Ok(())
}

/// Symbols defined in the section (`.symtab`, `.dynsym`): moved with the
/// container they start; one inside a container is refused.
fn fix_symbols<H: Class>(
    data: &[u8],
    elf: &Elf<'_, H>,
    s_index: usize,
    in_s: &dyn Fn(u64) -> bool,
    new_vaddr: &dyn Fn(u64) -> Result<u64, Refusal>,
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
            }
        }
    }
    Ok(())
}

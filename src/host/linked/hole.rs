//! The pages removed from the file ([`Hole`]), and the program headers
//! that describe what is left: the load segment that holds the fat-binary
//! section cut at the hole, the header table where it now lies.
//!
//! The hole is cut in pages of the system that loads the file ([`page`]),
//! not in units of the load segments' alignment: NVIDIA links its
//! libraries with 2 MiB `p_align`, and whole 2 MiB units would leave up to
//! 2 MiB of freed bytes in the file. A segment after the hole then moves
//! down by a multiple of the page that may not be one of its `p_align`;
//! its `p_align` is lowered to the largest power of two the move is a
//! multiple of, so that its offset and address stay congruent modulo it.
//! glibc's loader asks no more of a load segment: `p_align` a power of two
//! and a multiple of the page size, `p_offset ≡ p_vaddr (mod p_align)`;
//! it reserves the object's addresses aligned to the largest `p_align`,
//! which the segments before the hole keep.

use object::elf;
use object::write::elf::{ProgramHeader as Phdr, SectionHeader as Shdr};

use super::checked::{Refusal, add, round_up, sub};
use super::file::{Class, Elf};
use crate::num::len64;

/// The pages to remove from the file, and what that does to the segment
/// holding the fat-binary section.
pub(super) struct Hole {
    /// The segment (index in the program headers) and its header.
    pub(super) li: usize,
    pub(super) l: Phdr,
    /// The file range removed, `[a, b)`, whole pages.
    pub(super) a: u64,
    pub(super) b: u64,
    /// Whether the segment goes on after the hole (and is split in two).
    pub(super) splits: bool,
    /// Where the new program header table goes (when the segment splits),
    /// and its size.
    pub(super) table: u64,
    pub(super) need: u64,
}

/// The unit in which bytes are cut out of a file for `machine` whose load
/// segments are aligned to at most `align`: the page of the system that
/// loads it, 4 KiB, or on machines whose kernels may use larger pages
/// (AArch64 and 64-bit POWER: 16 or 64 KiB) up to 64 KiB when the file is
/// aligned for them (GNU ld's AArch64 default is 64 KiB). Never more than
/// `align` asks for, never less than 4 KiB.
pub(super) fn page(machine: elf::Machine, align: u64) -> u64 {
    let largest = match machine {
        elf::EM_AARCH64 | elf::EM_PPC64 => 0x10000,
        _ => 0x1000,
    };
    align.clamp(0x1000, largest)
}

/// `align`, a power of two, lowered when it must be to the largest power
/// of two that `shift` (not 0) is a multiple of: the alignment a segment
/// moved down by `shift` keeps its offset congruent to its address under.
fn congruent_after(align: u64, shift: u64) -> u64 {
    match align {
        0 | 1 => align,
        a if shift.is_multiple_of(a) => a,
        _ => 1 << shift.trailing_zeros(),
    }
}

impl Hole {
    /// The hole after `pack_end` in section `s`, in the load segment that
    /// holds it.
    pub(super) fn find<H: Class>(
        elf: &Elf<'_, H>,
        s: &Shdr,
        pack_end: u64,
    ) -> Result<Hole, Refusal> {
        let phdrs = &elf.phdrs;
        let load = |p: &&Phdr| p.p_type == elf::PT_LOAD;
        if phdrs
            .iter()
            .filter(load)
            .any(|p| p.p_align > 1 && !p.p_align.is_power_of_two())
        {
            return Err("a load segment's alignment is not a power of two".into());
        }
        let largest = phdrs.iter().filter(load).map(|p| p.p_align).max();
        let page = page(elf.machine, largest.unwrap_or(0x1000));
        let s_end = add(s.sh_offset, s.sh_size)?;
        // What follows the section moves down by a multiple of `unit`: a
        // page, or more where a segment other than a load segment (whose
        // alignment is not lowered) would lose its congruence.
        let unit = phdrs
            .iter()
            .filter(|p| p.p_type != elf::PT_LOAD && p.p_offset >= s_end)
            .filter(|p| p.p_align.is_power_of_two() && p.p_align > page)
            .filter(|p| p.p_vaddr.wrapping_sub(p.p_offset).is_multiple_of(p.p_align))
            .map(|p| p.p_align)
            .fold(page, u64::max);
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
        // Pages past `b` are whole: a smaller hole starts a page later.
        let a = sub(b, (b - a) / unit * unit)?;
        if b <= a {
            return Err(format!(
                "pruning frees less than {unit:#x} bytes at the section's end, which a \
                 segment's alignment needs"
            ));
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
    pub(super) fn moved(&self, off: u64) -> u64 {
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
    pub(super) fn program_headers<H: Class>(
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
                    p_align: congruent_after(l.p_align, self.shift()),
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
                if q.p_type == elf::PT_LOAD && p.p_offset >= b {
                    q.p_align = congruent_after(q.p_align, self.shift());
                }
            }
            out.push(q);
        }
        Ok(out)
    }
}

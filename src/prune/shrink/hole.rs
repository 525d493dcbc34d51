//! The pages removed from the file ([`Hole`]), and the program headers
//! that describe what is left: the load segment that holds the fat-binary
//! section cut at the hole, the header table where it now lies.

use object::elf;
use object::write::elf::{ProgramHeader as Phdr, SectionHeader as Shdr};

use super::file::{Class, Elf};
use super::{Refusal, add, round_up, sub};
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

//! Where everything goes in the new file: the sections' and symbols' new
//! numbers, then the offsets of segments, sections and the section header
//! table, as llvm-objcopy's `ELFWriter` places them:
//!
//! - Segments first (linked hosts: shared objects, executables), in offset
//!   order, each at its place inside the segment holding it or at the next
//!   offset congruent to its address modulo its alignment; their bytes are
//!   copied whole (sections inside them are not rewritten; removed ones are
//!   zeroed), the ELF header and program headers written over them.
//! - Then every other section in the order of its offset in the input
//!   (added sections last), each at the next multiple of its alignment (0
//!   counts as 1), `SHT_NOBITS` taking no room.
//! - Then the section header table at the next multiple of the word size.
//!
//! Gaps are zeros. Without program headers, `e_phoff` and `e_phentsize` are
//! 0.

use object::elf;

use super::checked::{invalid, to_u32};
use super::model::{Model, Out, Seg};
use crate::error::Result;

/// The new numbers of sections and symbols.
pub(super) struct Numbering {
    /// Output index of each section (0 for a removed one).
    pub(super) index: Vec<u32>,
    /// The sections that stay (model indices), in order.
    pub(super) live: Vec<usize>,
    /// Output index of each symbol.
    pub(super) sym_index: Vec<u32>,
}

/// Where the segments and the sections go.
pub(super) struct Placement {
    /// The segments, the ELF header's pseudo-segment given its size.
    pub(super) segs: Vec<Seg>,
    /// The output offset of each segment.
    pub(super) seg_at: Vec<u64>,
    /// The output offset of each section written (as the list placed).
    pub(super) placed: Vec<u64>,
    /// The section header table's offset.
    pub(super) shoff: u64,
    /// The size of the file.
    pub(super) total: u64,
}

impl Placement {
    /// The output offset of what lies at input offset `at` inside segment
    /// `p`.
    pub(super) fn in_segment(&self, p: usize, at: u64) -> u64 {
        self.seg_at[p].wrapping_add(at.wrapping_sub(self.segs[p].orig_offset))
    }

    /// The number of real segments (program headers).
    pub(super) fn real(&self) -> usize {
        self.segs.len() - 2
    }
}

impl Model<'_> {
    /// Numbers the sections that stay from 1, and the symbols in their
    /// final order. A relocation naming symbol 0 names no symbol and keeps
    /// 0, even when the input's entry 0 is not null and moves
    /// (llvm-objcopy reads it as no symbol).
    pub(super) fn numbering(&self) -> Result<Numbering> {
        let mut index = vec![0u32; self.secs.len()];
        let mut live = Vec::new();
        for (i, s) in self.secs.iter().enumerate() {
            if !s.removed {
                live.push(i);
                index[i] = to_u32(live.len())?;
            }
        }
        let mut sym_index = vec![0u32; self.symbols.len()];
        for (new, &old) in self.order.iter().enumerate() {
            sym_index[old] = to_u32(new)?;
        }
        if let Some(first) = sym_index.first_mut() {
            *first = 0;
        }
        Ok(Numbering {
            index,
            live,
            sym_index,
        })
    }

    /// Places the segments, then the sections `outs` (the live ones, as
    /// they will be written), then the section header table, and sizes
    /// the file. The whole file must have a size: alignments in hostile
    /// input can push offsets to the end of the 64-bit range.
    pub(super) fn place(&self, outs: &[Out]) -> Result<Placement> {
        let mut segs = self.segs.clone();
        let real = segs.len() - 2;
        segs[real].filesz = self.ehsize();
        segs[real].memsz = self.ehsize();
        let (seg_at, end) = place_segments(&segs)?;
        let mut place = Placement {
            segs,
            seg_at,
            placed: Vec::new(),
            shoff: 0,
            total: 0,
        };
        let end = self.place_sections(outs, &mut place, end)?;
        let headers = self.names.is_some();
        place.shoff = if headers {
            checked_align(end, self.word())?
        } else {
            end
        };
        let table = (outs.len() as u64 + 1) * self.shentsize();
        place.total = if headers {
            place
                .shoff
                .checked_add(table)
                .ok_or_else(|| invalid("the rewritten object would be larger than 2^64 bytes"))?
        } else {
            place.shoff
        };
        Ok(place)
    }

    /// Sets `place.placed`: each section inside its segment, the others
    /// after `offset` (the segments' end) by input offset (added sections
    /// last), each aligned. Returns where the last one ends.
    fn place_sections(&self, outs: &[Out], place: &mut Placement, mut offset: u64) -> Result<u64> {
        let mut placed = vec![0u64; outs.len()];
        let mut by_offset: Vec<usize> = Vec::new();
        for (k, o) in outs.iter().enumerate() {
            let s = &self.secs[o.sec];
            match s.parent {
                Some(p) => placed[k] = place.in_segment(p, s.orig_offset),
                None => by_offset.push(k),
            }
        }
        by_offset.sort_by_key(|&k| self.secs[outs[k].sec].orig_offset);
        for &k in &by_offset {
            let o = &outs[k];
            offset = checked_align(offset, o.align)?;
            placed[k] = offset;
            if self.secs[o.sec].sh_type != elf::SHT_NOBITS {
                offset = offset
                    .checked_add(o.size)
                    .ok_or_else(|| invalid("section sizes overflow"))?;
            }
        }
        place.placed = placed;
        Ok(offset)
    }
}

/// The output offset of each segment, in llvm-objcopy's segment order
/// ([`Seg::before`]): at its offset within its parent, or at the next
/// offset congruent to its address modulo its alignment. Returns the
/// offsets and where the segments end.
fn place_segments(segs: &[Seg]) -> Result<(Vec<u64>, u64)> {
    let mut seg_order: Vec<usize> = (0..segs.len()).collect();
    seg_order.sort_by(|&a, &b| {
        if segs[a].before(&segs[b]) {
            std::cmp::Ordering::Less
        } else if segs[b].before(&segs[a]) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    let mut seg_at = vec![0u64; segs.len()];
    let mut offset = 0u64;
    for &k in &seg_order {
        let seg = &segs[k];
        let at = match seg.parent {
            Some(p) => seg_at[p].wrapping_add(seg.orig_offset.wrapping_sub(segs[p].orig_offset)),
            None => align_skew(offset, seg.align.max(1), seg.vaddr)?,
        };
        seg_at[k] = at;
        let end = at
            .checked_add(seg.filesz)
            .ok_or_else(|| invalid("segment sizes overflow"))?;
        offset = offset.max(end);
    }
    Ok((seg_at, offset))
}

/// LLVM's `alignTo(value, align, skew)`: the least `x >= value` with
/// `x % align == skew % align`.
fn align_skew(value: u64, align: u64, skew: u64) -> Result<u64> {
    let skew = skew % align;
    let v = u128::from(value) + u128::from(align) - 1 - u128::from(skew);
    u64::try_from(v / u128::from(align) * u128::from(align) + u128::from(skew))
        .map_err(|_| invalid("segment alignment overflows"))
}

/// `offset` moved on to the next multiple of `align` (0 counts as 1).
fn checked_align(offset: u64, align: u64) -> Result<u64> {
    offset
        .checked_next_multiple_of(align.max(1))
        .ok_or_else(|| invalid("section alignment overflows"))
}

//! What ELF and PE shrinking share: the fat-binary section's containers
//! packed at its start ([`pack`]), the byte edits to the input
//! ([`Patches`]), the file laid out up to the packed containers
//! ([`up_to_packed`]), and what became of the layout ([`Shrunk`]).

use std::collections::BTreeMap;

use super::checked::{Refusal, add, round_up, sub};
use super::edits::{Change, Edits};
use crate::layout::{Piece, Written as Output};
use crate::num::{len64, usize_from};

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
    pub(super) edit: Option<&'p Change<'p>>,
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
        at = add(p.new, p.edit.map_or(p.size, |e| e.layout.size))?;
    }
    Ok(at)
}

/// Edit `e`'s new container, appended to `out` (its built bytes copied:
/// the in-place form keeps them).
pub(super) fn container(out: &mut Output, e: &Change<'_>) -> Result<(), Refusal> {
    let bad = || {
        format!(
            "the new container at {:#x} names bytes it has not",
            e.offset
        )
    };
    for p in &e.layout.pieces {
        match p {
            Piece::Image(i) => {
                let r = e.ranges.get(*i).ok_or_else(bad)?;
                match e.built {
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
    plan: &'p Edits<'p>,
    (s_offset, s_size, s_align): (u64, u64, u64),
) -> Result<(Vec<Packed<'p>>, u64), Refusal> {
    let end = add(s_offset, s_size)?;
    let mut found: Vec<(u64, u64)> = plan
        .blocks
        .iter()
        .copied()
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
        let edit = plan.changes.iter().find(|e| e.offset == old);
        let new = add(round_up(sub(cursor, s_offset)?, align)?, s_offset)?;
        cursor = add(new, edit.map_or(size, |e| e.layout.size))?;
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

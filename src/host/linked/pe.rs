//! Pruning Windows PE images (DLLs, EXEs, Python's `.pyd`): the containers
//! of the fat-binary section (`.nv_fatb`, `.hip_fat`) packed at its start,
//! the absolute addresses that point at them fixed, the section's raw data
//! cut to the packed size rounded up to the file alignment, and the later
//! sections' raw data moved down by the bytes cut.
//!
//! A PE image's layout makes this simpler than ELF's: a section's raw data
//! may be shorter than its virtual size (the loader fills the rest with
//! zeros), and the raw data of the sections after it may move down by any
//! multiple of `FileAlignment` without changing an address. So the
//! section keeps its virtual size, every relative virtual address (RVA)
//! stays, and `SizeOfImage` does not change. What holds file offsets is
//! fixed: the later sections' `PointerToRawData`, debug directory entries'
//! `PointerToRawData`, the COFF symbol table pointer, the certificate
//! table. The optional header's checksum is computed again when the input
//! had one.
//!
//! References to the containers are found as on ELF, by what they are:
//! the base relocations (`IMAGE_REL_BASED_DIR64`, `HIGHLOW`) whose stored
//! address lies in the section must name a container's start, and each
//! fatbin wrapper's data pointer (an absolute address) is set to its
//! container's new address.
//!
//! An Authenticode signature (the security directory's certificate table)
//! covers every byte of the file: any prune breaks it, so a signed file is
//! refused unless the caller asks for the table to go (prune's
//! `--strip-signature`). Bytes after the last section other than the
//! certificate table (an "overlay", which its readers find by file offset)
//! are not moved: such a file is rewritten in place instead of shrunk.

use std::mem::offset_of;

use object::pe::{self, ImageSectionHeader};

use super::checked::{Refusal, add, round_up, sub};
use super::edits::Edits;
use super::facts::pe::{PeImage, Section};
use super::pack::{Packed, Patches, Segment, Shrunk, container, pack, up_to_packed};
use crate::bytes::{le, uint_le};
use crate::layout::{Piece, Written as Output};
use crate::num::{len64, u64_from};

/// The shrunk form of the PE image `data` that `plan` edits in place, without its certificate table when `strip`,
/// with what became of the fat-binary section; or why there is none.
pub(crate) fn shrink(
    data: &[u8],
    pe: &PeImage,
    plan: &Edits<'_>,
    strip: bool,
) -> Result<(Output, Shrunk), Refusal> {
    let holds = |s: &Section| {
        s.raw().is_some_and(|(start, end)| {
            plan.changes
                .iter()
                .all(|e| start <= e.offset && e.offset.saturating_add(e.size) <= end)
        })
    };
    let s_index = pe
        .sections
        .iter()
        .position(holds)
        .ok_or("the containers lie in more than one section")?;
    let s = &pe.sections[s_index];
    let (start, end) = s.raw().ok_or("the section has no raw data")?;
    let unit = movable(pe, s_index)?;
    let (packed, pack_end) = pack(data, plan, (start, s.raw_size, 8))?;
    let new_size = round_up(sub(pack_end, start)?, unit)?;
    let cut = sub(s.raw_size, new_size)?;
    if cut == 0 {
        return Err("the containers pack into the same number of file-alignment units".into());
    }
    // Everything from the section's old end moves down by `cut`, up to
    // the certificate table, which goes when asked. Bytes after the last
    // section other than zeros and the table (an overlay, which its
    // readers find by file offset) would move: refused.
    let last = pe
        .sections
        .iter()
        .filter_map(Section::raw)
        .map(|(_, e)| e)
        .max()
        .unwrap_or(0)
        .max(pe.headers_end);
    let (overlay_end, tail_end) = match pe.certificates {
        Some((at, size)) if add(at, size)? == len64(data) && at >= last => {
            (at, if strip { at } else { len64(data) })
        }
        Some(_) => return Err("the certificate table does not end the file".into()),
        None => (len64(data), len64(data)),
    };
    let overlay = data
        .get(crate::num::usize_from(last.min(overlay_end))..crate::num::usize_from(overlay_end))
        .unwrap_or_default();
    if overlay.iter().any(|&b| b != 0) {
        return Err(format!(
            "bytes after the last section ({last:#x}..{overlay_end:#x}, an overlay) would move"
        ));
    }
    let mut patches = header_patches(pe, s_index, end, cut, new_size, strip)?;
    fix_addresses(data, pe, s, &plan.pointers, &packed, &mut patches)?;
    if pe.checksum != 0 {
        patches.put(pe.checksum_at, vec![0; 4])?;
    }
    // The file: up to the section, the packed containers, zeros to the
    // new raw end, and the rest from the old raw end on.
    let mut out = Output::default();
    let at = up_to_packed(&mut out, start, &packed, &patches)?;
    out.piece(Piece::Zeros(sub(add(start, new_size)?, at)?));
    patches.copy(&mut out, end, tail_end)?;
    if pe.checksum != 0 {
        set_checksum(&mut out, data, pe.checksum_at)?;
    }
    check_layout(pe, s_index, (new_size, cut), out.size())?;
    let base = pe.image_base.saturating_add(u64::from(s.rva));
    let shrunk = Shrunk {
        section: s.name.clone(),
        section_size: (s.raw_size, sub(pack_end, start)?),
        removed: (add(start, new_size)?, end),
        segment: Segment {
            offset: start,
            address: base,
            size: s.raw_size,
        },
        segments: vec![Segment {
            offset: start,
            address: base,
            size: new_size,
        }],
        mapping: "section",
    };
    Ok((out, shrunk))
}

/// The unit section `s_index`'s raw data shrinks by, and the raw data
/// after it moves by, when it can: `FileAlignment`, and at least 512
/// bytes, since loaders (Windows', Wine's) round a section's
/// `PointerToRawData` down to a multiple of 512 as they map it. Refused
/// (and the file rewritten in place) when the section's
/// `PointerToRawData` or `SizeOfRawData` is not a multiple of
/// `FileAlignment` (cut from there, the raw data after it would move by a
/// number of bytes that is not one), when another section's raw data
/// overlaps it (the bytes cut would be that section's too), and in an
/// image whose `SectionAlignment` is below a page (its raw data lies at
/// its addresses).
fn movable(pe: &PeImage, s_index: usize) -> Result<u64, Refusal> {
    let (s, fa) = (&pe.sections[s_index], pe.file_alignment);
    if pe.section_alignment < 0x1000 {
        return Err(format!(
            "its SectionAlignment ({:#x}) is below a page: raw data lies at its addresses",
            pe.section_alignment
        ));
    }
    for (field, v) in [
        ("PointerToRawData", s.raw_ptr),
        ("SizeOfRawData", s.raw_size),
    ] {
        if !v.is_multiple_of(fa) {
            return Err(format!(
                "section `{}`'s {field} ({v:#x}) is not a multiple of FileAlignment ({fa:#x})",
                s.name
            ));
        }
    }
    let unit = fa.max(0x200);
    if !s.raw_size.is_multiple_of(unit) {
        return Err(format!(
            "section `{}`'s SizeOfRawData ({:#x}) is not a multiple of 512 (the unit a loader \
             finds raw data in)",
            s.name, s.raw_size
        ));
    }
    let (start, end) = s.raw().ok_or("the section has no raw data")?;
    for (i, t) in pe.sections.iter().enumerate() {
        if i != s_index
            && let Some((a, b)) = t.raw()
            && a < end
            && b > start
        {
            return Err(format!(
                "section `{}`'s raw data ({a:#x}..{b:#x}) overlaps section `{}`'s \
                 ({start:#x}..{end:#x})",
                t.name, s.name
            ));
        }
    }
    Ok(unit)
}

/// Checks the section table of the shrunk file, `len` bytes long, where
/// section `s_index`'s raw data became `new_size` bytes and what lay after
/// it moved down by `cut`: every section's raw data lies in the file and
/// starts where a loader finds it (a multiple of `FileAlignment`, and of
/// 512 where it was), and none lies in the bytes cut. What [`movable`]
/// lets through always passes; this guards what is emitted.
fn check_layout(
    pe: &PeImage,
    s_index: usize,
    (new_size, cut): (u64, u64),
    len: u64,
) -> Result<(), Refusal> {
    let s = &pe.sections[s_index];
    let gone = (add(s.raw_ptr, new_size)?, add(s.raw_ptr, s.raw_size)?);
    for (i, t) in pe.sections.iter().enumerate() {
        let Some((a, b)) = t.raw() else { continue };
        let (ptr, size) = match i == s_index {
            true => (a, new_size),
            false if a >= gone.1 => (sub(a, cut)?, t.raw_size),
            false if b <= gone.0 => (a, t.raw_size),
            false => {
                return Err(format!(
                    "section `{}`'s raw data lies in the bytes cut",
                    t.name
                ));
            }
        };
        let aligned = |m: u64| ptr % m == a % m;
        if !aligned(pe.file_alignment) || !aligned(0x200) || add(ptr, size)? > len {
            return Err(format!(
                "section `{}`'s raw data would lie at {ptr:#x}..{:#x} of a file of {len:#x} bytes",
                t.name,
                add(ptr, size)?
            ));
        }
    }
    Ok(())
}

/// The patches of the headers when `cut` bytes go from the end of section
/// `s_index`'s raw data (which ends at `end` and becomes `new_size` bytes
/// long): its raw size, the file offsets of what lies after it, the
/// initialized-data size, the certificate table's entry (zeros when
/// `strip`).
fn header_patches(
    pe: &PeImage,
    s_index: usize,
    end: u64,
    cut: u64,
    new_size: u64,
    strip: bool,
) -> Result<Patches, Refusal> {
    let s = &pe.sections[s_index];
    let mut patches = Patches::default();
    // What moves down, and where a file offset was.
    let moved = |off: u64| -> Result<u64, Refusal> {
        if off >= end {
            sub(off, cut)
        } else if off >= sub(end, cut)? {
            Err(format!(
                "a file offset ({off:#x}) points into the bytes cut"
            ))
        } else {
            Ok(off)
        }
    };
    let u32_at = |v: u64| -> Result<Vec<u8>, Refusal> {
        u32::try_from(v)
            .map(|v| v.to_le_bytes().to_vec())
            .map_err(|_| format!("a file offset ({v:#x}) passes 4 GiB"))
    };
    // The section's raw size, and the sections after it.
    let raw_size_field = u64_from(offset_of!(ImageSectionHeader, size_of_raw_data));
    patches.put(add(s.header_at, raw_size_field)?, u32_at(new_size)?)?;
    for (i, t) in pe.sections.iter().enumerate() {
        if i == s_index {
            continue;
        }
        if t.raw_size != 0 && t.raw_ptr >= end {
            let f = u64_from(offset_of!(ImageSectionHeader, pointer_to_raw_data));
            patches.put(add(t.header_at, f)?, u32_at(sub(t.raw_ptr, cut)?)?)?;
        }
        for (v, f) in [
            (
                t.relocs_ptr,
                offset_of!(ImageSectionHeader, pointer_to_relocations),
            ),
            (
                t.lines_ptr,
                offset_of!(ImageSectionHeader, pointer_to_linenumbers),
            ),
        ] {
            let new = moved(u64::from(v))?;
            if v != 0 && new != u64::from(v) {
                patches.put(add(t.header_at, u64_from(f))?, u32_at(new)?)?;
            }
        }
    }
    if s.flags.contains(pe::IMAGE_SCN_CNT_INITIALIZED_DATA) && u64::from(pe.init_data) >= cut {
        patches.put(pe.init_data_at, u32_at(u64::from(pe.init_data) - cut)?)?;
    }
    if pe.symtab != 0 {
        let new = moved(u64::from(pe.symtab))?;
        if new != u64::from(pe.symtab) {
            patches.put(pe.symtab_at, u32_at(new)?)?;
        }
    }
    for &(field, ptr) in &pe.debug {
        let new = moved(ptr)?;
        if new != ptr {
            patches.put(field, u32_at(new)?)?;
        }
    }
    match (pe.certificates, strip) {
        (Some(_), true) => patches.put(pe.security_at, vec![0; 8])?,
        (Some((at, _)), false) => patches.put(pe.security_at, u32_at(moved(at)?)?)?,
        (None, _) => {}
    }
    Ok(patches)
}

/// Patches every absolute address that points into section `s` at a
/// container that moved: the base-relocated pointers (whose targets must
/// be a container's start) and the fatbin wrappers' data pointers.
fn fix_addresses(
    data: &[u8],
    pe: &PeImage,
    s: &Section,
    pointers: &[u64],
    packed: &[Packed<'_>],
    patches: &mut Patches,
) -> Result<(), Refusal> {
    let va_of = |off: u64| -> Result<u64, Refusal> {
        add(add(pe.image_base, u64::from(s.rva))?, sub(off, s.raw_ptr)?)
    };
    let section_va = add(pe.image_base, u64::from(s.rva))?;
    let section_end = add(section_va, u64::from(s.vsize).max(s.raw_size))?;
    let mut new_va = std::collections::BTreeMap::new();
    for p in packed {
        new_va.insert(va_of(p.old)?, va_of(p.new)?);
    }
    let width = if pe.is_64 { 8 } else { 4 };
    let read = |at: u64| -> Result<u64, Refusal> {
        let at = usize::try_from(at).map_err(|_| "an address lies past the file")?;
        let v = data.get(at..).and_then(|b| uint_le(b, width));
        Ok(v.ok_or("a relocated pointer lies past the end of the file")?)
    };
    let mut fix = |field: u64, stored: u64, what: &str| -> Result<(), Refusal> {
        if stored < section_va || stored >= section_end {
            return Ok(());
        }
        let new = *new_va.get(&stored).ok_or_else(|| {
            format!("{what} at {field:#x} points at {stored:#x}, inside a container")
        })?;
        let bytes = new.to_le_bytes()[..width].to_vec();
        patches.put(field, bytes)
    };
    for &(rva, typ) in &pe.relocs {
        let sized = match typ {
            pe::IMAGE_REL_BASED_DIR64 => 8,
            pe::IMAGE_REL_BASED_HIGHLOW => 4,
            pe::IMAGE_REL_BASED_ABSOLUTE => continue,
            other => {
                return Err(format!(
                    "a base relocation of type {other:?} is not known here"
                ));
            }
        };
        if sized != width {
            return Err(format!(
                "a base relocation of {sized} bytes in a {}-bit image",
                width * 8
            ));
        }
        let Some((field, room)) = pe.offset_of_rva(rva) else {
            continue;
        };
        if room < u64_from(width) {
            return Err(format!(
                "a base relocation at RVA {rva:#x} runs past its section"
            ));
        }
        if s.raw().is_some_and(|(a, b)| field >= a && field < b) {
            return Err(format!(
                "a base relocation at RVA {rva:#x} lies inside the fat-binary section"
            ));
        }
        fix(field, read(field)?, "a relocated pointer")?;
    }
    for &field in pointers {
        fix(field, read(field)?, "a fatbin wrapper")?;
    }
    Ok(())
}

/// The PE checksum of `out` (built from `data`) with the 4 bytes at
/// `at` read as zeros, written there: 16-bit words summed with their
/// carries folded in, plus the file's length. `out` holds a piece of its
/// own for those bytes ([`Patches::put`] made it).
fn set_checksum(out: &mut Output, data: &[u8], at: u64) -> Result<(), Refusal> {
    struct Sum {
        sum: u64,
        pos: u64,
        odd: Option<u8>,
        skip: (u64, u64),
    }
    impl std::io::Write for Sum {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            for &b in buf {
                let b = if (self.skip.0..self.skip.1).contains(&self.pos) {
                    0
                } else {
                    b
                };
                self.pos += 1;
                match self.odd.take() {
                    None => self.odd = Some(b),
                    Some(lo) => {
                        self.sum += u64::from(le::<u16>([lo, b]));
                        self.sum = (self.sum & 0xffff) + (self.sum >> 16);
                    }
                }
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut sum = Sum {
        sum: 0,
        pos: 0,
        odd: None,
        skip: (at, at + 4),
    };
    out.write_to(&mut sum, &[data])
        .map_err(|e| format!("the checksum cannot be computed: {e}"))?;
    if let Some(lo) = sum.odd {
        sum.sum += u64::from(lo);
        sum.sum = (sum.sum & 0xffff) + (sum.sum >> 16);
    }
    let total = (sum.sum & 0xffff) + (sum.sum >> 16);
    let value = u32::try_from((total & 0xffff) + out.size())
        .map_err(|_| "the file passes 4 GiB: no PE checksum fits")?;
    let mut pos = 0u64;
    for p in &mut out.layout.pieces {
        let len = match p {
            Piece::Bytes(b) => len64(b),
            Piece::Zeros(n) => *n,
            Piece::Image(k) => out.spans.get(*k).map_or(0, |s| u64_from(s.len)),
        };
        if pos == at
            && let Piece::Bytes(b) = p
            && b.len() == 4
        {
            b.copy_from_slice(&value.to_le_bytes());
            return Ok(());
        }
        pos += len;
    }
    Err("the checksum field has no piece of its own".into())
}

/// The in-place form of the PE image `data`: each edit's container
/// rewritten where it lies (as prune's in-place output does), the certificate
/// table cut off when `strip` (it must end the file), and the checksum
/// computed again when the input had one.
pub(crate) fn in_place(
    data: &[u8],
    pe: &PeImage,
    plan: &Edits<'_>,
    strip: bool,
) -> Result<Output, Refusal> {
    let mut patches = Patches::default();
    let mut end = len64(data);
    if let (Some((at, size)), true) = (pe.certificates, strip) {
        if add(at, size)? != end {
            return Err("the certificate table does not end the file".into());
        }
        patches.put(pe.security_at, vec![0; 8])?;
        end = at;
    }
    if pe.checksum != 0 {
        patches.put(pe.checksum_at, vec![0; 4])?;
    }
    let mut out = Output::default();
    let mut pos = 0;
    for e in &plan.changes {
        patches.copy(&mut out, pos, e.offset)?;
        container(&mut out, e)?;
        out.piece(Piece::Zeros(e.freed()));
        pos = add(e.offset, e.size)?;
    }
    patches.copy(&mut out, pos, end)?;
    if pe.checksum != 0 {
        set_checksum(&mut out, data, pe.checksum_at)?;
    }
    Ok(out)
}

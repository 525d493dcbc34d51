//! The parts of a linked ELF file that a rewrite must leave as they are
//! ([`Fixed`]): its headers, header tables, sections and segments, and the
//! check that no edit of a plan touches one.

use std::fmt;

use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, elf};

use super::{Edit, Plan};
use crate::error::{Error, Result};
use crate::num::len64;
use crate::scan::Report;

/// What a part of a linked file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// The ELF header, or the program or section header table.
    Header,
    /// The section of this index.
    Section(usize),
    /// The segment of this index, and whether it is a load segment.
    Segment(usize, bool),
}

/// A part of a linked file that pruning must leave as it is, where it is:
/// the ELF header, a header table, a section with bytes in the file
/// (`SHT_NOBITS` and the null section have none), a segment's file bytes.
#[derive(Debug, Clone)]
pub(crate) struct Fixed {
    /// What it is.
    pub part: Part,
    /// Its name in messages (`the section header table`, ``section 7
    /// `.dynsym` ``, `segment 5 PT_DYNAMIC`).
    pub what: String,
    /// Its file bytes, `[start, end)`.
    pub start: u64,
    pub end: u64,
}

impl Fixed {
    /// Whether it shares a byte with `[start, end)`.
    pub(crate) fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start < end && start < self.end
    }

    /// Whether it holds all of `[start, end)`.
    pub(crate) fn holds(&self, start: u64, end: u64) -> bool {
        self.start <= start && end <= self.end
    }
}

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:#x}..{:#x})", self.what, self.start, self.end)
    }
}

/// The parts of the linked ELF file or PE image `data` (of the host
/// format `kind`, as the scan read it) that must stay ([`Fixed`]), read
/// with `object`'s readers; an error when its headers cannot be read
/// (then what a rewrite would overwrite cannot be told).
pub(crate) fn fixed_parts(data: &[u8], kind: Option<object::FileKind>) -> Result<Vec<Fixed>> {
    match kind {
        Some(object::FileKind::Elf32) => fixed_parts_of::<elf::FileHeader32<Endianness>>(data),
        Some(object::FileKind::Elf64) => fixed_parts_of::<elf::FileHeader64<Endianness>>(data),
        Some(k @ (object::FileKind::Pe32 | object::FileKind::Pe64)) => {
            crate::prune::shrink::pe::PeImage::read(data, k)
                .map(|pe| pe.fixed_parts())
                .map_err(|why| Error::unsupported(format!("{why}: nothing is pruned")))
        }
        _ => Err(Error::unsupported(
            "its ELF header cannot be read: nothing is pruned",
        )),
    }
}

/// [`fixed_parts`] for a file of class `Elf`.
fn fixed_parts_of<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> Result<Vec<Fixed>> {
    let bad = |e: object::read::Error| {
        Error::unsupported(format!(
            "its ELF headers cannot be read ({e}): nothing is pruned"
        ))
    };
    let header = Elf::parse(data).map_err(bad)?;
    let endian = header.endian().map_err(bad)?;
    let phdrs = header.program_headers(endian, data).map_err(bad)?;
    let shdrs = header.section_headers(endian, data).map_err(bad)?;
    let names = header.section_strings(endian, data, shdrs).ok();
    // The tables were read from `data`, so they end inside it: no sum
    // below of a table's offset and length overflows.
    let table = |what: &str, start: u64, len: usize| -> Result<Fixed> {
        let end = start
            .checked_add(crate::num::u64_from(len))
            .ok_or_else(|| Error::invalid("file", format!("the {what} runs past its end")))?;
        Ok(Fixed {
            part: Part::Header,
            what: format!("the {what}"),
            start,
            end,
        })
    };
    let mut parts = vec![table("ELF header", 0, size_of::<Elf>())?];
    if !phdrs.is_empty() {
        let start = header.e_phoff(endian).into();
        parts.push(table("program header table", start, size_of_val(phdrs))?);
    }
    if !shdrs.is_empty() {
        let start = header.e_shoff(endian).into();
        parts.push(table("section header table", start, size_of_val(shdrs))?);
    }
    // A section or segment may claim bytes up to past 2^64: its range is
    // cut at 2^64, where no file byte lies, so it still covers every byte
    // of the file it claims (saturating is safe for the overlap checks).
    for (i, s) in shdrs.iter().enumerate() {
        let Some((start, size)) = s.file_range(endian) else {
            continue;
        };
        if size == 0 || s.sh_type(endian) == elf::SHT_NULL {
            continue;
        }
        let name = names
            .and_then(|t| s.name(endian, t).ok())
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        parts.push(Fixed {
            part: Part::Section(i),
            what: format!("section {i} `{name}`"),
            start,
            end: start.saturating_add(size),
        });
    }
    for (i, p) in phdrs.iter().enumerate() {
        let (start, size) = p.file_range(endian);
        if size == 0 {
            continue;
        }
        let ty = p.p_type(endian);
        parts.push(Fixed {
            part: Part::Segment(i, ty == elf::PT_LOAD),
            what: format!("segment {i} {}", segment_type(ty)),
            start,
            end: start.saturating_add(size),
        });
    }
    Ok(parts)
}

/// A segment type's name, for messages.
fn segment_type(ty: elf::ProgramType) -> String {
    let name = match ty {
        elf::PT_LOAD => "PT_LOAD",
        elf::PT_DYNAMIC => "PT_DYNAMIC",
        elf::PT_INTERP => "PT_INTERP",
        elf::PT_NOTE => "PT_NOTE",
        elf::PT_PHDR => "PT_PHDR",
        elf::PT_TLS => "PT_TLS",
        elf::PT_GNU_EH_FRAME => "PT_GNU_EH_FRAME",
        elf::PT_GNU_RELRO => "PT_GNU_RELRO",
        elf::PT_GNU_PROPERTY => "PT_GNU_PROPERTY",
        other => return format!("type {other:#x}"),
    };
    name.to_string()
}

/// Refuses a plan for the linked file `data` that would rewrite (or free,
/// as zeros or by cutting them out) bytes that are also those of a part
/// that must stay: the ELF header, a header table, a section other than
/// the one that holds the container, a segment other than a load segment
/// that holds it; and one whose container two sections hold (a section
/// listed twice, or two that overlap).
///
/// The plan's edits are in file order and apart ([`Plan::check`]), so
/// the edits a part shares bytes with are a run of them, found by binary
/// search, and all but the first and the last of the run lie inside the
/// part: those two tell whether the part holds them all.
pub(super) fn check_linked(data: &[u8], report: &Report, plan: &Plan) -> Result<()> {
    let parts = fixed_parts(data, report.host)?;
    let edits = &plan.edits;
    let end = |e: &Edit| e.end_within(len64(data)).unwrap_or(u64::MAX);
    // The run of edits each section that holds some holds, `[first, last)`.
    let mut held: Vec<(usize, usize, &Fixed)> = Vec::new();
    for p in &parts {
        let first = edits.partition_point(|e| end(e) <= p.start);
        let last = edits.partition_point(|e| e.offset < p.end);
        if first >= last {
            continue;
        }
        let may_hold = match p.part {
            Part::Header => false,
            Part::Section(_) => true,
            Part::Segment(_, load) => load,
        };
        if let Some(e) = [&edits[first], &edits[last - 1]]
            .into_iter()
            .find(|e| !may_hold || !p.holds(e.offset, end(e)))
        {
            let kind = kind_of(report, e);
            let freed_from = e.offset.saturating_add(e.pruned.layout.size);
            let how = if p.overlaps(freed_from, end(e)) {
                format!("inside the bytes the {kind} at {:#x} would free", e.offset)
            } else {
                format!(
                    "inside the {kind} at {:#x}, which pruning rewrites",
                    e.offset
                )
            };
            return Err(Error::unsupported(format!(
                "{p} lies {how}: nothing is pruned"
            )));
        }
        if matches!(p.part, Part::Section(_)) {
            held.push((first, last, p));
        }
    }
    // Two runs that share an edit share it with the run before them in
    // order of their first edits.
    held.sort_unstable_by_key(|&(first, last, _)| (first, last));
    for pair in held.windows(2) {
        let ((_, a_last, a), (b_first, _, b)) = (pair[0], pair[1]);
        if b_first < a_last {
            let e = &edits[b_first];
            let why = if (a.start, a.end) == (b.start, b.end) {
                format!(
                    "{a} is listed twice in the section header table, again as {}",
                    b.what
                )
            } else {
                format!(
                    "{a} and {b} overlap, both holding the {} at {:#x}",
                    kind_of(report, e),
                    e.offset
                )
            };
            return Err(Error::unsupported(format!("{why}: nothing is pruned")));
        }
    }
    Ok(())
}

/// The kind of container edit `e` rewrites, for messages.
fn kind_of(report: &Report, e: &Edit) -> &'static str {
    report
        .containers
        .get(e.container)
        .map_or("container", |c| c.kind.name())
}

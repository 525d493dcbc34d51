//! The parts of a linked ELF file or PE image that a rewrite must leave as
//! they are ([`Fixed`]): its headers, header tables, sections and
//! segments (a PE image's raw section data and certificate table).

use std::fmt;

use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, elf};

use super::pe::PeImage;
use crate::error::{Error, Result};

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

/// The parts of the linked ELF file `data` (of the host format `kind`,
/// as the scan read it) that must stay ([`Fixed`]), read with `object`'s
/// readers; an error when its headers cannot be read (then what a
/// rewrite would overwrite cannot be told). A PE image's are
/// [`pe_parts`].
pub(super) fn elf_parts(data: &[u8], kind: Option<object::FileKind>) -> Result<Vec<Fixed>> {
    match kind {
        Some(object::FileKind::Elf32) => elf_parts_of::<elf::FileHeader32<Endianness>>(data),
        Some(object::FileKind::Elf64) => elf_parts_of::<elf::FileHeader64<Endianness>>(data),
        _ => Err(Error::unsupported(
            "its ELF header cannot be read: nothing is pruned",
        )),
    }
}

/// [`elf_parts`] for a file of class `Elf`.
fn elf_parts_of<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> Result<Vec<Fixed>> {
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

/// The parts of the PE image `pe` pruning must leave where they are: the
/// headers, each section's raw data, the certificate table (what prune's
/// plan checks its edits against).
pub(super) fn pe_parts(pe: &PeImage) -> Vec<Fixed> {
    let mut parts = vec![Fixed {
        part: Part::Header,
        what: "the PE headers".into(),
        start: 0,
        end: pe.headers_end,
    }];
    for (i, s) in pe.sections.iter().enumerate() {
        if let Some((start, end)) = s.raw() {
            parts.push(Fixed {
                part: Part::Section(i),
                what: format!("section {} `{}`", i + 1, s.name),
                start,
                end,
            });
        }
    }
    if let Some((at, size)) = pe.certificates {
        parts.push(Fixed {
            part: Part::Header,
            what: "the certificate table".into(),
            start: at,
            end: at.saturating_add(size),
        });
    }
    parts
}

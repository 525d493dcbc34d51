//! The COFF rewrite `llvm-objcopy` 22 does for the bundler, emulated byte
//! for byte: adding one section per target (`--add-section` with
//! `--set-section-flags=…=readonly,exclude`) or removing the bundle
//! sections (`--regex --remove-section=__CLANG_OFFLOAD_BUNDLE__.*`) of a
//! COFF object file (regular or `/bigobj`; PE images are refused).
//!
//! As for ELF, llvm-objcopy reads the file into a model and writes a new
//! file from it (`llvm/lib/ObjCopy/COFF/` in LLVM 22, checked against the
//! installed tool). What the model keeps and what the writer rebuilds:
//!
//! - **File header**: machine, time stamp and characteristics are kept
//!   (a `/bigobj` input has no characteristics: 0); no optional header.
//!   The output is `/bigobj` when it has more than 65279 sections,
//!   whatever the input was, and when a symbol's special section number
//!   is one only `/bigobj`'s 32-bit field holds (below -256: a regular
//!   object's 16-bit field reads 0xff00 to 0xffff as -256 to -1). There
//!   llvm-objcopy writes the low 16 bits, and the number becomes a section
//!   index past the sections (-4092, `0xfffff004`, becomes section
//!   61444); we keep the number.
//! - **Sections** keep their order and header fields (names, virtual size
//!   and address, line-number fields, characteristics without
//!   `IMAGE_SCN_LNK_NRELOC_OVFL`); removed ones leave no gap, added ones
//!   come last. An added section is `IMAGE_SCN_MEM_READ |
//!   IMAGE_SCN_LNK_REMOVE` (what `readonly,exclude` means for COFF), its
//!   virtual size its length and its virtual address the end of the
//!   section before it. An existing section named like an added one gets
//!   the same flags, keeping its alignment bits.
//! - **Layout**: the headers, then each section's raw data (where it
//!   has some: `SizeOfRawData` bytes, the input's contents padded with
//!   zeros, or `0xcc` for code, when the input had none) directly followed
//!   by its relocations (with the overflow record when there are 65535 or
//!   more); no alignment padding anywhere; then the symbol table and the
//!   string table.
//! - **Symbols** keep their order; those defined in a removed section go,
//!   and so, in turn, do sections associative to a removed one (and their
//!   symbols). Section numbers, section-definition records (their number
//!   fields), weak-external tags and relocation symbol indices are
//!   renumbered. A file record's name is kept without trailing zeros and
//!   takes as many auxiliary records as it needs.
//! - **The string table** is rebuilt with `StringTableBuilder`'s
//!   tail-merged layout, long section names first ([`strtab`]).
//! - **Control-flow-guard tables** (`.gfids$y`, `.giats$y`, `.gljmp$y`,
//!   `.gehcont$y`), lists of symbol indices, are renumbered and their
//!   section checksum recomputed.
//!
//! Output is a [`Written`]: headers and tables are built in memory,
//! section contents are byte ranges of the inputs.

use std::borrow::Cow;

use object::pe;

use super::model::{Added, Edit, Part, Written};
use crate::error::{Error, Result};

mod read;
pub(crate) mod strtab;

pub(crate) use read::{is_bigobj, section_number, short_name, u16_at, u32_at};
#[cfg(test)]
mod tests;
mod update;
mod write;

/// `IMAGE_SCN_CNT_CODE`.
const SCN_CNT_CODE: u32 = pe::IMAGE_SCN_CNT_CODE.0;
/// `IMAGE_SCN_LNK_NRELOC_OVFL`: the relocation count is in the first
/// relocation record.
const SCN_NRELOC_OVFL: u32 = pe::IMAGE_SCN_LNK_NRELOC_OVFL.0;
/// What `--set-section-flags=…=readonly,exclude` makes of a section:
/// `IMAGE_SCN_MEM_READ | IMAGE_SCN_LNK_REMOVE`.
const SCN_READONLY_EXCLUDE: u32 = pe::IMAGE_SCN_MEM_READ.0 | pe::IMAGE_SCN_LNK_REMOVE.0;
/// The alignment bits, which `--set-section-flags` keeps.
const SCN_ALIGN_MASK: u32 = pe::IMAGE_SCN_ALIGN_MASK;
/// `IMAGE_SYM_CLASS_STATIC`.
const SYM_CLASS_STATIC: u8 = pe::IMAGE_SYM_CLASS_STATIC.0;
/// `IMAGE_SYM_CLASS_FILE`.
const SYM_CLASS_FILE: u8 = pe::IMAGE_SYM_CLASS_FILE.0;
/// `IMAGE_SYM_CLASS_WEAK_EXTERNAL`.
const SYM_CLASS_WEAK_EXTERNAL: u8 = pe::IMAGE_SYM_CLASS_WEAK_EXTERNAL.0;
/// `IMAGE_COMDAT_SELECT_ASSOCIATIVE`.
const COMDAT_SELECT_ASSOCIATIVE: u8 = pe::IMAGE_COMDAT_SELECT_ASSOCIATIVE.0;
/// The most sections a regular (not `/bigobj`) object may have.
const MAX_SECTIONS_16: usize = 65279;
/// The lowest special section number a regular object's 16-bit field
/// holds (`0xff00`, read as a signed number past [`MAX_SECTIONS_16`]).
const MIN_SPECIAL_16: i64 = -256;
/// The size of a section header.
const SECTION_HEADER_SIZE: usize = pe::IMAGE_SIZEOF_SECTION_HEADER;
/// The size of a relocation record.
const RELOCATION_SIZE: usize = 10;
/// The size of an auxiliary symbol record's payload.
const AUX_SIZE: usize = 18;

/// One section of the model.
#[derive(Debug, Clone)]
struct Sec<'d> {
    /// A number that names the section for its symbols (input sections:
    /// their 1-based index; added ones: numbered on).
    id: usize,
    /// The full name.
    name: Cow<'d, [u8]>,
    /// `VirtualSize`.
    virtual_size: u32,
    /// `VirtualAddress`.
    virtual_address: u32,
    /// `SizeOfRawData`.
    raw_size: u32,
    /// `PointerToLinenumbers`, kept as it was.
    line_numbers: u32,
    /// `NumberOfLinenumbers`, kept as it was.
    line_count: u16,
    /// `Characteristics` (without the overflow flag).
    flags: u32,
    /// The contents.
    contents: Contents,
    /// The relocations.
    relocs: Vec<Reloc>,
}

/// A section's contents.
#[derive(Debug, Clone)]
enum Contents {
    /// None in the file (a zero `PointerToRawData`).
    None,
    /// `len` bytes of span source `source` from `offset`.
    Span {
        /// The source (0: the object; `i + 1`: added section `i`).
        source: usize,
        /// Offset in it.
        offset: usize,
        /// Length.
        len: usize,
    },
    /// Bytes rebuilt by the writer.
    Owned(Vec<u8>),
    /// New contents given in pieces (`prune`'s updated sections), with
    /// their length.
    Parts(Vec<Part>, usize),
}

impl Contents {
    /// The length in bytes.
    fn len(&self) -> usize {
        match self {
            Contents::None => 0,
            Contents::Span { len, .. } => *len,
            Contents::Owned(b) => b.len(),
            Contents::Parts(_, len) => *len,
        }
    }
}

/// One relocation.
#[derive(Debug, Clone, Copy)]
struct Reloc {
    /// `VirtualAddress`.
    offset: u32,
    /// The symbol it refers to (its position in [`Model::symbols`]).
    symbol: usize,
    /// `Type`.
    kind: u16,
}

/// One symbol of the model.
#[derive(Debug, Clone)]
struct Sym<'d> {
    /// The name.
    name: &'d [u8],
    /// `Value`.
    value: u32,
    /// `Type`.
    kind: u16,
    /// `StorageClass`.
    class: u8,
    /// `NumberOfAuxSymbols`.
    aux_count: u8,
    /// The auxiliary records' payloads (not for file records).
    aux: Vec<[u8; AUX_SIZE]>,
    /// A file record's name, trailing zeros removed.
    file: Option<&'d [u8]>,
    /// The section id it is defined in, or its special section number
    /// (0, -1, -2, ...).
    section: i64,
    /// For an associative COMDAT section definition, the id of the
    /// section it is associated with (0: none).
    associated: usize,
    /// For a weak external, the symbol it falls back to.
    weak: Option<usize>,
    /// Its index in the input's symbol table.
    raw_index: usize,
    /// Whether it was removed.
    removed: bool,
}

impl Sym<'_> {
    /// The id of the section the symbol is defined in, if it is.
    fn section_id(&self) -> Option<usize> {
        usize::try_from(self.section).ok().filter(|&n| n > 0)
    }
}

/// An object as llvm-objcopy's COFF reader models it.
#[derive(Debug, Clone)]
struct Model<'d> {
    /// `Machine`.
    machine: u16,
    /// `TimeDateStamp`.
    timestamp: u32,
    /// `Characteristics` (0 for a `/bigobj` input).
    characteristics: u16,
    /// The sections, in order.
    sections: Vec<Sec<'d>>,
    /// The symbols, in order (removed ones marked).
    symbols: Vec<Sym<'d>>,
    /// The next section id.
    next_id: usize,
    /// The input file (span source 0).
    data: &'d [u8],
}

/// What llvm-objcopy makes of the COFF object `data` with `edit`: the
/// sections `remove_named` picks removed and `add` added, or for
/// `prune`, sections removed (`remove`, by 1-based index) and given new
/// contents (`update`). Span source 0 is `data`, source `i + 1` is
/// `add[i].data`, and (with no `add`) source `j + 1` is `extra[j]`.
pub(super) fn rewrite(data: &[u8], edit: &Edit<'_>) -> Result<Written> {
    let mut model = read::read(data)?;
    if !edit.update.is_empty() || !edit.remove.is_empty() {
        // Pruning: nothing is added, and what points into an updated
        // section follows its bytes ([`update`]).
        model.update_sections(edit.update, edit.extra)?;
        model.remove_sections(|s| edit.remove.contains(&s.id));
    }
    if let Some(named) = edit.remove_named {
        model.remove_sections(|s| named(&s.name));
    }
    model.add_sections(edit.add)?;
    model.write()
}

/// Reads the COFF object `data` as llvm-objcopy's reader would, every
/// table checked against the file: what is wrong, if anything.
pub(super) fn check(data: &[u8]) -> Result<()> {
    read::read(data).map(|_| ())
}

impl<'d> Model<'d> {
    /// Removes the sections `remove` picks, the symbols defined in them,
    /// then the sections associative to removed ones, until none is left.
    fn remove_sections(&mut self, remove: impl Fn(&Sec<'_>) -> bool) {
        let mut gone: Vec<usize> = self
            .sections
            .iter()
            .filter(|s| remove(s))
            .map(|s| s.id)
            .collect();
        while !gone.is_empty() {
            gone.sort_unstable();
            self.sections.retain(|s| gone.binary_search(&s.id).is_err());
            let mut next = Vec::new();
            for sym in self.symbols.iter_mut().filter(|s| !s.removed) {
                let Some(id) = sym.section_id() else {
                    continue;
                };
                if gone.binary_search(&sym.associated).is_ok() {
                    next.push(id);
                }
                if gone.binary_search(&id).is_ok() {
                    sym.removed = true;
                }
            }
            // Only sections still present can go in the next round.
            next.retain(|id| self.sections.iter().any(|s| s.id == *id));
            next.dedup();
            gone = next;
        }
    }

    /// Adds one section per entry of `add`, after flagging existing
    /// sections of the same names as llvm-objcopy does.
    fn add_sections(&mut self, add: &[Added<'_>]) -> Result<()> {
        if add.is_empty() {
            return Ok(());
        }
        let names: Vec<Vec<u8>> = add.iter().map(|n| n.name.to_vec()).collect();
        for s in &mut self.sections {
            if names.iter().any(|n| **n == *s.name) {
                s.flags = (s.flags & SCN_ALIGN_MASK) | SCN_READONLY_EXCLUDE;
            }
        }
        for (i, (n, name)) in add.iter().zip(names).enumerate() {
            let len = u32::try_from(n.data.len()).map_err(|_| {
                invalid(format!(
                    "section '{}' ({} bytes) is too large for a COFF object",
                    lossy(&name),
                    n.data.len()
                ))
            })?;
            let address = self
                .sections
                .last()
                .map_or(0, |l| l.virtual_address.wrapping_add(l.virtual_size));
            let id = self.next_id;
            self.next_id += 1;
            self.sections.push(Sec {
                id,
                name: Cow::Owned(name),
                virtual_size: len,
                virtual_address: address,
                raw_size: len,
                line_numbers: 0,
                line_count: 0,
                flags: SCN_READONLY_EXCLUDE,
                contents: Contents::Span {
                    source: i + 1,
                    offset: 0,
                    len: n.data.len(),
                },
                relocs: Vec::new(),
            });
        }
        Ok(())
    }
}

/// An invalid object file, `detail` saying how.
fn invalid(detail: impl Into<String>) -> Error {
    Error::invalid("COFF object file", detail)
}

/// A name as text for messages.
fn lossy(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

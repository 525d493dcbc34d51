//! The model llvm-objcopy's COFF reader makes of an object: its sections
//! with their contents and relocations, its symbols, the format's
//! constants, and the errors every phase gives.

use std::borrow::Cow;

use object::pe;

use crate::error::Error;
use crate::host::object::model::Part;

/// `IMAGE_SCN_CNT_CODE`.
pub(super) const SCN_CNT_CODE: u32 = pe::IMAGE_SCN_CNT_CODE.0;
/// `IMAGE_SCN_LNK_NRELOC_OVFL`: the relocation count is in the first
/// relocation record.
pub(super) const SCN_NRELOC_OVFL: u32 = pe::IMAGE_SCN_LNK_NRELOC_OVFL.0;
/// What `--set-section-flags=…=readonly,exclude` makes of a section:
/// `IMAGE_SCN_MEM_READ | IMAGE_SCN_LNK_REMOVE`.
pub(super) const SCN_READONLY_EXCLUDE: u32 = pe::IMAGE_SCN_MEM_READ.0 | pe::IMAGE_SCN_LNK_REMOVE.0;
/// The alignment bits, which `--set-section-flags` keeps.
pub(super) const SCN_ALIGN_MASK: u32 = pe::IMAGE_SCN_ALIGN_MASK;
/// `IMAGE_SYM_CLASS_STATIC`.
pub(super) const SYM_CLASS_STATIC: u8 = pe::IMAGE_SYM_CLASS_STATIC.0;
/// `IMAGE_SYM_CLASS_FILE`.
pub(super) const SYM_CLASS_FILE: u8 = pe::IMAGE_SYM_CLASS_FILE.0;
/// `IMAGE_SYM_CLASS_WEAK_EXTERNAL`.
pub(super) const SYM_CLASS_WEAK_EXTERNAL: u8 = pe::IMAGE_SYM_CLASS_WEAK_EXTERNAL.0;
/// `IMAGE_COMDAT_SELECT_ASSOCIATIVE`.
pub(super) const COMDAT_SELECT_ASSOCIATIVE: u8 = pe::IMAGE_COMDAT_SELECT_ASSOCIATIVE.0;
/// The most sections a regular (not `/bigobj`) object may have.
pub(super) const MAX_SECTIONS_16: usize = 65279;
/// The lowest special section number a regular object's 16-bit field
/// holds (`0xff00`, read as a signed number past [`MAX_SECTIONS_16`]).
pub(super) const MIN_SPECIAL_16: i64 = -256;
/// The size of a section header.
pub(super) const SECTION_HEADER_SIZE: usize = pe::IMAGE_SIZEOF_SECTION_HEADER;
/// The size of a relocation record.
pub(super) const RELOCATION_SIZE: usize = 10;
/// The size of an auxiliary symbol record's payload.
pub(super) const AUX_SIZE: usize = 18;

/// One section of the model.
#[derive(Debug, Clone)]
pub(super) struct Sec<'d> {
    /// A number that names the section for its symbols (input sections:
    /// their 1-based index; added ones: numbered on).
    pub(super) id: usize,
    /// The full name.
    pub(super) name: Cow<'d, [u8]>,
    /// `VirtualSize`.
    pub(super) virtual_size: u32,
    /// `VirtualAddress`.
    pub(super) virtual_address: u32,
    /// `SizeOfRawData`.
    pub(super) raw_size: u32,
    /// `PointerToLinenumbers`, kept as it was.
    pub(super) line_numbers: u32,
    /// `NumberOfLinenumbers`, kept as it was.
    pub(super) line_count: u16,
    /// `Characteristics` (without the overflow flag).
    pub(super) flags: u32,
    /// The contents.
    pub(super) contents: Contents,
    /// The relocations.
    pub(super) relocs: Vec<Reloc>,
}

/// A section's contents.
#[derive(Debug, Clone)]
pub(super) enum Contents {
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
    pub(super) fn len(&self) -> usize {
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
pub(super) struct Reloc {
    /// `VirtualAddress`.
    pub(super) offset: u32,
    /// The symbol it refers to (its position in [`Model::symbols`]).
    pub(super) symbol: usize,
    /// `Type`.
    pub(super) kind: u16,
}

/// One symbol of the model.
#[derive(Debug, Clone)]
pub(super) struct Sym<'d> {
    /// The name.
    pub(super) name: &'d [u8],
    /// `Value`.
    pub(super) value: u32,
    /// `Type`.
    pub(super) kind: u16,
    /// `StorageClass`.
    pub(super) class: u8,
    /// `NumberOfAuxSymbols`.
    pub(super) aux_count: u8,
    /// The auxiliary records' payloads (not for file records).
    pub(super) aux: Vec<[u8; AUX_SIZE]>,
    /// A file record's name, trailing zeros removed.
    pub(super) file: Option<&'d [u8]>,
    /// The section id it is defined in, or its special section number
    /// (0, -1, -2, ...).
    pub(super) section: i64,
    /// For an associative COMDAT section definition, the id of the
    /// section it is associated with (0: none).
    pub(super) associated: usize,
    /// For a weak external, the symbol it falls back to.
    pub(super) weak: Option<usize>,
    /// Its index in the input's symbol table.
    pub(super) raw_index: usize,
    /// Whether it was removed.
    pub(super) removed: bool,
}

impl Sym<'_> {
    /// The id of the section the symbol is defined in, if it is.
    pub(super) fn section_id(&self) -> Option<usize> {
        usize::try_from(self.section).ok().filter(|&n| n > 0)
    }
}

/// An object as llvm-objcopy's COFF reader models it.
#[derive(Debug, Clone)]
pub(super) struct Model<'d> {
    /// `Machine`.
    pub(super) machine: u16,
    /// `TimeDateStamp`.
    pub(super) timestamp: u32,
    /// `Characteristics` (0 for a `/bigobj` input).
    pub(super) characteristics: u16,
    /// The sections, in order.
    pub(super) sections: Vec<Sec<'d>>,
    /// The symbols, in order (removed ones marked).
    pub(super) symbols: Vec<Sym<'d>>,
    /// The next section id.
    pub(super) next_id: usize,
    /// The input file (span source 0).
    pub(super) data: &'d [u8],
}

/// An invalid object file, `detail` saying how.
pub(super) fn invalid(detail: impl Into<String>) -> Error {
    Error::invalid("COFF object file", detail)
}

/// A name as text for messages.
pub(super) fn lossy(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

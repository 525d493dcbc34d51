//! Bundles kept as sections of a host object file (`-type=o`, and `-type=a`
//! members, when the host input is an object file).
//!
//! Layout, as `clang-offload-bundler` 22 writes it through `llvm-objcopy`:
//! the host object unchanged, plus one section per target, in `-targets`
//! order, after all existing sections:
//!
//! | field | value |
//! |---|---|
//! | name | `__CLANG_OFFLOAD_BUNDLE__` + the normalized bundle-entry ID |
//! | type | `SHT_PROGBITS` |
//! | flags | `SHF_EXCLUDE` only (objcopy's `readonly,exclude`) |
//! | alignment | 1 |
//! | contents | the target's input; for the host target one zero byte |
//!
//! Reading: every section whose name is the magic followed by at least one
//! byte (LLVM's `identify_magic` needs 25 bytes) is an entry, in section
//! order. An entry holding exactly one zero byte stands for the host: its
//! extraction is the whole object with every section whose name starts with
//! the magic removed (LLVM runs `llvm-objcopy --regex
//! --remove-section=__CLANG_OFFLOAD_BUNDLE__.*`, an anchored match).
//!
//! Sources: `clang/lib/Driver/OffloadBundler.cpp` (`ObjectFileHandler`) and
//! `llvm/lib/BinaryFormat/Magic.cpp` in LLVM 22, and experiments with the
//! installed LLVM 22 tools (../shared/spec/offload-formats.md §3).
//!
//! # How the object is rewritten
//!
//! Both operations go through object's ELF [`Builder`], which re-indexes
//! symbols, relocations and section links. Three things it cannot do alone
//! are handled here, so the result holds the same sections as llvm-objcopy's:
//!
//! - **Section types it does not know** (`SHT_GROUP`, `SHT_LLVM_ADDRSIG`,
//!   attributes, other OS- and processor-specific types, secondary string
//!   tables) make it refuse the file. They are shown to it as
//!   `SHT_PROGBITS` through a patched copy of the section header table (the
//!   rest of the file is read in place), and their type is restored before
//!   writing; their contents are copied verbatim. Symbol order is kept, so
//!   symbol indices inside such contents stay valid; section indices inside
//!   `SHT_GROUP` contents are renumbered when sections are removed.
//! - **One string table for section names and symbol names**, as clang
//!   writes it (`.strtab` at index 1): the builder needs two tables. It is
//!   given a separate `.shstrtab` as the last section, and after writing the
//!   two tables are joined into the original `.strtab` and the extra section
//!   header is dropped.
//! - **Alignment 0** (no constraint) is written as 1 by the builder and set
//!   back to 0 in the section headers afterwards.
//!
//! Like llvm-objcopy, removing the bundle sections also removes relocation
//! sections that apply to them and symbols defined in them; a kept
//! relocation against such a symbol is an error; and when symbols are
//! removed, an `SHT_LLVM_ADDRSIG` section loses its link to the symbol table
//! (its indices would be stale; lld then ignores it).
//!
//! Output is described as a [`Layout`] whose large pieces are byte ranges of
//! the inputs ([`Span`]s), so device images are never copied in memory:
//! bundling a 256 MiB device image into an object needs the mapped inputs
//! and a few kilobytes of tables.
//!
//! Only ELF (32- and 64-bit, either byte order) can be written; COFF,
//! Mach-O and XCOFF hosts are read but not bundled into or stripped.

use std::io::{self, Write};

use object::build::elf::{Builder, SectionData};
use object::build::{ByteString, Id};
use object::read::elf::{FileHeader, SectionHeader};
use object::write::WritableBuffer;
use object::{Endianness, FileKind, Object, ObjectSection, ReadRef, elf};
use zerocopy::IntoBytes;

use super::Found;
use super::binary::MAGIC;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, Piece};

/// The contents of the host target's section: one zero byte.
pub const HOST_MARKER: &[u8] = &[0];

/// Whether LLVM takes a section with this name as a bundle entry: the magic
/// and at least one more byte.
pub fn is_entry_section(name: &[u8]) -> bool {
    name.len() > MAGIC.len() && name.starts_with(MAGIC)
}

/// Whether llvm-objcopy's `--regex --remove-section=__CLANG_OFFLOAD_BUNDLE__.*`
/// removes a section with this name (the magic alone matches too).
pub fn is_bundle_section(name: &[u8]) -> bool {
    name.starts_with(MAGIC)
}

// ---------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------

/// The bundle entries of the object file in `data`, in section order. Each
/// entry's data is the section's bytes in the file (empty for a section
/// without file contents). A section that lies outside the file is an
/// error.
pub fn entries(data: &[u8]) -> Result<Vec<Found<'_>>> {
    with_aligned(data, |view| {
        let file = object::File::parse(view).map_err(read_err)?;
        let mut out = Vec::new();
        for s in file.sections() {
            let Ok(name) = s.name_bytes() else { continue };
            if !is_entry_section(name) {
                continue;
            }
            let bytes = match s.file_range() {
                None => &data[..0],
                Some((offset, size)) => slice(data, offset, size).ok_or_else(|| {
                    Error::from(ErrorKind::OutOfBounds {
                        what: format!("section '{}'", String::from_utf8_lossy(name)),
                        offset,
                        size,
                        within: "object file",
                        limit: data.len() as u64,
                    })
                })?,
            };
            // The name lies in the section-name table of `view`, which is
            // `data` itself or a copy of it: take the same range of `data`.
            let id = subslice_of(view, name)
                .and_then(|r| data.get(r.start + MAGIC.len()..r.end))
                .ok_or_else(|| Error::invalid("object file", "section name outside the file"))?;
            out.push(Found { id, data: bytes });
        }
        Ok(out)
    })
}

/// The entry IDs of the object file in `data`, in section order, without
/// reading the sections' contents (LLVM's `-list` reads names only).
pub fn entry_ids(data: &[u8]) -> Result<Vec<&[u8]>> {
    with_aligned(data, |view| {
        let file = object::File::parse(view).map_err(read_err)?;
        let mut out = Vec::new();
        for s in file.sections() {
            let Ok(name) = s.name_bytes() else { continue };
            if is_entry_section(name) {
                let id = subslice_of(view, name)
                    .and_then(|r| data.get(r.start + MAGIC.len()..r.end))
                    .ok_or_else(|| {
                        Error::invalid("object file", "section name outside the file")
                    })?;
                out.push(id);
            }
        }
        Ok(out)
    })
}

fn read_err(e: object::read::Error) -> Error {
    Error::invalid("object file", e.to_string())
}

fn slice(data: &[u8], offset: u64, size: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(size).ok()?)?;
    data.get(start..end)
}

/// Where `sub` lies within `whole`, if it is a slice of it.
fn subslice_of(whole: &[u8], sub: &[u8]) -> Option<std::ops::Range<usize>> {
    let base = whole.as_ptr() as usize;
    let start = (sub.as_ptr() as usize).checked_sub(base)?;
    let end = start.checked_add(sub.len())?;
    (end <= whole.len()).then_some(start..end)
}

// ---------------------------------------------------------------------------
// Alignment
// ---------------------------------------------------------------------------

/// A copy of some bytes in an 8-byte aligned buffer. object's ELF reader
/// needs its headers aligned; archive members and decompressed bundles are
/// not always.
pub struct Aligned {
    words: Vec<u64>,
    len: usize,
}

impl Aligned {
    /// Copies `data`.
    pub fn copy_of(data: &[u8]) -> Aligned {
        let mut words = vec![0u64; data.len().div_ceil(8)];
        words.as_mut_bytes()[..data.len()].copy_from_slice(data);
        Aligned {
            words,
            len: data.len(),
        }
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.words.as_bytes()[..self.len]
    }
}

impl std::fmt::Debug for Aligned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Aligned({} bytes)", self.len)
    }
}

/// Whether `data` starts at an 8-byte boundary.
pub fn is_aligned(data: &[u8]) -> bool {
    (data.as_ptr() as usize).is_multiple_of(8)
}

/// Runs `f` on `data`, or on an aligned copy of it when `data` is not
/// aligned. Offsets into the view are offsets into `data`.
fn with_aligned<T>(data: &[u8], f: impl FnOnce(&[u8]) -> Result<T>) -> Result<T> {
    if is_aligned(data) {
        f(data)
    } else {
        let copy = Aligned::copy_of(data);
        f(copy.bytes())
    }
}

// ---------------------------------------------------------------------------
// Written output
// ---------------------------------------------------------------------------

/// A byte range of one of the inputs given to [`bundle`] or [`strip`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Which input: for [`bundle`] 0 is the host object and `i + 1` the data
    /// of section `i`; for [`strip`] 0 is the object.
    pub source: usize,
    /// Offset in that input.
    pub offset: usize,
    /// Length.
    pub len: usize,
}

/// An object file to write: its layout, where `Piece::Image(k)` stands for
/// the bytes of `spans[k]`.
#[derive(Debug, Clone, Default)]
pub struct Written {
    /// The pieces, in order.
    pub layout: Layout,
    /// The input ranges the layout's image pieces refer to.
    pub spans: Vec<Span>,
}

impl Written {
    /// The bytes image piece `k` stands for, taken from `sources` (the same
    /// inputs, in the same order, as given to [`bundle`] or [`strip`]).
    pub fn image<'a>(&self, k: usize, sources: &[&'a [u8]]) -> Option<&'a [u8]> {
        let s = self.spans.get(k)?;
        sources
            .get(s.source)?
            .get(s.offset..s.offset.checked_add(s.len)?)
    }

    /// Writes the object to `out`.
    pub fn write_to<W: Write>(&self, out: &mut W, sources: &[&[u8]]) -> io::Result<()> {
        for p in &self.layout.pieces {
            match p {
                Piece::Bytes(b) => out.write_all(b)?,
                Piece::Zeros(n) => crate::layout::write_zeros(out, *n)?,
                Piece::Image(k) => out.write_all(self.image(*k, sources).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidInput, "object span out of range")
                })?)?,
            }
        }
        Ok(())
    }

    /// The object's bytes.
    pub fn to_vec(&self, sources: &[&[u8]]) -> Result<Vec<u8>> {
        let mut v = Vec::with_capacity(usize::try_from(self.layout.size).unwrap_or(0));
        self.write_to(&mut v, sources)?;
        Ok(v)
    }
}

/// Image pieces smaller than this are copied into the layout.
const SPAN_MIN: usize = 4096;

/// Zero runs up to this size are stored as bytes.
const ZEROS_INLINE: usize = 4096;

enum Rec {
    Bytes(Vec<u8>),
    Zeros(u64),
    Span(Span),
}

impl Rec {
    fn len(&self) -> u64 {
        match self {
            Rec::Bytes(b) => b.len() as u64,
            Rec::Zeros(n) => *n,
            Rec::Span(s) => s.len as u64,
        }
    }
}

/// A [`WritableBuffer`] that records what the builder writes: its own
/// tables as bytes, and section contents that are slices of the inputs as
/// spans.
struct Recorder<'s> {
    /// The buffers the builder borrows from (inputs, or aligned copies of
    /// them at the same offsets).
    views: &'s [&'s [u8]],
    recs: Vec<Rec>,
    len: u64,
}

impl<'s> Recorder<'s> {
    fn new(views: &'s [&'s [u8]]) -> Recorder<'s> {
        Recorder {
            views,
            recs: Vec::new(),
            len: 0,
        }
    }

    fn locate(&self, val: &[u8]) -> Option<Span> {
        self.views.iter().enumerate().find_map(|(source, v)| {
            subslice_of(v, val).map(|r| Span {
                source,
                offset: r.start,
                len: r.len(),
            })
        })
    }

    fn push_bytes(&mut self, val: &[u8]) {
        if let Some(Rec::Bytes(b)) = self.recs.last_mut() {
            b.extend_from_slice(val);
        } else {
            self.recs.push(Rec::Bytes(val.to_vec()));
        }
        self.len += val.len() as u64;
    }

    /// Copies `len` written bytes at `offset`; fails if they are not all
    /// bytes this recorder holds (tables the builder made).
    fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let end = offset.checked_add(len).ok_or_else(|| bug("read range"))?;
        let mut out = Vec::new();
        let mut at = 0u64;
        for r in &self.recs {
            let (start, stop) = (at, at + r.len());
            at = stop;
            if stop <= offset || start >= end {
                continue;
            }
            let lo = offset.max(start) - start;
            let hi = end.min(stop) - start;
            match r {
                Rec::Bytes(b) => out.extend_from_slice(&b[to_usize(lo)?..to_usize(hi)?]),
                Rec::Zeros(_) => out.resize(out.len() + to_usize(hi - lo)?, 0),
                Rec::Span(_) => return Err(bug("a table overlaps section contents")),
            }
        }
        if out.len() as u64 != len {
            return Err(bug("read past the end"));
        }
        Ok(out)
    }

    /// Overwrites written bytes at `offset` (which must be bytes this
    /// recorder holds).
    fn patch(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        let end = offset
            .checked_add(bytes.len() as u64)
            .ok_or_else(|| bug("patch range"))?;
        let mut at = 0u64;
        let mut done = 0u64;
        for r in &mut self.recs {
            let (start, stop) = (at, at + r.len());
            at = stop;
            if stop <= offset || start >= end {
                continue;
            }
            let lo = offset.max(start) - start;
            let hi = end.min(stop) - start;
            let Rec::Bytes(b) = r else {
                return Err(bug("patching section contents"));
            };
            let from = to_usize(lo + start - offset)?;
            let n = to_usize(hi - lo)?;
            b[to_usize(lo)?..to_usize(hi)?].copy_from_slice(&bytes[from..from + n]);
            done += hi - lo;
        }
        if done != bytes.len() as u64 {
            return Err(bug("patch past the end"));
        }
        Ok(())
    }

    /// Drops everything from `offset` on.
    fn truncate(&mut self, offset: u64) -> Result<()> {
        let mut at = 0u64;
        let mut keep = 0usize;
        for r in &mut self.recs {
            let len = r.len();
            if at >= offset {
                break;
            }
            keep += 1;
            if at + len > offset {
                let cut = offset - at;
                match r {
                    Rec::Bytes(b) => b.truncate(to_usize(cut)?),
                    Rec::Zeros(n) => *n = cut,
                    Rec::Span(s) => s.len = to_usize(cut)?,
                }
            }
            at += len;
        }
        self.recs.truncate(keep);
        self.len = self.len.min(offset);
        Ok(())
    }

    fn finish(self) -> Written {
        let mut w = Written::default();
        for r in self.recs {
            match r {
                Rec::Bytes(b) => {
                    let n = b.len() as u64;
                    w.layout.push(Piece::Bytes(b), n);
                }
                Rec::Zeros(n) => w.layout.push(Piece::Zeros(n), n),
                Rec::Span(s) => {
                    w.layout.push(Piece::Image(w.spans.len()), s.len as u64);
                    w.spans.push(s);
                }
            }
        }
        w
    }
}

impl WritableBuffer for Recorder<'_> {
    fn reserve(&mut self, _size: u64) -> Result<(), ()> {
        Ok(())
    }

    fn write_bytes(&mut self, val: &[u8]) {
        if val.is_empty() {
            return;
        }
        if val.len() >= SPAN_MIN
            && let Some(span) = self.locate(val)
        {
            self.recs.push(Rec::Span(span));
            self.len += val.len() as u64;
            return;
        }
        self.push_bytes(val);
    }

    fn write_zeros(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        if let Ok(k) = usize::try_from(n)
            && k <= ZEROS_INLINE
        {
            self.push_bytes(&[0; ZEROS_INLINE][..k]);
        } else {
            self.recs.push(Rec::Zeros(n));
            self.len += n;
        }
    }
}

fn to_usize(x: u64) -> Result<usize> {
    usize::try_from(x).map_err(|_| bug("offset does not fit in memory"))
}

/// An internal inconsistency (a bug in this module, not bad input).
fn bug(what: &str) -> Error {
    Error::write("object file", format!("internal error: {what}"))
}

// ---------------------------------------------------------------------------
// Loading into the builder
// ---------------------------------------------------------------------------

/// The file's bytes as the builder reads them: the original, except for the
/// section header table, read from a patched copy.
#[derive(Clone, Copy)]
struct Patched<'a> {
    data: &'a [u8],
    table_at: u64,
    table: &'a [u8],
}

impl<'a> ReadRef<'a> for Patched<'a> {
    fn len(self) -> Result<u64, ()> {
        Ok(self.data.len() as u64)
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Result<&'a [u8], ()> {
        if let Some(rel) = offset.checked_sub(self.table_at)
            && rel
                .checked_add(size)
                .is_some_and(|end| end <= self.table.len() as u64)
        {
            return self.table.read_bytes_at(rel, size);
        }
        self.data.read_bytes_at(offset, size)
    }

    fn read_bytes_at_until(
        self,
        range: std::ops::Range<u64>,
        delimiter: u8,
    ) -> Result<&'a [u8], ()> {
        self.data.read_bytes_at_until(range, delimiter)
    }
}

/// The ELF class and byte order, for the header fix-ups.
#[derive(Clone, Copy)]
struct Class {
    is_64: bool,
    big: bool,
}

impl Class {
    fn get(self, b: &[u8], at: usize, width: usize) -> Result<u64> {
        let bytes = b.get(at..at + width).ok_or_else(|| bug("header field"))?;
        let mut v = 0u64;
        if self.big {
            for &x in bytes {
                v = (v << 8) | u64::from(x);
            }
        } else {
            for &x in bytes.iter().rev() {
                v = (v << 8) | u64::from(x);
            }
        }
        Ok(v)
    }

    fn put(self, b: &mut [u8], at: usize, width: usize, v: u64) -> Result<()> {
        let bytes = b
            .get_mut(at..at + width)
            .ok_or_else(|| bug("header field"))?;
        if width < 8 && v >> (8 * width) != 0 {
            return Err(Error::write(
                "object file",
                format!("value {v:#x} does not fit a {width}-byte field"),
            ));
        }
        for (i, x) in bytes.iter_mut().enumerate() {
            let shift = if self.big { 8 * (width - 1 - i) } else { 8 * i };
            *x = ((v >> shift) & 0xff) as u8;
        }
        Ok(())
    }

    fn word(self) -> usize {
        if self.is_64 { 8 } else { 4 }
    }
    fn ehdr_size(self) -> usize {
        if self.is_64 { 64 } else { 52 }
    }
    fn shdr_size(self) -> usize {
        if self.is_64 { 64 } else { 40 }
    }
    fn e_shoff(self) -> usize {
        if self.is_64 { 0x28 } else { 0x20 }
    }
    fn e_shnum(self) -> usize {
        if self.is_64 { 0x3c } else { 0x30 }
    }
    fn e_shstrndx(self) -> usize {
        if self.is_64 { 0x3e } else { 0x32 }
    }
    // Section header fields: (offset, width).
    fn sh_name(self) -> (usize, usize) {
        (0, 4)
    }
    fn sh_type(self) -> (usize, usize) {
        (4, 4)
    }
    fn sh_offset(self) -> (usize, usize) {
        if self.is_64 { (24, 8) } else { (16, 4) }
    }
    fn sh_size(self) -> (usize, usize) {
        if self.is_64 { (32, 8) } else { (20, 4) }
    }
    fn sh_link(self) -> (usize, usize) {
        if self.is_64 { (40, 4) } else { (24, 4) }
    }
    fn sh_addralign(self) -> (usize, usize) {
        if self.is_64 { (48, 8) } else { (32, 4) }
    }
}

/// LLVM's address-significance table (not among object's constants).
const SHT_LLVM_ADDRSIG: elf::SectionType = elf::SectionType(0x6fff_4c03);

/// Section types the builder parses; every other type is shown to it as
/// opaque `SHT_PROGBITS`.
fn builder_parses(sh_type: elf::SectionType) -> bool {
    matches!(
        sh_type,
        elf::SHT_PROGBITS
            | elf::SHT_NOBITS
            | elf::SHT_SYMTAB
            | elf::SHT_STRTAB
            | elf::SHT_RELA
            | elf::SHT_REL
            | elf::SHT_HASH
            | elf::SHT_DYNAMIC
            | elf::SHT_NOTE
            | elf::SHT_DYNSYM
            | elf::SHT_INIT_ARRAY
            | elf::SHT_FINI_ARRAY
            | elf::SHT_PREINIT_ARRAY
            | elf::SHT_SYMTAB_SHNDX
            | elf::SHT_RELR
            | elf::SHT_GNU_HASH
            | elf::SHT_GNU_VERSYM
            | elf::SHT_GNU_VERDEF
            | elf::SHT_GNU_VERNEED
    )
}

/// An ELF file read into the builder, with what the fix-ups need.
struct Loaded<'a> {
    builder: Builder<'a>,
    class: Class,
    /// The input index (1-based) of each builder section, in table order.
    input_index: Vec<usize>,
    /// Input sections whose type was hidden from the builder, with it.
    disguised: Vec<(usize, elf::SectionType)>,
    /// Input sections with alignment 0.
    align0: Vec<usize>,
    /// Whether section names share the symbol string table.
    shared_strtab: bool,
}

/// The object format's name, for "not supported" messages.
fn format_name(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Coff | FileKind::CoffBig | FileKind::CoffImport => "COFF",
        FileKind::Pe32 | FileKind::Pe64 => "PE",
        FileKind::MachO32 | FileKind::MachO64 | FileKind::MachOFat32 | FileKind::MachOFat64 => {
            "Mach-O"
        }
        FileKind::Xcoff32 | FileKind::Xcoff64 => "XCOFF",
        _ => "this kind of",
    }
}

fn unsupported(kind: FileKind, doing: &str) -> Error {
    Error::usage(format!(
        "{doing} {} object files is not supported by offload-kit (only ELF)",
        format_name(kind)
    ))
}

/// The largest alignment a section of an object to edit may ask for:
/// 16 MiB. Real objects stay at or below 2 MiB (huge-page alignment); a
/// larger value only makes the output grow by as much padding (a 1.7 KB
/// object asking for 2^32 made a 4 GiB file).
pub const MAX_SECTION_ALIGN: u64 = 1 << 24;

/// The most padding all of an object's sections with file contents may
/// ask for together (the sum of their alignments): 64 MiB.
pub const MAX_ALIGN_PADDING: u64 = 1 << 26;

/// Checks the alignments section headers ask for, before anything is laid
/// out: each `(name, has file contents, sh_addralign)` at most
/// [`MAX_SECTION_ALIGN`], and the sections with file contents together at
/// most [`MAX_ALIGN_PADDING`], so the input's alignments cannot size the
/// output. The error names the section.
pub fn check_alignments<'n>(
    sections: impl IntoIterator<Item = (&'n [u8], bool, u64)>,
) -> Result<()> {
    let mut padding = 0u64;
    for (name, in_file, align) in sections {
        let name = || String::from_utf8_lossy(name).into_owned();
        if align > MAX_SECTION_ALIGN {
            return Err(Error::invalid(
                "object file",
                format!(
                    "section '{}' asks for alignment {align:#x}; offload-kit accepts at most \
                     {MAX_SECTION_ALIGN:#x} (16 MiB)",
                    name()
                ),
            ));
        }
        if in_file {
            padding = padding.saturating_add(align);
            if padding > MAX_ALIGN_PADDING {
                return Err(Error::invalid(
                    "object file",
                    format!(
                        "the sections' alignments (up to section '{}') could ask for more than \
                         {MAX_ALIGN_PADDING} bytes of padding",
                        name()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Reads an ELF object (already aligned) into the builder.
fn load<'a>(data: &'a [u8], table_copy: &'a mut Vec<u64>, doing: &str) -> Result<Loaded<'a>> {
    match FileKind::parse(data).map_err(read_err)? {
        FileKind::Elf32 => load_as::<elf::FileHeader32<Endianness>>(data, table_copy, false),
        FileKind::Elf64 => load_as::<elf::FileHeader64<Endianness>>(data, table_copy, true),
        other => Err(unsupported(other, doing)),
    }
}

fn load_as<'a, Elf: FileHeader<Endian = Endianness>>(
    data: &'a [u8],
    table_copy: &'a mut Vec<u64>,
    is_64: bool,
) -> Result<Loaded<'a>> {
    let header = Elf::parse(data).map_err(read_err)?;
    let endian = header.endian().map_err(read_err)?;
    let class = Class {
        is_64,
        big: endian == Endianness::Big,
    };
    let sections = header.sections(endian, data).map_err(read_err)?;
    let shstrndx = if sections.is_empty() {
        0
    } else {
        header
            .section_strings_index(endian, data)
            .map(|i| i.0)
            .unwrap_or(0)
    };
    let symtab = sections
        .symbols(endian, data, elf::SHT_SYMTAB)
        .map_err(read_err)?;
    let dynsym = sections
        .symbols(endian, data, elf::SHT_DYNSYM)
        .map_err(read_err)?;
    let string_tables = [
        symtab.string_section().0,
        dynsym.string_section().0,
        shstrndx,
    ];
    let shared_strtab = shstrndx != 0 && symtab.string_section().0 == shstrndx;

    // The section header table, with unknown types shown as SHT_PROGBITS.
    let mut disguised = Vec::new();
    let mut align0 = Vec::new();
    let shoff: u64 = header.e_shoff(endian).into();
    let table_len = sections.len() * class.shdr_size();
    let raw_table = slice(data, shoff, table_len as u64).unwrap_or(&[]);
    *table_copy = vec![0u64; table_len.div_ceil(8)];
    let words: &'a mut [u64] = table_copy.as_mut_slice();
    let table: &'a mut [u8] = &mut words.as_mut_bytes()[..raw_table.len()];
    table.copy_from_slice(raw_table);
    check_alignments(sections.iter().skip(1).map(|s| {
        let name = sections.section_name(endian, s).unwrap_or(b"?");
        let in_file = s.sh_type(endian) != elf::SHT_NOBITS;
        (name, in_file, s.sh_addralign(endian).into())
    }))?;
    for (index, section) in sections.enumerate().skip(1) {
        let i = index.0;
        let sh_type = section.sh_type(endian);
        let secondary_strtab = sh_type == elf::SHT_STRTAB && !string_tables.contains(&i);
        if !builder_parses(sh_type) || secondary_strtab {
            disguised.push((i, sh_type));
            let at = i * class.shdr_size() + class.sh_type().0;
            class.put(table, at, 4, u64::from(elf::SHT_PROGBITS.0))?;
        }
        if section.sh_addralign(endian).into() == 0 {
            align0.push(i);
        }
    }
    let patched = Patched {
        data,
        table_at: shoff,
        table: &*table,
    };
    let builder = Builder::read(patched).map_err(|e| {
        Error::invalid(
            "object file",
            format!("offload-kit's ELF editor cannot read it: {e}"),
        )
    })?;
    let input_index = (1..=builder.sections.count()).collect();
    let mut loaded = Loaded {
        builder,
        class,
        input_index,
        disguised,
        align0,
        shared_strtab,
    };
    loaded.restore_types()?;
    Ok(loaded)
}

impl Loaded<'_> {
    fn restore_types(&mut self) -> Result<()> {
        for (section, &input) in self.builder.sections.iter_mut().zip(&self.input_index) {
            if let Some(&(_, ty)) = self.disguised.iter().find(|(i, _)| *i == input) {
                section.sh_type = ty;
            }
            // The builder lays sections out with their alignment: 0 would
            // underflow, and anything not a power of two is not valid ELF.
            let align = section.sh_addralign;
            if align == 0 {
                section.sh_addralign = 1;
            } else if !align.is_power_of_two() || align > 1 << 32 {
                return Err(Error::invalid(
                    "object file",
                    format!(
                        "section '{}' has alignment {align:#x}",
                        String::from_utf8_lossy(&section.name)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Writes the file through the recorder, then applies the fix-ups.
    fn write(mut self, views: &[&[u8]]) -> Result<Written> {
        // Output index of each input section still present.
        let mut out_index = vec![0usize; self.input_index.last().map_or(1, |l| l + 1)];
        let mut n = 0;
        for (s, &input) in self.builder.sections.iter().zip(&self.input_index) {
            if !s.delete {
                n += 1;
                out_index[input] = n;
            }
        }
        let align0: Vec<usize> = self
            .align0
            .iter()
            .map(|&i| out_index.get(i).copied().unwrap_or(0))
            .filter(|&i| i != 0)
            .collect();
        let has_names = self
            .builder
            .sections
            .iter()
            .any(|s| matches!(s.data, SectionData::SectionString));
        if self.shared_strtab || (!has_names && !self.builder.sections.is_empty()) {
            // Section names need a table of their own while the builder
            // writes (joined into the shared one afterwards), or a table at
            // all when the input's name table is not a string table.
            let s = self.builder.sections.add();
            s.name = ByteString::from(&b".shstrtab"[..]);
            s.sh_type = elf::SHT_STRTAB;
            s.sh_addralign = 1;
            s.data = SectionData::SectionString;
        }
        let class = self.class;
        let shared = self.shared_strtab;
        let mut rec = Recorder::new(views);
        self.builder
            .write(&mut rec)
            .map_err(|e| Error::write("object file", e))?;
        fix_headers(&mut rec, class, shared, &align0)?;
        Ok(rec.finish())
    }
}

/// The written section headers: (file offset of the table, count, bytes).
fn section_table(rec: &Recorder<'_>, class: Class) -> Result<(u64, usize, Vec<u8>)> {
    let ehdr = rec.read(0, class.ehdr_size() as u64)?;
    let shoff = class.get(&ehdr, class.e_shoff(), class.word())?;
    if shoff == 0 {
        return Ok((0, 0, Vec::new()));
    }
    let mut count = to_usize(class.get(&ehdr, class.e_shnum(), 2)?)?;
    if count == 0 {
        let sh0 = rec.read(shoff, class.shdr_size() as u64)?;
        count = to_usize(class.get(&sh0, class.sh_size().0, class.sh_size().1)?)?;
    }
    let table = rec.read(shoff, (count * class.shdr_size()) as u64)?;
    Ok((shoff, count, table))
}

/// The fix-ups after the builder wrote the file: alignment 0 restored, and
/// the section names moved into the shared symbol string table.
fn fix_headers(rec: &mut Recorder<'_>, class: Class, shared: bool, align0: &[usize]) -> Result<()> {
    let (shoff, count, mut table) = section_table(rec, class)?;
    let sz = class.shdr_size();
    let field = |t: &[u8], i: usize, (at, w): (usize, usize)| class.get(t, i * sz + at, w);
    for &i in align0 {
        if i < count {
            class.put(
                &mut table,
                i * sz + class.sh_addralign().0,
                class.sh_addralign().1,
                0,
            )?;
        }
    }
    if !shared || count < 2 {
        return rec.patch(shoff, &table);
    }
    // The last section is the builder's .shstrtab; the symbol table's link
    // is the shared .strtab.
    let names = count - 1;
    let strtab = (1..names)
        .find(|&i| {
            field(&table, i, class.sh_type()).is_ok_and(|t| t == u64::from(elf::SHT_SYMTAB.0))
        })
        .map(|i| field(&table, i, class.sh_link()))
        .transpose()?
        .and_then(|l| usize::try_from(l).ok())
        .filter(|&l| l != 0 && l < names)
        .ok_or_else(|| bug("symbol string table not found"))?;
    let names_at = field(&table, names, class.sh_offset())?;
    let names_len = field(&table, names, class.sh_size())?;
    let strs_at = field(&table, strtab, class.sh_offset())?;
    let strs_len = field(&table, strtab, class.sh_size())?;
    // Nothing but the section header table may follow the names.
    for i in 1..names {
        let nobits = field(&table, i, class.sh_type())? == u64::from(elf::SHT_NOBITS.0);
        let end = field(&table, i, class.sh_offset())? + field(&table, i, class.sh_size())?;
        if !nobits && end > names_at {
            return Err(bug("section after the section-name table"));
        }
    }
    let mut merged = rec.read(strs_at, strs_len)?;
    merged.extend_from_slice(&rec.read(names_at, names_len)?);
    rec.truncate(names_at)?;
    rec.write_bytes(&merged);
    let pad = rec.len.next_multiple_of(class.word() as u64) - rec.len;
    rec.write_zeros(pad);
    let new_shoff = rec.len;
    for i in 0..names {
        let name = field(&table, i, class.sh_name())?;
        if name != 0 {
            class.put(&mut table, i * sz, 4, name + strs_len)?;
        }
    }
    class.put(
        &mut table,
        strtab * sz + class.sh_offset().0,
        class.sh_offset().1,
        names_at,
    )?;
    class.put(
        &mut table,
        strtab * sz + class.sh_size().0,
        class.sh_size().1,
        merged.len() as u64,
    )?;
    // Section count and name-table index, with ELF's escapes for large values.
    let (e_shnum, sh0_size) = if names < usize::from(elf::SHN_LORESERVE) {
        (names as u64, 0)
    } else {
        (0, names as u64)
    };
    let (e_shstrndx, sh0_link) = if strtab < usize::from(elf::SHN_LORESERVE) {
        (strtab as u64, 0)
    } else {
        (u64::from(elf::SHN_XINDEX.0), strtab as u64)
    };
    class.put(&mut table, class.sh_size().0, class.sh_size().1, sh0_size)?;
    class.put(&mut table, class.sh_link().0, class.sh_link().1, sh0_link)?;
    rec.write_bytes(&table[..names * sz]);
    let mut ehdr = rec.read(0, class.ehdr_size() as u64)?;
    class.put(&mut ehdr, class.e_shoff(), class.word(), new_shoff)?;
    class.put(&mut ehdr, class.e_shnum(), 2, e_shnum)?;
    class.put(&mut ehdr, class.e_shstrndx(), 2, e_shstrndx)?;
    rec.patch(0, &ehdr)
}

// ---------------------------------------------------------------------------
// Bundling and stripping
// ---------------------------------------------------------------------------

/// One section to add when bundling.
#[derive(Debug, Clone, Copy)]
pub struct NewSection<'a> {
    /// The normalized bundle-entry ID (the name is the magic followed by it).
    pub id: &'a str,
    /// The contents: the target's input, or [`HOST_MARKER`] for the host.
    pub data: &'a [u8],
}

/// The host object `host` with one bundle section per entry of `sections`,
/// in order, after its own sections (what `clang-offload-bundler -type=o`
/// writes with llvm-objcopy). In the result, span source 0 is `host` and
/// source `i + 1` is `sections[i].data`.
pub fn bundle(host: &[u8], sections: &[NewSection<'_>]) -> Result<Written> {
    with_aligned(host, |view| bundle_aligned(view, sections))
}

fn bundle_aligned(host_view: &[u8], sections: &[NewSection<'_>]) -> Result<Written> {
    let mut table = Vec::new();
    let mut loaded = load(host_view, &mut table, "bundling into")?;
    for s in sections {
        let mut name = MAGIC.to_vec();
        name.extend_from_slice(s.id.as_bytes());
        let sec = loaded.builder.sections.add();
        sec.name = ByteString::from(name);
        sec.sh_type = elf::SHT_PROGBITS;
        sec.sh_flags = elf::SHF_EXCLUDE;
        sec.sh_addralign = 1;
        sec.data = SectionData::Data(s.data.into());
    }
    let mut views: Vec<&[u8]> = vec![host_view];
    views.extend(sections.iter().map(|s| s.data));
    loaded.write(&views)
}

/// The object `object` without its bundle sections: what LLVM extracts for
/// an entry holding [`HOST_MARKER`]. In the result, span source 0 is
/// `object`.
pub fn strip(object: &[u8]) -> Result<Written> {
    with_aligned(object, strip_aligned)
}

fn strip_aligned(view: &[u8]) -> Result<Written> {
    let mut table = Vec::new();
    let mut loaded = load(view, &mut table, "extracting the host object from")?;
    let ids: Vec<_> = loaded.builder.sections.iter().map(|s| s.id()).collect();
    let big = loaded.class.big;
    let b = &mut loaded.builder;

    // The bundle sections, and relocation sections that apply to them.
    for s in b.sections.iter_mut() {
        if is_bundle_section(&s.name) {
            s.delete = true;
        }
    }
    let removed: Vec<bool> = ids.iter().map(|&id| b.sections.get(id).delete).collect();
    for s in b.sections.iter_mut() {
        if !matches!(s.sh_type, elf::SHT_REL | elf::SHT_RELA) {
            continue;
        }
        if s.sh_info_section.is_none() && s.sh_info != 0 {
            // A relocation section without SHF_INFO_LINK still names its
            // target by index: keep that index valid.
            s.sh_info_section = usize::try_from(s.sh_info)
                .ok()
                .and_then(|i| ids.get(i.checked_sub(1)?))
                .copied();
        }
        if let Some(target) = s.sh_info_section
            && removed[target.index()]
        {
            s.delete = true;
        }
    }
    if !removed.iter().any(|&r| r) {
        return loaded.write(&[view]);
    }
    let removed: Vec<bool> = ids.iter().map(|&id| b.sections.get(id).delete).collect();

    // Symbols defined in removed sections go too; kept relocations must not
    // refer to them (llvm-objcopy refuses the same way).
    let mut gone = vec![false; b.symbols.iter().count()];
    for (k, sym) in b.symbols.iter().enumerate() {
        if sym.section.is_some_and(|s| removed[s.index()]) {
            gone[k] = true;
        }
    }
    for s in b.sections.iter() {
        if s.delete {
            continue;
        }
        let SectionData::Relocation(relocs) = &s.data else {
            continue;
        };
        if let Some(r) = relocs
            .iter()
            .find(|r| r.symbol.is_some_and(|id| gone[id.index()]))
        {
            let sym = r.symbol.map(|id| b.symbols.get(id));
            let target = s.sh_info_section.map(|t| b.sections.get(t));
            return Err(Error::usage(format!(
                "cannot remove the bundle sections: section '{}' has a relocation \
                 (offset {:#x}) against symbol '{}', which is defined in a bundle section",
                target.map_or_else(
                    || String::from_utf8_lossy(&s.name).into_owned(),
                    |t| String::from_utf8_lossy(&t.name).into_owned()
                ),
                r.r_offset,
                sym.map_or_else(String::new, |s| String::from_utf8_lossy(&s.name)
                    .into_owned()),
            )));
        }
    }
    for (sym, &g) in b.symbols.iter_mut().zip(&gone) {
        if g {
            sym.delete = true;
        }
    }
    // New symbol indices: locals first, then the rest, as the builder writes.
    let mut new_sym = vec![0u32; gone.len()];
    let mut next = 1u32;
    for local in [true, false] {
        for (k, sym) in b.symbols.iter().enumerate() {
            if !gone[k] && (sym.st_bind() == elf::STB_LOCAL) == local {
                new_sym[k] = next;
                next += 1;
            }
        }
    }
    // New section indices.
    let mut new_sec = vec![0u32; ids.len() + 1];
    let mut n = 0u32;
    for (k, &id) in ids.iter().enumerate() {
        if !b.sections.get(id).delete {
            n += 1;
            new_sec[k + 1] = n;
        }
    }
    let symbols_gone = gone.iter().any(|&g| g);
    for s in b.sections.iter_mut() {
        if s.delete {
            continue;
        }
        match s.sh_type {
            elf::SHT_GROUP => {
                if symbols_gone {
                    let old = usize::try_from(s.sh_info).unwrap_or(usize::MAX);
                    s.sh_info = match old.checked_sub(1).and_then(|k| new_sym.get(k)) {
                        Some(&0) | None if old != 0 => {
                            return Err(Error::usage(format!(
                                "cannot remove the bundle sections: the signature symbol \
                                 of group section '{}' is defined in a bundle section",
                                String::from_utf8_lossy(&s.name)
                            )));
                        }
                        Some(&i) => i,
                        None => 0,
                    };
                }
                if let SectionData::Data(d) = &mut s.data {
                    let renumbered = renumber_group(d, &new_sec, big);
                    *d = renumbered.into();
                }
            }
            SHT_LLVM_ADDRSIG if symbols_gone => s.sh_link_section = None,
            _ => {}
        }
    }
    loaded.write(&[view])
}

/// `SHT_GROUP` contents (a flag word, then member section indices) with
/// the indices renumbered and removed members dropped.
fn renumber_group(data: &[u8], new_index: &[u32], big: bool) -> Vec<u8> {
    let word = |c: &[u8]| {
        let b = [c[0], c[1], c[2], c[3]];
        if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    let put = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut out = Vec::with_capacity(data.len());
    let mut chunks = data.chunks_exact(4);
    if let Some(flags) = chunks.next() {
        out.extend_from_slice(flags);
    }
    for c in chunks.by_ref() {
        let old = usize::try_from(word(c)).unwrap_or(usize::MAX);
        match new_index.get(old) {
            Some(&0) => {}
            Some(&i) => out.extend_from_slice(&put(i)),
            None => out.extend_from_slice(c),
        }
    }
    out.extend_from_slice(chunks.remainder());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::write::{Object as WObject, StandardSection, Symbol, SymbolSection};
    use object::{Architecture, BinaryFormat, Endianness as E, SectionKind, SymbolFlags};

    /// A small relocatable object made with object's writer.
    fn host_object(arch: Architecture, endian: E) -> Vec<u8> {
        let mut o = WObject::new(BinaryFormat::Elf, arch, endian);
        let text = o.section_id(StandardSection::Text);
        let off = o.append_section_data(text, &[0xc3; 16], 16);
        o.add_symbol(Symbol {
            name: b"f".to_vec(),
            value: off,
            size: 16,
            kind: object::SymbolKind::Text,
            scope: object::SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        });
        let data = o.section_id(StandardSection::Data);
        o.append_section_data(data, &[7; 8], 8);
        let extra = o.add_section(Vec::new(), b".note.GNU-stack".to_vec(), SectionKind::Other);
        let _ = extra;
        o.write().unwrap()
    }

    fn sections_of(data: &[u8]) -> Vec<(String, Vec<u8>)> {
        let f = object::File::parse(data).unwrap();
        f.sections()
            .map(|s| {
                (
                    s.name().unwrap().to_string(),
                    s.data().unwrap_or(&[]).to_vec(),
                )
            })
            .collect()
    }

    fn round_trip(arch: Architecture, endian: E) {
        let host = host_object(arch, endian);
        let dev = vec![0x5a; 10_000];
        let written = bundle(
            &host,
            &[
                NewSection {
                    id: "host-x86_64-unknown-linux-gnu-",
                    data: HOST_MARKER,
                },
                NewSection {
                    id: "hip-amdgcn-amd-amdhsa--gfx906",
                    data: &dev,
                },
            ],
        )
        .unwrap();
        // The large device image is a span of its input, not a copy.
        assert!(written.spans.iter().any(|s| s.source == 2));
        let fat = written.to_vec(&[&host, HOST_MARKER, &dev]).unwrap();
        assert_eq!(fat.len() as u64, written.layout.size);
        let found = entries(&fat).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].id, b"host-x86_64-unknown-linux-gnu-");
        assert_eq!(found[0].data, HOST_MARKER);
        assert_eq!(found[1].id, b"hip-amdgcn-amd-amdhsa--gfx906");
        assert_eq!(found[1].data, &dev[..]);
        // String tables are rebuilt; compare the rest.
        let keep = |mut v: Vec<(String, Vec<u8>)>| {
            v.retain(|(n, _)| !matches!(n.as_str(), ".strtab" | ".shstrtab"));
            v
        };
        let want = keep(sections_of(&host));
        let got = keep(sections_of(&fat));
        assert_eq!(got[..want.len()], want[..]);
        assert_eq!(got.len(), want.len() + 2);
        let stripped = strip(&fat).unwrap().to_vec(&[&fat]).unwrap();
        assert_eq!(keep(sections_of(&stripped)), want);
        assert!(entries(&stripped).unwrap().is_empty());
    }

    #[test]
    fn bundle_and_strip_round_trip() {
        round_trip(Architecture::X86_64, E::Little);
        round_trip(Architecture::I386, E::Little);
        round_trip(Architecture::PowerPc64, E::Big);
        round_trip(Architecture::Mips, E::Big);
    }

    #[test]
    fn misaligned_input_reads_the_same() {
        let host = host_object(Architecture::X86_64, E::Little);
        let fat = bundle(
            &host,
            &[NewSection {
                id: "openmp-x86_64-unknown-linux-gnu-",
                data: b"DEV",
            }],
        )
        .unwrap()
        .to_vec(&[&host, b"DEV"])
        .unwrap();
        let mut shifted = vec![0u8; 3];
        shifted.extend_from_slice(&fat);
        let view = &shifted[3..];
        assert!(!is_aligned(view));
        let e = entries(view).unwrap();
        assert_eq!(e[0].data, b"DEV");
        assert_eq!(
            entry_ids(view).unwrap(),
            [&b"openmp-x86_64-unknown-linux-gnu-"[..]]
        );
        let s = strip(view).unwrap().to_vec(&[view]).unwrap();
        assert!(entries(&s).unwrap().is_empty());
    }

    #[test]
    fn entry_names_need_an_id() {
        assert!(!is_entry_section(b"__CLANG_OFFLOAD_BUNDLE__"));
        assert!(is_bundle_section(b"__CLANG_OFFLOAD_BUNDLE__"));
        assert!(is_entry_section(b"__CLANG_OFFLOAD_BUNDLE__x"));
        assert!(!is_bundle_section(b"x__CLANG_OFFLOAD_BUNDLE__x"));
    }

    #[test]
    fn non_elf_objects_are_refused() {
        let mut o = WObject::new(BinaryFormat::Coff, Architecture::X86_64, E::Little);
        let text = o.section_id(StandardSection::Text);
        o.append_section_data(text, &[0xc3], 1);
        let coff = o.write().unwrap();
        let e = bundle(&coff, &[]).unwrap_err().to_string();
        assert!(e.contains("COFF") && e.contains("not supported"), "{e}");
        let e = strip(&coff).unwrap_err().to_string();
        assert!(e.contains("COFF"), "{e}");
    }

    #[test]
    fn an_object_without_sections_is_a_clean_error() {
        let mut host = host_object(Architecture::X86_64, E::Little);
        // No section header table: e_shoff, e_shnum and e_shstrndx cleared.
        // object's builder needs a section-name table to read the file.
        host[0x28..0x30].fill(0);
        host[0x3c..0x40].fill(0);
        let e = bundle(&host, &[]).unwrap_err().to_string();
        assert!(e.contains("cannot read"), "{e}");
        assert!(entries(&host).unwrap().is_empty());
    }

    #[test]
    fn group_members_are_renumbered() {
        let data = [1, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0];
        // Section 3 removed, 5 becomes 4.
        let map = [0, 1, 2, 0, 3, 4];
        assert_eq!(renumber_group(&data, &map, false), [1, 0, 0, 0, 4, 0, 0, 0]);
    }

    #[test]
    fn truncations_never_panic() {
        let host = host_object(Architecture::X86_64, E::Little);
        let fat = bundle(
            &host,
            &[NewSection {
                id: "host-x86_64-unknown-linux-gnu-",
                data: HOST_MARKER,
            }],
        )
        .unwrap()
        .to_vec(&[&host, HOST_MARKER])
        .unwrap();
        for cut in 0..fat.len() {
            let d = &fat[..cut];
            let _ = entries(d);
            let _ = entry_ids(d);
            let _ = strip(d);
            let _ = bundle(d, &[]);
        }
        for i in 0..fat.len() {
            let mut d = fat.clone();
            d[i] ^= 0xff;
            let _ = entries(&d);
            let _ = strip(&d);
            let _ = bundle(&d, &[]);
        }
    }

    #[test]
    fn alignments_are_bounded_per_section_and_in_all() {
        let ok = [(&b".text"[..], true, 16), (b".data.huge", true, 1 << 21)];
        assert!(check_alignments(ok).is_ok());
        let e = check_alignments([(&b".text"[..], true, 16), (b".big", true, 1 << 32)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("section '.big'") && e.contains("0x100000000"),
            "{e}"
        );
        // Sections without file contents still may not ask for more.
        assert!(check_alignments([(&b".bss"[..], false, (1 << 24) + 1)]).is_err());
        assert!(check_alignments([(&b".bss"[..], false, 1 << 24); 100]).is_ok());
        // Five 16 MiB sections with contents: 80 MiB of padding.
        let e = check_alignments([(&b".d"[..], true, 1 << 24); 5])
            .unwrap_err()
            .to_string();
        assert!(e.contains("padding"), "{e}");
    }
}

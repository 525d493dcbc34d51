//! Host object files edited as `llvm-objcopy` 22 edits them, byte for
//! byte: ELF (32- and 64-bit, either byte order; the rules in the private
//! `rewrite` module) and COFF objects (regular and `/bigobj`; the rules in
//! the private `coff` module). Mach-O and XCOFF objects, and PE images,
//! are refused.
//!
//! An edit ([`Edit`]) removes sections (by index, or every one whose name a
//! caller's rule picks), gives sections new contents and adds sections
//! after all others, each added one flagged as objcopy's
//! `--set-section-flags=…=readonly,exclude` flags it. The bundler adds and
//! removes its `__CLANG_OFFLOAD_BUNDLE__` sections through it
//! ([`crate::bundle`] names them); `prune` removes and shrinks sections.
//!
//! Output is a [`Written`]: tables built in memory, section contents as byte
//! ranges of the inputs ([`Span`]s), so large contents are never copied in
//! memory. Also here: the section names of any object as LLVM's reader
//! reads them ([`named_sections`]), an aligned copy for the `object` crate's
//! ELF reader ([`Aligned`]), and what is wrong with a COFF object
//! ([`coff_damage`]).

pub(crate) mod coff;
mod rewrite;

use std::io::{self, Write};

use object::{FileKind, Object, ObjectSection};
use zerocopy::IntoBytes;

use crate::error::{Error, Result};
use crate::layout::{Layout, Piece};

/// A section's name and its range in the file (`None` for a section
/// without file contents).
pub(crate) type NamedSection<'a> = (&'a [u8], Option<(u64, u64)>);

/// The sections of the object file `view` whose names read, in section
/// order. ELF files are read as LLVM's object reader reads them for the
/// bundler: the file header, the section table and the section-name table
/// only, so that a symbol table or relocation section the `object` crate
/// refuses as a whole (a relocation section applying to another one, which
/// llvm-objcopy writes) does not hide the bundle sections. Other formats go
/// through the `object` crate's reader.
pub(crate) fn named_sections(view: &[u8]) -> Result<Vec<NamedSection<'_>>> {
    use object::elf::{FileHeader32, FileHeader64};
    use object::read::elf::{FileHeader, SectionHeader};

    fn elf<H: FileHeader<Endian = object::Endianness>>(
        view: &[u8],
    ) -> Result<Vec<NamedSection<'_>>> {
        let header = H::parse(view).map_err(read_err)?;
        let endian = header.endian().map_err(read_err)?;
        let table = header.sections(endian, view).map_err(read_err)?;
        // LLVM checks the section-name table before it reads any name (an
        // escaped index of 0 means no table, as LLVM reads it).
        let names = header.shstrndx(endian, view).unwrap_or(0);
        if names != 0 && !table.is_empty() {
            let sh = table
                .section(object::SectionIndex(names as usize))
                .map_err(read_err)?;
            check_string_table(sh.data(endian, view).ok(), names as usize)?;
        }
        Ok(table
            .iter()
            .filter_map(|s| {
                let name = llvm_section_name(&table, endian, s).ok()?;
                Some((name, s.file_range(endian)))
            })
            .collect())
    }
    match FileKind::parse(view).map_err(read_err)? {
        FileKind::Elf32 => elf::<FileHeader32<object::Endianness>>(view),
        FileKind::Elf64 => elf::<FileHeader64<object::Endianness>>(view),
        _ => {
            let file = object::File::parse(view).map_err(read_err)?;
            Ok(file
                .sections()
                .filter_map(|s| Some((s.name_bytes().ok()?, s.file_range())))
                .collect())
        }
    }
}

/// LLVM's check of an ELF string table it reads names from (`bytes`, or
/// `None` when they lie outside the file): not empty, and ending in a null
/// byte, so that no name runs past the table. LLVM's words.
pub(crate) fn check_string_table(bytes: Option<&[u8]>, index: usize) -> Result<()> {
    let fault = match bytes {
        Some([.., 0]) => return Ok(()),
        Some([]) => "is empty",
        Some(_) => "is non-null terminated",
        None => "lies outside the file",
    };
    Err(Error::invalid(
        "object file",
        format!("SHT_STRTAB string table section [index {index}] {fault}"),
    ))
}

/// The name of ELF section `sh` as LLVM's object reader reads it: a name
/// offset of 0 is the empty name whatever the name table holds there (a
/// hostile table need not start with a NUL byte).
pub(crate) fn llvm_section_name<'data, H: object::read::elf::FileHeader>(
    table: &object::read::elf::SectionTable<'data, H>,
    endian: H::Endian,
    sh: &H::SectionHeader,
) -> object::Result<&'data [u8]> {
    use object::read::elf::SectionHeader;
    if sh.sh_name(endian) == 0 {
        return Ok(&[]);
    }
    table.section_name(endian, sh)
}

fn read_err(e: object::read::Error) -> Error {
    Error::invalid("object file", e.to_string())
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
pub(crate) fn with_aligned<T>(data: &[u8], f: impl FnOnce(&[u8]) -> Result<T>) -> Result<T> {
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

/// A byte range of one of the inputs given to
/// [`bundle_object`](crate::bundle::bundle_object) or
/// [`host_object`](crate::bundle::host_object).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Which input: for [`bundle_object`](crate::bundle::bundle_object) 0
    /// is the host object and `i + 1` the data of section `i`; for
    /// [`host_object`](crate::bundle::host_object) 0 is the
    /// object.
    pub source: usize,
    /// Offset in that input.
    pub offset: usize,
    /// Length.
    pub len: usize,
}

/// An object file to write: its layout, where `Piece::Image(k)` stands for
/// the bytes of `spans[k]`.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Written {
    /// The pieces, in order.
    pub layout: Layout,
    /// The input ranges the layout's image pieces refer to.
    pub spans: Vec<Span>,
}

impl Written {
    /// The bytes image piece `k` stands for, taken from `sources` (the same
    /// inputs, in the same order, as given to
    /// [`bundle_object`](crate::bundle::bundle_object) or
    /// [`host_object`](crate::bundle::host_object)).
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

// ---------------------------------------------------------------------------
// Format names
// ---------------------------------------------------------------------------

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
    // Bundles go into ELF and COFF objects; other edits are for ELF only.
    let only = if doing == "pruning" {
        "only ELF"
    } else {
        "only ELF and COFF"
    };
    Error::unsupported(format!(
        "{doing} {} object files is not supported by offload-kit ({only})",
        format_name(kind)
    ))
}

/// What is wrong with the COFF object `data` (regular or `/bigobj`), in
/// words: a section's raw data or relocations, the symbol table or the
/// string table outside the file, a string table size that lies, a name or
/// symbol that points nowhere (what LLVM's `COFFObjectFile` refuses too);
/// `None` when nothing is, or when `data` is no COFF object.
pub(crate) fn coff_damage(data: &[u8]) -> Option<String> {
    match FileKind::parse(data) {
        Ok(FileKind::Coff | FileKind::CoffBig) => coff::check(data).err().map(|e| e.to_string()),
        _ => None,
    }
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

/// What to change in an object, as llvm-objcopy's options would.
pub(crate) struct Edit<'e> {
    /// Remove every section whose name this says yes to
    /// (`--regex --remove-section=…`).
    pub remove_named: Option<&'e NameRule>,
    /// Sections to add, in order; span source `i + 1` is `add[i].data`.
    pub add: &'e [Added<'e>],
    /// Sections removed, by index (`--remove-section`).
    pub remove: &'e [usize],
    /// Sections given new contents (`--update-section`).
    pub update: &'e [Update<'e>],
    /// More span sources for the updates' parts: `extra[j]` is source
    /// `add.len() + 1 + j`.
    pub extra: &'e [&'e [u8]],
}

/// Which sections an [`Edit`] removes by name: yes for those to go.
pub(crate) type NameRule = dyn Fn(&[u8]) -> bool;

/// One section to add (`--add-section` with
/// `--set-section-flags=…=readonly,exclude`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Added<'a> {
    /// The section's name.
    pub name: &'a [u8],
    /// Its contents.
    pub data: &'a [u8],
}

/// What llvm-objcopy makes of the object `data` with `edit`. In the
/// result, span source 0 is `data`, source `i + 1` is `edit.add[i].data`,
/// then come `edit.extra`'s.
pub(crate) fn edit(data: &[u8], edit: &Edit<'_>) -> Result<Written> {
    with_aligned(data, |view| rewrite::rewrite(view, edit))
}

/// One piece of a section's new contents.
#[derive(Debug, Clone)]
pub(crate) enum Part {
    /// `len` bytes of span source `source` (0: the object; `j + 1`: the
    /// `j`th extra source of [`edit_sections`]) from `offset`.
    Span {
        /// The source.
        source: usize,
        /// Offset in it.
        offset: usize,
        /// Length.
        len: usize,
    },
    /// Bytes built by the caller.
    Bytes(Vec<u8>),
    /// Zeros.
    Zeros(u64),
}

impl Part {
    fn len(&self) -> u64 {
        match self {
            Part::Span { len, .. } => *len as u64,
            Part::Bytes(b) => b.len() as u64,
            Part::Zeros(n) => *n,
        }
    }
}

/// New contents for one section (`llvm-objcopy --update-section`).
#[derive(Debug, Clone)]
pub(crate) struct Update<'a> {
    /// The section's index in the section header table.
    pub index: usize,
    /// Its new contents, in order.
    pub parts: &'a [Part],
    /// Where the bytes that may be pointed at went, in section offsets
    /// (a COFF object's symbols and relocations follow them; an ELF
    /// object's must not need to, which the caller checks).
    pub moves: &'a [Moved],
}

/// Section bytes `[old, old + len)` of the input are at `new` in the
/// updated section; with `len` 0, only the place `old` itself (the start
/// of a container, the end of the section) is at `new`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Moved {
    /// Where they were.
    pub old: u64,
    /// How many bytes (0: a place, not bytes).
    pub len: u64,
    /// Where they are.
    pub new: u64,
}

/// Where section offset `at` of the input is in the section `moves`
/// describe; `None` when it is in bytes that went or changed.
pub(crate) fn moved(moves: &[Moved], at: u64) -> Option<u64> {
    moves.iter().find_map(|m| {
        let d = at.checked_sub(m.old)?;
        (d < m.len || d == 0).then(|| m.new + d)
    })
}

impl Update<'_> {
    /// The new size.
    pub(crate) fn size(&self) -> u64 {
        self.parts.iter().map(Part::len).sum()
    }
}

/// The relocatable object `object` with the sections `remove` (indices)
/// removed and those `update` names given new contents: what
/// `llvm-objcopy --remove-section=… --update-section=…` writes. In the
/// result, span source 0 is `object` and source `j + 1` is `extra[j]`.
pub(crate) fn edit_sections(
    object: &[u8],
    remove: &[usize],
    update: &[Update<'_>],
    extra: &[&[u8]],
) -> Result<Written> {
    with_aligned(object, |view| {
        rewrite::rewrite(
            view,
            &Edit {
                remove_named: None,
                add: &[],
                remove,
                update,
                extra,
            },
        )
    })
}

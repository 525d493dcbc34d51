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

mod checks;
pub(crate) mod coff;
mod model;
mod rewrite;

use object::{FileKind, Object, ObjectSection};
use zerocopy::IntoBytes;

use crate::error::Result;

pub use crate::layout::{Span, Written};
#[cfg(test)]
pub(crate) use checks::check_alignments;
pub(crate) use checks::{check_string_table, llvm_section_name, read_err};
pub(crate) use model::{Added, Edit, Moved, Part, Update, moved};

/// A section's name and its range in the file (`None` for a section
/// without file contents).
pub(crate) type NamedSection<'a> = (&'a [u8], Option<(u64, u64)>);

/// The sections of the object file `view` whose names read, in section
/// order. ELF files are read as LLVM's object reader reads them for the
/// bundler: the file header, the section table and the section-name table
/// only, so that a symbol table or relocation section the `object` crate
/// refuses as a whole (a relocation section applying to another one, which
/// llvm-objcopy writes) does not hide the bundle sections. Other formats go
/// through the `object` crate's reader. `kind` is the file's format, as
/// the caller read it.
pub(crate) fn named_sections(view: &[u8], kind: FileKind) -> Result<Vec<NamedSection<'_>>> {
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
    /// The sections of `file`, a host file of another format, parsed as
    /// the format `kind` says (what `object::File::parse` would do after
    /// reading the format again).
    fn other<'d>(file: &impl Object<'d>) -> Vec<NamedSection<'d>> {
        file.sections()
            .filter_map(|s| Some((s.name_bytes().ok()?, s.file_range())))
            .collect()
    }
    use object::read::{coff, macho, pe, xcoff};
    match kind {
        FileKind::Elf32 => elf::<FileHeader32<object::Endianness>>(view),
        FileKind::Elf64 => elf::<FileHeader64<object::Endianness>>(view),
        FileKind::Coff => Ok(other(
            &coff::CoffFile::<&[u8]>::parse(view).map_err(read_err)?,
        )),
        FileKind::CoffBig => Ok(other(
            &coff::CoffBigFile::<&[u8]>::parse(view).map_err(read_err)?,
        )),
        FileKind::Pe32 => Ok(other(
            &pe::PeFile32::<&[u8]>::parse(view).map_err(read_err)?,
        )),
        FileKind::Pe64 => Ok(other(
            &pe::PeFile64::<&[u8]>::parse(view).map_err(read_err)?,
        )),
        FileKind::MachO32 => Ok(other(
            &macho::MachOFile32::<object::Endianness, &[u8]>::parse(view).map_err(read_err)?,
        )),
        FileKind::MachO64 => Ok(other(
            &macho::MachOFile64::<object::Endianness, &[u8]>::parse(view).map_err(read_err)?,
        )),
        FileKind::Xcoff32 => Ok(other(
            &xcoff::XcoffFile32::<&[u8]>::parse(view).map_err(read_err)?,
        )),
        FileKind::Xcoff64 => Ok(other(
            &xcoff::XcoffFile64::<&[u8]>::parse(view).map_err(read_err)?,
        )),
        // No object file (an archive, a format `object` reads no sections
        // of): its error, as `object::File::parse` words it.
        _ => Ok(other(&object::File::parse(view).map_err(read_err)?)),
    }
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

/// What is wrong with the COFF object `data` (regular or `/bigobj`), in
/// words: a section's raw data or relocations, the symbol table or the
/// string table outside the file, a string table size that lies, a name or
/// symbol that points nowhere (what LLVM's `COFFObjectFile` refuses too);
/// `None` when nothing is, or when `data` is no COFF object.
/// `kind` is the file's format, as the caller read it.
pub(crate) fn coff_damage(data: &[u8], kind: FileKind) -> Option<String> {
    match kind {
        FileKind::Coff | FileKind::CoffBig => coff::check(data).err().map(|e| e.to_string()),
        _ => None,
    }
}

/// What llvm-objcopy makes of the object `data` with `edit`. In the
/// result, span source 0 is `data`, source `i + 1` is `edit.add[i].data`,
/// then come `edit.extra`'s. `kind` is the file's format, as the caller
/// read it.
pub(crate) fn edit(data: &[u8], kind: FileKind, edit: &Edit<'_>) -> Result<Written> {
    with_aligned(data, |view| rewrite::rewrite(view, kind, edit))
}

/// The relocatable object `object` with the sections `remove` (indices)
/// removed and those `update` names given new contents: what
/// `llvm-objcopy --remove-section=… --update-section=…` writes. In the
/// result, span source 0 is `object` and source `j + 1` is `extra[j]`.
/// `kind` is its format as the caller read it (the scan's
/// [`Report::host`](crate::scan::Report::host)); `None`: read here.
/// With `keep_strings`, an ELF object's string tables stay as they were
/// read ([`Edit::keep_strings`]).
pub(crate) fn edit_sections(
    object: &[u8],
    kind: Option<FileKind>,
    remove: &[usize],
    update: &[Update<'_>],
    extra: &[&[u8]],
    keep_strings: bool,
) -> Result<Written> {
    let kind = match kind {
        Some(kind) => kind,
        None => crate::host::file_kind(object).map_err(read_err)?,
    };
    with_aligned(object, |view| {
        rewrite::rewrite(
            view,
            kind,
            &Edit {
                remove_named: None,
                add: &[],
                remove,
                update,
                extra,
                keep_strings,
            },
        )
    })
}

//! The checks every object reader here makes as LLVM makes them, and the
//! errors they give: string tables and section names, the alignments
//! sections ask for, and the formats an edit refuses.

use object::FileKind;

use crate::error::{Error, Result};

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

pub(crate) fn read_err(e: object::read::Error) -> Error {
    Error::invalid("object file", e.to_string())
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

/// The object format's name, for "not supported" messages.
pub(super) fn format_name(kind: FileKind) -> &'static str {
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

pub(super) fn unsupported(kind: FileKind, doing: &str) -> Error {
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

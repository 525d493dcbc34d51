//! The ELF rewrite `llvm-objcopy` 22 does for the bundler, emulated byte for
//! byte: removing the bundle sections (`--regex
//! --remove-section=__CLANG_OFFLOAD_BUNDLE__.*`) or adding one section per
//! target (`--add-section` with `--set-section-flags=…=readonly,exclude`).
//!
//! llvm-objcopy does not patch the input: it reads the file into a model
//! and writes a new file from it. What the model keeps and rebuilds, as
//! found in `llvm/lib/ObjCopy/ELF/ELFObject.cpp` and `ELFObjcopy.cpp` of
//! LLVM 22 and checked against the installed tool:
//!
//! - **Sections** keep their order; removed ones leave no gap in the
//!   numbering; added ones come last. Relocation sections that apply to a
//!   removed section go too, and so do groups whose members all go (a group
//!   without members always goes).
//! - **File layout**: segments first (linked hosts: shared objects,
//!   executables), their bytes copied whole; then every other section in
//!   the order of its offset in the input (added sections last), each
//!   aligned; then the section header table (the rules: [`layout`]).
//! - **String tables** (non-allocated `SHT_STRTAB`) are rebuilt with
//!   `StringTableBuilder`'s tail-merged ELF layout from the names that use
//!   them: section names for the `e_shstrndx` table, symbol names for the
//!   symbol table's, both when they are one table (clang's `.strtab`). A
//!   table nothing uses is left holding one zero byte.
//! - **The symbol table** is rewritten: symbols defined in removed sections
//!   go, locals are moved first (keeping order), `st_shndx` is renumbered,
//!   `sh_info` is one past the last local, `sh_addralign` becomes the word
//!   size. If any symbol index changed, other sections linked to the symbol
//!   table (`.llvm_addrsig`, call-graph profiles) lose that link (`sh_link`
//!   0), as their contents would be stale.
//! - **Relocation sections** are rewritten with the new symbol indices,
//!   word-aligned (compact `SHT_CREL` ones decoded and encoded again, see
//!   [`crel`]); `sh_link` and `sh_info` follow the renumbering.
//!   A kept relocation against a symbol defined in a removed section is an
//!   error.
//! - **Groups** are rewritten with renumbered members (removed ones
//!   dropped) and the new signature symbol index; a group whose signature
//!   is local loses `GRP_COMDAT`.
//! - **Other sections** are copied, their `sh_link` renumbered (`sh_info`
//!   is kept as it was).
//! - **Extended section indices**: an `SHT_SYMTAB_SHNDX` table is kept, and
//!   made (`.symtab_shndx`, after the added sections) when missing, only if
//!   a section that defined a symbol in the input ends up at index 0xff00
//!   or above; otherwise it is dropped. Section 0 then holds the section
//!   count and the name table's index as ELF requires.
//! - **The ELF header** keeps class, byte order, OS ABI and ABI version,
//!   type, machine, version, entry and flags; everything else is written
//!   anew.
//!
//! Output is a [`Written`]: tables are built in memory, section contents
//! are byte ranges of the inputs.
//!
//! The phases, one file each: [`read`] builds the [`model`] from the input
//! (refusing what llvm-objcopy refuses), [`edit`] removes and adds
//! sections, [`layout`] numbers and places what stays, and [`write`](mod@write) builds
//! the contents and headers and puts the file together, the ELF structures
//! encoded by `object`'s ELF `Encoder` as the wrapper object's are;
//! [`crel`] is the compact relocation format.

use object::{Endianness, elf};

// `read_err` is the one mapping of the `object` crate's read errors (an
// invalid object file), here as in the bundle listing.
use super::checks::{
    check_alignments, check_string_table, llvm_section_name, read_err, unsupported,
};
use super::model::{Edit, Part};
use crate::error::Result;
use crate::layout::Written;

mod checked;
mod crel;
mod edit;
mod layout;
mod model;
mod read;
#[cfg(test)]
mod tests;
mod write;

/// What llvm-objcopy makes of the ELF object `data` with `edit`. Span
/// source 0 is `data`. `kind` is its format, as the caller read it.
pub(super) fn rewrite(data: &[u8], kind: object::FileKind, edit: &Edit<'_>) -> Result<Written> {
    let mut model = match kind {
        object::FileKind::Elf32 => read::read::<elf::FileHeader32<Endianness>>(data, false)?,
        object::FileKind::Elf64 => read::read::<elf::FileHeader64<Endianness>>(data, true)?,
        // COFF objects have their own model and writer.
        object::FileKind::Coff | object::FileKind::CoffBig => {
            return super::coff::rewrite(data, edit);
        }
        other => return Err(unsupported(other, doing(edit))),
    };
    model.edit(edit)?;
    model.keep_strings = edit.keep_strings && edit.add.is_empty();
    model.write(data, edit)
}

/// What the edit is doing, for the error naming a format it cannot write.
fn doing(edit: &Edit<'_>) -> &'static str {
    if !edit.update.is_empty() || !edit.remove.is_empty() {
        "pruning"
    } else if edit.remove_named.is_some() {
        "extracting the host object from"
    } else {
        "bundling into"
    }
}

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
//! In a COFF host the section's characteristics are `IMAGE_SCN_MEM_READ |
//! IMAGE_SCN_LNK_REMOVE` (objcopy's `readonly,exclude`), its alignment 1,
//! its virtual size its length, and its name, longer than 8 bytes, lies in
//! the string table.
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
//! installed LLVM 22 tools (docs/formats/bundles.md §3).
//!
//! # How the object is rewritten
//!
//! Both operations give the bytes llvm-objcopy 22 writes, through the host
//! layer's object editor ([`crate::host::object`], which emulates its model
//! of the file and its writer): sections in input order with added ones
//! last, string and symbol tables rebuilt, relocations and groups
//! renumbered, contents laid out in input offset order. This module only
//! names the sections: which to add, which to remove.
//!
//! Output is described as a [`Layout`](crate::Layout) whose large pieces
//! are byte ranges of the inputs ([`Span`](crate::bundle::Span)s), so device
//! images are never copied in memory: bundling a 256 MiB device image into
//! an object needs the mapped inputs and a few kilobytes of tables.
//!
//! ELF (32- and 64-bit, either byte order) and COFF objects (regular and
//! `/bigobj`) can be written; Mach-O and XCOFF hosts, and PE images, are
//! read but not bundled into or stripped.

use super::Found;
use super::binary::MAGIC;
use crate::error::{Error, ErrorKind, Result};
use crate::host::object::{Added, Edit, Written, named_sections, read_err, with_aligned};
use ::object::FileKind;

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
    entries_of(data, crate::host::file_kind(data).map_err(read_err)?)
}

/// [`entries`] for a caller that read the format of `data` already
/// (`kind`).
pub(crate) fn entries_of(data: &[u8], kind: FileKind) -> Result<Vec<Found<'_>>> {
    with_aligned(data, |view| {
        let mut out = Vec::new();
        for (name, range) in named_sections(view, kind)? {
            if !is_entry_section(name) {
                continue;
            }
            let bytes = match range {
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
    entry_ids_of(data, crate::host::file_kind(data).map_err(read_err)?)
}

/// [`entry_ids`] for a caller that read the format of `data` already
/// (`kind`).
pub(crate) fn entry_ids_of(data: &[u8], kind: FileKind) -> Result<Vec<&[u8]>> {
    with_aligned(data, |view| {
        let mut out = Vec::new();
        for (name, _) in named_sections(view, kind)? {
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
    bundle_of(
        host,
        crate::host::file_kind(host).map_err(read_err)?,
        sections,
    )
}

/// [`bundle`] for a caller that read the format of `host` already
/// (`kind`).
pub(crate) fn bundle_of(
    host: &[u8],
    kind: FileKind,
    sections: &[NewSection<'_>],
) -> Result<Written> {
    let names: Vec<Vec<u8>> = sections
        .iter()
        .map(|s| [MAGIC, s.id.as_bytes()].concat())
        .collect();
    let add: Vec<Added<'_>> = sections
        .iter()
        .zip(&names)
        .map(|(s, name)| Added { name, data: s.data })
        .collect();
    crate::host::object::edit(
        host,
        kind,
        &Edit {
            remove_named: None,
            add: &add,
            remove: &[],
            update: &[],
            extra: &[],
            keep_strings: false,
        },
    )
}

/// The object `object` without its bundle sections: what LLVM extracts for
/// an entry holding [`HOST_MARKER`]. In the result, span source 0 is
/// `object`.
pub fn strip(object: &[u8]) -> Result<Written> {
    strip_of(object, crate::host::file_kind(object).map_err(read_err)?)
}

/// [`strip`] for a caller that read the format of `object` already
/// (`kind`).
pub(crate) fn strip_of(object: &[u8], kind: FileKind) -> Result<Written> {
    crate::host::object::edit(
        object,
        kind,
        &Edit {
            remove_named: Some(&is_bundle_section),
            add: &[],
            remove: &[],
            update: &[],
            extra: &[],
            keep_strings: false,
        },
    )
}

#[cfg(test)]
mod tests;

//! Clang offload bundles, as `clang-offload-bundler` 22 reads and writes them.
//!
//! Binary layout (`-type=bc`, `gch`, `ast`, and `o`/`a` when the host input is
//! not an object file), little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 24 | magic `__CLANG_OFFLOAD_BUNDLE__` (no NUL) |
//! | 24 | 8 | number of entries N |
//! | 32 | … | N records: data offset (8), data size (8), ID length L (8), ID (L bytes) |
//! | … | … | the entries' data, each at its offset (zero padding before it when aligned) |
//!
//! Text layout (`-type=i ii cui hipi d ll s`): each entry is
//! `\n<C> __CLANG_OFFLOAD_BUNDLE____START__ <ID>\n<data>\n<C> __CLANG_OFFLOAD_BUNDLE____END__ <ID>\n`,
//! with `<C>` the file type's comment prefix. Compressed bundles (CCOB) wrap
//! either layout. Entry IDs are `<kind>-<triple>-<target id>`, normalized.
//!
//! # Examples
//!
//! Bundle a host file and a device file as `clang-offload-bundler -type=bc`
//! does, then unbundle the device entry for a requested target:
//!
//! ```
//! use offload_kit::bundle::{self, BundleId, Extract, Format};
//!
//! let host = b"host bitcode".to_vec();
//! let device = b"gfx90a code".to_vec();
//! // LLVM writes IDs normalized (the host's with its empty target ID).
//! let ids = ["host-x86_64-unknown-linux-gnu", "hip-amdgcn-amd-amdhsa--gfx90a"];
//! let entries: Vec<(String, u64)> = ids
//!     .iter()
//!     .zip([host.len(), device.len()])
//!     .map(|(id, n)| Ok((BundleId::parse(id)?.normalized(), n as u64)))
//!     .collect::<Result<_, bundle::TargetError>>()?;
//! assert_eq!(entries[0].0, "host-x86_64-unknown-linux-gnu-");
//! let mut fat = Vec::new();
//! bundle::layout(Format::Binary, &entries, 1)?.write_to(&mut fat, &[&host, &device])?;
//!
//! // Read it back: the format from the bytes, the entries in LLVM's order,
//! // and what a request for gfx90a:xnack+ code gets by LLVM's rules.
//! let format = Format::detect(&fat).ok_or("not a bundle")?;
//! let found = bundle::entries(&fat, format)?;
//! let request = BundleId::parse("hip-amdgcn-amd-amdhsa--gfx90a:xnack+")?;
//! let got = bundle::unbundle(&found, format, &[request], false)?;
//! assert_eq!(got, [Extract::Entry(&device[..])]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Sources: `clang/lib/Driver/OffloadBundler.cpp` (LLVM 22), and experiments
//! with the installed LLVM 22 tools (docs/formats/bundles.md).

pub(crate) mod archive_unbundle;
pub(crate) mod binary;
pub mod ccob;
pub(crate) mod id;
pub(crate) mod listing;
pub(crate) mod object;
pub(crate) mod ops;
pub(crate) mod select;
pub(crate) mod text;

pub use crate::host::object::{Span, Written};
pub use archive_unbundle::{
    Extracted, Inflate as InflateMember, Member as ArchiveMember, unbundle as unbundle_archive,
};
pub use binary::Record;
pub use id::{BundleId, TargetError, TargetId, check_targets};
pub use object::{HOST_MARKER, NewSection, bundle as bundle_object};
pub use ops::{Extract, Pick, host_object, unbundle, unbundle_records};

use crate::error::{Error, Result};
use crate::num::usize_from;

/// How a bundle is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The binary layout (magic, records, data).
    Binary,
    /// The text layout with this comment prefix.
    Text(&'static str),
    /// Sections `__CLANG_OFFLOAD_BUNDLE__<ID>` of a host object file.
    Object,
}

impl Format {
    /// The format LLVM 22 uses for `-type=file_type`, given the host input
    /// (for `o` and `a`, an object file gets the object format, anything else
    /// the binary one); `None` for a type LLVM does not know.
    pub fn for_type(file_type: &str, host: &[u8]) -> Option<Format> {
        if let Some(prefix) = text::comment_prefix(file_type) {
            return Some(Format::Text(prefix));
        }
        match file_type {
            "bc" | "gch" | "ast" => Some(Format::Binary),
            "o" | "a" => Some(if is_object(host) {
                Format::Object
            } else {
                Format::Binary
            }),
            _ => None,
        }
    }

    /// Guesses the format of `data` without a `-type`: the binary magic, an
    /// object with bundle sections, or text markers with any known prefix.
    pub fn detect(data: &[u8]) -> Option<Format> {
        if binary::has_magic(data) {
            return Some(Format::Binary);
        }
        if is_object(data) {
            return object_entries(data)
                .ok()
                .filter(|e| !e.is_empty())
                .map(|_| Format::Object);
        }
        // Text bundles are text: a NUL byte near the start rules them out
        // without searching (and so touching) the whole file.
        if memchr::memchr(0, &data[..data.len().min(usize_from(SNIFF_LEN))]).is_some() {
            return None;
        }
        text::PREFIXES.into_iter().map(Format::Text).find(|f| {
            let Format::Text(p) = f else { return false };
            memchr::memmem::find(data, text::start_marker(p).as_bytes()).is_some()
        })
    }
}

/// How many first bytes of a file (or of a CCOB's contents) tell a text
/// bundle from binary data: a NUL byte in them rules out a text bundle.
pub(crate) const SNIFF_LEN: u64 = 4096;

/// Whether the first bytes of some contents, `prefix` (at most
/// [`SNIFF_LEN`] of them), may start a text or object bundle, which only
/// the whole contents can list. Anything else that is not a binary bundle
/// is no bundle at all, and need not be decompressed further.
pub(crate) fn may_be_text_or_object_bundle(prefix: &[u8]) -> bool {
    is_object(prefix) || memchr::memchr(0, prefix).is_none()
}

/// Whether LLVM would open `data` as an object file.
pub(crate) fn is_object(data: &[u8]) -> bool {
    use ::object::FileKind as K;
    matches!(
        K::parse(data),
        Ok(K::Elf32
            | K::Elf64
            | K::Coff
            | K::CoffBig
            | K::MachO32
            | K::MachO64
            | K::Pe32
            | K::Pe64
            | K::Xcoff32
            | K::Xcoff64)
    )
}

/// One entry of a bundle, in any format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found<'data> {
    /// The entry ID as stored.
    pub id: &'data [u8],
    /// The entry's data (for an object bundle's host entry, the one-byte
    /// marker `\0`).
    pub data: &'data [u8],
}

/// The entries of the bundle in `data`, in the order LLVM 22 lists and
/// matches them for `format`: hash order for binary bundles, file order for
/// text, section order for objects. A file without the binary magic or text
/// markers has no entries; a malformed one is an error.
pub fn entries(data: &[u8], format: Format) -> Result<Vec<Found<'_>>> {
    match format {
        Format::Binary => {
            if !binary::has_magic(data) {
                return Ok(Vec::new());
            }
            let all = binary::read(data)?;
            Ok(binary::in_llvm_order(&all)
                .into_iter()
                .map(|e| Found {
                    id: e.id,
                    data: e.data,
                })
                .collect())
        }
        Format::Text(prefix) => Ok(text::read(data, prefix)?
            .into_iter()
            .map(|e| Found {
                id: e.id,
                data: e.data,
            })
            .collect()),
        Format::Object => object_entries(data),
    }
}

/// Entries kept in `__CLANG_OFFLOAD_BUNDLE__<ID>` sections, in section order
/// (see [`object::entries`]).
pub(crate) fn object_entries(data: &[u8]) -> Result<Vec<Found<'_>>> {
    object::entries(data)
}

/// The first two entries (indices, earlier first) whose normalized IDs are
/// equal. LLVM 22 accepts such targets and writes a bundle whose offsets
/// point at the wrong data, so the bundlers refuse them.
pub(crate) fn first_duplicate(normalized: &[String]) -> Option<(usize, usize)> {
    let mut first: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    normalized
        .iter()
        .enumerate()
        .find_map(|(i, n)| match first.entry(n) {
            std::collections::hash_map::Entry::Occupied(o) => Some((*o.get(), i)),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i);
                None
            }
        })
}

/// Lays out a binary or text bundle of `entries` (normalized ID, data size),
/// in order; binary data aligned to `align`. Object bundles are edited
/// object files, not laid out: [`Format::Object`] is an error here.
pub fn layout(
    format: Format,
    entries: &[(String, u64)],
    align: u64,
) -> Result<crate::layout::Layout> {
    match format {
        Format::Binary => {
            let specs: Vec<binary::EntrySpec> = entries
                .iter()
                .map(|(id, size)| binary::EntrySpec {
                    id: id.clone(),
                    size: *size,
                })
                .collect();
            binary::layout(&specs, align)
        }
        Format::Text(prefix) => Ok(text::layout(prefix, entries)),
        Format::Object => Err(Error::usage(
            "object bundles are written by editing the host object",
        )),
    }
}

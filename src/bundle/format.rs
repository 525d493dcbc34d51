//! Which layout a bundle has ([`Format`], from `-type` or guessed from
//! the bytes), its entries in any layout in LLVM's order ([`entries`]),
//! and a new binary or text bundle laid out ([`layout`]).

use super::found::Found;
use super::{binary, object, text};
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
        Format::for_type_of(file_type, object_kind(host))
    }

    /// [`Format::for_type`] for a caller that read the host input's format
    /// already: `kind` is what [`object_kind`] gives for it.
    pub(crate) fn for_type_of(file_type: &str, kind: Option<::object::FileKind>) -> Option<Format> {
        if let Some(prefix) = text::comment_prefix(file_type) {
            return Some(Format::Text(prefix));
        }
        match file_type {
            "bc" | "gch" | "ast" => Some(Format::Binary),
            "o" | "a" => Some(if kind.is_some() {
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
        Format::detect_of(data, object_kind(data))
    }

    /// [`Format::detect`] for a caller that read the format of `data`
    /// already: `kind` is what [`object_kind`] gives for it.
    pub(crate) fn detect_of(data: &[u8], kind: Option<::object::FileKind>) -> Option<Format> {
        if binary::has_magic(data) {
            return Some(Format::Binary);
        }
        if let Some(kind) = kind {
            return object::entries_of(data, kind)
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
    object_kind(data).is_some()
}

/// The format of `data` when it is an object file as [`is_object`] tells
/// one, read once for the callers that go on to read its sections or edit
/// it.
pub(crate) fn object_kind(data: &[u8]) -> Option<::object::FileKind> {
    object_kind_of(crate::host::file_kind(data).ok())
}

/// [`object_kind`] for a file whose format `object::FileKind::parse` read
/// as `kind` (`None`: an error).
pub(crate) fn object_kind_of(kind: Option<::object::FileKind>) -> Option<::object::FileKind> {
    use ::object::FileKind as K;
    let kind = kind?;
    matches!(
        kind,
        K::Elf32
            | K::Elf64
            | K::Coff
            | K::CoffBig
            | K::MachO32
            | K::MachO64
            | K::Pe32
            | K::Pe64
            | K::Xcoff32
            | K::Xcoff64
    )
    .then_some(kind)
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

/// [`entries`] for a caller that read `data`'s format already: `kind` is
/// what [`object_kind`] gives for it, which the object format's sections
/// are read with.
pub(crate) fn entries_of(
    data: &[u8],
    format: Format,
    kind: Option<::object::FileKind>,
) -> Result<Vec<Found<'_>>> {
    match (format, kind) {
        (Format::Object, Some(kind)) => object::entries_of(data, kind),
        _ => entries(data, format),
    }
}

/// Entries kept in `__CLANG_OFFLOAD_BUNDLE__<ID>` sections, in section order
/// (see [`object::entries`]).
fn object_entries(data: &[u8]) -> Result<Vec<Found<'_>>> {
    object::entries(data)
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

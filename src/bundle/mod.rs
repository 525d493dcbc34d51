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
mod format;
mod found;
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
pub use format::{Format, entries, layout};
pub use found::Found;
pub use id::{BundleId, TargetError, TargetId, check_targets};
pub use object::{HOST_MARKER, NewSection, bundle as bundle_object};
pub use ops::{Extract, Pick, host_object, unbundle, unbundle_records};

// What the rest of the crate (the scanner, the bundler) uses besides.
#[cfg(any(test, fuzzing))]
pub(crate) use format::is_object;
pub(crate) use format::{
    SNIFF_LEN, entries_of, may_be_text_or_object_bundle, object_kind, object_kind_of,
};

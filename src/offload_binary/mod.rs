//! The OffloadBinary container (magic `10 FF 10 AD`) written by
//! `llvm-offload-binary` (formerly `clang-offload-packager`) and embedded by
//! clang in `.llvm.offloading` sections.
//!
//! Version 1 (the only one LLVM 22 reads or writes), all little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `10 FF 10 AD` |
//! | 4 | 4 | version = 1 |
//! | 8 | 8 | size of this binary (a multiple of 8) |
//! | 16 | 8 | entry offset (32) |
//! | 24 | 8 | entry size (40) |
//! | 32 | 40 | entry: image kind u16, offload kind u16, flags u32, string-entry offset, string count, image offset, image size |
//! | 72 | 16·n | string entries: key offset, value offset (NUL-terminated strings) |
//! | … | | string table (LLVM `StringTableBuilder`, ELF kind), zero padding to 8 |
//! | … | | the image, zero padding to 8 |
//!
//! Several binaries are simply concatenated. Versions 2 and 3 (newer LLVM)
//! hold several entries in one binary, give values an explicit size (24-byte
//! string entries), and in version 3 the header grows to 40 bytes with an
//! inflated size: when non-zero, everything after the header is zlib or zstd.
//!
//! # Examples
//!
//! Pack two images as `llvm-offload-binary` does (version 1), then find them
//! again, here in the packed bytes themselves (an object file's
//! `.llvm.offloading` section or an archive of objects would do as well):
//!
//! ```
//! use offload_kit::Limits;
//! use offload_kit::offload_binary::{self, ImageKind, ImageSpec, OffloadKind, Version};
//!
//! let images = [b"gfx90a code".to_vec(), b"sm_80 code".to_vec()];
//! let spec = |triple: &str, arch: &str, image: &[u8]| ImageSpec {
//!     image_kind: ImageKind::IMG_Object,
//!     offload_kind: OffloadKind::OFK_OpenMP,
//!     strings: vec![
//!         (b"triple".to_vec(), triple.as_bytes().to_vec()),
//!         (b"arch".to_vec(), arch.as_bytes().to_vec()),
//!     ],
//!     size: image.len() as u64,
//!     ..ImageSpec::default()
//! };
//! let specs = [
//!     spec("amdgcn-amd-amdhsa", "gfx90a", &images[0]),
//!     spec("nvptx64-nvidia-cuda", "sm_80", &images[1]),
//! ];
//! let mut packed = Vec::new();
//! offload_binary::layout(&specs, Version::V1)?.write_to(&mut packed, &[&images[0], &images[1]])?;
//! assert!(offload_binary::has_magic(&packed));
//!
//! let found = offload_binary::find_images(&packed, &Limits::default())?;
//! assert_eq!(found.len(), 2);
//! assert_eq!(found[0].image.triple(), b"amdgcn-amd-amdhsa");
//! assert_eq!(&found[1].image.image[..], &images[1][..]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Version 3 binaries may be compressed ([`compress`]); reading inflates
//! them within [`Limits`](crate::Limits), or [`find_images_streamed`] streams them within a
//! [`Budget`].
//!
//! Sources: `llvm/include/llvm/Object/OffloadBinary.h` of LLVM 22.1.8 and of
//! newer upstream; behaviour checked against the installed LLVM 22 tools.

pub(crate) mod args;
pub(crate) mod budget;
pub(crate) mod container;
pub(crate) mod inflating;
pub(crate) mod kinds;
pub(crate) mod listing;
pub(crate) mod raw;
pub(crate) mod read;
pub(crate) mod write;

pub use budget::{Budget, Spent};
pub(crate) use container::find_images_streamed_of;
pub use container::{FoundImage, Inflate, Pending, Streamed, find_images, find_images_streamed};
pub use inflating::{Inflating, PendingImage};
pub use kinds::{ImageKind, OffloadKind};
pub use read::{KeyValue, OffloadImage, has_magic, read_all};
pub use write::{Compression, ImageSpec, Version, compress, layout};

// What the rest of the crate (the scanner, the command line) uses besides.
pub(crate) use args::ImageArgs;
pub(crate) use inflating::read_inflating;
pub(crate) use read::{header_summary, read_binary};
#[cfg(test)]
pub(crate) use write::layout_v1;
pub(crate) use write::{layout_v1_one, layout_v3};

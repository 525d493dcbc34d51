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
//! Sources: `llvm/include/llvm/Object/OffloadBinary.h` of LLVM 22.1.8 and of
//! newer upstream; behaviour checked against the installed LLVM 22 tools.

pub mod args;
pub mod budget;
pub mod container;
pub mod inflating;
pub mod kinds;
pub mod listing;
pub mod raw;
pub mod read;
pub mod write;

pub use args::ImageArgs;
pub use budget::{Budget, BudgetLimits, Spent};
pub use container::{FoundImage, Inflate, Pending, Streamed, find_images, find_images_streamed};
pub use inflating::{Inflating, PendingImage, read_inflating};
pub use kinds::{ImageKind, OffloadKind};
pub use read::{
    HeaderSummary, Limits, OffloadImage, has_magic, header_summary, read_all, read_binary,
};
pub use write::{
    Compression, ImageSpec, compress_v3, layout, layout_v1, layout_v1_one, layout_v2, layout_v3,
};

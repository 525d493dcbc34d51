//! Emulations of LLVM data-structure behaviour that leaks into file layouts.
//!
//! LLVM's tools iterate hash tables when they write files or print lists, so
//! the order of string entries in an OffloadBinary, and of entries in
//! `clang-offload-bundler -list`, depends on LLVM's hash functions and probing.
//! Matching LLVM 22 byte for byte means reproducing them here, from the
//! algorithms described in `llvm/ADT/Hashing.h` and `llvm/ADT/DenseMap.h`.

pub mod dense_map;
pub mod hashing;
pub(crate) mod jam_crc;
pub mod path;
pub mod string_map;
pub mod string_table;
pub mod triple;

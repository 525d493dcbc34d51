//! offload-kit: read and write the files that glue GPU offloading code to
//! host programs, without LLVM.
//!
//! - [`offload_binary`]: the `10 FF 10 AD` OffloadBinary container of
//!   `llvm-offload-binary` / `clang-offload-packager`.
//! - [`fatbin`]: CUDA fatbin containers and the CUDA/HIP fatbin wrapper.
//! - [`llvm`]: emulations of LLVM hash-table and string-table behaviour that
//!   decide byte order in LLVM's outputs.
//!
//! The library never prints, never exits and never opens files: it works on
//! byte slices (typically mapped files) and describes what to write, so the
//! caller can stream image bytes file to file.

#![warn(missing_docs)]

pub mod archive;
pub mod bundle;
pub mod error;
pub mod fatbin;
pub mod layout;
pub mod llvm;
mod num;
pub mod offload_binary;
pub mod scan;
mod sync;
pub mod wrap;

#[cfg(any(test, fuzzing))]
pub mod fuzz;

pub use error::{Error, ErrorKind, Result};

#[cfg(test)]
mod tests;

//! LLVM bitcode, read as far as the offloading tools need: the device code
//! a host module embeds (`llvm.embedded.objects`, [`offloading_objects`]).
//!
//! A host compiled with `-flto` (or `-foffload-lto` for the device side
//! only, or with `-emit-llvm`) is an LLVM IR module, and clang puts its
//! device code there as a global variable whose initializer holds the
//! OffloadBinaries, listed in the module's named metadata
//! `llvm.embedded.objects` with the section name `.llvm.offloading`.
//! LLVM's `extractOffloadBinaries` loads the module to find them; this
//! reads just the parts of the bitstream that lead to them (the global
//! variables, the module's constants and types, its metadata) without an
//! IR reader. Bitcode from LLVM 5 onwards (string table, module version 2)
//! is read; older layouts are refused.
//!
//! [`target::target`] reads what a module is built for (its triple and
//! processor), which the scanner reports of a file that is one device
//! module.

pub(crate) mod stream;
pub(crate) mod target;

mod embedded;
mod wrapper;

#[cfg(test)]
pub(crate) use embedded::tests;

pub use embedded::{EmbeddedObject, EmbeddedObjects, offloading_objects};
pub(crate) use wrapper::unwrap;

//! The host files device code lives in, read in one place: `ar` archives
//! ([`ar`]: regular and thin, members named by LLVM's rules), ELF
//! headers ([`elf`]: what the first bytes say, without parsing the rest), the
//! target an AMDGPU code object's header names (`amdgpu`), and
//! whether a PE image's headers can be believed ([`pe`]).
//!
//! Every reader of the project goes through here: the scanner (which
//! reports a damaged member and goes on), [`crate::offload_binary`]'s
//! `find_images` and the bundler's archive unbundling (which stop with
//! LLVM's messages), the Debian package reader and the linker wrapper.
//! What is wrong with an archive is one type, [`ar::ArError`]; each caller
//! only words where it stood.

pub(crate) mod amdgpu;
pub mod ar;
pub mod elf;
pub(crate) mod object;
pub(crate) mod pe;

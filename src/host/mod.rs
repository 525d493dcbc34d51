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
pub(crate) mod linked;
pub(crate) mod object;
pub(crate) mod pe;

/// The format of the file `data`, as `object` reads it from its first
/// bytes. Every such read of the library goes through here, and a command
/// makes it once per file: a caller that has the format passes it on
/// (the scan's [`Report::host`](crate::scan::Report::host), the kind a
/// prune of a tree or wheel read before the file's prune).
pub(crate) fn file_kind(data: &[u8]) -> ::object::Result<::object::FileKind> {
    #[cfg(test)]
    KIND_READS.with(|n| n.set(n.get() + 1));
    ::object::FileKind::parse(data)
}

#[cfg(test)]
thread_local! {
    /// How many times [`file_kind`] ran on this thread: what the tests of
    /// one read per file count.
    pub(crate) static KIND_READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

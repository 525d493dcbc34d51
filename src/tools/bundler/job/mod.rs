//! A whole `clang-offload-bundler` (LLVM 22) invocation as data: its
//! command line checked in LLVM's order ([`check()`], with the environment
//! variables of `env.rs`), then carried out ([`run()`]): bundle, list or
//! unbundle, with what LLVM says on the way (warnings, `-verbose` reports,
//! `-###` command lines) handed to the caller as [`Note`]s, and failures
//! as [`Failure`]s holding LLVM's line.
//!
//! The command line's drop-in parses the options, prints the notes and the
//! failure, and gives the exit code; everything else is here.
//!
//! Differences from LLVM 22, all where LLVM crashes, writes wrong bytes or
//! is vague: a truncated or inconsistent bundle, `-bundle-align=0`, a text
//! entry without its end marker, and two targets that normalize to the same
//! ID are errors naming the file (after LLVM's line for the case, where
//! LLVM has one).
//!
//! `-###` prints the `llvm-objcopy` command lines LLVM 22 prints for object
//! bundles, with llvm-objcopy found where LLVM looks ([`find_objcopy`]), and
//! leaves what LLVM leaves: an empty output when bundling, an empty host
//! output when unbundling. Without `-###` no llvm-objcopy is needed (LLVM 22
//! refuses every call without one).
//!
//! Object bundles (`-type=o`, and `-type=a` members) are edited in process
//! (see `crate::bundle::object`, through `crate::host::object`), ELF
//! only. Further differences: an object file that does not parse is an
//! error naming it (LLVM falls back to the binary format and finds no
//! bundle); HIP-only targets with an object
//! input are an error (LLVM 22 segfaults); the host object of a compressed
//! object bundle is extracted (LLVM 22 hands the compressed file to
//! llvm-objcopy, which fails); an archive member whose size runs past the
//! end of the archive is an error (LLVM 22 reads past its buffer); thin
//! archives are refused.
//!
//! Files: `check.rs` (the checks, and the [`Job`](check::Job) they
//! make), `env.rs` (the environment variables), `failure.rs` (the
//! [`Note`]s and [`Failure`]s), `run.rs` (bundle, list, unbundle), `stream.rs` (compressed binary
//! bundles unbundled as a stream), `archive.rs` (`-type=a`), `objcopy.rs`
//! (`-###`), `verbose.rs` (the `-verbose` reports).

mod archive;
mod check;
mod env;
mod failure;
mod objcopy;
mod run;
mod stream;
mod verbose;

pub use check::{Args, check};
pub use failure::{Failure, Note};
pub use objcopy::find_objcopy;
pub use run::run;

#[cfg(test)]
mod tests;

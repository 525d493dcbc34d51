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
//! Files: `check.rs` (the checks), `env.rs` (the environment variables),
//! `run.rs` (bundle, list, unbundle), `stream.rs` (compressed binary
//! bundles unbundled as a stream), `archive.rs` (`-type=a`), `objcopy.rs`
//! (`-###`), `verbose.rs` (the `-verbose` reports).

use std::io;
use std::path::PathBuf;

use super::ccob;
use super::id::BundleId;
use super::select;

mod archive;
mod check;
mod env;
mod objcopy;
mod run;
mod stream;
mod verbose;

pub use check::{Args, check};
pub use objcopy::find_objcopy;
pub use run::run;

/// A checked `clang-offload-bundler` command line (made by [`check()`],
/// carried out by [`run()`]).
#[derive(Debug, Clone)]
pub struct Job {
    /// `-type`.
    pub file_type: String,
    /// `-targets`, split on commas.
    pub targets: Vec<String>,
    /// `-input` (or `-inputs`, split on commas).
    pub inputs: Vec<String>,
    /// `-output` (or `-outputs`, split on commas).
    pub outputs: Vec<String>,
    /// `-unbundle`.
    pub unbundle: bool,
    /// `-list`.
    pub list: bool,
    /// `-allow-missing-bundles`.
    pub allow_missing: bool,
    /// `-bundle-align`, at least 1.
    pub align: u64,
    /// `-hip-openmp-compatible`.
    pub hip_openmp: bool,
    /// Compression and verbosity, from the flags and the environment.
    pub comp: env::BundlerCompression,
    /// `-check-input-archive`.
    pub check_archive: bool,
    /// `-###`: the llvm-objcopy whose command lines are printed instead of
    /// writing object bundles.
    pub objcopy: Option<String>,
    /// Where LLVM makes its temporary files (`-###` names them): the first
    /// of `TMPDIR`, `TMP`, `TEMP`, `TEMPDIR` that is set, else `/tmp`.
    pub temp_dir: PathBuf,
}

/// What a job says on the way, in order: LLVM prints it on stderr as it
/// comes, before any failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// A warning: `<argv0>: warning: <text>`.
    Warning(String),
    /// Text printed as it is, each line ending in `\n` (reports, command
    /// lines, the environment's warnings).
    Text(String),
}

/// Why a job failed.
#[derive(Debug)]
pub enum Failure {
    /// LLVM 22's line for the case (or ours where LLVM has none), and what
    /// we know more.
    Said {
        /// The line, printed after `<argv0>: error: `.
        llvm: String,
        /// Our detail, if any.
        note: Option<String>,
    },
    /// A file could not be opened, read or written: LLVM's
    /// `'<path>': <the C library's text for error>`.
    File {
        /// The file, as named on the command line.
        path: String,
        /// What went wrong.
        error: io::Error,
    },
}

impl Failure {
    /// A failure LLVM reports with this text, with nothing to add.
    pub fn new(llvm: impl Into<String>) -> Failure {
        Failure::Said {
            llvm: llvm.into(),
            note: None,
        }
    }

    /// A failure LLVM reports with this text, followed by our detail.
    pub fn with_note(llvm: impl Into<String>, note: impl Into<String>) -> Failure {
        Failure::Said {
            llvm: llvm.into(),
            note: Some(note.into()),
        }
    }

    /// A failure on the file `path`.
    pub fn file(path: impl Into<String>, error: io::Error) -> Failure {
        Failure::File {
            path: path.into(),
            error,
        }
    }
}

impl From<ccob::Failure> for Failure {
    /// LLVM's line for a compressor that refused or failed (ours where it
    /// has none), or the file that could not be written.
    fn from(f: ccob::Failure) -> Failure {
        match f {
            ccob::Failure::Ccob(e) => {
                Failure::new(ccob::llvm_message(&e).unwrap_or_else(|| e.to_string()))
            }
            ccob::Failure::File(path, error) => Failure::File { path, error },
        }
    }
}

/// Where a job's [`Note`]s go.
pub type Say<'a> = dyn FnMut(Note) + 'a;

/// The hash policy of the drop-in: LLVM computes the hash only for
/// `-verbose`, and so do we, but a mismatch is then an error (LLVM only
/// prints `Hashes match: No`).
fn hash_policy(job: &Job) -> ccob::HashCheck {
    if job.comp.verbose {
        ccob::HashCheck::Enforce
    } else {
        ccob::HashCheck::Skip
    }
}

/// The read options of the drop-in: LLVM's limits, [`hash_policy`].
fn read_options(job: &Job) -> ccob::ReadOptions {
    ccob::ReadOptions {
        hash: hash_policy(job),
        ..ccob::ReadOptions::default()
    }
}

/// LLVM's line for a CCOB that fails to decompress, then ours where it says
/// more; for faults LLVM does not detect (it goes on with garbage), ours
/// alone, naming the file.
fn decompress_fail(name: &str, e: &crate::Error) -> Failure {
    let own = ccob::fault(e).map(ToString::to_string);
    match ccob::llvm_message(e) {
        Some(llvm) if own.as_ref() == Some(&llvm) => Failure::with_note(
            format!("Failed to decompress input: {llvm}"),
            format!("'{name}'"),
        ),
        Some(llvm) => Failure::with_note(
            format!("Failed to decompress input: {llvm}"),
            format!("'{name}': {e}"),
        ),
        None => Failure::new(format!("'{name}': Failed to decompress input: {e}")),
    }
}

/// LLVM's error for the requested targets `missing` (indices into
/// `requests`) that the bundle does not hold.
fn missing_bundles(requests: &[BundleId], missing: &[usize]) -> Failure {
    let ids = missing.iter().map(|&i| requests[i].normalized()).collect();
    Failure::new(format!(
        "Can't find bundles for {}",
        select::missing_list(ids)
    ))
}

#[cfg(test)]
mod tests;

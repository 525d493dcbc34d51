//! Drop-in front ends: offload-kit run under an LLVM tool's name behaves as
//! that LLVM 22 tool, with its options, outputs, messages and exit codes.
//!
//! Where LLVM 22 prints a message without saying which file it is about, or
//! crashes, we print LLVM's text with the file name in front (`'<file>': `,
//! LLVM's own style for file errors) and a precise reason after it.

pub mod bundler;
pub mod packager;

/// The LLVM release whose behaviour the front ends reproduce.
pub const LLVM_VERSION: &str = "22.1.8";

/// `--version` text for the drop-in tools: our name, and the LLVM version we
/// are compatible with (kept in LLVM's `LLVM version X.Y.Z` form, which
/// scripts match).
pub fn version_text(tool: &str) -> String {
    format!(
        "offload-kit {} ({tool}, compatible with LLVM version {LLVM_VERSION})\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// The base name of `argv0` (what LLVM's `cl` uses as the message prefix).
pub fn prog_name(argv0: &str) -> &str {
    offload_kit::llvm::path::file_name(argv0)
}

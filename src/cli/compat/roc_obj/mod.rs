//! AMD's `roc-obj-ls`, `roc-obj-extract` and `roc-obj` (the Perl and bash
//! scripts of hipcc 5.2.3) under their own names: the scripts' command
//! lines, listings, file names, messages and exit codes, on the same inputs.
//!
//! Here: the three entry points, their command lines (`perl.rs` holds
//! Getopt::Std's option loop, which the Perl scripts share; `obj.rs` GNU
//! getopt's, for `roc-obj`), and the printing of what the runs say. The
//! runs are the library's `crate::tools::roc_obj`.

use std::process::ExitCode;

mod extract;
mod list;
mod obj;
mod perl;

/// Runs `roc-obj-ls` with `args` (the arguments after the program name).
pub fn ls_main(argv0: &str, args: &[String]) -> ExitCode {
    list::main(argv0, args)
}

/// Runs `roc-obj-extract` with `args`.
pub fn extract_main(argv0: &str, args: &[String]) -> ExitCode {
    extract::main(argv0, args)
}

/// Runs `roc-obj` with `args`.
pub fn obj_main(argv0: &str, args: &[String]) -> ExitCode {
    obj::main(argv0, args)
}

#[cfg(test)]
mod tests;

//! AMD's `roc-obj-ls`, `roc-obj-extract` and `roc-obj` (the Perl and bash
//! scripts of hipcc 5.2.3) under their own names: the scripts' command
//! lines, listings, file names, messages and exit codes, on the same inputs.
//!
//! Where the scripts give up on compressed bundles (CCOB: `roc-obj-ls`
//! prints nothing, `roc-obj` finds "no executables"), these list and
//! extract the code objects inside, each under a URI of its own: the
//! compressed bundle's range plus `&entry-offset=<O>&entry-size=<S>`, the
//! entry's range in the decompressed bundle (docs/compatibility.md).
//!
//! Here: the three entry points. `perl.rs` holds what the scripts share
//! (Getopt::Std's option loop, URI::Encode, File::Which, Perl's `die` and
//! numbers), `list.rs` walks `.hip_fatbin`, `extract.rs` copies URIs'
//! ranges out, `out.rs` writes what they copy, only inside the output
//! folder, `obj.rs` is the `roc-obj` wrapper and `ere.rs` the POSIX
//! extended regular expressions of its `-t`.

use std::process::ExitCode;

mod ere;
mod extract;
mod list;
mod obj;
mod out;
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

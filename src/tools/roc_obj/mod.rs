//! AMD's `roc-obj-ls`, `roc-obj-extract` and `roc-obj` (the Perl and bash
//! scripts of hipcc 5.2.3) as runs: the scripts' listings, file names,
//! messages and exit codes, on the same inputs, with what they print said
//! to the caller as [`Said`] (standard output and standard error, in
//! order) and their failures as a [`Die`] (Perl's message and exit code).
//! The command line's drop-ins parse the options and print; everything
//! else is here.
//!
//! Where the scripts give up on compressed bundles (CCOB: `roc-obj-ls`
//! prints nothing, `roc-obj` finds "no executables"), these list and
//! extract the code objects inside, each under a URI of its own: the
//! compressed bundle's range plus `&entry-offset=<O>&entry-size=<S>`, the
//! entry's range in the decompressed bundle (docs/compatibility.md).
//!
//! Files: `perl.rs` holds what the scripts share (Perl's `die` and
//! numbers, URI::Encode, File::Which, File::Basename), `list.rs` walks
//! `.hip_fatbin`, `extract.rs` copies URIs' ranges out, `out.rs` writes
//! what they copy, only inside the output folder, through
//! `files::Output`, `obj.rs` is the `roc-obj` wrapper and `ere.rs` the
//! POSIX extended regular expressions of its `-t`.

mod ere;
pub(crate) mod extract;
mod list;
pub(crate) mod obj;
mod out;
mod perl;
mod said;

pub(crate) use list::{Listed, list_file};
pub(crate) use perl::Die;
pub(crate) use said::Said;

#[cfg(test)]
mod tests;

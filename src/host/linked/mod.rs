//! Editing linked programs and shared libraries (ELF, and Windows PE
//! images) whose device code a prune removes: the headers read once
//! ([`facts`]), the OpenMP registrations found and rewritten ([`openmp`]),
//! and the file made smaller ([`shrink`], [`pe::shrink`]). What goes is
//! the caller's to decide ([`Edits`]: the ranges rewritten, in the terms
//! of the file's bytes); this module only moves bytes and fixes what points
//! at them, or says why it cannot ([`Refusal`]).
//!
//! Making a pruned linked program or shared library smaller (issue #29):
//! the containers of its fat-binary section are packed together at the
//! section's start, every reference to one that moved is fixed, and the
//! whole pages freed at the section's end are removed from the file.
//! Everything after them keeps its address and moves down in the file by
//! whole pages, so that offsets and addresses stay congruent; the load
//! segment holding the section is split around the hole (the addresses in
//! between are no longer mapped), and the program header table, one entry
//! longer, moves into the freed space the first part keeps.
//!
//! References are recognised by what they are: relative dynamic
//! relocations (`R_X86_64_RELATIVE`, `R_AARCH64_RELATIVE`,
//! `R_386_RELATIVE`, `R_ARM_RELATIVE`, in `SHT_RELA` or `SHT_REL` tables,
//! and packed `SHT_RELR` ones) whose target is a container's start, the
//! data pointer of each fatbin wrapper (the only reference a non-PIE
//! program has), and symbols defined at a container's start. A reference
//! into a container other than at its start, a relocation of another kind
//! against the section, or a layout this does not know (a machine whose
//! relative relocation is not known here, see [`file::relative_type`]; a
//! big-endian file; one fat-binary section; the section in a read-only,
//! file-backed load segment) makes [`shrink`] say why, and the caller
//! rewrites the file in place instead.
//!
//! The file is read with `object`'s ELF reader, in its class and byte
//! order ([`file`]); the hole and the program headers around it are worked
//! out in [`hole`]; what points into the section, and the headers after
//! the hole, are fixed in [`fix`], each patch written with `object`'s
//! types in the file's class and order.

pub(crate) mod checked;
mod edits;
mod elf;
pub(crate) mod facts;
mod file;
mod fix;
mod hole;
pub(crate) mod openmp;
mod pack;
pub(crate) mod pe;

pub(crate) use checked::Refusal;
pub(crate) use edits::{Change, Edits};
#[cfg(test)]
pub(crate) use elf::headers;
pub(crate) use elf::shrink;
pub use pack::{Segment, Shrunk};

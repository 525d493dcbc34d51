//! Zip archives rewritten member by member: wheels and conda's `.conda`.
//!
//! Reading ([`Archive`]) checks what a rewrite must trust before it copies
//! anything: a central directory that gives no two entries one name and
//! points no two at the same bytes, each stored member within the file
//! and matching its CRC-32, each inflated member giving the bytes it
//! declares. Writing ([`write`]) takes, for one output, what each member
//! becomes ([`Fate`]: kept as it is stored, replaced by new bytes, or
//! removed), keeps every other byte of the members' headers (times,
//! modes, host system), and writes each RECORD that names a member
//! changed with the member's new hash and size ([`record`]), so that pip
//! installs the output. [`rewrite`] drives both: one read of the archive,
//! a caller's [`Decide`] asked once per member, and any number of
//! outputs written from what it answered.
//!
//! Everything here works on the archive's bytes and on open files: the
//! caller maps the input, creates the outputs and names the errors.

pub(crate) mod error;
mod read;
pub(crate) mod record;
mod rewrite;
mod write;

pub(crate) use crate::package::Decide;
pub(crate) use error::Error;
pub(crate) use read::{Archive, check_directory, stored};
pub(crate) use rewrite::{Failed, Plan, Read as MemberRead, Zip, rewrite};
pub(crate) use write::{Added, Fate, Method, New, write, write_adding};

#[cfg(test)]
mod tests;

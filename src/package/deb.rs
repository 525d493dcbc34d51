//! Debian packages (`.deb`) read and rewritten on their bytes, file by
//! file: one read of the data archive ([`rewrite`]) asks a caller's
//! [`Decide`] what each file becomes in each of any number of outputs
//! ([`Fate`](crate::package::Fate): kept, replaced by new bytes, left
//! out), and each output is written from what it answered
//! ([`Plan::write`]), its `md5sums` and `Installed-Size` true.
//!
//! Reading ([`Package::open`]) takes the `ar` skeleton and the control
//! archive's `conffiles` and `md5sums`; the data archive is streamed,
//! whatever its compression, and each output's copy compressed again
//! with that method at `dpkg-deb`'s levels ([`compress`]) into a scratch
//! file the caller gives, one file of it in memory (or in the caller's
//! scratch file) at a time. Only the headers of the files rewritten
//! change, in their size and checksum; every other block is copied as it
//! was read. A row of `md5sums` is only ever rewritten for a file that
//! changed; one that the bytes it names do not match goes to the caller.
//!
//! Everything here works on the package's bytes and on open files: the
//! caller maps the input, creates the outputs and names the errors.

pub(crate) mod compress;
pub(crate) mod control;
mod error;
pub(crate) mod md5sums;
mod read;
mod rewrite;
mod write;

pub(crate) use crate::package::Decide;
pub(crate) use error::Error;
pub(crate) use read::Package;
#[cfg(test)]
pub(crate) use read::method;
#[cfg(test)]
pub(crate) use rewrite::with_links;
pub(crate) use rewrite::{Deb, Failed, Member, Plan, rewrite};
pub(crate) use write::Sink;

#[cfg(test)]
mod tests;

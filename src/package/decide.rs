//! The one callback every package rewrite asks, member by member
//! ([`Decide`]), and why a rewrite stopped ([`Failed`]): the same seam for
//! zip archives (wheels), `.deb`s and RPMs, so that a caller decides what
//! each member becomes the same way whatever the package, and one read can
//! feed several outputs ([`Fate`], one per output).
//!
//! Each format says what a member is as its read hands it out
//! ([`Format::Member`]: a zip entry's name and size, a tar header, a cpio
//! entry's path and mode) and asks the methods below in the order its own
//! module gives; a method only some formats ask has a default
//! ([`Decide::sparse`], [`Decide::write`], [`Decide::wrong`]).

use std::io::{Read, Write};

use super::Fate;
use super::records::Wrong;

/// A package format as its rewrite hands its members to [`Decide`].
pub(crate) trait Format {
    /// A member as the read hands it out, borrowed from the read for the
    /// length of one call.
    type Member<'m>;
}

/// A member's bytes as a decider is asked about them.
pub(crate) enum Held<'b, B> {
    /// A slice of the package itself (a zip member stored as it is).
    Stored(&'b [u8]),
    /// As the decider's [`Decide::inflate`] read them.
    Read(&'b B),
}

impl<B> Clone for Held<'_, B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<B> Copy for Held<'_, B> {}

impl<'b, B: AsRef<[u8]>> Held<'b, B> {
    /// The bytes.
    pub(crate) fn bytes(self) -> &'b [u8] {
        match self {
            Held::Stored(b) => b,
            Held::Read(b) => b.as_ref(),
        }
    }
}

/// What the caller of a package rewrite decides, member by member, for
/// each of [`Decide::outputs`] outputs. A format asks, in its read's
/// order: [`Decide::by_name`] (unread), then with a member's first bytes
/// [`Decide::wants`], and for a member wanted [`Decide::inflate`] and
/// [`Decide::decide`]. An answer of fates gives one [`Fate`] per output
/// (an output it does not reach keeps the member); `None` keeps the
/// member in every output.
pub(crate) trait Decide<F: Format> {
    /// A member's bytes as the caller holds them once read (in memory, or
    /// a mapped scratch file).
    type Bytes: AsRef<[u8]>;
    /// The caller's error.
    type Error;
    /// How many first bytes [`Decide::wants`] needs.
    const REACH: usize;

    /// How many outputs the read decides for.
    fn outputs(&self) -> usize;

    /// The member `m`'s fate in each output by its name alone, unread, or
    /// `None` to go on.
    fn by_name(&mut self, m: &F::Member<'_>) -> Result<Option<Vec<Fate>>, Self::Error>;

    /// Whether the member `m`, whose first bytes are `head` (up to
    /// [`Decide::REACH`]; a zip member stored as it is gives all of
    /// them), is to be read whole and decided.
    fn wants(&self, m: &F::Member<'_>, head: &[u8]) -> bool;

    /// The sparse file `m` (a tar's `S` entry), whose first stored bytes
    /// are `head`, is copied as it is in every output: only formats with
    /// such files ask.
    fn sparse(&mut self, m: &F::Member<'_>, head: &[u8]) -> Result<(), Self::Error> {
        let _ = (m, head);
        Ok(())
    }

    /// The member `m` read from `reader`, whose first bytes `head` were
    /// read already: exactly the size it declares.
    fn inflate(
        &mut self,
        m: &F::Member<'_>,
        head: &[u8],
        reader: &mut dyn Read,
    ) -> Result<Self::Bytes, Self::Error>;

    /// The member `m`, whose bytes are `bytes`: its fate in each output
    /// (`None`: kept in every one).
    fn decide(
        &mut self,
        m: &F::Member<'_>,
        bytes: Held<'_, Self::Bytes>,
    ) -> Result<Option<Vec<Fate>>, Self::Error>;

    /// Writes `bytes`, a member read whole and kept, to `out` (the caller
    /// may give back the pages of a mapped file as it goes).
    fn write(&self, bytes: &Self::Bytes, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(bytes.as_ref())
    }

    /// A row of the package's record of its members (a wheel's RECORD, a
    /// `.deb`'s `md5sums`) that the bytes of the member it names do not
    /// match; the row itself is never rewritten to match. Only formats
    /// that hand such rows over ask (an RPM's rewrite refuses a file that
    /// does not match its digest itself); the default lets the read go on.
    fn wrong(&mut self, w: &Wrong<'_>) -> Result<(), Self::Error> {
        let _ = w;
        Ok(())
    }
}

/// Why a package rewrite stopped: the package (`P`, the format's error),
/// or the caller's [`Decide`] (`E`).
#[derive(Debug)]
pub(crate) enum Failed<P, E> {
    /// The package could not be read or written.
    Package(P),
    /// The caller's [`Decide`] failed.
    Caller(E),
}

impl<P, E> From<P> for Failed<P, E> {
    fn from(e: P) -> Failed<P, E> {
        Failed::Package(e)
    }
}

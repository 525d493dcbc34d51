//! What the editing is given ([`Edits`]): the ranges a prune rewrites
//! ([`Change`]), the OpenMP descriptors it rewrites, and what moves with
//! the section that holds them, all in the terms of the file's bytes.

use std::ops::Range;

use super::openmp::Registration;
use crate::layout::Layout;

/// One range of the file rewritten where it lies: a container, whose new
/// bytes `layout` describes (its payload `i` is `ranges[i]`, of the file
/// from `offset` on, or of `built` when the new bytes were built whole).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Change<'p> {
    /// Where it starts in the file.
    pub(crate) offset: u64,
    /// Bytes it occupied.
    pub(crate) size: u64,
    /// What it becomes.
    pub(crate) layout: &'p Layout,
    /// The byte ranges the layout's payloads refer to.
    pub(crate) ranges: &'p [Range<u64>],
    /// The new bytes, when built in memory.
    pub(crate) built: Option<&'p [u8]>,
}

impl Change<'_> {
    /// Bytes the rewrite frees (zeros after the new bytes; 0 for a change
    /// that would grow).
    pub(crate) fn freed(&self) -> u64 {
        self.size.saturating_sub(self.layout.size)
    }
}

/// What a prune changes in a linked file, in the terms of its bytes: what
/// the editing here is given by the caller that decided it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Edits<'p> {
    /// The ranges rewritten, in file order, apart.
    pub(crate) changes: Vec<Change<'p>>,
    /// The OpenMP descriptors rewritten ([`registrations`](super::openmp::registrations)).
    pub(crate) registrations: &'p [Registration],
    /// Every range of the file that moves as one piece when the section
    /// holding it is packed (the containers at the top level, but for
    /// fatbin wrappers): file offset and size, in any order.
    pub(crate) blocks: Vec<(u64, u64)>,
    /// The file offsets of words that may hold an address of a block
    /// (fatbin wrappers' data pointers), fixed when they point into the
    /// section that moves.
    pub(crate) pointers: Vec<u64>,
}

//! What an edit asks ([`Edit`]: sections removed, updated from [`Part`]s,
//! added); what it writes is a [`Written`](crate::layout::Written).

/// What to change in an object, as llvm-objcopy's options would.
pub(crate) struct Edit<'e> {
    /// Remove every section whose name this says yes to
    /// (`--regex --remove-section=…`).
    pub remove_named: Option<&'e NameRule>,
    /// Sections to add, in order; span source `i + 1` is `add[i].data`.
    pub add: &'e [Added<'e>],
    /// Sections removed, by index (`--remove-section`).
    pub remove: &'e [usize],
    /// Sections given new contents (`--update-section`).
    pub update: &'e [Update<'e>],
    /// More span sources for the updates' parts: `extra[j]` is source
    /// `add.len() + 1 + j`.
    pub extra: &'e [&'e [u8]],
    /// Keep the string tables as they were read, every name where it was
    /// (what NVIDIA's `nvprune` writes), rather than build them anew as
    /// llvm-objcopy does. Only for an edit that adds no section: names of
    /// removed sections and symbols then stay in the tables.
    pub keep_strings: bool,
}

/// Which sections an [`Edit`] removes by name: yes for those to go.
pub(crate) type NameRule = dyn Fn(&[u8]) -> bool;

/// One section to add (`--add-section` with
/// `--set-section-flags=…=readonly,exclude`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Added<'a> {
    /// The section's name.
    pub name: &'a [u8],
    /// Its contents.
    pub data: &'a [u8],
}

/// One piece of a section's new contents.
#[derive(Debug, Clone)]
pub(crate) enum Part {
    /// `len` bytes of span source `source` (0: the object; `j + 1`: the
    /// `j`th extra source of [`edit_sections`](super::edit_sections)) from
    /// `offset`.
    Span {
        /// The source.
        source: usize,
        /// Offset in it.
        offset: usize,
        /// Length.
        len: usize,
    },
    /// Bytes built by the caller.
    Bytes(Vec<u8>),
    /// Zeros.
    Zeros(u64),
}

impl Part {
    pub(super) fn len(&self) -> u64 {
        match self {
            Part::Span { len, .. } => *len as u64,
            Part::Bytes(b) => b.len() as u64,
            Part::Zeros(n) => *n,
        }
    }
}

/// New contents for one section (`llvm-objcopy --update-section`).
#[derive(Debug, Clone)]
pub(crate) struct Update<'a> {
    /// The section's index in the section header table.
    pub index: usize,
    /// Its new contents, in order.
    pub parts: &'a [Part],
    /// Where the bytes that may be pointed at went, in section offsets
    /// (a COFF object's symbols and relocations follow them; an ELF
    /// object's must not need to, which the caller checks).
    pub moves: &'a [Moved],
}

/// Section bytes `[old, old + len)` of the input are at `new` in the
/// updated section; with `len` 0, only the place `old` itself (the start
/// of a container, the end of the section) is at `new`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Moved {
    /// Where they were.
    pub old: u64,
    /// How many bytes (0: a place, not bytes).
    pub len: u64,
    /// Where they are.
    pub new: u64,
}

/// Where section offset `at` of the input is in the section `moves`
/// describe; `None` when it is in bytes that went or changed.
pub(crate) fn moved(moves: &[Moved], at: u64) -> Option<u64> {
    moves.iter().find_map(|m| {
        let d = at.checked_sub(m.old)?;
        (d < m.len || d == 0).then(|| m.new + d)
    })
}

impl Update<'_> {
    /// The new size.
    pub(crate) fn size(&self) -> u64 {
        self.parts.iter().map(Part::len).sum()
    }
}

//! The COFF rewrite `llvm-objcopy` 22 does for the bundler, emulated byte
//! for byte: adding one section per target (`--add-section` with
//! `--set-section-flags=…=readonly,exclude`) or removing the bundle
//! sections (`--regex --remove-section=__CLANG_OFFLOAD_BUNDLE__.*`) of a
//! COFF object file (regular or `/bigobj`; PE images are refused).
//!
//! As for ELF, llvm-objcopy reads the file into a model and writes a new
//! file from it (`llvm/lib/ObjCopy/COFF/` in LLVM 22, checked against the
//! installed tool). What the model keeps and what the writer rebuilds:
//!
//! - **File header**: machine, time stamp and characteristics are kept
//!   (a `/bigobj` input has no characteristics: 0); no optional header.
//!   The output is `/bigobj` when it has more than 65279 sections,
//!   whatever the input was, and when a symbol's special section number
//!   is one only `/bigobj`'s 32-bit field holds (below -256: a regular
//!   object's 16-bit field reads 0xff00 to 0xffff as -256 to -1). There
//!   llvm-objcopy writes the low 16 bits, and the number becomes a section
//!   index past the sections (-4092, `0xfffff004`, becomes section
//!   61444); we keep the number.
//! - **Sections** keep their order and header fields (names, virtual size
//!   and address, line-number fields, characteristics without
//!   `IMAGE_SCN_LNK_NRELOC_OVFL`); removed ones leave no gap, added ones
//!   come last. An added section is `IMAGE_SCN_MEM_READ |
//!   IMAGE_SCN_LNK_REMOVE` (what `readonly,exclude` means for COFF), its
//!   virtual size its length and its virtual address the end of the
//!   section before it. An existing section named like an added one gets
//!   the same flags, keeping its alignment bits.
//! - **Layout**: the headers, then each section's raw data (where it
//!   has some: `SizeOfRawData` bytes, the input's contents padded with
//!   zeros, or `0xcc` for code, when the input had none) directly followed
//!   by its relocations (with the overflow record when there are 65535 or
//!   more); no alignment padding anywhere; then the symbol table and the
//!   string table.
//! - **Symbols** keep their order; those defined in a removed section go,
//!   and so, in turn, do sections associative to a removed one (and their
//!   symbols). Section numbers, section-definition records (their number
//!   fields), weak-external tags and relocation symbol indices are
//!   renumbered. A file record's name is kept without trailing zeros and
//!   takes as many auxiliary records as it needs.
//! - **The string table** is rebuilt with `StringTableBuilder`'s
//!   tail-merged layout, long section names first ([`strtab`]).
//! - **Control-flow-guard tables** (`.gfids$y`, `.giats$y`, `.gljmp$y`,
//!   `.gehcont$y`), lists of symbol indices, are renumbered and their
//!   section checksum recomputed.
//!
//! Output is a [`Written`]: headers and tables are built in memory,
//! section contents are byte ranges of the inputs.

use std::borrow::Cow;

use super::model::{Added, Edit};
use crate::error::Result;
use crate::layout::Written;
use model::{Contents, Model, SCN_ALIGN_MASK, SCN_READONLY_EXCLUDE, Sec, invalid, lossy};

mod model;
mod read;
pub(crate) mod strtab;

pub(crate) use read::{is_bigobj, section_number, short_name, u16_at, u32_at};
#[cfg(test)]
mod tests;
mod update;
mod write;

/// What llvm-objcopy makes of the COFF object `data` with `edit`: the
/// sections `remove_named` picks removed and `add` added, or for
/// `prune`, sections removed (`remove`, by 1-based index) and given new
/// contents (`update`). Span source 0 is `data`, source `i + 1` is
/// `add[i].data`, and (with no `add`) source `j + 1` is `extra[j]`.
pub(super) fn rewrite(data: &[u8], edit: &Edit<'_>) -> Result<Written> {
    let mut model = read::read(data)?;
    if !edit.update.is_empty() || !edit.remove.is_empty() {
        // Pruning: nothing is added, and what points into an updated
        // section follows its bytes ([`update`]).
        model.update_sections(edit.update, edit.extra)?;
        model.remove_sections(|s| edit.remove.contains(&s.id));
    }
    if let Some(named) = edit.remove_named {
        model.remove_sections(|s| named(&s.name));
    }
    model.add_sections(edit.add)?;
    model.write()
}

/// Reads the COFF object `data` as llvm-objcopy's reader would, every
/// table checked against the file: what is wrong, if anything.
pub(super) fn check(data: &[u8]) -> Result<()> {
    read::read(data).map(|_| ())
}

impl<'d> Model<'d> {
    /// Removes the sections `remove` picks, the symbols defined in them,
    /// then the sections associative to removed ones, until none is left.
    fn remove_sections(&mut self, remove: impl Fn(&Sec<'_>) -> bool) {
        let mut gone: Vec<usize> = self
            .sections
            .iter()
            .filter(|s| remove(s))
            .map(|s| s.id)
            .collect();
        while !gone.is_empty() {
            gone.sort_unstable();
            self.sections.retain(|s| gone.binary_search(&s.id).is_err());
            let mut next = Vec::new();
            for sym in self.symbols.iter_mut().filter(|s| !s.removed) {
                let Some(id) = sym.section_id() else {
                    continue;
                };
                if gone.binary_search(&sym.associated).is_ok() {
                    next.push(id);
                }
                if gone.binary_search(&id).is_ok() {
                    sym.removed = true;
                }
            }
            // Only sections still present can go in the next round.
            next.retain(|id| self.sections.iter().any(|s| s.id == *id));
            next.dedup();
            gone = next;
        }
    }

    /// Adds one section per entry of `add`, after flagging existing
    /// sections of the same names as llvm-objcopy does.
    fn add_sections(&mut self, add: &[Added<'_>]) -> Result<()> {
        if add.is_empty() {
            return Ok(());
        }
        let names: Vec<Vec<u8>> = add.iter().map(|n| n.name.to_vec()).collect();
        for s in &mut self.sections {
            if names.iter().any(|n| **n == *s.name) {
                s.flags = (s.flags & SCN_ALIGN_MASK) | SCN_READONLY_EXCLUDE;
            }
        }
        for (i, (n, name)) in add.iter().zip(names).enumerate() {
            let len = u32::try_from(n.data.len()).map_err(|_| {
                invalid(format!(
                    "section '{}' ({} bytes) is too large for a COFF object",
                    lossy(&name),
                    n.data.len()
                ))
            })?;
            let address = self
                .sections
                .last()
                .map_or(0, |l| l.virtual_address.wrapping_add(l.virtual_size));
            let id = self.next_id;
            self.next_id += 1;
            self.sections.push(Sec {
                id,
                name: Cow::Owned(name),
                virtual_size: len,
                virtual_address: address,
                raw_size: len,
                line_numbers: 0,
                line_count: 0,
                flags: SCN_READONLY_EXCLUDE,
                contents: Contents::Span {
                    source: i + 1,
                    offset: 0,
                    len: n.data.len(),
                },
                relocs: Vec::new(),
            });
        }
        Ok(())
    }
}

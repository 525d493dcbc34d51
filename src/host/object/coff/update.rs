//! New contents for sections of a COFF object (`prune`): what points into
//! them follows their bytes.
//!
//! A COFF relocation is of the REL kind: its addend is stored in the field
//! it applies to, and its target is a symbol's value plus that addend. So
//! when a section's bytes move (the containers of a fat-binary section
//! packed at its start), the model is fixed as follows, or the object is
//! refused naming what points where:
//!
//! - a symbol defined in the section takes its new value; one defined in
//!   bytes that went or changed (inside a container other than at its
//!   start) is refused;
//! - a relocation applied in the section moves with its field;
//! - a relocation elsewhere against a symbol of the section keeps its
//!   addend, which must still lead from the symbol's new value to the new
//!   place of its old target (it does when both lie in one piece that
//!   moved as a whole: the start of a container and the container, the
//!   bytes between containers); other relocations, and those whose field
//!   width is not known here (instruction encodings), are refused;
//! - the section-definition symbol's auxiliary record gets the new length
//!   and relocation count, and its checksum, when the input had one, is
//!   computed again over the new contents: the JamCRC (CRC-32, initial
//!   value 0, no final inversion) LLVM's `WinCOFFObjectWriter` writes
//!   there for every section.

use super::model::{Contents, Model, SYM_CLASS_STATIC, invalid, lossy};
use crate::bytes::le_at;
use crate::error::{Error, Result};
use crate::host::object::{Part, Update, moved};
use crate::llvm::jam_crc::JamCrc;

/// `IMAGE_FILE_MACHINE_I386`.
const MACHINE_I386: u16 = 0x14c;
/// `IMAGE_FILE_MACHINE_AMD64`.
const MACHINE_AMD64: u16 = 0x8664;
/// `IMAGE_FILE_MACHINE_ARM64`, `ARM64EC` and `ARM64X`.
const MACHINES_ARM64: [u16; 3] = [0xaa64, 0xa641, 0xa64e];

/// What a relocation of type `kind` on `machine` stores in its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// Nothing that depends on where the target lies in its section
    /// (`ABSOLUTE`, `SECTION`: a section number).
    Nothing,
    /// An addend of this many bytes.
    Addend(usize),
    /// Something not known here (an instruction's encoding).
    Unknown,
}

/// The field of relocation type `kind` on `machine` (from the PE format
/// specification's "Type Indicators").
fn field(machine: u16, kind: u16) -> Field {
    match (machine, kind) {
        (MACHINE_AMD64, 0 | 0xa) => Field::Nothing,
        // ADDR64.
        (MACHINE_AMD64, 1) => Field::Addend(8),
        // ADDR32, ADDR32NB, REL32 .. REL32_5, SECREL.
        (MACHINE_AMD64, 2..=9 | 0xb) => Field::Addend(4),
        (MACHINE_I386, 0 | 0xa) => Field::Nothing,
        // DIR32, DIR32NB, SECREL, REL32.
        (MACHINE_I386, 6 | 7 | 0xb | 0x14) => Field::Addend(4),
        (m, 0 | 0xd) if MACHINES_ARM64.contains(&m) => Field::Nothing,
        // ADDR32, ADDR32NB, SECREL.
        (m, 1 | 2 | 8) if MACHINES_ARM64.contains(&m) => Field::Addend(4),
        // ADDR64.
        (m, 0xe) if MACHINES_ARM64.contains(&m) => Field::Addend(8),
        _ => Field::Unknown,
    }
}

/// A refusal naming section `name`.
fn refuse(name: &[u8], what: String) -> Error {
    Error::usage(format!(
        "section '{}': {what}, and pruning would move what it points at (not done)",
        lossy(name)
    ))
}

impl Model<'_> {
    /// Gives the sections `update` names their new contents (span source
    /// `j + 1` of the parts is `extra[j]`), fixing what points into them.
    pub(super) fn update_sections(&mut self, update: &[Update<'_>], extra: &[&[u8]]) -> Result<()> {
        // Every addend is read from the input before anything changes.
        self.check_relocation_targets(update)?;
        for u in update {
            self.update_section(u, extra)?;
        }
        Ok(())
    }

    /// The section with id `id` (its 1-based index in the input).
    fn position(&self, id: usize) -> Result<usize> {
        self.sections
            .iter()
            .position(|s| s.id == id)
            .ok_or_else(|| invalid(format!("section {id} does not exist")))
    }

    /// The `width` bytes at section offset `at` of section `k` in the
    /// input, as a signed little-endian value.
    fn stored(&self, k: usize, at: u64, width: usize) -> Option<i64> {
        let Contents::Span {
            source: 0, offset, ..
        } = self.sections[k].contents
        else {
            return None;
        };
        let start = offset.checked_add(usize::try_from(at).ok()?)?;
        match width {
            8 => le_at::<i64>(self.data, start),
            4 => le_at::<i32>(self.data, start).map(i64::from),
            _ => None,
        }
    }

    /// Refuses when a relocation against a symbol defined in an updated
    /// section would lose its target.
    fn check_relocation_targets(&self, update: &[Update<'_>]) -> Result<()> {
        for (k, t) in self.sections.iter().enumerate() {
            for r in &t.relocs {
                let sym = &self.symbols[r.symbol];
                let Some(u) = sym
                    .section_id()
                    .and_then(|id| update.iter().find(|u| u.index == id))
                else {
                    continue;
                };
                let target_name = &self.sections[self.position(u.index)?].name;
                let value = u64::from(sym.value);
                let what = || {
                    format!(
                        "section '{}' has a relocation (type {:#x}) against symbol '{}'",
                        lossy(&t.name),
                        r.kind,
                        lossy(sym.name)
                    )
                };
                let at = u64::from(r.offset.wrapping_sub(t.virtual_address));
                let addend = match field(self.machine, r.kind) {
                    Field::Nothing => continue,
                    Field::Addend(width) => self
                        .stored(k, at, width)
                        .ok_or_else(|| invalid(format!("{} whose field cannot be read", what())))?,
                    Field::Unknown => {
                        return Err(refuse(
                            target_name,
                            format!("{} whose addend is not read here", what()),
                        ));
                    }
                };
                let target = value.checked_add_signed(addend);
                let (Some(new_value), Some(new_target)) = (
                    moved(u.moves, value),
                    target.and_then(|t| moved(u.moves, t)),
                ) else {
                    return Err(refuse(
                        target_name,
                        format!("{} + {addend:#x}, into bytes pruning changes", what()),
                    ));
                };
                if new_value.checked_add_signed(addend) != Some(new_target) {
                    return Err(refuse(
                        target_name,
                        format!("{} + {addend:#x}, whose addend would change", what()),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Gives one section its new contents, its symbols and relocations
    /// their new places, its definition record its new length, relocation
    /// count and checksum.
    fn update_section(&mut self, u: &Update<'_>, extra: &[&[u8]]) -> Result<()> {
        let k = self.position(u.index)?;
        let name = self.sections[k].name.to_vec();
        let len: u64 = u.parts.iter().map(Part::len).sum();
        let new_len = u32::try_from(len).map_err(|_| {
            invalid(format!(
                "section '{}' would be {len} bytes, too large for COFF",
                lossy(&name)
            ))
        })?;
        let va = self.sections[k].virtual_address;
        for r in &mut self.sections[k].relocs {
            let at = u64::from(r.offset.wrapping_sub(va));
            let new = moved(u.moves, at)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    refuse(
                        &name,
                        format!("a relocation applies at {at:#x}, in bytes pruning changes"),
                    )
                })?;
            r.offset = new.wrapping_add(va);
        }
        let relocs = self.sections[k].relocs.len();
        let id = self.sections[k].id;
        let mut crc = None;
        for s in self.symbols.iter_mut().filter(|s| !s.removed) {
            if s.section_id() != Some(id) {
                continue;
            }
            let definition = s.class == SYM_CLASS_STATIC
                && s.value == 0
                && s.aux.len() == 1
                && s.file.is_none()
                && *s.name == *name;
            if definition && let Some(a) = s.aux.first_mut() {
                a[..4].copy_from_slice(&new_len.to_le_bytes());
                let count = u16::try_from(relocs).unwrap_or(u16::MAX);
                a[4..6].copy_from_slice(&count.to_le_bytes());
                if a[8..12] != [0; 4] {
                    let sum = *crc.get_or_insert_with(|| checksum(self.data, u.parts, extra));
                    a[8..12].copy_from_slice(&sum.to_le_bytes());
                }
                continue;
            }
            let value = u64::from(s.value);
            s.value = moved(u.moves, value)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    refuse(
                        &name,
                        format!(
                            "symbol '{}' is defined at {value:#x} in it, in bytes pruning changes",
                            lossy(s.name)
                        ),
                    )
                })?;
        }
        let sec = &mut self.sections[k];
        if sec.virtual_size == sec.raw_size && sec.virtual_size != 0 {
            sec.virtual_size = new_len;
        }
        sec.raw_size = new_len;
        sec.contents =
            Contents::Parts(u.parts.to_vec(), usize::try_from(len).unwrap_or(usize::MAX));
        Ok(())
    }
}

/// The JamCRC of the contents `parts` make (span source 0 is `data`,
/// `j + 1` is `extra[j]`; a span outside its source counts as nothing,
/// which the writer then refuses).
fn checksum(data: &[u8], parts: &[Part], extra: &[&[u8]]) -> u32 {
    let mut crc = JamCrc::new();
    for p in parts {
        match p {
            Part::Span {
                source,
                offset,
                len,
            } => {
                let src = match source.checked_sub(1) {
                    None => Some(data),
                    Some(j) => extra.get(j).copied(),
                };
                let bytes = src
                    .and_then(|s| s.get(*offset..offset.checked_add(*len)?))
                    .unwrap_or_default();
                crc.update(bytes);
            }
            Part::Bytes(b) => crc.update(b),
            Part::Zeros(n) => crc.zeros(*n),
        }
    }
    crc.value()
}

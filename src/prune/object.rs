//! Pruning a relocatable object: its sections really shrink. Each section
//! holding containers that lose entries gets new contents (the containers
//! pruned, what lies around them as it was) and the bundle sections of a
//! host object (`-fgpu-rdc`, old driver) whose entries go are removed: the
//! file llvm-objcopy writes for `--update-section` and `--remove-section`
//! with those arguments, byte for byte.
//!
//! Contents that move must not be pointed at. Containers are pruned from
//! their start, so a reference to a container's first byte still finds it;
//! a reference past that point (a symbol defined there, a relocation
//! against a symbol of the section whose target lies there, a relocation
//! applied there) would be stale, and such an object is refused. Clang's
//! and nvcc's objects point at a fat binary's start only (through the
//! section symbol, from the fatbin wrapper), and nothing points into
//! `.llvm.offloading`. A COFF object is rewritten the same way (what
//! llvm-objcopy's COFF writer makes of it), except that its symbols and
//! relocations follow the bytes that move, when they point at a
//! container's start or between containers (see `host::object`'s COFF
//! update).

use object::read::{Object as _, ObjectSection as _, ObjectSymbol as _, RelocationTarget};

use super::output::Output;
use super::plan::{self, Edit, Host};
use super::{Options, Verdict};
use crate::error::{Error, Result};
use crate::host::object::{Aligned, Moved, Part, Update, edit_sections, is_aligned};
use crate::layout::Piece;
use crate::num::usize_from;
use crate::scan::{ContainerKind, Report};

/// What pruning a relocatable object makes.
#[derive(Debug)]
pub struct ObjectPruned {
    /// The new object.
    pub output: Output,
    /// Containers rewritten (bundle sections removed count one each).
    pub rewritten: usize,
}

/// A section of the input, as far as pruning needs it.
struct Sec {
    index: usize,
    name: String,
    start: u64,
    size: u64,
    align: u64,
}

impl Sec {
    fn holds(&self, offset: u64, size: u64) -> bool {
        self.start <= offset
            && offset
                .checked_add(size)
                .is_some_and(|end| Some(end) <= self.start.checked_add(self.size))
    }
}

fn invalid(detail: impl Into<String>) -> Error {
    Error::invalid("object file", detail)
}

/// The relocatable object `data` (scanned as `report`) pruned to the
/// images whose verdict says they stay, as `opts` say; `None` when every
/// image stays.
pub fn prune(
    data: &[u8],
    report: &Report,
    verdicts: &[Verdict],
    opts: &Options,
) -> Result<Option<ObjectPruned>> {
    let mut plan = plan::plan(data, report, verdicts, Host::Relocatable, opts)?;
    let copy;
    let view = if is_aligned(data) {
        data
    } else {
        copy = Aligned::copy_of(data);
        copy.bytes()
    };
    let file = object::File::parse(view).map_err(|e| invalid(e.to_string()))?;
    let secs: Vec<Sec> = file
        .sections()
        .filter_map(|s| {
            let (start, size) = s.file_range()?;
            Some(Sec {
                index: s.index().0,
                name: String::from_utf8_lossy(s.name_bytes().ok()?).into_owned(),
                start,
                size,
                align: s.align().max(1),
            })
        })
        .collect();
    let remove = removed_bundle_sections(report, verdicts, &secs)?;
    if plan.is_empty() && remove.is_empty() {
        return Ok(None);
    }
    let rewritten = plan.edits.len() + remove.len();
    // The edits, section by section.
    let mut by_section: Vec<(usize, Vec<Edit>)> = Vec::new();
    for e in std::mem::take(&mut plan.edits) {
        let s = secs
            .iter()
            .position(|s| s.holds(e.offset, e.size))
            .ok_or_else(|| {
                invalid(format!(
                    "the container at {:#x} does not lie in one section",
                    e.offset
                ))
            })?;
        match by_section.iter_mut().find(|(k, _)| *k == s) {
            Some((_, v)) => v.push(e),
            None => by_section.push((s, vec![e])),
        }
    }
    // A COFF object's symbols and relocations follow the bytes that move
    // (`host::object`'s COFF update); an ELF object's must not need to.
    let coff = matches!(
        report.host,
        Some(object::FileKind::Coff | object::FileKind::CoffBig)
    );
    let mut built: Vec<Vec<u8>> = Vec::new();
    let mut parts: Vec<(usize, Vec<Part>, Vec<Moved>)> = Vec::new();
    for (s, mut edits) in by_section {
        edits.sort_by_key(|e| e.offset);
        let sec = &secs[s];
        if !coff {
            check_references(&file, sec, &edits)?;
        }
        let moves = moves(sec, &edits);
        parts.push((
            sec.index,
            section_parts(sec, &mut edits, &mut built)?,
            moves,
        ));
    }
    let updates: Vec<Update<'_>> = parts
        .iter()
        .map(|(index, parts, moves)| Update {
            index: *index,
            parts,
            moves,
        })
        .collect();
    let extra: Vec<&[u8]> = built.iter().map(Vec::as_slice).collect();
    let written = edit_sections(
        data,
        report.host,
        &remove,
        &updates,
        &extra,
        opts.keep_string_tables,
    )?;
    Ok(Some(ObjectPruned {
        output: Output {
            layout: written.layout,
            spans: written.spans,
            built,
        },
        rewritten,
    }))
}

/// The bundle sections of a host object (`__CLANG_OFFLOAD_BUNDLE__…`)
/// whose entries go, by section index (a bundle that keeps no device
/// entry keeps its host entry's section: [`plan::plan`] has refused that
/// already unless the file keeps device code elsewhere or empty
/// containers are allowed).
fn removed_bundle_sections(
    report: &Report,
    verdicts: &[Verdict],
    secs: &[Sec],
) -> Result<Vec<usize>> {
    let mut remove = Vec::new();
    for c in report
        .containers
        .iter()
        .filter(|c| c.kind == ContainerKind::ObjectBundle && c.parent.is_none())
    {
        let images: Vec<_> = report
            .images
            .iter()
            .filter(|i| i.container == c.id)
            .collect();
        let gone: Vec<_> = images.iter().filter(|i| !verdicts[i.id].stays()).collect();
        if gone.is_empty() {
            continue;
        }
        for i in gone {
            // Its own section: the same place, name and size, and not one
            // taken by another entry already (a hostile object may hold two
            // sections of one name at one offset).
            let s = secs
                .iter()
                .find(|s| {
                    Some(s.start) == i.offset
                        && s.size == i.size
                        && Some(&s.name) == i.section.as_ref()
                        && !remove.contains(&s.index)
                })
                .ok_or_else(|| {
                    invalid(format!(
                        "the bundle entry {} is not a section of its own",
                        i.bundle_id.as_deref().unwrap_or("?")
                    ))
                })?;
            remove.push(s.index);
        }
    }
    Ok(remove)
}

/// Section `sec`'s new contents: what lies between the containers as it
/// was, each container as its edit makes it (containers built in memory
/// moved to `built`, span source `j + 1` for `built[j]`). Contents after
/// a container that shrinks must move by a multiple of the section's
/// alignment, or their alignment would be lost.
fn section_parts(sec: &Sec, edits: &mut [Edit], built: &mut Vec<Vec<u8>>) -> Result<Vec<Part>> {
    let mut parts = Vec::new();
    let mut cursor = sec.start;
    let mut shift = 0u64;
    let span = |parts: &mut Vec<Part>, source: usize, offset: u64, len: u64| {
        if len > 0 {
            parts.push(Part::Span {
                source,
                offset: usize_from(offset),
                len: usize_from(len),
            });
        }
    };
    for e in edits.iter_mut() {
        if !shift.is_multiple_of(sec.align) && e.offset > cursor {
            return Err(misaligned(sec));
        }
        let overlap = || invalid(format!("containers of {} overlap", sec.name));
        span(
            &mut parts,
            0,
            cursor,
            e.offset.checked_sub(cursor).ok_or_else(overlap)?,
        );
        let (source, base) = match e.built.take() {
            Some(b) => {
                built.push(b);
                (built.len(), 0)
            }
            None => (0, e.offset),
        };
        for p in &e.pruned.layout.pieces {
            match p {
                Piece::Image(i) => {
                    let r = &e.pruned.ranges[*i];
                    let len = r.end.checked_sub(r.start).ok_or_else(overlap)?;
                    span(
                        &mut parts,
                        source,
                        base.checked_add(r.start).ok_or_else(overlap)?,
                        len,
                    );
                }
                Piece::Bytes(b) => parts.push(Part::Bytes(b.clone())),
                Piece::Zeros(n) => parts.push(Part::Zeros(*n)),
            }
        }
        shift = shift.checked_add(e.freed()).ok_or_else(overlap)?;
        cursor = e.offset.checked_add(e.size).ok_or_else(overlap)?;
    }
    let end = sec
        .start
        .checked_add(sec.size)
        .ok_or_else(|| invalid(format!("{} ends past 2^64", sec.name)))?;
    if end > cursor && !shift.is_multiple_of(sec.align) {
        return Err(misaligned(sec));
    }
    let rest = end
        .checked_sub(cursor)
        .ok_or_else(|| invalid(format!("a container runs past the end of {}", sec.name)))?;
    span(&mut parts, 0, cursor, rest);
    Ok(parts)
}

/// Where the bytes of `sec` that may be pointed at go when `edits` (in
/// order) are made, in section offsets: the bytes between containers, the
/// start of each container that stays (a reference to a container is to
/// its start; the rest of it changes), and the end of the section.
fn moves(sec: &Sec, edits: &[Edit]) -> Vec<Moved> {
    let mut out = Vec::new();
    let mut cursor = 0u64;
    let mut shift = 0u64;
    for e in edits {
        let at = e.offset.saturating_sub(sec.start);
        out.push(Moved {
            old: cursor,
            len: at.saturating_sub(cursor),
            new: cursor.saturating_sub(shift),
        });
        if e.pruned.layout.size > 0 {
            out.push(Moved {
                old: at,
                len: 0,
                new: at.saturating_sub(shift),
            });
        }
        shift = shift.saturating_add(e.freed());
        cursor = at.saturating_add(e.size);
    }
    out.push(Moved {
        old: cursor,
        len: sec.size.saturating_sub(cursor),
        new: cursor.saturating_sub(shift),
    });
    out.push(Moved {
        old: sec.size,
        len: 0,
        new: sec.size.saturating_sub(shift),
    });
    out
}

fn misaligned(sec: &Sec) -> Error {
    Error::usage(format!(
        "section '{}': pruning would move what follows a container off its {}-byte \
         alignment (not done)",
        sec.name, sec.align
    ))
}

/// How a message names a symbol of `sec`: `symbol 'NAME'`, or for the
/// nameless section symbol (what `ld -r` relocates against), `the section
/// symbol of 'SECTION'`.
fn symbol_label(s: &object::Symbol<'_, '_>, sec: &Sec) -> String {
    match s.name() {
        Ok(n) if !n.is_empty() => format!("symbol '{n}'"),
        _ if s.kind() == object::SymbolKind::Section => {
            format!("the section symbol of '{}'", sec.name)
        }
        _ => format!("symbol #{}", s.index().0),
    }
}

/// Refuses when something points at a byte of `sec` that the edits move:
/// past the start of a container that shrinks, or at or past the start of
/// one that goes whole.
fn check_references(file: &object::File<'_>, sec: &Sec, edits: &[Edit]) -> Result<()> {
    let pivot = edits
        .iter()
        .map(|e| {
            let r = e.offset - sec.start;
            if e.pruned.layout.size == 0 { r } else { r + 1 }
        })
        .min()
        .unwrap_or(u64::MAX);
    let moved = |x: u64| x >= pivot;
    let refuse = |what: String| {
        Error::usage(format!(
            "section '{}': {what}, and pruning would move what it points at (not done)",
            sec.name
        ))
    };
    let in_sec = |s: &object::Symbol<'_, '_>| s.section_index().map(|i| i.0) == Some(sec.index);
    for s in file.symbols() {
        if in_sec(&s) && moved(s.address()) {
            return Err(refuse(format!(
                "{} is defined at {:#x} in it",
                symbol_label(&s, sec),
                s.address()
            )));
        }
    }
    for section in file.sections() {
        let applies_here = section.index().0 == sec.index;
        for (offset, r) in section.relocations() {
            if applies_here && moved(offset) {
                return Err(refuse(format!("a relocation applies at {offset:#x}")));
            }
            let RelocationTarget::Symbol(k) = r.target() else {
                continue;
            };
            let Ok(sym) = file.symbol_by_index(k) else {
                continue;
            };
            if !in_sec(&sym) {
                continue;
            }
            let target = sym.address().wrapping_add_signed(r.addend());
            if r.has_implicit_addend() || moved(target) {
                return Err(refuse(format!(
                    "section '{}' has a relocation against {}{}",
                    section.name().unwrap_or("?"),
                    symbol_label(&sym, sec),
                    if r.has_implicit_addend() {
                        " with an addend stored in place".to_string()
                    } else {
                        format!(" + {:#x}", r.addend())
                    }
                )));
            }
        }
    }
    Ok(())
}

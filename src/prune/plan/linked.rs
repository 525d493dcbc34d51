//! The check that no edit of a plan for a linked file touches a part of
//! it that must stay ([`Fixed`]).

use super::edit::{Edit, Plan};
use crate::error::{Error, Result};
use crate::host::linked::facts::Facts;
use crate::host::linked::facts::fixed::{Fixed, Part};
use crate::num::len64;
use crate::scan::Report;

/// Refuses a plan for the linked file `data` that would rewrite (or free,
/// as zeros or by cutting them out) bytes that are also those of a part
/// that must stay: the ELF header, a header table, a section other than
/// the one that holds the container, a segment other than a load segment
/// that holds it; and one whose container two sections hold (a section
/// listed twice, or two that overlap). The parts are read from `facts`.
///
/// The plan's edits are in file order and apart ([`Plan::check`]), so
/// the edits a part shares bytes with are a run of them, found by binary
/// search, and all but the first and the last of the run lie inside the
/// part: those two tell whether the part holds them all.
pub(super) fn check_linked(
    data: &[u8],
    report: &Report,
    plan: &Plan,
    facts: &Facts<'_>,
) -> Result<()> {
    let parts = facts.fixed()?;
    let edits = &plan.edits;
    let end = |e: &Edit| e.end_within(len64(data)).unwrap_or(u64::MAX);
    // The run of edits each section that holds some holds, `[first, last)`.
    let mut held: Vec<(usize, usize, &Fixed)> = Vec::new();
    for p in parts {
        let first = edits.partition_point(|e| end(e) <= p.start);
        let last = edits.partition_point(|e| e.offset < p.end);
        if first >= last {
            continue;
        }
        let may_hold = match p.part {
            Part::Header => false,
            Part::Section(_) => true,
            Part::Segment(_, load) => load,
        };
        if let Some(e) = [&edits[first], &edits[last - 1]]
            .into_iter()
            .find(|e| !may_hold || !p.holds(e.offset, end(e)))
        {
            let kind = kind_of(report, e);
            let freed_from = e.offset.saturating_add(e.pruned.layout.size);
            let how = if p.overlaps(freed_from, end(e)) {
                format!("inside the bytes the {kind} at {:#x} would free", e.offset)
            } else {
                format!(
                    "inside the {kind} at {:#x}, which pruning rewrites",
                    e.offset
                )
            };
            return Err(Error::unsupported(format!(
                "{p} lies {how}: nothing is pruned"
            )));
        }
        if matches!(p.part, Part::Section(_)) {
            held.push((first, last, p));
        }
    }
    // Two runs that share an edit share it with the run before them in
    // order of their first edits.
    held.sort_unstable_by_key(|&(first, last, _)| (first, last));
    for pair in held.windows(2) {
        let ((_, a_last, a), (b_first, _, b)) = (pair[0], pair[1]);
        if b_first < a_last {
            let e = &edits[b_first];
            let why = if (a.start, a.end) == (b.start, b.end) {
                format!(
                    "{a} is listed twice in the section header table, again as {}",
                    b.what
                )
            } else {
                format!(
                    "{a} and {b} overlap, both holding the {} at {:#x}",
                    kind_of(report, e),
                    e.offset
                )
            };
            return Err(Error::unsupported(format!("{why}: nothing is pruned")));
        }
    }
    Ok(())
}

/// The kind of container edit `e` rewrites, for messages.
fn kind_of(report: &Report, e: &Edit) -> &'static str {
    report
        .containers
        .get(e.container)
        .map_or("container", |c| c.kind.name())
}

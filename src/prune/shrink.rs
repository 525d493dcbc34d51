//! The adapters between prune's plan and the linked-file editing of
//! [`crate::host::linked`]: what a plan decided (the containers rewritten,
//! the OpenMP descriptors that register those that go) and what the scan
//! found (the containers that move with their section, the fatbin
//! wrappers' data pointers, the OffloadBinaries' first images), given to
//! it in the terms of the file's bytes ([`Edits`]).

use super::plan::Plan;
use crate::host::linked::facts::Facts;
use crate::host::linked::facts::pe::PeImage;
use crate::host::linked::{self, Change, Edits, Refusal, Shrunk};
use crate::layout::Written as Output;
use crate::scan::{ContainerKind, Report};

/// What `plan` (for the file scanned as `report`) edits, as the host
/// layer takes it.
fn edits<'p>(report: &Report, plan: &'p Plan) -> Edits<'p> {
    let top = report.containers.iter().filter(|c| c.parent.is_none());
    Edits {
        changes: plan
            .edits
            .iter()
            .map(|e| Change {
                offset: e.offset,
                size: e.size,
                layout: &e.pruned.layout,
                ranges: &e.pruned.ranges,
                built: e.built.as_deref(),
            })
            .collect(),
        registrations: &plan.registrations,
        blocks: top
            .clone()
            .filter(|c| c.kind != ContainerKind::FatbinWrapper)
            .filter_map(|c| Some((c.offset?, c.size)))
            .collect(),
        pointers: top
            .filter(|c| c.kind == ContainerKind::FatbinWrapper)
            .filter_map(|c| c.offset?.checked_add(crate::fatbin::WRAPPER_DATA_OFFSET))
            .collect(),
    }
}

/// The shrunk form of the linked ELF file `data` (scanned as `report`)
/// that `plan` prunes in place ([`linked::shrink`]).
pub(crate) fn shrink(
    data: &[u8],
    report: &Report,
    plan: &Plan,
    facts: &Facts<'_>,
) -> Result<(Output, Shrunk), Refusal> {
    linked::shrink(data, report.host, &edits(report, plan), facts)
}

/// The shrunk form of the PE image `data` ([`linked::pe::shrink`]).
pub(crate) fn pe_shrink(
    data: &[u8],
    image: &PeImage,
    report: &Report,
    plan: &Plan,
    strip: bool,
) -> Result<(Output, Shrunk), Refusal> {
    linked::pe::shrink(data, image, &edits(report, plan), strip)
}

/// The in-place form of the PE image `data` ([`linked::pe::in_place`]).
pub(crate) fn pe_in_place(
    data: &[u8],
    image: &PeImage,
    report: &Report,
    plan: &Plan,
    strip: bool,
) -> Result<Output, Refusal> {
    linked::pe::in_place(data, image, &edits(report, plan), strip)
}

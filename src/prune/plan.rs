//! What pruning one file does: each container that loses entries,
//! rewritten where it lies ([`Edit`]), worked out from the file's scan
//! [`Report`] and the [`Verdict`]s on its images, before anything is
//! written. A container is rewritten in place: its new bytes start where
//! it started (so whatever points at it, a fatbin wrapper or a
//! registration call, still does) and the bytes it frees up to its old end
//! are zeros (and, in a file on disk, holes).
//!
//! What this part does not rewrite, it refuses, naming the container,
//! rather than leave a file that says less than it seems to: containers
//! inside other images or inside compressed data (a compressed bundle's
//! own bundle excepted: the CCOB is rebuilt around it), and the
//! `__CLANG_OFFLOAD_BUNDLE__` sections of a host object. OffloadBinaries
//! in a linked program go whole, and the OpenMP descriptor that registers
//! them is rewritten to register the others ([`Plan::registrations`]);
//! one whose descriptor is not found is refused.
//!
//! It refuses, too, the layouts where a rewrite would overwrite what must
//! stay: a container listed twice or overlapping another (two section
//! headers for one section), and, in a linked file, a container whose
//! bytes are also those of the ELF header, a header table, another section
//! or a segment other than its load segment
//! ([`Fixed`](crate::host::linked::facts::fixed::Fixed)).

mod edit;
mod edits;
mod linked;

use super::model::{Options, Verdict};
use crate::error::{Error, Result};
use crate::host::linked::facts::Facts;
use crate::num::len64;
use crate::scan::{Container, ContainerKind, Image, Report};

pub use edit::{Edit, Host, Plan};
use edits::{
    ccob_edit, container_edit, linked_binary_edit, patches_in_place, registrations,
    whole_binary_edit,
};
use linked::check_linked;

/// The edits that prune `data` (scanned as `report`) to the images whose
/// verdict says they stay, in a file that is a `host`, as `opts` say.
pub fn plan(
    data: &[u8],
    report: &Report,
    verdicts: &[Verdict],
    host: Host,
    opts: &Options,
) -> Result<Plan> {
    let facts = Facts::new(data, report.host);
    plan_with(data, report, verdicts, host, opts, &facts)
}

/// [`plan`], reading the headers of a linked file from `facts` (which
/// keep them for the rewrite that follows).
pub(crate) fn plan_with(
    data: &[u8],
    report: &Report,
    verdicts: &[Verdict],
    host: Host,
    opts: &Options,
    facts: &Facts<'_>,
) -> Result<Plan> {
    if report.damaged() {
        return Err(Error::invalid(
            "file",
            "it holds damaged data (see `offload-kit inspect`): nothing is pruned",
        ));
    }
    if verdicts.len() != report.images.len() {
        return Err(Error::usage("one verdict per image is needed"));
    }
    if host == Host::Linked
        && report.used_raw_scan
        && crate::host::elf::peek(data).is_some_and(|p| p.has_section_table())
    {
        // Its section headers name nothing readable, so where its
        // containers are was found by their bytes; rewritten, those bytes
        // could make the headers read otherwise (a name table inside a
        // container), and the file say something else than what was
        // pruned.
        return Err(Error::unsupported(
            "it has section headers, but none the scanner can read (it was scanned raw): \
             nothing is pruned",
        ));
    }
    check_device_left(report, verdicts, opts.allow_empty)?;
    let mut plan = Plan::default();
    // Bundles inside a CCOB that the CCOB's edit takes care of.
    let mut inside_ccob = vec![false; report.containers.len()];
    for c in &report.containers {
        if inside_ccob[c.id] {
            continue;
        }
        let edit = if c.kind == ContainerKind::Ccob {
            ccob_edit(data, report, verdicts, c, opts)?.map(|(edit, inner)| {
                inside_ccob[inner] = true;
                edit
            })
        } else if c.kind == ContainerKind::OffloadBinary && host != Host::Linked {
            whole_binary_edit(data, report, verdicts, c)?
        } else if c.kind == ContainerKind::OffloadBinary {
            linked_binary_edit(data, report, verdicts, c)?
        } else if c.kind == ContainerKind::ObjectBundle && host == Host::Relocatable {
            None
        } else {
            container_edit(data, report, verdicts, c)?
        };
        plan.edits.extend(edit);
    }
    plan.edits.sort_by_key(|e| e.offset);
    if host == Host::Linked {
        plan.registrations = registrations(data, report, &plan)?;
    }
    check_apart(report, &plan)?;
    if !plan.registrations.is_empty() {
        plan.patches = patches_in_place(&plan)?;
    }
    plan.check(len64(data))?;
    if host == Host::Linked && !plan.is_empty() {
        check_linked(data, report, &plan, facts)?;
    }
    Ok(plan)
}

/// Whether `img` is device code: an image for a device, not a bundle's
/// host entry nor an empty placeholder.
fn is_device_code(img: &Image) -> bool {
    let placeholder = img.size == 0 && img.arch.is_empty();
    !img.offload_kind.is_host() && !placeholder
}

/// Whether the file `report` describes holds device code, and whether
/// some of it stays by `verdicts` (one per image).
pub(crate) fn device_code(report: &Report, verdicts: &[Verdict]) -> (bool, bool) {
    let mut device = report.images.iter().filter(|i| is_device_code(i));
    let held = device.clone().next().is_some();
    let left = device.any(|i| verdicts.get(i.id).is_some_and(|v| v.stays()));
    (held, left)
}

/// The containers of `report` that hold device code of which nothing
/// stays by `verdicts`, by id in the report's order: what pruning empties
/// (a CUDA fatbin left with no entry, a bundle with its host entry alone,
/// an OffloadBinary removed whole).
pub(crate) fn emptied(report: &Report, verdicts: &[Verdict]) -> Vec<usize> {
    let mut held = vec![false; report.containers.len()];
    let mut left = vec![false; report.containers.len()];
    for i in report.images.iter().filter(|i| is_device_code(i)) {
        if let Some(h) = held.get_mut(i.container) {
            *h = true;
        }
        if verdicts.get(i.id).is_some_and(|v| v.stays())
            && let Some(l) = left.get_mut(i.container)
        {
            *l = true;
        }
    }
    (0..held.len()).filter(|&c| held[c] && !left[c]).collect()
}

/// Refuses, unless `allow_empty`, to prune a file that holds device code
/// of which nothing would stay. Containers that keep none are fine when
/// others keep some: a library built per translation unit has fatbins
/// for old GPUs alone, which a rule for a new one empties.
fn check_device_left(report: &Report, verdicts: &[Verdict], allow_empty: bool) -> Result<()> {
    let (held, left) = device_code(report, verdicts);
    if allow_empty || !held || left || verdicts.iter().all(|v| v.stays()) {
        return Ok(());
    }
    let n = emptied(report, verdicts).len();
    // Fatbins the file loads itself (cuFFT's kernels) are not pruned: a
    // user reading "no device image would stay" should not think the
    // file has no code for the GPU.
    let also = report
        .fatbins_elsewhere_said()
        .map(|t| {
            format!(" (the {t}, which the file loads itself, are not pruned and stay as they are)")
        })
        .unwrap_or_default();
    Err(Error::usage(format!(
        "no device image of the file would stay ({n} container(s) would keep none): \
         --allow-empty allows that{also}"
    )))
}

/// Refuses a plan that edits a container whose bytes another container
/// (not inside it) claims too: one container found twice, through two
/// section headers for one section, would be rewritten twice and its
/// freed bytes counted twice.
///
/// The containers are swept in file order, each against the one reaching
/// furthest before it: when an edited container overlaps another, that
/// pair is met (the one reaching furthest when the later of the two comes
/// is the edited one, or one that overlaps it and comes first).
fn check_apart(report: &Report, plan: &Plan) -> Result<()> {
    let mut edited = vec![false; report.containers.len()];
    for e in &plan.edits {
        *edited
            .get_mut(e.container)
            .ok_or_else(|| Error::usage("an edit names no container of the report"))? = true;
    }
    // A container that claims bytes past 2^64 is cut there, where no file
    // byte lies: it still covers every byte it claims.
    let mut placed: Vec<(u64, u64, usize)> = report
        .containers
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let start = c.offset.filter(|_| c.parent.is_none())?;
            Some((start, start.saturating_add(c.size), i))
        })
        .filter(|&(start, end, _)| start < end)
        .collect();
    placed.sort_unstable();
    // The container reaching furthest so far: where it ends, and which.
    let mut reach: Option<(u64, usize)> = None;
    for &(start, end, i) in &placed {
        if let Some((r_end, r)) = reach
            && start < r_end
            && (edited[i] || edited[r])
        {
            let (a, b) = (&report.containers[r], &report.containers[i]);
            return Err(Error::unsupported(overlap(a, b)));
        }
        if reach.is_none_or(|(r_end, _)| end > r_end) {
            reach = Some((end, i));
        }
    }
    Ok(())
}

/// What is wrong with containers `a` and `b`, which overlap.
fn overlap(a: &Container, b: &Container) -> String {
    let at = |c: &Container| c.offset.unwrap_or(0);
    if (at(a), a.size, a.kind) == (at(b), b.size, b.kind) {
        let through = match (&a.section, &b.section) {
            (Some(x), Some(y)) if x == y => {
                format!(" through two section headers `{x}` (one section listed twice)")
            }
            (Some(x), Some(y)) => format!(" through sections `{x}` and `{y}`"),
            _ => String::new(),
        };
        return format!(
            "the {} at {:#x} is found twice{through}: nothing is pruned",
            a.kind,
            at(a)
        );
    }
    format!(
        "the {} at {:#x} ({} bytes) overlaps the {} at {:#x}: nothing is pruned",
        a.kind,
        at(a),
        a.size,
        b.kind,
        at(b)
    )
}

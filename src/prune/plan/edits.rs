//! The edits a plan is made of: each container that loses entries
//! rewritten where it lies, by its kind.

use super::edit::{Edit, Plan};
use crate::error::{Error, Result};
use crate::host::linked::Refusal;
use crate::host::linked::openmp::{self, Binary, Registration};
use crate::num::{len64, usize_from};
use crate::prune::containers::{self, Pruned};
use crate::prune::model::{Options, Verdict};
use crate::scan::{Container, ContainerKind, Image, Parent, Report};

/// Whether each entry of container `id` stays, in order; `None` when all
/// of them do.
fn stays_of(report: &Report, verdicts: &[Verdict], id: usize) -> Option<Vec<bool>> {
    let mut images: Vec<&Image> = report.images.iter().filter(|i| i.container == id).collect();
    images.sort_by_key(|i| i.index);
    let stays: Vec<bool> = images.iter().map(|i| verdicts[i.id].stays()).collect();
    (!stays.iter().all(|&s| s)).then_some(stays)
}

/// Container `c`'s bytes and offset, once checked that it lies in the
/// file itself.
fn container_bytes<'d>(data: &'d [u8], c: &Container) -> Result<(u64, &'d [u8])> {
    let (Some(offset), None) = (c.offset, c.parent) else {
        return Err(refuse(
            c.kind,
            c.offset,
            "it lies inside another image or compressed data",
        ));
    };
    let end = offset
        .checked_add(c.size)
        .filter(|&e| e <= data.len() as u64)
        .ok_or_else(|| Error::invalid("file", "a container runs past its end"))?;
    Ok((offset, &data[usize_from(offset)..usize_from(end)]))
}

/// The edit of container `c` (not a CCOB) when it loses entries.
pub(super) fn container_edit(
    data: &[u8],
    report: &Report,
    verdicts: &[Verdict],
    c: &Container,
) -> Result<Option<Edit>> {
    let Some(stays) = stays_of(report, verdicts, c.id) else {
        return Ok(None);
    };
    match c.kind {
        ContainerKind::Bundle | ContainerKind::CudaFatbin => {}
        ContainerKind::ObjectBundle => {
            return Err(refuse(
                c.kind,
                c.offset,
                "its sections are pruned only in a relocatable object, not in a linked file",
            ));
        }
        other => {
            return Err(refuse(
                other,
                c.offset,
                "this kind of container is not pruned yet",
            ));
        }
    }
    let (offset, bytes) = container_bytes(data, c)?;
    let pruned = match c.kind {
        ContainerKind::Bundle => containers::bundle(bytes, &stays)?,
        ContainerKind::CudaFatbin => containers::fatbin(bytes, &stays)?,
        other => {
            return Err(refuse(
                other,
                c.offset,
                "this kind of container is not pruned yet",
            ));
        }
    };
    if pruned.layout.size > c.size {
        return Err(refuse(
            c.kind,
            c.offset,
            "its pruned form would be larger than it is",
        ));
    }
    Ok(Some(Edit {
        container: c.id,
        offset,
        size: c.size,
        pruned,
        built: None,
    }))
}

/// The edit that drops OffloadBinary `c` of a linked file whole when its
/// images go ([`whole_binary_edit`]); one that keeps some of them is
/// refused (the OpenMP runtime is handed one image of each OffloadBinary:
/// its first).
pub(super) fn linked_binary_edit(
    data: &[u8],
    report: &Report,
    verdicts: &[Verdict],
    c: &Container,
) -> Result<Option<Edit>> {
    match stays_of(report, verdicts, c.id) {
        None => Ok(None),
        Some(stays) if stays.iter().all(|&s| !s) => whole_binary_edit(data, report, verdicts, c),
        Some(_) => Err(refuse(
            c.kind,
            c.offset,
            "it would keep some of its images: a linked program's OffloadBinary goes whole \
             or stays whole",
        )),
    }
}

/// The OpenMP descriptors of the linked file `data` that register the
/// OffloadBinaries `plan` removes, each with the images that stay; refused,
/// naming the first such OffloadBinary, when their registration is not
/// found or not known.
pub(super) fn registrations(
    data: &[u8],
    report: &Report,
    plan: &Plan,
) -> Result<Vec<Registration>> {
    let dropped: Vec<usize> = plan
        .edits
        .iter()
        .filter(|e| {
            report
                .containers
                .get(e.container)
                .is_some_and(|c| c.kind == ContainerKind::OffloadBinary)
        })
        .map(|e| e.container)
        .collect();
    let Some(&first) = dropped.first() else {
        return Ok(Vec::new());
    };
    registrations_of(data, report, &dropped).map_err(|why| {
        let c = &report.containers[first];
        refuse(
            c.kind,
            c.offset,
            &format!("its OpenMP registration cannot be edited: {why}"),
        )
    })
}

/// The OpenMP descriptors of the linked ELF file `data` (scanned as
/// `report`) that register the OffloadBinaries `dropped` (ids in the
/// report) ([`openmp::registrations`]).
fn registrations_of(
    data: &[u8],
    report: &Report,
    dropped: &[usize],
) -> Result<Vec<Registration>, Refusal> {
    let binaries: Vec<Binary> = report
        .containers
        .iter()
        .filter(|c| c.kind == ContainerKind::OffloadBinary && c.parent.is_none())
        .filter_map(|c| {
            let offset = c.offset?;
            let first = report
                .images
                .iter()
                .find(|i| i.container == c.id && i.index == 0)?;
            Some(Binary {
                id: c.id,
                offset,
                inner: first.relative_offset,
                size: first.size,
            })
        })
        .collect();
    let dropped: Vec<(usize, u64)> = dropped
        .iter()
        .map(|&c| {
            (
                c,
                report.containers.get(c).and_then(|c| c.offset).unwrap_or(0),
            )
        })
        .collect();
    openmp::registrations(data, report.host, &binaries, &dropped)
}

/// The bytes `plan`'s registrations put in the file when nothing moves,
/// by file offset; refused when two of them, or one and an edit, share a
/// byte.
pub(super) fn patches_in_place(plan: &Plan) -> Result<Vec<(u64, Vec<u8>)>> {
    let mut all = Vec::new();
    for r in &plan.registrations {
        all.extend(r.patches(&|v| Ok(v)).map_err(Error::unsupported)?);
    }
    all.sort_unstable();
    all.dedup();
    let mut ranges: Vec<(u64, u64)> = all
        .iter()
        .map(|(at, b)| (*at, at.saturating_add(len64(b))))
        .chain(
            plan.edits
                .iter()
                .map(|e| (e.offset, e.offset.saturating_add(e.size))),
        )
        .collect();
    ranges.sort_unstable();
    if let Some(w) = ranges.windows(2).find(|w| w[1].0 < w[0].1) {
        return Err(Error::unsupported(format!(
            "the OpenMP descriptor's rewrite at {:#x} overlaps other bytes pruning \
             rewrites: nothing is pruned",
            w[1].0
        )));
    }
    Ok(all)
}

/// The edit that drops OffloadBinary `c` whole when its image goes
/// (its bytes cut out of the section or file).
pub(super) fn whole_binary_edit(
    data: &[u8],
    report: &Report,
    verdicts: &[Verdict],
    c: &Container,
) -> Result<Option<Edit>> {
    if stays_of(report, verdicts, c.id).is_none() {
        return Ok(None);
    }
    let (Some(offset), None) = (c.offset, c.parent) else {
        return Err(refuse(
            c.kind,
            c.offset,
            "it lies inside another image or compressed data",
        ));
    };
    if offset
        .checked_add(c.size)
        .is_none_or(|e| e > data.len() as u64)
    {
        return Err(Error::invalid("file", "a container runs past its end"));
    }
    let images = report.images.iter().filter(|i| i.container == c.id).count();
    Ok(Some(Edit {
        container: c.id,
        offset,
        size: c.size,
        pruned: Pruned {
            layout: crate::layout::Layout::default(),
            ranges: Vec::new(),
            kept: 0,
            dropped: images,
        },
        built: None,
    }))
}

/// The edit of CCOB `c` when the bundle it holds loses entries, and that
/// bundle's container id; `None` when every entry stays.
pub(super) fn ccob_edit(
    data: &[u8],
    report: &Report,
    verdicts: &[Verdict],
    c: &Container,
    opts: &Options,
) -> Result<Option<(Edit, usize)>> {
    let Some(inner) = report
        .containers
        .iter()
        .find(|k| k.parent == Some(Parent::Container(c.id)) && k.kind == ContainerKind::Bundle)
    else {
        return Ok(None);
    };
    let Some(stays) = stays_of(report, verdicts, inner.id) else {
        return Ok(None);
    };
    let (offset, bytes) = container_bytes(data, c)?;
    let (pruned, built) = containers::ccob(bytes, &stays, opts.threads())?;
    if pruned.layout.size > c.size {
        return Err(refuse(
            c.kind,
            c.offset,
            "compressed again, it would be larger than it is",
        ));
    }
    Ok(Some((
        Edit {
            container: c.id,
            offset,
            size: c.size,
            pruned,
            built: Some(built),
        },
        inner.id,
    )))
}

/// A container that cannot be pruned here.
fn refuse(kind: ContainerKind, at: Option<u64>, why: &str) -> Error {
    let at = at.map_or(String::new(), |o| format!(" at {o:#x}"));
    Error::usage(format!(
        "the {}{at} would lose images, but {why}",
        kind.name()
    ))
}

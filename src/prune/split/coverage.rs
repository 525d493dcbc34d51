//! What a split serves: for each device target the input serves, each
//! image group and each per-GPU file, the labels of the outputs that hold
//! it (the lists of the report).

use super::report::{Coverage, Served};
use super::targets::Held;
use crate::prune::path::PathReport;
use crate::prune::{ImageGroup, Selection};
use crate::scan::rule::Rule;

/// The image groups each of `reps` kept, as [`coverage`] takes them.
pub(super) fn kept_of(reps: &[PathReport]) -> Vec<&[ImageGroup]> {
    reps.iter().map(|r| r.kept.as_slice()).collect()
}

/// For each device target `held`, the groups whose output a device of it
/// loads something of; for each image group, the groups that keep it; for
/// each per-GPU file (named in `companions`), the groups whose rules keep
/// it.
pub(super) fn coverage(
    held: &Held,
    labels: &[String],
    kept: &[&[ImageGroup]],
    companions: &[(String, crate::companion::Gpu)],
    sels: &[Selection],
) -> Coverage {
    // What each group's output holds.
    let outputs: Vec<Held> = kept
        .iter()
        .zip(sels)
        .map(|(r, s)| {
            let kept = companions
                .iter()
                .filter(|(n, _)| crate::prune::companion::dropped(s.by(), n).is_none())
                .map(|(_, g)| g.clone());
            Held::of(r.iter(), kept)
        })
        .collect();
    let targets = held
        .targets()
        .into_iter()
        .map(|t| {
            let device = Rule::parse(&t).ok();
            let outputs = outputs
                .iter()
                .zip(labels)
                .filter(|(h, _)| device.as_ref().is_some_and(|d| h.served(d)))
                .map(|(_, l)| l.clone())
                .collect();
            Served { what: t, outputs }
        })
        .collect();
    let images = held
        .images
        .iter()
        .map(|(t, k)| Served {
            what: format!("{t} {k}"),
            outputs: kept
                .iter()
                .zip(labels)
                .filter(|(r, _)| r.iter().any(|g| g.target == *t && g.kind == *k))
                .map(|(_, l)| l.clone())
                .collect(),
        })
        .collect();
    let files = companions
        .iter()
        .map(|(n, _)| Served {
            what: n.clone(),
            outputs: sels
                .iter()
                .zip(labels)
                .filter(|(s, _)| crate::prune::companion::dropped(s.by(), n).is_none())
                .map(|(_, l)| l.clone())
                .collect(),
        })
        .collect();
    Coverage {
        targets,
        images,
        files,
    }
}

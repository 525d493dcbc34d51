//! The text report and the JSON document (schema `offload-kit/prune/1`)
//! of `offload-kit prune`, from the [`Run`] that `prune::summary` sorts
//! out of a run's entries: a few lines per file pruned (or that would be),
//! then the files not pruned or left as they are, the records and
//! packages touched, and the total.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use super::{RawNames, print_line};
use crate::prune::summary::{Left, NotPruned, Owner, RecordLine, Run, Total};
use crate::prune::{PackageBytes, PathReport};

/// Writes the `prune --json` document of `run` (a dry run when
/// `dry_run`), each name not in UTF-8 followed by its bytes (`names`).
pub(crate) fn write_json(
    out: &mut impl Write,
    run: &Run,
    dry_run: bool,
    names: &RawNames,
) -> Result<()> {
    #[derive(Serialize)]
    struct Doc<'a> {
        schema: &'static str,
        dry_run: bool,
        files: &'a [PathReport],
        not_pruned: &'a [NotPruned],
        skipped: &'a [Left],
        #[serde(skip_serializing_if = "<[RecordLine]>::is_empty")]
        records: &'a [RecordLine],
        #[serde(skip_serializing_if = "<[Owner]>::is_empty")]
        dpkg_packages: &'a [Owner],
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        directories_removed: &'a [String],
        total: &'a Total,
    }
    let doc = Doc {
        schema: "offload-kit/prune/1",
        dry_run,
        files: &run.files,
        not_pruned: &run.not_pruned,
        skipped: &run.skipped,
        records: &run.records,
        dpkg_packages: &run.owners,
        directories_removed: &run.directories_removed,
        total: &run.total,
    };
    super::write_json(out, &doc, names)
}

/// Prints the text report of `run` (a dry run when `dry_run`; hard links
/// rewritten through when `keep_links`): a few lines per file, then what
/// was not pruned or was left, and the total when directories were
/// `walked`.
pub(crate) fn print_text(
    out: &mut impl Write,
    run: &Run,
    dry_run: bool,
    keep_links: bool,
    walked: bool,
) -> Result<()> {
    for r in &run.files {
        print_file(out, r, dry_run, keep_links)?;
    }
    for n in run.not_pruned.iter().filter(|n| n.refused && !n.named) {
        print_line(out, &format!("not pruned: {}", n.error))?;
    }
    for l in &run.skipped {
        print_line(out, &format!("{}: {}", l.path, l.text))?;
    }
    for r in &run.records {
        print_line(out, &r.text(dry_run))?;
    }
    for o in &run.owners {
        print_line(out, &o.text(dry_run))?;
    }
    for d in &run.directories_removed {
        let verb = if dry_run {
            "would be removed"
        } else {
            "removed"
        };
        print_line(out, &format!("{d}/: directory {verb}: the run emptied it"))?;
    }
    if walked {
        print_line(out, &run.total.text(dry_run))?;
    }
    Ok(())
}

/// What was done to the file `r` reports, in a few words.
fn what_was_done(r: &PathReport, dry_run: bool) -> String {
    let verb = if dry_run { "would free" } else { "freed" };
    if r.removed.len() == 1 && r.removed[0].path == r.path && r.bytes_after == 0 {
        let removed = if dry_run {
            "would be removed"
        } else {
            "removed"
        };
        let why = r.removed[0]
            .why
            .as_deref()
            .unwrap_or("device code alone that the rules drop all of");
        return format!("{removed}: {why}, {verb} {} bytes", r.freed);
    }
    let mut parts = Vec::new();
    if r.containers_rewritten > 0 {
        parts.push(format!("{} container(s) rewritten", r.containers_rewritten));
    }
    if !r.removed.is_empty() {
        let removed = if dry_run {
            "would be removed"
        } else {
            "removed"
        };
        parts.push(format!("{} file(s) {removed}", r.removed.len()));
    }
    if parts.is_empty() {
        return match r.members_refused.len() {
            0 => "nothing to remove".to_string(),
            n => format!("nothing pruned: {n} file(s) in it refused, left as they were (below)"),
        };
    }
    let done = parts.join(", ");
    match r.package_bytes {
        None => format!("{done}, {verb} {} bytes", r.freed),
        Some(p) => format!(
            "{done}, {verb} {} bytes installed; {}",
            r.freed,
            package_line(p)
        ),
    }
}

/// What a package's own file lost or gained, in words.
fn package_line(p: PackageBytes) -> String {
    match p {
        PackageBytes::Unknown => {
            "the package's own size is known once written (compression decides it)".into()
        }
        PackageBytes::Freed(n) => format!("the package is {n} bytes smaller"),
        PackageBytes::Grew(n) => format!("the package grew by {n} bytes, compressed again"),
    }
}

/// The lines about the records of a package's files: a conda package's,
/// and each row found wrong and trusted (`--trust-bytes`).
fn print_records(out: &mut impl Write, r: &PathReport, dry_run: bool) -> Result<()> {
    if let Some(c) = &r.conda {
        print_line(out, &c.line(dry_run))?;
    }
    for w in &r.records_wrong {
        print_line(
            out,
            &format!("  record wrong, bytes trusted (--trust-bytes): {w}"),
        )?;
    }
    Ok(())
}

/// The line naming the signatures an RPM or a SIF lost, if it lost any.
/// (In a dry run, those it would lose.)
fn print_signatures(out: &mut impl Write, r: &PathReport, dry_run: bool) -> Result<()> {
    if r.signatures_removed.is_empty() {
        return Ok(());
    }
    let what = r.signatures_removed.join(", ");
    let gone = if dry_run {
        "would be removed"
    } else {
        "removed"
    };
    let how = match r.signatures_removed.iter().any(|s| s.starts_with("SIF")) {
        true => "apptainer sign",
        false => "rpmsign --addsign",
    };
    print_line(
        out,
        &format!("  signatures {gone} ({what}): they would not verify; sign it again with {how}"),
    )?;
    Ok(())
}

/// The lines of the file `r` reports: what was done, the files removed,
/// the records, the images and containers, the sizes, and the groups of
/// images kept and dropped.
fn print_file(out: &mut impl Write, r: &PathReport, dry_run: bool, keep_links: bool) -> Result<()> {
    print_line(out, &format!("{}: {}", r.path, what_was_done(r, dry_run)))?;
    let removed = if dry_run {
        "would be removed"
    } else {
        "removed"
    };
    for f in r.removed.iter().filter(|f| f.path != r.path) {
        let why = f
            .why
            .as_deref()
            .map_or_else(String::new, |w| format!(": {w}"));
        print_line(
            out,
            &format!("  {removed}  {} ({} bytes){why}", f.path, f.bytes),
        )?;
    }
    print_records(out, r, dry_run)?;
    for line in r.images.iter().flat_map(|i| i.lines(dry_run)) {
        print_line(out, &line)?;
    }
    if r.emptied > 0 {
        print_line(
            out,
            &format!(
                "  {} container(s) emptied: no device of the rules loads any of their images",
                r.emptied
            ),
        )?;
    }
    if let (Some(o), Some(d)) = (&r.output, r.disk_after) {
        print_line(
            out,
            &format!(
                "  {o}: {} bytes ({} before); on disk {} bytes ({} before)",
                r.bytes_after, r.bytes_before, d, r.disk_before
            ),
        )?;
    }
    if let Some(s) = &r.shrunk {
        let seg = |p: crate::prune::Segment| {
            format!(
                "offset {:#x} address {:#x} size {:#x}",
                p.offset, p.address, p.size
            )
        };
        print_line(
            out,
            &format!(
                "  {} packed from {} to {} bytes; file bytes {:#x}..{:#x} removed",
                s.section, s.section_size.0, s.section_size.1, s.removed.0, s.removed.1
            ),
        )?;
        print_line(out, &format!("  {} {}", s.mapping, seg(s.segment)))?;
        for p in &s.segments {
            print_line(out, &format!("    becomes {}", seg(*p)))?;
        }
    }
    if let Some(n) = r.signature_removed {
        print_line(
            out,
            &format!("  Authenticode signature removed ({n} bytes of certificates)"),
        )?;
    }
    print_signatures(out, r, dry_run)?;
    if let Some(why) = &r.not_shrunk {
        print_line(out, &format!("  rewritten in place, not shrunk: {why}"))?;
    }
    if r.hard_links > 1 && r.output.as_deref() == Some(r.path.as_str()) {
        print_line(
            out,
            &format!(
                "  it had {} hard links: {}",
                r.hard_links,
                if keep_links {
                    "rewritten through them, every link sees the pruned file"
                } else {
                    "the others keep the old file (--keep-hard-links rewrites through them)"
                }
            ),
        )?;
    }
    for (label, gs) in [("kept", &r.kept), ("dropped", &r.dropped)] {
        for g in gs {
            let why = g
                .why
                .as_ref()
                .map_or_else(String::new, |w| format!("  ({w})"));
            print_line(
                out,
                &format!(
                    "  {label:<8} {:<28} {:<6} {:>5} image(s) {:>14} bytes{why}",
                    g.target, g.kind, g.images, g.bytes
                ),
            )?;
        }
    }
    Ok(())
}

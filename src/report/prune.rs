//! The Markdown report of `prune --markdown` (for a CI job summary) and of
//! [`tree_markdown`] for a library user: the totals, the files pruned and
//! their image groups, then what was not pruned, from the [`Run`] that
//! `prune::summary` sorts out of a run's entries.

use std::fmt::Write as _;

use crate::prune::summary::{Run, decimal};
use crate::prune::{PathOptions, TreeEntry};
use crate::text::{Cell, Table, num};

/// The Markdown report of a run ([`Run::of`]; a dry run when `dry_run`):
/// the totals, a row per file pruned (or that would be), a row per image
/// group kept and dropped, then the files not pruned and those left as
/// they are. The numbers are those of `prune --json`.
pub(crate) fn markdown(run: &Run, dry_run: bool) -> String {
    let mut out = String::new();
    let title = if dry_run { "prune --dry-run" } else { "prune" };
    let _ = writeln!(out, "## offload-kit {title}\n");
    let t = &run.total;
    let freed = if dry_run { "Would free" } else { "Freed" };
    let mut total = Table::new(&[
        freed,
        "Files>",
        "Files removed>",
        "Bytes removed>",
        "Found>",
        "Without device code>",
        "Refused>",
        "Failed>",
    ]);
    let mut cells = vec![Cell::Raw(format!(
        "{} bytes ({})",
        t.freed,
        decimal(t.freed)
    ))];
    cells.extend([t.files, t.files_removed].map(num));
    cells.push(num(t.bytes_removed));
    cells.extend([t.found, t.without_device_code, t.refused, t.failed].map(num));
    total.row(cells);
    total.write(&mut out);
    let mut files = Table::new(&[
        "File",
        "Containers rewritten>",
        "Files removed>",
        "Bytes before>",
        "Bytes after>",
        "Freed>",
    ]);
    let mut groups = Table::new(&[
        "File", "Images", "Target", "Kind", "Count>", "Bytes>", "Why",
    ]);
    for r in &run.files {
        files.row(vec![
            Cell::Text(&r.path),
            num(r.containers_rewritten),
            num(r.removed.len()),
            num(r.bytes_before),
            num(r.bytes_after),
            num(r.freed),
        ]);
        for (label, gs) in [("kept", &r.kept), ("dropped", &r.dropped)] {
            for g in gs {
                groups.row(vec![
                    Cell::Text(&r.path),
                    Cell::Raw(label.to_string()),
                    Cell::Text(&g.target),
                    Cell::Text(&g.kind),
                    num(g.images),
                    num(g.bytes),
                    Cell::Text(g.why.as_deref().unwrap_or("")),
                ]);
            }
        }
    }
    if !files.is_empty() {
        out.push_str("### Files\n\n");
        files.write(&mut out);
    }
    if !groups.is_empty() {
        out.push_str("### Device images\n\n");
        groups.write(&mut out);
    }
    left_table(run, dry_run, &mut out);
    out
}

/// The files not pruned, left as they are, and the records, packages and
/// directories touched, as a table under a heading (none when empty).
fn left_table(run: &Run, dry_run: bool, out: &mut String) {
    let mut left = Table::new(&["File", "Status", "Why"]);
    for n in &run.not_pruned {
        let status = if n.refused { "refused" } else { "failed" };
        left.row(vec![
            Cell::Text(&n.path),
            Cell::Raw(status.into()),
            Cell::Text(&n.error),
        ]);
    }
    for l in &run.skipped {
        left.row(vec![
            Cell::Text(&l.path),
            Cell::Raw(l.why.into()),
            Cell::Text(&l.text),
        ]);
    }
    for r in &run.records {
        left.row(vec![
            Cell::Text(&r.path),
            Cell::Raw("record".into()),
            Cell::Text(&r.text(dry_run)),
        ]);
    }
    for o in &run.owners {
        left.row(vec![
            Cell::Text(&o.package),
            Cell::Raw("dpkg".into()),
            Cell::Text(&o.text(dry_run)),
        ]);
    }
    for d in &run.directories_removed {
        let verb = if dry_run {
            "would be removed"
        } else {
            "removed"
        };
        let why = format!("directory {verb}: the run emptied it");
        left.row(vec![
            Cell::Text(d),
            Cell::Raw("directory".into()),
            Cell::Text(&why),
        ]);
    }
    if !left.is_empty() {
        out.push_str("### Not pruned, and left as they are\n\n");
        left.write(out);
    }
}

/// The Markdown report of what [`prune_tree`](crate::prune::prune_tree) returned
/// (`entries`) run with `opts`, as `offload-kit prune --markdown` prints
/// it: the totals (bytes freed, files changed and removed, found, without
/// device code, refused, failed), a row per file pruned (or that would be,
/// with [`Destination::DryRun`](crate::prune::Destination::DryRun)) and per group
/// of images kept and dropped, then the files not pruned and why (a hard
/// link's text says whether it was pruned through, as
/// [`PathOptions::keep_hard_links`](crate::prune::PathOptions::keep_hard_links)
/// in place does).
pub fn tree_markdown(entries: Vec<TreeEntry>, opts: &PathOptions) -> String {
    let dry_run = opts.dry_run();
    let through_links = opts.in_place() && opts.keep_hard_links;
    markdown(&Run::of(entries, dry_run, through_links), dry_run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prune::summary::NotPruned;

    #[test]
    fn markdown_rows_and_totals() {
        let mut run = Run::default();
        run.total.found = 3;
        run.total.refused = 1;
        run.not_pruned.push(NotPruned {
            path: "a|b.so".into(),
            refused: true,
            named: false,
            error: "'a|b.so': refused".into(),
        });
        let text = markdown(&run, true);
        assert!(
            text.starts_with("## offload-kit prune --dry-run\n"),
            "{text}"
        );
        assert!(
            text.contains("| 0 bytes (0 B) | 0 | 0 | 0 | 3 | 0 | 1 | 0 |"),
            "{text}"
        );
        assert!(
            text.contains("| a\\|b.so | refused | 'a\\|b.so': refused |"),
            "{text}"
        );
        crate::text::assert_tables_well_formed(&text);
        let mut opts = PathOptions::default();
        assert_eq!(
            tree_markdown(Vec::new(), &opts).lines().next(),
            Some("## offload-kit prune --dry-run")
        );
        opts.destination = crate::prune::Destination::InPlace;
        assert_eq!(
            tree_markdown(Vec::new(), &opts).lines().next(),
            Some("## offload-kit prune")
        );
    }
}

//! What a run of [`prune_tree`](super::prune_tree) did, sorted for the
//! reports: the files pruned, those not pruned and why, the files left as
//! they are, the records and packages touched, and the totals ([`Run`]);
//! `prune --json` serializes its parts, and the text and Markdown reports
//! (`crate::report`) print them.

use serde::Serialize;

use super::{PathReport, Skip, TreeEntry, TreeOutcome};

/// A file that could not be pruned, for the report.
#[derive(Serialize)]
pub(crate) struct NotPruned {
    pub(crate) path: String,
    /// Refused (of a kind or asking for a rewrite prune does not do), not
    /// failed.
    pub(crate) refused: bool,
    /// Named, not found in a directory.
    #[serde(skip)]
    pub(crate) named: bool,
    /// The message, naming the file.
    pub(crate) error: String,
}

/// A file found in a directory and left as it is, when the report names
/// it: another name of a file handled under its first, a thin archive's
/// member, a temporary file left by a killed run.
#[derive(Serialize)]
pub(crate) struct Left {
    pub(crate) path: String,
    /// `hard-link`, `again`, `thin-member` or `leftover`.
    pub(crate) why: &'static str,
    /// The file handled in its place (the first name, the thin archive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) of: Option<String>,
    #[serde(skip)]
    pub(crate) text: String,
}

/// A pip RECORD brought up to date, for the report.
#[derive(Serialize)]
pub(crate) struct RecordLine {
    pub(crate) path: String,
    /// Rows given a new hash and size.
    pub(crate) rows_rewritten: usize,
    /// Rows of files removed, taken out.
    pub(crate) rows_removed: usize,
}

impl RecordLine {
    /// Its line in a text report.
    pub(crate) fn text(&self, dry_run: bool) -> String {
        let verb = if dry_run {
            "would be updated"
        } else {
            "updated"
        };
        // A pip RECORD, or a conda package record (`conda-meta/*.json`).
        let what = match self.path.ends_with(".json") {
            true => "conda record",
            false => "RECORD",
        };
        format!(
            "{}: {what} {verb}: {} row(s) given new hashes and sizes, {} row(s) of removed \
             files taken out",
            self.path, self.rows_rewritten, self.rows_removed
        )
    }
}

/// An installed Debian package that lists files the run changed.
#[derive(Serialize)]
pub(crate) struct Owner {
    /// `NAME` or `NAME:ARCH`.
    pub(crate) package: String,
    /// The files, as found.
    pub(crate) files: Vec<String>,
}

impl Owner {
    /// Its line in a text report.
    pub(crate) fn text(&self, dry_run: bool) -> String {
        let verb = if dry_run { "would change" } else { "changed" };
        format!(
            "installed package {}: {} of its files {verb} (dpkg's database is not edited: \
             `dpkg --verify {}` lists them until the package is installed again)",
            self.package,
            self.files.len(),
            self.package
        )
    }
}

/// What a run did, in all.
#[derive(Serialize, Default)]
pub(crate) struct Total {
    /// Files with something removed (or that would have, in a dry run):
    /// rewritten, removed whole, or packages with files removed.
    pub(crate) files: usize,
    /// Files removed whole (that would be), those of packages included.
    pub(crate) files_removed: usize,
    /// Their bytes (before compression, for files of packages).
    pub(crate) bytes_removed: u64,
    /// Bytes freed (that would be), in all: each file's `freed` (for a
    /// wheel, bytes of its members before compression).
    pub(crate) freed: u64,
    /// The disk usage of the files with something removed, before.
    pub(crate) disk_before: u64,
    /// Their disk usage after; `None` in a dry run.
    pub(crate) disk_after: Option<u64>,
    /// Regular files found in the directories.
    pub(crate) found: usize,
    /// Of those, files with no device code: of no format prune reads, or
    /// read and holding none.
    pub(crate) without_device_code: usize,
    /// Symbolic links met in the directories, left as they are.
    pub(crate) symbolic_links: usize,
    /// Files refused (`not_pruned` with `refused`).
    pub(crate) refused: usize,
    /// Files that failed otherwise: unreadable, damaged, not written.
    pub(crate) failed: usize,
}

impl Total {
    /// The last line of a text report of a run over directories.
    pub(crate) fn text(&self, dry_run: bool) -> String {
        let verb = if dry_run { "would free" } else { "freed" };
        let mut line = format!(
            "total: {verb} {} bytes ({}) in {} file(s)",
            self.freed,
            decimal(self.freed),
            self.files,
        );
        if self.files_removed > 0 {
            let removed = if dry_run {
                "would be removed"
            } else {
                "removed"
            };
            line += &format!(
                " ({} file(s) {removed} whole: {} bytes, {})",
                self.files_removed,
                self.bytes_removed,
                decimal(self.bytes_removed)
            );
        }
        if let Some(after) = self.disk_after {
            line += &format!(
                ", which take {} on disk ({} before)",
                decimal(after),
                decimal(self.disk_before)
            );
        }
        line += &format!(
            "; {} file(s) found in the directories, {} without device code",
            self.found, self.without_device_code
        );
        if self.symbolic_links > 0 {
            line += &format!(
                "; {} symbolic link(s) left as they are",
                self.symbolic_links
            );
        }
        if self.refused + self.failed > 0 {
            line += &format!(
                "; {} file(s) not pruned ({} refused)",
                self.refused + self.failed,
                self.refused
            );
        }
        line
    }
}

/// `n` bytes in decimal units with one digit after the point (`9.8 GB`).
pub(crate) fn decimal(n: u64) -> String {
    const UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
    if n < 1000 {
        return format!("{n} B");
    }
    // Tenths of the unit, in integers: exact, with no float rounding.
    let (mut whole, mut unit) = (n, 0);
    while whole >= 1_000_000 && unit + 1 < UNITS.len() {
        whole /= 1000;
        unit += 1;
    }
    let tenths = (whole + 50) / 100;
    format!("{}.{} {}", tenths / 10, tenths % 10, UNITS[unit])
}

/// A run's entries sorted into what the report says.
#[derive(Default)]
pub(crate) struct Run {
    pub(crate) files: Vec<PathReport>,
    pub(crate) not_pruned: Vec<NotPruned>,
    pub(crate) skipped: Vec<Left>,
    pub(crate) records: Vec<RecordLine>,
    /// The installed packages owning files changed, by name.
    pub(crate) owners: Vec<Owner>,
    /// Directories the run emptied, removed (that would be).
    pub(crate) directories_removed: Vec<String>,
    pub(crate) total: Total,
    /// Error lines for standard error: every failure but the refusals of
    /// files found in directories.
    pub(crate) errors: Vec<String>,
}

impl Run {
    pub(crate) fn of(entries: Vec<TreeEntry>, dry_run: bool, through_links: bool) -> Run {
        let mut run = Run::default();
        run.total.disk_after = (!dry_run).then_some(0);
        let mut owners: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for e in entries {
            let path = crate::files::shown(&e.path).into_owned();
            if let Some(p) = e.dpkg_package {
                owners.entry(p).or_default().push(path.clone());
            }
            if !e.named && !matches!(e.outcome, TreeOutcome::Skipped(Skip::SymbolicLink)) {
                run.total.found += 1;
            }
            match e.outcome {
                TreeOutcome::Pruned(r) => {
                    // A package's files left as they were: refusals, as
                    // of files found in a directory.
                    for m in &r.members_refused {
                        run.total.refused += 1;
                        run.not_pruned.push(NotPruned {
                            path: path.clone(),
                            refused: true,
                            named: false,
                            error: m.clone(),
                        });
                    }
                    run.total.freed = run.total.freed.saturating_add(r.freed);
                    run.total.files_removed += r.removed.len();
                    for f in &r.removed {
                        run.total.bytes_removed = run.total.bytes_removed.saturating_add(f.bytes);
                    }
                    let changed = r.containers_rewritten > 0 || !r.removed.is_empty();
                    if changed {
                        run.total.files += 1;
                        run.total.disk_before = run.total.disk_before.saturating_add(r.disk_before);
                        if let (Some(t), Some(d)) = (&mut run.total.disk_after, r.disk_after) {
                            *t = t.saturating_add(d);
                        }
                    }
                    // A package's files refused are named, never counted
                    // as without device code.
                    let device_code = !(r.kept.is_empty()
                        && r.dropped.is_empty()
                        && r.members_refused.is_empty());
                    if e.named || device_code || changed {
                        run.files.push(*r);
                    } else {
                        run.total.without_device_code += 1;
                    }
                }
                TreeOutcome::Failed(err) => {
                    let refused = err.refused();
                    let text = crate::text::error_line(&err);
                    match refused {
                        true => run.total.refused += 1,
                        false => run.total.failed += 1,
                    }
                    if e.named || !refused {
                        run.errors.push(text.clone());
                    }
                    run.not_pruned.push(NotPruned {
                        path,
                        refused,
                        named: e.named,
                        error: text,
                    });
                }
                TreeOutcome::Skipped(why) => run.skip(path, why, dry_run, through_links),
                TreeOutcome::DirectoryRemoved => run.directories_removed.push(path),
                TreeOutcome::Record {
                    rows_rewritten,
                    rows_removed,
                } => {
                    run.total.without_device_code += 1;
                    run.records.push(RecordLine {
                        path,
                        rows_rewritten,
                        rows_removed,
                    });
                }
            }
        }
        run.owners = owners
            .into_iter()
            .map(|(package, files)| Owner { package, files })
            .collect();
        run
    }

    /// Notes a path left as it is.
    pub(crate) fn skip(&mut self, path: String, why: Skip, dry_run: bool, through_links: bool) {
        let (why, of, text) = match why {
            Skip::SymbolicLink => {
                self.total.symbolic_links += 1;
                return;
            }
            Skip::NoKnownFormat | Skip::NotRegular => {
                self.total.without_device_code += 1;
                return;
            }
            Skip::HardLink(first) => {
                let first = crate::files::shown(&first).into_owned();
                let text = match (dry_run, through_links) {
                    (true, _) => format!("another name (hard link) of {first}, pruned there"),
                    (false, true) => {
                        format!("another name (hard link) of {first}, pruned through it")
                    }
                    (false, false) => format!(
                        "another name (hard link) of {first}: where that was pruned it became a \
                         new file, and this name keeps the old one (--keep-hard-links prunes \
                         through every name)"
                    ),
                };
                ("hard-link", Some(first), text)
            }
            Skip::Again => (
                "again",
                None,
                "found again (a directory given twice, or inside another): handled once"
                    .to_string(),
            ),
            Skip::ThinMember(archive) => {
                let archive = crate::files::shown(&archive).into_owned();
                let text = format!("a member of the thin archive {archive}, pruned with it");
                ("thin-member", Some(archive), text)
            }
            Skip::Leftover => (
                "leftover",
                None,
                "a temporary file an interrupted prune left (a whole copy of the old or the \
                 new file beside it): not pruned; remove it"
                    .to_string(),
            ),
        };
        self.skipped.push(Left {
            path,
            why,
            of,
            text,
        });
    }

    /// 2 when a file could not be read or written, held damaged data, or
    /// was named and refused; 1 when only files found in directories (or
    /// in packages) were refused; 0 otherwise.
    pub(crate) fn exit_code(&self) -> u8 {
        if !self.errors.is_empty() {
            2
        } else if self.total.refused > 0 {
            1
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_units() {
        assert_eq!(decimal(999), "999 B");
        assert_eq!(decimal(9_849_999_999), "9.8 GB");
    }
}

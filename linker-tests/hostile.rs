//! Hostile inputs that must neither hang, nor exhaust memory, nor crash:
//! FIFOs, devices, thin archives naming them (issue #11). Every command
//! runs under a time limit ([`run_within`]), so a regression fails here
//! instead of hanging CI.
//!
//! The trials are grouped: `special.rs` special files, thin archive members
//! and escapes, `bombs.rs` sizes and counts meant to exhaust memory or
//! time, `outputs.rs` temporary outputs under signals, renamed
//! directories and write errors, `round4.rs` and `round5_writers.rs` the
//! rounds of issues #41 and #57.

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use crate::util::{ours, ours_as, run_within, tempdir};

test_files! {
    special,
    bombs,
    outputs,
    round4,
    round5_paths,
    round5_writes,
    round5_writers,
    round6_meta,
    round6_tree,
    round6_budget,
    round6_dropins,
    round6_reports,
    round6_unread,
    round6_records,
    round6_dupes,
}

/// Seconds any command gets before it counts as hung.
const LIMIT: u64 = 20;

pub fn tests() -> Vec<Trial> {
    file_trials()
}

/// Whether process `pid` is writing an output in `dir`: it holds a file
/// there open that has no name yet (`O_TMPFILE`, shown as `DIR/#INODE
/// (deleted)`) or a `.offload-kit-*` temporary.
fn writing_in(pid: u32, dir: &Path) -> bool {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return false;
    };
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .any(|target| {
            target.parent() == Some(dir.as_path())
                && target.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with('#') || n.starts_with(".offload-kit-")
                })
        })
}

/// The `.offload-kit-*` files in `dir` (temporaries left behind).
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".offload-kit-"))
        .collect()
}

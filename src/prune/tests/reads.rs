//! A command reads each file's format once (issue #58): the reads of
//! [`crate::host::file_kind`] on this thread, counted for `inspect`'s scan
//! of a file, the prune of a file, and the prune of a tree, whose walk
//! reads a COFF object's format from its first bytes and hands it on.

use std::path::Path;

use super::{Ptx, cuda_fatbin, keep, linked};
use crate::host::KIND_READS;
use crate::prune::{Destination, PathOptions, TreeOutcome, prune_path, prune_tree};
use crate::scan;

/// How many times `f` read a file's format.
fn reads<T>(f: impl FnOnce() -> T) -> (usize, T) {
    KIND_READS.with(|n| n.set(0));
    let t = f();
    (KIND_READS.with(std::cell::Cell::get), t)
}

/// A shared library with a HIP bundle, a COFF object with a CUDA fatbin,
/// and a text file, in `dir`.
fn files(dir: &Path) -> [std::path::PathBuf; 3] {
    let paths = [
        dir.join("libk.so"),
        dir.join("k.obj"),
        dir.join("notes.txt"),
    ];
    let lib = linked::library(&linked::hip_bundle(4096));
    let coff = crate::tests::pe::coff_object(&[cuda_fatbin()], false);
    std::fs::write(&paths[0], lib).unwrap();
    std::fs::write(&paths[1], coff).unwrap();
    std::fs::write(&paths[2], "no device code here\n").unwrap();
    paths
}

#[test]
fn each_file_s_format_is_read_once_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let [lib, coff, text] = files(dir.path());
    let sel = keep(&["gfx90a", "sm_80"], Ptx::Newest);
    let opts = PathOptions {
        destination: Destination::DryRun,
        ..PathOptions::default()
    };
    for path in [&lib, &coff, &text] {
        let src = crate::inputs::Source::new(path.clone());
        let (n, scanned) =
            reads(|| crate::inputs::scan_file(&src, &scan::Options::default(), &mut scan::NoVisit));
        assert!(scanned.iter().all(|s| s.result.is_ok()), "{path:?}");
        assert_eq!(n, 1, "inspect {path:?}");
    }
    for path in [&lib, &coff] {
        let (n, pruned) = reads(|| prune_path(path, &sel, &opts));
        assert!(pruned.is_ok(), "{path:?}: {pruned:?}");
        assert_eq!(n, 1, "prune {path:?}");
    }
    let (n, entries) =
        reads(|| prune_tree(&[dir.path().to_path_buf()], &sel, &opts, &mut |_, _| {}));
    let pruned = entries
        .iter()
        .filter(|e| matches!(e.outcome, TreeOutcome::Pruned(_)))
        .count();
    assert_eq!((entries.len(), pruned), (3, 2), "{entries:?}");
    assert_eq!(n, 3, "prune of the tree");
}

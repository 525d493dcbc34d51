//! What `prune --in-place` keeps of a file's metadata that the run's own
//! reads could change: the access time. A file's first bytes are read to
//! tell its format before it is pruned, and under `relatime` (an access
//! time older than the modification time, or than a day) that read sets
//! it; the pruned file must get the access time from before the run.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Ptx, hip_bundle, keep};
use crate::prune::{Destination, PathOptions, TreeOutcome, prune_tree};

/// An access time long past (2001), which a read under `relatime` or
/// `strictatime` replaces.
fn old() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_000_000_000)
}

/// Gives `path` the access time [`old`] (as `touch -a -d` does), its
/// modification time left.
fn set_old_atime(path: &Path) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_times(std::fs::FileTimes::new().set_accessed(old()))
        .unwrap();
}

/// Whether a read of a file with an old access time sets it on this file
/// system (not under `noatime`): else the trial proves nothing.
fn reads_set_atime(dir: &Path) -> bool {
    let p = dir.join("probe");
    std::fs::write(&p, b"probe").unwrap();
    set_old_atime(&p);
    std::fs::read(&p).unwrap();
    std::fs::metadata(&p).unwrap().accessed().unwrap() != old()
}

/// `--in-place` of a directory holding a bundle, and of a bundle named,
/// each with an access time of 2001: each is pruned and keeps that access
/// time, not the one of prune's first read.
#[test]
fn the_access_time_kept_is_the_one_from_before_the_run() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path();
    if !reads_set_atime(t) {
        eprintln!("reads leave access times here (noatime): nothing to check");
        return;
    }
    std::fs::create_dir(t.join("tree")).unwrap();
    for name in ["tree/k.hipfb", "named.hipfb"] {
        std::fs::write(t.join(name), hip_bundle()).unwrap();
        set_old_atime(&t.join(name));
    }
    let opts = PathOptions {
        destination: Destination::InPlace,
        ..PathOptions::default()
    };
    let sel = keep(&["gfx90a"], Ptx::Newest);
    let inputs = [t.join("tree"), t.join("named.hipfb")];
    let before: Vec<u64> = ["tree/k.hipfb", "named.hipfb"]
        .iter()
        .map(|n| std::fs::metadata(t.join(n)).unwrap().ino())
        .collect();
    let entries = prune_tree(&inputs, &sel, &opts, &mut |_, _| {});
    for (name, ino) in ["tree/k.hipfb", "named.hipfb"].iter().zip(before) {
        let e = entries.iter().find(|e| e.path.ends_with(name)).unwrap();
        assert!(
            matches!(&e.outcome, TreeOutcome::Pruned(r) if r.freed > 0),
            "{name}: {:?}",
            e.outcome
        );
        let m = std::fs::metadata(t.join(name)).unwrap();
        assert_ne!(m.ino(), ino, "{name} was not replaced");
        assert_eq!(m.accessed().unwrap(), old(), "{name}: access time");
    }
}

//! [`prune_tree`] in place raced by a program that swaps a file, or a
//! directory, of the tree for a symbolic link out of it: before the walk,
//! after it, as each file is about to be opened, and between its open and
//! its commit (the hook [`race`](crate::prune::race) calls at each step).
//! Whenever the swap happens, every file outside the tree keeps its bytes
//! and its inode, none is removed, and the file swapped is refused by its
//! name (a link seen by the walk is left as one); the other files of the
//! tree are pruned as usual.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{Ptx, hip_bundle, keep};
use crate::prune::race::{self, Phase};
use crate::prune::{Destination, PathErrorKind, PathOptions, Skip, TreeOutcome, prune_tree};

/// The per-GPU file (a gfx906 file, which keeping gfx90a drops by name).
const PER_GPU: &str = "lib/library/TensileLibrary_lazy_gfx906.dat";

/// The tree under `t/tree`, and files of the same names under
/// `t/outside`, the targets of the links swapped in.
fn make(t: &Path) {
    for (dir, rel) in [
        ("tree", "a.hipfb"),
        ("tree", "b.hipfb"),
        ("tree", "sub/k.hipfb"),
        ("outside", "a.hipfb"),
        ("outside", "sub/k.hipfb"),
    ] {
        let p = t.join(dir).join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, hip_bundle()).unwrap();
    }
    for dir in ["tree", "outside"] {
        let p = t.join(dir).join(PER_GPU);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "per-GPU data\n").unwrap();
    }
}

/// Every path under `dir` with its bytes and inode.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u64)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let m = e.metadata().unwrap();
            (
                e.path().to_path_buf(),
                (std::fs::read(e.path()).unwrap(), m.ino()),
            )
        })
        .collect()
}

/// What is swapped: the file `a.hipfb`, the directory `sub`, or the
/// directory of the per-GPU file; each for a link to its namesake
/// outside.
#[derive(Debug, Clone, Copy)]
enum Swap {
    File,
    Dir,
    PerGpuDir,
}

impl Swap {
    /// The path in the tree swapped for a link, and the file of the tree
    /// whose handling the swap races.
    fn paths(self) -> (&'static str, &'static str) {
        match self {
            Swap::File => ("a.hipfb", "a.hipfb"),
            Swap::Dir => ("sub", "sub/k.hipfb"),
            Swap::PerGpuDir => ("lib/library", PER_GPU),
        }
    }

    /// Swaps it: the original moved aside (out of both trees), a link to
    /// its namesake outside put in its place.
    fn run(self, t: &Path) {
        let (swapped, _) = self.paths();
        let (at, to) = (
            t.join("tree").join(swapped),
            t.join("outside").join(swapped),
        );
        std::fs::rename(&at, t.join("aside")).unwrap();
        std::os::unix::fs::symlink(&to, &at).unwrap();
    }
}

/// `prune --in-place t/tree` (keeping gfx90a) with `swap` made at
/// `phase` (`None`: before the walk); checks that nothing outside
/// changed and that the file raced was not pruned.
fn race_at(swap: Swap, phase: Option<Phase>) {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().to_path_buf();
    make(&t);
    let outside = snapshot(&t.join("outside"));
    let (swapped, raced) = swap.paths();
    let raced_path = t.join("tree").join(raced);
    if phase.is_none() {
        swap.run(&t);
    }
    let opts = PathOptions {
        destination: Destination::InPlace,
        ..PathOptions::default()
    };
    let sel = keep(&["gfx90a"], Ptx::Newest);
    let (hook_t, hook_path) = (t.clone(), raced_path.clone());
    let mut done = false;
    let hook = move |p: Phase, path: &Path| {
        let now = match p {
            Phase::Walked => true,
            Phase::Open | Phase::Commit => path == hook_path,
        };
        if !done && Some(p) == phase && now {
            swap.run(&hook_t);
            done = true;
        }
    };
    let root = t.join("tree");
    let entries = race::with(hook, || {
        prune_tree(std::slice::from_ref(&root), &sel, &opts, &mut |_, _| {})
    });
    let case = format!("{swap:?} at {phase:?}");
    assert_eq!(
        snapshot(&t.join("outside")),
        outside,
        "{case}: a file outside changed"
    );
    let swapped_path = t.join("tree").join(swapped);
    for e in entries.iter().filter(|e| e.path.starts_with(&swapped_path)) {
        match (&e.outcome, phase) {
            (TreeOutcome::Skipped(Skip::SymbolicLink), None) => {}
            (TreeOutcome::Failed(err), Some(_)) => {
                assert_eq!(err.kind(), PathErrorKind::Refused, "{case}: {err}");
            }
            (o, _) => panic!("{case}: {} {o:?}", e.path.display()),
        }
    }
    if phase.is_some() {
        assert!(
            entries.iter().any(|e| e.path == raced_path),
            "{case}: the file raced is not reported"
        );
    }
    // The rest of the tree is pruned as usual.
    let b = entries
        .iter()
        .find(|e| e.path.ends_with("b.hipfb"))
        .unwrap();
    assert!(
        matches!(&b.outcome, TreeOutcome::Pruned(r) if r.freed > 0),
        "{case}"
    );
}

const PHASES: [Option<Phase>; 4] = [
    None,
    Some(Phase::Walked),
    Some(Phase::Open),
    Some(Phase::Commit),
];

#[test]
fn a_file_swapped_for_a_link_leaves_its_target_alone() {
    for phase in PHASES {
        race_at(Swap::File, phase);
    }
}

#[test]
fn a_directory_swapped_for_a_link_leaves_the_files_it_leads_to_alone() {
    for phase in PHASES {
        race_at(Swap::Dir, phase);
    }
}

#[test]
fn a_per_gpu_files_directory_swapped_for_a_link_removes_nothing_outside() {
    for phase in PHASES {
        race_at(Swap::PerGpuDir, phase);
    }
}

/// The same where the kernel has no `openat2`: one `openat(O_NOFOLLOW)`
/// per component.
#[test]
fn without_openat2_a_directory_swapped_is_refused_too() {
    crate::prune::anchor::NO_OPENAT2.with(|n| n.set(true));
    for phase in PHASES {
        race_at(Swap::Dir, phase);
        race_at(Swap::PerGpuDir, phase);
    }
    crate::prune::anchor::NO_OPENAT2.with(|n| n.set(false));
}

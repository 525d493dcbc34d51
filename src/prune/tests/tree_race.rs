//! [`prune_tree`] in place raced by a program that swaps a file, or a
//! directory, of the tree for a symbolic link out of it: before the walk,
//! after it, as each file is about to be opened, as its output is about to
//! be started, and between its open and its commit (the hook
//! [`race`](crate::prune::race) calls at each step). What is swapped: a
//! bundle, a directory, a per-GPU file's directory, a wheel's directory, a
//! pip `RECORD` and its `.dist-info`, a conda record, an image layout's
//! blob store (and, with no race, dpkg's `info` directory or a `.list`). Whenever the swap happens, every file outside the tree
//! keeps its bytes and its inode, none is removed, no file is even begun
//! outside it (no descriptor of the run leads there), and the file
//! swapped is refused by its name (a link seen by the walk is left as
//! one); the other files of the tree are pruned as usual.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use sha2::Digest as _;

use super::path::{record_row, wheel_of};
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
        records(&t.join(dir));
        let w = t.join(dir).join(WHEEL);
        std::fs::create_dir_all(w.parent().unwrap()).unwrap();
        std::fs::write(&w, wheel_of(&[("pkg/k.hipfb", &hip_bundle())], false)).unwrap();
        layout(&t.join(dir).join("img"), &hip_bundle());
    }
}

/// A wheel, pruned as a package.
const WHEEL: &str = "pkgs/k-1.0-py3-none-any.whl";
/// A pip RECORD naming `site/k.hipfb`, true to it.
const RECORD: &str = "site/k-1.0.dist-info/RECORD";
/// A conda record naming `env/lib/k.hipfb`, true to it.
const CONDA: &str = "env/conda-meta/k-1.0-0.json";

/// Under `root`: a bundle with a pip RECORD and one with a conda record,
/// each listing it with its true hash and size.
fn records(root: &Path) {
    let k = hip_bundle();
    for (file, record, text) in [
        (
            "site/k.hipfb",
            RECORD,
            format!("{}\nk-1.0.dist-info/RECORD,,\n", record_row("k.hipfb", &k)),
        ),
        (
            "env/lib/k.hipfb",
            CONDA,
            format!(
                r#"{{"files": ["lib/k.hipfb"], "name": "k", "paths_data": {{"paths": [{{"_path": "lib/k.hipfb", "path_type": "hardlink", "sha256": "{:x}", "size_in_bytes": {}}}], "paths_version": 1}}}}"#,
                sha2::Sha256::digest(&k),
                k.len()
            ),
        ),
    ] {
        for (p, bytes) in [(file, k.as_slice()), (record, text.as_bytes())] {
            let p = root.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, bytes).unwrap();
        }
    }
}

/// An OCI image layout at `dir` of one image, one gzip layer holding
/// `usr/lib/k.hipfb` (`k`); the same bytes each time.
fn layout(dir: &Path, k: &[u8]) {
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_ustar();
    h.set_mode(0o644);
    h.set_size(k.len() as u64);
    b.append_data(&mut h, "usr/lib/k.hipfb", k).unwrap();
    let tar = b.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    let layer = gz.finish().unwrap();
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |bytes: &[u8]| {
        let hex = format!("{:x}", sha2::Sha256::digest(bytes));
        std::fs::write(blobs.join(&hex), bytes).unwrap();
        format!(r#""digest": "sha256:{hex}", "size": {}"#, bytes.len())
    };
    let diff = format!("{:x}", sha2::Sha256::digest(&tar));
    let config = format!(
        r#"{{"architecture": "amd64", "os": "linux", "rootfs": {{"type": "layers", "diff_ids": ["sha256:{diff}"]}}}}"#
    );
    let manifest = format!(
        r#"{{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": {{"mediaType": "application/vnd.oci.image.config.v1+json", {}}}, "layers": [{{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", {}}}]}}"#,
        put(config.as_bytes()),
        put(&layer)
    );
    let index = format!(
        r#"{{"schemaVersion": 2, "manifests": [{{"mediaType": "application/vnd.oci.image.manifest.v1+json", {}}}]}}"#,
        put(manifest.as_bytes())
    );
    std::fs::write(dir.join("index.json"), index).unwrap();
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion": "1.0.0"}"#).unwrap();
}

/// Whether this process holds a file under `dir` open (a new file begun
/// there, with no name or a temporary one).
fn open_under(dir: &Path) -> bool {
    let dir = std::fs::canonicalize(dir).unwrap();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .any(|target| target.starts_with(&dir))
}

/// Every directory under `dir` (itself included) watched with inotify
/// for a file in it, or itself, being opened or read: a read by a path
/// that follows a link swapped into the tree shows here, where the bytes
/// and inodes of [`snapshot`] cannot tell.
struct Watch {
    fd: std::os::fd::OwnedFd,
    dirs: std::collections::HashMap<i32, PathBuf>,
}

impl Watch {
    fn new(dir: &Path) -> Watch {
        use rustix::fs::inotify::{CreateFlags, WatchFlags, add_watch, init};
        let fd = init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).unwrap();
        // Listed first: the walk's own reads of them are not watched.
        let list: Vec<PathBuf> = walkdir::WalkDir::new(dir)
            .into_iter()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().is_dir())
            .map(|e| e.path().to_path_buf())
            .collect();
        let dirs = list
            .into_iter()
            .map(|d| {
                let wd = add_watch(&fd, &d, WatchFlags::OPEN | WatchFlags::ACCESS).unwrap();
                (wd, d)
            })
            .collect();
        Watch { fd, dirs }
    }

    /// The paths opened or read since the watch began.
    fn opened(&self) -> Vec<PathBuf> {
        let mut buf = [std::mem::MaybeUninit::uninit(); 4096];
        let mut events = rustix::fs::inotify::Reader::new(&self.fd, &mut buf);
        let mut out = Vec::new();
        while let Ok(e) = events.next() {
            let dir = self.dirs[&e.wd()].clone();
            let name = e.file_name().map(|n| n.to_string_lossy().into_owned());
            out.push(name.map_or_else(|| dir.clone(), |n| dir.join(n)));
        }
        out.sort();
        out.dedup();
        out
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

/// What is swapped: the file `a.hipfb`, the directory `sub`, the
/// directory of the per-GPU file, the wheel's directory, a pip RECORD, its
/// `.dist-info` directory, a conda record, or the layout's blob store;
/// each for a link to its namesake outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Swap {
    File,
    Dir,
    PerGpuDir,
    WheelDir,
    Record,
    RecordDir,
    CondaRecord,
    LayoutStore,
}

impl Swap {
    /// The path in the tree swapped for a link, and the file of the tree
    /// whose handling the swap races.
    fn paths(self) -> (&'static str, &'static str) {
        match self {
            Swap::File => ("a.hipfb", "a.hipfb"),
            Swap::Dir => ("sub", "sub/k.hipfb"),
            Swap::PerGpuDir => ("lib/library", PER_GPU),
            Swap::WheelDir => ("pkgs", WHEEL),
            Swap::Record => (RECORD, RECORD),
            Swap::RecordDir => ("site/k-1.0.dist-info", RECORD),
            Swap::CondaRecord => (CONDA, CONDA),
            Swap::LayoutStore => ("img/blobs/sha256", "img"),
        }
    }

    /// The steps its file goes through: a file removed by its name is
    /// never written, a layout's output is begun in its blob store.
    fn phases(self) -> Vec<Option<Phase>> {
        PHASES
            .into_iter()
            .filter(|p| match self {
                Swap::PerGpuDir | Swap::LayoutStore => *p != Some(Phase::Create),
                _ => true,
            })
            .collect()
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

/// `prune --in-place t/tree` (keeping gfx90a; or its dry run, `dry`)
/// with `swap` made at `phase` (`None`: before the walk); checks that
/// nothing outside changed, or was even opened, and that the file raced
/// was not pruned.
fn race_at(swap: Swap, phase: Option<Phase>, dry: bool) {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().to_path_buf();
    make(&t);
    let outside = snapshot(&t.join("outside"));
    let watch = Watch::new(&t.join("outside"));
    let (swapped, raced) = swap.paths();
    let raced_path = t.join("tree").join(raced);
    if phase.is_none() {
        swap.run(&t);
    }
    let opts = PathOptions {
        destination: match dry {
            true => Destination::DryRun,
            false => Destination::InPlace,
        },
        ..PathOptions::default()
    };
    let sel = keep(&["gfx90a"], Ptx::Newest);
    let (hook_t, hook_path) = (t.clone(), raced_path.clone());
    let (done, leaked) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(false)));
    let (hook_done, hook_leaked) = (Rc::clone(&done), Rc::clone(&leaked));
    let hook = move |p: Phase, path: &Path| {
        let now = match p {
            Phase::Walked => true,
            Phase::Open | Phase::Create | Phase::Commit => path == hook_path,
        };
        if !hook_done.get() && Some(p) == phase && now {
            swap.run(&hook_t);
            hook_done.set(true);
        }
        // Whatever the run writes, it has begun nothing outside the tree.
        if p == Phase::Commit && open_under(&hook_t.join("outside")) {
            hook_leaked.set(true);
        }
    };
    let root = t.join("tree");
    let entries = race::with(hook, || {
        prune_tree(std::slice::from_ref(&root), &sel, &opts, &mut |_, _| {})
    });
    let case = format!("{swap:?} at {phase:?} (dry run: {dry})");
    assert!(
        phase.is_none() || done.get(),
        "{case}: the swap was never made"
    );
    let opened = watch.opened();
    assert!(
        opened.is_empty(),
        "{case}: files outside were opened: {opened:?}"
    );
    let now = snapshot(&t.join("outside"));
    let changed: Vec<&PathBuf> = outside
        .keys()
        .chain(now.keys())
        .filter(|p| outside.get(*p) != now.get(*p))
        .collect();
    assert!(
        changed.is_empty(),
        "{case}: files outside changed: {changed:?}"
    );
    assert!(!leaked.get(), "{case}: a file was begun outside the tree");
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
    if phase.is_some() || swap == Swap::LayoutStore {
        let raced = entries.iter().find(|e| e.path == raced_path);
        match raced.map(|e| &e.outcome) {
            Some(TreeOutcome::Failed(err)) => {
                assert_eq!(err.kind(), PathErrorKind::Refused, "{case}: {err}");
            }
            o => panic!("{case}: the file raced is not refused: {o:?}"),
        }
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

const PHASES: [Option<Phase>; 5] = [
    None,
    Some(Phase::Walked),
    Some(Phase::Open),
    Some(Phase::Create),
    Some(Phase::Commit),
];

/// `swap` raced at each step its file goes through, in place.
fn race(swap: Swap) {
    for phase in swap.phases() {
        race_at(swap, phase, false);
    }
}

/// `swap` raced in a dry run, before the walk, after it and as its file
/// is about to be opened (a dry run begins and commits nothing).
fn race_dry(swap: Swap) {
    for phase in [None, Some(Phase::Walked), Some(Phase::Open)] {
        race_at(swap, phase, true);
    }
}

#[test]
fn a_file_swapped_for_a_link_leaves_its_target_alone() {
    race(Swap::File);
}

#[test]
fn a_directory_swapped_for_a_link_leaves_the_files_it_leads_to_alone() {
    race(Swap::Dir);
}

#[test]
fn a_per_gpu_files_directory_swapped_for_a_link_removes_nothing_outside() {
    race(Swap::PerGpuDir);
}

/// A package's new file is begun in its directory's handle: a directory
/// swapped for a link before it is begun gets nothing outside.
#[test]
fn a_wheels_directory_swapped_for_a_link_gets_no_file_begun_outside() {
    race(Swap::WheelDir);
}

/// A pip RECORD (or its `.dist-info`) swapped for a link to a RECORD
/// outside, before the walk, between the walk and its rewrite, or as it
/// is rewritten: the one outside keeps its bytes and its inode.
#[test]
fn a_record_swapped_for_a_link_leaves_the_record_outside_alone() {
    race(Swap::Record);
    race(Swap::RecordDir);
}

#[test]
fn a_conda_record_swapped_for_a_link_leaves_the_one_outside_alone() {
    race(Swap::CondaRecord);
}

/// A layout whose blob store becomes a link to another layout's, after
/// the layout was checked or just before it is written: the other
/// layout's blobs are neither written nor removed, nor even opened (its
/// manifests, configs and layers were read by path).
#[test]
fn a_layouts_blob_store_swapped_for_a_link_leaves_the_other_store_alone() {
    race(Swap::LayoutStore);
}

/// The same where the kernel has no `openat2`: one `openat(O_NOFOLLOW)`
/// per component.
#[test]
fn without_openat2_a_directory_swapped_is_refused_too() {
    crate::prune::anchor::NO_OPENAT2.with(|n| n.set(true));
    for swap in [
        Swap::Dir,
        Swap::PerGpuDir,
        Swap::RecordDir,
        Swap::LayoutStore,
    ] {
        race(swap);
    }
    crate::prune::anchor::NO_OPENAT2.with(|n| n.set(false));
}

/// A dry run reads the files it found through their directories'
/// handles as `--in-place` does: a file or directory swapped for a link
/// out of the tree after the walk is refused by its name, and nothing the
/// link leads to is opened (its first bytes, its hash against a record,
/// its bytes for the prune: all were read by path).
#[test]
fn a_dry_run_opens_nothing_a_link_swapped_in_leads_to() {
    for swap in [
        Swap::File,
        Swap::Dir,
        Swap::PerGpuDir,
        Swap::WheelDir,
        Swap::Record,
        Swap::RecordDir,
        Swap::CondaRecord,
        Swap::LayoutStore,
    ] {
        race_dry(swap);
    }
}

/// The file a pip RECORD (or a conda record) lists, pruned, then swapped
/// for a link to a file outside before its row is rewritten (as the
/// record is opened for that): the record is refused by its name and
/// left as it was, and the file outside is never opened (it was hashed
/// through the link, its hash written into the record).
#[test]
fn a_listed_file_swapped_after_its_prune_is_never_hashed_through_the_link() {
    for (file, record) in [("site/k.hipfb", RECORD), ("env/lib/k.hipfb", CONDA)] {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().to_path_buf();
        make(&t);
        let (swapped, outside) = (t.join("tree").join(file), t.join("outside").join(file));
        std::fs::write(&outside, "other bytes\n").unwrap();
        let watch = Watch::new(&t.join("outside"));
        let record_path = t.join("tree").join(record);
        let before = std::fs::read(&record_path).unwrap();
        let (hook_record, opens) = (record_path.clone(), Rc::new(Cell::new(0)));
        let hook_opens = Rc::clone(&opens);
        let hook = move |p: Phase, path: &Path| {
            if p != Phase::Open || path != hook_record {
                return;
            }
            // The record is opened for its rows before the files are
            // pruned, and again to be rewritten after.
            hook_opens.set(hook_opens.get() + 1);
            if hook_opens.get() == 2 {
                std::fs::rename(&swapped, swapped.with_extension("aside")).unwrap();
                std::os::unix::fs::symlink(&outside, &swapped).unwrap();
            }
        };
        let opts = PathOptions {
            destination: Destination::InPlace,
            ..PathOptions::default()
        };
        let sel = keep(&["gfx90a"], Ptx::Newest);
        let root = t.join("tree");
        let entries = race::with(hook, || {
            prune_tree(std::slice::from_ref(&root), &sel, &opts, &mut |_, _| {})
        });
        assert_eq!(opens.get(), 2, "{record}: the record was not rewritten");
        assert_eq!(
            watch.opened(),
            Vec::<PathBuf>::new(),
            "{record}: opened outside"
        );
        let e = entries.iter().find(|e| e.path == record_path).unwrap();
        match &e.outcome {
            TreeOutcome::Failed(err) => {
                assert_eq!(err.kind(), PathErrorKind::Refused, "{record}: {err}");
            }
            o => panic!("{record}: {o:?}"),
        }
        assert_eq!(std::fs::read(&record_path).unwrap(), before, "{record}");
    }
}

/// A thin archive of the tree naming a member outside it (`../o/k.hipfb`)
/// is refused by its name in a dry run as in place, and the member is
/// never opened (a dry run read it by its path); one naming a member in
/// the tree is pruned with it.
#[test]
fn a_thin_archives_member_outside_the_tree_is_never_opened() {
    use super::path::thin_archive;
    for dry in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let t = d.path();
        let (tree, o) = (t.join("tree"), t.join("o"));
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::create_dir_all(&o).unwrap();
        std::fs::write(o.join("k.hipfb"), hip_bundle()).unwrap();
        std::fs::write(tree.join("m.hipfb"), hip_bundle()).unwrap();
        std::fs::write(tree.join("in.a"), thin_archive(&tree, &["m.hipfb"])).unwrap();
        std::fs::write(tree.join("out.a"), thin_archive(&tree, &["../o/k.hipfb"])).unwrap();
        let watch = Watch::new(&o);
        let opts = PathOptions {
            destination: match dry {
                true => Destination::DryRun,
                false => Destination::InPlace,
            },
            ..PathOptions::default()
        };
        let sel = keep(&["gfx90a"], Ptx::Newest);
        let entries = prune_tree(std::slice::from_ref(&tree), &sel, &opts, &mut |_, _| {});
        assert_eq!(watch.opened(), Vec::<PathBuf>::new(), "dry run: {dry}");
        assert_eq!(std::fs::read(o.join("k.hipfb")).unwrap(), hip_bundle());
        let outcome = |name: &str| {
            &entries
                .iter()
                .find(|e| e.path == tree.join(name))
                .unwrap()
                .outcome
        };
        match outcome("out.a") {
            TreeOutcome::Failed(err) => assert_eq!(err.kind(), PathErrorKind::Refused, "{err}"),
            o => panic!("dry run: {dry}: {o:?}"),
        }
        assert!(
            matches!(outcome("in.a"), TreeOutcome::Pruned(r) if r.freed > 0),
            "dry run: {dry}: {:?}",
            outcome("in.a")
        );
    }
}

/// The directories the run empties are listed through their handles from
/// the root: once the per-GPU file is removed, its directory's parent
/// `lib` swapped for a link to `lib` outside (as a later file is
/// committed) is not followed; nothing outside is listed or removed, and
/// no directory of the tree is said to be removed through the link.
#[test]
fn an_emptied_directory_swapped_for_a_link_is_not_listed_through_it() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().to_path_buf();
    make(&t);
    let outside = snapshot(&t.join("outside"));
    let watch = Watch::new(&t.join("outside"));
    let (hook_t, wheel) = (t.clone(), t.join("tree").join(WHEEL));
    let done = Rc::new(Cell::new(false));
    let hook_done = Rc::clone(&done);
    let hook = move |p: Phase, path: &Path| {
        if p == Phase::Commit && path == wheel && !hook_done.get() {
            let lib = hook_t.join("tree/lib");
            std::fs::rename(&lib, hook_t.join("aside")).unwrap();
            std::os::unix::fs::symlink(hook_t.join("outside/lib"), &lib).unwrap();
            hook_done.set(true);
        }
    };
    let opts = PathOptions {
        destination: Destination::InPlace,
        ..PathOptions::default()
    };
    let sel = keep(&["gfx90a"], Ptx::Newest);
    let root = t.join("tree");
    let entries = race::with(hook, || {
        prune_tree(std::slice::from_ref(&root), &sel, &opts, &mut |_, _| {})
    });
    assert!(done.get(), "the swap was never made");
    let per_gpu = entries.iter().find(|e| e.path == root.join(PER_GPU));
    assert!(
        matches!(per_gpu.map(|e| &e.outcome), Some(TreeOutcome::Pruned(r)) if r.bytes_after == 0),
        "the per-GPU file was not removed: {per_gpu:?}"
    );
    assert_eq!(watch.opened(), Vec::<PathBuf>::new(), "listed outside");
    assert_eq!(snapshot(&t.join("outside")), outside);
    let removed: Vec<_> = entries
        .iter()
        .filter(|e| matches!(e.outcome, TreeOutcome::DirectoryRemoved))
        .map(|e| &e.path)
        .collect();
    assert!(removed.is_empty(), "{removed:?}");
}

/// The dpkg database of the tree's root is read through handles: its
/// `var/lib/dpkg/info`, or a package's `.list` there, swapped for a link
/// to one outside that lists the file pruned is not followed (nothing
/// outside is opened, no package is said to own the file); left as it
/// is, the package that lists the file is named.
#[test]
fn a_dpkg_database_swapped_for_a_link_is_not_read_through_it() {
    const INFO: &str = "var/lib/dpkg/info";
    for swapped in [None, Some(INFO), Some("var/lib/dpkg/info/k.list")] {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().to_path_buf();
        for dir in ["tree", "outside"] {
            let info = t.join(dir).join(INFO);
            std::fs::create_dir_all(&info).unwrap();
            std::fs::write(info.join("k.list"), "/.\n/a.hipfb\n").unwrap();
            std::fs::write(t.join(dir).join("a.hipfb"), hip_bundle()).unwrap();
        }
        if let Some(s) = swapped {
            std::fs::rename(t.join("tree").join(s), t.join("aside")).unwrap();
            std::os::unix::fs::symlink(t.join("outside").join(s), t.join("tree").join(s)).unwrap();
        }
        let watch = Watch::new(&t.join("outside"));
        for dry in [true, false] {
            let opts = PathOptions {
                destination: match dry {
                    true => Destination::DryRun,
                    false => Destination::InPlace,
                },
                ..PathOptions::default()
            };
            let sel = keep(&["gfx90a"], Ptx::Newest);
            let root = t.join("tree");
            let entries = prune_tree(std::slice::from_ref(&root), &sel, &opts, &mut |_, _| {});
            let a = entries
                .iter()
                .find(|e| e.path == root.join("a.hipfb"))
                .unwrap();
            let case = format!("{swapped:?} (dry run: {dry})");
            assert!(
                matches!(&a.outcome, TreeOutcome::Pruned(r) if r.freed > 0),
                "{case}: {:?}",
                a.outcome
            );
            assert_eq!(watch.opened(), Vec::<PathBuf>::new(), "{case}");
            let owner = swapped.is_none().then(|| "k".to_string());
            assert_eq!(a.dpkg_package, owner, "{case}");
        }
    }
}

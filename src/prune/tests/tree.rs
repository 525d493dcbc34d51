//! [`prune_tree`] on a small tree made here: a shared library and a bare
//! bundle holding HIP code, a wheel, a symbolic link to the library, a
//! pair of hard links, a text file, files prune refuses (a tar archive, a
//! CUDA fatbin that would lose every entry) and a damaged bundle. Each
//! file ends as it would pruned alone, the links and the files of no
//! known format are left as they are, the failures are reported in their
//! place while the run goes on, and a dry run writes nothing and frees
//! the same bytes.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::path::{thin_archive, wheel};
use super::{Ptx, cuda_fatbin, hip_bundle, keep, linked};
use crate::prune::{
    Destination, PackageBytes, PathOptions, Selection, Skip, TreeEntry, TreeOutcome, prune_path,
    prune_tree,
};

fn gfx90a() -> Selection {
    keep(&["gfx90a"], Ptx::Newest)
}

fn to(destination: Destination) -> PathOptions {
    PathOptions {
        destination,
        ..PathOptions::default()
    }
}

/// The tree, under `root`: the files named in [`FILES`] and the links.
fn make_tree(root: &Path) {
    let lib = linked::library(&linked::hip_bundle(4096));
    std::fs::create_dir_all(root.join("lib/sub")).unwrap();
    std::fs::write(root.join("lib/libk.so"), &lib).unwrap();
    std::fs::write(root.join("lib/sub/k.hipfb"), hip_bundle()).unwrap();
    std::fs::write(root.join("pkg-1.0-py3-none-any.whl"), wheel(&lib, false)).unwrap();
    std::fs::write(root.join("notes.txt"), "no device code here\n").unwrap();
    std::fs::write(root.join("a.hipfb"), hip_bundle()).unwrap();
    std::fs::hard_link(root.join("a.hipfb"), root.join("b.hipfb")).unwrap();
    std::os::unix::fs::symlink("lib/libk.so", root.join("link.so")).unwrap();
    // Refused: a tar archive (not rewritten) and a fatbin of which
    // nothing would stay.
    let mut tar = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    let bundle = hip_bundle();
    header.set_size(bundle.len() as u64);
    tar.append_data(&mut header, "k.hipfb", &bundle[..])
        .unwrap();
    std::fs::write(root.join("k.tar"), tar.into_inner().unwrap()).unwrap();
    std::fs::write(root.join("k.fatbin"), cuda_fatbin()).unwrap();
    // Damaged: a bundle cut short inside its last entry.
    std::fs::write(root.join("cut.hipfb"), &bundle[..bundle.len() - 100]).unwrap();
}

/// The regular files of the tree.
const FILES: [&str; 9] = [
    "a.hipfb",
    "b.hipfb",
    "cut.hipfb",
    "k.fatbin",
    "k.tar",
    "lib/libk.so",
    "lib/sub/k.hipfb",
    "notes.txt",
    "pkg-1.0-py3-none-any.whl",
];

/// Every path under `root` with its bytes (a link: its target), mode,
/// modification time and inode.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u32, i64, u64)> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(root).sort_by_file_name() {
        let e = e.unwrap();
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        let bytes = if m.file_type().is_symlink() {
            std::fs::read_link(e.path())
                .unwrap()
                .into_os_string()
                .into_encoded_bytes()
        } else if m.is_file() {
            std::fs::read(e.path()).unwrap()
        } else {
            Vec::new()
        };
        let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
        out.insert(rel, (bytes, m.mode(), m.mtime(), m.ino()));
    }
    out
}

/// The outcome of each path, by its path below `root`, in words.
fn outcomes(root: &Path, entries: &[TreeEntry]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|e| {
            let rel = e.path.strip_prefix(root).unwrap().to_string_lossy();
            let what = match &e.outcome {
                TreeOutcome::Pruned(r) if !r.removed.is_empty() => "removed".to_string(),
                TreeOutcome::Pruned(r) if r.containers_rewritten > 0 => "pruned".to_string(),
                TreeOutcome::Pruned(_) => "nothing to remove".to_string(),
                TreeOutcome::Failed(e) if e.refused() => "refused".to_string(),
                TreeOutcome::Failed(_) => "failed".to_string(),
                TreeOutcome::Skipped(Skip::HardLink(p)) => {
                    format!("hard link of {}", p.strip_prefix(root).unwrap().display())
                }
                TreeOutcome::Skipped(Skip::ThinMember(p)) => {
                    format!("member of {}", p.strip_prefix(root).unwrap().display())
                }
                TreeOutcome::Skipped(s) => format!("{s:?}"),
                TreeOutcome::Record {
                    rows_rewritten,
                    rows_removed,
                } => format!("record: {rows_rewritten} rewritten, {rows_removed} removed"),
                TreeOutcome::DirectoryRemoved => "directory removed".to_string(),
            };
            (rel.into_owned(), what)
        })
        .collect()
}

/// Bytes freed by the files pruned.
fn freed(entries: &[TreeEntry]) -> u64 {
    entries
        .iter()
        .map(|e| match &e.outcome {
            TreeOutcome::Pruned(r) => r.freed,
            _ => 0,
        })
        .sum()
}

/// Whether the report of `path` is a package's: its `freed` is what its
/// files lose (in a dry run too), its `package_bytes` what its own file
/// lost in size, compressed again, which a dry run cannot know.
fn is_package(path: &str) -> bool {
    path.ends_with(".whl") || path.ends_with(".deb")
}

/// For each package written: what its file lost in size, and what its
/// report says it lost.
fn packages_freed(entries: &[TreeEntry]) -> Vec<(u64, Option<PackageBytes>)> {
    entries
        .iter()
        .filter_map(|e| match &e.outcome {
            TreeOutcome::Pruned(r) if is_package(&r.path) && r.output.is_some() => Some((
                r.bytes_before.saturating_sub(r.bytes_after),
                r.package_bytes,
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn each_file_of_a_tree_ends_as_pruned_alone_and_the_run_goes_on() {
    for keep_links in [false, true] {
        let t = tempfile::tempdir().unwrap();
        let (root, alone) = (t.path().join("tree"), t.path().join("alone"));
        make_tree(&root);
        make_tree(&alone);
        let before = snapshot(&root);
        let mut opts = to(Destination::InPlace);
        opts.keep_hard_links = keep_links;
        // k.fatbin, device code alone, refused (see `removed.rs` for the
        // removal of such files).
        opts.keep_files = true;
        let mut ticks = Vec::new();
        let got = prune_tree(
            std::slice::from_ref(&root),
            &gfx90a(),
            &opts,
            &mut |n, total| ticks.push((n, total)),
        );
        let want = [
            ("a.hipfb", "pruned"),
            ("b.hipfb", "hard link of a.hipfb"),
            ("cut.hipfb", "failed"),
            ("k.fatbin", "refused"),
            ("k.tar", "refused"),
            ("lib/libk.so", "pruned"),
            ("lib/sub/k.hipfb", "pruned"),
            ("link.so", "SymbolicLink"),
            ("notes.txt", "NoKnownFormat"),
            ("pkg-1.0-py3-none-any.whl", "pruned"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(outcomes(&root, &got), want);
        // Every regular file counted once, in order.
        assert_eq!(ticks.len(), FILES.len());
        assert!(ticks.iter().enumerate().all(|(i, &t)| t == (i + 1, 9)));

        // Each file alone, in the other tree; the hard link's other name
        // as `prune_path` leaves it.
        let mut alone_freed = 0;
        for f in FILES {
            if f == "b.hipfb" {
                continue;
            }
            // As `freed` counts them: a package's figure is what its
            // files lose, as for the files of a directory.
            if let Ok(r) = prune_path(&alone.join(f), &gfx90a(), &opts) {
                alone_freed += r.freed;
            }
        }
        assert_eq!(freed(&got), alone_freed);
        for f in FILES {
            assert_eq!(
                std::fs::read(root.join(f)).unwrap(),
                std::fs::read(alone.join(f)).unwrap(),
                "{f}"
            );
        }
        let after = snapshot(&root);
        let (a, b) = (&after[Path::new("a.hipfb")], &after[Path::new("b.hipfb")]);
        assert_eq!(a.3 == b.3, keep_links, "one inode with --keep-hard-links");
        assert_eq!(
            b.0 == before[Path::new("b.hipfb")].0,
            !keep_links,
            "b.hipfb keeps the old bytes unless pruned through the link"
        );
        // The link is as it was; the failures left their files as they
        // were.
        for same in ["link.so", "cut.hipfb", "k.fatbin", "k.tar", "notes.txt"] {
            assert_eq!(after[Path::new(same)], before[Path::new(same)], "{same}");
        }
        assert_eq!(after.len(), before.len(), "no file added or removed");
    }
}

#[test]
fn a_dry_run_writes_nothing_and_frees_what_the_run_frees() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    make_tree(&root);
    let before = snapshot(&root);
    let dry = prune_tree(
        std::slice::from_ref(&root),
        &gfx90a(),
        &PathOptions::default(),
        &mut |_, _| {},
    );
    assert_eq!(snapshot(&root), before, "bytes, modes, times and inodes");
    // A directory given inside another: its files are handled once.
    let twice = prune_tree(
        &[root.clone(), root.join("lib")],
        &gfx90a(),
        &PathOptions::default(),
        &mut |_, _| {},
    );
    assert_eq!(freed(&twice), freed(&dry));
    let again: Vec<String> = outcomes(&root, &twice[dry.len()..])
        .into_iter()
        .map(|(p, what)| format!("{p} {what}"))
        .collect();
    assert_eq!(again, ["lib/libk.so Again", "lib/sub/k.hipfb Again"]);
    let wet = prune_tree(
        std::slice::from_ref(&root),
        &gfx90a(),
        &to(Destination::InPlace),
        &mut |_, _| {},
    );
    assert_eq!(outcomes(&root, &dry), outcomes(&root, &wet));
    assert!(freed(&dry) > 0);
    assert_eq!(freed(&dry), freed(&wet));
    let packages = packages_freed(&wet);
    assert!(!packages.is_empty());
    assert!(
        packages
            .iter()
            .all(|(lost, said)| *said == Some(PackageBytes::Freed(*lost))),
        "{packages:?}"
    );
    // A second run finds nothing left to remove, but in b.hipfb: the
    // other name of a.hipfb kept the old file, now a file of its own.
    let again = prune_tree(
        std::slice::from_ref(&root),
        &gfx90a(),
        &to(Destination::InPlace),
        &mut |_, _| {},
    );
    let pruned: Vec<(String, String)> = outcomes(&root, &again)
        .into_iter()
        .filter(|(_, what)| what == "pruned")
        .collect();
    assert_eq!(pruned, [("b.hipfb".to_string(), "pruned".to_string())]);
}

#[test]
fn a_thin_archive_prunes_its_members_once_and_leftovers_are_left() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    std::fs::write(root.join("k.hipfb"), hip_bundle()).unwrap();
    std::fs::write(root.join("z.a"), thin_archive(root, &["k.hipfb"])).unwrap();
    std::fs::write(root.join(".offload-kit-1-2-3"), hip_bundle()).unwrap();
    let dry = prune_tree(
        &[root.to_path_buf()],
        &gfx90a(),
        &PathOptions::default(),
        &mut |_, _| {},
    );
    let want = [
        (".offload-kit-1-2-3", "Leftover"),
        ("k.hipfb", "member of z.a"),
        ("z.a", "pruned"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(outcomes(root, &dry), want);
    let wet = prune_tree(
        &[root.to_path_buf()],
        &gfx90a(),
        &to(Destination::InPlace),
        &mut |_, _| {},
    );
    assert_eq!(freed(&dry), freed(&wet));
    assert_eq!(
        std::fs::metadata(root.join("k.hipfb")).unwrap().len(),
        hip_bundle().len() as u64 - freed(&wet)
    );
    assert_eq!(
        std::fs::read(root.join(".offload-kit-1-2-3")).unwrap(),
        hip_bundle()
    );
}

#[test]
fn a_directory_is_pruned_in_place_or_in_a_dry_run_only() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    make_tree(&root);
    let before = snapshot(&root);
    let out = t.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let got = prune_tree(
        std::slice::from_ref(&root),
        &gfx90a(),
        &to(Destination::Directory(out.clone())),
        &mut |_, _| {},
    );
    assert_eq!(got.len(), 1);
    let TreeOutcome::Failed(e) = &got[0].outcome else {
        panic!("{:?}", got[0].outcome)
    };
    assert!(e.refused() && got[0].named);
    assert!(e.to_string().contains("it is a directory"), "{e}");
    assert_eq!(snapshot(&root), before);
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}

#[test]
fn the_installed_package_owning_a_changed_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let lib_dir = root.join("usr/lib/x86_64-linux-gnu");
    std::fs::create_dir_all(&lib_dir).unwrap();
    std::fs::create_dir_all(root.join("var/lib/dpkg/info")).unwrap();
    // A merged-/usr root: its package lists `/lib/…` for `/usr/lib/…`.
    std::os::unix::fs::symlink("usr/lib", root.join("lib")).unwrap();
    let lib = linked::library(&linked::hip_bundle(4096));
    std::fs::write(lib_dir.join("libk.so.0"), &lib).unwrap();
    std::fs::write(lib_dir.join("k.hipfb"), hip_bundle()).unwrap();
    std::fs::write(lib_dir.join("mine.hipfb"), hip_bundle()).unwrap();
    std::fs::write(lib_dir.join("notes.txt"), "no device code\n").unwrap();
    let info = root.join("var/lib/dpkg/info");
    std::fs::write(
        info.join("libk0:amd64.list"),
        "/.\n/usr\n/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu/libk.so.0\n\
         /usr/lib/x86_64-linux-gnu/k.hipfb\n",
    )
    .unwrap();
    std::fs::write(
        info.join("notes.list"),
        "/usr/lib/x86_64-linux-gnu/notes.txt\n",
    )
    .unwrap();
    let owners = |destination| {
        let found = prune_tree(
            &[root.join("usr")],
            &gfx90a(),
            &to(destination),
            &mut |_, _| {},
        );
        let mut owned: Vec<(String, Option<String>)> = found
            .iter()
            .map(|e| {
                let name = e.path.file_name().unwrap().to_string_lossy().into_owned();
                (name, e.dpkg_package.clone())
            })
            .collect();
        owned.sort();
        owned
    };
    let want = [
        ("k.hipfb", Some("libk0:amd64")),
        ("libk.so.0", Some("libk0:amd64")),
        // Changed, and listed by no package.
        ("mine.hipfb", None),
        // Listed, and not changed.
        ("notes.txt", None),
    ]
    .map(|(n, p)| (n.to_string(), p.map(str::to_string)));
    assert_eq!(owners(Destination::DryRun), want);
    assert_eq!(owners(Destination::InPlace), want);
    // Pruned again, nothing changes: no file is named.
    assert!(
        owners(Destination::InPlace)
            .iter()
            .all(|(_, p)| p.is_none())
    );
}

//! Libraries' per-GPU files ([`crate::companion`]) removed by their name
//! in a tree (in place and in a dry run) and in a wheel: the files of the
//! GPUs the rules drop go unread, with their library named, and so do
//! the directories the run empties; arch-neutral files, files of kept
//! GPUs and everything with `--keep-files` stay.

use std::io::{Read as _, Write as _};
use std::path::Path;

use super::{Ptx, keep};
use crate::prune::{Destination, PathOptions, TreeOutcome, prune_path, prune_tree};

/// A hipBLASLt/MIOpen-style tree under `root`; every file's bytes are
/// text (no format prune reads), so only names can remove them.
const TREE: &[&str] = &[
    "lib/hipblaslt/library/TensileLibrary_lazy_gfx906.dat",
    "lib/hipblaslt/library/TensileLibrary_lazy_gfx1100.dat",
    "lib/hipblaslt/library/Kernels.so-000-gfx90a-xnack+.hsaco",
    "lib/hipblaslt/library/TensileLibrary.dat",
    "lib/hipblaslt/library/gfx906/a.co",
    "lib/hipblaslt/library/gfx906/sub/b.dat",
    "lib/hipblaslt/library/gfx1100/a.co",
    "share/miopen/db/gfx90a68.kdb",
    "share/miopen/db/gfx1100_48.kdb",
    "share/miopen/db/readme.txt",
];

fn make(root: &Path) {
    for f in TREE {
        let p = root.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("bytes of {f}\n")).unwrap();
    }
    // An empty directory before the run stays.
    std::fs::create_dir_all(root.join("lib/hipblaslt/library/empty")).unwrap();
}

fn opts(destination: Destination) -> PathOptions {
    PathOptions {
        destination,
        ..PathOptions::default()
    }
}

/// What the run did, path by path below `root`.
fn outcomes(root: &Path, opts: &PathOptions) -> Vec<String> {
    let sel = keep(&["gfx1100"], Ptx::Newest);
    let entries = prune_tree(&[root.to_path_buf()], &sel, opts, &mut |_, _| {});
    entries
        .iter()
        .filter_map(|e| {
            let rel = e.path.strip_prefix(root).unwrap().display();
            match &e.outcome {
                TreeOutcome::Pruned(r) if !r.removed.is_empty() => {
                    let f = &r.removed[0];
                    assert_eq!(
                        f.bytes,
                        std::fs::symlink_metadata(&e.path).map_or(f.bytes, |m| m.len())
                    );
                    Some(format!("{rel}: {}", f.gpu.as_deref().unwrap_or("?")))
                }
                TreeOutcome::DirectoryRemoved => Some(format!("{rel}/")),
                TreeOutcome::Failed(e) => panic!("{e}"),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn per_gpu_files_go_by_name_with_the_directories_they_leave_empty() {
    let want = [
        "lib/hipblaslt/library/Kernels.so-000-gfx90a-xnack+.hsaco: gfx90a:xnack+",
        "lib/hipblaslt/library/TensileLibrary_lazy_gfx906.dat: gfx906",
        "lib/hipblaslt/library/gfx906/a.co: gfx906",
        "lib/hipblaslt/library/gfx906/sub/b.dat: gfx906",
        "share/miopen/db/gfx90a68.kdb: gfx90a",
        "lib/hipblaslt/library/gfx906/sub/",
        "lib/hipblaslt/library/gfx906/",
    ];
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    assert_eq!(outcomes(dir.path(), &opts(Destination::DryRun)), want);
    for f in TREE {
        assert!(dir.path().join(f).exists(), "a dry run removed {f}");
    }
    assert_eq!(outcomes(dir.path(), &opts(Destination::InPlace)), want);
    for f in TREE {
        let gone = want.iter().any(|w| w.starts_with(&format!("{f}:")));
        assert_eq!(dir.path().join(f).exists(), !gone, "{f}");
    }
    assert!(!dir.path().join("lib/hipblaslt/library/gfx906").exists());
    assert!(dir.path().join("lib/hipblaslt/library/empty").is_dir());
    // Nothing more goes on a second run.
    assert_eq!(
        outcomes(dir.path(), &opts(Destination::InPlace)),
        Vec::<String>::new()
    );
}

#[test]
fn keep_files_keeps_them_and_a_named_library_directory_matches() {
    let dir = tempfile::tempdir().unwrap();
    make(dir.path());
    let mut o = opts(Destination::InPlace);
    o.keep_files = true;
    assert_eq!(outcomes(dir.path(), &o), Vec::<String>::new());
    // Named below `library`, the directory's own name still counts.
    let lib = dir.path().join("lib/hipblaslt/library");
    let sel = keep(&["gfx1100"], Ptx::Newest);
    let entries = prune_tree(
        std::slice::from_ref(&lib),
        &sel,
        &opts(Destination::DryRun),
        &mut |_, _| {},
    );
    let removed = entries
        .iter()
        .filter(|e| matches!(&e.outcome, TreeOutcome::Pruned(r) if !r.removed.is_empty()))
        .count();
    assert_eq!(removed, 4);
    let why = entries
        .iter()
        .find_map(|e| match &e.outcome {
            TreeOutcome::Pruned(r) => r.removed.first()?.why.clone(),
            _ => None,
        })
        .unwrap();
    assert!(why.contains("per-GPU file for gfx90a:xnack+"), "{why}");
}

#[test]
fn a_wheel_loses_the_members_and_their_record_rows() {
    let dir = tempfile::tempdir().unwrap();
    let whl = dir.path().join("pkg-1.0-py3-none-any.whl");
    let names = [
        "pkg/library/",
        "pkg/library/gfx906/",
        "pkg/library/gfx906/a.co",
        "pkg/library/TensileLibrary_lazy_gfx906.dat",
        "pkg/library/TensileLibrary_lazy_gfx1100.dat",
        "pkg/library/TensileLibrary.dat",
    ];
    let mut z = zip::ZipWriter::new(std::fs::File::create(&whl).unwrap());
    let o = zip::write::SimpleFileOptions::default();
    let mut record = String::new();
    for n in names {
        if n.ends_with('/') {
            z.add_directory(n, o).unwrap();
            continue;
        }
        z.start_file(n, o).unwrap();
        z.write_all(n.as_bytes()).unwrap();
        // The rows of the files kept are checked: true. Those of the
        // files removed by name go unread, with their rows: these lie.
        let hash = match n.contains("gfx906") {
            true => "x".to_string(),
            false => {
                use base64::Engine as _;
                use sha2::Digest as _;
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(sha2::Sha256::digest(n.as_bytes()))
            }
        };
        record += &format!("{n},sha256={hash},{}\n", n.len());
    }
    record += "pkg-1.0.dist-info/RECORD,,\n";
    z.start_file("pkg-1.0.dist-info/RECORD", o).unwrap();
    z.write_all(record.as_bytes()).unwrap();
    z.finish().unwrap();
    let out = dir.path().join("out.whl");
    let sel = keep(&["gfx1100"], Ptx::Newest);
    let r = prune_path(&whl, &sel, &opts(Destination::File(out.clone()))).unwrap();
    let removed: Vec<&str> = r
        .removed
        .iter()
        .map(|f| f.path.rsplit('!').next().unwrap())
        .collect();
    assert_eq!(
        removed,
        [
            "/pkg/library/gfx906/a.co",
            "/pkg/library/TensileLibrary_lazy_gfx906.dat"
        ]
    );
    assert_eq!(r.removed[1].bytes, names[3].len() as u64);
    let mut zin = zip::ZipArchive::new(std::fs::File::open(&out).unwrap()).unwrap();
    let left: Vec<String> = (0..zin.len())
        .map(|i| zin.name_for_index(i).unwrap().unwrap().into_owned())
        .collect();
    assert_eq!(
        left,
        [
            "pkg/library/",
            "pkg/library/TensileLibrary_lazy_gfx1100.dat",
            "pkg/library/TensileLibrary.dat",
            "pkg-1.0.dist-info/RECORD",
        ]
    );
    let mut text = String::new();
    zin.by_name("pkg-1.0.dist-info/RECORD")
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert!(!text.contains("gfx906"), "{text}");
    assert!(text.contains("TensileLibrary_lazy_gfx1100.dat"), "{text}");
}

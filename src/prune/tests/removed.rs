//! Files that only other GPUs load go (issue #59): a file that is device
//! code alone, every image of which the rules drop, is marked to be
//! removed by [`prune_file`](crate::prune::prune_file) and removed by
//! [`prune_path`] and [`prune_tree`] (in place; reported in a dry run;
//! refused with `-o`/`-d` and with `keep_files`), taken out of wheels and
//! `.deb`s with their RECORD rows and `md5sums` lines, and the pip
//! RECORDs of a directory pruned in place follow.

use std::io::Read as _;
use std::path::Path;

use base64::Engine as _;
use sha2::Digest as _;

use super::{Ptx, bundle, code_object, keep};
use crate::prune::{
    Destination, Options, PathErrorKind, PathOptions, Selection, TreeOutcome, prune_file,
    prune_path, prune_tree,
};

/// An AMDGPU code object (v4, ELF `ET_DYN`) for the processor whose
/// `EF_AMDGPU_MACH` is `mach` (0x3f gfx90a, 0x36 gfx1030), then `fill`.
pub(in crate::prune) fn hsaco(mach: u8, fill: u8) -> Vec<u8> {
    let mut v = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 64, 2];
    v.resize(16, 0);
    v.extend_from_slice(&3u16.to_le_bytes()); // e_type: ET_DYN
    v.extend_from_slice(&224u16.to_le_bytes()); // e_machine: EM_AMDGPU
    v.extend_from_slice(&1u32.to_le_bytes()); // e_version
    v.resize(48, 0);
    v.extend_from_slice(&(0x500 | u32::from(mach)).to_le_bytes()); // e_flags
    v.extend_from_slice(&64u16.to_le_bytes()); // e_ehsize
    v.resize(400, fill);
    v
}

fn gfx90a() -> Selection {
    keep(&["gfx90a"], Ptx::Newest)
}

fn to(destination: Destination) -> PathOptions {
    PathOptions {
        destination,
        ..PathOptions::default()
    }
}

/// A bundle file of gfx1030 code alone, with an empty host entry (as
/// clang writes a `.hipfb`).
fn gfx1030_bundle() -> Vec<u8> {
    let old = code_object(7);
    bundle(
        &[
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", &old),
        ],
        4096,
    )
}

#[test]
fn device_code_alone_that_the_rules_drop_is_to_be_removed() {
    let opts = Options::default();
    let gone = prune_file(&hsaco(0x36, 1), &gfx90a(), &opts).unwrap();
    assert!(gone.remove && gone.output.is_none());
    assert_eq!(gone.freed, 400);
    let kept = prune_file(&hsaco(0x3f, 1), &gfx90a(), &opts).unwrap();
    assert!(!kept.remove && kept.output.is_none());
    // Kept (--keep-files): refused as before.
    let e = crate::prune::file::prune_file_as(&hsaco(0x36, 1), None, &gfx90a(), &opts, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("itself one device image (gfx1030"), "{e}");
    assert!(e.contains("--keep-files keeps such a file"), "{e}");
    // A bare bundle of gfx1030 code alone, its host entry empty.
    let b = prune_file(&gfx1030_bundle(), &gfx90a(), &opts).unwrap();
    assert!(b.remove);
    // With a host entry that holds bytes, it is pruned as before (refused:
    // it would keep no device image).
    let host = bundle(
        &[
            ("host-x86_64-unknown-linux-gnu-", b"host object"),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", &code_object(7)),
        ],
        4096,
    );
    assert!(prune_file(&host, &gfx90a(), &opts).is_err());
    // A bundle some image of which stays is pruned, not removed.
    let both = super::hip_bundle();
    let p = prune_file(&both, &gfx90a(), &opts).unwrap();
    assert!(!p.remove && p.output.is_some());
}

#[test]
fn generic_and_unknown_images_keep_the_file() {
    let opts = Options::default();
    // Bytes no scan can tell the kind of: the file stays (refused as
    // keeping no device image).
    let unknown = bundle(
        &[
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", &[9u8; 64]),
        ],
        8,
    );
    let r = prune_file(&unknown, &gfx90a(), &opts);
    assert!(r.is_err() || r.is_ok_and(|p| !p.remove));
    // SPIR-V, which names no processor.
    let mut spirv = 0x0723_0203u32.to_le_bytes().to_vec();
    spirv.resize(64, 0);
    let r = prune_file(&spirv, &gfx90a(), &opts);
    assert!(r.is_err() || r.is_ok_and(|p| !p.remove));
    // A host library is never removed.
    let lib = super::linked::library(&super::linked::hip_bundle(4096));
    let only = keep(&["gfx1100"], Ptx::Newest);
    let r = prune_file(&lib, &only, &opts);
    assert!(r.is_err() || r.is_ok_and(|p| !p.remove));
}

#[test]
fn a_file_named_alone_is_removed_in_place_listed_in_a_dry_run_refused_with_o() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k_gfx1030.hsaco");
    std::fs::write(&path, hsaco(0x36, 1)).unwrap();
    let r = prune_path(&path, &gfx90a(), &to(Destination::DryRun)).unwrap();
    assert_eq!(
        (r.removed.len(), r.removed[0].bytes, r.freed),
        (1, 400, 400)
    );
    assert!(path.exists());
    let out = dir.path().join("out.hsaco");
    let e = prune_path(&path, &gfx90a(), &to(Destination::File(out.clone()))).unwrap_err();
    assert_eq!(e.kind(), PathErrorKind::Refused);
    assert!(e.to_string().contains("itself one device image"), "{e}");
    assert!(path.exists() && !out.exists());
    let mut keeping = to(Destination::InPlace);
    keeping.keep_files = true;
    assert!(prune_path(&path, &gfx90a(), &keeping).is_err());
    assert!(path.exists());
    let r = prune_path(&path, &gfx90a(), &to(Destination::InPlace)).unwrap();
    assert_eq!((r.disk_after, r.bytes_after), (Some(0), 0));
    assert!(!path.exists());
}

/// A RECORD row for `rel` under `site`: its hash and size now.
fn row(site: &Path, rel: &str) -> String {
    let bytes = std::fs::read(site.join(rel)).unwrap();
    let sha = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(&bytes));
    format!("{rel},sha256={sha},{}", bytes.len())
}

#[test]
fn a_tree_loses_the_files_only_other_gpus_load_and_its_records_follow() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir_all(site.join("pkg/lib")).unwrap();
    std::fs::create_dir_all(site.join("pkg-1.0.dist-info")).unwrap();
    std::fs::write(site.join("pkg/lib/k_gfx90a.hsaco"), hsaco(0x3f, 1)).unwrap();
    std::fs::write(site.join("pkg/lib/k_gfx1030.hsaco"), hsaco(0x36, 2)).unwrap();
    std::fs::write(site.join("pkg/lib/k.hipfb"), super::hip_bundle()).unwrap();
    std::fs::write(site.join("pkg/lib/old.hipfb"), gfx1030_bundle()).unwrap();
    std::fs::write(site.join("pkg/__init__.py"), "").unwrap();
    let files = [
        "pkg/lib/k_gfx90a.hsaco",
        "pkg/lib/k_gfx1030.hsaco",
        "pkg/lib/k.hipfb",
        "pkg/lib/old.hipfb",
        "pkg/__init__.py",
    ];
    let mut record: String = files.iter().map(|f| row(&site, f) + "\n").collect();
    record.push_str("pkg-1.0.dist-info/RECORD,,\n");
    let record_path = site.join("pkg-1.0.dist-info/RECORD");
    std::fs::write(&record_path, &record).unwrap();

    // A dry run changes nothing, and says what would go.
    let tree = [dir.path().to_path_buf()];
    let seen = prune_tree(&tree, &gfx90a(), &to(Destination::DryRun), &mut |_, _| {});
    let removed: usize = seen
        .iter()
        .filter_map(|e| match &e.outcome {
            TreeOutcome::Pruned(r) => Some(r.removed.len()),
            _ => None,
        })
        .sum();
    assert_eq!(removed, 2);
    assert!(seen.iter().any(|e| matches!(
        e.outcome,
        TreeOutcome::Record {
            rows_rewritten: 1,
            rows_removed: 2
        }
    )));
    assert_eq!(std::fs::read_to_string(&record_path).unwrap(), record);

    let done = prune_tree(&tree, &gfx90a(), &to(Destination::InPlace), &mut |_, _| {});
    assert!(
        done.iter()
            .all(|e| !matches!(e.outcome, TreeOutcome::Failed(_)))
    );
    assert!(!site.join("pkg/lib/k_gfx1030.hsaco").exists());
    assert!(!site.join("pkg/lib/old.hipfb").exists());
    let want: String = [
        "pkg/lib/k_gfx90a.hsaco",
        "pkg/lib/k.hipfb",
        "pkg/__init__.py",
    ]
    .iter()
    .map(|f| row(&site, f) + "\n")
    .collect::<String>()
        + "pkg-1.0.dist-info/RECORD,,\n";
    assert_eq!(std::fs::read_to_string(&record_path).unwrap(), want);
    assert!(
        std::fs::metadata(site.join("pkg/lib/k.hipfb"))
            .unwrap()
            .len()
            < 5 * 4096
    );
}

#[test]
fn a_wheel_loses_the_members_only_other_gpus_load_with_their_record_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pkg-1.0-py3-none-any.whl");
    let (keep90a, old) = (hsaco(0x3f, 1), hsaco(0x36, 2));
    let data = super::path::wheel_of(
        &[
            ("pkg/k_gfx90a.hsaco", &keep90a),
            ("pkg/k_gfx1030.hsaco", &old),
        ],
        false,
    );
    std::fs::write(&path, &data).unwrap();
    let r = prune_path(&path, &gfx90a(), &to(Destination::InPlace)).unwrap();
    let gone: Vec<&str> = r.removed.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(gone, [format!("{}!/pkg/k_gfx1030.hsaco", path.display())]);
    let mut zin = zip::ZipArchive::new(std::fs::File::open(&path).unwrap()).unwrap();
    let names: Vec<String> = zin.file_names().map(|n| n.unwrap().into_owned()).collect();
    assert_eq!(names, ["pkg/k_gfx90a.hsaco", "pkg-1.0.dist-info/RECORD"]);
    let mut record = String::new();
    zin.by_name("pkg-1.0.dist-info/RECORD")
        .unwrap()
        .read_to_string(&mut record)
        .unwrap();
    assert_eq!(
        record,
        format!(
            "{}\r\npkg-1.0.dist-info/RECORD,,\r\n",
            super::path::record_row("pkg/k_gfx90a.hsaco", &keep90a)
        )
    );
    // Kept (--keep-files): the member is refused and left as it was, and
    // named; with nothing else to change, the wheel stays as it was.
    std::fs::write(&path, &data).unwrap();
    let mut keeping = to(Destination::InPlace);
    keeping.keep_files = true;
    let r = prune_path(&path, &gfx90a(), &keeping).unwrap();
    let left = format!("'{}!/pkg/k_gfx1030.hsaco': ", path.display());
    assert!(
        r.members_refused.len() == 1 && r.members_refused[0].starts_with(&left),
        "{r:?}"
    );
    assert!(r.removed.is_empty());
    assert_eq!(std::fs::read(&path).unwrap(), data);
    // --strict: the one refusal fails the whole wheel.
    keeping.strict = true;
    let e = prune_path(&path, &gfx90a(), &keeping).unwrap_err();
    assert!(
        e.refused() && e.to_string().contains("k_gfx1030.hsaco"),
        "{e}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), data);
}

/// A conda `paths_data` row for `rel` under `env`: its SHA-256 (hex) and
/// size now, as conda records them.
fn conda_row(env: &Path, rel: &str) -> serde_json::Value {
    let bytes = std::fs::read(env.join(rel)).unwrap();
    let sha: String = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    serde_json::json!({
        "_path": rel, "path_type": "hardlink", "sha256": sha,
        "sha256_in_prefix": sha, "size_in_bytes": bytes.len(),
    })
}

#[test]
fn a_conda_environment_keeps_its_package_records_true() {
    let dir = tempfile::tempdir().unwrap();
    let env = dir.path().join("env");
    std::fs::create_dir_all(env.join("lib")).unwrap();
    std::fs::create_dir_all(env.join("conda-meta")).unwrap();
    std::fs::write(env.join("lib/k_gfx1030.hsaco"), hsaco(0x36, 2)).unwrap();
    std::fs::write(env.join("lib/k.hipfb"), super::hip_bundle()).unwrap();
    std::fs::write(env.join("lib/notes.txt"), "hello").unwrap();
    let files = ["lib/k.hipfb", "lib/k_gfx1030.hsaco", "lib/notes.txt"];
    let record = |files: &[&str]| {
        let doc = serde_json::json!({
            "name": "k", "version": "1.0", "build": "0", "size": 1234,
            "files": files,
            "paths_data": {
                "paths": files.iter().map(|f| conda_row(&env, f)).collect::<Vec<_>>(),
                "paths_version": 1,
            },
        });
        serde_json::to_string_pretty(&doc).unwrap()
    };
    let meta = env.join("conda-meta/k-1.0-0.json");
    let before = record(&files);
    std::fs::write(&meta, &before).unwrap();
    let tree = [env.clone()];
    let dry = prune_tree(&tree, &gfx90a(), &to(Destination::DryRun), &mut |_, _| {});
    let said = |seen: &[crate::prune::TreeEntry]| {
        seen.iter()
            .find(|e| e.path == meta)
            .map(|e| match e.outcome {
                TreeOutcome::Record {
                    rows_rewritten,
                    rows_removed,
                } => (rows_rewritten, rows_removed),
                _ => (usize::MAX, usize::MAX),
            })
    };
    assert_eq!(said(&dry), Some((1, 1)));
    assert_eq!(std::fs::read_to_string(&meta).unwrap(), before);
    let done = prune_tree(&tree, &gfx90a(), &to(Destination::InPlace), &mut |_, _| {});
    assert_eq!(said(&done), Some((1, 1)));
    assert!(!env.join("lib/k_gfx1030.hsaco").exists());
    // What conda would write for the files as they are now.
    let want = record(&["lib/k.hipfb", "lib/notes.txt"]);
    assert_eq!(std::fs::read_to_string(&meta).unwrap(), want);
    assert_ne!(want, before);
}

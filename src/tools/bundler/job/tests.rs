//! Whole jobs on files in a temporary directory: bundling, listing and
//! unbundling (whole, streamed, archives), with what they say.

use std::ffi::OsString;
use std::path::Path;

use super::{Args, Failure, Note, check, run};

const HOST: &str = "host-x86_64-unknown-linux-gnu";
const GFX90A: &str = "hip-amdgcn-amd-amdhsa--gfx90a";
const GFX906: &str = "hip-amdgcn-amd-amdhsa--gfx906";

/// Runs the bundler on `a` in `dir` (its temporary directory), with
/// `vars` as the environment: the IDs listed and the notes, or LLVM's
/// line.
fn bundler(
    dir: &Path,
    a: &Args,
    vars: &[(&str, &str)],
) -> (Result<Vec<Vec<u8>>, String>, Vec<Note>) {
    let mut notes = Vec::new();
    let env = |k: &str| match k {
        "TMPDIR" => Some(OsString::from(dir)),
        _ => vars
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| OsString::from(v)),
    };
    let mut say = |n| notes.push(n);
    let r = check(a, &env, &mut say)
        .and_then(|job| run(&job, &mut say))
        .map_err(|f| match f {
            Failure::Said { llvm, .. } => llvm,
            Failure::File { path, error } => format!("'{path}': {error}"),
        });
    (r, notes)
}

/// `dir/name` as a string.
fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

/// Writes the host and two device files; their paths, in target order.
fn inputs(dir: &Path) -> Vec<String> {
    let files = [
        ("host.bc", b"host code".to_vec()),
        ("a.bc", b"gfx90a code".repeat(1000)),
        ("b.bc", b"gfx906 code".to_vec()),
    ];
    files
        .iter()
        .map(|(name, data)| {
            let p = path(dir, name);
            std::fs::write(&p, data).unwrap();
            p
        })
        .collect()
}

fn bundling(dir: &Path, file_type: &str, out: &str) -> Args {
    Args {
        file_type: file_type.into(),
        targets: vec![format!("{HOST},{GFX90A},{GFX906}")],
        input: inputs(dir),
        output: vec![path(dir, out)],
        align: 1,
        ..Args::default()
    }
}

fn unbundling(dir: &Path, file_type: &str, input: &str, targets: &[&str]) -> Args {
    Args {
        file_type: file_type.into(),
        targets: vec![targets.join(",")],
        input: vec![path(dir, input)],
        output: (0..targets.len())
            .map(|i| path(dir, &format!("out{i}")))
            .collect(),
        unbundle: true,
        align: 1,
        ..Args::default()
    }
}

fn listing(dir: &Path, file_type: &str, input: &str) -> Args {
    Args {
        file_type: file_type.into(),
        input: vec![path(dir, input)],
        list: true,
        align: 1,
        ..Args::default()
    }
}

/// The notes' text, one string.
fn text(notes: &[Note]) -> String {
    notes
        .iter()
        .map(|n| match n {
            Note::Text(t) => t.clone(),
            Note::Warning(w) => format!("warning: {w}\n"),
        })
        .collect()
}

#[test]
fn bundles_list_and_unbundle_each_format() {
    for (file_type, compress) in [("bc", false), ("bc", true), ("ll", false), ("ll", true)] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let a = Args {
            compress: Some(compress),
            verbose: Some(true),
            ..bundling(d, file_type, "fat")
        };
        let (r, notes) = bundler(d, &a, &[]);
        assert_eq!(r.unwrap(), Vec::<Vec<u8>>::new());
        let said = text(&notes);
        assert_eq!(
            said.contains("Compressed bundle format version: 3\n"),
            compress,
            "{said}"
        );
        let fat = std::fs::read(path(d, "fat")).unwrap();
        assert_eq!(crate::bundle::ccob::has_magic(&fat), compress);

        let (ids, notes) = bundler(d, &listing(d, file_type, "fat"), &[]);
        let mut ids: Vec<String> = ids
            .unwrap()
            .into_iter()
            .map(|id| String::from_utf8(id).unwrap())
            .collect();
        ids.sort();
        assert_eq!(
            ids,
            [GFX906.to_string(), GFX90A.to_string(), format!("{HOST}-")]
        );
        assert!(notes.is_empty());

        // The device entries, by LLVM's target-ID rules (gfx90a code
        // serves gfx90a:xnack+); verbose, the decompression is reported.
        let a = Args {
            verbose: Some(true),
            ..unbundling(
                d,
                file_type,
                "fat",
                &[
                    "hip-amdgcn-amd-amdhsa--gfx906",
                    "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
                ],
            )
        };
        let (r, notes) = bundler(d, &a, &[]);
        r.unwrap();
        let said = text(&notes);
        if compress {
            assert!(said.contains("Hashes match: Yes\n"), "{said}");
        } else {
            assert_eq!(said, "Uncompressed bundle.\n");
        }
        assert_eq!(std::fs::read(path(d, "out0")).unwrap(), b"gfx906 code");
        assert_eq!(
            std::fs::read(path(d, "out1")).unwrap(),
            b"gfx90a code".repeat(1000)
        );
    }
}

#[test]
fn missing_entries_fail_or_give_empty_files() {
    for compress in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let a = Args {
            compress: Some(compress),
            ..bundling(d, "bc", "fat")
        };
        bundler(d, &a, &[]).0.unwrap();
        let wanted = [
            "hip-amdgcn-amd-amdhsa--gfx1100",
            "host-aarch64-unknown-linux-gnu",
        ];
        let a = unbundling(d, "bc", "fat", &wanted);
        let (r, _) = bundler(d, &a, &[]);
        assert_eq!(
            r.unwrap_err(),
            "Can't find bundles for hip-amdgcn-amd-amdhsa--gfx1100 and \
             host-aarch64-unknown-linux-gnu-"
        );
        assert!(!Path::new(&path(d, "out0")).exists());
        // Allowed: an empty file; the host, as no request got an entry,
        // gets the whole input.
        let a = Args {
            allow_missing: true,
            ..a
        };
        bundler(d, &a, &[]).0.unwrap();
        assert_eq!(std::fs::read(path(d, "out0")).unwrap(), b"");
        let whole = std::fs::read(path(d, "out1")).unwrap();
        let fat = std::fs::read(path(d, "fat")).unwrap();
        if compress {
            assert_eq!(
                whole,
                crate::bundle::ccob::decompress(&fat, &Default::default())
                    .unwrap()
                    .data
            );
        } else {
            assert_eq!(whole, fat);
        }
    }
}

#[test]
fn faults_are_llvms_lines() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (r, _) = bundler(d, &bundling(d, "xyz", "fat"), &[]);
    assert_eq!(r.unwrap_err(), "'xyz': invalid file type specified");
    let a = Args {
        targets: vec![format!(
            "{HOST},{GFX906},hip-amdgcn-amd-amdhsa-unknown-gfx906"
        )],
        ..bundling(d, "bc", "fat")
    };
    let (r, _) = bundler(d, &a, &[]);
    assert_eq!(
        r.unwrap_err(),
        format!(
            "targets '{GFX906}' and 'hip-amdgcn-amd-amdhsa-unknown-gfx906' are the same bundle \
             entry '{GFX906}' once normalized"
        )
    );
    let missing = path(d, "missing");
    let (r, _) = bundler(d, &listing(d, "bc", "missing"), &[]);
    assert!(r.unwrap_err().starts_with(&format!("'{missing}': ")));
    // A CCOB whose hash is wrong, read with -verbose (which computes it).
    let a = Args {
        compress: Some(true),
        ..bundling(d, "bc", "fat")
    };
    bundler(d, &a, &[]).0.unwrap();
    let mut fat = std::fs::read(path(d, "fat")).unwrap();
    fat[24] ^= 1;
    std::fs::write(path(d, "fat"), &fat).unwrap();
    let a = Args {
        verbose: Some(true),
        ..listing(d, "bc", "fat")
    };
    let (r, _) = bundler(d, &a, &[]);
    assert!(r.unwrap_err().starts_with("Failed to decompress input: "));
    // Without -verbose, LLVM does not compute the hash: nor do we.
    bundler(d, &listing(d, "bc", "fat"), &[]).0.unwrap();
}

#[test]
fn the_environment_compresses_and_picks_the_version() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let vars = [
        ("OFFLOAD_BUNDLER_COMPRESS", "1"),
        ("COMPRESSED_BUNDLE_FORMAT_VERSION", "2"),
    ];
    bundler(d, &bundling(d, "bc", "fat"), &vars).0.unwrap();
    let fat = std::fs::read(path(d, "fat")).unwrap();
    assert!(crate::bundle::ccob::has_magic(&fat));
    assert_eq!(fat[4..6], 2u16.to_le_bytes());
}

#[test]
fn archives_unbundle_into_device_archives() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    bundler(d, &bundling(d, "bc", "k.bc"), &[]).0.unwrap();
    let member = std::fs::read(path(d, "k.bc")).unwrap();
    let members = [crate::archive::Member {
        name: "k.bc".into(),
        data: &member,
    }];
    let mut lib = Vec::new();
    crate::archive::layout_gnu(&members, true)
        .unwrap()
        .write_to(&mut lib, &[&member])
        .unwrap();
    std::fs::write(path(d, "lib.a"), &lib).unwrap();
    let a = unbundling(d, "a", "lib.a", &["hip-amdgcn-amd-amdhsa--gfx90a"]);
    bundler(d, &a, &[]).0.unwrap();
    let out = std::fs::read(path(d, "out0")).unwrap();
    let names: Vec<String> = crate::host::ar::Archive::parse(&out)
        .unwrap()
        .members()
        .map(|m| m.unwrap().name_lossy())
        .collect();
    assert_eq!(names, [format!("k-{GFX90A}k.bc")]);
    let a = unbundling(d, "a", "lib.a", &["hip-amdgcn-amd-amdhsa--gfx1100"]);
    let (r, _) = bundler(d, &a, &[]);
    assert_eq!(
        r.unwrap_err(),
        format!(
            "no compatible code object found for the target \
             'hip-amdgcn-amd-amdhsa--gfx1100' in heterogeneous archive library: {}",
            path(d, "lib.a")
        )
    );
}

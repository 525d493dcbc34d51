//! The fuzz bodies over every fixture and its truncations, and the
//! committed corpora replayed through their targets.

use super::*;
use std::path::{Path, PathBuf};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

#[test]
fn fuzz_bodies_accept_every_fixture() {
    let mut files = Vec::new();
    walk(&fixtures(), &mut files);
    // The fuzz corpora are replayed below, each by its own target.
    files.retain(|f| !f.starts_with(fixtures().join("fuzz")));
    assert!(!files.is_empty(), "no fixtures found");
    for f in files {
        let data = std::fs::read(&f).unwrap();
        for (_, body) in TARGETS {
            body(&data);
            // Every truncation of a fixture too: the reader must not panic.
            for cut in (0..data.len()).step_by(7) {
                body(&data[..cut]);
            }
        }
    }
}

/// The minimized corpus of every target (fixtures/fuzz/TARGET/, made by
/// `scripts/fuzz.sh` with `EXPORT=1`), crashes found on the way among
/// them, runs through its target on every test run.
#[test]
fn fuzz_corpora_replay() {
    for (name, body) in TARGETS {
        let mut files = Vec::new();
        walk(&fixtures().join("fuzz").join(name), &mut files);
        assert!(
            !files.is_empty(),
            "no committed corpus for fuzz target {name}"
        );
        for f in files {
            body(&std::fs::read(&f).unwrap());
        }
    }
}

/// Windows images built in memory (a CUDA DLL, plain, signed and with an
/// overlay, for x86-64 and ARM64, and COFF objects) through every fuzz
/// body, whole, truncated, and with each header byte flipped: the PE
/// reading and shrinking paths, which no committed corpus reaches yet.
#[test]
fn fuzz_bodies_accept_windows_images() {
    use crate::tests::pe::{self, Extras};
    let fatbins = vec![
        crate::fatbin::build(&[
            (2, 80, 0x11, &[0x7f, b'E', b'L', b'F', 1, 2, 3, 4][..]),
            (2, 90, 0x11, &[0x7f, b'E', b'L', b'F', 5, 6, 7, 8][..]),
        ]),
        crate::fatbin::build(&[(1, 90, 0x11, &b".version 8.0\0"[..])]),
    ];
    let mut inputs = Vec::new();
    for arm64 in [false, true] {
        for (certificates, overlay) in [
            (None, vec![]),
            (Some(vec![7u8; 64]), vec![]),
            (None, vec![1, 2, 3]),
        ] {
            let extras = Extras {
                arm64,
                certificates,
                overlay,
                checksum: true,
                text_pointer: Some(0),
            };
            inputs.push(pe::cuda_dll_with(&fatbins, &extras).bytes);
        }
        inputs.push(pe::coff_object(&fatbins, arm64));
    }
    for data in &inputs {
        for (_, body) in TARGETS {
            body(data);
            for cut in (0..data.len()).step_by(61) {
                body(&data[..cut]);
            }
            for at in 0..data.len().min(0x400) {
                let mut flipped = data.clone();
                flipped[at] ^= 0xff;
                body(&flipped);
            }
        }
    }
}

/// One file per target: every name in [`TARGETS`] has its body in
/// `src/fuzz/NAME.rs` and its cargo-fuzz target in
/// `scripts/fuzz/fuzz_targets/NAME.rs`, and every target file there is
/// in [`TARGETS`] (so the replay and the fixture runs above reach it).
#[test]
fn one_file_per_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut listed: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    listed.sort_unstable();
    let mut targets: Vec<String> = std::fs::read_dir(root.join("scripts/fuzz/fuzz_targets"))
        .unwrap()
        .flatten()
        .filter_map(|e| Some(e.file_name().to_str()?.strip_suffix(".rs")?.to_string()))
        .collect();
    targets.sort_unstable();
    assert_eq!(targets, listed, "scripts/fuzz/fuzz_targets/ and TARGETS");
    for name in listed {
        let body = root.join("src/fuzz").join(format!("{name}.rs"));
        assert!(body.is_file(), "{} is missing", body.display());
    }
}

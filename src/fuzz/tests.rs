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

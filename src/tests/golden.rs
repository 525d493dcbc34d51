//! Golden tests: our reader against `llvm-objdump --offloading`'s listing of
//! each fixture, made by LLVM 22 when the fixture was (see
//! `fixtures/offload_binary/make.sh`), and every malformed fixture rejected.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::Limits;
use crate::offload_binary::find_images;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/offload_binary")
}

/// Our listing in llvm-objdump's `--offloading` layout.
fn objdump_style(data: &[u8]) -> String {
    let mut s = String::from("\n");
    let images = find_images(data, &Limits::default()).expect("fixture reads");
    for (i, f) in images.iter().enumerate() {
        let img = &f.image;
        let _ = write!(
            s,
            "\nOFFLOADING IMAGE [{i}]:\nkind            {}\narch            {}\ntriple          {}\nproducer        {}\n",
            img.image_kind.name(),
            String::from_utf8_lossy(img.arch()),
            String::from_utf8_lossy(img.triple()),
            img.offload_kind.name()
        );
    }
    s
}

#[test]
fn listings_match_llvm_objdump() {
    let mut checked = 0;
    for e in std::fs::read_dir(fixtures()).unwrap().flatten() {
        let p = e.path();
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(input) = name.strip_suffix(".objdump") else {
            continue;
        };
        let want = std::fs::read_to_string(&p).unwrap();
        let data = std::fs::read(fixtures().join(input)).unwrap();
        // llvm-objdump separates images with one blank line and starts with
        // one; compare ignoring how many blank lines stand between.
        let norm = |s: &str| {
            s.lines()
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(norm(&objdump_style(&data)), norm(&want), "{input}");
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} golden listings found");
}

#[test]
fn malformed_fixtures_are_rejected() {
    let dir = fixtures().join("malformed");
    let mut checked = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let data = std::fs::read(e.path()).unwrap();
        let r = find_images(&data, &Limits::default());
        assert!(r.is_err(), "{} was accepted", e.path().display());
        checked += 1;
    }
    assert!(checked >= 8);
}

#[test]
fn image_bytes_are_borrowed_from_the_input() {
    let data = std::fs::read(fixtures().join("multi.bin")).unwrap();
    let images = find_images(&data, &Limits::default()).unwrap();
    let range = data.as_ptr_range();
    for f in &images {
        assert!(matches!(f.image.image, std::borrow::Cow::Borrowed(_)));
        assert!(f.image.image.is_empty() || range.contains(&f.image.image.as_ptr()));
    }
}

//! Fuzz bodies, shared by the cargo-fuzz targets in `scripts/fuzz/` and by a
//! unit test that runs them over every file in `fixtures/`, so stable CI
//! exercises them too.

use crate::offload_binary::{self, ImageSpec, Limits};

/// Reads `data` as OffloadBinaries; whatever is read must survive a write
/// and a second read unchanged. Must never panic.
pub fn offload_binary_read(data: &[u8]) {
    let limits = Limits {
        max_inflated: 1 << 24,
    };
    let Ok(images) = offload_binary::read_all(data, &limits) else {
        return;
    };
    for img in &images {
        assert!(img.image.len() as u64 <= data.len() as u64 || img.compressed);
    }
    let specs: Vec<ImageSpec> = images
        .iter()
        .map(|i| ImageSpec {
            image_kind: i.image_kind,
            offload_kind: i.offload_kind,
            flags: i.flags,
            strings: i
                .strings
                .iter()
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect(),
            size: i.image.len() as u64,
        })
        .collect();
    let bytes: Vec<&[u8]> = images.iter().map(|i| &*i.image).collect();
    for version in [1, 2] {
        // Values holding NUL cannot round-trip through version 1.
        if version == 1
            && specs.iter().any(|s| {
                s.strings
                    .iter()
                    .any(|(k, v)| k.contains(&0) || v.contains(&0))
            })
        {
            continue;
        }
        if specs
            .iter()
            .any(|s| s.strings.iter().any(|(k, _)| k.contains(&0)))
        {
            continue;
        }
        let layout = offload_binary::layout(&specs, version).expect("layout of read images");
        let mut out = Vec::new();
        layout.write_to(&mut out, &bytes).expect("write to memory");
        assert_eq!(out.len() as u64, layout.size);
        let again = offload_binary::read_all(&out, &limits).expect("re-read what we wrote");
        assert_eq!(again.len(), images.len());
        for (a, b) in images.iter().zip(&again) {
            assert_eq!(a.image, b.image);
            assert_eq!(a.image_kind, b.image_kind);
            assert_eq!(a.offload_kind, b.offload_kind);
            assert_eq!(a.strings, b.strings);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
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

    #[test]
    fn fuzz_bodies_accept_every_fixture() {
        let mut files = Vec::new();
        walk(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
            &mut files,
        );
        assert!(!files.is_empty(), "no fixtures found");
        for f in files {
            let data = std::fs::read(&f).unwrap();
            offload_binary_read(&data);
            // Every truncation of a fixture too: the reader must not panic.
            for cut in (0..data.len()).step_by(7) {
                offload_binary_read(&data[..cut]);
            }
        }
    }
}

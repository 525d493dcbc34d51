//! The fuzz body of OffloadBinaries: read, written, read again, and read
//! within a budget.

use crate::Limits;
use crate::offload_binary::{self, ImageSpec};

/// Reads `data` as OffloadBinaries; whatever is read must survive a write
/// and a second read unchanged. Must never panic.
pub fn offload_binary_read(data: &[u8]) {
    offload_binary_budget(data);
    let limits = Limits::uncompressed(1 << 24);
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
        let version = offload_binary::Version::try_from(version).expect("a version read");
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

/// Reads `data` as `list` and the packager do, within one budget for the
/// whole read (nested binaries included): however the binaries nest and
/// whatever they declare, no more is inflated, and no more images read,
/// than the budget allows.
fn offload_binary_budget(data: &[u8]) {
    use crate::Limits;
    use crate::offload_binary::{Budget, Inflate, Spent, find_images_streamed};
    let budget = Budget::new(Limits {
        max_uncompressed: Some(1 << 24),
        max_images: Some(10_000),
        max_files: Some(10_000),
        max_depth: Some(8),
    });
    budget.add_input(data.len() as u64);
    if let Ok(found) = find_images_streamed(data, &budget, Inflate::Nested) {
        let _ = offload_binary::listing::rows(&found.images, &budget, &|_| None);
    }
    assert!(budget.spent(Spent::Inflated) <= 1 << 24);
    assert!(budget.spent(Spent::Images) <= 10_000);
}

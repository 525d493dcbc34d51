//! The fuzz body of container image metadata: a `docker save` archive's
//! `manifest.json` and configs, and an OCI layout's `index.json`,
//! manifests and configs, as the scanners and prune read them.

/// Most files of a layout the body writes.
const MAX_FILES: usize = 64;
/// Most bytes of those files, in all.
const MAX_BYTES: usize = 1 << 20;

/// Reads `data` as a `docker save` archive (a tar naming images in its
/// `manifest.json`), as the scanners and prune do; and, when it is a tar
/// holding `index.json`, writes its regular members named `index.json`,
/// `oci-layout` or `blobs/sha256/HEX` (at most [`MAX_FILES`], of at most
/// [`MAX_BYTES`] in all) into a directory and reads that as an OCI
/// layout, as both do. Must never panic (and never hang: every JSON file
/// is read within its cap).
pub fn image_metadata(data: &[u8]) {
    #[cfg(feature = "files")]
    read(data);
    #[cfg(not(feature = "files"))]
    let _ = data;
}

/// [`image_metadata`], where files are read.
#[cfg(feature = "files")]
fn read(data: &[u8]) {
    if let Some(index) = crate::inputs::oci::TarIndex::read(data) {
        let _ = crate::inputs::oci::saved_images(&index);
    }
    crate::prune::image_metadata_for_fuzz(None, data);
    let Some(files) = layout_files(data) else {
        return;
    };
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let root = dir.path();
    if std::fs::create_dir_all(root.join("blobs/sha256")).is_err() {
        return;
    }
    for (name, bytes) in &files {
        let _ = std::fs::write(root.join(name), bytes);
    }
    let _ = crate::inputs::oci::layout_images(root);
    crate::prune::image_metadata_for_fuzz(Some(root), &[]);
}

/// The members of the tar `data` that a layout holds, when one of them is
/// `index.json`.
#[cfg(feature = "files")]
fn layout_files(data: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
    use std::io::Read;
    let mut tar = crate::package::tar::Reader::new(data, u64::MAX);
    let mut files = Vec::new();
    let mut total = 0;
    while let Ok(Some(h)) = tar.next() {
        let name = h.path_lossy();
        let blob = name
            .strip_prefix("blobs/sha256/")
            .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        if !(blob || name == "index.json" || name == "oci-layout") {
            continue;
        }
        let mut bytes = Vec::new();
        let left = MAX_BYTES.saturating_sub(total) as u64;
        if tar.body().take(left).read_to_end(&mut bytes).is_err() {
            break;
        }
        total += bytes.len();
        files.push((name, bytes));
        if files.len() >= MAX_FILES || total >= MAX_BYTES {
            break;
        }
    }
    files
        .iter()
        .any(|(n, _)| n == "index.json")
        .then_some(files)
}

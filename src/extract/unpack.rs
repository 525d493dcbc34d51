//! `offload-kit unpack`'s work: the images of the OffloadBinaries in a file
//! (an OffloadBinary, an object, an archive), all or those filters pick,
//! written into a directory under names built from their metadata, those
//! of compressed binaries streamed to their files after the whole
//! compressed data was checked. A file whose device code is in other
//! containers (bundles, fatbins) is refused: `extract` writes those.

use std::io;
use std::path::Path;

use crate::files::{Input, safe_component};
use crate::offload_binary::{self, Budget, FoundImage, ImageArgs, Inflate, OffloadImage, Spent};
use crate::tools::streams::Streams;

/// Why [`unpack`] failed.
#[derive(Debug)]
pub(crate) enum UnpackError {
    /// The input's OffloadBinaries cannot be read (damaged, or past a
    /// limit of the budget).
    Read(crate::Error),
    /// The input holds no OffloadBinary, but this many device images in
    /// other containers (bundles, fatbins, a file that is one image;
    /// bundles' host entries are not counted).
    Elsewhere(usize),
    /// The output directory cannot be created.
    CreateDir(io::Error),
    /// More files would be written than the budget allows (nothing was).
    TooManyFiles(crate::Error),
    /// The files would hold more bytes than `--max-uncompressed` allows
    /// (nothing was written): why, in words.
    TooManyBytes(String),
    /// This file cannot be written.
    Write(String, io::Error),
    /// The caller's listing failed.
    Listing(io::Error),
}

/// Writes the images of `input` (named `name`) that match any of
/// `filters` (every image without filters) into `dir`, within `budget`,
/// calling `listed` with the path of each file written, in order.
pub(crate) fn unpack(
    name: &str,
    input: &Input,
    budget: &Budget,
    filters: &[String],
    dir: &Path,
    listed: &mut dyn FnMut(&str) -> io::Result<()>,
) -> Result<(), UnpackError> {
    // Compressed binaries are checked whole (streamed through) before
    // anything is written, and their images streamed to their files.
    // The file's format, read once for both looks at it.
    let kind = crate::host::file_kind(input.bytes()).ok();
    let found =
        offload_binary::find_images_streamed_of(input.bytes(), kind, budget, Inflate::Check)
            .map_err(UnpackError::Read)?;
    if found.images.is_empty() {
        // Device code in another container (a .hip_fatbin's bundles, a
        // CUDA fatbin): say which command writes it, and write nothing.
        let opts = crate::scan::Options {
            max_uncompressed: budget.left(Spent::Inflated),
            ..crate::scan::Options::default()
        };
        let report = crate::scan::scan_of(input.bytes(), &opts, &mut crate::scan::NoVisit, kind);
        // Device images only: a bundle's host entry is none.
        let n = crate::scan::check::device_images(&report).count();
        if n > 0 {
            return Err(UnpackError::Elsewhere(n));
        }
    }
    let filters: Vec<ImageArgs> = filters.iter().map(|f| ImageArgs::parse(f)).collect();
    std::fs::create_dir_all(dir).map_err(UnpackError::CreateDir)?;
    let base = safe(crate::llvm::path::stem(name).as_bytes());
    let chosen: Vec<(usize, &FoundImage<'_>)> = found
        .images
        .iter()
        .enumerate()
        .filter(|(_, f)| filters.is_empty() || filters.iter().any(|flt| flt.matches(&f.image)))
        .collect();
    let n = chosen.len() as u64;
    budget
        .spend(Spent::Files, n, || format!("{n} images would be written"))
        .map_err(UnpackError::TooManyFiles)?;
    // What the files may hold together: checked from the images' sizes
    // before any is written, and counted again as they are.
    let allowance = crate::tools::streams::allowance(budget);
    let bytes = chosen
        .iter()
        .fold(0u64, |a, (_, f)| a.saturating_add(f.size()));
    if bytes > allowance.limit() {
        let given = match budget.limits().max_uncompressed {
            Some(_) => "--max-uncompressed",
            None => "the decompression budget of the input's size and its size",
        };
        return Err(UnpackError::TooManyBytes(format!(
            "the images would be written as {bytes} bytes, more than the {} its outputs may \
             hold ({given}); nothing written",
            allowance.limit()
        )));
    }
    let mut streams = Streams::new(&found);
    for (n, f) in chosen {
        let path = dir.join(unpacked_name(&base, &f.image, n));
        let shown = crate::files::shown(&path);
        streams
            .write(&shown, input, f, &allowance)
            .map_err(|e| UnpackError::Write(shown.to_string(), e))?;
        listed(&shown).map_err(UnpackError::Listing)?;
    }
    Ok(())
}

/// A file-name component made from bytes of the file.
fn safe(s: &[u8]) -> String {
    safe_component(&String::from_utf8_lossy(s), 100)
}

/// The name of the `n`th image of the input (`img`) whose stem made safe
/// is `base`: `<base>-<triple>-<arch>.<n>.<ext>`, the extension `bin` for
/// a kind that has none.
fn unpacked_name(base: &str, img: &OffloadImage<'_>, n: usize) -> String {
    let ext = match img.image_kind.extension() {
        "" => "bin",
        e => e,
    };
    format!(
        "{base}-{}-{}.{n}.{ext}",
        safe(img.triple()),
        safe(img.arch())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;
    use crate::offload_binary::{ImageKind, find_images};

    /// OffloadBinaries (version 1) of images (kind, triple, arch, bytes).
    fn packed(images: &[(ImageKind, &str, &str, &[u8])]) -> Vec<u8> {
        crate::tests::offload_binaries(images)
    }

    /// Unpacks `data` as `name` into `dir`: the files listed, as names in
    /// the directory.
    fn run(
        name: &str,
        data: Vec<u8>,
        filters: &[&str],
        dir: &Path,
        limits: Limits,
    ) -> Result<Vec<String>, UnpackError> {
        let filters: Vec<String> = filters.iter().map(ToString::to_string).collect();
        let mut listed = Vec::new();
        let budget = Budget::new(limits);
        unpack(
            name,
            &Input::from_vec(data),
            &budget,
            &filters,
            dir,
            &mut |p| {
                let file = Path::new(p).strip_prefix(dir).unwrap();
                listed.push(crate::files::shown(file).into_owned());
                Ok(())
            },
        )?;
        Ok(listed)
    }

    #[test]
    fn files_are_named_after_the_input_and_the_image() {
        let data = packed(&[
            (
                ImageKind::IMG_Object,
                "amdgcn-amd-amdhsa",
                "gfx90a:xnack+",
                b"1",
            ),
            (ImageKind::IMG_None, "a/b", "", b"2"),
        ]);
        let found = find_images(&data, &Limits::default()).unwrap();
        assert_eq!(
            unpacked_name("app", &found[0].image, 0),
            "app-amdgcn-amd-amdhsa-gfx90a_xnack+.0.o"
        );
        assert_eq!(
            unpacked_name("app", &found[1].image, 7),
            "app-a_b-none.7.bin"
        );
    }

    #[test]
    fn filters_pick_images_each_numbered_by_its_place_in_the_input() {
        let dir = tempfile::tempdir().unwrap();
        let data = packed(&[
            (
                ImageKind::IMG_Object,
                "amdgcn-amd-amdhsa",
                "gfx90a",
                b"first",
            ),
            (
                ImageKind::IMG_Object,
                "nvptx64-nvidia-cuda",
                "sm_80",
                b"second",
            ),
        ]);
        let limits = Limits::default();
        let listed = run(
            "d/app.bin",
            data.clone(),
            &["arch=sm_80"],
            dir.path(),
            limits,
        );
        assert_eq!(listed.unwrap(), ["app-nvptx64-nvidia-cuda-sm_80.1.o"]);
        let written = std::fs::read(dir.path().join("app-nvptx64-nvidia-cuda-sm_80.1.o"));
        assert_eq!(written.unwrap(), b"second");
        let listed = run("app.bin", data, &[], dir.path(), limits).unwrap();
        assert_eq!(listed.len(), 2);
    }

    #[test]
    fn too_many_files_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let data = packed(&[
            (ImageKind::IMG_Object, "a", "b", b"1"),
            (ImageKind::IMG_Object, "c", "d", b"2"),
        ]);
        let one = Limits {
            max_files: Some(1),
            ..Limits::default()
        };
        let e = run("app", data, &[], &out, one).unwrap_err();
        assert!(
            matches!(&e, UnpackError::TooManyFiles(e)
            if e.to_string().contains("2 images would be written")),
            "{e:?}"
        );
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
    }

    #[test]
    fn images_holding_more_than_max_uncompressed_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let data = packed(&[
            (ImageKind::IMG_Object, "a", "b", b"first"),
            (ImageKind::IMG_Object, "c", "d", b"second"),
        ]);
        let limit = |n| Limits {
            max_uncompressed: Some(n),
            ..Limits::default()
        };
        let e = run("app", data.clone(), &[], &out, limit(10)).unwrap_err();
        assert!(
            matches!(&e, UnpackError::TooManyBytes(why)
            if why.contains("11 bytes") && why.contains("--max-uncompressed")),
            "{e:?}"
        );
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
        let listed = run("app", data, &[], &out, limit(11)).unwrap();
        assert_eq!(listed.len(), 2);
    }

    #[test]
    fn device_code_in_bundles_is_left_to_extract() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("never");
        let entries = [
            ("host-x86_64-unknown-linux-gnu-".to_string(), 4),
            ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), 4),
        ];
        let mut fat = Vec::new();
        crate::bundle::layout(crate::bundle::Format::Binary, &entries, 1)
            .unwrap()
            .write_to(&mut fat, &[b"host", b"code"])
            .unwrap();
        let e = run("fat.bc", fat, &[], &out, Limits::default()).unwrap_err();
        // The count is of device images: the host entry is none.
        assert!(matches!(e, UnpackError::Elsewhere(1)), "{e:?}");
        assert!(!out.exists());
        // Neither OffloadBinaries nor other device code: nothing to write.
        let listed = run("x", b"plain".to_vec(), &[], &out, Limits::default());
        assert!(listed.unwrap().is_empty());
    }
}

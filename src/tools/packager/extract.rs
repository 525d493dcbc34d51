//! Extracting images as `llvm-offload-binary IN --image=<filter>` does, and
//! every image (nested OffloadBinaries walked) as newer LLVM does without
//! `--image`: which files are written, in what order, and writing them,
//! images streamed file to file. The drop-in prints what [`Said`] reports
//! and words an [`ExtractError`] as LLVM does.

use std::io;

use super::filter::{extracted_name, files_to_write, matches, member_name};
use crate::archive;
use crate::files::{Input, write_layout};
use crate::offload_binary::{
    self, Budget, FoundImage, ImageArgs, Inflate, Spent, Streamed, has_magic,
};
use crate::tools::streams::Streams;

/// Why [`extract`] failed.
#[derive(Debug)]
pub(crate) enum ExtractError {
    /// The input, or an OffloadBinary nested in one of its images, is not
    /// a valid OffloadBinary (or a limit of the budget was reached reading
    /// it): `what` names it (and where in it).
    Read {
        /// `'<input>'`, or `'<input>': the OffloadBinary inside image
        /// '<triple>-<arch>'`.
        what: String,
        /// What is wrong.
        error: crate::Error,
    },
    /// More files would be written than the budget allows (nothing was).
    TooManyFiles(crate::Error),
    /// `--archive` with a filter that names no `file=`.
    NoFile,
    /// The archive of this file cannot be laid out.
    Archive(String, crate::Error),
    /// Reading or writing this file failed.
    Io(String, io::Error),
}

/// What an extraction reports on its way, for the caller to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Said<'a> {
    /// Several images match a filter whose `file=` is this file: the last
    /// one is written (LLVM's warning).
    SharedFile(&'a str),
    /// An image was written to this file (extracting every image).
    Extracted(&'a str),
}

/// Extracts the images of `input` (named `name`, as typed) within `budget`:
/// with `filters` (`--image` arguments), each filter's matches to its
/// `file=` (the last match), to one GNU archive there with `archive`, or
/// else to `<stem>-<triple>-<arch>.<i>.<ext>` each; without filters, every
/// image as [`extract_all`] does. Compressed binaries are checked whole
/// before anything is written, and every file is counted against the
/// budget first.
pub(crate) fn extract(
    name: &str,
    input: &Input,
    budget: &Budget,
    filters: &[&str],
    archive: bool,
    say: &mut dyn FnMut(Said<'_>),
) -> Result<(), ExtractError> {
    // Compressed binaries are checked whole (streamed through) before
    // anything is written, and their images streamed to their files;
    // without filters, the images that are binaries themselves are kept to
    // be read in turn.
    let inflate = if filters.is_empty() {
        Inflate::Nested
    } else {
        Inflate::Check
    };
    let found =
        offload_binary::find_images_streamed(input.bytes(), budget, inflate).map_err(|error| {
            ExtractError::Read {
                what: format!("'{name}'"),
                error,
            }
        })?;
    if filters.is_empty() {
        return extract_all(name, input, &found, budget, say);
    }
    let chosen: Vec<(ImageArgs, Vec<&FoundImage<'_>>)> = filters
        .iter()
        .map(|filter| {
            let args = ImageArgs::parse(filter);
            let matched = found.images.iter().filter(|f| matches(&args, f)).collect();
            (args, matched)
        })
        .collect();
    // Every file counted before the first is written.
    spend_files(name, budget, files_to_write(&chosen, archive))?;
    let allowance = crate::tools::streams::allowance(budget);
    let mut streams = Streams::new(&found);
    for (args, matched) in chosen {
        let Some(&last) = matched.last() else {
            continue;
        };
        if archive {
            let Some(file) = args.get("file") else {
                return Err(ExtractError::NoFile);
            };
            write_archive(name, input, file, &matched, &mut streams)?;
        } else if let Some(file) = args.get("file") {
            if matched.len() > 1 {
                say(Said::SharedFile(file));
            }
            streams
                .write(file, input, last, &allowance)
                .map_err(|e| ExtractError::Io(file.to_string(), e))?;
        } else {
            for (i, f) in matched.iter().enumerate() {
                let file = extracted_name(name, &f.image, i as u64, false);
                streams
                    .write(&file, input, f, &allowance)
                    .map_err(|e| ExtractError::Io(file.clone(), e))?;
            }
        }
    }
    Ok(())
}

/// Spends `files` files of `budget`, or fails naming the input.
fn spend_files(name: &str, budget: &Budget, files: u64) -> Result<(), ExtractError> {
    budget
        .spend(Spent::Files, files, || {
            format!("'{name}': {files} files would be written")
        })
        .map_err(ExtractError::TooManyFiles)
}

/// Writes the images `matched` (found in `input`, named `name`) as the
/// members of a GNU archive `file`, each named after the buffer LLVM read
/// it from: the archive member, or the input path as typed.
fn write_archive(
    name: &str,
    input: &Input,
    file: &str,
    matched: &[&FoundImage<'_>],
    streams: &mut Streams<'_, '_>,
) -> Result<(), ExtractError> {
    // The bytes of images of compressed binaries, streamed into temporary
    // files: the archive copies them file to file.
    let mut inflated = Vec::new();
    for f in matched {
        inflated.push(
            streams
                .inflate_to_temp_file(f)
                .map_err(|e| ExtractError::Io(name.to_string(), e))?,
        );
    }
    let bytes = |k: usize| -> (&Input, &[u8]) {
        match &inflated[k] {
            Some(temp) => (temp, temp.bytes()),
            None => (input, &matched[k].image.image),
        }
    };
    let members: Vec<archive::Member<'_>> = matched
        .iter()
        .enumerate()
        .map(|(k, f)| archive::Member {
            name: f
                .member
                .as_deref()
                .map_or_else(|| name.to_string(), |m| member_name(m).to_string()),
            data: bytes(k).1,
        })
        .collect();
    let layout = archive::layout_gnu(&members, true)
        .map_err(|e| ExtractError::Archive(file.to_string(), e))?;
    write_layout(file, &layout, bytes).map_err(|e| ExtractError::Io(file.to_string(), e))
}

/// Extracts every image, as newer LLVM does without `--image`: an image that
/// is itself an OffloadBinary is replaced by its images (a malformed one is
/// an error), the others are written to `<stem>-<triple>[-<arch>].<n>.<ext>`
/// with `n` counting the written images, each reported as
/// [`Said::Extracted`].
///
/// Two passes: the first reads every nested binary and counts the files
/// (all within the command's budget), so that nothing is written from an
/// input that cannot be read whole or would write too many files; the
/// second reads the nested binaries again and writes.
fn extract_all(
    name: &str,
    input: &Input,
    found: &Streamed<'_>,
    budget: &Budget,
    say: &mut dyn FnMut(Said<'_>),
) -> Result<(), ExtractError> {
    let mut files = 0u64;
    walk(name, found, budget, 0, &mut |_, _| {
        files += 1;
        Ok(())
    })?;
    spend_files(name, budget, files)?;
    let allowance = crate::tools::streams::allowance(budget);
    let mut n = 0u64;
    walk(name, found, &budget.renewed(), 0, &mut |streams, f| {
        let file = extracted_name(name, &f.image, n, true);
        n += 1;
        streams
            .write(&file, input, f, &allowance)
            .map_err(|e| ExtractError::Io(file.clone(), e))?;
        say(Said::Extracted(&file));
        Ok(())
    })
}

/// What a leaf of [`walk`] is called with: the streams its bytes come
/// from, and the image.
type Leaf<'l> = dyn FnMut(&mut Streams<'_, '_>, &FoundImage<'_>) -> Result<(), ExtractError> + 'l;

/// Calls `leaf` with each image of `found` that is not an OffloadBinary
/// itself, in order, and the streams its bytes come from; reads the
/// images that are (`depth` levels deep in the file's) with `budget` and
/// goes on into theirs.
fn walk(
    name: &str,
    found: &Streamed<'_>,
    budget: &Budget,
    depth: u64,
    leaf: &mut Leaf<'_>,
) -> Result<(), ExtractError> {
    let mut streams = Streams::new(found);
    for f in &found.images {
        let img = &f.image;
        if !has_magic(&img.image) {
            leaf(&mut streams, f)?;
            continue;
        }
        let what = format!(
            "'{name}': the OffloadBinary inside image '{}-{}'",
            String::from_utf8_lossy(img.triple()),
            String::from_utf8_lossy(img.arch())
        );
        let inner = budget
            .check_depth(depth + 1, || format!("nested {} deep", depth + 1))
            .and_then(|()| {
                offload_binary::find_images_streamed(&img.image, budget, Inflate::Nested)
            })
            .map_err(|error| ExtractError::Read { what, error })?;
        walk(name, &inner, budget, depth + 1, leaf)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;
    use crate::offload_binary::ImageKind;

    /// OffloadBinaries (version 1) of images (triple, arch, bytes).
    fn packed(images: &[(&str, &str, &[u8])]) -> Vec<u8> {
        let objects: Vec<_> = images
            .iter()
            .map(|&(t, a, d)| (ImageKind::IMG_Object, t, a, d))
            .collect();
        crate::tests::offload_binaries(&objects)
    }

    fn budget(limits: Limits) -> Budget {
        Budget::new(limits)
    }

    #[test]
    fn filters_write_their_files_and_warn_when_one_is_shared() {
        let dir = tempfile::tempdir().unwrap();
        let at = |f: &str| dir.path().join(f).to_string_lossy().into_owned();
        let input = Input::from_vec(packed(&[
            ("amdgcn-amd-amdhsa", "gfx90a", b"first"),
            ("amdgcn-amd-amdhsa", "gfx942", b"second"),
        ]));
        let filters = [
            format!("arch=gfx90a,file={}", at("one.o")),
            format!("kind=openmp,file={}", at("both.o")),
            format!("arch=none,file={}", at("none.o")),
        ];
        let filters: Vec<&str> = filters.iter().map(String::as_str).collect();
        let mut said = Vec::new();
        let b = budget(Limits::default());
        extract("in.bin", &input, &b, &filters, false, &mut |s| {
            said.push(format!("{s:?}"));
        })
        .unwrap();
        assert_eq!(said, [format!("SharedFile({:?})", at("both.o"))]);
        assert_eq!(std::fs::read(at("one.o")).unwrap(), b"first");
        // The last match is the one written.
        assert_eq!(std::fs::read(at("both.o")).unwrap(), b"second");
        assert!(!dir.path().join("none.o").exists());
    }

    #[test]
    fn archives_need_a_file_and_name_members_after_the_input() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.a").to_string_lossy().into_owned();
        let input = Input::from_vec(packed(&[("nvptx64", "sm_80", b"cubin")]));
        let b = budget(Limits::default());
        let filter = format!("kind=openmp,file={file}");
        extract("dir/in.bin", &input, &b, &[&filter], true, &mut |_| {}).unwrap();
        let written = std::fs::read(&file).unwrap();
        assert!(written.starts_with(b"!<arch>\n"));
        assert!(memchr::memmem::find(&written, b"dir/in.bin").is_some());
        assert!(written.ends_with(b"cubin\n") || written.ends_with(b"cubin"));
        let e = extract("in", &input, &b, &["kind=openmp"], true, &mut |_| {});
        assert!(matches!(e, Err(ExtractError::NoFile)), "{e:?}");
    }

    #[test]
    fn every_image_is_walked_into_nested_binaries_in_order() {
        let inner = packed(&[("nvptx64", "sm_80", b"a"), ("nvptx64", "", b"b")]);
        let data = packed(&[("amdgcn-amd-amdhsa", "gfx90a", b"x"), ("host", "", &inner)]);
        let found = offload_binary::find_images_streamed(
            &data,
            &budget(Limits::default()),
            Inflate::Nested,
        )
        .unwrap();
        let mut names = Vec::new();
        let mut n = 0u64;
        walk("app", &found, &budget(Limits::default()), 0, &mut |_, f| {
            names.push(extracted_name("app", &f.image, n, true));
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(
            names,
            [
                "app-amdgcn-amd-amdhsa-gfx90a.0.o",
                "app-nvptx64-sm_80.1.o",
                "app-nvptx64.2.o"
            ]
        );
        // Too deep: the error names the image the binary is in.
        let shallow = budget(Limits {
            max_depth: Some(0),
            ..Limits::default()
        });
        let e = walk("app", &found, &shallow, 0, &mut |_, _| Ok(())).unwrap_err();
        let ExtractError::Read { what, .. } = e else {
            panic!("{e:?}");
        };
        assert_eq!(what, "'app': the OffloadBinary inside image 'host-'");
    }

    #[test]
    fn files_are_counted_before_any_is_written() {
        let input = Input::from_vec(packed(&[("a", "b", b"1"), ("c", "d", b"2")]));
        let one = budget(Limits {
            max_files: Some(1),
            ..Limits::default()
        });
        let mut said = 0;
        let e = extract("in", &input, &one, &[], false, &mut |_| said += 1).unwrap_err();
        let ExtractError::TooManyFiles(e) = e else {
            panic!("{e:?}");
        };
        assert!(
            e.to_string().contains("'in': 2 files would be written"),
            "{e}"
        );
        assert_eq!(said, 0);
        let filters = ["kind=openmp", "kind=openmp"];
        let e = extract("in", &input, &one, &filters, false, &mut |_| {}).unwrap_err();
        assert!(matches!(e, ExtractError::TooManyFiles(_)), "{e:?}");
    }

    #[test]
    fn a_damaged_input_is_a_read_error_naming_it() {
        let mut data = packed(&[("a", "b", b"1")]);
        data.truncate(40);
        let input = Input::from_vec(data);
        let b = budget(Limits::default());
        let e = extract("in", &input, &b, &[], false, &mut |_| {}).unwrap_err();
        assert!(
            matches!(&e, ExtractError::Read { what, .. } if what == "'in'"),
            "{e:?}"
        );
    }
}

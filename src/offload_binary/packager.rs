//! What `llvm-offload-binary` (LLVM 22, formerly `clang-offload-packager`)
//! decides and writes, with the additions of newer upstream releases, for
//! its drop-in and for `offload-kit pack`: packing image files into an
//! OffloadBinary file ([`pack_files`]), the `--compress` options, which
//! found images an extraction filter takes, the names of the files
//! extracted images are written to, and extracting them (`extract.rs`,
//! [`extract()`]).

use super::args::ImageArgs;
use super::container::FoundImage;
use super::read::OffloadImage;
use super::write::{Compression, Version};
use crate::error::Error;

#[cfg(feature = "files")]
mod extract;
#[cfg(feature = "files")]
pub(crate) use extract::{ExtractError, Said, extract};

/// How [`pack_files`] packs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    /// Uncompressed binaries of this version.
    Plain(Version),
    /// One compressed version-3 binary holding every image (newer LLVM's
    /// `--compress`), at this level.
    Compressed(Compression, i32),
}

/// Why [`pack_files`] failed.
#[derive(Debug)]
pub enum PackError {
    /// This `--image` argument names no file.
    NoFile(String),
    /// An image file could not be opened.
    Open(String, std::io::Error),
    /// The binary cannot be laid out or compressed.
    Layout(Error),
    /// The output could not be written.
    Write(String, std::io::Error),
}

/// Packs the files named by the `--image` arguments `images` (each parsed
/// as LLVM 22 parses it, a repeated `file` key packing several files) into
/// `output`, atomically: image kinds from the files, binaries as `packing`
/// says. Uncompressed, the images are copied file to file; compressed, the
/// whole binary is built in memory, as compression needs it there.
#[cfg(feature = "files")]
pub fn pack_files<'a>(
    images: impl IntoIterator<Item = &'a str>,
    output: &str,
    packing: Packing,
) -> Result<(), PackError> {
    use crate::files::{Input, write_bytes, write_layout};
    let mut specs = Vec::new();
    let mut inputs = Vec::new();
    for image in images {
        let args = ImageArgs::parse(image);
        let Some(files) = args.files() else {
            return Err(PackError::NoFile(image.to_string()));
        };
        for file in files {
            let input = Input::open(file).map_err(|e| PackError::Open(file.to_string(), e))?;
            specs.push(args.image_spec(file, input.bytes()));
            inputs.push(input);
        }
    }
    let failed = |e| PackError::Write(output.to_string(), e);
    let (how, level) = match packing {
        Packing::Plain(version) => {
            let layout = super::layout(&specs, version).map_err(PackError::Layout)?;
            return write_layout(output, &layout, |i| (&inputs[i], inputs[i].bytes()))
                .map_err(failed);
        }
        Packing::Compressed(how, level) => (how, level),
    };
    let layout = super::layout_v3(&specs).map_err(PackError::Layout)?;
    let mut plain = Vec::new();
    let sources: Vec<&[u8]> = inputs.iter().map(Input::bytes).collect();
    layout.write_to(&mut plain, &sources).map_err(failed)?;
    let packed = super::compress(&plain, how, level).map_err(PackError::Layout)?;
    drop(plain);
    let packed = Input::from_vec(packed);
    write_bytes(output, &packed, packed.bytes()).map_err(failed)
}

/// The compression `--compress` asks for, given `--compression-format`
/// and `--compression-level`, checked as newer LLVM checks them (its
/// messages). zstd at level 5 unless told otherwise; zlib at 6.
pub fn compression(
    format: Option<&str>,
    level: Option<&str>,
) -> Result<(Compression, i32), String> {
    let how = match format.unwrap_or("zstd") {
        "zstd" => Compression::Zstd,
        "zlib" => Compression::Zlib,
        other => {
            return Err(format!(
                "invalid compression format '{other}'; expected 'zstd' or 'zlib'"
            ));
        }
    };
    let (name, default, range) = match how {
        Compression::Zstd => ("zstd", 5, zstd::compression_level_range()),
        Compression::Zlib => ("zlib", 6, 0..=9),
    };
    let level = match level {
        None => default,
        Some(v) => v.parse::<i32>().map_err(|_| {
            format!("for the --compression-level option: '{v}' value invalid for integer argument!")
        })?,
    };
    if !range.contains(&level) {
        return Err(format!(
            "invalid {name} compression level {level}; expected a value in [{}, {}]",
            range.start(),
            range.end()
        ));
    }
    Ok((how, level))
}

/// Whether `found` passes `filter`: LLVM 22's rules, plus `member=`, which
/// compares the archive member the image came from (its own name, or the
/// whole `outer(inner)` path) where there is one.
pub fn matches(filter: &ImageArgs, found: &FoundImage<'_>) -> bool {
    match (filter.get("member"), &found.member) {
        (Some(want), Some(have)) => {
            (have == want || member_name(have) == want)
                && filter.matches_ignoring(&found.image, "member")
        }
        // Not from an archive: LLVM 22's rule, `member` is a string key.
        _ => filter.matches(&found.image),
    }
}

/// The innermost member name of an `outer(inner)` member path.
pub fn member_name(path: &str) -> &str {
    match path.rfind('(') {
        Some(i) => path[i + 1..].strip_suffix(')').unwrap_or(&path[i + 1..]),
        None => path,
    }
}

/// How many files extracting `chosen` (each filter with the images it
/// matched) writes: one per image, or one per filter when the images go
/// to its `file=` or, with `--archive`, into one archive.
pub fn files_to_write(chosen: &[(ImageArgs, Vec<&FoundImage<'_>>)], archive: bool) -> u64 {
    chosen
        .iter()
        .map(|(args, matched)| match matched.len() {
            0 => 0,
            n if !archive && args.get("file").is_none() => n as u64,
            _ => 1,
        })
        .sum()
}

/// The file the `n`th image extracted from `input` is written to without
/// a `file=`: `<stem>-<triple>-<arch>.<n>.<ext>`, as LLVM 22 names it; with
/// `skip_empty_arch` (extracting every image, as newer LLVM does), without
/// `-<arch>` when the image has none. Names come from the file, so `/` and
/// NUL become `_`, keeping the file inside the directory.
pub fn extracted_name(
    input: &str,
    img: &OffloadImage<'_>,
    n: u64,
    skip_empty_arch: bool,
) -> String {
    let mut file = format!(
        "{}-{}",
        crate::llvm::path::stem(input),
        String::from_utf8_lossy(img.triple())
    );
    if !(skip_empty_arch && img.arch().is_empty()) {
        file.push('-');
        file.push_str(&String::from_utf8_lossy(img.arch()));
    }
    file.push_str(&format!(".{n}.{}", img.image_kind.extension()));
    file.replace(['/', '\0'], "_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offload_binary::{ImageKind, Limits, find_images};

    /// An OffloadBinary (version 1) of images with these triples and arches.
    fn packed(images: &[(&str, &str)]) -> Vec<u8> {
        let objects: Vec<_> = images
            .iter()
            .map(|&(t, a)| (ImageKind::IMG_Object, t, a, &b"code"[..]))
            .collect();
        crate::tests::offload_binaries(&objects)
    }

    #[test]
    fn compression_options_are_checked_as_newer_llvm_does() {
        assert_eq!(compression(None, None), Ok((Compression::Zstd, 5)));
        assert_eq!(compression(Some("zlib"), None), Ok((Compression::Zlib, 6)));
        assert_eq!(
            compression(Some("zlib"), Some("9")),
            Ok((Compression::Zlib, 9))
        );
        assert_eq!(
            compression(Some("lz4"), Some("x")).unwrap_err(),
            "invalid compression format 'lz4'; expected 'zstd' or 'zlib'"
        );
        assert_eq!(
            compression(None, Some("x")).unwrap_err(),
            "for the --compression-level option: 'x' value invalid for integer argument!"
        );
        assert_eq!(
            compression(Some("zlib"), Some("10")).unwrap_err(),
            "invalid zlib compression level 10; expected a value in [0, 9]"
        );
    }

    #[test]
    fn extracted_files_are_named_after_the_input_and_the_image() {
        let data = packed(&[("amdgcn-amd-amdhsa", "gfx90a"), ("x/y", "")]);
        let found = find_images(&data, &Limits::default()).unwrap();
        let (a, b) = (&found[0].image, &found[1].image);
        assert_eq!(
            extracted_name("dir/app.out", a, 0, false),
            "app-amdgcn-amd-amdhsa-gfx90a.0.o"
        );
        assert_eq!(extracted_name("app", b, 1, false), "app-x_y-.1.o");
        assert_eq!(extracted_name("app", b, 1, true), "app-x_y.1.o");
    }

    #[test]
    fn filters_pick_images_and_members() {
        let data = packed(&[("amdgcn-amd-amdhsa", "gfx90a"), ("nvptx64", "sm_80")]);
        let mut found = find_images(&data, &Limits::default()).unwrap();
        let gfx = ImageArgs::parse("arch=gfx90a,file=out.o");
        let picked: Vec<bool> = found.iter().map(|f| matches(&gfx, f)).collect();
        assert_eq!(picked, [true, false]);
        // member= compares the member the image came from, by its whole
        // path or its innermost name; without one, it is a string key.
        let by_member = ImageArgs::parse("member=k.o");
        assert!(!matches(&by_member, &found[0]));
        found[0].member = Some("lib.a(k.o)".into());
        assert!(matches(&by_member, &found[0]));
        assert!(matches(&ImageArgs::parse("member=lib.a(k.o)"), &found[0]));
        assert!(!matches(&ImageArgs::parse("member=j.o"), &found[0]));
        assert_eq!(member_name("lib.a(k.o)"), "k.o");
        assert_eq!(member_name("plain.o"), "plain.o");
        // One file per image, or per filter with file= or --archive.
        let all = ImageArgs::parse("kind=openmp");
        let chosen = vec![
            (gfx, vec![&found[0]]),
            (all, found.iter().collect()),
            (ImageArgs::parse("arch=none"), vec![]),
        ];
        assert_eq!(files_to_write(&chosen, false), 3);
        assert_eq!(files_to_write(&chosen, true), 2);
    }
}

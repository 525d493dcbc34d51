//! Which found images an `llvm-offload-binary` extraction filter takes
//! ([`matches`]), how many files extracting them writes, and the names of
//! the files extracted images are written to, as LLVM 22 names them.

use crate::offload_binary::{FoundImage, ImageArgs, OffloadImage};

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
    use crate::Limits;
    use crate::offload_binary::{ImageKind, find_images};

    /// An OffloadBinary (version 1) of images with these triples and arches.
    fn packed(images: &[(&str, &str)]) -> Vec<u8> {
        let objects: Vec<_> = images
            .iter()
            .map(|&(t, a)| (ImageKind::IMG_Object, t, a, &b"code"[..]))
            .collect();
        crate::tests::offload_binaries(&objects)
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

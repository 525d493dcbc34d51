//! `extract` and `inspect --hash` on compressed version 3 OffloadBinaries
//! (zstd and zlib, as `llvm-offload-binary --compress` writes them), which
//! the scanner streams: the files written and the hashes are the images'
//! bytes, bare and inside an ELF object's `.llvm.offloading` section; a
//! binary whose data is cut or whose inflated size lies makes `extract`
//! fail naming the file, with nothing written.

use std::path::Path;

use libtest_mimic::{Failed, Trial};
use offload_kit::offload_binary::{
    self as ob, Compression, ImageKind, ImageSpec, OffloadKind, compress,
};
use offload_kit::scan::HashAlgo;
use serde_json::Value;

use crate::util::{files, llvm, ours, run, same, same_bytes, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(offload_binary_v3_images_are_the_inputs, &[]),
        trial!(offload_binary_v3_in_an_object, &["llvm-objcopy"]),
        trial!(offload_binary_v3_damaged_writes_nothing, &[]),
    ]
}

/// Filler that compresses, different for each seed.
fn filler(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = b"\x7fELF".to_vec();
    v.extend((0..len).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 24) as u8
    }));
    v
}

/// The images: one over a few MiB, an empty one, a small one.
fn images() -> Vec<Vec<u8>> {
    vec![filler(1, 3_000_000), Vec::new(), filler(2, 700)]
}

/// A compressed version 3 binary of `images`, for gfx90a, gfx942, gfx1100.
fn packed(images: &[Vec<u8>], how: Compression) -> Result<Vec<u8>, Failed> {
    openmp_v3(images, &["gfx90a", "gfx942", "gfx1100"], how, 3)
}

/// A version 3 OffloadBinary of OpenMP object `images` for amdgcn, image
/// `i` for `archs[i]`, compressed by `how` at `level`.
pub(crate) fn openmp_v3(
    images: &[Vec<u8>],
    archs: &[&str],
    how: Compression,
    level: i32,
) -> Result<Vec<u8>, Failed> {
    let specs: Vec<ImageSpec> = images
        .iter()
        .zip(archs)
        .map(|(img, arch)| ImageSpec {
            image_kind: ImageKind::IMG_Object,
            offload_kind: OffloadKind::OFK_OpenMP,
            strings: vec![
                (b"triple".to_vec(), b"amdgcn-amd-amdhsa".to_vec()),
                (b"arch".to_vec(), arch.as_bytes().to_vec()),
            ],
            size: img.len() as u64,
            ..ImageSpec::default()
        })
        .collect();
    let refs: Vec<&[u8]> = images.iter().map(Vec::as_slice).collect();
    let mut plain = Vec::new();
    ob::layout(&specs, ob::Version::V3)
        .map_err(|e| e.to_string())?
        .write_to(&mut plain, &refs)
        .map_err(|e| e.to_string())?;
    compress(&plain, how, level).map_err(|e| e.to_string().into())
}

/// Extracts `file` into `out` and checks the files are `images`, in the
/// order of their image ids; `inspect --hash=md5` gives their hashes.
fn check_extract(dir: &Path, file: &str, out: &str, images: &[Vec<u8>]) -> Result<(), Failed> {
    run(&ours(), &["extract", file, "-o", out], dir).ok()?;
    let got = files(&dir.join(out));
    same(&format!("{file}: files written"), got.len(), images.len())?;
    for (i, img) in images.iter().enumerate() {
        let prefix = format!("{file}.{i}.");
        let (_, bytes) = got
            .iter()
            .find(|(n, _)| n.starts_with(&prefix))
            .ok_or_else(|| format!("{file}: no file for image {i}: {got:?}"))?;
        same_bytes(&format!("{file}: image {i}"), bytes, img)?;
    }
    let r = run(&ours(), &["inspect", "--json", "--hash=md5", file], dir).ok()?;
    let v: Value = serde_json::from_slice(&r.stdout).map_err(|e| e.to_string())?;
    let listed = v["files"][0]["images"]
        .as_array()
        .ok_or("no images listed")?;
    let hashes: Vec<Option<&str>> = listed.iter().map(|i| i["hash"].as_str()).collect();
    let want: Vec<String> = images.iter().map(|b| HashAlgo::Md5.hash(b)).collect();
    let want: Vec<Option<&str>> = want.iter().map(|s| Some(s.as_str())).collect();
    same(&format!("{file}: hashes"), hashes, want)
}

fn offload_binary_v3_images_are_the_inputs() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let images = images();
    for (name, how) in [("z.bin", Compression::Zstd), ("l.bin", Compression::Zlib)] {
        std::fs::write(d.join(name), packed(&images, how)?)?;
        check_extract(d, name, &format!("out-{name}"), &images)?;
    }
    Ok(())
}

/// In a host object's `.llvm.offloading` section, where clang puts it.
fn offload_binary_v3_in_an_object() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let images = images();
    std::fs::write(d.join("v3.bin"), packed(&images, Compression::Zstd)?)?;
    // An ELF object to add the section to: llvm-objcopy makes one from
    // nothing with -I binary, then the section goes in.
    std::fs::write(d.join("seed"), b"x")?;
    run(
        &llvm("llvm-objcopy"),
        &["-I", "binary", "-O", "elf64-x86-64", "seed", "host.o"],
        d,
    )
    .ok()?;
    run(
        &llvm("llvm-objcopy"),
        &[
            "--add-section=.llvm.offloading=v3.bin",
            "--set-section-alignment=.llvm.offloading=8",
            "host.o",
        ],
        d,
    )
    .ok()?;
    check_extract(d, "host.o", "out", &images)
}

fn offload_binary_v3_damaged_writes_nothing() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let images = images();
    for how in [Compression::Zstd, Compression::Zlib] {
        let good = packed(&images, how)?;
        let stored = u64::from_le_bytes(good[8..16].try_into()?);
        let inflated = u64::from_le_bytes(good[32..40].try_into()?);
        let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
        // The compressed data cut short (its size fixed up to match).
        let mut cut = good[..stored as usize - 1000].to_vec();
        cut[8..16].copy_from_slice(&(stored - 1000).to_le_bytes());
        cut.resize(cut.len().div_ceil(8) * 8, 0);
        cases.push(("cut", cut));
        // Inflated sizes that lie, more and less.
        for (name, lie) in [("more", inflated + 4096), ("less", inflated - 8)] {
            let mut bad = good.clone();
            bad[32..40].copy_from_slice(&lie.to_le_bytes());
            cases.push((name, bad));
        }
        for (name, bad) in cases {
            let file = format!("{how:?}-{name}.bin");
            std::fs::write(d.join(&file), bad)?;
            let out = format!("out-{file}");
            let r = run(&ours(), &["extract", &file, "-o", &out], d);
            let what = format!("extract {file}");
            same(&format!("{what}: exit code ({})", r.stderr), r.code, 2)?;
            if !r.stderr.contains(&file) || r.stderr.contains("panicked") {
                return Err(format!("{what}: {}", r.stderr).into());
            }
            let left = files(&d.join(&out));
            if !left.is_empty() {
                return Err(format!("{what}: left {:?}", left.keys()).into());
            }
        }
    }
    Ok(())
}

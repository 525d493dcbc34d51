//! Small crafted files that stand for millions of images (issue #24): a
//! bundle whose entries all share one inner bundle, nine levels deep, and
//! compressed OffloadBinaries each holding copies of the level below. Every
//! scanner ends within seconds and 256 MiB, exits 2, and names the file and
//! what was wrong; a directory holding such a file still reports the
//! others.

use std::path::Path;

use libtest_mimic::{Failed, Trial};
use offload_kit::offload_binary::{self as ob, Compression, ImageKind, ImageSpec, OffloadKind};

use crate::util::{Run, ours_peak, said_once, tempdir};

/// Seconds a command gets.
const LIMIT: u64 = 30;
/// Peak memory a command may reach, in KiB.
const MAX_RSS_KIB: u64 = 256 << 10;

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(shared_entries_are_read_once_and_damage_exits_2, &["/usr/bin/python3"]),
        trial!(compressed_copies_stop_at_the_budget_naming_the_file, &["/usr/bin/python3"]),
    ]
}

fn elf() -> Vec<u8> {
    let mut x = b"\x7fELF".to_vec();
    x.resize(64, 0);
    x
}

/// `depth` levels of `k` copies of the level below in compressed (v3)
/// OffloadBinaries, zstd and zlib in turn, each level also holding an
/// image of `pad` zero bytes after an ELF magic.
fn compressed_copies_file(k: usize, depth: usize, pad: usize) -> Vec<u8> {
    let mut zeros = elf();
    zeros.resize(pad.max(64), 0);
    let mut x = elf();
    for level in 0..depth {
        let parts: Vec<&[u8]> = (0..k).map(|_| &x[..]).chain([&zeros[..]]).collect();
        let specs: Vec<ImageSpec> = parts
            .iter()
            .map(|p| ImageSpec {
                image_kind: ImageKind::IMG_Object,
                offload_kind: OffloadKind::OFK_OpenMP,
                flags: 0,
                strings: vec![
                    (b"triple".to_vec(), b"amdgcn-amd-amdhsa".to_vec()),
                    (b"arch".to_vec(), b"gfx90a".to_vec()),
                ],
                size: p.len() as u64,
            })
            .collect();
        let layout = ob::layout(&specs, ob::Version::V3).unwrap();
        let mut plain = Vec::new();
        layout.write_to(&mut plain, &parts).unwrap();
        let how = if level % 2 == 0 {
            Compression::Zstd
        } else {
            Compression::Zlib
        };
        x = ob::compress(&plain, how, 19).unwrap();
    }
    x
}

/// Runs `args` (with `file` appended) in `dir` and checks the bounds.
fn bounded(dir: &Path, args: &[&str]) -> Result<Run, Failed> {
    let (r, kib) = ours_peak(LIMIT, args, dir)?;
    if kib > MAX_RSS_KIB {
        return Err(format!("{args:?}: peak RSS {kib} KiB").into());
    }
    Ok(r)
}

fn shared_entries_are_read_once_and_damage_exits_2() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    // 10^9 images if every entry were followed: 5,176 bytes (ten entries
    // on the same inner bundle, nine levels; made by the unit tests'
    // generator, which checks it, as a fuzz seed).
    let seed =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fuzz/scan/fanout-shared-k10-d9.bin");
    let x = std::fs::read(seed)?;
    assert_eq!(x.len(), 5176);
    std::fs::write(d.join("fan.bin"), &x)?;
    let commands: [&[&str]; 4] = [
        &["inspect", "fan.bin"],
        &["size", "fan.bin"],
        &["check", "--require", "gfx900", "fan.bin"],
        &["extract", "-o", "out", "fan.bin"],
    ];
    for args in commands {
        let r = bounded(d, args)?;
        if r.code != 2 {
            return Err(format!("{args:?}: exit {} (want 2): {}", r.code, r.stderr).into());
        }
        let said = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
        if !said.contains("overlaps entry 0") {
            return Err(format!("{args:?}: the overlap is not named: {said}").into());
        }
    }
    // Every level's bundle has overlapping entries, which is damage:
    // nothing of a damaged container is kept (what was written is removed).
    let written = std::fs::read_dir(d.join("out"))?.count();
    if written != 0 {
        return Err(format!("extract left {written} files").into());
    }
    // --allow-corrupt: the same report, exit 0.
    let r = bounded(d, &["inspect", "--allow-corrupt", "fan.bin"])?;
    if r.code != 0 || !String::from_utf8_lossy(&r.stdout).contains("overlaps entry 0") {
        return Err(format!("--allow-corrupt: exit {}: {}", r.code, r.stderr).into());
    }
    // `size` counts what was read: one image per level, not the copies.
    let r = bounded(d, &["size", "--json", "--allow-corrupt", "fan.bin"])?;
    let j: serde_json::Value = serde_json::from_slice(&r.stdout)?;
    let images = j["files"][0]["total"]["images"].as_u64();
    if images.is_none_or(|n| n > 9) {
        return Err(format!("size counts {images:?} images: {j}").into());
    }
    Ok(())
}

fn compressed_copies_stop_at_the_budget_naming_the_file() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    // Four copies a level, seventeen levels, 64 KiB images: 4^17 images
    // and exabytes if followed, a few KB on disk.
    let x = compressed_copies_file(4, 17, 64 << 10);
    if x.len() > 16 << 10 {
        return Err(format!("the file is {} bytes", x.len()).into());
    }
    std::fs::create_dir(d.join("dir"))?;
    std::fs::write(d.join("dir/copies.bin"), &x)?;
    // A sound file beside it, reported whatever happens to the other.
    std::fs::write(d.join("dir/sound.bin"), compressed_copies_file(2, 1, 64))?;
    let commands: [&[&str]; 5] = [
        &["inspect", "dir"],
        &["inspect", "--hash", "--json", "dir"],
        &["size", "dir"],
        &["check", "--require", "gfx90a", "dir"],
        &["extract", "-o", "out", "dir"],
    ];
    for args in commands {
        let r = bounded(d, args)?;
        if r.code != 2 {
            return Err(format!("{args:?}: exit {} (want 2): {}", r.code, r.stderr).into());
        }
        said_once(&r, "copies.bin", "--max-uncompressed").map_err(|e| format!("{args:?}: {e}"))?;
        let said = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
        if !said.contains("sound.bin") {
            return Err(format!("{args:?}: the sound file is not reported: {said}").into());
        }
    }
    // Nothing of the stopped file is kept; the sound one is extracted.
    let names: Vec<String> = std::fs::read_dir(d.join("out"))?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    if names.is_empty() || names.iter().any(|n| !n.starts_with("dir_sound.bin")) {
        return Err(format!("extract wrote {names:?}").into());
    }
    // A lower budget is the user's to set.
    let r = bounded(d, &["inspect", "--max-uncompressed", "1M", "dir/sound.bin"])?;
    if r.code != 0 {
        return Err(format!("sound file: exit {}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

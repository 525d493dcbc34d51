//! What offload-kit does beyond llvm-offload-binary 22: extracting every
//! image and nested binaries, member filters, compressed packs, native
//! round trips, outputs that overwrite inputs.

use super::*;

/// Our native `pack --format-version 2` output is read back by `list` and
/// `unpack` with the same images as the v1 pack.
fn native_v2_round_trip() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("a.o"), bytes(1, 1001))?;
    std::fs::write(d.join("b.cubin"), bytes(2, 7))?;
    let imgs = [
        "--image",
        "file=a.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp,x=1",
        "--image",
        "file=b.cubin,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=cuda",
    ];
    let mut a = vec!["pack", "-o", "v1.bin"];
    a.extend(imgs);
    run(&ours(), &a, d).ok()?;
    let mut a = vec!["pack", "-o", "v2.bin", "--format-version", "2"];
    a.extend(imgs);
    run(&ours(), &a, d).ok()?;
    let v2 = std::fs::read(d.join("v2.bin"))?;
    same("version field", v2[4], 2)?;
    run(&ours(), &["unpack", "v1.bin", "-o", "o1"], d).ok()?;
    run(&ours(), &["unpack", "v2.bin", "-o", "o2"], d).ok()?;
    let strip = |v: Vec<(String, Vec<u8>)>| {
        v.into_iter()
            .map(|(n, b)| (n.replacen("v1", "X", 1).replacen("v2", "X", 1), b))
            .collect::<Vec<_>>()
    };
    same(
        "unpacked files",
        strip(snapshot(&d.join("o2"))),
        strip(snapshot(&d.join("o1"))),
    )?;
    let l1 = run(&ours(), &["list", "--json", "v1.bin"], d).ok()?;
    let j: serde_json::Value = serde_json::from_slice(&l1.stdout)?;
    same("image count", j["images"].as_array().map(Vec::len), Some(2))?;
    same("arch", j["images"][0]["arch"].as_str(), Some("gfx90a"))?;
    let v1 = std::fs::read(d.join("v1.bin"))?;
    let a = std::fs::read(d.join("a.o"))?;
    let at = v1
        .windows(a.len())
        .position(|w| w == a.as_slice())
        .map(|p| p as u64);
    same(
        "file offset of image 0",
        j["images"][0]["file_offset"].as_u64(),
        at,
    )?;
    Ok(())
}

/// Replacing an existing output: a successful run replaces it; a run that
/// fails after the output was opened leaves the old file exactly as it was;
/// neither leaves temporary files behind.
fn overwriting_outputs() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("a.o"), bytes(1, 5000))?;
    std::fs::write(d.join("out.bin"), b"old contents")?;
    let ok = [
        "-o",
        "out.bin",
        "--image=file=a.o,triple=t,arch=a,kind=openmp",
    ];
    run(&ours_as(TOOL), &ok, d).ok()?;
    let first = std::fs::read(d.join("out.bin"))?;
    if first == b"old contents" {
        return Err("the output was not replaced".into());
    }
    // The second image is a directory: reading it fails after the output
    // file was created.
    std::fs::create_dir(d.join("sub"))?;
    let bad = [
        "-o",
        "out.bin",
        "--image=file=a.o,kind=openmp",
        "--image=file=sub,kind=openmp",
    ];
    let r = run(&ours_as(TOOL), &bad, d);
    same("exit code", r.code, 1)?;
    same_bytes(
        "old output after a failed run",
        &std::fs::read(d.join("out.bin"))?,
        &first,
    )?;
    let names: Vec<String> = snapshot(d).into_iter().map(|f| f.0).collect();
    same(
        "files",
        names,
        vec!["a.o".to_string(), "out.bin".to_string()],
    )?;
    Ok(())
}

/// Extracting with a standard output that cannot be written (`outer.bin`
/// in `d`) is an error, not a panic.
fn unwritable_stdout(d: &std::path::Path) -> Result<(), Failed> {
    let tool = ours_as(TOOL);
    let full = run(
        std::path::Path::new("/bin/bash"),
        &[
            "-c",
            "exec \"$0\" outer.bin > /dev/full",
            &tool.to_string_lossy(),
        ],
        d,
    );
    same("exit code with stdout on /dev/full", full.code, 1)?;
    if !full.stderr.contains("IO failure on output stream") || full.stderr.contains("panicked") {
        return Err(format!("stdout on /dev/full: {}", full.stderr).into());
    }
    Ok(())
}

/// Without `--image` (where LLVM 22 extracts nothing) every image is
/// extracted as newer LLVM does: images that are OffloadBinaries themselves
/// are replaced by theirs, names leave out an empty arch, `n` counts every
/// written image, and each is announced on stdout. A malformed inner binary
/// is an error with LLVM's message.
fn extract_all_and_nested() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("a.o"), bytes(1, 40))?;
    std::fs::write(d.join("b.o"), bytes(2, 24))?;
    std::fs::write(d.join("c.bc"), bytes(3, 16))?;
    let pack = |out: &str, images: &[&str]| -> Result<(), Failed> {
        let mut a = vec!["-o", out];
        a.extend(images);
        run(&llvm(TOOL), &a, d).ok().map(drop)
    };
    pack(
        "inner.bin",
        &[
            "--image=file=a.o,triple=x-y-z,arch=abc",
            "--image=file=b.o,triple=x-y-z,arch=def",
        ],
    )?;
    pack(
        "outer.bin",
        &[
            "--image=file=inner.bin,triple=x-y-z,arch=nested",
            "--image=file=c.bc,triple=x-y-z",
        ],
    )?;
    let r = run(&ours_as(TOOL), &["outer.bin"], d).ok()?;
    same(
        "stdout",
        String::from_utf8_lossy(&r.stdout).into_owned(),
        "Extracted: outer-x-y-z-abc.0.o\nExtracted: outer-x-y-z-def.1.o\nExtracted: outer-x-y-z.2.bc\n"
            .to_string(),
    )?;
    unwritable_stdout(d)?;
    same_bytes(
        "abc",
        &std::fs::read(d.join("outer-x-y-z-abc.0.o"))?,
        &bytes(1, 40),
    )?;
    same_bytes(
        "def",
        &std::fs::read(d.join("outer-x-y-z-def.1.o"))?,
        &bytes(2, 24),
    )?;
    same_bytes(
        "no arch",
        &std::fs::read(d.join("outer-x-y-z.2.bc"))?,
        &bytes(3, 16),
    )?;
    // `offload-kit list` descends too, numbering inner images `0.0`, `0.1`.
    let l = run(&ours(), &["list", "--json", "outer.bin"], d).ok()?;
    let j: serde_json::Value = serde_json::from_slice(&l.stdout)?;
    let rows: Vec<(String, String, u64)> = j["images"]
        .as_array()
        .ok_or("no images")?
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap_or("?").to_string(),
                r["arch"].as_str().unwrap_or("?").to_string(),
                r["nested"].as_u64().unwrap_or(99),
            )
        })
        .collect();
    let want = [
        ("0", "nested", 2),
        ("0.0", "abc", 0),
        ("0.1", "def", 0),
        ("1", "", 0),
    ];
    same(
        "listed images",
        rows,
        want.iter()
            .map(|(p, a, n)| (p.to_string(), a.to_string(), *n))
            .collect(),
    )?;
    // With a filter, LLVM 22's behaviour stays: the nested binary is the
    // image, written whole.
    run(
        &ours_as(TOOL),
        &["outer.bin", "--image=file=got.bin,arch=nested"],
        d,
    )
    .ok()?;
    same_bytes(
        "filtered nested image",
        &std::fs::read(d.join("got.bin"))?,
        &std::fs::read(d.join("inner.bin"))?,
    )?;
    // A malformed inner binary.
    std::fs::write(d.join("bad.bin"), b"\x10\xff\x10\xad\x0a")?;
    pack("n2.bin", &["--image=file=bad.bin,triple=x-y-z,arch=nested"])?;
    let r = run(&ours_as(TOOL), &["n2.bin"], d);
    clean_failure("malformed inner binary", &r, "n2.bin")?;
    let l = run(&ours(), &["list", "n2.bin"], d);
    clean_failure_code("list of a malformed inner binary", &l, "n2.bin", 2)?;
    let first = r.stderr.lines().next().unwrap_or_default().to_string();
    if !first.ends_with("error: Invalid data was encountered while parsing the file") {
        return Err(format!("first line: {first}").into());
    }
    Ok(())
}

/// `member=NAME` picks the images of one archive member (newer LLVM; 22
/// compares it with a string the images do not have, and matches nothing).
fn member_filter() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("contentA"), b"aaaa\n")?;
    std::fs::write(d.join("contentB"), b"bbbb\n")?;
    for (out, file) in [("a.o", "contentA"), ("b.o", "contentB")] {
        let image = format!("--image=file={file},triple=x-y-z,arch=gfx90a,kind=openmp");
        run(&llvm(TOOL), &["-o", out, image.as_str()], d).ok()?;
    }
    run(&llvm("llvm-ar"), &["rcs", "lib.a", "a.o", "b.o"], d).ok()?;
    for (member, out, want) in [("a.o", "outA", "contentA"), ("b.o", "outB", "contentB")] {
        let image =
            format!("--image=member={member},triple=x-y-z,arch=gfx90a,kind=openmp,file={out}");
        let r = run(&ours_as(TOOL), &["lib.a", image.as_str()], d).ok()?;
        same("stderr", r.stderr.as_str(), "")?;
        same_bytes(
            out,
            &std::fs::read(d.join(out))?,
            &std::fs::read(d.join(want))?,
        )?;
    }
    // Without it, the filter matches both, with LLVM's warning.
    let r = run(
        &ours_as(TOOL),
        &[
            "lib.a",
            "--image=triple=x-y-z,arch=gfx90a,kind=openmp,file=both",
        ],
        d,
    )
    .ok()?;
    if !r.stderr.contains("Multiple inputs match to a single file") {
        return Err(format!("no warning: {}", r.stderr).into());
    }
    // A member that is not there matches nothing.
    run(
        &ours_as(TOOL),
        &["lib.a", "--image=member=c.o,file=none"],
        d,
    )
    .ok()?;
    same("extracted for c.o", d.join("none").exists(), false)
}

/// `--compress` (newer LLVM; 22 rejects the option) writes one version 3
/// binary whose images come back unchanged, with zstd or zlib, at any valid
/// level; levels out of range are refused as newer LLVM refuses them.
fn compressed_packs() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("a.o"), bytes(1, 5000))?;
    std::fs::write(d.join("b.cubin"), vec![7u8; 20000])?;
    let images = [
        "--image=file=a.o,triple=x-y-z,arch=abc,kind=openmp",
        "--image=file=b.cubin,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=cuda",
    ];
    for (i, opts) in [
        &["--compress"][..],
        &[
            "--compress",
            "--compression-format=zstd",
            "--compression-level=-5",
        ],
        &[
            "--compress",
            "--compression-format=zlib",
            "--compression-level=9",
        ],
        &[
            "--compress",
            "--compression-format=zlib",
            "--compression-level=0",
        ],
    ]
    .iter()
    .enumerate()
    {
        let out = format!("c{i}.bin");
        let mut a = vec!["-o", out.as_str()];
        a.extend(*opts);
        a.extend(images);
        run(&ours_as(TOOL), &a, d).ok()?;
        let packed = std::fs::read(d.join(&out))?;
        same("version", packed[4], 3)?;
        if packed.len() >= 5000 + 20000 && !opts.contains(&"--compression-level=0") {
            return Err(format!("{out} is not compressed: {} bytes", packed.len()).into());
        }
        let o1 = format!("x{i}.o");
        let o2 = format!("y{i}.cubin");
        let f1 = format!("--image=file={o1},arch=abc");
        let f2 = format!("--image=file={o2},arch=sm_80,kind=cuda");
        run(&ours_as(TOOL), &[out.as_str(), f1.as_str(), f2.as_str()], d).ok()?;
        same_bytes("image a", &std::fs::read(d.join(&o1))?, &bytes(1, 5000))?;
        same_bytes("image b", &std::fs::read(d.join(&o2))?, &[7u8; 20000])?;
        // LLVM 22 cannot read version 3 and says so; it must not crash.
        let l = run(&llvm(TOOL), &[out.as_str(), "--image=arch=abc"], d);
        same("LLVM 22's exit code on version 3", l.code, 1)?;
    }
    for (opts, want) in [
        (
            ["--compression-format=zlib", "--compression-level=12"],
            "error: invalid zlib compression level 12; expected a value in [0, 9]",
        ),
        (
            ["--compression-format=lz4", "--compression-level=1"],
            "error: invalid compression format 'lz4'; expected 'zstd' or 'zlib'",
        ),
    ] {
        let mut a = vec!["-o", "bad.bin", "--compress"];
        a.extend(opts);
        a.extend(images);
        let r = run(&ours_as(TOOL), &a, d);
        same("exit code", r.code, 1)?;
        if !r.stderr.trim_end().ends_with(want) {
            return Err(format!("want '{want}', got: {}", r.stderr).into());
        }
        same("output written", d.join("bad.bin").exists(), false)?;
    }
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(extract_all_and_nested, &[TOOL]),
        trial!(member_filter, &[TOOL, "llvm-ar"]),
        trial!(compressed_packs, &[TOOL]),
        trial!(native_v2_round_trip, &[]),
        trial!(overwriting_outputs, &[]),
    ]
}

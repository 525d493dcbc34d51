//! The other trials: thin archives, CUDA fatbin entries, stripped section
//! headers, `check` as a CI gate, `size`, hostile files.

use super::*;

/// A thin archive (`llvm-ar rcT`) gives the images of the regular archive
/// of the same members, read from the member files next to it whatever
/// the working directory; extract writes the same files; a missing member
/// file is a problem that names it, not a failure.
fn thin_archives_read_their_member_files() -> Result<(), Failed> {
    let b = built()?;
    let t = tempdir();
    let d = t.path();
    let members = ["hip_rdc.o", "hip.o", "hipc.o", "omp_gfx.o"];
    for m in members {
        std::fs::copy(b.dir.join(m), d.join(m)).map_err(|e| e.to_string())?;
    }
    for (flags, name) in [("rc", "full.a"), ("rcT", "thin.a")] {
        let mut args = vec![flags, name];
        args.extend(members);
        run(&llvm("llvm-ar"), &args, d).ok()?;
    }
    // What each image is, and in which member, without file offsets
    // (a thin member has none in the archive).
    let facts = |f: &Value| -> Vec<String> {
        let containers = f["containers"].as_array().cloned().unwrap_or_default();
        let mut v: Vec<String> = f["images"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|i| {
                let c = i["container"].as_u64().unwrap_or(u64::MAX);
                let member = containers
                    .iter()
                    .find(|k| k["id"].as_u64() == Some(c))
                    .map(|k| s(&k["member"]))
                    .unwrap_or_default();
                format!(
                    "{member} {} {} {} {} {} {}",
                    s(&i["size"]),
                    s(&i["offload_kind"]),
                    s(&i["triple"]),
                    s(&i["target_id"]),
                    s(&i["image_kind"]),
                    s(&i["hash"])
                )
            })
            .collect();
        v.sort();
        v
    };
    let full = facts(&inspect(&d.join("full.a"), &["--verify"])?);
    let thin_json = inspect(&d.join("thin.a"), &["--verify"])?;
    if full.len() < 4 || !full.iter().all(|f| !f.starts_with(' ')) {
        return Err(format!("too few images, or without members: {full:?}").into());
    }
    same("thin vs regular archive", facts(&thin_json), full.clone())?;
    if thin_json["problems"]
        .as_array()
        .is_some_and(|p| !p.is_empty())
    {
        return Err(format!("problems: {}", thin_json["problems"]).into());
    }
    // extract: the same files with the same bytes (under the archive's
    // name, so each from its own directory).
    let listing = |dir: &Path| -> Result<Vec<(String, String)>, Failed> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(dir).map_err(|e| e.to_string())?.flatten() {
            let bytes = std::fs::read(e.path()).map_err(|e| e.to_string())?;
            let name = e
                .file_name()
                .to_string_lossy()
                .replace("thin.a", "X")
                .replace("full.a", "X");
            v.push((name, md5_hex(&bytes)));
        }
        v.sort();
        Ok(v)
    };
    for a in ["full.a", "thin.a"] {
        let out = d.join(format!("x-{a}"));
        run(
            &ours(),
            &[
                "extract",
                "-o",
                &out.to_string_lossy(),
                &d.join(a).to_string_lossy(),
            ],
            Path::new("/"),
        )
        .ok()?;
    }
    let (xf, xt) = (listing(&d.join("x-full.a"))?, listing(&d.join("x-thin.a"))?);
    if xf.len() < 4 {
        return Err(format!("extract wrote too little: {xf:?}").into());
    }
    same("extracted from thin vs regular", xt, xf)?;
    // A member file gone: reported by name; the other members still read.
    std::fs::remove_file(d.join("hipc.o")).map_err(|e| e.to_string())?;
    let gone = inspect(&d.join("thin.a"), &["--allow-corrupt"])?;
    // A member that cannot be read is damage: exit 2 without the option.
    let r = run(
        &ours(),
        &["inspect", &d.join("thin.a").to_string_lossy()],
        d,
    );
    if r.code != 2 {
        return Err(format!("missing member: exit {}", r.code).into());
    }
    let problems = gone["problems"].to_string();
    if !problems.contains("hipc.o") || gone["images"].as_array().is_none_or(|i| i.len() < 3) {
        return Err(format!("missing member: {gone}").into());
    }
    Ok(())
}

fn cuda_fatbin_entries() -> Result<(), Failed> {
    let b = built()?;
    let f = inspect(&b.dir.join("cuda_fb.o"), &[])?;
    let images = f["images"].as_array().cloned().unwrap_or_default();
    let containers = f["containers"].as_array().cloned().unwrap_or_default();
    let fatbin = containers
        .iter()
        .find(|c| c["kind"] == "cuda-fatbin")
        .ok_or("no cuda-fatbin container")?;
    same("fatbin section", s(&fatbin["section"]), ".nv_fatbin".into())?;
    let wrapper = containers
        .iter()
        .find(|c| c["kind"] == "fatbin-wrapper")
        .ok_or("no wrapper")?;
    same(
        "wrapper flavor",
        s(&wrapper["wrapper"]["flavor"]),
        "cuda".into(),
    )?;
    same(
        "wrapper target",
        &wrapper["wrapper"]["target_container"],
        &fatbin["id"],
    )?;
    let data = std::fs::read(b.dir.join("cuda_fb.o")).unwrap();
    let mut seen = Vec::new();
    for img in &images {
        let kind = s(&img["image_kind"]);
        let arch = s(&img["arch"]);
        let input = std::fs::read(b.dir.join("fatbin-inputs").join(format!(
            "{}-{arch}",
            if kind == "ptx" { "ptx" } else { "elf" }
        )))
        .map_err(|e| format!("{kind} {arch}: {e}"))?;
        let off = img["offset"].as_u64().ok_or("no offset")? as usize;
        let size = img["size"].as_u64().unwrap() as usize;
        same(
            "payload size (padded to 8)",
            size,
            input.len().div_ceil(8) * 8,
        )?;
        if data[off..off + input.len()] != input[..] {
            return Err(format!("{kind} {arch}: payload differs from fatbinary's input").into());
        }
        seen.push(format!("{kind} {arch} {}", s(&img["triple"])));
    }
    same(
        "fatbin entries",
        seen,
        vec![
            "cubin sm_50 nvptx64-nvidia-cuda".into(),
            "ptx sm_50 nvptx64-nvidia-cuda".into(),
            "cubin sm_52 nvptx64-nvidia-cuda".into(),
            "ptx sm_52 nvptx64-nvidia-cuda".into(),
        ],
    )
}

/// The images, by what identifies them and their bytes (not by section).
fn image_facts(f: &Value) -> Vec<String> {
    f["images"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|i| {
            format!(
                "{} {} {} {} {} {} {} {}",
                s(&i["offset"]),
                s(&i["size"]),
                s(&i["offload_kind"]),
                s(&i["triple"]),
                s(&i["target_id"]),
                s(&i["bundle_id"]),
                s(&i["image_kind"]),
                s(&i["hash"])
            )
        })
        .collect()
}

fn stripped_section_headers_give_the_same_images() -> Result<(), Failed> {
    let b = built()?;
    // Stripped copies go elsewhere: other tests scan the built directory
    // as a whole, and llvm-objcopy's temporary files would come and go in
    // it.
    let out = tempdir();
    for f in [
        "omp_host.exe",
        "omp_gfx.exe",
        "hip.exe",
        "hipc.exe",
        "hip_rdc.exe",
    ] {
        let path = b.dir.join(f);
        let strip = out.path().join(format!("{f}.stripped"));
        run(
            &llvm("llvm-objcopy"),
            &[
                "--strip-sections",
                &path.to_string_lossy(),
                &strip.to_string_lossy(),
            ],
            &b.dir,
        )
        .ok()?;
        // --verify makes image kinds and hashes of compressed images known
        // on both sides.
        let with = inspect(&path, &["--verify"])?;
        let without = inspect(&strip, &["--verify"])?;
        same(
            &format!("{f}: scan"),
            s(&without["scan"]),
            "[\"raw\"]".into(),
        )?;
        same(
            &format!("{f}: scan"),
            s(&with["scan"]),
            "[\"sections\"]".into(),
        )?;
        let a = image_facts(&with);
        if a.is_empty() {
            return Err(format!("{f}: no images").into());
        }
        same(
            &format!("{f}: images via sections vs raw scan"),
            image_facts(&without),
            a,
        )?;
        if !without["problems"].as_array().is_none_or(Vec::is_empty) {
            return Err(format!("{f}: raw scan problems: {}", without["problems"]).into());
        }
    }
    Ok(())
}

fn check_is_a_ci_gate() -> Result<(), Failed> {
    let b = built()?;
    let k = ours();
    let d = b.dir.to_string_lossy().into_owned();
    let hip = b.dir.join("hip.exe").to_string_lossy().into_owned();
    let omp = b.dir.join("omp_host.exe").to_string_lossy().into_owned();
    let code = |args: &[&str]| run(&k, args, &b.dir).code;
    same(
        "gfx90a,gfx1030 present",
        code(&["check", &hip, "--require-arch", "gfx90a,gfx1030"]),
        0,
    )?;
    same(
        "gfx942 missing",
        code(&["check", &hip, "--require-arch", "gfx942"]),
        1,
    )?;
    same(
        "gfx1030 forbidden",
        code(&["check", &hip, "--forbid-arch", "gfx1030"]),
        1,
    )?;
    same(
        "kind hip present",
        code(&["check", &hip, "--require-kind", "hip"]),
        0,
    )?;
    same(
        "kind openmp absent",
        code(&["check", &hip, "--require-kind", "openmp"]),
        1,
    )?;
    // The compressed executable: archs come from inside the CCOBs.
    let hipc = b.dir.join("hipc.exe").to_string_lossy().into_owned();
    same(
        "archs inside CCOBs",
        code(&[
            "check",
            &hipc,
            "--require-arch",
            "gfx90a",
            "--require-arch",
            "gfx1030",
        ]),
        0,
    )?;
    // A file with only a host-offload image has no gfx90a; with --any the
    // whole tree has.
    same(
        "per file",
        code(&["check", &hip, &omp, "--require-arch", "gfx90a"]),
        1,
    )?;
    same(
        "--any",
        code(&["check", &hip, &omp, "--any", "--require-arch", "gfx90a"]),
        0,
    )?;
    // The directory also holds the stand-in tools' fake cubins (ELF magic,
    // no ELF): corrupt inputs, which only --allow-corrupt lets through.
    same(
        "whole directory, --any",
        code(&[
            "check",
            &d,
            "--any",
            "--allow-corrupt",
            "--require-arch",
            "gfx90a,sm_52",
        ]),
        0,
    )?;
    // Nothing with device code at all fails.
    let main = b.dir.join("main.o").to_string_lossy().into_owned();
    same(
        "no device code",
        code(&["check", &main, "--require-arch", "gfx90a"]),
        1,
    )?;
    // Usage errors are not check failures.
    same("no requirement", code(&["check", &hip]), 2)?;
    let r = run(&k, &["check", &hip, "--require-arch", "gfx942"], &b.dir);
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains("missing arch gfx942") || !out.contains("gfx90a") {
        return Err(format!("unclear report: {out}").into());
    }
    Ok(())
}

fn size_counts_innermost_images() -> Result<(), Failed> {
    let b = built()?;
    let r = run(
        &ours(),
        &[
            "size",
            "--json",
            &b.dir.join("omp_gfx.exe").to_string_lossy(),
        ],
        &b.dir,
    )
    .ok()?;
    let v: Value = serde_json::from_slice(&r.stdout).map_err(|e| e.to_string())?;
    let f = &v["files"][0];
    let t = &f["by_target"];
    for arch in ["gfx90a", "gfx1030"] {
        // A row per target and image kind: the arch's one object.
        let row = &t[format!("openmp amdgcn-amd-amdhsa {arch} object")];
        same(&format!("{arch} images"), row["images"].as_u64(), Some(1))?;
        if row["bytes"].as_u64().unwrap_or(0) == 0 {
            return Err(format!("{arch}: no bytes").into());
        }
    }
    Ok(())
}

fn hostile_files_do_not_fail_the_scan() -> Result<(), Failed> {
    let b = built()?;
    let dir = tempdir();
    let hip = std::fs::read(b.dir.join("hipc.exe")).unwrap();
    // Truncated, magic-sprinkled noise, and a file of only magics.
    std::fs::write(dir.path().join("truncated.exe"), &hip[..hip.len() / 2]).unwrap();
    let mut noise: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    for (i, m) in [
        &b"CCOB\x03\x00\x01\x00"[..],
        b"__CLANG_OFFLOAD_BUNDLE__",
        &[0x10, 0xFF, 0x10, 0xAD],
        &[0x50, 0xED, 0x55, 0xBA],
    ]
    .iter()
    .cycle()
    .take(4000)
    .enumerate()
    {
        let at = (i * 49) % (noise.len() - 32);
        noise[at..at + m.len()].copy_from_slice(m);
    }
    std::fs::write(dir.path().join("noise.bin"), &noise).unwrap();
    std::fs::write(dir.path().join("magics.bin"), b"CCOB".repeat(10_000)).unwrap();
    let mut corrupt = hip.clone();
    // Flip bytes inside the section data of the compressed bundles.
    for i in (0x3000..0x3400).step_by(17) {
        if i < corrupt.len() {
            corrupt[i] ^= 0x5A;
        }
    }
    std::fs::write(dir.path().join("corrupt.exe"), &corrupt).unwrap();
    for cmd in [
        vec!["inspect", "--verify"],
        vec!["inspect", "--raw", "--rejects"],
        vec!["size"],
    ] {
        let mut args: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
        args.push(dir.path().to_string_lossy().into_owned());
        // Damaged data: exit 2, every file still reported. A raw scan
        // only rejects candidates (noise, not damage): exit 0.
        let want = if cmd.contains(&"--raw") { 0 } else { 2 };
        let r = run(&ours(), &args, dir.path());
        if r.code != want || r.stderr.contains("panicked") {
            return Err(format!("{cmd:?}: exit {}: {}", r.code, r.stderr).into());
        }
        args.insert(1, "--allow-corrupt".into());
        let r = run(&ours(), &args, dir.path());
        if r.code != 0 || r.stderr.contains("panicked") {
            return Err(format!("{cmd:?} --allow-corrupt: exit {}: {}", r.code, r.stderr).into());
        }
    }
    // The corrupt file's problems are reported, not fatal.
    let f = inspect(
        &dir.path().join("corrupt.exe"),
        &["--verify", "--allow-corrupt"],
    )?;
    if f["problems"].as_array().is_none_or(Vec::is_empty) {
        return Err("corrupt CCOBs reported no problem".into());
    }
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
        vec![
        trial!(cuda_fatbin_entries, TOOLS),
        trial!(stripped_section_headers_give_the_same_images, TOOLS),
        trial!(check_is_a_ci_gate, TOOLS),
        trial!(size_counts_innermost_images, TOOLS),
        trial!(hostile_files_do_not_fail_the_scan, TOOLS),
        trial!(thin_archives_read_their_member_files, TOOLS),
    ]
}

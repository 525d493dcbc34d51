//! Sizes and counts meant to exhaust memory or time: compression bombs,
//! huge section alignments, huge thread counts.

use super::*;

/// A v3 zstd CCOB of `head` followed by `zeros` zero bytes (stored hash 0),
/// compressed as a stream: 2 GiB of zeros make about 70 KB.
fn zero_bomb(head: &[u8], zeros: u64) -> Vec<u8> {
    use std::io::Write;
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    enc.write_all(head).unwrap();
    let chunk = vec![0u8; 1 << 20];
    let mut left = zeros;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        enc.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    let payload = enc.finish().unwrap();
    let total = head.len() as u64 + zeros;
    let mut c = b"CCOB".to_vec();
    c.extend(3u16.to_le_bytes());
    c.extend(1u16.to_le_bytes());
    c.extend((32 + payload.len() as u64).to_le_bytes());
    c.extend(total.to_le_bytes());
    c.extend(0u64.to_le_bytes());
    c.extend(payload);
    c
}

/// Runs our binary with its address space limited to 1 GiB, so a command
/// that decompresses a 2 GiB bomb whole fails.
fn ours_in_1g(args: &[&str], cwd: &Path) -> Result<crate::util::Run, Failed> {
    let mut sh = vec![
        "-c".to_string(),
        "ulimit -v 1048576 && exec \"$0\" \"$@\"".to_string(),
        ours().to_string_lossy().into_owned(),
    ];
    sh.extend(args.iter().map(|a| a.to_string()));
    run_within(LIMIT, Path::new("/bin/sh"), &sh, cwd)
}

/// CCOBs honestly declaring 2 GiB: `list` and plain `inspect` decompress
/// only the bundle header (a 1 GiB address space is plenty), or only the
/// first bytes of contents that are no bundle at all; `unbundle` refuses
/// what exceeds `--max-uncompressed` before decompressing.
fn bombs_are_listed_from_their_headers() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let id = b"hip-amdgcn-amd-amdhsa--gfx90a";
    let size = 2u64 << 30;
    let mut head = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    head.extend(1u64.to_le_bytes());
    let data_at = 32 + 24 + id.len() as u64;
    head.extend(data_at.to_le_bytes());
    head.extend(size.to_le_bytes());
    head.extend((id.len() as u64).to_le_bytes());
    head.extend(id);
    std::fs::write(d.join("bomb.ccob"), zero_bomb(&head, size)).unwrap();
    std::fs::write(d.join("zeros.ccob"), zero_bomb(&[], size)).unwrap();
    let size_s = size.to_string();

    let r = ours_in_1g(&["list", "bomb.ccob"], d)?;
    let out = String::from_utf8_lossy(&r.stdout);
    if r.code != 0 || !out.contains(&size_s) || !out.contains("gfx90a") {
        return Err(format!("list: exit {}: {out}{}", r.code, r.stderr).into());
    }
    let r = ours_in_1g(&["list", "--json", "bomb.ccob"], d)?;
    let v: serde_json::Value =
        serde_json::from_slice(&r.stdout).map_err(|e| format!("list --json: {e}: {}", r.stderr))?;
    let e = &v["bundle"]["entries"][0];
    if e["size"].as_u64() != Some(size) || e["offset"].as_u64() != Some(data_at) {
        return Err(format!("list --json: {v}").into());
    }
    let r = ours_in_1g(&["inspect", "--json", "bomb.ccob"], d)?;
    let v: serde_json::Value =
        serde_json::from_slice(&r.stdout).map_err(|e| format!("inspect: {e}: {}", r.stderr))?;
    let f = &v["files"][0];
    if r.code != 0
        || f["images"][0]["size"].as_u64() != Some(size)
        || f["problems"].as_array().is_none_or(|p| !p.is_empty())
    {
        return Err(format!("inspect: exit {}: {f}", r.code).into());
    }
    // Contents that are no bundle: judged from the first bytes.
    let r = ours_in_1g(&["inspect", "--json", "zeros.ccob"], d)?;
    let v: serde_json::Value = serde_json::from_slice(&r.stdout)
        .map_err(|e| format!("inspect zeros: {e}: {}", r.stderr))?;
    let problems = v["files"][0]["problems"].to_string();
    if r.code != 2 || !problems.contains("not a bundle") {
        return Err(format!("inspect zeros: exit {}: {problems}", r.code).into());
    }
    let r = ours_in_1g(&["list", "zeros.ccob"], d)?;
    if r.code != 2
        || !r
            .stderr
            .contains("'zeros.ccob': the compressed data is not a bundle")
    {
        return Err(format!("list zeros: exit {}: {}", r.code, r.stderr).into());
    }
    // unbundle: the limit is checked against the declared size first.
    let r = ours_in_1g(
        &[
            "unbundle",
            "--max-uncompressed",
            "1G",
            "bomb.ccob",
            "-o",
            "out",
        ],
        d,
    )?;
    if r.code != 1 || !r.stderr.contains("exceeds the limit of 1073741824 bytes") {
        return Err(format!("unbundle: exit {}: {}", r.code, r.stderr).into());
    }
    if d.join("out")
        .read_dir()
        .is_ok_and(|mut e| e.next().is_some())
    {
        return Err("unbundle wrote files".into());
    }
    Ok(())
}

/// Sets `sh_addralign` of the section `name` in the ELF64 LE object `o`.
fn set_alignment(o: &mut [u8], name: &str, align: u64) -> Result<(), Failed> {
    let u16_at = |o: &[u8], at: usize| u16::from_le_bytes([o[at], o[at + 1]]) as usize;
    let u64_at = |o: &[u8], at: usize| u64::from_le_bytes(o[at..at + 8].try_into().unwrap());
    let shoff = u64_at(o, 0x28) as usize;
    let (shentsize, shnum, shstrndx) = (u16_at(o, 0x3A), u16_at(o, 0x3C), u16_at(o, 0x3E));
    let strtab = u64_at(o, shoff + shstrndx * shentsize + 0x18) as usize;
    for i in 0..shnum {
        let h = shoff + i * shentsize;
        let n = strtab + u32::from_le_bytes(o[h..h + 4].try_into().unwrap()) as usize;
        let end = n + o[n..].iter().position(|&b| b == 0).unwrap();
        if &o[n..end] == name.as_bytes() {
            o[h + 0x30..h + 0x38].copy_from_slice(&align.to_le_bytes());
            return Ok(());
        }
    }
    Err(format!("no section {name}").into())
}

/// A 1.7 KB host object whose `.data` asks for 2^32 alignment: bundling
/// it fails naming the section, exit 1, and leaves
/// no output and no temporary (it wrote 4 GiB before). 2 MiB is fine.
fn huge_section_alignment_is_an_error() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::write(d.join("host.c"), "int data[4] = {1, 2, 3, 4};\n").unwrap();
    let r = run_within(LIMIT, Path::new("cc"), &["-c", "-o", "host.o", "host.c"], d)?;
    if r.code != 0 {
        return Err(format!("cc: {}", r.stderr).into());
    }
    let good = std::fs::read(d.join("host.o")).unwrap();
    std::fs::write(d.join("dev.bin"), b"device code").unwrap();
    let targets = "host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx90a";
    for (align, ok) in [(1u64 << 32, false), (1 << 25, false), (1 << 21, true)] {
        let mut o = good.clone();
        set_alignment(&mut o, ".data", align)?;
        std::fs::write(d.join("host.o"), &o).unwrap();
        let _ = std::fs::remove_file(d.join("out.o"));
        let drop_in = run_within(
            LIMIT,
            &ours_as("clang-offload-bundler"),
            &[
                "-type=o",
                &format!("-targets={targets}"),
                "-input=host.o",
                "-input=dev.bin",
                "-output=out.o",
            ],
            d,
        )?;
        // (offload-kit bundle leaves object hosts to the drop-in.)
        for (what, r, out) in [("drop-in", &drop_in, "out.o")] {
            if ok {
                if r.code != 0 {
                    return Err(format!("{what}, alignment {align:#x}: {}", r.stderr).into());
                }
                continue;
            }
            if r.code != 1 || !r.stderr.contains("section '.data'") || !r.stderr.contains("host.o")
            {
                return Err(format!(
                    "{what}, alignment {align:#x}: exit {}: {}",
                    r.code, r.stderr
                )
                .into());
            }
            if d.join(out).exists() || !leftovers(d).is_empty() {
                return Err(
                    format!("{what}: output or temporaries left: {:?}", leftovers(d)).into(),
                );
            }
        }
    }
    Ok(())
}

/// `bundle --compress --threads` and `unbundle --threads` with thread
/// counts past any limit (past u64 too) work, as 16 threads.
fn huge_thread_counts_are_taken_as_the_maximum() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let entry = crate::util::bytes(5, 3 << 20);
    std::fs::write(d.join("e"), &entry).unwrap();
    let huge = "9".repeat(30);
    for n in ["4294967296", huge.as_str()] {
        run_within(
            LIMIT,
            &ours(),
            &[
                "bundle",
                "--type",
                "bc",
                "--compress",
                "--threads",
                n,
                "-o",
                "b.ccob",
                "hip-amdgcn-amd-amdhsa--gfx90a=e",
            ],
            d,
        )?
        .ok()?;
        run_within(
            LIMIT,
            &ours(),
            &["unbundle", "b.ccob", "-o", "u", "--threads", n],
            d,
        )?
        .ok()?;
        if std::fs::read(d.join("u/b-hip-amdgcn-amd-amdhsa--gfx90a.0")).unwrap() != entry {
            return Err(format!("--threads {n}: the entry came back different").into());
        }
    }
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(huge_section_alignment_is_an_error, &["cc"]),
        trial!(bombs_are_listed_from_their_headers, &["sh"]),
        trial!(huge_thread_counts_are_taken_as_the_maximum, &[]),
    ]
}

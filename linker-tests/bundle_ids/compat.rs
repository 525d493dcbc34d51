//! Code-object compatibility: a hand-made bundle of odd stored IDs in an
//! archive, unbundled by LLVM for many requests, against `BundleId::serves`.

use super::*;

/// Entry IDs stored in the hand-made bundle, as is (LLVM parses stored IDs
/// without normalizing them).
fn stored_entries() -> Vec<String> {
    let mut v: Vec<String> = [
        "",
        "gfx906",
        "gfx906:xnack+",
        "gfx906:xnack-",
        "gfx906:sramecc+",
        "gfx906:sramecc-",
        "gfx906:sramecc+:xnack+",
        "gfx906:xnack-:sramecc-",
        "gfx906:xnack+:sramecc-",
        "gfx90a",
        "gfx90a:xnack+",
        "gfx1030",
        "gfx1030:xnack+",
        "gfx1010:xnack-",
        "gfx1250",
        "gfx9-generic",
        "gfx9-generic:xnack+",
        "gfx9-4-generic:sramecc+",
        "gfx940",
        "fiji",
        "gfx906:foo+",
        "gfx906:xnack",
        "gfx906:",
        "gfx906:xnack+:xnack+",
        "sm_70",
    ]
    .iter()
    .map(|t| format!("hip-amdgcn-amd-amdhsa--{t}"))
    .collect();
    v.extend(
        [
            "host-x86_64-unknown-linux-gnu-",
            "hipv4-amdgcn-amd-amdhsa--gfx906",
            "hipv4-amdgcn-amd-amdhsa--gfx906:xnack-",
            "openmp-amdgcn-amd-amdhsa--gfx906:xnack+",
            "openmp-amdgcn-amd-amdhsa--gfx90a",
            "HIP-amdgcn-amd-amdhsa--gfx906",
            "hipx-amdgcn-amd-amdhsa--gfx1030",
            "hip-amdgcn-amd-amdhsa-unknown-gfx908",
            "hip-amdgcn-amd-amdhsa-gnu-gfx908:sramecc+",
            "hip-amdgcn-amd-amdhsa5.0--gfx942:xnack-",
            "hip-amdgcn-unknown-amdhsa--gfx950",
            "hip-r600-amd-amdhsa--gfx906",
            "openmp-spirv64-amd-amdhsa--amdgcnspirv",
            "openmp-spirv64-amd-amdhsa--amdgcnspirv:xnack+",
            "hip-spirv64-amd-amdhsa-unknown-amdgcnspirv",
            "openmp-nvptx64-nvidia-cuda-unknown-sm_70",
            "openmp-nvptx64-nvidia-cuda--sm_80",
            "openmp-nvptx64-nvidia-cuda-unknown-sm_70:foo+",
            "openmp-nvptx64-nvidia-cuda-unknown-",
            "openmp-nvptx64-nvidia-cuda8.0-unknown-sm_90",
            "openmp-nvptx64-unknown-cuda-unknown-sm_70",
            "openmp-nvptx-nvidia-cuda-unknown-sm_70",
            "openmp-x86_64-unknown-linux-gnu-",
            "openmp-x86_64-pc-linux-gnu-",
            "openmp-x86_64-unknown-linux5.0-gnu-",
            "openmp-x86_64-unknown-linux-",
            "openmp-x86_64-unknown-linux-unknown-",
            "openmp-x86_64-unknown-linux-gnu-elf",
            "openmp-x86_64-linux-gnu--",
            "openmp-x86_64-apple-macosx10.15-foo-",
            "openmp-x86_64-apple-macosx-",
            "openmp-armv7-unknown-linux-gnueabihf-",
            "openmp-thumbv7-unknown-linux-gnueabihf-",
            "openmp-thumbv7s-apple-ios-",
            "openmp-x86_64-w64-windows-gnu-",
            "openmp-x86_64-pc-windows-gnu-",
            "openmp-x86_64-pc-windows-msvc-",
            "hip-x86_64-unknown-linux-gnu-",
            "openmp-aarch64-unknown-linux-gnu-sm_70",
        ]
        .map(str::to_owned),
    );
    v.extend(sweeps());
    v.sort();
    v.dedup();
    v
}

/// Stored IDs that sweep every environment, OS, vendor and architecture
/// name, so the parsed enums (not the text) decide.
fn sweeps() -> Vec<String> {
    let mut v = Vec::new();
    for e in Environment::ALL
        .iter()
        .map(|e| e.name())
        .chain(["elf", "coff", "macho"])
    {
        v.push(format!("openmp-x86_64-unknown-linux-{e}-"));
    }
    for o in Os::ALL
        .iter()
        .map(|o| o.name())
        .chain(["win32", "macos", "wasi0.1"])
    {
        v.push(format!("openmp-x86_64-unknown-{o}-"));
    }
    for x in Vendor::ALL.iter().map(|x| x.name()).chain(["sie", "w64"]) {
        v.push(format!("openmp-x86_64-{x}-linux-gnu-"));
    }
    for a in Arch::ALL
        .iter()
        .map(|a| a.name())
        .chain(ARCH_SPELLINGS.iter().copied())
    {
        v.push(format!("openmp-{a}-unknown-linux-gnu-"));
    }
    v
}

/// Requested targets (raw `-targets` text).
fn requests() -> Vec<String> {
    let mut v = Vec::new();
    let amd = [
        "gfx906",
        "gfx906:xnack+",
        "gfx906:xnack-",
        "gfx906:xnack+:sramecc+",
        "gfx906:sramecc-:xnack-",
        "gfx906:sramecc+",
        "gfx906:sramecc-",
        "gfx908",
        "gfx908:sramecc+",
        "gfx90a",
        "gfx90a:xnack+:sramecc-",
        "gfx942",
        "gfx942:xnack-",
        "gfx950",
        "gfx1030",
        "gfx1030:xnack+",
        "gfx1010:xnack-",
        "gfx1250",
        "gfx9-generic",
        "gfx9-generic:xnack+",
        "gfx9-4-generic:sramecc+:xnack-",
        "gfx906:foo+",
        "",
        "fiji",
        "gfx906:",
        "gfx906:xnack",
    ];
    for (j, t) in amd.iter().enumerate() {
        // The environment part is dropped for amdhsa, but keeps each request
        // in its own conflict group.
        for k in ["hip", "hipv4", "openmp"] {
            v.push(format!("{k}-amdgcn-amd-amdhsa-r{j}-{t}"));
        }
    }
    v.extend(
        [
            "hip-amdgcn-unknown-amdhsa--gfx950",
            "hip-r600-amd-amdhsa--gfx906",
            "openmp-spirv64-amd-amdhsa--amdgcnspirv",
            "hip-spirv64-amd-amdhsa-x-amdgcnspirv",
            "openmp-spirv64-amd-amdhsa-y-amdgcnspirv:xnack+",
            "openmp-nvptx64-nvidia-cuda--sm_70",
            "openmp-nvptx64-nvidia-cuda-unknown-sm_80",
            "openmp-nvptx64-nvidia-cuda-x-sm_70:foo+",
            "openmp-nvptx64-nvidia-cuda-y-",
            "openmp-nvptx64-nvidia-cuda-z-sm_90",
            "openmp-nvptx64-unknown-cuda--sm_70",
            "openmp-nvptx-nvidia-cuda--sm_70",
            "openmp-x86_64-unknown-linux-gnu",
            "openmp-x86_64-pc-linux-gnu",
            "openmp-x86_64-unknown-linux-",
            "openmp-x86_64-unknown-linux6.1-gnu",
            "openmp-x86_64-linux-gnu-",
            "openmp-x86_64-apple-macosx-",
            "openmp-x86_64-apple-macosx11-gnu",
            "openmp-armv7-unknown-linux-gnueabihf",
            "openmp-thumbv7-unknown-linux-gnueabihf",
            "openmp-armv7s-apple-ios-",
            "openmp-x86_64-w64-windows-gnu",
            "openmp-x86_64-pc-windows-gnu",
            "openmp-x86_64-w64-windows-msvc",
            "hip-x86_64-unknown-linux-gnu",
            "hipv4-x86_64-unknown-linux-gnu",
            "openmp-aarch64-unknown-linux-gnu-sm_70",
        ]
        .map(str::to_owned),
    );
    for e in Environment::ALL[1..].iter().map(|e| e.name()) {
        v.push(format!("openmp-x86_64-unknown-linux-{e}9"));
    }
    for o in Os::ALL[1..]
        .iter()
        .map(|o| o.name())
        .chain(["win32", "macos"])
    {
        v.push(format!("openmp-x86_64-unknown-{o}2.0-"));
    }
    for x in Vendor::ALL
        .iter()
        .map(|x| x.name())
        .chain(["sie", "w64", "foo"])
    {
        v.push(format!("openmp-x86_64-{x}-linux-gnu"));
    }
    for a in Arch::ALL[1..]
        .iter()
        .map(|a| a.name())
        .chain(ARCH_SPELLINGS.iter().copied())
    {
        v.push(format!("openmp-{a}-unknown-linux-gnu"));
    }
    v
}

/// A binary bundle holding `entries` (ID, data), written by hand so stored
/// IDs can be anything.
fn bundle_bytes(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let header: usize = 32 + entries.iter().map(|(id, _)| 24 + id.len()).sum::<usize>();
    let mut out = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    out.extend((entries.len() as u64).to_le_bytes());
    let mut offset = header;
    for (id, data) in entries {
        out.extend((offset as u64).to_le_bytes());
        out.extend((data.len() as u64).to_le_bytes());
        out.extend((id.len() as u64).to_le_bytes());
        out.extend(id.as_bytes());
        offset += data.len();
    }
    for (_, data) in entries {
        out.extend(data);
    }
    out
}

/// A GNU archive with one member.
fn archive_bytes(name: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"!<arch>\n".to_vec();
    let header = format!(
        "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
        format!("{name}/"),
        0,
        0,
        0,
        644,
        data.len()
    );
    out.extend(header.as_bytes());
    out.extend(data);
    if data.len() % 2 == 1 {
        out.push(b'\n');
    }
    out
}

/// The contents of an archive's regular members.
fn archive_members(data: &[u8]) -> Result<Vec<Vec<u8>>, Failed> {
    let bad = || Failed::from("malformed output archive");
    let mut rest = data.strip_prefix(b"!<arch>\n".as_slice()).ok_or_else(bad)?;
    let mut members = Vec::new();
    while !rest.is_empty() {
        let header = rest.get(..60).ok_or_else(bad)?;
        let name = String::from_utf8_lossy(&header[..16]);
        let size: usize = String::from_utf8_lossy(&header[48..58])
            .trim()
            .parse()
            .map_err(|_| bad())?;
        let body = rest.get(60..60 + size).ok_or_else(bad)?;
        let name = name.trim_end();
        if name != "/" && name != "//" && name != "/SYM64/" {
            members.push(body.to_vec());
        }
        rest = rest.get(60 + size + size % 2..).unwrap_or(&[]);
    }
    Ok(members)
}

pub(super) fn compatibility_like_llvm(hip_openmp: bool) -> Result<(), Failed> {
    let dir = tempdir();
    let stored = stored_entries();
    let entries: Vec<(String, Vec<u8>)> = stored
        .iter()
        .enumerate()
        .map(|(i, id)| (id.clone(), format!("E{i}\n").into_bytes()))
        .collect();
    let lib = archive_bytes("m.bc", &bundle_bytes(&entries));
    std::fs::write(dir.path().join("lib.a"), lib).map_err(|e| e.to_string())?;
    let objects: Vec<BundleId> = stored
        .iter()
        .map(|s| BundleId::parse(s).map_err(|e| format!("{s}: {e}")))
        .collect::<Result<_, _>>()?;

    // Calls: no two requests of one conflict group, none normalizing alike.
    let mut calls: Vec<(Vec<String>, HashSet<String>, HashSet<String>)> = Vec::new();
    for r in requests() {
        let group: String = r.splitn(6, '-').take(5).collect::<Vec<_>>().join("-");
        let norm = BundleId::parse(&r).map_err(|e| e.to_string())?.normalized();
        let i = match calls
            .iter()
            .position(|(_, g, n)| !g.contains(&group) && !n.contains(&norm))
        {
            Some(i) => i,
            None => {
                calls.push(Default::default());
                calls.len() - 1
            }
        };
        calls[i].0.push(r);
        calls[i].1.insert(group);
        calls[i].2.insert(norm);
    }

    let mut pairs = 0usize;
    let mut wrong = String::new();
    for (requests, _, _) in calls {
        let mut args = vec![
            "-type=a".to_owned(),
            "-unbundle".to_owned(),
            "-allow-missing-bundles".to_owned(),
            "-input=lib.a".to_owned(),
            format!("-targets={}", requests.join(",")),
        ];
        if hip_openmp {
            args.push("-hip-openmp-compatible".to_owned());
        }
        args.extend((0..requests.len()).map(|i| format!("-output=o{i}.a")));
        let r = run(&llvm(TOOL), &args, dir.path());
        if r.code != 0 {
            return Err(format!("LLVM failed on {requests:?}: {}", r.stderr).into());
        }
        for (i, req) in requests.iter().enumerate() {
            let data =
                std::fs::read(dir.path().join(format!("o{i}.a"))).map_err(|e| e.to_string())?;
            let theirs: BTreeSet<usize> = archive_members(&data)?
                .iter()
                .filter_map(|m| {
                    std::str::from_utf8(m)
                        .ok()?
                        .strip_prefix('E')?
                        .trim_end()
                        .parse()
                        .ok()
                })
                .collect();
            let request = BundleId::parse(req).map_err(|e| e.to_string())?;
            let ours: BTreeSet<usize> = objects
                .iter()
                .enumerate()
                .filter(|(_, o)| o.serves(&request, hip_openmp))
                .map(|(i, _)| i)
                .collect();
            pairs += objects.len();
            if ours != theirs {
                let name = |s: &BTreeSet<usize>| -> Vec<&str> {
                    s.iter().map(|&i| stored[i].as_str()).collect()
                };
                let _ = writeln!(
                    wrong,
                    "  request {req}:\n    only ours: {:?}\n    only llvm: {:?}",
                    name(&ours.difference(&theirs).copied().collect()),
                    name(&theirs.difference(&ours).copied().collect()),
                );
            }
        }
    }
    if !wrong.is_empty() {
        return Err(format!("code-object compatibility differs:\n{wrong}").into());
    }
    if pairs < 20_000 {
        return Err(format!("only {pairs} pairs compared").into());
    }
    Ok(())
}

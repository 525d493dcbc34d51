//! What each side finds in a file: our `inspect` and `extract`, LLVM's
//! tools, compared image by image.

use super::*;

/// Our view of `file`: one (key, md5 of the bytes `extract` wrote) per
/// image, keyed as [`llvm_view`] keys LLVM's.
fn our_view(file: &Path) -> Result<Vec<(String, String)>, Failed> {
    let f = inspect(file, &[])?;
    if !f["problems"].as_array().is_none_or(Vec::is_empty) {
        return Err(format!("problems: {}", f["problems"]).into());
    }
    // Extract everything, and index the files by image id.
    let out = tempdir();
    let p = file.to_string_lossy();
    run(
        &ours(),
        &[
            "extract",
            "--include-host",
            "-o",
            &out.path().to_string_lossy(),
            &p,
        ],
        Path::new("."),
    )
    .ok()?;
    let mut bytes = BTreeMap::new();
    for e in std::fs::read_dir(out.path()).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let id: usize = name
            .split('.')
            .find_map(|c| c.parse().ok())
            .ok_or_else(|| format!("no image id in {name}"))?;
        bytes.insert(id, std::fs::read(e.path()).unwrap());
    }
    let containers = f["containers"].as_array().cloned().unwrap_or_default();
    // Device images and host entries (LLVM lists both), in id order: the
    // position in the list is the id.
    let mut images = f["images"].as_array().cloned().unwrap_or_default();
    images.extend(f["host_entries"].as_array().cloned().unwrap_or_default());
    images.sort_by_key(|i| i["id"].as_u64());
    // The outermost container of each container, and the position of each
    // outermost bundle/CCOB in its section (llvm-objdump's file numbering).
    let top = |mut id: usize| loop {
        match &containers[id]["parent"] {
            Value::Object(p) if p.contains_key("container") => {
                id = p["container"].as_u64().unwrap() as usize
            }
            Value::Object(p) => {
                id = images[p["image"].as_u64().unwrap() as usize]["container"]
                    .as_u64()
                    .unwrap() as usize
            }
            _ => return id,
        }
    };
    let mut ordinal = BTreeMap::new();
    let mut counters: BTreeMap<(String, String), usize> = BTreeMap::new();
    for c in &containers {
        if c["parent"].is_null() && matches!(c["kind"].as_str(), Some("bundle" | "ccob")) {
            let k = (s(&c["member"]), s(&c["section"]));
            let n = counters.entry(k).or_default();
            ordinal.insert(c["id"].as_u64().unwrap() as usize, *n);
            *n += 1;
        }
    }
    let mut out_view = Vec::new();
    for img in &images {
        let id = img["id"].as_u64().unwrap() as usize;
        let c = img["container"].as_u64().unwrap() as usize;
        let b = bytes
            .get(&id)
            .ok_or_else(|| format!("image {id} was not extracted"))?;
        if img["hash"] != Value::String(format!("md5:{}", md5_hex(b))) {
            return Err(format!("image {id}: --hash does not match the extracted bytes").into());
        }
        let member = s(&img["member"]);
        let key = match containers[c]["kind"].as_str() {
            Some("offload-binary") => format!(
                "ob {member} kind={} arch={} triple={} producer={}",
                objdump_kind(&s(&img["image_kind"])),
                s(&img["target_id"]),
                s(&img["triple"]),
                s(&img["offload_kind"])
            ),
            Some("object-bundle") => format!("objbundle {member} {}", s(&img["bundle_id"])),
            Some("bundle") => {
                let t = top(c);
                format!(
                    "bundle {member} {} {}",
                    ordinal.get(&t).copied().unwrap_or(0),
                    s(&img["bundle_id"])
                )
            }
            k => format!("{k:?} {member} {}", s(&img["target_id"])),
        };
        let hash = if key.starts_with("objbundle") && key.contains(" host-") {
            "-".to_string()
        } else {
            md5_hex(b)
        };
        out_view.push((key, hash));
    }
    out_view.sort();
    Ok(out_view)
}

fn objdump_kind(k: &str) -> &str {
    match k {
        "object" => "elf",
        "bitcode" => "llvm ir",
        "fatbinary" => "fatbinary",
        "none" => "<none>",
        k => k,
    }
}

/// LLVM's view of `file` (a plain file or an archive).
fn llvm_view(file: &Path) -> Result<Vec<(String, String)>, Failed> {
    let work = tempdir();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::copy(file, work.path().join(&name)).unwrap();
    let is_archive = std::fs::read(file).unwrap().starts_with(b"!<arch>\n");
    let mut view = Vec::new();
    if is_archive {
        // Per member: the same view, keyed by member.
        let members = work.path().join("members");
        std::fs::create_dir_all(&members).unwrap();
        crate::util::run(&llvm("llvm-ar"), &["x", &format!("../{name}")], &members).ok()?;
        let mut names: Vec<_> = std::fs::read_dir(&members)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        names.sort();
        for m in names {
            let mname = m.file_name().unwrap().to_string_lossy().into_owned();
            view.extend(plain_view(&m, &mname)?);
        }
    } else {
        view.extend(plain_view(&work.path().join(&name), "")?);
    }
    view.sort();
    Ok(view)
}

fn plain_view(file: &Path, member: &str) -> Result<Vec<(String, String)>, Failed> {
    let dir = file.parent().unwrap();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let mut view = Vec::new();
    let data = std::fs::read(file).unwrap();
    let bare = data.starts_with(b"__CLANG_OFFLOAD_BUNDLE__") || data.starts_with(b"CCOB");
    // llvm-objdump: OffloadBinary images printed, bundles written to files.
    let od = run(&llvm("llvm-objdump"), &["--offloading", &name], dir);
    let text = String::from_utf8_lossy(&od.stdout).into_owned();
    if od.code == 0 {
        let mut fields: BTreeMap<&str, String> = BTreeMap::new();
        let mut images = Vec::new();
        for line in text.lines() {
            if line.starts_with("OFFLOADING IMAGE") {
                fields.clear();
            }
            for k in ["kind", "arch", "triple", "producer"] {
                if let Some(v) = line
                    .strip_prefix(k)
                    .filter(|v| v.is_empty() || v.starts_with(' '))
                {
                    fields.insert(k, v.trim().to_string());
                }
            }
            if line.starts_with("producer") {
                images.push(fields.clone());
            }
            if let Some(path) = line.strip_prefix("Extracting offload bundle: ") {
                let rest = path
                    .strip_prefix(&format!("{name}."))
                    .ok_or_else(|| format!("odd name {path}"))?;
                let (n, id) = rest
                    .split_once('.')
                    .ok_or_else(|| format!("odd name {path}"))?;
                let mut bytes =
                    std::fs::read(dir.join(path)).map_err(|e| format!("{path}: {e}"))?;
                // LLVM 22's llvm-objdump writes wrong bytes (zeros and heap
                // garbage, different at each run) for entries of compressed
                // bundles: take those from clang-offload-bundler instead.
                if let Some(b) = ccob_entry(dir, &name, n.parse().unwrap_or(0), id)? {
                    bytes = b;
                }
                view.push((format!("bundle {member} {n} {id}"), md5_hex(&bytes)));
            }
        }
        for f in images {
            // llvm-offload-binary extracts it (one image per triple+arch here).
            let out = format!("{name}.llvm-image");
            let mut spec = format!("--image=file={out},triple={}", f["triple"]);
            if !f["arch"].is_empty() {
                spec += &format!(",arch={}", f["arch"]);
            }
            run(&llvm("llvm-offload-binary"), &[name.as_str(), &spec], dir).ok()?;
            let bytes = std::fs::read(dir.join(&out)).map_err(|e| format!("{out}: {e}"))?;
            std::fs::remove_file(dir.join(&out)).unwrap();
            view.push((
                format!(
                    "ob {member} kind={} arch={} triple={} producer={}",
                    f["kind"], f["arch"], f["triple"], f["producer"]
                ),
                md5_hex(&bytes),
            ));
        }
    } else if !bare {
        return Err(format!("llvm-objdump --offloading {name}: {}", od.stderr).into());
    }
    // clang-offload-bundler: bundled objects and bare bundles (which
    // llvm-objdump does not read).
    let sections = run(&llvm("llvm-objdump"), &["-h", &name], dir);
    let bundled_object =
        String::from_utf8_lossy(&sections.stdout).contains("__CLANG_OFFLOAD_BUNDLE__");
    if bare || bundled_object {
        let ty = if bare { "-type=bc" } else { "-type=o" };
        let input = format!("-input={name}");
        let list = run(&llvm("clang-offload-bundler"), &["-list", ty, &input], dir).ok()?;
        for id in String::from_utf8_lossy(&list.stdout).lines() {
            let hash = if id.starts_with("host-") && !bare {
                "-".to_string()
            } else {
                let out = format!("{name}.unbundled");
                let targets = format!("-targets={id}");
                let o = format!("-output={out}");
                run(
                    &llvm("clang-offload-bundler"),
                    &["-unbundle", ty, &input, &targets, &o],
                    dir,
                )
                .ok()?;
                let b = std::fs::read(dir.join(&out)).unwrap();
                md5_hex(&b)
            };
            let key = if bare {
                format!("bundle {member} 0 {id}")
            } else {
                format!("objbundle {member} {id}")
            };
            view.push((key, hash));
        }
    }
    Ok(view)
}

/// Entry `id` of the `n`th bundle in `name`'s `.hip_fatbin` if that bundle
/// is compressed, unbundled by clang-offload-bundler. LLVM 22's bundler
/// reads only one CCOB per input, so the section is split at each CCOB's
/// total-size field (v2: u32 at 8; v3: u64 at 8), skipping zero padding.
fn ccob_entry(dir: &Path, name: &str, n: usize, id: &str) -> Result<Option<Vec<u8>>, Failed> {
    let sec = dir.join(format!("{name}.hip_fatbin"));
    let dump = format!("--dump-section=.hip_fatbin={}", sec.display());
    // Not /dev/null as the output: llvm-objcopy writes a temporary file and
    // renames it over the output, so run as root it replaced the device
    // node with a regular file, for every process on the machine.
    let discard = dir.join(format!("{name}.objcopy-out"));
    let discard = discard.to_string_lossy();
    if run(&llvm("llvm-objcopy"), &[dump.as_str(), name, &discard], dir).code != 0 {
        return Ok(None);
    }
    let data = std::fs::read(&sec).unwrap_or_default();
    let mut at = 0usize;
    let mut k = 0usize;
    while at + 24 <= data.len() {
        if data[at] == 0 {
            at += 1;
            continue;
        }
        if &data[at..at + 4] != b"CCOB" {
            return Ok(None);
        }
        let version = u16::from_le_bytes([data[at + 4], data[at + 5]]);
        let total = match version {
            2 => u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize,
            3 => u64::from_le_bytes(data[at + 8..at + 16].try_into().unwrap()) as usize,
            _ => return Ok(None),
        };
        if k == n {
            let one = dir.join(format!("{name}.ccob{n}"));
            std::fs::write(&one, &data[at..at + total]).unwrap();
            let out = dir.join(format!("{name}.ccob{n}.out"));
            let args = [
                "-unbundle".to_string(),
                "-type=o".into(),
                format!("-input={}", one.display()),
                format!("-targets={id}"),
                format!("-output={}", out.display()),
            ];
            run(&llvm("clang-offload-bundler"), &args, dir).ok()?;
            return Ok(Some(std::fs::read(&out).unwrap()));
        }
        k += 1;
        at += total;
    }
    Ok(None)
}

fn compare(files: &[&str]) -> Result<(), Failed> {
    let b = built()?;
    for f in files {
        let path = b.dir.join(f);
        let ours =
            our_view(&path).map_err(|e| format!("{f}: {}", e.message().unwrap_or_default()))?;
        let theirs =
            llvm_view(&path).map_err(|e| format!("{f}: {}", e.message().unwrap_or_default()))?;
        if theirs.is_empty() {
            return Err(format!("{f}: LLVM found no images; the test proves nothing").into());
        }
        same(&format!("images of {f} (key, md5)"), ours, theirs)?;
    }
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(openmp_images_match_llvm, TOOLS),
        trial!(hip_bundles_match_llvm, TOOLS),
        trial!(compressed_bundles_match_llvm, TOOLS),
        trial!(archive_members_match_llvm, TOOLS),
        trial!(cuda_offload_binary_matches_llvm, TOOLS),
    ]
}

fn openmp_images_match_llvm() -> Result<(), Failed> {
    compare(&["omp_host.exe", "omp_gfx.exe", "omp_gfx.o"])
}

fn hip_bundles_match_llvm() -> Result<(), Failed> {
    compare(&["hip.o", "hip.exe", "hip_rdc.o", "hip_rdc.exe"])
}

fn compressed_bundles_match_llvm() -> Result<(), Failed> {
    compare(&["hipc.o", "hipc.exe", "bare.bundle", "bare.ccob"])
}

fn archive_members_match_llvm() -> Result<(), Failed> {
    compare(&["libmix.a"])
}

fn cuda_offload_binary_matches_llvm() -> Result<(), Failed> {
    compare(&["cuda.o"])
}

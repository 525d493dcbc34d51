//! `offload-kit split` of a `docker save` archive (issue #74): skopeo's
//! archive of the librocrand1 image `split_oci` builds (a text layer,
//! then Debian's librocrand1), and the Docker 25 form of it (an OCI
//! layout inside, as `prune`'s trials make it). Split into two groups,
//! the new archive tags each group's copy `t:latest-LABEL` beside the
//! input's `t:latest`; each copy's config, layers and (Docker 25) OCI
//! manifest are the members `prune --keep GROUP -o` writes, byte for
//! byte; the text layer is stored once; `skopeo inspect` reads every tag,
//! and a tag copied out with skopeo and unpacked with umoci holds a
//! library that passes `check --require` of its group's GPU and fails
//! the other's; the OCI view names each group's blobs as
//! `manifest.json` does; two runs give the same bytes. Refusals (an
//! unserved group, an existing output, a damaged archive) exit 2 and
//! write nothing; `--per-gpu` makes one copy per target. An output split
//! again for its groups (all, one, or `--per-gpu` again) is the same
//! bytes; a copy retagged as another group's is refused.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use super::images::docker_25_archive;
use super::split_oci::{again_each, build};
use crate::util::{files, ours, ours_json, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(rocrand_archive_tags_are_prunes_sharing_layers, &["umoci", "skopeo", "dpkg-deb"]),
        trial!(refused_docker_splits_write_nothing, &["umoci", "skopeo", "dpkg-deb"]),
    ]
}

/// The groups split, each with its label.
const GROUPS: [(&str, &str); 2] = [("gfx90a", "gfx90a"), ("gfx1030,gfx908", "gfx1030.gfx908")];

/// For each group, a GPU whose `check --require` passes on its library
/// and one whose fails.
const CHECKS: [(&str, &str); 2] = [("gfx90a", "gfx1030"), ("gfx1030", "gfx90a")];

/// The library, in an image's root.
const LIB: &str = "usr/lib/x86_64-linux-gnu/librocrand.so.1.1";

fn skopeo(d: &Path, args: &[&str]) -> Result<(), Failed> {
    run(Path::new("/usr/bin/skopeo"), args, d).ok()?;
    Ok(())
}

/// The regular files of the tar `path`, by path.
fn members(path: &Path) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    let mut out = BTreeMap::new();
    for e in tar::Archive::new(std::fs::File::open(path)?).entries()? {
        let mut e = e?;
        if e.header().entry_type().is_file() {
            let p = e.path()?.to_string_lossy().into_owned();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut bytes)?;
            out.insert(p, bytes);
        }
    }
    Ok(out)
}

/// The image of `manifest.json` (of the archive's `m`) tagged `tag`:
/// its config's and layers' bytes, in order.
fn image(m: &BTreeMap<String, Vec<u8>>, tag: &str) -> Result<Vec<Vec<u8>>, Failed> {
    let saved: Value = serde_json::from_slice(m.get("manifest.json").ok_or("no manifest.json")?)?;
    let img = saved.as_array().into_iter().flatten()
        .find(|i| i["RepoTags"].as_array().is_some_and(|t| t.iter().any(|t| same_tag(t, tag))))
        .ok_or_else(|| format!("no image is tagged {tag}"))?;
    let names = std::iter::once(&img["Config"]).chain(img["Layers"].as_array().into_iter().flatten());
    names
        .map(|n| {
            let n = n.as_str().unwrap_or("");
            m.get(n).cloned().ok_or_else(|| format!("{tag}: the member {n} is not there").into())
        })
        .collect()
}

/// Whether the RepoTags entry `t` is `tag` (skopeo writes the name
/// whole: `docker.io/library/t:latest`).
fn same_tag(t: &Value, tag: &str) -> bool {
    t.as_str().is_some_and(|t| t == tag || t.strip_prefix("docker.io/library/") == Some(tag))
}

/// The OCI manifest the `index.json` of the archive's `m` names `ref`
/// (its `org.opencontainers.image.ref.name`): its bytes.
fn oci_manifest(m: &BTreeMap<String, Vec<u8>>, name: &str) -> Result<Vec<u8>, Failed> {
    let index: Value = serde_json::from_slice(m.get("index.json").ok_or("no index.json")?)?;
    let d = index["manifests"].as_array().into_iter().flatten()
        .find(|d| d["annotations"]["org.opencontainers.image.ref.name"] == name)
        .ok_or_else(|| format!("index.json names no {name}"))?;
    let hex = d["digest"].as_str().and_then(|s| s.get(7..)).unwrap_or("");
    Ok(m.get(&format!("blobs/sha256/{hex}")).cloned().ok_or("the manifest is not there")?)
}

/// Copies `tag` of the archive `a` out with skopeo, unpacks it with
/// umoci into `d/into` and runs `check --require` of `passes` (which must
/// pass) and `fails` (which must fail) on its library.
fn copied_and_checked(d: &Path, a: &str, tag: &str, into: &str, passes: &str, fails: &str) -> Result<(), Failed> {
    skopeo(d, &["inspect", &format!("docker-archive:{a}:{tag}")])?;
    let layout = format!("{into}-oci");
    skopeo(d, &["copy", &format!("docker-archive:{a}:{tag}"), &format!("oci:{layout}:t")])?;
    run(Path::new("/usr/bin/umoci"), &["unpack", "--rootless", "--image", &format!("{layout}:t"), into], d).ok()?;
    let lib = format!("{into}/rootfs/{LIB}");
    for (gpu, ok) in [(passes, true), (fails, false)] {
        let code = run(&ours(), &["check", "--require", gpu, &lib], d).code;
        if (code == 0) != ok {
            return Err(format!("{a}:{tag}: check --require {gpu} exited {code}").into());
        }
    }
    Ok(())
}

/// skopeo's archive and its Docker 25 form, each split into two groups
/// twice (the same bytes): each tag's members are prune's, the text
/// layer is stored once, skopeo, umoci and `check --require` read each.
fn rocrand_archive_tags_are_prunes_sharing_layers() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    build(d)?;
    skopeo(d, &["copy", "oci:L:t", "docker-archive:d.tar:t:latest"])?;
    docker_25_archive(d, "d.tar", "d25.tar")?;
    let mut args = vec!["split"];
    for (g, _) in GROUPS {
        args.extend(["--gpus", g]);
    }
    for input in ["d.tar", "d25.tar"] {
        let doc = ours_json(&[&args[..], &["--json", "-d", "a", input]].concat(), d)?;
        let r = run(&ours(), &[&args[..], &["-d", "b", input]].concat(), d).ok()?;
        let out = format!("a/{input}");
        same(&format!("{input}: the two splits"), std::fs::read(d.join(&out))?, std::fs::read(d.join("b").join(input))?)?;
        same(&format!("{input}: says"), String::from_utf8_lossy(&r.stdout).contains(": split into 2 images\n"), true)?;
        split_again(d, &out, &[&args[..], &["split", "--gpus", GROUPS[1].0]])?;
        let f = &doc["files"][0];
        same("format", f["format"].as_str(), Some("docker"))?;
        let labels: Vec<&str> = f["outputs"].as_array().into_iter().flatten().filter_map(|o| o["label"].as_str()).collect();
        same("labels", labels, vec!["gfx90a", "gfx1030.gfx908", "null"])?;
        let (old, new) = (members(&d.join(input))?, members(&d.join(&out))?);
        same(&format!("{out}: t:latest"), image(&new, "t:latest")?, image(&old, "t:latest")?)?;
        let text_layer = image(&old, "t:latest")?[1].clone();
        let copies = new.values().filter(|b| **b == text_layer).count();
        same(&format!("{out}: copies of the text layer"), copies, 1)?;
        for (i, (group, label)) in GROUPS.iter().enumerate() {
            let pruned = format!("p-{label}-{input}");
            run(&ours(), &["prune", "--keep", group, "-o", &pruned, input], d).ok()?;
            let theirs = members(&d.join(&pruned))?;
            let tag = format!("t:latest-{label}");
            same(&format!("{out}: {tag}'s config and layers"), image(&new, &tag)?, image(&theirs, "t:latest")?)?;
            if input == "d25.tar" {
                same(&format!("{out}: {tag}'s OCI manifest"), oci_manifest(&new, &format!("t-{label}"))?, oci_manifest(&theirs, "t")?)?;
                agree(d, &out, &tag, &format!("t-{label}"))?;
            }
            let (passes, fails) = CHECKS[i];
            copied_and_checked(d, &out, &tag, &format!("u{i}-{input}"), passes, fails)?;
        }
        skopeo(d, &["inspect", &format!("docker-archive:{out}:t:latest")])?;
    }
    Ok(())
}

/// Splits the archive `out` again for each of `groups` (a split's
/// arguments: its groups, some of them, or `--per-gpu` again): the same
/// bytes, whose first group's tag (else `t:latest`) skopeo reads.
fn split_again(d: &Path, out: &str, groups: &[&[&str]]) -> Result<(), Failed> {
    again_each(d, out, groups, |again, g| {
        if std::fs::read(again)? != std::fs::read(d.join(out))? {
            return Err(format!("{out} split again ({g:?}) is not the same bytes").into());
        }
        let tag = g.iter().position(|a| *a == "--gpus").and_then(|i| g.get(i + 1));
        let tag = tag.map_or("t:latest".to_string(), |l| format!("t:latest-{}", l.replace(',', ".")));
        skopeo(d, &["inspect", &format!("docker-archive:{}:{tag}", again.display())])
    })
}

/// The archive `out` with its image tagged `t:latest-LABEL` dropped and
/// the copy tagged `t:latest-OTHER` tagged so instead (`w.tar`): split for
/// LABEL, t's copy is not that image, which is refused (exit 2) with
/// nothing written.
fn renamed_tag_refused(d: &Path, out: &str, label: &str, other: &str) -> Result<(), Failed> {
    let m = members(&d.join(out))?;
    let mut saved: Value = serde_json::from_slice(m.get("manifest.json").ok_or("no manifest.json")?)?;
    let list = saved.as_array_mut().ok_or("manifest.json is no list")?;
    let tagged = |i: &Value, t: &str| i["RepoTags"].as_array().is_some_and(|a| a.iter().any(|a| same_tag(a, t)));
    let own = format!("t:latest-{label}");
    let at = list.iter().position(|i| tagged(i, &own)).ok_or("no such image")?;
    let tags = list.remove(at)["RepoTags"].clone();
    let o = list.iter_mut().find(|i| tagged(i, &format!("t:latest-{other}"))).ok_or("no other image")?;
    o["RepoTags"] = tags;
    let mut b = tar::Builder::new(std::fs::File::create(d.join("w.tar"))?);
    for (path, bytes) in &m {
        let bytes = match path.as_str() {
            "manifest.json" => serde_json::to_vec(&saved)?,
            _ => bytes.clone(),
        };
        let mut h = tar::Header::new_ustar();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        b.append_data(&mut h, path, &bytes[..])?;
    }
    b.into_inner()?;
    let r = run(&ours(), &["split", "--gpus", label, "-d", "wo", "w.tar"], d);
    if r.code != 2 || !r.stderr.contains("would be named twice") {
        return Err(format!("a retagged image: exit {}: {}", r.code, r.stderr).into());
    }
    same("what a refused split left", files(&d.join("wo")).len(), 0)
}

/// The OCI view of the split Docker 25 archive `a` (extracted, unpacked
/// by umoci, which checks every digest) names under `name` the config
/// and layers `manifest.json` names under `tag`.
fn agree(d: &Path, a: &str, tag: &str, name: &str) -> Result<(), Failed> {
    let y = d.join(format!("y-{name}"));
    std::fs::create_dir_all(&y)?;
    run(Path::new("/usr/bin/tar"), &[Path::new("-xf"), &d.join(a), Path::new("-C"), &y], d).ok()?;
    let m: Value = serde_json::from_slice(&oci_manifest(&members(&d.join(a))?, name)?)?;
    let path = |v: &Value| format!("blobs/sha256/{}", v["digest"].as_str().and_then(|s| s.get(7..)).unwrap_or(""));
    let oci: Vec<String> = std::iter::once(path(&m["config"])).chain(m["layers"].as_array().into_iter().flatten().map(path)).collect();
    let saved: Value = serde_json::from_slice(&std::fs::read(y.join("manifest.json"))?)?;
    let img = saved.as_array().into_iter().flatten()
        .find(|i| same_tag(&i["RepoTags"][0], tag)).ok_or("no such tag")?;
    let docker: Vec<String> = std::iter::once(&img["Config"]).chain(img["Layers"].as_array().into_iter().flatten())
        .map(|v| v.as_str().unwrap_or("").to_string()).collect();
    same(&format!("{a}: the blobs both views name for {tag}"), docker, oci)?;
    let image = format!("{}:{name}", y.display());
    run(Path::new("/usr/bin/umoci"), &["unpack", "--rootless", "--image", &image, &format!("{}-u", y.display())], d).ok()?;
    Ok(())
}

/// A group nothing in the archive serves, a split over an existing
/// output and a damaged archive (a layer cut short; a config naming
/// another diff_id) exit 2 naming the archive, and leave the output
/// directory as it was. `--per-gpu` serves each target by its own copy.
fn refused_docker_splits_write_nothing() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    build(d)?;
    skopeo(d, &["copy", "oci:L:t", "docker-archive:d.tar:t:latest"])?;
    let refused = |args: &[&str], says: &str| -> Result<(), Failed> {
        let before = files(&d.join("o"));
        let r = run(&ours(), args, d);
        if r.code != 2 || !r.stderr.contains(says) {
            return Err(format!("{args:?}: exit {}: {}", r.code, r.stderr).into());
        }
        if files(&d.join("o")) != before {
            return Err(format!("{args:?} changed the output directory").into());
        }
        Ok(())
    };
    refused(&["split", "--gpus", "gfx90a", "--gpus", "sm_86", "-d", "o", "d.tar"], "'sm_86'")?;
    // Damaged: the library's layer cut short, and a config's diff_id changed.
    let old = members(&d.join("d.tar"))?;
    let saved: Value = serde_json::from_slice(&old["manifest.json"])?;
    let lib_layer = saved[0]["Layers"][1].as_str().ok_or("no layer")?.to_string();
    let config = saved[0]["Config"].as_str().ok_or("no config")?.to_string();
    let bytes = std::fs::read(d.join("d.tar"))?;
    let at = find(&bytes, old[&lib_layer].get(..4096).ok_or("a short layer")?).ok_or("the layer is not in the archive")?;
    let mut cut = bytes.clone();
    cut[at + 2048..at + 4096].fill(0);
    std::fs::write(d.join("cut.tar"), &cut)?;
    refused(&["split", "--gpus", "gfx90a", "-d", "o", "cut.tar"], "cut.tar")?;
    let mut lying = bytes.clone();
    let c = find(&lying, &old[&config]).ok_or("the config is not in the archive")?;
    let text = String::from_utf8_lossy(&old[&config]).into_owned();
    let diff = text.find("sha256:").ok_or("no diff_id")? + 7;
    lying[c + diff] = if lying[c + diff] == b'0' { b'1' } else { b'0' };
    std::fs::write(d.join("lying.tar"), &lying)?;
    refused(&["split", "--gpus", "gfx90a", "-d", "o", "lying.tar"], "lying.tar")?;
    unnamed_entry(d)?;
    refused(&["split", "--gpus", "gfx90a", "-d", "o", "unnamed.tar"], "manifests[1] names no image")?;
    same("what the refusals left", files(&d.join("o")).len(), 0)?;
    // --per-gpu; then a split over the archive it wrote.
    let doc = ours_json(&["split", "--per-gpu", "--json", "-d", "o", "d.tar"], d)?;
    let f = &doc["files"][0];
    let labels: Vec<&str> = f["outputs"].as_array().into_iter().flatten().filter_map(|o| o["label"].as_str()).collect();
    same("--per-gpu labels", labels, vec!["gfx803", "gfx900_xnackm", "gfx906_xnackm", "gfx908_xnackm", "gfx90a", "gfx1030", "null"])?;
    skopeo(d, &["inspect", "docker-archive:o/d.tar:t:latest-gfx906_xnackm"])?;
    // --per-gpu again on its output; a copy retagged as another's.
    split_again(d, "o/d.tar", &[&["split", "--per-gpu"], &["split", "--gpus", "gfx90a"]])?;
    renamed_tag_refused(d, "o/d.tar", "gfx90a", "gfx803")?;
    refused(&["split", "--gpus", "gfx90a", "-d", "o", "d.tar"], "exists")
}

/// Makes `unnamed.tar` in `d`: the Docker 25 form of `d.tar` whose
/// `index.json` names the image a second time without a name, which a
/// split could not tell each group's copy of from the input's.
fn unnamed_entry(d: &Path) -> Result<(), Failed> {
    docker_25_archive(d, "d.tar", "d25.tar")?;
    let x = d.join("x-d25.tar");
    let mut index: Value = serde_json::from_slice(&std::fs::read(x.join("index.json"))?)?;
    let mut bare = index["manifests"][0].clone();
    bare.as_object_mut().ok_or("no index entry")?.remove("annotations");
    index["manifests"].as_array_mut().ok_or("no manifests")?.push(bare);
    std::fs::write(x.join("index.json"), index.to_string())?;
    let mut names: Vec<String> = ["-cf", "../unnamed.tar", "oci-layout", "index.json", "manifest.json", "blobs"]
        .map(String::from)
        .to_vec();
    for e in std::fs::read_dir(&x)? {
        let n = e?.file_name().to_string_lossy().into_owned();
        if n.starts_with('l') {
            names.push(n);
        }
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    run(Path::new("/usr/bin/tar"), &names, &x).ok()?;
    Ok(())
}

/// Where `needle` first starts in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

//! `offload-kit split` of an OCI image layout (issue #74) that `umoci`
//! builds of two layers: a text file, then Debian's librocrand1 (one HIP
//! bundle of code objects for gfx803 to gfx1030). Split into two groups,
//! the new layout names each group's image `t-LABEL` beside the input's
//! `t`; the manifest, config and layers each tag names are the blobs
//! `prune --keep GROUP -o` writes, byte for byte; the unchanged layer is
//! stored once and named by every image; `umoci unpack` (which checks
//! every digest) and `skopeo inspect` read every tag; the library
//! unpacked from a group's image passes `check --require` of each GPU of
//! its group (gfx908's fails as on the input) and fails that of the other group; two runs give the same
//! bytes. A group the image does not serve is refused (exit 2) with
//! nothing written, as is a split over an existing output layout;
//! `--per-gpu` makes one image per target (`split_docker` splits the
//! `docker save` form). An output split again for its groups (all, one,
//! or `--per-gpu` again) is the same layout, file for file; an image
//! named as a group's copy but other is refused.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::real_libs::{DEB, downloads};
use crate::util::{files, ours, ours_json, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(rocrand_layout_tags_are_prunes_sharing_blobs, &["umoci", "skopeo", "dpkg-deb"]),
        trial!(unserved_groups_write_nothing, &["umoci", "dpkg-deb"]),
    ]
}

/// The groups split, each with its label.
const GROUPS: [(&str, &str); 2] = [("gfx90a", "gfx90a"), ("gfx1030,gfx908", "gfx1030.gfx908")];

/// For each group, a GPU whose `check --require` passes on its library
/// and one whose fails (gfx908's passes on no copy: the library has
/// gfx908 code for xnack- only).
const CHECKS: [(&str, &str); 2] = [("gfx90a", "gfx1030"), ("gfx1030", "gfx90a")];

/// The library, in an image's root.
const LIB: &str = "usr/lib/x86_64-linux-gnu/librocrand.so.1.1";

fn umoci(d: &Path, args: &[&str]) -> Result<(), Failed> {
    run(Path::new("/usr/bin/umoci"), args, d).ok()?;
    Ok(())
}

/// Builds the layout `L` (image `L:t`) in `d`: a layer holding
/// `etc/motd`, then one holding librocrand1's files; blobs no longer
/// named are collected.
pub(crate) fn build(d: &Path) -> Result<(), Failed> {
    let deb = downloads()?.join(DEB);
    run(Path::new("/usr/bin/dpkg-deb"), &[Path::new("-x"), &deb, Path::new("x")], d).ok()?;
    umoci(d, &["init", "--layout", "L"])?;
    umoci(d, &["new", "--image", "L:t"])?;
    umoci(d, &["unpack", "--rootless", "--image", "L:t", "b"])?;
    std::fs::create_dir_all(d.join("b/rootfs/etc"))?;
    std::fs::write(d.join("b/rootfs/etc/motd"), "split me\n")?;
    umoci(d, &["repack", "--image", "L:t", "b"])?;
    std::fs::remove_dir_all(d.join("b"))?;
    umoci(d, &["unpack", "--rootless", "--image", "L:t", "b"])?;
    run(Path::new("/bin/cp"), &["-a", "x/usr", "b/rootfs/"], d).ok()?;
    umoci(d, &["repack", "--image", "L:t", "b"])?;
    std::fs::remove_dir_all(d.join("b"))?;
    umoci(d, &["gc", "--layout", "L"])
}

/// The JSON blob `digest` of the layout `dir`.
fn blob(dir: &Path, digest: &str) -> Result<Value, Failed> {
    let hex = digest.strip_prefix("sha256:").ok_or("no sha256 digest")?;
    Ok(serde_json::from_slice(&std::fs::read(dir.join("blobs/sha256").join(hex))?)?)
}

/// The digests of the manifests the `index.json` of `dir` names, by name.
fn tags(dir: &Path) -> Result<BTreeMap<String, String>, Failed> {
    let index: Value = serde_json::from_slice(&std::fs::read(dir.join("index.json"))?)?;
    let mut out = BTreeMap::new();
    for m in index["manifests"].as_array().into_iter().flatten() {
        let name = m["annotations"]["org.opencontainers.image.ref.name"].as_str().unwrap_or("");
        out.insert(name.to_string(), m["digest"].as_str().unwrap_or("").to_string());
    }
    Ok(out)
}

/// The layers the manifest `digest` of `dir` names.
fn layers(dir: &Path, digest: &str) -> Result<Vec<String>, Failed> {
    let m = blob(dir, digest)?;
    Ok(m["layers"].as_array().into_iter().flatten().filter_map(|l| l["digest"].as_str()).map(str::to_string).collect())
}

/// Fails unless every blob of prune's layout `pruned` is in `split`'s,
/// with the same bytes, and `split`'s `tag` names prune's one manifest.
fn same_blobs(d: &Path, split: &str, tag: &str, pruned: &str) -> Result<(), Failed> {
    let theirs = tags(&d.join(pruned))?;
    same(&format!("{pruned}'s tags"), theirs.keys().cloned().collect::<Vec<_>>(), vec!["t".to_string()])?;
    same(&format!("{split}:{tag}'s manifest"), tags(&d.join(split))?.get(tag), theirs.get("t"))?;
    let ours = files(&d.join(split).join("blobs/sha256"));
    for (hex, bytes) in files(&d.join(pruned).join("blobs/sha256")) {
        if ours.get(&hex) != Some(&bytes) {
            return Err(format!("{split}: the blob {hex} of {pruned} is not there as prune wrote it").into());
        }
    }
    Ok(())
}

/// Unpacks `image` with umoci into `d/into` and runs `check --require`
/// of each GPU of `passes` (which must pass) and of `fails` (which must
/// fail) on its library.
fn unpack_and_check(d: &Path, image: &str, into: &str, passes: &str, fails: &str) -> Result<(), Failed> {
    umoci(d, &["unpack", "--rootless", "--image", image, into])?;
    let lib = format!("{into}/rootfs/{LIB}");
    for (list, ok) in [(passes, true), (fails, false)] {
        for gpu in list.split(',').filter(|g| !g.is_empty()) {
            let code = run(&ours(), &["check", "--require", gpu, &lib], d).code;
            if (code == 0) != ok {
                return Err(format!("{image}: check --require {gpu} exited {code}").into());
            }
        }
    }
    Ok(())
}

/// librocrand1's layout split into two groups, twice (the same bytes):
/// each tag's blobs are prune's, the text layer is stored once and named
/// by every image, and umoci, skopeo and `check --require` read each.
fn rocrand_layout_tags_are_prunes_sharing_blobs() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    build(d)?;
    let input = tags(&d.join("L"))?;
    let mut args = vec!["split"];
    for (g, _) in GROUPS {
        args.extend(["--gpus", g]);
    }
    let doc = ours_json(&[&args[..], &["--json", "-d", "a", "L"]].concat(), d)?;
    let r = run(&ours(), &[&args[..], &["-d", "b", "L"]].concat(), d).ok()?;
    same("the two splits", files(&d.join("a")), files(&d.join("b")))?;
    // The input's own image is carried: the split made one per group.
    same("says", String::from_utf8_lossy(&r.stdout).contains(": split into 2 images\n"), true)?;
    split_again(d, "a/L", &[&args[..], &["split", "--gpus", GROUPS[1].0]])?;
    renamed_copy_refused(d, "a/L", GROUPS[0].1)?;
    let f = &doc["files"][0];
    same("format", f["format"].as_str(), Some("oci"))?;
    let labels: Vec<&str> = f["outputs"].as_array().into_iter().flatten().filter_map(|o| o["label"].as_str()).collect();
    same("labels", labels, vec!["gfx90a", "gfx1030.gfx908", "null"])?;
    let split = d.join("a/L");
    let names: Vec<String> = tags(&split)?.into_keys().collect();
    same("tags", names, vec!["t".to_string(), "t-gfx1030.gfx908".into(), "t-gfx90a".into()])?;
    same("the input's tag", tags(&split)?.get("t"), input.get("t"))?;
    let base = layers(&d.join("L"), &input["t"])?[0].clone();
    for (i, (group, label)) in GROUPS.iter().enumerate() {
        let pruned = format!("p-{label}");
        run(&ours(), &["prune", "--keep", group, "-o", &pruned, "L"], d).ok()?;
        let tag = format!("t-{label}");
        same_blobs(d, "a/L", &tag, &pruned)?;
        let ls = layers(&split, &tags(&split)?[&tag])?;
        same(&format!("{tag}'s text layer"), ls.first(), Some(&base))?;
        let image = format!("a/L:{tag}");
        let (passes, fails) = CHECKS[i];
        unpack_and_check(d, &image, &format!("u{i}"), passes, fails)?;
        run(Path::new("/usr/bin/skopeo"), &["inspect", &format!("oci:{image}")], d).ok()?;
    }
    unpack_and_check(d, "a/L:t", "u", "gfx90a,gfx1030", "")?;
    run(Path::new("/usr/bin/skopeo"), &["inspect", "oci:a/L:t"], d).ok()?;
    // The input's 4 blobs, and each group's manifest, config and layer.
    same("blobs", files(&split.join("blobs/sha256")).len(), 4 + 2 * 3)?;
    Ok(())
}

/// Splits the output `out` again for each of `groups` (a split's
/// arguments: its groups, or some of them): the same layout, file for
/// file, which skopeo reads; a group's image named as the input's but
/// other (the input's image for another group's, renamed) is refused
/// with nothing written.
fn split_again(d: &Path, out: &str, groups: &[&[&str]]) -> Result<(), Failed> {
    again_each(d, out, groups, |again, g| {
        same(&format!("{out} split again ({g:?})"), files(again), files(&d.join(out)))?;
        let first = tags(again)?.into_keys().find(|t| t.contains('-')).ok_or("no group's image")?;
        run(Path::new("/usr/bin/skopeo"), &["inspect", &format!("oci:{}:{first}", again.display())], d).ok()?;
        Ok(())
    })
}

/// Splits the output `out` (in `d`) again for each of `groups` (a
/// split's arguments), into `again-OUT-K`: each run passes, and says how
/// many images it made where groups are given; `check` then judges the
/// new output (its path, and the arguments).
pub(crate) fn again_each(
    d: &Path,
    out: &str,
    groups: &[&[&str]],
    check: impl Fn(&Path, &[&str]) -> Result<(), Failed>,
) -> Result<(), Failed> {
    for (k, g) in groups.iter().enumerate() {
        let dir = format!("again-{}-{k}", out.replace('/', "_"));
        let r = run(&ours(), &[*g, &["-d", &dir, out]].concat(), d).ok()?;
        let name = Path::new(out).file_name().ok_or("no name")?;
        let again = d.join(&dir).join(name);
        let n = g.iter().filter(|a| **a == "--gpus").count();
        let says = format!(": split into {n} image{}\n", if n == 1 { "" } else { "s" });
        if n > 0 && !String::from_utf8_lossy(&r.stdout).contains(&says) {
            return Err(format!("{out} split again ({g:?}) did not say '{says}'").into());
        }
        check(&again, g)?;
    }
    Ok(())
}

/// The layout `out` with its image `t-LABEL` dropped and another group's
/// renamed so (`w`): split for LABEL, t's copy is not that image, which
/// is refused (exit 2) with nothing written.
fn renamed_copy_refused(d: &Path, out: &str, label: &str) -> Result<(), Failed> {
    run(Path::new("/bin/cp"), &["-a", out, "w"], d).ok()?;
    let mut index: Value = serde_json::from_slice(&std::fs::read(d.join("w/index.json"))?)?;
    let descs = index["manifests"].as_array_mut().ok_or("no manifests")?;
    let own = format!("t-{label}");
    descs.retain(|m| m["annotations"]["org.opencontainers.image.ref.name"] != own.as_str());
    let other = descs.iter_mut().find(|m| m["annotations"]["org.opencontainers.image.ref.name"].as_str().is_some_and(|n| n.starts_with("t-")));
    other.ok_or("no other group's image")?["annotations"]["org.opencontainers.image.ref.name"] = Value::from(own.clone());
    std::fs::write(d.join("w/index.json"), serde_json::to_vec(&index)?)?;
    let r = run(&ours(), &["split", "--gpus", label, "-d", "wo", "w"], d);
    if r.code != 2 || !r.stderr.contains(&format!("'{own}' would be named twice")) {
        return Err(format!("a renamed image: exit {}: {}", r.code, r.stderr).into());
    }
    same("what a refused split left", files(&d.join("wo")).len(), 0)
}

/// A group nothing in the image serves exits 2 naming it; the output
/// directory is left without output. `--per-gpu` serves each target by
/// its own image; a split into a directory holding its output already is
/// refused and changes nothing.
fn unserved_groups_write_nothing() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    build(d)?;
    let r = run(&ours(), &["split", "--gpus", "gfx90a", "--gpus", "sm_86", "-d", "o", "L"], d);
    if r.code != 2 || !r.stderr.contains("'sm_86'") {
        return Err(format!("an unserved group: exit {}: {}", r.code, r.stderr).into());
    }
    same("what an unserved group left", files(&d.join("o")).len(), 0)?;
    let o: Vec<_> = std::fs::read_dir(d.join("o")).map(|r| r.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    same("entries left in o", o.len(), 0)?;
    // --per-gpu: one image per target, each served by its own alone; a
    // second split into the same directory is refused, leaving it as it was.
    let doc = ours_json(&["split", "--per-gpu", "--json", "-d", "o", "L"], d)?;
    let f = &doc["files"][0];
    let labels: Vec<&str> = f["outputs"].as_array().into_iter().flatten().filter_map(|o| o["label"].as_str()).collect();
    same("--per-gpu labels", labels, vec!["gfx803", "gfx900_xnackm", "gfx906_xnackm", "gfx908_xnackm", "gfx90a", "gfx1030", "null"])?;
    for t in f["targets"].as_array().into_iter().flatten() {
        let label = t["what"].as_str().unwrap_or_default().replace(":xnack-", "_xnackm");
        same(&format!("outputs serving {}", t["what"]), t["outputs"].as_array().cloned(), Some(vec![serde_json::json!(label)]))?;
    }
    // --per-gpu again on its output, and a one-group output split again.
    split_again(d, "o/L", &[&["split", "--per-gpu"]])?;
    run(&ours(), &["split", "--gpus", "gfx90a", "-d", "s", "L"], d).ok()?;
    split_again(d, "s/L", &[&["split", "--gpus", "gfx90a"]])?;
    let before = files(&d.join("o"));
    let r = run(&ours(), &["split", "--gpus", "gfx90a", "-d", "o", "L"], d);
    if r.code != 2 || !r.stderr.contains("exists") {
        return Err(format!("a split over an existing layout: exit {}: {}", r.code, r.stderr).into());
    }
    if files(&d.join("o")) != before {
        return Err("a refused split changed the output directory".into());
    }
    Ok(())
}

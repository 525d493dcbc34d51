//! `offload-kit prune` on container images (issue #60): an OCI image
//! layout that `umoci` builds in two layers (the lower one holds three
//! HIP bundles, the upper one whites one of them out) pruned to gfx90a
//! into a new layout and in place. `umoci unpack` (which checks every
//! digest) and `skopeo inspect`/`skopeo copy` accept the result, the
//! unpacked root holds each library as `prune` makes it alone, byte for
//! byte, the whited-out file stays gone, and the layout is smaller; in
//! place, the old blobs are gone; a layout found in a walked directory
//! is pruned the same. The `docker save` forms (skopeo's, and Docker
//! 25's with an OCI layout inside, whose two views must name the same
//! new blobs) pruned into a new archive and in place. Killed with
//! SIGKILL at random points of `--in-place`, the layout unpacks, old or
//! new; sent SIGTERM, no temporary is left. Hostile layouts (a
//! lying digest, a missing blob, a layer that is no tar, an entry
//! climbing out of the root) exit 2 naming the blob and the field, and
//! nothing is written.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};

use serde_json::json;

use super::tree::bundle;
use crate::images::{blob, digest, gzip_tar};
use crate::util::{files, ours, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(umoci_layout_to_gfx90a_new_and_in_place, &["umoci", "skopeo"]),
        trial!(killed_in_place_the_layout_unpacks_old_or_new, &["umoci"]),
        trial!(sigterm_leaves_no_temporaries, &["umoci", "kill"]),
        trial!(hostile_layouts_exit_2_and_nothing_is_written, &[]),
    ]
}

fn umoci(d: &Path, args: &[&str]) -> Result<(), Failed> {
    run(Path::new("/usr/bin/umoci"), args, d).ok()?;
    Ok(())
}

/// Builds the layout `L` (image `L:t`) in `d`: a lower layer holding
/// `usr/lib/k.hipfb`, `usr/lib/gone.hipfb` and `opt/r.hipfb` (HIP
/// bundles of a gfx90a and a gfx942 image of `len` bytes), an upper one
/// whiting out `gone.hipfb` and adding a text file. The bundle's bytes.
fn build(d: &Path, len: usize) -> Result<Vec<u8>, Failed> {
    bundle(d, "k.hipfb", &[("gfx90a", 1, len), ("gfx942", 2, len)])?;
    umoci(d, &["init", "--layout", "L"])?;
    umoci(d, &["new", "--image", "L:t"])?;
    umoci(d, &["unpack", "--rootless", "--image", "L:t", "b"])?;
    let root = d.join("b/rootfs");
    std::fs::create_dir_all(root.join("usr/lib"))?;
    std::fs::create_dir_all(root.join("opt"))?;
    for p in ["usr/lib/k.hipfb", "usr/lib/gone.hipfb", "opt/r.hipfb"] {
        std::fs::copy(d.join("k.hipfb"), root.join(p))?;
    }
    umoci(d, &["repack", "--image", "L:t", "b"])?;
    std::fs::remove_dir_all(d.join("b"))?;
    umoci(d, &["unpack", "--rootless", "--image", "L:t", "b"])?;
    std::fs::remove_file(root.join("usr/lib/gone.hipfb"))?;
    std::fs::write(root.join("opt/notes.txt"), "upper layer")?;
    umoci(d, &["repack", "--image", "L:t", "b"])?;
    std::fs::remove_dir_all(d.join("b"))?;
    Ok(std::fs::read(d.join("k.hipfb"))?)
}

/// The bytes of every file of the layout `dir`, together.
fn size(dir: &Path) -> u64 {
    files(dir).values().map(|v| v.len() as u64).sum()
}

/// Copies the directory `from` to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) -> Result<(), Failed> {
    for (rel, bytes) in files(from) {
        let p = to.join(rel);
        std::fs::create_dir_all(p.parent().ok_or("no parent")?)?;
        std::fs::write(p, bytes)?;
    }
    Ok(())
}

/// Unpacks `layout:t` into `d/into` with umoci (which checks every
/// digest): the files of its root.
fn unpacked(d: &Path, layout: &str, into: &str) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    let _ = std::fs::remove_dir_all(d.join(into));
    let image = format!("{layout}:t");
    umoci(d, &["unpack", "--rootless", "--image", &image, into])?;
    let root = files(&d.join(into).join("rootfs"));
    std::fs::remove_dir_all(d.join(into))?;
    Ok(root)
}

/// Checks the unpacked root `root` of a pruned layout: each library is
/// `want`, `gone.hipfb` is not there, the text file is.
fn check_root(what: &str, root: &BTreeMap<String, Vec<u8>>, want: &[u8]) -> Result<(), Failed> {
    let names: Vec<&str> = root.keys().map(String::as_str).collect();
    same(
        &format!("{what}: the files"),
        names,
        vec!["opt/notes.txt", "opt/r.hipfb", "usr/lib/k.hipfb"],
    )?;
    for p in ["opt/r.hipfb", "usr/lib/k.hipfb"] {
        if root[p] != want {
            return Err(format!("{what}: {p} is not the bundle pruned alone").into());
        }
    }
    Ok(())
}

fn umoci_layout_to_gfx90a_new_and_in_place() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let k = build(d, 1 << 20)?;
    run(&ours(), &["prune", "--keep", "gfx90a", "-o", "k.pruned", "k.hipfb"], d).ok()?;
    let want = std::fs::read(d.join("k.pruned"))?;
    if want.len() >= k.len() {
        return Err("the bundle pruned alone is not smaller".into());
    }
    copy_dir(&d.join("L"), &d.join("W"))?;

    // Into a new layout.
    let r = run(&ours(), &["prune", "--keep", "gfx90a", "-o", "P", "L"], d).ok()?;
    let said = String::from_utf8_lossy(&r.stdout);
    if !said.contains("signatures") {
        return Err(format!("the report says nothing of signatures:\n{said}").into());
    }
    check_root("the new layout", &unpacked(d, "P", "u")?, &want)?;
    let skopeo = Path::new("/usr/bin/skopeo");
    run(skopeo, &["inspect", "oci:P:t"], d).ok()?;
    run(skopeo, &["copy", "oci:P:t", "oci:Q:t"], d).ok()?;
    check_root("skopeo's copy", &unpacked(d, "Q", "u")?, &want)?;
    if size(&d.join("P")) + (1 << 20) > size(&d.join("L")) {
        return Err("the new layout is not 1 MiB smaller".into());
    }
    // The input is as it was.
    check_old(d, "L", &k)?;

    // In place: the same image, the old blobs gone.
    run(&ours(), &["prune", "--keep", "gfx90a", "--in-place", "W"], d).ok()?;
    check_root("the layout pruned in place", &unpacked(d, "W", "u")?, &want)?;
    same(
        "the index pruned in place and into a new layout",
        std::fs::read(d.join("W/index.json"))?,
        std::fs::read(d.join("P/index.json"))?,
    )?;
    let blobs = |dir: &str| -> Result<Vec<String>, Failed> {
        let mut v: Vec<String> = std::fs::read_dir(d.join(dir).join("blobs/sha256"))?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()?;
        v.sort();
        Ok(v)
    };
    let (w, p) = (blobs("W")?, blobs("P")?);
    if let Some(stray) = p.iter().find(|b| !w.contains(b)) {
        return Err(format!("the new layout's blob {stray} is not in the one pruned in place").into());
    }
    if !size(&d.join("W")).saturating_add(1 << 20) <= size(&d.join("L")) {
        return Err("the layout pruned in place is not 1 MiB smaller".into());
    }
    // Again: nothing left to do, the layout as it was.
    let before = files(&d.join("W"));
    run(&ours(), &["prune", "--keep", "gfx90a", "--in-place", "W"], d).ok()?;
    same("the layout pruned twice", files(&d.join("W")), before)?;
    // A layout found in a walked directory is pruned as one image, its
    // blobs never one by one.
    copy_dir(&d.join("L"), &d.join("T/sub/img"))?;
    std::fs::copy(d.join("k.hipfb"), d.join("T/k.hipfb"))?;
    run(&ours(), &["prune", "--keep", "gfx90a", "--in-place", "T"], d).ok()?;
    check_root("a layout found in a walked directory", &unpacked(d, "T/sub/img", "u")?, &want)?;
    same("the bundle beside it", std::fs::read(d.join("T/k.hipfb"))?, want.clone())?;
    docker_archive(d, &want)
}

/// The `docker save` form of `L` (made by skopeo) pruned into a new
/// archive and in place: skopeo reads it (checking each layer against
/// its diff_id) into a layout that unpacks to the pruned root.
fn docker_archive(d: &Path, want: &[u8]) -> Result<(), Failed> {
    let skopeo = Path::new("/usr/bin/skopeo");
    run(skopeo, &["copy", "oci:L:t", "docker-archive:d.tar:t:latest"], d).ok()?;
    run(&ours(), &["prune", "--keep", "gfx90a", "-o", "p.tar", "d.tar"], d).ok()?;
    legacy_left_out(&d.join("d.tar"), &d.join("p.tar"))?;
    run(skopeo, &["inspect", "docker-archive:p.tar"], d).ok()?;
    run(skopeo, &["copy", "docker-archive:p.tar", "oci:D:t"], d).ok()?;
    check_root("the pruned docker archive", &unpacked(d, "D", "u")?, want)?;
    let (old, new) = (std::fs::metadata(d.join("d.tar"))?.len(), std::fs::metadata(d.join("p.tar"))?.len());
    if new + (1 << 20) > old {
        return Err(format!("the pruned archive is {new} bytes, {old} before").into());
    }
    std::fs::copy(d.join("d.tar"), d.join("w.tar"))?;
    run(&ours(), &["prune", "--keep", "gfx90a", "--in-place", "w.tar"], d).ok()?;
    same(
        "the archive pruned in place and into a new file",
        std::fs::read(d.join("w.tar"))?,
        std::fs::read(d.join("p.tar"))?,
    )?;
    docker_25(d, want)
}

/// The members of the tar `path`: each path, with its link target if it
/// is a symbolic link.
fn tar_members(path: &Path) -> Result<BTreeMap<String, Option<String>>, Failed> {
    let mut out = BTreeMap::new();
    for e in tar::Archive::new(std::fs::File::open(path)?).entries()? {
        let e = e?;
        let link = match e.header().entry_type().is_symlink() {
            true => e.link_name()?.map(|l| l.to_string_lossy().into_owned()),
            false => None,
        };
        out.insert(e.path()?.to_string_lossy().into_owned(), link);
    }
    Ok(out)
}

/// skopeo's archive `before` has the legacy entries (`repositories`,
/// `<id>/json`, `<id>/layer.tar` links to the layers); the pruned
/// `after`, whose layers changed, has none of them, and every link it
/// has leads to a member it holds (issue #71: the links led to the old
/// layers' names, gone from the archive).
fn legacy_left_out(before: &Path, after: &Path) -> Result<(), Failed> {
    let legacy = |m: &BTreeMap<String, Option<String>>| -> Vec<String> {
        m.keys()
            .filter(|p| *p == "repositories" || p.ends_with("/json") || p.ends_with("/layer.tar"))
            .cloned()
            .collect()
    };
    let (old, new) = (tar_members(before)?, tar_members(after)?);
    if legacy(&old).len() < 3 {
        return Err(format!("skopeo's archive has no legacy entries: {:?}", old.keys()).into());
    }
    if !legacy(&new).is_empty() {
        return Err(format!("the pruned archive keeps the legacy entries {:?}", legacy(&new)).into());
    }
    for (p, to) in &new {
        let Some(to) = to else { continue };
        let mut parts: Vec<&str> = p.split('/').collect();
        parts.pop();
        for part in to.split('/') {
            match part {
                "" | "." => {}
                ".." => _ = parts.pop(),
                part => parts.push(part),
            }
        }
        if !new.contains_key(&parts.join("/")) {
            return Err(format!("the pruned archive's link {p} leads to {to}, which it does not hold").into());
        }
    }
    Ok(())
}

/// Docker 25 and later save an OCI layout beside `manifest.json`: every
/// member under `blobs/sha256/`, `index.json` naming an OCI manifest of
/// the same config and layers, `<id>/layer.tar` links to the layers.
/// Built here from skopeo's archive `d.tar` (no tool here writes this
/// form), pruned into a new archive and in place: skopeo reads the
/// `manifest.json` view, umoci unpacks the OCI view (checking every
/// digest), both to the pruned root, and both name the same new blobs.
fn docker_25(d: &Path, want: &[u8]) -> Result<(), Failed> {
    let tar = Path::new("/usr/bin/tar");
    docker_25_archive(d, "d.tar", "d25.tar")?;

    run(&ours(), &["prune", "--keep", "gfx90a", "-o", "p25.tar", "d25.tar"], d).ok()?;
    let skopeo = Path::new("/usr/bin/skopeo");
    run(skopeo, &["inspect", "docker-archive:p25.tar"], d).ok()?;
    run(skopeo, &["copy", "docker-archive:p25.tar", "oci:D25:t"], d).ok()?;
    check_root("the pruned Docker 25 archive, as skopeo reads it", &unpacked(d, "D25", "u")?, want)?;
    std::fs::create_dir_all(d.join("y25"))?;
    run(tar, &["-xf", "p25.tar", "-C", "y25"], d).ok()?;
    check_root("the pruned Docker 25 archive's OCI layout", &unpacked(d, "y25", "u")?, want)?;
    run(skopeo, &["inspect", "oci:y25:t"], d).ok()?;
    same_blobs(&d.join("y25"))?;
    let (old, new) = (std::fs::metadata(d.join("d25.tar"))?.len(), std::fs::metadata(d.join("p25.tar"))?.len());
    if new + (1 << 20) > old {
        return Err(format!("the pruned Docker 25 archive is {new} bytes, {old} before").into());
    }
    std::fs::copy(d.join("d25.tar"), d.join("w25.tar"))?;
    run(&ours(), &["prune", "--keep", "gfx90a", "--in-place", "w25.tar"], d).ok()?;
    same(
        "the Docker 25 archive pruned in place and into a new file",
        std::fs::read(d.join("w25.tar"))?,
        std::fs::read(d.join("p25.tar"))?,
    )
}

/// Makes the Docker 25 form (see [`docker_25`]) of skopeo's archive
/// `from` (one image `t:latest`) as `to`, both in `d`.
pub(crate) fn docker_25_archive(d: &Path, from: &str, to: &str) -> Result<(), Failed> {
    let tar = Path::new("/usr/bin/tar");
    let x = d.join(format!("x-{to}"));
    std::fs::create_dir_all(x.join("blobs/sha256"))?;
    run(tar, &["-xf", from, "-C", &format!("x-{to}")], d).ok()?;
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(x.join("manifest.json"))?)?;
    let member = |name: &serde_json::Value| -> Result<(String, Vec<u8>), Failed> {
        let name = name.as_str().ok_or("a name that is no string")?;
        let bytes = std::fs::read(x.join(name))?;
        std::fs::remove_file(x.join(name))?;
        Ok((digest(&bytes), bytes))
    };
    let (cdigest, config) = member(&saved[0]["Config"])?;
    let config = blob(&x, "application/vnd.oci.image.config.v1+json", &config)?;
    let (mut layers, mut paths) = (Vec::new(), Vec::new());
    for (i, l) in saved[0]["Layers"].as_array().ok_or("no Layers")?.iter().enumerate() {
        let (dg, bytes) = member(l)?;
        layers.push(blob(&x, "application/vnd.oci.image.layer.v1.tar", &bytes)?);
        let path = format!("blobs/sha256/{}", &dg[7..]);
        std::fs::create_dir_all(x.join(format!("l{i}")))?;
        std::os::unix::fs::symlink(format!("../{path}"), x.join(format!("l{i}/layer.tar")))?;
        paths.push(path);
    }
    let manifest = json!({"schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config, "layers": layers});
    let mut manifest = blob(
        &x,
        "application/vnd.oci.image.manifest.v1+json",
        serde_json::to_string_pretty(&manifest)?.as_bytes(),
    )?;
    manifest["annotations"] = json!({"io.containerd.image.name": "docker.io/library/t:latest",
        "org.opencontainers.image.ref.name": "t"});
    let index = json!({"schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [manifest]});
    std::fs::write(x.join("index.json"), index.to_string())?;
    std::fs::write(x.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#)?;
    let saved = json!([{"Config": format!("blobs/sha256/{}", &cdigest[7..]),
        "RepoTags": ["t:latest"], "Layers": paths}]);
    std::fs::write(x.join("manifest.json"), saved.to_string())?;
    let to = format!("../{to}");
    let mut names = vec!["-cf", to.as_str(), "oci-layout", "index.json", "manifest.json", "blobs"];
    let links: Vec<String> = (0..paths.len()).map(|i| format!("l{i}")).collect();
    names.extend(links.iter().map(String::as_str));
    run(tar, &names, &x).ok()?;
    Ok(())
}

/// The `manifest.json` of the extracted Docker 25 archive `y` names the
/// config and layers that its OCI manifest names, each a blob there.
fn same_blobs(y: &Path) -> Result<(), Failed> {
    let read = |p: &Path| -> Result<serde_json::Value, Failed> { Ok(serde_json::from_slice(&std::fs::read(p)?)?) };
    let saved = read(&y.join("manifest.json"))?;
    let index = read(&y.join("index.json"))?;
    let m = index["manifests"][0]["digest"].as_str().ok_or("no manifest in index.json")?;
    let m = read(&y.join("blobs/sha256").join(&m[7..]))?;
    let path = |d: &serde_json::Value| format!("blobs/sha256/{}", d["digest"].as_str().and_then(|s| s.get(7..)).unwrap_or(""));
    let oci: Vec<String> = std::iter::once(path(&m["config"]))
        .chain(m["layers"].as_array().into_iter().flatten().map(path))
        .collect();
    let docker: Vec<String> = std::iter::once(&saved[0]["Config"])
        .chain(saved[0]["Layers"].as_array().into_iter().flatten())
        .map(|v| v.as_str().unwrap_or("").to_string())
        .collect();
    same("the blobs manifest.json and the OCI manifest name", &docker, &oci)?;
    for b in &oci {
        let bytes = std::fs::read(y.join(b))?;
        same(&format!("the digest of {b}"), &digest(&bytes)[7..], &b[13..])?;
    }
    Ok(())
}

/// The layout `dir` unpacks to the old root: each library `k`.
fn check_old(d: &Path, dir: &str, k: &[u8]) -> Result<(), Failed> {
    let root = unpacked(d, dir, "u")?;
    for p in ["opt/r.hipfb", "usr/lib/k.hipfb"] {
        if root.get(p).map(Vec::as_slice) != Some(k) {
            return Err(format!("{dir}: {p} is not the old bundle").into());
        }
    }
    Ok(())
}

/// The layout of [`build`] (images of 4 MiB) pruned `--in-place` and
/// killed with SIGKILL 20 times at random points of its run: each time
/// `umoci unpack` accepts it, and its root is the old one or the new.
fn killed_in_place_the_layout_unpacks_old_or_new() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let k = build(d, 4 << 20)?;
    run(&ours(), &["prune", "--keep", "gfx90a", "-o", "k.pruned", "k.hipfb"], d).ok()?;
    let new = std::fs::read(d.join("k.pruned"))?;
    let args = ["prune", "--keep", "gfx90a", "--in-place", "W"];
    copy_dir(&d.join("L"), &d.join("W"))?;
    let start = std::time::Instant::now();
    run(&ours(), &args, d).ok()?;
    let whole = start.elapsed().as_micros().max(1000) as u64;
    // The time, printed on failure so that a run can be replayed.
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |t| t.as_nanos() as u64)
        | 1;
    let (mut olds, mut news) = (0, 0);
    for round in 0..20 {
        std::fs::remove_dir_all(d.join("W"))?;
        copy_dir(&d.join("L"), &d.join("W"))?;
        let after = crate::util::kill_point(&mut x, round, 20, whole);
        crate::util::ours_killed_after(&args, d, after)?;
        let at = format!("round {round} (seed {x}, killed after {after} µs of {whole})");
        let root = unpacked(d, "W", "u").map_err(|e| format!("{at}: {e:?}"))?;
        match root.get("usr/lib/k.hipfb") {
            Some(b) if *b == k => olds += 1,
            Some(b) if *b == new => news += 1,
            _ => return Err(format!("{at}: the root is neither the old nor the new").into()),
        }
    }
    if olds == 0 || news == 0 {
        return Err(format!("{olds} old and {news} new layouts in 20 kills: no spread").into());
    }
    Ok(())
}

/// The `.offload-kit-*` files and directories anywhere below `dir`.
fn temporaries(dir: &Path) -> Vec<String> {
    files_and_dirs(dir)
        .into_iter()
        .filter(|p| p.rsplit('/').next().is_some_and(|n| n.starts_with(".offload-kit-")))
        .collect()
}

/// Every path below `dir`, directories included.
fn files_and_dirs(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(e.path().to_string_lossy().into_owned());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(files_and_dirs(&e.path()));
        }
    }
    out
}

/// Runs our binary with `args` in `d` and sends it SIGTERM after
/// `micros` µs (when it has not ended by then); returns once it is gone.
fn terminated_after(args: &[&str], d: &Path, micros: u64) -> Result<(), Failed> {
    let mut child = std::process::Command::new(ours())
        .args(args)
        .current_dir(d)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    std::thread::sleep(std::time::Duration::from_micros(micros));
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    child.wait()?;
    Ok(())
}

/// The layout of [`build`] (images of 4 MiB) pruned in place and into a
/// new layout, each sent SIGTERM 6 times at points spread over its run:
/// no `.offload-kit-*` file or directory is left anywhere (the staged
/// blobs, the new index, the new layout's temporary directory), the
/// layout in place unpacks old or new, and a new layout is whole or
/// absent.
fn sigterm_leaves_no_temporaries() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let k = build(d, 4 << 20)?;
    run(&ours(), &["prune", "--keep", "gfx90a", "-o", "k.pruned", "k.hipfb"], d).ok()?;
    let new = std::fs::read(d.join("k.pruned"))?;
    copy_dir(&d.join("L"), &d.join("W"))?;
    let start = std::time::Instant::now();
    run(&ours(), &["prune", "--keep", "gfx90a", "--in-place", "W"], d).ok()?;
    let whole = start.elapsed().as_micros().max(1000) as u64;
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |t| t.as_nanos() as u64)
        | 1;
    for round in 0..6 {
        let after = crate::util::kill_point(&mut x, round, 6, whole);
        let at = format!("round {round} (seed {x}, SIGTERM after {after} µs of {whole})");
        std::fs::remove_dir_all(d.join("W"))?;
        copy_dir(&d.join("L"), &d.join("W"))?;
        terminated_after(&["prune", "--keep", "gfx90a", "--in-place", "W"], d, after)?;
        same(&format!("{at}, in place: temporaries left"), temporaries(d), vec![])?;
        let root = unpacked(d, "W", "u").map_err(|e| format!("{at}: {e:?}"))?;
        let lib = root.get("usr/lib/k.hipfb");
        if lib != Some(&k) && lib != Some(&new) {
            return Err(format!("{at}: the root is neither the old nor the new").into());
        }
        let _ = std::fs::remove_dir_all(d.join("P"));
        terminated_after(&["prune", "--keep", "gfx90a", "-o", "P", "L"], d, after)?;
        same(&format!("{at}, -o: temporaries left"), temporaries(d), vec![])?;
        if d.join("P").exists() {
            check_root(&format!("{at}: the new layout"), &unpacked(d, "P", "u")?, &new)?;
        }
    }
    Ok(())
}

/// `prune -o out DIR` and `prune --in-place DIR` exit 2, the error naming
/// each of `names`; no `out` is made, and `DIR` is as it was.
fn refused(d: &Path, dir: &str, names: &[&str]) -> Result<(), Failed> {
    let before = files(&d.join(dir));
    for args in [
        vec!["prune", "--keep", "gfx90a", "-o", "out", dir],
        vec!["prune", "--keep", "gfx90a", "--in-place", dir],
    ] {
        let r = run(&ours(), &args, d);
        let what = args.join(" ");
        same(&format!("{what}: the exit code"), r.code, 2)?;
        for n in names {
            if !r.stderr.contains(n) {
                return Err(format!("{what}: the error names no '{n}':\n{}", r.stderr).into());
            }
        }
        if d.join("out").exists() {
            return Err(format!("{what}: wrote out").into());
        }
        if files(&d.join(dir)) != before {
            return Err(format!("{what}: changed {dir}").into());
        }
    }
    let left: Vec<String> = std::fs::read_dir(d)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".offload-kit-"))
        .collect();
    same(&format!("{dir}: temporary files left"), left, vec![])
}

fn hostile_layouts_exit_2_and_nothing_is_written() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    bundle(d, "k.hipfb", &[("gfx90a", 1, 4096), ("gfx942", 2, 4096)])?;
    let k = std::fs::read(d.join("k.hipfb"))?;
    let good = gzip_tar(&[("usr/lib/k.hipfb", &k)])?;
    let hex = digest(&good.0)[7..].to_string();

    // A layer blob changed after its digest was taken.
    layout(&d.join("lying"), std::slice::from_ref(&good))?;
    let mut changed = good.0.clone();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    std::fs::write(d.join("lying/blobs/sha256").join(&hex), &changed)?;
    refused(d, "lying", &[&hex, "layers[0]", "'digest'"])?;

    // The manifest names a blob the layout lacks.
    layout(&d.join("missing"), std::slice::from_ref(&good))?;
    std::fs::remove_file(d.join("missing/blobs/sha256").join(&hex))?;
    refused(d, "missing", &[&hex, "layers[0]", "No such file"])?;

    // A layer that is no tar.
    let not_tar = b"this is not a tar archive at all".repeat(20);
    let not_tar = (not_tar.clone(), not_tar);
    layout(&d.join("not-tar"), std::slice::from_ref(&not_tar))?;
    refused(d, "not-tar", &[&digest(&not_tar.0)[7..], "layers[0]", "tar"])?;

    // An entry that leads out of the image's root.
    let evil = gzip_tar(&[("usr/../../etc/k.hipfb", &k)])?;
    layout(&d.join("evil"), std::slice::from_ref(&evil))?;
    refused(d, "evil", &["usr/../../etc/k.hipfb", "out of the image's root"])?;

    // The config's diff_id is not the layer's.
    let other = (good.0.clone(), b"another tar".to_vec());
    layout(&d.join("diff-id"), std::slice::from_ref(&other))?;
    refused(d, "diff-id", &["rootfs.diff_ids[0]", "config"])?;

    // The good layout prunes.
    layout(&d.join("good"), std::slice::from_ref(&good))?;
    run(&ours(), &["prune", "--keep", "gfx90a", "-o", "out", "good"], d).ok()?;
    Ok(())
}

/// An OCI layout at `dir` of one image (`dir:t`) whose layers are
/// `layers` (gzipped blob, and the tar its diff_id is taken of).
pub(crate) fn layout(dir: &Path, layers: &[(Vec<u8>, Vec<u8>)]) -> Result<(), Failed> {
    std::fs::create_dir_all(dir.join("blobs/sha256"))?;
    std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#)?;
    let diff_ids: Vec<String> = layers.iter().map(|l| digest(&l.1)).collect();
    let config = json!({"architecture": "amd64", "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": diff_ids}});
    let config = blob(dir, "application/vnd.oci.image.config.v1+json", config.to_string().as_bytes())?;
    let layers = layers
        .iter()
        .map(|l| blob(dir, "application/vnd.oci.image.layer.v1.tar+gzip", &l.0))
        .collect::<Result<Vec<_>, _>>()?;
    let manifest = json!({"schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config, "layers": layers});
    let mut manifest = blob(
        dir,
        "application/vnd.oci.image.manifest.v1+json",
        manifest.to_string().as_bytes(),
    )?;
    manifest["annotations"] = json!({"org.opencontainers.image.ref.name": "t"});
    let index = json!({"schemaVersion": 2, "manifests": [manifest]});
    std::fs::write(dir.join("index.json"), index.to_string())?;
    Ok(())
}

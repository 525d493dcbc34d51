//! Container images read as a container sees them (issue #60): an OCI
//! image layout that `umoci` builds in two layers — the lower one holds
//! three code objects, the upper one whites one out and replaces another
//! — and the `docker save` archive `skopeo` makes of it. The scanners
//! must list only what a container started from the image sees, under its
//! path there (`diff` pairs the two forms file by file), and a gate must
//! not count the hidden files' GPUs. Layouts
//! that lie (a blob whose digest is wrong, a manifest naming a missing
//! blob, a layer that is no tar, an entry leading out of the root, an
//! index that is no JSON) are exit 2, the blob or field named.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::prune::companion::code_object;
use crate::util::{ours, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(layers_seen_as_a_container_sees_them, &["clang++", "umoci", "skopeo"]),
        trial!(layouts_that_lie_are_refused_by_name, &["clang++"]),
    ]
}

/// Each file `inspect --json` lists, with the targets of its images.
fn listed(args: &[&str], cwd: &Path) -> Result<BTreeMap<String, Vec<String>>, Failed> {
    let r = run(&ours(), args, cwd);
    let r = r.ok()?;
    let doc: Value = serde_json::from_slice(&r.stdout)?;
    let mut out = BTreeMap::new();
    for f in doc["files"].as_array().ok_or("no files[]")? {
        let path = f["path"].as_str().ok_or("a file with no path")?;
        let targets = f["images"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| i["arch"].as_str().unwrap_or("?").to_string())
            .collect();
        out.insert(path.to_string(), targets);
    }
    Ok(out)
}

fn layers_seen_as_a_container_sees_them() -> Result<(), Failed> {
    let d = tempdir();
    let d = d.path();
    code_object(d, "gfx90a", "k90a.hsaco")?;
    code_object(d, "gfx1030", "k1030.hsaco")?;
    let umoci = |args: &[&str]| run(Path::new("/usr/bin/umoci"), args, d).ok();
    umoci(&["init", "--layout", "L"])?;
    umoci(&["new", "--image", "L:t"])?;
    umoci(&["unpack", "--rootless", "--image", "L:t", "b"])?;
    let root = d.join("b/rootfs");
    std::fs::create_dir_all(root.join("usr/lib"))?;
    std::fs::create_dir_all(root.join("opt"))?;
    std::fs::copy(d.join("k90a.hsaco"), root.join("usr/lib/a.hsaco"))?;
    std::fs::copy(d.join("k1030.hsaco"), root.join("usr/lib/gone.hsaco"))?;
    std::fs::copy(d.join("k1030.hsaco"), root.join("opt/r.hsaco"))?;
    umoci(&["repack", "--image", "L:t", "b"])?;
    std::fs::remove_dir_all(d.join("b"))?;
    umoci(&["unpack", "--rootless", "--image", "L:t", "b"])?;
    std::fs::remove_file(root.join("usr/lib/gone.hsaco"))?;
    std::fs::copy(d.join("k90a.hsaco"), root.join("opt/r.hsaco"))?;
    umoci(&["repack", "--image", "L:t", "b"])?;
    lying_diff_ids(d)?;
    run(
        Path::new("/usr/bin/skopeo"),
        &["copy", "oci:L:t", "docker-archive:d.tar:t:latest"],
        d,
    )
    .ok()?;

    let want = |root: &str| {
        BTreeMap::from([
            (format!("{root}!/opt/r.hsaco"), vec!["gfx90a".to_string()]),
            (format!("{root}!/usr/lib/a.hsaco"), vec!["gfx90a".to_string()]),
        ])
    };
    same("the layout's files", listed(&["inspect", "--json", "L"], d)?, want("L"))?;
    same(
        "the docker archive's files",
        listed(&["inspect", "--json", "d.tar"], d)?,
        want("d.tar"),
    )?;
    // Compressed whole, as `docker save | gzip` makes it: the same image.
    for (tool, args, name) in [
        ("/usr/bin/gzip", &["-k", "d.tar"][..], "d.tar.gz"),
        ("/usr/bin/zstd", &["-q", "d.tar", "-o", "d.tar.zst"], "d.tar.zst"),
        ("/usr/bin/xz", &["-k", "d.tar"], "d.tar.xz"),
    ] {
        run(Path::new(tool), args, d).ok()?;
        same(
            &format!("the {name} archive's files"),
            listed(&["inspect", "--json", name], d)?,
            want(name),
        )?;
    }
    // Found walking a directory too.
    std::fs::create_dir(d.join("images"))?;
    std::fs::rename(d.join("L"), d.join("images/L"))?;
    same(
        "the layout found in a directory",
        listed(&["inspect", "--json", "images"], d)?,
        want("images/L"),
    )?;
    // The two forms of one image pair file by file, the same.
    let r = run(&ours(), &["diff", "--json", "images/L", "d.tar"], d);
    same("diff of the layout and the archive: exit", r.code, 0)?;
    let doc: Value = serde_json::from_slice(&r.stdout)?;
    let paired: Vec<(String, String)> = doc["files"]
        .as_array()
        .ok_or("diff: no files[]")?
        .iter()
        .map(|f| (f["path"].to_string(), f["status"].to_string()))
        .collect();
    same(
        "diff of the layout and the archive: the files paired",
        paired,
        vec![
            (r#""opt/r.hsaco""#.into(), r#""same""#.into()),
            (r#""usr/lib/a.hsaco""#.into(), r#""same""#.into()),
        ],
    )?;
    // The hidden files' gfx1030 is nowhere a container looks.
    for input in ["images", "d.tar"] {
        let r = run(&ours(), &["check", "--require", "gfx1030", "--any", input], d);
        same(&format!("check --require gfx1030 --any {input}"), r.code, 1)?;
        let r = run(&ours(), &["check", "--require", "gfx90a", "--any", input], d);
        same(&format!("check --require gfx90a --any {input}"), r.code, 0)?;
    }
    Ok(())
}

/// The layout `d/L` copied to `d/lie` with its config's
/// `rootfs.diff_ids[0]` changed (the config's and the manifest's digests
/// made right again, so only the diff ID lies): every scanner refuses
/// it, naming the layout, the lower layer's digest and the field; a gate
/// does not pass.
fn lying_diff_ids(d: &Path) -> Result<(), Failed> {
    run(Path::new("/bin/cp"), &["-r", "L", "lie"], d).ok()?;
    let blobs = d.join("lie/blobs/sha256");
    let read = |dg: &Value| -> Result<Value, Failed> {
        let hex = dg.as_str().and_then(|s| s.strip_prefix("sha256:")).ok_or("no digest")?;
        Ok(serde_json::from_slice(&std::fs::read(blobs.join(hex))?)?)
    };
    let write = |v: &Value, desc: &mut Value| -> Result<(), Failed> {
        let bytes = serde_json::to_vec(v)?;
        let dg = digest(&bytes);
        std::fs::write(blobs.join(&dg[7..]), &bytes)?;
        desc["digest"] = dg.into();
        desc["size"] = bytes.len().into();
        Ok(())
    };
    let mut index: Value = serde_json::from_slice(&std::fs::read(d.join("lie/index.json"))?)?;
    let mut manifest = read(&index["manifests"][0]["digest"])?;
    let mut config = read(&manifest["config"]["digest"])?;
    let lower = manifest["layers"][0]["digest"].as_str().ok_or("no layer")?.to_string();
    config["rootfs"]["diff_ids"][0] = digest(b"not the layer").into();
    write(&config, &mut manifest["config"])?;
    write(&manifest, &mut index["manifests"][0])?;
    std::fs::write(d.join("lie/index.json"), serde_json::to_vec(&index)?)?;
    for args in [&["inspect", "lie"][..], &["check", "--require", "gfx90a", "--any", "lie"]] {
        let r = run(&ours(), args, d);
        same(&format!("{args:?} on a lying diff ID: the exit code"), r.code, 2)?;
        for n in ["lie", &lower[7..], "rootfs.diff_ids[0]"] {
            if !r.stderr.contains(n) {
                return Err(format!("{args:?}: the error names no '{n}':\n{}", r.stderr).into());
            }
        }
    }
    Ok(())
}

/// A tar of `entries` (path, bytes), gzipped.
fn layer(entries: &[(&str, &[u8])]) -> Result<Vec<u8>, Failed> {
    gzip_tar(entries).map(|(gz, _)| gz)
}

/// A gzipped tar of `entries` (path, bytes), names written as they are
/// (`..` included: `append_data` would refuse it); with the tar.
pub(crate) fn gzip_tar(entries: &[(&str, &[u8])]) -> Result<(Vec<u8>, Vec<u8>), Failed> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, data) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        h.set_cksum();
        b.append(&h, *data)?;
    }
    let tar = b.into_inner()?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &tar)?;
    Ok((gz.finish()?, tar))
}

/// A gzipped tar of one file at `path`, the path given by a GNU long
/// name entry (`form` "gnu") or a pax header ("pax"), written as it is.
fn long_named_layer(form: &str, path: &str, data: &[u8]) -> Result<Vec<u8>, Failed> {
    let mut b = tar::Builder::new(Vec::new());
    if form == "pax" {
        b.append_pax_extensions([("path", path.as_bytes())])?;
    } else {
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
        h.set_entry_type(tar::EntryType::GNULongName);
        h.set_size(path.len() as u64 + 1);
        h.set_cksum();
        b.append(&h, [path.as_bytes(), b"\0"].concat().as_slice())?;
    }
    let mut h = tar::Header::new_gnu();
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    h.as_old_mut().name[..6].copy_from_slice(b"k.hsac");
    h.set_cksum();
    b.append(&h, data)?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &b.into_inner()?)?;
    Ok(gz.finish()?)
}

/// `sha256:HEX` of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> String {
    format!("sha256:{:x}", sha2::Sha256::digest(bytes))
}

/// Writes a blob of `bytes` in the layout `dir`; its descriptor.
pub(crate) fn blob(dir: &Path, media_type: &str, bytes: &[u8]) -> Result<Value, Failed> {
    let dg = digest(bytes);
    std::fs::write(dir.join("blobs/sha256").join(&dg[7..]), bytes)?;
    Ok(json!({"mediaType": media_type, "digest": dg, "size": bytes.len()}))
}

/// An OCI layout at `dir` of one image whose layers are `layers`.
pub(crate) fn layout(dir: &Path, layers: &[Vec<u8>]) -> Result<(), Failed> {
    std::fs::create_dir_all(dir.join("blobs/sha256"))?;
    std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#)?;
    // Each layer's diff ID: the SHA-256 of its tar, gunzipped.
    let diff_ids: Vec<String> = layers
        .iter()
        .map(|l| {
            let mut tar = Vec::new();
            match std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&l[..]), &mut tar) {
                Ok(_) => digest(&tar),
                Err(_) => digest(l),
            }
        })
        .collect();
    let config = json!({"architecture": "amd64", "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": diff_ids}});
    let config = blob(dir, "application/vnd.oci.image.config.v1+json", config.to_string().as_bytes())?;
    let layers = layers
        .iter()
        .map(|l| blob(dir, "application/vnd.oci.image.layer.v1.tar+gzip", l))
        .collect::<Result<Vec<_>, _>>()?;
    let manifest = json!({"schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config, "layers": layers});
    let manifest = blob(
        dir,
        "application/vnd.oci.image.manifest.v1+json",
        manifest.to_string().as_bytes(),
    )?;
    let index = json!({"schemaVersion": 2, "manifests": [manifest]});
    std::fs::write(dir.join("index.json"), index.to_string())?;
    Ok(())
}

/// `inspect DIR` exits 2 and its error names every one of `names`, and
/// lists no file of the layout.
fn refused(d: &Path, dir: &str, names: &[&str]) -> Result<(), Failed> {
    let r = run(&ours(), &["inspect", dir], d);
    same(&format!("inspect {dir}: the exit code"), r.code, 2)?;
    for n in names {
        if !r.stderr.contains(n) {
            return Err(format!("inspect {dir}: the error names no '{n}':\n{}", r.stderr).into());
        }
    }
    Ok(())
}

fn layouts_that_lie_are_refused_by_name() -> Result<(), Failed> {
    let d = tempdir();
    let d = d.path();
    let k = code_object(d, "gfx90a", "k.hsaco")?;
    let good = layer(&[("usr/lib/k.hsaco", &k)])?;
    layout(&d.join("good"), std::slice::from_ref(&good))?;
    same(
        "the hand-made layout's files",
        listed(&["inspect", "--json", "good"], d)?,
        BTreeMap::from([("good!/usr/lib/k.hsaco".to_string(), vec!["gfx90a".to_string()])]),
    )?;
    let hex = &digest(&good)[7..];

    // A layer blob changed after its digest was taken.
    layout(&d.join("lying"), std::slice::from_ref(&good))?;
    let mut changed = good.clone();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    std::fs::write(d.join("lying/blobs/sha256").join(hex), &changed)?;
    refused(d, "lying", &[hex, "SHA-256"])?;

    // The manifest names a blob the layout lacks.
    layout(&d.join("missing"), std::slice::from_ref(&good))?;
    std::fs::remove_file(d.join("missing/blobs/sha256").join(hex))?;
    refused(d, "missing", &[hex, "No such file"])?;

    // A layer that is no tar.
    let not_tar = b"this is not a tar archive at all".repeat(20);
    layout(&d.join("not-tar"), std::slice::from_ref(&not_tar))?;
    refused(d, "not-tar", &[&digest(&not_tar)[7..], "not a tar"])?;

    // An entry that leads out of the image's root.
    let evil = layer(&[("usr/../../etc/k.hsaco", &k)])?;
    layout(&d.join("evil"), &[evil])?;
    refused(d, "evil", &["usr/../../etc/k.hsaco", "out of the image's root"])?;

    // Names out of the root given by a GNU long name or a pax header.
    let long = "d".repeat(110);
    for (form, path) in [("gnu", format!("usr/{long}/../../../k.hsaco")), ("pax", format!("/x/../../{long}/k.hsaco"))] {
        let dir = format!("evil-{form}");
        layout(&d.join(&dir), &[long_named_layer(form, &path, &k)?])?;
        refused(d, &dir, &[&path, "out of the image's root"])?;
    }

    // An index that is no JSON.
    layout(&d.join("bad-index"), &[good])?;
    std::fs::write(d.join("bad-index/index.json"), "{ not json")?;
    refused(d, "bad-index", &["index.json"])?;
    Ok(())
}

//! `offload-kit split` of a directory tree (issue #74): a tree holding
//! cuRAND's wheel unpacked (CUDA) and Debian's librocrand1 unpacked (HIP),
//! with a symbolic link, a read-only directory and a hard link, becomes
//! `OUTDIR/LABEL/in` per group, each the same, file by file (bytes, type,
//! mode, owner, link target), as `cp -a` then `prune --keep GROUP
//! --in-place` leaves; the input is left as it was; what no group changes
//! is a hard link to the input's file; cuobjdump lists only the group's
//! SASS in its cuRAND; two runs give the same trees; an unserved group, a
//! taken output name and an output directory inside the input are refused
//! with nothing written; a run killed outright leaves its temporary
//! directory, which a later run removes.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use libtest_mimic::{Failed, Trial};

use crate::real_libs::{DEB, WHEEL, downloads};
use crate::util::{ours, ours_json, run, same, tempdir};

const CUOBJDUMP: &str = "/opt/offload-kit/cuda-tools/bin/cuobjdump";

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(tree_groups_are_in_place_prunes_of_copies, &["dpkg-deb", "cp", CUOBJDUMP]),
        trial!(tree_refusals_write_nothing, &["dpkg-deb", "mkfifo", "7zz"]),
        trial!(a_killed_tree_split_is_cleaned_by_the_next, &["dpkg-deb"]),
    ]
}

/// The groups split, each with its label.
const GROUPS: [(&str, &str); 2] = [("sm_80", "sm80"), ("gfx90a,gfx1030", "gfx90a.gfx1030")];

/// Makes `d/in`: cuRAND's wheel and librocrand1 unpacked, a dangling
/// symbolic link, a read-only directory, and a second name of cuRAND's
/// library.
fn tree(d: &Path) -> Result<(), Failed> {
    let cache = downloads()?;
    let input = d.join("in");
    let wheel = std::fs::File::open(cache.join(WHEEL))?;
    zip::ZipArchive::new(wheel)?.extract(input.join("venv"))?;
    let root = input.join("root");
    let deb = cache.join(DEB);
    run(Path::new("/usr/bin/dpkg-deb"), &[Path::new("-x"), &deb, &root], d).ok()?;
    std::os::unix::fs::symlink("nowhere", input.join("dangling"))?;
    std::fs::create_dir(input.join("ro"))?;
    std::fs::write(input.join("ro/notes"), "no device code")?;
    let lib = input.join("venv/nvidia/curand/lib/libcurand.so.10");
    std::fs::hard_link(&lib, input.join("venv/libcurand-again.so"))?;
    set_mode(&input.join("ro"), 0o555)
}

fn set_mode(p: &Path, mode: u32) -> Result<(), Failed> {
    use std::os::unix::fs::PermissionsExt;
    Ok(std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))?)
}

/// Every path below `dir`, not followed: its type, mode, owner, size,
/// link target and bytes' hash.
fn listing(dir: &Path) -> Result<BTreeMap<PathBuf, String>, Failed> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e?;
        let m = e.path().symlink_metadata()?;
        let rel = e.path().strip_prefix(dir)?.to_path_buf();
        let t = m.file_type();
        let what = if t.is_symlink() {
            format!("link {}", std::fs::read_link(e.path())?.display())
        } else if t.is_file() {
            let bytes = std::fs::read(e.path())?;
            format!("file {} {:x}", bytes.len(), sha2_of(&bytes))
        } else {
            "dir".to_string()
        };
        let mode = if t.is_symlink() { 0 } else { m.mode() & 0o7777 };
        out.insert(rel, format!("{what} {mode:o} {}:{}", m.uid(), m.gid()));
    }
    Ok(out)
}

/// A 64-bit digest of `bytes` (enough to tell trees apart).
fn sha2_of(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// The architectures of the SASS `cuobjdump -lelf` lists in `file`.
fn sass(d: &Path, file: &Path) -> Result<Vec<String>, Failed> {
    let r = run(Path::new(CUOBJDUMP), &[Path::new("-lelf"), file], d).ok()?;
    let mut archs: Vec<String> = String::from_utf8_lossy(&r.stdout)
        .lines()
        .filter_map(|l| l.rsplit('.').nth(1).map(str::to_string))
        .collect();
    archs.sort();
    archs.dedup();
    Ok(archs)
}

/// Two groups split twice: the same trees both times, each that of a
/// copy pruned in place, the input unchanged, unchanged files linked to
/// the input's, and the report naming the output serving each target.
fn tree_groups_are_in_place_prunes_of_copies() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    tree(d)?;
    let before = listing(&d.join("in"))?;
    let mut args = vec!["split"];
    for (g, _) in GROUPS {
        args.extend(["--gpus", g]);
    }
    let a = run(&ours(), &[&args[..], &["--json", "-d", "a", "in"]].concat(), d);
    // cuRAND holds no AMD code and librocrand no CUDA code: each group's
    // prune refuses the other's library (exit 1), as prune does.
    if a.code != 1 {
        return Err(format!("split: exit {}: {}", a.code, a.stderr).into());
    }
    let doc: serde_json::Value = serde_json::from_slice(&a.stdout)?;
    run(&ours(), &[&args[..], &["-d", "b", "in"]].concat(), d);
    same("the input after the split", listing(&d.join("in"))?, before.clone())?;
    let f = &doc["files"][0];
    same("format", f["format"].as_str(), Some("tree"))?;
    for t in f["targets"].as_array().into_iter().flatten() {
        let want: Vec<&str> = GROUPS.iter().filter(|(g, _)| g.split(',').any(|x| t["what"] == x)).map(|(_, l)| *l).collect();
        let got: Vec<&str> = t["outputs"].as_array().into_iter().flatten().filter_map(|l| l.as_str()).collect();
        if ["sm_80", "gfx90a", "gfx1030"].contains(&t["what"].as_str().unwrap_or_default()) {
            same(&format!("outputs serving {}", t["what"]), got, want)?;
        }
    }
    for (group, label) in GROUPS {
        let out = d.join("a").join(label).join("in");
        let again = listing(&d.join("b").join(label).join("in"))?;
        same(&format!("{label}: two runs"), listing(&out)?, again)?;
        let copy = format!("ref-{label}");
        run(Path::new("/usr/bin/cp"), &["-a", "in", &copy], d).ok()?;
        let _ = run(&ours(), &["prune", "--keep", group, "--in-place", &copy], d);
        same(&format!("{label}: the tree against prune --in-place of a copy"), listing(&out)?, listing(&d.join(&copy))?)?;
        let notes = |p: &Path| p.join("ro/notes").metadata().map(|m| m.ino());
        same(&format!("{label}: an unchanged file's inode"), notes(&out)?, notes(&d.join("in"))?)?;
    }
    // Of cuRAND's two names, prune rewrites the first it meets; the other
    // keeps the old bytes, as in a tree pruned in place.
    let first = d.join("a/sm80/in/venv/libcurand-again.so");
    same("sm80's cuRAND SASS", sass(d, &first)?, vec!["sm_80".to_string()])?;
    let hip = "in/root/usr/lib/x86_64-linux-gnu/librocrand.so.1.1";
    for (gpu, code) in [("gfx90a", 0), ("gfx1030", 0), ("gfx908", 1)] {
        let r = run(&ours(), &[Path::new("check"), Path::new("--require"), Path::new(gpu), &d.join("a/gfx90a.gfx1030").join(hip)], d);
        same(&format!("check --require {gpu} of the AMD output's librocrand"), r.code, code)?;
    }
    Ok(())
}

/// An unserved group, an output name already taken and an output
/// directory inside the input: exit 2 naming why, nothing written.
fn tree_refusals_write_nothing() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    tree(d)?;
    let r = run(&ours(), &["split", "--gpus", "sm_80", "--gpus", "gfx942", "-d", "o", "in"], d);
    if r.code != 2 || !r.stderr.contains("'gfx942'") || d.join("o").exists() {
        return Err(format!("--gpus gfx942: exit {}: {}", r.code, r.stderr).into());
    }
    std::fs::create_dir_all(d.join("o/sm80/in"))?;
    let r = run(&ours(), &["split", "--gpus", "sm_80", "--gpus", "gfx90a", "-d", "o", "in"], d);
    if r.code != 2 || !r.stderr.contains("exists") || d.join("o/gfx90a").exists() {
        return Err(format!("a taken name: exit {}: {}", r.code, r.stderr).into());
    }
    let before = listing(&d.join("in"))?;
    let r = run(&ours(), &["split", "--gpus", "sm_80", "-d", "in/venv/out", "in"], d);
    if r.code != 2 || !r.stderr.contains("inside") {
        return Err(format!("OUTDIR inside the input: exit {}: {}", r.code, r.stderr).into());
    }
    same("the input after a refused split", listing(&d.join("in"))?, before)?;
    // A FIFO is refused, not opened (an open would wait for a writer); a
    // missing input is named as missing.
    let fifo = d.join("fifo");
    run(Path::new("/usr/bin/mkfifo"), &[&fifo], d).ok()?;
    let r = run(&ours(), &["split", "--gpus", "sm_80", "-d", "q", "fifo"], d);
    if r.code != 2 || !r.stderr.contains("neither a regular file nor a directory") || d.join("q").exists() {
        return Err(format!("a FIFO: exit {}: {}", r.code, r.stderr).into());
    }
    // A file of a format not read (a .7z holding cuRAND) is refused as
    // unread, never split as holding no code.
    let seven = Path::new("7zz");
    run(seven, &["a", "-bd", "k.7z", "in/venv/nvidia/curand/lib/libcurand.so.10"], d).ok()?;
    let r = run(&ours(), &["split", "--gpus", "sm_80", "-d", "q", "k.7z"], d);
    if r.code != 2 || r.stderr.contains("holds code for") || d.join("q").exists() {
        return Err(format!("a .7z: exit {}: {}", r.code, r.stderr).into());
    }
    let r = run(&ours(), &["split", "--gpus", "sm_80", "-d", "q", "missing.whl"], d);
    if r.code != 2 || !r.stderr.contains("No such file") {
        return Err(format!("a missing input: exit {}: {}", r.code, r.stderr).into());
    }
    let doc = ours_json(&["split", "--json", "--gpus", "sm_86", "-d", "p", "in/venv"], d)?;
    same("a group's label", doc["files"][0]["outputs"][0]["label"].as_str(), Some("sm86"))?;
    Ok(())
}

/// A split killed outright (SIGKILL, no handler runs) leaves no output
/// under its name but its temporary directory; once that is a minute
/// old, the next split into the same directory removes it and writes its
/// outputs.
fn a_killed_tree_split_is_cleaned_by_the_next() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    tree(d)?;
    let mut child = std::process::Command::new(ours())
        .args(["split", "--per-gpu", "-d", "o", "in"])
        .current_dir(d)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill()?;
    child.wait()?;
    // Outputs the killed run finished, if any, are its; the next run
    // makes its own.
    if let Ok(list) = std::fs::read_dir(d.join("o")) {
        for e in list.flatten() {
            if !e.file_name().to_string_lossy().starts_with(".offload-kit-") {
                std::fs::remove_dir_all(e.path())?;
            }
        }
    }
    let temporary = |d: &Path| -> Result<Vec<PathBuf>, Failed> {
        let Ok(list) = std::fs::read_dir(d.join("o")) else { return Ok(Vec::new()) };
        Ok(list.flatten().map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".offload-kit-"))).collect())
    };
    for p in temporary(d)? {
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(120);
        std::fs::File::open(&p)?.set_modified(old)?;
    }
    let r = run(&ours(), &["split", "--gpus", "sm_80", "-d", "o", "in"], d);
    if r.code != 1 && r.code != 0 {
        return Err(format!("the next split: exit {}: {}", r.code, r.stderr).into());
    }
    same("temporary directories left", temporary(d)?, Vec::new())?;
    if !d.join("o/sm80/in/venv").is_dir() {
        return Err("the next split wrote no o/sm80/in".into());
    }
    Ok(())
}

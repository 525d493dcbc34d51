//! `offload-kit prune` on directories: the exit codes (1 when files found
//! in a directory were refused, 2 when one was damaged, a named file was
//! refused, or a directory was given with `-d`), the run going on past
//! each; SIGKILL at random points of a run over a tree, every file then
//! the old or the new one and the next run finishing the job; and a
//! "virtual environment" of the CuPy and cuRAND wheels' files, pruned as
//! a tree, equal file by file to the same files each named (and pruned
//! alone), with the total the sum of theirs.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};

use crate::real_libs::{CUPY, WHEEL, downloads};
use crate::util::{bytes, md5_hex, ours, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(exit_codes_say_refused_or_failed_and_the_run_goes_on, &[]),
        trial!(killed_at_random_points_each_file_is_old_or_new, &[]),
        trial!(a_venv_of_cupy_and_curand_as_each_file_alone, &["/usr/bin/python3"]),
    ]
}

/// Writes the bundle `out` (below `d`) of a host entry and the images
/// `images` (target ID, seed, length), with our `bundle`.
pub(crate) fn bundle(d: &Path, out: &str, images: &[(&str, u64, usize)]) -> Result<(), Failed> {
    let mut args = vec![
        "bundle".to_string(),
        "--type".into(),
        "o".into(),
        "-o".into(),
        out.into(),
    ];
    std::fs::write(d.join("host.part"), b"host code")?;
    args.push("host-x86_64-unknown-linux-gnu=host.part".into());
    for (i, (id, seed, len)) in images.iter().enumerate() {
        let part = format!("image{i}.part");
        std::fs::write(d.join(&part), bytes(*seed, *len))?;
        args.push(format!("hipv4-amdgcn-amd-amdhsa--{id}={part}"));
    }
    run(&ours(), &args, d).ok()?;
    Ok(())
}

/// Every regular file below `dir` by relative path, with its MD5.
fn hashes(dir: &Path) -> BTreeMap<String, String> {
    crate::util::files(dir)
        .into_iter()
        .map(|(k, v)| (k, md5_hex(&v)))
        .collect()
}

/// `prune` with `args`, in `d`, as JSON, with its exit code.
fn prune_json(d: &Path, args: &[&str]) -> Result<(i32, serde_json::Value), Failed> {
    let mut all = vec!["prune", "--keep", "gfx90a", "--json"];
    all.extend(args);
    let r = run(&ours(), &all, d);
    let doc = serde_json::from_slice(&r.stdout)
        .map_err(|e| format!("{all:?}: exit {}: bad JSON ({e}): {}", r.code, r.stderr))?;
    Ok((r.code, doc))
}

/// `tree/` in `d`: two bundles with gfx90a images, one with none (refused
/// with `--keep gfx90a`) and a text file; returns the two bundles pruned
/// alone (their MD5 by path below `tree/`) and the bytes that frees.
fn tree_of_four(d: &Path) -> Result<(BTreeMap<String, String>, u64), Failed> {
    std::fs::create_dir_all(d.join("tree/sub"))?;
    bundle(
        d,
        "tree/k1.hipfb",
        &[("gfx90a", 1, 5000), ("gfx942", 2, 5000)],
    )?;
    bundle(
        d,
        "tree/sub/k2.hipfb",
        &[("gfx90a", 3, 7000), ("gfx1030", 4, 9000)],
    )?;
    // Refused: nothing of it would stay (--allow-empty allows that).
    bundle(d, "tree/only942.hipfb", &[("gfx942", 5, 3000)])?;
    std::fs::write(d.join("tree/notes.txt"), "no device code")?;
    let mut alone_freed = 0;
    let mut want = BTreeMap::new();
    for f in ["k1.hipfb", "sub/k2.hipfb"] {
        let (code, doc) = prune_json(d, &["-o", "alone.out", &format!("tree/{f}")])?;
        same(&format!("{f} alone: exit code"), code, 0)?;
        alone_freed += doc["files"][0]["freed"].as_u64().unwrap_or(0);
        want.insert(f.to_string(), md5_hex(&std::fs::read(d.join("alone.out"))?));
    }
    std::fs::remove_file(d.join("alone.out"))?;
    Ok((want, alone_freed))
}

fn exit_codes_say_refused_or_failed_and_the_run_goes_on() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let (want, alone_freed) = tree_of_four(d)?;
    let before = hashes(&d.join("tree"));
    let copy = |to: &str| -> Result<(), Failed> {
        run(Path::new("/bin/cp"), &["-a", "tree", to], d).ok()?;
        Ok(())
    };
    copy("dry")?;
    copy("damaged")?;

    // -d with a directory: a usage error, nothing written.
    let r = run(
        &ours(),
        &["prune", "--keep", "gfx90a", "-d", "out", "tree"],
        d,
    );
    same("-d DIR with a directory: exit code", r.code, 2)?;
    if !r.stderr.contains("'tree' is a directory") || d.join("out").exists() {
        return Err(format!("-d with a directory: {}", r.stderr).into());
    }

    // A dry run: exit 1 (a file refused), nothing written, the same total.
    let (code, dry) = prune_json(d, &["--dry-run", "dry"])?;
    same("--dry-run: exit code", code, 1)?;
    same(
        "--dry-run: the files",
        hashes(&d.join("dry")),
        before.clone(),
    )?;
    same(
        "--dry-run: total freed",
        dry["total"]["freed"].as_u64(),
        Some(alone_freed),
    )?;

    // In place: exit 1, the refusal listed with its reason, the others
    // pruned as each alone.
    let r = run(
        &ours(),
        &["prune", "--keep", "gfx90a", "--in-place", "tree"],
        d,
    );
    same("--in-place: exit code", r.code, 1)?;
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains("not pruned: 'tree/only942.hipfb': ")
        || !out.contains(&format!("total: freed {alone_freed} bytes"))
        || !out.contains("in 2 file(s), which take ")
        || !out.contains(
            "; 4 file(s) found in the directories, 1 without device code; 1 file(s) \
                          not pruned (1 refused)",
        )
        || !r.stderr.is_empty()
    {
        return Err(format!("--in-place printed:\n{out}\n{}", r.stderr).into());
    }
    let after = hashes(&d.join("tree"));
    for (f, h) in &want {
        same(&format!("{f}: as pruned alone"), &after[f], h)?;
    }
    for f in ["only942.hipfb", "notes.txt"] {
        same(&format!("{f}: as it was"), &after[f], &before[f])?;
    }

    // A damaged file: exit 2, an error line, and the others still pruned.
    let b = std::fs::read(d.join("damaged/k1.hipfb"))?;
    std::fs::write(d.join("damaged/cut.hipfb"), &b[..b.len() - 1000])?;
    let r = run(
        &ours(),
        &["prune", "--keep", "gfx90a", "--in-place", "damaged"],
        d,
    );
    same("a damaged file: exit code", r.code, 2)?;
    if !r.stderr.starts_with("error: 'damaged/cut.hipfb': ") || r.stderr.lines().count() != 1 {
        return Err(format!("a damaged file: {}", r.stderr).into());
    }
    let after = hashes(&d.join("damaged"));
    for (f, h) in &want {
        same(&format!("{f} beside a damaged file"), &after[f], h)?;
    }

    // Named, a refused file is an error, as it always was.
    let r = run(
        &ours(),
        &[
            "prune",
            "--keep",
            "gfx90a",
            "--in-place",
            "tree/only942.hipfb",
        ],
        d,
    );
    same("a named refused file: exit code", r.code, 2)?;
    Ok(())
}

/// Regular files below `dir` whose name starts `.offload-kit-`, by
/// relative path.
fn leftovers(dir: &Path) -> Vec<String> {
    crate::util::files(dir)
        .into_keys()
        .filter(|k| {
            Path::new(k)
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".offload-kit-"))
        })
        .collect()
}

/// A seed for the kill points: the time, printed on failure so that a
/// run can be replayed.
fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |t| t.as_nanos() as u64)
        | 1
}

/// `prune --in-place` over a tree of six bundles (4 MiB images) killed
/// with SIGKILL 30 times at random points of its run: each time every
/// file is whole, the old or the new one, and any `.offload-kit-*` file
/// left is a whole copy of one of them; the next run, not killed, exits
/// 0, leaves every leftover as it is (reported, not pruned) and ends with
/// every file pruned.
fn killed_at_random_points_each_file_is_old_or_new() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::create_dir_all(d.join("orig/a/b"))?;
    let names = [
        "one.hipfb",
        "a/two.hipfb",
        "a/three.hipfb",
        "a/b/four.hipfb",
        "a/b/five.hipfb",
        "six.hipfb",
    ];
    for (i, n) in names.iter().enumerate() {
        let s = 10 * i as u64;
        bundle(
            d,
            &format!("orig/{n}"),
            &[("gfx90a", s + 1, 4 << 20), ("gfx942", s + 2, 4 << 20)],
        )?;
    }
    let old = hashes(&d.join("orig"));
    let fresh = || -> Result<(), Failed> {
        let _ = std::fs::remove_dir_all(d.join("work"));
        run(Path::new("/bin/cp"), &["-a", "orig", "work"], d).ok()?;
        Ok(())
    };
    let args = ["prune", "--keep", "gfx90a", "--in-place", "work"];
    fresh()?;
    let start = std::time::Instant::now();
    run(&ours(), &args, d).ok()?;
    let whole = start.elapsed().as_micros().max(1000) as u64;
    let new = hashes(&d.join("work"));
    if names.iter().any(|n| old[*n] == new[*n]) {
        return Err("a file was not pruned".into());
    }
    let mut x = seed();
    let (mut all_old, mut all_new, mut mixed) = (0, 0, 0);
    for round in 0..30 {
        fresh()?;
        let after = crate::util::kill_point(&mut x, round, 30, whole);
        crate::util::ours_killed_after(&args, d, after)?;
        let at = format!("round {round} (seed {x}, killed after {after} µs of {whole})");
        match after_kill(d, &names, &old, &new, &at)? {
            0 => all_old += 1,
            6 => all_new += 1,
            _ => mixed += 1,
        }
    }
    // Most points fall inside the run: kills before any file, after
    // some and after all show up.
    if mixed == 0 || all_old + all_new == 0 {
        return Err(format!(
            "{all_old} all old, {mixed} mixed, {all_new} all new in 30 kills: no spread"
        )
        .into());
    }
    Ok(())
}

/// Checks `work/` in `d` after a kill: each of `names` is its `old` or
/// its `new` file, and each `.offload-kit-*` file beside them a whole copy
/// of one; then the next run, not killed, finishes the job, reports the
/// leftovers and leaves them as they are. Returns how many files were
/// new after the kill.
fn after_kill(
    d: &Path,
    names: &[&str],
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
    at: &str,
) -> Result<usize, Failed> {
    let got = hashes(&d.join("work"));
    let mut news = 0;
    for n in names {
        match got.get(*n) {
            Some(h) if *h == old[*n] => {}
            Some(h) if *h == new[*n] => news += 1,
            _ => return Err(format!("{at}: {n} is neither the old nor the new file").into()),
        }
    }
    let left = leftovers(&d.join("work"));
    for l in &left {
        let base = Path::new(l).parent().unwrap_or(Path::new(""));
        let whole_copy = names.iter().any(|n| {
            Path::new(n).parent().unwrap_or(Path::new("")) == base
                && (got[l] == old[*n] || got[l] == new[*n])
        });
        if !whole_copy {
            return Err(format!("{at}: {l} is a partial file").into());
        }
    }
    let args = ["prune", "--keep", "gfx90a", "--in-place", "--json", "work"];
    let r = run(&ours(), &args, d).ok()?;
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout)?;
    let reported = doc["skipped"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["why"] == "leftover")
        .count();
    same(&format!("{at}: leftovers reported"), reported, left.len())?;
    let again = hashes(&d.join("work"));
    for n in names {
        same(
            &format!("{at}: {n} after the next run"),
            &again[*n],
            &new[*n],
        )?;
    }
    for l in &left {
        same(&format!("{at}: {l} left as it was"), &again[l], &got[l])?;
    }
    Ok(news)
}

/// A directory holding every file of the CuPy and cuRAND wheels, as pip
/// installs them into `site-packages`.
fn unpacked(d: &Path, cache: &Path, into: &str) -> Result<(), Failed> {
    let script = "import sys, zipfile\nfor w in sys.argv[2:]:\n    zipfile.ZipFile(w).extractall(sys.argv[1])\n";
    let (cupy, curand) = (cache.join(CUPY), cache.join(WHEEL));
    run(
        Path::new("/usr/bin/python3"),
        &[
            "-c",
            script,
            into,
            &cupy.to_string_lossy(),
            &curand.to_string_lossy(),
        ],
        d,
    )
    .ok()?;
    Ok(())
}

/// The CuPy and cuRAND wheels' files in one directory pruned to sm_86 as
/// a tree, and the same files each named: the same bytes file by file
/// (the RECORDs aside, which the tree run updates and which must then
/// match every file they list), the same exit code, and a total freed
/// that is the sum of the files'.
fn a_venv_of_cupy_and_curand_as_each_file_alone() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    unpacked(d, &cache, "venv/lib/python3.12/site-packages")?;
    unpacked(d, &cache, "alone")?;
    let tree = run(
        &ours(),
        &["prune", "--keep", "sm_86", "--in-place", "--json", "venv"],
        d,
    );
    let doc: serde_json::Value = serde_json::from_slice(&tree.stdout)
        .map_err(|e| format!("exit {}: {e}: {}", tree.code, tree.stderr))?;
    let total = &doc["total"];
    let refused = total["refused"].as_u64().unwrap_or(u64::MAX);
    same("exit code", tree.code, if refused > 0 { 1 } else { 0 })?;
    same("failures", total["failed"].as_u64(), Some(0))?;
    let pruned = total["files"].as_u64().unwrap_or(0);
    if pruned < 4 {
        return Err(format!("only {pruned} files pruned: {total}").into());
    }
    // Every regular file named, each pruned as a file alone is.
    let named: Vec<String> = crate::util::files(&d.join("alone")).into_keys().collect();
    let mut args: Vec<String> = ["prune", "--keep", "sm_86", "--in-place", "--json"]
        .map(String::from)
        .to_vec();
    args.extend(named.iter().map(|n| format!("alone/{n}")));
    let each = run(&ours(), &args, d);
    let alone: serde_json::Value = serde_json::from_slice(&each.stdout)
        .map_err(|e| format!("exit {}: {e}: {}", each.code, each.stderr))?;
    let sum: u64 = alone["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["freed"].as_u64())
        .sum();
    same(
        "total freed: the sum of the files'",
        total["freed"].as_u64(),
        Some(sum),
    )?;
    same(
        "files not pruned",
        alone["not_pruned"].as_array().map(Vec::len),
        doc["not_pruned"].as_array().map(Vec::len),
    )?;
    let (a, b) = (
        hashes(&d.join("alone")),
        hashes(&d.join("venv/lib/python3.12/site-packages")),
    );
    same("files", a.len(), b.len())?;
    // Every file as pruned alone, but the RECORDs: the tree run gives
    // their rows of rewritten files the new hash and size (issue #59),
    // which a file named alone cannot; each must match the files now.
    let site = d.join("venv/lib/python3.12/site-packages");
    let mut records = 0;
    for (f, h) in &a {
        if f.ends_with(".dist-info/RECORD") {
            records += 1;
            record_matches(&site, f)?;
            continue;
        }
        same(&format!("{f}: as pruned alone"), Some(h), b.get(f))?;
    }
    if records == 0 {
        return Err("no RECORD in the venv".into());
    }
    Ok(())
}

/// Checks that every row of the RECORD `record` (below `site`) that
/// gives a hash gives the SHA-256 and size of its file as it is now.
fn record_matches(site: &Path, record: &str) -> Result<(), Failed> {
    use base64::Engine as _;
    use sha2::Digest as _;
    let text = std::fs::read_to_string(site.join(record))?;
    for line in text.lines() {
        let mut cols = line.rsplitn(3, ',');
        let (size, hash, path) = (cols.next(), cols.next(), cols.next());
        let (Some(size), Some(hash), Some(path)) = (size, hash, path) else {
            return Err(format!("{record}: a row of fewer than 3 fields: {line}").into());
        };
        let Some(hash) = hash.strip_prefix("sha256=") else {
            continue;
        };
        let bytes = std::fs::read(site.join(path)).map_err(|e| format!("{record}: {path}: {e}"))?;
        let now =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(&bytes));
        same(
            &format!("{record}: {path}"),
            (hash, size),
            (now.as_str(), bytes.len().to_string().as_str()),
        )?;
    }
    Ok(())
}

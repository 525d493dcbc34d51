//! `offload-kit split` of Debian's librocrand1 (one HIP bundle of code
//! objects for gfx803 to gfx1030; issue #74): each group's package holds,
//! `ar` member by member, what `prune --keep GROUP -o` writes, but for its
//! control file, which is prune's with the package renamed
//! `librocrand1-<label>` and `Provides`, `Conflicts` and `Replaces` added;
//! `dpkg-deb` reads each without a word on stderr; `check --require` of
//! each GPU of its group passes on it as on the original; dpkg installs one in place of the original, a
//! package depending on the original installs against it, and a second
//! per-GPU package conflicts with it; two runs give the same bytes;
//! `--per-gpu` serves every target; a group the package does not serve,
//! and a damaged package, are refused with nothing written.

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use super::debs::{dpkg, member, scratch_root};
use crate::real_libs::{DEB, downloads};
use crate::util::{ours, ours_json, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(rocrand_groups_are_prunes_that_stand_in_for_it, &["dpkg", "dpkg-deb", "ar"]),
        trial!(rocrand_per_gpu_serves_every_target, &["dpkg-deb"]),
        trial!(unserved_groups_and_damaged_packages_write_nothing, &["dpkg-deb"]),
    ]
}

/// The groups split, each with its label.
const GROUPS: [(&str, &str); 2] = [("gfx90a", "gfx90a"), ("gfx1030,gfx908", "gfx1030.gfx908")];

/// The file of the output labelled `label`.
fn output(label: &str) -> String {
    format!("librocrand1-{label}_5.3.3-4_amd64.deb")
}

/// `dpkg-deb` with `args`, which must succeed without a word on stderr.
fn dpkg_deb(d: &Path, args: &[&str]) -> Result<Vec<u8>, Failed> {
    let r = run(Path::new("/usr/bin/dpkg-deb"), args, d).ok()?;
    if !r.stderr.is_empty() {
        return Err(format!("dpkg-deb {args:?}: {}", r.stderr).into());
    }
    Ok(r.stdout)
}

/// The control fields of `deb` as `dpkg-deb --field` prints them, one
/// field a line (continuations joined).
fn fields(d: &Path, deb: &str) -> Result<Vec<String>, Failed> {
    let text = String::from_utf8(dpkg_deb(d, &["--field", deb])?)?;
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        match (line.starts_with([' ', '\t']), out.last_mut()) {
            (true, Some(last)) => last.push_str(line),
            _ => out.push(line.to_string()),
        }
    }
    Ok(out)
}

/// Fails unless `check --require gpu` of the package `deb` passes where it
/// passes for the input (`in.deb`) and fails as it fails there (the input
/// has gfx908 code for xnack- only, which a gfx908 device in xnack+ mode
/// cannot run); gfx90a and gfx1030 must pass.
fn same_check(d: &Path, gpu: &str, deb: &str) -> Result<(), Failed> {
    let code = |f: &str| run(&ours(), &["check", "--require", gpu, f], d).code;
    let (input, output) = (code("in.deb"), code(deb));
    if ["gfx90a", "gfx1030"].contains(&gpu) && input != 0 {
        return Err(format!("check --require {gpu} fails on the input").into());
    }
    same(&format!("check --require {gpu} of {deb} against in.deb"), output, input)
}

/// Compares the split package `split` (the group's `label`, its sibling
/// `other`) with prune's `pruned`: every `ar` member the same bytes but
/// the control archive, whose `md5sums` is the same and whose `control`
/// is prune's with `Package` renamed and the three fields added.
fn same_but_control(d: &Path, split: &str, pruned: &str, label: &str, other: &str) -> Result<(), Failed> {
    for m in ["debian-binary", "data.tar.xz"] {
        if member(d, split, m)? != member(d, pruned, m)? {
            return Err(format!("{split}: its {m} is not prune's").into());
        }
    }
    let list = |deb: &str| -> Result<Vec<String>, Failed> {
        let r = run(Path::new("/usr/bin/ar"), &["t", deb], d).ok()?;
        Ok(String::from_utf8_lossy(&r.stdout).lines().map(str::to_string).collect())
    };
    same("ar members", list(split)?, list(pruned)?)?;
    let sums = |deb: &str| dpkg_deb(d, &["--info", deb, "md5sums"]);
    if sums(split)? != sums(pruned)? {
        return Err(format!("{split}: its md5sums is not prune's").into());
    }
    let mut want = fields(d, pruned)?;
    let name = format!("librocrand1-{label}");
    for f in &mut want {
        if f.starts_with("Package:") {
            *f = format!("Package: {name}");
        }
    }
    let at = want.iter().position(|f| f.starts_with("Description:")).unwrap_or(want.len());
    let others = format!("librocrand1, librocrand1-{other}");
    let added = [
        "Provides: librocrand1 (= 5.3.3-4)".to_string(),
        format!("Conflicts: {others}"),
        format!("Replaces: {others}"),
    ];
    want.splice(at..at, added);
    same(&format!("{split}: control fields"), fields(d, split)?, want)
}

/// librocrand1 split into two groups, twice (on every CPU, then with
/// `--threads 1`: the same bytes both times):
/// each package is prune's but for its control file, `dpkg-deb` lists it
/// cleanly, and `check --require` of each GPU of its group passes on it
/// as on the original.
/// Then, in a scratch dpkg root: the original installed, the gfx90a
/// package installs in its place (the original removed); a package that
/// depends on `librocrand1 (>= 5.3)` installs without any force, and one
/// that depends on a version no package provides does not (so the first
/// was satisfied by the `Provides`); the other per-GPU package is refused
/// as conflicting; `dpkg --verify` finds every file as installed.
fn rocrand_groups_are_prunes_that_stand_in_for_it() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    std::fs::copy(cache.join(DEB), d.join("in.deb"))?;
    let mut args = vec!["split"];
    for (g, _) in GROUPS {
        args.extend(["--gpus", g]);
    }
    let doc = ours_json(&[&args[..], &["--json", "-d", "a", "in.deb"]].concat(), d)?;
    // A second run, its xz on one thread.
    run(&ours(), &[&args[..], &["--threads", "1", "-d", "b", "in.deb"]].concat(), d).ok()?;
    let f = &doc["files"][0];
    same("format", f["format"].as_str(), Some("deb"))?;
    let labels: Vec<&str> = f["outputs"].as_array().into_iter().flatten().filter_map(|o| o["label"].as_str()).collect();
    same("labels", labels, GROUPS.map(|(_, l)| l).to_vec())?;
    for t in f["targets"].as_array().into_iter().flatten() {
        // `gfx908:xnack-` (all librocrand1 holds for gfx908) is served by gfx908's group.
        let processor = t["what"].as_str().unwrap_or_default().split(':').next().unwrap_or_default();
        let want: Vec<&str> = GROUPS.iter().filter(|(g, _)| g.split(',').any(|x| processor == x)).map(|(_, l)| *l).collect();
        same(&format!("outputs serving {}", t["what"]), t["outputs"].as_array().map(|o| o.iter().filter_map(|l| l.as_str()).collect::<Vec<_>>()), Some(want))?;
    }
    for (i, (group, label)) in GROUPS.iter().enumerate() {
        let out = output(label);
        let (a, b) = (d.join("a").join(&out), d.join("b").join(&out));
        if std::fs::read(&a)? != std::fs::read(&b)? {
            return Err(format!("two splits (every CPU, --threads 1) gave different {out}").into());
        }
        let pruned = format!("p-{label}.deb");
        run(&ours(), &["prune", "--keep", group, "-o", &pruned, "in.deb"], d).ok()?;
        let split = format!("a/{out}");
        let other = GROUPS[1 - i].1;
        same_but_control(d, &split, &pruned, label, other)?;
        dpkg_deb(d, &["--info", &split])?;
        dpkg_deb(d, &["--contents", &split])?;
        for gpu in group.split(',') {
            same_check(d, gpu, &split)?;
        }
        // An output split again for its own group: the same bytes.
        let again = format!("again-{label}");
        let r = run(&ours(), &["split", "--gpus", group, "-d", &again, &split], d).ok()?;
        same(&format!("{out} split again: says"), String::from_utf8_lossy(&r.stdout).contains(": split into 1 package\n"), true)?;
        same(&format!("{out} split again: its bytes"), std::fs::read(d.join(&again).join(&out))? == std::fs::read(&a)?, true)?;
    }
    // The two-GPU output split for one of them: named, provided and
    // conflicting as a first split's output, its old name a conflict.
    let two = format!("a/{}", output("gfx1030.gfx908"));
    run(&ours(), &["split", "--gpus", "gfx1030", "-d", "narrow", &two], d).ok()?;
    let control = fields(d, &format!("narrow/{}", output("gfx1030")))?;
    let field = |name: &str| control.iter().find_map(|l| l.strip_prefix(&format!("{name}: ")).map(str::to_string));
    same("narrowed: Package", field("Package"), Some("librocrand1-gfx1030".into()))?;
    same("narrowed: Provides", field("Provides"), Some("librocrand1 (= 5.3.3-4)".into()))?;
    same("narrowed: Conflicts", field("Conflicts"), Some("librocrand1, librocrand1-gfx90a, librocrand1-gfx1030.gfx908".into()))?;
    scratch_root(d, "root")?;
    let query = |d: &Path| -> Result<String, Failed> {
        let admin = d.join("root/var/lib/dpkg").display().to_string();
        let r = run(Path::new("/usr/bin/dpkg-query"), &[format!("--admindir={admin}").as_str(), "-W", "-f", "${Package} ${Status}\n"], d).ok()?;
        Ok(String::from_utf8(r.stdout)?)
    };
    dpkg(d, "root", &["--force-depends", "-i", "in.deb"])?.ok()?;
    dpkg(d, "root", &["--force-depends", "-i", &format!("a/{}", output("gfx90a"))])?.ok()?;
    same("installed", query(d)?, "librocrand1-gfx90a install ok installed\n".to_string())?;
    for (name, depends, installs) in [("needs-new", "librocrand1 (>= 6)", false), ("needs", "librocrand1 (>= 5.3)", true)] {
        let dir = d.join(name).join("DEBIAN");
        std::fs::create_dir_all(&dir)?;
        let control = format!("Package: {name}\nVersion: 1.0\nArchitecture: all\nMaintainer: T <t@example.org>\nDepends: {depends}\nDescription: depends on librocrand1\n");
        std::fs::write(dir.join("control"), control)?;
        let deb = format!("{name}.deb");
        run(Path::new("/usr/bin/dpkg-deb"), &["--root-owner-group", "--build", name, &deb], d).ok()?;
        let r = dpkg(d, "root", &["-i", &format!("{name}.deb")])?;
        if (r.code == 0) != installs {
            return Err(format!("{name} (Depends: {depends}): exit {}: {}", r.code, r.stderr).into());
        }
        if !installs {
            dpkg(d, "root", &["--purge", name])?.ok()?;
        }
    }
    let r = dpkg(d, "root", &["--force-depends", "-i", &format!("a/{}", output("gfx1030.gfx908"))])?;
    if r.code == 0 || !r.stderr.contains("conflicting packages") {
        return Err(format!("a second per-GPU package: exit {}: {}", r.code, r.stderr).into());
    }
    same("installed", query(d)?, "librocrand1-gfx90a install ok installed\nneeds install ok installed\n".to_string())?;
    dpkg(d, "root", &["--verify"])?.ok()?;
    Ok(())
}

/// `--per-gpu`: one package per target librocrand1 holds code for
/// (gfx803 to gfx1030), each target served by its own package only, each
/// image group held by some package, `check --require` of its target
/// passing on each package as on the original.
fn rocrand_per_gpu_serves_every_target() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    std::fs::copy(cache.join(DEB), d.join("in.deb"))?;
    let doc = ours_json(&["split", "--per-gpu", "--json", "-d", "o", "in.deb"], d)?;
    let f = &doc["files"][0];
    // Debian builds gfx900 to gfx908 for xnack- only: a device in the
    // other mode loads none of it, so the group keeps the mode.
    let want = ["gfx803", "gfx900:xnack-", "gfx906:xnack-", "gfx908:xnack-", "gfx90a", "gfx1030"];
    let label = |g: &str| g.replace(":xnack-", "-xnackm");
    let targets = f["targets"].as_array().cloned().unwrap_or_default();
    let got: Vec<&str> = targets.iter().filter_map(|t| t["what"].as_str()).collect();
    same("targets", got, want.to_vec())?;
    for (t, gpu) in targets.iter().zip(want) {
        same(&format!("outputs serving {gpu}"), t["outputs"].as_array().cloned(), Some(vec![serde_json::json!(label(gpu))]))?;
        let out = format!("o/{}", output(&label(gpu)));
        dpkg_deb(d, &["--info", &out])?;
        same_check(d, gpu, &out)?;
        let check = run(&ours(), &["check", "--require", gpu, &out], d);
        same(&format!("check --require {gpu} of its own package"), check.code, 0)?;
    }
    for i in f["images"].as_array().into_iter().flatten() {
        if i["outputs"].as_array().is_none_or(Vec::is_empty) {
            return Err(format!("held by no output: {i}").into());
        }
    }
    let mut files: Vec<String> = std::fs::read_dir(d.join("o"))?.map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned())).collect::<Result<_, _>>()?;
    files.sort();
    let mut names: Vec<String> = want.iter().map(|g| output(&label(g))).collect();
    names.sort();
    same("files written", files, names)
}

/// A group librocrand1 does not serve (`gfx1100`, `sm_80`) is refused by
/// name, exit 2, and no output directory appears; a package cut short is
/// refused, exit 2, naming the file, with nothing written.
fn unserved_groups_and_damaged_packages_write_nothing() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    std::fs::copy(cache.join(DEB), d.join("in.deb"))?;
    let r = run(&ours(), &["split", "--gpus", "gfx90a", "--gpus", "gfx1100,sm_80", "-d", "o", "in.deb"], d);
    if r.code != 2 || !r.stderr.contains("'gfx1100'") || !r.stderr.contains("in.deb") {
        return Err(format!("--gpus gfx1100: exit {}: {}", r.code, r.stderr).into());
    }
    if d.join("o").exists() {
        return Err("a refused group left o/".into());
    }
    let bytes = std::fs::read(d.join("in.deb"))?;
    std::fs::write(d.join("cut.deb"), &bytes[..bytes.len() / 2])?;
    std::fs::create_dir(d.join("o"))?;
    let r = run(&ours(), &["split", "--gpus", "gfx90a", "-d", "o", "cut.deb"], d);
    if r.code != 2 || !r.stderr.contains("cut.deb") {
        return Err(format!("cut.deb: exit {}: {}", r.code, r.stderr).into());
    }
    if std::fs::read_dir(d.join("o"))?.next().is_some() {
        return Err("a damaged package left files in o/".into());
    }
    Ok(())
}

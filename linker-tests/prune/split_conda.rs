//! `offload-kit split` of a conda package (issue #74): NVIDIA's libcurand
//! packed with `cph create` at test time, split into an sm_80, an sm_86
//! and an sm_90 build. Each output, unpacked by `cph extract`, holds
//! exactly the files of `prune --keep GROUP -o` (`info/paths.json` and
//! `info/files` included) and differs only in `info/index.json`'s build
//! string, build number and `depends` (`__cuda`, `__cuda_arch`); `check
//! --require` of its GPU passes on it; py-rattler indexes the outputs
//! beside the input as a local channel and, given a device by
//! `CONDA_OVERRIDE_CUDA_ARCH`, solves for the build that serves it (the
//! input on a machine without CUDA). A group the package does not serve
//! is refused with nothing written.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};

use super::conda::packages;
use super::src;
use crate::real_libs::{DEB, WHEEL, downloads};
use crate::util::{files, ours, ours_json, run, run_within_env, same, tempdir, unzip};

const CPH: &str = "/opt/offload-kit/conda-tools/bin/cph";
const PY: &str = "/opt/offload-kit/conda-tools/bin/python";

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(curand_builds_are_prunes_the_solver_picks, &[CPH, PY]),
        trial!(rocrand_builds_bz2_per_gpu_and_split_again, &[CPH, PY, "dpkg-deb"]),
    ]
}

/// The groups split, each with its label.
const GROUPS: [(&str, &str); 3] = [("sm_80", "sm80"), ("sm_86", "sm86"), ("sm_90", "sm90")];

/// The package unpacked by `cph extract` into `d/x`: its files by path.
fn unpacked(d: &Path, package: &str, x: &str) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    run(Path::new(CPH), &["extract", package, "--dest", x], d).ok()?;
    Ok(files(&d.join(x)))
}

/// The build py-rattler picks for `gpulib` from the channel `chan` (below
/// `d`) with the overrides `env`.
fn solved(d: &Path, env: &[(&str, &str)]) -> Result<String, Failed> {
    let args = [src("conda_solve.py"), "chan".into(), "gpulib".into()];
    let r = run_within_env(300, Path::new(PY), &args, env, d)?.ok()?;
    Ok(String::from_utf8_lossy(&r.stdout).trim().to_string())
}

fn curand_builds_are_prunes_the_solver_picks() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let lib = "nvidia/curand/lib/libcurand.so.10";
    unzip(&downloads()?.join(WHEEL), lib, d, "lib.so")?;
    let files = BTreeMap::from([
        ("lib/libcurand.so.10".to_string(), std::fs::read(d.join("lib.so"))?),
        ("share/doc/curand.txt".to_string(), b"cuRAND\n".repeat(20)),
    ]);
    packages(d, &files, &[])?;
    let input = "in/gpulib-1.0-h0_0.conda";
    let mut args = vec!["split", "--json", "-d", "chan/linux-64"];
    for (g, _) in GROUPS {
        args.extend(["--gpus", g]);
    }
    args.push(input);
    let doc = ours_json(&args, d)?;
    let f = &doc["files"][0];
    same("format", f["format"].as_str(), Some("conda"))?;
    let original = unpacked(d, input, "x-in")?;
    let index_in: serde_json::Value = serde_json::from_slice(&original["info/index.json"])?;
    let mut numbers = Vec::new();
    for (group, label) in GROUPS {
        let build = format!("h0_0_{label}");
        let out = format!("chan/linux-64/gpulib-1.0-{build}.conda");
        // cph finds a .conda's inner tars by the file's name: keep it.
        std::fs::create_dir_all(d.join(format!("p-{label}")))?;
        let pruned = format!("p-{label}/gpulib-1.0-h0_0.conda");
        run(&ours(), &["prune", "--keep", group, "-o", &pruned, input], d).ok()?;
        let mut split = unpacked(d, &out, &format!("x-{label}"))?;
        let mut by_prune = unpacked(d, &pruned, &format!("y-{label}"))?;
        let index: serde_json::Value = serde_json::from_slice(&split.remove("info/index.json").ok_or("no index.json")?)?;
        by_prune.remove("info/index.json");
        same(&format!("{label}: every file but index.json against prune's"), split == by_prune, true)?;
        if by_prune.get("lib/libcurand.so.10") == original.get("lib/libcurand.so.10") {
            return Err(format!("{label}: the library was not pruned").into());
        }
        same(&format!("{label}: build"), index["build"].as_str(), Some(build.as_str()))?;
        let depends: Vec<&str> = index["depends"].as_array().into_iter().flatten().filter_map(|v| v.as_str()).collect();
        if !depends.contains(&"__cuda") || !depends.iter().any(|s| s.starts_with("__cuda_arch >=")) {
            return Err(format!("{label}: depends {depends:?}").into());
        }
        let mut rest = index.clone();
        for k in ["build", "build_number", "depends"] {
            rest.as_object_mut().ok_or("not an object")?.remove(k);
        }
        let mut rest_in = index_in.clone();
        for k in ["build", "build_number", "depends"] {
            rest_in.as_object_mut().ok_or("not an object")?.remove(k);
        }
        same(&format!("{label}: index.json's other fields"), rest, rest_in)?;
        numbers.push(index["build_number"].as_u64().ok_or("no build_number")?);
        let check = run(&ours(), &["check", "--require", group, &out], d);
        same(&format!("check --require {group} of {out}"), check.code, 0)?;
    }
    // sm_80 < sm_86 (both fit an 8.6 device: the closer one wins) < sm_90.
    same("build numbers ordered", numbers.windows(2).all(|w| w[0] < w[1]), true)?;
    std::fs::copy(d.join(input), d.join("chan/linux-64/gpulib-1.0-h0_0.conda"))?;
    for (arch, want) in [("8.6", "h0_0_sm86"), ("8.0", "h0_0_sm80"), ("9.0", "h0_0_sm90")] {
        let env = [("CONDA_OVERRIDE_CUDA", "12.8"), ("CONDA_OVERRIDE_CUDA_ARCH", arch)];
        same(&format!("the build picked for {arch}"), solved(d, &env)?, want.to_string())?;
    }
    same("the build picked without CUDA", solved(d, &[("CONDA_OVERRIDE_CUDA", "")])?, "h0_0".to_string())?;
    // A group the package does not serve: exit 2, nothing written.
    let r = run(&ours(), &["split", "--gpus", "gfx90a", "-d", "none", input], d);
    same(&format!("an unserved group: exit code ({})", r.stderr), r.code, 2)?;
    same("an unserved group: nothing written", d.join("none").exists(), false)
}

/// librocrand (HIP, gfx803 to gfx1030) from Debian's librocrand1, packed
/// as `.conda` and `.tar.bz2`: split for gfx90a and gfx1030 (each file
/// but `info/index.json` is `prune -o`'s, for both formats); py-rattler
/// picks the build of `CONDA_OVERRIDE_AMDGPU_ARCH`'s ISA version and the
/// input where no build serves; `--per-gpu` makes one build per processor,
/// each passing `check --require` of its own; and an output split again
/// for its own group is the same bytes (`split into 1 package`).
fn rocrand_builds_bz2_per_gpu_and_split_again() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let deb = downloads()?.join(DEB);
    run(Path::new("/usr/bin/dpkg-deb"), &[Path::new("-x"), &deb, &d.join("deb")], d).ok()?;
    let so = d.join("deb/usr/lib/x86_64-linux-gnu/librocrand.so.1.1");
    let files = BTreeMap::from([("lib/librocrand.so.1".to_string(), std::fs::read(so)?)]);
    packages(d, &files, &[])?;
    let groups = [("gfx90a", "gfx90a"), ("gfx1030", "gfx1030")];
    for ext in ["conda", "tar.bz2"] {
        let input = format!("in/gpulib-1.0-h0_0.{ext}");
        let chan = format!("chan-{ext}");
        let out_dir = format!("{chan}/linux-64");
        let mut args = vec!["split", "-d", &out_dir];
        groups.iter().for_each(|(g, _)| args.extend(["--gpus", g]));
        args.push(&input);
        run(&ours(), &args, d).ok()?;
        for (group, label) in groups {
            let out = format!("{out_dir}/gpulib-1.0-h0_0_{label}.{ext}");
            std::fs::create_dir_all(d.join(format!("p-{ext}-{label}")))?;
            let pruned = format!("p-{ext}-{label}/gpulib-1.0-h0_0.{ext}");
            run(&ours(), &["prune", "--keep", group, "-o", &pruned, &input], d).ok()?;
            let mut split = unpacked(d, &out, &format!("x-{ext}-{label}"))?;
            let mut by_prune = unpacked(d, &pruned, &format!("y-{ext}-{label}"))?;
            let index = split.remove("info/index.json").ok_or("no index.json")?;
            by_prune.remove("info/index.json");
            same(&format!("{ext} {label}: every file but index.json against prune's"), split == by_prune, true)?;
            let index: serde_json::Value = serde_json::from_slice(&index)?;
            let depends = index["depends"].to_string();
            if !depends.contains("\"__amdgpu\"") || !depends.contains("__amdgpu_arch ==") {
                return Err(format!("{ext} {label}: depends {depends}").into());
            }
            // Its own group again: the same bytes, one output.
            let again = format!("again-{ext}-{label}");
            let r = run(&ours(), &["split", "--gpus", group, "-d", &again, &out], d).ok()?;
            let text = String::from_utf8_lossy(&r.stdout).into_owned();
            same(&format!("{ext} {label} split again: says"), text.contains(": split into 1 package\n"), true)?;
            let name = format!("gpulib-1.0-h0_0_{label}.{ext}");
            same(&format!("{ext} {label} split again: its bytes"), std::fs::read(d.join(&again).join(&name))?, std::fs::read(d.join(&out))?)?;
        }
        std::fs::copy(d.join(&input), d.join(format!("{out_dir}/gpulib-1.0-h0_0.{ext}")))?;
        let solved_in = |arch: &str| {
            let args = [src("conda_solve.py"), chan.clone(), "gpulib".into()];
            let env = [("CONDA_OVERRIDE_AMDGPU", "0"), ("CONDA_OVERRIDE_AMDGPU_ARCH", arch)];
            let r = run_within_env(300, Path::new(PY), &args, &env, d)?.ok()?;
            Ok::<_, Failed>(String::from_utf8_lossy(&r.stdout).trim().to_string())
        };
        for (isa, want) in [("9.0.10", "h0_0_gfx90a"), ("10.3.0", "h0_0_gfx1030"), ("9.4.2", "h0_0")] {
            same(&format!("{ext}: the build picked for ISA {isa}"), solved_in(isa)?, want.to_string())?;
        }
    }
    // --per-gpu: one build a processor, each serving its own.
    let doc = ours_json(&["split", "--json", "--per-gpu", "-d", "pg", "in/gpulib-1.0-h0_0.conda"], d)?;
    let outputs = doc["files"][0]["outputs"].as_array().ok_or("no outputs")?;
    let mut gpus: Vec<String> = Vec::new();
    for o in outputs {
        let g = o["gpus"][0].as_str().ok_or("no gpus")?.to_string();
        let path = o["path"].as_str().ok_or("no path")?;
        let check = run(&ours(), &["check", "--require", &g, path], d);
        same(&format!("--per-gpu: check --require {g} of {path}"), check.code, 0)?;
        gpus.push(g);
    }
    gpus.sort();
    let want = ["gfx1030", "gfx803", "gfx900:xnack-", "gfx906:xnack-", "gfx908:xnack-", "gfx90a"];
    same("--per-gpu: the groups", gpus, want.map(String::from).to_vec())
}

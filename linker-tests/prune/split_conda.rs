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
use crate::real_libs::{WHEEL, downloads};
use crate::util::{files, ours, ours_json, run, run_within_env, same, tempdir, unzip};

const CPH: &str = "/opt/offload-kit/conda-tools/bin/cph";
const PY: &str = "/opt/offload-kit/conda-tools/bin/python";

pub fn tests() -> Vec<Trial> {
    vec![trial!(curand_builds_are_prunes_the_solver_picks, &[CPH, PY])]
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

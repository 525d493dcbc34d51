//! `check`'s gate that every required GPU still has its per-GPU files
//! (issue #59), through the binary, on a synthetic hipBLASLt-style tree:
//! under `lib/hipblaslt/library/`, a lazy index (`TensileLibrary_lazy_
//! <arch>.dat`) and two code objects (a Tensile one, an `extop_<arch>.co`)
//! for gfx90a and gfx942, and an arch-neutral index; beside it, one code
//! object per GPU outside any per-GPU convention (standing for the
//! library's own device code, so that `--any --require gfx942` holds for
//! the images whether or not the per-GPU files are there). The code
//! objects are bare 64-byte AMDGPU ELF headers written here.
//!
//! With gfx942's per-GPU files gone, `check --require gfx942` fails
//! naming the library, its directory, gfx942 and the GPU it has files
//! for, in text and JSON, while the image rules still hold; with them
//! there it passes. The same trees as a `.tar.gz` and as a wheel give the
//! same judgements, by the packages' member paths.

use std::io::Write as _;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{Run, ours, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(a_tree_missing_a_gpus_files_fails_naming_it, &[]),
        trial!(packages_are_judged_as_their_tree, &[]),
    ]
}

/// A bare AMDGPU code object (HSA, code object v5) whose `e_flags` name
/// `mach` with xnack and sramecc left to the device ("any").
fn code_object(mach: u8) -> Vec<u8> {
    let mut e = b"\x7fELF\x02\x01\x01\x40\x03".to_vec();
    e.resize(16, 0);
    e.extend_from_slice(&3u16.to_le_bytes()); // ET_DYN
    e.extend_from_slice(&224u16.to_le_bytes()); // EM_AMDGPU
    e.extend_from_slice(&1u32.to_le_bytes());
    e.extend_from_slice(&[0; 24]); // entry, program and section headers: none
    e.extend_from_slice(&(0x500 | u32::from(mach)).to_le_bytes());
    for v in [64u16, 56, 0, 64, 0, 0] {
        e.extend_from_slice(&v.to_le_bytes());
    }
    e
}

const LIB: &str = "lib/hipblaslt/library";

/// The tree's files, by path: gfx90a's and, when `gfx942`, gfx942's.
pub fn files(gfx942: bool) -> Vec<(String, Vec<u8>)> {
    let mut v = vec![(
        format!("{LIB}/hipblasltExtOpLibrary.dat"),
        b"neutral index".to_vec(),
    )];
    for (gpu, mach) in [("gfx90a", 0x3f), ("gfx942", 0x4c)] {
        v.push((
            format!("lib/hipblaslt-device/{gpu}.co"),
            code_object(mach),
        ));
        if gpu == "gfx942" && !gfx942 {
            continue;
        }
        v.push((
            format!("{LIB}/TensileLibrary_lazy_{gpu}.dat"),
            format!("index of {gpu}").into_bytes(),
        ));
        v.push((
            format!("{LIB}/TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_{gpu}.co"),
            code_object(mach),
        ));
        v.push((format!("{LIB}/extop_{gpu}.co"), code_object(mach)));
    }
    v
}

/// Writes `files` below `dir`.
pub fn write_tree(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<(), Failed> {
    for (p, b) in files {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap())?;
        std::fs::write(path, b)?;
    }
    Ok(())
}

/// Writes `files` as a gzip-compressed tar archive.
fn write_tar_gz(path: &Path, files: &[(String, Vec<u8>)]) -> Result<(), Failed> {
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path)?,
        flate2::Compression::fast(),
    );
    let mut t = tar::Builder::new(gz);
    for (p, b) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(b.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        t.append_data(&mut h, p, b.as_slice())?;
    }
    t.into_inner()?.finish()?;
    Ok(())
}

/// Writes `files` as a zip archive (a wheel by its name).
fn write_zip(path: &Path, files: &[(String, Vec<u8>)]) -> Result<(), Failed> {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path)?);
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (p, b) in files {
        z.start_file(p.as_str(), deflated)?;
        z.write_all(b)?;
    }
    z.finish()?;
    Ok(())
}

fn stdout(r: &Run) -> String {
    String::from_utf8_lossy(&r.stdout).into_owned()
}

/// `check ARGS` in `cwd`: the run, and with `--json` added its document.
fn check(args: &[&str], cwd: &Path) -> Result<(Run, Value), Failed> {
    let text = run(&ours(), &[&["check"], args].concat(), cwd);
    let json = run(&ours(), &[&["check", "--json"], args].concat(), cwd);
    same(&format!("{args:?}: exit, --json or not"), json.code, text.code)?;
    let doc = serde_json::from_slice(&json.stdout)
        .map_err(|e| format!("{args:?}: bad JSON: {e}: {}", json.stderr))?;
    Ok((text, doc))
}

/// The lines of `out` about per-GPU files.
fn gate_lines(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.contains("per-GPU files")).collect()
}

/// The judgements of `doc`, as `(gpu, passed, present, files)`, with the
/// input and location each had (for comparing inputs of other kinds).
fn judgements(doc: &Value) -> Vec<(Value, Value, Value, Value, Value, Value)> {
    doc["per_gpu_files"]
        .as_array()
        .map(|v| {
            v.iter()
                .map(|j| {
                    (
                        j["input"].clone(),
                        j["location"].clone(),
                        j["gpu"].clone(),
                        j["passed"].clone(),
                        j["present"].clone(),
                        j["files"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

const LIBRARY: &str = "rocBLAS/hipBLASLt/hipSPARSELt (Tensile)";

/// The tree, whole and without gfx942's per-GPU files.
fn a_tree_missing_a_gpus_files_fails_naming_it() -> Result<(), Failed> {
    let d = tempdir();
    write_tree(&d.path().join("whole"), &files(true))?;
    write_tree(&d.path().join("missing"), &files(false))?;
    let any = ["--any", "--require", "gfx942"];
    // Whole: every library has gfx942's files; exit 0.
    let (r, doc) = check(&[&any[..], &["whole"]].concat(), d.path())?;
    let out = stdout(&r);
    same(&format!("whole: exit\n{out}"), r.code, 0)?;
    let lines = gate_lines(&out);
    // One line per convention: the code objects (2 files), the indexes (1).
    same("whole: gate lines", lines.len(), 2)?;
    for (l, n) in lines.iter().zip([2, 1]) {
        let want = format!(
            "ok   (all inputs): per-GPU files of {LIBRARY} ("
        );
        let end = format!(" in whole/{LIB}/: gfx942 has {n} file(s) (gfx942)");
        if !l.starts_with(&want) || !l.ends_with(&end) {
            return Err(format!("whole: line {l:?}").into());
        }
    }
    let j = judgements(&doc);
    same("whole: judgements", j.len(), 2)?;
    for (input, location, gpu, passed, present, _) in &j {
        // With --any, all inputs are one.
        same("whole: input", input, &Value::Null)?;
        same("whole: location", location, &Value::from(format!("whole/{LIB}")))?;
        same("whole: gpu", gpu, &Value::from("gfx942"))?;
        same("whole: passed", passed, &Value::Bool(true))?;
        same("whole: present", present, &serde_json::json!(["gfx90a", "gfx942"]))?;
    }
    same(
        "whole: index file",
        &j[1].5,
        &serde_json::json!([format!("whole/{LIB}/TensileLibrary_lazy_gfx942.dat")]),
    )?;
    // Missing: the images still meet the rule (the device code beside
    // the library), the gate fails once per convention.
    let (r, doc) = check(&[&any[..], &["missing"]].concat(), d.path())?;
    let out = stdout(&r);
    same(&format!("missing: exit\n{out}"), r.code, 1)?;
    same("missing: images meet the rule", &doc["all_inputs"]["rules"][0]["passed"], &Value::Bool(true))?;
    let lines = gate_lines(&out);
    same("missing: gate lines", lines.len(), 2)?;
    for l in &lines {
        let end = format!(" in missing/{LIB}/: none for gfx942 (files for: gfx90a)");
        let start = format!("FAIL (all inputs): per-GPU files of {LIBRARY} (");
        if !l.starts_with(&start) || !l.ends_with(&end) {
            return Err(format!("missing: line {l:?}").into());
        }
    }
    if !out.contains("check failed: 2 failure(s)") {
        return Err(format!("missing: the count\n{out}").into());
    }
    same("missing: JSON exit", &doc["exit_code"], &Value::from(1))?;
    for (_, _, _, passed, present, files) in judgements(&doc) {
        same("missing: passed", passed, Value::Bool(false))?;
        same("missing: present", present, serde_json::json!(["gfx90a"]))?;
        same("missing: files", files, serde_json::json!([]))?;
    }
    // --quiet keeps the failures; a rule naming no processor, or a GPU
    // that is there, is no failure of the gate.
    let r = run(&ours(), &["check", "--quiet", "--any", "--require", "gfx942", "missing"], d.path());
    same("missing --quiet: gate lines", gate_lines(&stdout(&r)).len(), 2)?;
    let r = run(&ours(), &["check", "--quiet", "--any", "--require", "gfx942", "whole"], d.path());
    same("whole --quiet: gate lines", gate_lines(&stdout(&r)).len(), 0)?;
    for rule in ["*:object", "gfx90a"] {
        let (r, doc) = check(&["--any", "--require", rule, "missing"], d.path())?;
        same(&format!("missing --require {rule}: exit\n{}", stdout(&r)), r.code, 0)?;
        let judged = judgements(&doc).len();
        same(&format!("missing --require {rule}: judged"), judged, if rule == "gfx90a" { 2 } else { 0 })?;
    }
    // The command of the issue, without --any: each code object is an
    // input for the image rules (gfx90a's fail them), and the gate's
    // lines are as above.
    let r = run(&ours(), &["check", "--require", "gfx942", "missing"], d.path());
    same("missing (no --any): exit", r.code, 1)?;
    let out = stdout(&r);
    let failed = gate_lines(&out).iter().filter(|l| l.starts_with("FAIL missing: per-GPU")).count();
    same(&format!("missing (no --any): gate failures\n{out}"), failed, 2)?;
    let r = run(&ours(), &["check", "--require", "gfx942", "whole"], d.path());
    let out = stdout(&r);
    let lines = gate_lines(&out);
    if lines.len() != 2 || lines.iter().any(|l| !l.starts_with("ok   whole: ")) {
        return Err(format!("whole (no --any): gate lines\n{out}").into());
    }
    Ok(())
}

/// The same trees as a `.tar.gz` and as a wheel: the same judgements,
/// the package its input and its member paths theirs.
fn packages_are_judged_as_their_tree() -> Result<(), Failed> {
    let d = tempdir();
    for (whole, name) in [(true, "whole"), (false, "missing")] {
        let f = files(whole);
        write_tree(&d.path().join(name), &f)?;
        let tgz = format!("{name}.tar.gz");
        let whl = format!("hipblaslt_{name}-1.0-py3-none-linux_x86_64.whl");
        write_tar_gz(&d.path().join(&tgz), &f)?;
        write_zip(&d.path().join(&whl), &f)?;
        let (_, tree) = check(&["--any", "--require", "gfx942", name], d.path())?;
        // The tree's judgements, as they read inside a package.
        let want: Vec<_> = judgements(&tree)
            .into_iter()
            .map(|(_, l, g, p, pr, files)| {
                let strip = |v: &Value| {
                    Value::from(v.as_str().unwrap_or_default().replacen(&format!("{name}/"), "", 1))
                };
                let files = Value::from(files.as_array().map(|a| a.iter().map(strip).collect::<Vec<_>>()).unwrap_or_default());
                (strip(&l), g, p, pr, files)
            })
            .collect();
        same(&format!("{name}: judged"), want.len(), 2)?;
        for pkg in [&tgz, &whl] {
            let (r, doc) = check(&["--any", "--require", "gfx942", pkg], d.path())?;
            let out = stdout(&r);
            same(&format!("{pkg}: exit\n{out}"), r.code, if whole { 0 } else { 1 })?;
            let got: Vec<_> = judgements(&doc)
                .into_iter()
                .map(|(_, l, g, p, pr, f)| (l, g, p, pr, f))
                .collect();
            same(&format!("{pkg}: judgements"), &got, &want)?;
            // Without --any, each package is its own input, named.
            let (r, doc) = check(&["--require", "gfx942", pkg], d.path())?;
            let out = stdout(&r);
            let inputs: Vec<Value> = judgements(&doc).into_iter().map(|j| j.0).collect();
            same(&format!("{pkg}: inputs"), inputs, vec![Value::from(pkg.as_str()); 2])?;
            let prefix = if whole {
                format!("ok   {pkg}: ")
            } else {
                format!("FAIL {pkg}: ")
            };
            let lines = gate_lines(&out);
            if lines.len() != 2 || lines.iter().any(|l| !l.starts_with(&prefix) || !l.contains(&format!(" in {LIB}/: "))) {
                return Err(format!("{pkg}: gate lines\n{out}").into());
            }
        }
    }
    Ok(())
}

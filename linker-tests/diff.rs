//! `offload-kit diff`: two builds compared. Two versions of a small HIP
//! library are built here by clang-22 (without ROCm: `-nogpulib
//! -nogpuinc` and linker-tests/prune/hipdecl.h), from two translation
//! units: `scale.hip`, the same in both, and `reduce.hip`, whose second
//! version drops the kernel `dropped` and gives `reduce` four times the
//! LDS; the second version also adds gfx942 to gfx90a and gfx1030. `diff`
//! must report exactly that, for the libraries, directories holding them
//! and wheels; nothing for a library against itself; and exit 2, naming
//! the file, for an input that cannot be read or is damaged.

use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{llvm, ours, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(hip_library_versions, &["clang++"]),
        trial!(directories_and_wheels, &["clang++", "/usr/bin/python3"]),
        trial!(unreadable_and_damaged_inputs_exit_2, &["clang++", "/usr/bin/python3"]),
    ]
}

fn src(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("linker-tests")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Builds `v1.so` and `v2.so` in `d`.
fn build(d: &Path) -> Result<(), Failed> {
    let hipdecl = src("prune/hipdecl.h");
    let compile = |source: &str, object: &str, extra: &[&str]| -> Result<(), Failed> {
        let source = src(source);
        let mut args = vec![
            "-x",
            "hip",
            "-nogpulib",
            "-nogpuinc",
            "-include",
            &hipdecl,
            "-fPIC",
            "-c",
            "--offload-arch=gfx90a",
            "--offload-arch=gfx1030",
        ];
        args.extend(extra);
        args.extend([source.as_str(), "-o", object]);
        run(&llvm("clang++"), &args, d).ok().map(drop)
    };
    let v2 = ["--offload-arch=gfx942"];
    // An explicit CUID: by default it hashes the options, which differ.
    compile("diff/scale.hip", "scale1.o", &["-cuid=scale"])?;
    compile("diff/reduce.hip", "reduce1.o", &["-cuid=reduce"])?;
    compile("diff/scale.hip", "scale2.o", &[v2[0], "-cuid=scale"])?;
    compile(
        "diff/reduce.hip",
        "reduce2.o",
        &[v2[0], "-cuid=reduce", "-DV2", "-DLDS=256"],
    )?;
    for (v, objs) in [
        ("v1.so", ["scale1.o", "reduce1.o"]),
        ("v2.so", ["scale2.o", "reduce2.o"]),
    ] {
        let mut args = vec!["-shared", "-o", v];
        args.extend(objs);
        run(&llvm("clang++"), &args, d).ok()?;
    }
    Ok(())
}

/// Runs `offload-kit diff ARGS` in `d`: its exit code and JSON document.
fn diff_json(d: &Path, args: &[&str]) -> Result<(i32, Value), Failed> {
    let mut all = vec!["diff", "--json"];
    all.extend(args);
    let r = run(&ours(), &all, d);
    if !(0..=1).contains(&r.code) {
        return Err(format!("{all:?}: exit {}: {}", r.code, r.stderr).into());
    }
    let doc = serde_json::from_slice(&r.stdout).map_err(|e| format!("{all:?}: bad JSON: {e}"))?;
    Ok((r.code, doc))
}

/// Each target of a file entry: `(target_id, status, images old, images
/// new, changed, added, removed)`.
fn targets(file: &Value) -> Vec<(String, String, u64, u64, usize, usize, usize)> {
    let n = |v: &Value| v.as_array().map_or(0, Vec::len);
    file["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            (
                t["target_id"].as_str().unwrap_or("").to_string(),
                t["status"].as_str().unwrap_or("").to_string(),
                t["old"]["images"].as_u64().unwrap_or(0),
                t["new"]["images"].as_u64().unwrap_or(0),
                n(&t["changed"]),
                n(&t["added"]),
                n(&t["removed"]),
            )
        })
        .collect()
}

/// What v1 -> v2 must show, per target: one image of each old target
/// changed (reduce.hip's; scale.hip's is the same), gfx942's two added.
fn expected_targets() -> Vec<(String, String, u64, u64, usize, usize, usize)> {
    let t = |id: &str, st: &str, o, n, c, a| (id.to_string(), st.to_string(), o, n, c, a, 0);
    vec![
        t("gfx90a", "changed", 2, 2, 1, 0),
        t("gfx942", "added", 0, 2, 0, 2),
        t("gfx1030", "changed", 2, 2, 1, 0),
    ]
}

/// Each file of a diff document: its path and status.
pub(crate) fn statuses(doc: &Value) -> Vec<(&str, &str)> {
    doc["files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            (
                f["path"].as_str().unwrap_or("?"),
                f["status"].as_str().unwrap_or("?"),
            )
        })
        .collect()
}

/// Checks a document comparing v1 with v2: one file, at `path`, changed
/// as [`expected_targets`].
fn one_changed_file(doc: &Value, path: &str) -> Result<(), Failed> {
    let files = doc["files"].as_array().ok_or("no files")?;
    same("files", statuses(doc), vec![(path, "changed")])?;
    same("targets", targets(&files[0]), expected_targets())?;
    same("schema", doc["schema"].as_str(), Some("offload-kit/diff/1"))
}

fn hip_library_versions() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    build(d)?;
    let (code, doc) = diff_json(d, &["v1.so", "v2.so"])?;
    same("exit code", code, 1)?;
    one_changed_file(&doc, "")?;
    same(
        "old path",
        doc["files"][0]["old_path"].as_str(),
        Some("v1.so"),
    )?;
    // No kernels without --kernels.
    same(
        "kernels without --kernels",
        doc["files"][0]["targets"][0].get("kernels"),
        None,
    )?;
    let (_, doc) = diff_json(d, &["--kernels", "v1.so", "v2.so"])?;
    one_changed_file(&doc, "")?;
    for t in doc["files"][0]["targets"].as_array().ok_or("no targets")? {
        let k = &t["kernels"];
        if t["target_id"] == "gfx942" {
            same("gfx942's kernels (an added target)", k, &Value::Null)?;
            continue;
        }
        let names = |v: &Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .map(|k| k["name"].as_str().unwrap_or("").to_string())
                .collect()
        };
        same(
            "kernels removed",
            names(&k["removed"]),
            vec!["_Z7droppedPi".to_string()],
        )?;
        same("kernels added", names(&k["added"]), Vec::<String>::new())?;
        same(
            "kernels changed",
            names(&k["changed"]),
            vec!["_Z6reducePf".to_string()],
        )?;
        let lds = &k["changed"][0]["figures"]["lds"];
        same(
            "reduce's LDS",
            (lds["old"].as_u64(), lds["new"].as_u64()),
            (Some(256), Some(1024)),
        )?;
    }
    // The table, demangled.
    let r = run(
        &ours(),
        &["diff", "--kernels", "--demangle", "v1.so", "v2.so"],
        d,
    );
    same("exit code (table)", r.code, 1)?;
    let text = String::from_utf8_lossy(&r.stdout);
    for want in [
        "- kernel dropped(int*)",
        "~ kernel reduce(float*): lds 256 -> 1024",
        "+ hip amdgcn-amd-amdhsa gfx942 object: 0 -> 2 images",
    ] {
        if !text.contains(want) {
            return Err(format!("no '{want}' in:\n{text}").into());
        }
    }
    // A library against itself: nothing, exit 0.
    for args in [&["v1.so", "v1.so"][..], &["--kernels", "v2.so", "v2.so"]] {
        let mut all = vec!["diff"];
        all.extend(args);
        let r = run(&ours(), &all, d);
        same("exit code (the same library)", r.code, 0)?;
        same(
            "output (the same library)",
            r.stdout.as_slice(),
            b"".as_slice(),
        )?;
        let (code, doc) = diff_json(d, args)?;
        same("exit code (the same library, JSON)", code, 0)?;
        same("status", doc["files"][0]["status"].as_str(), Some("same"))?;
        same("summary", doc["summary"]["same"].as_u64(), Some(1))?;
    }
    Ok(())
}

/// Makes `name` in `d`: a wheel of package version `version` holding
/// `library` as `pkg/lib/libk.so`, with a minimal dist-info.
fn wheel(d: &Path, name: &str, version: &str, library: &str) -> Result<(), Failed> {
    const MAKE: &str = "import sys, zipfile\n\
        name, version, lib = sys.argv[1:4]\n\
        info = 'pkg-%s.dist-info/' % version\n\
        with zipfile.ZipFile(name, 'w', zipfile.ZIP_DEFLATED) as z:\n    \
            z.write(lib, 'pkg/lib/libk.so')\n    \
            z.writestr(info + 'METADATA', 'Metadata-Version: 2.1\\nName: pkg\\nVersion: %s\\n' % version)\n    \
            z.writestr(info + 'WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: false\\nTag: py3-none-any\\n')\n    \
            z.writestr(info + 'RECORD', '')\n";
    run(
        Path::new("/usr/bin/python3"),
        &["-c", MAKE, name, version, library],
        d,
    )
    .ok()
    .map(drop)
}

fn directories_and_wheels() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    build(d)?;
    for (dir, lib, other) in [("old", "v1.so", "NOTES"), ("new", "v2.so", "README")] {
        std::fs::create_dir_all(d.join(dir).join("lib"))?;
        std::fs::copy(d.join(lib), d.join(dir).join("lib/libk.so"))?;
        // A file without device code, on one side only.
        std::fs::write(d.join(dir).join(other), "no device code\n")?;
    }
    let (code, doc) = diff_json(d, &["old", "new/"])?;
    same("exit code (directories)", code, 1)?;
    one_changed_file(&doc, "lib/libk.so")?;
    same(
        "paths (directories)",
        (
            doc["files"][0]["old_path"].as_str(),
            doc["files"][0]["new_path"].as_str(),
        ),
        (Some("old/lib/libk.so"), Some("new/lib/libk.so")),
    )?;
    // --all: the files without device code too.
    let (_, doc) = diff_json(d, &["--all", "old", "new"])?;
    let files = statuses(&doc);
    same(
        "files (--all)",
        files,
        vec![
            ("NOTES", "removed"),
            ("README", "added"),
            ("lib/libk.so", "changed"),
        ],
    )?;

    wheel(d, "pkg-1.0-py3-none-any.whl", "1.0", "v1.so")?;
    wheel(d, "pkg-2.0-py3-none-any.whl", "2.0", "v2.so")?;
    wheel(d, "again-1.0-py3-none-any.whl", "1.0", "v1.so")?;
    let (code, doc) = diff_json(d, &["pkg-1.0-py3-none-any.whl", "pkg-2.0-py3-none-any.whl"])?;
    same("exit code (wheels)", code, 1)?;
    one_changed_file(&doc, "pkg/lib/libk.so")?;
    same(
        "new path (wheels)",
        doc["files"][0]["new_path"].as_str(),
        Some("pkg-2.0-py3-none-any.whl!/pkg/lib/libk.so"),
    )?;
    let (_, doc) = diff_json(
        d,
        &[
            "--kernels",
            "pkg-1.0-py3-none-any.whl",
            "pkg-2.0-py3-none-any.whl",
        ],
    )?;
    let k = &doc["files"][0]["targets"][0]["kernels"];
    same(
        "kernel removed (wheels)",
        k["removed"][0]["name"].as_str(),
        Some("_Z7droppedPi"),
    )?;
    // The same library in another wheel: no difference.
    let (code, _) = diff_json(
        d,
        &["pkg-1.0-py3-none-any.whl", "again-1.0-py3-none-any.whl"],
    )?;
    same("exit code (the same wheel contents)", code, 0)?;
    // Two versions of a wheel in two directories pair by the wheel's
    // distribution name (normalized), whatever their versions and tags.
    std::fs::create_dir_all(d.join("d1/dist"))?;
    std::fs::create_dir_all(d.join("d2/dist"))?;
    std::fs::copy(
        d.join("pkg-1.0-py3-none-any.whl"),
        d.join("d1/dist/pkg-1.0-py3-none-any.whl"),
    )?;
    std::fs::copy(
        d.join("pkg-2.0-py3-none-any.whl"),
        d.join("d2/dist/Pkg-2.0-1-cp312-cp312-manylinux_2_28_x86_64.whl"),
    )?;
    let (code, doc) = diff_json(d, &["d1", "d2"])?;
    same("exit code (wheels in directories)", code, 1)?;
    one_changed_file(&doc, "dist/pkg-*.whl!/pkg/lib/libk.so")?;
    same(
        "paths (wheels in directories)",
        (
            doc["files"][0]["old_path"].as_str(),
            doc["files"][0]["new_path"].as_str(),
        ),
        (
            Some("d1/dist/pkg-1.0-py3-none-any.whl!/pkg/lib/libk.so"),
            Some("d2/dist/Pkg-2.0-1-cp312-cp312-manylinux_2_28_x86_64.whl!/pkg/lib/libk.so"),
        ),
    )
}

fn unreadable_and_damaged_inputs_exit_2() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    build(d)?;
    wheel(d, "pkg-1.0-py3-none-any.whl", "1.0", "v1.so")?;
    let whl = std::fs::read(d.join("pkg-1.0-py3-none-any.whl"))?;
    // The end of a zip archive (its central directory) cut off.
    std::fs::write(d.join("cut.whl"), &whl[..whl.len() / 2])?;
    // A library cut short: its section headers and part of its device
    // code gone.
    let lib = std::fs::read(d.join("v2.so"))?;
    std::fs::write(d.join("cut.so"), &lib[..lib.len() / 2])?;
    for (args, file) in [
        (["v1.so", "missing.so"], "missing.so"),
        (["pkg-1.0-py3-none-any.whl", "cut.whl"], "cut.whl"),
        (["v1.so", "cut.so"], "cut.so"),
    ] {
        for json in [false, true] {
            let mut all = vec!["diff"];
            if json {
                all.push("--json");
            }
            all.extend(args);
            let r = run(&ours(), &all, d);
            same(&format!("{all:?}: exit code"), r.code, 2)?;
            if r.stderr.contains("panicked") {
                return Err(format!("{all:?} panicked: {}", r.stderr).into());
            }
            let named = r
                .stderr
                .lines()
                .any(|l| l.starts_with("error: ") && l.contains(&format!("'{file}'")));
            if !named {
                return Err(format!("{all:?}: no error line names '{file}': {}", r.stderr).into());
            }
            if json {
                serde_json::from_slice::<Value>(&r.stdout)
                    .map_err(|e| format!("{all:?}: bad JSON: {e}"))?;
            }
        }
    }
    Ok(())
}

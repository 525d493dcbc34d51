//! The scanners as a CI pipeline uses them (issue #15), on the binaries
//! `scan.rs` builds with clang-22: `-` as standard input (through a pipe),
//! several inputs with unreadable ones among them, the exit codes (0
//! success, 1 a rule not met, 2 an input error), corrupt inputs failing
//! `check`, and `check`'s ARCH[:KIND] rules matched as the loaders match.
//!
//! What the commands print for people (list words and columns, progress,
//! completions and man pages) is in `output.rs`.

use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::scan::{TOOLS, built};
use crate::util::{ours, run, run_stdin, same, snapshot, tempdir};

test_files! {
    output,
}

pub fn tests() -> Vec<Trial> {
        let mut trials = vec![
        trial!(ci_stdin_is_dash, TOOLS),
        trial!(ci_many_inputs_and_exit_codes, TOOLS),
        trial!(ci_corrupt_input_is_an_input_error, TOOLS),
        trial!(ci_check_rules_as_the_loaders_match, TOOLS),
        trial!(ci_extract_selection_and_host_entries, TOOLS),
        trial!(ci_inspect_directory_header_and_all, TOOLS),
        trial!(ci_unpack_and_unbundle_point_to_extract, TOOLS),
        trial!(ci_fatbin_wrapper_in_an_archive_member, TOOLS),
        trial!(ci_ccob_kinds_without_verify, TOOLS),
    ];
    trials.extend(file_trials());
    trials
}

fn json(stdout: &[u8]) -> Result<Value, Failed> {
    serde_json::from_slice(stdout).map_err(|e| format!("json: {e}").into())
}

fn path(name: &str) -> Result<String, Failed> {
    Ok(built()?.dir.join(name).to_string_lossy().into_owned())
}

/// Each command given `-` reads a pipe and reports what it reports for the
/// file by path; `-o -` is refused; `-` twice is an error.
fn ci_stdin_is_dash() -> Result<(), Failed> {
    let b = built()?;
    let k = ours();
    for f in ["hip.o", "omp_gfx.o", "hipc.exe"] {
        let p = path(f)?;
        let data = std::fs::read(&p).map_err(|e| e.to_string())?;
        // inspect: the same images.
        let by_path = run(&k, &["inspect", "--json", "--hash", &p], &b.dir).ok()?;
        let piped = run_stdin(&k, &["inspect", "--json", "--hash", "-"], &b.dir, &data).ok()?;
        let (mut a, c) = (json(&by_path.stdout)?, json(&piped.stdout)?);
        same(
            &format!("{f}: path"),
            c["files"][0]["path"].clone(),
            "-".into(),
        )?;
        a["files"][0]["path"] = "-".into();
        if a["files"][0]["images"].as_array().is_none_or(Vec::is_empty) {
            return Err(format!("{f}: no images").into());
        }
        same(&format!("{f}: inspect - vs path"), &c, &a)?;
        // list, size and check.
        for args in [
            vec!["list"],
            vec!["size", "--json"],
            vec!["check", "--require", "gfx90a"],
        ] {
            let mut with_path = args.clone();
            with_path.push(&p);
            let mut with_dash = args.clone();
            with_dash.push("-");
            let x = run(&k, &with_path, &b.dir);
            let y = run_stdin(&k, &with_dash, &b.dir, &data);
            same(&format!("{f}: {args:?} exit"), y.code, x.code)?;
            let fix = |s: &[u8]| String::from_utf8_lossy(s).replace(&p, "-");
            same(
                &format!("{f}: {args:?} stdout"),
                fix(&y.stdout),
                fix(&x.stdout),
            )?;
        }
        // extract: the same files, named after "stdin".
        let (d1, d2) = (tempdir(), tempdir());
        let x1 = d1.path().to_string_lossy().into_owned();
        let x2 = d2.path().to_string_lossy().into_owned();
        run(&k, &["extract", "-o", &x1, &p], &b.dir).ok()?;
        run_stdin(&k, &["extract", "-o", &x2, "-"], &b.dir, &data).ok()?;
        let names = |d: &Path, from: &str| -> Vec<(String, Vec<u8>)> {
            snapshot(d)
                .into_iter()
                .map(|(n, b)| (n.replacen(from, "X", 1), b))
                .collect()
        };
        let (e1, e2) = (names(d1.path(), f), names(d2.path(), "stdin"));
        if e1.is_empty() {
            return Err(format!("{f}: nothing extracted").into());
        }
        same(&format!("{f}: extract - vs path"), e2, e1)?;
    }
    // `-o -`: an error, and no directory named `-`.
    let cwd = tempdir();
    let p = path("hip.o")?;
    let r = run(&k, &["extract", "-o", "-", &p], cwd.path());
    same("extract -o - exit", r.code, 2)?;
    if cwd.path().join("-").exists() || !r.stderr.contains("-o -") {
        return Err(format!("extract -o -: {}", r.stderr).into());
    }
    let r = run_stdin(&k, &["inspect", "-", "-"], cwd.path(), b"");
    same("- twice", r.code, 2)?;
    Ok(())
}

/// Every readable input is reported; each unreadable one gets one line on
/// standard error and its `error` in JSON; the exit code is 2.
fn ci_many_inputs_and_exit_codes() -> Result<(), Failed> {
    let b = built()?;
    let k = ours();
    let (good1, good2) = (path("hip.exe")?, path("omp_gfx.o")?);
    let missing = b.dir.join("no-such-file.o").to_string_lossy().into_owned();
    let inputs = [good1.as_str(), missing.as_str(), good2.as_str()];
    let with = |args: &[&str]| -> Vec<String> {
        args.iter()
            .chain(&inputs)
            .map(|s| (*s).to_string())
            .collect()
    };
    let one_error_line = |what: &str, stderr: &str| -> Result<(), Failed> {
        let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        if lines.len() != 1 || !lines[0].contains("no-such-file.o") {
            return Err(format!("{what}: stderr: {stderr}").into());
        }
        Ok(())
    };
    // inspect, table and JSON.
    let r = run(&k, &with(&["inspect"]), &b.dir);
    same("inspect exit", r.code, 2)?;
    one_error_line("inspect", &r.stderr)?;
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains(&good1) || !out.contains(&good2) {
        return Err(format!("inspect: good files not reported: {out}").into());
    }
    let r = run(&k, &with(&["inspect", "--json"]), &b.dir);
    same("inspect --json exit", r.code, 2)?;
    let v = json(&r.stdout)?;
    let files = v["files"].as_array().cloned().unwrap_or_default();
    same("inspect --json files", files.len(), 3)?;
    if !files[1]["error"].is_string() || !files[0]["error"].is_null() {
        return Err(format!("inspect --json errors: {v}").into());
    }
    if files[2]["images"].as_array().is_none_or(Vec::is_empty) {
        return Err("inspect --json: the third file has no images".into());
    }
    // size.
    let r = run(&k, &with(&["size", "--json"]), &b.dir);
    same("size exit", r.code, 2)?;
    one_error_line("size", &r.stderr)?;
    let v = json(&r.stdout)?;
    same("size files", v["files"].as_array().map(Vec::len), Some(3))?;
    if !v["files"][1]["error"].is_string() || v["files"][0]["total"]["images"] == 0 {
        return Err(format!("size --json: {v}").into());
    }
    // check: the good ones are checked, the missing one is an input error,
    // which wins over a rule not met.
    let r = run(&k, &with(&["check", "--require", "gfx90a"]), &b.dir);
    same("check exit", r.code, 2)?;
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains(&format!("ok   {good1}")) || !out.contains("ERROR") {
        return Err(format!("check: {out}").into());
    }
    let r = run(
        &k,
        &with(&["check", "--json", "--require", "gfx942"]),
        &b.dir,
    );
    same("check --json exit", r.code, 2)?;
    let v = json(&r.stdout)?;
    same(
        "check --json statuses",
        v["files"]
            .as_array()
            .map(|f| f.iter().map(|x| x["status"].clone()).collect::<Vec<_>>()),
        Some(vec!["fail".into(), "error".into(), "fail".into()]),
    )?;
    // extract: the good ones are extracted.
    let out = tempdir();
    let o = out.path().to_string_lossy().into_owned();
    let r = run(&k, &with(&["extract", "-o", &o]), &b.dir);
    same("extract exit", r.code, 2)?;
    one_error_line("extract", &r.stderr)?;
    let written = snapshot(out.path());
    for g in ["hip.exe", "omp_gfx.o"] {
        if !written.iter().any(|(n, _)| n.contains(g)) {
            return Err(format!("extract: nothing from {g}").into());
        }
    }
    // list: one input that cannot be read, alone and among others.
    let r = run(&k, &["list", missing.as_str()], &b.dir);
    same("list exit", r.code, 2)?;
    let r = run(&k, &with(&["list"]), &b.dir);
    same("list of three: exit", r.code, 2)?;
    one_error_line("list", &r.stderr)?;
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains(&format!("{good2}:")) || !out.contains("gfx90a") {
        return Err(format!("list of three: {out}").into());
    }
    let r = run(&k, &with(&["list", "--json"]), &b.dir);
    same("list --json of three: exit", r.code, 2)?;
    let v = json(&r.stdout)?;
    same(
        "list schema",
        v["schema"].clone(),
        "offload-kit/list/2".into(),
    )?;
    same("list files", v["files"].as_array().map(Vec::len), Some(3))?;
    if !v["files"][1]["error"].is_string() || v["files"][2]["images"].as_array().is_none() {
        return Err(format!("list --json of three: {v}").into());
    }
    Ok(())
}

/// A truncated or corrupt container fails `check` as an input error (2),
/// never "ok"; `--allow-corrupt` checks what could be read. `extract` of
/// it is an input error too.
fn ci_corrupt_input_is_an_input_error() -> Result<(), Failed> {
    let b = built()?;
    let k = ours();
    let dir = tempdir();
    let d = dir.path();
    for f in ["hipc.exe", "bare.ccob", "bare.bundle"] {
        let data = std::fs::read(b.dir.join(f)).map_err(|e| e.to_string())?;
        std::fs::write(d.join(format!("{f}.truncated")), &data[..data.len() / 2])
            .map_err(|e| e.to_string())?;
    }
    let good = path("hip.exe")?;
    for f in ["hipc.exe", "bare.ccob", "bare.bundle"] {
        let t = d
            .join(format!("{f}.truncated"))
            .to_string_lossy()
            .into_owned();
        let r = run(&k, &["check", &t, &good, "--require-arch", "gfx90a"], d);
        same(&format!("{f} truncated: exit"), r.code, 2)?;
        let out = String::from_utf8_lossy(&r.stdout);
        if out
            .lines()
            .any(|l| l.starts_with("ok") && l.contains(".truncated"))
        {
            return Err(format!("{f} truncated passed: {out}").into());
        }
        let r = run(&k, &["check", "--json", &t, "--require", "gfx90a"], d);
        let v = json(&r.stdout)?;
        same(
            &format!("{f}: json status"),
            v["files"][0]["status"].clone(),
            "error".into(),
        )?;
        same(
            &format!("{f}: json exit_code"),
            v["exit_code"].clone(),
            2.into(),
        )?;
        let r = run(
            &k,
            &[
                "check",
                &t,
                &good,
                "--allow-corrupt",
                "--require-arch",
                "gfx90a",
            ],
            d,
        );
        if r.code == 2 {
            return Err(format!("{f}: --allow-corrupt still an input error").into());
        }
        // extract: nothing to take from it is an input error too, naming
        // the file, with nothing written.
        let out = d.join(format!("{f}.out"));
        let o = out.to_string_lossy().into_owned();
        let r = run(&k, &["extract", &t, "-o", &o], d);
        same(&format!("{f} truncated: extract exit"), r.code, 2)?;
        let err = &r.stderr;
        if !err
            .lines()
            .any(|l| l.starts_with("error: ") && l.contains(".truncated"))
        {
            return Err(format!("{f}: no error line naming the file: {err}").into());
        }
        let left = std::fs::read_dir(&out).map_err(|e| e.to_string())?.count();
        same(&format!("{f} truncated: files written"), left, 0)?;
    }
    Ok(())
}

/// ARCH[:KIND] rules, target-ID and CUDA compatibility, through the binary.
fn ci_check_rules_as_the_loaders_match() -> Result<(), Failed> {
    let b = built()?;
    let k = ours();
    let code = |file: &str, args: &[&str]| -> Result<(i32, String), Failed> {
        let p = path(file)?;
        let mut a = vec!["check", p.as_str()];
        a.extend_from_slice(args);
        let r = run(&k, &a, &b.dir);
        Ok((r.code, String::from_utf8_lossy(&r.stdout).into_owned()))
    };
    let cases: &[(&str, &[&str], i32)] = &[
        // hip.exe: HIP code objects for gfx90a and gfx1030 (no features).
        ("hip.exe", &["--require", "gfx90a:object"], 0),
        ("hip.exe", &["--require", "gfx90a:bitcode"], 1),
        ("hip.exe", &["--require", "gfx90a:xnack-,gfx90a:xnack+"], 0),
        ("hip.exe", &["--require", "gfx942"], 1),
        ("hip.exe", &["--forbid", "gfx1030:object"], 1),
        ("hip.exe", &["--forbid", "*:bitcode"], 0),
        // The kinds inside compressed bundles are read without --verify.
        ("hipc.exe", &["--require", "gfx1030:object"], 0),
        ("hipc.exe", &["--forbid-kind", "object"], 1),
        ("hipc.exe", &["--require-kind", "object"], 0),
        // bare.bundle: gfx90a:xnack+ only, which does not serve every gfx90a.
        ("bare.bundle", &["--require", "gfx90a"], 1),
        ("bare.bundle", &["--require", "gfx90a:xnack+"], 0),
        ("bare.bundle", &["--require", "gfx90a:xnack-"], 1),
        ("bare.bundle", &["--exact", "--require", "gfx90a"], 0),
        ("bare.bundle", &["--forbid", "gfx90a"], 1),
        ("bare.bundle", &["--forbid", "gfx90a:xnack-"], 0),
        // cuda_fb.o: cubins and PTX for sm_50 and sm_52.
        ("cuda_fb.o", &["--require", "sm_52:cubin,*:ptx"], 0),
        ("cuda_fb.o", &["--require", "sm_53:cubin"], 0),
        ("cuda_fb.o", &["--exact", "--require", "sm_53:cubin"], 1),
        ("cuda_fb.o", &["--require", "sm_60:cubin"], 1),
        ("cuda_fb.o", &["--require", "sm_90"], 0),
        ("cuda_fb.o", &["--forbid", "sm_52:ptx"], 1),
    ];
    for (file, args, want) in cases {
        let (got, out) = code(file, args)?;
        same(&format!("check {file} {args:?} ({out})"), got, *want)?;
    }
    let (_, out) = code("cuda_fb.o", &["--require", "sm_90"])?;
    if !out.contains("sm_90 through PTX JIT") {
        return Err(format!("PTX JIT not reported: {out}").into());
    }
    // The sm_90 requirement is not met by the old string matching either.
    let (_, out) = code("hip.exe", &["--require", "gfx942"])?;
    if !out.contains("missing arch gfx942") {
        return Err(format!("unclear report: {out}").into());
    }
    // --json: each rule, each file.
    let p = path("hip.exe")?;
    let r = run(
        &k,
        &[
            "check",
            "--json",
            &p,
            "--require",
            "gfx90a:object",
            "--forbid",
            "gfx803",
        ],
        &b.dir,
    );
    same("check --json exit", r.code, 0)?;
    let v = json(&r.stdout)?;
    same("schema", v["schema"].clone(), "offload-kit/check/1".into())?;
    same("rules", v["rules"].as_array().map(Vec::len), Some(2))?;
    let fr = &v["files"][0]["rules"];
    same(
        "file rules",
        (
            fr[0]["rule"].clone(),
            fr[0]["passed"].clone(),
            fr[1]["type"].clone(),
        ),
        ("gfx90a:object".into(), true.into(), "forbid".into()),
    )?;
    if fr[0]["images"].as_array().is_none_or(Vec::is_empty) {
        return Err(format!("no images meet the rule: {v}").into());
    }
    Ok(())
}

/// `extract` filters that match nothing say so and exit 1; bundles' empty
/// host entries are written only with `--include-host`.
fn ci_extract_selection_and_host_entries() -> Result<(), Failed> {
    let b = built()?;
    let k = ours();
    let p = path("hip.o")?;
    let out = tempdir();
    let o = out.path().to_string_lossy().into_owned();
    let r = run(&k, &["extract", "-o", &o, "--arch", "gfx942", &p], &b.dir);
    same("no match: exit", r.code, 1)?;
    if !r.stderr.contains("no image matches") || !snapshot(out.path()).is_empty() {
        return Err(format!("no match: {}", r.stderr).into());
    }
    run(&k, &["extract", "-o", &o, &p], &b.dir).ok()?;
    let files = snapshot(out.path());
    if files.is_empty()
        || files
            .iter()
            .any(|(n, b)| n.contains("host") || b.is_empty())
    {
        let names: Vec<&String> = files.iter().map(|(n, _)| n).collect();
        return Err(format!("host entries written: {names:?}").into());
    }
    let all = tempdir();
    let a = all.path().to_string_lossy().into_owned();
    run(&k, &["extract", "--include-host", "-o", &a, &p], &b.dir).ok()?;
    if !snapshot(all.path()).iter().any(|(n, _)| n.contains("host")) {
        return Err("--include-host wrote no host entry".into());
    }
    Ok(())
}

/// `inspect` of a directory shows only the files with device code (or
/// problems) unless `--all`; its table has a header row.
fn ci_inspect_directory_header_and_all() -> Result<(), Failed> {
    let k = ours();
    let dir = tempdir();
    let d = dir.path();
    std::fs::copy(path("hip.o")?, d.join("hip.o")).map_err(|e| e.to_string())?;
    std::fs::copy(path("main.o")?, d.join("main.o")).map_err(|e| e.to_string())?;
    let ds = d.to_string_lossy().into_owned();
    let r = run(&k, &["inspect", &ds], d).ok()?;
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains("hip.o") || out.contains("main.o") {
        return Err(format!("inspect DIR: {out}").into());
    }
    if !out.lines().any(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.starts_with(&[
            "#", "offload", "image", "triple", "target", "size", "offset",
        ])
    }) {
        return Err(format!("no header row: {out}").into());
    }
    let r = run(&k, &["inspect", "--all", &ds], d).ok()?;
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains("main.o") {
        return Err(format!("inspect --all DIR: {out}").into());
    }
    // check does not list the walked files without device code one by one.
    let r = run(&k, &["check", &ds, "--require", "gfx90a"], d).ok()?;
    let out = String::from_utf8_lossy(&r.stdout);
    if out.contains("main.o") || !out.contains("1 other file(s)") || !out.contains("hip.o") {
        return Err(format!("check DIR: {out}").into());
    }
    // A file named on the command line is always shown.
    let main = d.join("main.o").to_string_lossy().into_owned();
    let r = run(&k, &["inspect", &main], d).ok()?;
    if !String::from_utf8_lossy(&r.stdout).contains("main.o") {
        return Err("inspect FILE without device code: not shown".into());
    }
    Ok(())
}

/// `unpack` and `unbundle` of an executable whose device code is in
/// `.hip_fatbin` bundles say that `extract` writes it, exit 1, and write
/// nothing.
fn ci_unpack_and_unbundle_point_to_extract() -> Result<(), Failed> {
    let k = ours();
    let dir = tempdir();
    let d = dir.path();
    let exe = path("hip.exe")?;
    for cmd in ["unpack", "unbundle"] {
        let out = d.join(cmd);
        let r = run(&k, &[cmd, exe.as_str(), "-o", &out.to_string_lossy()], d);
        same(&format!("{cmd} exit"), r.code, 1)?;
        if !r.stderr.contains("offload-kit extract") || out.exists() {
            return Err(format!("{cmd}: {}", r.stderr).into());
        }
    }
    Ok(())
}

/// A CUDA fatbin wrapper in an archive member points at its fatbin: its
/// target is a file offset, as the containers' offsets are.
fn ci_fatbin_wrapper_in_an_archive_member() -> Result<(), Failed> {
    let b = built()?;
    let dir = tempdir();
    let d = dir.path();
    for f in ["main.o", "cuda_fb.o"] {
        std::fs::copy(b.dir.join(f), d.join(f)).map_err(|e| e.to_string())?;
    }
    run(
        &crate::util::llvm("llvm-ar"),
        &["rc", "libfb.a", "main.o", "cuda_fb.o"],
        d,
    )
    .ok()?;
    let a = d.join("libfb.a").to_string_lossy().into_owned();
    let r = run(&ours(), &["inspect", "--json", &a], d).ok()?;
    let v = json(&r.stdout)?;
    let containers = v["files"][0]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let fatbin = containers
        .iter()
        .find(|c| c["kind"] == "cuda-fatbin")
        .ok_or("no fatbin")?;
    let wrapper = containers
        .iter()
        .find(|c| c["kind"] == "fatbin-wrapper")
        .ok_or("no wrapper")?;
    same(
        "wrapper target_container",
        wrapper["wrapper"]["target_container"].clone(),
        fatbin["id"].clone(),
    )?;
    same(
        "wrapper target",
        wrapper["wrapper"]["target"].clone(),
        fatbin["offset"].clone(),
    )
}

/// The kind of every image in a compressed bundle is known without
/// `--verify` (from each entry's first bytes, read from the decompressed
/// stream): the same kinds as with it, and `check --forbid-kind object`,
/// `--require-kind object` and `extract --kind object` see them.
fn ci_ccob_kinds_without_verify() -> Result<(), Failed> {
    let b = built()?;
    let k = ours();
    let exe = path("hipc.exe")?;
    let kinds = |extra: &[&str]| -> Result<Vec<String>, Failed> {
        let mut a = vec!["inspect", "--json"];
        a.extend_from_slice(extra);
        a.push(&exe);
        let doc = json(&run(&k, &a, &b.dir).ok()?.stdout)?;
        Ok(doc["files"][0]["images"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| i["image_kind"].to_string())
            .collect())
    };
    let plain = kinds(&[])?;
    same(
        "kinds without and with --verify",
        &plain,
        &kinds(&["--verify"])?,
    )?;
    if plain.iter().filter(|k| *k == "\"object\"").count() != 4 {
        return Err(format!("kinds: {plain:?}").into());
    }
    let r = run(&k, &["check", "--forbid-kind", "object", &exe], &b.dir);
    same("check --forbid-kind object exit", r.code, 1)?;
    let r = run(&k, &["check", "--require-kind", "object", &exe], &b.dir);
    same("check --require-kind object exit", r.code, 0)?;
    let dir = tempdir();
    let out = dir.path().join("x");
    let r = run(
        &k,
        &[
            "extract",
            "--kind",
            "object",
            "-o",
            &out.to_string_lossy(),
            &exe,
        ],
        &b.dir,
    )
    .ok()?;
    same(
        "extract --kind object: files",
        String::from_utf8_lossy(&r.stdout).lines().count(),
        4,
    )?;
    Ok(())
}

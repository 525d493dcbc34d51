//! What the commands print for people: `list` words and columns, a
//! misaligned OffloadBinary listed, progress on a terminal only,
//! completions and man pages.

use super::*;

/// `list` uses the scanners' words for kinds, lists the bundles of a
/// `.hip_fatbin` section, and `size` orders archs naturally.
fn ci_list_words_hip_fatbin_and_arch_order() -> Result<(), Failed> {
    let b = built()?;
    let k = ours();
    let r = run(&k, &["list", &path("omp_gfx.o")?], &b.dir).ok()?;
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains("bitcode") || out.contains("llvm ir") {
        return Err(format!("list words: {out}").into());
    }
    // The same words in list's and inspect's JSON, image by image.
    let kinds = |cmd: &str| -> Result<Vec<String>, Failed> {
        let r = run(&k, &[cmd, "--json", &path("omp_gfx.o")?], &b.dir).ok()?;
        let v = json(&r.stdout)?;
        // One file: list prints its document alone; inspect wraps it.
        let doc = if v["files"].is_array() {
            &v["files"][0]
        } else {
            &v
        };
        let mut words: Vec<String> = doc["images"]
            .as_array()
            .ok_or_else(|| format!("{cmd} --json: no images"))?
            .iter()
            .map(|i| i["image_kind"].as_str().unwrap_or("?").to_string())
            .collect();
        words.sort();
        Ok(words)
    };
    let (listed, inspected) = (kinds("list")?, kinds("inspect")?);
    same(
        "image kinds of list --json and inspect --json",
        &listed,
        &inspected,
    )?;
    if !listed.iter().any(|w| w == "bitcode") {
        return Err(format!("list --json kinds: {listed:?}").into());
    }
    for f in ["hip.exe", "hipc.exe"] {
        let r = run(&k, &["list", &path(f)?], &b.dir).ok()?;
        let out = String::from_utf8_lossy(&r.stdout);
        for want in ["gfx90a", "gfx1030", ".hip_fatbin", "object"] {
            if !out.contains(want) {
                return Err(format!("list {f}: no {want}: {out}").into());
            }
        }
        if !r.stderr.contains("inspect") {
            return Err(format!("list {f}: no pointer to inspect: {}", r.stderr).into());
        }
    }
    let r = run(&k, &["size", &path("hip.exe")?], &b.dir).ok()?;
    let out = String::from_utf8_lossy(&r.stdout);
    let at = |a: &str| out.find(&format!("amdgcn-amd-amdhsa {a}"));
    match (at("gfx90a"), at("gfx1030")) {
        (Some(x), Some(y)) if x < y => Ok(()),
        _ => Err(format!("size order: {out}").into()),
    }
}

/// `completions SHELL` prints a script for each shell clap_complete knows
/// (bash's passes `bash -n`), naming the commands and their options;
/// `manpages DIR` writes one page for offload-kit and one per command, each
/// titled with its name.
fn ci_completions_and_manpages() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let r = run(&ours(), &["completions", shell], d);
        same(&format!("completions {shell}: exit"), r.code, 0)?;
        let text = String::from_utf8_lossy(&r.stdout);
        for word in ["inspect", "manpages", "require", "offload-arch"] {
            if !text.contains(word) {
                return Err(format!("completions {shell}: no '{word}'").into());
            }
        }
        if shell == "bash" {
            std::fs::write(d.join("c.bash"), &r.stdout)?;
            let check = run(Path::new("/bin/bash"), &["-n", "c.bash"], d);
            same("bash -n of the bash completions", check.code, 0)?;
        }
    }
    let r = run(&ours(), &["completions", "tcsh"], d);
    same("completions tcsh: exit", r.code, 2)?;

    let r = run(&ours(), &["manpages", "man"], d);
    same("manpages: exit", r.code, 0)?;
    let commands = [
        "pack",
        "bundle",
        "unbundle",
        "unpack",
        "list",
        "install-links",
        "wrap",
        "inspect",
        "extract",
        "check",
        "size",
        "prune",
        "split",
        "diff",
        "completions",
        "manpages",
    ];
    let mut want: Vec<String> = commands
        .iter()
        .map(|c| format!("offload-kit-{c}.1"))
        .collect();
    want.push("offload-kit.1".into());
    want.sort();
    let got: Vec<String> = snapshot(&d.join("man")).into_iter().map(|f| f.0).collect();
    same("man pages written", &got, &want)?;
    let printed = String::from_utf8_lossy(&r.stdout).lines().count();
    same("pages named on stdout", printed, want.len())?;
    for c in commands {
        let page = std::fs::read_to_string(d.join(format!("man/offload-kit-{c}.1")))?;
        if !page.contains(&format!(".TH offload-kit-{c} 1")) {
            return Err(format!("offload-kit-{c}.1: no .TH title").into());
        }
    }
    let check = std::fs::read_to_string(d.join("man/offload-kit-check.1"))?;
    if !check.contains("require") || !check.contains("offload\\-kit check") {
        return Err("offload-kit-check.1: no --require or synopsis".into());
    }
    std::fs::write(d.join("file"), b"x")?;
    let r = run(&ours(), &["manpages", "file"], d);
    same("manpages into a file: exit", r.code, 1)?;
    Ok(())
}

/// `list`'s columns widen to their longest value: with a 25-character
/// triple (aarch64-unknown-linux-gnu) every row's arch starts where the
/// header's does.
fn ci_list_columns_fit_long_triples() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(
        d.join("a.c"),
        "int f(void) {\n#pragma omp target\n{}\nreturn 0; }\n",
    )?;
    let cc = run(
        &crate::util::llvm("clang"),
        &[
            "-fopenmp",
            "-fopenmp-targets=x86_64-unknown-linux-gnu,aarch64-unknown-linux-gnu",
            "-c",
            "a.c",
        ],
        d,
    );
    same(&format!("clang: {}", cc.stderr), cc.code, 0)?;
    let r = run(&ours(), &["list", "a.o"], d).ok()?;
    let out = String::from_utf8_lossy(&r.stdout);
    let lines: Vec<&str> = out.lines().collect();
    same("rows", lines.len(), 3)?;
    let at = lines[0].find("arch").ok_or("no arch header")?;
    for row in &lines[1..] {
        same(
            &format!("arch column of '{row}'"),
            row.find("generic"),
            Some(at),
        )?;
    }
    Ok(())
}

/// An OffloadBinary in a section at an odd file offset (llvm-objcopy
/// --add-section, alignment 1): LLVM's readers skip it (llvm-objdump
/// --offloading lists nothing); `list` shows the scanner's image and says
/// that LLVM does not read it.
fn ci_list_misaligned_offload_binary() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("dev.o"), vec![7u8; 1001])?;
    std::fs::write(d.join("m.c"), "int main(void) { return 0; }\n")?;
    let steps: [(&str, Vec<&str>); 3] = [
        (
            "llvm-offload-binary",
            vec![
                "-o",
                "dev.ob",
                "--image=file=dev.o,triple=x86_64-unknown-linux-gnu,arch=generic,kind=openmp",
            ],
        ),
        ("clang", vec!["-c", "m.c", "-o", "m.o"]),
        (
            "llvm-objcopy",
            vec![
                "--add-section",
                ".llvm.offloading=dev.ob",
                "--set-section-type",
                ".llvm.offloading=0x6fff4c08",
                "m.o",
                "host.o",
            ],
        ),
    ];
    for (tool, args) in steps {
        let r = run(&crate::util::llvm(tool), &args, d);
        same(&format!("{tool}: {}", r.stderr), r.code, 0)?;
    }
    let objdump = run(
        &crate::util::llvm("llvm-objdump"),
        &["--offloading", "host.o"],
        d,
    );
    if String::from_utf8_lossy(&objdump.stdout).contains("OFFLOADING IMAGE") {
        return Err("llvm-objdump reads the misaligned binary: the premise is wrong".into());
    }
    let r = run(&ours(), &["list", "host.o"], d);
    same("list: exit", r.code, 0)?;
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains("offload-binary") || !out.contains("1001") {
        return Err(format!("list: no scanned image: {out}").into());
    }
    if !r.stderr.contains("no OffloadBinary as LLVM reads them") {
        return Err(format!("list: no note that LLVM skips it: {}", r.stderr).into());
    }
    Ok(())
}

/// A directory walk keeps a progress line on standard error when it is a
/// terminal (run under `script`, which gives the command a pseudo-terminal),
/// erased at the end; in a pipe standard error stays empty.
fn ci_progress_on_a_terminal_only() -> Result<(), Failed> {
    let b = built()?;
    let dir = b.dir.to_string_lossy().into_owned();
    let cmd = format!("'{}' inspect '{dir}' >/dev/null", ours().display());
    let r = run(
        std::path::Path::new("script"),
        &["-qec", &cmd, "/dev/null"],
        &b.dir,
    )
    .ok()?;
    let tty = String::from_utf8_lossy(&r.stdout);
    // Every line counts the same files; the last has them all done.
    let files = tty
        .split(" of ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .unwrap_or("?");
    let last = format!("scanned {files} of {files} files");
    if !tty.starts_with("\r\x1b[Kscanned ") || !tty.contains(&last) || !tty.ends_with("\r\x1b[K") {
        return Err(format!("terminal output: {tty:?}, want {last:?}").into());
    }
    let r = run(&ours(), &["inspect", &dir], &b.dir).ok()?;
    same("standard error in a pipe", r.stderr.as_str(), "")?;
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
        vec![
        trial!(ci_list_words_hip_fatbin_and_arch_order, TOOLS),
        trial!(ci_completions_and_manpages, TOOLS),
        trial!(ci_list_columns_fit_long_triples, TOOLS),
        trial!(ci_list_misaligned_offload_binary, TOOLS),
        trial!(ci_progress_on_a_terminal_only, &[TOOLS, &["script"]].concat()),
    ]
}

//! What a new user meets in the first hour (issue #75): every command
//! gives a verdict on every input, an empty or code-free directory
//! included; PTX files (made here by LLVM's `llc`) are device code to
//! every command's walk, prune's included; `prune -o` warns of a wheel
//! name pip refuses (pip says which it refuses); a slim `.deb` says what
//! it frees in words that keep their meaning, and its `Installed-Size`
//! stays true (against `dpkg-deb`'s unpacked trees).

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use crate::real_libs::{DEB, downloads};
use crate::util::{llvm, ours, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(every_scanner_gives_a_verdict_on_each_directory, &[]),
        trial!(ptx_files_are_device_code_to_prune, &["llc"]),
        trial!(every_scanner_s_help_lists_the_formats_read, &[]),
        trial!(check_on_cubins_one_per_gpu_hints_at_any, &["llc", PTXAS]),
        trial!(prune_warns_of_the_wheel_names_pip_refuses, &["/usr/bin/python3"]),
        trial!(
            a_slim_deb_says_what_it_frees_and_keeps_installed_size_true,
            &["bash", "/usr/bin/python3", "dpkg-deb"],
        ),
    ]
}

/// `size`, `inspect` and `check` each say something of an empty
/// directory and of one whose files hold no device code (before, `size`
/// and `inspect` printed nothing at all, and `check` nothing for the empty
/// one), exit 0; a directory with device code is not said to hold none.
fn every_scanner_gives_a_verdict_on_each_directory() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    for sub in ["empty", "one", "two"] {
        std::fs::create_dir(d.join(sub))?;
    }
    std::fs::write(d.join("one/a.txt"), "text\n")?;
    std::fs::write(d.join("two/a"), "text\n")?;
    std::fs::write(d.join("two/b"), "more text\n")?;
    let wants = [
        ("empty", "empty: empty directory: no device code"),
        (
            "one",
            "one: directory of 1 file(s), 5 bytes: none holds device code",
        ),
        (
            "two",
            "two: directory of 2 file(s), 15 bytes: none holds device code",
        ),
    ];
    let commands: [&[&str]; 4] = [
        &["size"],
        &["inspect"],
        &["inspect", "--markdown"],
        &["check", "--forbid", "sm_90"],
    ];
    for command in commands {
        for (sub, want) in wants {
            let mut args = command.to_vec();
            args.push(sub);
            let r = run(&ours(), &args, d).ok()?;
            let out = String::from_utf8_lossy(&r.stdout);
            if !out.lines().any(|l| l.trim_start_matches("ok   ") == want) {
                return Err(format!("{args:?}: no line '{want}' in:\n{out}").into());
            }
        }
        // All three at once: a line each.
        let mut args = command.to_vec();
        args.extend(["empty", "one", "two"]);
        let r = run(&ours(), &args, d).ok()?;
        let out = String::from_utf8_lossy(&r.stdout);
        let n = out.lines().filter(|l| l.contains("device code")).count();
        if n < 3 {
            return Err(format!("{args:?}: {n} verdicts in:\n{out}").into());
        }
    }
    Ok(())
}

/// NVIDIA's PTX assembler, from the PyPI wheels `scripts/cuda-tools.sh`
/// unpacks.
const PTXAS: &str = "/opt/offload-kit/cuda-tools/bin/ptxas";

/// A flashinfer-like layout (a cubin per kernel and GPU, made by `llc`
/// and `ptxas`): `check --require sm_100` fails each sm_90 cubin, as it
/// should, and says that each is one GPU's code alone and that `--any`
/// judges the files together (before, 2 bare failures); `--any` passes.
fn check_on_cubins_one_per_gpu_hints_at_any() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::create_dir(d.join("cubins"))?;
    ptx(d, "sm_90", &d.join("k.ptx"))?;
    for kernel in ["gemm", "attention"] {
        for sm in ["sm_90", "sm_100"] {
            let arch = format!("-arch={sm}");
            let out = format!("cubins/{kernel}.{sm}.cubin");
            run(Path::new(PTXAS), &[arch.as_str(), "k.ptx", "-o", &out], d).ok()?;
        }
    }
    let r = run(&ours(), &["check", "--require", "sm_100", "cubins"], d);
    same("check --require sm_100: exit code", r.code, 1)?;
    let out = String::from_utf8_lossy(&r.stdout);
    let hint = out.lines().find(|l| l.starts_with("hint: 2 of the files"));
    if !hint.is_some_and(|h| h.contains("--any")) {
        return Err(format!("no hint at --any:\n{out}").into());
    }
    let r = run(&ours(), &["check", "--any", "--require", "sm_100", "cubins"], d);
    same("check --any --require sm_100: exit code", r.code, 0)?;
    if String::from_utf8_lossy(&r.stdout).contains("hint:") {
        return Err("a hint with --any".into());
    }
    Ok(())
}

/// Each scanner's `--help` names every package format it reads (before,
/// `size --help` left out cpio, conda's bzip2, LZMA, OCI layouts and
/// docker archives).
fn every_scanner_s_help_lists_the_formats_read() -> Result<(), Failed> {
    let dir = tempdir();
    for command in ["size", "inspect", "check", "extract", "prune"] {
        let r = run(&ours(), &[command, "--help"], dir.path()).ok()?;
        let text = String::from_utf8_lossy(&r.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
        for format in [
            "zip archives",
            "Debian .deb",
            "cpio archives",
            "gzip, xz, zstd, bzip2, LZMA",
            "single compressed files",
            "OCI image layout",
            "docker save archives",
            "PTX",
        ] {
            if !text.contains(format) {
                return Err(format!("{command} --help: no '{format}'").into());
            }
        }
    }
    Ok(())
}

/// A kernel for `llc` to compile to PTX.
const KERNEL: &str = r#"target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @scale(ptr addrspace(1) %p, float %s) {
  %v = load float, ptr addrspace(1) %p
  %r = fmul float %v, %s
  store float %r, ptr addrspace(1) %p
  ret void
}
"#;

/// PTX made by `llc` for `sm`, written to `out`.
fn ptx(dir: &Path, sm: &str, out: &Path) -> Result<(), Failed> {
    let ll = dir.join("k.ll");
    std::fs::write(&ll, KERNEL)?;
    let cpu = format!("-mcpu={sm}");
    let o = format!("-o={}", out.display());
    run(
        &llvm("llc"),
        &["-O2", "-mtriple=nvptx64-nvidia-cuda", cpu.as_str(), o.as_str(), "k.ll"],
        dir,
    )
    .ok()?;
    Ok(())
}

/// A directory of PTX files walked by prune: each is device code (before,
/// both were counted "without device code" and left alone whatever the
/// rules), kept for a GPU that compiles it, removed whole for an AMD GPU,
/// as a cubin would be.
fn ptx_files_are_device_code_to_prune() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let tree = d.join("tree");
    std::fs::create_dir(&tree)?;
    ptx(d, "sm_80", &tree.join("k.sm_80.ptx"))?;
    ptx(d, "sm_90", &tree.join("k.sm_90.ptx"))?;
    let r = run(&ours(), &["prune", "--dry-run", "--keep", "sm_90", "tree"], d).ok()?;
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains("2 file(s) found in the directories, 0 without device code") {
        return Err(format!("--keep sm_90: PTX counted without device code:\n{out}").into());
    }
    if !out.contains("tree/k.sm_80.ptx: nothing to remove") {
        return Err(format!("--keep sm_90: sm_80 PTX not judged:\n{out}").into());
    }
    let r = run(&ours(), &["prune", "--in-place", "--keep", "gfx90a", "tree"], d).ok()?;
    let out = String::from_utf8_lossy(&r.stdout);
    for f in ["k.sm_80.ptx", "k.sm_90.ptx"] {
        if tree.join(f).exists() {
            return Err(format!("--keep gfx90a: {f} left:\n{out}").into());
        }
    }
    Ok(())
}

/// Makes `dir/demo-1.0-py3-none-any.whl`, a wheel pip installs.
const MAKE_WHEEL: &str = r#"
import base64, hashlib, zipfile
def row(name, b):
    h = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
    return f"{name},sha256={h},{len(b)}\n"
files = {
    "demo/__init__.py": b"",
    "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
    "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = "".join(row(n, b) for n, b in files.items()) + "demo-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile("demo-1.0-py3-none-any.whl", "w") as z:
    for n, b in files.items():
        z.writestr(n, b)
    z.writestr("demo-1.0.dist-info/RECORD", record)
"#;

/// `prune -o NAME` of a wheel warns exactly when pip refuses to install
/// the file written under NAME (before, it never warned).
fn prune_warns_of_the_wheel_names_pip_refuses() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let python = Path::new("/usr/bin/python3");
    run(python, &["-c", MAKE_WHEEL], d).ok()?;
    let names = [
        ("slim100.whl", true),
        ("demo-1.0-py3.whl", true),
        ("demo-1.0-1slim-py3-none-any.whl", false),
        ("Demo-1.0-py3-none-any.whl", false),
        ("other-1.0-py3-none-any.whl", true),
    ];
    for (i, (name, refused)) in names.into_iter().enumerate() {
        let out = format!("o{i}/{name}");
        std::fs::create_dir(d.join(format!("o{i}")))?;
        let r = run(
            &ours(),
            &["prune", "--keep", "sm_90", "-o", &out, "demo-1.0-py3-none-any.whl"],
            d,
        )
        .ok()?;
        let warned = r.stderr.contains("warning:") && r.stderr.contains(name);
        let site = format!("site{i}");
        let pip = [
            "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", &site, &out,
        ];
        let pip = run(python, &pip, d);
        same(&format!("{name}: pip refuses it"), pip.code != 0, refused)?;
        same(&format!("{name}: prune warns"), warned, refused)?;
    }
    Ok(())
}

/// A figure's number in `line`: the digits before `unit`.
fn number_before(line: &str, unit: &str) -> Option<u64> {
    let head = &line[..line.find(unit)?];
    head.trim_end().rsplit(' ').next()?.parse().ok()
}

/// Debian's librocrand1 pruned to gfx90a: the dry run and the written run
/// give one figure for what an install no longer takes, the written run
/// the package's own loss (its file sizes'), and the slim package's
/// `Installed-Size` is the old one less what `dpkg-gencontrol`'s count
/// (computed here over both unpacked trees) says went. Before, the dry
/// run counted installed bytes and the written run the package's, and
/// `Installed-Size` stayed.
fn a_slim_deb_says_what_it_frees_and_keeps_installed_size_true() -> Result<(), Failed> {
    let deb = downloads()?.join(DEB);
    let dir = tempdir();
    let d = dir.path();
    let deb = deb.to_string_lossy().into_owned();
    let dry = run(&ours(), &["prune", "--dry-run", "--keep", "gfx90a", &deb], d).ok()?;
    let dry = String::from_utf8_lossy(&dry.stdout).into_owned();
    let real = run(&ours(), &["prune", "-d", "out", "--keep", "gfx90a", &deb], d).ok()?;
    let real = String::from_utf8_lossy(&real.stdout).into_owned();
    let first = |s: &str| s.lines().next().unwrap_or_default().to_string();
    let (dry, real) = (first(&dry), first(&real));
    let would = number_before(&dry, "bytes installed").ok_or(format!("dry run: {dry}"))?;
    let freed = number_before(&real, "bytes installed").ok_or(format!("run: {real}"))?;
    same("bytes installed, dry run against written", would, freed)?;
    if !dry.contains("known once written") {
        return Err(format!("dry run does not say the package's size is unknown: {dry}").into());
    }
    let out = d.join("out").join(DEB);
    let lost = std::fs::metadata(&deb)?.len() - std::fs::metadata(&out)?.len();
    let said = number_before(&real, "bytes smaller").ok_or(format!("run: {real}"))?;
    same("the package's own loss", said, lost)?;
    let size = |p: &str| -> Result<u64, Failed> {
        let r = run(Path::new("dpkg-deb"), &["-f", p, "Installed-Size"], d).ok()?;
        let text = String::from_utf8_lossy(&r.stdout);
        text.trim()
            .parse()
            .map_err(|e| format!("{p}: Installed-Size: {e}").into())
    };
    let out = out.to_string_lossy().into_owned();
    let (old, new) = (size(&deb)?, size(&out)?);
    run(Path::new("dpkg-deb"), &["-x", &deb, "old"], d).ok()?;
    run(Path::new("dpkg-deb"), &["-x", &out, "new"], d).ok()?;
    let r = run(Path::new("/usr/bin/python3"), &["-c", GENCONTROL_COUNT], d).ok()?;
    let went: u64 = String::from_utf8_lossy(&r.stdout)
        .trim()
        .parse()
        .map_err(|e| format!("count: {e}"))?;
    if went == 0 {
        return Err("nothing went: the trial proves nothing".into());
    }
    same("Installed-Size lost", old - new, went)
}

/// The KiB `dpkg-gencontrol` counts for the tree `old` less those for
/// `new`: each regular file its size rounded up to a KiB (hard links
/// once), each other entry one.
const GENCONTROL_COUNT: &str = r#"
import os, stat
def count(root):
    total, seen = 0, set()
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            st = os.lstat(os.path.join(top, name))
            if not stat.S_ISREG(st.st_mode):
                total += 1
            elif st.st_nlink < 2 or st.st_ino not in seen:
                seen.add(st.st_ino)
                total += (st.st_size + 1023) // 1024
    return total
print(count("old") - count("new"))
"#;

//! The `clang-linker-wrapper` drop-in against LLVM 22's where input
//! selection is not the question: SYCL links (the wrapper object
//! registering the `clang-sycl-linker` output, byte for byte, from a real
//! SYCL device link and from made-up device-link outputs), the checking of
//! `-mllvm` values, and failing device links (every one reported).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use libtest_mimic::{Failed, Trial};

use crate::util::{LLVM_BIN, files, llvm, ours_as, same, same_bytes, tempdir};

const TOOLS: &[&str] = &[
    "clang",
    "clang-linker-wrapper",
    "clang-sycl-linker",
    "llvm-offload-binary",
    "llvm-as",
    "opt",
];

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(sycl_real_link, TOOLS),
        trial!(sycl_images, TOOLS),
        trial!(mllvm_checked, TOOLS),
        trial!(opt_only_options, TOOLS),
        trial!(every_failing_link, TOOLS),
    ]
}

/// What a run did: exit code and standard error.
struct Ran {
    code: i32,
    stderr: String,
}

/// Runs `prog` in `cwd` with `dir` first on `PATH`.
fn run(prog: &Path, args: &[String], cwd: &Path, dir: &str) -> Result<Ran, Failed> {
    let path = format!("{dir}:{}", std::env::var("PATH").unwrap_or_default());
    let out = Command::new(prog)
        .args(args)
        .env("PATH", path)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", prog.display()))?;
    Ok(Ran {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Runs an LLVM 22 tool that must succeed.
fn tool(name: &str, args: &[&str], cwd: &Path) -> Result<(), Failed> {
    let args: Vec<String> = args.iter().map(ToString::to_string).collect();
    let r = run(&llvm(name), &args, cwd, LLVM_BIN)?;
    if r.code != 0 {
        return Err(format!("{name} {args:?} failed: {}", r.stderr).into());
    }
    Ok(())
}

/// SPIR-V device code with two kernels and a helper, as LLVM IR.
const KERNELS: &str = "\
target datalayout = \"e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64-G1\"
target triple = \"spirv64-unknown-unknown\"
define spir_kernel void @kern_a(ptr addrspace(1) %p) {
  store i32 1, ptr addrspace(1) %p
  ret void
}
define spir_kernel void @kern_bb(ptr addrspace(1) %p) {
  store i32 2, ptr addrspace(1) %p
  ret void
}
define spir_func void @helper() {
  ret void
}
";

/// A host object carrying SYCL device code (bitcode of [`KERNELS`]), in
/// `d`.
fn sycl_host(d: &Path) -> Result<PathBuf, Failed> {
    std::fs::write(d.join("k.ll"), KERNELS)?;
    std::fs::write(d.join("host.c"), "int main(void) { return 0; }\n")?;
    tool("llvm-as", &["k.ll", "-o", "k.bc"], d)?;
    tool(
        "llvm-offload-binary",
        &[
            "-o",
            "k.fat",
            "--image=file=k.bc,kind=sycl,triple=spirv64-unknown-unknown,arch=generic",
        ],
        d,
    )?;
    tool(
        "clang",
        &[
            "-c",
            "host.c",
            "-Xclang",
            "-fembed-offload-object=k.fat",
            "-o",
            "host.o",
        ],
        d,
    )?;
    Ok(d.join("host.o"))
}

/// The arguments of a SYCL link of `host` that keeps its files.
fn sycl_link_args(host: &Path) -> Vec<String> {
    sycl_link_args_for(host, "x86_64-unknown-linux-gnu")
}

/// [`sycl_link_args`] for the host CPU of `triple`.
fn sycl_link_args_for(host: &Path, triple: &str) -> Vec<String> {
    [
        &format!("--host-triple={triple}"),
        "--linker-path=/bin/true",
        "--save-temps",
        &host.to_string_lossy(),
        "-o",
        "a.out",
    ]
    .iter()
    .map(ToString::to_string)
    .collect()
}

/// A real SYCL link (clang running `clang-sycl-linker`) through both
/// wrappers: the same files, the SYCL wrapper object included, except the
/// wrapper module's bitcode, which we never make.
fn sycl_real_link() -> Result<(), Failed> {
    let dir = tempdir();
    let host = sycl_host(dir.path())?;
    let mut kept = Vec::new();
    for (who, prog) in [
        ("ours", ours_as("clang-linker-wrapper")),
        ("llvm", llvm("clang-linker-wrapper")),
    ] {
        let d = dir.path().join(who);
        std::fs::create_dir(&d)?;
        let r = run(&prog, &sycl_link_args(&host), &d, LLVM_BIN)?;
        if r.code != 0 {
            return Err(format!("{who}: exit {}: {}", r.code, r.stderr).into());
        }
        let mut f = files(&d);
        f.remove("a.out.sycl.image.wrapper.bc");
        kept.push(f);
    }
    let object = kept[0]
        .get("a.out.sycl.image.wrapper.o")
        .ok_or("ours kept no SYCL wrapper object")?;
    for want in [&b"__sycl_register_lib"[..], b".offloading.entry.kern_bb"] {
        if !object.windows(want.len()).any(|w| w == want) {
            return Err(
                format!("the wrapper object lacks {}", String::from_utf8_lossy(want)).into(),
            );
        }
    }
    same(
        "kept files",
        kept[0].keys().collect::<Vec<_>>(),
        kept[1].keys().collect(),
    )?;
    for (name, bytes) in &kept[0] {
        same_bytes(name, bytes, &kept[1][name])?;
    }
    Ok(())
}

/// Device-link outputs LLVM's wrapper registers as they are: several
/// binaries, no symbols and many, the same name in two images (LLVM's
/// unique names), short and long triples, an image of another kind, no
/// triple; for each host CPU written (x86-64, AArch64, IBM Z). A stand-in
/// `clang` beside a copy of LLVM's wrapper, and first on `PATH` for ours,
/// writes the output; the wrapper objects must be the same bytes.
fn sycl_images() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let host = sycl_host(d)?;
    let bin = sycl_stand_ins(d)?;
    sycl_binaries(d)?;
    let cases: &[(&str, &[&str])] = &[
        ("one", &["none"]),
        ("symbols", &["lines"]),
        ("all", &["none", "lines", "again", "bare"]),
    ];
    let hosts = [
        "x86_64-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "s390x-unknown-linux-gnu",
    ];
    for ((case, parts), triple) in cases.iter().flat_map(|c| hosts.iter().map(move |h| (c, h))) {
        same_sycl_object(d, &bin, &host, (case, parts), triple)?;
    }
    Ok(())
}

/// The directory `d/bin` of the stand-ins: a copy of LLVM's wrapper, and
/// a `clang` that writes `$SYCL_IMAGE` as the device link's output.
fn sycl_stand_ins(d: &Path) -> Result<PathBuf, Failed> {
    let bin = d.join("bin");
    std::fs::create_dir(&bin)?;
    std::fs::copy(
        llvm("clang-linker-wrapper"),
        bin.join("clang-linker-wrapper"),
    )?;
    let fake = "#!/bin/sh\nout=; prev=\nfor a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n\
                cp \"$SYCL_IMAGE\" \"$out\"\n";
    std::fs::write(bin.join("clang"), fake)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("clang"), std::fs::Permissions::from_mode(0o755))?;
    Ok(bin)
}

/// The device-link outputs' parts in `d`: one OffloadBinary each
/// (`<name>.ob`).
fn sycl_binaries(d: &Path) -> Result<(), Failed> {
    std::fs::write(d.join("x1"), [b'A'; 57])?;
    std::fs::write(d.join("x2"), [b'B'; 71])?;
    std::fs::write(d.join("x3"), b"0123456789abcdefXYZ")?;
    std::fs::write(d.join("x4"), b"short")?;
    let binaries: &[(&str, &str)] = &[
        ("none", "file=x1,kind=sycl,triple=spirv64-unknown-unknown"),
        (
            "lines",
            "file=x4,kind=sycl,triple=spir,symbols=aa\nbb\n\ncc",
        ),
        (
            "again",
            "file=x3,kind=openmp,triple=spirv64-intel-unknown-unknown-extra,symbols=aa",
        ),
        ("bare", "file=x2,kind=sycl"),
    ];
    for (name, spec) in binaries {
        let image = format!("--image={spec}");
        tool(
            "llvm-offload-binary",
            &["-o", &format!("{name}.ob"), &image],
            d,
        )?;
    }
    Ok(())
}

/// One case (its name and the binaries its device-link output holds) for
/// the host `triple`: both wrappers write the same SYCL wrapper object, and
/// `--emit-fatbin-only` writes the output as it is.
fn same_sycl_object(
    d: &Path,
    bin: &Path,
    host: &Path,
    (case, parts): (&str, &[&str]),
    triple: &str,
) -> Result<(), Failed> {
    let mut out = Vec::new();
    for p in parts {
        out.extend(std::fs::read(d.join(format!("{p}.ob")))?);
    }
    let image = d.join(format!("{case}.img"));
    std::fs::write(&image, out)?;
    let mut objects = Vec::new();
    for (who, prog) in [
        ("ours", ours_as("clang-linker-wrapper")),
        ("llvm", bin.join("clang-linker-wrapper")),
    ] {
        let w = d.join(format!("{case}-{triple}-{who}"));
        std::fs::create_dir(&w)?;
        let out = run_sycl_wrapper(&prog, &sycl_link_args_for(host, triple), bin, &image, &w)?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(format!("{case}, {who}: {err}").into());
        }
        objects.push(std::fs::read(w.join("a.out.sycl.image.wrapper.o"))?);
        // --emit-fatbin-only writes the device link's output as it is.
        let mut args = sycl_link_args_for(host, triple);
        args.retain(|a| a != "--save-temps");
        args.push("--emit-fatbin-only".into());
        let out = run_sycl_wrapper(&prog, &args, bin, &image, &w)?;
        let written = std::fs::read(w.join("a.out")).unwrap_or_default();
        if !out.status.success() || written != std::fs::read(&image)? {
            return Err(format!("{case}, {who}: --emit-fatbin-only wrote another file").into());
        }
    }
    same_bytes(
        &format!("{case}: the SYCL wrapper object"),
        &objects[0],
        &objects[1],
    )?;
    Ok(())
}

/// Runs the wrapper `prog` in `w` with `args`, the stand-ins of `bin`
/// first on `PATH` and `$SYCL_IMAGE` naming `image`.
fn run_sycl_wrapper(
    prog: &Path,
    args: &[String],
    bin: &Path,
    image: &Path,
    w: &Path,
) -> Result<std::process::Output, Failed> {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Ok(Command::new(prog)
        .args(args)
        .env("PATH", path)
        .env("SYCL_IMAGE", image)
        .current_dir(w)
        .stdin(Stdio::null())
        .output()?)
}

/// The wrapper's own lines of standard error, with its path as `W`: those
/// it prints under its path (`W: error: …`) or its name (LLVM's
/// command-line parser: `clang-linker-wrapper: …`), and LLVM's further
/// `'clang' failed` lines; not our notes, nor the lines of the programs it
/// ran (which, from links run at once, may be interleaved).
fn wrapper_lines(text: &str, prog: &Path) -> Vec<String> {
    let me = prog.to_string_lossy();
    text.lines()
        .map(|l| l.replace(&*me, "W"))
        .filter(|l| !l.contains(": note: "))
        .filter(|l| {
            l.starts_with("W: ") || l.starts_with("clang-linker-wrapper: ") || l == "'clang' failed"
        })
        .collect()
}

/// Runs both wrappers on `args` in `cwd` (LLVM's tools first on `PATH`):
/// (exit code, the lines [`wrapper_lines`] keeps) of ours, then LLVM's.
fn both(args: &[String], cwd: &Path) -> Result<[(i32, Vec<String>); 2], Failed> {
    let mut out = Vec::new();
    for prog in [
        ours_as("clang-linker-wrapper"),
        llvm("clang-linker-wrapper"),
    ] {
        let r = run(&prog, args, cwd, LLVM_BIN)?;
        out.push((r.code, wrapper_lines(&r.stderr, &prog)));
    }
    let [a, b]: [(i32, Vec<String>); 2] = out.try_into().map_err(|_| "two runs")?;
    Ok([a, b])
}

/// A raw OffloadBinary of a junk image for `arch` of AMDGPU, in `d`.
fn junk_binary(d: &Path, name: &str, arch: &str) -> Result<String, Failed> {
    std::fs::write(d.join("junk.img"), b"x")?;
    let image = format!("--image=file=junk.img,kind=openmp,triple=amdgcn-amd-amdhsa,arch={arch}");
    let file = format!("{name}.ob");
    tool("llvm-offload-binary", &["-o", &file, &image], d)?;
    Ok(file)
}

/// `-mllvm` and `--offload-opt=` values: LLVM's wrapper refuses an option
/// it does not know, or a bad value, before anything runs; ours the same,
/// with the same first line and exit code (the suggestion that may follow
/// can differ: ours is `opt`'s).
fn mllvm_checked() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let input = junk_binary(d, "plain", "gfx90a")?;
    let cases: &[&[&str]] = &[
        &["-mllvm", "-bogus-opt"],
        &["-mllvm", "-inline-threshol=5"],
        &["-mllvm", "-inline-threshold=abc"],
        &["-mllvm", "-S"],
        &["-mllvm", "-O2"],
        &["--offload-opt=-bogus-opt"],
        &["-mllvm", "-inline-threshold=5", "--offload-opt=-passes=foo"],
        &["-mllvm", "-amdgpu-dpp-combine=false"],
        &[
            "-mllvm",
            "-x",
            "-mllvm",
            "-inline-threshold=5",
            "-mllvm",
            "-y",
        ],
    ];
    for case in cases {
        let mut args: Vec<String> = [
            "--host-triple=x86_64-unknown-linux-gnu",
            "--dry-run",
            "--linker-path=/usr/bin/ld",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        args.extend(case.iter().map(ToString::to_string));
        args.extend([input.clone(), "-o".into(), "a.out".into()]);
        let [(code, ours), (llvm_code, theirs)] = both(&args, d)?;
        same(&format!("{case:?}: exit code"), code, llvm_code)?;
        if llvm_code != 0 && theirs.is_empty() {
            return Err(format!("{case:?}: LLVM failed without a line").into());
        }
        let unknown = |lines: &[String]| -> Vec<String> {
            lines
                .iter()
                .filter(|l| !l.contains("Did you mean"))
                .cloned()
                .collect()
        };
        same(
            &format!("{case:?}: lines"),
            unknown(&ours),
            unknown(&theirs),
        )?;
    }
    Ok(())
}

/// The option names a `--help-list-hidden` listing gives.
fn listed(prog: &Path, args: &[&str]) -> Result<std::collections::BTreeSet<String>, Failed> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Ok(text
        .lines()
        .filter_map(|l| l.strip_prefix("  -"))
        .map(|l| l.trim_start_matches('-'))
        .map(|l| {
            l.split(|c: char| !(c.is_ascii_alphanumeric() || "_.-".contains(c)))
                .next()
                .unwrap_or("")
                .to_string()
        })
        .filter(|n| !n.is_empty())
        .collect())
}

/// The options LLVM 22's `opt` lists and its wrapper does not are
/// refused by ours, as by LLVM's, though `opt` (which checks ours) takes
/// them: the same unknown options reported.
fn opt_only_options() -> Result<(), Failed> {
    let opt = listed(&llvm("opt"), &["--help-list-hidden"])?;
    let wrapper = listed(
        &llvm("clang-linker-wrapper"),
        &["-mllvm", "--help-list-hidden"],
    )?;
    let only: Vec<&String> = opt.difference(&wrapper).collect();
    if only.len() < 20 || wrapper.len() < 1000 {
        return Err(format!(
            "unexpected listings: {} of opt's own, {} of the wrapper's",
            only.len(),
            wrapper.len()
        )
        .into());
    }
    let dir = tempdir();
    let d = dir.path();
    let input = junk_binary(d, "plain", "gfx90a")?;
    let mut args: Vec<String> = vec![
        "--host-triple=x86_64-unknown-linux-gnu".into(),
        "--dry-run".into(),
        "--linker-path=/usr/bin/ld".into(),
        "-mllvm".into(),
        "-inline-threshold=5".into(),
    ];
    for name in &only {
        args.extend(["-mllvm".to_string(), format!("-{name}")]);
    }
    args.extend([input, "-o".into(), "a.out".into()]);
    let [(code, ours), (llvm_code, theirs)] = both(&args, d)?;
    same("exit code", code, llvm_code)?;
    let unknown = |lines: &[String]| -> Vec<String> {
        let mut v: Vec<String> = lines
            .iter()
            .filter(|l| l.contains("Unknown command line argument"))
            .cloned()
            .collect();
        v.sort();
        v
    };
    if unknown(&theirs).len() != only.len() {
        return Err(format!(
            "LLVM refused {} of {} options",
            unknown(&theirs).len(),
            only.len()
        )
        .into());
    }
    same("refused options", unknown(&ours), unknown(&theirs))
}

/// Two device links that both fail: LLVM 22 runs every link and reports
/// each failure (`'clang' failed` once per link, the first after its
/// banner), one at a time or with `--wrapper-jobs`; ours the same.
fn every_failing_link() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let a = junk_binary(d, "plain", "gfx90a")?;
    let b = junk_binary(d, "g908", "gfx908")?;
    for jobs in [None, Some("--wrapper-jobs=2")] {
        let mut args: Vec<String> = vec![
            "--host-triple=x86_64-unknown-linux-gnu".into(),
            "--linker-path=/bin/true".into(),
        ];
        args.extend(jobs.map(String::from));
        args.extend([a.clone(), b.clone(), "-o".into(), "a.out".into()]);
        let [(code, ours), (llvm_code, theirs)] = both(&args, d)?;
        same(&format!("{jobs:?}: exit code"), code, llvm_code)?;
        same(&format!("{jobs:?}: lines"), &ours, &theirs)?;
        same(
            &format!("{jobs:?}: failures reported"),
            ours.iter()
                .filter(|l| l.ends_with("'clang' failed"))
                .count(),
            2,
        )?;
        if d.join("a.out").exists() {
            return Err("a failed link left its output".into());
        }
    }
    Ok(())
}

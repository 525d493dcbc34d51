//! Object bundles (`-type=o` with an object host) against LLVM 22, whose
//! bundler runs llvm-objcopy: the same bytes, bundling and extracting the
//! host object, for host objects made at test time by clang-22 and gcc (C
//! and C++ with COMDAT groups, `-O0`/`-O2`, `-g`, `-ffunction-sections`,
//! `-fPIC`, with and without `.llvm_addrsig` and `.comment`, i386 and
//! big-endian powerpc64; also linked shared objects and executables, with
//! program headers), each tool listing and unbundling the other's
//! output the same way, the stripped host object linking into a program
//! that runs, and clean errors for hostile objects.
//!
//! The helpers here (running both tools on copies of one directory and
//! comparing everything they leave behind byte for byte, compiling host
//! objects) are shared with the archive tests.

use std::path::{Path, PathBuf};

use libtest_mimic::{Failed, Trial};

use crate::util::{clean_failure, llvm, ours_as, run, same, same_bytes, snapshot, tempdir, trial};

pub(super) const TOOL: &str = "clang-offload-bundler";

/// Tools every test here needs.
pub(super) const TOOLS: &[&str] = &[TOOL, "clang", "llvm-readelf", "llvm-ar"];

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

const MAIN_C: &str = r#"#include <stdio.h>
static int counter = 3;
int shared_value = 42;
int add(int a, int b) { return a + b + counter; }
int main(void) { printf("sum=%d\n", add(1, shared_value)); return 0; }
"#;

const KERNEL_C: &str = r#"static int counter = 3;
int shared_value = 42;
int add(int a, int b) { return a + b + counter; }
"#;

const GROUPS_CPP: &str = r#"#include <stdio.h>
inline int twice(int x) { return 2 * x; }
template <typename T> T thrice(T x) { return 3 * x; }
int use(int y) { return twice(y) + thrice(y); }
int main() { printf("use=%d\n", use(7)); return 0; }
"#;

/// Compiles `src` (saved as `name`) with clang-22 `-c` and `args` into
/// `out`, in `dir`.
pub(super) fn cc(
    dir: &Path,
    name: &str,
    src: &str,
    out: &str,
    args: &[&str],
) -> Result<(), Failed> {
    std::fs::write(dir.join(name), src)?;
    let mut all = vec!["-c", name, "-o", out];
    all.extend_from_slice(args);
    run(&llvm("clang"), &all, dir).ok()?;
    Ok(())
}

/// Host objects and device inputs, made once per test directory:
/// `main.o` (x86_64, runs), `groups.o` (C++, COMDAT groups, debug info,
/// runs), `k32.o` (i386), `kbe.o` (powerpc64, big-endian), `gfx906.o` and
/// `gfx90a.bc` (real AMDGPU code), and raw blobs `d1`..`d3`.
pub(super) fn make_inputs(dir: &Path) -> Result<(), Failed> {
    cc(dir, "main.c", MAIN_C, "main.o", &[])?;
    cc(
        dir,
        "groups.cpp",
        GROUPS_CPP,
        "groups.o",
        &["-x", "c++", "-g", "-ffunction-sections", "-fno-exceptions"],
    )?;
    cc(dir, "k.c", KERNEL_C, "k32.o", &["--target=i386-linux-gnu"])?;
    cc(
        dir,
        "k.c",
        KERNEL_C,
        "kbe.o",
        &["--target=powerpc64-linux-gnu"],
    )?;
    let gpu = ["--target=amdgcn-amd-amdhsa", "-nogpulib"];
    cc(
        dir,
        "k.c",
        KERNEL_C,
        "gfx906.o",
        &[&gpu[..], &["-mcpu=gfx906"]].concat(),
    )?;
    cc(
        dir,
        "k.c",
        KERNEL_C,
        "gfx90a.bc",
        &[&gpu[..], &["-mcpu=gfx90a", "-emit-llvm"]].concat(),
    )?;
    std::fs::write(dir.join("d1"), b"DEVICE-ONE")?;
    std::fs::write(dir.join("d2"), b"DEVICE22")?;
    // Large enough to be copied file to file rather than through memory.
    let big: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    std::fs::write(dir.join("d3"), big)?;
    Ok(())
}

/// A directory of inputs, made once per test process by `make` and shared
/// by every trial that asks for it (trials copy what they use).
pub(super) fn shared_dir(
    cell: &'static std::sync::OnceLock<Result<PathBuf, String>>,
    tag: &str,
    make: fn(&Path) -> Result<(), Failed>,
) -> Result<&'static Path, Failed> {
    let made = cell.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        // Directories left by earlier test processes that have exited.
        for e in std::fs::read_dir(base).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix(&format!("{tag}-"))
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
        let dir = base.join(format!("{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        make(&dir).map_err(|e| e.message().unwrap_or("making inputs failed").to_string())?;
        Ok(dir)
    });
    match made {
        Ok(p) => Ok(p.as_path()),
        Err(e) => Err(e.clone().into()),
    }
}

/// [`make_inputs`], made once.
fn inputs() -> Result<&'static Path, Failed> {
    static CELL: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    shared_dir(&CELL, "bundler-object-inputs", transcript_inputs)
}

// ---------------------------------------------------------------------------
// Comparing files
// ---------------------------------------------------------------------------

/// Fails unless the files `ours` and `theirs` (in `dir`) hold the same
/// bytes: objects and archives included, since the rewrite emulates
/// llvm-objcopy's writer exactly.
pub(super) fn same_file(dir: &Path, ours: &str, theirs: &str) -> Result<(), Failed> {
    same_bytes(
        &format!("{ours} and {theirs}"),
        &std::fs::read(dir.join(ours))?,
        &std::fs::read(dir.join(theirs))?,
    )
}

// ---------------------------------------------------------------------------
// Running both tools
// ---------------------------------------------------------------------------

/// What one tool did in its own copy of the inputs.
#[derive(Debug)]
pub(super) struct Outcome {
    pub code: i32,
    pub stderr: String,
    pub stdout: Vec<u8>,
    /// The directory it ran in.
    pub dir: PathBuf,
}

/// Copies every file of `inputs` into `to`.
pub(super) fn copy_dir(inputs: &Path, to: &Path) -> Result<(), Failed> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(inputs)?.flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name()))?;
        }
    }
    Ok(())
}

/// LLVM's stderr and ours, comparable: the program path becomes `TOOL`, and
/// (de)compression speeds, which depend on timing, are masked.
fn normalize_stderr(s: &str, prog: &Path) -> String {
    s.replace(&prog.display().to_string(), "TOOL")
        .replace(TOOL, "TOOL")
        .lines()
        .map(|l| match l.split_once("speed: ") {
            Some((head, _)) if l.ends_with("MB/s") => format!("{head}speed: * MB/s"),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs LLVM's bundler and ours with `args`, each in a copy of `inputs`
/// under `work`.
pub(super) fn run_both(
    inputs: &Path,
    work: &Path,
    tag: &str,
    args: &[String],
) -> Result<(Outcome, Outcome), Failed> {
    let mut out = Vec::new();
    for (who, prog) in [("llvm", llvm(TOOL)), ("ours", ours_as(TOOL))] {
        let dir = work.join(format!("{tag}-{who}"));
        copy_dir(inputs, &dir)?;
        let r = run(&prog, args, &dir);
        out.push(Outcome {
            code: r.code,
            stderr: normalize_stderr(&r.stderr, &prog),
            stdout: r.stdout,
            dir,
        });
    }
    let ours = out.pop().ok_or("no run")?;
    let theirs = out.pop().ok_or("no run")?;
    Ok((theirs, ours))
}

/// Fails unless both tools exited alike, printed alike, and left the same
/// files with the same bytes.
pub(super) fn same_outcome(what: &str, theirs: &Outcome, ours: &Outcome) -> Result<(), Failed> {
    same(&format!("{what}: exit code"), ours.code, theirs.code)?;
    same(&format!("{what}: stderr"), &ours.stderr, &theirs.stderr)?;
    same(
        &format!("{what}: stdout"),
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&theirs.stdout),
    )?;
    let (a, b) = (snapshot(&ours.dir), snapshot(&theirs.dir));
    let names = |s: &[(String, Vec<u8>)]| s.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    same(&format!("{what}: files"), names(&a), names(&b))?;
    for ((name, da), (_, db)) in a.iter().zip(&b) {
        same_bytes(&format!("{what}: {name}"), da, db)?;
    }
    Ok(())
}

pub(super) fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

// ---------------------------------------------------------------------------
// Interop cases
// ---------------------------------------------------------------------------

struct Case {
    name: &'static str,
    host: &'static str,
    /// (target, input); the host target's input is `host`.
    targets: &'static [(&'static str, &'static str)],
    /// Whether the stripped host object links into a program that runs.
    runs: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "x86_64_host_hip_openmp",
        host: "main.o",
        targets: &[
            ("host-x86_64-unknown-linux-gnu", ""),
            ("hip-amdgcn-amd-amdhsa--gfx906", "gfx906.o"),
            ("openmp-nvptx64-nvidia-cuda--sm_70", "d1"),
        ],
        runs: true,
    },
    Case {
        name: "x86_64_host_last_features_large",
        host: "main.o",
        targets: &[
            ("openmp-amdgcn-amd-amdhsa--gfx90a:xnack+", "gfx90a.bc"),
            ("hipv4-amdgcn-amd-amdhsa--gfx908:sramecc+:xnack-", "d3"),
            ("openmp-x86_64-pc-linux-gnu-", "d2"),
            ("host-x86_64--linux-gnu", ""),
        ],
        runs: true,
    },
    Case {
        name: "x86_64_host_only",
        host: "main.o",
        targets: &[("host-x86_64-unknown-linux-gnu", "")],
        runs: true,
    },
    Case {
        name: "cxx_groups_debug_info",
        host: "groups.o",
        targets: &[
            ("host-x86_64-unknown-linux-gnu", ""),
            ("hip-amdgcn-amd-amdhsa--gfx906", "gfx906.o"),
            ("hip-amdgcn-amd-amdhsa--gfx90a", "gfx90a.bc"),
        ],
        runs: true,
    },
    Case {
        name: "i386_elf32",
        host: "k32.o",
        targets: &[
            ("openmp-nvptx64-nvidia-cuda--sm_80", "d1"),
            ("host-i386-unknown-linux-gnu", ""),
            ("hip-amdgcn-amd-amdhsa--gfx906", "d3"),
        ],
        runs: false,
    },
    Case {
        name: "powerpc64_big_endian",
        host: "kbe.o",
        targets: &[
            ("host-powerpc64-unknown-linux-gnu", ""),
            ("openmp-amdgcn-amd-amdhsa--gfx942", "d2"),
        ],
        runs: false,
    },
];

fn run_case(c: &Case) -> Result<(), Failed> {
    let work = tempdir();
    let w = work.path();
    let inputs = inputs()?;
    let targets = c.targets.iter().map(|t| t.0).collect::<Vec<_>>().join(",");
    let mut bundle = vec!["-type=o".to_string(), format!("-targets={targets}")];
    for (t, input) in c.targets {
        let i = if t.starts_with("host-") {
            c.host
        } else {
            input
        };
        bundle.push(format!("-input={i}"));
    }
    bundle.push("-output=fat.o".into());
    let (theirs, ours) = run_both(inputs, w, "bundle", &bundle)?;
    same_outcome("bundling", &theirs, &ours)?;
    if ours.code != 0 {
        return Err(format!("bundling failed: {}", ours.stderr).into());
    }
    // Both fat objects side by side, each tool's under its own name.
    let both = w.join("both");
    copy_dir(inputs, &both)?;
    std::fs::copy(ours.dir.join("fat.o"), both.join("ours.o"))?;
    std::fs::copy(theirs.dir.join("fat.o"), both.join("llvm.o"))?;
    same_file(&both, "ours.o", "llvm.o")?;

    // -list: all four combinations print the same.
    let mut lists = Vec::new();
    for prog in [llvm(TOOL), ours_as(TOOL)] {
        for f in ["ours.o", "llvm.o"] {
            let r = run(&prog, &["-type=o", "-list", &format!("-input={f}")], &both).ok()?;
            lists.push(String::from_utf8_lossy(&r.stdout).into_owned());
        }
    }
    for l in &lists[1..] {
        same("-list output", l, &lists[0])?;
    }

    // Unbundle every target, each tool from each fat object.
    let n = c.targets.len();
    let mut runs = Vec::new();
    for (who, prog) in [("llvm", llvm(TOOL)), ("ours", ours_as(TOOL))] {
        for f in ["llvm.o", "ours.o"] {
            let mut a = vec![
                "-type=o".to_string(),
                "-unbundle".into(),
                format!("-targets={targets}"),
                format!("-input={f}"),
            ];
            a.extend((0..n).map(|i| format!("-output={who}-{f}-{i}")));
            let r = run(&prog, &a, &both).ok()?;
            runs.push((format!("{who}-{f}"), r.stderr));
        }
    }
    for r in &runs {
        same("unbundling stderr", &r.1, &runs[0].1)?;
    }
    for (i, (t, input)) in c.targets.iter().enumerate() {
        let reference = format!("{}-{i}", runs[0].0);
        for (tag, _) in &runs[1..] {
            let out = format!("{tag}-{i}");
            if t.starts_with("host-") {
                same_file(&both, &out, &reference)?;
            } else {
                let (a, b) = (
                    std::fs::read(both.join(&out))?,
                    std::fs::read(both.join(input))?,
                );
                if a != b {
                    return Err(format!("{out} is not {input}").into());
                }
            }
        }
        if t.starts_with("host-") {
            // LLVM's extraction of its own bundle is the original object.
            same_file(&both, &reference, c.host)?;
            if c.runs {
                let mut outputs = Vec::new();
                for obj in [
                    format!("ours-ours.o-{i}"),
                    reference.clone(),
                    "ours.o".into(),
                ] {
                    let exe = format!("{obj}.exe");
                    run(&llvm("clang"), &[obj.as_str(), "-o", exe.as_str()], &both).ok()?;
                    let r = run(&both.join(&exe), &[] as &[&str], &both).ok()?;
                    outputs.push(String::from_utf8_lossy(&r.stdout).into_owned());
                }
                if outputs[0].is_empty() {
                    return Err("the linked program printed nothing".into());
                }
                for o in &outputs[1..] {
                    same("program output", o, &outputs[0])?;
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Transcripts
// ---------------------------------------------------------------------------

const HD: &str = "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906";

fn transcripts() -> Vec<(&'static str, Vec<String>)> {
    vec![
        (
            "compress_has_no_effect",
            args(&[
                "-type=o",
                HD,
                "-input=main.o",
                "-input=d1",
                "-output=x.o",
                "-compress",
            ]),
        ),
        (
            "compress_verbose",
            args(&[
                "-type=o",
                HD,
                "-input=main.o",
                "-input=d1",
                "-output=x.o",
                "-compress",
                "-verbose",
            ]),
        ),
        (
            "bundle_align_ignored",
            args(&[
                "-type=o",
                HD,
                "-input=main.o",
                "-input=d1",
                "-output=x.o",
                "-bundle-align=4096",
            ]),
        ),
        (
            "list_plain_object",
            args(&["-type=o", "-list", "-input=main.o"]),
        ),
        (
            "unbundle_plain_object",
            args(&[
                "-type=o",
                "-unbundle",
                HD,
                "-input=main.o",
                "-output=h",
                "-output=d",
            ]),
        ),
        (
            "unbundle_plain_object_allow_missing",
            args(&[
                "-type=o",
                "-unbundle",
                HD,
                "-input=main.o",
                "-output=h",
                "-output=d",
                "-allow-missing-bundles",
            ]),
        ),
        (
            "unbundle_missing_target",
            args(&[
                "-type=o",
                "-unbundle",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx1030",
                "-input=fat.o",
                "-output=a",
                "-output=b",
            ]),
        ),
        (
            "unbundle_device_only_with_features",
            args(&[
                "-type=o",
                "-unbundle",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906:xnack+,hipv4-amdgcn-amd-amdhsa--gfx906:sramecc-",
                "-input=fat.o",
                "-output=a",
                "-output=b",
            ]),
        ),
        (
            "unbundle_device_only_with_features_allow_missing",
            args(&[
                "-type=o",
                "-unbundle",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906:xnack+,hipv4-amdgcn-amd-amdhsa--gfx906:sramecc-",
                "-input=fat.o",
                "-output=a",
                "-output=b",
                "-allow-missing-bundles",
            ]),
        ),
        (
            "unbundle_device_from_compressed_object_bundle",
            args(&[
                "-type=o",
                "-unbundle",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906",
                "-input=fat.ccob",
                "-output=d",
            ]),
        ),
        (
            "unbundle_to_stdout",
            args(&[
                "-type=o",
                "-unbundle",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906",
                "-input=fat.o",
                "-output=-",
            ]),
        ),
        (
            "type_a_is_refused_for_bundling",
            args(&["-type=a", HD, "-input=main.o", "-input=d1", "-output=x.o"]),
        ),
    ]
}

/// The inputs of the transcripts: [`make_inputs`], plus `fat.o` (host and
/// gfx906, bundled by LLVM), `fat.ccob` (a CCOB holding `fat.o`) and
/// `fat.a` (an archive of `fat.o`, `main.o` and a copy of `fat.o`).
fn transcript_inputs(dir: &Path) -> Result<(), Failed> {
    make_inputs(dir)?;
    run(
        &llvm(TOOL),
        &[
            "-type=o",
            HD,
            "-input=main.o",
            "-input=gfx906.o",
            "-output=fat.o",
        ],
        dir,
    )
    .ok()?;
    // A compressed bundle whose payload is an object bundle.
    let fat = std::fs::read(dir.join("fat.o"))?;
    let (ccob, _) = offload_kit::bundle::ccob::compress_to_vec(
        &fat,
        &offload_kit::bundle::ccob::CompressOptions::default(),
    )?;
    std::fs::write(dir.join("fat.ccob"), ccob)?;
    // An archive holding it twice (the second copy under another name) and
    // a plain object.
    std::fs::copy(dir.join("fat.o"), dir.join("fat2.o"))?;
    run(
        &llvm("llvm-ar"),
        &["rc", "fat.a", "fat.o", "main.o", "fat2.o"],
        dir,
    )
    .ok()?;
    Ok(())
}

fn run_transcript(name: &str, a: &[String]) -> Result<(), Failed> {
    let work = tempdir();
    let (theirs, ours) = run_both(inputs()?, work.path(), name, a)?;
    same_outcome(name, &theirs, &ours)?;
    let failing = [
        "unbundle_plain_object",
        "unbundle_missing_target",
        "unbundle_device_only_with_features",
        "type_a_is_refused_for_bundling",
    ];
    same(
        &format!("{name}: success"),
        ours.code == 0,
        !failing.contains(&name),
    )
}

// ---------------------------------------------------------------------------
// Host objects of many shapes, byte for byte
// ---------------------------------------------------------------------------

/// C with what compilers put in most objects: locals, globals, `.bss`,
/// a data relocation, a call into libc (declared, so that cross targets
/// need no headers).
const SHAPE_C: &str = r#"int printf(const char *, ...);
static int counter = 3;
int shared_value = 42;
int zeroed[16];
int add(int a, int b) { return a + b + counter + zeroed[a & 15]; }
int (*pick)(int, int) = add;
int main(void) { printf("sum=%d\n", pick(1, shared_value)); return 0; }
"#;

/// C++ with COMDAT groups (inline and template functions), a local
/// function and exceptions' `.eh_frame`.
const SHAPE_CPP: &str = r#"extern "C" int printf(const char *, ...);
inline int twice(int x) { return 2 * x; }
template <typename T> T thrice(T x) { return 3 * x; }
static int next(int y) { return y + 1; }
int use(int y) { return twice(y) + thrice(y) + next(y); }
int main() { printf("use=%d\n", use(7)); return 0; }
"#;

/// A host object shape: (test name, compiler, C++?, flags).
pub(super) type Shape = (&'static str, &'static str, bool, &'static [&'static str]);

/// Host objects from clang-22 and gcc, in the shapes the bundler meets.
pub(super) const SHAPES: &[Shape] = &[
    ("clang_O0", "clang", false, &["-O0"]),
    ("clang_O2", "clang", false, &["-O2"]),
    ("clang_O2_g", "clang", false, &["-O2", "-g"]),
    (
        "clang_function_sections",
        "clang",
        false,
        &["-O0", "-ffunction-sections"],
    ),
    ("clang_no_addrsig", "clang", false, &["-O2", "-fno-addrsig"]),
    ("clang_no_ident", "clang", false, &["-O2", "-fno-ident"]),
    (
        "clang_crel",
        "clang",
        false,
        &["-O2", "-g", "-Wa,--crel,--allow-experimental-crel"],
    ),
    (
        "clang_i386_g",
        "clang",
        false,
        &["--target=i386-linux-gnu", "-O2", "-g"],
    ),
    (
        "clang_powerpc64_g",
        "clang",
        false,
        &["--target=powerpc64-linux-gnu", "-O2", "-g"],
    ),
    ("clangxx_groups_pic", "clang++", true, &["-O2", "-fPIC"]),
    (
        "clangxx_groups_g_function_sections",
        "clang++",
        true,
        &["-O0", "-g", "-ffunction-sections"],
    ),
    (
        "clangxx_groups_no_addrsig",
        "clang++",
        true,
        &["-O2", "-fPIC", "-fno-addrsig"],
    ),
    ("gcc_O0", "gcc", false, &["-O0"]),
    ("gcc_O2", "gcc", false, &["-O2"]),
    ("gcc_O2_g", "gcc", false, &["-O2", "-g"]),
    (
        "gcc_function_sections",
        "gcc",
        false,
        &["-O0", "-ffunction-sections"],
    ),
    ("gcc_no_ident", "gcc", false, &["-O2", "-fno-ident"]),
    ("gxx_groups_pic", "g++", true, &["-O2", "-fPIC"]),
    (
        "gxx_groups_g_function_sections",
        "g++",
        true,
        &["-O0", "-g", "-ffunction-sections"],
    ),
];

/// Hosts that are linked, with program headers: shared objects and
/// executables (bfd through gcc, lld through clang), one with TLS.
const LINKED_SHAPES: &[Shape] = &[
    (
        "clang_lld_shared",
        "clang",
        false,
        &["-shared", "-fPIC", "-O2", "-fuse-ld=lld"],
    ),
    (
        "clang_lld_executable",
        "clang",
        false,
        &["-O2", "-fuse-ld=lld"],
    ),
    (
        "gcc_shared_g",
        "gcc",
        false,
        &["-shared", "-fPIC", "-O2", "-g"],
    ),
    ("gcc_executable_no_pie", "gcc", false, &["-O0", "-no-pie"]),
    (
        "gxx_shared_groups",
        "g++",
        true,
        &["-shared", "-fPIC", "-O2"],
    ),
];

/// The tools a shape needs besides [`TOOLS`].
pub(super) fn shape_tools(shape: &Shape) -> Vec<&'static str> {
    let mut t = TOOLS.to_vec();
    if !t.contains(&shape.1) {
        t.push(shape.1);
    }
    t
}

/// Compiles `shape` into the object `out` in `dir` (clang from LLVM 22,
/// gcc from PATH).
pub(super) fn compile_shape(dir: &Path, shape: &Shape, out: &str) -> Result<(), Failed> {
    build_shape(dir, shape, out, true)
}

/// Compiles and links `shape` into `out` in `dir`.
fn link_shape(dir: &Path, shape: &Shape, out: &str) -> Result<(), Failed> {
    build_shape(dir, shape, out, false)
}

fn build_shape(dir: &Path, shape: &Shape, out: &str, object: bool) -> Result<(), Failed> {
    let (name, compiler, cxx, flags) = *shape;
    let (src, text) = if cxx {
        (format!("{name}.cpp"), SHAPE_CPP)
    } else {
        (format!("{name}.c"), SHAPE_C)
    };
    std::fs::write(dir.join(&src), text)?;
    let prog = if compiler.starts_with("clang") {
        llvm(compiler)
    } else {
        PathBuf::from(compiler)
    };
    let mut a = vec![src.as_str(), "-o", out];
    if object {
        a.insert(0, "-c");
    }
    a.extend_from_slice(flags);
    run(&prog, &a, dir).ok()?;
    Ok(())
}

/// The targets the shape tests bundle: the host, a real AMDGPU code object
/// and a raw blob.
const SHAPE_TARGETS: &str = "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906,openmp-nvptx64-nvidia-cuda--sm_70";

/// How a shape is built: [`compile_shape`] or [`link_shape`].
type Build = fn(&Path, &Shape, &str) -> Result<(), Failed>;

/// Bundling the shape's host object, and extracting the host object from
/// LLVM's bundle and from ours: LLVM's bytes each time.
fn host_shape(shape: &Shape, build: Build) -> Result<(), Failed> {
    let work = tempdir();
    let w = work.path();
    let src = w.join("in");
    copy_dir(inputs()?, &src)?;
    build(&src, shape, "host.o")?;
    let bundle = args(&[
        "-type=o",
        SHAPE_TARGETS,
        "-input=host.o",
        "-input=gfx906.o",
        "-input=d1",
        "-output=fat.o",
    ]);
    let (theirs, ours) = run_both(&src, w, "bundle", &bundle)?;
    same_outcome("bundling", &theirs, &ours)?;
    if ours.code != 0 {
        return Err(format!("bundling failed: {}", ours.stderr).into());
    }
    for (from, dir) in [("llvm", &theirs.dir), ("ours", &ours.dir)] {
        let unbundle = args(&[
            "-type=o",
            "-unbundle",
            SHAPE_TARGETS,
            "-input=fat.o",
            "-output=host",
            "-output=dev1",
            "-output=dev2",
        ]);
        let (t, o) = run_both(dir, w, &format!("unbundle-{from}"), &unbundle)?;
        same_outcome(&format!("unbundling {from}'s bundle"), &t, &o)?;
        if o.code != 0 {
            return Err(format!("unbundling failed: {}", o.stderr).into());
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// -###: the llvm-objcopy command lines
// ---------------------------------------------------------------------------

/// `-###` command lines: (name, arguments, outputs that must end up empty).
/// The expected stderr, masked, is `linker-tests/transcripts/<name>.stderr`.
const PRINT_COMMANDS: &[(&str, &[&str], &[&str])] = &[
    (
        "bundler_print_commands_bundle",
        &[
            "-###",
            "-type=o",
            "-targets=hip-amdgcn-amd-amdhsa--gfx906,host-x86_64-unknown-linux-gnu,openmp-nvptx64-nvidia-cuda--sm_70",
            "-input=gfx906.o",
            "-input=main.o",
            "-input=d1",
            "-output=x.o",
        ],
        &["x.o"],
    ),
    (
        "bundler_print_commands_unbundle_host",
        &[
            "-###",
            "-type=o",
            "-unbundle",
            HD,
            "-input=fat.o",
            "-output=h",
            "-output=d",
        ],
        &["h"],
    ),
    (
        "bundler_print_commands_unbundle_device",
        &[
            "--###",
            "-type=o",
            "-unbundle",
            "-targets=hip-amdgcn-amd-amdhsa--gfx906",
            "-input=fat.o",
            "-output=d",
        ],
        &[],
    ),
    (
        "bundler_print_commands_archive",
        &[
            "-###",
            "-type=a",
            "-unbundle",
            HD,
            "-input=fat.a",
            "-output=h.a",
            "-output=d.a",
        ],
        &[],
    ),
    (
        "bundler_print_commands_binary_bundle",
        &[
            "-###",
            "-type=bc",
            HD,
            "-input=d1",
            "-input=d2",
            "-output=x.bc",
        ],
        &[],
    ),
];

/// Runs `prog` with `args` in `cwd` with `PATH` and `TMPDIR` set.
fn run_with_env(
    prog: &Path,
    args: &[&str],
    cwd: &Path,
    path: &str,
    tmp: &Path,
) -> crate::util::Run {
    let out = std::process::Command::new(prog)
        .args(args)
        .current_dir(cwd)
        .env("PATH", path)
        .env("TMPDIR", tmp)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", prog.display()));
    crate::util::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `s` with the temporary directory written `$TMPDIR` and the random part
/// of LLVM's temporary file names (`clang-offload-bundler-XXXXXX.tmp`,
/// six hex digits) masked.
fn mask_temp_names(s: &str, tmp: &Path) -> String {
    const STEM: &str = "clang-offload-bundler-";
    let s = s.replace(&tmp.display().to_string(), "$TMPDIR");
    let mut out = String::new();
    let mut rest = s.as_str();
    while let Some(at) = rest.find(STEM) {
        let (head, tail) = rest.split_at(at + STEM.len());
        out.push_str(head);
        let random = tail
            .get(..6)
            .filter(|r| r.bytes().all(|b| b.is_ascii_hexdigit()));
        match random {
            Some(_) if tail[6..].starts_with(".tmp") => {
                out.push_str("XXXXXX");
                rest = &tail[6..];
            }
            _ => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// `-###` with object bundles: LLVM's command lines (temporary names
/// masked), exit code and files, with llvm-objcopy found on `PATH` by both
/// (LLVM's is beside it, in the first `PATH` entry); the expected stderr is
/// also committed, so a change in either shows.
fn print_commands(name: &str, a: &[&str], empty: &[&str]) -> Result<(), Failed> {
    let work = tempdir();
    let w = work.path();
    let path = format!(
        "{}:{}",
        crate::util::LLVM_BIN,
        std::env::var("PATH").unwrap_or_default()
    );
    let mut results = Vec::new();
    for (who, prog) in [("llvm", llvm(TOOL)), ("ours", ours_as(TOOL))] {
        let dir = w.join(who);
        copy_dir(inputs()?, &dir)?;
        let tmp = w.join(format!("{who}-tmp"));
        std::fs::create_dir_all(&tmp)?;
        let r = run_with_env(&prog, a, &dir, &path, &tmp);
        for e in empty {
            let len = std::fs::metadata(dir.join(e))?.len();
            same(&format!("{who}: size of {e}"), len, 0)?;
        }
        same(
            &format!("{who}: temporary files left"),
            snapshot(&tmp).len(),
            0,
        )?;
        let stderr = mask_temp_names(&r.stderr, &tmp);
        results.push((r.code, stderr, r.stdout, snapshot(&dir)));
    }
    let (ours, theirs) = (
        results.pop().ok_or("no run")?,
        results.pop().ok_or("no run")?,
    );
    same("exit code", ours.0, theirs.0)?;
    same("stderr", &ours.1, &theirs.1)?;
    same("stdout", &ours.2, &theirs.2)?;
    same("files", &ours.3, &theirs.3)?;
    let expected = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("linker-tests/transcripts")
        .join(format!("{name}.stderr"));
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&expected, &theirs.1)?;
    }
    same(
        "stderr and the committed transcript",
        theirs.1,
        std::fs::read_to_string(&expected)?,
    )
}

/// Without an llvm-objcopy beside it or on `PATH`, LLVM 22 refuses every
/// call, `-###` included, before any other check; so does offload-kit
/// with `-###` (and writes nothing).
fn print_commands_without_objcopy() -> Result<(), Failed> {
    let work = tempdir();
    let w = work.path();
    // LLVM's bundler alone in a directory, and ours (whose link directory
    // holds no llvm-objcopy).
    let lone = w.join("lone");
    std::fs::create_dir_all(&lone)?;
    std::fs::copy(llvm(TOOL), lone.join(TOOL))?;
    let mut results = Vec::new();
    for (who, prog) in [("llvm", lone.join(TOOL)), ("ours", ours_as(TOOL))] {
        let dir = w.join(who);
        copy_dir(inputs()?, &dir)?;
        let before = snapshot(&dir);
        let r = run_with_env(&prog, PRINT_COMMANDS[0].1, &dir, "/nonexistent", w);
        same(&format!("{who}: files"), snapshot(&dir), before)?;
        let stderr = r.stderr.replace(&prog.display().to_string(), "TOOL");
        results.push((r.code, stderr));
    }
    same("outcome", &results[1], &results[0])?;
    same(
        "stderr",
        results[0].1.as_str(),
        "TOOL: error: unable to find 'llvm-objcopy' in path\n",
    )
}

// ---------------------------------------------------------------------------
// Differences from LLVM and hostile objects
// ---------------------------------------------------------------------------

/// HIP-only targets with an object first input: LLVM 22 crashes; we refuse
/// cleanly and write nothing.
fn hip_only_object() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    copy_dir(inputs()?, d)?;
    let a = args(&[
        "-type=o",
        "-targets=hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx90a",
        "-input=main.o",
        "-input=d1",
        "-output=x.o",
    ]);
    let before = snapshot(d);
    let r = run(&ours_as(TOOL), &a, d);
    clean_failure("bundling HIP-only into an object", &r, "host target")?;
    same("files after the failure", snapshot(d), before)?;
    let r = run(&llvm(TOOL), &a, d);
    if r.code == 0 {
        return Err("LLVM 22 no longer crashes on HIP-only object bundles: revisit".into());
    }
    Ok(())
}

/// The host object of a compressed object bundle: LLVM 22 runs llvm-objcopy
/// on the compressed file itself, which fails (`'llvm-objcopy' tool
/// failed`, leaving an empty host output); we extract it from the
/// decompressed bundle, the same as from the uncompressed one.
fn host_from_compressed_object_bundle() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    copy_dir(inputs()?, d)?;
    let a = |input: &str, out: &str| {
        args(&[
            "-type=o",
            "-unbundle",
            HD,
            &format!("-input={input}"),
            &format!("-output={out}"),
            "-output=dev",
        ])
    };
    let theirs = run(&llvm(TOOL), &a("fat.ccob", "llvm-host"), d);
    if theirs.code == 0 {
        return Err("LLVM 22 now extracts hosts from compressed object bundles: revisit".into());
    }
    run(&ours_as(TOOL), &a("fat.ccob", "ours-host"), d).ok()?;
    run(&llvm(TOOL), &a("fat.o", "llvm-plain-host"), d).ok()?;
    same_file(d, "ours-host", "llvm-plain-host")
}

/// Byte offset of section `index`'s header field at `field` in an ELF64
/// little-endian file.
fn shdr_field(data: &[u8], index: usize, field: usize) -> usize {
    let shoff = u64::from_le_bytes(data[0x28..0x30].try_into().unwrap()) as usize;
    shoff + index * 64 + field
}

/// The index of the last section.
fn last_section(data: &[u8]) -> usize {
    u16::from_le_bytes([data[0x3c], data[0x3d]]) as usize - 1
}

type Corrupt = fn(&[u8]) -> Vec<u8>;

fn hostile_objects() -> Vec<(&'static str, Corrupt, &'static [&'static str])> {
    const DEV: &[&str] = &["-targets=hip-amdgcn-amd-amdhsa--gfx906"];
    const HOST: &[&str] = &["-targets=host-x86_64-unknown-linux-gnu"];
    vec![
        ("truncated_header", |d| d[..40].to_vec(), DEV),
        ("truncated_in_sections", |d| d[..d.len() / 2].to_vec(), DEV),
        (
            "truncated_section_table",
            |d| d[..d.len() - 1].to_vec(),
            HOST,
        ),
        (
            "bundle_section_past_the_end",
            |d| {
                let mut v = d.to_vec();
                let at = shdr_field(&v, last_section(&v), 24);
                v[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
                v
            },
            DEV,
        ),
        (
            "bundle_section_size_past_the_end",
            |d| {
                let mut v = d.to_vec();
                let at = shdr_field(&v, last_section(&v), 32);
                v[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
                v
            },
            DEV,
        ),
        (
            // LLVM reads no name from such a table ("is non-null
            // terminated"), so neither lists nor extracts anything.
            "name_table_not_null_terminated",
            |d| {
                let mut v = d.to_vec();
                let names = u16::from_le_bytes([v[0x3e], v[0x3f]]) as usize;
                let at = |f: usize| shdr_field(&v, names, f);
                let off = u64::from_le_bytes(v[at(24)..at(24) + 8].try_into().unwrap());
                let size = u64::from_le_bytes(v[at(32)..at(32) + 8].try_into().unwrap());
                v[(off + size - 1) as usize] = b'x';
                v
            },
            HOST,
        ),
        (
            "host_strip_with_symbol_table_link_out_of_range",
            |d| {
                let mut v = d.to_vec();
                // .rela.text's sh_link (section 3 in clang's layout).
                let at = shdr_field(&v, 3, 40);
                v[at..at + 4].copy_from_slice(&500u32.to_le_bytes());
                v
            },
            HOST,
        ),
    ]
}

fn run_hostile(corrupt: Corrupt, targets: &[&str]) -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let bad = corrupt(&std::fs::read(inputs()?.join("fat.o"))?);
    std::fs::write(d.join("bad.o"), &bad)?;
    let before = snapshot(d);
    let mut a = args(&["-type=o", "-unbundle", "-input=bad.o", "-output=out1"]);
    a.extend(targets.iter().map(|s| s.to_string()));
    let r = run(&ours_as(TOOL), &a, d);
    clean_failure("unbundling", &r, "bad.o")?;
    same("files after the failure", snapshot(d), before)?;
    // Listing reads names only, as LLVM's does: where LLVM lists, so do we.
    let l = args(&["-type=o", "-list", "-input=bad.o"]);
    let (theirs, ours) = (run(&llvm(TOOL), &l, d), run(&ours_as(TOOL), &l, d));
    if ours.code == 0 {
        same("-list output", &ours.stdout, &theirs.stdout)?;
    } else {
        // An object we cannot parse: LLVM takes it for a non-bundle.
        clean_failure("listing", &ours, "bad.o")?;
        same("LLVM's -list output", &theirs.stdout[..], b"")?;
    }
    Ok(())
}

/// A kept relocation against a symbol defined in a bundle section: both
/// llvm-objcopy and we refuse to extract the host object.
fn relocation_into_bundle_section() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let asm = "\t.text\n\t.globl f\nf:\tret\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.byte 0\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\
               inb:\t.long 7\n\
               \t.data\n\t.quad inb\n";
    cc(d, "r.s", asm, "r.o", &[])?;
    let a = args(&[
        "-type=o",
        "-unbundle",
        "-targets=host-x86_64-unknown-linux-gnu",
        "-input=r.o",
        "-output=h.o",
    ]);
    let theirs = run(&llvm(TOOL), &a, d);
    if theirs.code == 0 {
        return Err("LLVM extracted the host object: revisit".into());
    }
    let _ = std::fs::remove_file(d.join("h.o"));
    let r = run(&ours_as(TOOL), &a, d);
    clean_failure("unbundling", &r, "r.o")?;
    if d.join("h.o").exists() {
        return Err("an output was written".into());
    }
    Ok(())
}

/// Symbols defined in bundle sections are dropped with them, and
/// `.llvm_addrsig` loses its link, as llvm-objcopy does; a section named
/// exactly the magic is removed but is not an entry; a name merely
/// containing the magic is kept.
fn symbols_in_bundle_sections() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let asm = "\t.text\n\t.globl f\nf:\tret\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.byte 0\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\
               inb:\t.long 7\n\t.globl gsym\ngsym:\t.byte 5\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__,\"e\",@progbits\n\t.byte 9\n\
               \t.section xx__CLANG_OFFLOAD_BUNDLE__foo,\"\",@progbits\n\t.byte 7\n\
               \t.addrsig\n\t.addrsig_sym f\n\t.addrsig_sym gsym\n";
    cc(d, "s.s", asm, "s.o", &[])?;
    let a = args(&[
        "-type=o",
        "-unbundle",
        "-targets=host-x86_64-unknown-linux-gnu,openmp-x86_64-unknown-linux-gnu",
        "-input=s.o",
        "-output=h.o",
        "-output=dev",
    ]);
    let (theirs, ours) = run_both(d, d, "syms", &a)?;
    same_outcome("unbundling", &theirs, &ours)?;
    let l = args(&["-type=o", "-list", "-input=s.o"]);
    let (theirs, ours) = run_both(d, d, "list", &l)?;
    same_outcome("listing", &theirs, &ours)
}

/// Symbols removed with the bundle sections renumber the others: the
/// relocations against them, the COMDAT groups' signatures (a local
/// signature loses GRP_COMDAT) and members, for 64- and 32-bit objects;
/// LLVM's bytes.
fn renumbered_relocations_and_groups() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let asm = |word: &str| {
        format!(
            "\t.text\n\t.globl f\nf:\tcall g\n\tcall h\n\tret\n\
             \t.section __CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.byte 0\n\
             \t.section __CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\
             \t.globl inb\ninb:\t.long 7\n\t.globl inb2\ninb2:\t.long 8\n\
             \t.section .text.g,\"axG\",@progbits,g,comdat\n\t.weak g\ng:\tret\n\
             \t.section .text.h,\"axG\",@progbits,hgrp,comdat\n\t.globl h\nh:\tret\n\
             \t.section .data.x,\"aw\",@progbits\n\
             \t{word} f\n\t{word} g\n\t{word} h\n\t{word} zext\n\
             \t.addrsig\n\t.addrsig_sym g\n"
        )
    };
    cc(d, "r64.s", &asm(".quad"), "r64.o", &[])?;
    cc(
        d,
        "r32.s",
        &asm(".long"),
        "r32.o",
        &["--target=i386-linux-gnu"],
    )?;
    for f in ["r64.o", "r32.o"] {
        let a = args(&[
            "-type=o",
            "-unbundle",
            "-targets=host-x86_64-unknown-linux-gnu,openmp-x86_64-unknown-linux-gnu",
            &format!("-input={f}"),
            "-output=h.o",
            "-output=dev",
        ]);
        let (theirs, ours) = run_both(d, d, &format!("renumber-{f}"), &a)?;
        same_outcome(&format!("unbundling {f}"), &theirs, &ours)?;
        same(&format!("{f}: success"), ours.code, 0)?;
    }
    Ok(())
}

/// Objects with more than 65279 sections (extended section indices): an
/// object whose symbols need `.symtab_shndx`, bundled and extracted; and
/// a bundle whose removed sections bring the rest back under the limit,
/// where llvm-objcopy drops the table. LLVM's bytes each time.
fn large_section_indices() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let functions = |n: usize| -> String {
        (0..n)
            .map(|i| format!("\t.section .t{i},\"ax\",@progbits\n\t.globl f{i}\nf{i}:\tret\n"))
            .collect()
    };
    cc(d, "many.s", &functions(66_000), "many.o", &[])?;
    let mut bundled = String::from(
        "\t.section __CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.byte 0\n",
    );
    for k in 0..40 {
        bundled.push_str(&format!(
            "\t.section __CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-{k},\"e\",@progbits\n\t.byte 1\n"
        ));
    }
    bundled.push_str(&functions(65_260));
    cc(d, "over.s", &bundled, "over.o", &[])?;
    std::fs::write(d.join("dev"), b"DEVICE")?;
    let targets = "-targets=host-x86_64-unknown-linux-gnu,openmp-x86_64-unknown-linux-gnu";
    let runs = [
        args(&[
            "-type=o",
            targets,
            "-input=many.o",
            "-input=dev",
            "-output=fat.o",
        ]),
        args(&[
            "-type=o",
            "-unbundle",
            targets,
            "-input=many.o",
            "-output=h1.o",
            "-output=d1",
            "-allow-missing-bundles",
        ]),
        args(&[
            "-type=o",
            "-unbundle",
            "-targets=host-x86_64-unknown-linux-gnu",
            "-input=over.o",
            "-output=h2.o",
        ]),
    ];
    for (k, a) in runs.iter().enumerate() {
        let (theirs, ours) = run_both(d, d, &format!("large-{k}"), a)?;
        same_outcome(&format!("large section indices, run {k}"), &theirs, &ours)?;
        same(&format!("run {k}: success"), ours.code, 0)?;
    }
    // The bundle LLVM made from many.o, extracted by both.
    let fat_dir = d.join("large-0-llvm");
    let a = args(&[
        "-type=o",
        "-unbundle",
        targets,
        "-input=fat.o",
        "-output=h.o",
        "-output=d",
    ]);
    let (theirs, ours) = run_both(&fat_dir, d, "large-fat", &a)?;
    same_outcome("extracting from the large bundle", &theirs, &ours)
}

/// Compact relocations (`SHT_CREL`) after symbols defined in bundle
/// sections go: decoded, renumbered and encoded again as llvm-objcopy
/// does, for x86_64 and i386; LLVM's bytes.
fn crel_with_removed_symbols() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let asm = "\t.text\n\t.globl f\nf:\tcall g\n\tret\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.byte 0\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\
               \t.globl inb\ninb:\t.long 7\n\
               \t.text\n\t.globl g\ng:\tret\n\t.long zext\n\t.long h2+100000\n\t.long f-8\n";
    let crel = "-Wa,--crel,--allow-experimental-crel";
    cc(d, "c.s", asm, "c64.o", &[crel])?;
    cc(d, "c.s", asm, "c32.o", &[crel, "--target=i386-linux-gnu"])?;
    for f in ["c64.o", "c32.o"] {
        let a = args(&[
            "-type=o",
            "-unbundle",
            "-targets=host-x86_64-unknown-linux-gnu",
            &format!("-input={f}"),
            "-output=h.o",
        ]);
        let (theirs, ours) = run_both(d, d, &format!("crel-{f}"), &a)?;
        same_outcome(&format!("unbundling {f}"), &theirs, &ours)?;
        same(&format!("{f}: success"), ours.code, 0)?;
    }
    Ok(())
}

/// Sets symbol 0's binding to weak in the 64-bit little-endian object
/// `data`, so that llvm-objcopy moves that entry behind the locals.
fn weak_first_symbol(data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    let shnum = u16::from_le_bytes([v[0x3c], v[0x3d]]) as usize;
    let symtab = (0..shnum)
        .find(|&i| v[shdr_field(&v, i, 4)] == 2)
        .expect("a symbol table");
    let at = shdr_field(&v, symtab, 24);
    let off = u64::from_le_bytes(v[at..at + 8].try_into().unwrap()) as usize;
    v[off + 4] = 0x20;
    v
}

/// Relocations naming no symbol (index 0), in an object whose entry 0 is
/// not the null symbol and moves when locals go first: the relocation
/// keeps index 0, as llvm-objcopy writes it; plain and compact
/// relocations, bundled and extracted, LLVM's bytes.
fn relocation_naming_no_symbol() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let asm = "\t.text\n\t.globl f\nf:\tret\n\t.reloc 0, R_X86_64_NONE\n\
               \t.data\nlv:\t.quad lv\nlw:\t.quad lw\n\t.reloc 8, R_X86_64_NONE\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.byte 0\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.long 7\n";
    let crel = "-Wa,--crel,--allow-experimental-crel";
    cc(d, "z.s", asm, "zrela.o", &[])?;
    cc(d, "z.s", asm, "zcrel.o", &[crel])?;
    std::fs::write(d.join("dev"), b"DEVICE-IMAGE")?;
    for f in ["zrela.o", "zcrel.o"] {
        let weak = format!("weak-{f}");
        std::fs::write(d.join(&weak), weak_first_symbol(&std::fs::read(d.join(f))?))?;
        let unbundle = args(&[
            "-type=o",
            "-unbundle",
            "-targets=host-x86_64-unknown-linux-gnu,openmp-x86_64-unknown-linux-gnu",
            &format!("-input={weak}"),
            "-output=h.o",
            "-output=dev",
        ]);
        let (theirs, ours) = run_both(d, d, &format!("sym0-unbundle-{f}"), &unbundle)?;
        same_outcome(&format!("unbundling {weak}"), &theirs, &ours)?;
        same(&format!("{weak}: success"), ours.code, 0)?;
        let bundle = args(&[
            "-type=o",
            "-targets=host-x86_64-unknown-linux-gnu,openmp-amdgcn-amd-amdhsa--gfx90a",
            &format!("-input={weak}"),
            "-input=dev",
            "-output=fat.o",
        ]);
        let (theirs, ours) = run_both(d, d, &format!("sym0-bundle-{f}"), &bundle)?;
        same_outcome(&format!("bundling {weak}"), &theirs, &ours)?;
        same(&format!("{weak}: bundled"), ours.code, 0)?;
    }
    Ok(())
}

/// Sections whose `sh_entsize` has high bits set (a hostile or damaged
/// object): llvm-objcopy keeps the low 32 bits; so do we. Bundled and
/// extracted, LLVM's bytes.
fn entsize_high_bits() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    cc(
        d,
        "e.c",
        "int f(void) { return 1; }\nint g;\n",
        "e.o",
        &["-fPIC"],
    )?;
    let mut v = std::fs::read(d.join("e.o"))?;
    let shnum = u16::from_le_bytes([v[0x3c], v[0x3d]]) as usize;
    for i in 1..shnum {
        let ty = u32::from_le_bytes(v[shdr_field(&v, i, 4)..][..4].try_into().unwrap());
        // Symbol and relocation tables must keep their entry size.
        if matches!(ty, 2 | 4 | 9 | 11) {
            continue;
        }
        let at = shdr_field(&v, i, 56);
        v[at..at + 8].copy_from_slice(&(0x0101_0246_0000_0000u64 + i as u64).to_le_bytes());
    }
    std::fs::write(d.join("wide.o"), &v)?;
    std::fs::write(d.join("dev"), b"DEVICE-IMAGE")?;
    let bundle = args(&[
        "-type=o",
        "-targets=host-x86_64-unknown-linux-gnu,openmp-amdgcn-amd-amdhsa--gfx90a",
        "-input=wide.o",
        "-input=dev",
        "-output=fat.o",
    ]);
    let (theirs, ours) = run_both(d, d, "entsize-bundle", &bundle)?;
    same_outcome("bundling wide.o", &theirs, &ours)?;
    same("wide.o: bundled", ours.code, 0)?;
    Ok(())
}

/// A section whose name offset is 0, in an object whose name table does
/// not start with a NUL byte (a hostile or damaged object): LLVM reads the
/// name as empty whatever the table holds at offset 0, so the section is
/// no bundle entry, and its rewritten name is the empty one. Listed,
/// bundled and extracted, LLVM's outcome and bytes.
fn section_name_offset_zero() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    cc(
        d,
        "n.c",
        "int f(void) { return 1; }\nint g = 2;\n",
        "n.o",
        &[],
    )?;
    let mut v = std::fs::read(d.join("n.o"))?;
    let shnum = u16::from_le_bytes([v[0x3c], v[0x3d]]) as usize;
    let shstrndx = u16::from_le_bytes([v[0x3e], v[0x3f]]) as usize;
    let field = |v: &[u8], i, f| {
        let at = shdr_field(v, i, f);
        u64::from_le_bytes(v[at..at + 8].try_into().unwrap())
    };
    let (off, size) = (
        field(&v, shstrndx, 24) as usize,
        field(&v, shstrndx, 32) as usize,
    );
    // A new name table at the end of the file: a bundle entry's name at
    // offset 0, then the old table, every name offset moved past it.
    let prefix = b"__CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-\0";
    let mut table = prefix.to_vec();
    table.extend_from_slice(&v[off..off + size]);
    let mut renamed = 0;
    for i in 1..shnum {
        let at = shdr_field(&v, i, 0);
        let name = u32::from_le_bytes(v[at..at + 4].try_into().unwrap());
        let text = &v[off + name as usize..];
        let is_data = text.starts_with(b".data\0");
        let new = if is_data {
            0
        } else {
            name + prefix.len() as u32
        };
        renamed += usize::from(is_data);
        v[at..at + 4].copy_from_slice(&new.to_le_bytes());
    }
    same("sections named .data", renamed, 1)?;
    let new_off = v.len() as u64;
    v.extend_from_slice(&table);
    let at = shdr_field(&v, shstrndx, 24);
    v[at..at + 8].copy_from_slice(&new_off.to_le_bytes());
    v[at + 8..at + 16].copy_from_slice(&(table.len() as u64).to_le_bytes());
    std::fs::write(d.join("zero.o"), &v)?;
    std::fs::write(d.join("dev"), b"DEVICE-IMAGE")?;
    let cases: [(&str, Vec<String>); 3] = [
        ("list", args(&["-type=o", "-list", "-input=zero.o"])),
        (
            "bundle",
            args(&[
                "-type=o",
                "-targets=host-x86_64-unknown-linux-gnu,openmp-amdgcn-amd-amdhsa--gfx90a",
                "-input=zero.o",
                "-input=dev",
                "-output=fat.o",
            ]),
        ),
        (
            "unbundle",
            args(&[
                "-type=o",
                "-unbundle",
                "-targets=host-x86_64-unknown-linux-gnu,openmp-x86_64-unknown-linux-gnu",
                "-input=zero.o",
                "-output=h.o",
                "-output=d.bin",
            ]),
        ),
    ];
    for (what, a) in cases {
        let (theirs, ours) = run_both(d, d, &format!("name0-{what}"), &a)?;
        same_outcome(&format!("{what} of zero.o"), &theirs, &ours)?;
    }
    Ok(())
}

/// All of the above, as trials.
pub fn tests() -> Vec<Trial> {
    let mut t = Vec::new();
    for (i, c) in CASES.iter().enumerate() {
        t.push(trial(
            format!("bundler::object::interop::{}", c.name),
            TOOLS,
            move || run_case(&CASES[i]),
        ));
    }
    for (name, a) in transcripts() {
        t.push(trial(
            format!("bundler::object::transcript::{name}"),
            TOOLS,
            move || run_transcript(name, &a),
        ));
    }
    for (i, shape) in SHAPES.iter().enumerate() {
        t.push(trial(
            format!("bundler::object::llvm_bytes::{}", shape.0),
            &shape_tools(shape),
            move || host_shape(&SHAPES[i], compile_shape),
        ));
    }
    for (i, shape) in LINKED_SHAPES.iter().enumerate() {
        t.push(trial(
            format!("bundler::object::llvm_bytes::{}", shape.0),
            &shape_tools(shape),
            move || host_shape(&LINKED_SHAPES[i], link_shape),
        ));
    }
    for &(name, a, empty) in PRINT_COMMANDS {
        t.push(trial(
            format!("bundler::object::{name}"),
            TOOLS,
            move || print_commands(name, a, empty),
        ));
    }
    t.push(trial(
        "bundler::object::print_commands_without_objcopy",
        TOOLS,
        print_commands_without_objcopy,
    ));
    t.push(trial(
        "bundler::object::hip_only_object_is_an_error",
        TOOLS,
        hip_only_object,
    ));
    t.push(trial(
        "bundler::object::host_from_compressed_object_bundle",
        TOOLS,
        host_from_compressed_object_bundle,
    ));
    t.push(trial(
        "bundler::object::relocation_into_bundle_section",
        TOOLS,
        relocation_into_bundle_section,
    ));
    t.push(trial(
        "bundler::object::renumbered_relocations_and_groups",
        TOOLS,
        renumbered_relocations_and_groups,
    ));
    t.push(trial(
        "bundler::object::crel_with_removed_symbols",
        TOOLS,
        crel_with_removed_symbols,
    ));
    t.push(trial(
        "bundler::object::relocation_naming_no_symbol",
        TOOLS,
        relocation_naming_no_symbol,
    ));
    t.push(trial(
        "bundler::object::entsize_high_bits",
        TOOLS,
        entsize_high_bits,
    ));
    t.push(trial(
        "bundler::object::section_name_offset_zero",
        TOOLS,
        section_name_offset_zero,
    ));
    t.push(trial(
        "bundler::object::large_section_indices",
        TOOLS,
        large_section_indices,
    ));
    t.push(trial(
        "bundler::object::symbols_in_bundle_sections",
        TOOLS,
        symbols_in_bundle_sections,
    ));
    for (name, corrupt, targets) in hostile_objects() {
        t.push(trial(
            format!("bundler::object::hostile::{name}"),
            TOOLS,
            move || run_hostile(corrupt, targets),
        ));
    }
    t
}

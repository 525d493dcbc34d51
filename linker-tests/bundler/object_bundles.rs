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
//! objects) are shared with the archive tests; so are the host objects of
//! many shapes. The interop cases and transcripts are in `interop.rs`, the
//! printed llvm-objcopy commands in `commands.rs`, the hostile objects in
//! `hostile.rs`, other machines and header fields in `encoding.rs`.

use std::path::{Path, PathBuf};

use libtest_mimic::{Failed, Trial};

use crate::util::{
    Messages, Outcome, clean_failure, llvm, ours_as, run, same, same_bytes, snapshot, tempdir,
};

test_files! {
    interop,
    coff,
    commands,
    encoding,
    hostile,
}

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

const HD: &str = "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906";

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

/// Runs LLVM's bundler and ours with `args`, each in a copy of `inputs`
/// under `work` ([`util::run_both`](crate::util::run_both)).
pub(super) fn run_both(
    inputs: &Path,
    work: &Path,
    tag: &str,
    args: &[String],
) -> Result<(Outcome, Outcome), Failed> {
    crate::util::run_both(TOOL, args, work, tag, |dir| {
        copy_dir(inputs, dir)?;
        Ok(Vec::new())
    })
}

/// Fails unless both tools exited alike, printed alike, and left the same
/// files with the same bytes.
pub(super) fn same_outcome(what: &str, theirs: &Outcome, ours: &Outcome) -> Result<(), Failed> {
    crate::util::same_outcome(what, theirs, ours, Messages::Same, true)
}

pub(super) fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
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

/// All of the above, as trials.
pub fn tests() -> Vec<Trial> {
    let mut t = file_trials();
    for (i, shape) in SHAPES.iter().enumerate() {
        t.push(trial!(
            host_shape["{}", shape.0],
            &shape_tools(shape),
            move || host_shape(&SHAPES[i], compile_shape),
        ));
    }
    for (i, shape) in LINKED_SHAPES.iter().enumerate() {
        t.push(trial!(
            host_shape["{}", shape.0],
            &shape_tools(shape),
            move || host_shape(&LINKED_SHAPES[i], link_shape),
        ));
    }
    t
}

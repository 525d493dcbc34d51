//! `offload-kit wrap` with the real LLVM 22 toolchain and runtime.
//!
//! An OpenMP program (`wrap/app.c`: four target regions, declare-target
//! globals) is built as docs/formats/wrapper-objects.md builds it: device image and host
//! object by clang-22, the device image packed by llvm-offload-binary. Our
//! object replaces llvm-offload-wrapper + llc, the program is linked with
//! libomptarget 22 by each linker (GNU ld, ld.lld, gold, mold) in each shape
//! (PIE, non-PIE, shared library, dlopen, --gc-sections), and run: every
//! region must report that it ran on the offload device.
//!
//! The differential trials link a recording stub runtime (`wrap/stub.c`)
//! instead and compare what it sees with our object and with LLVM's
//! (llvm-offload-wrapper + `llc -relocation-model=pic`), or, for the legacy
//! and ROCm ABIs that LLVM 22 cannot write, with a reference wrapper written
//! in C (`wrap/ref_wrapper.c`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use libtest_mimic::{Failed, Trial};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _};

use crate::util::{llvm, ours, tempdir, trial};

mod cpus;

const TRIPLE: &str = "x86_64-unknown-linux-gnu";
const LLVM_LIB: &str = "/usr/lib/llvm-22/lib";
/// libomptarget 22 (Debian ships no unversioned link without the -dev
/// package, so it is linked by path).
const LIBOMPTARGET: &str = "/usr/lib/llvm-22/lib/libomptarget.so.22.1";
/// libomp and omp.h (package libomp-22-dev).
const LIBOMP: &str = "/usr/lib/llvm-22/lib/libomp.so";

/// What building the fixture needs.
const BUILD_TOOLS: &[&str] = &[
    "clang",
    "llvm-offload-binary",
    "llvm-objcopy",
    LIBOMP,
    LIBOMPTARGET,
];

/// The linkers, by `-fuse-ld=` name, and the program each needs.
const LINKERS: &[(&str, &str)] = &[
    ("bfd", "ld.bfd"),
    ("lld", "ld.lld"),
    ("gold", "ld.gold"),
    ("mold", "ld.mold"),
];

/// A host CPU the wrapper writes objects for.
struct Host {
    /// Its Linux triple.
    triple: &'static str,
    /// ld.lld's emulation (`-m`) for it.
    lld_emulation: &'static str,
    /// Whether `--abi=legacy` and `--abi=rocm` objects are written for it
    /// (LLVM 22 cannot write them, so they are read and linked only).
    legacy_abis: bool,
    /// A warning llvm-readelf prints for LLVM's own objects of this CPU
    /// too, tolerated by [`readelf_ok`].
    readelf_known: Option<&'static str>,
}

impl Host {
    /// The architecture, as the triple spells it.
    fn arch(&self) -> &'static str {
        self.triple.split('-').next().unwrap_or(self.triple)
    }
}

/// Every host CPU, one line each: for each, our objects are LLVM's bytes
/// (`same_bytes_as_llc::<arch>`, `other_oses`), read clean and link into a
/// shared library with ld.lld. Programs are linked and run on this
/// machine's CPU only ([`TRIPLE`]: the `run`, `stub` and `fatbin` trials).
const HOSTS: &[Host] = &[
    Host {
        triple: "x86_64-unknown-linux-gnu",
        lld_emulation: "elf_x86_64",
        legacy_abis: true,
        readelf_known: None,
    },
    Host {
        triple: "aarch64-unknown-linux-gnu",
        lld_emulation: "aarch64linux",
        legacy_abis: true,
        readelf_known: None,
    },
    Host {
        triple: "powerpc64le-unknown-linux-gnu",
        lld_emulation: "elf64lppc",
        legacy_abis: true,
        readelf_known: None,
    },
    Host {
        triple: "s390x-unknown-linux-gnu",
        lld_emulation: "elf64_s390",
        legacy_abis: true,
        // llvm-readelf 22 cannot apply R_390_PC32 when it decodes
        // `.eh_frame` (llc's objects get the same warning).
        readelf_known: Some("warning: failed to compute relocation: R_390_PC32"),
    },
    Host {
        triple: "riscv64-unknown-linux-gnu",
        lld_emulation: "elf64lriscv",
        legacy_abis: true,
        readelf_known: None,
    },
];

/// The vendor-OS parts of the hosts' other triples whose OS changes the
/// object (`EI_OSABI`; no `.note.GNU-stack` on Solaris).
const OSES: &[&str] = &[
    "unknown-freebsd",
    "unknown-openbsd",
    "pc-solaris2.11",
    "unknown-hermit",
    "scei-ps4",
    "unknown-netbsd",
];

/// Known differences from LLVM's objects, not yet fixed, so left out of
/// `other_oses` (none at present).
const NOT_YET_LLVM: &[&str] = &[];

fn src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("linker-tests/wrap")
        .join(name)
}

/// Runs a build command in `dir`; fails with its command line and stderr.
fn sh(dir: &Path, prog: impl AsRef<Path>, args: &[&str]) -> Result<String, Failed> {
    let prog = prog.as_ref();
    let out = Command::new(prog)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", prog.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(format!(
            "{} {} failed ({}):\n{stderr}",
            prog.display(),
            args.join(" "),
            out.status
        )
        .into());
    }
    Ok(stderr)
}

fn clang(dir: &Path, args: &[&str]) -> Result<String, Failed> {
    sh(dir, llvm("clang"), args)
}

/// What a program printed.
struct Ran {
    stdout: String,
    stderr: String,
}

/// Runs `prog args` with `env`, requiring exit status 0.
fn run(dir: &Path, prog: &str, args: &[&str], env: &[(&str, &str)]) -> Result<Ran, Failed> {
    let out = Command::new(dir.join(prog))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {prog}: {e}"))?;
    let ran = Ran {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    if !out.status.success() {
        return Err(format!(
            "{prog} {}: {}\nstdout:\n{}stderr:\n{}",
            args.join(" "),
            out.status,
            ran.stdout,
            ran.stderr
        )
        .into());
    }
    Ok(ran)
}

/// Objects built once per run and shared by the trials.
struct Fixture {
    dir: PathBuf,
}

impl Fixture {
    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }
}

static FIXTURE: OnceLock<Result<Fixture, String>> = OnceLock::new();

/// Builds the fixture (once): in `CARGO_TARGET_TMPDIR`, in a directory named
/// after this process; directories of processes that have ended are removed.
fn fixture() -> Result<&'static Fixture, Failed> {
    FIXTURE
        .get_or_init(|| {
            build_fixture().map_err(|e| e.message().unwrap_or("build failed").to_string())
        })
        .as_ref()
        .map_err(|e| format!("building the fixture failed: {e}").into())
}

fn build_fixture() -> Result<Fixture, Failed> {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    if let Ok(rd) = std::fs::read_dir(base) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("wrap-fixture-")
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let dir = base.join(format!("wrap-fixture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let d = dir.as_path();
    let app = src("app.c");
    let app = app.to_str().unwrap();
    let libomp_dir = format!("-L{LLVM_LIB}");
    // Device side: compile, link the device image as the linker wrapper does
    // for CPU targets, pack it.
    clang(
        d,
        &[
            "-fopenmp",
            &format!("-fopenmp-targets={TRIPLE}"),
            "--offload-device-only",
            "-fPIC",
            "-c",
            app,
            "-o",
            "app-dev.o",
        ],
    )?;
    clang(
        d,
        &[
            &format!("--target={TRIPLE}"),
            "-shared",
            "-Wl,-Bsymbolic",
            "-Wl,--no-undefined",
            "app-dev.o",
            &libomp_dir,
            "-lomp",
            "-o",
            "app-dev.so",
        ],
    )?;
    sh(
        d,
        llvm("llvm-offload-binary"),
        &[
            "-o",
            "app-dev.ob",
            &format!("--image=file=app-dev.so,triple={TRIPLE},arch=generic,kind=openmp"),
        ],
    )?;
    // Host side: entries without an embedded image, so a plain link never
    // runs clang-linker-wrapper.
    clang(
        d,
        &[
            "-fopenmp",
            &format!("-fopenmp-targets={TRIPLE}"),
            "--offload-host-only",
            "-fPIC",
            "-c",
            app,
            "-o",
            "app-host.o",
        ],
    )?;
    for (c, o, extra) in [
        ("main.c", "main.o", ""),
        ("dlopen_main.c", "dlopen_main.o", ""),
        ("stub_main.c", "stub_main.o", ""),
        ("stub.c", "stub56.o", "-DENTRY_SIZE=56"),
        ("stub.c", "stub32.o", "-DENTRY_SIZE=32"),
    ] {
        let c = src(c);
        let mut args = vec!["-fPIC", "-O1", "-c", c.to_str().unwrap(), "-o", o];
        if !extra.is_empty() {
            args.push(extra);
        }
        clang(d, &args)?;
    }
    // The legacy program: the same host object with its entries rewritten in
    // the 32-byte layout, in `omp_offloading_entries`.
    let host = std::fs::read(dir.join("app-host.o")).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("legacy-entries.s"), legacy_entries(&host)?)
        .map_err(|e| e.to_string())?;
    clang(d, &["-c", "legacy-entries.s", "-o", "legacy-entries.o"])?;
    sh(
        d,
        llvm("llvm-objcopy"),
        &[
            "--remove-section=llvm_offload_entries",
            "app-host.o",
            "app-host-legacy.o",
        ],
    )?;
    Ok(Fixture { dir })
}

/// The host entries of `host` (an object clang 22 wrote: 56-byte entries in
/// `llvm_offload_entries`) as assembly defining the same entries in the
/// legacy layout (docs/formats/wrapper-objects.md) in `omp_offloading_entries`.
fn legacy_entries(host: &[u8]) -> Result<String, Failed> {
    let f = object::File::parse(host).map_err(|e| e.to_string())?;
    let sec = f
        .section_by_name("llvm_offload_entries")
        .ok_or("no llvm_offload_entries in the host object")?;
    let data = sec.data().map_err(|e| e.to_string())?;
    let names = f
        .section_by_name(".llvm.rodata.offloading")
        .ok_or("no .llvm.rodata.offloading")?;
    let names_data = names.data().map_err(|e| e.to_string())?;
    let mut addr = std::collections::BTreeMap::new();
    let mut name = std::collections::BTreeMap::new();
    for (off, r) in sec.relocations() {
        let object::RelocationTarget::Symbol(i) = r.target() else {
            return Err("relocation without symbol".into());
        };
        let sym = f.symbol_by_index(i).map_err(|e| e.to_string())?;
        match off % 56 {
            16 => {
                // A local target (riscv64's clang merges globals into
                // `.L_MergedGlobals`) cannot be named from another object:
                // it becomes a stand-in of this one. Only the stub reads
                // such entries, and it prints whether the address is set.
                let target = if sym.is_global() {
                    sym.name().map_err(|e| e.to_string())?.to_string()
                } else {
                    ".Llocal_target".to_string()
                };
                addr.insert(off / 56, target);
            }
            24 => {
                let at = usize::try_from(r.addend()).map_err(|e| e.to_string())?;
                let s = &names_data[at..];
                let end = s.iter().position(|&b| b == 0).ok_or("unterminated name")?;
                name.insert(off / 56, String::from_utf8_lossy(&s[..end]).into_owned());
            }
            _ => return Err(format!("unexpected entry relocation at {off:#x}").into()),
        }
    }
    // The fields in the object's own byte order (s390x is big-endian).
    let e = if f.is_little_endian() {
        object::Endianness::Little
    } else {
        object::Endianness::Big
    };
    let u32_at = |o: usize| {
        <object::Endianness as object::Endian>::read_u32(e, data[o..o + 4].try_into().unwrap())
    };
    let u64_at = |o: usize| {
        <object::Endianness as object::Endian>::read_u64(e, data[o..o + 8].try_into().unwrap())
    };
    let mut asm = String::from(
        "# Generated by linker-tests/wrap.rs from clang's entries.\n\
         .section omp_offloading_entries,\"aw\",@progbits\n.p2align 3\n",
    );
    let mut strings = String::from(".section .rodata.legacy_names,\"aMS\",@progbits,1\n");
    for i in 0..data.len() / 56 {
        let o = i * 56;
        let key = i as u64;
        let target = addr.get(&key).cloned().unwrap_or_else(|| "0".into());
        let n = name.get(&key).ok_or("entry without a name")?;
        writeln!(asm, ".quad {target}\n.quad .Lname{i}").unwrap();
        writeln!(
            asm,
            ".quad {}\n.long {}\n.long {}",
            u64_at(o + 32),
            u32_at(o + 12),
            u64_at(o + 40)
        )
        .unwrap();
        writeln!(strings, ".Lname{i}:\n.asciz \"{n}\"").unwrap();
    }
    strings.push_str(".data\n.Llocal_target:\n.quad 0\n");
    Ok(asm + &strings + ".section .note.GNU-stack,\"\",@progbits\n")
}

/// The link flags for libomp and libomptarget 22.
fn runtime_libs() -> Vec<String> {
    vec![
        format!("-L{LLVM_LIB}"),
        "-lomp".into(),
        LIBOMPTARGET.into(),
        format!("-Wl,-rpath,{LLVM_LIB}"),
    ]
}

/// Runs our wrapper in `dir`: `offload-kit wrap --kind=openmp ARGS`.
fn wrap(dir: &Path, args: &[&str]) -> Result<(), Failed> {
    wrap_kind(dir, "openmp", args)
}

/// Runs our wrapper in `dir`: `offload-kit wrap --kind=KIND ARGS`.
fn wrap_kind(dir: &Path, kind: &str, args: &[&str]) -> Result<(), Failed> {
    wrap_for(dir, kind, TRIPLE, args)
}

/// Runs our wrapper in `dir` for another host triple.
fn wrap_for(dir: &Path, kind: &str, triple: &str, args: &[&str]) -> Result<(), Failed> {
    let kind = format!("--kind={kind}");
    let mut all = vec!["wrap", &kind, "--triple", triple];
    all.extend_from_slice(args);
    sh(dir, ours(), &all).map(|_| ())
}

/// Links with clang and `-fuse-ld=ld`; fails on any linker warning (the
/// executable-stack warning of GNU ld among them).
fn link(dir: &Path, ld: &str, args: &[&str]) -> Result<(), Failed> {
    let fuse = format!("-fuse-ld={ld}");
    let mut all = vec![fuse.as_str()];
    all.extend_from_slice(args);
    let stderr = clang(dir, &all)?;
    if stderr.to_lowercase().contains("warning") {
        return Err(format!("link with {ld} warned:\n{stderr}").into());
    }
    Ok(())
}

/// Checks the output of `app_run` (all four regions on the device, the
/// right values) and, with LIBOMPTARGET_INFO=16, four kernel launches on
/// the offload device.
fn check_app(ran: &Ran) -> Result<(), Failed> {
    for r in 1..=4 {
        let want = format!("region {r} on_device=1\n");
        if !ran.stdout.contains(&want) {
            return Err(format!("missing '{}' in:\n{}", want.trim(), ran.stdout).into());
        }
    }
    let values = "x=8 a[99]=301 counter=42 table[3]=14 sum=499500\n";
    if !ran.stdout.contains(values) {
        return Err(format!("wrong values:\n{}", ran.stdout).into());
    }
    let launches = ran
        .stderr
        .lines()
        .filter(|l| l.contains("PluginInterface\" device") && l.contains("Launching kernel"))
        .count();
    if launches != 4 {
        return Err(format!(
            "{launches} kernel launches on the device, want 4:\n{}",
            ran.stderr
        )
        .into());
    }
    Ok(())
}

const INFO: &[(&str, &str)] = &[("LIBOMPTARGET_INFO", "16")];

/// The shapes a program is linked in.
#[derive(Clone, Copy)]
enum Shape {
    Pie,
    NoPie,
    /// The program in a shared library that the executable needs.
    Shared,
    /// The program in a shared library loaded with dlopen and dlclose.
    Dlopen,
    /// `--gc-sections` (ld.lld also needs `-z nostart-stop-gc`).
    GcSections,
}

fn run_shape(ld: &'static str, shape: Shape) -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    wrap(d, &["-o", "wrap.o", &fx.path("app-dev.ob")])?;
    let libs = runtime_libs();
    let libs: Vec<&str> = libs.iter().map(String::as_str).collect();
    let host = fx.path("app-host.o");
    let main = fx.path("main.o");
    let mut args: Vec<&str> = Vec::new();
    match shape {
        Shape::Pie | Shape::NoPie | Shape::GcSections => {
            args.extend([host.as_str(), main.as_str(), "wrap.o", "-o", "prog"]);
            args.extend(match shape {
                Shape::Pie => &["-pie"][..],
                Shape::NoPie => &["-no-pie"][..],
                _ if ld == "lld" => &["-Wl,--gc-sections", "-Wl,-z,nostart-stop-gc"][..],
                _ => &["-Wl,--gc-sections"][..],
            });
            args.extend(&libs);
            link(d, ld, &args)?;
            check_app(&run(d, "prog", &[], INFO)?)
        }
        Shape::Shared => {
            args.extend([host.as_str(), "wrap.o", "-shared", "-o", "libapp.so"]);
            args.extend(&libs);
            link(d, ld, &args)?;
            let mut exe = vec![
                main.as_str(),
                "-L.",
                "-lapp",
                "-Wl,-rpath,$ORIGIN",
                "-o",
                "prog",
            ];
            exe.extend(&libs);
            link(d, ld, &exe)?;
            check_app(&run(d, "prog", &[], INFO)?)
        }
        Shape::Dlopen => {
            args.extend([host.as_str(), "wrap.o", "-shared", "-o", "libapp.so"]);
            args.extend(&libs);
            link(d, ld, &args)?;
            link(d, ld, &[&fx.path("dlopen_main.o"), "-ldl", "-o", "prog"])?;
            let ran = run(d, "prog", &["./libapp.so"], INFO)?;
            if !ran.stdout.ends_with("dlclose done\n") {
                return Err(format!("dlclose did not finish:\n{}", ran.stdout).into());
            }
            check_app(&ran)
        }
    }
}

/// Two images in one descriptor: an AMD GPU image no plugin can run here,
/// then the x86-64 image. The regions can only run on the device if the
/// runtime finds the second image through the descriptor.
fn run_two_images(ld: &'static str) -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    wrap(d, &["-o", "wrap.o", &raw_fixture(), &fx.path("app-dev.ob")])?;
    let libs = runtime_libs();
    let mut args = vec![fx.path("app-host.o"), fx.path("main.o"), "wrap.o".into()];
    args.extend(["-o".into(), "prog".into()]);
    args.extend(libs);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    link(d, ld, &args)?;
    check_app(&run(d, "prog", &[], INFO)?)
}

/// A raw device image (not an OffloadBinary) as input.
fn run_raw_image() -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    wrap(d, &["-o", "wrap.o", &fx.path("app-dev.so")])?;
    let mut args = vec![fx.path("app-host.o"), fx.path("main.o"), "wrap.o".into()];
    args.extend(["-o".into(), "prog".into()]);
    args.extend(runtime_libs());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    link(d, "bfd", &args)?;
    check_app(&run(d, "prog", &[], INFO)?)
}

/// The legacy ABI with libomptarget 22, which still accepts 32-byte entries.
fn run_legacy(ld: &'static str) -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    wrap(d, &["--abi=legacy", "-o", "wrap.o", &fx.path("app-dev.ob")])?;
    let mut args = vec![
        fx.path("app-host-legacy.o"),
        fx.path("legacy-entries.o"),
        fx.path("main.o"),
        "wrap.o".into(),
    ];
    args.extend(["-o".into(), "prog".into()]);
    args.extend(runtime_libs());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    link(d, ld, &args)?;
    check_app(&run(d, "prog", &[], INFO)?)
}

/// Which wrapper a differential trial compares ours with.
#[derive(Clone, Copy, PartialEq)]
enum Flavour {
    /// `--abi=llvm` against llvm-offload-wrapper + llc (PIC).
    OpenMp,
    /// `--abi=llvm` with two images against LLVM.
    TwoImages,
    /// `--abi=legacy` against the C reference.
    Legacy,
    /// `--abi=rocm` against the C reference.
    Rocm,
}

/// Links the recording stub with a wrapper object and returns its log.
fn stub_log(d: &Path, ld: &str, wrapper: &str, out: &str, legacy: bool) -> Result<String, Failed> {
    let fx = fixture()?;
    let mut args = if legacy {
        vec![
            fx.path("app-host-legacy.o"),
            fx.path("legacy-entries.o"),
            fx.path("stub32.o"),
        ]
    } else {
        vec![fx.path("app-host.o"), fx.path("stub56.o")]
    };
    args.extend([
        fx.path("stub_main.o"),
        wrapper.into(),
        "-o".into(),
        out.into(),
    ]);
    args.extend(runtime_libs());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    link(d, ld, &args)?;
    Ok(run(d, out, &[], &[])?.stdout)
}

/// Facts every log must show, whichever wrapper made it: registration
/// before main, unregistration after, the right number of images and
/// entries, every image's bounds equal to the descriptor's.
fn check_log(log: &str, images: usize, entries: usize, elf_at: &[usize]) -> Result<(), Failed> {
    let fail = |what: &str| -> Result<(), Failed> { Err(format!("{what}:\n{log}").into()) };
    let reg = log.find("__tgt_register_lib").unwrap_or(usize::MAX);
    let main = log.find("\nmain\n").unwrap_or(usize::MAX);
    let unreg = log
        .find("__tgt_unregister_lib (the registered descriptor)")
        .unwrap_or(0);
    if !(reg < main && main < unreg) {
        return fail("want register_lib, then main, then unregister_lib of the same descriptor");
    }
    if !log.contains(&format!("__tgt_register_lib images={images}\n")) {
        return fail(&format!("want {images} images"));
    }
    if !log.contains("entries, remainder 0\n") || !log.contains(&format!(" {entries} entries,")) {
        return fail(&format!("want {entries} whole entries"));
    }
    if log.contains("DIFFER") {
        return fail("image entry bounds differ from the descriptor's");
    }
    for i in elf_at {
        if !log.contains(&format!("image {i}: "))
            || !log.lines().any(|l| {
                l.starts_with(&format!("  image {i}: ")) && l.contains("starts 7f 45 4c 46")
            })
        {
            return fail(&format!("image {i} does not start with the ELF magic"));
        }
    }
    Ok(())
}

/// Number of host entries clang put in the host object.
fn host_entries() -> Result<usize, Failed> {
    let fx = fixture()?;
    let host = std::fs::read(fx.path("app-host.o")).map_err(|e| e.to_string())?;
    let f = object::File::parse(&*host).map_err(|e| e.to_string())?;
    let s = f
        .section_by_name("llvm_offload_entries")
        .ok_or("no entries")?;
    Ok(usize::try_from(s.size()).unwrap() / 56)
}

fn differential(flavour: Flavour, ld: &'static str) -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let ob = fx.path("app-dev.ob");
    let gpu = &raw_fixture()[..];
    let inputs: Vec<&str> = match flavour {
        Flavour::TwoImages => vec![gpu, &ob],
        _ => vec![&ob],
    };
    // Ours.
    let mut args = vec!["-o", "ours.o"];
    match flavour {
        Flavour::Legacy => args.push("--abi=legacy"),
        Flavour::Rocm => args.extend(["--abi=rocm", "--offload-arch=gfx90a:xnack+"]),
        _ => {}
    }
    args.extend(&inputs);
    wrap(d, &args)?;
    // The reference.
    match flavour {
        Flavour::OpenMp | Flavour::TwoImages => {
            let mut a = vec!["--kind=openmp", "--triple", TRIPLE, "-o", "ref.bc"];
            a.extend(&inputs);
            sh(d, llvm("llvm-offload-wrapper"), &a)?;
            sh(
                d,
                llvm("llc"),
                &[
                    "-filetype=obj",
                    "-relocation-model=pic",
                    "ref.bc",
                    "-o",
                    "ref.o",
                ],
            )?;
        }
        Flavour::Legacy | Flavour::Rocm => {
            let image = format!("-DIMAGE=\"{}\"", fx.path("app-dev.so"));
            let c = src("ref_wrapper.c");
            let mut a = vec![
                "-fPIC",
                "-O1",
                "-c",
                c.to_str().unwrap(),
                &image,
                "-o",
                "ref.o",
            ];
            if flavour == Flavour::Rocm {
                a.push("-DARCH=\"gfx90a:xnack+\"");
            }
            clang(d, &a)?;
        }
    }
    let legacy = matches!(flavour, Flavour::Legacy | Flavour::Rocm);
    let ours_log = stub_log(d, ld, "ours.o", "prog-ours", legacy)?;
    let ref_log = stub_log(d, ld, "ref.o", "prog-ref", legacy)?;
    if ours_log != ref_log {
        return Err(format!(
            "the stub saw different things:\n--- ours\n{ours_log}--- reference\n{ref_log}"
        )
        .into());
    }
    let (images, elf_at) = match flavour {
        Flavour::TwoImages => (2, vec![1]),
        _ => (1, vec![0]),
    };
    check_log(&ours_log, images, host_entries()?, &elf_at)?;
    if flavour == Flavour::Rocm {
        let want =
            "__tgt_register_image_info version=1 number=0 count=1 arch=gfx90a:xnack+ opts=(null)\n";
        let info = ours_log
            .find(want)
            .ok_or_else(|| format!("no image info call:\n{ours_log}"))?;
        if info > ours_log.find("__tgt_register_lib").unwrap_or(0) {
            return Err(format!("image info registered after the library:\n{ours_log}").into());
        }
        // Both executables carry the target ID where offload-arch looks.
        for exe in ["prog-ours", "prog-ref"] {
            let bytes = std::fs::read(d.join(exe)).map_err(|e| e.to_string())?;
            let f = object::File::parse(&*bytes).map_err(|e| e.to_string())?;
            let s = f
                .section_by_name(".offload_arch_list")
                .ok_or_else(|| format!("{exe}: no .offload_arch_list"))?;
            if s.data().map_err(|e| e.to_string())? != b"gfx90a:xnack+\0" {
                return Err(format!("{exe}: wrong .offload_arch_list").into());
            }
        }
    }
    Ok(())
}

/// GNU readelf and llvm-readelf read `out` without an error or a warning.
fn readelf_ok(d: &Path, out: &str) -> Result<(), Failed> {
    readelf_ok_but(d, out, None)
}

/// [`readelf_ok`], the lines of stderr holding `known` (a warning the
/// tools give for LLVM's objects too) set aside.
fn readelf_ok_but(d: &Path, out: &str, known: Option<&str>) -> Result<(), Failed> {
    for tool in [PathBuf::from("readelf"), llvm("llvm-readelf")] {
        let o = Command::new(&tool)
            .args(["-a", "-W", out])
            .current_dir(d)
            .output()
            .map_err(|e| format!("{}: {e}", tool.display()))?;
        let stderr: String = String::from_utf8_lossy(&o.stderr)
            .lines()
            .filter(|l| known.is_none_or(|k| !l.contains(k)))
            .map(|l| format!("{l}\n"))
            .collect();
        let all = format!("{}{stderr}", String::from_utf8_lossy(&o.stdout));
        if !o.status.success() || !stderr.is_empty() || all.to_lowercase().contains("warning") {
            return Err(format!("{} -a {out}:\n{all}", tool.display()).into());
        }
    }
    Ok(())
}

/// A device image of a few MiB (the app's device library with filler
/// after it, which the loader ignores): its section starts at a multiple
/// of 64 KiB in the object (the fast copy) but asks linkers for 8-byte
/// alignment like LLVM's, the object reads clean, and the program runs.
fn run_large_image(ld: &'static str) -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let mut image = std::fs::read(fx.path("app-dev.so")).map_err(|e| e.to_string())?;
    image.extend(std::iter::repeat_n(0x5a, (3 << 20) + 5));
    std::fs::write(d.join("big.so"), &image).map_err(|e| e.to_string())?;
    wrap(d, &["-o", "wrap.o", "big.so"])?;
    let obj = std::fs::read(d.join("wrap.o")).map_err(|e| e.to_string())?;
    let f = object::File::parse(&*obj).map_err(|e| e.to_string())?;
    let s = f
        .section_by_name(".llvm.offloading")
        .ok_or("no .llvm.offloading")?;
    let (off, size) = s.file_range().ok_or("no file range")?;
    let bytes = usize::try_from(off)
        .ok()
        .and_then(|o| obj.get(o..o + usize::try_from(size).ok()?));
    if off % (64 << 10) != 0 || s.align() != 8 || bytes != Some(&image[..]) {
        return Err(format!(
            "image section at {off:#x}, {size} bytes, align {}: want a 64 KiB \
             multiple, the image, align 8",
            s.align()
        )
        .into());
    }
    readelf_ok(d, "wrap.o")?;
    let mut args = vec![fx.path("app-host.o"), fx.path("main.o"), "wrap.o".into()];
    args.extend(["-o".into(), "prog".into()]);
    args.extend(runtime_libs());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    link(d, ld, &args)?;
    check_app(&run(d, "prog", &[], INFO)?)
}

/// GNU readelf and llvm-readelf read every flavour of our object without a
/// warning, and llvm-objdump finds the embedded OffloadBinary.
fn readelf_clean() -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let ob = fx.path("app-dev.ob");
    let so = fx.path("app-dev.so");
    let cases: [(&str, Vec<&str>); 4] = [
        ("openmp.o", vec![&ob]),
        ("two.o", vec![&ob, &so]),
        ("legacy.o", vec!["--abi=legacy", &ob]),
        ("rocm.o", vec!["--abi=rocm", "--offload-arch=gfx906", &so]),
    ];
    for (out, extra) in &cases {
        let mut args = vec!["-o", *out];
        args.extend(extra);
        wrap(d, &args)?;
        readelf_ok(d, out)?;
    }
    let listing = Command::new(llvm("llvm-objdump"))
        .args(["--offloading", "openmp.o"])
        .current_dir(d)
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&listing.stdout);
    if !text.contains("OFFLOADING IMAGE [0]") || !text.contains(TRIPLE) {
        return Err(format!("llvm-objdump --offloading:\n{text}").into());
    }
    Ok(())
}

/// LLVM's object for `inputs` (llvm-offload-wrapper, then `llc
/// -relocation-model=pic`, as clang-linker-wrapper runs them) as `out`.
fn llvm_wrap(d: &Path, out: &str, inputs: &[&str]) -> Result<Vec<u8>, Failed> {
    llvm_wrap_kind(d, "openmp", out, inputs)
}

/// [`llvm_wrap`] for `--kind=KIND`.
fn llvm_wrap_kind(d: &Path, kind: &str, out: &str, inputs: &[&str]) -> Result<Vec<u8>, Failed> {
    llvm_wrap_for(d, kind, TRIPLE, out, inputs)
}

/// [`llvm_wrap`] for `--kind=KIND` and another host triple.
fn llvm_wrap_for(
    d: &Path,
    kind: &str,
    triple: &str,
    out: &str,
    inputs: &[&str],
) -> Result<Vec<u8>, Failed> {
    let kind = format!("--kind={kind}");
    let mut a = vec![&kind[..], "--triple", triple, "-o", "llvm.bc"];
    a.extend(inputs);
    sh(d, llvm("llvm-offload-wrapper"), &a)?;
    let mut pic = vec![
        "-filetype=obj",
        "-relocation-model=pic",
        "llvm.bc",
        "-o",
        out,
    ];
    pic.extend(llc_cpu_flags(triple));
    sh(d, llvm("llc"), &pic)?;
    std::fs::read(d.join(out)).map_err(|e| e.to_string().into())
}

/// llc's options for `triple` besides the relocation model. riscv64: the
/// ABI of Debian's objects and of clang's default (RVC, double-float),
/// which plain llc does not use.
fn llc_cpu_flags(triple: &str) -> &'static [&'static str] {
    if triple.starts_with("riscv64") {
        &["-mattr=+m,+a,+f,+d,+c", "-target-abi=lp64d"]
    } else {
        &[]
    }
}

/// The raw (not OffloadBinary) device-image fixture.
fn raw_fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/offload_binary/one.bin")
        .to_string_lossy()
        .into_owned()
}

/// `big.so` in `d`: the app's device library `so` followed by 1.5 MiB of
/// filler, an input of more than 1 MiB.
fn write_big_image(d: &Path, so: &str) -> Result<(), Failed> {
    let mut big = std::fs::read(so).map_err(|e| e.to_string())?;
    big.extend((0..(3u32 << 19) + 7).map(|i| (i % 251) as u8));
    std::fs::write(d.join("big.so"), &big).map_err(|e| e.to_string().into())
}

/// Our object and LLVM's for the same `inputs` (ours given `extra` options
/// too), as `NAME.o` and `NAME.llvm.o`: they must be the same bytes.
/// Returns ours.
fn same_as_llvm(
    d: &Path,
    kind: &str,
    triple: &str,
    name: &str,
    extra: &[&str],
    inputs: &[&str],
) -> Result<Vec<u8>, Failed> {
    let theirs = llvm_wrap_for(d, kind, triple, &format!("{name}.llvm.o"), inputs)?;
    let out = format!("{name}.o");
    let mut args = vec!["-o", &out[..]];
    args.extend(extra);
    args.extend(inputs);
    wrap_for(d, kind, triple, &args)?;
    let ours = std::fs::read(d.join(&out)).map_err(|e| e.to_string())?;
    if ours != theirs {
        let at = ours.iter().zip(&theirs).position(|(a, b)| a != b);
        return Err(format!(
            "{name} (--kind={kind}, {triple}): ours ({} bytes) differs from LLVM's ({} bytes) at {at:?}",
            ours.len(),
            theirs.len()
        )
        .into());
    }
    Ok(ours)
}

/// For the same inputs our object for `host` and LLVM's are the same
/// bytes. OpenMP: one OffloadBinary; several inputs mixing raw images and
/// OffloadBinaries (one holding two images, whose first the runtime gets);
/// an empty image first (which moves AArch64's `$d`); and, with
/// `--llc-layout`, an input of more than 1 MiB, which by default starts at
/// a 64 KiB multiple in the file instead and is otherwise unchanged. CUDA
/// and HIP: any one input, embedded as it is (a tiny one keeps the byte
/// array's alignment). The objects of every kind and OpenMP ABI read clean
/// and link into a shared library with ld.lld.
fn same_bytes_as_llc(host: &'static Host) -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let triple = host.triple;
    let ob = fx.path("app-dev.ob");
    let so = fx.path("app-dev.so");
    let raw = &raw_fixture()[..];
    let image =
        |f: &str, arch: &str| format!("--image=file={f},triple={TRIPLE},arch={arch},kind=openmp");
    sh(
        d,
        llvm("llvm-offload-binary"),
        &["-o", "two.ob", &image(&so, "a"), &image(raw, "b")],
    )?;
    write_big_image(d, &so)?;
    std::fs::write(d.join("empty.bin"), b"").map_err(|e| e.to_string())?;
    let cases: [(&str, Vec<&str>, &[&str]); 4] = [
        ("one", vec![&ob], &[]),
        ("mixed", vec![raw, &ob, "two.ob", &so], &[]),
        ("empty-first", vec!["empty.bin", &ob], &[]),
        ("big", vec![raw, "big.so"], &["--llc-layout"]),
    ];
    for (name, inputs, extra) in &cases {
        same_as_llvm(d, "openmp", triple, name, extra, inputs)?;
    }
    std::fs::write(d.join("tiny.bin"), b"\x50\xed\x55\xba\x01\0\x10\0\0")
        .map_err(|e| e.to_string())?;
    std::fs::write(d.join("tiny4.bin"), b"\x50\xed\x55\xba").map_err(|e| e.to_string())?;
    for kind in ["cuda", "hip"] {
        for (input, extra) in [
            (raw, &[][..]),
            (&ob[..], &[]),
            ("tiny.bin", &[]),
            ("tiny4.bin", &[]),
            ("empty.bin", &[]),
            ("big.so", &["--llc-layout"]),
        ] {
            let name = format!("{kind}-{}", input.replace('/', "_"));
            same_as_llvm(d, kind, triple, &name, extra, &[input])?;
        }
        readelf_ok_but(d, &format!("{kind}-tiny4.bin.o"), host.readelf_known)?;
        link_shared(d, host, &format!("{kind}-tiny4.bin.o"))?;
    }
    default_layout_moves_only_the_image(d, triple, raw)?;
    for (name, abi) in [
        ("llvm", "--abi=llvm"),
        ("legacy", "--abi=legacy"),
        ("rocm", "--abi=rocm"),
    ] {
        if name != "llvm" && !host.legacy_abis {
            continue;
        }
        let out = format!("{name}-abi.o");
        let mut args = vec!["-o", &out[..], abi];
        if name == "rocm" {
            args.push("--offload-arch=gfx90a");
        }
        args.push(&ob);
        wrap_for(d, "openmp", triple, &args)?;
        readelf_ok_but(d, &out, host.readelf_known)?;
        link_shared(d, host, &out)?;
    }
    Ok(())
}

/// Without `--llc-layout` only the image section's place differs from
/// LLVM's `big.llvm.o` (made by [`same_bytes_as_llc`] in `d`).
fn default_layout_moves_only_the_image(d: &Path, triple: &str, raw: &str) -> Result<(), Failed> {
    wrap_for(d, "openmp", triple, &["-o", "big-default.o", raw, "big.so"])?;
    let ours = std::fs::read(d.join("big-default.o")).map_err(|e| e.to_string())?;
    let f = object::File::parse(&*ours).map_err(|e| e.to_string())?;
    let s = f
        .section_by_name(".llvm.offloading")
        .ok_or("no .llvm.offloading")?;
    let theirs = std::fs::read(d.join("big.llvm.o")).map_err(|e| e.to_string())?;
    let g = object::File::parse(&*theirs).map_err(|e| e.to_string())?;
    let their_s = g.section_by_name(".llvm.offloading").ok_or("no section")?;
    let (off, their_off) = (s.file_range().unwrap().0, their_s.file_range().unwrap().0);
    if off % (64 << 10) != 0 || their_off % (64 << 10) == 0 || s.data().ok() != their_s.data().ok()
    {
        return Err(
            format!("default layout: image section at {off:#x}, llc's at {their_off:#x}").into(),
        );
    }
    Ok(())
}

/// `--kind=cuda|hip` with a recording stand-in for the runtime
/// (`wrap/fatbin_stub.c`, which also holds one host entry of every kind,
/// type and flag the registration loop tells apart): the program built with
/// our object prints exactly the calls docs/formats/wrapper-objects.md describes, and the
/// same as with LLVM's object.
fn run_fatbin(kind: &'static str, ld: &'static str) -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let hip = kind == "hip";
    let input = fatbin_input(d, kind)?;
    wrap_kind(d, kind, &["-o", "ours.o", input])?;
    llvm_wrap_kind(d, kind, "ref.o", &[input])?;
    let stub = src("fatbin_stub.c");
    let mut c = vec!["-O1", "-c", stub.to_str().unwrap(), "-o", "stub.o"];
    if hip {
        c.push("-DHIP");
    }
    clang(d, &c)?;
    let mut logs = Vec::new();
    for (obj, exe) in [("ours.o", "prog-ours"), ("ref.o", "prog-ref")] {
        link(d, ld, &["stub.o", obj, "-o", exe])?;
        logs.push(run(d, exe, &[], &[])?.stdout);
    }
    let want = fatbin_want(hip);
    if logs[0] != want {
        return Err(format!("with our object:\n{}--- want:\n{want}", logs[0]).into());
    }
    if logs[1] != want {
        return Err(format!("with LLVM's object:\n{}--- want:\n{want}", logs[1]).into());
    }
    Ok(())
}

/// The device input of the `--kind=KIND` run trials, made in `d`: for HIP
/// an offload bundle as the 22 linker wrapper makes one, for CUDA an
/// NVIDIA fatbin header (magic, version 1, header size 16, payload size)
/// and a payload (the wrapper does not look inside). Returns its name.
fn fatbin_input(d: &Path, kind: &str) -> Result<&'static str, Failed> {
    let fx = fixture()?;
    if kind == "hip" {
        sh(
            d,
            llvm("clang-offload-bundler"),
            &[
                "-type=o",
                "-bundle-align=4096",
                "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx90a",
                "-input=/dev/null",
                &format!("-input={}", fx.path("app-dev.so")),
                "-output=dev.hipfb",
            ],
        )?;
        Ok("dev.hipfb")
    } else {
        let mut fatbin = Vec::new();
        fatbin.extend_from_slice(&0xba55_ed50u32.to_le_bytes());
        fatbin.extend_from_slice(&1u16.to_le_bytes());
        fatbin.extend_from_slice(&16u16.to_le_bytes());
        fatbin.extend_from_slice(&64u64.to_le_bytes());
        fatbin.extend(0..64u8);
        std::fs::write(d.join("dev.fatbin"), &fatbin).map_err(|e| e.to_string())?;
        Ok("dev.fatbin")
    }
}

/// What `wrap/fatbin_stub.c` prints for a program whose wrapper object
/// registers [`fatbin_input`] (docs/formats/wrapper-objects.md).
fn fatbin_want(hip: bool) -> String {
    let (magic, starts) = if hip {
        ("0x48495046", "5f 5f 43 4c")
    } else {
        ("0x466243b1", "50 ed 55 ba")
    };
    let function = |name: &str| {
        format!(
            "RegisterFunction kernel name={name} device={name} limit=-1 rest=(nil) (nil) (nil) (nil) (nil)\n"
        )
    };
    let mut want =
        format!("RegisterFatBinary magic={magic} version=1 image starts {starts} reserved=(nil)\n");
    want += &function("kernel");
    want += "RegisterVar var name=var device=var extern=1 size=4 constant=1 global=0\n";
    want += "RegisterVar plain_var name=plain_var device=plain_var extern=0 size=4 constant=0 global=0\n";
    want += "RegisterManagedVar ptr=managed init=managed name=managed size=8 align=16\n";
    if hip {
        want += "RegisterSurface surface name=surface device=surface dim=3 extern=1\n";
        want += "RegisterTexture texture name=texture device=texture dim=5 normalized=1 extern=0\n";
    }
    want += &function("kernel_flags");
    if !hip {
        want += "RegisterFatBinaryEnd\n";
    }
    want += "main\nUnregisterFatBinary\n";
    want
}

/// Links `host`'s object `obj` alone into a shared library with ld.lld,
/// which must say nothing.
fn link_shared(d: &Path, host: &Host, obj: &str) -> Result<(), Failed> {
    let lib = format!("{obj}.so");
    let stderr = sh(
        d,
        llvm("ld.lld"),
        &["-m", host.lld_emulation, "-shared", "-o", &lib, obj],
    )?;
    if !stderr.is_empty() {
        return Err(format!("ld.lld {obj}:\n{stderr}").into());
    }
    Ok(())
}

/// The legacy IR (LLVM ≤ 19's shape) made from LLVM 22's wrapper module
/// `ll` (llvm-dis text): the old module id and entry section, a global
/// hidden dummy declared before the bounds, priority-1 constructor and
/// destructor instead of `atexit`.
fn legacy_ir(ll: &str) -> Result<String, Failed> {
    // Each line but the images' bytes (which may spell the names too).
    let lines: Vec<String> = ll
        .lines()
        .map(|l| {
            if l.contains(" x i8] c\"") {
                l.to_string()
            } else {
                legacy_line(l)
            }
        })
        .collect();
    let ll = lines.join("\n") + "\n";
    let ll = ll
        .replace(
            "{ i32 101, ptr @.omp_offloading.descriptor_reg, ptr null }]",
            "{ i32 1, ptr @.omp_offloading.descriptor_reg, ptr null }]\n\
             @llvm.global_dtors = appending global [1 x { i32, ptr, ptr }] \
             [{ i32, ptr, ptr } { i32 1, ptr @.omp_offloading.descriptor_unreg, ptr null }]",
        )
        .replace(
            "  %0 = call i32 @atexit(ptr @.omp_offloading.descriptor_unreg)\n",
            "",
        )
        .replace("declare i32 @atexit(ptr)\n", "");
    let mut lines: Vec<&str> = ll.lines().collect();
    let dummy = lines
        .iter()
        .position(|l| l.starts_with("@__dummy."))
        .ok_or("no dummy in the wrapper module")?;
    let dummy = lines.remove(dummy);
    let start = lines
        .iter()
        .position(|l| l.starts_with("@__start_"))
        .ok_or("no bounds in the wrapper module")?;
    lines.insert(start, dummy);
    Ok(lines.join("\n") + "\n")
}

/// One line of the module with the legacy names.
fn legacy_line(l: &str) -> String {
    l.replace("\"offload.wrapper.module\"", "\"offload.wrapper.object\"")
        .replace("llvm_offload_entries", "omp_offloading_entries")
        .replace(
            "@__dummy.omp_offloading_entries = internal constant",
            "@__dummy.omp_offloading.entry = hidden constant",
        )
        .replace(
            "ptr @__dummy.omp_offloading_entries",
            "ptr @__dummy.omp_offloading.entry",
        )
}

/// `--abi=legacy` on every host that writes it: llc 22's bytes for the
/// legacy IR ([`legacy_ir`]), GlobalMerge's layout on powerpc64le
/// included (small inputs merged, large ones not).
fn legacy_like_llc() -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let ob = fx.path("app-dev.ob");
    let raw = raw_fixture();
    std::fs::write(d.join("s3.bin"), b"abc").map_err(|e| e.to_string())?;
    let big: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(d.join("big.bin"), big).map_err(|e| e.to_string())?;
    let sets: [Vec<&str>; 3] = [
        vec![&ob],
        vec!["s3.bin", &raw, &ob],
        vec!["big.bin", "s3.bin", &ob],
    ];
    for host in HOSTS.iter().filter(|h| h.legacy_abis) {
        for (i, inputs) in sets.iter().enumerate() {
            let mut a = vec!["--kind=openmp", "--triple", host.triple, "-o", "l.bc"];
            a.extend(inputs);
            sh(d, llvm("llvm-offload-wrapper"), &a)?;
            sh(d, llvm("llvm-dis"), &["l.bc", "-o", "l.ll"])?;
            let ll = std::fs::read_to_string(d.join("l.ll")).map_err(|e| e.to_string())?;
            std::fs::write(d.join("legacy.ll"), legacy_ir(&ll)?).map_err(|e| e.to_string())?;
            let theirs = format!("{}-{i}.llvm.o", host.arch());
            let pic = ["-filetype=obj", "-relocation-model=pic", "legacy.ll", "-o"];
            let mut a = pic.to_vec();
            a.push(&theirs);
            a.extend(llc_cpu_flags(host.triple));
            sh(d, llvm("llc"), &a)?;
            let ours = format!("{}-{i}.o", host.arch());
            let mut a = vec!["--abi=legacy", "-o", &ours[..]];
            a.extend(inputs);
            wrap_for(d, "openmp", host.triple, &a)?;
            let read = |f: &str| std::fs::read(d.join(f)).map_err(|e| e.to_string());
            if read(&ours)? != read(&theirs)? {
                return Err(format!("{ours}: differs from llc's {theirs} ({inputs:?})").into());
            }
        }
    }
    Ok(())
}

/// The ROCm IR (the AMD clang-offload-wrapper's shape, docs/formats/wrapper-objects.md
/// §7.3) made from the legacy IR `ll` ([`legacy_ir`]) and each image's
/// target ID: per image, after the descriptor, its target ID in
/// `.offload_arch_list` (`__offload_arch_N`) and an internal
/// `__tgt_image_info` pointing at it (`.offload_image_info_N`), each
/// passed to `__tgt_register_image_info` before `__tgt_register_lib`.
fn rocm_ir(ll: &str, archs: &[&str]) -> Result<String, Failed> {
    let n = archs.len();
    let mut out = Vec::new();
    let mut found = 0;
    for l in ll.lines() {
        if l.starts_with("  call void @__tgt_register_lib(") {
            found += 1;
            for i in 0..n {
                out.push(format!(
                    "  call void @__tgt_register_image_info(ptr @.offload_image_info_{i})"
                ));
            }
        } else if l.starts_with("declare void @__tgt_register_lib(") {
            found += 1;
            out.push("declare void @__tgt_register_image_info(ptr)\n".into());
        }
        out.push(l.to_string());
        if l.starts_with("%__tgt_bin_desc = type") {
            found += 1;
            out.push("%__tgt_image_info = type { i32, i32, i32, ptr, ptr }".into());
        } else if l.starts_with("@.omp_offloading.descriptor = ") {
            found += 1;
            for (i, arch) in archs.iter().enumerate() {
                out.push(format!(
                    "@__offload_arch_{i} = internal constant [{} x i8] c\"{arch}\\00\", \
                     section \".offload_arch_list\"",
                    arch.len() + 1
                ));
                out.push(format!(
                    "@.offload_image_info_{i} = internal constant %__tgt_image_info \
                     {{ i32 1, i32 {i}, i32 {n}, ptr @__offload_arch_{i}, ptr null }}"
                ));
            }
        }
    }
    if found != 4 {
        return Err("the legacy module is not shaped as expected".into());
    }
    Ok(out.join("\n") + "\n")
}

/// `--abi=rocm` on every host that writes it: llc 22's object for the
/// ROCm IR ([`rocm_ir`]) for one image, several (an empty one among them),
/// and target IDs of more than 16 bytes (which llc aligns to 16).
/// Writes `d/rocm.ll`: the ROCm IR for `triple` made from LLVM 22's
/// wrapper module of `inputs` (through [`legacy_ir`] and [`rocm_ir`]), one
/// target ID from `archs` per input.
fn write_rocm_ll(d: &Path, triple: &str, inputs: &[&str], archs: &[&str]) -> Result<(), Failed> {
    let mut a = vec!["--kind=openmp", "--triple", triple, "-o", "r.bc"];
    a.extend(inputs);
    sh(d, llvm("llvm-offload-wrapper"), &a)?;
    sh(d, llvm("llvm-dis"), &["r.bc", "-o", "r.ll"])?;
    let ll = std::fs::read_to_string(d.join("r.ll")).map_err(|e| e.to_string())?;
    let ir = rocm_ir(&legacy_ir(&ll)?, archs)?;
    std::fs::write(d.join("rocm.ll"), ir).map_err(|e| e.to_string())?;
    Ok(())
}

fn rocm_like_llc() -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let ob = fx.path("app-dev.ob");
    let raw = raw_fixture();
    std::fs::write(d.join("s3.bin"), b"abc").map_err(|e| e.to_string())?;
    std::fs::write(d.join("empty.bin"), b"").map_err(|e| e.to_string())?;
    let sets: [Vec<(&str, &str)>; 3] = [
        vec![(&ob, "gfx90a:xnack+")],
        vec![
            ("s3.bin", "gfx906"),
            ("empty.bin", "gfx1030"),
            (&raw, "gfx90a"),
        ],
        vec![
            (&raw, "gfx90a:sramecc+:xnack+"),
            ("s3.bin", "gfx9"),
            (&ob, "gfx940:sramecc-:xnack-"),
        ],
    ];
    for host in HOSTS.iter().filter(|h| h.legacy_abis) {
        for (i, set) in sets.iter().enumerate() {
            let inputs: Vec<&str> = set.iter().map(|s| s.0).collect();
            let archs: Vec<&str> = set.iter().map(|s| s.1).collect();
            write_rocm_ll(d, host.triple, &inputs, &archs)?;
            let theirs = format!("{}-rocm-{i}.llvm.o", host.arch());
            let mut a = vec!["-filetype=obj", "-relocation-model=pic", "rocm.ll", "-o"];
            a.push(&theirs);
            a.extend(llc_cpu_flags(host.triple));
            sh(d, llvm("llc"), &a)?;
            let ours = format!("{}-rocm-{i}.o", host.arch());
            let flags: Vec<String> = archs
                .iter()
                .map(|a| format!("--offload-arch={a}"))
                .collect();
            let mut a = vec!["--abi=rocm", "-o", &ours[..]];
            for (flag, input) in flags.iter().zip(&inputs) {
                a.extend([&flag[..], input]);
            }
            wrap_for(d, "openmp", host.triple, &a)?;
            let read = |f: &str| std::fs::read(d.join(f)).map_err(|e| e.to_string());
            if read(&ours)? != read(&theirs)? {
                return Err(format!("{ours}: differs from llc's {theirs} ({set:?})").into());
            }
        }
    }
    Ok(())
}

/// Hosts whose OS changes the object (each host CPU with each of
/// [`OSES`]): our objects are LLVM's bytes for each kind.
fn other_oses() -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let ob = fx.path("app-dev.ob");
    for host in HOSTS {
        for os in OSES {
            let triple = format!("{}-{os}", host.arch());
            if NOT_YET_LLVM.contains(&&triple[..]) {
                continue;
            }
            for kind in ["openmp", "cuda", "hip"] {
                same_as_llvm(d, kind, &triple, &format!("{triple}-{kind}"), &[], &[&ob])?;
            }
        }
    }
    Ok(())
}

/// Hundreds of inputs with a low limit on open files: small inputs are only
/// mapped, so the wrap succeeds, and gives LLVM's bytes. Then more than
/// 1022 inputs for powerpc64le, where the image array and the descriptor
/// no longer fit in one merged global (GlobalMerge's 0x7fff bytes): llc's
/// bytes for the LLVM and the legacy ABI. And the ROCm ABI on
/// powerpc64le, whose image infos merge too, about each count where
/// llc's layout changes: llc's bytes for the ROCm IR ([`rocm_ir`]).
fn many_inputs() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let mut names = Vec::new();
    for i in 0..2047u32 {
        let name = format!("i{i:04}.bin");
        let bytes = [b"img\0\0".as_slice(), &i.to_le_bytes(), b"tail"].concat();
        std::fs::write(d.join(&name), bytes).map_err(|e| e.to_string())?;
        names.push(name);
    }
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    let inputs = &all[..600];
    let script = format!(
        "ulimit -n 64 && exec \"$0\" wrap --kind=openmp --triple={TRIPLE} -o many.o {}",
        inputs.join(" ")
    );
    let ours_bin = ours();
    sh(d, "bash", &["-c", &script, ours_bin.to_str().unwrap()])?;
    let theirs = llvm_wrap(d, "many.llvm.o", inputs)?;
    let ours = std::fs::read(d.join("many.o")).map_err(|e| e.to_string())?;
    if ours != theirs {
        return Err("600 inputs: ours differs from LLVM's".into());
    }
    let ppc = "powerpc64le-unknown-linux-gnu";
    for n in [1023, 1100] {
        same_as_llvm(d, "openmp", ppc, &format!("ppc-{n}"), &[], &all[..n])?;
    }
    let all = &all[..1100];
    let mut a = vec!["--kind=openmp", "--triple", ppc, "-o", "l.bc"];
    a.extend(all);
    sh(d, llvm("llvm-offload-wrapper"), &a)?;
    sh(d, llvm("llvm-dis"), &["l.bc", "-o", "l.ll"])?;
    let ll = std::fs::read_to_string(d.join("l.ll")).map_err(|e| e.to_string())?;
    std::fs::write(d.join("legacy.ll"), legacy_ir(&ll)?).map_err(|e| e.to_string())?;
    let pic = ["-filetype=obj", "-relocation-model=pic", "legacy.ll"];
    sh(
        d,
        llvm("llc"),
        &[&pic[..], &["-o", "legacy.llvm.o"]].concat(),
    )?;
    let mut a = vec!["--abi=legacy", "-o", "legacy.o"];
    a.extend(all);
    wrap_for(d, "openmp", ppc, &a)?;
    let read = |f: &str| std::fs::read(d.join(f)).map_err(|e| e.to_string());
    if read("legacy.o")? != read("legacy.llvm.o")? {
        return Err("1100 inputs, legacy ABI, powerpc64le: ours differs from llc's".into());
    }
    // ROCm on powerpc64le. Up to 511 images the array, the descriptor and
    // the infos make one merged global; from 512 the array is left alone;
    // at 1023 the last info too; from 1024 (the array then too large to
    // merge) the infos past the 1022nd fill further merged globals (a
    // third at 2047, whose target IDs, two in three longer than 16 bytes,
    // fill two).
    let short = ["gfx906", "gfx90a:sramecc+:xnack-", "gfx1030"];
    let long = [
        "gfx90a:sramecc+:xnack-",
        "gfx942:sramecc+:xnack+",
        "gfx1030",
    ];
    let names: Vec<String> = (0..2047u32).map(|i| format!("i{i:04}.bin")).collect();
    for n in [511, 512, 1022, 1023, 1024, 2047] {
        let cycle = if n == 2047 { long } else { short };
        let archs: Vec<&str> = (0..n).map(|i| cycle[i % 3]).collect();
        let inputs: Vec<&str> = names[..n].iter().map(String::as_str).collect();
        write_rocm_ll(d, ppc, &inputs, &archs)?;
        let pic = ["-filetype=obj", "-relocation-model=pic", "rocm.ll"];
        sh(d, llvm("llc"), &[&pic[..], &["-o", "rocm.llvm.o"]].concat())?;
        let flags: Vec<String> = archs
            .iter()
            .map(|a| format!("--offload-arch={a}"))
            .collect();
        let mut a = vec!["--abi=rocm", "-o", "rocm.o"];
        for (flag, input) in flags.iter().zip(&inputs) {
            a.extend([&flag[..], input]);
        }
        wrap_for(d, "openmp", ppc, &a)?;
        if read("rocm.o")? != read("rocm.llvm.o")? {
            let e = format!("{n} inputs, ROCm ABI, powerpc64le: ours differs from llc's");
            return Err(e.into());
        }
    }
    Ok(())
}

/// Bad input: one clear error naming the file, exit 1, no output.
fn bad_input() -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let ob = std::fs::read(fx.path("app-dev.ob")).map_err(|e| e.to_string())?;
    std::fs::write(d.join("truncated.ob"), &ob[..ob.len() / 2]).map_err(|e| e.to_string())?;
    std::fs::write(d.join("header.ob"), &ob[..20]).map_err(|e| e.to_string())?;
    std::fs::create_dir(d.join("adir")).map_err(|e| e.to_string())?;
    let good = fx.path("app-dev.ob");
    let cases: &[(&[&str], &str)] = &[
        (&["--kind=openmp", "missing.ob"], "missing.ob"),
        (&["--kind=openmp", "adir"], "adir"),
        (&["--kind=openmp", &good, "truncated.ob"], "truncated.ob"),
        (&["--kind=openmp", "header.ob"], "header.ob"),
        (&["--kind=sycl", &good], "sycl"),
        (&["--kind=cuda", &good, &good], "single fatbinary"),
        (
            &["--kind=hip", "--abi=legacy", &good],
            "only for --kind=openmp",
        ),
        (&["--kind=hip", "missing.hipfb"], "missing.hipfb"),
        (
            &["--kind=cuda", "--abi=rocm", &fx.path("app-dev.so")],
            "only for --kind=openmp",
        ),
        (&["--kind=openmp", "--abi=new", &good], "new"),
        (
            &[
                "--kind=openmp",
                "--abi=rocm",
                "--triple=powerpc64le-unknown-linux-gnu",
                &fx.path("app-dev.so"),
            ],
            "app-dev.so",
        ),
        (
            &["--kind=openmp", "--triple=x86_64-pc-windows-msvc", &good],
            "windows",
        ),
        (&["--kind=openmp", "--triple=bogus", &good], "bogus"),
        (
            &["--kind=openmp", "--abi=rocm", &fx.path("app-dev.so")],
            "app-dev.so",
        ),
        (&["--kind=openmp"], "no input"),
        (&[&good], "--kind"),
    ];
    for (args, mention) in cases {
        let mut all = vec!["wrap", "-o", "out.o"];
        all.extend_from_slice(args);
        let o = Command::new(ours())
            .args(&all)
            .current_dir(d)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        let stderr = String::from_utf8_lossy(&o.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let ok = o.status.code() == Some(1)
            && lines.len() == 1
            && lines[0].starts_with("error: ")
            && lines[0].contains(mention)
            && !stderr.contains("panicked");
        if !ok {
            return Err(format!("{all:?}: exit {:?}, stderr:\n{stderr}", o.status.code()).into());
        }
        let left: Vec<_> = std::fs::read_dir(d)
            .map_err(|e| e.to_string())?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n == "out.o" || n.starts_with(".offload-kit"))
            .collect();
        if !left.is_empty() {
            return Err(format!("{all:?} left {left:?} behind").into());
        }
    }
    Ok(())
}

/// Writing over an existing output replaces it (no temporary file left
/// behind); `-o -` writes the same bytes to standard output; the output does
/// not depend on the run.
fn outputs() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let dev = fixtures.join("wrap/device.ob");
    let gpu = fixtures.join("offload_binary/one.bin");
    let (dev, gpu) = (dev.to_str().unwrap(), gpu.to_str().unwrap());
    wrap(d, &["-o", "out.o", gpu])?;
    let first = std::fs::read(d.join("out.o")).map_err(|e| e.to_string())?;
    wrap(d, &["-o", "out.o", dev])?;
    let second = std::fs::read(d.join("out.o")).map_err(|e| e.to_string())?;
    if first == second || !second.windows(8).any(|w| w == b"generic\0") {
        return Err("the second wrap did not replace the output".into());
    }
    wrap(d, &["-o", "again.o", dev])?;
    if std::fs::read(d.join("again.o")).map_err(|e| e.to_string())? != second {
        return Err("two runs wrote different bytes".into());
    }
    let o = Command::new(ours())
        .args(["wrap", "--kind=openmp", "--triple", TRIPLE, "-o", "-", dev])
        .current_dir(d)
        .output()
        .map_err(|e| e.to_string())?;
    if !o.status.success() || o.stdout != second {
        return Err(format!("-o - wrote {} bytes, want {}", o.stdout.len(), second.len()).into());
    }
    let names: Vec<String> = std::fs::read_dir(d)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if names.iter().any(|n| n.starts_with('.') || n == "-") {
        return Err(format!("left behind: {names:?}").into());
    }
    Ok(())
}

/// Every trial of this module.
pub fn tests() -> Vec<Trial> {
    let mut v = Vec::new();
    let base = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut t = BUILD_TOOLS.to_vec();
        t.extend_from_slice(extra);
        t
    };
    for &(ld, prog) in LINKERS {
        for (name, shape) in [
            ("pie", Shape::Pie),
            ("no_pie", Shape::NoPie),
            ("shared", Shape::Shared),
            ("dlopen", Shape::Dlopen),
            ("gc_sections", Shape::GcSections),
        ] {
            v.push(trial(
                format!("wrap::run::{ld}::{name}"),
                &base(&[prog]),
                move || run_shape(ld, shape),
            ));
        }
        v.push(trial(
            format!("wrap::run::{ld}::two_images"),
            &base(&[prog]),
            move || run_two_images(ld),
        ));
        v.push(trial(
            format!("wrap::run::{ld}::legacy_abi"),
            &base(&[prog]),
            move || run_legacy(ld),
        ));
    }
    v.push(trial(
        "wrap::run::raw_image",
        &base(&["ld.bfd"]),
        run_raw_image,
    ));
    for (ld, prog) in [("bfd", "ld.bfd"), ("lld", "ld.lld")] {
        v.push(trial(
            format!("wrap::run::{ld}::large_image"),
            &base(&[prog, "readelf", "llvm-readelf"]),
            move || run_large_image(ld),
        ));
    }
    for ld in ["bfd", "lld"] {
        let prog = if ld == "bfd" { "ld.bfd" } else { "ld.lld" };
        for (name, flavour) in [
            ("openmp", Flavour::OpenMp),
            ("two_images", Flavour::TwoImages),
            ("legacy", Flavour::Legacy),
            ("rocm", Flavour::Rocm),
        ] {
            let tools = base(&[prog, "llvm-offload-wrapper", "llc"]);
            v.push(trial(
                format!("wrap::stub::{ld}::{name}"),
                &tools,
                move || differential(flavour, ld),
            ));
        }
    }
    v.push(trial(
        "wrap::readelf",
        &base(&["readelf", "llvm-readelf", "llvm-objdump"]),
        readelf_clean,
    ));
    for (ld, prog) in [("bfd", "ld.bfd"), ("lld", "ld.lld")] {
        for kind in ["cuda", "hip"] {
            v.push(trial(
                format!("wrap::fatbin::{ld}::{kind}"),
                &base(&[prog, "llvm-offload-wrapper", "llc", "clang-offload-bundler"]),
                move || run_fatbin(kind, ld),
            ));
        }
    }
    for host in HOSTS {
        v.push(trial(
            format!("wrap::same_bytes_as_llc::{}", host.arch()),
            &base(&[
                "llvm-offload-wrapper",
                "llc",
                "ld.lld",
                "readelf",
                "llvm-readelf",
            ]),
            move || same_bytes_as_llc(host),
        ));
    }
    v.push(trial(
        "wrap::legacy_like_llc",
        &base(&["llvm-offload-wrapper", "llvm-dis", "llc"]),
        legacy_like_llc,
    ));
    v.push(trial(
        "wrap::rocm_like_llc",
        &base(&["llvm-offload-wrapper", "llvm-dis", "llc"]),
        rocm_like_llc,
    ));
    v.push(trial(
        "wrap::other_oses",
        &base(&["llvm-offload-wrapper", "llc"]),
        other_oses,
    ));
    v.push(trial(
        "wrap::many_inputs",
        &["bash", "llvm-offload-wrapper", "llc", "llvm-dis"],
        many_inputs,
    ));
    v.extend(cpus::tests());
    v.push(trial("wrap::bad_input", &base(&[]), bad_input));
    v.push(trial("wrap::outputs", &[], outputs));
    v
}

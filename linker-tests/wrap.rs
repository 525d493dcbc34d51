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
//!
//! This file holds the fixture and the helpers that build, wrap, link and
//! run; `runs.rs` has the programs run on libomptarget, `stub.rs` the
//! differential trials, `llc.rs` the objects compared byte for byte with
//! llc's, `cpus.rs` every host CPU, `coff.rs` Windows hosts, `inputs.rs`
//! bad inputs and outputs.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use libtest_mimic::{Failed, Trial};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _};

use crate::util::{llvm, ours, tempdir};

test_files! {
    runs,
    stub,
    llc,
    cpus,
    coff,
}
mod inputs;

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

/// The tools every trial needs, then `extra`.
fn base(extra: &[&'static str]) -> Vec<&'static str> {
    let mut t = BUILD_TOOLS.to_vec();
    t.extend_from_slice(extra);
    t
}

/// Every trial of this module.
pub fn tests() -> Vec<Trial> {
    let mut v = file_trials();
    v.push(trial!(inputs::bad_input, &base(&[])));
    v.push(trial!(inputs::outputs, &[]));
    v
}

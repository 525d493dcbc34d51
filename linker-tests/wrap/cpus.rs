//! Every host CPU, run: for each CPU of [`HOSTS`](super::HOSTS) and each
//! kind, a static program for that CPU is linked (ld.lld and GNU ld) with
//! our wrapper object and a recording stand-in for the runtime, and run —
//! natively on x86_64, under qemu-user elsewhere. The stand-in must see the
//! same registration as with LLVM's object (llvm-offload-wrapper + llc for
//! that CPU): descriptor, image sizes and hashes, entry bounds and entries,
//! call order, unregistration at exit.
//!
//! OpenMP: the host object is clang-22's for the CPU (`app.c`,
//! `--offload-host-only`, so its 56-byte entries are real), linked with
//! `wrap/stub.c`, `wrap/stub_main.c` and `wrap/omp_stubs.c` (the runtime
//! calls `app.c` makes, never reached). The legacy and ROCm ABIs run the
//! same program with its entries rewritten in the 32-byte layout
//! ([`super::legacy_entries`]) against `wrap/ref_wrapper.c` built for the
//! CPU, as LLVM 22 writes neither ABI. CUDA and HIP: `wrap/fatbin_stub.c`,
//! with the calls [`super::fatbin_want`] lists.
//!
//! And the real runtime on a second CPU: an aarch64 OpenMP program with
//! our object, run under qemu-aarch64 with Debian's arm64 libomptarget 22
//! ([`run_real_aarch64_runtime`]).

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use super::{
    HOSTS, Host, Ran, check_app, check_log, clang, fatbin_input, fatbin_want, legacy_entries,
    llvm_wrap_for, sh, src,
};
use crate::util::{ours, tempdir};

/// How programs for a host CPU are built and run here.
struct Runner {
    /// The CPU, as its triple spells it.
    arch: &'static str,
    /// clang's `--target` for the CPU's Debian libraries.
    target: &'static str,
    /// The qemu-user program that runs it; `None` for this machine's CPU.
    qemu: Option<&'static str>,
    /// GNU ld for the CPU (Debian's `binutils-<triple>`).
    gnu_ld: &'static str,
    /// The OpenMP offload target of the host object: the CPU itself where
    /// clang 22 offloads to it, else x86_64 (only the host side is used).
    offload_target: &'static str,
}

/// One row per CPU of [`HOSTS`]; a CPU without a row fails
/// `wrap::cpus::every_host_runs`.
const RUNNERS: &[Runner] = &[
    Runner {
        arch: "x86_64",
        target: "x86_64-linux-gnu",
        qemu: None,
        gnu_ld: "ld.bfd",
        offload_target: "x86_64-unknown-linux-gnu",
    },
    Runner {
        arch: "aarch64",
        target: "aarch64-linux-gnu",
        qemu: Some("qemu-aarch64"),
        gnu_ld: "aarch64-linux-gnu-ld",
        offload_target: "aarch64-unknown-linux-gnu",
    },
    Runner {
        arch: "powerpc64le",
        target: "powerpc64le-linux-gnu",
        qemu: Some("qemu-ppc64le"),
        gnu_ld: "powerpc64le-linux-gnu-ld",
        offload_target: "powerpc64le-unknown-linux-gnu",
    },
    Runner {
        arch: "s390x",
        target: "s390x-linux-gnu",
        qemu: Some("qemu-s390x"),
        gnu_ld: "s390x-linux-gnu-ld",
        offload_target: "s390x-unknown-linux-gnu",
    },
    Runner {
        arch: "riscv64",
        target: "riscv64-linux-gnu",
        qemu: Some("qemu-riscv64"),
        gnu_ld: "riscv64-linux-gnu-ld",
        offload_target: "x86_64-unknown-linux-gnu",
    },
];

fn runner(host: &Host) -> Option<&'static Runner> {
    RUNNERS.iter().find(|r| r.arch == host.arch())
}

/// The static C library for the CPU (Debian's `libc6-dev-<arch>-cross`,
/// or the system's own for this machine's CPU).
fn libc(r: &Runner) -> String {
    if r.qemu.is_some() {
        format!("/usr/{}/lib/libc.a", r.target)
    } else {
        format!("/usr/lib/{}/libc.a", r.target)
    }
}

/// The tools a trial for `r` linked by `ld` needs.
fn tools(r: &Runner, ld: &str) -> Vec<&'static str> {
    let mut t = vec![
        "clang",
        "llvm-offload-wrapper",
        "llc",
        "llvm-offload-binary",
    ];
    t.push(if ld == "lld" { "ld.lld" } else { r.gnu_ld });
    t.extend(r.qemu);
    t.push(Box::leak(libc(r).into_boxed_str()));
    t
}

/// Compiles C sources for `r` into objects in `d`.
fn compile(d: &Path, r: &Runner, sources: &[(&str, &str, &[&str])]) -> Result<(), Failed> {
    for (c, o, extra) in sources {
        let c = src(c);
        let target = format!("--target={}", r.target);
        let mut a = vec![&target[..], "-O1", "-c", c.to_str().unwrap(), "-o", o];
        a.extend_from_slice(extra);
        clang(d, &a)?;
    }
    Ok(())
}

/// Links `objects` statically for `r` with `ld` into `exe` and runs it;
/// returns what it printed. The link must not warn.
fn link_and_run(
    d: &Path,
    r: &Runner,
    ld: &str,
    objects: &[&str],
    exe: &str,
) -> Result<String, Failed> {
    let target = format!("--target={}", r.target);
    let fuse = format!("-fuse-ld={ld}");
    let mut a = vec![&target[..], &fuse[..], "-static"];
    a.extend_from_slice(objects);
    a.extend(["-o", exe]);
    let stderr = clang(d, &a)?;
    if stderr.to_lowercase().contains("warning") {
        return Err(format!("linking {exe} for {} with {ld} warned:\n{stderr}", r.arch).into());
    }
    let exe_path = d.join(exe);
    let exe_path = exe_path.to_str().unwrap();
    let (prog, args) = match r.qemu {
        Some(q) => (q, vec![exe_path]),
        None => (exe_path, vec![]),
    };
    let out = std::process::Command::new(prog)
        .args(&args)
        .current_dir(d)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {prog}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "{exe} ({}) exited with {}:\n{stdout}{}",
            r.arch,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(stdout)
}

/// Our object for `triple` and `kind` from `inputs`, as `out`.
fn ours_for(d: &Path, kind: &str, triple: &str, out: &str, inputs: &[&str]) -> Result<(), Failed> {
    let kind = format!("--kind={kind}");
    let mut a = vec!["wrap", &kind[..], "--triple", triple, "-o", out];
    a.extend_from_slice(inputs);
    sh(d, ours(), &a).map(|_| ())
}

/// The OpenMP ABIs a program is run with on every CPU that writes them.
#[derive(Clone, Copy, PartialEq)]
enum OmpAbi {
    /// `--abi=llvm`, against llvm-offload-wrapper + llc for the CPU.
    Llvm,
    /// `--abi=legacy`, against `wrap/ref_wrapper.c` built for the CPU
    /// (LLVM 22 has no tool that writes it).
    Legacy,
    /// `--abi=rocm`, against `wrap/ref_wrapper.c` with `-DARCH`.
    Rocm,
}

impl OmpAbi {
    fn name(self) -> &'static str {
        match self {
            OmpAbi::Llvm => "openmp",
            OmpAbi::Legacy => "openmp_legacy",
            OmpAbi::Rocm => "openmp_rocm",
        }
    }
}

/// The target ID the ROCm runs register.
const ROCM_ARCH: &str = "gfx90a:xnack+";

/// OpenMP on `host` with `abi`, linked by `ld`: the same log with our
/// object and the reference, and the facts [`check_log`] requires (for
/// ROCm, the image info registered before the library).
fn run_openmp(host: &Host, ld: &str, abi: OmpAbi) -> Result<(), Failed> {
    let r = runner(host).ok_or("no runner")?;
    let t = tempdir();
    let d = t.path();
    let offload = format!("-fopenmp-targets={}", r.offload_target);
    let entry_size = if abi == OmpAbi::Llvm {
        "-DENTRY_SIZE=56"
    } else {
        "-DENTRY_SIZE=32"
    };
    compile(
        d,
        r,
        &[
            (
                "app.c",
                "app-host.o",
                &["-fopenmp", &offload, "--offload-host-only"],
            ),
            ("stub.c", "stub.o", &[entry_size]),
            ("stub_main.c", "stub_main.o", &[]),
            ("omp_stubs.c", "omp_stubs.o", &[]),
        ],
    )?;
    let host_obj = std::fs::read(d.join("app-host.o"))?;
    let entries = offload_entries(&host_obj)?;
    // The device image: any ELF file does for the stand-in, packed as an
    // OffloadBinary as clang packs one.
    sh(
        d,
        crate::util::llvm("llvm-offload-binary"),
        &[
            "-o",
            "dev.ob",
            &format!(
                "--image=file=omp_stubs.o,triple={},arch=generic,kind=openmp",
                r.offload_target
            ),
        ],
    )?;
    let host_side = wrap_both(d, r, host, abi, &host_obj)?;
    let mut logs = Vec::new();
    for (obj, exe) in [("ours.o", "prog-ours"), ("ref.o", "prog-ref")] {
        let mut objects = host_side.clone();
        objects.extend(["stub.o", "stub_main.o", "omp_stubs.o", obj]);
        logs.push(link_and_run(d, r, ld, &objects, exe)?);
    }
    if logs[0] != logs[1] {
        return Err(format!(
            "{}: the stub saw different things:\n--- ours\n{}--- the reference\n{}",
            r.arch, logs[0], logs[1]
        )
        .into());
    }
    check_log(&logs[0], 1, entries, &[0])?;
    if abi == OmpAbi::Rocm {
        info_before_library(r, &logs[0])?;
    }
    Ok(())
}

/// How many offload entries (of 56 bytes) the host object holds.
fn offload_entries(host_obj: &[u8]) -> Result<usize, Failed> {
    use object::{Object as _, ObjectSection as _};
    let f = object::File::parse(host_obj).map_err(|e| e.to_string())?;
    let s = f
        .section_by_name("llvm_offload_entries")
        .ok_or("no llvm_offload_entries in the host object")?;
    Ok(usize::try_from(s.size()).unwrap() / 56)
}

/// Our wrapper object (`ours.o`) and the reference (`ref.o`, LLVM's or
/// `ref_wrapper.c`) for `abi`, in `d`; returns the host objects to link
/// with them (for the legacy and ROCm ABIs, the host object with its
/// entries in the legacy layout).
fn wrap_both(
    d: &Path,
    r: &Runner,
    host: &Host,
    abi: OmpAbi,
    host_obj: &[u8],
) -> Result<Vec<&'static str>, Failed> {
    let mut host_side = vec!["app-host.o"];
    match abi {
        OmpAbi::Llvm => {
            ours_for(d, "openmp", host.triple, "ours.o", &["dev.ob"])?;
            llvm_wrap_for(d, "openmp", host.triple, "ref.o", &["dev.ob"])?;
        }
        OmpAbi::Legacy | OmpAbi::Rocm => {
            // The host object with its entries in the legacy layout.
            std::fs::write(d.join("legacy-entries.s"), legacy_entries(host_obj)?)?;
            compile_asm(d, r, "legacy-entries.s", "legacy-entries.o")?;
            sh(
                d,
                crate::util::llvm("llvm-objcopy"),
                &[
                    "--remove-section=llvm_offload_entries",
                    "app-host.o",
                    "app-host-legacy.o",
                ],
            )?;
            host_side = vec!["app-host-legacy.o", "legacy-entries.o"];
            let mut a = vec!["--abi=legacy"];
            let arch = format!("--offload-arch={ROCM_ARCH}");
            let define_arch = format!("-DARCH=\"{ROCM_ARCH}\"");
            let image = format!("-DIMAGE=\"{}\"", d.join("omp_stubs.o").display());
            let mut reference = vec![&image[..]];
            if abi == OmpAbi::Rocm {
                a = vec!["--abi=rocm", &arch];
                reference.push(&define_arch);
            }
            a.push("dev.ob");
            ours_for(d, "openmp", host.triple, "ours.o", &a)?;
            compile(d, r, &[("ref_wrapper.c", "ref.o", &reference)])?;
        }
    }
    Ok(host_side)
}

/// ROCm: the image info is registered before the library.
fn info_before_library(r: &Runner, log: &str) -> Result<(), Failed> {
    let want = format!(
        "__tgt_register_image_info version=1 number=0 count=1 arch={ROCM_ARCH} opts=(null)\n"
    );
    let info = log.find(&want);
    let lib = log.find("__tgt_register_lib");
    if info.is_none() || info > lib {
        return Err(format!(
            "{}: want the image info registered before the library:\n{}",
            r.arch, log
        )
        .into());
    }
    Ok(())
}

/// Assembles `s` for `r` into `o` in `d`.
fn compile_asm(d: &Path, r: &Runner, s: &str, o: &str) -> Result<(), Failed> {
    let target = format!("--target={}", r.target);
    clang(d, &[&target, "-c", s, "-o", o]).map(|_| ())
}

/// CUDA or HIP on `host`, linked by `ld`: with our object and with LLVM's,
/// the stand-in sees exactly the calls [`fatbin_want`] lists.
fn run_fatbin(host: &Host, kind: &str, ld: &str) -> Result<(), Failed> {
    let r = runner(host).ok_or("no runner")?;
    let t = tempdir();
    let d = t.path();
    let hip = kind == "hip";
    let input = fatbin_input(d, kind)?;
    let extra: &[&str] = if hip { &["-DHIP"] } else { &[] };
    compile(d, r, &[("fatbin_stub.c", "stub.o", extra)])?;
    ours_for(d, kind, host.triple, "ours.o", &[input])?;
    llvm_wrap_for(d, kind, host.triple, "ref.o", &[input])?;
    let want = fatbin_want(hip);
    for (who, obj) in [("our", "ours.o"), ("LLVM's", "ref.o")] {
        let log = link_and_run(d, r, ld, &["stub.o", obj], &format!("prog-{obj}"))?;
        if log != want {
            return Err(format!("{}: with {who} object:\n{log}--- want:\n{want}", r.arch).into());
        }
    }
    Ok(())
}

/// Debian's arm64 LLVM 22 runtime, unpacked by `scripts/arm64-sysroot.sh`.
const SYSROOT_ARM64: &str = "/opt/offload-kit/sysroot-arm64";

/// The real runtime on a second CPU: `app.c` built for aarch64 with an
/// aarch64 offload target (device image and host object by clang-22), our
/// wrapper object in place of LLVM's, linked by `ld` against Debian's arm64
/// libomp and libomptarget 22 and run under `qemu-aarch64 -L SYSROOT`:
/// every target region runs on libomptarget's host offload device with
/// the right results, and the four kernel launches are reported.
fn run_real_aarch64_runtime(ld: &str) -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let s = Arm64::new();
    aarch64_device_image(d, &s)?;
    aarch64_program(d, &s, ld)?;
    check_app(&run_under_qemu(d, &s)?)
}

/// The aarch64 target, as triples spell it.
const AARCH64_TRIPLE: &str = "aarch64-unknown-linux-gnu";
/// clang's `--target` for Debian's arm64 libraries.
const AARCH64_TARGET: &str = "--target=aarch64-linux-gnu";

/// Where the arm64 sysroot's libraries are, as the aarch64 links take them.
struct Arm64 {
    /// The system libraries.
    lib: String,
    /// LLVM 22's libraries.
    llvm_lib: String,
    /// `-L` for the system libraries.
    search: String,
    /// Where the runtime's own dependencies are (zlib and liblzma, for GNU
    /// ld, which follows them, are in /lib of the sysroot).
    rpath_link: String,
}

impl Arm64 {
    /// The paths under [`SYSROOT_ARM64`].
    fn new() -> Arm64 {
        let lib = format!("{SYSROOT_ARM64}/usr/lib/aarch64-linux-gnu");
        Arm64 {
            llvm_lib: format!("{SYSROOT_ARM64}/usr/lib/llvm-22/lib"),
            search: format!("-L{lib}"),
            rpath_link: format!("-Wl,-rpath-link,{lib}:{SYSROOT_ARM64}/lib/aarch64-linux-gnu"),
            lib,
        }
    }
}

/// The device image in `d`, `app-dev.ob`: built as clang-linker-wrapper
/// builds it for a CPU target (its device link uses ld.lld: GNU ld here
/// links x86_64 only) and packed as an OffloadBinary.
fn aarch64_device_image(d: &Path, s: &Arm64) -> Result<(), Failed> {
    let (triple, target) = (AARCH64_TRIPLE, AARCH64_TARGET);
    let offload = format!("-fopenmp-targets={triple}");
    let (search, rpath_link) = (&s.search, &s.rpath_link);
    let app = src("app.c");
    let app = app.to_str().unwrap();
    clang(
        d,
        &[
            target,
            "-fopenmp",
            &offload,
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
            target,
            "-fuse-ld=lld",
            "-shared",
            "-Wl,-Bsymbolic",
            "app-dev.o",
            search,
            rpath_link,
            "-lomp",
            "-o",
            "app-dev.so",
        ],
    )?;
    sh(
        d,
        crate::util::llvm("llvm-offload-binary"),
        &[
            "-o",
            "app-dev.ob",
            &format!("--image=file=app-dev.so,triple={triple},arch=generic,kind=openmp"),
        ],
    )?;
    Ok(())
}

/// The program in `d`, `app`: the host object, with our object in the
/// place of LLVM's, linked by `ld` against Debian's arm64 libomp and
/// libomptarget 22, without a warning.
fn aarch64_program(d: &Path, s: &Arm64, ld: &str) -> Result<(), Failed> {
    let (triple, target) = (AARCH64_TRIPLE, AARCH64_TARGET);
    let offload = format!("-fopenmp-targets={triple}");
    let (search, rpath_link, llvm_lib) = (&s.search, &s.rpath_link, &s.llvm_lib);
    let app = src("app.c");
    let app = app.to_str().unwrap();
    let main = src("main.c");
    clang(
        d,
        &[
            target,
            "-fopenmp",
            &offload,
            "--offload-host-only",
            "-c",
            app,
            "-o",
            "app-host.o",
        ],
    )?;
    clang(d, &[target, "-c", main.to_str().unwrap(), "-o", "main.o"])?;
    ours_for(d, "openmp", triple, "wrap.o", &["app-dev.ob"])?;
    let fuse = format!("-fuse-ld={ld}");
    let omptarget = format!("{llvm_lib}/libomptarget.so.22.1");
    let stderr = clang(
        d,
        &[
            target,
            &fuse,
            "main.o",
            "app-host.o",
            "wrap.o",
            search,
            rpath_link,
            "-lomp",
            &omptarget,
            "-o",
            "app",
        ],
    )?;
    if stderr.to_lowercase().contains("warning") {
        return Err(format!("linking with {ld} warned:\n{stderr}").into());
    }
    Ok(())
}

/// Runs `app` in `d` under `qemu-aarch64 -L SYSROOT`.
fn run_under_qemu(d: &Path, s: &Arm64) -> Result<Ran, Failed> {
    let (lib, llvm_lib) = (&s.lib, &s.llvm_lib);
    let out = std::process::Command::new("qemu-aarch64")
        .args(["-L", SYSROOT_ARM64, "./app"])
        .env("LD_LIBRARY_PATH", format!("{llvm_lib}:{lib}"))
        .env("LIBOMPTARGET_INFO", "16")
        .current_dir(d)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run qemu-aarch64: {e}"))?;
    let ran = Ran {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    if !out.status.success() {
        return Err(format!(
            "app under qemu-aarch64: {}\nstdout:\n{}stderr:\n{}",
            out.status, ran.stdout, ran.stderr
        )
        .into());
    }
    Ok(ran)
}

/// Every CPU the wrapper writes objects for has a way to run here.
fn every_host_runs() -> Result<(), Failed> {
    let missing: Vec<&str> = HOSTS
        .iter()
        .filter(|h| runner(h).is_none())
        .map(|h| h.triple)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("no runner in wrap/cpus.rs for {}", missing.join(", ")).into())
    }
}

/// The trials: `wrap::cpus::run_openmp::<arch>::<ld>::<abi>` and
/// `wrap::cpus::run_fatbin::<arch>::<ld>::<kind>` for every host CPU.
pub(super) fn tests() -> Vec<Trial> {
    let mut v = vec![trial!(every_host_runs, &[])];
    for (ld, prog) in [("lld", "ld.lld"), ("bfd", "aarch64-linux-gnu-ld")] {
        let tools = [
            "clang",
            "llvm-offload-binary",
            "ld.lld",
            prog,
            "qemu-aarch64",
            "/opt/offload-kit/sysroot-arm64/usr/lib/llvm-22/lib/libomptarget.so.22.1",
            "/opt/offload-kit/sysroot-arm64/usr/lib/aarch64-linux-gnu/libomp.so",
        ];
        v.push(trial!(
            run_real_aarch64_runtime["{ld}"],
            &tools,
            move || run_real_aarch64_runtime(ld),
        ));
    }
    for host in HOSTS {
        let Some(r) = runner(host) else { continue };
        for ld in ["lld", "bfd"] {
            let tools = tools(r, ld);
            for abi in [OmpAbi::Llvm, OmpAbi::Legacy, OmpAbi::Rocm] {
                let writes = match abi {
                    OmpAbi::Llvm => true,
                    OmpAbi::Legacy => host.legacy_abis,
                    OmpAbi::Rocm => host.legacy_abis,
                };
                if !writes {
                    continue;
                }
                let mut tools = tools.clone();
                if abi != OmpAbi::Llvm {
                    tools.push("llvm-objcopy");
                }
                v.push(trial!(
                    run_openmp["{}::{ld}::{}", r.arch, abi.name()],
                    &tools,
                    move || run_openmp(host, ld, abi),
                ));
            }
            for kind in ["cuda", "hip"] {
                let mut tools = tools.clone();
                tools.push("clang-offload-bundler");
                v.push(trial!(
                    run_fatbin["{}::{ld}::{kind}", r.arch],
                    &tools,
                    move || run_fatbin(host, kind, ld),
                ));
            }
        }
    }
    v
}

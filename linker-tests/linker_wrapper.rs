//! offload-kit as clang's `clang-linker-wrapper` (`clang -B <links>`), with
//! clang-22 and libomptarget 22: OpenMP programs offloading to the host CPU
//! (`-fopenmp-targets=x86_64-unknown-linux-gnu`) are linked through our
//! wrapper and through LLVM's, run on libomptarget's offload device, and
//! must print the same; `--save-temps` leaves the same files with the same
//! bytes, `--dry-run` prints the same commands (temporary names aside), and
//! bad input fails with one error and no output file.
//!
//! This file holds the fixture, the helpers that link and run, and the
//! programs linked both ways; `dry_runs.rs` the printed commands and saved
//! temporaries, `failures.rs` bad input, `libraries.rs` archives, shared
//! libraries, relocatable links and LTO, `gpu.rs` AMDGPU, NVPTX, HIP, CUDA
//! and aarch64 under qemu.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use libtest_mimic::{Failed, Trial};
use object::{Object as _, ObjectSection as _};

use crate::util::{clean_failure, llvm, ours_as, same, same_bytes, tempdir};

test_files! {
    dry_runs,
    failures,
    libraries,
    pub(crate) gpu,
    windows,
}

const TRIPLE: &str = "x86_64-unknown-linux-gnu";
const LLVM_LIB: &str = "/usr/lib/llvm-22/lib";
const LIBOMPTARGET: &str = "/usr/lib/llvm-22/lib/libomptarget.so.22.1";
const LIBOMP: &str = "/usr/lib/llvm-22/lib/libomp.so";

/// What every trial needs: clang-22, LLVM's wrapper (the reference), GNU
/// ld (clang's default host linker here) and the OpenMP runtime.
const TOOLS: &[&str] = &[
    "clang",
    "clang-linker-wrapper",
    "ld.bfd",
    LIBOMP,
    LIBOMPTARGET,
];

fn src(name: &str) -> PathBuf {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("linker-tests");
    match name {
        "app.c" | "main.c" => base.join("wrap").join(name),
        _ => base.join("linker_wrapper").join(name),
    }
}

fn omp_flags() -> Vec<String> {
    vec!["-fopenmp".into(), format!("-fopenmp-targets={TRIPLE}")]
}

/// The objects, compiled once: app.o, main.o, two.o, main2.o; and `lib/`
/// with the unversioned libomptarget.so that Debian leaves to the -dev
/// package (LLVM's wrapper looks `-lomptarget` up).
fn fixture() -> Result<&'static Path, Failed> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempdir().keep();
        let lib = dir.join("lib");
        std::fs::create_dir_all(&lib).map_err(|e| e.to_string())?;
        std::os::unix::fs::symlink(LIBOMPTARGET, lib.join("libomptarget.so"))
            .map_err(|e| e.to_string())?;
        for c in ["app.c", "main.c", "two.c", "main2.c"] {
            let mut args = omp_flags();
            args.extend(["-c".into(), src(c).to_string_lossy().into_owned()]);
            let out = Command::new(llvm("clang"))
                .args(&args)
                .current_dir(&dir)
                .output()
                .map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(format!(
                    "clang {c}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        Ok(dir)
    })
    .as_ref()
    .map(PathBuf::as_path)
    .map_err(|e| format!("building the objects failed: {e}").into())
}

/// What a command did.
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn exec(prog: &Path, args: &[String], cwd: &Path, env: &[(&str, &str)]) -> Out {
    let out = Command::new(prog)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", prog.display()));
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Links with clang-22 in `cwd`: through our wrapper (`-B <links>`) or
/// LLVM's. Inputs named without a slash are the fixture's objects.
fn clang_link(ours: bool, cwd: &Path, args: &[&str]) -> Result<Out, Failed> {
    let fx = fixture()?;
    let mut all = omp_flags();
    if ours {
        let links = ours_as("clang-linker-wrapper");
        all.push(format!("-B{}", links.parent().unwrap().display()));
    }
    for a in args {
        if a.ends_with(".o") && !a.contains('/') {
            all.push(fx.join(a).to_string_lossy().into_owned());
        } else {
            all.push((*a).to_string());
        }
    }
    all.push(format!("-L{}", fx.join("lib").display()));
    Ok(exec(&llvm("clang"), &all, cwd, &[]))
}

/// Runs a linked program on libomptarget 22, requiring exit status 0 and
/// `launches` kernel launches on the offload device.
fn run_program(prog: &Path, launches: usize) -> Result<String, Failed> {
    let env = [("LD_LIBRARY_PATH", LLVM_LIB), ("LIBOMPTARGET_INFO", "16")];
    let out = exec(prog, &[], prog.parent().unwrap(), &env);
    if out.code != 0 {
        return Err(format!(
            "{} exited {}:\n{}{}",
            prog.display(),
            out.code,
            out.stdout,
            out.stderr
        )
        .into());
    }
    for r in 1..=4 {
        let want = format!("region {r} on_device=1\n");
        if !out.stdout.contains(&want) {
            return Err(format!("missing '{}' in:\n{}", want.trim(), out.stdout).into());
        }
    }
    let n = out
        .stderr
        .lines()
        .filter(|l| l.contains("PluginInterface\" device") && l.contains("Launching kernel"))
        .count();
    if n != launches {
        return Err(format!(
            "{n} kernel launches on the device, want {launches}:\n{}",
            out.stderr
        )
        .into());
    }
    Ok(out.stdout)
}

/// Builds the same program through both wrappers and runs both.
fn same_program(args: &[&str], launches: usize) -> Result<(), Failed> {
    let dir = tempdir();
    let mut outputs = Vec::new();
    for (ours, name) in [(true, "app-ours"), (false, "app-llvm")] {
        let mut a = args.to_vec();
        a.extend(["-o", name]);
        let out = clang_link(ours, dir.path(), &a)?;
        if out.code != 0 {
            return Err(format!("linking {name}: exit {}: {}", out.code, out.stderr).into());
        }
        outputs.push(run_program(&dir.path().join(name), launches)?);
    }
    same("program output", &outputs[0], &outputs[1])
}

/// The commands a `--dry-run` printed, with temporary names masked (also
/// after the last `=` of arguments such as `-input=<file>`), and the
/// bundler's path, which differs between the wrappers, made `BUNDLER`.
fn mask_dry_run(printed: &str) -> String {
    mask_temps(printed)
        .lines()
        .map(|l| {
            let words: Vec<String> = l
                .split(' ')
                .map(|w| match w.rsplit_once('=') {
                    Some((k, v)) => format!("{k}={}", mask_temps(v).trim_end()),
                    None => w.to_string(),
                })
                .collect();
            let l = words.join(" ");
            match l.split_once("clang-offload-bundler\" ") {
                Some((_, rest)) => format!("BUNDLER {rest}\n"),
                None => format!("{l}\n"),
            }
        })
        .collect()
}

/// Masks the random part of temporary file names (`/tmp/x-1a2b3c.o`).
fn mask_temps(text: &str) -> String {
    let tmp = std::env::temp_dir().to_string_lossy().into_owned();
    let mut out = String::new();
    for line in text.lines() {
        let words: Vec<String> = line
            .split(' ')
            .map(|w| {
                let Some(dot) = w.rfind('.') else {
                    return w.to_string();
                };
                let tag = w.get(dot.saturating_sub(7)..dot).unwrap_or("");
                if w.starts_with(&tmp)
                    && tag.starts_with('-')
                    && tag[1..].bytes().all(|b| b.is_ascii_hexdigit())
                {
                    format!("{}-XXXXXX{}", &w[..dot - 7], &w[dot..])
                } else {
                    w.to_string()
                }
            })
            .collect();
        out.push_str(&words.join(" "));
        out.push('\n');
    }
    out
}

/// Our wrapper run directly (as clang runs it) with `args`.
fn wrapper(args: &[String], cwd: &Path) -> Out {
    exec(&ours_as("clang-linker-wrapper"), args, cwd, &[])
}

fn base_args(out: &str) -> Vec<String> {
    vec![
        "--host-triple=x86_64-pc-linux-gnu".into(),
        "--linker-path=/usr/bin/ld".into(),
        "-o".into(),
        out.into(),
    ]
}

/// A failure: exit 1, an error line naming `what` as the last line, no
/// output file.
fn fails(out: &Out, dir: &Path, what: &str) -> Result<(), Failed> {
    let last = out
        .stderr
        .lines()
        .rfind(|l| !l.contains(": note: "))
        .unwrap_or("");
    if out.code != 1 || !last.contains("error: ") || !out.stderr.contains(what) {
        return Err(format!(
            "want exit 1 and an error about '{what}', got {}: {}",
            out.code, out.stderr
        )
        .into());
    }
    if dir.join("out").exists() {
        return Err("an output file was written".into());
    }
    Ok(())
}

/// The message of the first line of `o`'s standard error, when it is an
/// error line (`<tool>: error: <message>`).
fn first_error(o: &Out) -> Option<String> {
    o.stderr
        .lines()
        .next()
        .and_then(|l| l.split_once(": error: "))
        .map(|(_, m)| m.to_string())
}

fn to_run(out: &Out) -> crate::util::Run {
    crate::util::Run {
        code: out.code,
        stdout: out.stdout.clone().into_bytes(),
        stderr: out.stderr.clone(),
    }
}

/// The trials.
pub fn tests() -> Vec<Trial> {
    let lld: Vec<&str> = TOOLS.iter().copied().chain(["ld.lld"]).collect();
    let mut trials = vec![
        trial!(objects, TOOLS),
        trial!(from_sources, TOOLS),
        trial!(one_file, TOOLS),
        trial!(several_files, TOOLS),
        trial!(with_lld, &lld),
        trial!(no_pie, TOOLS),
    ];
    trials.extend(file_trials());
    trials
}

fn objects() -> Result<(), Failed> {
    same_program(&["main.o", "app.o"], 4)
}

fn from_sources() -> Result<(), Failed> {
    let (m, a) = (src("main.c"), src("app.c"));
    same_program(&[m.to_str().unwrap(), a.to_str().unwrap()], 4)
}

fn one_file() -> Result<(), Failed> {
    same_program(&[src("one.c").to_str().unwrap()], 4)
}

fn several_files() -> Result<(), Failed> {
    same_program(&["main2.o", "app.o", "two.o"], 5)
}

fn with_lld() -> Result<(), Failed> {
    same_program(&["main.o", "app.o", "-fuse-ld=lld"], 4)
}

fn no_pie() -> Result<(), Failed> {
    same_program(&["main.o", "app.o", "-no-pie"], 4)
}

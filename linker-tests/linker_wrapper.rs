//! offload-kit as clang's `clang-linker-wrapper` (`clang -B <links>`), with
//! clang-22 and libomptarget 22: OpenMP programs offloading to the host CPU
//! (`-fopenmp-targets=x86_64-unknown-linux-gnu`) are linked through our
//! wrapper and through LLVM's, run on libomptarget's offload device, and
//! must print the same; `--save-temps` leaves the same files with the same
//! bytes, `--dry-run` prints the same commands (temporary names aside), and
//! bad input fails with one error and no output file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use libtest_mimic::{Failed, Trial};
use object::{Object as _, ObjectSection as _};

use crate::util::{clean_failure, llvm, ours_as, same, same_bytes, tempdir, trial};

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

fn dry_run(extra: &[&str]) -> Result<(), Failed> {
    let dir = tempdir();
    let mut texts = Vec::new();
    for ours in [true, false] {
        let mut a = vec!["main.o", "app.o", "-o", "app"];
        a.extend_from_slice(extra);
        let out = clang_link(ours, dir.path(), &a)?;
        if out.code != 0 {
            return Err(format!("exit {}: {}", out.code, out.stderr).into());
        }
        texts.push(mask_temps(&out.stderr));
    }
    // The device link and the host link; and llvm-objcopy after a
    // relocatable one.
    let want = if extra.contains(&"-r") { 3 } else { 2 };
    if texts[1].lines().count() != want {
        return Err(format!("LLVM printed not {want} commands:\n{}", texts[1]).into());
    }
    same("commands", &texts[0], &texts[1])?;
    if dir.path().join("app").exists() {
        return Err("--dry-run wrote the output".into());
    }
    Ok(())
}

/// `--save-temps`: the same files (but LLVM's IR of the wrapper), the same
/// bytes.
fn save_temps() -> Result<(), Failed> {
    let mut listings = Vec::new();
    let mut dirs = Vec::new();
    for ours in [true, false] {
        let dir = tempdir();
        let out = clang_link(
            ours,
            dir.path(),
            &["main.o", "app.o", "-o", "app", "-Wl,--save-temps"],
        )?;
        if out.code != 0 {
            return Err(format!("exit {}: {}", out.code, out.stderr).into());
        }
        run_program(&dir.path().join("app"), 4)?;
        let mut names: Vec<String> = std::fs::read_dir(dir.path())?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".bc"))
            .collect();
        names.sort();
        listings.push(names);
        dirs.push(dir);
    }
    same("files", &listings[0], &listings[1])?;
    for name in &listings[0] {
        if name == "app" {
            continue;
        }
        let a = std::fs::read(dirs[0].path().join(name))?;
        let b = std::fs::read(dirs[1].path().join(name))?;
        same_bytes(name, &a, &b)?;
    }
    Ok(())
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

fn corrupt_section() -> Result<(), Failed> {
    let dir = tempdir();
    let mut bytes = std::fs::read(fixture()?.join("app.o"))?;
    let range = {
        let f = object::File::parse(&*bytes).map_err(|e| e.to_string())?;
        let s = f
            .section_by_name(".llvm.offloading")
            .ok_or("no .llvm.offloading in app.o")?;
        s.file_range().ok_or("no file range")?
    };
    // The binary's total size (bytes 8..16) far beyond the section.
    let at = usize::try_from(range.0).unwrap() + 8;
    bytes[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(dir.path().join("bad.o"), &bytes)?;
    let mut args = base_args("out");
    args.push("bad.o".into());
    let out = wrapper(&args, dir.path());
    clean_failure("corrupt .llvm.offloading", &to_run(&out), "bad.o")?;
    // LLVM's line first.
    let theirs = exec(&llvm("clang-linker-wrapper"), &args, dir.path(), &[]);
    same("exit code", out.code, theirs.code)?;
    same("message", first_error(&out), first_error(&theirs))?;
    fails(&out, dir.path(), "bad.o")
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

fn failing_device_link() -> Result<(), Failed> {
    let dir = tempdir();
    let mut args = base_args("out");
    args.extend([
        "--device-linker=--no-such-linker-option".to_string(),
        fixture()?.join("app.o").to_string_lossy().into_owned(),
    ]);
    let out = wrapper(&args, dir.path());
    fails(&out, dir.path(), "error: 'clang' failed")?;
    if !out.stderr.contains("exit code 1") {
        return Err(format!("the child's exit code is not named: {}", out.stderr).into());
    }
    Ok(())
}

fn refused(extra: &[&str]) -> Result<(), Failed> {
    let dir = tempdir();
    let mut args = base_args("out");
    args.extend(extra.iter().map(ToString::to_string));
    args.push(fixture()?.join("app.o").to_string_lossy().into_owned());
    let out = wrapper(&args, dir.path());
    clean_failure(&extra.join(" "), &to_run(&out), "not supported")?;
    fails(&out, dir.path(), "not supported")
}

/// `-l` that is nowhere: LLVM's message.
fn missing_library() -> Result<(), Failed> {
    let dir = tempdir();
    let mut args = base_args("out");
    args.extend([
        "-lno-such-library".to_string(),
        fixture()?.join("app.o").to_string_lossy().into_owned(),
    ]);
    let ours = wrapper(&args, dir.path());
    let theirs = exec(&llvm("clang-linker-wrapper"), &args, dir.path(), &[]);
    let msg = |o: &Out| o.stderr.split_once(": error: ").map(|(_, m)| m.to_string());
    same("exit code", ours.code, theirs.code)?;
    same("message", msg(&ours), msg(&theirs))?;
    fails(&ours, dir.path(), "-lno-such-library")
}

/// A thin archive whose member file is gone: LLVM's message (naming the
/// member), a note with the path, exit 1, no output.
fn thin_archive_missing_member() -> Result<(), Failed> {
    let dir = tempdir();
    std::fs::copy(fixture()?.join("app.o"), dir.path().join("gone.o"))?;
    let ar: Vec<String> = ["rcsT", "libgone.a", "gone.o"].map(String::from).to_vec();
    let made = exec(&llvm("llvm-ar"), &ar, dir.path(), &[]);
    if made.code != 0 {
        return Err(format!("llvm-ar: {}", made.stderr).into());
    }
    std::fs::remove_file(dir.path().join("gone.o"))?;
    let mut args = base_args("out");
    args.extend(["-L.".to_string(), "-lgone".into()]);
    let ours = wrapper(&args, dir.path());
    let theirs = exec(&llvm("clang-linker-wrapper"), &args, dir.path(), &[]);
    same("exit code", ours.code, theirs.code)?;
    same("message", first_error(&ours), first_error(&theirs))?;
    fails(&ours, dir.path(), "thin archive")
}

/// A host linker that fails: LLVM's message.
fn failing_host_link() -> Result<(), Failed> {
    let dir = tempdir();
    let args = vec![
        "--host-triple=x86_64-pc-linux-gnu".to_string(),
        "--linker-path=/bin/false".into(),
        "-o".into(),
        "out".into(),
        fixture()?.join("main.o").to_string_lossy().into_owned(),
    ];
    let ours = wrapper(&args, dir.path());
    let theirs = exec(&llvm("clang-linker-wrapper"), &args, dir.path(), &[]);
    let msg = |o: &Out| {
        o.stderr
            .lines()
            .find_map(|l| l.split_once(": error: ").map(|(_, m)| m.to_string()))
    };
    same("exit code", ours.code, theirs.code)?;
    same("message", msg(&ours), msg(&theirs))?;
    fails(&ours, dir.path(), "'false' failed")
}

/// The wrapper run directly, its options mixed with the linker's and after
/// `--`, with `--dry-run`: the same commands as LLVM's.
fn dry_run_direct() -> Result<(), Failed> {
    let dir = tempdir();
    let fx = fixture()?;
    let obj = |n: &str| fx.join(n).to_string_lossy().into_owned();
    let lib = fx.join("lib").to_string_lossy().into_owned();
    let args: Vec<String> = [
        "--host-triple=x86_64-pc-linux-gnu",
        "--linker-path=/usr/bin/ld",
        "--dry-run",
        "--wrapper-verbose",
        "--wrapper-jobs=2",
        "--linker-arg=LA",
        "--compiler-arg=CA",
        "--device-linker=DL",
        "--device-compiler=x86_64-unknown-linux-gnu=DC",
        "-pie",
        "--output=out",
        &obj("main.o"),
        &format!("-L{lib}"),
        "--library-path",
        &lib,
        "-lomptarget",
        "--library=omptarget",
        &format!("{lib}/libomptarget.so"),
        "-rpath=/y",
        "--whole-archive",
        "-Bstatic",
        &obj("app.o"),
        "-rpath",
        "/x",
        "--no-whole-archive",
        "-Bdynamic",
        "--",
        "-z",
        "now",
        &obj("two.o"),
        "-L",
        &lib,
        "-l",
        "omptarget",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    let path = format!(
        "{}:{}",
        crate::util::LLVM_BIN,
        std::env::var("PATH").unwrap_or_default()
    );
    let ours = exec(
        &ours_as("clang-linker-wrapper"),
        &args,
        dir.path(),
        &[("PATH", &path)],
    );
    let theirs = exec(&llvm("clang-linker-wrapper"), &args, dir.path(), &[]);
    same("exit code", ours.code, theirs.code)?;
    same(
        "commands",
        mask_temps(&ours.stderr),
        mask_temps(&theirs.stderr),
    )
}

/// `--override-image=openmp=<file>`: the same wrapper object as LLVM's
/// (kept with `--save-temps`), and a program whose device image is given
/// that way runs on the device.
fn override_image() -> Result<(), Failed> {
    let fx = fixture()?;
    // The device image of a first build, kept with --save-temps.
    let first = tempdir();
    let out = clang_link(
        true,
        first.path(),
        &["main.o", "app.o", "-o", "app", "-Wl,--save-temps"],
    )?;
    if out.code != 0 {
        return Err(format!("first build: exit {}: {}", out.code, out.stderr).into());
    }
    let img = first.path().join("app.x86_64..img");
    let img = img.to_string_lossy().into_owned();
    // The wrapper objects of both tools for it.
    let mut objects = Vec::new();
    for prog in [
        ours_as("clang-linker-wrapper"),
        llvm("clang-linker-wrapper"),
    ] {
        let dir = tempdir();
        let args: Vec<String> = vec![
            "--host-triple=x86_64-pc-linux-gnu".into(),
            "--linker-path=/usr/bin/ld".into(),
            "--save-temps".into(),
            format!("--override-image=openmp={img}"),
            "-shared".into(),
            "-o".into(),
            "lib.so".into(),
            fx.join("main.o").to_string_lossy().into_owned(),
        ];
        let out = exec(&prog, &args, dir.path(), &[]);
        if out.code != 0 {
            return Err(format!("{}: exit {}: {}", prog.display(), out.code, out.stderr).into());
        }
        objects.push(std::fs::read(
            dir.path().join("lib.so.openmp.image.wrapper.o"),
        )?);
    }
    same_bytes("wrapper objects", &objects[0], &objects[1])?;
    let flag = format!("-Wl,--override-image=openmp={img}");
    same_program(&["main.o", "app.o", &flag], 4)
}

/// `--dry-run --save-temps -o sub/out`: the same files as LLVM's (the
/// extracted objects, the wrapper object for empty images; no image), with
/// the same bytes, and the same commands.
fn dry_run_save_temps() -> Result<(), Failed> {
    let fx = fixture()?;
    save_temps_like_llvm(&[
        fx.join("main.o").to_string_lossy().into_owned(),
        fx.join("app.o").to_string_lossy().into_owned(),
    ])
}

/// A host object compiled with `-flto` is LLVM bitcode, its device code
/// in `llvm.embedded.objects`: the same commands and files as LLVM's.
fn dry_run_bitcode_host() -> Result<(), Failed> {
    let dir = tempdir();
    let obj = dir.path().join("lto.o");
    let out = Command::new(llvm("clang"))
        .args(omp_flags())
        .args(["-flto", "-c"])
        .arg(src("app.c"))
        .arg("-o")
        .arg(&obj)
        .output()?;
    if !out.status.success() {
        return Err(format!("clang: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    if !std::fs::read(&obj)?.starts_with(b"BC\xc0\xde") {
        return Err("clang -flto did not write bitcode".into());
    }
    save_temps_like_llvm(&[obj.to_string_lossy().into_owned()])
}

/// A program whose host is built with `-flto` (its objects LLVM bitcode,
/// linked by ld with LLVM's plugin): built through both wrappers, both run
/// their four regions on the offload device with the same output. Before
/// the bitcode reader the device code was silently dropped.
fn flto_host() -> Result<(), Failed> {
    let main = src("main.c").to_string_lossy().into_owned();
    let app = src("app.c").to_string_lossy().into_owned();
    same_program(&["-flto", &main, &app], 4)
}

/// Images larger than 1 MiB, which go file to file (not through memory):
/// one extracted from a host object's `.llvm.offloading`, and one given as
/// `--override-image=openmp=` (packed and wrapped); `--dry-run
/// --save-temps` leaves the same files with the same bytes as LLVM's.
fn large_images() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let fx = fixture()?;
    let big: Vec<u8> = (0..3_000_007u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(d.join("dev.o"), &big)?;
    let pack = Command::new(llvm("llvm-offload-binary"))
        .current_dir(d)
        .args([
            "-o",
            "dev.ob",
            "--image=file=dev.o,triple=x86_64-unknown-linux-gnu,arch=generic,kind=openmp",
        ])
        .output()?;
    same("llvm-offload-binary", pack.status.code(), Some(0))?;
    std::fs::write(
        d.join("dev.s"),
        "\t.section .llvm.offloading,\"e\",@llvm_offloading\n\t.p2align 3\n\t.incbin \"dev.ob\"\n",
    )?;
    let asm = Command::new(llvm("clang"))
        .current_dir(d)
        .args(["-c", "dev.s", "-o", "big-host.o"])
        .output()?;
    same("clang -c dev.s", asm.status.code(), Some(0))?;
    // An ELF file of 3 MiB: a host object with bytes after its end.
    let mut elf = std::fs::read(fx.join("main.o"))?;
    elf.extend_from_slice(&big);
    std::fs::write(d.join("big.elf"), &elf)?;
    let main = fx.join("main.o").to_string_lossy().into_owned();
    save_temps_like_llvm(&[
        main.clone(),
        d.join("big-host.o").to_string_lossy().into_owned(),
    ])?;
    save_temps_like_llvm(&[
        format!("--override-image=openmp={}", d.join("big.elf").display()),
        main,
    ])
}

/// Runs ours and LLVM's wrapper with `--dry-run --save-temps` and
/// `inputs`, each in a new directory: the same commands, the same files
/// left (bitcode aside), the same bytes.
fn save_temps_like_llvm(inputs: &[String]) -> Result<(), Failed> {
    let mut args: Vec<String> = vec![
        "--host-triple=x86_64-pc-linux-gnu".into(),
        "--linker-path=/usr/bin/ld".into(),
        "--dry-run".into(),
        "--save-temps".into(),
        "-o".into(),
        "sub/out".into(),
    ];
    args.extend_from_slice(inputs);
    let path = format!(
        "{}:{}",
        crate::util::LLVM_BIN,
        std::env::var("PATH").unwrap_or_default()
    );
    let mut listings = Vec::new();
    let mut texts = Vec::new();
    let mut dirs = Vec::new();
    for prog in [
        ours_as("clang-linker-wrapper"),
        llvm("clang-linker-wrapper"),
    ] {
        let dir = tempdir();
        std::fs::create_dir(dir.path().join("sub"))?;
        let out = exec(&prog, &args, dir.path(), &[("PATH", &path)]);
        if out.code != 0 {
            return Err(format!("{}: exit {}: {}", prog.display(), out.code, out.stderr).into());
        }
        texts.push(out.stderr);
        let mut names: Vec<String> = crate::util::snapshot(dir.path())
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| !n.ends_with(".bc"))
            .collect();
        names.sort();
        listings.push(names);
        dirs.push(dir);
    }
    same("commands", &texts[0], &texts[1])?;
    same("files", &listings[0], &listings[1])?;
    for name in &listings[0] {
        let a = std::fs::read(dirs[0].path().join(name))?;
        let b = std::fs::read(dirs[1].path().join(name))?;
        same_bytes(name, &a, &b)?;
    }
    Ok(())
}

/// `--wrapper-jobs=N` runs the device links of different triples at once
/// (N = 2: both start before either ends), and one after another without
/// it; the links are a stand-in `clang` next to the wrapper, which logs
/// when each starts and ends. The host link is `true`.
fn wrapper_jobs() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let obj = d.join("two-triples.o");
    let out = Command::new(llvm("clang"))
        .args([
            "-fopenmp",
            "-fopenmp-targets=x86_64-unknown-linux-gnu,aarch64-unknown-linux-gnu",
            "-c",
        ])
        .arg(src("app.c"))
        .arg("-o")
        .arg(&obj)
        .output()?;
    if !out.status.success() {
        return Err(format!("clang: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let bin = d.join("bin");
    std::fs::create_dir(&bin)?;
    std::os::unix::fs::symlink(crate::util::ours(), bin.join("clang-linker-wrapper"))?;
    let log = d.join("log");
    let script = format!(
        "#!/bin/sh\nout=\nprev=\nfor a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n\
         echo start >> '{log}'\nsleep 2\nprintf IMAGE > \"$out\"\necho end >> '{log}'\n",
        log = log.display()
    );
    std::fs::write(bin.join("clang"), script)?;
    std::fs::set_permissions(
        bin.join("clang"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )?;
    for (jobs, want) in [
        (Some("--wrapper-jobs=2"), "start start end end"),
        (None, "start end start end"),
        (Some("--wrapper-jobs=1"), "start end start end"),
    ] {
        let _ = std::fs::remove_file(&log);
        let mut args: Vec<String> = vec![
            "--host-triple=x86_64-pc-linux-gnu".into(),
            "--linker-path=/bin/true".into(),
            "-o".into(),
            "out".into(),
        ];
        args.extend(jobs.map(String::from));
        args.push(obj.to_string_lossy().into_owned());
        // The stand-in is found on PATH, as LLVM 22 finds clang when its
        // own directory has none.
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let r = exec(
            &bin.join("clang-linker-wrapper"),
            &args,
            d,
            &[("PATH", &path)],
        );
        same(&format!("{jobs:?}: exit ({})", r.stderr), r.code, 0)?;
        let got = std::fs::read_to_string(&log)?;
        same(
            &format!("{jobs:?}: device links"),
            got.split_whitespace().collect::<Vec<_>>().join(" "),
            want.to_string(),
        )?;
    }
    Ok(())
}

/// `libapp.a` (app.o, two.o) in a new directory.
fn static_library() -> Result<tempfile::TempDir, Failed> {
    library_archive("rcs")
}

/// `libapp.a` made by `llvm-ar <ops>` from app.o and two.o.
fn library_archive(ops: &str) -> Result<tempfile::TempDir, Failed> {
    let fx = fixture()?;
    let dir = tempdir();
    let args: Vec<String> = vec![
        ops.into(),
        "libapp.a".into(),
        fx.join("app.o").to_string_lossy().into_owned(),
        fx.join("two.o").to_string_lossy().into_owned(),
    ];
    let out = exec(&llvm("llvm-ar"), &args, dir.path(), &[]);
    if out.code != 0 {
        return Err(format!("llvm-ar: {}", out.stderr).into());
    }
    Ok(dir)
}

/// Device code in a static library: the members the link takes (app.o,
/// not two.o; both under `--whole-archive`), as LLVM takes them.
fn archive_members() -> Result<(), Failed> {
    archive_members_of(static_library()?)
}

/// [`archive_members`] with a thin archive (`llvm-ar rcsT`): the members
/// read from their files.
fn thin_archive_members() -> Result<(), Failed> {
    let lib = library_archive("rcsT")?;
    let head = std::fs::read(lib.path().join("libapp.a"))?;
    if !head.starts_with(b"!<thin>\n") {
        return Err("llvm-ar rcsT did not make a thin archive".into());
    }
    archive_members_of(lib)
}

fn archive_members_of(lib: tempfile::TempDir) -> Result<(), Failed> {
    let l = format!("-L{}", lib.path().display());
    same_program(&["main.o", &l, "-lapp"], 4)?;
    let whole = format!(
        "-Wl,--whole-archive,{}/libapp.a,--no-whole-archive",
        lib.path().display()
    );
    for extra in [vec![l.as_str(), "-lapp"], vec![whole.as_str()]] {
        let dir = tempdir();
        let mut texts = Vec::new();
        for ours in [true, false] {
            let mut a = vec!["main.o", "-o", "app", "-Wl,--dry-run"];
            a.extend_from_slice(&extra);
            let out = clang_link(ours, dir.path(), &a)?;
            if out.code != 0 {
                return Err(format!("exit {}: {}", out.code, out.stderr).into());
            }
            texts.push(mask_temps(&out.stderr));
        }
        same("commands", &texts[0], &texts[1])?;
    }
    Ok(())
}

/// `clang -r` of two objects with target regions (the device link given
/// the OpenMP runtime through `-Xoffload-linker`, as LLVM 22's needs it
/// for a CPU target), then a final link of the program with that object:
/// the relocatable object is LLVM's bytes (images in
/// `.llvm.offloading.relocatable`, the entry table renamed by llvm-objcopy
/// with the MD5 suffix), and both programs run the five regions on the
/// offload device with the same output.
fn relocatable() -> Result<(), Failed> {
    let dir = tempdir();
    let mut outputs = Vec::new();
    let mut objects = Vec::new();
    for (ours, who) in [(true, "ours"), (false, "llvm")] {
        let sub = dir.path().join(who);
        std::fs::create_dir_all(&sub)?;
        let rel = sub.join("rel.o").to_string_lossy().into_owned();
        let out = clang_link(
            ours,
            &sub,
            &[
                "-r",
                "app.o",
                "two.o",
                "-o",
                &rel,
                "-Xoffload-linker",
                "-L/usr/lib/llvm-22/lib",
                "-Xoffload-linker",
                "-lomp",
            ],
        )?;
        if out.code != 0 {
            return Err(format!("{who}: -r: exit {}: {}", out.code, out.stderr).into());
        }
        objects.push(std::fs::read(&rel)?);
        let exe = sub.join("app").to_string_lossy().into_owned();
        let out = clang_link(ours, &sub, &["main2.o", &rel, "-o", &exe])?;
        if out.code != 0 {
            return Err(format!("{who}: final link: exit {}: {}", out.code, out.stderr).into());
        }
        outputs.push(run_program(Path::new(&exe), 5)?);
    }
    same_bytes("rel.o", &objects[0], &objects[1])?;
    let f = object::File::parse(&*objects[0]).map_err(|e| e.to_string())?;
    if f.section_by_name(".llvm.offloading.relocatable").is_none()
        || f.section_by_name(".llvm.offloading").is_some()
        || f.section_by_name("llvm_offload_entries").is_some()
    {
        return Err("rel.o: not the sections of a relocatable link".into());
    }
    same("program output", &outputs[0], &outputs[1])
}

/// A shared library carrying device code: `app.c` (PIC) linked with
/// `-shared` through each wrapper, and `main.o` linked against it (through
/// the same wrapper): both programs run the library's four target regions
/// on the offload device and print the same.
fn shared_library() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let mut pic = omp_flags();
    pic.extend([
        "-fPIC".into(),
        "-c".into(),
        src("app.c").to_string_lossy().into_owned(),
        "-o".into(),
        "app-pic.o".into(),
    ]);
    let out = exec(&llvm("clang"), &pic, d, &[]);
    if out.code != 0 {
        return Err(format!("compiling app.c with -fPIC: {}", out.stderr).into());
    }
    let mut outputs = Vec::new();
    for (ours, who) in [(true, "ours"), (false, "llvm")] {
        let sub = d.join(who);
        std::fs::create_dir_all(&sub)?;
        let lib = sub.join("libapp.so").to_string_lossy().into_owned();
        let app = d.join("app-pic.o").to_string_lossy().into_owned();
        let out = clang_link(ours, d, &["-shared", "-fPIC", &app, "-o", &lib])?;
        if out.code != 0 {
            return Err(format!("linking {lib}: exit {}: {}", out.code, out.stderr).into());
        }
        // The device image travels in the library (a registration
        // constructor of its own), not in the program.
        let bytes = std::fs::read(&lib)?;
        let f = object::File::parse(&*bytes).map_err(|e| e.to_string())?;
        if f.section_by_name(".llvm.offloading").is_none() {
            return Err(format!("{who}: no .llvm.offloading in libapp.so").into());
        }
        let exe = sub.join("app").to_string_lossy().into_owned();
        let search = format!("-L{}", sub.display());
        let rpath = format!("-Wl,-rpath,{}", sub.display());
        let out = clang_link(ours, d, &["main.o", &search, "-lapp", &rpath, "-o", &exe])?;
        if out.code != 0 {
            return Err(format!("linking {exe}: exit {}: {}", out.code, out.stderr).into());
        }
        outputs.push(run_program(Path::new(&exe), 4)?);
    }
    same("program output", &outputs[0], &outputs[1])
}

/// `app.c` and `main.c` compiled with `-foffload-lto` to `d/app-lto.o` and
/// `d/main-lto.o`.
fn compile_offload_lto(d: &Path) -> Result<(), Failed> {
    for c in ["app.c", "main.c"] {
        let mut a = omp_flags();
        a.extend([
            "-foffload-lto".into(),
            "-c".into(),
            src(c).to_string_lossy().into_owned(),
            "-o".into(),
            c.replace(".c", "-lto.o"),
        ]);
        let out = exec(&llvm("clang"), &a, d, &[]);
        if out.code != 0 {
            return Err(format!("clang -foffload-lto {c}: {}", out.stderr).into());
        }
    }
    Ok(())
}

/// `-foffload-lto`: the device code travels as LLVM bitcode, and the
/// driver asks for `-flto=full` through `--device-compiler`. Both wrappers
/// print the same commands (`--dry-run`), and the programs they link run
/// the four regions on the offload device with the same output.
fn lto() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    compile_offload_lto(d)?;
    let app = d.join("app-lto.o").to_string_lossy().into_owned();
    let main = d.join("main-lto.o").to_string_lossy().into_owned();
    let mut texts = Vec::new();
    let mut outputs = Vec::new();
    for (ours, exe) in [(true, "app-ours"), (false, "app-llvm")] {
        let dry = clang_link(
            ours,
            d,
            &["-foffload-lto", &main, &app, "-o", exe, "-Wl,--dry-run"],
        )?;
        if dry.code != 0 {
            return Err(format!("--dry-run: exit {}: {}", dry.code, dry.stderr).into());
        }
        texts.push(mask_temps(&dry.stderr));
        let out = clang_link(ours, d, &["-foffload-lto", &main, &app, "-o", exe])?;
        if out.code != 0 {
            return Err(format!("linking {exe}: exit {}: {}", out.code, out.stderr).into());
        }
        outputs.push(run_program(&d.join(exe), 4)?);
    }
    if !texts[1].contains("-flto=full") {
        return Err(format!("LLVM's device link has no -flto=full:\n{}", texts[1]).into());
    }
    same(
        "commands",
        &texts[0],
        &texts[1].replace("app-llvm", "app-ours"),
    )?;
    same("program output", &outputs[0], &outputs[1])
}

/// LLVM's `offloading/static_linking.c` case: the target regions live in
/// a static library built with `-foffload-lto` (its members' device code
/// is LLVM bitcode, whose symbols LLVM 22 does not look at: a member for
/// a linked target is taken). Both builds run their regions with the
/// same output, and the commands are the same.
fn lto_static_library() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    compile_offload_lto(d)?;
    let ar = exec(
        &llvm("llvm-ar"),
        &["rcs".into(), "libapp.a".into(), "app-lto.o".into()],
        d,
        &[],
    );
    if ar.code != 0 {
        return Err(format!("llvm-ar: {}", ar.stderr).into());
    }
    let main = d.join("main-lto.o").to_string_lossy().into_owned();
    let lib = format!("-L{}", d.display());
    let mut texts = Vec::new();
    let mut outputs = Vec::new();
    for (ours, exe) in [(true, "app-ours"), (false, "app-llvm")] {
        let args = ["-foffload-lto", &main, &lib, "-lapp", "-o", exe];
        let mut dry = args.to_vec();
        dry.push("-Wl,--dry-run");
        let out = clang_link(ours, d, &dry)?;
        if out.code != 0 {
            return Err(format!("--dry-run: exit {}: {}", out.code, out.stderr).into());
        }
        texts.push(mask_temps(&out.stderr));
        let out = clang_link(ours, d, &args)?;
        if out.code != 0 {
            return Err(format!("linking {exe}: exit {}: {}", out.code, out.stderr).into());
        }
        outputs.push(run_program(&d.join(exe), 4)?);
    }
    if !texts[1].contains("app-lto-x86_64") {
        return Err(format!("LLVM did not link the member:\n{}", texts[1]).into());
    }
    same(
        "commands",
        &texts[0],
        &texts[1].replace("app-llvm", "app-ours"),
    )?;
    same("program output", &outputs[0], &outputs[1])
}

/// OpenMP and HIP device code in one program: OpenMP objects for the
/// host CPU and a HIP object for gfx90a (with the recording HIP runtime),
/// linked by plain `clang -fopenmp` through each wrapper. The same
/// commands (an x86_64 link, a gfx90a link, the bundler, the host link
/// with an OpenMP and a HIP wrapper object), the same program bytes, and
/// when run: the HIP fat binary and its kernel registered, the four
/// target regions run on the offload device, the same output.
fn mixed_openmp_hip() -> Result<(), Failed> {
    let fx = fixture()?;
    let dir = tempdir();
    let d = dir.path();
    let hip = [
        "--offload-new-driver",
        "-fgpu-rdc",
        "-x",
        "hip",
        "-nogpuinc",
        "--offload-arch=gfx90a",
        "-nogpulib",
        "-c",
    ];
    let mut a: Vec<String> = hip.iter().map(|s| (*s).to_string()).collect();
    a.extend([
        src("hip.hip").to_string_lossy().into_owned(),
        "-o".into(),
        "dev.o".into(),
    ]);
    let out = exec(&llvm("clang"), &a, d, &[]);
    if out.code != 0 {
        return Err(format!("compiling hip.hip: {}", out.stderr).into());
    }
    // The recording runtime's own main is renamed: the program's is main.c's.
    let a = [
        "-c".to_string(),
        "-Dmain=gpu_stub_main".into(),
        src("gpu_stub.c").to_string_lossy().into_owned(),
        "-o".into(),
        "stub.o".into(),
    ];
    let out = exec(&llvm("clang"), &a, d, &[]);
    if out.code != 0 {
        return Err(format!("compiling gpu_stub.c: {}", out.stderr).into());
    }
    let inputs = [
        fx.join("main.o"),
        fx.join("app.o"),
        d.join("dev.o"),
        d.join("stub.o"),
    ];
    let inputs: Vec<String> = inputs
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let mut texts = Vec::new();
    let mut programs = Vec::new();
    let mut outputs = Vec::new();
    for (ours, who) in [(true, "ours"), (false, "llvm")] {
        let sub = d.join(who);
        std::fs::create_dir_all(&sub)?;
        let mut args: Vec<&str> = inputs.iter().map(String::as_str).collect();
        args.extend(["-o", "app", "-Wl,--dry-run"]);
        let out = clang_link(ours, &sub, &args)?;
        if out.code != 0 {
            return Err(format!("--dry-run ({who}): {}", out.stderr).into());
        }
        // `-input=<file>` and `-output=<file>` masked after their `=` too.
        let text: String = mask_temps(&out.stderr)
            .lines()
            .map(|l| {
                let words: Vec<String> = l
                    .split(' ')
                    .map(|w| match w.rsplit_once('=') {
                        Some((k, v)) => format!("{k}={}", mask_temps(v).trim_end()),
                        None => w.to_string(),
                    })
                    .collect();
                words.join(" ") + "\n"
            })
            .collect();
        texts.push(text);
        args.pop();
        let out = clang_link(ours, &sub, &args)?;
        if out.code != 0 {
            return Err(format!("linking ({who}): {}", out.stderr).into());
        }
        programs.push(std::fs::read(sub.join("app"))?);
        outputs.push(run_program(&sub.join("app"), 4)?);
    }
    for want in [
        "--target=amdgcn-amd-amdhsa -mcpu=gfx90a",
        "hip-amdgcn-amd-amdhsa--gfx90a",
        "app.openmp.image.wrapper",
        "app.hip.image.wrapper",
    ] {
        if !texts[1].contains(want) {
            return Err(format!("LLVM's commands lack {want}:\n{}", texts[1]).into());
        }
    }
    same("commands", &texts[0], &texts[1])?;
    same_bytes("program", &programs[0], &programs[1])?;
    for want in [
        "RegisterFatBinary magic=48495046",
        "entry hip-amdgcn-amd-amdhsa--gfx90a",
        "RegisterFunction _Z4kernPi",
    ] {
        if !outputs[0].contains(want) {
            return Err(format!("no '{want}' in:\n{}", outputs[0]).into());
        }
    }
    same("program output", &outputs[0], &outputs[1])
}

/// Where NVIDIA's tools are (scripts/cuda-tools.sh).
const CUDA_TOOLS: &str = "/opt/offload-kit/cuda-tools/bin";

/// A CUDA root at `root` that clang-22 accepts: NVIDIA's ptxas, nvlink
/// and fatbinary, and a `cuda.h` that only gives the version (12.8).
fn make_cuda_root(root: &Path) -> Result<(), Failed> {
    std::fs::create_dir_all(root.join("bin"))?;
    std::fs::create_dir_all(root.join("include"))?;
    std::fs::create_dir_all(root.join("nvvm/libdevice"))?;
    for t in ["ptxas", "nvlink", "fatbinary"] {
        std::os::unix::fs::symlink(Path::new(CUDA_TOOLS).join(t), root.join("bin").join(t))?;
    }
    std::fs::write(root.join("include/cuda.h"), "#define CUDA_VERSION 12080\n")?;
    Ok(())
}

/// OpenMP offloading to NVPTX (`--offload-arch=sm_80,sm_90`): the same
/// `--dry-run` commands as LLVM 22's (two device links and the host link).
/// Real links are tested with one NVPTX architecture
/// ([`openmp_amdgpu_nvptx`]), whose runtime stand-in is built per
/// architecture.
fn openmp_nvptx() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let root = d.join("cuda");
    make_cuda_root(&root)?;
    let cuda = format!("--cuda-path={}", root.display());
    let gpu = ["-fopenmp", "--offload-arch=sm_80,sm_90", &cuda, "-nogpulib"];
    compile_gpu(&gpu, d, &["-c"], ".o")?;
    let link = openmp_gpu_link(&gpu, d, &[])?;
    let llvm_text = same_dry_run(d, &link, &["-march=sm_90"])?;
    if llvm_text.lines().count() != 3 {
        return Err(format!("LLVM's commands:\n{llvm_text}").into());
    }
    Ok(())
}

/// Compiles `app.c` and `main.c` with `flags` and `mode` (`-c`, or
/// `--offload-device-only -S`) to `d/app<ext>` and `d/main<ext>`; returns
/// the two outputs.
fn compile_gpu(flags: &[&str], d: &Path, mode: &[&str], ext: &str) -> Result<Vec<PathBuf>, Failed> {
    let mut outs = Vec::new();
    for c in ["app.c", "main.c"] {
        let out = d.join(c.replace(".c", ext));
        let mut a: Vec<String> = flags.iter().chain(mode).map(|s| (*s).to_string()).collect();
        a.extend([
            src(c).to_string_lossy().into_owned(),
            "-o".into(),
            out.to_string_lossy().into_owned(),
        ]);
        let run = exec(&llvm("clang"), &a, d, &[]);
        if run.code != 0 {
            return Err(format!("compiling {c}: {}", run.stderr).into());
        }
        outs.push(out);
    }
    Ok(outs)
}

/// A GPU language the drop-in links for.
#[derive(Clone, Copy, PartialEq)]
enum Gpu {
    /// HIP for gfx90a and gfx1030.
    Hip,
    /// CUDA for sm_80 and sm_90, with NVIDIA's ptxas, nvlink and fatbinary.
    Cuda,
}

/// HIP (two AMDGPU architectures) or CUDA (two NVIDIA ones) with the new
/// offload driver (`-fgpu-rdc`), linked (clang-22, GNU ld) through each
/// wrapper with the recording runtime `gpu_stub.c`: the same `--dry-run`
/// commands (the bundler's path aside), the same `--save-temps` files
/// with the same bytes (device images, fat binary, wrapper object, the
/// program itself), and the same registration when the programs run. HIP
/// with `--offload-compress` too: the fat binary is LLVM's compressed
/// bundle. `--emit-fatbin-only` writes LLVM's fat binary and nothing
/// else. CUDA runs against a CUDA root the test makes: NVIDIA's tools
/// and a `cuda.h` that gives clang the version (no headers are used).
fn gpu_program(gpu: Gpu) -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let cuda_root = d.join("cuda");
    let path = format!(
        "{}:{}",
        cuda_root.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = [("PATH", path.as_str())];
    let (source, lang_args, link_args): (&str, Vec<String>, Vec<String>) = match gpu {
        Gpu::Hip => {
            let archs = [
                "--offload-arch=gfx90a",
                "--offload-arch=gfx1030",
                "-nogpulib",
            ];
            let mut c = vec!["-x".to_string(), "hip".into(), "-nogpuinc".into()];
            c.extend(archs.iter().map(|s| (*s).to_string()));
            let mut l = vec!["--hip-link".to_string(), "-no-hip-rt".into()];
            l.extend(archs.iter().map(|s| (*s).to_string()));
            ("hip.hip", c, l)
        }
        Gpu::Cuda => {
            make_cuda_root(&cuda_root)?;
            let root = format!("--cuda-path={}", cuda_root.display());
            let c = vec![
                "-x".to_string(),
                "cuda".into(),
                root.clone(),
                "--cuda-gpu-arch=sm_80".into(),
                "--cuda-gpu-arch=sm_90".into(),
                "-nocudainc".into(),
                "-nocudalib".into(),
            ];
            ("cuda.cu", c, vec![root])
        }
    };
    let mut a: Vec<String> = vec!["--offload-new-driver".into(), "-fgpu-rdc".into()];
    a.extend(lang_args);
    a.extend([
        "-c".into(),
        src(source).to_string_lossy().into_owned(),
        "-o".into(),
        "dev.o".into(),
    ]);
    let out = exec(&llvm("clang"), &a, d, &env);
    if out.code != 0 {
        return Err(format!("compiling {source}: {}", out.stderr).into());
    }
    let mut a = vec![
        "-c".to_string(),
        src("gpu_stub.c").to_string_lossy().into_owned(),
        "-o".into(),
        "stub.o".into(),
    ];
    if gpu == Gpu::Cuda {
        a.push("-DCUDA".into());
    }
    let out = exec(&llvm("clang"), &a, d, &[]);
    if out.code != 0 {
        return Err(format!("compiling gpu_stub.c: {}", out.stderr).into());
    }
    let dev_o = d.join("dev.o").to_string_lossy().into_owned();
    let stub_o = d.join("stub.o").to_string_lossy().into_owned();
    let link = |ours: bool, cwd: &Path, extra: &[&str]| -> Out {
        let mut a: Vec<String> = vec!["--offload-new-driver".into(), "-fgpu-rdc".into()];
        a.extend(link_args.iter().cloned());
        if ours {
            let links = ours_as("clang-linker-wrapper");
            a.push(format!("-B{}", links.parent().unwrap().display()));
        }
        a.extend([dev_o.clone(), stub_o.clone(), "-o".into(), "app".into()]);
        a.extend(extra.iter().map(|s| (*s).to_string()));
        exec(&llvm("clang"), &a, cwd, &env)
    };
    // --dry-run: the same commands, the bundler wherever it is found.
    let mut texts = Vec::new();
    for ours in [true, false] {
        let out = link(ours, d, &["-Wl,--dry-run"]);
        if out.code != 0 {
            return Err(format!("--dry-run: exit {}: {}", out.code, out.stderr).into());
        }
        // File arguments such as `-input=<file>` and `--image3=…,file=<file>`
        // are masked after their last `=`.
        let text: String = mask_temps(&out.stderr)
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
            .collect();
        texts.push(text);
    }
    let packer = if gpu == Gpu::Hip {
        "BUNDLER "
    } else {
        "fatbinary\" -64 --create"
    };
    if texts[1].lines().count() != 4 || !texts[1].contains(packer) {
        return Err(format!(
            "LLVM printed not 2 links, a fat binary and a link:\n{}",
            texts[1]
        )
        .into());
    }
    same("commands", &texts[0], &texts[1])?;
    // --emit-fatbin-only, the wrapper run as clang runs it: the fat binary
    // is the output, LLVM's bytes, and nothing else is left.
    let mut fatbins = Vec::new();
    for (ours, who) in [(true, "ours"), (false, "llvm")] {
        let sub = d.join(format!("fatbin-{who}"));
        std::fs::create_dir_all(&sub)?;
        let prog = if ours {
            ours_as("clang-linker-wrapper")
        } else {
            llvm("clang-linker-wrapper")
        };
        let mut a = vec![
            "--emit-fatbin-only".to_string(),
            "--host-triple=x86_64-unknown-linux-gnu".into(),
            "--linker-path=/usr/bin/ld".into(),
            "-o".into(),
            "out.fatbin".into(),
            dev_o.clone(),
        ];
        if gpu == Gpu::Cuda {
            a.push(format!("--cuda-path={}", cuda_root.display()));
        }
        let out = exec(&prog, &a, &sub, &env);
        if out.code != 0 {
            return Err(format!("--emit-fatbin-only ({who}): {}", out.stderr).into());
        }
        let names: Vec<String> = std::fs::read_dir(&sub)?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        same(
            &format!("--emit-fatbin-only ({who}): files"),
            names,
            vec!["out.fatbin".to_string()],
        )?;
        fatbins.push(std::fs::read(sub.join("out.fatbin"))?);
    }
    same_bytes("--emit-fatbin-only output", &fatbins[0], &fatbins[1])?;
    let variants: &[(&str, &[&str])] = match gpu {
        Gpu::Hip => &[("plain", &[]), ("compressed", &["--offload-compress"])],
        Gpu::Cuda => &[("plain", &[])],
    };
    let (fatbin, wrapper_ir) = match gpu {
        Gpu::Hip => ("app.hipfb", "app.hip.image.wrapper.bc"),
        Gpu::Cuda => ("app.fatbin", "app.cuda.image.wrapper.bc"),
    };
    for (variant, extra) in variants {
        let mut listings = Vec::new();
        let mut logs = Vec::new();
        let mut dirs = Vec::new();
        for ours in [true, false] {
            let sub = d.join(format!("{variant}-{ours}"));
            std::fs::create_dir_all(&sub)?;
            let mut e = vec!["-Wl,--save-temps"];
            e.extend_from_slice(extra);
            let out = link(ours, &sub, &e);
            if out.code != 0 {
                return Err(format!("{variant}: exit {}: {}", out.code, out.stderr).into());
            }
            let mut names: Vec<String> = std::fs::read_dir(&sub)?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != wrapper_ir)
                .collect();
            names.sort();
            listings.push(names);
            let run = exec(&sub.join("app"), &[], &sub, &[]);
            if run.code != 0 {
                return Err(format!("{variant}: app exited {}: {}", run.code, run.stderr).into());
            }
            logs.push(run.stdout);
            dirs.push(sub);
        }
        same(&format!("{variant}: files"), &listings[0], &listings[1])?;
        for name in &listings[0] {
            let a = std::fs::read(dirs[0].join(name))?;
            let b = std::fs::read(dirs[1].join(name))?;
            same_bytes(&format!("{variant}: {name}"), &a, &b)?;
        }
        same(&format!("{variant}: registration"), &logs[0], &logs[1])?;
        let bytes = std::fs::read(dirs[0].join(fatbin))?;
        let want_magic: &[u8] = match (gpu, extra.is_empty()) {
            (Gpu::Cuda, _) => b"\x50\xed\x55\xba",
            (Gpu::Hip, true) => b"__CLANG_OFFLOAD_BUNDLE__",
            (Gpu::Hip, false) => b"CCOB",
        };
        if !bytes.starts_with(want_magic) {
            return Err(format!("{variant}: {fatbin} does not start with its magic").into());
        }
        let magic = if gpu == Gpu::Hip {
            "48495046"
        } else {
            "466243b1"
        };
        for want in [
            &format!("RegisterFatBinary magic={magic}")[..],
            "RegisterFunction _Z4kernPi",
            "RegisterVar devvar size=16",
            "UnregisterFatBinary\n",
        ] {
            if !logs[0].contains(want) {
                return Err(format!("{variant}: no '{want}' in:\n{}", logs[0]).into());
            }
        }
        if gpu == Gpu::Hip
            && extra.is_empty()
            && !logs[0].contains("entry hip-amdgcn-amd-amdhsa--gfx1030:")
        {
            return Err(format!("{variant}: no gfx1030 entry in:\n{}", logs[0]).into());
        }
    }
    Ok(())
}

/// OpenMP offloading to AMDGPU (`--offload-arch=gfx90a,gfx1030`, objects
/// compiled first so that every file name is fixed), linked through each
/// wrapper with the device runtime's symbols left unresolved (no ROCm
/// here): the same `--dry-run` commands, and the same `--save-temps` files
/// with the same bytes — device images, the wrapper object with its two
/// OffloadBinaries in LLVM's order, and the program.
fn openmp_amdgpu() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let gpu = ["-fopenmp", "--offload-arch=gfx90a,gfx1030", "-nogpulib"];
    compile_gpu(&gpu, d, &["-c"], ".o")?;
    let device = ["-Xoffload-linker", "--unresolved-symbols=ignore-all"].map(String::from);
    let link = openmp_gpu_link(&gpu, d, &device)?;
    same_dry_run(d, &link, &["-mcpu=gfx1030 -flto"])?;
    same_save_temps(d, &link, "app.amdgcn.gfx90a.img")?;
    Ok(())
}

/// Links `d/main.o` and `d/app.o` (built with the `gpu` flags) into `app`
/// in a given directory, through our wrapper (`true`) or LLVM's, with the
/// `device` arguments for the device links and one `extra` argument.
fn openmp_gpu_link<'a>(
    gpu: &'a [&'a str],
    d: &'a Path,
    device: &'a [String],
) -> Result<impl Fn(bool, &Path, &str) -> Out + 'a, Failed> {
    let fx = fixture()?;
    Ok(move |ours: bool, cwd: &Path, extra: &str| -> Out {
        let mut a: Vec<String> = gpu.iter().map(|s| (*s).to_string()).collect();
        if ours {
            let links = ours_as("clang-linker-wrapper");
            a.push(format!("-B{}", links.parent().unwrap().display()));
        }
        a.extend([
            d.join("main.o").to_string_lossy().into_owned(),
            d.join("app.o").to_string_lossy().into_owned(),
        ]);
        a.extend(device.iter().cloned());
        a.extend([
            format!("-L{}", fx.join("lib").display()),
            "-o".into(),
            "app".into(),
            extra.into(),
        ]);
        exec(&llvm("clang"), &a, cwd, &[])
    })
}

/// `link` with `-Wl,--dry-run` through each wrapper in `d`: the same
/// commands (temporary names aside), LLVM's holding each of `expect`;
/// returns LLVM's.
fn same_dry_run(
    d: &Path,
    link: &dyn Fn(bool, &Path, &str) -> Out,
    expect: &[&str],
) -> Result<String, Failed> {
    let mut texts = Vec::new();
    for ours in [true, false] {
        let out = link(ours, d, "-Wl,--dry-run");
        if out.code != 0 {
            return Err(format!("--dry-run: exit {}: {}", out.code, out.stderr).into());
        }
        texts.push(mask_temps(&out.stderr));
    }
    if expect.iter().any(|e| !texts[1].contains(e)) {
        return Err(format!("LLVM's commands:\n{}", texts[1]).into());
    }
    same("commands", &texts[0], &texts[1])?;
    Ok(texts.swap_remove(1))
}

/// Links with `link` through each wrapper with `--save-temps` (in
/// `d/ours` and `d/llvm`) and requires the same files with the same bytes
/// (LLVM's bitcode of its wrapper module aside: ours has none), among them
/// `expect`; returns the two directories.
fn same_save_temps(
    d: &Path,
    link: &dyn Fn(bool, &Path, &str) -> Out,
    expect: &str,
) -> Result<[PathBuf; 2], Failed> {
    let mut listings = Vec::new();
    let mut dirs = Vec::new();
    for ours in [true, false] {
        let sub = d.join(if ours { "ours" } else { "llvm" });
        std::fs::create_dir_all(&sub)?;
        let out = link(ours, &sub, "-Wl,--save-temps");
        if out.code != 0 {
            return Err(format!("exit {}: {}", out.code, out.stderr).into());
        }
        let mut names: Vec<String> = std::fs::read_dir(&sub)?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "app.openmp.image.wrapper.bc")
            .collect();
        names.sort();
        listings.push(names);
        dirs.push(sub);
    }
    same("files", &listings[0], &listings[1])?;
    if !listings[0].iter().any(|n| n == expect) {
        return Err(format!("no {expect} among {:?}", listings[0]).into());
    }
    for name in &listings[0] {
        let a = std::fs::read(dirs[0].join(name))?;
        let b = std::fs::read(dirs[1].join(name))?;
        same_bytes(name, &a, &b)?;
    }
    let [ours, llvm] = <[PathBuf; 2]>::try_from(dirs).map_err(|_| "two directories")?;
    Ok([ours, llvm])
}

/// A stand-in for the OpenMP device runtime on NVPTX (none is packaged
/// here): every function the device code of `ptx_files` calls but does
/// not define (`.extern .func`), defined with the same prototype and an
/// empty body, assembled by NVIDIA's ptxas into a relocatable cubin for
/// `arch` at `out`. nvlink then resolves the device link; nothing runs on
/// a GPU here.
fn nvptx_runtime_stub(ptx_files: &[PathBuf], arch: &str, out: &Path) -> Result<(), Failed> {
    let mut header = String::new();
    let mut names = std::collections::BTreeSet::new();
    let mut body = String::new();
    for f in ptx_files {
        let text = std::fs::read_to_string(f)?;
        if header.is_empty() {
            header = text
                .lines()
                .filter(|l| {
                    l.starts_with(".version")
                        || l.starts_with(".target")
                        || l.starts_with(".address_size")
                })
                .map(|l| format!("{l}\n"))
                .collect();
        }
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let Some(decl) = line.strip_prefix(".extern .func") else {
                continue;
            };
            let name = decl
                .split_whitespace()
                .last()
                .unwrap_or_default()
                .to_string();
            let mut def = format!(".visible .func{decl}\n");
            for l in lines.by_ref() {
                if l.trim() == ";" {
                    break;
                }
                def.push_str(l);
                def.push('\n');
            }
            if names.insert(name) {
                body.push_str(&def);
                body.push_str("{\n\tret;\n}\n");
            }
        }
    }
    if names.is_empty() {
        return Err("the device code calls no runtime function".into());
    }
    let ptx = out.with_extension("ptx");
    std::fs::write(&ptx, format!("{header}\n{body}"))?;
    let a: Vec<String> = vec![
        format!("-arch={arch}"),
        "-c".into(),
        ptx.to_string_lossy().into_owned(),
        "-o".into(),
        out.to_string_lossy().into_owned(),
    ];
    let run = exec(
        &Path::new(CUDA_TOOLS).join("ptxas"),
        &a,
        out.parent().unwrap(),
        &[],
    );
    if run.code != 0 {
        return Err(format!("ptxas: {}", run.stderr).into());
    }
    Ok(())
}

/// OpenMP offloading to AMDGPU and NVPTX in one program
/// (`--offload-arch=gfx90a,sm_80`), linked through each wrapper for real:
/// the AMDGPU runtime's symbols left unresolved, NVPTX's given by a
/// stand-in ([`nvptx_runtime_stub`]) through `-Xoffload-linker-<triple>`.
/// The same `--dry-run` commands, the same `--save-temps` files with the
/// same bytes (both device images, the wrapper object, the program), and
/// the two programs print the same (their regions fall back to the host:
/// no GPU here).
fn openmp_amdgpu_nvptx() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let root = d.join("cuda");
    make_cuda_root(&root)?;
    let cuda = format!("--cuda-path={}", root.display());
    let gpu = [
        "-fopenmp",
        "--offload-arch=gfx90a,sm_80",
        &cuda,
        "-nogpulib",
    ];
    compile_gpu(&gpu, d, &["-c"], ".o")?;
    // The NVPTX device code alone, as PTX, for the runtime stand-in.
    let sm80 = ["-fopenmp", "--offload-arch=sm_80", &cuda, "-nogpulib"];
    let ptx = compile_gpu(&sm80, d, &["--offload-device-only", "-S"], ".ptx")?;
    let stub = d.join("omp-stub.cubin");
    nvptx_runtime_stub(&ptx, "sm_80", &stub)?;
    let device = [
        "-Xoffload-linker-amdgcn-amd-amdhsa".to_string(),
        "--unresolved-symbols=ignore-all".into(),
        "-Xoffload-linker-nvptx64-nvidia-cuda".into(),
        stub.to_string_lossy().into_owned(),
    ];
    let link = openmp_gpu_link(&gpu, d, &device)?;
    same_dry_run(d, &link, &["-march=sm_80", "-mcpu=gfx90a"])?;
    let dirs = same_save_temps(d, &link, "app.nvptx64.sm_80.img")?;
    let mut outputs = Vec::new();
    for sub in &dirs {
        let env = [("LD_LIBRARY_PATH", LLVM_LIB)];
        let out = exec(&sub.join("app"), &[], sub, &env);
        if !out.stdout.contains("sum=") {
            return Err(format!(
                "{}: exit {}: {}{}",
                sub.display(),
                out.code,
                out.stdout,
                out.stderr
            )
            .into());
        }
        outputs.push((out.code, out.stdout));
    }
    same("program output", &outputs[0], &outputs[1])
}

/// Debian's arm64 LLVM 22 runtime, unpacked by `scripts/arm64-sysroot.sh`.
const SYSROOT_ARM64: &str = "/opt/offload-kit/sysroot-arm64";

/// On a second CPU: `main.c` and `app.c` built by clang-22 for aarch64
/// with an aarch64 offload target and linked (ld.lld) through each wrapper
/// against Debian's arm64 libomp and libomptarget 22, then run under
/// qemu-aarch64: the four regions run on the offload device with the same
/// output for both, and four kernels are launched there.
fn aarch64_qemu() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let lib = format!("{SYSROOT_ARM64}/usr/lib/aarch64-linux-gnu");
    let llvm_lib = format!("{SYSROOT_ARM64}/usr/lib/llvm-22/lib");
    // The unversioned name the link looks -lomptarget up by.
    std::fs::create_dir_all(d.join("l"))?;
    std::os::unix::fs::symlink(
        format!("{llvm_lib}/libomptarget.so.22.1"),
        d.join("l/libomptarget.so"),
    )?;
    let mut outputs = Vec::new();
    for (ours, exe) in [(true, "app-ours"), (false, "app-llvm")] {
        let mut a: Vec<String> = vec![
            "--target=aarch64-linux-gnu".into(),
            "-fopenmp".into(),
            "-fopenmp-targets=aarch64-unknown-linux-gnu".into(),
            "-fuse-ld=lld".into(),
        ];
        if ours {
            let links = ours_as("clang-linker-wrapper");
            a.push(format!("-B{}", links.parent().unwrap().display()));
        }
        a.extend([
            src("main.c").to_string_lossy().into_owned(),
            src("app.c").to_string_lossy().into_owned(),
            format!("-L{}", d.join("l").display()),
            format!("-L{lib}"),
            format!("-Wl,-rpath-link,{lib}:{SYSROOT_ARM64}/lib/aarch64-linux-gnu"),
            "-o".into(),
            exe.into(),
        ]);
        let out = exec(&llvm("clang"), &a, d, &[]);
        if out.code != 0 {
            return Err(format!("linking {exe}: exit {}: {}", out.code, out.stderr).into());
        }
        let env = [
            ("LD_LIBRARY_PATH", format!("{llvm_lib}:{lib}")),
            ("LIBOMPTARGET_INFO", "16".into()),
        ];
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let run = exec(
            Path::new("qemu-aarch64"),
            &["-L".into(), SYSROOT_ARM64.into(), format!("./{exe}")],
            d,
            &env,
        );
        if run.code != 0 {
            return Err(format!(
                "{exe} under qemu-aarch64: exit {}:\n{}{}",
                run.code, run.stdout, run.stderr
            )
            .into());
        }
        for r in 1..=4 {
            if !run.stdout.contains(&format!("region {r} on_device=1\n")) {
                return Err(format!("{exe}: region {r} not on the device:\n{}", run.stdout).into());
            }
        }
        let launches = run
            .stderr
            .lines()
            .filter(|l| l.contains("Launching kernel"))
            .count();
        same(&format!("{exe}: kernel launches"), launches, 4)?;
        outputs.push(run.stdout);
    }
    same("program output", &outputs[0], &outputs[1])
}

/// The trials.
pub fn tests() -> Vec<Trial> {
    let lld: Vec<&str> = TOOLS.iter().copied().chain(["ld.lld"]).collect();
    let with_ar: Vec<&str> = TOOLS.iter().copied().chain(["llvm-ar"]).collect();
    let with_false: Vec<&str> = TOOLS.iter().copied().chain(["false"]).collect();
    vec![
        trial("linker_wrapper::objects", TOOLS, || {
            same_program(&["main.o", "app.o"], 4)
        }),
        trial("linker_wrapper::from_sources", TOOLS, || {
            let (m, a) = (src("main.c"), src("app.c"));
            same_program(&[m.to_str().unwrap(), a.to_str().unwrap()], 4)
        }),
        trial("linker_wrapper::one_file", TOOLS, || {
            same_program(&[src("one.c").to_str().unwrap()], 4)
        }),
        trial("linker_wrapper::several_files", TOOLS, || {
            same_program(&["main2.o", "app.o", "two.o"], 5)
        }),
        trial("linker_wrapper::lld", &lld, || {
            same_program(&["main.o", "app.o", "-fuse-ld=lld"], 4)
        }),
        trial("linker_wrapper::no_pie", TOOLS, || {
            same_program(&["main.o", "app.o", "-no-pie"], 4)
        }),
        trial("linker_wrapper::shared_library", TOOLS, shared_library),
        trial("linker_wrapper::lto", TOOLS, lto),
        trial("linker_wrapper::flto_host", TOOLS, flto_host),
        trial("linker_wrapper::mixed_openmp_hip", TOOLS, mixed_openmp_hip),
        trial(
            "linker_wrapper::lto_static_library",
            &with_ar,
            lto_static_library,
        ),
        trial("linker_wrapper::openmp_amdgpu", TOOLS, openmp_amdgpu),
        trial(
            "linker_wrapper::openmp_nvptx",
            &[
                "clang",
                "clang-linker-wrapper",
                "/opt/offload-kit/cuda-tools/bin/ptxas",
                "/opt/offload-kit/cuda-tools/bin/nvlink",
                "/opt/offload-kit/cuda-tools/bin/fatbinary",
            ],
            openmp_nvptx,
        ),
        trial(
            "linker_wrapper::openmp_amdgpu_nvptx",
            &[
                "clang",
                "clang-linker-wrapper",
                "/opt/offload-kit/cuda-tools/bin/ptxas",
                "/opt/offload-kit/cuda-tools/bin/nvlink",
            ],
            openmp_amdgpu_nvptx,
        ),
        trial(
            "linker_wrapper::hip",
            &[
                "clang",
                "clang-linker-wrapper",
                "clang-offload-bundler",
                "ld.bfd",
            ],
            || gpu_program(Gpu::Hip),
        ),
        trial(
            "linker_wrapper::cuda",
            &[
                "clang",
                "clang-linker-wrapper",
                "ld.bfd",
                "/opt/offload-kit/cuda-tools/bin/ptxas",
                "/opt/offload-kit/cuda-tools/bin/nvlink",
                "/opt/offload-kit/cuda-tools/bin/fatbinary",
            ],
            || gpu_program(Gpu::Cuda),
        ),
        trial(
            "linker_wrapper::aarch64_qemu",
            &[
                "clang",
                "clang-linker-wrapper",
                "ld.lld",
                "qemu-aarch64",
                "/opt/offload-kit/sysroot-arm64/usr/lib/llvm-22/lib/libomptarget.so.22.1",
                "/opt/offload-kit/sysroot-arm64/usr/lib/aarch64-linux-gnu/libomp.so",
            ],
            aarch64_qemu,
        ),
        trial("linker_wrapper::save_temps", TOOLS, save_temps),
        trial("linker_wrapper::archive_members", &with_ar, archive_members),
        trial(
            "linker_wrapper::thin_archive_missing_member",
            &with_ar,
            thin_archive_missing_member,
        ),
        trial(
            "linker_wrapper::thin_archive_members",
            &with_ar,
            thin_archive_members,
        ),
        trial("linker_wrapper::dry_run", TOOLS, || {
            dry_run(&["-Wl,--dry-run,--wrapper-verbose"])
        }),
        trial("linker_wrapper::dry_run_device_args", TOOLS, || {
            dry_run(&[
                "-Wl,--dry-run",
                "-Wl,--device-linker=-z,--device-linker=x86_64-unknown-linux-gnu=now",
                "-Wl,--device-compiler=-O2,--device-compiler=aarch64-unknown-linux-gnu=-O3",
                "-Wl,-rpath,/opt/x,--whole-archive,--no-whole-archive",
            ])
        }),
        trial("linker_wrapper::corrupt_section", TOOLS, corrupt_section),
        trial(
            "linker_wrapper::failing_device_link",
            TOOLS,
            failing_device_link,
        ),
        trial("linker_wrapper::relocatable", TOOLS, relocatable),
        trial("linker_wrapper::dry_run_relocatable", TOOLS, || {
            dry_run(&["-Wl,--dry-run", "-r"])
        }),
        trial("linker_wrapper::override_image", TOOLS, override_image),
        trial("linker_wrapper::refuses_override_image_cuda", TOOLS, || {
            refused(&["--override-image=cuda=x.fatbin"])
        }),
        // `-mllvm=` is not the wrapper's option: LLVM 22 passes it to the
        // host linker, as do we.
        trial("linker_wrapper::dry_run_joined_mllvm", TOOLS, || {
            dry_run(&["-Wl,--dry-run", "-Wl,-mllvm=-x"])
        }),
        trial("linker_wrapper::dry_run_mllvm", TOOLS, || {
            dry_run(&[
                "-Wl,--dry-run",
                "-Wl,-mllvm,-inline-threshold=5,-mllvm,-unroll-count=2",
            ])
        }),
        trial("linker_wrapper::missing_library", TOOLS, missing_library),
        trial("linker_wrapper::wrapper_jobs", TOOLS, wrapper_jobs),
        trial("linker_wrapper::large_images", TOOLS, large_images),
        trial("linker_wrapper::dry_run_direct", TOOLS, dry_run_direct),
        trial(
            "linker_wrapper::dry_run_save_temps",
            TOOLS,
            dry_run_save_temps,
        ),
        trial(
            "linker_wrapper::dry_run_bitcode_host",
            TOOLS,
            dry_run_bitcode_host,
        ),
        trial(
            "linker_wrapper::failing_host_link",
            &with_false,
            failing_host_link,
        ),
    ]
}

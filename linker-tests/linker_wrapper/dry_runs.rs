//! `--dry-run` and `--save-temps` against LLVM's: the commands printed,
//! the temporaries kept, `--wrapper-jobs`, large images, an image given
//! with `--override-image`.

use super::*;

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

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(flto_host, TOOLS),
        trial!(save_temps, TOOLS),
        trial!(dry_run_wrapper_verbose, TOOLS),
        trial!(dry_run_device_args, TOOLS),
        trial!(dry_run_relocatable, TOOLS),
        trial!(override_image, TOOLS),
        trial!(dry_run_joined_mllvm, TOOLS),
        trial!(dry_run_mllvm, TOOLS),
        trial!(wrapper_jobs, TOOLS),
        trial!(large_images, TOOLS),
        trial!(dry_run_direct, TOOLS),
        trial!(dry_run_save_temps, TOOLS),
        trial!(dry_run_bitcode_host, TOOLS),
    ]
}

fn dry_run_wrapper_verbose() -> Result<(), Failed> {
    dry_run(&["-Wl,--dry-run,--wrapper-verbose"])
}

fn dry_run_device_args() -> Result<(), Failed> {
    dry_run(&[
        "-Wl,--dry-run",
        "-Wl,--device-linker=-z,--device-linker=x86_64-unknown-linux-gnu=now",
        "-Wl,--device-compiler=-O2,--device-compiler=aarch64-unknown-linux-gnu=-O3",
        "-Wl,-rpath,/opt/x,--whole-archive,--no-whole-archive",
    ])
}

fn dry_run_relocatable() -> Result<(), Failed> {
    dry_run(&["-Wl,--dry-run", "-r"])
}

/// `-mllvm=` is not the wrapper's option: LLVM 22 passes it to the
/// host linker, as do we.
fn dry_run_joined_mllvm() -> Result<(), Failed> {
    dry_run(&["-Wl,--dry-run", "-Wl,-mllvm=-x"])
}

fn dry_run_mllvm() -> Result<(), Failed> {
    dry_run(&[
        "-Wl,--dry-run",
        "-Wl,-mllvm,-inline-threshold=5,-mllvm,-unroll-count=2",
    ])
}

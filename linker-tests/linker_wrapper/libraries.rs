//! Archives (regular and thin), shared libraries, relocatable links, LTO
//! and a program mixing OpenMP and HIP.

use super::*;

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

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let with_ar: Vec<&str> = TOOLS.iter().copied().chain(["llvm-ar"]).collect();
    vec![
        trial!(shared_library, TOOLS),
        trial!(lto, TOOLS),
        trial!(mixed_openmp_hip, TOOLS),
        trial!(lto_static_library, &with_ar),
        trial!(archive_members, &with_ar),
        trial!(thin_archive_members, &with_ar),
        trial!(relocatable, TOOLS),
    ]
}

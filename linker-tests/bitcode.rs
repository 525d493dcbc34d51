//! Device code embedded in LLVM bitcode host objects (`-flto` builds, or
//! modules assembled by `llvm-as` with `llvm.embedded.objects`): what
//! offload-kit as `llvm-offload-binary` / `clang-offload-packager` extracts
//! from them, against what LLVM 22's tools extract, byte for byte.

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use crate::util::{
    bytes, clean_failure, llvm, ours, ours_as, run, same, same_bytes, snapshot, tempdir,
};

const TOOL: &str = "llvm-offload-binary";

/// `b` as an LLVM IR string constant.
fn ll_bytes(b: &[u8]) -> String {
    let mut s = String::from("c\"");
    for &c in b {
        if (32..127).contains(&c) && c != b'"' && c != b'\\' {
            s.push(c as char);
        } else {
            s.push_str(&format!("\\{c:02X}"));
        }
    }
    s.push('"');
    s
}

/// Packs `images` (`--image` values, `file=` naming a file in `d` that is
/// made here) with LLVM's tool; returns the packed bytes.
fn pack(d: &Path, out: &str, images: &[(&str, usize, &str)]) -> Result<Vec<u8>, Failed> {
    let mut args = vec!["-o".to_string(), out.to_string()];
    for (i, (file, len, rest)) in images.iter().enumerate() {
        std::fs::write(d.join(file), bytes(40 + i as u64, *len))?;
        args.push(format!("--image=file={file},{rest}"));
    }
    run(&llvm(TOOL), &args, d).ok()?;
    Ok(std::fs::read(d.join(out))?)
}

/// A module embedding `first` and `second` for the offloading tools, and
/// `second` again in another section (which the tools pass over); then
/// assembled, and in an archive.
fn make_module(d: &Path) -> Result<(), Failed> {
    let first = pack(
        d,
        "first.bin",
        &[
            (
                "a.o",
                300,
                "triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp",
            ),
            (
                "b.cubin",
                301,
                "triple=nvptx64-nvidia-cuda,arch=sm_80,kind=openmp",
            ),
        ],
    )?;
    let second = pack(
        d,
        "second.bin",
        &[(
            "c.o",
            77,
            "triple=x86_64-unknown-linux-gnu,arch=generic,kind=openmp",
        )],
    )?;
    let ll = format!(
        "@first = private constant [{} x i8] {}, section \".llvm.offloading\", align 8\n\
         @second = private constant [{} x i8] {}, section \".llvm.offloading\", align 8\n\
         !llvm.embedded.objects = !{{!0, !1, !2}}\n\
         !0 = !{{ptr @first, !\".llvm.offloading\"}}\n\
         !1 = !{{ptr @second, !\".other\"}}\n\
         !2 = !{{ptr @second, !\".llvm.offloading\"}}\n",
        first.len(),
        ll_bytes(&first),
        second.len(),
        ll_bytes(&second),
    );
    std::fs::write(d.join("m.ll"), ll)?;
    run(&llvm("llvm-as"), &["m.ll", "-o", "m.bc"], d).ok()?;
    run(&llvm("llvm-ar"), &["rc", "lib.a", "m.bc"], d).ok()?;
    Ok(())
}

/// Runs LLVM's `tool` and ours under its name with `args` in `d`: the
/// same exit code, the same messages and the same files written to `out`.
fn same_extraction(d: &Path, tool: &str, args: &[&str], out: &str) -> Result<(), Failed> {
    let mut seen = Vec::new();
    for prog in [llvm(tool), ours_as(tool)] {
        let dir = d.join(out);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir)?;
        let args: Vec<String> = args.iter().map(|a| a.replace("@D", "..")).collect();
        let r = run(&prog, &args, &dir);
        // LLVM's warnings name its own path: compare the text after it.
        let stderr: Vec<String> = r
            .stderr
            .lines()
            .map(|l| l.split_once(": ").map_or(l, |x| x.1).to_string())
            .collect();
        seen.push((r.code, stderr, snapshot(&dir)));
    }
    let (ours, theirs) = (seen.pop().unwrap(), seen.pop().unwrap());
    same(&format!("{args:?}: exit code"), ours.0, theirs.0)?;
    same(&format!("{args:?}: messages"), &ours.1, &theirs.1)?;
    same(
        &format!("{args:?}: files"),
        ours.2.iter().map(|f| &f.0).collect::<Vec<_>>(),
        theirs.2.iter().map(|f| &f.0).collect::<Vec<_>>(),
    )?;
    for ((name, a), (_, b)) in ours.2.iter().zip(&theirs.2) {
        same_bytes(name, a, b)?;
    }
    Ok(())
}

/// A module made with `llvm-as`, alone and in an archive: the files and
/// archives extracted are LLVM's, with either tool name.
fn packager_reads_assembled_modules() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    make_module(d)?;
    let mut n = 0;
    for input in ["@D/m.bc", "@D/lib.a"] {
        for filter in [
            "kind=openmp",
            "arch=gfx90a",
            "triple=x86_64-unknown-linux-gnu",
            "arch=none",
        ] {
            n += 1;
            let image = format!("--image=file=out.a,{filter}");
            same_extraction(d, TOOL, &[input, "--archive", &image], &format!("x{n}"))?;
            let image = format!("--image=file=out.img,{filter}");
            same_extraction(d, TOOL, &[input, &image], &format!("y{n}"))?;
        }
        n += 1;
        same_extraction(
            d,
            "clang-offload-packager",
            &[input, "--image=file=sm.img,arch=sm_80"],
            &format!("p{n}"),
        )?;
    }
    // The archive of the three images holds them all: the other section
    // was passed over, and the second binary read once.
    let archive = d.join("x1").join("out.a");
    let listed = run(&llvm("llvm-ar"), &["t", &archive.to_string_lossy()], d).ok()?;
    let members = String::from_utf8_lossy(&listed.stdout).lines().count();
    same("members of out.a", members, 3)?;
    Ok(())
}

/// Objects from `clang -flto`, for an x86-64 device and for gfx90a with
/// `-foffload-lto` (whose device image is bitcode too): the extracted
/// images are LLVM's; `offload-kit list` lists them.
fn clang_lto_objects() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/bitcode/openmp.c");
    let src = src.to_string_lossy().into_owned();
    for (obj, flags, triple) in [
        (
            "x86.o",
            &["-fopenmp-targets=x86_64-unknown-linux-gnu"][..],
            "x86_64-unknown-linux-gnu",
        ),
        (
            "amd.o",
            &["--offload-arch=gfx90a", "-nogpulib", "-foffload-lto"][..],
            "amdgcn-amd-amdhsa",
        ),
    ] {
        let mut args = vec!["-fopenmp", "-flto", "-c", &src, "-o", obj];
        args.extend_from_slice(flags);
        run(&llvm("clang"), &args, d).ok()?;
        if !std::fs::read(d.join(obj))?.starts_with(b"BC\xc0\xde") {
            return Err(format!("{obj}: clang -flto did not write bitcode").into());
        }
        let input = format!("@D/{obj}");
        let image = format!("--image=file=dev.img,triple={triple}");
        same_extraction(d, TOOL, &[&input, &image], &format!("{obj}.x"))?;
        let got = std::fs::read(d.join(format!("{obj}.x")).join("dev.img"))?;
        if got.is_empty() {
            return Err(format!("{obj}: no device image extracted").into());
        }
        let r = run(&ours(), &["list", obj], d).ok()?;
        let out = String::from_utf8_lossy(&r.stdout);
        if !out.contains(triple) || out.lines().count() != 2 {
            return Err(format!("{obj}: offload-kit list: {out}").into());
        }
    }
    Ok(())
}

/// Bitcode that cannot be read: LLVM fails, and so do we, naming the file
/// and saying what is wrong.
fn damaged_modules() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    make_module(d)?;
    let bc = std::fs::read(d.join("m.bc"))?;
    // Cut inside the module block (at a multiple of 4 bytes).
    let cut = (bc.len() / 2) & !3;
    std::fs::write(d.join("cut.bc"), &bc[..cut])?;
    let llvm_run = run(&llvm(TOOL), &["cut.bc", "--image=file=o,kind=openmp"], d);
    if llvm_run.code == 0 {
        return Err("LLVM read the cut module".into());
    }
    let r = run(&ours_as(TOOL), &["cut.bc", "--image=file=o,kind=openmp"], d);
    clean_failure("ours on cut.bc", &r, "cut.bc")?;
    if !r.stderr.contains("bitcode") {
        return Err(format!("the message does not say bitcode: {}", r.stderr).into());
    }
    let r = run(&ours(), &["list", "cut.bc"], d);
    if r.code == 0 || !r.stderr.contains("cut.bc") {
        return Err(format!("list: exit {}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(
            packager_reads_assembled_modules,
            &[TOOL, "clang-offload-packager", "llvm-as", "llvm-ar"],
        ),
        trial!(clang_lto_objects, &[TOOL, "clang"]),
        trial!(damaged_modules, &[TOOL, "llvm-as", "llvm-ar"]),
    ]
}

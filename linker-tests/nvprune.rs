//! The `nvprune` drop-in against NVIDIA's nvprune 11.8
//! (`scripts/nvprune-tool.sh`), both run here on objects and archives
//! built here: clang-22 CUDA objects (cubins by NVIDIA's `ptxas`, PTX for
//! each arch, put in a fatbin by NVIDIA's `fatbinary`), and objects that
//! `offload-kit wrap --kind=cuda` makes of fatbins `fatbinary` builds
//! (plain and LZ4-compressed, PTX for one SM only), alone and in an
//! archive. Each command line runs in two directories, one per tool: the
//! exit code, standard output, standard error and the files written must
//! be the same, byte for byte. Then what nvprune refuses ("not
//! relocatable": libcurand from NVIDIA's wheel) and ours prunes as
//! `offload-kit prune --keep` does, and inputs that are no file or no
//! object: a clear error, no panic, nothing written.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use libtest_mimic::{Failed, Trial};

use crate::real_libs::{WHEEL, downloads};
use crate::util::{llvm, ours, ours_as, run, same, same_bytes, snapshot, tempdir, unzip};

/// NVIDIA's nvprune, unpacked by scripts/nvprune-tool.sh.
const NVPRUNE: &str = "/opt/offload-kit/nvprune/bin/nvprune";
const PTXAS: &str = "/opt/offload-kit/cuda-tools/bin/ptxas";
const FATBINARY: &str = "/opt/offload-kit/cuda-tools/bin/fatbinary";

pub fn tests() -> Vec<Trial> {
    let built = [NVPRUNE, PTXAS, FATBINARY, "clang", "ar", "gcc"];
    vec![
        trial!(objects_and_archives_as_nvprune, &built),
        trial!(command_lines_as_nvprune, &built),
        trial!(curand_so_as_prune, &[NVPRUNE]),
        trial!(bad_inputs, &[NVPRUNE]),
    ]
}

/// What one tool did in its own directory.
struct Side {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
    files: Vec<(String, Vec<u8>)>,
}

/// Runs `prog` with `args` in `dir` (made empty first): what it did.
fn side(prog: &Path, args: &[&str], dir: &Path) -> Result<Side, Failed> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    let out = Command::new(prog)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()?;
    if out.status.code().is_none() {
        return Err(format!("{} {args:?}: killed by a signal", prog.display()).into());
    }
    Ok(Side {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        files: snapshot(dir),
    })
}

/// Runs NVIDIA's nvprune and ours with `args`, each in a directory of its
/// own under `work` (inputs are named from there as `../in/FILE`), and
/// fails unless they exit alike, print the same on standard error (and,
/// with `stdout`, on standard output: not for help and version, whose
/// texts are our own) and write the same files with the same bytes.
fn both(work: &Path, args: &[&str], stdout: bool) -> Result<(), Failed> {
    let theirs = side(Path::new(NVPRUNE), args, &work.join("nv"))?;
    let mine = side(&ours_as("nvprune"), args, &work.join("ours"))?;
    let what = format!("nvprune {}", args.join(" "));
    same(&format!("{what}: exit code"), mine.code, theirs.code)?;
    same(&format!("{what}: stderr"), &mine.stderr, &theirs.stderr)?;
    let text = |s: &Side| String::from_utf8_lossy(&s.stdout).into_owned();
    if stdout {
        same(&format!("{what}: stdout"), text(&mine), text(&theirs))?;
    } else if mine.stdout.is_empty() != theirs.stdout.is_empty() {
        return Err(format!("{what}: stdout: ours {:?}, theirs {:?}", text(&mine), text(&theirs)).into());
    }
    let names = |s: &Side| s.files.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    same(&format!("{what}: files"), names(&mine), names(&theirs))?;
    for ((name, a), (_, b)) in mine.files.iter().zip(&theirs.files) {
        same_bytes(&format!("{what}: {name}"), a, b)?;
    }
    Ok(())
}

/// A PTX kernel for `sm`, with a small table so that each cubin differs.
fn kernel_ptx(sm: u32) -> String {
    let words: Vec<String> = (0..64).map(|i| (i * 7 + sm).to_string()).collect();
    format!(
        ".version 8.0\n.target sm_{sm}\n.address_size 64\n\n\
         .visible .global .align 4 .u32 table[64] = {{{}}};\n\n\
         .visible .entry k_sm{sm}(.param .u64 p)\n{{\n\
         \t.reg .b32 %r<3>;\n\t.reg .b64 %rd<3>;\n\
         \tld.param.u64 %rd1, [p];\n\tcvta.to.global.u64 %rd2, %rd1;\n\
         \tld.global.u32 %r1, [table];\n\tadd.s32 %r2, %r1, {sm};\n\
         \tst.global.u32 [%rd2], %r2;\n\tret;\n}}\n",
        words.join(",")
    )
}

/// The inputs, in `work/in`: `clang.o` (clang-22 CUDA for sm_75, sm_80
/// and sm_86, a cubin and PTX each), `plain.o` and `lz4.o` (wrapped
/// fatbins of sm_75, sm_80 and sm_86 cubins and sm_75 PTX, stored plain
/// and LZ4-compressed), `old.o` (an sm_75 cubin alone) and `libk.a` of all
/// four; then GCC's objects of the C sources `fatbinary --embedded-fatbin`
/// writes (GCC orders its string tables as LLVM does not): `gcc.o` (the
/// fatbin of `plain.o` in `.nv_fatbin`), `rel.o` (relocatable sm_75 and
/// sm_80 cubins in `__nv_relfatbin`) and `libgcc.a` of both.
fn build(work: &Path) -> Result<PathBuf, Failed> {
    let d = work.join("in");
    std::fs::create_dir_all(&d)?;
    crate::linker_wrapper::gpu::make_cuda_root(&work.join("cuda"))?;
    std::fs::write(
        d.join("k.cu"),
        "typedef struct { unsigned x, y, z; } dim3x;\n\
         extern \"C\" int cudaLaunchKernel(const void *, dim3x, dim3x, void **, unsigned long, void *);\n\
         __attribute__((global)) void scale(float *p, float f) { p[0] *= f; }\n",
    )?;
    let root = format!("--cuda-path={}", work.join("cuda").display());
    let mut args = vec![
        "-x",
        "cuda",
        "--no-offload-new-driver",
        &root,
        "-nocudainc",
        "-nocudalib",
    ];
    args.extend(["--cuda-gpu-arch=sm_75", "--cuda-gpu-arch=sm_80"]);
    args.extend(["--cuda-gpu-arch=sm_86", "-c", "k.cu", "-o", "clang.o"]);
    run(&llvm("clang"), &args, &d).ok()?;
    for sm in [75, 80, 86] {
        std::fs::write(d.join(format!("k{sm}.ptx")), kernel_ptx(sm))?;
        let arch = format!("-arch=sm_{sm}");
        let (ptx, cubin) = (format!("k{sm}.ptx"), format!("k{sm}.cubin"));
        run(Path::new(PTXAS), &[arch.as_str(), &ptx, "-o", &cubin], &d).ok()?;
    }
    for (fb, compress) in [("lz4.fatbin", true), ("plain.fatbin", false)] {
        let mut a = vec!["-64".to_string(), format!("--create={fb}")];
        if compress {
            a.extend(["--compress-all".into(), "--compress-mode=speed".into()]);
        } else {
            a.push("--compress=false".into());
        }
        for sm in [75, 80, 86] {
            a.push(format!("--image3=kind=elf,sm={sm},file=k{sm}.cubin"));
        }
        a.push("--image3=kind=ptx,sm=75,file=k75.ptx".into());
        run(Path::new(FATBINARY), &a, &d).ok()?;
        let obj = fb.replace(".fatbin", ".o");
        run(&ours(), &["wrap", "--kind=cuda", "-o", &obj, fb], &d).ok()?;
    }
    let old = [
        "-64",
        "--create=old.fatbin",
        "--image3=kind=elf,sm=75,file=k75.cubin",
    ];
    run(Path::new(FATBINARY), &old, &d).ok()?;
    run(&ours(), &["wrap", "--kind=cuda", "-o", "old.o", "old.fatbin"], &d).ok()?;
    let ar = Path::new("/usr/bin/ar");
    run(ar, &["rcs", "libk.a", "clang.o", "plain.o", "lz4.o", "old.o"], &d).ok()?;
    gcc_objects(&d)?;
    run(ar, &["rcs", "libgcc.a", "gcc.o", "rel.o"], &d).ok()?;
    Ok(d)
}

/// `gcc.o` and `rel.o` of [`build`], in `d`: GCC compiles the C source
/// `fatbinary --embedded-fatbin` writes around the fatbin's bytes (its
/// header, `fatbinary_section.h`, is not part of the wheel: a stand-in
/// declares the wrapper's type).
fn gcc_objects(d: &Path) -> Result<(), Failed> {
    std::fs::write(
        d.join("fatbinary_section.h"),
        "typedef struct { int magic; int version; const unsigned long long *data; \
         void *rest; } __fatBinC_Wrapper_t;\n",
    )?;
    for sm in [75, 80] {
        let (arch, ptx, cubin) = (format!("-arch=sm_{sm}"), format!("k{sm}.ptx"), format!("r{sm}.cubin"));
        run(Path::new(PTXAS), &["-c", arch.as_str(), &ptx, "-o", &cubin], d).ok()?;
    }
    let mut plain = vec!["-64", "--create=gcc.fatbin", "--embedded-fatbin=gcc.c"];
    plain.extend(["--image3=kind=elf,sm=75,file=k75.cubin", "--image3=kind=elf,sm=80,file=k80.cubin"]);
    plain.extend(["--image3=kind=elf,sm=86,file=k86.cubin", "--image3=kind=ptx,sm=75,file=k75.ptx"]);
    run(Path::new(FATBINARY), &plain, d).ok()?;
    let mut rel = vec!["-64", "--device-c", "--create=rel.fatbin", "--embedded-fatbin=rel.c"];
    rel.extend(["--image3=kind=elf,sm=75,file=r75.cubin", "--image3=kind=elf,sm=80,file=r80.cubin"]);
    run(Path::new(FATBINARY), &rel, d).ok()?;
    let gcc = Path::new("/usr/bin/gcc");
    run(gcc, &["-c", "gcc.c", "-o", "gcc.o"], d).ok()?;
    run(gcc, &["-c", "-D__NV_MODULE_ID=rel", "rel.c", "-o", "rel.o"], d).ok()?;
    Ok(())
}

/// Every object and the archive, pruned by each rule: the same bytes.
fn objects_and_archives_as_nvprune() -> Result<(), Failed> {
    let t = tempdir();
    let work = t.path();
    build(work)?;
    let rules: [&[&str]; 11] = [
        &["-arch", "sm_80"],
        &["-arch", "sm_86"],
        &["-arch=sm_75"],
        &["-arch", "compute_75"],
        &["--arch", "lto_80"],
        &["-gencode", "arch=compute_80,code=sm_80"],
        &["-gencode", "arch=compute_75,code=compute_75"],
        &["-gencode", "arch=compute_75,code=[sm_75,compute_75]"],
        &["-gencode", "code=sm_80", "--generate-code=code=\"sm_86,compute_86\""],
        &["--generate-code", "arch=compute_86,code=sm_86"],
        &["-arch", "sm_90"],
    ];
    let files = ["clang.o", "plain.o", "lz4.o", "old.o", "libk.a", "gcc.o", "rel.o", "libgcc.a"];
    for file in files {
        let input = format!("../in/{file}");
        for rule in rules {
            let mut args: Vec<&str> = rule.to_vec();
            args.extend(["-o", "out", input.as_str()]);
            both(work, &args, true)?;
        }
    }
    for input in ["../in/libk.a", "../in/clang.o", "../in/old.o"] {
        both(work, &["-v", "-arch", "sm_80", "-o", "out", input], true)?;
    }
    let input = "../in/libk.a";
    let twice = ["-arch", "sm_80", "-arch", "sm_86", "-o", "a", "-o", "out.a", input];
    both(work, &twice, true)?;
    // The output named as the input: replaced by the pruned file.
    std::fs::copy(work.join("in/clang.o"), work.join("in/copy.o"))?;
    let over = ["-arch", "sm_80", "-o", "../in/copy.o", "../in/copy.o"];
    run(Path::new(NVPRUNE), &over, &work.join("in")).ok()?;
    let nv = std::fs::read(work.join("in/copy.o"))?;
    std::fs::copy(work.join("in/clang.o"), work.join("in/copy.o"))?;
    run(&ours_as("nvprune"), &over, &work.join("in")).ok()?;
    same_bytes("-o INPUT INPUT", &std::fs::read(work.join("in/copy.o"))?, &nv)?;
    Ok(())
}

/// Help, version, and command lines nvprune refuses or warns about.
fn command_lines_as_nvprune() -> Result<(), Failed> {
    let t = tempdir();
    let work = t.path();
    build(work)?;
    let p = "../in/plain.o";
    // Help and version: their texts are our own (stdout not compared).
    let texts: [&[&str]; 7] = [
        &[],
        &["-h"],
        &["--help", "-arch", "sm_12"],
        &["-V"],
        &["--version", "-o", "x", p],
        &["-arch", "sm_80", "-o", "out.o", p, p],
        &["-arch", "sm_80", "-arch", "sm_86", "-h"],
    ];
    for args in texts {
        both(work, args, false)?;
    }
    let cases: [&[&str]; 30] = [
        &["-arch", "sm_80", p],
        &["-o", "out.o", p],
        &[p],
        &["-arch", "sm_80", "-gencode", "code=sm_80", "-o", "out.o", p],
        &["-arch", "sm_80,sm_86", "-o", "out.o", p],
        &["-arch", "sm_12", "-o", "out.o", p],
        &["-arch", "sm_90a", "-o", "out.o", p],
        &["-arch", "sm_080", "-o", "out.o", p],
        &["-arch", "gfx90a", "-o", "out.o", p],
        &["-arch", "", "-o", "out.o", p],
        &["-arch", "sm_80 ", "-o", "out.o", p],
        &["-arch", "sm_80", "-arch", "sm_12", "-o", "out.o", p],
        &["-arch"],
        &["-o", "out.o", "-arch"],
        &["--bogus", "-o", "out.o", p],
        &["-bogus", "-h"],
        &["-arch", "sm_80", "-ox.o", p],
        &["-v=1", "-arch", "sm_80", "-o", "out.o", p],
        &["-arch", "sm_80", "-o", "out.o", "--", p],
        &["-arch", "sm_80", "-o", "out.o", "-"],
        &["-arch", "sm_80", "-o", "nodir/out.o", p],
        &["-arch", "sm_80", "-o", "out.o", "../in/missing.o"],
        &["-gencode", "arch=compute_80", "-o", "out.o", p],
        &["-gencode", "code=sm_80,code=sm_86", "-h"],
        &["-gencode", "foo=1", "-o", "out.o", p],
        &["-gencode", "code", "-o", "out.o", p],
        &["-gencode", "code=[sm_80", "-o", "out.o", p],
        &["-gencode", "code=[]", "-o", "out.o", p],
        &["-gencode", "code=[sm_80]x", "-o", "out.o", p],
        &["-gencode", "arch=compute_80,code=sm_80,", "-o", "out.o", p],
    ];
    for args in cases {
        both(work, args, true)?;
    }
    Ok(())
}

/// libcurand from NVIDIA's wheel: nvprune refuses it ("not
/// relocatable"); ours writes what `offload-kit prune --keep sm_80 --ptx
/// none` writes (nvprune's `-arch sm_80` keeps no PTX), and the wheel as
/// that writes it.
fn curand_so_as_prune() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    let lib = "libcurand.so.10";
    unzip(&cache.join(WHEEL), "nvidia/curand/lib/libcurand.so.10", d, lib)?;
    let theirs = run(Path::new(NVPRUNE), &["-arch", "sm_80", "-o", "nv.so", lib], d);
    same("nvprune on libcurand: exit code", theirs.code, 1)?;
    if !theirs.stderr.contains("not relocatable") || d.join("nv.so").exists() {
        return Err(format!("nvprune on libcurand said: {}", theirs.stderr).into());
    }
    let nv = ours_as("nvprune");
    run(&nv, &["-arch", "sm_80", "-o", "out.so", lib], d).ok()?;
    let keep = ["prune", "--keep", "sm_80", "--ptx", "none", "-o", "ref.so", lib];
    run(&ours(), &keep, d).ok()?;
    same_bytes(
        "nvprune -arch sm_80 and prune --keep sm_80 of libcurand",
        &std::fs::read(d.join("out.so"))?,
        &std::fs::read(d.join("ref.so"))?,
    )?;
    let wheel = cache.join(WHEEL).to_string_lossy().into_owned();
    run(&nv, &["-arch", "sm_80", "-o", "out.whl", &wheel], d).ok()?;
    let keep = ["prune", "--keep", "sm_80", "--ptx", "none", "-o", "ref.whl", &wheel];
    run(&ours(), &keep, d).ok()?;
    same_bytes(
        "nvprune -arch sm_80 and prune --keep sm_80 of the wheel",
        &std::fs::read(d.join("out.whl"))?,
        &std::fs::read(d.join("ref.whl"))?,
    )
}

/// A missing file: nvprune's message. A directory (nvprune: "Memory
/// allocation failure"), an empty file, an ELF header alone and text
/// (nvprune crashes on the last three): ours exits 1 with one fatal line
/// naming the file, and writes nothing.
fn bad_inputs() -> Result<(), Failed> {
    let t = tempdir();
    let work = t.path();
    let d = work.join("in");
    std::fs::create_dir_all(d.join("dir"))?;
    std::fs::write(d.join("empty.o"), b"")?;
    // An x86-64 ELF relocatable object's first bytes, then nothing.
    let mut head = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x01\0\x3e\0".to_vec();
    head.resize(40, 0);
    std::fs::write(d.join("cut.o"), &head)?;
    std::fs::write(d.join("text.o"), b"not an object\n")?;
    let args = ["-arch", "sm_80", "-o", "out.o", "../in/missing.o"];
    both(work, &args, true)?;
    for file in ["dir", "empty.o", "cut.o", "text.o"] {
        let input = format!("../in/{file}");
        let args = ["-arch", "sm_80", "-o", "out.o", input.as_str()];
        let mine = side(&ours_as("nvprune"), &args, &work.join("ours"))?;
        same(&format!("{file}: exit code"), mine.code, 1)?;
        let said = &mine.stderr;
        if said.lines().count() != 1 || !said.starts_with("nvprune fatal   : ") || !said.contains(file) {
            return Err(format!("{file}: ours said {said:?}").into());
        }
        if let Some((name, _)) = mine.files.first() {
            return Err(format!("{file}: refused, and yet wrote {name}").into());
        }
    }
    Ok(())
}

//! GPU targets: OpenMP on AMDGPU and NVPTX, HIP and CUDA programs, and an
//! aarch64 host under qemu.

use super::*;

/// Where NVIDIA's tools are (scripts/cuda-tools.sh).
const CUDA_TOOLS: &str = "/opt/offload-kit/cuda-tools/bin";

/// A CUDA root at `root` that clang-22 accepts: NVIDIA's ptxas, nvlink
/// and fatbinary, and a `cuda.h` that only gives the version (12.8).
pub(crate) fn make_cuda_root(root: &Path) -> Result<(), Failed> {
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
    let p = GpuProgram::compile(gpu)?;
    same_gpu_dry_run(&p)?;
    same_emit_fatbin_only(&p)?;
    let variants: &[(&str, &[&str])] = match gpu {
        Gpu::Hip => &[("plain", &[]), ("compressed", &["--offload-compress"])],
        Gpu::Cuda => &[("plain", &[])],
    };
    for (variant, extra) in variants {
        same_gpu_save_temps(&p, variant, extra)?;
    }
    Ok(())
}

/// A HIP or CUDA program compiled in a directory of its own, to be linked
/// through either wrapper.
struct GpuProgram {
    /// The language.
    gpu: Gpu,
    /// The directory (removed when dropped).
    dir: tempfile::TempDir,
    /// The CUDA root the test makes (CUDA only).
    cuda_root: PathBuf,
    /// `PATH`, the CUDA root's `bin` first.
    path: String,
    /// The language's arguments to the link.
    link_args: Vec<String>,
    /// The device code's object.
    dev_o: String,
    /// The recording runtime's object.
    stub_o: String,
}

impl GpuProgram {
    /// Compiles `hip.hip` (for gfx90a and gfx1030) or `cuda.cu` (for sm_80
    /// and sm_90) with the new offload driver, and the recording runtime
    /// `gpu_stub.c`.
    fn compile(gpu: Gpu) -> Result<GpuProgram, Failed> {
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
        Ok(GpuProgram {
            gpu,
            dir,
            cuda_root,
            path,
            link_args,
            dev_o,
            stub_o,
        })
    }

    /// The environment the tools run in.
    fn env(&self) -> [(&str, &str); 1] {
        [("PATH", self.path.as_str())]
    }

    /// Links the program with clang through our wrapper (`ours`) or
    /// LLVM's, in `cwd`, with `extra` arguments.
    fn link(&self, ours: bool, cwd: &Path, extra: &[&str]) -> Out {
        let mut a: Vec<String> = vec!["--offload-new-driver".into(), "-fgpu-rdc".into()];
        a.extend(self.link_args.iter().cloned());
        if ours {
            let links = ours_as("clang-linker-wrapper");
            a.push(format!("-B{}", links.parent().unwrap().display()));
        }
        a.extend([
            self.dev_o.clone(),
            self.stub_o.clone(),
            "-o".into(),
            "app".into(),
        ]);
        a.extend(extra.iter().map(|s| (*s).to_string()));
        exec(&llvm("clang"), &a, cwd, &self.env())
    }
}

/// `--dry-run`: both wrappers print the same commands (LLVM's two device
/// links, the fat binary and the host link), the bundler wherever it is
/// found.
fn same_gpu_dry_run(p: &GpuProgram) -> Result<(), Failed> {
    let (gpu, d) = (p.gpu, p.dir.path());
    let mut texts = Vec::new();
    for ours in [true, false] {
        let out = p.link(ours, d, &["-Wl,--dry-run"]);
        if out.code != 0 {
            return Err(format!("--dry-run: exit {}: {}", out.code, out.stderr).into());
        }
        let text = mask_dry_run(&out.stderr);
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
    Ok(())
}

/// `--emit-fatbin-only`, the wrapper run as clang runs it: the fat binary
/// is the output, LLVM's bytes, and nothing else is left.
fn same_emit_fatbin_only(p: &GpuProgram) -> Result<(), Failed> {
    let (gpu, d, dev_o, cuda_root) = (p.gpu, p.dir.path(), &p.dev_o, &p.cuda_root);
    let env = p.env();
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
    Ok(())
}

/// `--save-temps` with `extra` link arguments (the `variant`): the same
/// files with the same bytes, the same registration when the programs run,
/// the fat binary's magic and the registration's calls.
fn same_gpu_save_temps(p: &GpuProgram, variant: &str, extra: &[&str]) -> Result<(), Failed> {
    let (gpu, d) = (p.gpu, p.dir.path());
    let (fatbin, wrapper_ir) = match gpu {
        Gpu::Hip => ("app.hipfb", "app.hip.image.wrapper.bc"),
        Gpu::Cuda => ("app.fatbin", "app.cuda.image.wrapper.bc"),
    };
    let mut listings = Vec::new();
    let mut logs = Vec::new();
    let mut dirs = Vec::new();
    for ours in [true, false] {
        let sub = d.join(format!("{variant}-{ours}"));
        std::fs::create_dir_all(&sub)?;
        let mut e = vec!["-Wl,--save-temps"];
        e.extend_from_slice(extra);
        let out = p.link(ours, &sub, &e);
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

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(openmp_amdgpu, TOOLS),
        trial!(openmp_nvptx, &[
                "clang",
                "clang-linker-wrapper",
                "/opt/offload-kit/cuda-tools/bin/ptxas",
                "/opt/offload-kit/cuda-tools/bin/nvlink",
                "/opt/offload-kit/cuda-tools/bin/fatbinary",
            ]),
        trial!(openmp_amdgpu_nvptx, &[
                "clang",
                "clang-linker-wrapper",
                "/opt/offload-kit/cuda-tools/bin/ptxas",
                "/opt/offload-kit/cuda-tools/bin/nvlink",
            ]),
        trial!(
            hip,
            &[
                "clang",
                "clang-linker-wrapper",
                "clang-offload-bundler",
                "ld.bfd",
            ],
        ),
        trial!(
            cuda,
            &[
                "clang",
                "clang-linker-wrapper",
                "ld.bfd",
                "/opt/offload-kit/cuda-tools/bin/ptxas",
                "/opt/offload-kit/cuda-tools/bin/nvlink",
                "/opt/offload-kit/cuda-tools/bin/fatbinary",
            ],
        ),
        trial!(aarch64_qemu, &[
                "clang",
                "clang-linker-wrapper",
                "ld.lld",
                "qemu-aarch64",
                "/opt/offload-kit/sysroot-arm64/usr/lib/llvm-22/lib/libomptarget.so.22.1",
                "/opt/offload-kit/sysroot-arm64/usr/lib/aarch64-linux-gnu/libomp.so",
            ]),
    ]
}

fn hip() -> Result<(), Failed> {
    gpu_program(Gpu::Hip)
}

fn cuda() -> Result<(), Failed> {
    gpu_program(Gpu::Cuda)
}

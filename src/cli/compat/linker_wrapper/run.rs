//! The wrapper's job: extract, link each device target with clang, pack,
//! wrap in process, run the host linker.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use super::super::Fail;
use super::Opts;
use super::extract::{extract, host_files};
use super::wrapping::{wrap_fatbin, wrap_images};
use crate::cli::io::{Input, Output};
use offload_kit::link::{self, DeviceLink};
use offload_kit::llvm::path::{file_name, stem};
use offload_kit::offload_binary::OffloadKind;
use offload_kit::wrap::Kind;

/// Files to remove when the run ends (unless `--save-temps`).
struct Temps {
    files: Vec<PathBuf>,
    keep: bool,
}

impl Drop for Temps {
    fn drop(&mut self) {
        if !self.keep {
            for f in &self.files {
                let _ = std::fs::remove_file(f);
            }
        }
    }
}

impl Temps {
    /// The name of a file a child process writes: with `--save-temps`
    /// LLVM's name in the current directory (not created here, so
    /// `--dry-run` leaves none), else a new empty temporary file.
    fn reserve(&mut self, prefix: &str, suffix: &str) -> Result<String, Fail> {
        if self.keep {
            return Ok(format!("{prefix}{suffix}"));
        }
        self.create(prefix, suffix, b"")
    }

    /// A new file holding `bytes`: see [`Temps::create_with`].
    fn create(&mut self, prefix: &str, suffix: &str, bytes: &[u8]) -> Result<String, Fail> {
        self.create_with(prefix, suffix, |f, name| {
            f.write_all(bytes).map_err(|e| io_fail(name, &e))
        })
    }

    /// A new file that `write` fills (given the file and its name):
    /// `<prefix><suffix>` in the current directory with `--save-temps`
    /// (LLVM's names), else `<tmp>/<prefix>-XXXXXX<suffix>`.
    fn create_with(
        &mut self,
        prefix: &str,
        suffix: &str,
        write: impl FnOnce(&mut std::fs::File, &str) -> Result<(), Fail>,
    ) -> Result<String, Fail> {
        if self.keep {
            let name = format!("{prefix}{suffix}");
            let mut f = std::fs::File::create(&name).map_err(|e| io_fail(&name, &e))?;
            write(&mut f, &name)?;
            return Ok(name);
        }
        let dir = std::env::temp_dir();
        loop {
            let mut h = RandomState::new().build_hasher();
            h.write_u32(std::process::id());
            let tag = format!("{:06x}", h.finish() & 0xff_ffff);
            let path = dir.join(format!("{prefix}-{tag}{suffix}"));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    self.files.push(path.clone());
                    write(&mut f, &path.to_string_lossy())?;
                    return Ok(path.to_string_lossy().into_owned());
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_fail(&path.to_string_lossy(), &e)),
            }
        }
    }
}

pub(super) fn io_fail(name: &str, e: &std::io::Error) -> Fail {
    Fail::new(format!("'{name}': {}", crate::cli::io::strerror(e)))
}

/// The device compiler: `clang` next to the name we were run under, else
/// the clang that ran us (our parent process), else `clang` next to our
/// executable or on `PATH`, as LLVM looks for it; last, `clang-22` on
/// `PATH` (Debian puts only the versioned name there).
fn find_clang(argv0: &str) -> Option<String> {
    let mut candidates = Vec::new();
    if argv0.contains('/') {
        candidates.push(Path::new(argv0).with_file_name("clang"));
    }
    let parent = format!("/proc/{}/exe", std::os::unix::process::parent_id());
    if let Ok(p) = std::fs::read_link(parent)
        && file_name(&p.to_string_lossy()).starts_with("clang")
        && !file_name(&p.to_string_lossy()).contains("linker-wrapper")
        && std::env::current_exe().ok().as_ref() != Some(&p)
    {
        candidates.push(p);
    }
    if let Ok(me) = std::env::current_exe() {
        candidates.push(me.with_file_name("clang"));
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("clang")));
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("clang-22")));
    }
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}

/// Runs (or with `--dry-run` only prints) one command; a failure is
/// reported as LLVM does, as `'<name>' failed`.
fn execute(o: &Opts, name: &str, program: &str, args: &[String]) -> Result<(), Fail> {
    if o.verbose || o.dry_run {
        eprintln!("{}", link::print_command(program, args));
    }
    if o.dry_run {
        return Ok(());
    }
    let status = Command::new(program).args(args).status().map_err(|e| {
        Fail::with_note(
            format!("'{name}' failed"),
            format!("'{program}': {}", crate::cli::io::strerror(&e)),
        )
    })?;
    if status.success() {
        return Ok(());
    }
    let how = match status.code() {
        Some(c) => format!("exit code {c}"),
        None => "killed by a signal".into(),
    };
    Err(Fail::with_note(
        format!("'{name}' failed"),
        format!("{how}: {}", link::print_command(program, args).trim_start()),
    ))
}

/// Runs the device links `commands` (of `clang`), up to `--wrapper-jobs`
/// of them at once. Every link runs to its end; the first failure in
/// command order is the one reported, whatever order they ended in.
fn run_all(o: &Opts, clang: &str, commands: &[Vec<String>]) -> Result<(), Fail> {
    let jobs = o.jobs.clamp(1, commands.len().max(1));
    if jobs == 1 || o.dry_run {
        return commands
            .iter()
            .try_for_each(|cmd| execute(o, "clang", clang, cmd));
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<Result<(), Fail>>> = Vec::new();
    results.resize_with(commands.len(), || None);
    let results = std::sync::Mutex::new(results);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(cmd) = commands.get(i) else { break };
                    let r = execute(o, "clang", clang, cmd);
                    if let Ok(mut all) = results.lock() {
                        all[i] = Some(r);
                    }
                }
            });
        }
    });
    let results = results
        .into_inner()
        .map_err(|_| Fail::new("a device link thread panicked"))?;
    for r in results {
        r.unwrap_or_else(|| Err(Fail::new("a device link did not run")))?;
    }
    Ok(())
}

/// The whole job. `Ok` holds the exit code.
pub(super) fn run(argv0: &str, o: &Opts) -> Result<ExitCode, Fail> {
    let host_triple = o
        .host_triple
        .clone()
        .unwrap_or_else(|| format!("{}-unknown-linux-gnu", std::env::consts::ARCH));
    let files = host_files(&o.host)?;
    let found = extract(&files, !o.override_images.is_empty())?;
    let (images, shared) = (&found.images, &found.shared);
    let exe = link::executable(&o.host).to_string();
    let exe_name = file_name(&exe).to_string();
    let mut temps = Temps {
        files: Vec::new(),
        keep: o.save_temps,
    };
    let mut wrapper_objects = Vec::new();
    let mut linked = Vec::new();
    if o.relocatable && images.iter().any(|e| e.kind != OffloadKind::OFK_OpenMP) {
        return Err(super::unsupported(
            "relocatable links (-r) of HIP or CUDA device code are not supported yet",
        ));
    }
    if !images.is_empty() {
        let clang = find_clang(argv0).ok_or_else(|| {
            Fail::with_note(
                "unable to find 'clang' for the device link",
                "put clang next to clang-linker-wrapper or on PATH",
            )
        })?;
        // One device link per triple and architecture, in the order they
        // are first met (LLVM's order); HIP and OpenMP are not mixed.
        let mut groups: Vec<(&str, &str)> = Vec::new();
        fn arch_of(e: &super::extract::Extracted) -> &str {
            if e.arch == "generic" { "" } else { &e.arch }
        }
        for e in images {
            let key = (e.triple.as_str(), arch_of(e));
            if !groups.contains(&key) {
                groups.push(key);
            }
        }
        let kind = images[0].kind;
        if images.iter().any(|e| e.kind != kind) {
            return Err(super::unsupported(
                "device code of two offload kinds (OpenMP, HIP, CUDA) in one link is not \
                 supported yet",
            ));
        }
        let mut commands = Vec::new();
        for (triple, arch) in groups {
            let mut inputs = Vec::new();
            for e in images
                .iter()
                .filter(|e| e.triple == triple && arch_of(e) == arch)
            {
                let prefix = format!("{}-{}-{}", stem(&e.input), e.triple, e.arch);
                inputs.push(temps.create_with(&prefix, ".o", |f, name| {
                    found.write(e, f).map_err(|err| io_fail(name, &err))
                })?);
            }
            let mut dl = DeviceLink {
                triple: triple.to_string(),
                arch: arch.to_string(),
                save_temps: o.save_temps,
                mllvm: o.mllvm.clone(),
                inputs,
                output: String::new(),
                executable: exe.clone(),
            };
            let prefix = format!("{exe_name}.{}.{arch}", dl.arch_name());
            dl.output = temps.reserve(&prefix, ".img")?;
            let mut cmd = dl.command(&o.host, |f| shared.iter().any(|s| s == f));
            link::add_device_args(
                &mut cmd,
                triple,
                &o.host,
                &o.device_linker,
                &o.device_compiler,
            );
            commands.push(cmd);
            linked.push(dl);
        }
        run_all(o, &clang, &commands)?;
        link::sort_like_llvm(&mut linked);
        // HIP and CUDA: the images packed into one fat binary, which the
        // wrapper object registers (or which is the output).
        let packed = if kind == OffloadKind::OFK_HIP {
            // Bundled by the bundler, as LLVM runs it.
            let hipfb = temps.reserve(&exe_name, ".hipfb")?;
            let bundler = find_bundler(argv0, &clang);
            let args = bundle_command(o, &linked, &hipfb);
            execute(o, "clang-offload-bundler", &bundler, &args)?;
            Some((hipfb, Kind::Hip, "hip"))
        } else if kind == OffloadKind::OFK_Cuda {
            // Packed by CUDA's fatbinary.
            let fatbin = temps.reserve(&exe_name, ".fatbin")?;
            let program = match &o.cuda_path {
                Some(dir) => Path::new(dir)
                    .join("bin")
                    .join("fatbinary")
                    .to_string_lossy()
                    .into_owned(),
                None => "fatbinary".to_string(),
            };
            execute(
                o,
                "fatbinary",
                &program,
                &fatbinary_command(&linked, &fatbin),
            )?;
            Some((fatbin, Kind::Cuda, "cuda"))
        } else {
            None
        };
        if let Some((fatbin, wrap_kind, kind_name)) = packed {
            if o.emit_fatbin_only {
                return emit_fatbin(o, &fatbin, &exe);
            }
            let prefix = format!("{exe_name}.{kind_name}.image.wrapper");
            let object = temps.create_with(&prefix, ".o", |f, name| {
                wrap_fatbin(&host_triple, wrap_kind, &fatbin, o.dry_run, (f, name))
            })?;
            wrapper_objects.push(object);
            linked.clear();
        }
    }
    if o.emit_fatbin_only {
        return Err(Fail::new(
            "--emit-fatbin-only: no CUDA or HIP device code in the inputs",
        ));
    }
    if !linked.is_empty() || !o.override_images.is_empty() {
        let prefix = format!("{exe_name}.openmp.image.wrapper");
        let object = temps.create_with(&prefix, ".o", |f, name| {
            wrap_images(o, &host_triple, &linked, (f, name))
        })?;
        wrapper_objects.push(object);
    }
    let Some(linker) = &o.linker_path else {
        return Err(Fail::new("linker path missing, must pass 'linker-path'"));
    };
    let cmd = link::host_command(&o.host, &wrapper_objects);
    execute(o, file_name(linker), linker, &cmd)?;
    if o.relocatable {
        // As LLVM: the output's images and entry table renamed by
        // llvm-objcopy, the suffix from the output's MD5.
        let md5 = if o.dry_run {
            offload_kit::bundle::ccob::truncated_md5(b"")
        } else {
            offload_kit::bundle::ccob::truncated_md5(open(&exe)?.bytes())
        };
        let objcopy = find_beside_clang(argv0, "llvm-objcopy");
        let args = link::relocatable_objcopy_args(&exe, md5);
        execute(o, "llvm-objcopy", &objcopy, &args)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// An LLVM tool LLVM's wrapper runs from its own directory: beside the
/// device compiler (clang), else on `PATH` (also as `<name>-22`).
fn find_beside_clang(argv0: &str, name: &str) -> String {
    let mut candidates = Vec::new();
    if let Some(clang) = find_clang(argv0) {
        candidates.push(Path::new(&clang).with_file_name(name));
    }
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            candidates.push(d.join(name));
            candidates.push(d.join(format!("{name}-22")));
        }
    }
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .map_or_else(|| name.to_string(), |p| p.to_string_lossy().into_owned())
}

/// The bundler LLVM runs for HIP: `clang-offload-bundler` next to the name
/// we were run under (offload-kit's own, among the links
/// `install-links` makes), else next to the device compiler, else on
/// `PATH` (`clang-offload-bundler-22` too, Debian's name there).
fn find_bundler(argv0: &str, clang: &str) -> String {
    let mut candidates = Vec::new();
    if argv0.contains('/') {
        candidates.push(Path::new(argv0).with_file_name("clang-offload-bundler"));
    }
    candidates.push(Path::new(clang).with_file_name("clang-offload-bundler"));
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            candidates.push(d.join("clang-offload-bundler"));
            candidates.push(d.join("clang-offload-bundler-22"));
        }
    }
    candidates.into_iter().find(|p| p.is_file()).map_or_else(
        || "clang-offload-bundler".into(),
        |p| p.to_string_lossy().into_owned(),
    )
}

/// LLVM 22's bundler command for HIP: a 4 KiB-aligned object bundle of
/// an empty host entry and each linked image, in the order of `linked`
/// ([`link::sort_like_llvm`]).
fn bundle_command(o: &Opts, linked: &[DeviceLink], output: &str) -> Vec<String> {
    let mut cmd = vec!["-type=o".to_string(), "-bundle-align=4096".to_string()];
    if o.compress {
        cmd.push("-compress".into());
    }
    if let Some(level) = &o.compression_level {
        cmd.push(format!("-compression-level={level}"));
    }
    let mut targets = vec!["-targets=host-x86_64-unknown-linux-gnu".to_string()];
    targets.extend(
        linked
            .iter()
            .map(|dl| format!("hip-amdgcn-amd-amdhsa--{}", dl.arch)),
    );
    cmd.push(targets.join(","));
    cmd.push("-input=/dev/null".into());
    cmd.extend(linked.iter().map(|dl| format!("-input={}", dl.output)));
    cmd.push(format!("-output={output}"));
    cmd
}

/// `--emit-fatbin-only`: copies the fat binary to the output (`-o`),
/// through a temporary file renamed at the end (nothing with `--dry-run`).
fn emit_fatbin(o: &Opts, fatbin: &str, output: &str) -> Result<ExitCode, Fail> {
    if o.dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    let input = open(fatbin)?;
    let io = |e: std::io::Error| io_fail(output, &e);
    let mut out = Output::create(Path::new(output)).map_err(io)?;
    input.copy_to(input.bytes(), &mut out).map_err(io)?;
    out.commit().map_err(io)?;
    Ok(ExitCode::SUCCESS)
}

/// LLVM 22's `fatbinary` command for CUDA: each linked image (a cubin) as
/// `--image3=kind=elf,sm=<N>`, in the order of `linked`.
fn fatbinary_command(linked: &[DeviceLink], output: &str) -> Vec<String> {
    let mut cmd = vec![
        "-64".to_string(),
        "--create".to_string(),
        output.to_string(),
    ];
    for dl in linked {
        let sm = dl.arch.strip_prefix("sm_").unwrap_or(&dl.arch);
        cmd.push(format!("--image3=kind=elf,sm={sm},file={}", dl.output));
    }
    cmd
}

/// Opens (maps) a file the wrapper reads.
pub(super) fn open(name: &str) -> Result<Input, Fail> {
    Input::open(name).map_err(|e| io_fail(name, &e))
}

//! The wrapper's job: extract, link each device target with clang, pack,
//! wrap in process, run the host linker.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use super::super::Fail;
use super::Opts;
use super::extract::{extract, is_library};
use super::wrapping::{pack_image, wrap_fatbin, wrap_images, wrap_sycl};
use crate::cli::io::{Input, Output};
use crate::link::{self, DeviceLink, plan};
use crate::llvm::path::{file_name, stem};
use crate::llvm::triple::{Arch, ObjectFormat, Triple};
use crate::offload_binary::OffloadKind;
use crate::wrap::Kind;

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

/// A program LLVM 22's wrapper runs (`clang`, `clang-offload-bundler`,
/// `llvm-objcopy`), found as LLVM finds it — in the directory of the
/// running executable (symlinks resolved), then on `PATH` — with the
/// directory LLVM's own wrapper would run from in between: that of the
/// clang that ran us (our parent process, as `clang -B<dir>` runs the
/// wrapper), since offload-kit is seldom installed beside clang. Last,
/// `<name>-22` on `PATH` (Debian puts only the versioned names there).
pub(super) fn find_program(name: &str) -> Option<String> {
    let mut candidates = Vec::new();
    if let Ok(me) = std::env::current_exe() {
        let me = me.canonicalize().unwrap_or(me);
        candidates.push(me.with_file_name(name));
    }
    // Where LLVM's own wrapper would be: beside the clang that ran us.
    let parent = format!("/proc/{}/exe", std::os::unix::process::parent_id());
    if let Ok(p) = std::fs::read_link(parent)
        && file_name(&p.to_string_lossy()).starts_with("clang")
        && !file_name(&p.to_string_lossy()).contains("linker-wrapper")
        && std::env::current_exe().ok().as_ref() != Some(&p)
    {
        candidates.push(p.with_file_name(name));
    }
    let path = std::env::var_os("PATH");
    if let Some(path) = &path {
        candidates.extend(std::env::split_paths(path).map(|d| d.join(name)));
    }
    if let Some(path) = &path {
        candidates.extend(std::env::split_paths(path).map(|d| d.join(format!("{name}-22"))));
    }
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}

/// An LLVM tool whose release matters (`opt`, whose option list must be
/// LLVM 22's; `llvm-objcopy`): beside the clang the device links run (its
/// real directory), where LLVM's own wrapper would find it beside itself,
/// else as [`find_program`] finds it. A plain `opt` or `llvm-objcopy` on
/// `PATH` may be another release's (Debian's unversioned names are the
/// default LLVM's).
pub(super) fn find_llvm_tool(name: &str) -> Option<String> {
    find_program("clang")
        .and_then(|clang| std::fs::canonicalize(clang).ok())
        .map(|clang| clang.with_file_name(name))
        .filter(|tool| tool.is_file())
        .map(|tool| tool.to_string_lossy().into_owned())
        .or_else(|| find_program(name))
}

/// [`find_program`], or under `--dry-run` the bare name (as LLVM prints
/// it), or LLVM's error.
fn program(o: &Opts, name: &str) -> Result<String, Fail> {
    match find_program(name) {
        Some(p) => Ok(p),
        None if o.dry_run => Ok(name.to_string()),
        None => Err(Fail::new(format!("Unable to find '{name}' in path"))),
    }
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
/// of them at once. Every link runs to its end, as in LLVM 22, and every
/// failure is reported, in command order: LLVM's one `'clang' failed` line
/// for each, then our note for each.
fn run_all(o: &Opts, clang: &str, commands: &[Vec<String>]) -> Result<(), Fail> {
    let jobs = o.jobs.clamp(1, commands.len().max(1));
    let results: Vec<Result<(), Fail>> = if jobs == 1 || o.dry_run {
        commands
            .iter()
            .map(|cmd| execute(o, "clang", clang, cmd))
            .collect()
    } else {
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
        results
            .into_inner()
            .map_err(|_| Fail::new("a device link thread panicked"))?
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Fail::new("a device link did not run"))))
            .collect()
    };
    let failed: Vec<Fail> = results.into_iter().filter_map(Result::err).collect();
    if failed.is_empty() {
        return Ok(());
    }
    let llvm = failed
        .iter()
        .map(|f| f.llvm.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let notes: Vec<&str> = failed.iter().filter_map(|f| f.note.as_deref()).collect();
    Err(Fail {
        llvm,
        note: (!notes.is_empty()).then(|| notes.join("\n")),
    })
}

/// The whole job, in LLVM 22's three phases: read the device input, link
/// each target and bundle and wrap each offload kind, run the host
/// linker. `Ok` holds the exit code.
pub(super) fn run(o: &Opts) -> Result<ExitCode, Fail> {
    let host_triple = o
        .host_triple
        .clone()
        .unwrap_or_else(|| format!("{}-unknown-linux-gnu", std::env::consts::ARCH));
    let exe = link::executable(&o.host).to_string();
    let exe_name = file_name(&exe).to_string();
    let job = Job {
        o,
        host_triple,
        exe,
        exe_name,
    };
    let mut temps = Temps {
        files: Vec::new(),
        keep: o.save_temps,
    };
    let (links, linked) = device_links(&job, &mut temps)?;
    // Each kind's images bundled, then wrapped (or written out with
    // --emit-fatbin-only), in the order the kinds were first recorded.
    let mut wrapper_objects = Vec::new();
    for kind in plan::kind_order(&links) {
        let mut images: Vec<DeviceLink> = links
            .iter()
            .zip(&linked)
            .filter(|(l, _)| l.kinds.contains(&kind))
            .map(|(_, dl)| dl.clone())
            .collect();
        link::sort_like_llvm(&mut images);
        if let Some(object) = bundle_kind(&job, &mut temps, kind, &images)? {
            wrapper_objects.push(object);
        }
    }
    if !o.override_images.is_empty() {
        let prefix = format!("{}.openmp.image.wrapper", job.exe_name);
        let object = temps.create_with(&prefix, ".o", |f, name| {
            wrap_images(o, &job.host_triple, &[], (f, name))
        })?;
        wrapper_objects.push(object);
    }
    if o.emit_fatbin_only {
        return Ok(ExitCode::SUCCESS);
    }
    host_link(&job, &wrapper_objects)?;
    Ok(ExitCode::SUCCESS)
}

/// What every phase of a run needs: the options and the names made of them.
struct Job<'a> {
    /// The command line.
    o: &'a Opts,
    /// The host's triple (`--host-triple`, else this machine's Linux).
    host_triple: String,
    /// The host link's output.
    exe: String,
    /// Its file name, the prefix of the temporary files' names.
    exe_name: String,
}

/// The device links: the images of the inputs (none with
/// `--override-image`) grouped into links as LLVM plans them, each link's
/// inputs written to temporary files and its command run (all of them, in
/// order, before an error is reported for a link LLVM refuses). Returns
/// the links and what each produced.
fn device_links(
    job: &Job<'_>,
    temps: &mut Temps,
) -> Result<(Vec<plan::Link>, Vec<DeviceLink>), Fail> {
    let o = job.o;
    // With --override-image, LLVM reads no device input at all.
    let found = if o.override_images.is_empty() {
        Some(extract(&o.host)?)
    } else {
        None
    };
    let binaries = found.as_ref().map(|f| f.binaries()).unwrap_or_default();
    let links = plan::links(&binaries, &o.should_extract);
    let mut commands = Vec::new();
    let mut linked = Vec::new();
    let clang = if links.is_empty() {
        String::new()
    } else {
        program(o, "clang")?
    };
    let linker_path = o.linker_path.as_deref().unwrap_or("");
    for l in &links {
        if let Err(msg) = plan::check(l, &binaries) {
            // The links before it have run, as LLVM runs them in order.
            run_all(o, &clang, &commands)?;
            return Err(Fail::new(msg));
        }
        let mut inputs = Vec::new();
        if let Some(found) = &found {
            for &i in &l.members {
                let e = &found.images[i];
                let t = &e.binary.target;
                let prefix = format!("{}-{}-{}", stem(&e.input), t.triple, t.arch);
                inputs.push(temps.create_with(&prefix, ".o", |f, name| {
                    found.write(e, f).map_err(|err| io_fail(name, &err))
                })?);
            }
        }
        let triple = l.target.triple.clone();
        let mut dl = DeviceLink {
            lto_save_temps: o.save_temps && link::linker_does_lto(&triple, linker_path),
            plugin_opts: o.plugin_opts.clone(),
            mllvm: o.mllvm.clone(),
            embed_bitcode: o.embed_bitcode,
            sycl: l.kinds.contains(&OffloadKind::OFK_SYCL),
            inputs,
            executable: job.exe.clone(),
            arch: l.arch().to_string(),
            triple,
            output: String::new(),
        };
        let prefix = format!("{}.{}.{}", job.exe_name, dl.arch_name(), dl.arch);
        dl.output = temps.reserve(&prefix, ".img")?;
        let mut cmd = dl.command(&o.host, is_library);
        link::add_device_args(
            &mut cmd,
            &dl.triple,
            &o.host,
            &o.device_linker,
            &o.device_compiler,
        );
        commands.push(cmd);
        linked.push(dl);
    }
    run_all(o, &clang, &commands)?;
    Ok((links, linked))
}

/// The images of one offload kind bundled (OpenMP: packed; HIP: by the
/// bundler; CUDA: by `fatbinary`; SYCL: the first link's output), then
/// wrapped: returns the wrapper object, or `None` where the bundle was
/// written out instead (`--emit-fatbin-only`).
fn bundle_kind(
    job: &Job<'_>,
    temps: &mut Temps,
    kind: OffloadKind,
    images: &[DeviceLink],
) -> Result<Option<String>, Fail> {
    let (o, host_triple, exe, exe_name) = (job.o, &job.host_triple, &job.exe, &job.exe_name);
    let (bundle, wrap_kind) = match kind {
        OffloadKind::OFK_OpenMP => {
            if o.emit_fatbin_only {
                if images.len() != 1 {
                    return Err(Fail::new(
                        "Expected a single bundled image for direct fat binary output",
                    ));
                }
                let packed = temps.create_with(exe_name, ".openmp.bundle", |f, name| {
                    pack_image(o, &images[0], (f, name))
                })?;
                emit_fatbin(o, &packed, exe)?;
                return Ok(None);
            }
            let prefix = format!("{exe_name}.openmp.image.wrapper");
            let object = temps.create_with(&prefix, ".o", |f, name| {
                wrap_images(o, host_triple, images, (f, name))
            })?;
            return Ok(Some(object));
        }
        OffloadKind::OFK_HIP => {
            // Bundled by the bundler, as LLVM runs it.
            let hipfb = temps.reserve(exe_name, ".hipfb")?;
            let bundler = program(o, "clang-offload-bundler")?;
            let args = bundle_command(o, images, &hipfb);
            execute(o, "clang-offload-bundler", &bundler, &args)?;
            (hipfb, Kind::Hip)
        }
        OffloadKind::OFK_Cuda => {
            // Packed by CUDA's fatbinary.
            let fatbin = temps.reserve(exe_name, ".fatbin")?;
            let program = find_fatbinary(o)?;
            let args = fatbinary_command(host_triple, images, &fatbin);
            execute(o, "fatbinary", &program, &args)?;
            (fatbin, Kind::Cuda)
        }
        OffloadKind::OFK_SYCL => {
            // LLVM 22 wraps (or writes out) the first SYCL link's
            // output only.
            if o.emit_fatbin_only {
                emit_fatbin(o, &images[0].output, exe)?;
                return Ok(None);
            }
            let prefix = format!("{exe_name}.sycl.image.wrapper");
            let object = temps.create_with(&prefix, ".o", |f, name| {
                wrap_sycl(o, host_triple, &images[0], (f, name))
            })?;
            return Ok(Some(object));
        }
        _ => {
            return Err(Fail::new(format!(
                "{} wrapping is not supported",
                kind.name()
            )));
        }
    };
    if o.emit_fatbin_only {
        emit_fatbin(o, &bundle, exe)?;
        return Ok(None);
    }
    let prefix = format!("{exe_name}.{}.image.wrapper", kind.name());
    let object = temps.create_with(&prefix, ".o", |f, name| {
        wrap_fatbin(host_triple, wrap_kind, &bundle, o.dry_run, (f, name))
    })?;
    Ok(Some(object))
}

/// The host link of the wrapper objects and the host's inputs; for a
/// relocatable link, then the output's images and entry table renamed by
/// llvm-objcopy as LLVM renames them.
fn host_link(job: &Job<'_>, wrapper_objects: &[String]) -> Result<(), Fail> {
    let (o, exe) = (job.o, &job.exe);
    let Some(linker) = &o.linker_path else {
        return Err(Fail::new("linker path missing, must pass 'linker-path'"));
    };
    let cmd = link::host_command(&o.host, wrapper_objects);
    execute(o, file_name(linker), linker, &cmd)?;
    if o.relocatable {
        if Triple::parse(&job.host_triple).object_format() == ObjectFormat::Coff {
            return Err(Fail::new(
                "Relocatable linking is not supported on COFF targets",
            ));
        }
        // As LLVM: the output's images and entry table renamed by
        // llvm-objcopy, the suffix from the output's MD5.
        let md5 = if o.dry_run {
            crate::bundle::ccob::truncated_md5(b"")
        } else {
            crate::bundle::ccob::truncated_md5(open(exe)?.bytes())
        };
        let objcopy = match find_llvm_tool("llvm-objcopy") {
            Some(p) => p,
            None => program(o, "llvm-objcopy")?,
        };
        let args = link::relocatable_objcopy_args(exe, md5);
        execute(o, "llvm-objcopy", &objcopy, &args)?;
    }
    Ok(())
}

/// CUDA's `fatbinary`, as LLVM 22 finds it: in `--cuda-path`'s `bin`,
/// then on `PATH` (the bare name under `--dry-run`).
fn find_fatbinary(o: &Opts) -> Result<String, Fail> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(root) = &o.cuda_path {
        dirs.push(Path::new(root).join("bin"));
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    match dirs
        .iter()
        .map(|d| d.join("fatbinary"))
        .find(|p| p.is_file())
    {
        Some(p) => Ok(p.to_string_lossy().into_owned()),
        None if o.dry_run => Ok("fatbinary".into()),
        None => Err(Fail::new("Unable to find 'fatbinary' in path")),
    }
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
            .map(|dl| format!("hip-{}--{}", dl.triple, dl.arch)),
    );
    cmd.push(targets.join(","));
    cmd.push("-input=/dev/null".into());
    cmd.extend(linked.iter().map(|dl| format!("-input={}", dl.output)));
    cmd.push(format!("-output={output}"));
    cmd
}

/// `--emit-fatbin-only`: copies the fat binary to the output (`-o`),
/// through a temporary file renamed at the end (nothing with `--dry-run`).
fn emit_fatbin(o: &Opts, fatbin: &str, output: &str) -> Result<(), Fail> {
    if o.dry_run {
        return Ok(());
    }
    let input = open(fatbin)?;
    let io = |e: std::io::Error| io_fail(output, &e);
    let mut out = Output::create(Path::new(output)).map_err(io)?;
    input.copy_to(input.bytes(), &mut out).map_err(io)?;
    out.commit().map_err(io)
}

/// LLVM 22's `fatbinary` command for CUDA: `-64` or `-32` as the host
/// is, and each linked image (a cubin) as `--image3=kind=elf,sm=<N>`, in
/// the order of `linked`.
fn fatbinary_command(host_triple: &str, linked: &[DeviceLink], output: &str) -> Vec<String> {
    let bits32 = matches!(
        Triple::parse(host_triple).arch(),
        Arch::X86
            | Arch::Arm
            | Arch::Armeb
            | Arch::Thumb
            | Arch::Thumbeb
            | Arch::Ppc
            | Arch::Ppcle
            | Arch::Mips
            | Arch::Mipsel
            | Arch::Riscv32
            | Arch::Sparc
            | Arch::Sparcel
            | Arch::Wasm32
    );
    let mut cmd = vec![
        if bits32 { "-32" } else { "-64" }.to_string(),
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

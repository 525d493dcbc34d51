//! The linker wrapper's whole job as data: from its settings
//! ([`Options`]) and the device binaries of its inputs ([`Found`]), the
//! [`Step`]s LLVM 22's `clang-linker-wrapper` takes, in its order —
//! write each device link's inputs, run the device links, bundle each
//! offload kind (OpenMP: packed; HIP: `clang-offload-bundler`; CUDA:
//! `fatbinary`; SYCL: the first link's output), wrap each kind, run the
//! host linker and, for a relocatable link, `llvm-objcopy` — each command
//! with its arguments and the file it produces ([`Plan`]).
//!
//! Planning decides everything and does nothing: where programs are and
//! the names of temporary files are asked of an [`Env`]
//! (`super::system::System` asks the system; the tests answer
//! themselves). A failure LLVM meets on the way is a [`Step::Fail`] at the
//! point LLVM meets it, so that running the plan (`super::exec`) does what
//! LLVM does before it: the device links before a link LLVM refuses still
//! run, and a program that is not found is reported after the steps before
//! it. `--dry-run` prints [`Plan::dry_run_text`]'s lines as it goes.

use super::failure::Failure;
use super::plan::{self, Binary};
use super::{DeviceLink, HostArg};
use crate::llvm::path::{file_name, stem};
use crate::llvm::triple::{Arch, ObjectFormat, Triple};
use crate::offload_binary::OffloadKind;
use crate::wrap::Kind;

/// The wrapper's own settings (the options it does not forward).
#[derive(Debug, Default)]
pub struct Options {
    /// `--host-triple` (else this machine's Linux).
    pub host_triple: Option<String>,
    /// `--linker-path`: the host linker.
    pub linker_path: Option<String>,
    /// `--device-linker` values, in order.
    pub device_linker: Vec<String>,
    /// `--device-compiler` values, in order.
    pub device_compiler: Vec<String>,
    /// `--dry-run`: print the commands, run none.
    pub dry_run: bool,
    /// `--wrapper-verbose`: print each command before it runs.
    pub verbose: bool,
    /// `--wrapper-jobs`: how many device links may run at once (0: one).
    pub jobs: usize,
    /// `--save-temps`: LLVM's names in the current directory, kept.
    pub save_temps: bool,
    /// `-r` / `--relocatable`: a relocatable host link, whose offloading
    /// sections are then renamed as LLVM renames them.
    pub relocatable: bool,
    /// `-mllvm <option>` values, in order: passed to every device link.
    pub mllvm: Vec<String>,
    /// `-mllvm` and `--offload-opt=` values, in command-line order: the
    /// device links' LTO plugin options.
    pub plugin_opts: Vec<String>,
    /// `--should-extract=<arch>[,<arch>…]`: archive members of these
    /// archs are linked even when no object has their target.
    pub should_extract: Vec<String>,
    /// `--embed-bitcode`: the device links write LLVM IR, packed as such.
    pub embed_bitcode: bool,
    /// `--cuda-path=<dir>`: where CUDA's `bin/fatbinary` is.
    pub cuda_path: Option<String>,
    /// `--emit-fatbin-only`: the HIP or CUDA fat binary is the output (no
    /// wrapper object, no host link).
    pub emit_fatbin_only: bool,
    /// `--compress`: HIP fat binaries are compressed bundles.
    pub compress: bool,
    /// `--compression-level=N`, passed to the bundler.
    pub compression_level: Option<String>,
    /// `--override-image=openmp=<file>` files, in order.
    pub override_images: Vec<String>,
    /// The host link's arguments, in order.
    pub host: Vec<HostArg>,
}

/// A device binary of the link, as the plan takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The file it came from (an archive member's name for members),
    /// whose stem names its temporary file.
    pub input: String,
    /// Its target, kind, and whether it is an archive's.
    pub binary: Binary,
}

/// What planning asks of the world.
pub trait Env {
    /// A program LLVM 22's wrapper runs (`clang`,
    /// `clang-offload-bundler`, `llvm-objcopy`), found as LLVM finds it.
    fn program(&self, name: &str) -> Option<String>;
    /// An LLVM tool whose release matters (`llvm-objcopy`), looked for
    /// beside the clang the device links run first.
    fn llvm_tool(&self, name: &str) -> Option<String>;
    /// CUDA's `fatbinary`: in `cuda_path`'s `bin`, then on `PATH`.
    fn fatbinary(&self, cuda_path: Option<&str>) -> Option<String>;
    /// The name of a new temporary file, `<prefix>-XXXXXX<suffix>` in the
    /// temporary directory (not asked under `--save-temps`, whose names
    /// are LLVM's, `<prefix><suffix>` in the current directory).
    fn temp(&mut self, prefix: &str, suffix: &str) -> Result<String, Failure>;
    /// Whether the host link's input `path` is an archive or a shared
    /// object: what LLVM 22 copies into a CPU target's device link.
    fn is_library(&self, path: &str) -> bool;
}

/// A program run by the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// How LLVM names it in its error line (`'clang' failed`).
    pub name: String,
    /// The program, as found (the bare name under `--dry-run` where it was
    /// not found).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The file it writes.
    pub output: String,
}

impl Command {
    /// The line LLVM 22 prints for it under `--dry-run` or
    /// `--wrapper-verbose`.
    pub fn line(&self) -> String {
        super::print_command(&self.program, &self.args)
    }
}

/// One step of the job, in the order it is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Writes the device binary `image` (an index into the [`Found`]
    /// binaries) to `path`: an input of a device link.
    WriteInput {
        /// The binary.
        image: usize,
        /// Its file.
        path: String,
    },
    /// Runs the device links (`clang`), up to `--wrapper-jobs` at once;
    /// every one runs to its end, and every failure is reported.
    DeviceLinks(Vec<Command>),
    /// Runs a program (the bundler, `fatbinary`, the host linker).
    Run(Command),
    /// Packs the linked OpenMP `images`, then the `--override-image`
    /// files, as LLVM does, and writes the wrapper object registering them
    /// to `output`.
    WrapOpenMp {
        /// The linked images, in LLVM's order.
        images: Vec<DeviceLink>,
        /// The `--override-image` files.
        overrides: Vec<String>,
        /// The wrapper object.
        output: String,
    },
    /// Writes the wrapper object registering the HIP or CUDA fat binary
    /// `fatbin` to `output`.
    WrapFatbin {
        /// HIP or CUDA.
        kind: Kind,
        /// The fat binary (a bundle or CUDA's fatbin).
        fatbin: String,
        /// The wrapper object.
        output: String,
    },
    /// Writes the SYCL wrapper object registering the images of the link
    /// `image` (its output) to `output`.
    WrapSycl {
        /// The device link.
        image: DeviceLink,
        /// The wrapper object.
        output: String,
    },
    /// Packs the linked image `image` as LLVM does (an OffloadBinary) to
    /// `output` (`--emit-fatbin-only` for OpenMP).
    PackImage {
        /// The device link.
        image: DeviceLink,
        /// The packed image.
        output: String,
    },
    /// Copies the fat binary `fatbin` to the host link's `output`
    /// (`--emit-fatbin-only`; nothing under `--dry-run`).
    EmitFatbin {
        /// The fat binary.
        fatbin: String,
        /// Where it goes.
        output: String,
    },
    /// Takes the MD5 of the host link's `output` (of no bytes under
    /// `--dry-run`): the suffix of the relocatable link's renamed entry
    /// table.
    Checksum {
        /// The host link's output.
        output: String,
    },
    /// Runs `llvm-objcopy` on the relocatable link's `output` with
    /// [`super::relocatable_objcopy_args`], the suffix from the last
    /// [`Step::Checksum`].
    RenameEntries {
        /// `llvm-objcopy`.
        program: String,
        /// The host link's output, edited in place.
        output: String,
    },
    /// The job stops with this failure.
    Fail(Failure),
}

impl Step {
    /// The files the step writes (what the tests look at).
    #[cfg(test)]
    pub fn produces(&self) -> Vec<&str> {
        match self {
            Step::WriteInput { path, .. } => vec![path],
            Step::DeviceLinks(commands) => commands.iter().map(|c| c.output.as_str()).collect(),
            Step::Run(c) => vec![&c.output],
            Step::WrapOpenMp { output, .. }
            | Step::WrapFatbin { output, .. }
            | Step::WrapSycl { output, .. }
            | Step::PackImage { output, .. }
            | Step::RenameEntries { output, .. } => vec![output],
            Step::EmitFatbin { output, .. } => vec![output],
            Step::Checksum { .. } | Step::Fail(_) => Vec::new(),
        }
    }
}

/// The job's steps, and the host triple they were planned for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The host's triple (`--host-triple`, else this machine's Linux).
    pub host_triple: String,
    /// The steps, in order; a [`Step::Fail`] is the last.
    pub steps: Vec<Step>,
}

impl Plan {
    /// What `--dry-run` prints for the plan, line by line: each command
    /// as LLVM 22 prints it, `llvm-objcopy`'s suffix the MD5 of no bytes
    /// (nothing is linked). The tests check the plans they make with it,
    /// and that the run prints it.
    #[cfg(test)]
    pub fn dry_run_text(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for step in &self.steps {
            match step {
                Step::DeviceLinks(commands) => lines.extend(commands.iter().map(Command::line)),
                Step::Run(c) => lines.push(c.line()),
                Step::RenameEntries { program, output } => {
                    let md5 = crate::bundle::ccob::truncated_md5(b"");
                    lines.push(rename_entries(program, output, md5).line());
                }
                _ => {}
            }
        }
        lines
    }
}

/// Plans the job for the device binaries `found` (none with
/// `--override-image`: LLVM reads no device input then), asking `env`
/// where programs are and for temporary files.
pub fn plan(o: &Options, found: &[Found], env: &mut dyn Env) -> Plan {
    let exe = super::executable(&o.host).to_string();
    let mut p = Planner {
        o,
        env,
        host_triple: o
            .host_triple
            .clone()
            .unwrap_or_else(|| format!("{}-unknown-linux-gnu", std::env::consts::ARCH)),
        exe_name: file_name(&exe).to_string(),
        exe,
        steps: Vec::new(),
        objects: Vec::new(),
    };
    if let Err(f) = p.job(found) {
        p.steps.push(Step::Fail(f));
    }
    Plan {
        host_triple: p.host_triple,
        steps: p.steps,
    }
}

/// A plan being made.
struct Planner<'a> {
    /// The command line.
    o: &'a Options,
    env: &'a mut dyn Env,
    /// The host's triple.
    host_triple: String,
    /// The host link's output.
    exe: String,
    /// Its file name, the prefix of the temporary files' names.
    exe_name: String,
    steps: Vec<Step>,
    /// The wrapper objects, in the order the host link takes them.
    objects: Vec<String>,
}

impl Planner<'_> {
    /// LLVM 22's three phases: the device links, then each kind's images
    /// bundled and wrapped (or written out with `--emit-fatbin-only`) in
    /// the order the kinds were first recorded, then the host link.
    fn job(&mut self, found: &[Found]) -> Result<(), Failure> {
        let o = self.o;
        let (links, linked) = self.device_links(found)?;
        for kind in plan::kind_order(&links) {
            let mut images: Vec<DeviceLink> = links
                .iter()
                .zip(&linked)
                .filter(|(l, _)| l.kinds.contains(&kind))
                .map(|(_, dl)| dl.clone())
                .collect();
            super::sort_like_llvm(&mut images);
            self.bundle_kind(kind, &images)?;
        }
        if !o.override_images.is_empty() {
            let prefix = format!("{}.openmp.image.wrapper", self.exe_name);
            let output = self.temp(&prefix, ".o")?;
            self.steps.push(Step::WrapOpenMp {
                images: Vec::new(),
                overrides: o.override_images.clone(),
                output: output.clone(),
            });
            self.objects.push(output);
        }
        if o.emit_fatbin_only {
            return Ok(());
        }
        self.host_link()
    }

    /// A temporary file's name: LLVM's under `--save-temps`, else a new
    /// file of the environment's.
    fn temp(&mut self, prefix: &str, suffix: &str) -> Result<String, Failure> {
        if self.o.save_temps {
            return Ok(format!("{prefix}{suffix}"));
        }
        self.env.temp(prefix, suffix)
    }

    /// A program as the environment finds it, or under `--dry-run` the
    /// bare name (as LLVM prints it), or LLVM's error.
    fn program(&self, name: &str) -> Result<String, Failure> {
        match self.env.program(name) {
            Some(p) => Ok(p),
            None if self.o.dry_run => Ok(name.to_string()),
            None => Err(Failure::new(format!("Unable to find '{name}' in path"))),
        }
    }

    /// The device links: the binaries grouped into links as LLVM plans
    /// them, each link's inputs written to temporary files, then the links
    /// run (those before a link LLVM refuses, before its error). Returns
    /// the links and what each produces.
    fn device_links(
        &mut self,
        found: &[Found],
    ) -> Result<(Vec<plan::Link>, Vec<DeviceLink>), Failure> {
        let o = self.o;
        let binaries: Vec<Binary> = found.iter().map(|f| f.binary.clone()).collect();
        let links = plan::links(&binaries, &o.should_extract);
        let clang = if links.is_empty() {
            String::new()
        } else {
            self.program("clang")?
        };
        let linker_path = o.linker_path.as_deref().unwrap_or("");
        let mut commands = Vec::new();
        let mut linked = Vec::new();
        for l in &links {
            if let Err(failure) = plan::check(l, &binaries) {
                // The links before it run, as LLVM runs them in order.
                if !commands.is_empty() {
                    self.steps.push(Step::DeviceLinks(commands));
                }
                return Err(failure);
            }
            let mut inputs = Vec::new();
            for &i in &l.members {
                let f = &found[i];
                let t = &f.binary.target;
                let prefix = format!("{}-{}-{}", stem(&f.input), t.triple, t.arch);
                let path = self.temp(&prefix, ".o")?;
                self.steps.push(Step::WriteInput {
                    image: i,
                    path: path.clone(),
                });
                inputs.push(path);
            }
            let triple = l.target.triple.clone();
            let mut dl = DeviceLink {
                lto_save_temps: o.save_temps && super::linker_does_lto(&triple, linker_path),
                plugin_opts: o.plugin_opts.clone(),
                mllvm: o.mllvm.clone(),
                embed_bitcode: o.embed_bitcode,
                sycl: l.kinds.contains(&OffloadKind::OFK_SYCL),
                inputs,
                executable: self.exe.clone(),
                arch: l.arch().to_string(),
                triple,
                output: String::new(),
            };
            let prefix = format!("{}.{}.{}", self.exe_name, dl.arch_name(), dl.arch);
            dl.output = self.temp(&prefix, ".img")?;
            let env = &*self.env;
            let mut args = dl.command(&o.host, |f| env.is_library(f));
            super::add_device_args(
                &mut args,
                &dl.triple,
                &o.host,
                &o.device_linker,
                &o.device_compiler,
            );
            commands.push(Command {
                name: "clang".into(),
                program: clang.clone(),
                args,
                output: dl.output.clone(),
            });
            linked.push(dl);
        }
        if !commands.is_empty() {
            self.steps.push(Step::DeviceLinks(commands));
        }
        Ok((links, linked))
    }

    /// The images of one offload kind bundled (OpenMP: packed; HIP: by the
    /// bundler; CUDA: by `fatbinary`; SYCL: the first link's output), then
    /// wrapped, or written out with `--emit-fatbin-only`.
    fn bundle_kind(&mut self, kind: OffloadKind, images: &[DeviceLink]) -> Result<(), Failure> {
        let o = self.o;
        let (exe, exe_name) = (self.exe.clone(), self.exe_name.clone());
        match kind {
            OffloadKind::OFK_OpenMP => {
                if o.emit_fatbin_only {
                    if images.len() != 1 {
                        return Err(Failure::new(
                            "Expected a single bundled image for direct fat binary output",
                        ));
                    }
                    let packed = self.temp(&exe_name, ".openmp.bundle")?;
                    self.steps.push(Step::PackImage {
                        image: images[0].clone(),
                        output: packed.clone(),
                    });
                    self.steps.push(Step::EmitFatbin {
                        fatbin: packed,
                        output: exe,
                    });
                    return Ok(());
                }
                let output = self.temp(&format!("{exe_name}.openmp.image.wrapper"), ".o")?;
                self.steps.push(Step::WrapOpenMp {
                    images: images.to_vec(),
                    overrides: o.override_images.clone(),
                    output: output.clone(),
                });
                self.objects.push(output);
                Ok(())
            }
            OffloadKind::OFK_HIP => {
                // Bundled by the bundler, as LLVM runs it.
                let hipfb = self.temp(&exe_name, ".hipfb")?;
                let program = self.program("clang-offload-bundler")?;
                self.steps.push(Step::Run(Command {
                    name: "clang-offload-bundler".into(),
                    program,
                    args: bundle_command(o, images, &hipfb),
                    output: hipfb.clone(),
                }));
                self.wrap_fatbin(kind, Kind::Hip, hipfb)
            }
            OffloadKind::OFK_Cuda => {
                // Packed by CUDA's fatbinary.
                let fatbin = self.temp(&exe_name, ".fatbin")?;
                let program = match self.env.fatbinary(o.cuda_path.as_deref()) {
                    Some(p) => p,
                    None if o.dry_run => "fatbinary".into(),
                    None => return Err(Failure::new("Unable to find 'fatbinary' in path")),
                };
                self.steps.push(Step::Run(Command {
                    name: "fatbinary".into(),
                    program,
                    args: fatbinary_command(&self.host_triple, images, &fatbin),
                    output: fatbin.clone(),
                }));
                self.wrap_fatbin(kind, Kind::Cuda, fatbin)
            }
            OffloadKind::OFK_SYCL => {
                // LLVM 22 wraps (or writes out) the first SYCL link's
                // output only.
                if o.emit_fatbin_only {
                    self.steps.push(Step::EmitFatbin {
                        fatbin: images[0].output.clone(),
                        output: exe,
                    });
                    return Ok(());
                }
                let output = self.temp(&format!("{exe_name}.sycl.image.wrapper"), ".o")?;
                self.steps.push(Step::WrapSycl {
                    image: images[0].clone(),
                    output: output.clone(),
                });
                self.objects.push(output);
                Ok(())
            }
            _ => Err(Failure::new(format!(
                "{} wrapping is not supported",
                kind.name()
            ))),
        }
    }

    /// The HIP or CUDA fat binary `bundle` (of the offload kind `kind`)
    /// wrapped as `wrap_kind`, or written out with `--emit-fatbin-only`.
    fn wrap_fatbin(
        &mut self,
        kind: OffloadKind,
        wrap_kind: Kind,
        bundle: String,
    ) -> Result<(), Failure> {
        if self.o.emit_fatbin_only {
            self.steps.push(Step::EmitFatbin {
                fatbin: bundle,
                output: self.exe.clone(),
            });
            return Ok(());
        }
        let prefix = format!("{}.{}.image.wrapper", self.exe_name, kind.name());
        let output = self.temp(&prefix, ".o")?;
        self.steps.push(Step::WrapFatbin {
            kind: wrap_kind,
            fatbin: bundle,
            output: output.clone(),
        });
        self.objects.push(output);
        Ok(())
    }

    /// The host link of the wrapper objects and the host's inputs; for a
    /// relocatable link, then the output's images and entry table renamed
    /// by llvm-objcopy as LLVM renames them.
    fn host_link(&mut self) -> Result<(), Failure> {
        let o = self.o;
        let Some(linker) = &o.linker_path else {
            return Err(Failure::new("linker path missing, must pass 'linker-path'"));
        };
        self.steps.push(Step::Run(Command {
            name: file_name(linker).to_string(),
            program: linker.clone(),
            args: super::host_command(&o.host, &self.objects),
            output: self.exe.clone(),
        }));
        if o.relocatable {
            if Triple::parse(&self.host_triple).object_format() == ObjectFormat::Coff {
                return Err(Failure::new(
                    "Relocatable linking is not supported on COFF targets",
                ));
            }
            // As LLVM: the output's images and entry table renamed by
            // llvm-objcopy, the suffix from the output's MD5.
            self.steps.push(Step::Checksum {
                output: self.exe.clone(),
            });
            let program = match self.env.llvm_tool("llvm-objcopy") {
                Some(p) => p,
                None => self.program("llvm-objcopy")?,
            };
            self.steps.push(Step::RenameEntries {
                program,
                output: self.exe.clone(),
            });
        }
        Ok(())
    }
}

/// The `llvm-objcopy` command of [`Step::RenameEntries`], the suffix
/// `md5` from [`Step::Checksum`].
pub fn rename_entries(program: &str, output: &str, md5: u64) -> Command {
    Command {
        name: "llvm-objcopy".into(),
        program: program.to_string(),
        args: super::relocatable_objcopy_args(output, md5),
        output: output.to_string(),
    }
}

/// LLVM 22's bundler command for HIP: a 4 KiB-aligned object bundle of
/// an empty host entry and each linked image, in the order of `linked`
/// ([`super::sort_like_llvm`]).
pub fn bundle_command(o: &Options, linked: &[DeviceLink], output: &str) -> Vec<String> {
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

/// LLVM 22's `fatbinary` command for CUDA: `-64` or `-32` as the host
/// is, and each linked image (a cubin) as `--image3=kind=elf,sm=<N>`, in
/// the order of `linked`.
pub fn fatbinary_command(host_triple: &str, linked: &[DeviceLink], output: &str) -> Vec<String> {
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

#[cfg(test)]
mod tests;

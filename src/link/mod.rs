//! `clang-linker-wrapper`'s job, as LLVM 22's tool does it: which files
//! hold the link's device code ([`inputs`]), which device binaries go
//! into which device link ([`select`]), which offload kinds are bundled
//! and wrapped in which order ([`plan`]), the device-link and host-link
//! command lines (argument for argument as LLVM 22 renders them, here),
//! how a linked device image is packed before it is wrapped, and the
//! whole job as a list of steps ([`job`]: the commands in order, with
//! their arguments and the files each writes; what `--dry-run` prints).
//! The `-mllvm` values are checked as LLVM checks them
//! ([`llvm_options`]); failures carry LLVM's line ([`failure`]).
//!
//! Those compute; with the `files` feature the rest does the work: the
//! device binaries read from the link's files (`extract`), the job run on
//! this system (`exec`, with the temporary files and the programs of
//! `system`), the wrapper objects written (`wrapping`, with
//! [`crate::wrap`]). The command line's drop-in parses LLVM's options,
//! calls `exec::run` and prints what it says. How LLVM 22 decides each
//! step is written up in `docs/linker-wrapper-inputs.md`.

#[cfg(feature = "files")]
pub mod exec;
#[cfg(feature = "files")]
pub mod extract;
pub mod failure;
pub mod inputs;
pub mod job;
pub mod llvm_options;
pub mod plan;
pub mod select;
#[cfg(feature = "files")]
pub mod system;
#[cfg(feature = "files")]
pub mod wrapping;

use crate::llvm::triple::{Arch, Triple};
use crate::offload_binary::{ImageKind, ImageSpec, OffloadKind};

/// One argument of the host link, as the wrapper understood it. The
/// wrapper forwards all of them to the host linker; some of them also go to
/// the device link of CPU targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostArg {
    /// A positional argument (an input file, or the value of an option the
    /// wrapper does not know, which LLVM takes as an input too).
    Input(String),
    /// `-L <dir>` (also `--library-path`, and LLVM's `--library=`, which it
    /// treats as a search directory).
    LibraryPath(String),
    /// `-l <name>`.
    Library(String),
    /// `-rpath <dir>` (`long` false) or `--rpath <dir>` (`-rpath=`,
    /// `--rpath`, `--rpath=`).
    Rpath {
        /// The directory.
        dir: String,
        /// Rendered with two dashes.
        long: bool,
    },
    /// `--whole-archive`.
    WholeArchive,
    /// `--no-whole-archive`.
    NoWholeArchive,
    /// `-o <file>` (also `--output`).
    Output(String),
    /// `--linker-arg=<value>`: forwarded to the host linker as it was given
    /// (as LLVM 22 does) and given to the device link as `-Xlinker <value>`.
    LinkerArg(String),
    /// `--compiler-arg=<value>`: forwarded to the host linker as it was
    /// given (as LLVM 22 does) and given to the device compiler.
    CompilerArg(String),
    /// Anything else, forwarded to the host linker unchanged.
    Verbatim(String),
}

impl HostArg {
    /// The argument as LLVM 22 renders it on the host linker's command line.
    pub fn render(&self) -> Vec<String> {
        match self {
            HostArg::Input(s) | HostArg::Verbatim(s) => vec![s.clone()],
            HostArg::LibraryPath(d) => vec!["-L".into(), d.clone()],
            HostArg::Library(l) => vec!["-l".into(), l.clone()],
            HostArg::Rpath { dir, long } => {
                vec![if *long { "--rpath" } else { "-rpath" }.into(), dir.clone()]
            }
            HostArg::WholeArchive => vec!["--whole-archive".into()],
            HostArg::NoWholeArchive => vec!["--no-whole-archive".into()],
            HostArg::Output(o) => vec!["-o".into(), o.clone()],
            HostArg::LinkerArg(v) => vec![format!("--linker-arg={v}")],
            HostArg::CompilerArg(v) => vec![format!("--compiler-arg={v}")],
        }
    }
}

/// Whether a device triple is a CPU target (device code linked into a
/// shared library by the host toolchain) rather than a GPU.
#[cfg(test)]
pub fn is_cpu_triple(triple: &str) -> bool {
    !plan::is_gpu(triple) && Triple::parse(triple).arch() != Arch::Unknown
}

/// The value of a `--device-linker=` / `--device-compiler=` argument for
/// the device link of `triple`, as LLVM 22 decides it: an argument whose
/// part before the first `=` is not a triple with a known architecture
/// applies whole to every link; a triple with nothing after `=` (or no
/// `=`) applies *the triple itself* to every link (LLVM's quirk); else the
/// value applies to the links whose triple is exactly that string.
pub fn for_triple<'a>(arg: &'a str, triple: &str) -> Option<&'a str> {
    let (prefix, value) = arg.split_once('=').unwrap_or((arg, ""));
    if Triple::parse(prefix).arch() == Arch::Unknown {
        return Some(arg);
    }
    if value.is_empty() {
        return Some(prefix);
    }
    (prefix == triple).then_some(value)
}

/// Whether a device triple is NVIDIA's (`nvptx64-nvidia-cuda`).
pub fn is_nvptx_triple(triple: &str) -> bool {
    matches!(Triple::parse(triple).arch(), Arch::Nvptx | Arch::Nvptx64)
}

/// Whether a device triple is AMDGPU's (`amdgcn-amd-amdhsa`).
pub fn is_amdgpu_triple(triple: &str) -> bool {
    Triple::parse(triple).is_amdgpu()
}

/// Whether a device triple is SPIR-V's (`spirv64-intel`).
pub fn is_spirv_triple(triple: &str) -> bool {
    matches!(
        Triple::parse(triple).arch(),
        Arch::Spirv | Arch::Spirv32 | Arch::Spirv64
    )
}

/// One device link: the images of one target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceLink {
    /// The device triple.
    pub triple: String,
    /// The architecture (an AMDGPU target ID such as `gfx90a:xnack+`);
    /// empty for `generic` or none.
    pub arch: String,
    /// `-Wl,--save-temps`: `--save-temps` for a link whose linker does
    /// LTO (AMDGPU, NVPTX, or a CPU target linked by an `lld`).
    pub lto_save_temps: bool,
    /// `-mllvm` and `--offload-opt=` values, in command-line order: each
    /// goes to the link's LTO plugin.
    pub plugin_opts: Vec<String>,
    /// `-mllvm` values, in order: each goes to the device linker too.
    pub mllvm: Vec<String>,
    /// `--embed-bitcode`: the link writes LLVM IR.
    pub embed_bitcode: bool,
    /// The link's images are SYCL's (linked by `clang-sycl-linker`).
    pub sycl: bool,
    /// The extracted device objects, in order.
    pub inputs: Vec<String>,
    /// The linked image's file.
    pub output: String,
    /// The host link's output (`-o`), for `-dumpdir`.
    pub executable: String,
}

impl DeviceLink {
    /// The architecture name of the triple (`x86_64`), as in LLVM's file
    /// names.
    pub fn arch_name(&self) -> String {
        Triple::parse(&self.triple).arch_name().to_string()
    }

    /// The device link's command line, after the program: LLVM 22's
    /// `clang` invocation (`generic::clang`). `is_library` says whether an
    /// input of the host link is an archive or a shared object (those go to
    /// a CPU target's device link, as LLVM passes them). The
    /// `--device-linker`/`--device-compiler` values come after, from
    /// [`add_device_args`].
    pub fn command(&self, host: &[HostArg], is_library: impl Fn(&str) -> bool) -> Vec<String> {
        let mut cmd: Vec<String> = vec![
            "--no-default-config".into(),
            "-o".into(),
            self.output.clone(),
            "-dumpdir".into(),
            format!(
                "{}.{}.{}.img.",
                self.executable,
                self.arch_name(),
                self.arch
            ),
            format!("--target={}", self.triple),
        ];
        let amdgpu = is_amdgpu_triple(&self.triple);
        let nvptx = is_nvptx_triple(&self.triple);
        let spirv = is_spirv_triple(&self.triple);
        if !self.arch.is_empty() {
            let flag = if amdgpu { "-mcpu" } else { "-march" };
            cmd.push(format!("{flag}={}", self.arch));
        }
        if amdgpu {
            cmd.push("-flto".into());
        }
        for o in &self.plugin_opts {
            cmd.extend(["-Xlinker".into(), format!("--plugin-opt={o}")]);
        }
        if !nvptx && !spirv {
            cmd.push("-Wl,--no-undefined".into());
        }
        cmd.extend(self.inputs.iter().cloned());
        if !plan::is_gpu(&self.triple) {
            cmd.push("-Wl,-Bsymbolic".into());
            cmd.push("-shared".into());
            for arg in host {
                match arg {
                    HostArg::Input(f) if is_library(f) => cmd.push(f.clone()),
                    HostArg::LibraryPath(_) | HostArg::Library(_) | HostArg::Rpath { .. } => {
                        cmd.extend(arg.render());
                    }
                    HostArg::WholeArchive => cmd.push("-Wl,--whole-archive".into()),
                    HostArg::NoWholeArchive => cmd.push("-Wl,--no-whole-archive".into()),
                    _ => {}
                }
            }
        }
        for o in &self.mllvm {
            cmd.extend(["-Xlinker".into(), format!("-mllvm={o}")]);
        }
        if self.lto_save_temps {
            cmd.push("-Wl,--save-temps".into());
        }
        if self.embed_bitcode {
            cmd.push("-Wl,--lto-emit-llvm".into());
        }
        if self.sycl {
            cmd.extend([
                "--sycl-link".into(),
                "-Xlinker".into(),
                format!("-triple={}", self.triple),
                "-Xlinker".into(),
                format!("-arch={}", self.arch),
            ]);
        }
        for arg in host {
            if let HostArg::LinkerArg(v) = arg {
                cmd.extend(["-Xlinker".into(), v.clone()]);
            }
        }
        cmd
    }
}

/// Whether LLVM 22 gives a device link `-Wl,--save-temps` under
/// `--save-temps` (`linkerSupportsLTO`): for AMDGPU and NVPTX, and for
/// other non-GPU targets when the host linker's path ends in `lld`.
pub fn linker_does_lto(triple: &str, linker_path: &str) -> bool {
    is_amdgpu_triple(triple)
        || is_nvptx_triple(triple)
        || (!plan::is_gpu(triple) && linker_path.ends_with("lld"))
}

/// Puts linked images in the order LLVM 22 packs and bundles them: it
/// sorts them (`llvm::sort`, an insertion sort for so few) with "a before
/// b when a's triple is greater, or a's arch is greater", starting from
/// the order its links finished. From the links' order that gives
/// descending archs within a triple (`gfx942, gfx90a, gfx1030`) and
/// descending triples (`x86_64…` before `aarch64…`).
pub fn sort_like_llvm(linked: &mut [DeviceLink]) {
    let before = |a: &DeviceLink, b: &DeviceLink| a.triple > b.triple || a.arch > b.arch;
    for i in 1..linked.len() {
        if before(&linked[i], &linked[0]) {
            linked[..=i].rotate_right(1);
        } else {
            let mut j = i;
            while before(&linked[j], &linked[j - 1]) {
                linked.swap(j, j - 1);
                j -= 1;
            }
        }
    }
}

/// Appends the `--device-linker` and `--device-compiler` arguments for
/// `triple`, and the `--compiler-arg`s, to a device-link command line, in
/// LLVM 22's order.
pub fn add_device_args(
    cmd: &mut Vec<String>,
    triple: &str,
    host: &[HostArg],
    device_linker: &[String],
    device_compiler: &[String],
) {
    // After the explicit --linker-arg values (in the command).
    for a in device_linker {
        if let Some(v) = for_triple(a, triple) {
            cmd.extend(["-Xlinker".into(), v.to_string()]);
        }
    }
    for arg in host {
        if let HostArg::CompilerArg(v) = arg {
            cmd.push(v.clone());
        }
    }
    for a in device_compiler {
        if let Some(v) = for_triple(a, triple) {
            cmd.push(v.to_string());
        }
    }
}

/// The host link's command line, after the program: the arguments in their
/// order, with `objects` (the wrapper objects) right after `-o <file>` or
/// lld-link's `-out:<file>`, as LLVM 22 places them (nowhere without
/// either: LLVM's quirk).
pub fn host_command(host: &[HostArg], objects: &[String]) -> Vec<String> {
    let mut cmd = Vec::new();
    for arg in host {
        cmd.extend(arg.render());
        if matches!(arg, HostArg::Output(_)) || lld_link_out(arg).is_some() {
            cmd.extend(objects.iter().cloned());
        }
    }
    cmd
}

/// The file of lld-link's `-out:<file>` (`/out:`).
fn lld_link_out(arg: &HostArg) -> Option<&str> {
    match arg {
        HostArg::Verbatim(v) => v.strip_prefix("-out:").or_else(|| v.strip_prefix("/out:")),
        _ => None,
    }
}

/// The `llvm-objcopy` arguments LLVM 22 runs on the output of a
/// relocatable link (`-r`): its device images removed from
/// `.llvm.offloading` (they were linked, and are registered by the wrapper
/// object), and its entry table renamed with a suffix, so that a later
/// link keeps this table apart from the program's. The suffix is
/// `output_md5`: the first 8 bytes of the MD5 of the linked file (of no
/// bytes under `--dry-run`), little-endian, in hex.
pub fn relocatable_objcopy_args(output: &str, output_md5: u64) -> Vec<String> {
    let table = "llvm_offload_entries";
    vec![
        output.to_string(),
        "--remove-section".into(),
        crate::offload_binary::container::SECTION.into(),
        "--rename-section".into(),
        format!("{table}={table}_{output_md5:x}"),
        "--redefine-sym".into(),
        format!("__start_{table}=__start_{table}_{output_md5:x}"),
        "--redefine-sym".into(),
        format!("__stop_{table}=__stop_{table}_{output_md5:x}"),
    ]
}

/// The host link's output: the last `-o`, else lld-link's `-out:`, else
/// `a.out`.
pub fn executable(host: &[HostArg]) -> &str {
    host.iter()
        .rev()
        .find_map(|a| match a {
            HostArg::Output(o) => Some(o.as_str()),
            _ => None,
        })
        .or_else(|| host.iter().rev().find_map(lld_link_out))
        .unwrap_or("a.out")
}

/// How LLVM 22 prints a command with `--wrapper-verbose` or `--dry-run`: a
/// space, the program in double quotes, then the arguments unquoted.
pub fn print_command(program: &str, args: &[String]) -> String {
    let mut line = format!(" \"{program}\"");
    for a in args {
        line.push(' ');
        line.push_str(a);
    }
    line
}

/// The OffloadBinary entry LLVM 22 packs a linked OpenMP image in before
/// wrapping it: an object (LLVM IR under `--embed-bitcode`) with the
/// link's `triple` and `arch` (empty for `generic`).
pub fn linked_image_spec(triple: &str, arch: &str, bitcode: bool, size: u64) -> ImageSpec {
    ImageSpec {
        image_kind: if bitcode {
            ImageKind::IMG_Bitcode
        } else {
            ImageKind::IMG_Object
        },
        offload_kind: OffloadKind::OFK_OpenMP,
        flags: 0,
        strings: vec![
            (b"triple".to_vec(), triple.as_bytes().to_vec()),
            (b"arch".to_vec(), arch.as_bytes().to_vec()),
        ],
        size,
    }
}

/// The triple LLVM 22 gives an `--override-image` file, from its ELF
/// header (`x86_64--`: the architecture only). `None` for a file that is
/// not ELF or a machine this slice does not know.
pub fn override_triple(elf: &[u8]) -> Option<String> {
    let p = crate::host::elf::peek(elf)?;
    let (class64, big) = (p.is_64(), p.is_big_endian());
    let machine = p.machine()?.0;
    let arch = match (machine, class64, big) {
        (62, true, false) => "x86_64",
        (3, false, false) => "i386",
        (183, true, false) => "aarch64",
        (183, true, true) => "aarch64_be",
        (21, true, false) => "powerpc64le",
        (21, true, true) => "powerpc64",
        (22, true, true) => "s390x",
        (243, true, false) => "riscv64",
        _ => return None,
    };
    Some(format!("{arch}--"))
}

/// The OffloadBinary entry LLVM 22 packs an `--override-image=openmp=`
/// file in: an OpenMP object with only a `triple` ([`override_triple`]).
pub fn override_image_spec(triple: &str, size: u64) -> ImageSpec {
    ImageSpec {
        image_kind: ImageKind::IMG_Object,
        offload_kind: OffloadKind::OFK_OpenMP,
        flags: 0,
        strings: vec![(b"triple".to_vec(), triple.as_bytes().to_vec())],
        size,
    }
}

#[cfg(test)]
mod tests;

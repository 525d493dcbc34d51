//! The plan of `clang-linker-wrapper`'s job, as LLVM 22's tool does it for
//! OpenMP offloading to CPU targets: which device images go into which
//! device link, the device-link and host-link command lines (argument for
//! argument as LLVM 22 renders them), and how a linked device image is
//! packed before it is wrapped.
//!
//! This module only computes: the caller extracts the images (with
//! [`crate::offload_binary::find_images`]), writes the files, runs the
//! commands and wraps the packed images with [`crate::wrap`].

pub mod resolve;

use crate::llvm::triple::Triple;
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
pub fn is_cpu_triple(triple: &str) -> bool {
    let t = Triple::parse(triple);
    let arch = t.arch_name();
    !(arch.is_empty()
        || t.is_amdgpu()
        || arch.starts_with("nvptx")
        || arch.starts_with("spirv")
        || arch.starts_with("spir"))
}

/// The value of a `--device-linker=` / `--device-compiler=` argument for a
/// device triple: `<triple>=<value>` applies to that triple only, anything
/// else (whose part before the first `=` is not a triple) to every triple.
pub fn for_triple<'a>(arg: &'a str, triple: &str) -> Option<&'a str> {
    if let Some((prefix, value)) = arg.split_once('=')
        && looks_like_triple(prefix)
    {
        return (Triple::parse(prefix).as_str() == Triple::parse(triple).as_str()).then_some(value);
    }
    Some(arg)
}

fn looks_like_triple(s: &str) -> bool {
    !s.starts_with('-') && s.contains('-') && !Triple::parse(s).arch_name().is_empty()
}

/// Whether a device triple is NVIDIA's (`nvptx64-nvidia-cuda`).
pub fn is_nvptx_triple(triple: &str) -> bool {
    Triple::parse(triple).arch_name().starts_with("nvptx")
}

/// Whether a device triple is AMDGPU's (`amdgcn-amd-amdhsa`).
pub fn is_amdgpu_triple(triple: &str) -> bool {
    Triple::parse(triple).is_amdgpu()
}

/// One device link: the images of one triple and architecture.
#[derive(Debug, Clone)]
pub struct DeviceLink {
    /// The device triple.
    pub triple: String,
    /// The architecture (an AMDGPU target ID such as `gfx90a:xnack+`);
    /// empty for a CPU target's `generic`.
    pub arch: String,
    /// Whether the temporary files are kept (`--save-temps`): a GPU link
    /// then keeps its stages too.
    pub save_temps: bool,
    /// `-mllvm` options, given to the link's LTO plugin and its linker.
    pub mllvm: Vec<String>,
    /// The extracted device objects, in the order of the inputs.
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
    /// `clang` invocation for a CPU target. `is_shared` says whether an
    /// input of the host link is a library, a shared object or an archive
    /// (those go to the device link, as LLVM does).
    pub fn command(&self, host: &[HostArg], is_shared: impl Fn(&str) -> bool) -> Vec<String> {
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
        let nvptx = is_nvptx_triple(&self.triple);
        if is_amdgpu_triple(&self.triple) || nvptx {
            // A GPU: the processor, LTO (AMDGPU; NVPTX links bitcode
            // without asking), the undefined-symbol check (not for NVPTX),
            // nothing of the host's libraries.
            if nvptx {
                cmd.push(format!("-march={}", self.arch));
            } else {
                cmd.push(format!("-mcpu={}", self.arch));
            }
            if !nvptx {
                cmd.push("-flto".into());
            }
            self.plugin_opts(&mut cmd);
            if !nvptx {
                cmd.push("-Wl,--no-undefined".into());
            }
            cmd.extend(self.inputs.iter().cloned());
            self.linker_mllvm(&mut cmd);
            if self.save_temps {
                cmd.push("-Wl,--save-temps".into());
            }
            for arg in host {
                if let HostArg::LinkerArg(v) = arg {
                    cmd.extend(["-Xlinker".into(), v.clone()]);
                }
            }
            return cmd;
        }
        self.plugin_opts(&mut cmd);
        cmd.push("-Wl,--no-undefined".into());
        cmd.extend(self.inputs.iter().cloned());
        cmd.push("-Wl,-Bsymbolic".into());
        cmd.push("-shared".into());
        for arg in host {
            match arg {
                HostArg::Input(f) if is_shared(f) => cmd.push(f.clone()),
                HostArg::LibraryPath(_) | HostArg::Library(_) | HostArg::Rpath { .. } => {
                    cmd.extend(arg.render());
                }
                HostArg::WholeArchive => cmd.push("-Wl,--whole-archive".into()),
                HostArg::NoWholeArchive => cmd.push("-Wl,--no-whole-archive".into()),
                _ => {}
            }
        }
        self.linker_mllvm(&mut cmd);
        for arg in host {
            if let HostArg::LinkerArg(v) = arg {
                cmd.extend(["-Xlinker".into(), v.clone()]);
            }
        }
        cmd
    }

    /// `-mllvm` options for the LTO plugin (`-Xlinker --plugin-opt=<o>`),
    /// as LLVM 22 puts them after the target.
    fn plugin_opts(&self, cmd: &mut Vec<String>) {
        for o in &self.mllvm {
            cmd.extend(["-Xlinker".into(), format!("--plugin-opt={o}")]);
        }
    }

    /// `-mllvm` options for the device linker (`-Xlinker -mllvm=<o>`),
    /// as LLVM 22 puts them after the inputs and libraries.
    fn linker_mllvm(&self, cmd: &mut Vec<String>) {
        for o in &self.mllvm {
            cmd.extend(["-Xlinker".into(), format!("-mllvm={o}")]);
        }
    }
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
/// order, with `objects` (the wrapper object) right after `-o <file>`, as
/// LLVM 22 places them.
pub fn host_command(host: &[HostArg], objects: &[String]) -> Vec<String> {
    let mut cmd = Vec::new();
    for arg in host {
        cmd.extend(arg.render());
        if matches!(arg, HostArg::Output(_)) {
            cmd.extend(objects.iter().cloned());
        }
    }
    cmd
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

/// The host link's output (the last `-o`; `a.out` without one).
pub fn executable(host: &[HostArg]) -> &str {
    host.iter()
        .rev()
        .find_map(|a| match a {
            HostArg::Output(o) => Some(o.as_str()),
            _ => None,
        })
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

/// The OffloadBinary entry LLVM 22 packs a linked CPU image in before
/// wrapping it: an OpenMP object with the `triple` and an empty `arch`.
pub fn linked_image_spec(triple: &str, arch: &str, size: u64) -> ImageSpec {
    ImageSpec {
        image_kind: ImageKind::IMG_Object,
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
    if elf.len() < 20 || &elf[..4] != b"\x7fELF" {
        return None;
    }
    let (class64, big) = (elf[4] == 2, elf[5] == 2);
    let m = [elf[18], elf[19]];
    let machine = if big {
        u16::from_be_bytes(m)
    } else {
        u16::from_le_bytes(m)
    };
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

//! `offload-kit wrap`: device images into the host object that registers
//! them with the offloading runtime (`llvm-offload-wrapper` + `llc`).

use std::path::PathBuf;
use std::str::FromStr;

use anyhow::{Context, Result, bail};

use super::io::{open_input, write_layout};
use crate::llvm::triple::Triple;
use crate::wrap::{self, Abi, Image, Kind, Options};

/// Write the host object that registers device images with the offloading
/// runtime (OpenMP, CUDA or HIP) at program start: what `llvm-offload-wrapper` followed by
/// `llc -filetype=obj -relocation-model=pic` makes, without LLVM.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  \
    offload-kit wrap --kind=openmp --triple=x86_64-unknown-linux-gnu -o wrap.o dev.bin\n  \
    cc main.o app.o wrap.o -lomp -lomptarget -o app\n\n\
    For openmp, each input is an OffloadBinary (the runtime gets its first image)\n\
    or a raw device image, and every input becomes one device image of one\n\
    descriptor. For cuda and hip, the one input (a fatbin, an offload bundle) is\n\
    embedded as it is and registered with the CUDA or HIP runtime.")]
pub struct Opts {
    /// Offload kind: openmp, cuda (one fatbin) or hip (one offload bundle).
    #[arg(long, value_name = "KIND")]
    kind: Option<String>,
    /// Output object file.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Host target triple: an ELF target (x86_64, aarch64, powerpc64le,
    /// s390x or riscv64), or x86_64 or aarch64 Windows (a COFF object;
    /// `-windows-msvc` or MinGW's `-windows-gnu`).
    #[arg(long, value_name = "TRIPLE", default_value_t = host_triple(),
          value_parser = Triple::from_str)]
    triple: Triple,
    /// Runtime interface: llvm (LLVM 20 and later), legacy (LLVM 19 and
    /// earlier) or rocm (legacy plus per-image target IDs).
    #[arg(long, value_name = "ABI", default_value = "llvm")]
    abi: String,
    /// Target ID of each image, for --abi=rocm: the first for the first
    /// input, and so on (default: the OffloadBinary's arch string).
    #[arg(long, value_name = "ARCH")]
    offload_arch: Vec<String>,
    /// Lay the object out exactly as llc does, byte for byte, whatever the
    /// image size. By default an image section of 1 MiB or more starts at
    /// a 64 KiB boundary in the file instead, which makes it faster to
    /// write and lets XFS and btrfs share the image's blocks with the input
    /// (reflink) rather than copy them.
    #[arg(long)]
    llc_layout: bool,
    /// Input files: OffloadBinaries or raw device images (openmp), or the one
    /// fatbin or offload bundle (cuda, hip).
    #[arg(value_name = "INPUT")]
    inputs: Vec<String>,
}

/// This machine's triple, as the default host target.
fn host_triple() -> Triple {
    let (arch, os) = (std::env::consts::ARCH, std::env::consts::OS);
    if os == "linux" {
        Triple::parse(&format!("{arch}-unknown-linux-gnu"))
    } else {
        Triple::parse(&format!("{arch}-unknown-{os}"))
    }
}

impl Opts {
    pub fn run(self) -> Result<()> {
        let Some(kind) = &self.kind else {
            bail!("--kind is required (openmp, cuda or hip)");
        };
        let opts = Options {
            kind: Kind::parse(kind)?,
            abi: Abi::parse(&self.abi)?,
            triple: self.triple.clone(),
            llc_layout: self.llc_layout,
            relocatable: false,
        };
        opts.check()?;
        if self.inputs.is_empty() {
            bail!("no input files");
        }
        if !self.offload_arch.is_empty() {
            if opts.abi != Abi::Rocm {
                bail!("--offload-arch is only used with --abi=rocm");
            }
            if self.offload_arch.len() != self.inputs.len() {
                bail!(
                    "{} --offload-arch for {} inputs: give one per input",
                    self.offload_arch.len(),
                    self.inputs.len()
                );
            }
        }
        let inputs = self
            .inputs
            .iter()
            .map(|name| open_input(name))
            .collect::<Result<Vec<_>>>()?;
        let mut images = Vec::with_capacity(inputs.len());
        for (i, (name, input)) in self.inputs.iter().zip(&inputs).enumerate() {
            let mut image = if opts.kind == Kind::OpenMp {
                Image::new(input.bytes()).with_context(|| format!("'{name}'"))?
            } else {
                Image::raw(input.bytes())
            };
            if let Some(arch) = self.offload_arch.get(i) {
                image.arch = Some(arch.clone());
            }
            if opts.abi == Abi::Rocm && image.arch.is_none() {
                bail!("'{name}': no offload arch: give --offload-arch for each input");
            }
            images.push(image);
        }
        let layout = wrap::layout(&opts, &images)?;
        let out = self.output.to_string_lossy();
        write_layout(&*out, &layout, |i| (&inputs[i], inputs[i].bytes()))
            .with_context(|| format!("'{out}': cannot write"))
    }
}

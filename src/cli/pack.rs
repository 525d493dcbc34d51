//! `offload-kit pack`: images into an OffloadBinary.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use super::io::{open_input, write_layout};
use crate::offload_binary::{self, ImageArgs};

/// Pack device images into an OffloadBinary (the bytes llvm-offload-binary 22 writes).
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  offload-kit pack -o dev.bin \\\n    --image file=a.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp \\\n    --image file=b.cubin,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=openmp"
)]
pub struct Opts {
    /// Output file (`-` for standard output).
    #[arg(short, long)]
    output: PathBuf,
    /// An image: file=PATH[,triple=T][,arch=A][,kind=openmp|cuda|hip|sycl][,KEY=VALUE…].
    /// The image kind comes from the file's extension (.o .bc .cubin .fatbin .s)
    /// or its bitcode magic, as in LLVM.
    #[arg(long, value_name = "SPEC", required = true)]
    image: Vec<String>,
    /// Format version to write: 1 (LLVM 22: one binary per image) or 2 (one
    /// binary holding every image, read by newer LLVM and by offload-kit).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=2))]
    format_version: u32,
}

impl Opts {
    pub fn run(self) -> Result<()> {
        let mut specs = Vec::new();
        let mut inputs = Vec::new();
        for image in &self.image {
            let args = ImageArgs::parse(image);
            let Some(files) = args.files() else {
                bail!("--image '{image}': has no file=PATH");
            };
            for file in files {
                let input = open_input(file)?;
                specs.push(args.image_spec(file, input.bytes()));
                inputs.push(input);
            }
        }
        let version = offload_binary::Version::try_from(self.format_version)?;
        let layout = offload_binary::layout(&specs, version)?;
        let out = self.output.to_string_lossy();
        write_layout(&*out, &layout, |i| (&inputs[i], inputs[i].bytes()))
            .with_context(|| format!("'{out}': cannot write"))
    }
}

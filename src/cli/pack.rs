//! `offload-kit pack`: images into an OffloadBinary.

use std::path::PathBuf;

use anyhow::{Result, anyhow};

use crate::offload_binary;
use crate::tools::packager::{self, PackError, Packing};

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
        let version = offload_binary::Version::try_from(self.format_version)?;
        let out = self.output.to_string_lossy();
        let images = self.image.iter().map(String::as_str);
        packager::pack_files(images, &out, Packing::Plain(version)).map_err(|e| match e {
            PackError::NoFile(image) => anyhow!("--image '{image}': has no file=PATH"),
            PackError::Open(file, e) => {
                anyhow::Error::from(e).context(format!("'{file}': cannot open"))
            }
            PackError::Layout(e) => e.into(),
            PackError::Write(file, e) => {
                anyhow::Error::from(e).context(format!("'{file}': cannot write"))
            }
        })
    }
}

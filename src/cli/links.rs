//! `offload-kit install-links DIR`: the LLVM tool names as links to this
//! binary, so build systems can call it in place of LLVM's tools.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};

/// The tool names this binary answers to: LLVM's, then NVIDIA's and AMD's.
pub const TOOLS: &[&str] = &[
    "llvm-offload-binary",
    "clang-offload-packager",
    "clang-offload-bundler",
    "clang-linker-wrapper",
    "cuobjdump",
    "nvprune",
    "roc-obj-ls",
    "roc-obj-extract",
    "roc-obj",
];

/// Make links named after the LLVM tools this binary replaces.
#[derive(clap::Args)]
pub struct Opts {
    /// Directory to create the links in (created if missing).
    dir: PathBuf,
    /// Replace existing files of those names.
    #[arg(long)]
    force: bool,
}

impl Opts {
    pub fn run(self) -> Result<()> {
        let exe = std::env::current_exe().context("cannot find the offload-kit executable")?;
        let exe = exe.canonicalize().unwrap_or(exe);
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("'{}': cannot create directory", self.dir.display()))?;
        for tool in TOOLS {
            let link = self.dir.join(tool);
            if let Ok(meta) = link.symlink_metadata() {
                let ours = std::fs::read_link(&link).is_ok_and(|t| t == exe);
                if ours {
                    println!("{} (already there)", link.display());
                    continue;
                }
                if !self.force {
                    bail!("'{}': exists (use --force to replace it)", link.display());
                }
                if meta.is_dir() {
                    bail!("'{}': is a directory", link.display());
                }
                std::fs::remove_file(&link)
                    .with_context(|| format!("'{}': cannot remove", link.display()))?;
            }
            std::os::unix::fs::symlink(&exe, &link)
                .with_context(|| format!("'{}': cannot create link", link.display()))?;
            println!("{}", link.display());
        }
        Ok(())
    }
}

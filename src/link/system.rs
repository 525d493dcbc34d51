//! The job's [`Env`] on this system: temporary files (removed when the
//! job ends), and the programs it runs, found as LLVM 22's wrapper finds
//! them.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};

use super::failure::Failure;
use super::job::Env;
use crate::llvm::path::file_name;

/// The environment of a run: the temporary files it made, removed when it
/// is dropped.
#[derive(Default)]
pub struct System {
    temps: Vec<PathBuf>,
}

impl Drop for System {
    fn drop(&mut self) {
        for f in &self.temps {
            let _ = std::fs::remove_file(f);
        }
    }
}

impl Env for System {
    fn program(&self, name: &str) -> Option<String> {
        find_program(name)
    }

    fn llvm_tool(&self, name: &str) -> Option<String> {
        find_llvm_tool(name)
    }

    fn fatbinary(&self, cuda_path: Option<&str>) -> Option<String> {
        find_fatbinary(cuda_path)
    }

    /// A new empty file `<tmp>/<prefix>-XXXXXX<suffix>`, removed when the
    /// run ends.
    fn temp(&mut self, prefix: &str, suffix: &str) -> Result<String, Failure> {
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
                Ok(_) => {
                    self.temps.push(path.clone());
                    return Ok(path.to_string_lossy().into_owned());
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Failure::file(&path.to_string_lossy(), &e)),
            }
        }
    }

    fn is_library(&self, path: &str) -> bool {
        super::extract::is_library(path)
    }
}

/// A program LLVM 22's wrapper runs (`clang`, `clang-offload-bundler`,
/// `llvm-objcopy`), found as LLVM finds it — in the directory of the
/// running executable (symlinks resolved), then on `PATH` — with the
/// directory LLVM's own wrapper would run from in between: that of the
/// clang that ran us (our parent process, as `clang -B<dir>` runs the
/// wrapper), since offload-kit is seldom installed beside clang. Last,
/// `<name>-22` on `PATH` (Debian puts only the versioned names there).
pub fn find_program(name: &str) -> Option<String> {
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
pub fn find_llvm_tool(name: &str) -> Option<String> {
    find_program("clang")
        .and_then(|clang| std::fs::canonicalize(clang).ok())
        .map(|clang| clang.with_file_name(name))
        .filter(|tool| tool.is_file())
        .map(|tool| tool.to_string_lossy().into_owned())
        .or_else(|| find_program(name))
}

/// CUDA's `fatbinary`, as LLVM 22 finds it: in `--cuda-path`'s `bin`,
/// then on `PATH`.
fn find_fatbinary(cuda_path: Option<&str>) -> Option<String> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(root) = cuda_path {
        dirs.push(Path::new(root).join("bin"));
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.iter()
        .map(|d| d.join("fatbinary"))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}

//! `-###`: where LLVM 22 finds llvm-objcopy, the command lines it prints
//! instead of running it, and the temporary files those lines name.

use std::path::{Path, PathBuf};

use super::{Fail, Job};
use crate::bundle::object::HOST_MARKER;
use crate::bundle::{self, ops};
use crate::cli::io::{Input, strerror, write_bytes};

/// `-###` when bundling into an object: the output is created empty and
/// the llvm-objcopy command LLVM would run is printed (the host target's
/// section comes from a temporary file holding [`HOST_MARKER`]).
pub(super) fn print_bundle_command(
    job: &Job,
    objcopy: &str,
    targets: &ops::Targets,
    host_input: &Input,
) -> Result<(), Fail> {
    let out = &job.outputs[0];
    write_bytes(out, host_input, &[])
        .map_err(|e| Fail::new(format!("'{out}': {}", strerror(&e))))?;
    let mut temps = Vec::new();
    let mut args = Vec::new();
    for (i, (id, n)) in targets.ids.iter().zip(&targets.normalized).enumerate() {
        let section = format!("{}{n}", String::from_utf8_lossy(bundle::binary::MAGIC));
        let file = if id.is_host() {
            let t = TempFile::create(HOST_MARKER)?;
            let name = t.name().to_string();
            temps.push(t);
            name
        } else {
            job.inputs[i].clone()
        };
        args.push(format!("--add-section={section}={file}"));
        args.push(format!("--set-section-flags={section}=readonly,exclude"));
    }
    args.push("--".into());
    args.push(job.inputs[targets.host()].clone());
    args.push(out.clone());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    print_command(objcopy, &refs);
    Ok(())
}

/// Prints a command line as LLVM's `-###` does: every word double-quoted.
pub(super) fn print_command(program: &str, args: &[&str]) {
    let mut line = format!("\"{program}\"");
    for a in args {
        line.push_str(&format!(" \"{a}\""));
    }
    eprintln!("{line}");
}

/// Where LLVM 22 finds llvm-objcopy: beside the bundler (`argv[0]` when it
/// names a file, else the running executable), then on `PATH`. The path is
/// spelled as LLVM spells it (the directory as given, then the name).
pub(super) fn find_objcopy(argv0: &str) -> Option<String> {
    const NAME: &str = "llvm-objcopy";
    let exe = if Path::new(argv0).exists() {
        PathBuf::from(argv0)
    } else {
        std::env::current_exe().unwrap_or_default()
    };
    let beside = exe.parent().unwrap_or(Path::new("")).join(NAME);
    if can_execute(&beside) {
        return Some(beside.to_string_lossy().into_owned());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(NAME))
        .find(|p| can_execute(p))
        .map(|p| p.to_string_lossy().into_owned())
}

/// LLVM's `sys::fs::can_execute`: a regular file (after symbolic links)
/// that may be executed.
pub(super) fn can_execute(p: &Path) -> bool {
    let Ok(m) = std::fs::metadata(p) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        m.is_file() && m.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        m.is_file()
    }
}

/// A temporary file named as LLVM names the bundler's
/// (`clang-offload-bundler-XXXXXX.tmp`, six hex digits, in the first of
/// `TMPDIR`, `TMP`, `TEMP`, `TEMPDIR` that is set, else `/tmp`), removed
/// when dropped.
pub(super) struct TempFile(PathBuf, String);

impl TempFile {
    pub(super) fn create(contents: &[u8]) -> Result<TempFile, Fail> {
        use std::hash::BuildHasher;
        use std::io::Write;
        let dir = ["TMPDIR", "TMP", "TEMP", "TEMPDIR"]
            .iter()
            .find_map(std::env::var_os)
            .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
        let seed = std::hash::RandomState::new();
        let mut last = None;
        for attempt in 0u32..128 {
            let r = seed.hash_one(attempt) & 0xff_ffff;
            let path = dir.join(format!("clang-offload-bundler-{r:06x}.tmp"));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    let name = path.to_string_lossy().into_owned();
                    let t = TempFile(path, name);
                    f.write_all(contents)
                        .map_err(|e| Fail::new(format!("'{}': {}", t.1, strerror(&e))))?;
                    return Ok(t);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    last = Some(Fail::new(format!(
                        "'{}': {}",
                        path.to_string_lossy(),
                        strerror(&e)
                    )));
                    break;
                }
            }
        }
        Err(last.unwrap_or_else(|| Fail::new("unable to create a temporary file")))
    }

    pub(super) fn name(&self) -> &str {
        &self.1
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

//! `-###`: where LLVM 22 finds llvm-objcopy, the command lines it prints
//! instead of running it, and the temporary files those lines name.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::check::Job;
use super::failure::{Failure, Note, Say};
use crate::bundle::object::HOST_MARKER;
use crate::bundle::{self, ops};
use crate::files::{Input, write_bytes};

/// `-###` when bundling into an object: the output is created empty and
/// the llvm-objcopy command LLVM would run is said (the host target's
/// section comes from a temporary file holding [`HOST_MARKER`]).
pub fn print_bundle_command(
    job: &Job,
    objcopy: &str,
    targets: &ops::Targets,
    host_input: &Input,
    say: &mut Say<'_>,
) -> Result<(), Failure> {
    let out = &job.outputs[0];
    write_bytes(out, host_input, &[]).map_err(|e| Failure::file(out, e))?;
    let mut temps = Vec::new();
    let mut args = Vec::new();
    for (i, (id, n)) in targets.ids.iter().zip(&targets.normalized).enumerate() {
        let section = format!("{}{n}", String::from_utf8_lossy(bundle::binary::MAGIC));
        let file = if id.is_host() {
            let t = TempFile::create(&job.temp_dir, HOST_MARKER)?;
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
    say(Note::Text(command(objcopy, &refs)));
    Ok(())
}

/// A command line as LLVM's `-###` prints it: every word double-quoted,
/// ending in a newline.
pub fn command(program: &str, args: &[&str]) -> String {
    let mut line = format!("\"{program}\"");
    for a in args {
        line.push_str(&format!(" \"{a}\""));
    }
    line.push('\n');
    line
}

/// Where LLVM 22 finds llvm-objcopy: beside the bundler (`argv0` when it
/// names a file, else the running executable), then on `path` (the value
/// of `PATH`). The path is spelled as LLVM spells it (the directory as
/// given, then the name).
pub fn find_objcopy(argv0: &str, path: Option<&OsStr>) -> Option<String> {
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
    std::env::split_paths(path?)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(NAME))
        .find(|p| can_execute(p))
        .map(|p| p.to_string_lossy().into_owned())
}

/// LLVM's `sys::fs::can_execute`: a regular file (after symbolic links)
/// that may be executed.
fn can_execute(p: &Path) -> bool {
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
/// (`clang-offload-bundler-XXXXXX.tmp`, six hex digits, in the job's
/// temporary directory), removed when dropped.
pub struct TempFile(PathBuf, String);

impl TempFile {
    /// A new file in `dir` holding `contents`.
    pub fn create(dir: &Path, contents: &[u8]) -> Result<TempFile, Failure> {
        use std::hash::BuildHasher;
        use std::io::Write;
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
                        .map_err(|e| Failure::file(t.1.clone(), e))?;
                    return Ok(t);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    last = Some(Failure::file(path.to_string_lossy(), e));
                    break;
                }
            }
        }
        Err(last.unwrap_or_else(|| Failure::new("unable to create a temporary file")))
    }

    /// Its path, as LLVM prints it.
    pub fn name(&self) -> &str {
        &self.1
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_quote_every_word() {
        assert_eq!(
            command("/usr/bin/llvm-objcopy", &["--", "a b", "c"]),
            "\"/usr/bin/llvm-objcopy\" \"--\" \"a b\" \"c\"\n"
        );
    }

    #[test]
    fn temporary_files_are_named_as_llvm_names_them_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let t = TempFile::create(dir.path(), b"\0").unwrap();
        let name = Path::new(t.name()).file_name().unwrap().to_str().unwrap();
        let hex = name
            .strip_prefix("clang-offload-bundler-")
            .and_then(|n| n.strip_suffix(".tmp"))
            .unwrap();
        assert!(hex.len() == 6 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(std::fs::read(t.name()).unwrap(), b"\0");
        let path = PathBuf::from(t.name());
        drop(t);
        assert!(!path.exists());
        let missing = dir.path().join("no/such/dir");
        assert!(matches!(
            TempFile::create(&missing, b""),
            Err(Failure::File { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn objcopy_is_found_beside_the_bundler_then_on_the_path() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (beside, on_path) = (dir.path().join("bin"), dir.path().join("path"));
        for d in [&beside, &on_path] {
            std::fs::create_dir(d).unwrap();
            let tool = d.join("llvm-objcopy");
            std::fs::write(&tool, b"").unwrap();
            std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let bundler = beside.join("clang-offload-bundler");
        std::fs::write(&bundler, b"").unwrap();
        let path = std::env::join_paths([&on_path]).unwrap();
        assert_eq!(
            find_objcopy(bundler.to_str().unwrap(), Some(&path)),
            Some(beside.join("llvm-objcopy").to_string_lossy().into_owned())
        );
        // Not executable beside it: the one on the path.
        std::fs::set_permissions(
            beside.join("llvm-objcopy"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        assert_eq!(
            find_objcopy(bundler.to_str().unwrap(), Some(&path)),
            Some(on_path.join("llvm-objcopy").to_string_lossy().into_owned())
        );
        let empty = std::env::join_paths([dir.path()]).unwrap();
        assert_eq!(find_objcopy(bundler.to_str().unwrap(), Some(&empty)), None);
    }
}

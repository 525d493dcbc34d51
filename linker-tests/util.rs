//! Shared helpers: finding the LLVM 22 tools, running programs, making the
//! drop-in links to our binary, and declaring trials that need tools.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use libtest_mimic::{Failed, Trial};

/// Where Debian's LLVM 22 installs its tools.
pub const LLVM_BIN: &str = "/usr/lib/llvm-22/bin";

/// Whether a missing tool must fail its tests (CI) instead of ignoring them.
pub fn require_tools() -> bool {
    std::env::var_os("OFFLOAD_KIT_REQUIRE_TOOLS").is_some_and(|v| v == "1")
}

/// The LLVM 22 tool `name`, if installed.
pub fn llvm(name: &str) -> PathBuf {
    Path::new(LLVM_BIN).join(name)
}

fn have(name: &str) -> bool {
    let p = if name.contains('/') {
        PathBuf::from(name)
    } else {
        llvm(name)
    };
    p.exists() || (!name.contains('/') && which(name))
}

fn which(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).exists()))
}

/// A trial that needs the LLVM tools in `tools`: ignored when one is missing,
/// unless [`require_tools`], when it fails saying which.
pub fn trial(
    name: impl Into<String>,
    tools: &[&str],
    f: impl FnOnce() -> Result<(), Failed> + Send + 'static,
) -> Trial {
    let missing: Vec<String> = tools
        .iter()
        .filter(|t| !have(t))
        .map(|t| t.to_string())
        .collect();
    let ignored = !missing.is_empty() && !require_tools();
    Trial::test(name, move || {
        if !missing.is_empty() {
            return Err(format!("missing tool(s): {}", missing.join(", ")).into());
        }
        f()
    })
    .with_ignored_flag(ignored)
}

/// Our binary.
pub fn ours() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_offload-kit"))
}

/// Our binary under the LLVM tool name `tool` (a link made once per run).
pub fn ours_as(tool: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let d = tempfile::Builder::new()
            .prefix("offload-kit-links-")
            .tempdir()
            .unwrap();
        let path = d.keep();
        let st = Command::new(ours())
            .arg("install-links")
            .arg(&path)
            .output()
            .unwrap();
        assert!(st.status.success(), "install-links failed: {st:?}");
        path
    });
    dir.join(tool)
}

/// What a program did.
#[derive(Debug)]
pub struct Run {
    /// Exit code (-1 if killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Fails unless the program exited 0.
    pub fn ok(self) -> Result<Run, Failed> {
        if self.code != 0 {
            return Err(format!("exit {}: {}", self.code, self.stderr).into());
        }
        Ok(self)
    }
}

/// Runs `prog` with `args` in `cwd`, with no standard input.
pub fn run<S: AsRef<OsStr>>(prog: &Path, args: &[S], cwd: &Path) -> Run {
    let out = Command::new(prog)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", prog.display()));
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Deterministic filler bytes (xorshift), so test inputs differ from each
/// other and do not compress to nothing.
pub fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A fresh temporary directory.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("offload-kit-test-")
        .tempdir()
        .unwrap()
}

/// Every regular file below `dir`, as (relative path, contents), sorted.
pub fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    fn walk(base: &Path, d: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Fails with a readable message when `a != b`.
pub fn same<T: PartialEq + std::fmt::Debug>(what: &str, ours: T, llvm: T) -> Result<(), Failed> {
    if ours != llvm {
        return Err(format!("{what} differ:\n  ours: {ours:?}\n  llvm: {llvm:?}").into());
    }
    Ok(())
}

/// Fails unless two byte strings are equal, showing where they differ.
pub fn same_bytes(what: &str, ours: &[u8], llvm: &[u8]) -> Result<(), Failed> {
    if ours == llvm {
        return Ok(());
    }
    let at = ours
        .iter()
        .zip(llvm)
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(llvm.len()));
    Err(format!(
        "{what} differ: sizes {} (ours) vs {} (llvm), first difference at {at:#x}",
        ours.len(),
        llvm.len()
    )
    .into())
}

/// Checks that a run failed cleanly: exit 1, no panic, exactly one line on
/// stderr that mentions `file`.
pub fn clean_failure(what: &str, r: &Run, file: &str) -> Result<(), Failed> {
    if r.code != 1 {
        return Err(format!(
            "{what}: exit code {} (want 1); stderr: {}",
            r.code, r.stderr
        )
        .into());
    }
    if r.stderr.contains("panicked") || r.stderr.contains("RUST_BACKTRACE") {
        return Err(format!("{what}: panicked: {}", r.stderr).into());
    }
    let lines: Vec<&str> = r.stderr.lines().collect();
    if lines.len() != 1 {
        return Err(format!(
            "{what}: want one error line, got {}: {}",
            lines.len(),
            r.stderr
        )
        .into());
    }
    if !lines[0].contains(file) {
        return Err(format!("{what}: error line does not name '{file}': {}", lines[0]).into());
    }
    Ok(())
}

/// Runs `prog` with `args` in `cwd` like [`run`], but kills it after
/// `secs` seconds and fails then, so a command that blocks or reads
/// forever fails its test instead of hanging CI.
pub fn run_within<S: AsRef<OsStr>>(
    secs: u64,
    prog: &Path,
    args: &[S],
    cwd: &Path,
) -> Result<Run, Failed> {
    use std::io::Read;
    let mut child = Command::new(prog)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", prog.display()));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
    let Some(status) = status else {
        let cmd: Vec<String> = args
            .iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect();
        return Err(format!("{} {cmd:?}: still running after {secs} s", prog.display()).into());
    };
    Ok(Run {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
    })
}

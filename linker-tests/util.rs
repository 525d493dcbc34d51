//! Shared helpers: finding the LLVM 22 tools, running programs, making the
//! drop-in links to our binary, and declaring trials that need tools.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use libtest_mimic::{Failed, Trial};

mod kills;
pub use kills::{kill_point, old_or_new_when_killed, ours_killed_after};

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

/// The external tools and libraries the tests may use: the entries of
/// `scripts/tools.txt`, whose packages `scripts/check-packages.sh` checks.
fn listed_tools() -> impl Iterator<Item = &'static str> {
    include_str!("../scripts/tools.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// A trial that needs the tools in `tools`: ignored when one is missing,
/// unless [`require_tools`], when it fails saying which. A tool that
/// `scripts/tools.txt` does not list fails the trial in any case, so that
/// the package check before the tests covers every tool they run.
pub fn trial(
    name: impl Into<String>,
    tools: &[&str],
    f: impl FnOnce() -> Result<(), Failed> + Send + 'static,
) -> Trial {
    let unlisted: Vec<String> = tools
        .iter()
        .filter(|t| !listed_tools().any(|l| l == **t))
        .map(|t| t.to_string())
        .collect();
    let missing: Vec<String> = tools
        .iter()
        .filter(|t| !have(t))
        .map(|t| t.to_string())
        .collect();
    let ignored = unlisted.is_empty() && !missing.is_empty() && !require_tools();
    Trial::test(name, move || {
        if !unlisted.is_empty() {
            return Err(format!(
                "tool(s) not listed in scripts/tools.txt: {}",
                unlisted.join(", ")
            )
            .into());
        }
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

/// Runs our binary with `args` in `cwd`; its standard output, parsed as
/// JSON (a failed run or bad JSON fails).
pub fn ours_json(args: &[&str], cwd: &Path) -> Result<serde_json::Value, Failed> {
    let r = run(&ours(), args, cwd).ok()?;
    serde_json::from_slice(&r.stdout).map_err(|e| format!("{args:?}: bad JSON: {e}").into())
}

/// The MD5 of `b` in lowercase hex, as `md5sum` prints it.
pub fn md5_hex(b: &[u8]) -> String {
    use md5::Digest;
    md5::Md5::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
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

/// Runs `prog` with `args` in `cwd`, `input` piped to its standard input.
pub fn run_stdin<S: AsRef<OsStr>>(prog: &Path, args: &[S], cwd: &Path, input: &[u8]) -> Run {
    use std::io::Write;
    let mut child = Command::new(prog)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", prog.display()));
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    // Written from a thread: the program may fill its output pipes first.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
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

/// What [`snapshot`] finds below `dir` by relative path; nothing when
/// `dir` does not exist (a command that failed before making it).
pub fn files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    if !dir.exists() {
        return std::collections::BTreeMap::new();
    }
    snapshot(dir).into_iter().collect()
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
    clean_failure_code(what, r, file, 1)
}

/// [`clean_failure`] with exit code `want` (2: the scanners' input error).
pub fn clean_failure_code(what: &str, r: &Run, file: &str, want: i32) -> Result<(), Failed> {
    if r.code != want {
        return Err(format!(
            "{what}: exit code {} (want {want}); stderr: {}",
            r.code, r.stderr
        )
        .into());
    }
    if r.stderr.contains("panicked") || r.stderr.contains("RUST_BACKTRACE") {
        return Err(format!("{what}: panicked: {}", r.stderr).into());
    }
    // One error line; under an LLVM tool's name, LLVM's line may be followed
    // by notes with what we know more.
    let lines: Vec<&str> = r.stderr.lines().collect();
    let notes = lines.iter().skip(1).all(|l| l.contains(": note: "));
    if lines.is_empty() || !notes || !lines[0].contains("error: ") {
        return Err(format!(
            "{what}: want one error line (and notes), got {}: {}",
            lines.len(),
            r.stderr
        )
        .into());
    }
    if !lines.iter().any(|l| l.contains(file)) {
        return Err(format!("{what}: no line names '{file}': {}", r.stderr).into());
    }
    Ok(())
}

/// What LLVM 22 printed for one command line, kept in
/// `linker-tests/transcripts/<tool>/<case>.txt` so the expected messages can
/// be read without LLVM installed: the exit code and standard error, with
/// the tool's path written as `TOOL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// Exit code.
    pub code: i32,
    /// Standard error, the tool's path replaced by `TOOL`.
    pub stderr: String,
}

impl Expected {
    fn render(&self) -> String {
        format!("exit {}\n--- stderr\n{}", self.code, self.stderr)
    }
}

/// Checks LLVM's live output for `case` against the committed transcript
/// (rewriting it instead when `BLESS=1`), so a stale transcript fails.
pub fn committed_transcript(tool: &str, case: &str, live: &Expected) -> Result<(), Failed> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("linker-tests/transcripts")
        .join(tool)
        .join(format!("{case}.txt"));
    let text = live.render();
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap())?;
        std::fs::write(&path, &text)?;
        return Ok(());
    }
    let committed = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (run the tests with BLESS=1 to write it)",
            path.display()
        )
    })?;
    same(
        &format!("LLVM's output and {}", path.display()),
        text,
        committed,
    )
}

/// Checks our standard error against LLVM's: the same lines in the same
/// order, except that after an `error:` line ours may add `TOOL: note:`
/// lines (what offload-kit knows more). With `note_names`, there must be a
/// note that contains it (the file LLVM leaves unnamed).
pub fn same_messages(ours: &str, llvm: &str, note_names: Option<&str>) -> Result<(), Failed> {
    let mut kept = Vec::new();
    let mut notes = Vec::new();
    let mut after_error = false;
    for line in ours.lines() {
        if line.starts_with("TOOL: note: ") {
            if !after_error {
                return Err(format!("a note that follows no error:\n{ours}").into());
            }
            notes.push(line);
            continue;
        }
        after_error = line.starts_with("TOOL: error: ");
        kept.push(line);
    }
    same("stderr without our notes", kept, llvm.lines().collect())?;
    if let Some(name) = note_names
        && !notes.iter().any(|n| n.contains(&format!("'{name}'")))
    {
        return Err(format!("no note names '{name}':\n{ours}").into());
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
    run_within_env(secs, prog, args, &[], cwd)
}

/// [`run_within`] with the variables `env` added to the environment.
pub fn run_within_env<S: AsRef<OsStr>>(
    secs: u64,
    prog: &Path,
    args: &[S],
    env: &[(&str, &str)],
    cwd: &Path,
) -> Result<Run, Failed> {
    use std::io::Read;
    let mut child = Command::new(prog)
        .args(args)
        .envs(env.iter().copied())
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

/// Runs our binary with `args` in `cwd` like [`run_within`] (killed and
/// failed after `secs` seconds), and returns what it did with its peak
/// resident memory in KiB, read by a Python parent from `getrusage` of
/// its children (the kernel's high-water mark of the process).
pub fn ours_peak<S: AsRef<OsStr>>(secs: u64, args: &[S], cwd: &Path) -> Result<(Run, u64), Failed> {
    peak_of(secs, &ours(), args, &[], cwd)
}

/// [`ours_peak`] for `prog` (our binary under an LLVM tool's name, say),
/// with the variables `env` added to its environment.
pub fn peak_of<S: AsRef<OsStr>>(
    secs: u64,
    prog: &Path,
    args: &[S],
    env: &[(&str, &str)],
    cwd: &Path,
) -> Result<(Run, u64), Failed> {
    const PARENT: &str = "import resource, subprocess, sys\n\
        r = subprocess.run(sys.argv[1:])\n\
        sys.stderr.write('\\npeak-rss-kib=%d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
        sys.exit(r.returncode if r.returncode >= 0 else 128 - r.returncode)\n";
    let mut a: Vec<std::ffi::OsString> = vec!["-c".into(), PARENT.into(), prog.into()];
    a.extend(args.iter().map(|s| s.as_ref().to_os_string()));
    let mut r = run_within_env(secs, Path::new("/usr/bin/python3"), &a, env, cwd)?;
    let at = r
        .stderr
        .rfind("\npeak-rss-kib=")
        .ok_or_else(|| format!("no peak RSS reported: {}", r.stderr))?;
    let kib = r.stderr[at + 14..]
        .trim()
        .parse::<u64>()
        .map_err(|e| format!("peak RSS: {e}"))?;
    r.stderr.truncate(at);
    Ok((r, kib))
}

/// Copies `member` of the zip `wheel` to `dir`/`name` (with Python's
/// zipfile: the trials that call it list `/usr/bin/python3`).
pub fn unzip(wheel: &Path, member: &str, dir: &Path, name: &str) -> Result<(), Failed> {
    let script = "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nopen(sys.argv[3], 'wb').write(z.read(sys.argv[2]))\n";
    run(
        Path::new("/usr/bin/python3"),
        &["-c", script, &wheel.to_string_lossy(), member, name],
        dir,
    )
    .ok()
    .map(|_| ())
}

/// Wine (Debian's `wine64`) running `load.exe` (linker-tests/windows/load.c,
/// built with clang and lld-link against an import library of kernel32
/// that llvm-dlltool makes), which loads a DLL and calls one export `int
/// f(int *out)`; its own prefix, in the directory it was made for.
pub struct Wine {
    dir: PathBuf,
}

impl Wine {
    /// Builds `load.exe` in `dir`.
    pub fn new(dir: &Path) -> Result<Wine, Failed> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("linker-tests/windows");
        let def = src.join("kernel32.def").to_string_lossy().into_owned();
        let args = ["-m", "i386:x86-64", "-d", &def, "-l", "kernel32.lib"];
        run(&llvm("llvm-dlltool"), &args, dir).ok()?;
        let c = src.join("load.c").to_string_lossy().into_owned();
        let args = [
            "-target",
            "x86_64-pc-windows-msvc",
            "-O1",
            "-ffreestanding",
            "-c",
            &c,
            "-o",
            "load.obj",
        ];
        run(&llvm("clang"), &args, dir).ok()?;
        let args = [
            "/nologo",
            "/entry:mainCRTStartup",
            "/subsystem:console",
            "/nodefaultlib",
            "load.obj",
            "kernel32.lib",
            "/out:load.exe",
        ];
        run(&llvm("lld-link"), &args, dir).ok()?;
        Ok(Wine {
            dir: dir.to_path_buf(),
        })
    }

    /// Loads `dll` (a path from the directory) under Wine and calls its
    /// `export`: what `load.exe` printed, "STATUS VALUE", after exit code 0.
    pub fn call(&self, dll: &str, export: &str) -> Result<String, Failed> {
        let prefix = self.dir.join("wine");
        let prefix = prefix.to_string_lossy();
        let env = [("WINEPREFIX", prefix.as_ref()), ("WINEDEBUG", "-all")];
        let r = run_within_env(
            180,
            Path::new("/usr/lib/wine/wine64"),
            &["load.exe", dll, export],
            &env,
            &self.dir,
        )?;
        same(
            &format!("wine load.exe {dll} {export}: exit code"),
            r.code,
            0,
        )?;
        Ok(String::from_utf8_lossy(&r.stdout).trim().to_string())
    }
}

/// What a run that exits 2 for input `file` says of it: exactly one line
/// on standard error names the file and holds `needle` (every exit 2 comes
/// with such a line), and the report on standard output says it at most
/// once. How many lines say it, or why not.
pub fn said_once(r: &Run, file: &str, needle: &str) -> Result<(), String> {
    let count = |text: &str| {
        text.lines()
            .filter(|l| l.contains(file) && l.contains(needle))
            .count()
    };
    let (out, err) = (count(&String::from_utf8_lossy(&r.stdout)), count(&r.stderr));
    if err == 1 && out <= 1 {
        return Ok(());
    }
    Err(format!(
        "{err} lines on stderr and {out} on stdout name {file} and {needle:?}:\n{}{}",
        String::from_utf8_lossy(&r.stdout),
        r.stderr
    ))
}

/// The directory `build` makes, made once per run: every call gets the
/// first call's outcome (a build that failed fails each test that needs
/// it, with its message).
pub fn built_once(
    cell: &'static OnceLock<Result<PathBuf, String>>,
    build: impl FnOnce() -> Result<PathBuf, String>,
) -> Result<&'static Path, Failed> {
    cell.get_or_init(build)
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(|e| e.clone().into())
}

/// A fresh temporary directory, kept until the process ends, that `fill`
/// fills: for [`built_once`] (`built_once(&DIR, || kept(build))`).
pub fn kept(fill: fn(&Path) -> Result<(), Failed>) -> Result<PathBuf, String> {
    let dir = tempdir().keep();
    fill(&dir).map_err(|e| e.message().map_or_else(String::new, str::to_string))?;
    Ok(dir)
}

/// The next number of a test's pseudo-random sequence (xorshift64), kept
/// in `x` (never 0).
pub fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// The MD5 of every file in `dir`, sorted: what two tools extracted,
/// compared whatever they named the files.
pub fn md5s_in(dir: &Path) -> Result<Vec<String>, Failed> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir)? {
        v.push(md5_hex(&std::fs::read(e?.path())?));
    }
    v.sort();
    Ok(v)
}

/// What one side of [`run_both`] did, in its own directory.
#[derive(Debug)]
pub struct Outcome {
    /// Exit code (-1 if killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error, comparable across the sides (see [`run_both`]).
    pub stderr: String,
    /// The directory it ran in.
    pub dir: PathBuf,
}

/// Runs LLVM's `tool` and ours under its name with `args`, each in its
/// own directory, `work/TAG-llvm` and `work/TAG-ours`, that `prepare`
/// fills first and whose environment additions it returns. Standard
/// error is made comparable: the program's path and the tool's name are
/// written `TOOL`, and the (de)compression speeds of `-verbose`, which
/// depend on timing, `speed: * MB/s`. Returns (LLVM's, ours).
pub fn run_both<S: AsRef<OsStr>>(
    tool: &str,
    args: &[S],
    work: &Path,
    tag: &str,
    prepare: impl Fn(&Path) -> Result<Vec<(String, String)>, Failed>,
) -> Result<(Outcome, Outcome), Failed> {
    let mut sides = Vec::new();
    for (who, prog) in [("llvm", llvm(tool)), ("ours", ours_as(tool))] {
        let dir = work.join(format!("{tag}-{who}"));
        std::fs::create_dir_all(&dir)?;
        let env = prepare(&dir)?;
        let out = Command::new(&prog)
            .args(args)
            .envs(env)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", prog.display()));
        let stderr = String::from_utf8_lossy(&out.stderr)
            .replace(&prog.display().to_string(), "TOOL")
            .replace(tool, "TOOL");
        sides.push(Outcome {
            code: out.status.code().unwrap_or(-1),
            stdout: out.stdout,
            stderr: mask_speeds(&stderr),
            dir,
        });
    }
    let ours = sides.pop().ok_or("no run")?;
    let llvm = sides.pop().ok_or("no run")?;
    Ok((llvm, ours))
}

/// `s` with the figure of each line ending `speed: … MB/s` masked.
fn mask_speeds(s: &str) -> String {
    s.split_inclusive('\n')
        .map(|l| match l.split_once("speed: ") {
            Some((head, _)) if l.trim_end().ends_with("MB/s") => {
                format!("{head}speed: * MB/s{}", &l[l.trim_end().len()..])
            }
            _ => l.to_string(),
        })
        .collect()
}

/// How ours may differ from LLVM's standard error in [`same_outcome`].
#[derive(Clone, Copy)]
pub enum Messages<'a> {
    /// Line for line the same.
    Same,
    /// The same but for our notes after an error ([`same_messages`]),
    /// one naming the file given when LLVM's line leaves it unnamed.
    Notes(Option<&'a str>),
}

/// Fails unless ours exited as LLVM did, printed the same on standard
/// error (as `messages` says) and, with `stdout`, on standard output, and
/// left the same files with the same bytes in its directory.
pub fn same_outcome(
    what: &str,
    llvm: &Outcome,
    ours: &Outcome,
    messages: Messages,
    stdout: bool,
) -> Result<(), Failed> {
    same(&format!("{what}: exit code"), ours.code, llvm.code)?;
    match messages {
        Messages::Same => same(&format!("{what}: stderr"), &ours.stderr, &llvm.stderr)?,
        Messages::Notes(names) => same_messages(&ours.stderr, &llvm.stderr, names)
            .map_err(|e| format!("{what}: {}", e.message().unwrap_or_default()))?,
    }
    if stdout && ours.stdout != llvm.stdout {
        return Err(format!(
            "{what}: stdout differ:\n  ours: {:?}\n  llvm: {:?}",
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&llvm.stdout)
        )
        .into());
    }
    let (a, b) = (snapshot(&ours.dir), snapshot(&llvm.dir));
    let names = |s: &[(String, Vec<u8>)]| s.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    same(&format!("{what}: files"), names(&a), names(&b))?;
    for ((name, da), (_, db)) in a.iter().zip(&b) {
        same_bytes(&format!("{what}: {name}"), da, db)?;
    }
    Ok(())
}

/// [`same_outcome`] for a command line with a transcript: LLVM's exit
/// code and standard error must also be the committed ones
/// ([`committed_transcript`]), `linker-tests/transcripts/TOOL/CASE.txt`.
pub fn same_transcript(
    tool: &str,
    case: &str,
    llvm: &Outcome,
    ours: &Outcome,
    messages: Messages,
    stdout: bool,
) -> Result<(), Failed> {
    let live = Expected {
        code: llvm.code,
        stderr: llvm.stderr.clone(),
    };
    committed_transcript(tool, case, &live)?;
    same_outcome(case, llvm, ours, messages, stdout)
}

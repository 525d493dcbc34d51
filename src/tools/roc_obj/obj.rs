//! `roc-obj`'s run: extracts every code object of each FILE (those whose
//! entry ID matches the `-t` expression) into `OUTDIR/<name>:<bundle
//! number>.<entry ID>`, runs the COMMANDs on each (standard input the
//! code object, standard output to `<code object>SUFFIX`, written through
//! `files::Output`), and with `-d` disassembles each into `<code
//! object>.s` with `llvm-objdump -d -`; what the script prints on the way
//! said to the caller, and the exit code given.
//!
//! As the bash script: code objects of no bytes (the host's) are not
//! kept; the exit code is 1 after a run without `-d` (the script's last
//! test fails), else that of the last `llvm-objdump`. `llvm-objdump` is
//! looked for where the script looks (next to this program, in
//! `HIP_CLANG_PATH` or `../../llvm/bin` from here, on `PATH`), and then in
//! LLVM 22's `/usr/lib/llvm-22/bin`. The listing and extraction are ours,
//! in-process (the script runs `roc-obj-ls` and `roc-obj-extract`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::ere::Regex;
use super::extract::extract_uri;
use super::list::{Listed, list_file};
use super::out;
use super::said::{Said, Say};
use crate::files::{Output, strerror};

/// The script's options, as its `case` reads getopt's output.
#[derive(Debug, Default)]
pub(crate) struct Args {
    /// `-t`: the extended regular expression entry IDs must match.
    pub target: String,
    /// `-o`: where the code objects go (`""`: the current folder).
    pub outdir: String,
    /// `-I`/`-i`: the string replaced in the commands' arguments.
    pub replace: String,
    /// `-d`.
    pub disassemble: bool,
}

/// A line on standard error.
fn err(say: &mut Say<'_>, line: String) {
    say(Said::err(line));
}

/// The run: the FILEs and commands after the options in `rest`. Gives the
/// exit code.
pub(crate) fn run(argv0: &str, args: &Args, rest: &[String], say: &mut Say<'_>) -> u8 {
    let objdump = if args.disassemble {
        match find_objdump() {
            Ok(p) => Some(p),
            Err(searched) => {
                err(
                    say,
                    format!("error: could not find llvm-objdump in {searched} or PATH"),
                );
                return 1;
            }
        }
    } else {
        None
    };
    match main_part(argv0, args, rest, objdump.as_deref(), say) {
        Ok(code) | Err(code) => code,
    }
}

/// Where the script looks for `llvm-objdump`, then LLVM 22's folder. The
/// error lists the script's folders, as its message does.
fn find_objdump() -> Result<PathBuf, String> {
    let base = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::canonicalize(p).ok())
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let second = std::env::var_os("HIP_CLANG_PATH")
        .map_or_else(|| base.join("../../llvm/bin"), PathBuf::from);
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| !m.is_dir() && m.permissions().mode() & 0o111 != 0)
    };
    let found = [base.clone(), second.clone()]
        .into_iter()
        .map(|d| d.join("llvm-objdump"))
        .find(|p| executable(p))
        .or_else(|| super::perl::which("llvm-objdump"))
        .or_else(|| {
            Some(PathBuf::from("/usr/lib/llvm-22/bin/llvm-objdump")).filter(|p| executable(p))
        });
    found.ok_or_else(|| format!("{} {}", base.display(), second.display()))
}

/// The script's `main`: extraction, the commands, the disassembly. `Err`
/// is an early end (its code).
fn main_part(
    argv0: &str,
    opts: &Args,
    rest: &[String],
    objdump: Option<&Path>,
    say: &mut Say<'_>,
) -> Result<u8, u8> {
    if !opts.outdir.is_empty() {
        std::fs::create_dir_all(&opts.outdir).map_err(|e| {
            err(
                say,
                format!(
                    "mkdir: cannot create directory '{}': {}",
                    opts.outdir,
                    strerror(&e)
                ),
            );
            1
        })?;
    }
    // A bad expression: awk's complaint for each file, and nothing kept.
    let filter = match Regex::new(&opts.target) {
        Ok(r) => Some(r),
        Err(why) => {
            for _ in rest.iter().take_while(|a| *a != ":") {
                err(
                    say,
                    format!(
                        "awk: line 1: regular expression compile failed ({why})\n{}",
                        opts.target
                    ),
                );
            }
            None
        }
    };
    let split = rest.iter().position(|a| a == ":").unwrap_or(rest.len());
    let mut inputs = Vec::new();
    let mut counter = 1;
    let mut failed = false;
    for file in rest[..split].iter().filter(|_| filter.is_some()) {
        failed |= !extract(
            file,
            opts,
            filter.as_ref(),
            (&mut counter, &mut inputs),
            say,
        );
    }
    if inputs.is_empty() {
        err(say, "error: no executables specified".into());
        return Err(1);
    }
    let mut commands = rest.get(split + 1..).unwrap_or_default();
    while let [suffix, rest @ ..] = commands {
        let end = rest.iter().position(|a| a == ";").unwrap_or(rest.len());
        let (command, args) = rest[..end]
            .split_first()
            .map_or(("", &[][..]), |(c, a)| (c.as_str(), a));
        commands = rest.get(end + 1..).unwrap_or_default();
        for input in &inputs {
            let code = run_command(argv0, (suffix, command, args), input, &opts.replace, say);
            if code != 0 {
                return Err(code);
            }
        }
    }
    let Some(objdump) = objdump else {
        return Ok(1);
    };
    let program = objdump.display().to_string();
    let mut code = 0;
    for input in &inputs {
        let args = ["-d".to_string(), "-".to_string()];
        code = run_command(argv0, (".s", &program, &args), input, &opts.replace, say);
    }
    // A code object not written is a failure, whatever the last
    // disassembly gave (the script exits 0 then).
    if failed && code == 0 {
        code = 1;
    }
    Ok(code)
}

/// The script's `extract`: the code objects of `file` whose entry ID
/// `filter` matches, each written to its file (kept when not empty, its
/// path added to `inputs`). The file's name is `FILE:<bundle>.<ID>` made
/// one path component ([`out::file_name`]), written only inside the
/// output folder ([`out::write_in`]); a code object of no bytes is not
/// written (the script writes it, then deletes it). Whether all went well.
fn extract(
    file: &str,
    opts: &Args,
    filter: Option<&Regex>,
    (counter, inputs): (&mut u64, &mut Vec<PathBuf>),
    say: &mut Say<'_>,
) -> bool {
    let mut listed: Vec<Listed> = Vec::new();
    let mut each = |bundle: &[Listed], _, _| listed.extend_from_slice(bundle);
    let result = list_file(file, counter, &mut each, say);
    if let Err(die) = result {
        say(Said::Err(die.message));
    }
    let prefix = super::perl::basename(file);
    for l in listed {
        if filter.is_some_and(|re| !re.is_match(&l.id)) {
            continue;
        }
        let mut name = format!("{prefix}:{}.", l.bundle).into_bytes();
        name.extend_from_slice(&l.id);
        let name = out::file_name(&name);
        // As the script joins them (`OUTDIR/NAME`).
        let output = match opts.outdir.as_str() {
            "" => PathBuf::from(&name),
            dir => {
                let mut p = std::ffi::OsString::from(format!("{dir}/"));
                p.push(&name);
                PathBuf::from(p)
            }
        };
        let (bytes, ok) = extract_uri(&l.uri, say);
        if !ok {
            return false;
        }
        if bytes.is_empty() {
            continue;
        }
        if let Err(e) = out::write_in(&opts.outdir, &name, &bytes) {
            err(
                say,
                format!("roc-obj: {}: {}", output.display(), strerror(&e)),
            );
            return false;
        }
        inputs.push(output);
    }
    true
}

/// Runs `command args` on `input` as the script's `run_command`; gives its
/// exit code (127 when it cannot be started). Its standard output goes to
/// `<input>SUFFIX`, written unnamed and given its name when the command
/// is done (whatever its exit code, as the script's redirection leaves
/// it), to this program's standard output (`-`), or nowhere (`!`).
fn run_command(
    argv0: &str,
    (suffix, command, args): (&str, &str, &[String]),
    input: &Path,
    replace: &str,
    say: &mut Say<'_>,
) -> u8 {
    // `-`: bash's `>/dev/stdout`, which empties a file there, as the
    // script's redirection does.
    let mut output = None;
    let stdout = match suffix {
        "-" => std::fs::File::create("/dev/stdout").map_or_else(|_| Stdio::inherit(), Stdio::from),
        "!" => Stdio::null(),
        _ => {
            let mut path = input.as_os_str().to_os_string();
            path.push(suffix);
            match suffix_output(Path::new(&path)) {
                Ok((out, file)) => {
                    output = out;
                    Stdio::from(file)
                }
                Err(e) => {
                    let path = Path::new(&path).display();
                    err(say, format!("{argv0}: {path}: {}", strerror(&e)));
                    return 1;
                }
            }
        }
    };
    let code = spawn(argv0, (command, args), input, replace, stdout, say);
    if let Some(out) = output
        && let Err(e) = out.commit()
    {
        let path = input.display();
        err(say, format!("{argv0}: {path}{suffix}: {}", strerror(&e)));
        return 1;
    }
    code
}

/// Where a command's standard output goes for `<input>SUFFIX`: a file
/// written through [`Output`] (and the descriptor the command writes), or,
/// for a device or FIFO there, that opened in place.
fn suffix_output(path: &Path) -> std::io::Result<(Option<Output>, std::fs::File)> {
    let mut out = Output::create(path)?;
    out.flush()?;
    match out.temp_file() {
        Some(f) => {
            let file = f.try_clone()?;
            Ok((Some(out), file))
        }
        None => {
            drop(out);
            Ok((None, std::fs::File::create(path)?))
        }
    }
}

/// Starts `command args` (each `replace` in them replaced by the input's
/// name) with `input` as standard input; its exit code.
fn spawn(
    argv0: &str,
    (command, args): (&str, &[String]),
    input: &Path,
    replace: &str,
    stdout: Stdio,
    say: &mut Say<'_>,
) -> u8 {
    let stdin = match std::fs::File::open(input) {
        Ok(f) => Stdio::from(f),
        Err(e) => {
            err(
                say,
                format!("{argv0}: {}: {}", input.display(), strerror(&e)),
            );
            return 1;
        }
    };
    let shown = input.to_string_lossy();
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            if replace.is_empty() {
                a.clone()
            } else {
                a.replace(replace, &shown)
            }
        })
        .collect();
    match Command::new(command)
        .args(&args)
        .stdin(stdin)
        .stdout(stdout)
        .status()
    {
        Ok(status) => status
            .code()
            .map_or(1, |c| u8::try_from(c & 0xff).unwrap_or(1)),
        Err(_) => {
            // bash's words, with the script's line that runs the command.
            err(
                say,
                format!("{argv0}: line 205: {command}: command not found"),
            );
            127
        }
    }
}

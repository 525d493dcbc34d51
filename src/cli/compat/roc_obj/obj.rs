//! `roc-obj [-h] [-t REGEXP] [-o OUTDIR] [-I STRING|-i] [-d] FILE...
//! [: [SUFFIX COMMAND [ARGS...] ;]...]`: extracts every code object of each
//! FILE (those whose entry ID matches REGEXP) into `OUTDIR/<name>:<bundle
//! number>.<entry ID>`, runs the COMMANDs on each (standard input the code
//! object, standard output to `<code object>SUFFIX`; `-` leaves it, `!`
//! drops it), and with `-d` disassembles each into `<code object>.s` with
//! `llvm-objdump -d -`.
//!
//! As the bash script: GNU getopt's option syntax (long options, unique
//! prefixes) and messages; code objects of no bytes (the host's) are not
//! kept; the exit code is 1 after a run without `-d` (the script's last
//! test fails), else that of the last `llvm-objdump`. `llvm-objdump` is
//! looked for where the script looks (next to this program, in
//! `HIP_CLANG_PATH` or `../../llvm/bin` from here, on `PATH`), and then in
//! LLVM 22's `/usr/lib/llvm-22/bin`. The listing and extraction are ours,
//! in-process (the script runs `roc-obj-ls` and `roc-obj-extract`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use super::ere::Regex;
use super::extract::extract_uri;
use super::list::{Listed, list_file};
use super::out;
use crate::cli::io::strerror;

/// The script's options, as its `case` reads getopt's output.
#[derive(Default)]
struct Opts {
    target: String,
    outdir: String,
    replace: String,
    disassemble: bool,
}

/// Long options: name, whether it takes a value.
const LONG: &[(&str, bool)] = &[
    ("help", false),
    ("target-id", true),
    ("outdir", true),
    ("replace", true),
    ("replace-default", false),
    ("disassemble", false),
];

/// Short options: letter, whether it takes a value.
const SHORT: &[(char, bool)] = &[
    ('h', false),
    ('t', true),
    ('o', true),
    ('I', true),
    ('i', false),
    ('d', false),
];

pub(super) fn main(argv0: &str, args: &[String]) -> ExitCode {
    let (words, rest) = match getopt(args) {
        Ok(parsed) => parsed,
        Err(()) => return ExitCode::FAILURE,
    };
    let mut opts = Opts::default();
    let mut it = words.iter();
    while let Some(w) = it.next() {
        let mut value = || it.next().cloned().unwrap_or_default();
        match w.as_str() {
            "-h" | "--help" => {
                super::perl::write_stdout(help(argv0).as_bytes());
                return ExitCode::SUCCESS;
            }
            "-t" | "--target-id" => opts.target = value(),
            "-o" | "--outdir" => opts.outdir = value(),
            "-I" | "--replace-string" => opts.replace = value(),
            "-i" | "--replace" => opts.replace = "{}".to_string(),
            "-d" | "--disassemble" => opts.disassemble = true,
            _ => {
                eprint!("{}", help(argv0));
                return ExitCode::FAILURE;
            }
        }
    }
    let objdump = if opts.disassemble {
        match find_objdump() {
            Ok(p) => Some(p),
            Err(searched) => {
                eprintln!("error: could not find llvm-objdump in {searched} or PATH");
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    match run(argv0, &opts, &rest, objdump.as_deref()) {
        Ok(code) | Err(code) => code,
    }
}

fn help(argv0: &str) -> String {
    format!(
        "Usage: {argv0} [-h] [-t REGEXP] [-o OUTDIR] [-I REPLACE-STRING|-i] [-d]\n\
         \x20              FILE... [: [SUFFIX COMMAND [ARGS...] ;]...]\n\
         \n\
         Extracts the code objects in each FILE (offload-kit, a drop-in for hipcc\n\
         5.2.3's roc-obj; compressed bundles too) into OUTDIR (made if missing; the\n\
         current folder by default), named FILE:<bundle number>.<entry ID>, and runs\n\
         each COMMAND on each of them: standard input the code object, standard\n\
         output into <code object>SUFFIX (\"-\": left alone, \"!\": dropped).\n\
         \n\
         \x20 -h, --help            this help\n\
         \x20 -t, --target-id RE    only entry IDs that the extended regular expression RE matches\n\
         \x20 -o, --outdir DIR      where the code objects go\n\
         \x20 -I REPLACE-STRING     replace REPLACE-STRING in ARGS with the code object's name\n\
         \x20 -i, --replace         as -I{{}}\n\
         \x20 -d, --disassemble     as \": .s llvm-objdump -d - ;\"\n"
    )
}

/// GNU getopt's reading of `args` for the script's options: the options
/// (each value its own word) and the arguments after them. Errors are
/// printed as getopt prints them.
fn getopt(args: &[String]) -> Result<(Vec<String>, Vec<String>), ()> {
    let mut words = Vec::new();
    let mut failed = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        if arg == "--" {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let exact = LONG.iter().find(|(n, _)| *n == name);
            let matching: Vec<_> = LONG.iter().filter(|(n, _)| n.starts_with(name)).collect();
            let found = match (exact, matching.as_slice()) {
                (Some(e), _) => e,
                (None, [one]) => *one,
                (None, []) => {
                    eprintln!("roc-obj: unrecognized option '{arg}'");
                    failed = true;
                    continue;
                }
                (None, many) => {
                    let names: Vec<String> =
                        many.iter().map(|(n, _)| format!(" '--{n}'")).collect();
                    eprintln!(
                        "roc-obj: option '--{name}' is ambiguous; possibilities:{}",
                        names.concat()
                    );
                    failed = true;
                    continue;
                }
            };
            let (full, takes) = *found;
            match (takes, inline) {
                (false, Some(_)) => {
                    eprintln!("roc-obj: option '--{full}' doesn't allow an argument");
                    failed = true;
                }
                (false, None) => words.push(format!("--{full}")),
                (true, Some(v)) => words.extend([format!("--{full}"), v.to_string()]),
                (true, None) => match args.get(i) {
                    Some(v) => {
                        words.extend([format!("--{full}"), v.clone()]);
                        i += 1;
                    }
                    None => {
                        eprintln!("roc-obj: option '--{full}' requires an argument");
                        failed = true;
                    }
                },
            }
            continue;
        }
        let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) else {
            i -= 1;
            break;
        };
        for (at, c) in cluster.char_indices() {
            match SHORT.iter().find(|(s, _)| *s == c) {
                None => {
                    eprintln!("roc-obj: invalid option -- '{c}'");
                    failed = true;
                }
                Some((_, false)) => words.push(format!("-{c}")),
                Some((_, true)) => {
                    let glued = &cluster[at + c.len_utf8()..];
                    if !glued.is_empty() {
                        words.extend([format!("-{c}"), glued.to_string()]);
                    } else if let Some(v) = args.get(i) {
                        words.extend([format!("-{c}"), v.clone()]);
                        i += 1;
                    } else {
                        eprintln!("roc-obj: option requires an argument -- '{c}'");
                        failed = true;
                    }
                    break;
                }
            }
        }
    }
    if failed {
        return Err(());
    }
    Ok((words, args.get(i..).unwrap_or_default().to_vec()))
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
fn run(
    argv0: &str,
    opts: &Opts,
    rest: &[String],
    objdump: Option<&Path>,
) -> Result<ExitCode, ExitCode> {
    if !opts.outdir.is_empty() {
        std::fs::create_dir_all(&opts.outdir).map_err(|e| {
            eprintln!(
                "mkdir: cannot create directory '{}': {}",
                opts.outdir,
                strerror(&e)
            );
            ExitCode::FAILURE
        })?;
    }
    // A bad expression: awk's complaint for each file, and nothing kept.
    let filter = match Regex::new(&opts.target) {
        Ok(r) => Some(r),
        Err(why) => {
            for _ in rest.iter().take_while(|a| *a != ":") {
                eprintln!(
                    "awk: line 1: regular expression compile failed ({why})\n{}",
                    opts.target
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
        failed |= !extract(file, opts, filter.as_ref(), &mut counter, &mut inputs);
    }
    if inputs.is_empty() {
        eprintln!("error: no executables specified");
        return Err(ExitCode::FAILURE);
    }
    let mut commands = rest.get(split + 1..).unwrap_or_default();
    while let [suffix, rest @ ..] = commands {
        let end = rest.iter().position(|a| a == ";").unwrap_or(rest.len());
        let (command, args) = rest[..end]
            .split_first()
            .map_or(("", &[][..]), |(c, a)| (c.as_str(), a));
        commands = rest.get(end + 1..).unwrap_or_default();
        for input in &inputs {
            let code = run_command(argv0, suffix, command, args, input, &opts.replace);
            if code != 0 {
                return Err(ExitCode::from(code));
            }
        }
    }
    let Some(objdump) = objdump else {
        return Ok(ExitCode::FAILURE);
    };
    let program = objdump.display().to_string();
    let mut code = 0;
    for input in &inputs {
        let args = ["-d".to_string(), "-".to_string()];
        code = run_command(argv0, ".s", &program, &args, input, &opts.replace);
    }
    // A code object not written is a failure, whatever the last
    // disassembly gave (the script exits 0 then).
    if failed && code == 0 {
        code = 1;
    }
    Ok(ExitCode::from(code))
}

/// The script's `extract`: the code objects of `file` whose entry ID
/// `filter` matches, each written to its file (kept when not empty, its
/// path added to `inputs`). The file's name is `FILE:<bundle>.<ID>` made
/// one path component ([`out::file_name`]), written only inside the
/// output folder ([`out::write_in`]); a code object of no bytes is not
/// written (the script writes it, then deletes it). Whether all went well.
fn extract(
    file: &str,
    opts: &Opts,
    filter: Option<&Regex>,
    counter: &mut u64,
    inputs: &mut Vec<PathBuf>,
) -> bool {
    let mut listed: Vec<Listed> = Vec::new();
    let result = list_file(file, counter, &mut |bundle, _, _| {
        listed.extend_from_slice(bundle);
    });
    if let Err(die) = result {
        eprint!("{}", die.message);
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
        let (bytes, ok) = extract_uri(&l.uri);
        if !ok {
            return false;
        }
        if bytes.is_empty() {
            continue;
        }
        if let Err(e) = out::write_in(&opts.outdir, &name, &bytes) {
            eprintln!("roc-obj: {}: {}", output.display(), strerror(&e));
            return false;
        }
        inputs.push(output);
    }
    true
}

/// Runs `command args` on `input` as the script's `run_command`; gives its
/// exit code (127 when it cannot be started).
fn run_command(
    argv0: &str,
    suffix: &str,
    command: &str,
    args: &[String],
    input: &Path,
    replace: &str,
) -> u8 {
    // `-`: bash's `>/dev/stdout`, which empties a file there, as the
    // script's redirection does.
    let stdout = match suffix {
        "-" => std::fs::File::create("/dev/stdout").map_or_else(|_| Stdio::inherit(), Stdio::from),
        "!" => Stdio::null(),
        _ => {
            let mut path = input.as_os_str().to_os_string();
            path.push(suffix);
            match std::fs::File::create(&path) {
                Ok(f) => Stdio::from(f),
                Err(e) => {
                    let path = Path::new(&path).display();
                    eprintln!("{argv0}: {path}: {}", strerror(&e));
                    return 1;
                }
            }
        }
    };
    let stdin = match std::fs::File::open(input) {
        Ok(f) => Stdio::from(f),
        Err(e) => {
            eprintln!("{argv0}: {}: {}", input.display(), strerror(&e));
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
            eprintln!("{argv0}: line 205: {command}: command not found");
            127
        }
    }
}

//! `roc-obj [-h] [-t REGEXP] [-o OUTDIR] [-I STRING|-i] [-d] FILE...
//! [: [SUFFIX COMMAND [ARGS...] ;]...]`: extracts every code object of each
//! FILE (those whose entry ID matches REGEXP) into `OUTDIR/<name>:<bundle
//! number>.<entry ID>`, runs the COMMANDs on each (standard input the code
//! object, standard output to `<code object>SUFFIX`; `-` leaves it, `!`
//! drops it), and with `-d` disassembles each into `<code object>.s` with
//! `llvm-objdump -d -`.
//!
//! Here: GNU getopt's option syntax (long options, unique prefixes) and
//! messages, as the bash script reads its options; the run is the
//! library's `crate::tools::roc_obj::obj`.

use std::process::ExitCode;

use crate::tools::roc_obj::obj::{self, Args};

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
    let mut opts = Args::default();
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
    ExitCode::from(obj::run(argv0, &opts, &rest, &mut super::perl::say))
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

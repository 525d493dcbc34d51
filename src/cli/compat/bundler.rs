//! `clang-offload-bundler` (LLVM 22): bundle, unbundle and list, with its
//! option syntax and its messages.
//!
//! Here: the options, the help text, the numeric options checked as LLVM's
//! `cl` parses them, where llvm-objcopy is looked for, and the printing of
//! what the job says and of `-list`'s IDs. The work, with LLVM's checks in
//! its order and its differences from LLVM 22, is the library's
//! `crate::tools::bundler::job`.

use std::io::Write;
use std::process::ExitCode;

use super::{Fail, prog_name};
use crate::cli::io::strerror;
use crate::cli::llvm_cl::{OptSpec, Parsed};
use crate::tools::bundler::job::{self, Args, Failure, Note};

const SPECS: &[OptSpec] = &[
    OptSpec::value("type"),
    OptSpec::value("targets"),
    OptSpec::value("input"),
    OptSpec::value("output"),
    OptSpec::value("inputs"),
    OptSpec::value("outputs"),
    OptSpec::flag("unbundle"),
    OptSpec::flag("list"),
    OptSpec::flag("allow-missing-bundles"),
    OptSpec::value("bundle-align"),
    OptSpec::flag("check-input-archive"),
    OptSpec::flag("hip-openmp-compatible"),
    OptSpec::flag("compress"),
    OptSpec::value("compression-level"),
    OptSpec::flag("verbose"),
    OptSpec::flag("###"),
    OptSpec::flag("help"),
    OptSpec::flag("help-list"),
    OptSpec::hidden_flag("help-hidden"),
    OptSpec::hidden_flag("help-list-hidden"),
    OptSpec::flag("version"),
];

fn help_text(prog: &str) -> String {
    format!(
        "OVERVIEW: Bundle files made for several offload targets into one file, or take\n\
         them apart again (offload-kit, a drop-in for clang-offload-bundler {ver}).\n\
         \n\
         USAGE: {prog} [options]\n\
         \n\
         OPTIONS:\n  \
         --###                   - Print the llvm-objcopy commands LLVM would run instead of writing objects\n  \
         --allow-missing-bundles - When unbundling, create empty outputs for targets not found\n  \
         --bundle-align=<uint>   - Alignment of each entry's data in binary bundles\n  \
         --check-input-archive   - Check that an input archive follows the target ID rules\n  \
         --compress              - Compress the bundle (CCOB)\n  \
         --compression-level=<n> - Compression level\n  \
         --hip-openmp-compatible - Let hip and hipv4 entries serve openmp targets and back\n  \
         --input=<string>        - Input file (repeat for several)\n  \
         --inputs=<string>       - Comma-separated input files (deprecated)\n  \
         --list                  - List the entry IDs of a bundle\n  \
         --output=<string>       - Output file (repeat for several)\n  \
         --outputs=<string>      - Comma-separated output files (deprecated)\n  \
         --targets=<string>      - Comma-separated <offload kind>-<target triple>[-<target id>]\n  \
         --type=<string>         - File type: i ii cui hipi d ll bc s o a gch ast\n  \
         --unbundle              - Unbundle into one output per target\n  \
         --verbose               - Print compression details\n  \
         --help                  - Show this help\n  \
         --version               - Show the version\n",
        ver = super::LLVM_VERSION
    )
}

/// Runs the tool with `args` (argv without argv[0]).
pub fn main(argv0: &str, args: &[String]) -> ExitCode {
    let prog = prog_name(argv0);
    let cl = super::Cl {
        tool: "clang-offload-bundler",
        specs: SPECS,
        max_positionals: 0,
        required: &["type"],
    };
    let parsed = match super::parse_prologue(argv0, args, &cl, help_text) {
        Ok(p) => p,
        Err(code) => return code,
    };
    // Numeric options are checked as cl parses them (messages without "error:").
    let align = match parsed.last("bundle-align") {
        None => 1,
        Some(v) => match parse_uint(v) {
            Some(n) => n,
            None => {
                eprintln!(
                    "{prog}: for the --bundle-align option: '{v}' value invalid for uint argument!"
                );
                return ExitCode::FAILURE;
            }
        },
    };
    let level = match parsed.last("compression-level") {
        None => None,
        Some(v) => match v.parse::<i32>() {
            Ok(n) => Some(n),
            Err(_) => {
                eprintln!(
                    "{prog}: for the --compression-level option: '{v}' value invalid for integer argument!"
                );
                return ExitCode::FAILURE;
            }
        },
    };
    // LLVM looks for llvm-objcopy before any other check; offload-kit only
    // needs it to print its command lines.
    let objcopy = if parsed.flag("###") {
        match job::find_objcopy(argv0, std::env::var_os("PATH").as_deref()) {
            Some(p) => Some(p),
            None => {
                eprintln!("{argv0}: error: unable to find 'llvm-objcopy' in path");
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    let mut say = |n: Note| match n {
        Note::Warning(w) => eprintln!("{argv0}: warning: {w}"),
        Note::Text(t) => eprint!("{t}"),
    };
    let args = args_of(&parsed, align, level);
    let done = job::check(&args, &|k| std::env::var_os(k), &mut say).and_then(|mut j| {
        j.objcopy = objcopy;
        job::run(&j, &mut say)
    });
    match done {
        Ok(ids) => {
            print_ids(&ids);
            ExitCode::SUCCESS
        }
        Err(f) => fail(f).report(argv0),
    }
}

/// The command line as the library's job takes it.
fn args_of(p: &Parsed, align: u64, level: Option<i32>) -> Args {
    let all = |n: &str| p.all(n).map(str::to_string).collect();
    let given = |n: &str| p.last(n).map(|v| v == "true");
    Args {
        file_type: p.last("type").unwrap_or_default().to_string(),
        targets: all("targets"),
        input: all("input"),
        inputs: all("inputs"),
        output: all("output"),
        outputs: all("outputs"),
        unbundle: p.flag("unbundle"),
        list: p.flag("list"),
        allow_missing: p.flag("allow-missing-bundles"),
        hip_openmp: p.flag("hip-openmp-compatible"),
        check_archive: p.flag("check-input-archive"),
        compress: given("compress"),
        verbose: given("verbose"),
        align,
        level,
    }
}

/// A failed job as the drop-ins print it.
fn fail(f: Failure) -> Fail {
    match f {
        Failure::Said { llvm, note } => Fail { llvm, note },
        Failure::File { path, error } => Fail::new(format!("'{path}': {}", strerror(&error))),
    }
}

/// Prints `-list`'s IDs.
fn print_ids(ids: &[Vec<u8>]) {
    let mut out = crate::cli::io::Report::stdout();
    // LLVM's bytes, raw, for scripts and logs; on a terminal, an ID from
    // the file could send it commands, so it is shown escaped there.
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
    for id in ids {
        if terminal {
            let _ = crate::cli::io::print_line(&mut out, &String::from_utf8_lossy(id));
        } else {
            let _ = out.write_all(id);
            let _ = out.write_all(b"\n");
        }
    }
    let _ = out.flush();
}

/// LLVM's `uint` parser: decimal, `0x` hex or leading-`0` octal, 32 bits.
fn parse_uint(v: &str) -> Option<u64> {
    let n = if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()?
    } else if v.len() > 1 && v.starts_with('0') {
        u32::from_str_radix(&v[1..], 8).ok()?
    } else {
        v.parse::<u32>().ok()?
    };
    Some(u64::from(n))
}

//! `clang-offload-bundler` (LLVM 22): bundle, unbundle and list, with its
//! option syntax, its checks in its order, and its messages.
//!
//! Differences, all where LLVM crashes, writes wrong bytes or is vague: a
//! truncated or inconsistent bundle, `-bundle-align=0`, a text entry without
//! its end marker, and two targets that normalize to the same ID are errors
//! naming the file (after LLVM's line for the case, where LLVM has one).
//!
//! `-###` prints the `llvm-objcopy` command lines LLVM 22 prints for object
//! bundles, found where LLVM looks (beside the bundler as invoked, then on
//! `PATH`; `unable to find 'llvm-objcopy' in path` when absent, checked
//! first as LLVM does), and leaves what LLVM leaves: an empty output when
//! bundling, an empty host output when unbundling. Without `-###`
//! offload-kit needs no llvm-objcopy (LLVM 22 refuses every call without
//! one).
//!
//! Object bundles (`-type=o`, and `-type=a` members) are edited in process
//! (see `crate::bundle::object`), ELF only. Further differences: an
//! object file that does not parse is an error naming it (LLVM falls back to
//! the binary format and finds no bundle); HIP-only targets with an object
//! input are an error (LLVM 22 segfaults); the host object of a compressed
//! object bundle is extracted (LLVM 22 hands the compressed file to
//! llvm-objcopy, which fails); an archive member whose size runs past the
//! end of the archive is an error (LLVM 22 reads past its buffer); thin
//! archives are refused.
//!
//! Here: the options, the help text and the checked command line ([`Job`]).
//! `check.rs` makes a `Job` with LLVM's checks in its order and the
//! environment variables of `env.rs`; `run.rs` carries it out (archives in
//! `archive_unbundle.rs`, `-###` in `objcopy.rs`), printing the verbose
//! reports of `verbose.rs`.

use std::process::ExitCode;

use super::{Fail, prog_name};
use crate::cli::llvm_cl::{OptSpec, Parsed};

mod archive_unbundle;
mod check;
mod env;
mod objcopy;
mod run;
mod streaming;
mod verbose;

use check::check;
use env::BundlerCompression;
use objcopy::find_objcopy;
use run::run;

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

/// The checked command line (made by [`check()`], carried out by [`run()`]).
struct Job {
    file_type: String,
    targets: Vec<String>,
    inputs: Vec<String>,
    outputs: Vec<String>,
    unbundle: bool,
    list: bool,
    allow_missing: bool,
    align: u64,
    hip_openmp: bool,
    comp: BundlerCompression,
    check_archive: bool,
    /// `-###`: the llvm-objcopy whose command lines are printed instead of
    /// writing object bundles.
    objcopy: Option<String>,
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
                return print_lines(&[format!(
                    "{prog}: for the --bundle-align option: '{v}' value invalid for uint argument!"
                )]);
            }
        },
    };
    let level = match parsed.last("compression-level") {
        None => None,
        Some(v) => match v.parse::<i32>() {
            Ok(n) => Some(n),
            Err(_) => {
                return print_lines(&[format!(
                    "{prog}: for the --compression-level option: '{v}' value invalid for integer argument!"
                )]);
            }
        },
    };
    // LLVM looks for llvm-objcopy before any other check; offload-kit only
    // needs it to print its command lines.
    let objcopy = if parsed.flag("###") {
        match find_objcopy(argv0) {
            Some(p) => Some(p),
            None => {
                eprintln!("{argv0}: error: unable to find 'llvm-objcopy' in path");
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    let job = check(argv0, &parsed, align, level).map(|mut j| {
        j.objcopy = objcopy;
        j
    });
    match job.and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.report(argv0),
    }
}

fn print_lines(lines: &[String]) -> ExitCode {
    for l in lines {
        eprintln!("{l}");
    }
    ExitCode::FAILURE
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

fn comma_list<'a>(parsed: &'a Parsed, name: &'a str) -> Vec<String> {
    parsed
        .all(name)
        .flat_map(|v| v.split(','))
        .map(str::to_string)
        .collect()
}

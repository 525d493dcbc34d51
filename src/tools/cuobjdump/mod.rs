//! A whole `cuobjdump` run (NVIDIA's, 13.5, for what needs no
//! disassembler) as data: the parsed command line ([`Args`]) checked and
//! the input opened into a [`Job`] ([`check()`]), then carried out
//! ([`run()`]): the listing (`-lelf`, `-lptx`), the extraction (`-xelf`,
//! `-xptx`, each file written in one step through `files::Output`) or
//! the dump of each entry's header, written to the caller's stream, and
//! the `info` lines and exit code it ends with ([`Ended`]). A run that
//! stops ends with a [`Failure`]: cuobjdump's `fatal` message and exit
//! code.
//!
//! The command line's drop-in parses the options and prints; everything
//! else is here. Files: `args.rs` (the command line as data, and the
//! failure), `units.rs` (the units and device code of the
//! file), `run.rs` (what the run does with each entry, named and
//! numbered as cuobjdump names and numbers them).
//!
//! Deliberate differences (docs/compatibility.md, "cuobjdump"): Windows
//! DLLs and `.pyd` files are read on Linux (named and numbered as their
//! Linux twins); `-sass`, `-elf`, `-xtext`, `-ltext`, `-fun`, `-findex`,
//! `-sort` and `-optf` are refused up front with one `fatal` line (exit 1)
//! that says to use NVIDIA's cuobjdump.

use std::io::Write;

use crate::files::Input;

mod args;
mod run;
mod units;

pub(crate) use args::{Args, Failure, Pick};

/// The exit code of a file that holds no device code.
const NO_DEVICE_CODE: u8 = 255;

/// How a run that did not stop ends: cuobjdump's `info` lines, printed
/// as `cuobjdump info    : <line>` after what it wrote, and the exit
/// code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ended {
    /// The `info` lines.
    pub info: Vec<String>,
    /// The exit code: 0, or 255 for a file without device code.
    pub code: u8,
}

/// A checked run: the command line and the input, open.
pub(crate) struct Job<'a> {
    args: &'a Args,
    /// The input as given.
    path: &'a str,
    /// The input as cuobjdump shows it in messages.
    shown: String,
    input: Input,
}

/// Checks the command line and opens the input (the first of
/// `args.files`), with cuobjdump's message where it stops.
pub(crate) fn check(args: &Args) -> Result<Job<'_>, Failure> {
    if let Some(opt) = refused(args) {
        return Err(Failure::fatal(format!(
            "offload-kit does not disassemble or dump cubins ({opt}): use NVIDIA's cuobjdump for it"
        )));
    }
    let path = args.files.first().map_or("", String::as_str);
    let shown = shown(path);
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        // What cuobjdump 13.5 says of a directory.
        return Err(Failure::fatal("Memory allocation failure"));
    }
    // `-` is a file of that name, not standard input.
    let open_as = if path == "-" { "./-" } else { path };
    let Ok(input) = Input::open(open_as) else {
        return Err(Failure::fatal(format!(
            "Could not open input file '{shown}'"
        )));
    };
    Ok(Job {
        args,
        path,
        shown,
        input,
    })
}

/// Carries the job out: what it lists or dumps goes to `out`, the files
/// it extracts to the working directory.
pub(crate) fn run(job: &Job<'_>, out: &mut dyn Write) -> Result<Ended, Failure> {
    let data = job.input.bytes();
    let run = run::Run {
        args: job.args,
        stem: run::stem(job.path),
        shown: job.shown.clone(),
        limit: crate::limits::uncompressed_for(crate::num::len64(data)),
    };
    let units = units::units(data, job.args.all);
    let damage = units.iter().find_map(|u| u.damage.clone());
    let tally = run.units(&units, out)?;
    Ok(ended(&run, &tally, damage.as_deref()))
}

/// The option given that offload-kit does not do, where it matters: in a
/// dump (listing and extraction ignore the dump options), and always for
/// `-xtext`, `-ltext` and `-optf`.
fn refused(args: &Args) -> Option<&str> {
    let dump = args.extract_elf.is_none()
        && args.extract_ptx.is_none()
        && !args.list_elf
        && !args.list_ptx;
    let opt = args.unsupported.as_deref();
    match opt {
        Some("-xtext" | "-ltext" | "-optf") => opt,
        Some(_) if dump => opt,
        _ => None,
    }
}

/// The end of a run: cuobjdump's `info` lines for what it did not find,
/// and the exit code. Where no device code was found in a file that
/// could not be read whole (`damage`), a line of ours says so after
/// cuobjdump's: "does not contain device code" is then only what was
/// read.
fn ended(run: &run::Run<'_>, tally: &run::Tally, damage: Option<&str>) -> Ended {
    let shown = &run.shown;
    let mut info = Vec::new();
    if !tally.device_code {
        info.push(format!("File '{shown}' does not contain device code"));
        if let Some(why) = damage {
            info.push(format!(
                "offload-kit could not read all of '{shown}' ({why}): \
                 no device code was found in what it read"
            ));
        }
        return Ended {
            info,
            code: NO_DEVICE_CODE,
        };
    }
    let a = run.args;
    let extracting = a.extract_elf.is_some() || a.extract_ptx.is_some();
    let (elf, ptx) = if extracting {
        (a.extract_elf.is_some(), a.extract_ptx.is_some())
    } else {
        (a.list_elf, a.list_ptx)
    };
    for (asked, found, what) in [(elf, tally.elf, "ELF"), (ptx, tally.ptx, "PTX")] {
        if asked && found == 0 {
            info.push(format!(
                "No {what} file found to extract from '{shown}'. \
                 You may try with -all option."
            ));
        }
    }
    Ended { info, code: 0 }
}

/// The input as cuobjdump names it in messages: the working directory
/// and the path as given (not normalised), or an absolute or empty path
/// as it is.
fn shown(path: &str) -> String {
    if path.is_empty() || path.starts_with('/') {
        return path.to_string();
    }
    match std::env::current_dir() {
        Ok(cwd) => format!("{}/{path}", cwd.to_string_lossy()),
        Err(_) => path.to_string(),
    }
}

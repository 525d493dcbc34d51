//! `cuobjdump` run under its own name: NVIDIA's cuobjdump 13.5 for what
//! needs no disassembler. Its command line (`options`), the units and
//! device code of the file (`units`), and the listing, extraction and
//! header dump (`run`), with cuobjdump's messages, names, numbering and
//! exit codes: `fatal` lines exit 1, a file without device code 255.
//!
//! Deliberate differences (docs/compatibility.md, "cuobjdump"): Windows
//! DLLs and `.pyd` files are read on Linux (named and numbered as their
//! Linux twins); `-sass`, `-elf`, `-xtext`, `-ltext`, `-fun`, `-findex`,
//! `-sort` and `-optf` are refused up front with one `fatal` line (exit 1)
//! that says to use NVIDIA's cuobjdump; `-h` and `-V` are in our words.

mod options;
mod run;
mod units;

use std::io::Write;
use std::process::ExitCode;

use options::Args;
use run::{Fatal, Run, Tally};

/// The exit code of a file that holds no device code.
const NO_DEVICE_CODE: u8 = 255;

/// Runs `cuobjdump` with `args` (the arguments after the program name).
pub fn main(_argv0: &str, args: &[String]) -> ExitCode {
    let args = match options::parse(args) {
        Ok(a) => a,
        Err(options::BadLine(msg)) => return fatal(&msg),
    };
    if args.arch_redefined {
        eprintln!(
            "cuobjdump warning : incompatible redefinition for option 'gpu-architecture', \
             the last value of this option was used"
        );
    }
    if args.help || (!args.version && args.files.len() != 1) {
        print!("{}", options::help_text());
        return ExitCode::SUCCESS;
    }
    if args.version {
        print!("{}", options::version_text());
        return ExitCode::SUCCESS;
    }
    if let Some(opt) = refused(&args) {
        return fatal(&format!(
            "offload-kit does not disassemble or dump cubins ({opt}): use NVIDIA's cuobjdump for it"
        ));
    }
    let path = &args.files[0];
    let shown = shown(path);
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        // What cuobjdump 13.5 says of a directory.
        return fatal("Memory allocation failure");
    }
    // `-` is a file of that name, not standard input.
    let open_as = if path == "-" { "./-" } else { path.as_str() };
    let Ok(input) = crate::files::Input::open(open_as) else {
        return fatal(&format!("Could not open input file '{shown}'"));
    };
    let data = input.bytes();
    let run = Run {
        args: &args,
        stem: run::stem(path),
        shown,
        limit: crate::limits::uncompressed_for(crate::num::len64(data)),
    };
    let units = units::units(data, args.all);
    let damage = units.iter().find_map(|u| u.damage.clone());
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let done = run.units(&units, &mut out);
    let flushed = out.flush();
    let tally = match (done, flushed) {
        (Ok(t), Ok(())) => t,
        (Err(Fatal(msg)), _) => return fatal(&msg),
        (_, Err(e)) => return fatal(&Fatal::from(e).0),
    };
    finish(&run, &tally, damage.as_deref())
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
fn finish(run: &Run<'_>, tally: &Tally, damage: Option<&str>) -> ExitCode {
    let shown = &run.shown;
    if !tally.device_code {
        eprintln!("cuobjdump info    : File '{shown}' does not contain device code");
        if let Some(why) = damage {
            eprintln!(
                "cuobjdump info    : offload-kit could not read all of '{shown}' ({why}): \
                 no device code was found in what it read"
            );
        }
        return ExitCode::from(NO_DEVICE_CODE);
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
            eprintln!(
                "cuobjdump info    : No {what} file found to extract from '{shown}'. \
                 You may try with -all option."
            );
        }
    }
    ExitCode::SUCCESS
}

/// Prints cuobjdump's `fatal` line; exit 1.
fn fatal(msg: &str) -> ExitCode {
    eprintln!("cuobjdump fatal   : {msg}");
    ExitCode::FAILURE
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

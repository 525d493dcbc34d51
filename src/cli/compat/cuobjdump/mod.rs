//! `cuobjdump` run under its own name: NVIDIA's cuobjdump 13.5 for what
//! needs no disassembler, with its messages and exit codes: `fatal` lines
//! exit 1, a file without device code 255.
//!
//! Here: the command line (`options`), `-h` and `-V` (in our words), and
//! the printing of what the run writes and says. The run itself (the
//! units and device code of the file, the listing, extraction and header
//! dump, and its deliberate differences from cuobjdump) is the library's
//! `crate::tools::cuobjdump`.

mod options;

use std::io::Write;
use std::process::ExitCode;

use crate::tools::cuobjdump::{self, Failure};

/// Runs `cuobjdump` with `args` (the arguments after the program name).
pub fn main(_argv0: &str, args: &[String]) -> ExitCode {
    let args = match options::parse(args) {
        Ok(a) => a,
        Err(options::BadLine(msg)) => return fatal(Failure::fatal(msg)),
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
    let job = match cuobjdump::check(&args) {
        Ok(j) => j,
        Err(f) => return fatal(f),
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let done = cuobjdump::run(&job, &mut out);
    let flushed = out.flush();
    let ended = match (done, flushed) {
        (Ok(e), Ok(())) => e,
        (Err(f), _) => return fatal(f),
        (_, Err(e)) => return fatal(Failure::from(e)),
    };
    for line in &ended.info {
        eprintln!("cuobjdump info    : {line}");
    }
    ExitCode::from(ended.code)
}

/// Prints cuobjdump's `fatal` line; its exit code.
fn fatal(f: Failure) -> ExitCode {
    eprintln!("cuobjdump fatal   : {}", f.message);
    ExitCode::from(f.code)
}

//! `nvprune` run under its own name (issue #61): NVIDIA's command line
//! (`-arch`, `-gencode`/`--generate-code`, `-o`, `-v`), its messages on
//! standard error and its exit codes, parsed here and not by clap or
//! `llvm_cl`.
//!
//! Here: the command line (`cl.rs`) and the printing of what the run says.
//! The run itself (which images stay, the prune, nvprune's messages) is
//! the library's `crate::tools::nvprune`.

use std::process::ExitCode;

use crate::tools::nvprune::{self, Failure, Note};

mod cl;

use cl::{fatal, warning};

/// Runs `nvprune` with `args` (the arguments after the program name).
/// Its messages start with the program's name, as nvprune's do.
pub fn main(argv0: &str, args: &[String]) -> ExitCode {
    let prog = super::prog_name(argv0);
    let parsed = match cl::parse(prog, args) {
        Ok(p) => p,
        Err(done) => return done,
    };
    let mut say = |n: Note| match n {
        Note::Verbose(line) => eprintln!("{line}"),
        Note::Warning(w) => warning(prog, &w),
    };
    match nvprune::check(&parsed).and_then(|job| nvprune::run(&job, &mut say)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { message, code }) => {
            fatal(prog, &message);
            ExitCode::from(code)
        }
    }
}

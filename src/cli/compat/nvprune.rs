//! `nvprune` run under its own name: not written yet (issue #61).

use std::process::ExitCode;

/// Runs `nvprune` with `args` (the arguments after the program name).
pub fn main(argv0: &str, _args: &[String]) -> ExitCode {
    eprintln!("{argv0}: not available yet in offload-kit");
    ExitCode::FAILURE
}

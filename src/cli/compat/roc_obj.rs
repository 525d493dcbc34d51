//! AMD's `roc-obj-ls`, `roc-obj-extract` and `roc-obj` run under their own
//! names: not written yet (issue #61).

use std::process::ExitCode;

fn not_yet(argv0: &str) -> ExitCode {
    eprintln!("{argv0}: not available yet in offload-kit");
    ExitCode::FAILURE
}

/// Runs `roc-obj-ls` with `args` (the arguments after the program name).
pub fn ls_main(argv0: &str, _args: &[String]) -> ExitCode {
    not_yet(argv0)
}

/// Runs `roc-obj-extract` with `args`.
pub fn extract_main(argv0: &str, _args: &[String]) -> ExitCode {
    not_yet(argv0)
}

/// Runs `roc-obj` with `args`.
pub fn obj_main(argv0: &str, _args: &[String]) -> ExitCode {
    not_yet(argv0)
}

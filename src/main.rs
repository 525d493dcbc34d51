//! The `offload-kit` command (also `llvm-offload-binary`,
//! `clang-offload-packager`, `clang-offload-bundler` and
//! `clang-linker-wrapper` when run under those names).

/// `eprintln!`, which never panics: with standard error closed (its
/// reader gone, as in `2>&1 | head -1`) the line is lost, where the
/// standard macro panics (exit 101). Defined before `mod cli` so that every
/// message of the command line goes through it.
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// `eprint!`, which never panics (see `eprintln!`).
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($arg)*);
    }};
}

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}

//! The `offload-kit` command (also `llvm-offload-binary` and
//! `clang-offload-packager` when run under those names).

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}

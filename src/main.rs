//! The `offload-kit` command (also `llvm-offload-binary`,
//! `clang-offload-packager`, `clang-offload-bundler` and
//! `clang-linker-wrapper` when run under those names).

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}

//! The `offload-kit` command (also `llvm-offload-binary`,
//! `clang-offload-packager`, `clang-offload-bundler` and
//! `clang-linker-wrapper` when run under those names). The command line
//! lives in the library (its `cli` feature): see `offload_kit::run_cli`.

fn main() -> std::process::ExitCode {
    offload_kit::run_cli()
}

//! Glue for the offload-kit fuzz targets.
//!
//! The bodies are library functions (`offload_kit::fuzz::*`, compiled only
//! under `cfg(fuzzing)`), so each file in `fuzz_targets/` is two lines:
//!
//! ```text
//! #![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]
//! offload_kit_fuzz::target!(offload_binary_read);
//! ```
//!
//! and builds one of three ways:
//!
//! | how it is built | cfgs | what the binary is |
//! |---|---|---|
//! | `cargo fuzz` (scripts/fuzz.sh) | `fuzzing` | a libFuzzer target (`main` is libFuzzer's) |
//! | `cargo build` inside scripts/fuzz | `fuzzing`, `fuzzing_replay` (from `.cargo/config.toml`) | a plain stable binary that runs the body on each file or directory named on its command line (stdin if none): reproduces a crash artifact without cargo-fuzz |
//! | `cargo build` from elsewhere | none | the bodies are absent; `main` says how to build it properly and exits 2 |
//!
//! This is wasm-tools' `cfg_attr(fuzzing, no_main)` trick, with one more cfg
//! because our bodies need `cfg(fuzzing)` even when libFuzzer is not linked.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[doc(hidden)]
pub use libfuzzer_sys;

/// Declares a fuzz target whose body is `offload_kit::fuzz::$body`.
///
/// The target file must also start with
/// `#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]` (a crate
/// attribute, which a macro cannot emit).
#[macro_export]
macro_rules! target {
    ($body:ident) => {
        #[cfg(all(fuzzing, not(fuzzing_replay)))]
        $crate::libfuzzer_sys::fuzz_target!(|data: &[u8]| {
            ::offload_kit::fuzz::$body(data);
        });

        #[cfg(all(fuzzing, fuzzing_replay))]
        fn main() -> ::std::process::ExitCode {
            $crate::replay(stringify!($body), ::offload_kit::fuzz::$body)
        }

        #[cfg(not(fuzzing))]
        fn main() -> ::std::process::ExitCode {
            $crate::not_built_for_fuzzing(stringify!($body))
        }
    };
}

/// Runs `body` on every file named in `argv[1..]` (directories are walked),
/// or on standard input when there are no arguments. A panic is reported with
/// the file that caused it and the run goes on; the exit code is 1 if any
/// input panicked.
pub fn replay(name: &str, body: fn(&[u8])) -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("usage: {name} [FILE|DIR ...]   (no argument: read standard input)");
        return ExitCode::SUCCESS;
    }
    let mut inputs = Vec::new();
    for a in &args {
        if let Err(e) = collect(a, &mut inputs) {
            eprintln!("{name}: cannot read '{}': {e}", a.display());
            return ExitCode::from(2);
        }
    }
    let mut failed = 0usize;
    let mut run = |what: &str, data: &[u8]| {
        if std::panic::catch_unwind(|| body(data)).is_err() {
            eprintln!("{name}: panicked on {what}");
            failed += 1;
        }
    };
    let count;
    if args.is_empty() {
        let mut data = Vec::new();
        if let Err(e) = std::io::Read::read_to_end(&mut std::io::stdin(), &mut data) {
            eprintln!("{name}: cannot read standard input: {e}");
            return ExitCode::from(2);
        }
        run("<stdin>", &data);
        count = 1;
    } else {
        for path in &inputs {
            match std::fs::read(path) {
                Ok(data) => run(&path.display().to_string(), &data),
                Err(e) => {
                    eprintln!("{name}: cannot read '{}': {e}", path.display());
                    return ExitCode::from(2);
                }
            }
        }
        count = inputs.len();
    }
    eprintln!("{name}: {count} input(s), {failed} panicked");
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Files under `path` (itself if it is a file), in a stable order.
fn collect(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if !path.is_dir() {
        std::fs::metadata(path)?;
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(path)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.sort();
    for e in entries {
        collect(&e, out)?;
    }
    Ok(())
}

/// `main` of a target built without `--cfg fuzzing`: the library's fuzz
/// bodies do not exist in that build, so say how to get a useful binary.
pub fn not_built_for_fuzzing(name: &str) -> ExitCode {
    eprintln!(
        "{name}: built without --cfg fuzzing, so the fuzz body is missing.\n\
         Fuzz with `scripts/fuzz.sh`, or build a replay binary with `cargo build` run \
         inside scripts/fuzz (its .cargo/config.toml adds the cfgs)."
    );
    ExitCode::from(2)
}

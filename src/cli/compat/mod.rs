//! Drop-in front ends: offload-kit run under an LLVM tool's name behaves as
//! that LLVM 22 tool, with its options, outputs, messages and exit codes.
//!
//! Where LLVM 22 prints a message without saying which file it is about, or
//! crashes, we print LLVM's text with the file name in front (`'<file>': `,
//! LLVM's own style for file errors) and a precise reason after it.

pub mod bundler;
pub mod packager;

/// The LLVM release whose behaviour the front ends reproduce.
pub const LLVM_VERSION: &str = "22.1.8";

/// `--version` text for the drop-in tools: our name, and the LLVM version we
/// are compatible with (kept in LLVM's `LLVM version X.Y.Z` form, which
/// scripts match).
pub fn version_text(tool: &str) -> String {
    format!(
        "offload-kit {} ({tool}, compatible with LLVM version {LLVM_VERSION})\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// Parses an LLVM `cl` command line and acts on `--version` and `--help`
/// as LLVM does while parsing. `Err` holds the exit code when the run is
/// over (bad command line: the messages are printed; help or version shown).
pub fn parse_prologue(
    argv0: &str,
    args: &[String],
    cl: &Cl<'_>,
    help_text: impl Fn(&str) -> String,
) -> Result<crate::cli::llvm_cl::Parsed, std::process::ExitCode> {
    use std::process::ExitCode;
    let prog = prog_name(argv0);
    let parsed =
        crate::cli::llvm_cl::parse(prog, argv0, args, cl.specs, cl.max_positionals, cl.required)
            .map_err(|lines| {
                for l in lines {
                    eprintln!("{l}");
                }
                ExitCode::FAILURE
            })?;
    if parsed.flag("version") {
        print!("{}", version_text(cl.tool));
        return Err(ExitCode::SUCCESS);
    }
    if ["help", "help-list", "help-hidden", "help-list-hidden"]
        .iter()
        .any(|h| parsed.flag(h))
    {
        print!("{}", help_text(prog));
        return Err(ExitCode::SUCCESS);
    }
    Ok(parsed)
}

/// What a drop-in tool's command line takes.
pub struct Cl<'a> {
    /// The LLVM tool's name (for `--version`).
    pub tool: &'a str,
    /// Its options.
    pub specs: &'a [crate::cli::llvm_cl::OptSpec],
    /// How many positional arguments it takes.
    pub max_positionals: usize,
    /// Options that must be given.
    pub required: &'a [&'a str],
}

/// The base name of `argv0` (what LLVM's `cl` uses as the message prefix).
pub fn prog_name(argv0: &str) -> &str {
    offload_kit::llvm::path::file_name(argv0)
}

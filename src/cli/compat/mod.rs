//! Drop-in front ends: offload-kit run under an LLVM tool's name behaves as
//! that LLVM 22 tool, with its options, outputs, messages and exit codes;
//! under NVIDIA's (`cuobjdump`, `nvprune`) or AMD's (`roc-obj-ls`,
//! `roc-obj-extract`, `roc-obj`) names, as that vendor tool, each with its
//! own option parser (the LLVM ones share `llvm_cl`).
//!
//! Errors print LLVM 22's line for the same case first, character for
//! character; what offload-kit knows more (the file LLVM leaves unnamed, the
//! offset, what exactly is wrong) follows on a `<tool>: note:` line. Where
//! LLVM 22 crashes, reads garbage or succeeds on input we refuse, there is
//! no LLVM line to keep: ours names the file (`'<file>': `, LLVM's style for
//! file errors) and the fault.

pub mod bundler;
pub mod cuobjdump;
pub mod linker_wrapper;
pub mod nvprune;
pub mod packager;
pub mod roc_obj;

/// A failure of a drop-in tool: LLVM's message, printed as
/// `<argv0>: error: <llvm>`, and what we know more, printed after it as
/// `<argv0>: note: <note>`.
#[derive(Debug)]
pub(crate) struct Fail {
    /// LLVM 22's text for the case (or ours where LLVM has none).
    pub llvm: String,
    /// Our detail, if any.
    pub note: Option<String>,
}

impl Fail {
    /// A failure LLVM reports with this text, with nothing to add.
    pub fn new(llvm: impl Into<String>) -> Fail {
        Fail {
            llvm: llvm.into(),
            note: None,
        }
    }

    /// A failure LLVM reports with this text, followed by our detail.
    pub fn with_note(llvm: impl Into<String>, note: impl Into<String>) -> Fail {
        Fail {
            llvm: llvm.into(),
            note: Some(note.into()),
        }
    }

    /// Prints the failure and gives the exit code (1, as LLVM).
    pub fn report(self, argv0: &str) -> std::process::ExitCode {
        // Several failures: LLVM's banner once, then each message on its
        // own line (as LLVM logs joined errors); each note line prefixed.
        eprintln!("{argv0}: error: {}", self.llvm);
        if let Some(note) = self.note {
            for line in note.lines() {
                eprintln!("{argv0}: note: {line}");
            }
        }
        std::process::ExitCode::FAILURE
    }
}

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
    crate::llvm::path::file_name(argv0)
}

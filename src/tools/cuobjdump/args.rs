//! A cuobjdump command line as the run takes it, and how a run stops.

use std::io;

/// Values of `-xelf`/`-xptx`: every file, or those whose name holds one
/// of the strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Pick {
    /// The non-empty values given, in order.
    pub values: Vec<String>,
}

impl Pick {
    /// Whether the file named `name` is picked: every file when the one
    /// value given is `all` (with another value beside it, `all` is a
    /// plain substring again), else those whose name contains a value.
    pub(crate) fn takes(&self, name: &str) -> bool {
        match self.values.as_slice() {
            [only] if only == "all" => true,
            values => values.iter().any(|v| name.contains(v.as_str())),
        }
    }
}

/// A parsed command line.
#[derive(Debug, Default)]
pub(crate) struct Args {
    pub all: bool,
    pub list_elf: bool,
    pub list_ptx: bool,
    pub ptx: bool,
    pub symbols: bool,
    pub res_usage: bool,
    /// `-sass`, `-elf`, `-xtext`, `-ltext`, `-fun`, `-findex`, `-sort` or
    /// `-optf`, where given: what we do not do (the first one named).
    pub unsupported: Option<String>,
    /// `-xelf`'s values, when given.
    pub extract_elf: Option<Pick>,
    /// `-xptx`'s values, when given.
    pub extract_ptx: Option<Pick>,
    /// The SM number `-arch` names.
    pub arch: Option<u32>,
    /// `-h` (the drop-in's to act on).
    pub help: bool,
    /// `-V` (the drop-in's to act on).
    pub version: bool,
    /// `-arch` was given twice with different values: cuobjdump warns
    /// (the drop-in's to print).
    pub arch_redefined: bool,
    /// The inputs; a run reads the first.
    pub files: Vec<String>,
}

/// Why a run stopped: cuobjdump's message, printed as
/// `cuobjdump fatal   : <message>` (lines after the first are printed as
/// they are), and the exit code (1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The message.
    pub message: String,
    /// The exit code.
    pub code: u8,
}

impl Failure {
    /// cuobjdump's `fatal` line with `message`: exit 1.
    pub(crate) fn fatal(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            code: 1,
        }
    }
}

impl From<io::Error> for Failure {
    /// The output stream could not be written.
    fn from(e: io::Error) -> Failure {
        Failure::fatal(format!("Could not write the output: {e}"))
    }
}

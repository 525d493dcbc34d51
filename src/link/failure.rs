//! Why a linker-wrapper job stopped, as the drop-in reports it: LLVM 22's
//! line for the case (or ours where LLVM has none), then what we know
//! more. The lines are the product here (the drop-in prints them after
//! `<argv0>: error: `), so they are built where the failure is known.
//! [`open`] maps a file the wrapper reads, failing with LLVM's line.

use std::io;

pub(crate) use crate::error::strerror;
#[cfg(feature = "files")]
use crate::files::Input;

/// A failure of the job: LLVM's line and our note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// LLVM 22's text for the case (or ours where LLVM has none).
    pub llvm: String,
    /// Our detail, if any.
    pub note: Option<String>,
}

impl Failure {
    /// A failure LLVM reports with this text, with nothing to add.
    pub fn new(llvm: impl Into<String>) -> Failure {
        Failure {
            llvm: llvm.into(),
            note: None,
        }
    }

    /// A failure LLVM reports with this text, followed by our detail.
    pub fn with_note(llvm: impl Into<String>, note: impl Into<String>) -> Failure {
        Failure {
            llvm: llvm.into(),
            note: Some(note.into()),
        }
    }

    /// A file that could not be opened, read or written:
    /// `'<name>': <the C library's text>`, as LLVM words it.
    pub fn file(name: &str, e: &io::Error) -> Failure {
        Failure::new(format!("'{name}': {}", strerror(e)))
    }

    /// Several failures reported at once (device links that all ran): the
    /// LLVM lines in order, one per line, then the notes in order.
    pub fn joined(failed: Vec<Failure>) -> Failure {
        let llvm = failed
            .iter()
            .map(|f| f.llvm.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let notes: Vec<&str> = failed.iter().filter_map(|f| f.note.as_deref()).collect();
        Failure {
            llvm,
            note: (!notes.is_empty()).then(|| notes.join("\n")),
        }
    }
}

/// Opens (maps) a file the wrapper reads.
#[cfg(feature = "files")]
pub fn open(name: &str) -> Result<Input, Failure> {
    Input::open(name).map_err(|e| Failure::file(name, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_notes() {
        let e = io::Error::from_raw_os_error(2);
        assert_eq!(
            Failure::file("a.o", &e).llvm,
            "'a.o': No such file or directory"
        );
        let j = Failure::joined(vec![
            Failure::with_note("'clang' failed", "exit code 1: a"),
            Failure::new("'clang' failed"),
            Failure::with_note("'clang' failed", "exit code 2: c"),
        ]);
        assert_eq!(j.llvm, "'clang' failed\n'clang' failed\n'clang' failed");
        assert_eq!(j.note.as_deref(), Some("exit code 1: a\nexit code 2: c"));
        assert_eq!(Failure::joined(vec![Failure::new("x")]).note, None);
    }
}

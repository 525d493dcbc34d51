//! What the three scripts' command lines share, as Perl does it:
//! Getopt::Std's option loop, and the printing of a `die` and of what
//! goes to standard output.

use std::io::Write;
use std::process::ExitCode;

use crate::tools::roc_obj::{Die, Said};

/// Prints what a run says, as it comes.
pub(super) fn say(said: Said) {
    match said {
        Said::Out(bytes) => write_stdout(&bytes),
        Said::Err(text) => eprint!("{text}"),
    }
}

/// Prints a `die`'s message; its exit code.
pub(super) fn report(die: &Die) -> ExitCode {
    eprint!("{}", die.message);
    ExitCode::from(die.code)
}

/// Options as Getopt::Std's `getopts(SPEC, \%h)` reads them from the front
/// of `args`: bundled letters, a value glued on or in the next argument,
/// `--` ends them, and an unknown letter warns "Unknown option: X" and is
/// skipped. Returns the options (letter, value; `None` for a flag or a
/// missing value) and the arguments left. Each argument's letters are
/// read once, left to right (what follows a letter is read as the module
/// reads it, as if it were an argument of its own, `-` and all), so that
/// a megabyte of bundled letters takes time in proportion; the warnings
/// are written together.
pub(super) fn getopts(spec: &str, args: &[String]) -> (Vec<(char, Option<String>)>, Vec<String>) {
    let mut opts = Vec::new();
    let mut warnings = String::new();
    let mut i = 0;
    'args: while let Some(arg) = args.get(i) {
        let Some(mut letters) = arg.strip_prefix('-').filter(|l| !l.is_empty()) else {
            break;
        };
        i += 1;
        while let Some(first) = letters.chars().next() {
            if letters == "-" {
                break 'args;
            }
            let tail = &letters[first.len_utf8()..];
            let takes_value = spec
                .find(first)
                .map(|pos| spec[pos + first.len_utf8()..].starts_with(':'));
            match takes_value {
                Some(true) => {
                    let value = match tail {
                        "" => args.get(i).inspect(|_| i += 1).cloned(),
                        t => Some(t.to_string()),
                    };
                    opts.push((first, value));
                    break;
                }
                Some(false) => opts.push((first, None)),
                None if first == '-' && (tail == "help" || tail == "version") => break,
                None => {
                    warnings.push_str("Unknown option: ");
                    warnings.push(first);
                    warnings.push('\n');
                }
            }
            letters = tail;
        }
    }
    eprint!("{warnings}");
    (opts, args[i..].to_vec())
}

/// Whether `letter` was given.
pub(super) fn has(opts: &[(char, Option<String>)], letter: char) -> bool {
    opts.iter().any(|(c, _)| *c == letter)
}

/// Writes `bytes` to standard output; a closed pipe is not an error.
pub(super) fn write_stdout(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

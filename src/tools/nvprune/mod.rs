//! A whole `nvprune` (NVIDIA's, 11.8) run as data: the parsed command line
//! ([`Args`]) checked against the input into a [`Job`] ([`check()`]),
//! then carried out ([`run()`]), with the `-v` lines and the warning
//! nvprune prints on the way handed to the caller as [`Note`]s, and
//! failures as a [`Failure`] holding nvprune's `fatal` message.
//!
//! The pruning is `prune::prune_path`'s, and so is the writing of the
//! output (one step, through `files::Output`). On what nvprune prunes, a
//! relocatable object or a static archive, nvprune's rule is exact: a
//! cubin stays when its SM is named, PTX when its virtual arch is; every
//! other CUDA image goes. That is said to `prune_path` as `--drop` rules,
//! one per SM and kind not kept (`sm_75:cubin`, `sm_80:ptx`, …), so the
//! bytes are nvprune's. Where nvprune refuses ("not relocatable": linked
//! programs, shared libraries, and wheels and other files offload-kit
//! reads), the file is pruned as `offload-kit prune --keep` prunes it:
//! each SM named keeps what a device of it loads, and the newest PTX it
//! compiles where nvprune would keep PTX (`selection.rs`).
//!
//! The command line's drop-in parses the options and prints the notes and
//! the failure; everything else is here.

use std::path::{Path, PathBuf};

use crate::prune::{self, Destination, PathErrorKind, PathOptions, Selection};
use crate::targets;

mod selection;

pub(crate) use selection::Code;

/// A command line that asks for a prune.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Args {
    /// What stays.
    pub keep: Vec<Code>,
    /// `-o`.
    pub output: String,
    /// The input file, as given.
    pub input: String,
    /// `-v`.
    pub verbose: bool,
}

/// What a run says on the way, in order, before any failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Note {
    /// A `-v` line, printed as it is.
    Verbose(String),
    /// A warning: `<prog> warning : <text>`.
    Warning(String),
}

/// Why a run failed: nvprune's message, printed as
/// `<prog> fatal   : <message>`, and the exit code (1, as nvprune's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The message.
    pub message: String,
    /// The exit code.
    pub code: u8,
}

impl Failure {
    fn fatal(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            code: 1,
        }
    }
}

/// How nvprune would treat a file, by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// A relocatable ELF object: nvprune's own ground.
    Object,
    /// A static archive.
    Archive,
    /// Anything else offload-kit prunes (linked ELF files, PE images,
    /// wheels, packages, bare containers): nvprune says "not relocatable".
    Other,
}

/// A checked run: the command line, what the input is, and the images
/// that stay.
#[derive(Debug)]
pub(crate) struct Job<'a> {
    args: &'a Args,
    form: Form,
    selection: Selection,
}

/// Reads what the input is, with nvprune's message for a file it cannot
/// open (and ours for a directory, where nvprune says "Memory allocation
/// failure").
pub(crate) fn check(args: &Args) -> Result<Job<'_>, Failure> {
    let form = form_of(Path::new(&args.input), &args.input)?;
    let selection = match form {
        Form::Object | Form::Archive => selection::exact(&args.keep),
        Form::Other => selection::loader(&args.keep),
    };
    Ok(Job {
        args,
        form,
        selection,
    })
}

/// Reads what `input` is, from its first bytes.
fn form_of(input: &Path, shown: &str) -> Result<Form, Failure> {
    use std::io::Read;
    let not_open = || Failure::fatal(format!("Could not open input file '{shown}'"));
    let meta = std::fs::metadata(input).map_err(|_| not_open())?;
    if meta.is_dir() {
        return Err(Failure::fatal(format!(
            "Input file '{shown}' is a directory"
        )));
    }
    let mut head = Vec::with_capacity(20);
    std::fs::File::open(input)
        .and_then(|f| f.take(20).read_to_end(&mut head))
        .map_err(|_| not_open())?;
    if head.starts_with(b"!<arch>\n") {
        return Ok(Form::Archive);
    }
    // e_type, in the byte order e_ident[EI_DATA] gives (2: big-endian).
    let e_type = crate::bytes::at_in_order::<u16>(&head, 16, head.get(5) == Some(&2));
    if head.starts_with(b"\x7fELF") && e_type == Some(1) {
        return Ok(Form::Object);
    }
    Ok(Form::Other)
}

/// Prunes the input as the command line says, writing the output.
pub(crate) fn run(job: &Job<'_>, say: &mut dyn FnMut(Note)) -> Result<(), Failure> {
    let p = job.args;
    let input = PathBuf::from(&p.input);
    if p.verbose {
        for line in verbose_lines(&p.input, job.form, &job.selection) {
            say(Note::Verbose(line));
        }
    }
    let mut opts = PathOptions {
        destination: Destination::File(PathBuf::from(&p.output)),
        ..PathOptions::default()
    };
    // nvprune writes a file that keeps no device code (and warns).
    opts.prune.allow_empty = true;
    // nvprune keeps the input's string tables as they are.
    opts.prune.keep_string_tables = true;
    let report = prune::prune_path(&input, &job.selection, &opts).map_err(|e| {
        Failure::fatal(match e.kind() {
            PathErrorKind::Open => format!("Could not open input file '{}'", p.input),
            PathErrorKind::Write => format!("Could not open output file '{}'", p.output),
            _ => e.chain(),
        })
    })?;
    // A file of another kind that holds no device code (nothing kept or
    // dropped) is what nvprune refuses by name; the copy written goes.
    if job.form == Form::Other && report.kept.is_empty() && report.dropped.is_empty() {
        // (Not when it is the input itself, written over with its own bytes.)
        if std::fs::canonicalize(&p.output).ok() != std::fs::canonicalize(&input).ok() {
            let _ = std::fs::remove_file(&p.output);
        }
        return Err(Failure::fatal(format!(
            "Input file '{}' not relocatable",
            p.input
        )));
    }
    let cuda_kept = report
        .kept
        .iter()
        .any(|g| targets::parse_sm(&g.target).is_some());
    if !cuda_kept {
        say(Note::Warning(
            "No device code that matched architecture, so stripped out all device code".into(),
        ));
    }
    Ok(())
}

/// `-v`'s lines: `prune FILE` for an object, `prune ARCHIVE:MEMBER` for
/// each member of an archive, each followed by `no device code found
/// that matched arch` when it holds CUDA code none of which stays.
fn verbose_lines(input: &str, form: Form, selection: &Selection) -> Vec<String> {
    let Ok(file) = crate::files::Input::open(Path::new(input)) else {
        return Vec::new();
    };
    let data = file.bytes();
    let report = crate::scan::scan(data, &crate::scan::Options::default());
    let verdicts = selection.decide(&report);
    let unmatched = |member: Option<&str>| {
        let mut cuda = report
            .images
            .iter()
            .filter(|i| i.member.as_deref() == member && targets::parse_sm(i.code_arch()).is_some())
            .peekable();
        cuda.peek().is_some() && cuda.all(|i| verdicts.get(i.id).is_some_and(|v| !v.stays()))
    };
    let mut lines = Vec::new();
    let mut one = |name: String, member: Option<&str>| {
        lines.push(format!("prune {name}"));
        if unmatched(member) {
            lines.push("no device code found that matched arch".to_string());
        }
    };
    match form {
        Form::Archive => {
            let Ok(ar) = crate::host::ar::Archive::parse(data) else {
                return lines;
            };
            for m in ar.members().map_while(Result::ok) {
                let name = m.name_lossy();
                one(format!("{input}:{name}"), Some(&name));
            }
        }
        _ => one(input.to_string(), None),
    }
    lines
}

//! `llvm-offload-binary` and `clang-offload-packager` (LLVM 22), with the
//! additions of newer upstream releases where LLVM 22 rejects the option or
//! does nothing.
//!
//! Packing: `-o OUT --image=file=F,triple=T,arch=A,kind=K,…` (repeatable),
//! one version-1 binary per file, concatenated; image kind from the bitcode
//! magic or the file extension. With `--compress` (newer LLVM; 22 does not
//! know the option), one compressed version-3 binary holding every image.
//!
//! Extracting: `IN --image=<filter>` writes each match to the filter's
//! `file=`, or to `<stem>-<triple>-<arch>.<i>.<ext>`; with `--archive`, to a
//! GNU archive whose members are named after the buffers the images came
//! from (the archive member, else the input as typed). A filter's `member=`
//! key picks the images of one archive member. Without `--image`, LLVM 22
//! extracts nothing; as newer LLVM does, we extract every image, descending
//! into OffloadBinaries nested in images, and print `Extracted: FILE` each.
//!
//! Errors print LLVM's line first; what offload-kit knows more (the file,
//! the offset, what exactly is wrong) follows on a `note:` line.
//!
//! Here: the options, the help text and the messages. Packing, the
//! `--compress` options and extracting (which images a filter takes, the
//! names of the files, writing them) are the library's
//! `crate::tools::packager`.

use std::io::Write;
use std::process::ExitCode;

use super::{Fail, prog_name};
use crate::cli::images;
use crate::cli::io::{Input, strerror};
use crate::cli::llvm_cl::{OptSpec, Parsed};
use crate::llvm::path::stem as llvm_stem;
use crate::offload_binary::Version;
use crate::tools::packager::{self, ExtractError, PackError, Packing, Said};

const SPECS: &[OptSpec] = &[
    OptSpec::value("o"),
    OptSpec::value("image"),
    OptSpec::flag("archive"),
    OptSpec::flag("compress"),
    OptSpec::value("compression-format"),
    OptSpec::value("compression-level"),
    OptSpec::flag("help"),
    OptSpec::flag("help-list"),
    OptSpec::hidden_flag("help-hidden"),
    OptSpec::hidden_flag("help-list-hidden"),
    OptSpec::hidden_flag("h"),
    OptSpec::flag("version"),
];

fn help_text(prog: &str) -> String {
    format!(
        "OVERVIEW: Pack device images into an OffloadBinary (magic 10 FF 10 AD), or extract\n\
         them from one, from an object file or from an archive. This is offload-kit, a\n\
         drop-in for LLVM {ver}'s llvm-offload-binary.\n\
         \n\
         USAGE: {prog} [options] <input file>\n\
         \n\
         OPTIONS:\n  \
         --archive                   - Write the extracted images to a static archive\n  \
         --compress                  - Pack into one compressed (version 3) binary\n  \
         --compression-format=<fmt>  - zstd (default) or zlib\n  \
         --compression-level=<n>     - Compression level (zstd: 5, zlib: 6 by default)\n  \
         --help                      - Show this help\n  \
         --image=<<key>=<value>,...> - Pack the image file=<path> with these keys (triple, arch,\n                                \
         kind, any other); when extracting, a filter on the keys\n                                \
         (member=<name> picks an archive member); without --image,\n                                \
         every image is extracted\n  \
         -o <file>                   - Pack into <file>\n  \
         --version                   - Show the version\n\
         \n\
         ENVIRONMENT:\n  \
         OFFLOAD_KIT_MAX_UNCOMPRESSED=<size> - Most bytes the compressed OffloadBinaries of the\n                                \
         input may inflate to, in all (suffixes K, M, G; default 1024\n                                \
         times the input's size, at least 128M)\n",
        ver = super::LLVM_VERSION
    )
}

/// Runs the tool with `args` (argv without argv[0]).
pub fn main(argv0: &str, args: &[String]) -> ExitCode {
    let prog = prog_name(argv0);
    let cl = super::Cl {
        tool: "llvm-offload-binary",
        specs: SPECS,
        max_positionals: 1,
        required: &[],
    };
    let parsed = match super::parse_prologue(argv0, args, &cl, help_text) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if llvm_stem(argv0).ends_with("clang-offload-packager") {
        // LLVM prints this before it knows its own name: no prefix.
        eprintln!(
            "warning: 'clang-offload-packager' is deprecated. Use 'llvm-offload-binary' instead."
        );
    }
    let output = parsed.last("o").unwrap_or_default().to_string();
    let input = parsed.positionals.first().cloned().unwrap_or_default();
    if parsed.flag("h") || (output.is_empty() && input.is_empty()) {
        print!("{}", help_text(prog));
        return ExitCode::SUCCESS;
    }
    let result = if !input.is_empty() && !output.is_empty() {
        Err(Fail::new(
            "Packaging to an output file and extracting from an input file are mutually exclusive.",
        ))
    } else if !output.is_empty() {
        pack(&parsed, &output)
    } else {
        extract(argv0, &parsed, &input)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.report(argv0),
    }
}

/// An I/O failure on `path`: LLVM 22 prints the system's text alone; the
/// note names the file.
fn io_fail(path: &str, e: &std::io::Error) -> Fail {
    let text = strerror(e);
    Fail::with_note(text.clone(), format!("'{path}': {text}"))
}

fn pack(parsed: &Parsed, output: &str) -> Result<(), Fail> {
    let packing = if parsed.flag("compress") {
        let format = parsed.last("compression-format");
        let (how, level) = packager::compression(format, parsed.last("compression-level"))
            .map_err(|e| Fail::new(e.to_string()))?;
        Packing::Compressed(how, level)
    } else {
        Packing::Plain(Version::V1)
    };
    packager::pack_files(parsed.all("image"), output, packing).map_err(|e| match e {
        PackError::NoFile(_) => Fail::new("'file' is a required image arguments"),
        PackError::Open(file, e) => io_fail(&file, &e),
        PackError::Layout(e) => Fail::new(e.to_string()),
        PackError::Write(file, e) => io_fail(&file, &e),
    })
}

/// A file that is not a valid OffloadBinary (or holds an invalid one),
/// `what` naming it (and where in it): LLVM's message for the class of
/// fault, then exactly what is wrong where; or, past a limit of the
/// command's budget (which LLVM does not have), our line naming the file
/// and the limit, and how to raise it.
fn read_fail(what: &str, e: &crate::Error) -> Fail {
    match images::raise_hint(e, &format!("{}=SIZE", images::MAX_UNCOMPRESSED_ENV)) {
        Some(hint) => Fail::with_note(format!("{what}: {e}"), hint),
        None if matches!(e.kind(), crate::ErrorKind::BudgetExceeded { .. }) => {
            Fail::new(format!("{what}: {e}"))
        }
        None => Fail::with_note(e.llvm_message(), format!("{what}: {e}")),
    }
}

fn extract(argv0: &str, parsed: &Parsed, name: &str) -> Result<(), Fail> {
    // LLVM names the input here (and only here).
    let input = Input::open(name).map_err(|e| Fail::new(format!("'{name}': {}", strerror(&e))))?;
    let budget = images::dropin_budget().map_err(|e| Fail::new(e.to_string()))?;
    budget.add_input(input.bytes().len() as u64);
    let filters = parsed.all("image").collect::<Vec<_>>();
    let archive = parsed.flag("archive");
    // A standard output that cannot be written (a full disk, a closed
    // pipe) fails the command once the files are written, as LLVM's
    // output stream does, rather than panic.
    let mut stdout_failed = None;
    let mut say = |s: Said<'_>| match s {
        Said::SharedFile(file) => {
            eprintln!("{argv0}: warning: Multiple inputs match to a single file, '{file}'");
        }
        Said::Extracted(file) => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = writeln!(out, "Extracted: {file}").and_then(|()| out.flush()) {
                stdout_failed.get_or_insert(e);
            }
        }
    };
    let done = packager::extract(name, &input, &budget, &filters, archive, &mut say);
    if let (Ok(()), Some(e)) = (&done, stdout_failed) {
        return Err(Fail::new(format!(
            "IO failure on output stream: {}",
            strerror(&e)
        )));
    }
    done.map_err(|e| match e {
        ExtractError::Read { what, error } => read_fail(&what, &error),
        ExtractError::TooManyFiles(e) => Fail::new(e.to_string()),
        ExtractError::NoFile => Fail::new("Image must have a 'file' argument."),
        ExtractError::Archive(file, e) => Fail::new(format!("'{file}': {e}")),
        ExtractError::Io(file, e) => io_fail(&file, &e),
    })
}

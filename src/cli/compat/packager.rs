//! `llvm-offload-binary` and `clang-offload-packager` (LLVM 22).
//!
//! Packing: `-o OUT --image=file=F,triple=T,arch=A,kind=K,…` (repeatable),
//! one version-1 binary per file, concatenated; image kind from the bitcode
//! magic or the file extension. Extracting: `IN --image=<filter>` writes each
//! match to the filter's `file=`, or to `<stem>-<triple>-<arch>.<i>.<ext>`;
//! with `--archive`, to a GNU archive. Without `--image`, LLVM 22 extracts
//! nothing, and so do we.

use std::process::ExitCode;

use super::prog_name;
use crate::cli::io::{Input, strerror, write_bytes, write_layout};
use crate::cli::llvm_cl::{OptSpec, Parsed};
use offload_kit::archive;
use offload_kit::llvm::path::stem as llvm_stem;
use offload_kit::offload_binary::{self, FoundImage, ImageArgs, Limits};

const SPECS: &[OptSpec] = &[
    OptSpec::value("o"),
    OptSpec::value("image"),
    OptSpec::flag("archive"),
    OptSpec::flag("help"),
    OptSpec::flag("help-list"),
    OptSpec::hidden_flag("help-hidden"),
    OptSpec::hidden_flag("help-list-hidden"),
    OptSpec::hidden_flag("h"),
    OptSpec::flag("version"),
];

/// A failure with LLVM's message; printed as `<argv0>: error: <msg>`.
struct Fail(String);

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
         --help                      - Show this help\n  \
         --image=<<key>=<value>,...> - Pack the image file=<path> with these keys (triple, arch,\n                                \
         kind, any other); when extracting, a filter on the keys\n  \
         -o <file>                   - Pack into <file>\n  \
         --version                   - Show the version\n",
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
        Err(Fail(
            "Packaging to an output file and extracting from an input file are mutually exclusive."
                .into(),
        ))
    } else if !output.is_empty() {
        pack(&parsed, &output)
    } else {
        extract(argv0, &parsed, &input)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail(msg)) => {
            eprintln!("{argv0}: error: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn io_fail(path: &str, e: &std::io::Error) -> Fail {
    Fail(format!("'{path}': {}", strerror(e)))
}

fn pack(parsed: &Parsed, output: &str) -> Result<(), Fail> {
    let mut specs = Vec::new();
    let mut inputs = Vec::new();
    for image in parsed.all("image") {
        let args = ImageArgs::parse(image);
        let Some(files) = args.files() else {
            return Err(Fail("'file' is a required image arguments".into()));
        };
        for file in files {
            let input = Input::open(file).map_err(|e| io_fail(file, &e))?;
            specs.push(args.image_spec(file, input.bytes()));
            inputs.push(input);
        }
    }
    let layout = offload_binary::layout_v1(&specs).map_err(|e| Fail(e.to_string()))?;
    write_layout(output, &layout, |i| (&inputs[i], inputs[i].bytes()))
        .map_err(|e| io_fail(output, &e))
}

fn extract(argv0: &str, parsed: &Parsed, name: &str) -> Result<(), Fail> {
    let input = Input::open(name).map_err(|e| io_fail(name, &e))?;
    let found = offload_binary::find_images(input.bytes(), &Limits::default())
        .map_err(|e| Fail(format!("'{name}': {}: {e}", e.llvm_message())))?;
    for filter in parsed.all("image") {
        let args = ImageArgs::parse(filter);
        let matched: Vec<&FoundImage<'_>> =
            found.iter().filter(|f| args.matches(&f.image)).collect();
        if matched.is_empty() {
            continue;
        }
        if parsed.flag("archive") {
            let Some(file) = args.get("file") else {
                return Err(Fail("Image must have a 'file' argument.".into()));
            };
            // LLVM names every member after the buffer it read: the input
            // path exactly as typed.
            let member_name = name.to_string();
            let members: Vec<archive::Member<'_>> = matched
                .iter()
                .map(|f| archive::Member {
                    name: member_name.clone(),
                    data: &f.image.image,
                })
                .collect();
            let layout =
                archive::layout_gnu(&members, true).map_err(|e| Fail(format!("'{file}': {e}")))?;
            write_layout(file, &layout, |i| (&input, members[i].data))
                .map_err(|e| io_fail(file, &e))?;
        } else if let Some(file) = args.get("file") {
            if matched.len() > 1 {
                eprintln!("{argv0}: warning: Multiple inputs match to a single file, '{file}'");
            }
            let last = matched[matched.len() - 1];
            write_bytes(file, &input, &last.image.image).map_err(|e| io_fail(file, &e))?;
        } else {
            for (i, f) in matched.iter().enumerate() {
                let img = &f.image;
                let file = format!(
                    "{}-{}-{}.{i}.{}",
                    llvm_stem(name),
                    String::from_utf8_lossy(img.triple()),
                    String::from_utf8_lossy(img.arch()),
                    img.image_kind.extension()
                );
                // Names come from the file: keep them inside the directory.
                let file = file.replace(['/', '\0'], "_");
                write_bytes(&file, &input, &img.image).map_err(|e| io_fail(&file, &e))?;
            }
        }
    }
    Ok(())
}

//! `nvprune` run under its own name (issue #61): NVIDIA's command line
//! (`-arch`, `-gencode`/`--generate-code`, `-o`, `-v`), its messages on
//! standard error and its exit codes, parsed here and not by clap or
//! `llvm_cl`.
//!
//! The pruning is `prune::prune_path`'s. On what nvprune prunes, a
//! relocatable object or a static archive, nvprune's rule is exact: a cubin
//! stays when its SM is named, PTX when its virtual arch is; every other
//! CUDA image goes. That is said to `prune_path` as `--drop` rules, one per
//! SM and kind not kept (`sm_75:cubin`, `sm_80:ptx`, …), so the bytes are
//! nvprune's. Where nvprune refuses ("not relocatable": linked programs,
//! shared libraries, and wheels and other files offload-kit reads), the
//! file is pruned as `offload-kit prune --keep` prunes it: each SM named
//! keeps what a device of it loads, and the newest PTX it compiles where
//! nvprune would keep PTX.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::prune::{self, Destination, PathErrorKind, PathOptions, Ptx, Rules, Selection};
use crate::scan::rule::Rule;
use crate::targets;

mod cl;

use cl::{Code, Parsed, fatal, warning};

/// Runs `nvprune` with `args` (the arguments after the program name).
/// Its messages start with the program's name, as nvprune's do.
pub fn main(argv0: &str, args: &[String]) -> ExitCode {
    let prog = super::prog_name(argv0);
    let parsed = match cl::parse(prog, args) {
        Ok(p) => p,
        Err(done) => return done,
    };
    match run(prog, &parsed) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fatal(prog, &message),
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

/// Reads what `input` is, from its first bytes; nvprune's message for a
/// file it cannot open (and ours for a directory, where nvprune says
/// "Memory allocation failure").
fn form_of(input: &Path, shown: &str) -> Result<Form, String> {
    use std::io::Read;
    let not_open = || format!("Could not open input file '{shown}'");
    let meta = std::fs::metadata(input).map_err(|_| not_open())?;
    if meta.is_dir() {
        return Err(format!("Input file '{shown}' is a directory"));
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

/// Prunes the input as the command line says.
fn run(prog: &str, p: &Parsed) -> Result<(), String> {
    let input = PathBuf::from(&p.input);
    let form = form_of(&input, &p.input)?;
    let selection = match form {
        Form::Object | Form::Archive => exact_selection(&p.keep),
        Form::Other => loader_selection(&p.keep),
    };
    if p.verbose {
        for line in verbose_lines(&p.input, form, &selection) {
            eprintln!("{line}");
        }
    }
    let mut opts = PathOptions::default();
    opts.destination = Destination::File(PathBuf::from(&p.output));
    // nvprune writes a file that keeps no device code (and warns).
    opts.prune.allow_empty = true;
    // nvprune keeps the input's string tables as they are.
    opts.prune.keep_string_tables = true;
    let report = prune::prune_path(&input, &selection, &opts).map_err(|e| match e.kind() {
        PathErrorKind::Open => format!("Could not open input file '{}'", p.input),
        PathErrorKind::Write => format!("Could not open output file '{}'", p.output),
        _ => e.chain(),
    })?;
    // A file of another kind that holds no device code (nothing kept or
    // dropped) is what nvprune refuses by name; the copy written goes.
    if form == Form::Other && report.kept.is_empty() && report.dropped.is_empty() {
        // (Not when it is the input itself, written over with its own bytes.)
        if std::fs::canonicalize(&p.output).ok() != std::fs::canonicalize(&input).ok() {
            let _ = std::fs::remove_file(&p.output);
        }
        return Err(format!("Input file '{}' not relocatable", p.input));
    }
    let cuda_kept = report
        .kept
        .iter()
        .any(|g| targets::parse_sm(&g.target).is_some());
    if !cuda_kept {
        warning(
            prog,
            "No device code that matched architecture, so stripped out all device code",
        );
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

/// The CUDA arch names an SM number is written as: `sm_N`, and `sm_Na`
/// and `sm_Nf` where they exist.
fn variants(sm: &targets::CudaSm) -> Vec<String> {
    let mut v = vec![format!("sm_{}", sm.number)];
    if sm.a {
        v.push(format!("sm_{}a", sm.number));
    }
    if sm.f {
        v.push(format!("sm_{}f", sm.number));
    }
    v
}

/// nvprune's rule on a relocatable file: every CUDA image goes but the
/// cubins of the SMs named and the PTX of the virtual archs named, as
/// `--drop` rules over every SM offload-kit knows (an SM with a variant
/// kept loses its other variants one by one; its plain code stays then).
fn exact_selection(keep: &[Code]) -> Selection {
    let mut rules = Vec::new();
    for sm in targets::CUDA_SMS {
        let names = variants(sm);
        for kind in ["cubin", "ptx"] {
            let kept = |name: &str| {
                keep.iter()
                    .any(|c| c.arch == name && (kind == "ptx") == c.ptx)
            };
            let dropped: Vec<&String> = if names.iter().any(|n| kept(n)) {
                names.iter().skip(1).filter(|n| !kept(n)).collect()
            } else {
                names.iter().take(1).collect()
            };
            rules.extend(
                dropped
                    .into_iter()
                    .filter_map(|n| Rule::parse(&format!("{n}:{kind}")).ok()),
            );
        }
    }
    Selection {
        rules: Rules::Drop(rules),
        ptx: Ptx::None,
    }
}

/// `offload-kit prune --keep`'s rule for the same command line, for the
/// files nvprune refuses. nvprune's `-arch sm_80` keeps the sm_80 cubin and
/// no PTX: the same as `--keep sm_80 --ptx none`, which keeps what sm_80
/// devices load. With PTX named too, an SM named for both keeps what its
/// devices load and the newest PTX they compile (`--keep sm_80`); for its
/// cubin alone, no PTX (`sm_80:cubin`); for its PTX alone, that PTX only
/// (`sm_80:ptx`).
fn loader_selection(keep: &[Code]) -> Selection {
    let mut archs: Vec<&str> = keep.iter().map(|c| c.arch.as_str()).collect();
    archs.sort_unstable();
    archs.dedup();
    let any_ptx = keep.iter().any(|c| c.ptx);
    let mut rules: Vec<Rule> = Vec::new();
    for arch in archs {
        let cubin = keep.iter().any(|c| c.arch == arch && !c.ptx);
        let ptx = keep.iter().any(|c| c.arch == arch && c.ptx);
        let text = match (cubin, ptx) {
            (true, false) if any_ptx => format!("{arch}:cubin"),
            (true, _) => arch.to_string(),
            (false, _) => format!("{arch}:ptx"),
        };
        rules.extend(Rule::parse(&text).ok());
    }
    Selection {
        rules: Rules::Keep(rules),
        ptx: if any_ptx { Ptx::Newest } else { Ptx::None },
    }
}

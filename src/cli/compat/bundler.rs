//! `clang-offload-bundler` (LLVM 22): bundle, unbundle and list, with its
//! option syntax, its checks in its order, and its messages.
//!
//! Differences, all where LLVM crashes, writes wrong bytes or is vague: a
//! truncated or inconsistent bundle, `-bundle-align=0`, a text entry without
//! its end marker, and two targets that normalize to the same ID are errors
//! naming the file (after LLVM's line for the case, where LLVM has one).
//!
//! `-###` prints the `llvm-objcopy` command lines LLVM 22 prints for object
//! bundles, found where LLVM looks (beside the bundler as invoked, then on
//! `PATH`; `unable to find 'llvm-objcopy' in path` when absent, checked
//! first as LLVM does), and leaves what LLVM leaves: an empty output when
//! bundling, an empty host output when unbundling. Without `-###`
//! offload-kit needs no llvm-objcopy (LLVM 22 refuses every call without
//! one).
//!
//! Object bundles (`-type=o`, and `-type=a` members) are edited in process
//! (see `offload_kit::bundle::object`), ELF only. Further differences: an
//! object file that does not parse is an error naming it (LLVM falls back to
//! the binary format and finds no bundle); HIP-only targets with an object
//! input are an error (LLVM 22 segfaults); the host object of a compressed
//! object bundle is extracted (LLVM 22 hands the compressed file to
//! llvm-objcopy, which fails); an archive member whose size runs past the
//! end of the archive is an error (LLVM 22 reads past its buffer); thin
//! archives are refused.

use std::process::ExitCode;

use super::{Fail, prog_name};
use crate::cli::io::{Input, strerror, write_bytes, write_layout};
use crate::cli::llvm_cl::{OptSpec, Parsed};
use offload_kit::bundle::ccob::{
    self, BundlerCompression, EnvSettings, HashCheck, Method, ReadOptions,
};
use offload_kit::bundle::object::Written;
use offload_kit::bundle::ops::Extract;
use offload_kit::bundle::{Format, id::BundleId, ops, select};

mod archive_unbundle;
mod objcopy;

use archive_unbundle::unbundle_archive;
use objcopy::{TempFile, find_objcopy, print_bundle_command, print_command};

const SPECS: &[OptSpec] = &[
    OptSpec::value("type"),
    OptSpec::value("targets"),
    OptSpec::value("input"),
    OptSpec::value("output"),
    OptSpec::value("inputs"),
    OptSpec::value("outputs"),
    OptSpec::flag("unbundle"),
    OptSpec::flag("list"),
    OptSpec::flag("allow-missing-bundles"),
    OptSpec::value("bundle-align"),
    OptSpec::flag("check-input-archive"),
    OptSpec::flag("hip-openmp-compatible"),
    OptSpec::flag("compress"),
    OptSpec::value("compression-level"),
    OptSpec::flag("verbose"),
    OptSpec::flag("###"),
    OptSpec::flag("help"),
    OptSpec::flag("help-list"),
    OptSpec::hidden_flag("help-hidden"),
    OptSpec::hidden_flag("help-list-hidden"),
    OptSpec::flag("version"),
];

fn help_text(prog: &str) -> String {
    format!(
        "OVERVIEW: Bundle files made for several offload targets into one file, or take\n\
         them apart again (offload-kit, a drop-in for clang-offload-bundler {ver}).\n\
         \n\
         USAGE: {prog} [options]\n\
         \n\
         OPTIONS:\n  \
         --###                   - Print the llvm-objcopy commands LLVM would run instead of writing objects\n  \
         --allow-missing-bundles - When unbundling, create empty outputs for targets not found\n  \
         --bundle-align=<uint>   - Alignment of each entry's data in binary bundles\n  \
         --check-input-archive   - Check that an input archive follows the target ID rules\n  \
         --compress              - Compress the bundle (CCOB)\n  \
         --compression-level=<n> - Compression level\n  \
         --hip-openmp-compatible - Let hip and hipv4 entries serve openmp targets and back\n  \
         --input=<string>        - Input file (repeat for several)\n  \
         --inputs=<string>       - Comma-separated input files (deprecated)\n  \
         --list                  - List the entry IDs of a bundle\n  \
         --output=<string>       - Output file (repeat for several)\n  \
         --outputs=<string>      - Comma-separated output files (deprecated)\n  \
         --targets=<string>      - Comma-separated <offload kind>-<target triple>[-<target id>]\n  \
         --type=<string>         - File type: i ii cui hipi d ll bc s o a gch ast\n  \
         --unbundle              - Unbundle into one output per target\n  \
         --verbose               - Print compression details\n  \
         --help                  - Show this help\n  \
         --version               - Show the version\n",
        ver = super::LLVM_VERSION
    )
}

/// The checked command line.
struct Job {
    file_type: String,
    targets: Vec<String>,
    inputs: Vec<String>,
    outputs: Vec<String>,
    unbundle: bool,
    list: bool,
    allow_missing: bool,
    align: u64,
    hip_openmp: bool,
    comp: BundlerCompression,
    check_archive: bool,
    /// `-###`: the llvm-objcopy whose command lines are printed instead of
    /// writing object bundles.
    objcopy: Option<String>,
}

/// Runs the tool with `args` (argv without argv[0]).
pub fn main(argv0: &str, args: &[String]) -> ExitCode {
    let prog = prog_name(argv0);
    let cl = super::Cl {
        tool: "clang-offload-bundler",
        specs: SPECS,
        max_positionals: 0,
        required: &["type"],
    };
    let parsed = match super::parse_prologue(argv0, args, &cl, help_text) {
        Ok(p) => p,
        Err(code) => return code,
    };
    // Numeric options are checked as cl parses them (messages without "error:").
    let align = match parsed.last("bundle-align") {
        None => 1,
        Some(v) => match parse_uint(v) {
            Some(n) => n,
            None => {
                return print_lines(&[format!(
                    "{prog}: for the --bundle-align option: '{v}' value invalid for uint argument!"
                )]);
            }
        },
    };
    let level = match parsed.last("compression-level") {
        None => None,
        Some(v) => match v.parse::<i32>() {
            Ok(n) => Some(n),
            Err(_) => {
                return print_lines(&[format!(
                    "{prog}: for the --compression-level option: '{v}' value invalid for integer argument!"
                )]);
            }
        },
    };
    // LLVM looks for llvm-objcopy before any other check; offload-kit only
    // needs it to print its command lines.
    let objcopy = if parsed.flag("###") {
        match find_objcopy(argv0) {
            Some(p) => Some(p),
            None => {
                eprintln!("{argv0}: error: unable to find 'llvm-objcopy' in path");
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    let job = check(argv0, &parsed, align, level).map(|mut j| {
        j.objcopy = objcopy;
        j
    });
    match job.and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.report(argv0),
    }
}

fn print_lines(lines: &[String]) -> ExitCode {
    for l in lines {
        eprintln!("{l}");
    }
    ExitCode::FAILURE
}

/// LLVM's `uint` parser: decimal, `0x` hex or leading-`0` octal, 32 bits.
fn parse_uint(v: &str) -> Option<u64> {
    let n = if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()?
    } else if v.len() > 1 && v.starts_with('0') {
        u32::from_str_radix(&v[1..], 8).ok()?
    } else {
        v.parse::<u32>().ok()?
    };
    Some(u64::from(n))
}

fn comma_list<'a>(parsed: &'a Parsed, name: &'a str) -> Vec<String> {
    parsed
        .all(name)
        .flat_map(|v| v.split(','))
        .map(str::to_string)
        .collect()
}

/// LLVM's checks, in LLVM's order.
fn check(argv0: &str, p: &Parsed, align: u64, level: Option<i32>) -> Result<Job, Fail> {
    let fail = |m: &str| Err(Fail::new(m));
    let has = |n: &str| p.all(n).next().is_some();
    if has("input") && has("inputs") {
        return fail("-inputs and -input cannot be used together, use only -input instead");
    }
    if has("output") && has("outputs") {
        return fail("-outputs and -output cannot be used together, use only -output instead");
    }
    if has("inputs") {
        eprintln!("{argv0}: warning: -inputs is deprecated, use -input instead");
    }
    if has("outputs") {
        eprintln!("{argv0}: warning: -outputs is deprecated, use -output instead");
    }
    let inputs: Vec<String> = if has("inputs") {
        comma_list(p, "inputs")
    } else {
        p.all("input").map(str::to_string).collect()
    };
    let outputs: Vec<String> = if has("outputs") {
        comma_list(p, "outputs")
    } else {
        p.all("output").map(str::to_string).collect()
    };
    let targets = comma_list(p, "targets");
    let (unbundle, list) = (p.flag("unbundle"), p.flag("list"));
    let file_type = p.last("type").unwrap_or_default().to_string();
    if list && unbundle {
        return fail("-unbundle and -list cannot be used together");
    }
    if list {
        if inputs.len() != 1 {
            return fail("only one input file supported for -list");
        }
        if !outputs.is_empty() {
            return fail("-outputs option is invalid for -list");
        }
        if !targets.is_empty() {
            return fail("-targets option is invalid for -list");
        }
    } else {
        if p.flag("check-input-archive") {
            if !unbundle {
                return fail("-check-input-archive cannot be used while bundling");
            }
            if file_type != "a" {
                return fail(
                    "-check-input-archive can only be used for unbundling archives (-type=a)",
                );
            }
        }
        if outputs.is_empty() {
            return fail("no output file specified!");
        }
        if targets.is_empty() {
            return fail("for the --targets option: must be specified at least once!");
        }
        if unbundle {
            if inputs.len() != 1 {
                return fail("only one input file supported in unbundling mode");
            }
            if outputs.len() != targets.len() {
                return fail("number of output files and targets should match in unbundling mode");
            }
        } else {
            if file_type == "a" {
                return fail("Archive files are only supported for unbundling");
            }
            if outputs.len() != 1 {
                return fail("only one output file supported in bundling mode");
            }
            if inputs.len() != targets.len() {
                return fail("number of input files and targets should match in bundling mode");
            }
        }
    }
    if align == 0 {
        // LLVM 22 divides by zero here.
        return fail("-bundle-align must be at least 1");
    }
    // The environment is read when LLVM builds its configuration, after the
    // checks above; its warnings go to stderr as they are found.
    let env = EnvSettings::from_lookup(|k| std::env::var(k).ok());
    for w in &env.warnings {
        eprintln!("{w}");
    }
    let flag = |n: &str| p.last(n).map(|v| v == "true");
    let comp = env.resolve(flag("compress"), flag("verbose"), level, Method::ZSTD);
    Ok(Job {
        file_type,
        targets,
        inputs,
        outputs,
        unbundle,
        list,
        allow_missing: p.flag("allow-missing-bundles"),
        align,
        hip_openmp: p.flag("hip-openmp-compatible"),
        comp,
        check_archive: p.flag("check-input-archive"),
        objcopy: None,
    })
}

/// The format for the file type, or LLVM's error for an unknown type.
fn handler(file_type: &str, host: &[u8]) -> Result<Format, Fail> {
    Format::for_type(file_type, host)
        .ok_or_else(|| Fail::new(format!("'{file_type}': invalid file type specified")))
}

fn open(name: &str) -> Result<Input, Fail> {
    Input::open(name).map_err(|e| Fail::new(format!("'{name}': {}", strerror(&e))))
}

fn run(job: Job) -> Result<(), Fail> {
    if job.list {
        list(&job)
    } else if job.unbundle {
        if job.file_type == "a" {
            return unbundle_archive(&job);
        }
        unbundle(&job)
    } else {
        bundle(&job)
    }
}

/// The targets, checked and normalized (LLVM's target checks, in its order).
fn targets(job: &Job) -> Result<Vec<BundleId>, Fail> {
    offload_kit::bundle::id::check_targets(&job.targets, !job.unbundle && !job.list)
        .map_err(|e| Fail::new(e.to_string()))
}

fn bundle(job: &Job) -> Result<(), Fail> {
    let targets = ops::Targets::for_bundling(&job.targets).map_err(|e| match e {
        ops::TargetsError::Invalid(e) => Fail::new(e.to_string()),
        // LLVM 22 writes offsets that point at the wrong data here.
        ops::TargetsError::Duplicate { first, second, id } => Fail::new(format!(
            "targets '{}' and '{}' are the same bundle entry '{id}' once normalized",
            job.targets[first], job.targets[second]
        )),
    })?;
    let inputs: Vec<Input> = job
        .inputs
        .iter()
        .map(|n| open(n))
        .collect::<Result<_, _>>()?;
    let views: Vec<&[u8]> = inputs.iter().map(Input::bytes).collect();
    let host = targets.host();
    let format =
        ops::bundle_format(&job.file_type, views[host]).map_err(|e| bundle_fail(job, host, e))?;
    if format == Format::Object {
        // `-compress` does not change an object bundle: LLVM compresses its
        // (empty) bundle buffer, which the objcopy output then replaces, so
        // only the verbose report shows.
        if targets.ids.iter().any(BundleId::is_host) && job.comp.compress {
            compress(job, &[])?;
        }
        if let Some(objcopy) = &job.objcopy
            && targets.ids.iter().any(BundleId::is_host)
        {
            return print_bundle_command(job, objcopy, &targets, &inputs[host]);
        }
    }
    let bundled =
        ops::bundle(&targets, format, &views, job.align).map_err(|e| bundle_fail(job, host, e))?;
    let out = &job.outputs[0];
    match &bundled {
        ops::Bundled::Object { written, .. } => {
            let sources = bundled.sources(&targets, &views);
            let owners: Vec<&Input> = std::iter::once(&inputs[host]).chain(&inputs).collect();
            let sources: Vec<(&Input, &[u8])> = owners.into_iter().zip(sources).collect();
            write_object(out, written, &sources)
        }
        ops::Bundled::Layout(layout) if job.comp.compress => {
            let start = std::time::Instant::now();
            let (packed, report) = ops::compress_layout(layout, &views, &job.comp.options)
                .map_err(|e| Fail::new(ccob::llvm_message(&e).unwrap_or_else(|| e.to_string())))?;
            if job.comp.verbose {
                eprint!("{}", report.verbose_report(start.elapsed()));
            }
            let holder = Input::from_vec(packed);
            write_bytes(out, &holder, holder.bytes())
                .map_err(|e| Fail::new(format!("'{out}': {}", strerror(&e))))
        }
        ops::Bundled::Layout(layout) => write_layout(out, layout, |i| (&inputs[i], views[i]))
            .map_err(|e| Fail::new(format!("'{out}': {}", strerror(&e)))),
    }
}

/// LLVM's message (or ours, naming the file) for a failed bundling.
fn bundle_fail(job: &Job, host: usize, e: ops::BundleError) -> Fail {
    match e {
        ops::BundleError::UnknownType => {
            Fail::new(format!("'{}': invalid file type specified", job.file_type))
        }
        // LLVM 22 crashes here (it has no host input to add sections to).
        ops::BundleError::ObjectWithoutHost => Fail::new(
            "bundling object files (-type=o) needs a host target: only offload \
             targets were given, and LLVM 22 crashes on this",
        ),
        ops::BundleError::Object(e) => Fail::new(format!("'{}': {e}", job.inputs[host])),
        ops::BundleError::Layout(e) => Fail::new(e.to_string()),
    }
}

/// The input's bytes, decompressed when it is a CCOB.
struct Bundle {
    input: Input,
    inflated: Option<Input>,
}

impl Bundle {
    fn open(job: &Job, name: &str) -> Result<Bundle, Fail> {
        let input = open(name)?;
        let inflated = decompress(job, name, input.bytes())?.map(Input::from_vec);
        if inflated.is_none() && job.comp.verbose {
            eprintln!("Uncompressed bundle.");
        }
        Ok(Bundle { input, inflated })
    }
    fn source(&self) -> &Input {
        self.inflated.as_ref().unwrap_or(&self.input)
    }
    fn bytes(&self) -> &[u8] {
        self.source().bytes()
    }
}

fn list(job: &Job) -> Result<(), Fail> {
    let name = &job.inputs[0];
    let b = Bundle::open(job, name)?;
    let handler = handler(&job.file_type, b.bytes())?;
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let ids = ops::list(b.bytes(), handler).map_err(|e| Fail::new(format!("'{name}': {e}")))?;
    // LLVM's bytes, raw, for scripts and logs; on a terminal, an ID from
    // the file could send it commands, so it is shown escaped there.
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
    for id in ids {
        if terminal {
            let _ = crate::cli::io::print_line(&mut out, &String::from_utf8_lossy(id));
        } else {
            let _ = out.write_all(id);
            let _ = out.write_all(b"\n");
        }
    }
    Ok(())
}

fn unbundle(job: &Job) -> Result<(), Fail> {
    let requests = targets(job)?;
    let name = &job.inputs[0];
    let b = Bundle::open(job, name)?;
    let handler = handler(&job.file_type, b.bytes())?;
    let found = ops::entries(b.bytes(), handler).map_err(|e| {
        if job.allow_missing {
            // LLVM goes on (or crashes): there is no line of its to keep.
            return Fail::new(format!("'{name}': {e}"));
        }
        // LLVM's reader stops at the fault and finds no bundle (or crashes,
        // when it had stored an entry first): its line is the one for
        // missing bundles.
        let all = requests.iter().map(BundleId::normalized).collect();
        Fail::with_note(
            format!("Can't find bundles for {}", select::missing_list(all)),
            format!("'{name}': {e}"),
        )
    })?;
    let got = ops::unbundle(&found, handler, &requests, job.hip_openmp).map_err(|e| {
        Fail::with_note(
            "invalid bundle id read from the bundle",
            format!("'{name}': {e}"),
        )
    })?;
    let write = |out: &str, data: &[u8]| -> Result<(), Fail> {
        write_bytes(out, b.source(), data)
            .map_err(|e| Fail::new(format!("'{out}': {}", strerror(&e))))
    };
    for (i, x) in got.iter().enumerate() {
        match x {
            Extract::Entry(data) => write(&job.outputs[i], data)?,
            Extract::ObjectHost => {
                if let Some(objcopy) = &job.objcopy {
                    // LLVM creates the output, then prints instead of
                    // running llvm-objcopy into it: it stays empty.
                    write(&job.outputs[i], &[])?;
                    let tmp = TempFile::create(b"")?;
                    print_command(
                        objcopy,
                        &[
                            "--regex",
                            "--remove-section=__CLANG_OFFLOAD_BUNDLE__.*",
                            "--",
                            name,
                            tmp.name(),
                        ],
                    );
                    continue;
                }
                // The host's code is the object itself, without the bundle.
                let w =
                    ops::host_object(b.bytes()).map_err(|e| Fail::new(format!("'{name}': {e}")))?;
                write_object(&job.outputs[i], &w, &[(b.source(), b.bytes())])?;
            }
            Extract::Missing | Extract::MissingHost => {}
        }
    }
    let missing: Vec<usize> = (0..requests.len())
        .filter(|&i| matches!(got[i], Extract::Missing | Extract::MissingHost))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !job.allow_missing {
        let ids = missing.iter().map(|&i| requests[i].normalized()).collect();
        return Err(Fail::new(format!(
            "Can't find bundles for {}",
            select::missing_list(ids)
        )));
    }
    for &i in &missing {
        if got[i] == Extract::MissingHost {
            // No entry matched: LLVM takes the input for the host's code.
            write(&job.outputs[i], b.bytes())?;
        } else {
            write(&job.outputs[i], &[])?;
        }
    }
    Ok(())
}

/// Writes an object made by `offload_kit::bundle::object` (see
/// [`crate::cli::io::write_object`]).
fn write_object(out: &str, w: &Written, sources: &[(&Input, &[u8])]) -> Result<(), Fail> {
    crate::cli::io::write_object(out, w, sources)
        .map_err(|e| Fail::new(format!("'{out}': {}", strerror(&e))))
}

/// Compresses a whole bundle into a CCOB (printing LLVM's report when verbose).
fn compress(job: &Job, whole: &[u8]) -> Result<Vec<u8>, Fail> {
    let start = std::time::Instant::now();
    let (packed, report) = ccob::compress_to_vec(whole, &job.comp.options)
        .map_err(|e| Fail::new(ccob::llvm_message(&e).unwrap_or_else(|| e.to_string())))?;
    if job.comp.verbose {
        eprint!("{}", report.verbose_report(start.elapsed()));
    }
    Ok(packed)
}

/// Decompresses `data` if it is a CCOB (checking its hash, which LLVM does
/// not), printing LLVM's report when verbose.
fn decompress(job: &Job, name: &str, data: &[u8]) -> Result<Option<Vec<u8>>, Fail> {
    let start = std::time::Instant::now();
    let opts = ReadOptions {
        hash: HashCheck::Enforce,
        ..ReadOptions::default()
    };
    let d = ops::open(data, &opts).map_err(|e| {
        // LLVM's line, then ours where it says more; for faults LLVM does
        // not detect (it goes on with garbage), ours alone, naming the file.
        let own = ccob::fault(&e).map(ToString::to_string);
        match ccob::llvm_message(&e) {
            Some(llvm) if own.as_ref() == Some(&llvm) => Fail::with_note(
                format!("Failed to decompress input: {llvm}"),
                format!("'{name}'"),
            ),
            Some(llvm) => Fail::with_note(
                format!("Failed to decompress input: {llvm}"),
                format!("'{name}': {e}"),
            ),
            None => Fail::new(format!("'{name}': Failed to decompress input: {e}")),
        }
    })?;
    let Some(d) = d else { return Ok(None) };
    if job.comp.verbose {
        eprint!("{}", d.verbose_report(start.elapsed()));
    }
    Ok(Some(d.data))
}

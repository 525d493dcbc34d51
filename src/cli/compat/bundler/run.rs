//! Carrying out a checked bundler command: bundle, list, unbundle (archives
//! in `archive_unbundle.rs`, compressed binary bundles streamed in
//! `streaming.rs`), compressing and decompressing CCOBs with LLVM's verbose
//! reports.

use super::archive_unbundle::unbundle_archive;
use super::objcopy::{TempFile, print_bundle_command, print_command};
use super::streaming::{Streaming, stream, streaming, unbundle_streaming};
use super::verbose::{compress_report, decompress_report, decompress_report_streamed};
use super::{Fail, Job};
use crate::bundle::ccob::{self, HashCheck, ReadOptions};
use crate::bundle::object::Written;
use crate::bundle::ops::Extract;
use crate::bundle::{Format, id::BundleId, ops, select};
use crate::cli::compress::{Failure, write_ccob};
use crate::cli::io::{Input, strerror, write_bytes, write_layout};

/// The format for the file type, or LLVM's error for an unknown type.
fn handler(file_type: &str, host: &[u8]) -> Result<Format, Fail> {
    Format::for_type(file_type, host)
        .ok_or_else(|| Fail::new(format!("'{file_type}': invalid file type specified")))
}

/// Opens an input, with LLVM's message (`'<file>': <strerror>`) on failure.
pub(super) fn open(name: &str) -> Result<Input, Fail> {
    Input::open(name).map_err(|e| Fail::new(format!("'{name}': {}", strerror(&e))))
}

/// Carries out a checked command line.
pub(super) fn run(job: Job) -> Result<(), Fail> {
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
pub(super) fn targets(job: &Job) -> Result<Vec<BundleId>, Fail> {
    crate::bundle::id::check_targets(&job.targets, !job.unbundle && !job.list)
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
            let report =
                write_ccob(out, layout, &inputs, &job.inputs, &job.comp.options).map_err(|f| {
                    match f {
                        Failure::Ccob(e) => {
                            Fail::new(ccob::llvm_message(&e).unwrap_or_else(|| e.to_string()))
                        }
                        Failure::File(path, e) => Fail::new(format!("'{path}': {}", strerror(&e))),
                    }
                })?;
            if job.comp.verbose {
                eprint!("{}", compress_report(&report, start.elapsed()));
            }
            Ok(())
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
    fn from_input(job: &Job, name: &str, input: Input) -> Result<Bundle, Fail> {
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
    let input = open(name)?;
    if let Some(ids) = list_streaming(job, name, &input) {
        return print_ids(ids?);
    }
    let b = Bundle::from_input(job, name, input)?;
    let handler = handler(&job.file_type, b.bytes())?;
    let ids = ops::list(b.bytes(), handler).map_err(|e| Fail::new(format!("'{name}': {e}")))?;
    print_ids(ids)
}

/// Lists a CCOB holding a binary bundle from its bundle header (see
/// [`streaming`]). The rest is decompressed only as far as LLVM's faults
/// need: with `-verbose`, all of it (for the hash); without, nothing more
/// when the zstd frame headers confirm the declared size.
fn list_streaming(job: &Job, name: &str, input: &Input) -> Option<Result<Vec<Vec<u8>>, Fail>> {
    let Streaming { c, opts, records } = streaming(job, input)?;
    let start = std::time::Instant::now();
    let run = || -> Result<Vec<Vec<u8>>, Fail> {
        let streamed = stream(&c, input, &mut [], &opts).map_err(|e| decompress_fail(name, &e))?;
        if job.comp.verbose {
            eprint!("{}", decompress_report_streamed(&streamed, start.elapsed()));
        }
        let ids: Vec<&[u8]> = records.iter().map(|r| &r.id[..]).collect();
        Ok(crate::bundle::binary::llvm_order(&ids)
            .into_iter()
            .map(|i| records[i].id.clone())
            .collect())
    };
    Some(run())
}

/// Prints `-list`'s IDs.
fn print_ids<I: AsRef<[u8]>>(ids: Vec<I>) -> Result<(), Fail> {
    use std::io::Write;
    let mut out = crate::cli::io::Report::stdout();
    // LLVM's bytes, raw, for scripts and logs; on a terminal, an ID from
    // the file could send it commands, so it is shown escaped there.
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
    for id in &ids {
        let id = id.as_ref();
        if terminal {
            let _ = crate::cli::io::print_line(&mut out, &String::from_utf8_lossy(id));
        } else {
            let _ = out.write_all(id);
            let _ = out.write_all(b"\n");
        }
    }
    let _ = out.flush();
    Ok(())
}

fn unbundle(job: &Job) -> Result<(), Fail> {
    let requests = targets(job)?;
    let name = &job.inputs[0];
    let input = open(name)?;
    if let Some(done) = unbundle_streaming(job, name, &input, &requests) {
        return done;
    }
    let b = Bundle::from_input(job, name, input)?;
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
        return Err(missing_bundles(&requests, &missing));
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

/// Writes an object made by `crate::bundle::object` (see
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
        eprint!("{}", compress_report(&report, start.elapsed()));
    }
    Ok(packed)
}

/// The hash policy of the drop-in: LLVM computes the hash only for
/// `-verbose`, and so do we, but a mismatch is then an error (LLVM only
/// prints `Hashes match: No`).
pub(super) fn hash_policy(job: &Job) -> HashCheck {
    if job.comp.verbose {
        HashCheck::Enforce
    } else {
        HashCheck::Skip
    }
}

/// Decompresses `data` whole if it is a CCOB (checking its hash where LLVM
/// computes it: see [`hash_policy`]), printing LLVM's report when verbose.
fn decompress(job: &Job, name: &str, data: &[u8]) -> Result<Option<Vec<u8>>, Fail> {
    let start = std::time::Instant::now();
    let opts = ReadOptions {
        hash: hash_policy(job),
        ..ReadOptions::default()
    };
    let d = ops::open(data, &opts).map_err(|e| decompress_fail(name, &e))?;
    let Some(d) = d else { return Ok(None) };
    if job.comp.verbose {
        eprint!("{}", decompress_report(&d, start.elapsed()));
    }
    Ok(Some(d.data))
}

/// LLVM's line for a CCOB that fails to decompress, then ours where it says
/// more; for faults LLVM does not detect (it goes on with garbage), ours
/// alone, naming the file.
pub(super) fn decompress_fail(name: &str, e: &crate::Error) -> Fail {
    let own = ccob::fault(e).map(ToString::to_string);
    match ccob::llvm_message(e) {
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
}

/// LLVM's error for the requested targets `missing` (indices into
/// `requests`) that the bundle does not hold.
pub(super) fn missing_bundles(requests: &[crate::bundle::id::BundleId], missing: &[usize]) -> Fail {
    let ids = missing.iter().map(|&i| requests[i].normalized()).collect();
    Fail::new(format!(
        "Can't find bundles for {}",
        select::missing_list(ids)
    ))
}

//! Carrying out a checked bundler command: bundle, list, unbundle (archives
//! in `archive.rs`, compressed binary bundles streamed in `stream.rs`),
//! compressing and decompressing CCOBs with LLVM's verbose reports.

use object::FileKind;

use super::archive::unbundle_archive;
use super::check::{Job, read_options, targets};
use super::failure::{Failure, Note, Say, decompress_fail, missing_bundles, open};
use super::objcopy::{TempFile, command, print_bundle_command};
use super::stream::{Streaming, stream, streaming, unbundle_streaming};
use super::verbose::{compress_report, decompress_report, decompress_report_streamed};
use crate::bundle::ccob;
use crate::bundle::ops::Extract;
use crate::bundle::{Format, id::BundleId, ops, select};
use crate::files::{Input, write_bytes};
use crate::tools::bundler::write::write_object;
use crate::tools::bundler::write::{WriteFailure, write_bundled};

/// The format for `-type=file_type` of an input whose format is `kind`
/// (`object_kind`'s answer, read once per input), or LLVM's error for an
/// unknown type.
fn handler(file_type: &str, kind: Option<FileKind>) -> Result<Format, Failure> {
    Format::for_type_of(file_type, kind)
        .ok_or_else(|| Failure::new(format!("'{file_type}': invalid file type specified")))
}

/// Carries out a checked command line, saying what LLVM says on the way
/// to `say`: the entry IDs `-list` prints, in order (none for the other
/// modes).
pub fn run(job: &Job, say: &mut Say<'_>) -> Result<Vec<Vec<u8>>, Failure> {
    if job.list {
        return list(job, say);
    }
    if job.unbundle {
        if job.file_type == "a" {
            unbundle_archive(job, say)?;
        } else {
            unbundle(job, say)?;
        }
    } else {
        bundle(job, say)?;
    }
    Ok(Vec::new())
}

fn bundle(job: &Job, say: &mut Say<'_>) -> Result<(), Failure> {
    let targets = ops::Targets::for_bundling(&job.targets).map_err(|e| match e {
        ops::TargetsError::Invalid(e) => Failure::new(e.to_string()),
        // LLVM 22 writes offsets that point at the wrong data here.
        ops::TargetsError::Duplicate { first, second, id } => Failure::new(format!(
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
    // The host input's format, read once for the format and the edit.
    let host_kind = crate::bundle::object_kind(views[host]);
    let format =
        ops::bundle_format(&job.file_type, host_kind).map_err(|e| bundle_fail(job, host, e))?;
    if format == Format::Object {
        // `-compress` does not change an object bundle: LLVM compresses its
        // (empty) bundle buffer, which the objcopy output then replaces, so
        // only the verbose report shows.
        if targets.ids.iter().any(BundleId::is_host) && job.comp.compress {
            compress(job, &[], say)?;
        }
        if let Some(objcopy) = &job.objcopy
            && targets.ids.iter().any(BundleId::is_host)
        {
            return print_bundle_command(job, objcopy, &targets, &inputs[host], say);
        }
    }
    let bundled = ops::bundle(&targets, format, &views, job.align, host_kind)
        .map_err(|e| bundle_fail(job, host, e))?;
    let out = &job.outputs[0];
    let compress = job.comp.compress.then_some(&job.comp.options);
    let start = std::time::Instant::now();
    let report = write_bundled(out, &bundled, &targets, &inputs, &job.inputs, compress).map_err(
        |f| match f {
            WriteFailure::Output(e) => Failure::file(out, e),
            WriteFailure::Ccob(f) => f.into(),
        },
    )?;
    if let Some(report) = report
        && job.comp.verbose
    {
        say(Note::Text(compress_report(&report, start.elapsed())));
    }
    Ok(())
}

/// LLVM's message (or ours, naming the file) for a failed bundling.
fn bundle_fail(job: &Job, host: usize, e: ops::BundleError) -> Failure {
    match e {
        ops::BundleError::UnknownType => {
            Failure::new(format!("'{}': invalid file type specified", job.file_type))
        }
        // LLVM 22 crashes here (it has no host input to add sections to).
        ops::BundleError::ObjectWithoutHost => Failure::new(
            "bundling object files (-type=o) needs a host target: only offload \
             targets were given, and LLVM 22 crashes on this",
        ),
        ops::BundleError::Object(e) => Failure::new(format!("'{}': {e}", job.inputs[host])),
        ops::BundleError::Layout(e) => Failure::new(e.to_string()),
    }
}

/// The input's bytes, decompressed when it is a CCOB.
struct Bundle {
    input: Input,
    inflated: Option<Input>,
}

impl Bundle {
    fn from_input(
        job: &Job,
        name: &str,
        input: Input,
        say: &mut Say<'_>,
    ) -> Result<Bundle, Failure> {
        let inflated = decompress(job, name, input.bytes(), say)?.map(Input::from_vec);
        if inflated.is_none() && job.comp.verbose {
            say(Note::Text("Uncompressed bundle.\n".into()));
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

fn list(job: &Job, say: &mut Say<'_>) -> Result<Vec<Vec<u8>>, Failure> {
    let name = &job.inputs[0];
    let input = open(name)?;
    if let Some(ids) = list_streaming(job, name, &input, say) {
        return ids;
    }
    let b = Bundle::from_input(job, name, input, say)?;
    let kind = crate::bundle::object_kind(b.bytes());
    let handler = handler(&job.file_type, kind)?;
    let ids =
        ops::list(b.bytes(), handler, kind).map_err(|e| Failure::new(format!("'{name}': {e}")))?;
    Ok(ids.into_iter().map(<[u8]>::to_vec).collect())
}

/// Lists a CCOB holding a binary bundle from its bundle header (see
/// [`streaming`]). The rest is decompressed only as far as LLVM's faults
/// need: with `-verbose`, all of it (for the hash); without, nothing more
/// when the zstd frame headers confirm the declared size.
fn list_streaming(
    job: &Job,
    name: &str,
    input: &Input,
    say: &mut Say<'_>,
) -> Option<Result<Vec<Vec<u8>>, Failure>> {
    let Streaming { c, opts, records } = streaming(job, input)?;
    let start = std::time::Instant::now();
    let mut run = || -> Result<Vec<Vec<u8>>, Failure> {
        let streamed = stream(&c, input, &mut [], &opts).map_err(|e| decompress_fail(name, &e))?;
        if job.comp.verbose {
            say(Note::Text(decompress_report_streamed(
                &streamed,
                start.elapsed(),
            )));
        }
        let ids: Vec<&[u8]> = records.iter().map(|r| &r.id[..]).collect();
        Ok(crate::bundle::binary::llvm_order(&ids)
            .into_iter()
            .map(|i| records[i].id.clone())
            .collect())
    };
    Some(run())
}

fn unbundle(job: &Job, say: &mut Say<'_>) -> Result<(), Failure> {
    let requests = targets(job)?;
    let name = &job.inputs[0];
    let input = open(name)?;
    if let Some(done) = unbundle_streaming(job, name, &input, &requests, say) {
        return done;
    }
    let b = Bundle::from_input(job, name, input, say)?;
    // The input's format, read once for the type, the entries and the
    // host's object.
    let kind = crate::bundle::object_kind(b.bytes());
    let handler = handler(&job.file_type, kind)?;
    let found = ops::entries(b.bytes(), handler, kind).map_err(|e| {
        if job.allow_missing {
            // LLVM goes on (or crashes): there is no line of its to keep.
            return Failure::new(format!("'{name}': {e}"));
        }
        // LLVM's reader stops at the fault and finds no bundle (or crashes,
        // when it had stored an entry first): its line is the one for
        // missing bundles.
        let all = requests.iter().map(BundleId::normalized).collect();
        Failure::with_note(
            format!("Can't find bundles for {}", select::missing_list(all)),
            format!("'{name}': {e}"),
        )
    })?;
    let got = ops::unbundle(&found, handler, &requests, job.hip_openmp).map_err(|e| {
        Failure::with_note(
            "invalid bundle id read from the bundle",
            format!("'{name}': {e}"),
        )
    })?;
    let write = |out: &str, data: &[u8]| -> Result<(), Failure> {
        write_bytes(out, b.source(), data).map_err(|e| Failure::file(out, e))
    };
    for (i, x) in got.iter().enumerate() {
        match x {
            Extract::Entry(data) => write(&job.outputs[i], data)?,
            Extract::ObjectHost => {
                if let Some(objcopy) = &job.objcopy {
                    // LLVM creates the output, then prints instead of
                    // running llvm-objcopy into it: it stays empty.
                    write(&job.outputs[i], &[])?;
                    let tmp = TempFile::create(&job.temp_dir, b"")?;
                    say(Note::Text(command(
                        objcopy,
                        &[
                            "--regex",
                            "--remove-section=__CLANG_OFFLOAD_BUNDLE__.*",
                            "--",
                            name,
                            tmp.name(),
                        ],
                    )));
                    continue;
                }
                // The host's code is the object itself, without the bundle.
                let w = ops::host_object_of(b.bytes(), kind)
                    .map_err(|e| Failure::new(format!("'{name}': {e}")))?;
                let out = &job.outputs[i];
                write_object(out, &w, &[(b.source(), b.bytes())])
                    .map_err(|e| Failure::file(out, e))?;
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

/// Compresses a whole bundle into a CCOB (LLVM's report when verbose).
fn compress(job: &Job, whole: &[u8], say: &mut Say<'_>) -> Result<Vec<u8>, Failure> {
    let start = std::time::Instant::now();
    let (packed, report) = ccob::compress_to_vec(whole, &job.comp.options)
        .map_err(|e| Failure::new(ccob::llvm_message(&e).unwrap_or_else(|| e.to_string())))?;
    if job.comp.verbose {
        say(Note::Text(compress_report(&report, start.elapsed())));
    }
    Ok(packed)
}

/// Decompresses `data` whole if it is a CCOB (checking its hash where LLVM
/// computes it: see [`hash_policy`](super::check::hash_policy)), LLVM's report when verbose.
fn decompress(
    job: &Job,
    name: &str,
    data: &[u8],
    say: &mut Say<'_>,
) -> Result<Option<Vec<u8>>, Failure> {
    let start = std::time::Instant::now();
    let d = ops::open(data, &read_options(job)).map_err(|e| decompress_fail(name, &e))?;
    let Some(d) = d else { return Ok(None) };
    if job.comp.verbose {
        say(Note::Text(decompress_report(&d, start.elapsed())));
    }
    Ok(Some(d.data))
}

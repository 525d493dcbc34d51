//! Unbundling a compressed binary bundle as a stream: the bundle header
//! first, then the contents once into the outputs, in memory that does not
//! grow with the bundle.

use super::check::{Job, read_options};
use super::failure::{Failure, Note, Say, decompress_fail, missing_bundles};
use super::verbose::decompress_report_streamed;
use crate::bundle::ccob::{self, ReadOptions, StreamEnd};
use crate::bundle::{Format, id::BundleId, ops};
use crate::files::{Input, Output};
use crate::tools::bundler::compressed::{self, StreamFailure, Streamable};

/// Unbundles a CCOB holding a binary bundle as a stream (see
/// [`ccob::Ccob::stream_to`]): the bundle header is decompressed first,
/// then the contents once, each wanted entry written to its output as it
/// comes, in memory that does not grow with the bundle. Without the hash
/// (`-verbose`), decompression stops after the last wanted byte. Outputs
/// are renamed into place only once the stream has ended well.
///
/// `None` when the input cannot be streamed (see [`streaming`]).
pub fn unbundle_streaming(
    job: &Job,
    name: &str,
    input: &Input,
    requests: &[BundleId],
    say: &mut Say<'_>,
) -> Option<Result<(), Failure>> {
    let Streaming { c, opts, records } = streaming(job, input)?;
    let picks = ops::unbundle_records(&records, requests, job.hip_openmp).ok()?;
    let mut run = || -> Result<(), Failure> {
        let start = std::time::Instant::now();
        // The outputs that get bytes of the contents, in request order,
        // and the bytes each gets.
        let mut plan = Vec::new();
        let mut which = Vec::new();
        for (i, p) in picks.iter().enumerate() {
            let range = match *p {
                ops::Pick::Record(r) => records[r].offset..records[r].offset + records[r].size,
                // No entry matched: LLVM takes the input for the host's code.
                ops::Pick::MissingHost if job.allow_missing => 0..c.header.uncompressed_size,
                _ => continue,
            };
            plan.push((&job.outputs[i], Some(range)));
            which.push(i);
        }
        let (streamed, outs) =
            compressed::stream_to_files(&plan, |wanted| stream(&c, input, wanted, &opts)).map_err(
                |f| match f {
                    StreamFailure::Create(k, e) | StreamFailure::Write(k, e) => {
                        Failure::file(&job.outputs[which[k]], e)
                    }
                    StreamFailure::Stream(e) => decompress_fail(name, &e),
                },
            )?;
        if job.comp.verbose {
            say(Note::Text(decompress_report_streamed(
                &streamed,
                start.elapsed(),
            )));
        }
        for (i, o) in which.into_iter().zip(outs) {
            o.commit().map_err(|e| Failure::file(&job.outputs[i], e))?;
        }
        let missing: Vec<usize> = (0..requests.len())
            .filter(|&i| !matches!(picks[i], ops::Pick::Record(_)))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if !job.allow_missing {
            return Err(missing_bundles(requests, &missing));
        }
        for &i in missing.iter().filter(|&&i| picks[i] == ops::Pick::Missing) {
            let out = &job.outputs[i];
            let o = Output::create(std::path::Path::new(out)).map_err(|e| Failure::file(out, e))?;
            o.commit().map_err(|e| Failure::file(out, e))?;
        }
        Ok(())
    };
    Some(run())
}

/// A CCOB input that can be read as a stream: it holds a binary bundle
/// (for the `-type` given) whose header reads well.
pub struct Streaming<'a> {
    pub c: ccob::Ccob<'a>,
    pub opts: ReadOptions,
    pub records: Vec<crate::bundle::binary::Record>,
}

/// The input as a [`Streaming`] CCOB, decompressing only its first bytes;
/// `None` when it is anything else, or when anything looks wrong before
/// decompressing (the whole-buffer path then reports it in LLVM's order).
/// The hash is computed only with `-verbose` ([`hash_policy`](super::check::hash_policy)).
pub fn streaming<'a>(job: &Job, input: &'a Input) -> Option<Streaming<'a>> {
    let opts = read_options(job);
    let Streamable { c, records } =
        compressed::streamable(input.bytes(), opts.limits.max_uncompressed(), |prefix| {
            Format::for_type(&job.file_type, prefix)
        })?;
    Some(Streaming { c, opts, records })
}

/// Streams `c` (the CCOB of `input`) into `wanted` as LLVM would read it:
/// to the last wanted byte (see [`StreamEnd::LastWanted`]).
pub fn stream(
    c: &ccob::Ccob<'_>,
    input: &Input,
    wanted: &mut [ccob::Wanted<'_>],
    opts: &ReadOptions,
) -> crate::Result<ccob::Streamed> {
    // Our multi-frame CCOBs are decoded a frame per CPU; LLVM's single
    // frame streams as before.
    let threads = ccob::default_threads();
    compressed::stream_input(c, input, wanted, opts, StreamEnd::LastWanted, threads)
}

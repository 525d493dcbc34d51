//! Unbundling a compressed binary bundle as a stream: the bundle header
//! first, then the contents once into the outputs, in memory that does not
//! grow with the bundle.

use super::run::{decompress_fail, hash_policy, missing_bundles};
use super::verbose::decompress_report_streamed;
use super::{Fail, Job};
use crate::bundle::ccob::{self, ReadOptions};
use crate::bundle::{id::BundleId, ops};
use crate::cli::io::{Input, strerror};

/// Unbundles a CCOB holding a binary bundle as a stream (see
/// [`ccob::Ccob::stream_to`]): the bundle header is decompressed first,
/// then the contents once, each wanted entry written to its output as it
/// comes, in memory that does not grow with the bundle. Without the hash
/// (`-verbose`), decompression stops after the last wanted byte. Outputs
/// are renamed into place only once the stream has ended well.
///
/// `None` when the input cannot be streamed (see [`streaming`]).
pub(super) fn unbundle_streaming(
    job: &Job,
    name: &str,
    input: &Input,
    requests: &[BundleId],
) -> Option<Result<(), Fail>> {
    use crate::bundle::ccob::Wanted;
    use crate::cli::io::Output;
    let Streaming { c, opts, records } = streaming(job, input)?;
    let picks = ops::unbundle_records(&records, requests, job.hip_openmp).ok()?;
    let run = || -> Result<(), Fail> {
        let start = std::time::Instant::now();
        let failed = |out: &str, e: &std::io::Error| Fail::new(format!("'{out}': {}", strerror(e)));
        // The outputs that get bytes of the contents, in request order,
        // and the bytes each gets.
        let mut outs: Vec<(usize, Output)> = Vec::new();
        let mut ranges: Vec<std::ops::Range<u64>> = Vec::new();
        for (i, p) in picks.iter().enumerate() {
            let range = match *p {
                ops::Pick::Record(r) => records[r].offset..records[r].offset + records[r].size,
                // No entry matched: LLVM takes the input for the host's code.
                ops::Pick::MissingHost if job.allow_missing => 0..c.header.uncompressed_size,
                _ => continue,
            };
            let out = &job.outputs[i];
            let o = Output::create(std::path::Path::new(out)).map_err(|e| failed(out, &e))?;
            outs.push((i, o));
            ranges.push(range);
        }
        let mut errors: Vec<Option<std::io::Error>> = Vec::new();
        errors.resize_with(outs.len(), || None);
        let mut sinks: Vec<crate::cli::io::Noting<'_>> = outs
            .iter_mut()
            .zip(&mut errors)
            .map(|((_, o), e)| crate::cli::io::Noting::new(o, e))
            .collect();
        let mut wanted: Vec<Wanted<'_>> = sinks
            .iter_mut()
            .zip(&ranges)
            .map(|(s, r)| Wanted {
                range: r.clone(),
                out: s,
            })
            .collect();
        let streamed = stream(&c, input, &mut wanted, &opts);
        drop(wanted);
        drop(sinks);
        let streamed = match streamed {
            Ok(s) => s,
            Err(e) => {
                if let Some((k, e)) = errors
                    .iter_mut()
                    .enumerate()
                    .find_map(|(k, e)| e.take().map(|e| (k, e)))
                {
                    return Err(failed(&job.outputs[outs[k].0], &e));
                }
                return Err(decompress_fail(name, &e));
            }
        };
        if job.comp.verbose {
            eprint!("{}", decompress_report_streamed(&streamed, start.elapsed()));
        }
        for (i, o) in outs {
            o.commit().map_err(|e| failed(&job.outputs[i], &e))?;
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
            let o = Output::create(std::path::Path::new(out)).map_err(|e| failed(out, &e))?;
            o.commit().map_err(|e| failed(out, &e))?;
        }
        Ok(())
    };
    Some(run())
}

/// A CCOB input that can be read as a stream: it holds a binary bundle
/// (for the `-type` given) whose header reads well.
pub(super) struct Streaming<'a> {
    pub c: ccob::Ccob<'a>,
    pub opts: ReadOptions,
    pub records: Vec<crate::bundle::binary::Record>,
}

/// The input as a [`Streaming`] CCOB, decompressing only its first bytes;
/// `None` when it is anything else, or when anything looks wrong before
/// decompressing (the whole-buffer path then reports it in LLVM's order).
/// The hash is computed only with `-verbose` ([`hash_policy`]).
pub(super) fn streaming<'a>(job: &Job, input: &'a Input) -> Option<Streaming<'a>> {
    use crate::bundle::{Format, SNIFF_LEN};
    let data = input.bytes();
    if !ccob::llvm_treats_as_compressed(data) {
        return None;
    }
    let c = ccob::Ccob::parse_whole(data).ok()?;
    let opts = ReadOptions {
        hash: hash_policy(job),
        ..ReadOptions::default()
    };
    if c.header.uncompressed_size > opts.limits.max_uncompressed {
        return None;
    }
    c.check_declared_size().ok()?;
    let prefix = c.decompress_prefix(SNIFF_LEN).ok()?;
    if Format::for_type(&job.file_type, &prefix) != Some(Format::Binary) {
        return None;
    }
    let records = c.bundle_records().ok()??;
    Some(Streaming { c, opts, records })
}

/// Streams `c` (the CCOB of `input`) into `wanted`, reading the compressed
/// bytes from the file rather than its mapping where possible, so that
/// they do not stay resident.
pub(super) fn stream(
    c: &ccob::Ccob<'_>,
    input: &Input,
    wanted: &mut [ccob::Wanted<'_>],
    opts: &ReadOptions,
) -> crate::Result<ccob::Streamed> {
    use crate::bundle::ccob::StreamEnd;
    // Our multi-frame CCOBs are decoded a frame per CPU; LLVM's single
    // frame streams as before.
    let threads = ccob::default_threads();
    match input.reader(c.payload) {
        Some(r) => c.stream_parallel(r, wanted, opts, StreamEnd::LastWanted, threads),
        None => c.stream_parallel(
            std::io::Cursor::new(c.payload),
            wanted,
            opts,
            StreamEnd::LastWanted,
            threads,
        ),
    }
}

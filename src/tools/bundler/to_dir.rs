//! `offload-kit unbundle`: a bundle's entries written into a directory,
//! every entry (named after the input and the entry ID) or those LLVM's
//! target-ID rules give the targets asked for. A compressed binary bundle
//! is unbundled as a stream, in memory that does not grow with it; any
//! other input is opened whole (a CCOB decompressed in memory). The
//! command line words a [`ToDirError`] and prints the files as
//! [`unbundle_to_dir`] reports them.

use std::io;
use std::ops::Range;
use std::path::Path;

use super::compressed::{self, StreamFailure, Streamable};
use crate::bundle::ccob::{self, HashCheck, ReadOptions, StreamEnd, Wanted};
use crate::bundle::id::{BundleId, TargetError, check_targets};
use crate::bundle::ops::{self, Extract};
use crate::bundle::{Format, binary, select};
use crate::files::{Input, safe_component, write_bytes};
use crate::host::object::Written;
use crate::tools::bundler::write::write_object;

/// What `offload-kit unbundle` is asked for.
#[derive(Debug, Clone)]
pub(crate) struct ToDir<'a> {
    /// The input, as named (in messages and in the names of the files).
    pub input: &'a str,
    /// `TARGET` (to the directory, under the target's normalized ID) or
    /// `TARGET=FILE`; none: every entry.
    pub targets: &'a [String],
    /// The file type, when the format cannot be guessed.
    pub file_type: Option<&'a str>,
    /// Where the files go (created if missing).
    pub output_dir: &'a Path,
    /// Empty files for targets not found, instead of failing.
    pub allow_missing: bool,
    /// hip/hipv4 entries serve openmp targets and back.
    pub hip_openmp: bool,
    /// Most bytes a compressed bundle may decompress to.
    pub max_uncompressed: u64,
    /// Threads for a compressed binary bundle (`None`: the default).
    pub threads: Option<u32>,
}

/// Why [`unbundle_to_dir`] failed.
#[derive(Debug)]
pub(crate) enum ToDirError {
    /// A target is not a valid bundle-entry ID.
    Targets(TargetError),
    /// This file type is not one LLVM knows.
    UnknownType(String),
    /// The input is no clang offload bundle.
    NotABundle,
    /// The input cannot be read (damaged, too large once decompressed).
    Input(crate::Error),
    /// The output directory cannot be created.
    CreateDir(io::Error),
    /// No entry for these targets (LLVM's list of them), and missing
    /// entries are not allowed.
    Missing(String),
    /// This file cannot be written.
    Write(String, io::Error),
    /// The caller's listing failed.
    Listing(io::Error),
}

/// The files a streamed unbundling writes: (file name, the range of its
/// entry's bytes in the bundle; `None` for an empty file).
type StreamPlan = Vec<(String, Option<Range<u64>>)>;

/// Unbundles `input` as `job` says, into `job.output_dir`, calling `listed`
/// with the path of each file once it is in place.
pub(crate) fn unbundle_to_dir(
    job: &ToDir<'_>,
    input: &Input,
    listed: &mut dyn FnMut(&str) -> io::Result<()>,
) -> Result<(), ToDirError> {
    if let Some(done) = unbundle_streaming(job, input, listed) {
        return done;
    }
    unbundle_whole(job, input, listed)
}

/// The targets' IDs and, for `TARGET=FILE`, their files.
fn target_outputs(targets: &[String]) -> (Vec<String>, Vec<Option<String>>) {
    targets
        .iter()
        .map(|t| match t.split_once('=') {
            Some((a, b)) => (a.to_string(), Some(b.to_string())),
            None => (t.clone(), None),
        })
        .unzip()
}

/// A file-name component made from a bundle ID or the input's name.
fn safe(s: &str) -> String {
    safe_component(s, 100)
}

/// The file the `n`th entry (in LLVM's order) of `input`, with this ID, is
/// written to when every entry is: `<input stem>-<ID>.<n>`, both made
/// safe.
fn entry_file(input: &str, id: &[u8], n: usize) -> String {
    let base = safe(crate::llvm::path::stem(input));
    format!("{base}-{}.{n}", safe(&String::from_utf8_lossy(id)))
}

/// The file a request is written to: its `FILE`, else its normalized ID
/// made safe.
fn request_file(out: Option<String>, request: &BundleId) -> String {
    out.unwrap_or_else(|| safe(&request.normalized()))
}

/// Unbundles a CCOB holding a binary bundle as a stream: the bundle
/// header is decompressed first, then all the contents once (the hash
/// is checked), each entry written to its file as it comes, in memory
/// that does not grow with the bundle (see [`ccob::Ccob::stream_from`]).
/// The files are renamed into place only once the whole stream has been
/// read and its hash matched.
///
/// `None` when the input is anything else, or anything looks wrong
/// before decompressing (see [`compressed::streamable`]): the whole-buffer
/// path then reports it.
fn unbundle_streaming(
    job: &ToDir<'_>,
    input: &Input,
    listed: &mut dyn FnMut(&str) -> io::Result<()>,
) -> Option<Result<(), ToDirError>> {
    let Streamable { c, records } =
        compressed::streamable(input.bytes(), job.max_uncompressed, |prefix| {
            match job.file_type {
                Some(t) => Format::for_type(t, prefix),
                None => Format::detect(prefix),
            }
        })?;
    let (plan, missing) = match stream_plan(job, &records)? {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    let opts = ReadOptions {
        hash: HashCheck::Enforce,
        limits: crate::Limits::uncompressed(job.max_uncompressed),
    };
    let threads = job.threads.unwrap_or_else(ccob::default_threads);
    let stream = |wanted: &mut [Wanted<'_>]| -> crate::Result<()> {
        compressed::stream_input(&c, input, wanted, &opts, StreamEnd::Whole, threads).map(|_| ())
    };
    Some(write_streamed(job, &plan, missing, &stream, listed))
}

/// The files a streamed unbundling writes, in order: (file name, the
/// range of its entry's bytes in the bundle; `None` for an empty file),
/// and the requested entries that are missing. `None` where the
/// whole-buffer path must decide (an entry it would refuse).
fn stream_plan(
    job: &ToDir<'_>,
    records: &[binary::Record],
) -> Option<Result<(StreamPlan, Vec<String>), ToDirError>> {
    let mut plan: StreamPlan = Vec::new();
    let range = |r: &binary::Record| Some(r.offset..r.offset + r.size);
    let mut missing = Vec::new();
    if job.targets.is_empty() {
        let ids: Vec<&[u8]> = records.iter().map(|r| &r.id[..]).collect();
        for (n, i) in binary::llvm_order(&ids).into_iter().enumerate() {
            plan.push((entry_file(job.input, &records[i].id, n), range(&records[i])));
        }
        return Some(Ok((plan, missing)));
    }
    let (names, outs) = target_outputs(job.targets);
    let requests = match check_targets(&names, false) {
        Ok(r) => r,
        Err(e) => return Some(Err(ToDirError::Targets(e))),
    };
    let picks = ops::unbundle_records(records, &requests, job.hip_openmp).ok()?;
    for ((p, r), out) in picks.iter().zip(&requests).zip(outs) {
        let name = request_file(out, r);
        match *p {
            ops::Pick::Record(i) => plan.push((name, range(&records[i]))),
            // Missing, when allowed: an empty file.
            _ => {
                missing.push(r.normalized());
                plan.push((name, None));
            }
        }
    }
    Some(Ok((plan, missing)))
}

/// Writes the files of `plan` in the output directory from the bundle's
/// stream (`stream` decompresses it into the entries' writers), each
/// renamed into place only once the whole stream has been read and its
/// hash matched, and lists them; with `missing` entries not allowed,
/// checks the contents and fails naming them.
fn write_streamed(
    job: &ToDir<'_>,
    plan: &StreamPlan,
    missing: Vec<String>,
    stream: &dyn Fn(&mut [Wanted<'_>]) -> crate::Result<()>,
    listed: &mut dyn FnMut(&str) -> io::Result<()>,
) -> Result<(), ToDirError> {
    std::fs::create_dir_all(job.output_dir).map_err(ToDirError::CreateDir)?;
    if !missing.is_empty() && !job.allow_missing {
        // The contents are checked first, as the whole-buffer path does.
        stream(&mut []).map_err(ToDirError::Input)?;
        return Err(ToDirError::Missing(select::missing_list(missing)));
    }
    let shown: StreamPlan = plan
        .iter()
        .map(|(name, r)| {
            let path = job.output_dir.join(name);
            (path.to_string_lossy().into_owned(), r.clone())
        })
        .collect();
    let ((), outs) = compressed::stream_to_files(&shown, stream).map_err(|f| match f {
        StreamFailure::Create(k, e) | StreamFailure::Write(k, e) => {
            ToDirError::Write(shown[k].0.clone(), e)
        }
        StreamFailure::Stream(e) => ToDirError::Input(e),
    })?;
    for (o, (path, _)) in outs.into_iter().zip(&shown) {
        o.commit().map_err(|e| ToDirError::Write(path.clone(), e))?;
        listed(path).map_err(ToDirError::Listing)?;
    }
    Ok(())
}

/// The format of `data` (the input, decompressed): the file type's, else
/// guessed. `kind` is what [`object_kind`](crate::bundle::object_kind)
/// gives for `data`.
fn format_of(
    job: &ToDir<'_>,
    data: &[u8],
    kind: Option<object::FileKind>,
) -> Result<Format, ToDirError> {
    match job.file_type {
        Some(t) => Format::for_type_of(t, kind).ok_or_else(|| ToDirError::UnknownType(t.into())),
        None => Format::detect_of(data, kind).ok_or(ToDirError::NotABundle),
    }
}

/// Unbundles `input` opened whole: a CCOB decompressed (to at most
/// `job.max_uncompressed` bytes, the hash checked), the entries found in
/// the format given or guessed, and written as [`unbundle_to_dir`] says.
fn unbundle_whole(
    job: &ToDir<'_>,
    input: &Input,
    listed: &mut dyn FnMut(&str) -> io::Result<()>,
) -> Result<(), ToDirError> {
    let opts = ReadOptions {
        hash: HashCheck::Enforce,
        limits: crate::Limits::uncompressed(job.max_uncompressed),
    };
    let inflated = ops::open(input.bytes(), &opts).map_err(ToDirError::Input)?;
    let holder = inflated.map(|d| Input::from_vec(d.data));
    let src = holder.as_ref().unwrap_or(input);
    let data = src.bytes();
    // Its format, read once for the bundle's format, its entries and the
    // host's object.
    let kind = crate::bundle::object_kind(data);
    let format = format_of(job, data, kind)?;
    let found = ops::entries(data, format, kind).map_err(ToDirError::Input)?;
    std::fs::create_dir_all(job.output_dir).map_err(ToDirError::CreateDir)?;
    // The host object of an object bundle is stripped once, if asked for.
    let host_object: std::cell::OnceCell<Written> = std::cell::OnceCell::new();
    let mut write = |name: &str, x: Extract<'_>| -> Result<(), ToDirError> {
        let shown = job.output_dir.join(name).to_string_lossy().into_owned();
        let failed = |e| ToDirError::Write(shown.clone(), e);
        match x {
            Extract::Entry(bytes) => write_bytes(&shown, src, bytes).map_err(failed)?,
            Extract::ObjectHost => {
                let w = match host_object.get() {
                    Some(w) => w,
                    None => {
                        let w = ops::host_object_of(data, kind).map_err(ToDirError::Input)?;
                        host_object.get_or_init(|| w)
                    }
                };
                write_object(&shown, w, &[(src, data)]).map_err(failed)?;
            }
            Extract::Missing | Extract::MissingHost => {
                write_bytes(&shown, src, &[]).map_err(failed)?;
            }
        }
        listed(&shown).map_err(ToDirError::Listing)
    };
    if job.targets.is_empty() {
        for (n, f) in found.iter().enumerate() {
            write(&entry_file(job.input, f.id, n), ops::extract(f, format))?;
        }
        return Ok(());
    }
    let (names, outs) = target_outputs(job.targets);
    let requests = check_targets(&names, false).map_err(ToDirError::Targets)?;
    let got =
        ops::unbundle(&found, format, &requests, job.hip_openmp).map_err(ToDirError::Input)?;
    let missing: Vec<String> = got
        .iter()
        .zip(&requests)
        .filter(|(g, _)| matches!(g, Extract::Missing | Extract::MissingHost))
        .map(|(_, r)| r.normalized())
        .collect();
    if !missing.is_empty() && !job.allow_missing {
        return Err(ToDirError::Missing(select::missing_list(missing)));
    }
    for ((x, out), r) in got.into_iter().zip(outs).zip(&requests) {
        // A missing entry, when allowed, is an empty file (the host's
        // too, where the drop-in writes the whole input as LLVM does).
        write(&request_file(out, r), x)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;

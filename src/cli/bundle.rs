//! `offload-kit bundle` and `offload-kit unbundle`: clang offload bundles with
//! ordinary options, on the same library code as the drop-in.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use super::io::{Input, open_input, safe_component, write_bytes};
use crate::bundle::binary;
use crate::bundle::ccob::{
    self, CompressOptions, Failure, HashCheck, Method, ReadOptions, StreamEnd, StreamFailure,
    Streamable, Wanted,
};
use crate::bundle::file::{WriteFailure, write_bundled};
use crate::bundle::object::{Written, write_object as write_object_to};
use crate::bundle::ops::{self, Extract};
use crate::bundle::{self, Format, select};
use crate::llvm::path::stem;

/// Bundle per-target files into one clang offload bundle (the bytes
/// clang-offload-bundler 22 writes).
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  offload-kit bundle --type bc -o fat.bc \\\n    host-x86_64-unknown-linux-gnu=host.bc hip-amdgcn-amd-amdhsa--gfx90a=dev.bc"
)]
pub struct BundleOpts {
    /// Output file (`-` for standard output).
    #[arg(short, long)]
    output: PathBuf,
    /// File type: i ii cui hipi d ll s (text), bc gch ast o (binary).
    #[arg(long = "type", value_name = "TYPE")]
    file_type: String,
    /// Entries, in order: TARGET=FILE, TARGET being <kind>-<triple>[-<target id>].
    #[arg(required = true, value_name = "TARGET=FILE")]
    entries: Vec<String>,
    /// Align each entry's data to a multiple of N bytes (binary bundles).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    align: u64,
    /// Compress the bundle (CCOB, zstd).
    #[arg(long)]
    compress: bool,
    /// zstd compression level (default 3, as LLVM).
    #[arg(long, default_value_t = 3, allow_negative_numbers = true)]
    level: i32,
    /// CCOB format version.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(2..=3))]
    format_version: u16,
    /// Compress with N threads (output differs from LLVM's single-threaded
    /// bytes; LLVM reads it back to the same bundle). At most 16: a larger
    /// N is taken as 16 (each thread holds frames of up to 32 MiB).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = parse_threads)]
    threads: u32,
}

impl BundleOpts {
    pub fn run(self) -> Result<()> {
        let mut targets = Vec::new();
        let mut files = Vec::new();
        for e in &self.entries {
            let Some((t, f)) = e.split_once('=') else {
                bail!("'{e}': entries are TARGET=FILE");
            };
            targets.push(t.to_string());
            files.push(f.to_string());
        }
        let targets = ops::Targets::for_bundling(&targets).map_err(|e| match e {
            ops::TargetsError::Invalid(e) => anyhow::anyhow!("{e}"),
            ops::TargetsError::Duplicate { id, .. } => {
                anyhow::anyhow!("two targets are the same bundle entry '{id}' once normalized")
            }
        })?;
        let inputs: Vec<Input> = files.iter().map(|f| open_input(f)).collect::<Result<_>>()?;
        let views: Vec<&[u8]> = inputs.iter().map(Input::bytes).collect();
        let host = targets.host();
        let fail = |e: ops::BundleError| match e {
            ops::BundleError::UnknownType => {
                anyhow::anyhow!("'{}': unknown file type", self.file_type)
            }
            ops::BundleError::ObjectWithoutHost => anyhow::anyhow!(
                "--type {} with an object host needs a host target",
                self.file_type
            ),
            ops::BundleError::Object(e) => anyhow::anyhow!("'{}': {e}", files[host]),
            ops::BundleError::Layout(e) => e.into(),
        };
        let format = ops::bundle_format(&self.file_type, views[host]).map_err(fail)?;
        let bundled = ops::bundle(&targets, format, &views, self.align).map_err(fail)?;
        let out = self.output.to_string_lossy().into_owned();
        // One thread: LLVM's bytes; more: frames compressed in parallel
        // from the inputs where they lie.
        let threads = if self.threads > 1 { self.threads } else { 0 };
        let opts = self.compress_options(threads);
        // An object bundle is the host object with sections added, as the
        // drop-in (and LLVM) writes it, compressed or not.
        let compress = self.compress.then_some(&opts);
        write_bundled(&out, &bundled, &targets, &inputs, &files, compress).map_err(
            |f| match f {
                WriteFailure::Output(e) => {
                    anyhow::Error::from(e).context(format!("'{out}': cannot write"))
                }
                WriteFailure::Ccob(Failure::Ccob(e)) => {
                    anyhow::Error::from(e).context(format!("'{out}'"))
                }
                WriteFailure::Ccob(Failure::File(path, e)) => {
                    anyhow::Error::from(e).context(format!("'{path}'"))
                }
            },
        )?;
        Ok(())
    }

    /// zstd at the level and version asked for, on `threads` threads.
    fn compress_options(&self, threads: u32) -> CompressOptions {
        CompressOptions {
            version: self.format_version,
            method: Method::ZSTD,
            level: self.level,
            threads,
        }
    }
}

/// Writes an object bundle or stripped host object.
fn write_object(out: &str, w: &Written, sources: &[(&Input, &[u8])]) -> Result<()> {
    write_object_to(out, w, sources).with_context(|| format!("'{out}': cannot write"))
}

/// Take a clang offload bundle apart: every entry, or the entries LLVM would
/// give the targets named.
#[derive(clap::Args)]
#[command(
    after_help = "Without targets, every entry is written to DIR/<input stem>-<entry ID>.<n> with\n\
characters other than letters, digits and ._+- replaced by '_'. With TARGET[=FILE],\n\
each target gets the entry clang-offload-bundler would give it (target-ID rules)."
)]
pub struct UnbundleOpts {
    /// The bundle (binary, text, object or compressed).
    input: String,
    /// Targets to extract: TARGET (to DIR/<target>) or TARGET=FILE.
    #[arg(value_name = "TARGET[=FILE]")]
    targets: Vec<String>,
    /// File type, when it cannot be guessed (text bundles without markers).
    #[arg(long = "type", value_name = "TYPE")]
    file_type: Option<String>,
    /// Directory for the outputs (created if missing).
    #[arg(short, long = "output-dir", value_name = "DIR", default_value = ".")]
    output_dir: PathBuf,
    /// Write empty files for targets not found instead of failing.
    #[arg(long)]
    allow_missing: bool,
    /// Let hip/hipv4 entries serve openmp targets and back.
    #[arg(long)]
    hip_openmp_compatible: bool,
    /// Most bytes a compressed bundle may decompress to (suffixes K, M,
    /// G); a larger declared size is refused before decompressing.
    #[arg(long, default_value = "16G", value_name = "SIZE", value_parser = super::scan::parse_size)]
    max_uncompressed: u64,
    /// Threads for a compressed binary bundle (default: the CPUs, at most
    /// 4): the MD5 on one, decompression on the others (from 3 threads on,
    /// the zstd frames of a CCOB written with `bundle --compress --threads`
    /// decoded in parallel); 1 does everything on one thread. At most 16: a
    /// larger N is taken as 16 (each thread holds frames of up to 64 MiB).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<u32>,
}

impl UnbundleOpts {
    /// The targets' IDs and, for `TARGET=FILE`, their files.
    fn target_outputs(&self) -> (Vec<String>, Vec<Option<String>>) {
        self.targets
            .iter()
            .map(|t| match t.split_once('=') {
                Some((a, b)) => (a.to_string(), Some(b.to_string())),
                None => (t.clone(), None),
            })
            .unzip()
    }

    /// Unbundles a CCOB holding a binary bundle as a stream: the bundle
    /// header is decompressed first, then all the contents once (the hash
    /// is checked), each entry written to its file as it comes, in memory
    /// that does not grow with the bundle (see
    /// [`ccob::Ccob::stream_from`]). The files are renamed into place only
    /// once the whole stream has been read and its hash matched.
    ///
    /// `None` when the input is anything else, or anything looks wrong
    /// before decompressing (see [`ccob::streamable`]): the whole-buffer
    /// path then reports it.
    fn run_streaming(&self, input: &Input) -> Option<Result<()>> {
        let Streamable { c, records } =
            ccob::streamable(input.bytes(), self.max_uncompressed, |prefix| {
                match &self.file_type {
                    Some(t) => Format::for_type(t, prefix),
                    None => Format::detect(prefix),
                }
            })?;
        let (plan, missing) = match self.stream_plan(&records)? {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        };
        let opts = ReadOptions {
            hash: HashCheck::Enforce,
            limits: ccob::Limits {
                max_uncompressed: self.max_uncompressed,
            },
        };
        let threads = self.threads.unwrap_or_else(ccob::default_threads);
        let stream = |wanted: &mut [Wanted<'_>]| -> Result<()> {
            ccob::stream_input(&c, input, wanted, &opts, StreamEnd::Whole, threads)
                .map(|_| ())
                .with_context(|| format!("'{}'", self.input))
        };
        Some(self.write_streamed(&plan, missing, &stream))
    }

    /// The files a streamed unbundling writes, in order: (file name, the
    /// range of its entry's bytes in the bundle; `None` for an empty file),
    /// and the requested entries that are missing. `None` where the
    /// whole-buffer path must decide (an entry it would refuse).
    fn stream_plan(&self, records: &[binary::Record]) -> Option<Result<(StreamPlan, Vec<String>)>> {
        let mut plan: StreamPlan = Vec::new();
        let range = |r: &binary::Record| Some(r.offset..r.offset + r.size);
        let mut missing = Vec::new();
        if self.targets.is_empty() {
            let base = safe(stem(&self.input));
            let ids: Vec<&[u8]> = records.iter().map(|r| &r.id[..]).collect();
            for (n, i) in binary::llvm_order(&ids).into_iter().enumerate() {
                let id = safe(&String::from_utf8_lossy(&records[i].id));
                plan.push((format!("{base}-{id}.{n}"), range(&records[i])));
            }
        } else {
            let (names, outs): (Vec<String>, Vec<Option<String>>) = self.target_outputs();
            let requests = match bundle::id::check_targets(&names, false) {
                Ok(r) => r,
                Err(e) => return Some(Err(anyhow::anyhow!("{e}"))),
            };
            let picks =
                ops::unbundle_records(records, &requests, self.hip_openmp_compatible).ok()?;
            for ((p, r), out) in picks.iter().zip(&requests).zip(outs) {
                let name = out.unwrap_or_else(|| safe(&r.normalized()));
                match *p {
                    ops::Pick::Record(i) => plan.push((name, range(&records[i]))),
                    // Missing, when allowed: an empty file.
                    _ => {
                        missing.push(r.normalized());
                        plan.push((name, None));
                    }
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
        &self,
        plan: &StreamPlan,
        missing: Vec<String>,
        stream: &dyn Fn(&mut [Wanted<'_>]) -> Result<()>,
    ) -> Result<()> {
        std::fs::create_dir_all(&self.output_dir)
            .with_context(|| format!("'{}': cannot create directory", self.output_dir.display()))?;
        if !missing.is_empty() && !self.allow_missing {
            // The contents are checked first, as the whole-buffer path
            // does.
            stream(&mut [])?;
            bail!(
                "'{}': no entry for {}",
                self.input,
                select::missing_list(missing)
            );
        }
        let shown: Vec<(String, Option<std::ops::Range<u64>>)> = plan
            .iter()
            .map(|(name, r)| {
                let path = self.output_dir.join(name);
                (path.to_string_lossy().into_owned(), r.clone())
            })
            .collect();
        let ((), outs) = ccob::stream_to_files(&shown, stream).map_err(|f| match f {
            StreamFailure::Create(k, e) | StreamFailure::Write(k, e) => {
                anyhow::Error::from(e).context(format!("'{}': cannot write", shown[k].0))
            }
            StreamFailure::Stream(e) => e,
        })?;
        let mut listing = super::io::Report::stdout();
        for (o, (path, _)) in outs.into_iter().zip(&shown) {
            o.commit()
                .with_context(|| format!("'{path}': cannot write"))?;
            writeln!(listing, "{}", super::io::printable(path))?;
        }
        listing.flush()?;
        Ok(())
    }
}

/// The files a streamed unbundling writes: (file name, the range of its
/// entry's bytes in the bundle; `None` for an empty file).
type StreamPlan = Vec<(String, Option<std::ops::Range<u64>>)>;

/// The most threads `bundle --threads` and `unbundle --threads` use: each
/// holds compressed or decompressed frames of up to 32 or 64 MiB, and the
/// writer and the MD5 stay one thread each, so more would buy memory, not
/// speed.
pub const MAX_THREADS: u32 = 16;

/// `--threads N`: a decimal N of at least 1, taken as [`MAX_THREADS`]
/// when larger (however large: never an error).
fn parse_threads(s: &str) -> Result<u32, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'{s}' is not a number of threads"));
    }
    if s.bytes().all(|b| b == b'0') {
        return Err("at least 1 thread is needed".into());
    }
    // Past u64 (more than 19 digits), a number of threads is only larger.
    Ok(s.parse::<u64>().map_or(MAX_THREADS, |n| {
        u32::try_from(n.min(u64::from(MAX_THREADS))).unwrap_or(MAX_THREADS)
    }))
}

/// A file-name component made from a bundle ID or the input's name.
fn safe(s: &str) -> String {
    safe_component(s, 100)
}

/// `input` (named `name`) decompressed if it is a CCOB (to at most
/// `max_uncompressed` bytes, the hash checked).
pub fn inflate(
    name: &str,
    input: &Input,
    max_uncompressed: u64,
) -> Result<Option<ccob::Decompressed>> {
    let opts = ReadOptions {
        hash: HashCheck::Enforce,
        limits: ccob::Limits { max_uncompressed },
    };
    ops::open(input.bytes(), &opts).with_context(|| format!("'{name}'"))
}

impl UnbundleOpts {
    pub fn run(self) -> Result<()> {
        let input = open_input(&self.input)?;
        if let Some(done) = self.run_streaming(&input) {
            return done;
        }
        let inflated = inflate(&self.input, &input, self.max_uncompressed)?;
        let holder = inflated.map(|d| Input::from_vec(d.data));
        let src = holder.as_ref().unwrap_or(&input);
        let data = src.bytes();
        let format = match &self.file_type {
            Some(t) => {
                Format::for_type(t, data).with_context(|| format!("'{t}': unknown file type"))?
            }
            None => Format::detect(data).with_context(|| {
                format!(
                    "'{}': not a clang offload bundle (`offload-kit extract` finds the bundles \
                     in executables and shared libraries, and every other container)",
                    self.input
                )
            })?,
        };
        let found = ops::entries(data, format).with_context(|| format!("'{}'", self.input))?;
        std::fs::create_dir_all(&self.output_dir)
            .with_context(|| format!("'{}': cannot create directory", self.output_dir.display()))?;
        // The host object of an object bundle is stripped once, if asked for.
        let host_object = std::cell::OnceCell::new();
        let mut listing = super::io::Report::stdout();
        let mut write = |name: &str, x: Extract<'_>| -> Result<()> {
            let path = self.output_dir.join(name);
            let shown = path.to_string_lossy().into_owned();
            match x {
                Extract::Entry(bytes) => write_bytes(&shown, src, bytes)
                    .with_context(|| format!("'{shown}': cannot write"))?,
                Extract::ObjectHost => {
                    let w = match host_object.get() {
                        Some(w) => w,
                        None => {
                            let w = ops::host_object(data)
                                .with_context(|| format!("'{}'", self.input))?;
                            host_object.get_or_init(|| w)
                        }
                    };
                    write_object(&shown, w, &[(src, data)])?;
                }
                Extract::Missing | Extract::MissingHost => write_bytes(&shown, src, &[])
                    .with_context(|| format!("'{shown}': cannot write"))?,
            }
            writeln!(listing, "{}", super::io::printable(&shown))?;
            Ok(())
        };
        if self.targets.is_empty() {
            let base = safe(stem(&self.input));
            for (n, f) in found.iter().enumerate() {
                write(
                    &format!("{base}-{}.{n}", safe(&String::from_utf8_lossy(f.id))),
                    ops::extract(f, format),
                )?;
            }
            listing.flush()?;
            return Ok(());
        }
        let (names, outs): (Vec<String>, Vec<Option<String>>) = self.target_outputs();
        let requests =
            bundle::id::check_targets(&names, false).map_err(|e| anyhow::anyhow!("{e}"))?;
        let got = ops::unbundle(&found, format, &requests, self.hip_openmp_compatible)
            .with_context(|| format!("'{}'", self.input))?;
        let missing: Vec<String> = got
            .iter()
            .zip(&requests)
            .filter(|(g, _)| matches!(g, Extract::Missing | Extract::MissingHost))
            .map(|(_, r)| r.normalized())
            .collect();
        if !missing.is_empty() && !self.allow_missing {
            bail!(
                "'{}': no entry for {}",
                self.input,
                select::missing_list(missing)
            );
        }
        for (i, x) in got.into_iter().enumerate() {
            let name = outs[i]
                .clone()
                .unwrap_or_else(|| safe(&requests[i].normalized()));
            // A missing entry, when allowed, is an empty file (the host's
            // too, where the drop-in writes the whole input as LLVM does).
            write(&name, x)?;
        }
        listing.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_THREADS, parse_threads};

    #[test]
    fn threads_are_clamped_never_refused_for_being_many() {
        assert_eq!(parse_threads("1"), Ok(1));
        assert_eq!(parse_threads("4"), Ok(4));
        assert_eq!(parse_threads("16"), Ok(MAX_THREADS));
        assert_eq!(parse_threads("17"), Ok(MAX_THREADS));
        assert_eq!(parse_threads("4294967296"), Ok(MAX_THREADS));
        assert_eq!(parse_threads(&"9".repeat(40)), Ok(MAX_THREADS));
        assert_eq!(parse_threads("007"), Ok(7));
        for bad in ["0", "00", "", "-1", "+3", " 2", "2x", "1e3"] {
            assert!(parse_threads(bad).is_err(), "{bad:?}");
        }
    }
}

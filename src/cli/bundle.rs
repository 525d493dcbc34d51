//! `offload-kit bundle` and `offload-kit unbundle`: clang offload bundles with
//! ordinary options, on the same library code as the drop-in. What unbundle
//! writes and where is the library's `crate::tools::bundler::to_dir`; here are the
//! options, the messages and the listing of the files.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, bail};

use super::io::{Input, open_input};
use super::scan::BadValue;
use crate::bundle::ccob::{CompressOptions, Method};
use crate::bundle::ops;
use crate::tools::bundler::compressed::Failure;
use crate::tools::bundler::to_dir::{ToDir, ToDirError, unbundle_to_dir};
use crate::tools::bundler::write::{WriteFailure, write_bundled};

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
        // The host input's format, read once for the format and the edit.
        let host_kind = crate::bundle::object_kind(views[host]);
        let format = ops::bundle_format(&self.file_type, host_kind).map_err(fail)?;
        let bundled = ops::bundle(&targets, format, &views, self.align, host_kind).map_err(fail)?;
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

/// The most threads `bundle --threads` and `unbundle --threads` use: each
/// holds compressed or decompressed frames of up to 32 or 64 MiB, and the
/// writer and the MD5 stay one thread each, so more would buy memory, not
/// speed.
pub const MAX_THREADS: u32 = 16;

/// `--threads N`: a decimal N of at least 1, taken as [`MAX_THREADS`]
/// when larger (however large: never an error).
fn parse_threads(s: &str) -> Result<u32, BadValue> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BadValue::Threads(s.to_string()));
    }
    if s.bytes().all(|b| b == b'0') {
        return Err(BadValue::NoThreads);
    }
    // Past u64 (more than 19 digits), a number of threads is only larger.
    Ok(s.parse::<u64>().map_or(MAX_THREADS, |n| {
        u32::try_from(n.min(u64::from(MAX_THREADS))).unwrap_or(MAX_THREADS)
    }))
}

impl UnbundleOpts {
    pub fn run(self) -> Result<()> {
        let input = open_input(&self.input)?;
        let job = ToDir {
            input: &self.input,
            targets: &self.targets,
            file_type: self.file_type.as_deref(),
            output_dir: &self.output_dir,
            allow_missing: self.allow_missing,
            hip_openmp: self.hip_openmp_compatible,
            max_uncompressed: self.max_uncompressed,
            threads: self.threads,
        };
        let mut listing = super::io::Report::stdout();
        let mut listed = |path: &str| writeln!(listing, "{}", super::io::printable(path));
        unbundle_to_dir(&job, &input, &mut listed).map_err(|e| match e {
            ToDirError::Targets(e) => anyhow::anyhow!("{e}"),
            ToDirError::UnknownType(t) => anyhow::anyhow!("'{t}': unknown file type"),
            ToDirError::NotABundle => anyhow::anyhow!(
                "'{}': not a clang offload bundle (`offload-kit extract` finds the bundles \
                 in executables and shared libraries, and every other container)",
                self.input
            ),
            ToDirError::Input(e) => anyhow::Error::from(e).context(format!("'{}'", self.input)),
            ToDirError::CreateDir(e) => anyhow::Error::from(e).context(format!(
                "'{}': cannot create directory",
                self.output_dir.display()
            )),
            ToDirError::Missing(list) => anyhow::anyhow!("'{}': no entry for {list}", self.input),
            ToDirError::Write(path, e) => {
                anyhow::Error::from(e).context(format!("'{path}': cannot write"))
            }
            ToDirError::Listing(e) => e.into(),
        })?;
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

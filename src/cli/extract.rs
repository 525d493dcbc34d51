//! `offload-kit extract`: writes the selected device images of files to a
//! directory, under names built from what `inspect` shows.

use std::path::PathBuf;

use anyhow::{Result, bail};

use super::io::{print_line, printable};
use super::scan::{Common, exit, list, with_progress};
use crate::extract::{self, Extracted};
use crate::scan::{self, Selection};

/// Write device images to files in a directory.
#[derive(clap::Args)]
#[command(
    after_help = "Each image goes to DIR/<input>.<image id>.<label>.<ext>: <input> is the\n\
input's file name (its path, with / as _, when several inputs are given), <image id> the\n\
id `inspect` shows, <label> the bundle-entry ID or <offload kind>-<triple>-<target id>, and\n\
<ext> comes from the image kind (o, bc, cubin, ptx, fatbin, spv; else bin). Characters other\n\
than letters, digits and ._+- become _, so names taken from the file cannot leave DIR.\n\
Images inside compressed data (compressed bundles, compressed OffloadBinaries, compressed\n\
CUDA fatbin entries, LZ4 or zstd) are written as they are decompressed, each to a\n\
temporary file renamed into place once the whole stream has been read and checked.\n\
Everything is checked as --verify checks it, and nothing is kept from a container that\n\
holds damaged data (a stream that does not decode, a stored hash that does not match):\n\
what was written of it is removed. A bundle's empty host entry is written only with\n\
--include-host. An input `-` is standard input (named stdin).\n\n\
Exit codes: 0 success; 1 the filters (--triple, --arch, --kind) matched no image; 2 an\n\
input could not be read, held damaged data (the other containers are still extracted;\n\
--allow-corrupt: 0 unless an image was not written), went past a limit (--max-uncompressed, --max-images,\n\
--max-containers: nothing of that input is kept; --max-files: the command stops writing),\n\
or an image could not be decompressed or written (each error is one line on standard\n\
error). The first image that cannot be written (a full disk, a directory gone) stops the\n\
extraction: one error names its file, and no image is written after it."
)]
pub struct ExtractOpts {
    #[command(flatten)]
    common: Common,
    /// Directory to write into (created if missing; not `-`: the images
    /// are several files).
    #[arg(short, long = "output-dir", value_name = "DIR")]
    output_dir: PathBuf,
    /// Most files the command writes, all inputs together; past it each
    /// input with more images is an error.
    #[arg(long, default_value_t = 100_000, value_name = "N")]
    max_files: usize,
    /// Also write bundles' empty host entries (0-byte files).
    #[arg(long)]
    include_host: bool,
    /// Only images for these triples (comma-separated; a prefix of the
    /// triple's components matches).
    #[arg(long, value_name = "T")]
    triple: Vec<String>,
    /// Only images for these architectures (`gfx90a` also matches
    /// `gfx90a:xnack+`).
    #[arg(long, value_name = "A")]
    arch: Vec<String>,
    /// Only images of these offload kinds (openmp, hip, cuda, host, …) or
    /// image kinds (object, bitcode, cubin, ptx, …).
    #[arg(long, value_name = "K")]
    kind: Vec<String>,
}

impl ExtractOpts {
    pub fn run(self) -> Result<std::process::ExitCode> {
        if self.output_dir.as_os_str() == "-" {
            bail!("'-o -': extract writes a directory of files, not one output; give a directory");
        }
        let filter = self.selection()?;
        let files = self.common.files()?;
        let scan = self.common.options();
        let opts = extract::Options {
            filter: &filter,
            include_host: self.include_host,
            dir: &self.output_dir,
            max_files: self.max_files,
            jobs: self.common.jobs(),
            scan: &scan,
        };
        let results = with_progress(files.len(), |done| extract::extract(&files, &opts, done))
            .map_err(anyhow::Error::msg)?;
        self.report(results, &filter)
    }

    /// The selection `--triple`, `--arch` and `--kind` make, each arch and
    /// kind checked: a name that is no known arch or kind would select
    /// nothing.
    fn selection(&self) -> Result<Selection> {
        let mut filter = Selection::default();
        filter.triples = list(&self.triple);
        filter.archs = list(&self.arch);
        filter.kinds = list(&self.kind);
        for a in &filter.archs {
            scan::rule::check_arch(a).map_err(|e| anyhow::anyhow!("--arch '{a}': {e}"))?;
        }
        for k in &filter.kinds {
            scan::rule::check_kind(k).map_err(|e| anyhow::anyhow!("--kind '{k}': {e}"))?;
        }
        Ok(filter)
    }

    /// Lists the files written, prints the problems and errors, and says
    /// how the command ends: an input error, nothing selected, or success.
    fn report(
        &self,
        results: Vec<Extracted>,
        filter: &Selection,
    ) -> Result<std::process::ExitCode> {
        let mut out = super::io::Report::stdout();
        let (mut failed, mut written) = (false, 0usize);
        for r in results {
            failed |= r.damaged && !self.common.allow_corrupt;
            written += r.written.len();
            for w in r.written {
                print_line(&mut out, &w)?;
            }
            for g in super::io::problems::grouped(r.problems.iter().map(String::as_str)) {
                let line = super::io::problems::clip(&g.to_string(), super::io::problems::MAX_LINE);
                eprintln!("{}", printable(&line));
            }
            for e in r.errors {
                eprintln!("error: {}", printable(&e));
                failed = true;
            }
        }
        std::io::Write::flush(&mut out)?;
        if failed {
            return Ok(exit::INPUT_ERROR.into());
        }
        if written == 0 && !filter.is_empty() {
            eprintln!("no image matches the selection (--triple, --arch, --kind); nothing written");
            return Ok(exit::FAILED.into());
        }
        if written == 0 {
            eprintln!("no device images found; nothing written");
        }
        Ok(exit::OK.into())
    }
}

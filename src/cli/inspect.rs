//! `offload-kit inspect`: every device image inside files, as a table or
//! JSON.
//!
//! The `--json` document (schema `offload-kit/inspect/2`) is the library's
//! [`crate::scan::json::Document`]; its module documents the schema.

use std::io::Write;

use anyhow::Result;

use super::scan::{
    Common, Scanned, exit, exit_code_after_inputs, kernel_errors, quiet_dirs, scan_files,
    scan_files_kernels,
};
use crate::scan::{self, HashAlgo, Unread, json};

/// List every device image inside files: where it is, what it is, for whom.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    offload-kit inspect libtorch_hip.so\n  \
    offload-kit inspect --json --hash build/ > images.json\n  \
    offload-kit inspect --raw --verify core.dump\n\n\
    The --json schema is documented in docs/scanners.md (schema \"offload-kit/inspect/2\").\n\n\
    A file found in a directory is reported only if it holds device code or problems\n\
    (--all: every file). Every input that can be read is reported; each one that cannot gets a line on\n\
    standard error (and its \"error\" in the JSON). Exit codes: 0 success, 2 an input\n\
    could not be read, held damaged data (a problem is printed; everything readable is still\n\
    reported; --allow-corrupt: 0) or went past a limit (--max-uncompressed, --max-images,\n\
    --max-containers: the file is an error).")]
pub struct InspectOpts {
    #[command(flatten)]
    common: Common,
    /// Print JSON instead of a table.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print a GitHub-flavoured Markdown report instead of a table (for a
    /// CI job summary).
    #[arg(long)]
    markdown: bool,
    /// Hash every image as its loader sees it, decompressed (images in
    /// compressed bundles and OffloadBinaries, compressed CUDA fatbin
    /// entries): `--hash` (xxh3-128) or `--hash=md5`.
    #[arg(long, value_name = "ALGO", num_args = 0..=1, require_equals = true,
          default_missing_value = "xxh3-128", value_parser = hash_parser())]
    hash: Option<HashAlgo>,
    /// Also report raw-scan candidates that turned out not to be containers.
    #[arg(long)]
    rejects: bool,
    /// Also report the files found in directories that hold no device code
    /// (by default only those with containers or problems are).
    #[arg(long)]
    all: bool,
    /// List each image's kernels, with the registers and memory each one
    /// uses, and its other exported symbols (AMDGPU code objects, CUDA
    /// cubins, PTX, CPU images; compressed ones too).
    #[arg(long)]
    kernels: bool,
    /// Show C++ kernel and symbol names demangled (with --kernels).
    #[arg(long, requires = "kernels")]
    demangle: bool,
}

/// `--hash`'s values, each read as its [`HashAlgo`].
fn hash_parser() -> impl clap::builder::TypedValueParser<Value = HashAlgo> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(["xxh3-128", "md5"]).map(|s| {
        if s == "md5" {
            HashAlgo::Md5
        } else {
            HashAlgo::Xxh3_128
        }
    })
}

impl InspectOpts {
    pub fn run(self) -> Result<std::process::ExitCode> {
        let mut opts = self.common.options();
        opts.hash = self.hash;
        opts.report_rejects = self.rejects;
        let files = self.common.files()?;
        let names = super::io::RawNames::of(files.iter().map(|s| s.path.as_path()));
        let mut scanned = if self.kernels {
            scan_files_kernels(&files, self.common.jobs(), &opts, &self.common.allowance())
        } else {
            scan_files(&files, self.common.jobs(), &opts, || {
                Box::new(scan::NoVisit)
            })
        };
        if self.demangle {
            scanned.iter_mut().for_each(Scanned::demangle);
        }
        // A directory walk or a package shows only the files with
        // something to say; a directory named with none still gets a line.
        let is_shown = |s: &Scanned| {
            self.all
                || !s.found
                || s.result
                    .as_ref()
                    .map_or(true, |r| !r.containers.is_empty() || !r.problems.is_empty())
        };
        let quiet = quiet_dirs(
            self.common.paths(),
            scanned.iter().map(|s| (s, is_shown(s))),
        );
        let scanned: Vec<Scanned> = scanned.into_iter().filter(is_shown).collect();
        let mut out = super::io::Report::stdout();
        if self.markdown {
            let files: Vec<json::File<'_>> = scanned.iter().map(|s| json_file(s, false)).collect();
            out.write_all(crate::report::inspect_markdown(&files).as_bytes())?;
            for d in &quiet {
                out.write_all(b"\n")?;
                super::io::print_line(&mut out, &d.line())?;
            }
        } else if self.json {
            let files: Vec<json::File<'_>> =
                scanned.iter().map(|s| json_file(s, self.kernels)).collect();
            super::io::write_json(&mut out, &json::Document { files: &files }, &names)?;
        } else {
            for s in scanned.iter().filter(|s| s.result.is_ok()) {
                crate::report::inspect_table(&mut out, s, self.kernels)?;
            }
            for d in &quiet {
                super::io::print_line(&mut out, &d.line())?;
            }
        }
        out.flush()?;
        let code = exit_code_after_inputs(&scanned, self.common.allow_corrupt);
        let code = match kernel_errors(&scanned) {
            true if code == exit::OK && !self.common.allow_corrupt => exit::INPUT_ERROR,
            _ => code,
        };
        // The process ends next: freeing a library's hundreds of thousands
        // of listed names one by one would only delay that.
        std::mem::forget(scanned);
        Ok(code.into())
    }
}

/// The JSON entry of one scanned file (its kernels when `kernels`).
fn json_file(s: &Scanned, kernels: bool) -> json::File<'_> {
    json::File {
        path: &s.path,
        size: s.size,
        result: s.result.as_ref().map_err(Unread::as_str),
        kernels: kernels.then_some(&s.kernels[..]),
    }
}

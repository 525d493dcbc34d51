//! `offload-kit size`: bytes of device code per target and per kind, as a
//! table, JSON (schema `offload-kit/size/1`) or Markdown, and as an HTML
//! treemap (`--html FILE`). The counting is
//! `crate::scan::size`'s, the reports `crate::report::size`'s.

use std::io::Write;

use anyhow::Result;

use super::scan::{Common, Scanned, exit_code_after_inputs, quiet_dirs, scan_files};
use crate::report::size;
use crate::scan::json::Elsewhere;
use crate::scan::{self, SizeReport};

/// Bytes of device code per architecture and per kind.
#[derive(clap::Args)]
#[command(
    after_help = "Only innermost device images count (an OffloadBinary image holding a fatbin\n\
is counted through the fatbin's entries); a bundle's host entry is no device image and is\n\
counted apart. The target table has a row per offload kind, triple, target and image kind\n\
(an arch's cubins and PTX apart), archs in version order (gfx900 < gfx90a < gfx1030,\n\
sm_90 < sm_100). Files found in directories or packages are listed, in the table and in\n\
the JSON alike, only when they hold device code; the total counts every file. `bytes` is the images' size, decompressed; `stored`\n\
what they take in the file: a compressed CUDA fatbin entry's compressed bytes, and for\n\
images inside a compressed bundle, its compressed size shared out in proportion to their\n\
sizes (an estimate: compression is not per image).\n\n\
Every input that can be read is reported; each one that cannot gets a line on standard\n\
error (and its \"error\" in the JSON). Exit codes: 0 success, 2 an input could not be read,\n\
held damaged data (everything readable is still reported; --allow-corrupt: 0) or went past a\n\
limit (--max-uncompressed, --max-images, --max-containers: the file is an error)."
)]
pub struct SizeOpts {
    #[command(flatten)]
    common: Common,
    /// Print JSON instead of a table.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print a GitHub-flavoured Markdown report instead of a table (for a
    /// CI job summary).
    #[arg(long)]
    markdown: bool,
    /// Also write an HTML report to FILE: a treemap of the device code
    /// (input, file, package member, container, target) and tables of the
    /// numbers of --json; one self-contained file, no script, nothing
    /// fetched. Standard output stays as it is (table, --json or
    /// --markdown).
    #[arg(long, value_name = "FILE")]
    html: Option<std::path::PathBuf>,
}

impl SizeOpts {
    pub fn run(self) -> Result<std::process::ExitCode> {
        let opts = self.common.options();
        let files = self.common.files()?;
        let names = super::io::RawNames::of(files.iter().map(|s| s.path.as_path()));
        let scanned = scan_files(&files, self.common.jobs(), &opts, || {
            Box::new(scan::NoVisit)
        });
        let reports: Vec<SizeReport> = scanned
            .iter()
            .map(|s| match &s.result {
                Ok(r) => scan::size(&s.path, s.size, r),
                Err(e) => SizeReport::unreadable(&s.path, e.as_str()),
            })
            .collect();
        let all = SizeReport::sum("(all inputs)", &reports);
        let several = reports.iter().filter(|r| r.error.is_none()).count() > 1;
        // Files found in directories or packages are shown only when they
        // hold device code (or could not be read, or hold CUDA fatbins in
        // other data sections, which the table notes and does not count),
        // in the table and the JSON alike; the total counts every file.
        // A directory named of which no file is shown still gets its line.
        let quiet = quiet_dirs(
            self.common.paths(),
            scanned
                .iter()
                .zip(&reports)
                .map(|(s, r)| (s, size::is_shown(r, s))),
        );
        // Each shown file with its fatbins elsewhere, listed.
        let (shown, shown_scans): (Vec<size::Shown<'_>>, Vec<&Scanned>) = reports
            .iter()
            .zip(&scanned)
            .filter(|&(r, s)| size::is_shown(r, s))
            .map(|(r, s)| ((r, s.result.as_ref().ok().and_then(Elsewhere::of)), s))
            .unzip();
        if let Some(path) = &self.html {
            let sizes: Vec<&SizeReport> = shown.iter().map(|s| s.0).collect();
            let doc = size::html(
                self.common.paths(),
                &sizes,
                &shown_scans,
                several.then_some(&all),
            );
            super::io::write_whole(path, doc.as_bytes())?;
        }
        let mut out = super::io::Report::stdout();
        let total = several.then_some(&all);
        if self.markdown {
            size::print_markdown(&mut out, &shown, &quiet, total)?;
        } else if self.json {
            size::write_json(&mut out, &shown, total, &names)?;
        } else {
            size::print_text(&mut out, &shown, &quiet, total)?;
        }
        out.flush()?;
        Ok(exit_code_after_inputs(&scanned, self.common.allow_corrupt).into())
    }
}

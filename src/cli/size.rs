//! `offload-kit size`: bytes of device code per target and per kind, as a
//! table, JSON (schema `offload-kit/size/1`) or Markdown, and as an HTML
//! treemap (`--html FILE`). The counting is
//! `crate::scan::size`'s.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use super::io::print_line;
use super::scan::{Common, Scanned, exit_code_after_inputs, input_of, quiet_dirs, scan_files};
use crate::scan::json::Elsewhere;
use crate::scan::sort::row_cmp;
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
        // Each shown file with its fatbins elsewhere, listed.
        type Shown<'a> = (&'a SizeReport, Option<Elsewhere<'a>>);
        // A directory named of which no file is shown still gets its line.
        let quiet = quiet_dirs(
            self.common.paths(),
            scanned
                .iter()
                .zip(&reports)
                .map(|(s, r)| (s, is_shown(r, s))),
        );
        let (shown, shown_scans): (Vec<Shown<'_>>, Vec<&Scanned>) = reports
            .iter()
            .zip(&scanned)
            .filter(|&(r, s)| is_shown(r, s))
            .map(|(r, s)| ((r, s.result.as_ref().ok().and_then(Elsewhere::of)), s))
            .unzip();
        if let Some(path) = &self.html {
            let sizes: Vec<&SizeReport> = shown.iter().map(|s| s.0).collect();
            let doc = html(
                self.common.paths(),
                &sizes,
                &shown_scans,
                several.then_some(&all),
            );
            super::io::write_whole(path, doc.as_bytes())?;
        }
        let mut out = super::io::Report::stdout();
        if self.markdown {
            let files: Vec<&SizeReport> = shown.iter().map(|s| s.0).collect();
            let text = crate::report::size_markdown(&files, several.then_some(&all));
            out.write_all(text.as_bytes())?;
            for d in &quiet {
                out.write_all(b"\n")?;
                print_line(&mut out, &d.line())?;
            }
        } else if self.json {
            #[derive(Serialize)]
            struct Doc<'a> {
                schema: &'static str,
                files: Vec<FileDoc<'a>>,
                total: Option<&'a SizeReport>,
            }
            /// A file's report, and the fatbins in its data sections that
            /// the table does not count (as `inspect --json` has them).
            #[derive(Serialize)]
            struct FileDoc<'a> {
                #[serde(flatten)]
                report: &'a SizeReport,
                #[serde(skip_serializing_if = "Option::is_none")]
                fatbins_elsewhere: Option<Elsewhere<'a>>,
            }
            let files = shown
                .iter()
                .map(|&(report, fatbins_elsewhere)| FileDoc {
                    report,
                    fatbins_elsewhere,
                })
                .collect();
            let doc = Doc {
                schema: "offload-kit/size/1",
                files,
                total: several.then_some(&all),
            };
            super::io::write_json(&mut out, &doc, &names)?;
        } else {
            for (r, _) in shown.iter().filter(|(r, _)| r.error.is_none()) {
                print_size(&mut out, r)?;
                print_notes(&mut out, r)?;
            }
            for d in &quiet {
                print_line(&mut out, &d.line())?;
            }
            if several {
                print_size(&mut out, &all)?;
            }
        }
        out.flush()?;
        Ok(exit_code_after_inputs(&scanned, self.common.allow_corrupt).into())
    }
}

/// Whether the report `r` of the file `s` is shown: a file named always,
/// a file found in a directory or package when it holds device code, could
/// not be read, is damaged, or holds CUDA fatbins the table does not count.
fn is_shown(r: &SizeReport, s: &Scanned) -> bool {
    !s.found
        || r.total.images > 0
        || r.error.is_some()
        || !r.damage.is_empty()
        || r.elsewhere.is_some()
}

/// The HTML report of the files `sizes`, scanned into `scans` (in the
/// same order), from the inputs named `paths`.
fn html(
    paths: &[std::path::PathBuf],
    sizes: &[&SizeReport],
    scans: &[&Scanned],
    total: Option<&SizeReport>,
) -> String {
    let inputs: Vec<String> = paths
        .iter()
        .map(|p| crate::files::shown(p).into_owned())
        .collect();
    let files: Vec<crate::report::HtmlFile<'_>> = sizes
        .iter()
        .zip(scans)
        .map(|(size, s)| {
            crate::report::HtmlFile::new(input_of(&inputs, &s.path), size, s.result.as_ref().ok())
        })
        .collect();
    crate::report::size_html(&files, total)
}

/// The lines under a file's table: the note on its fatbins elsewhere,
/// then what the scan found damaged.
fn print_notes(mut out: &mut impl Write, r: &SizeReport) -> Result<()> {
    if let Some(note) = &r.elsewhere {
        print_line(&mut out, &format!("  note: {note}"))?;
    }
    for d in &r.damage {
        print_line(
            &mut out,
            &format!("  damaged: {d} (counted: what could be read)"),
        )?;
    }
    Ok(())
}

fn print_size(mut out: &mut impl Write, r: &SizeReport) -> Result<()> {
    let pct = if r.file_size > 0 {
        r.total.stored as f64 * 100.0 / r.file_size as f64
    } else {
        0.0
    };
    let host = match r.host.images {
        0 => String::new(),
        n => format!(
            "; {n} bundle host entr{} ({} bytes) not counted",
            if n == 1 { "y" } else { "ies" },
            r.host.bytes
        ),
    };
    print_line(
        &mut out,
        &format!(
            "{}: {} bytes; device code {} bytes in {} image(s), {} stored ({pct:.1}% of the file){host}",
            r.path, r.file_size, r.total.bytes, r.total.images, r.total.stored
        ),
    )?;
    let w = r
        .by_target
        .keys()
        .chain(r.by_kind.keys())
        .map(String::len)
        .fold(6, usize::max);
    // One table per grouping: a heading, then a row per key.
    for (heading, rows) in [("target", &r.by_target), ("kind", &r.by_kind)] {
        print_line(
            &mut out,
            &format!(
                "  {heading:<w$}  {:>6}  {:>14}  {:>14}",
                "images", "bytes", "stored"
            ),
        )?;
        // Archs in arch order (sm_50 before sm_100, gfx900 before gfx90a
        // before gfx1030), within each offload kind and triple.
        let mut rows: Vec<_> = rows.iter().collect();
        rows.sort_by(|a, b| row_cmp(a.0, b.0));
        for (k, t) in rows {
            print_line(
                &mut out,
                &format!(
                    "  {k:<w$}  {:>6}  {:>14}  {:>14}",
                    t.images, t.bytes, t.stored
                ),
            )?;
        }
    }
    Ok(())
}

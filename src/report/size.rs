//! The reports of `offload-kit size`: the text table of each file shown
//! and of the total, the `size --json` document (schema
//! `offload-kit/size/1`), the Markdown with the quiet directories' lines,
//! and the HTML treemap's inputs; from the [`SizeReport`]s of
//! `crate::scan::size`.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use super::dirs::{QuietDir, input_of};
use super::{RawNames, print_line};
use crate::inputs::Scanned;
use crate::scan::SizeReport;
use crate::scan::json::Elsewhere;
use crate::scan::sort::row_cmp;

/// A file shown, with the fatbins in its data sections the table does not
/// count.
pub(crate) type Shown<'a> = (&'a SizeReport, Option<Elsewhere<'a>>);

/// `size --markdown`: the tables of the files `shown` and of the `total`,
/// then a line for each quiet directory.
pub(crate) fn print_markdown(
    mut out: &mut impl Write,
    shown: &[Shown<'_>],
    quiet: &[QuietDir],
    total: Option<&SizeReport>,
) -> Result<()> {
    let files: Vec<&SizeReport> = shown.iter().map(|s| s.0).collect();
    let text = super::size_markdown(&files, total);
    out.write_all(text.as_bytes())?;
    for d in quiet {
        out.write_all(b"\n")?;
        print_line(&mut out, &d.line())?;
    }
    Ok(())
}

/// `size --json`: the files `shown` and the `total`, each name not in
/// UTF-8 followed by its bytes (`names`).
pub(crate) fn write_json(
    out: &mut impl Write,
    shown: &[Shown<'_>],
    total: Option<&SizeReport>,
    names: &RawNames,
) -> Result<()> {
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
        total,
    };
    super::write_json(out, &doc, names)
}

/// The text report: a table for each file `shown` that could be read,
/// with its notes, a line for each quiet directory, then the `total`'s
/// table.
pub(crate) fn print_text(
    out: &mut impl Write,
    shown: &[Shown<'_>],
    quiet: &[QuietDir],
    total: Option<&SizeReport>,
) -> Result<()> {
    for (r, _) in shown.iter().filter(|(r, _)| r.error.is_none()) {
        print_size(&mut *out, r)?;
        print_notes(&mut *out, r)?;
    }
    for d in quiet {
        print_line(&mut *out, &d.line())?;
    }
    if let Some(all) = total {
        print_size(&mut *out, all)?;
    }
    Ok(())
}

/// Whether the report `r` of the file `s` is shown: a file named always,
/// a file found in a directory or package when it holds device code, could
/// not be read, is damaged, or holds CUDA fatbins the table does not count.
pub(crate) fn is_shown(r: &SizeReport, s: &Scanned) -> bool {
    !s.found
        || r.total.images > 0
        || r.error.is_some()
        || !r.damage.is_empty()
        || r.elsewhere.is_some()
}

/// The HTML report of the files `sizes`, scanned into `scans` (in the
/// same order), from the inputs named `paths`.
pub(crate) fn html(
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

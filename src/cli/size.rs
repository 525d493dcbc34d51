//! `offload-kit size`: bytes of device code per target and per kind, as a
//! table or JSON (schema `offload-kit/size/1`). The counting is
//! `offload_kit::scan::size`'s.

use std::io::Write;

use anyhow::{Result, bail};
use serde::Serialize;

use super::io::{print_line, printable};
use super::scan::{Common, par_map, scan_file};
use offload_kit::scan::{self, SizeReport};

/// Bytes of device code per architecture and per kind.
#[derive(clap::Args)]
#[command(
    after_help = "Only innermost images count (an OffloadBinary image holding a fatbin is\n\
counted through the fatbin's entries). `bytes` is the images' size; `stored` what they take\n\
in the file: for images inside a compressed bundle, its compressed size shared out in\n\
proportion to their sizes (an estimate: compression is not per image)."
)]
pub struct SizeOpts {
    #[command(flatten)]
    common: Common,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

impl SizeOpts {
    pub fn run(self) -> Result<()> {
        let opts = self.common.options();
        let files = self.common.files()?;
        let scanned = par_map(&files, self.common.jobs(), |_, p| {
            scan_file(p, &opts, &mut scan::NoVisit)
        });
        let mut reports: Vec<SizeReport> = Vec::new();
        let mut failed = false;
        for s in &scanned {
            match &s.result {
                Ok(r) => reports.push(scan::size(&s.path, s.size, r)),
                Err(e) => {
                    failed = true;
                    eprintln!("{}", printable(&format!("error: '{}': {e}", s.path)));
                }
            }
        }
        let all = SizeReport::sum("(all inputs)", &reports);
        let several = reports.len() > 1;
        let mut out = std::io::stdout().lock();
        if self.json {
            #[derive(Serialize)]
            struct Doc<'a> {
                schema: &'static str,
                files: &'a [SizeReport],
                total: Option<&'a SizeReport>,
            }
            serde_json::to_writer_pretty(
                &mut out,
                &Doc {
                    schema: "offload-kit/size/1",
                    files: &reports,
                    total: several.then_some(&all),
                },
            )?;
            writeln!(out)?;
        } else {
            for r in &reports {
                print_size(&mut out, r)?;
            }
            if several {
                print_size(&mut out, &all)?;
            }
        }
        if failed {
            bail!("some files could not be read");
        }
        Ok(())
    }
}

fn print_size(mut out: &mut impl Write, r: &SizeReport) -> Result<()> {
    let pct = if r.file_size > 0 {
        r.total.stored as f64 * 100.0 / r.file_size as f64
    } else {
        0.0
    };
    print_line(
        &mut out,
        &format!(
            "{}: {} bytes; device code {} bytes in {} image(s), {} stored ({pct:.1}% of the file)",
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

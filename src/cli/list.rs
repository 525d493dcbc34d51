//! `offload-kit list`: the images in a file, as a table or as JSON.

use std::io::Write;

use anyhow::Result;

use super::io::{open_input, print_line};
use crate::bundle::listing::Listing;
use crate::offload_binary::listing::{self, BundleListingError, Document, RowsError};
use crate::offload_binary::{self, Budget, Inflate};
use crate::scan;

/// List the device images in files.
#[derive(clap::Args)]
#[command(
    after_help = "With several inputs, each table follows a line naming its file, and \
    --json prints {\"schema\": \"offload-kit/list/2\", \"files\": [...]} with one document per \
    file (or {\"file\", \"error\"}). Every readable input is listed; each one that cannot be \
    read gets one error line, as does each damaged container the scanner finds in a file \
    without OffloadBinaries (after what could be listed). Compressed OffloadBinaries are \
    streamed, never held in memory, within one budget for the whole command (bytes \
    decompressed: --max-uncompressed; images: the inputs' size / 16, at least 65536; \
    OffloadBinaries nested in images: 16 levels). Exit codes: 0 success, 2 an input could \
    not be read or parsed, held damaged containers, or went past a limit."
)]
pub struct Opts {
    /// OffloadBinaries, ELF or COFF objects, executables, shared libraries
    /// or archives (`-`: standard input).
    #[arg(required = true, value_name = "IN")]
    inputs: Vec<String>,
    /// Print JSON (schema in docs/scanners.md) instead of a table.
    #[arg(long)]
    json: bool,
    #[arg(long, value_name = "SIZE", value_parser = super::scan::parse_size,
          help = super::images::MAX_UNCOMPRESSED_HELP)]
    max_uncompressed: Option<u64>,
}

impl Opts {
    pub fn run(self) -> Result<std::process::ExitCode> {
        if self.inputs.iter().filter(|i| *i == "-").count() > 1 {
            anyhow::bail!("'-' (standard input) is given more than once");
        }
        let mut out = super::io::Report::stdout();
        // One budget for the whole command: every input and every binary
        // nested in an image spends from it.
        let budget = super::images::budget(self.max_uncompressed);
        if let [one] = &self.inputs[..] {
            let damaged = self.one(one, &budget, &mut out)?;
            out.flush()?;
            return Ok(std::process::ExitCode::from(if damaged {
                super::scan::exit::INPUT_ERROR
            } else {
                super::scan::exit::OK
            }));
        }
        let mut failed = false;
        let mut docs = Vec::new();
        for name in &self.inputs {
            let mut buf = Vec::new();
            if !self.json {
                print_line(&mut out, &format!("{name}:"))?;
            }
            match self.one(name, &budget, &mut buf) {
                Ok(damaged) if self.json => {
                    failed |= damaged;
                    docs.push(String::from_utf8_lossy(&buf).into_owned());
                }
                Ok(damaged) => {
                    failed |= damaged;
                    out.write_all(&buf)?;
                }
                Err(e) => {
                    failed = true;
                    let text = super::io::error_text(&e);
                    eprintln!("error: {}", super::io::printable(&text));
                    if self.json {
                        docs.push(serde_json::to_string_pretty(
                            &serde_json::json!({"file": name, "error": text}),
                        )?);
                    }
                }
            }
        }
        if self.json {
            crate::report::list_json(&mut out, &docs)?;
        }
        out.flush()?;
        Ok(std::process::ExitCode::from(if failed {
            super::scan::exit::INPUT_ERROR
        } else {
            super::scan::exit::OK
        }))
    }

    /// Lists one input to `out`, spending from `budget`; whether what was
    /// listed was read from damaged data (the scanner's problems, printed).
    fn one(&self, name: &str, budget: &Budget, mut out: &mut impl Write) -> Result<bool> {
        // Opened once: standard input can be read only once.
        let input = open_input(name)?;
        budget.add_input(input.bytes().len() as u64);
        if let Some(kind) = crate::package::detect(input.bytes()) {
            anyhow::bail!(
                "'{name}': {} {kind}; `offload-kit inspect {name}` lists the device images of \
                 the files inside it",
                kind.article()
            );
        }
        // The file's format, read once for every look at it below.
        let kind = crate::host::file_kind(input.bytes()).ok();
        let bundle = listing::bundle_listing(input.bytes(), kind, budget).map_err(|e| match e {
            BundleListingError::Read(e) => anyhow::Error::new(e).context(format!("'{name}'")),
            BundleListingError::NotABundle => {
                anyhow::anyhow!("'{name}': the compressed data is not a bundle")
            }
        })?;
        if let Some(b) = bundle {
            self.print_bundle(name, b, out)?;
            // Listed as LLVM's bundler reads it, which checks nothing; the
            // scanner says whether its entries can be read as listed.
            let mut opts = scan::Options::default();
            opts.max_uncompressed = budget.left(offload_binary::Spent::Inflated);
            let report = scan::scan_of(input.bytes(), &opts, &mut scan::NoVisit, kind);
            return Ok(say_damage(name, &report));
        }
        // The images of compressed binaries are streamed through once (to
        // check them) and only those that are binaries themselves kept.
        let found =
            offload_binary::find_images_streamed_of(input.bytes(), kind, budget, Inflate::Nested)
                .map_err(|e| read_error(format!("'{name}'"), e))?;
        let rows = listing::rows(&found.images, budget, &|b| input.file_offset(b)).map_err(
            |RowsError { path, error, .. }| {
                read_error(
                    format!("'{name}': the OffloadBinary inside image {path}"),
                    error,
                )
            },
        )?;
        if self.json {
            serde_json::to_writer_pretty(
                &mut out,
                &Document {
                    file: name,
                    images: &rows,
                    bundle: None,
                },
            )?;
            writeln!(out)?;
            return Ok(false);
        }
        if rows.is_empty() {
            // What the scanner finds where LLVM's reader finds nothing
            // (bundles in a .hip_fatbin section, CUDA fatbins, …).
            let mut opts = scan::Options::default();
            opts.max_uncompressed = budget.left(offload_binary::Spent::Inflated);
            let report = scan::scan_of(input.bytes(), &opts, &mut super::scan::Kinds, kind);
            return print_scanned(out, name, &report);
        }
        crate::report::list_rows(out, &rows)?;
        Ok(false)
    }
}

/// An error reading OffloadBinaries, after `prefix` (the file, and where in
/// it), with the option that raises the limit it went past, if any.
fn read_error(prefix: String, e: crate::Error) -> anyhow::Error {
    match super::images::raise_hint(&e, "--max-uncompressed SIZE") {
        Some(hint) => anyhow::anyhow!("{prefix}: {e} ({hint})"),
        None => anyhow::Error::new(e).context(prefix),
    }
}

impl Opts {
    fn print_bundle(&self, name: &str, b: Listing, mut out: &mut impl Write) -> Result<()> {
        if self.json {
            serde_json::to_writer_pretty(
                &mut out,
                &Document {
                    file: name,
                    images: &[],
                    bundle: Some(&b),
                },
            )?;
            writeln!(out)?;
            return Ok(());
        }
        crate::report::list_bundle(out, &b)?;
        Ok(())
    }
}

/// The images the scanner finds in a file without OffloadBinaries or a
/// bundle of its own (a shared library whose `.hip_fatbin` holds bundles,
/// say), in `inspect`'s words; or a note that there are none. The
/// problems the scanner met (damaged containers) follow, one `error:` line
/// each on standard error; whether there were any.
fn print_scanned(out: &mut impl Write, name: &str, r: &scan::Report) -> Result<bool> {
    print_scanned_images(out, name, r)?;
    Ok(say_damage(name, r))
}

/// Says on standard error, in one line, what is wrong with the file `name`
/// scanned as `r` (its problems grouped, as every scanner command says
/// them); whether anything is.
fn say_damage(name: &str, r: &scan::Report) -> bool {
    if r.problems.is_empty() && r.stopped.is_none() {
        return false;
    }
    let stopped = r.stopped.as_ref().map(ToString::to_string);
    eprintln!(
        "{}",
        super::io::problems::summary(
            name,
            r.problems.iter().map(|p| p.message.as_str()),
            stopped.as_deref(),
            "error"
        )
    );
    true
}

fn print_scanned_images(out: &mut impl Write, name: &str, r: &scan::Report) -> Result<()> {
    if r.images.is_empty() {
        if !r.problems.is_empty() {
            return Ok(());
        }
        // Not an error (LLVM lists nothing too), but say so.
        eprintln!(
            "'{name}': no device images here (no OffloadBinary, bundle or fatbin); \
             `offload-kit inspect` also scans files without sections"
        );
        return Ok(());
    }
    let in_binaries = r
        .images
        .iter()
        .filter(|i| {
            r.containers
                .get(i.container)
                .is_some_and(|c| c.kind == scan::ContainerKind::OffloadBinary)
        })
        .count();
    let whole = r
        .containers
        .iter()
        .all(|c| c.kind == scan::ContainerKind::ImageFile);
    if whole {
        eprintln!(
            "'{name}': no OffloadBinary; the file is itself one device image, as \
             `offload-kit inspect` finds it (it says more)"
        );
    } else if in_binaries > 0 {
        // The scanner accepts what LLVM's reader refuses (an OffloadBinary
        // in a section that is not 8-byte aligned, say).
        eprintln!(
            "'{name}': no OffloadBinary as LLVM reads them (misplaced or damaged: \
             `offload-kit inspect` says more); {} image(s) as the scanner finds them",
            r.images.len()
        );
    } else {
        eprintln!(
            "'{name}': no OffloadBinary; {} image(s) in bundles or fatbins, as \
             `offload-kit inspect` finds them (it says more)",
            r.images.len()
        );
    }
    crate::report::list_scanned(out, r)?;
    Ok(())
}

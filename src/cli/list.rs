//! `offload-kit list`: the images in a file, as a table or as JSON.

use std::io::Write;

use anyhow::{Context, Result};

use super::io::{Input, open_input, print_line};
use offload_kit::bundle::listing::{Compressed, Entry, Listing};
use offload_kit::offload_binary::listing::{self, Document, RowsError};
use offload_kit::offload_binary::{self, Limits};

/// List the device images in a file.
#[derive(clap::Args)]
pub struct Opts {
    /// An OffloadBinary, an ELF or COFF object, an executable, a shared
    /// library or an archive.
    input: String,
    /// Print JSON (schema in the README) instead of a table.
    #[arg(long)]
    json: bool,
}

impl Opts {
    pub fn run(self) -> Result<()> {
        // Opened once: standard input can be read only once.
        let input = open_input(&self.input)?;
        if let Some(b) = bundle_listing(&self.input, &input)? {
            return self.print_bundle(b);
        }
        let found = offload_binary::find_images(input.bytes(), &Limits::default())
            .with_context(|| format!("'{}'", self.input))?;
        let name = &self.input;
        let rows =
            listing::rows(&found, &Limits::default(), &|b| input.file_offset(b)).map_err(|e| {
                let msg = format!("'{name}': {e}");
                match e {
                    RowsError::Inner { error, .. } => anyhow::Error::new(error).context(msg),
                    _ => anyhow::anyhow!(msg),
                }
            })?;
        let mut out = std::io::stdout().lock();
        if self.json {
            serde_json::to_writer_pretty(
                &mut out,
                &Document {
                    file: &self.input,
                    images: &rows,
                    bundle: None,
                },
            )?;
            writeln!(out)?;
            return Ok(());
        }
        if rows.is_empty() {
            // Not an error (LLVM lists nothing too), but say so.
            eprintln!(
                "'{}': no OffloadBinary and no bundle here; `offload-kit inspect` also \
                 looks inside compressed bundles, fatbins and files without sections",
                self.input
            );
        }
        print_line(
            &mut out,
            &format!(
                "{:<3} {:<7} {:<10} {:<9} {:<24} {:<14} {:>12}  other",
                "#", "offload", "image", "version", "triple", "arch", "size"
            ),
        )?;
        for r in &rows {
            let other: Vec<String> = r
                .strings
                .iter()
                .filter(|(k, _)| k != "triple" && k != "arch")
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let where_ = match (&r.member, &r.section) {
                (Some(m), _) => format!("  [{m}]"),
                _ => String::new(),
            };
            print_line(
                &mut out,
                &format!(
                    "{:<3} {:<7} {:<10} {:<9} {:<24} {:<14} {:>12}  {}{where_}",
                    r.path,
                    r.offload_kind.to_string(),
                    r.image_kind.to_string(),
                    format!("v{}{}", r.version, if r.compressed { "+z" } else { "" }),
                    r.triple,
                    r.arch,
                    r.size,
                    other.join(",")
                ),
            )?;
        }
        Ok(())
    }
}

/// The input as a clang offload bundle, if it is one (binary, text, object
/// with bundle sections, or any of them compressed).
fn bundle_listing(name: &str, input: &Input) -> Result<Option<Listing>> {
    use offload_kit::bundle::{self, Format};
    if let Some(listing) = ccob_header_listing(name, input)? {
        return Ok(Some(listing));
    }
    let limit = offload_kit::bundle::ccob::Limits::default().max_uncompressed;
    let inflated = super::bundle::inflate(name, input, limit)?;
    let data = inflated
        .as_ref()
        .map_or(input.bytes(), |d| d.data.as_slice());
    let Some(format) = Format::detect(data) else {
        if inflated.is_some() {
            anyhow::bail!("'{name}': the compressed data is not a bundle");
        }
        return Ok(None);
    };
    if format == Format::Object
        && offload_binary::find_images(data, &Limits::default()).is_ok_and(|v| !v.is_empty())
    {
        // An object carrying OffloadBinaries too: list those the usual way.
        return Ok(None);
    }
    let found = bundle::entries(data, format).with_context(|| format!("'{name}'"))?;
    let base = data.as_ptr() as usize;
    let entries = found
        .iter()
        .enumerate()
        .map(|(index, f)| {
            let offset = (f.data.as_ptr() as usize).saturating_sub(base) as u64;
            Entry::new(index, f.id, offset, f.data.len() as u64)
        })
        .collect();
    let compressed = inflated.map(|d| Compressed::new(&d.header, d.compressed_size));
    Ok(Some(Listing::new(format, compressed, entries)))
}

/// The listing of a CCOB that holds a binary bundle, from the bundle
/// header alone: the contents are streamed only that far, so a bomb costs
/// nothing (the stored hash is not checked: `inspect --verify` does).
/// `None` for anything else, listed from the whole contents; an error for
/// contents whose first bytes show they are no bundle at all.
fn ccob_header_listing(name: &str, input: &Input) -> Result<Option<Listing>> {
    use offload_kit::bundle::{self, binary, ccob};
    let data = input.bytes();
    if !ccob::llvm_treats_as_compressed(data) {
        return Ok(None);
    }
    // Anything irregular is left to the full read, for its exact error.
    let Ok(c) = ccob::Ccob::parse(data) else {
        return Ok(None);
    };
    if c.size != data.len() as u64 || c.check_declared_size().is_err() {
        return Ok(None);
    }
    let records = match c.bundle_records() {
        Ok(Some(r)) => r,
        Ok(None) => {
            let prefix = c
                .decompress_prefix(bundle::SNIFF_LEN)
                .with_context(|| format!("'{name}'"))?;
            if !bundle::may_be_text_or_object_bundle(&prefix) {
                anyhow::bail!("'{name}': the compressed data is not a bundle");
            }
            return Ok(None);
        }
        Err(_) => return Ok(None),
    };
    // LLVM's order, by the records' IDs (the entry's `offset` holds its
    // record index here).
    let stand_ins: Vec<binary::Entry> = records
        .iter()
        .enumerate()
        .map(|(i, r)| binary::Entry {
            id: &r.id,
            offset: i as u64,
            data: &[],
        })
        .collect();
    let entries = binary::in_llvm_order(&stand_ins)
        .into_iter()
        .enumerate()
        .map(|(index, e)| {
            let r = &records[usize::try_from(e.offset).unwrap_or_default()];
            Entry::new(index, &r.id, r.offset, r.size)
        })
        .collect();
    Ok(Some(Listing::new(
        bundle::Format::Binary,
        Some(Compressed::of(&c)),
        entries,
    )))
}

impl Opts {
    fn print_bundle(&self, b: Listing) -> Result<()> {
        let mut out = std::io::stdout().lock();
        if self.json {
            serde_json::to_writer_pretty(
                &mut out,
                &Document {
                    file: &self.input,
                    images: &[],
                    bundle: Some(&b),
                },
            )?;
            writeln!(out)?;
            return Ok(());
        }
        match &b.compressed {
            Some(c) => writeln!(
                out,
                "{} bundle, compressed (CCOB v{}, {}, {} -> {} bytes)",
                b.format, c.version, c.method, c.compressed_size, c.uncompressed_size
            )?,
            None => writeln!(out, "{} bundle", b.format)?,
        }
        writeln!(
            out,
            "{:<3} {:<7} {:<28} {:<20} {:>12}  id",
            "#", "kind", "triple", "target id", "size"
        )?;
        for e in &b.entries {
            print_line(
                &mut out,
                &format!(
                    "{:<3} {:<7} {:<28} {:<20} {:>12}  {}",
                    e.index, e.kind, e.triple, e.target_id, e.size, e.id
                ),
            )?;
        }
        Ok(())
    }
}

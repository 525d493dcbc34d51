//! `offload-kit list`: the images in a file, as a table or as JSON.

use std::io::Write;

use anyhow::{Context, Result};
use serde::Serialize;

use super::io::{Input, open_input, print_line};
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

/// One image, as `list --json` prints it.
#[derive(Serialize)]
struct Row {
    index: usize,
    /// Where the image sits among nested OffloadBinaries: `"2"` for the
    /// file's third image, `"2.0"` for the first image inside it.
    path: String,
    /// How many images the image holds when it is an OffloadBinary itself.
    nested: usize,
    member: Option<String>,
    section: Option<String>,
    format: &'static str,
    version: u32,
    compressed: bool,
    binary_offset: u64,
    file_offset: Option<u64>,
    offload_kind: String,
    image_kind: String,
    triple: String,
    arch: String,
    size: u64,
    strings: Vec<(String, String)>,
}

/// A clang offload bundle, as `list --json` prints it.
#[derive(Serialize)]
struct BundleListing {
    format: &'static str,
    compressed: Option<CompressedInfo>,
    entries: Vec<BundleEntry>,
}

#[derive(Serialize)]
struct CompressedInfo {
    version: u16,
    method: String,
    compressed_size: u64,
    uncompressed_size: u64,
    hash: String,
}

#[derive(Serialize)]
struct BundleEntry {
    index: usize,
    id: String,
    kind: String,
    triple: String,
    target_id: String,
    offset: u64,
    size: u64,
}

#[derive(Serialize)]
struct Listing<'a> {
    file: &'a str,
    images: Vec<Row>,
    bundle: Option<BundleListing>,
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
        let mut rows = Vec::new();
        for (index, f) in found.iter().enumerate() {
            push_rows(
                &self.input,
                &input,
                f,
                &f.image,
                index,
                index.to_string(),
                0,
                &mut rows,
            )?;
        }
        let mut out = std::io::stdout().lock();
        if self.json {
            serde_json::to_writer_pretty(
                &mut out,
                &Listing {
                    file: &self.input,
                    images: rows,
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
                    r.offload_kind,
                    r.image_kind,
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

/// How deep OffloadBinaries inside images are followed.
const MAX_NESTING: usize = 16;

/// Appends the row of `image` (the `index`th of the file, at `path` among
/// nested binaries) and, when the image is an OffloadBinary itself, the rows
/// of the images inside it (`path.0`, `path.1`, …), as newer LLVM lists
/// them. A malformed inner binary is an error.
#[allow(clippy::too_many_arguments)]
fn push_rows(
    name: &str,
    input: &Input,
    f: &offload_binary::FoundImage<'_>,
    image: &offload_binary::OffloadImage<'_>,
    index: usize,
    path: String,
    depth: usize,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let inner = if offload_binary::has_magic(&image.image) {
        if depth >= MAX_NESTING {
            anyhow::bail!("'{name}': OffloadBinaries nested more than {MAX_NESTING} deep");
        }
        offload_binary::read_all(&image.image, &Limits::default())
            .with_context(|| format!("'{name}': the OffloadBinary inside image {path}"))?
    } else {
        Vec::new()
    };
    rows.push(Row {
        index,
        path: path.clone(),
        nested: inner.len(),
        member: f.member.clone(),
        section: f.section.clone(),
        format: "OffloadBinary",
        version: image.version,
        compressed: image.compressed,
        binary_offset: image.binary_offset,
        file_offset: input
            .file_offset(&image.image)
            .filter(|_| !image.image.is_empty()),
        offload_kind: image.offload_kind.to_string(),
        image_kind: image.image_kind.to_string(),
        triple: lossy(image.triple()),
        arch: lossy(image.arch()),
        size: image.image.len() as u64,
        strings: image
            .strings
            .iter()
            .map(|(k, v)| (lossy(k), lossy(v)))
            .collect(),
    });
    for (k, i) in inner.iter().enumerate() {
        push_rows(
            name,
            input,
            f,
            i,
            index,
            format!("{path}.{k}"),
            depth + 1,
            rows,
        )?;
    }
    Ok(())
}

/// The input as a clang offload bundle, if it is one (binary, text, object
/// with bundle sections, or any of them compressed).
fn bundle_listing(name: &str, input: &Input) -> Result<Option<BundleListing>> {
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
            bundle_entry(index, f.id, offset, f.data.len() as u64)
        })
        .collect();
    let compressed = inflated.map(|d| CompressedInfo {
        version: d.header.version,
        method: d.header.method.to_string(),
        compressed_size: d.compressed_size,
        uncompressed_size: d.header.uncompressed_size,
        hash: format!("{:#018x}", d.header.hash),
    });
    let format = match format {
        Format::Binary => "binary",
        Format::Text(_) => "text",
        Format::Object => "object",
    };
    Ok(Some(BundleListing {
        format,
        compressed,
        entries,
    }))
}

/// One row of a bundle listing.
fn bundle_entry(index: usize, id: &[u8], offset: u64, size: u64) -> BundleEntry {
    use offload_kit::bundle::id::BundleId;
    let id = String::from_utf8_lossy(id).into_owned();
    let parsed = BundleId::parse(&id).ok();
    BundleEntry {
        index,
        kind: parsed.as_ref().map(|p| p.kind.clone()).unwrap_or_default(),
        triple: parsed
            .as_ref()
            .map(|p| p.normalized_triple().trim_end_matches('-').to_string())
            .unwrap_or_default(),
        target_id: parsed
            .as_ref()
            .map(|p| p.target_id.clone())
            .unwrap_or_default(),
        id,
        offset,
        size,
    }
}

/// The listing of a CCOB that holds a binary bundle, from the bundle
/// header alone: the contents are streamed only that far, so a bomb costs
/// nothing (the stored hash is not checked: `inspect --verify` does).
/// `None` for anything else, listed from the whole contents; an error for
/// contents whose first bytes show they are no bundle at all.
fn ccob_header_listing(name: &str, input: &Input) -> Result<Option<BundleListing>> {
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
            bundle_entry(index, &r.id, r.offset, r.size)
        })
        .collect();
    Ok(Some(BundleListing {
        format: "binary",
        compressed: Some(CompressedInfo {
            version: c.header.version,
            method: c.header.method.to_string(),
            compressed_size: c.payload.len() as u64,
            uncompressed_size: c.header.uncompressed_size,
            hash: format!("{:#018x}", c.header.hash),
        }),
        entries,
    }))
}

impl Opts {
    fn print_bundle(&self, b: BundleListing) -> Result<()> {
        let mut out = std::io::stdout().lock();
        if self.json {
            serde_json::to_writer_pretty(
                &mut out,
                &Listing {
                    file: &self.input,
                    images: Vec::new(),
                    bundle: Some(b),
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

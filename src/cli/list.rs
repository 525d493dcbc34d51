//! `offload-kit list`: the images in a file, as a table or as JSON.

use std::io::Write;

use anyhow::{Context, Result};
use serde::Serialize;

use super::io::open_input;
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

#[derive(Serialize)]
struct Listing<'a> {
    file: &'a str,
    images: Vec<Row>,
}

impl Opts {
    pub fn run(self) -> Result<()> {
        let input = open_input(&self.input)?;
        let found = offload_binary::find_images(input.bytes(), &Limits::default())
            .with_context(|| format!("'{}'", self.input))?;
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let rows: Vec<Row> = found
            .iter()
            .enumerate()
            .map(|(index, f)| {
                let i = &f.image;
                Row {
                    index,
                    member: f.member.clone(),
                    section: f.section.clone(),
                    format: "OffloadBinary",
                    version: i.version,
                    compressed: i.compressed,
                    binary_offset: i.binary_offset,
                    file_offset: input.file_offset(&i.image).filter(|_| !i.image.is_empty()),
                    offload_kind: i.offload_kind.to_string(),
                    image_kind: i.image_kind.to_string(),
                    triple: lossy(i.triple()),
                    arch: lossy(i.arch()),
                    size: i.image.len() as u64,
                    strings: i
                        .strings
                        .iter()
                        .map(|(k, v)| (lossy(k), lossy(v)))
                        .collect(),
                }
            })
            .collect();
        let mut out = std::io::stdout().lock();
        if self.json {
            serde_json::to_writer_pretty(
                &mut out,
                &Listing {
                    file: &self.input,
                    images: rows,
                },
            )?;
            writeln!(out)?;
            return Ok(());
        }
        writeln!(
            out,
            "{:<3} {:<7} {:<10} {:<9} {:<24} {:<14} {:>12}  other",
            "#", "offload", "image", "version", "triple", "arch", "size"
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
            writeln!(
                out,
                "{:<3} {:<7} {:<10} {:<9} {:<24} {:<14} {:>12}  {}{where_}",
                r.index,
                r.offload_kind,
                r.image_kind,
                format!("v{}{}", r.version, if r.compressed { "+z" } else { "" }),
                r.triple,
                r.arch,
                r.size,
                other.join(",")
            )?;
        }
        Ok(())
    }
}

//! `list`'s tables: the OffloadBinary images of a file, a bundle's
//! entries, and what the scanner finds where neither is; and the JSON
//! envelope of several files' documents.

use std::io::{self, Write};

use super::print_line;
use crate::bundle::listing::Listing;
use crate::offload_binary::listing::Row;
use crate::scan;

/// `list`'s table of `rows`: a heading, then a line per row, each column
/// as wide as its longest value (at least the usual).
pub(crate) fn list_rows(mut out: &mut impl Write, rows: &[Row]) -> io::Result<()> {
    let tw = rows
        .iter()
        .map(|r| r.triple.len())
        .max()
        .unwrap_or(0)
        .max(24);
    let aw = rows.iter().map(|r| r.arch.len()).max().unwrap_or(0).max(14);
    print_line(
        &mut out,
        &format!(
            "{:<3} {:<7} {:<10} {:<9} {:<tw$} {:<aw$} {:>12}  other",
            "#", "offload", "image", "version", "triple", "arch", "size"
        ),
    )?;
    for r in rows {
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
                "{:<3} {:<7} {:<10} {:<9} {:<tw$} {:<aw$} {:>12}  {}{where_}",
                r.path,
                r.offload_kind.to_string(),
                // The scanners' words (object, bitcode), not LLVM's.
                scan::Content::Image(r.image_kind).to_string(),
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

/// `list`'s table of the bundle `b`: a line saying its format (and its
/// compression), a heading, then a line per entry.
pub(crate) fn list_bundle(mut out: &mut impl Write, b: &Listing) -> io::Result<()> {
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

/// `list`'s table of the images the scanner found in `r` (a file
/// without OffloadBinaries): a heading, then a line per image, in
/// `inspect`'s words.
pub(crate) fn list_scanned(out: &mut impl Write, r: &scan::Report) -> io::Result<()> {
    let tw = r
        .images
        .iter()
        .map(|i| i.triple.len())
        .max()
        .unwrap_or(0)
        .max(24);
    let aw = r
        .images
        .iter()
        .map(|i| i.target_id.len())
        .max()
        .unwrap_or(0)
        .max(14);
    print_line(
        &mut *out,
        &format!(
            "{:<3} {:<7} {:<10} {:<14} {:<tw$} {:<aw$} {:>12}  where",
            "#", "offload", "image", "container", "triple", "arch", "size"
        ),
    )?;
    for i in &r.images {
        let container = r.containers.get(i.container).map_or("-", |c| c.kind.name());
        let kind = i.image_kind.map_or_else(|| "-".into(), |k| k.to_string());
        let where_ = [i.member.as_deref(), i.section.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        print_line(
            &mut *out,
            &format!(
                "{:<3} {:<7} {:<10} {:<14} {:<tw$} {:<aw$} {:>12}  {where_}",
                i.id,
                i.offload_kind.to_string(),
                kind,
                container,
                i.triple,
                if i.target_id.is_empty() {
                    "-"
                } else {
                    &i.target_id
                },
                i.size,
            ),
        )?;
    }
    Ok(())
}

/// `list --json`'s document of several files: `docs`, each one file's
/// JSON as written alone, in one `offload-kit/list/2` envelope.
pub(crate) fn list_json(out: &mut impl Write, docs: &[String]) -> io::Result<()> {
    writeln!(
        out,
        "{{\n\"schema\": \"offload-kit/list/2\",\n\"files\": [\n{}\n]\n}}",
        docs.iter()
            .map(|d| d.trim_end())
            .collect::<Vec<_>>()
            .join(",\n")
    )
}

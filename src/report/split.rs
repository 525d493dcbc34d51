//! The text report and the JSON document (schema `offload-kit/split/1`)
//! of `offload-kit split`, from the [`SplitReport`]s of
//! `crate::prune::split`: a few lines per input split (its outputs, what
//! serves each device target, image group and per-GPU file, the members
//! refused).

use std::io::Write;

use anyhow::Result;

use super::print_line;
use crate::prune::split::SplitReport;

/// Writes the `split --json` document of `reports`, then a newline.
pub(crate) fn write_json(out: &mut impl Write, reports: &[SplitReport]) -> Result<()> {
    let doc = serde_json::json!({ "schema": "offload-kit/split/1", "files": reports });
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// Prints the text report of `reports`, each line made printable.
pub(crate) fn print_text(out: &mut impl Write, reports: &[SplitReport]) -> Result<()> {
    for line in reports.iter().flat_map(text) {
        print_line(out, &line)?;
    }
    Ok(())
}

/// The text report of one split, line by line.
fn text(r: &SplitReport) -> Vec<String> {
    // A layout's or archive's `null` is the input's own images, carried:
    // what the split made is each group's (a wheel's null is a new wheel).
    let carried = matches!(r.format, "oci" | "docker");
    let made = r
        .outputs
        .iter()
        .filter(|o| !(carried && o.gpus.is_empty()))
        .count();
    let one = made == 1;
    let noun = match (r.format, one) {
        ("wheel", true) => "wheel",
        ("wheel", false) => "wheels",
        ("tree" | "file", true) => "directory",
        ("tree" | "file", false) => "directories",
        ("oci" | "docker", true) => "image",
        ("oci" | "docker", false) => "images",
        (_, true) => "package",
        (_, false) => "packages",
    };
    let mut s = vec![format!("{}: split into {made} {noun}", r.input)];
    for o in &r.outputs {
        let gpus = match o.gpus.is_empty() {
            true => "every GPU, as the input".to_string(),
            false => o.gpus.join(","),
        };
        s.push(format!("  {} ({gpus})", o.path));
        s.extend(o.properties.iter().map(|p| format!("    {p}")));
        if let Some(i) = &o.index {
            s.push(format!("    pip index: {i}"));
        }
    }
    s.extend(r.variants_json.iter().map(|v| format!("  {v}")));
    let lists = [
        (
            "device targets, and the outputs that serve them",
            &r.targets,
        ),
        ("images, and the outputs that hold them", &r.images),
        ("per-GPU files, and the outputs that hold them", &r.files),
    ];
    // A variant wheel split again has no null variant.
    let null = r.variants_json.is_some() && r.outputs.iter().any(|o| o.gpus.is_empty());
    for (what, list) in lists.into_iter().filter(|(_, l)| !l.is_empty()) {
        s.push(format!("  {what}:"));
        for t in list {
            let by = match t.outputs.is_empty() {
                true if null => "none (only in null)".to_string(),
                true => "none".to_string(),
                false => t.outputs.join(", "),
            };
            s.push(format!("    {}: {by}", t.what));
        }
    }
    s.extend(
        r.members_refused
            .iter()
            .map(|m| format!("  refused, left as it was: {m}")),
    );
    s
}

//! The Markdown reports of `size --markdown` and `inspect --markdown`, for
//! a CI job summary (docs/scanners.md): GitHub-flavoured tables of the
//! same numbers as `size --json` ([`SizeReport`]) and `inspect --json`
//! ([`File`]). Every name from a file is escaped, so that each row keeps
//! the header's columns.

use std::fmt::Write as _;

use crate::scan::JsonFile as File;
use crate::scan::size::{SizeReport, Tally};
use crate::scan::sort::row_cmp;
use crate::text::{Cell, Table, markdown_cell, num};

/// The share of `file_size` that `stored` bytes are, as the text prints
/// it (`12.5%`).
fn percent(stored: u64, file_size: u64) -> String {
    if file_size == 0 {
        return "0.0%".to_string();
    }
    format!("{:.1}%", stored as f64 * 100.0 / file_size as f64)
}

/// A [`Tally`]'s three cells.
fn tally(t: &Tally) -> [Cell<'static>; 3] {
    [num(t.images), num(t.bytes), num(t.stored)]
}

/// The Markdown report of `size` for the reports of `files`, with a total
/// row when `total` is given (as `offload-kit size --markdown` prints it
/// for several inputs: [`SizeReport::sum`] of them): a row per file with
/// its device images, their bytes and what they take in it, then per file
/// its bytes per target and per kind. Its notes say why a file could not
/// be read, what its scan found damaged, the bundles' host entries not
/// counted, and the CUDA fatbins in its other data sections, not read.
pub fn size_markdown(files: &[&SizeReport], total: Option<&SizeReport>) -> String {
    let mut out = String::from("## offload-kit size\n\n");
    let mut t = Table::new(&[
        "Input",
        "File bytes>",
        "Device images>",
        "Bytes>",
        "Stored>",
        "Of the file>",
        "Note",
    ]);
    for r in files.iter().copied().chain(total) {
        let note = r.notes().join("; ");
        let mut cells = vec![Cell::Text(&r.path), num(r.file_size)];
        cells.extend(tally(&r.total));
        cells.push(Cell::Raw(percent(r.total.stored, r.file_size)));
        cells.push(Cell::Text(&note));
        t.row(cells);
    }
    t.write(&mut out);
    let shown = files.iter().copied().chain(total);
    for r in shown.filter(|r| r.error.is_none() && r.total.images + r.host.images > 0) {
        let _ = writeln!(out, "### {}\n", markdown_cell(&r.path));
        let mut targets = Table::new(&[
            "Offload", "Triple", "Target", "Kind", "Images>", "Bytes>", "Stored>",
        ]);
        let mut rows: Vec<(&String, &Tally)> = r.by_target.iter().collect();
        rows.sort_by(|a, b| row_cmp(a.0, b.0));
        for (key, t) in rows {
            let parts: Vec<&str> = key.split(' ').collect();
            let mut cells: Vec<Cell<'_>> = match parts.len() {
                4 => parts.into_iter().map(Cell::Text).collect(),
                // A name with a space in it (from a hostile file): whole,
                // in the first column.
                _ => vec![
                    Cell::Text(key),
                    Cell::Raw(String::new()),
                    Cell::Raw(String::new()),
                    Cell::Raw(String::new()),
                ],
            };
            cells.extend(tally(t));
            targets.row(cells);
        }
        targets.write(&mut out);
        let mut kinds = Table::new(&["Kind", "Images>", "Bytes>", "Stored>"]);
        let mut rows: Vec<(&String, &Tally)> = r.by_kind.iter().collect();
        rows.sort_by(|a, b| row_cmp(a.0, b.0));
        for (key, t) in rows {
            let mut cells = vec![Cell::Text(key)];
            cells.extend(tally(t));
            kinds.row(cells);
        }
        kinds.write(&mut out);
    }
    out
}

/// The Markdown report of `inspect` for `files` (as `offload-kit inspect
/// --markdown` prints it): a table with a row per file (its format, size,
/// containers, device images and problems, or why it could not be read),
/// then a table with a row per device image (its id, container, kinds,
/// triple, target, size and file offset, the numbers of `inspect
/// --json`), then each file's problems.
pub fn inspect_markdown(files: &[File<'_>]) -> String {
    let mut out = String::from("## offload-kit inspect\n\n");
    let mut t = Table::new(&[
        "Input",
        "Format",
        "File bytes>",
        "Containers>",
        "Device images>",
        "Host entries>",
        "Problems>",
        "Note",
    ]);
    for f in files {
        let note = match f.result {
            Ok(_) => String::new(),
            Err(e) => format!("error: {e}"),
        };
        let mut cells = vec![Cell::Text(f.path)];
        match f.result {
            Ok(r) => {
                let hosts = r.images.iter().filter(|i| i.offload_kind.is_host()).count();
                cells.extend([
                    Cell::Text(r.format),
                    num(f.size),
                    num(r.containers.len()),
                    num(r.images.len() - hosts),
                    num(hosts),
                    num(r.problems.len()),
                ]);
            }
            Err(_) => {
                cells.extend([Cell::Raw("error".into()), num(f.size)]);
                cells.extend((0..4).map(|_| Cell::Raw(String::new())));
            }
        }
        cells.push(Cell::Text(&note));
        t.row(cells);
    }
    t.write(&mut out);
    let mut images = Table::new(&[
        "Input",
        "Image>",
        "Container>",
        "Offload",
        "Kind",
        "Triple",
        "Target",
        "Size>",
        "Offset>",
    ]);
    let mut problems = Table::new(&["Input", "Offset>", "Where", "Problem"]);
    for f in files {
        let Ok(r) = f.result else { continue };
        for i in r.images.iter().filter(|i| !i.offload_kind.is_host()) {
            let kind = i.image_kind.map_or_else(String::new, |k| k.to_string());
            let offload = i.offload_kind.to_string();
            images.row(vec![
                Cell::Text(f.path),
                num(i.id),
                num(i.container),
                Cell::Text(&offload),
                Cell::Text(&kind),
                Cell::Text(&i.triple),
                Cell::Text(&i.target_id),
                num(i.size),
                Cell::Raw(i.offset.map_or_else(String::new, |o| o.to_string())),
            ]);
        }
        for p in &r.problems {
            let mut place: Vec<&str> = Vec::new();
            place.extend(p.member.as_deref());
            place.extend(p.section.as_deref());
            let place = place.join(" ");
            problems.row(vec![
                Cell::Text(f.path),
                Cell::Raw(p.offset.map_or_else(String::new, |o| o.to_string())),
                Cell::Text(&place),
                Cell::Text(&p.message),
            ]);
        }
    }
    if !images.is_empty() {
        out.push_str("### Device images\n\n");
        images.write(&mut out);
    }
    if !problems.is_empty() {
        out.push_str("### Problems\n\n");
        problems.write(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::Report;

    #[test]
    fn size_rows_per_file_target_and_kind() {
        let mut a = SizeReport {
            path: "a|`b`.so".into(),
            file_size: 1000,
            ..SizeReport::default()
        };
        a.total = Tally {
            images: 2,
            bytes: 300,
            stored: 250,
        };
        a.by_target.insert(
            "hip amdgcn-amd-amdhsa gfx90a object".into(),
            a.total.clone(),
        );
        a.by_target
            .insert("odd name with many spaces".into(), Tally::default());
        a.by_kind.insert("object".into(), a.total.clone());
        let gone = SizeReport::unreadable("gone.so", "cannot open");
        let all = SizeReport::sum("(all inputs)", [&a, &gone]);
        let text = size_markdown(&[&a, &gone], Some(&all));
        crate::text::assert_tables_well_formed(&text);
        assert!(
            text.contains("| a\\|\\`b\\`.so | 1000 | 2 | 300 | 250 | 25.0% | - |"),
            "{text}"
        );
        assert!(text.contains("| gone.so | 0 | 0 | 0 | 0 | 0.0% | error: cannot open |"));
        assert!(text.contains("| hip | amdgcn-amd-amdhsa | gfx90a | object | 2 | 300 | 250 |"));
        assert!(text.contains("| odd name with many spaces | - | - | - | 0 | 0 | 0 |"));
        assert!(text.contains("### (all inputs)"));
    }

    /// A file the scan found damaged, or stopped in: its report says so
    /// in JSON, in the Markdown note and in the total, however few images
    /// were counted.
    #[test]
    fn size_of_a_damaged_file_says_so() {
        let r = Report {
            problems: vec![crate::scan::Problem {
                offset: Some(0),
                section: None,
                member: None,
                container: None,
                message: "cannot read the object file".into(),
                kind: crate::scan::ProblemKind::Damage,
                within: None,
                whole_file: false,
            }],
            stopped: Some(crate::scan::Limit::Images(3)),
            ..Report::default()
        };
        let cut = crate::scan::size("cut.o", 100, &r);
        assert_eq!(cut.total.images, 0);
        assert_eq!(cut.damage.len(), 2, "{:?}", cut.damage);
        assert!(cut.damage[1].starts_with("the scan stopped: "));
        let json = serde_json::to_value(&cut).unwrap();
        assert_eq!(json["damage"][0], "cannot read the object file");
        let fine = crate::scan::size("fine.o", 100, &Report::default());
        let json = serde_json::to_value(&fine).unwrap();
        assert!(json.get("damage").is_none(), "{json}");
        let all = SizeReport::sum("(all inputs)", [&cut, &fine]);
        assert_eq!(all.damage, ["1 file(s) not read whole"]);
        let text = size_markdown(&[&cut, &fine], Some(&all));
        crate::text::assert_tables_well_formed(&text);
        assert!(
            text.contains("| cut.o | 100 | 0 | 0 | 0 | 0.0% | damaged: cannot read the object file (counted: what could be read); damaged: the scan stopped"),
            "{text}"
        );
        assert!(
            text.contains("| fine.o | 100 | 0 | 0 | 0 | 0.0% | - |"),
            "{text}"
        );
    }

    /// A file with CUDA fatbins in its other data sections, which the
    /// scan counts but does not read: the library's Markdown and HTML note
    /// them as the command line's Markdown does, and the JSON does not
    /// carry the note.
    #[test]
    fn size_notes_fatbins_elsewhere() {
        let r = Report {
            fatbins_elsewhere: vec![(".data".into(), 3), (".ldata".into(), 1)],
            ..Report::default()
        };
        let host = crate::scan::size("host.so", 100, &r);
        let text = size_markdown(&[&host], None);
        crate::text::assert_tables_well_formed(&text);
        assert!(
            text.contains("| host.so | 100 | 0 | 0 | 0 | 0.0% | 4 CUDA fatbin(s) in .data (3), .ldata (1), which the file loads itself, not read (--raw reads them) |"),
            "{text}"
        );
        let json = serde_json::to_string(&host).unwrap();
        assert!(!json.contains("fatbin"), "{json}");
        // The HTML report's table notes them too.
        let html = crate::report::size_html(
            &[crate::report::HtmlFile::new("host.so", &host, Some(&r))],
            None,
        );
        assert!(
            html.contains("<td>4 CUDA fatbin(s) in .data (3), .ldata (1), which the file loads itself, not read (--raw reads them)</td>"),
            "{html}"
        );
        let all = SizeReport::sum("(all inputs)", [&host]);
        assert!(
            size_markdown(&[], Some(&all))
                .contains("| (all inputs) | 100 | 0 | 0 | 0 | 0.0% | - |")
        );
    }

    #[test]
    fn inspect_rows_per_file_and_image() {
        let r = Report::default();
        let files = [
            File {
                path: "x<y>.so",
                size: 7,
                result: Ok(&r),
                kernels: None,
            },
            File {
                path: "gone|.so",
                size: 0,
                result: Err("cannot open"),
                kernels: None,
            },
        ];
        let text = inspect_markdown(&files);
        crate::text::assert_tables_well_formed(&text);
        assert!(text.contains("| x\\<y\\>.so |"), "{text}");
        assert!(text.contains("| gone\\|.so | error | 0 | - | - | - | - | error: cannot open |"));
        assert!(!text.contains("### Device images"));
    }
}

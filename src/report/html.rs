//! The HTML report of `size --html` (docs/scanners.md): one
//! self-contained document, with no script and nothing fetched (its
//! Content-Security-Policy forbids it), holding a treemap of device-code
//! bytes (input → file → package member → container → target, laid out
//! here as absolutely placed boxes: see `treemap.rs`), a legend of the
//! targets, and tables of the same numbers as `size --json`. Every name
//! from a file is escaped; the same reports give the same bytes.

mod treemap;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::scan::size::{SizeReport, Tally, target_key};
use crate::scan::sort::row_cmp;
use crate::scan::{Parent, Report};
use crate::text::xml;
use treemap::{Builder, HEADER, Level, Node, Placed, Rect, human};

/// The treemap's size, in pixels.
const MAP: Rect = Rect {
    x: 0.0,
    y: 0.0,
    w: 1120.0,
    h: 680.0,
};

/// How many children of a node the treemap shows: the rest are one
/// "other" box.
const KEEP: usize = 48;

/// One file of the HTML report of `size` ([`HtmlFile::new`]).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct HtmlFile<'a> {
    /// The input named that this file is, or was found in (a directory, a
    /// package): the treemap's first level. A file's path below it (after
    /// `input/`, and `!/` for a package's members) makes the levels below.
    pub input: &'a str,
    /// Its numbers, as `size --json` has them ([`size`](crate::scan::size())).
    pub size: &'a SizeReport,
    /// Its scan (the one `size` was made from), whose outermost containers
    /// make a level between the file and its targets; `None`: the targets
    /// go straight under the file.
    pub scan: Option<&'a Report>,
}

impl<'a> HtmlFile<'a> {
    /// The file whose numbers are `size`, found in (or named as) `input`,
    /// scanned into `scan` (`None`: no container level).
    pub fn new(input: &'a str, size: &'a SizeReport, scan: Option<&'a Report>) -> HtmlFile<'a> {
        HtmlFile { input, size, scan }
    }
}

/// The HTML report of `size` for `files`, with a total row when `total`
/// is given (as `offload-kit size --html FILE` writes it: several inputs'
/// [`SizeReport::sum`]): a treemap of the device code's bytes, boxes
/// labelled and coloured by vendor and target (small ones folded into one
/// "other" box per parent), a legend, a table with a row per file (its
/// size, device images, their bytes and what they take in it), a table
/// with a row per target and, of more than one file, one with a row per
/// file and target. A self-contained document: no script, nothing
/// fetched.
pub fn size_html(files: &[HtmlFile<'_>], total: Option<&SizeReport>) -> String {
    let mut root = tree(files);
    root.collapse();
    root.fold(KEEP);
    let placed = treemap::place(&root, MAP);
    let sizes: Vec<&SizeReport> = files.iter().map(|f| f.size).collect();
    let all = SizeReport::sum("(all inputs)", sizes.iter().copied());
    let targets = total.unwrap_or(&all);
    let mut keys: Vec<&str> = targets.by_target.keys().map(String::as_str).collect();
    keys.sort_by(|a, b| row_cmp(a, b));
    let colours = palette(keys);
    let mut out = String::with_capacity(64 * 1024 + placed.len() * 320);
    out.push_str(HEAD);
    let _ = writeln!(
        out,
        "<h1>offload-kit size</h1>\n<p class=\"sum\">{} file(s): device code {} bytes ({}) in {} \
         image(s), {} bytes stored, in {} bytes of files.</p>",
        files.len(),
        targets.total.bytes,
        human(targets.total.bytes),
        targets.total.images,
        targets.total.stored,
        targets.file_size
    );
    out.push_str("<div class=\"top\">\n");
    let _ = writeln!(
        out,
        "<div class=\"map\" style=\"width:{}px;height:{}px\">",
        MAP.w, MAP.h
    );
    for p in &placed {
        boxed(&mut out, p, &colours);
    }
    if placed.is_empty() {
        out.push_str("<p>No device code.</p>\n");
    }
    out.push_str("</div>\n");
    legend(&mut out, targets, &colours);
    out.push_str("</div>\n");
    files_table(&mut out, files, total);
    targets_table(&mut out, targets);
    if files.len() > 1 {
        file_targets_table(&mut out, files);
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// The levels of a file's path below its input: the file on disk, then
/// each package member, each after its directories (`d/pkg.whl!/a/b.so`
/// below `d`: `pkg.whl`, `a/`, `b.so`); none when the file is the input
/// itself.
fn levels<'a>(input: &str, path: &'a str) -> Vec<(Level, &'a str)> {
    let (rest, first) = if path == input {
        ("", Level::File)
    } else if let Some(r) = path.strip_prefix(input).and_then(|r| r.strip_prefix("!/")) {
        (r, Level::Member)
    } else if let Some(r) = path.strip_prefix(input).and_then(|r| {
        r.strip_prefix('/')
            .or_else(|| input.ends_with('/').then_some(r))
    }) {
        (r, Level::File)
    } else {
        (path, Level::File)
    };
    let mut out = Vec::new();
    for (i, segment) in rest.split("!/").filter(|s| !s.is_empty()).enumerate() {
        let level = if i == 0 { first } else { Level::Member };
        let parts: Vec<&str> = segment
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if let Some((last, dirs)) = parts.split_last() {
            out.extend(dirs.iter().map(|d| (Level::Dir, *d)));
            out.push((level, *last));
        }
    }
    out
}

/// The outermost container around `img` in `r`, named for the treemap:
/// `cuda-fatbin #2 in .nv_fatbin`.
fn container_label(r: &Report, container: usize) -> String {
    let mut id = container;
    // Each step goes to a container found earlier: at most as many steps
    // as there are containers.
    for _ in 0..r.containers.len() {
        let next = match r.containers.get(id).and_then(|c| c.parent) {
            Some(Parent::Container(p)) => Some(p),
            Some(Parent::Image(i)) => r.images.get(i).map(|i| i.container),
            None => None,
        };
        match next {
            Some(p) if p != id => id = p,
            _ => break,
        }
    }
    let Some(c) = r.containers.get(id) else {
        return format!("container #{id}");
    };
    match (c.member.as_deref(), c.section.as_deref()) {
        (Some(m), Some(s)) => format!("{} #{id} in {m} {s}", c.kind),
        (Some(w), None) | (None, Some(w)) => format!("{} #{id} in {w}", c.kind),
        (None, None) => format!("{} #{id}", c.kind),
    }
}

/// The tree of device-code bytes of `files`.
fn tree(files: &[HtmlFile<'_>]) -> Node {
    let mut b = Builder::default();
    for f in files.iter().filter(|f| f.size.error.is_none()) {
        let mut path = vec![(Level::Input, f.input)];
        path.extend(levels(f.input, &f.size.path));
        match f.scan {
            Some(r) => {
                let device = r
                    .images
                    .iter()
                    .filter(|i| i.is_leaf() && i.is_read() && !i.offload_kind.is_host());
                for img in device {
                    let container = container_label(r, img.container);
                    let target = target_key(img);
                    let mut path = path.clone();
                    path.push((Level::Container, &container));
                    path.push((Level::Target, &target));
                    let bytes = img.uncompressed_size.unwrap_or(img.size);
                    b.add(&path, bytes, 1);
                }
            }
            None => {
                for (target, t) in &f.size.by_target {
                    let mut path = path.clone();
                    path.push((Level::Target, target));
                    b.add(&path, t.bytes, t.images);
                }
            }
        }
    }
    b.build("(all inputs)", Level::Root)
}

/// The vendor of a target row's key (`<offload> <triple> <target>
/// <kind>`).
fn vendor(key: &str) -> &'static str {
    let mut parts = key.split(' ');
    let offload = parts.next().unwrap_or_default();
    let triple = parts.next().unwrap_or_default();
    if triple.starts_with("nvptx") || offload == "cuda" {
        "NVIDIA"
    } else if triple.starts_with("amdgcn") || offload == "hip" {
        "AMD"
    } else if triple.starts_with("spir") || offload == "sycl" {
        "SPIR-V"
    } else {
        "other"
    }
}

/// The colours of the target rows `keys` (in row order): a hue per
/// vendor (NVIDIA green, AMD red, SPIR-V blue, others purple), spread
/// over that vendor's targets, and lighter for text (PTX, bitcode) than
/// for machine code.
fn palette<'a>(keys: impl IntoIterator<Item = &'a str>) -> BTreeMap<&'a str, String> {
    let mut per_vendor: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for key in keys {
        let target = key.split(' ').nth(2).unwrap_or(key);
        per_vendor
            .entry(vendor(key))
            .or_default()
            .push((key, target));
    }
    let mut out = BTreeMap::new();
    for (v, keys) in per_vendor {
        let base: u32 = match v {
            "NVIDIA" => 100,
            "AMD" => 6,
            "SPIR-V" => 210,
            _ => 280,
        };
        let mut targets: Vec<&str> = keys.iter().map(|k| k.1).collect();
        targets.dedup();
        let n = u32::try_from(targets.len()).unwrap_or(u32::MAX).max(1);
        for (key, target) in keys {
            let i = targets.iter().position(|t| *t == target).unwrap_or(0);
            let i = u32::try_from(i).unwrap_or(0);
            let hue = (base + 360 + 60 * i / n - 30) % 360;
            let sat = if i % 2 == 0 { 60 } else { 42 };
            let kind = key.rsplit(' ').next().unwrap_or_default();
            let light = if matches!(kind, "ptx" | "bitcode" | "llvm-ir" | "spirv") {
                82
            } else {
                62
            };
            out.insert(key, format!("hsl({hue},{sat}%,{light}%)"));
        }
    }
    out
}

/// A target row's key, short for a box: its target and kind.
fn short_target(key: &str) -> String {
    let parts: Vec<&str> = key.split(' ').collect();
    match parts.as_slice() {
        [_, _, target, kind] => format!("{target} {kind}"),
        _ => key.to_string(),
    }
}

/// One box of the treemap: a group (input, file, member, container) with
/// its label on top, a target coloured, an "other" box hatched; its
/// whole path and figures on hover.
fn boxed(out: &mut String, p: &Placed<'_>, colours: &BTreeMap<&str, String>) {
    let n = p.node;
    let r = p.rect;
    let (class, style, label) = match (n.level, &n.target) {
        (Level::Target, Some(key)) => {
            let colour = colours.get(key.as_str()).map_or("#bbb", String::as_str);
            ("t", format!("background:{colour};"), short_target(key))
        }
        (Level::Other, _) => ("o", String::new(), n.label.clone()),
        (level, _) => (
            match level {
                Level::Input => "g i",
                Level::Container => "g c",
                Level::Dir => "g d",
                _ => "g f",
            },
            String::new(),
            n.label.clone(),
        ),
    };
    let path: Vec<String> = p.path.iter().map(|s| xml(s)).collect();
    let title = format!(
        "{}&#10;{} bytes ({}) in {} image(s)",
        path.join(" › "),
        n.bytes,
        human(n.bytes),
        n.images
    );
    let _ = write!(
        out,
        "<div class=\"{class}\" style=\"left:{:.1}px;top:{:.1}px;width:{:.1}px;height:{:.1}px;{style}\" \
         title=\"{title}\">",
        r.x, r.y, r.w, r.h
    );
    if r.h >= 11.0 && r.w >= 14.0 {
        let size = human(n.bytes);
        if p.opened || r.h < HEADER + 12.0 {
            let _ = write!(out, "<b>{}</b> {size}", xml(&label));
        } else {
            let _ = write!(out, "<b>{}</b><br>{size}", xml(&label));
        }
    }
    out.push_str("</div>\n");
}

/// The legend: a swatch, vendor and target per target row, with its
/// bytes.
fn legend(out: &mut String, r: &SizeReport, colours: &BTreeMap<&str, String>) {
    out.push_str("<div class=\"legend\">\n<h2>Targets</h2>\n<ul>\n");
    let mut rows: Vec<(&String, &Tally)> = r.by_target.iter().collect();
    rows.sort_by(|a, b| row_cmp(a.0, b.0));
    for (key, t) in rows {
        let _ = writeln!(
            out,
            "<li><span class=\"sw\" style=\"background:{}\"></span>{} <b>{}</b> {}</li>",
            colours.get(key.as_str()).map_or("#bbb", String::as_str),
            vendor(key),
            xml(&short_target(key)),
            human(t.bytes)
        );
    }
    out.push_str(
        "</ul>\n<p>Boxes: grey, an input, directory, file or package member; blue-grey, a \
         container; hatched, smaller items folded together. Hover for the figures.</p>\n</div>\n",
    );
}

/// The table of files: the numbers of `size --json`, a row per file and
/// the total.
fn files_table(out: &mut String, files: &[HtmlFile<'_>], total: Option<&SizeReport>) {
    out.push_str(
        "<h2>Files</h2>\n<table class=\"files\">\n<tr><th>Input</th><th>File bytes</th>\
         <th>Device images</th><th>Bytes</th><th>Stored</th><th>Note</th></tr>\n",
    );
    let rows = files
        .iter()
        .map(|f| (f.size, "file"))
        .chain(total.map(|t| (t, "total")));
    for (r, class) in rows {
        let notes = r.notes();
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            xml(&r.path),
            r.file_size,
            r.total.images,
            r.total.bytes,
            r.total.stored,
            xml(&notes.join("; "))
        );
    }
    out.push_str("</table>\n");
}

/// The table of targets of `r` (the total): the rows of `size --json`'s
/// `by_target`, in arch order.
fn targets_table(out: &mut String, r: &SizeReport) {
    let _ = writeln!(
        out,
        "<h2>Targets of {}</h2>\n<table class=\"targets\">\n<tr><th>Target</th><th>Vendor</th>\
         <th>Images</th><th>Bytes</th><th>Stored</th></tr>",
        xml(&r.path)
    );
    target_rows(out, "target", "", &r.by_target);
    out.push_str("</table>\n");
}

/// A row of class `class` per target of `by_target`, in arch order, each
/// after the cells `first` (none, or a file's): target, vendor, images,
/// bytes, stored.
fn target_rows(out: &mut String, class: &str, first: &str, by_target: &BTreeMap<String, Tally>) {
    let mut rows: Vec<(&String, &Tally)> = by_target.iter().collect();
    rows.sort_by(|a, b| row_cmp(a.0, b.0));
    for (key, t) in rows {
        let _ = writeln!(
            out,
            "<tr class=\"{class}\">{first}<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            xml(key),
            vendor(key),
            t.images,
            t.bytes,
            t.stored
        );
    }
}

/// The table of each file's targets (more than one file: one file's are
/// the targets table's): the rows of each file's `by_target` in
/// `size --json`, the files in their order, each one's targets in arch
/// order.
fn file_targets_table(out: &mut String, files: &[HtmlFile<'_>]) {
    out.push_str(
        "<h2>Targets per file</h2>\n<table class=\"targets\">\n<tr><th>File</th><th>Target</th>\
         <th>Vendor</th><th>Images</th><th>Bytes</th><th>Stored</th></tr>\n",
    );
    for f in files {
        let first = format!("<td>{}</td>", xml(&f.size.path));
        target_rows(out, "file-target", &first, &f.size.by_target);
    }
    out.push_str("</table>\n");
}

/// The document's head: no script, and a policy that lets it fetch
/// nothing.
const HEAD: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>offload-kit size</title>
<style>
body{font:13px/1.3 "DejaVu Sans",Verdana,sans-serif;margin:16px;color:#111;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:14px 0 6px}
.top{display:flex;gap:16px;align-items:flex-start}
.map{position:relative;flex:none;border:1px solid #444;background:#f4f4f4}
.map div{position:absolute;box-sizing:border-box;overflow:hidden;white-space:nowrap;
text-overflow:ellipsis;font-size:11px;line-height:13px;padding:1px 2px;border:1px solid #fff}
.map .g{border-color:#555}.map .i{background:#d9d9d9}.map .f{background:#ebebeb}
.map .c{background:#dde3ea}.map .d{background:#f2f2f2}.map .t{border-color:#333}
.map .o{background:repeating-linear-gradient(45deg,#ccc 0 4px,#eee 4px 8px);border-color:#777}
.legend ul{list-style:none;padding:0;margin:0}.legend li{margin:2px 0;white-space:nowrap}
.sw{display:inline-block;width:14px;height:10px;border:1px solid #333;margin-right:5px}
table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:2px 6px}
td:nth-child(n+2){text-align:right}.targets td:nth-child(2){text-align:left}
.file-target td:nth-child(3){text-align:left}
tr.total td{font-weight:bold}
</style>
</head>
<body>
"#;

#[cfg(test)]
mod tests;

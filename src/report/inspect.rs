//! `inspect`'s table: per file, its containers as a tree with their images.

use std::collections::HashMap;
use std::io::Write;

use anyhow::Result;

use super::print_line;
use super::problems::{MAX_LINE, clip, grouped};
use crate::inputs::Scanned;
use crate::kernels::{Figure, Listing, SymbolKind};
use crate::scan::{ContainerKind, Image, Parent, Report, Unread};
use crate::text::printable;

fn hex(o: Option<u64>) -> String {
    o.map_or_else(|| "-".into(), |o| format!("{o:#x}"))
}

fn dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

pub(crate) fn print_table(mut out: &mut impl Write, s: &Scanned, kernels: bool) -> Result<()> {
    let r = match &s.result {
        Ok(r) => r,
        Err(e) => {
            print_line(&mut out, &format!("{}: error: {e}", s.path))?;
            return Ok(());
        }
    };
    let how = match (r.used_sections, r.used_raw_scan) {
        (true, true) => "section headers and raw scan",
        (true, false) => "section headers",
        (false, true) => "raw scan",
        (false, false) => "file header",
    };
    // Fatbin wrappers are records pointing at a container, bundles' host
    // entries no device images: both are counted apart.
    let wrappers = r
        .containers
        .iter()
        .filter(|c| c.kind == ContainerKind::FatbinWrapper)
        .count();
    let hosts = r.images.iter().filter(|i| i.offload_kind.is_host()).count();
    let mut header = format!(
        "{}: {}, {} bytes, {}; {} container(s), {} device image(s)",
        s.path,
        r.format,
        s.size,
        how,
        r.containers.len() - wrappers,
        r.images.len() - hosts
    );
    if wrappers > 0 {
        header += &format!(", {wrappers} fatbin wrapper(s)");
    }
    if hosts > 0 {
        header += &format!(
            ", {hosts} bundle host entr{}",
            if hosts == 1 { "y" } else { "ies" }
        );
    }
    print_line(&mut out, &header)?;
    if let Some(note) = r.elsewhere_note() {
        print_line(&mut out, &format!("  note: {note}"))?;
    }
    // Column widths over this file's images.
    let w = |f: &dyn Fn(&Image) -> usize, min: usize| r.images.iter().map(f).fold(min, usize::max);
    let widths = [
        w(&|i| i.id.to_string().len(), 1),
        w(&|i| i.offload_kind.to_string().len(), 7),
        w(&|i| kind_name(i).len(), 5),
        w(&|i| dash(&i.triple).len(), 6),
        w(&|i| dash(&i.target_id).len(), 6),
        w(&|i| i.size.to_string().len(), 4),
    ];
    if !r.images.is_empty() {
        // The columns of the image rows below, aligned with the rows of
        // the outermost containers (nested ones are indented further).
        let [wi, wo, wk, wt, wa, ws] = widths;
        print_line(
            &mut out,
            &format!(
                "    {:>wi$}  {:<wo$}  {:<wk$}  {:<wt$}  {:<wa$}  {:>ws$}  offset",
                "#", "offload", "image", "triple", "target", "size"
            ),
        )?;
    }
    // Who is inside whom, found once (not by a pass over every container
    // for each image: quadratic with many).
    let mut tree = Tree::default();
    for (k, i) in r.images.iter().enumerate() {
        tree.images_in.entry(i.container).or_default().push(k);
    }
    for c in &r.containers {
        match c.parent {
            Some(Parent::Image(i)) => tree.in_image.entry(i).or_default().push(c.id),
            Some(Parent::Container(p)) => tree.in_container.entry(p).or_default().push(c.id),
            None => {}
        }
    }
    let mut printer = TablePrinter {
        r,
        out,
        widths,
        tree,
        kernels: kernels.then(|| s.kernels.iter().map(|k| (k.image, &k.listing)).collect()),
        text: String::new(),
    };
    for c in r.containers.iter().filter(|c| c.parent.is_none()) {
        printer.container(c.id, 1)?;
    }
    print_problems(&mut out, r)
}

/// The problems of `r`: those of one shape (the same words, other
/// numbers) shown by the first of them and a count.
fn print_problems(out: &mut impl Write, r: &Report) -> Result<()> {
    let groups = grouped(r.problems.iter().map(|p| p.message.as_str()));
    for g in groups {
        let Some(first) = r
            .problems
            .iter()
            .find(|p| std::ptr::eq(p.message.as_str(), g.first))
        else {
            continue;
        };
        let mut where_ = String::new();
        if let Some(m) = &first.member {
            where_ += &format!(" [{m}]");
        }
        if let Some(sec) = &first.section {
            where_ += &format!(" {sec}");
        }
        if let Some(o) = first.offset {
            where_ += &format!(" @{o:#x}");
        }
        print_line(out, &clip(&format!("  problem{where_}: {g}"), MAX_LINE))?;
    }
    Ok(())
}

/// The containment of a report's containers and images, by id.
#[derive(Default)]
struct Tree {
    /// Container id → indices of its images.
    images_in: HashMap<usize, Vec<usize>>,
    /// Image id → ids of the containers found in it.
    in_image: HashMap<usize, Vec<usize>>,
    /// Container id → ids of the containers directly inside it.
    in_container: HashMap<usize, Vec<usize>>,
}

struct TablePrinter<'a, W: Write> {
    r: &'a Report,
    out: &'a mut W,
    widths: [usize; 6],
    tree: Tree,
    /// With `--kernels`: what was read of each image, by id.
    kernels: Option<HashMap<usize, &'a std::result::Result<Listing, Unread>>>,
    /// The text of a listing on its way out ([`print_listing`]).
    text: String,
}

impl<W: Write> TablePrinter<'_, W> {
    fn container(&mut self, id: usize, depth: usize) -> Result<()> {
        let c = &self.r.containers[id];
        let pad = "  ".repeat(depth);
        let mut line = format!("{pad}[{}] {}", c.id, c.kind);
        if let Some(v) = c.version {
            line += &format!(" v{v}");
        }
        if let Some(m) = &c.member {
            line += &format!(" [{m}]");
        }
        if let Some(s) = &c.section {
            line += &format!(" {s}");
        }
        match c.offset {
            Some(o) => line += &format!(" @{o:#x}"),
            None => line += &format!(" +{:#x}", c.relative_offset),
        }
        line += &format!(", {} bytes", c.size);
        if let Some(z) = &c.compression {
            line += &format!(
                ", {} {} -> {} bytes",
                z.method, z.compressed_size, z.uncompressed_size
            );
            if let Some(h) = z.stored_hash {
                line += &format!(", hash {h}");
            }
            match z.hash_ok {
                Some(true) => line += " (verified)",
                Some(false) => line += " (HASH MISMATCH)",
                None => {}
            }
        }
        if let Some(w) = &c.wrapper {
            line += &format!(", {} wrapper -> {}", w.flavor, hex(w.target));
            if let Some(t) = w.target_container {
                line += &format!(" [{t}]");
            }
        }
        print_line(&mut self.out, &line)?;
        let r = self.r;
        let images: Vec<&Image> = self
            .tree
            .images_in
            .get(&id)
            .map(|v| v.iter().map(|&k| &r.images[k]).collect())
            .unwrap_or_default();
        let [wi, wo, wk, wt, wa, ws] = self.widths;
        // A bundle's host entry is no device image: a line of its own,
        // after the images.
        let (hosts, images): (Vec<&Image>, Vec<&Image>) =
            images.into_iter().partition(|i| i.offload_kind.is_host());
        for i in images {
            let mut row = format!(
                "{pad}  {:>wi$}  {:<wo$}  {:<wk$}  {:<wt$}  {:<wa$}  {:>ws$}  {}",
                i.id,
                i.offload_kind.to_string(),
                kind_name(i),
                dash(&i.triple),
                dash(&i.target_id),
                i.size,
                hex(i.offset),
            );
            if let Some(h) = &i.hash {
                row += &format!("  {h}");
            }
            let other = extras(i);
            if !other.is_empty() {
                row += &format!("  {}", other.join(","));
            }
            print_line(&mut self.out, row.trim_end())?;
            if let Some(l) = self.kernels.as_ref().and_then(|k| k.get(&i.id)).copied() {
                let pad = format!("{pad}{}", " ".repeat(wi + 4));
                print_listing(&mut self.out, &mut self.text, &pad, l)?;
            }
            let nested = self.tree.in_image.get(&i.id).cloned().unwrap_or_default();
            for n in nested {
                self.container(n, depth + 2)?;
            }
        }
        for h in hosts {
            print_line(
                &mut self.out,
                &format!(
                    "{pad}  host entry (#{}): {}, {} bytes{}",
                    h.id,
                    dash(&h.triple),
                    h.size,
                    h.offset.map_or_else(String::new, |o| format!(" @{o:#x}"))
                ),
            )?;
        }
        let inside = self.tree.in_container.get(&id).cloned().unwrap_or_default();
        for n in inside {
            self.container(n, depth + 1)?;
        }
        Ok(())
    }
}

/// An image's kernels and symbols, one per line under its row: a summary
/// line, then `kernel NAME  figure=value …`, `function NAME`, `variable
/// NAME (N bytes)`.
fn print_listing(
    out: &mut impl Write,
    text: &mut String,
    pad: &str,
    l: &std::result::Result<Listing, Unread>,
) -> Result<()> {
    let l = match l {
        Ok(l) => l,
        Err(e) => {
            print_line(out, &format!("{pad}error: cannot read its symbols: {e}"))?;
            return Ok(());
        }
    };
    let mut head = format!("{pad}{}", l.format.name());
    if let Some(v) = &l.version {
        head += &format!(" {v}");
    }
    if let Some(t) = &l.target {
        head += &format!(" {t}");
    }
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    head += &format!(
        ": {}, {}",
        plural(l.kernels.len(), "kernel", "kernels"),
        plural(l.symbols.len(), "other symbol", "other symbols")
    );
    print_line(out, &head)?;
    // The lines go into one buffer, written at once: a library's listings
    // run to hundreds of thousands of lines, each with a dozen figures,
    // and the formatting machinery is what printing them cost. The buffer
    // is the printer's, kept from listing to listing: printing allocates
    // nothing once it is as long as the longest, and so does not wait for
    // the input's pages being given back (`Input::close`).
    text.clear();
    let mut number = itoa::Buffer::new();
    for k in &l.kernels {
        text.push_str(pad);
        text.push_str("  kernel ");
        text.push_str(&printable(k.demangled.as_ref().unwrap_or(&k.name)));
        let mut sep = "  ";
        k.resources.each_figure(|name, v| {
            text.push_str(sep);
            match name {
                Figure::Named(n) => text.push_str(n),
                Figure::Constant(bank) => {
                    text.push_str("constant[");
                    text.push_str(number.format(bank));
                    text.push(']');
                }
            }
            text.push('=');
            text.push_str(number.format(v));
            sep = " ";
        });
        text.push('\n');
    }
    for s in &l.symbols {
        let kind = match s.kind {
            SymbolKind::Function => "function",
            SymbolKind::Variable => "variable",
        };
        text.push_str(pad);
        text.push_str("  ");
        text.push_str(kind);
        text.push(' ');
        text.push_str(&printable(s.demangled.as_ref().unwrap_or(&s.name)));
        if s.kind == SymbolKind::Variable && s.size > 0 {
            text.push_str(" (");
            text.push_str(number.format(s.size));
            text.push_str(" bytes)");
        }
        text.push('\n');
    }
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// The image kind's name, `-` when it was not read.
/// The `key=value` notes after an image's row: what a family cubin's code
/// is for (`cuobjdump` names it as the plain one), the image's strings,
/// and what a compressed CUDA fatbin entry decompresses to (its `size` is
/// what it takes here).
fn extras(i: &Image) -> Vec<String> {
    let family = i.cuda_arch.as_ref().filter(|c| **c != i.target_id);
    family
        .map(|c| format!("cuda_arch={c}"))
        .into_iter()
        .chain(i.strings.iter().map(|(k, v)| format!("{k}={v}")))
        .chain(
            i.uncompressed_size
                .map(|u| format!("uncompressed_size={u}")),
        )
        .collect()
}

fn kind_name(i: &Image) -> String {
    i.image_kind.map_or_else(|| "-".into(), |k| k.to_string())
}

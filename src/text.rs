//! Text from files in the reports: names made safe for terminals and CI
//! logs ([`printable`]), and the same text escaped for XML ([`xml`]) and
//! for a cell of a Markdown table ([`markdown_cell`]).

use std::borrow::Cow;
use std::error::Error;
use std::fmt::Write as _;
use std::io;

use crate::error::strerror;

/// `s` safe to show on a terminal or in a CI log: control characters (C0,
/// DEL, C1, among them ESC, CR and LF) and the bidirectional-text controls
/// become visible escapes (`\e`, `\r`, `\n`, `\x07`, `\u{9b}`, `\u{202e}`),
/// so a name from a file can neither send terminal commands nor start a
/// line of its own. Everything else, backslashes included, stays as it is.
pub(crate) fn printable(s: &str) -> Cow<'_, str> {
    let bad =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    // Most text is printable ASCII, told byte by byte before any character
    // is decoded: every byte is looked at (no early exit), which lets the
    // compiler test many at a time.
    let outside = s
        .bytes()
        .fold(0u8, |acc, b| acc | u8::from(b.wrapping_sub(b' ') >= 0x5f));
    if outside == 0 || !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if bad(c) && u32::from(c) < 0x80 => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if bad(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `s` [`printable`], then escaped for XML text or an attribute value
/// (quoted with `"`): `&`, `<`, `>`, `"` and `'` as entities. XML 1.0 has no
/// way to write the characters outside its `Char` production, even as
/// references: the C0 controls but tab, LF and CR, U+FFFE and U+FFFF.
/// [`printable`] makes the controls visible escapes already (`\x07`);
/// every other character XML forbids becomes one too (`\u{fffe}`), so the
/// document always parses.
pub(crate) fn xml(s: &str) -> String {
    let s = printable(s);
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if !xml_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether XML 1.0 allows `c` in a document (its `Char` production; a
/// Rust `char` is never a surrogate).
fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='\u{fffd}' | '\u{10000}'..)
}

/// `s` [`printable`], then escaped for a cell of a GitHub-flavoured
/// Markdown table: each character that Markdown or the table would read
/// (`|`, backquotes, emphasis, links, HTML, entities, the backslash itself)
/// behind a backslash, so that the cell shows the text as it is and the
/// row keeps its columns. An empty cell is `-`.
pub(crate) fn markdown_cell(s: &str) -> String {
    if s.is_empty() {
        return "-".to_string();
    }
    let s = printable(s);
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if matches!(
            c,
            '\\' | '|' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '~' | '#' | '!'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A Markdown table: the header's cells, then one row per item, each cell
/// escaped by [`markdown_cell`] (a cell given as a number, or already
/// escaped, goes through [`Cell::Raw`]). Every row gets the header's
/// number of cells: missing ones are `-`, extra ones dropped.
pub(crate) struct Table {
    header: Vec<&'static str>,
    /// Whether each column is right-aligned (numbers).
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

/// A cell of a [`Table`] row.
pub(crate) enum Cell<'a> {
    /// Text from a file or a name: escaped.
    Text(&'a str),
    /// Text that needs no escaping (numbers, fixed words).
    Raw(String),
}

impl Table {
    /// A table with these columns; a column whose name ends in `>` is
    /// right-aligned (the `>` is not shown).
    pub(crate) fn new(columns: &[&'static str]) -> Table {
        Table {
            header: columns.iter().map(|c| c.trim_end_matches('>')).collect(),
            right: columns.iter().map(|c| c.ends_with('>')).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub(crate) fn row(&mut self, cells: Vec<Cell<'_>>) {
        let mut row: Vec<String> = cells
            .into_iter()
            .take(self.header.len())
            .map(|c| match c {
                Cell::Text(t) => markdown_cell(t),
                Cell::Raw(r) if r.is_empty() => "-".to_string(),
                Cell::Raw(r) => r,
            })
            .collect();
        row.resize(self.header.len(), "-".to_string());
        self.rows.push(row);
    }

    /// Whether it has no rows.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table, a line per row and a blank line after it.
    pub(crate) fn write(&self, out: &mut String) {
        let line = |out: &mut String, cells: &[String]| {
            out.push('|');
            for c in cells {
                let _ = write!(out, " {c} |");
            }
            out.push('\n');
        };
        let header: Vec<String> = self.header.iter().map(|h| (*h).to_string()).collect();
        line(out, &header);
        let rule: Vec<String> = self
            .right
            .iter()
            .map(|&r| if r { "---:" } else { "---" }.to_string())
            .collect();
        line(out, &rule);
        for r in &self.rows {
            line(out, r);
        }
        out.push('\n');
    }
}

/// A number as a raw cell.
pub(crate) fn num(n: impl std::fmt::Display) -> Cell<'static> {
    Cell::Raw(n.to_string())
}

/// An error and its causes (`chain`: the error, then each `source`) as
/// one line: joined by ": ", each I/O error as the C library's text
/// ([`strerror`]) and Rust's " (os error N)" suffix removed from the rest;
/// a cause that repeats the one before is left out.
pub(crate) fn error_chain<'a>(chain: impl Iterator<Item = &'a (dyn Error + 'static)>) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in chain {
        let text = match cause.downcast_ref::<io::Error>() {
            Some(io) => strerror(io),
            None => strip_os_error(&cause.to_string()),
        };
        if parts.last().is_none_or(|last| !last.ends_with(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

/// An error and its sources as one line ([`error_chain`]).
pub(crate) fn error_line(e: &(dyn Error + 'static)) -> String {
    error_chain(std::iter::successors(
        Some(e),
        |e: &&(dyn Error + 'static)| (*e).source(),
    ))
}

/// `s` without any " (os error N)".
pub(crate) fn strip_os_error(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(" (os error ") {
        let tail = &rest[i + " (os error ".len()..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail[digits..].starts_with(')') {
            out.push_str(&rest[..i]);
            rest = &tail[digits + 1..];
        } else {
            out.push_str(&rest[..i + 1]);
            rest = &rest[i + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// Test check of a Markdown report: in every table (a block of lines that
/// starts with `|`), each row has as many cells as the header (escaped
/// backslashes and pipes are no cell borders).
#[cfg(test)]
pub(crate) fn assert_tables_well_formed(text: &str) {
    for table in text.split("\n\n").filter(|b| b.starts_with('|')) {
        let widths: Vec<usize> = table
            .lines()
            .map(|l| {
                l.replace("\\\\", "")
                    .replace("\\|", "")
                    .matches('|')
                    .count()
            })
            .collect();
        assert!(widths.iter().all(|w| *w == widths[0]), "{table}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_become_visible() {
        assert_eq!(printable("gfx90a:xnack+"), "gfx90a:xnack+");
        assert!(matches!(printable("plain"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}]0;owned\u{7}b\u{1b}[2Jc\rd\ne\tf\u{7f}\u{9b}g\u{202e}h"),
            "a\\e]0;owned\\x07b\\e[2Jc\\rd\\ne\\tf\\x7f\\u{9b}g\\u{202e}h"
        );
        // Past the bytes told many at a time: one bad byte at either end.
        let long = "k".repeat(100);
        assert_eq!(printable(&format!("{long}\u{7f}")), format!("{long}\\x7f"));
        assert_eq!(printable(&format!("\u{1f}{long}")), format!("\\x1f{long}"));
        assert_eq!(printable("~ "), "~ ");
    }

    #[test]
    fn xml_and_markdown_escape_what_they_must() {
        assert_eq!(
            xml("a<b>&\"c'\u{1}\u{1b}"),
            "a&lt;b&gt;&amp;&quot;c&apos;\\x01\\e"
        );
        // Characters XML 1.0 forbids, even as references, become escapes;
        // those it allows stay.
        assert_eq!(
            xml("a\u{fffe}b\u{ffff}c\u{fffd}\u{10000}\u{e000}"),
            "a\\u{fffe}b\\u{ffff}c\u{fffd}\u{10000}\u{e000}"
        );
        for c in [
            '\u{0}', '\u{8}', '\u{b}', '\u{c}', '\u{1f}', '\u{fffe}', '\u{ffff}',
        ] {
            assert!(!xml(&c.to_string()).contains(c), "{c:?}");
        }
        assert_eq!(markdown_cell("a|b`c\\d_e*"), "a\\|b\\`c\\\\d\\_e\\*");
        assert_eq!(markdown_cell("line\nbreak"), "line\\\\nbreak");
        assert_eq!(markdown_cell(""), "-");
        let mut t = Table::new(&["name", "bytes>"]);
        t.row(vec![Cell::Text("x|y"), num(5), num(6)]);
        t.row(vec![Cell::Text("z")]);
        let mut s = String::new();
        t.write(&mut s);
        assert_eq!(
            s,
            "| name | bytes |\n| --- | ---: |\n| x\\|y | 5 |\n| z | - |\n\n"
        );
    }
}

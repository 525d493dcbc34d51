//! Text at the binary's edge: names from files made safe for terminals,
//! and errors in one line.

use std::io::{self, Write};

use crate::files::strerror;

/// `s` safe to show on a terminal or in a CI log: control characters (C0,
/// DEL, C1, among them ESC, CR and LF) and the bidirectional-text controls
/// become visible escapes (`\e`, `\r`, `\n`, `\x07`, `\u{9b}`, `\u{202e}`),
/// so a name from a file can neither send terminal commands nor start a
/// line of its own. Everything else, backslashes included, stays as it is.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    let bad =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    // Most text is printable ASCII, told byte by byte before any character
    // is decoded: every byte is looked at (no early exit), which lets the
    // compiler test many at a time.
    let outside = s
        .bytes()
        .fold(0u8, |acc, b| acc | u8::from(b.wrapping_sub(b' ') >= 0x5f));
    if outside == 0 || !s.chars().any(bad) {
        return std::borrow::Cow::Borrowed(s);
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
    std::borrow::Cow::Owned(out)
}

/// Writes `line` made [`printable`], then a newline: how the native
/// commands print every human-readable line that holds text from a file.
pub fn print_line<W: Write + ?Sized>(out: &mut W, line: &str) -> io::Result<()> {
    writeln!(out, "{}", printable(line))
}

/// `e` as one line: its context chain joined by ": ", each I/O error as the
/// C library's text ([`strerror`]) and Rust's " (os error N)" suffix
/// removed from the rest; a cause that repeats the one before is left out.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
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

/// `s` without any " (os error N)".
fn strip_os_error(s: &str) -> String {
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

#[cfg(test)]
mod error_text_tests {
    use super::*;

    #[test]
    fn os_error_suffixes_and_repeats_go() {
        assert_eq!(strip_os_error("a (os error 2) b (os error 13)"), "a b");
        assert_eq!(
            strip_os_error("keep (os error x) (os error"),
            "keep (os error x) (os error"
        );
        let missing = io::Error::from_raw_os_error(2);
        let e = anyhow::Error::new(missing).context("'f': cannot open");
        assert_eq!(
            error_text(&e),
            "'f': cannot open: No such file or directory"
        );
        // A library's own wrapping (the path a temporary file had).
        let wrapped = io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} at path \"/d/.tmp123\"", io::Error::from_raw_os_error(2)),
        );
        let e = anyhow::Error::new(wrapped).context("'/d/x': cannot write");
        assert_eq!(
            error_text(&e),
            "'/d/x': cannot write: No such file or directory"
        );
    }
}

#[cfg(test)]
mod printable_tests {
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
        let mut v = Vec::new();
        print_line(&mut v, "id\nFAKE ROW").unwrap();
        assert_eq!(v, b"id\\nFAKE ROW\n");
    }
}

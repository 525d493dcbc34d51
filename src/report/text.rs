//! Lines of the text reports: every line that holds text from a file made
//! safe for a terminal.

use std::io::{self, Write};

use crate::text::printable;

/// Writes `line` made [`printable`], then a newline: how the native
/// commands print every human-readable line that holds text from a file.
pub fn print_line<W: Write + ?Sized>(out: &mut W, line: &str) -> io::Result<()> {
    writeln!(out, "{}", printable(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_printable() {
        let mut v = Vec::new();
        print_line(&mut v, "id\nFAKE ROW").unwrap();
        assert_eq!(v, b"id\\nFAKE ROW\n");
    }
}

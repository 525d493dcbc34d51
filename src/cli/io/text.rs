//! Text at the binary's edge: names from files made safe for terminals,
//! and errors in one line.

pub(crate) use crate::text::printable;

/// `e` as one line: its context chain joined by ": ", each I/O error as the
/// C library's text ([`crate::files::strerror`]) and Rust's " (os error N)" suffix
/// removed from the rest; a cause that repeats the one before is left out.
pub fn error_text(e: &anyhow::Error) -> String {
    crate::text::error_chain(e.chain())
}

#[cfg(test)]
mod error_text_tests {
    use std::io;

    use super::*;
    use crate::text::strip_os_error;

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

//! Text bundles: entries between comment-line markers, for preprocessed
//! sources, LLVM IR and assembly.

use crate::error::{Error, Result};
use crate::layout::{Layout, Piece};

/// The comment prefix LLVM 22 uses for a text `-type`, or `None` if the type
/// is not a text type.
pub fn comment_prefix(file_type: &str) -> Option<&'static str> {
    match file_type {
        "i" | "ii" | "cui" | "hipi" => Some("//"),
        "d" | "s" => Some("#"),
        "ll" => Some(";"),
        _ => None,
    }
}

/// The word of a start marker line (`\n<prefix> <START> <ID>\n`).
pub const START: &str = "__CLANG_OFFLOAD_BUNDLE____START__";
/// The word of an end marker line (`\n<prefix> <END> <ID>\n`).
pub const END: &str = "__CLANG_OFFLOAD_BUNDLE____END__";
/// Every comment prefix a text bundle may use.
pub const PREFIXES: [&str; 3] = ["//", "#", ";"];

/// The start of a start marker line, up to the ID.
pub fn start_marker(prefix: &str) -> String {
    format!("\n{prefix} {START} ")
}

fn end_marker(prefix: &str) -> String {
    format!("\n{prefix} {END} ")
}

/// Whether `b` starts with a start or end marker word (the magic of a
/// binary bundle is a prefix of both).
pub fn is_marker(b: &[u8]) -> bool {
    b.starts_with(START.as_bytes()) || b.starts_with(END.as_bytes())
}

/// The comment prefix of the start marker whose word begins at `pos` of
/// `bytes`, when it is one (`\n<prefix> <START> ` around it).
pub fn prefix_at(bytes: &[u8], pos: usize) -> Option<&'static str> {
    let after = bytes.get(pos..)?;
    if !after.starts_with(START.as_bytes()) || after.get(START.len()) != Some(&b' ') {
        return None;
    }
    PREFIXES.into_iter().find(|p| {
        let need = p.len() + 2;
        pos >= need
            && bytes[pos - need] == b'\n'
            && &bytes[pos - need + 1..pos - 1] == p.as_bytes()
            && bytes[pos - 1] == b' '
    })
}

/// Lays out a text bundle: for each entry, the start marker line, the data
/// verbatim, and the end marker line, in order.
pub fn layout<S: AsRef<str>>(prefix: &str, entries: &[(S, u64)]) -> Layout {
    let mut l = Layout::default();
    for (i, (id, size)) in entries.iter().enumerate() {
        let id = id.as_ref();
        let start = format!("{}{id}\n", start_marker(prefix));
        let end = format!("{}{id}\n", end_marker(prefix));
        let (a, b) = (start.len() as u64, end.len() as u64);
        l.push(Piece::Bytes(start.into_bytes()), a);
        l.push(Piece::Image(i), *size);
        l.push(Piece::Bytes(end.into_bytes()), b);
    }
    l
}

/// One entry of a text bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEntry<'data> {
    /// The ID after the start marker (a `\r` before the newline is kept, as
    /// LLVM keeps it).
    pub id: &'data [u8],
    /// The data between the markers.
    pub data: &'data [u8],
}

/// Reads the entries of a text bundle in file order. A start marker must be
/// preceded by a newline (one at byte 0 is not a marker, as in LLVM). An entry
/// without its end marker is an error (LLVM 22 aborts on it).
pub fn read<'data>(data: &'data [u8], prefix: &str) -> Result<Vec<TextEntry<'data>>> {
    let start = start_marker(prefix);
    let end = end_marker(prefix);
    let starts = memchr::memmem::Finder::new(start.as_bytes());
    let ends = memchr::memmem::Finder::new(end.as_bytes());
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(s) = starts.find(&data[at..]) {
        let id_at = at + s + start.len();
        let Some(nl) = memchr::memchr(b'\n', &data[id_at..]) else {
            return Err(Error::invalid(
                "text bundle",
                format!(
                    "the start marker at offset {:#x} has no end of line",
                    at + s + 1
                ),
            ));
        };
        let id = &data[id_at..id_at + nl];
        let body = id_at + nl + 1;
        let Some(e) = ends.find(&data[body..]) else {
            return Err(Error::invalid(
                "text bundle",
                format!(
                    "entry '{}' (starting at offset {:#x}) has no end marker",
                    String::from_utf8_lossy(id),
                    at + s + 1
                ),
            ));
        };
        out.push(TextEntry {
            id,
            data: &data[body..body + e],
        });
        // Continue after the end marker's line.
        let after = body + e + end.len();
        at = match memchr::memchr(b'\n', &data[after..]) {
            Some(n) => after + n,
            None => data.len(),
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_exact_bytes() {
        let l = layout(
            "//",
            &[
                ("host-x86_64-unknown-linux-gnu-", 9),
                ("hip-amdgcn-amd-amdhsa--gfx906", 8),
            ],
        );
        let mut out = Vec::new();
        l.write_to(&mut out, &[b"int host;", b"int dev;"]).unwrap();
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with("\n// __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-\nint host;\n// __CLANG_OFFLOAD_BUNDLE____END__ host-x86_64-unknown-linux-gnu-\n"));
        let e = read(&out, "//").unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].data, b"int host;");
        assert_eq!(e[1].id, b"hip-amdgcn-amd-amdhsa--gfx906");
        assert_eq!(e[1].data, b"int dev;");
    }

    #[test]
    fn missing_end_marker_is_an_error() {
        let data = b"\n# __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-\nfoo\n";
        assert!(read(data, "#").is_err());
    }

    #[test]
    fn marker_at_byte_zero_is_not_a_marker() {
        let data =
            b"; __CLANG_OFFLOAD_BUNDLE____START__ x\nfoo\n; __CLANG_OFFLOAD_BUNDLE____END__ x\n";
        assert_eq!(read(data, ";").unwrap(), vec![]);
    }

    #[test]
    fn types_and_prefixes() {
        assert_eq!(comment_prefix("hipi"), Some("//"));
        assert_eq!(comment_prefix("s"), Some("#"));
        assert_eq!(comment_prefix("ll"), Some(";"));
        assert_eq!(comment_prefix("bc"), None);
    }
}

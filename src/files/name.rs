//! Paths as messages and reports name them. A path is bytes; most are
//! UTF-8 and are shown as they are. In one that is not, each byte that is
//! not part of a UTF-8 character is shown as `\xNN` (two lowercase hex
//! digits) and each backslash as `\\`, so the name shown still tells the
//! bytes apart (`a\xff.so` is the four bytes `61 ff 2e 73 6f`). The file
//! itself is always opened by its bytes, never by the name shown.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `path` as reports name it: as it is when UTF-8, else escaped (see the
/// module's documentation).
pub(crate) fn shown(path: &Path) -> Cow<'_, str> {
    shown_bytes(path.as_os_str().as_bytes())
}

/// [`shown`] of a name given as an `OsStr` (a file name).
pub(crate) fn shown_os(name: &OsStr) -> Cow<'_, str> {
    shown_bytes(name.as_bytes())
}

/// [`shown`] of a name given as bytes.
fn shown_bytes(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(&chunk.valid().replace('\\', "\\\\"));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    Cow::Owned(out)
}

/// The bytes of `path` when they are not UTF-8 (what `--json` adds beside
/// the name shown); `None` for a UTF-8 path.
pub(crate) fn raw_bytes(path: &Path) -> Option<&[u8]> {
    let b = path.as_os_str().as_bytes();
    std::str::from_utf8(b).is_err().then_some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_names_stay_and_other_bytes_are_escaped() {
        assert_eq!(shown(Path::new("dir/a b\\x.so")), "dir/a b\\x.so");
        assert_eq!(shown(Path::new("é.so")), "é.so");
        let odd = Path::new(OsStr::from_bytes(b"d\xfe/a\\\xff\xc3.so"));
        assert_eq!(shown(odd), "d\\xfe/a\\\\\\xff\\xc3.so");
        assert_eq!(raw_bytes(odd), Some(&b"d\xfe/a\\\xff\xc3.so"[..]));
        assert_eq!(raw_bytes(Path::new("é.so")), None);
    }
}

//! A Debian package's `md5sums` (in its control archive) with the
//! hashes of the files pruned replaced, every other byte as it was; `dpkg
//! --verify` checks the installed files against it.
//!
//! Each line is an MD5 in 32 hexadecimal digits, two separators (two
//! spaces as `dh_md5sums` writes them, or a space and `*` as `md5sum`
//! does for binary mode), and a path relative to the root with no `./`
//! (`md5sum(1)`'s output format, which `dpkg` reads).

use std::collections::{BTreeMap, BTreeSet};

use crate::package::records::md5sums_line;

/// The lowercase hexadecimal of `md5`.
pub(crate) fn hex(md5: &[u8; 16]) -> String {
    crate::package::records::hex(md5)
}

/// The MD5 each line of `text` gives its path, by path
/// ([`crate::package::records::md5sums_rows`], which the scanners read
/// too).
pub(crate) use crate::package::records::md5sums_rows as parse;

/// `text` with the hash of each line naming a path of `changed` replaced
/// by that path's new MD5, and each line naming a path of `gone` (files
/// removed) taken out with its newline; `None` when no line names one.
/// Paths are compared without a leading `./` or `/`.
pub(crate) fn new_md5sums(
    text: &[u8],
    changed: &BTreeMap<Vec<u8>, [u8; 16]>,
    gone: &BTreeSet<Vec<u8>>,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut any = false;
    for line in text.split_inclusive(|&b| b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let Some((_, path)) = md5sums_line(body.strip_suffix(b"\r").unwrap_or(body)) else {
            out.extend_from_slice(line);
            continue;
        };
        if gone.contains(path) {
            any = true;
        } else if let Some(md5) = changed.get(path) {
            out.extend_from_slice(hex(md5).as_bytes());
            out.extend_from_slice(&line[32..]);
            any = true;
        } else {
            out.extend_from_slice(line);
        }
    }
    any.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_hashes_of_changed_files_change() {
        let text = b"dcfb0eed7fa0bd0d836d9d306dabd091  usr/lib/x86_64-linux-gnu/librocrand.so.1.1\n\
                     e3654b9bdd1ef219de6d491b847e9891  usr/share/doc/librocrand1/changelog.Debian.gz\n\
                     9386b37292d497856fe7a9405b1386c1 *./usr/lib/b.so\r\n\
                     not a line of md5sums\n\
                     f8296c938cdb34b86d0a47405ca65bbc  usr/lib/c.so";
        let changed: BTreeMap<Vec<u8>, [u8; 16]> = [
            (
                b"usr/lib/x86_64-linux-gnu/librocrand.so.1.1".to_vec(),
                [0xab; 16],
            ),
            (b"usr/lib/b.so".to_vec(), [0x01; 16]),
            (b"usr/lib/c.so".to_vec(), [0x22; 16]),
            (b"usr/lib/absent.so".to_vec(), [0x33; 16]),
        ]
        .into_iter()
        .collect();
        let got =
            String::from_utf8(new_md5sums(text, &changed, &BTreeSet::new()).unwrap()).unwrap();
        assert_eq!(
            got,
            format!(
                "{}  usr/lib/x86_64-linux-gnu/librocrand.so.1.1\n\
                 e3654b9bdd1ef219de6d491b847e9891  usr/share/doc/librocrand1/changelog.Debian.gz\n\
                 {} *./usr/lib/b.so\r\n\
                 not a line of md5sums\n\
                 {}  usr/lib/c.so",
                "ab".repeat(16),
                "01".repeat(16),
                "22".repeat(16)
            )
        );
        let none = [(b"usr/lib/other.so".to_vec(), [0; 16])]
            .into_iter()
            .collect();
        assert_eq!(new_md5sums(text, &none, &BTreeSet::new()), None);
        // The lines of files removed go, newline and all.
        let gone = [b"usr/lib/b.so".to_vec(), b"usr/lib/c.so".to_vec()]
            .into_iter()
            .collect();
        let got = String::from_utf8(new_md5sums(text, &none, &gone).unwrap()).unwrap();
        assert_eq!(
            got,
            "dcfb0eed7fa0bd0d836d9d306dabd091  usr/lib/x86_64-linux-gnu/librocrand.so.1.1\n\
             e3654b9bdd1ef219de6d491b847e9891  usr/share/doc/librocrand1/changelog.Debian.gz\n\
             not a line of md5sums\n"
        );
    }
}

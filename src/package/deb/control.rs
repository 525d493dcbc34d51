//! A slim package's `Installed-Size`, kept true: the field of `control`
//! that apt reads to plan disk space, in KiB as `dpkg-gencontrol` counts
//! them (each regular file its size rounded up to a KiB, each directory,
//! link or other entry one). prune does not count the package anew (how
//! its maintainer's tools counted is not known here): it takes from the
//! field what the files removed and rewritten no longer take.

/// The KiB `dpkg-gencontrol` counts for a regular file of `size` bytes.
pub(crate) fn kib(size: u64) -> u64 {
    size.div_ceil(1024)
}

/// `control`'s text with its `Installed-Size` lowered by `less` KiB (not
/// below 0); `None` when it has no such field, or its value is not a
/// number (the text then stays as it was).
pub(crate) fn less_installed(text: &[u8], less: u64) -> Option<Vec<u8>> {
    let mut at = 0;
    for line in text.split_inclusive(|&b| b == b'\n') {
        let start = at;
        at += line.len();
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if !line[..colon].eq_ignore_ascii_case(b"Installed-Size") {
            continue;
        }
        let value = &line[colon + 1..];
        let digits = value.trim_ascii();
        let old: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
        let end = if line.ends_with(b"\n") { "\n" } else { "" };
        let mut out = text[..start].to_vec();
        out.extend_from_slice(&line[..=colon]);
        out.extend_from_slice(format!(" {}{end}", old.saturating_sub(less)).as_bytes());
        out.extend_from_slice(&text[at..]);
        return Some(out);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTROL: &[u8] = b"Package: librocrand1\nVersion: 5.3.3-4\n\
        Installed-Size: 24824\nDepends: libc6\nDescription: x\n y\n";

    #[test]
    fn the_field_loses_what_the_files_no_longer_take() {
        let new = less_installed(CONTROL, 824).unwrap();
        let want = String::from_utf8_lossy(CONTROL).replace("24824", "24000");
        assert_eq!(String::from_utf8_lossy(&new), want);
        // Never below nothing; the field's name in any case.
        let lower = b"installed-size:12\n";
        assert_eq!(less_installed(lower, 20).unwrap(), b"installed-size: 0\n");
    }

    #[test]
    fn a_control_without_a_number_stays() {
        assert_eq!(less_installed(b"Package: x\n", 3), None);
        assert_eq!(less_installed(b"Installed-Size: many\n", 3), None);
    }

    #[test]
    fn a_file_counts_its_kib_rounded_up() {
        assert_eq!([0, 1, 1024, 1025].map(kib), [0, 1, 1, 2]);
    }
}

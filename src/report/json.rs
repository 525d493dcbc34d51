//! The `--json` documents written out, with the bytes of the names that
//! are not UTF-8.
//!
//! A document names a file as reports show it ([`crate::files::shown`]:
//! each byte that is not part of a UTF-8 character as `\xNN`). Where the
//! name's bytes are not UTF-8, a member `KEY_bytes` follows the member
//! `KEY` that names it and holds those bytes in lowercase hex (`"path":
//! "a\\xff.so", "path_bytes": "61ff2e736f"`); a file inside a package
//! (`pkg!/member`) gets the package's bytes followed by the member's. A
//! document whose names are all UTF-8 is written as it always was.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

/// The names shown for the paths whose bytes are not UTF-8, with those
/// bytes.
#[derive(Default)]
pub struct RawNames(Vec<(String, Vec<u8>)>);

impl RawNames {
    /// The names of `paths` that are not UTF-8.
    pub fn of<'a>(paths: impl IntoIterator<Item = &'a Path>) -> RawNames {
        RawNames(
            paths
                .into_iter()
                .filter_map(|p| {
                    let raw = crate::files::raw_bytes(p)?;
                    Some((crate::files::shown(p).into_owned(), raw.to_vec()))
                })
                .collect(),
        )
    }

    /// Adds the names of `paths` that are not UTF-8.
    pub fn extend<'a>(&mut self, paths: impl IntoIterator<Item = &'a Path>) {
        self.0.extend(RawNames::of(paths).0);
    }

    /// The bytes of the name shown as `s`: one of the paths, or a file
    /// inside one (`shown!/member`); `None` when its bytes are UTF-8.
    fn bytes_of(&self, s: &str) -> Option<Vec<u8>> {
        self.0.iter().find_map(|(shown, raw)| {
            let rest = s.strip_prefix(shown.as_str())?;
            (rest.is_empty() || rest.starts_with("!/")).then(|| [raw, rest.as_bytes()].concat())
        })
    }
}

/// Writes `doc` as `serde_json` pretty-prints it, then a newline; each
/// member naming one of `names` is followed by its bytes (see the
/// module's documentation).
pub fn write_json<W: Write + ?Sized, T: Serialize>(
    out: &mut W,
    doc: &T,
    names: &RawNames,
) -> Result<()> {
    if names.0.is_empty() {
        serde_json::to_writer_pretty(&mut *out, doc)?;
        writeln!(out)?;
        return Ok(());
    }
    let text = serde_json::to_string_pretty(doc)?;
    for line in text.lines() {
        match member_bytes(line, names) {
            Some((key, bytes)) => {
                let (head, comma) = match line.strip_suffix(',') {
                    Some(head) => (head, ","),
                    None => (line, ""),
                };
                let indent = &line[..line.len() - line.trim_start().len()];
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                writeln!(out, "{head},")?;
                writeln!(out, "{indent}\"{key}_bytes\": \"{hex}\"{comma}")?;
            }
            None => writeln!(out, "{line}")?,
        }
    }
    Ok(())
}

/// For a pretty-printed member `"KEY": "VALUE"` whose value is a name of
/// `names`: the key and the name's bytes.
fn member_bytes<'l>(line: &'l str, names: &RawNames) -> Option<(&'l str, Vec<u8>)> {
    let member = line.trim_start().strip_prefix('"')?;
    let (key, value) = member.split_once("\": ")?;
    if key.contains(['"', '\\']) {
        return None;
    }
    let value = value.strip_suffix(',').unwrap_or(value);
    let value: String = serde_json::from_str(value).ok()?;
    Some((key, names.bytes_of(&value)?))
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    #[test]
    fn names_not_utf8_get_their_bytes() {
        let odd = Path::new(OsStr::from_bytes(b"d/a\xff.so"));
        let names = RawNames::of([odd, Path::new("b.so")]);
        let doc = serde_json::json!({"files": [
            {"path": "d/a\\xff.so", "size": 1},
            {"path": "d/a\\xff.so!/k.o"},
            {"path": "b.so"}
        ]});
        let mut out = Vec::new();
        write_json(&mut out, &doc, &names).unwrap();
        let back: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(back["files"][0]["path_bytes"], "642f61ff2e736f");
        assert_eq!(back["files"][1]["path_bytes"], "642f61ff2e736f212f6b2e6f");
        assert!(back["files"][2].get("path_bytes").is_none());
        let mut plain = Vec::new();
        write_json(&mut plain, &doc, &RawNames::default()).unwrap();
        let mut want = serde_json::to_vec_pretty(&doc).unwrap();
        want.push(b'\n');
        assert_eq!(plain, want);
    }
}

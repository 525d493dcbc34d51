//! A wheel's RECORD rewritten: each row naming a member rewritten given
//! the member's new hash and size, each row naming a member removed taken
//! out, every other byte as it was, so that pip installs the wheel. A
//! rewrite of a zip ([`super::Plan::write`]) calls it for each RECORD of
//! an output, and a directory's prune in place for each
//! `*.dist-info/RECORD` of an installed package. The `csv` crate reads
//! and writes the rows.

use std::collections::BTreeMap;

/// [`new_record_with`] of files rewritten alone: `changed` gives each its
/// new size and hash.
#[cfg(any(test, fuzzing))]
pub(crate) fn new_record(
    text: &[u8],
    changed: &BTreeMap<&str, (u64, &str)>,
) -> csv::Result<Option<Vec<u8>>> {
    let changed = changed
        .iter()
        .map(|(p, (n, h))| (*p, Change::Rewritten(*n, h)))
        .collect();
    new_record_with(text, &changed)
}

/// What became of a file a RECORD may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change<'a> {
    /// Rewritten: its new size, and its SHA-256 in unpadded URL-safe
    /// base64.
    Rewritten(u64, &'a str),
    /// Removed: its rows go.
    Removed,
}

/// A wheel's RECORD (CSV: `path,sha256=HASH,size` per row, the path
/// quoted where it holds a comma, a quote or a line break) with the hash
/// and size of each path rewritten in `changed` replaced, and the rows of
/// each path removed taken out (with their line terminators); `None`
/// when it names none of them. Every other byte stays as it was: rows not
/// named, blank lines, and each row's own line terminator.
pub(crate) fn new_record_with(
    text: &[u8],
    changed: &BTreeMap<&str, Change<'_>>,
) -> csv::Result<Option<Vec<u8>>> {
    let is_break = |b: &u8| matches!(b, b'\r' | b'\n');
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text);
    let mut row = csv::ByteRecord::new();
    let mut out = Vec::with_capacity(text.len());
    let mut copied = 0;
    loop {
        // A row's bytes run from where the reader stood to where it stops:
        // the line breaks before it (blank lines, or the LF of the CRLF
        // before), the row, and its line terminator.
        let start = usize::try_from(rdr.position().byte()).unwrap_or(text.len());
        if !rdr.read_byte_record(&mut row)? {
            break;
        }
        let end = usize::try_from(rdr.position().byte()).unwrap_or(text.len());
        let path = row.get(0).and_then(|p| std::str::from_utf8(p).ok());
        let Some(change) = path.and_then(|p| changed.get(p)) else {
            continue;
        };
        let raw = &text[start..end];
        let lead = raw.iter().take_while(|b| is_break(b)).count();
        let trail = raw[lead..].iter().rev().take_while(|b| is_break(b)).count();
        out.extend_from_slice(&text[copied..start + lead]);
        copied = end;
        let Change::Rewritten(size, sha) = change else {
            // Removed: the row and its line terminator go (a CRLF whole:
            // the reader stops between its two bytes).
            if raw.last() == Some(&b'\r') && text.get(end) == Some(&b'\n') {
                copied = end + 1;
            }
            continue;
        };
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        let (hash, size) = (format!("sha256={sha}"), size.to_string());
        w.write_record([path.unwrap_or_default(), &hash, &size])?;
        let mut line = w.into_inner().map_err(|e| e.into_error())?;
        line.pop();
        out.extend_from_slice(&line);
        out.extend_from_slice(&raw[raw.len() - trail..]);
    }
    if copied == 0 {
        return Ok(None);
    }
    out.extend_from_slice(&text[copied..]);
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `new_record` of `text` with `changed` as (path, size, hash) rows,
    /// as text.
    fn rewritten(text: &str, changed: &[(&str, u64, &str)]) -> Option<String> {
        let changed = changed.iter().map(|(p, n, h)| (*p, (*n, *h))).collect();
        new_record(text.as_bytes(), &changed)
            .unwrap()
            .map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn record_rows_of_pruned_files_are_replaced() {
        let text = "a/x.so,sha256=old,10\r\nb.py,sha256=keep,3\r\npkg.dist-info/RECORD,,\r\n";
        assert_eq!(
            rewritten(text, &[("a/x.so", 7, "new")]).as_deref(),
            Some("a/x.so,sha256=new,7\r\nb.py,sha256=keep,3\r\npkg.dist-info/RECORD,,\r\n")
        );
    }

    #[test]
    fn quoted_paths_are_read_and_written_as_csv() {
        // A comma: the old code took `"pkg/a` for the path and kept the
        // old hash.
        let text = "\"pkg/a,b.so\",sha256=old,123\nb.py,sha256=keep,3\n";
        assert_eq!(
            rewritten(text, &[("pkg/a,b.so", 9, "new")]).as_deref(),
            Some("\"pkg/a,b.so\",sha256=new,9\nb.py,sha256=keep,3\n")
        );
        // A quote, doubled inside quotes.
        let text = "\"pkg/a\"\"b.so\",sha256=old,5\n";
        assert_eq!(
            rewritten(text, &[("pkg/a\"b.so", 6, "new")]).as_deref(),
            Some("\"pkg/a\"\"b.so\",sha256=new,6\n")
        );
        // A path quoted where CSV does not need it comes out unquoted, and
        // one unquoted where it does comes out quoted.
        let text = "\"pkg/plain.so\",sha256=old,5\r\n";
        assert_eq!(
            rewritten(text, &[("pkg/plain.so", 6, "new")]).as_deref(),
            Some("pkg/plain.so,sha256=new,6\r\n")
        );
        // A line break in a path.
        let text = "\"pkg/a\nb.so\",sha256=old,5\nx,,\n";
        assert_eq!(
            rewritten(text, &[("pkg/a\nb.so", 6, "new")]).as_deref(),
            Some("\"pkg/a\nb.so\",sha256=new,6\nx,,\n")
        );
    }

    #[test]
    fn each_row_keeps_its_own_line_terminator() {
        let text = "a.so,sha256=old,1\r\nb.so,sha256=old,2\nc.so,sha256=old,3\rd.so,sha256=old,4";
        assert_eq!(
            rewritten(
                text,
                &[
                    ("a.so", 5, "A"),
                    ("b.so", 6, "B"),
                    ("c.so", 7, "C"),
                    ("d.so", 8, "D")
                ]
            )
            .as_deref(),
            Some("a.so,sha256=A,5\r\nb.so,sha256=B,6\nc.so,sha256=C,7\rd.so,sha256=D,8")
        );
        // Blank lines between rows stay where they were.
        let text = "a.so,sha256=old,1\r\n\r\n\nb.so,sha256=old,2\n\n";
        assert_eq!(
            rewritten(text, &[("b.so", 6, "B")]).as_deref(),
            Some("a.so,sha256=old,1\r\n\r\n\nb.so,sha256=B,6\n\n")
        );
    }

    #[test]
    fn rows_with_no_hash() {
        // A pruned file listed without a hash gets one; RECORD's own row
        // (no hash, no size) stays.
        let text = "a.so,,\npkg.dist-info/RECORD,,\n";
        assert_eq!(
            rewritten(text, &[("a.so", 5, "A")]).as_deref(),
            Some("a.so,sha256=A,5\npkg.dist-info/RECORD,,\n")
        );
    }

    #[test]
    fn unchanged_rows_are_byte_for_byte() {
        // Rows in forms the csv writer would not write (needless quotes,
        // spaces, extra fields, no fields, bytes that are not UTF-8) are
        // copied as they were.
        let mut text =
            b"\"b.py\",sha256=keep,3\r\nc.py , sha256=x ,4,extra\n,\n\xff\xfe,,\n".to_vec();
        text.extend_from_slice(b"a.so,sha256=old,1\n\"e,f\",sha256=keep,2");
        let changed = [("a.so", (7, "new"))].into_iter().collect();
        let got = new_record(&text, &changed).unwrap().unwrap();
        let mut want = text.clone();
        let at = want
            .windows(16)
            .position(|w| w == b"a.so,sha256=old,")
            .unwrap();
        want.splice(at..at + 17, b"a.so,sha256=new,7".iter().copied());
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want)
        );
        // A RECORD naming no pruned file is not rewritten at all.
        assert_eq!(rewritten("b.py,sha256=keep,3\n", &[("a.so", 1, "A")]), None);
    }

    #[test]
    fn rows_of_removed_files_go_with_their_line_terminators() {
        let text = "a.so,sha256=old,1\r\nk_gfx1030.co,sha256=x,9\r\n\nb.so,sha256=old,2\nk_gfx1030.co,sha256=x,9";
        let changed = [
            ("k_gfx1030.co", Change::Removed),
            ("b.so", Change::Rewritten(5, "B")),
        ]
        .into_iter()
        .collect();
        let got = new_record_with(text.as_bytes(), &changed).unwrap().unwrap();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            "a.so,sha256=old,1\r\n\nb.so,sha256=B,5\n"
        );
        // A RECORD whose only named row goes is still rewritten.
        let removed = [("a.so", Change::Removed)].into_iter().collect();
        let got = new_record_with(b"a.so,sha256=old,1\n", &removed).unwrap();
        assert_eq!(got.as_deref(), Some(&b""[..]));
    }

    #[test]
    fn every_row_of_a_pruned_file_is_replaced() {
        let text = "a.so,sha256=old,1\nb,,\na.so,sha256=old,1\n";
        assert_eq!(
            rewritten(text, &[("a.so", 2, "N")]).as_deref(),
            Some("a.so,sha256=N,2\nb,,\na.so,sha256=N,2\n")
        );
    }
}

//! The JSON of an image's index, manifests and configs edited in place:
//! the byte range of one value found by its path ([`span`]), and values
//! replaced by range ([`splice`]), every other byte (key order, spacing)
//! kept as it was.

use std::ops::Range;

/// One step of a path into a JSON document: a key of an object, or an
/// index into an array.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Step<'a> {
    Key(&'a str),
    At(usize),
}

/// How deeply a document may nest before it is refused.
const MAX_DEPTH: u32 = 64;

/// The byte range of the value at `path` in the JSON text `text`; `None`
/// when the text is no JSON this reader reads or the path leads nowhere.
/// The first of repeated keys is taken.
pub(crate) fn span(text: &[u8], path: &[Step<'_>]) -> Option<Range<usize>> {
    let mut p = Parser { text, at: 0 };
    p.ws();
    let mut range = p.value_range(0)?;
    for step in path {
        let mut inner = Parser {
            text,
            at: range.start,
        };
        range = inner.find(*step)?;
    }
    Some(range)
}

/// `text` with each range of `edits` replaced by its bytes (the ranges
/// must not overlap).
pub(crate) fn splice(text: &[u8], mut edits: Vec<(Range<usize>, Vec<u8>)>) -> Option<Vec<u8>> {
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = Vec::with_capacity(text.len() + 64);
    let mut at = 0;
    for (r, new) in edits {
        out.extend_from_slice(text.get(at..r.start)?);
        out.extend_from_slice(&new);
        at = r.end;
    }
    out.extend_from_slice(text.get(at..)?);
    Some(out)
}

/// A reader of JSON text from a position.
struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        self.ws();
        (self.peek()? == b).then(|| self.at += 1)
    }

    /// Within the object or array at the current position, the range of
    /// the value `step` names.
    fn find(&mut self, step: Step<'_>) -> Option<Range<usize>> {
        match (self.peek()?, step) {
            (b'{', Step::Key(key)) => {
                self.at += 1;
                self.ws();
                if self.peek()? == b'}' {
                    return None;
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.eat(b':')?;
                    self.ws();
                    let v = self.value_range(1)?;
                    if key_is(&self.text[k], key) {
                        return Some(v);
                    }
                    self.ws();
                    match self.peek()? {
                        b',' => self.at += 1,
                        _ => return None,
                    }
                }
            }
            (b'[', Step::At(n)) => {
                self.at += 1;
                self.ws();
                if self.peek()? == b']' {
                    return None;
                }
                for i in 0.. {
                    self.ws();
                    let v = self.value_range(1)?;
                    if i == n {
                        return Some(v);
                    }
                    self.ws();
                    match self.peek()? {
                        b',' => self.at += 1,
                        _ => return None,
                    }
                }
                None
            }
            _ => None,
        }
    }

    /// The range of the value at the current position, which it skips.
    fn value_range(&mut self, depth: u32) -> Option<Range<usize>> {
        if depth > MAX_DEPTH {
            return None;
        }
        let start = self.at;
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                self.at += 1;
                self.ws();
                if self.peek()? == close {
                    self.at += 1;
                    return Some(start..self.at);
                }
                loop {
                    self.ws();
                    if open == b'{' {
                        self.string()?;
                        self.eat(b':')?;
                        self.ws();
                    }
                    self.value_range(depth + 1)?;
                    self.ws();
                    match self.peek()? {
                        b',' => self.at += 1,
                        c if c == close => {
                            self.at += 1;
                            break;
                        }
                        _ => return None,
                    }
                }
            }
            _ => {
                let n = self.text[self.at..]
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.'))
                    .count();
                if n == 0 {
                    return None;
                }
                self.at += n;
            }
        }
        Some(start..self.at)
    }

    /// Skips the string at the current position; its range, quotes
    /// included.
    fn string(&mut self) -> Option<Range<usize>> {
        let start = self.at;
        if self.peek()? != b'"' {
            return None;
        }
        self.at += 1;
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some(start..self.at);
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }
}

/// Whether the JSON string `quoted` (quotes included) is `key`.
fn key_is(quoted: &[u8], key: &str) -> bool {
    if quoted.contains(&b'\\') {
        return serde_json::from_slice::<String>(quoted).is_ok_and(|k| k == key);
    }
    quoted.get(1..quoted.len() - 1) == Some(key.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_found_and_replaced_in_place() {
        let text = br#"{"a": 1, "layers" : [ {"digest":"x","size":12}, {"size": 7 ,"digest":"y"} ], "z":{}}"#;
        let path = [Step::Key("layers"), Step::At(1), Step::Key("size")];
        let r = span(text, &path).unwrap();
        assert_eq!(&text[r.clone()], b"7");
        let d = span(
            text,
            &[Step::Key("layers"), Step::At(0), Step::Key("digest")],
        )
        .unwrap();
        let out = splice(text, vec![(r, b"70".to_vec()), (d, br#""w""#.to_vec())]).unwrap();
        assert_eq!(
            out,
            br#"{"a": 1, "layers" : [ {"digest":"w","size":12}, {"size": 70 ,"digest":"y"} ], "z":{}}"#
        );
        assert!(span(text, &[Step::Key("layers"), Step::At(2)]).is_none());
        assert!(span(b"{\"a\":[1,", &[Step::Key("a"), Step::At(1)]).is_none());
    }
}

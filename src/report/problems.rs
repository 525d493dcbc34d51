//! Problems as the text reports show them: the messages that say the same
//! thing of other offsets, entries or sizes grouped under the first of
//! them, and lines kept short enough for a terminal. `--json` keeps every
//! problem; only the text is grouped.

/// Lines of text are cut to this many bytes (a few terminal lines).
pub(crate) const MAX_LINE: usize = 400;

/// The shape of a message: its numbers (decimal, or hexadecimal after
/// `0x`) made `#`, so that "entry 3 overlaps entry 0 at 0x2000" and
/// "entry 7 overlaps entry 0 at 0x2000" are alike.
fn shape(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(c) = rest.chars().next() {
        if c.is_ascii_digit() {
            let hex = rest.starts_with("0x") || rest.starts_with("0X");
            let skip = if hex { 2 } else { 0 };
            let digits = rest[skip..]
                .find(|c: char| {
                    !(if hex {
                        c.is_ascii_hexdigit()
                    } else {
                        c.is_ascii_digit()
                    })
                })
                .map_or(rest.len(), |n| n + skip);
            out.push('#');
            rest = &rest[digits.max(1)..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// A message and how many others are like it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Group<'a> {
    /// The first message of the shape.
    pub first: &'a str,
    /// How many more messages have its shape.
    pub more: usize,
}

impl std::fmt::Display for Group<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.first)?;
        match self.more {
            0 => Ok(()),
            1 => f.write_str(" (and 1 more like it)"),
            n => write!(f, " (and {n} more like it)"),
        }
    }
}

/// `messages` grouped by shape, in the order each shape first comes.
pub(crate) fn grouped<'a>(messages: impl IntoIterator<Item = &'a str>) -> Vec<Group<'a>> {
    // A damaged file may hold many thousands of problems: each shape is
    // looked up, never searched for.
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut groups: Vec<Group<'a>> = Vec::new();
    for m in messages {
        match at.entry(shape(m)) {
            std::collections::hash_map::Entry::Occupied(e) => groups[*e.get()].more += 1,
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(groups.len());
                groups.push(Group { first: m, more: 0 });
            }
        }
    }
    groups
}

/// `text` cut to at most `max` bytes at a character boundary, with `…`
/// when something was cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The groups of `messages` on one line, `; ` between them, cut to
/// [`MAX_LINE`] bytes.
pub(crate) fn one_line<'a>(messages: impl IntoIterator<Item = &'a str>) -> String {
    let joined = grouped(messages)
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    clip(&joined, MAX_LINE)
}

/// The line that says on standard error that a file holds damaged data:
/// how many problems, and the first kinds of them.
pub(crate) fn summary<'a>(
    path: &str,
    messages: impl IntoIterator<Item = &'a str>,
    stopped: Option<&str>,
    level: &str,
) -> String {
    let messages: Vec<&str> = messages.into_iter().collect();
    let what = match (messages.len(), stopped) {
        (0, Some(why)) => format!("the scan stopped: {why}"),
        (n, stopped) => {
            let plural = if n == 1 { "" } else { "s" };
            let mut s = format!("{n} problem{plural}: {}", one_line(messages));
            if let Some(why) = stopped {
                s = format!("{s}; the scan stopped: {why}");
            }
            s
        }
    };
    clip(
        &crate::text::printable(&format!("{level}: '{path}': {what}")),
        MAX_LINE + 100,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_of_one_shape_are_one_group() {
        let m: Vec<String> = (1..=9)
            .map(|i| format!("entry {i} overlaps entry 0 at 0x2a{i}f"))
            .chain(["an OffloadBinary at 0x10 is cut short".to_string()])
            .chain(["entry 12 overlaps entry 0 at 0x3000".to_string()])
            .collect();
        let g = grouped(m.iter().map(String::as_str));
        assert_eq!(
            g,
            [
                Group {
                    first: "entry 1 overlaps entry 0 at 0x2a1f",
                    more: 9
                },
                Group {
                    first: "an OffloadBinary at 0x10 is cut short",
                    more: 0
                },
            ]
        );
        assert_eq!(
            one_line(m.iter().map(String::as_str)),
            "entry 1 overlaps entry 0 at 0x2a1f (and 9 more like it); \
             an OffloadBinary at 0x10 is cut short"
        );
    }

    #[test]
    fn words_are_not_numbers() {
        // `0xff` is a number; `sm_80` and `gfx90a` keep their letters.
        assert_eq!(shape("gfx90a at 0xff, sm_80"), "gfx#a at #, sm_#");
        assert_ne!(shape("a gfx90a image"), shape("a sm_90a image"));
    }

    #[test]
    fn long_lines_are_cut_at_a_character() {
        let long = "é".repeat(1000);
        let c = clip(&long, 101);
        assert!(c.len() <= 101 && c.ends_with('…'), "{}", c.len());
        let distinct: Vec<String> = (0..200)
            .map(|i| format!("problem {}", "x".repeat(i)))
            .collect();
        let line = one_line(distinct.iter().map(String::as_str));
        assert!(line.len() <= MAX_LINE, "{}", line.len());
        let s = summary("f", distinct.iter().map(String::as_str), None, "error");
        assert!(s.starts_with("error: 'f': 200 problems: problem ") && s.len() <= MAX_LINE + 100);
        assert_eq!(
            summary("f", [], Some("too many containers"), "error"),
            "error: 'f': the scan stopped: too many containers"
        );
    }
}

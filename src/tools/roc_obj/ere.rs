//! The POSIX extended regular expressions of `roc-obj -t` (the script hands
//! them to awk as `$2 ~ /REGEXP/`): literals, `.`, bracket expressions
//! (ranges, `^`, `[:class:]`), `^` and `$`, `*`, `+`, `?`, `{m}`, `{m,}`,
//! `{m,n}`, groups and `|`; a backslash makes the next character literal
//! (`\t`, `\n`: tab, newline). Matched on bytes by backtracking: the text
//! matched is an entry ID, a few dozen bytes. Errors are worded as mawk's
//! where it has one.

/// A compiled expression.
#[derive(Debug)]
pub(super) struct Regex(Alt);

type Alt = Vec<Vec<Node>>;

#[derive(Debug)]
enum Node {
    Byte(u8),
    Any,
    Set {
        ranges: Vec<(u8, u8)>,
        negated: bool,
    },
    Start,
    End,
    Group(Alt),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

/// Counts above this in `{m,n}` are refused (awk's limit is similar).
const MAX_COUNT: u32 = 255;

impl Regex {
    /// Compiles `pattern`; the error says what is wrong.
    pub(super) fn new(pattern: &str) -> Result<Regex, String> {
        let mut p = Parser {
            s: pattern.as_bytes(),
            i: 0,
        };
        let alt = p.alt()?;
        if p.i < p.s.len() {
            return Err("missing '('".to_string());
        }
        Ok(Regex(alt))
    }

    /// Whether the expression matches anywhere in `text`.
    pub(super) fn is_match(&self, text: &[u8]) -> bool {
        (0..=text.len()).any(|start| alt_at(&self.0, text, start, &mut |_| true))
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// Moves past a one-byte operator, giving its counts.
    fn one(&mut self, counts: (u32, Option<u32>)) -> (u32, Option<u32>) {
        self.i += 1;
        counts
    }

    fn alt(&mut self) -> Result<Alt, String> {
        let mut alt = vec![self.seq()?];
        while self.peek() == Some(b'|') {
            self.i += 1;
            alt.push(self.seq()?);
        }
        Ok(alt)
    }

    fn seq(&mut self) -> Result<Vec<Node>, String> {
        let mut seq = Vec::new();
        while let Some(c) = self.peek() {
            if c == b'|' || c == b')' {
                break;
            }
            let atom = self.atom()?;
            seq.push(self.repeats(atom)?);
        }
        Ok(seq)
    }

    fn atom(&mut self) -> Result<Node, String> {
        let c = self.peek().ok_or("missing operand")?;
        self.i += 1;
        Ok(match c {
            b'.' => Node::Any,
            b'^' => Node::Start,
            b'$' => Node::End,
            b'(' => {
                let alt = self.alt()?;
                if self.peek() != Some(b')') {
                    return Err("missing ')'".to_string());
                }
                self.i += 1;
                Node::Group(alt)
            }
            b'[' => self.set()?,
            b'*' | b'+' | b'?' => return Err("missing operand".to_string()),
            b'\\' => {
                let e = self.peek().ok_or("trailing backslash")?;
                self.i += 1;
                Node::Byte(match e {
                    b't' => b'\t',
                    b'n' => b'\n',
                    other => other,
                })
            }
            other => Node::Byte(other),
        })
    }

    fn repeats(&mut self, mut node: Node) -> Result<Node, String> {
        loop {
            let (min, max) = match self.peek() {
                Some(b'*') => self.one((0, None)),
                Some(b'+') => self.one((1, None)),
                Some(b'?') => self.one((0, Some(1))),
                Some(b'{') if self.s.get(self.i + 1).is_some_and(u8::is_ascii_digit) => {
                    self.interval()?
                }
                _ => return Ok(node),
            };
            node = Node::Repeat {
                node: Box::new(node),
                min,
                max,
            };
        }
    }

    /// The operator at `i` (`*`, `+`, `?` are one byte, handled by the
    /// caller's match) or the interval `{m}`, `{m,}`, `{m,n}`: moves past it.
    fn interval(&mut self) -> Result<(u32, Option<u32>), String> {
        let close = self.s[self.i..]
            .iter()
            .position(|&b| b == b'}')
            .ok_or("unmatched {")?;
        let body =
            std::str::from_utf8(&self.s[self.i + 1..self.i + close]).map_err(|e| e.to_string())?;
        let num = |t: &str| t.parse::<u32>().ok().filter(|&n| n <= MAX_COUNT);
        let bad = || format!("bad interval {{{body}}}");
        let (min, max) = match body.split_once(',') {
            None => {
                let n = num(body).ok_or_else(bad)?;
                (n, Some(n))
            }
            Some((m, "")) => (num(m).ok_or_else(bad)?, None),
            Some((m, n)) => (num(m).ok_or_else(bad)?, Some(num(n).ok_or_else(bad)?)),
        };
        if max.is_some_and(|n| n < min) {
            return Err(bad());
        }
        self.i += close + 1;
        Ok((min, max))
    }

    fn set(&mut self) -> Result<Node, String> {
        let mut ranges = Vec::new();
        let negated = self.peek() == Some(b'^');
        if negated {
            self.i += 1;
        }
        let mut first = true;
        loop {
            let c = self.peek().ok_or("bad class -- [], [^] or [")?;
            if c == b']' && !first {
                self.i += 1;
                break;
            }
            first = false;
            if c == b'[' && self.s.get(self.i + 1) == Some(&b':') {
                let rest = &self.s[self.i + 2..];
                let end = rest
                    .windows(2)
                    .position(|w| w == b":]")
                    .ok_or("unmatched [:")?;
                let name = std::str::from_utf8(&rest[..end]).unwrap_or("");
                ranges.extend(class(name).ok_or_else(|| format!("unknown class [:{name}:]"))?);
                self.i += 2 + end + 2;
                continue;
            }
            self.i += 1;
            let lo = c;
            if self.peek() == Some(b'-') && self.s.get(self.i + 1).is_some_and(|&b| b != b']') {
                let hi = self.s[self.i + 1];
                self.i += 2;
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        Ok(Node::Set { ranges, negated })
    }
}

/// The byte ranges of a POSIX character class (C locale).
fn class(name: &str) -> Option<Vec<(u8, u8)>> {
    Some(match name {
        "alpha" => vec![(b'a', b'z'), (b'A', b'Z')],
        "digit" => vec![(b'0', b'9')],
        "alnum" => vec![(b'a', b'z'), (b'A', b'Z'), (b'0', b'9')],
        "upper" => vec![(b'A', b'Z')],
        "lower" => vec![(b'a', b'z')],
        "xdigit" => vec![(b'0', b'9'), (b'a', b'f'), (b'A', b'F')],
        "space" => vec![(b' ', b' '), (b'\t', b'\r')],
        "blank" => vec![(b' ', b' '), (b'\t', b'\t')],
        "punct" => vec![(b'!', b'/'), (b':', b'@'), (b'[', b'`'), (b'{', b'~')],
        "print" => vec![(b' ', b'~')],
        "graph" => vec![(b'!', b'~')],
        "cntrl" => vec![(0, 31), (127, 127)],
        _ => return None,
    })
}

/// Matches one of `alt`'s branches at `i`, then the continuation `k`.
fn alt_at(alt: &Alt, s: &[u8], i: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    alt.iter().any(|seq| seq_at(seq, s, i, k))
}

fn seq_at(seq: &[Node], s: &[u8], i: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    let Some((first, rest)) = seq.split_first() else {
        return k(i);
    };
    node_at(first, s, i, &mut |j| seq_at(rest, s, j, k))
}

fn node_at(node: &Node, s: &[u8], i: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    match node {
        Node::Byte(b) => s.get(i) == Some(b) && k(i + 1),
        Node::Any => i < s.len() && k(i + 1),
        Node::Set { ranges, negated } => {
            s.get(i)
                .is_some_and(|&c| ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&c)) != *negated)
                && k(i + 1)
        }
        Node::Start => i == 0 && k(i),
        Node::End => i == s.len() && k(i),
        Node::Group(alt) => alt_at(alt, s, i, k),
        Node::Repeat { node, min, max } => repeat_at(node, *min, *max, 0, s, i, k),
    }
}

/// Greedy repetition: one more (if allowed and it moves on), else stop.
fn repeat_at(
    node: &Node,
    min: u32,
    max: Option<u32>,
    done: u32,
    s: &[u8],
    i: usize,
    k: &mut dyn FnMut(usize) -> bool,
) -> bool {
    if max.is_none_or(|m| done < m)
        && node_at(node, s, i, &mut |j| {
            (j > i || done < min) && repeat_at(node, min, max, done + 1, s, j, k)
        })
    {
        return true;
    }
    done >= min && k(i)
}

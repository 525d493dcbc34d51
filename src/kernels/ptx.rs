//! PTX text: its `.version`, its `.target` and, at the top level (outside
//! function bodies), the kernels (`.entry`), functions (`.func`) and
//! variables (`.global`, `.const`) it defines and exports (`.visible`,
//! `.weak` or `.common`; an `.extern` is a declaration, not a definition).
//!
//! The text is split into tokens once, comments (`//` to the end of the
//! line, `/* … */`) left out, so the work is linear in its size. The
//! inside of a block (`{ … }`: a function body, an initializer) is not
//! split: only its braces and comments are looked for, so that the
//! instructions, the bulk of the text, are passed over at `memchr`'s
//! speed.

use super::{Allowance, Format, Kernel, Listing, Symbol, SymbolKind, text};
use crate::error::Result;

/// Whether `bytes` look like PTX: after blank space and comments, the
/// first thing is the `.version` directive, which every PTX module starts
/// with.
pub(super) fn looks_like_ptx(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(64 << 10)];
    let mut t = Tokens::new(head);
    t.next() == Some(&b".version"[..])
}

pub(super) fn read(bytes: &[u8], allowance: &Allowance) -> Result<Listing> {
    let mut l = Listing::new(Format::Ptx);
    let mut t = Tokens::new(bytes);
    // The linking directives seen since the last statement.
    let (mut exported, mut external) = (false, false);
    while let Some(tok) = t.next() {
        match tok {
            b"{" => {
                t.skip_group(b'{', b'}');
                (exported, external) = (false, false);
            }
            b";" => (exported, external) = (false, false),
            b".version" => l.version = t.next().map(text),
            b".target" => l.target = t.next().map(text),
            b".visible" | b".weak" | b".common" => exported = true,
            b".extern" => external = true,
            b".entry" => {
                if let Some(name) = t.next().filter(|_| !external) {
                    allowance.spend(1)?;
                    l.kernels.push(Kernel::new(text(name)));
                }
                (exported, external) = (false, false);
            }
            // A parameter list: nothing in it is defined at the top level.
            b"(" => t.skip_group(b'(', b')'),
            b".func" => {
                // `.func (.param .b32 retval) name(…)`: the return values
                // come first, in parentheses.
                if t.peek() == Some(&b"("[..]) {
                    t.next();
                    t.skip_group(b'(', b')');
                }
                if let Some(name) = t.next().filter(|_| exported && !external) {
                    allowance.spend(1)?;
                    l.symbols.push(Symbol::new(name, SymbolKind::Function, 0));
                }
                (exported, external) = (false, false);
            }
            b".global" | b".const" if exported && !external => {
                // The name is the last word before `;`, `=` or `[`.
                let mut name = None;
                while let Some(tok) = t.peek() {
                    if matches!(tok, b";" | b"=" | b"[" | b"{") {
                        break;
                    }
                    name = Some(tok);
                    t.next();
                }
                if let Some(name) = name.filter(|n| !n.starts_with(b".")) {
                    allowance.spend(1)?;
                    l.symbols.push(Symbol::new(name, SymbolKind::Variable, 0));
                }
            }
            _ => {}
        }
    }
    Ok(l)
}

/// PTX's tokens: words (identifiers, directives, numbers, types), and the
/// punctuation `{ } ( ) [ ] ; , =` one character each; comments and blank
/// space between them.
#[derive(Clone)]
struct Tokens<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Tokens<'a> {
    fn new(data: &'a [u8]) -> Tokens<'a> {
        Tokens { data, pos: 0 }
    }

    /// The next token, left to be read.
    fn peek(&self) -> Option<&'a [u8]> {
        self.clone().next()
    }

    /// Passes over the rest of a group whose `open` (`{` of a block, `(`
    /// of a parameter list) was just read: up to the `close` that ends it
    /// (groups inside it and comments counted), or to the end of the text.
    fn skip_group(&mut self, open: u8, close: u8) {
        let d = self.data;
        let mut depth = 1usize;
        while let Some(i) = d
            .get(self.pos..)
            .and_then(|rest| memchr::memchr3(open, close, b'/', rest))
        {
            let at = self.pos + i;
            self.pos = at + 1;
            let rest = &d[at..];
            match rest[0] {
                b if b == open => depth += 1,
                b if b == close => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                _ if rest.starts_with(b"//") => {
                    self.pos = at + memchr::memchr(b'\n', rest).unwrap_or(rest.len());
                }
                _ if rest.starts_with(b"/*") => {
                    self.pos =
                        at + memchr::memmem::find(&rest[2..], b"*/").map_or(rest.len(), |e| e + 4);
                }
                _ => {}
            }
        }
        self.pos = d.len();
    }
}

const fn is_punct(b: u8) -> bool {
    matches!(
        b,
        b'{' | b'}' | b'(' | b')' | b'[' | b']' | b';' | b',' | b'=' | b'"'
    )
}

/// Which bytes end a word: blank space, NUL, punctuation, and `/` (which
/// may start a comment), one table lookup each.
const ENDS_WORD: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0u8;
    loop {
        t[c as usize] = c.is_ascii_whitespace() || c == 0 || c == b'/' || is_punct(c);
        if c == u8::MAX {
            break t;
        }
        c += 1;
    }
};

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let d = self.data;
        loop {
            while self.pos < d.len() && (d[self.pos].is_ascii_whitespace() || d[self.pos] == 0) {
                self.pos += 1;
            }
            let rest = &d[self.pos..];
            if rest.starts_with(b"//") {
                self.pos += memchr::memchr(b'\n', rest).unwrap_or(rest.len());
            } else if rest.starts_with(b"/*") {
                self.pos += memchr::memmem::find(&rest[2..], b"*/").map_or(rest.len(), |e| e + 4);
            } else {
                break;
            }
        }
        let start = self.pos;
        let first = *d.get(start)?;
        if is_punct(first) {
            self.pos += 1;
            return Some(&d[start..self.pos]);
        }
        loop {
            self.pos += d[self.pos..]
                .iter()
                .position(|&b| ENDS_WORD[usize::from(b)])
                .unwrap_or(d.len() - self.pos);
            // A `/` ends the word only where a comment starts (the word
            // does not start with one: comments were passed over above).
            match (d.get(self.pos), d.get(self.pos + 1)) {
                (Some(b'/'), Some(b'/' | b'*')) => break,
                (Some(b'/'), _) => self.pos += 1,
                _ => break,
            }
        }
        Some(&d[start..self.pos])
    }
}

//! The sixth round (issue #71): names from files never break a report.
//! A file named with U+FFFE made the `check --junit` file invalid XML.
//! Here names drawn by a seeded generator from awkward characters (C0
//! controls, DEL, C1, U+FFFE, U+FFFF, quotes, `<&>`, `|` and Markdown's
//! other marks, newlines, bidirectional controls, bytes that are not
//! UTF-8), each a file holding a HIP bundle, go through every report:
//! the JUnit file parses as XML (Python's `xml.etree`), `--json` as JSON,
//! each Markdown table row keeps its header's cells, and the `size
//! --html` page's tags balance (Python's `html.parser`).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use super::*;
use crate::util::{Run, run_within, xorshift};

pub(super) fn tests() -> Vec<Trial> {
    vec![trial!(awkward_names_keep_every_report_well_formed, &["/usr/bin/python3"])]
}

/// The pieces names are drawn from (each a byte string: a character's
/// UTF-8, or a byte that is no UTF-8).
const PIECES: &[&[u8]] = &[
    b"\x01", b"\x07", b"\x08", b"\x0b", b"\x0c", b"\x1b", b"\x1f", b"\x7f", b"\t", b"\n", b"\r",
    "\u{85}".as_bytes(), "\u{9b}".as_bytes(), "\u{fffe}".as_bytes(), "\u{ffff}".as_bytes(),
    "\u{202e}".as_bytes(), "\u{fffd}".as_bytes(), "\u{10000}".as_bytes(), b"\"", b"'", b"<",
    b">", b"&", b"&amp;", b"]]>", b"|", b"`", b"*", b"_", b"[", b"]", b"\\", b"#", b"!",
    b"~", b" ", b"-", b"a", b"Z", b"\xff", b"\xc3", b"\xed\xa0\x80",
];

/// `n` names drawn from [`PIECES`] with `seed`, each distinct, none `.`
/// or `..`.
fn names(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut x = seed;
    let mut out: Vec<Vec<u8>> = Vec::new();
    while out.len() < n {
        let len = 1 + (xorshift(&mut x) % 8) as usize;
        let mut name = b"k".to_vec();
        for _ in 0..len {
            let i = (xorshift(&mut x) % PIECES.len() as u64) as usize;
            name.extend_from_slice(PIECES[i]);
        }
        if !out.contains(&name) {
            out.push(name);
        }
    }
    // Every piece at least once, whatever the draw.
    out.push([b"k".as_slice(), &PIECES.concat()].concat());
    out
}

fn awkward_names_keep_every_report_well_formed() -> Result<(), Failed> {
    for seed in [0x5eed_u64, 0xfeed_f00d, 71] {
        one_seed(seed).map_err(|e| format!("seed {seed:#x}: {}", e.message().unwrap_or("")))?;
    }
    Ok(())
}

fn one_seed(seed: u64) -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::create_dir_all(d.join("in"))?;
    super::round5_paths::hip_bundle(d, OsStr::new("made.hipfb"), 256)?;
    for name in names(seed, 12) {
        std::fs::copy(d.join("made.hipfb"), d.join("in").join(OsStr::from_bytes(&name)))?;
    }
    let ours_in = |args: &[&str]| run_within(LIMIT, &ours(), args, d);
    let check = ["check", "--forbid", "gfx90a", "in"];
    // The JUnit file: XML that parses.
    let r = ours_in(&[&check[..], &["--junit", "out.xml"]].concat())?;
    exit(&r, 1, "check --junit")?;
    let py = "import sys, xml.etree.ElementTree as E\n\
              cases = E.parse(sys.argv[1]).getroot().iter('testcase')\n\
              print(sum(1 for _ in cases))";
    let p = run_within(LIMIT, Path::new("/usr/bin/python3"), &["-c", py, "out.xml"], d)?;
    if p.code != 0 {
        let xml = String::from_utf8_lossy(&std::fs::read(d.join("out.xml"))?).into_owned();
        return Err(format!("the JUnit file is no XML: {}\n{xml:?}", p.stderr).into());
    }
    // JSON documents.
    for args in [&check[..], &["size", "in"], &["inspect", "in"]] {
        let r = ours_in(&[args, &["--json"]].concat())?;
        let doc: serde_json::Value = serde_json::from_slice(&r.stdout)
            .map_err(|e| format!("{args:?} --json: {e} (exit {}, {})", r.code, r.stderr))?;
        if doc.is_null() {
            return Err(format!("{args:?} --json: null").into());
        }
    }
    // Markdown tables keep their cells.
    for args in [&check[..], &["size", "in"], &["inspect", "in"]] {
        let r = ours_in(&[args, &["--markdown"]].concat())?;
        if r.code == 2 {
            return Err(format!("{args:?} --markdown: exit 2: {}", r.stderr).into());
        }
        tables_intact(&String::from_utf8_lossy(&r.stdout))
            .map_err(|e| format!("{args:?} --markdown: {e}"))?;
    }
    // The HTML page's tags balance, and it holds no character XML or
    // HTML forbids.
    ours_in(&["size", "in", "--html", "out.html"])?.ok()?;
    let py = "import sys, html.parser\n\
              class P(html.parser.HTMLParser):\n\
              \x20   def __init__(s):\n\
              \x20       super().__init__(); s.open = []\n\
              \x20   def handle_starttag(s, t, a):\n\
              \x20       if t not in ('br', 'meta', 'link', 'img', 'wbr', 'hr', 'input'): s.open.append(t)\n\
              \x20   def handle_endtag(s, t):\n\
              \x20       assert s.open and s.open.pop() == t, (t, s.open)\n\
              p = P(); p.feed(open(sys.argv[1], encoding='utf-8').read()); p.close()\n\
              assert not p.open, p.open";
    let p = run_within(LIMIT, Path::new("/usr/bin/python3"), &["-c", py, "out.html"], d)?;
    if p.code != 0 {
        return Err(format!("the HTML page's tags do not balance: {}", p.stderr).into());
    }
    let html = std::fs::read_to_string(d.join("out.html"))?;
    if let Some(c) = html.chars().find(|&c| matches!(c, '\u{fffe}' | '\u{ffff}' | '\0'..='\u{8}')) {
        return Err(format!("the HTML page holds {c:?}").into());
    }
    Ok(())
}

/// Whether `r` exited `code`, without a panic.
fn exit(r: &Run, code: i32, what: &str) -> Result<(), Failed> {
    if r.code != code || r.stderr.contains("panicked") {
        return Err(format!("{what}: exit {} (want {code}): {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// Every table of `md` (lines starting with `|`, one after another) has
/// as many cells in each row as in its header: a `|` behind a backslash
/// is text.
fn tables_intact(md: &str) -> Result<(), String> {
    let cells = |line: &str| {
        let mut n = 0;
        let mut escaped = false;
        for c in line.chars() {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '|') => n += 1,
                _ => {}
            }
        }
        n
    };
    let mut header: Option<usize> = None;
    let mut rows = 0;
    for line in md.lines() {
        if !line.starts_with('|') {
            header = None;
            continue;
        }
        let n = cells(line);
        match header {
            None => header = Some(n),
            Some(h) if h != n => return Err(format!("a row of {n} bars, header {h}: {line:?}")),
            Some(_) => rows += 1,
        }
    }
    if rows == 0 {
        return Err(format!("no table rows:\n{md}"));
    }
    Ok(())
}

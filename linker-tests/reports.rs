//! The reports for CI (issue #62): `check --junit FILE` and `--markdown` on
//! `check`, `size`, `inspect` and `prune --dry-run`, through the binary, on
//! a directory holding Debian's librocrand `.deb` and NVIDIA's nvjpeg
//! wheel (from the real-libs cache), two bare AMDGPU code objects whose
//! names hold `<&"'`, a control character, a pipe and a backquote, one
//! whose name is not UTF-8, and a `.deb` cut short (damaged).
//!
//! The JUnit XML is parsed by Python's `xml.etree`: a test case per rule
//! and input, its counts right, a failure exactly where the text report
//! says FAIL (its message among the line's reasons, as `--json` lists
//! them), an error for each rule of the damaged input; standard output
//! and the exit code the same with `--junit` as without. The Markdown
//! tables are well formed (every row the header's cells) and their
//! numbers those of `--json`.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::real_libs::{Cache, DEB, downloads, fetched};
use crate::util::{ours, run, run_stdin, same, tempdir};

const NVJPEG: &str = "nvidia_nvjpeg_cu12-12.4.0.76-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl";

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(
            junit_has_a_case_per_rule_and_input_and_fails_where_the_text_does,
            &["/usr/bin/python3", "bash"],
        ),
        trial!(markdown_tables_are_well_formed_with_the_json_figures, &["bash"]),
    ]
}

/// A bare AMDGPU code object (HSA, code object v5) for `mach`.
pub fn code_object(mach: u8) -> Vec<u8> {
    let mut e = b"\x7fELF\x02\x01\x01\x40\x03".to_vec();
    e.resize(16, 0);
    e.extend_from_slice(&3u16.to_le_bytes());
    e.extend_from_slice(&224u16.to_le_bytes());
    e.extend_from_slice(&1u32.to_le_bytes());
    e.extend_from_slice(&[0; 24]);
    e.extend_from_slice(&(0x500 | u32::from(mach)).to_le_bytes());
    for v in [64u16, 56, 0, 64, 0, 0] {
        e.extend_from_slice(&v.to_le_bytes());
    }
    e
}

/// The directory of inputs, in `dir`.
fn inputs(dir: &Path) -> Result<(), Failed> {
    let cache = downloads()?;
    let deb = std::fs::read(cache.join(DEB)).map_err(|e| format!("{DEB}: {e}"))?;
    std::fs::write(dir.join(DEB), &deb)?;
    // The nvjpeg wheel is among the downloads of `--windows` (and
    // `--prune`).
    static WINDOWS: Cache = Cache::new();
    let nvjpeg = fetched(&WINDOWS, &["--windows"])?.join(NVJPEG);
    std::fs::copy(&nvjpeg, dir.join(NVJPEG)).map_err(|e| format!("{NVJPEG}: {e}"))?;
    std::fs::write(dir.join("gfx90a <&\"'\u{1}.co"), code_object(0x3f))?;
    std::fs::write(dir.join("gfx942 |`pipe`.co"), code_object(0x4c))?;
    std::fs::write(dir.join(OsStr::from_bytes(b"odd\xff.co")), code_object(0x3f))?;
    // The first half of the package: its data.tar cut short.
    std::fs::write(dir.join("cut.deb"), &deb[..deb.len() / 2])?;
    Ok(())
}

/// A name as the text report prints it: control characters as escapes
/// (the names here hold only \x01).
fn printable(s: &str) -> String {
    s.replace('\u{1}', "\\x01")
}

/// The test cases of a JUnit document, parsed by Python: the suite's
/// counts (tests, failures, errors) and, per case, (classname, name,
/// `pass`/`failure`/`error`, message).
type Cases = ((usize, usize, usize), Vec<(String, String, String, String)>);

fn parse_junit(xml: &[u8], dir: &Path) -> Result<Cases, Failed> {
    let script = r#"
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.stdin.buffer).getroot()
suites = [root] if root.tag == "testsuite" else list(root.findall("testsuite"))
assert len(suites) == 1, len(suites)
s = suites[0]
cases = []
for c in s.findall("testcase"):
    kind, msg = "pass", ""
    for k in ("failure", "error"):
        e = c.find(k)
        if e is not None:
            kind, msg = k, e.get("message")
    cases.append([c.get("classname"), c.get("name"), kind, msg])
print(json.dumps({"counts": [int(s.get("tests")), int(s.get("failures")), int(s.get("errors"))],
                  "top": [root.get("tests"), root.get("failures"), root.get("errors")],
                  "cases": cases}))
"#;
    let r = run_stdin(Path::new("/usr/bin/python3"), &["-c", script], dir, xml);
    let r = r.ok().map_err(|e| format!("the JUnit XML does not parse: {e:?}"))?;
    let v: Value = serde_json::from_slice(&r.stdout)?;
    let n = |x: &Value| x.as_u64().unwrap_or(u64::MAX) as usize;
    let counts = (
        n(&v["counts"][0]),
        n(&v["counts"][1]),
        n(&v["counts"][2]),
    );
    let top: Vec<String> = v["top"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| x.as_str().unwrap_or_default().to_string())
        .collect();
    same(
        "<testsuites> counts",
        top,
        vec![
            counts.0.to_string(),
            counts.1.to_string(),
            counts.2.to_string(),
        ],
    )?;
    let cases = v["cases"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |i: usize| c[i].as_str().unwrap_or_default().to_string();
            (s(0), s(1), s(2), s(3))
        })
        .collect();
    Ok((counts, cases))
}

fn junit_has_a_case_per_rule_and_input_and_fails_where_the_text_does() -> Result<(), Failed> {
    let tmp = tempdir();
    let dir = tmp.path().join("in");
    std::fs::create_dir(&dir)?;
    inputs(&dir)?;
    let rules = ["--require", "gfx90a", "--forbid", "sm_50"];
    let args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["check".into(), "in".into()];
        v.extend(rules.iter().map(|s| s.to_string()));
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let plain = run(&ours(), &args(&[]), tmp.path());
    let with = run(&ours(), &args(&["--junit", "out.xml"]), tmp.path());
    same("exit code with --junit", with.code, plain.code)?;
    same("exit code", plain.code, 2)?;
    same(
        "stdout with --junit",
        String::from_utf8_lossy(&with.stdout),
        String::from_utf8_lossy(&plain.stdout),
    )?;
    let xml = std::fs::read(tmp.path().join("out.xml"))?;
    let again = run(&ours(), &args(&["--junit", "again.xml"]), tmp.path());
    same("exit code, again", again.code, 2)?;
    if std::fs::read(tmp.path().join("again.xml"))? != xml {
        return Err("the JUnit XML differs from run to run".into());
    }
    let ((tests, failures, errors), cases) = parse_junit(&xml, tmp.path())?;
    same("tests", tests, cases.len())?;
    same(
        "failures",
        failures,
        cases.iter().filter(|c| c.2 == "failure").count(),
    )?;
    same(
        "errors",
        errors,
        cases.iter().filter(|c| c.2 == "error").count(),
    )?;
    // A case per rule and input, the inputs those of --json.
    let json = run(&ours(), &args(&["--json"]), tmp.path());
    let doc: Value = serde_json::from_slice(&json.stdout)?;
    let files = doc["files"].as_array().ok_or("no files in --json")?;
    let mut per_input: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in &cases {
        per_input.entry(&c.0).or_default().push(&c.1);
    }
    let all = per_input.remove("(all inputs)").unwrap_or_default();
    same("cases of all inputs", all, vec!["device images present"])?;
    same("inputs with cases", per_input.len(), files.len())?;
    for f in files {
        let path = printable(f["path"].as_str().unwrap_or_default());
        let names = per_input.get(path.as_str()).cloned().unwrap_or_default();
        same(
            &format!("cases of {path}"),
            names,
            vec!["require gfx90a", "forbid sm_50"],
        )?;
        // The failures --json lists for it, and nothing else.
        let mut want: Vec<String> = f["failures"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|x| printable(x.as_str().unwrap_or_default()))
            .collect();
        let mut got: Vec<String> = cases
            .iter()
            .filter(|c| c.0 == path && c.2 == "failure")
            .map(|c| c.3.clone())
            .collect();
        want.sort();
        got.sort();
        same(&format!("failures of {path}"), got, want)?;
        let errored = cases.iter().filter(|c| c.0 == path && c.2 == "error").count();
        let want_errors = if f["status"] == "error" { 2 } else { 0 };
        same(&format!("errors of {path}"), errored, want_errors)?;
    }
    text_agrees(&cases, &String::from_utf8_lossy(&plain.stdout), &xml)?;
    Ok(())
}

/// Tables, each a list of rows of cells.
type Tables = Vec<Vec<Vec<String>>>;

/// The rows of every Markdown table in `text` (the header first), each
/// cell unescaped; fails when a row has other than the header's number of
/// cells, or the line under the header is not a delimiter row.
fn tables(text: &str) -> Result<Tables, Failed> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let lines: Vec<&str> = block.lines().filter(|l| l.starts_with('|')).collect();
        if lines.is_empty() {
            continue;
        }
        let rows: Vec<Vec<String>> = lines.iter().map(|l| cells(l)).collect();
        if rows.len() < 2 || !rows[1].iter().all(|c| c == "---" || c == "---:") {
            return Err(format!("not a table: {block}").into());
        }
        for r in &rows {
            if r.len() != rows[0].len() {
                return Err(format!("a row of {} cells, not {}: {r:?}", r.len(), rows[0].len()).into());
            }
        }
        let mut rows = rows;
        rows.remove(1);
        out.push(rows);
    }
    Ok(out)
}

/// The cells of a table row, unescaped (`\|` is a pipe in a cell).
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().strip_prefix('|').and_then(|l| l.strip_suffix('|'));
    let mut cells = vec![String::new()];
    let mut chars = inner.unwrap_or_default().chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => cells.last_mut().unwrap().extend(chars.next()),
            '|' => cells.push(String::new()),
            c => cells.last_mut().unwrap().push(c),
        }
    }
    cells.iter().map(|c| c.trim().to_string()).collect()
}

/// `ARGS --markdown` and `ARGS --json`, run in `cwd`: the tables of the
/// first and the document of the second, the exit codes the same.
fn both(args: &[&str], cwd: &Path) -> Result<(Tables, Value), Failed> {
    let md = run(&ours(), &[args, &["--markdown"]].concat(), cwd);
    let json = run(&ours(), &[args, &["--json"]].concat(), cwd);
    same(&format!("{args:?}: exit codes"), md.code, json.code)?;
    if md.code > 2 || json.code > 2 {
        return Err(format!("{args:?}: {}", md.stderr).into());
    }
    let text = String::from_utf8(md.stdout).map_err(|e| format!("{args:?}: {e}"))?;
    let doc: Value = serde_json::from_slice(&json.stdout)?;
    Ok((tables(&text)?, doc))
}

/// The rows of a table whose first cell is `key`.
fn row<'t>(table: &'t [Vec<String>], key: &str) -> Result<&'t [String], Failed> {
    table
        .iter()
        .find(|r| r[0] == key)
        .map(Vec::as_slice)
        .ok_or_else(|| format!("no row {key}").into())
}

/// A JSON number as the tables print it.
fn n(v: &Value) -> String {
    v.as_u64().map_or_else(|| "-".to_string(), |n| n.to_string())
}

fn markdown_tables_are_well_formed_with_the_json_figures() -> Result<(), Failed> {
    let tmp = tempdir();
    let dir = tmp.path().join("in");
    std::fs::create_dir(&dir)?;
    inputs(&dir)?;
    std::fs::remove_file(dir.join("cut.deb"))?;
    let wd = tmp.path();
    // size: a row per file shown and the total.
    let (t, doc) = both(&["size", "in"], wd)?;
    let files = doc["files"].as_array().ok_or("size: no files")?;
    let mut shown: Vec<&Value> = files.iter().collect();
    shown.extend(doc.get("total").filter(|t| !t.is_null()));
    same("size: rows", t[0].len() - 1, shown.len())?;
    for f in shown {
        let path = printable(f["path"].as_str().unwrap_or_default());
        let r = row(&t[0], &path)?;
        let want = [
            n(&f["file_size"]),
            n(&f["total"]["images"]),
            n(&f["total"]["bytes"]),
            n(&f["total"]["stored"]),
        ];
        same(&format!("size: {path}"), r[1..5].to_vec(), want.to_vec())?;
    }
    // check: a row per input listed, its status and device images.
    let args = ["check", "in", "--require", "gfx90a", "--forbid", "sm_50"];
    let (t, doc) = both(&args, wd)?;
    let rows = &t[t.len() - 1];
    for f in doc["files"].as_array().into_iter().flatten() {
        let path = printable(f["path"].as_str().unwrap_or_default());
        let Ok(r) = row(rows, &path) else {
            if f["status"] == "ok" && f["device_images"] == 0 {
                continue;
            }
            return Err(format!("check: no row for {path}").into());
        };
        let status = match f["status"].as_str() {
            Some("ok") => "ok",
            Some("fail") => "FAIL",
            _ => "ERROR",
        };
        same(
            &format!("check: {path}"),
            [r[1].as_str(), r[2].as_str()],
            [status, n(&f["device_images"]).as_str()],
        )?;
    }
    // inspect: a row per file, and one per device image.
    let (t, doc) = both(&["inspect", "in"], wd)?;
    let files = doc["files"].as_array().ok_or("inspect: no files")?;
    same("inspect: rows", t[0].len() - 1, files.len())?;
    let mut images = 0;
    for f in files {
        let path = printable(f["path"].as_str().unwrap_or_default());
        let r = row(&t[0], &path)?;
        let len = |k: &str| f[k].as_array().map_or(0, Vec::len).to_string();
        let want = [n(&f["size"]), len("containers"), len("images"), len("host_entries"), len("problems")];
        same(&format!("inspect: {path}"), r[2..7].to_vec(), want.to_vec())?;
        images += f["images"].as_array().map_or(0, Vec::len);
    }
    same("inspect: image rows", t[1].len() - 1, images)?;
    // prune --dry-run: the totals, and a row per file.
    let args = ["prune", "--dry-run", "--keep", "gfx90a", "--keep", "sm_80", "--allow-empty", "in"];
    let (t, doc) = both(&args, wd)?;
    let total = &doc["total"];
    let freed = format!(
        "{} bytes",
        total["freed"].as_u64().ok_or("prune: no freed")?
    );
    if !t[0][1][0].starts_with(&freed) {
        return Err(format!("prune: total {:?}, freed {freed}", t[0][1]).into());
    }
    let keys = ["files", "files_removed", "bytes_removed", "found", "without_device_code", "refused", "failed"];
    same(
        "prune: totals",
        t[0][1][1..].to_vec(),
        keys.iter().map(|k| n(&total[*k])).collect::<Vec<_>>(),
    )?;
    for f in doc["files"].as_array().into_iter().flatten() {
        let path = printable(f["path"].as_str().unwrap_or_default());
        let r = row(&t[1], &path)?;
        let removed = f["removed"].as_array().map_or(0, Vec::len).to_string();
        let want = [
            n(&f["containers_rewritten"]),
            removed,
            n(&f["bytes_before"]),
            n(&f["bytes_after"]),
            n(&f["freed"]),
        ];
        same(&format!("prune: {path}"), r[1..6].to_vec(), want.to_vec())?;
    }
    // --markdown with --json: a usage error.
    let both_given = run(&ours(), &["size", "--markdown", "--json", "in"], wd);
    same("--markdown --json", both_given.code, 2)?;
    Ok(())
}


/// The cases against the text report: failures exactly where it says
/// FAIL, errors where it says ERROR (each message among the line's
/// reasons), and the awkward names there, escaped in the XML.
fn text_agrees(cases: &[(String, String, String, String)], text: &str, xml: &[u8]) -> Result<(), Failed> {
    let per_input: BTreeSet<&str> = cases.iter().map(|c| c.0.as_str()).collect();
    // Failures exactly where the text says FAIL, errors where it says
    // ERROR, each message among the line's reasons.
    let lines = |tag: &str| -> BTreeMap<String, String> {
        text.lines()
            .filter_map(|l| l.strip_prefix(tag))
            .filter_map(|l| l.split_once(": "))
            .map(|(p, rest)| (p.to_string(), rest.to_string()))
            .collect()
    };
    let (fail, error) = (lines("FAIL "), lines("ERROR "));
    let failed: BTreeSet<&str> = cases
        .iter()
        .filter(|c| c.2 == "failure")
        .map(|c| c.0.as_str())
        .collect();
    same(
        "inputs that fail",
        failed.clone(),
        fail.keys().map(String::as_str).collect(),
    )?;
    // What concerns all inputs is not judged when one could not be: an
    // error there too, which the text does not print.
    let errored: BTreeSet<&str> = cases
        .iter()
        .filter(|c| c.2 == "error" && c.0 != "(all inputs)")
        .map(|c| c.0.as_str())
        .collect();
    if !cases
        .iter()
        .any(|c| c.0 == "(all inputs)" && c.2 == "error")
    {
        return Err("'device images present' judged with an input in error".into());
    }
    same(
        "inputs in error",
        errored,
        error.keys().map(String::as_str).collect(),
    )?;
    for c in cases.iter().filter(|c| c.2 == "failure") {
        if !fail[&c.0].contains(&c.3) {
            return Err(format!("{}: '{}' is not in its FAIL line", c.0, c.3).into());
        }
    }
    for want in ["in/gfx942 |`pipe`.co", "in/gfx90a <&\"'\\x01.co", "in/odd\\xff.co"] {
        if !per_input.contains(want) {
            return Err(format!("no cases of {want}: {:?}", per_input).into());
        }
    }
    if !failed.contains("in/gfx942 |`pipe`.co") || !failed.iter().any(|p| p.contains(NVJPEG)) {
        return Err(format!("the CUDA wheel and gfx942 should fail: {failed:?}").into());
    }
    if !String::from_utf8_lossy(xml).contains("classname=\"in/gfx90a &lt;&amp;&quot;&apos;\\x01.co\"") {
        return Err("the name with <&\"' is not escaped as expected".into());
    }
    Ok(())
}

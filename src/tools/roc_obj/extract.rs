//! `roc-obj-extract`'s run: copies each URI's range into
//! `<name>-offset<O>-size<S>.co` (in a folder, or to standard output),
//! what the script prints on the way said to the caller.
//!
//! `file://NAME[#|?|,]offset=O&size=S` (the size defaults to the rest of
//! the file; no range is the whole file) and `memory://PID#offset=O&size=S`
//! (`/proc/PID/mem`), read as the script reads them: the name is
//! URI-decoded, an offset or size left out keeps the previous URI's, an
//! unknown attribute is ignored. The script copies with `dd bs=1`: O and S
//! must be what dd reads, decimal numbers. Our URIs of compressed code
//! objects add `&entry-offset=E&entry-size=N`: the CCOB at O (of S bytes) is
//! decompressed and its bytes E..E+N written, to
//! `<name>-offset<O>-size<S>-entry-offset<E>-entry-size<N>.co`.

use std::ffi::OsStr;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::out;
use super::perl::{Die, perl_fmt, perl_num, uri_decode};
use super::said::{Said, Say};
use crate::bundle::ccob::{Ccob, HashCheck, ReadOptions};
use crate::files::strerror;

/// A line on standard error, said as `eprintln!` would print it.
macro_rules! err {
    ($say:expr, $($arg:tt)*) => {
        $say(Said::err(format!($($arg)*)))
    };
}

/// Bytes on standard output.
fn out_bytes(say: &mut Say<'_>, bytes: &[u8]) {
    say(Said::Out(bytes.to_vec()));
}

/// What carries over from one URI to the next (the script's globals).
#[derive(Default)]
struct State {
    offset: Option<String>,
    size: Option<String>,
    pid_running: bool,
    errors: u32,
    verbose: bool,
    /// `-o`: the folder, or `None` for standard output (`-o -`).
    out_dir: Option<String>,
    dd: String,
    /// Where `-o -` output goes when `roc-obj` runs the extraction itself.
    captured: Option<Vec<u8>>,
}

/// What `roc-obj` runs as `roc-obj-extract -o - -- URI`: the bytes the URI
/// names, and whether all went well (the errors are printed).
pub(crate) fn extract_uri(uri: &str, say: &mut Say<'_>) -> (Vec<u8>, bool) {
    let mut st = State {
        out_dir: None,
        dd: dd_path(),
        captured: Some(Vec::new()),
        ..State::default()
    };
    one_uri(&mut st, uri, say);
    (st.captured.take().unwrap_or_default(), st.errors == 0)
}

/// Copies each of `uris` (each without its line's newline) as
/// `roc-obj-extract` does, into the folder `out_dir` (`""`: the current
/// one; `None`: standard output, as `-o -`). Gives how many failed.
pub(crate) fn extract_uris(
    uris: &[String],
    verbose: bool,
    out_dir: Option<String>,
    say: &mut Say<'_>,
) -> u32 {
    let mut st = State {
        verbose,
        out_dir,
        dd: dd_path(),
        ..State::default()
    };
    for uri in uris {
        let uri = uri.strip_suffix('\n').unwrap_or(uri);
        one_uri(&mut st, uri, say);
    }
    st.errors
}

/// `-o DIR`: the script's `die` when `dir` is not a folder.
pub(crate) fn check_folder(dir: &str) -> Result<(), Die> {
    std::fs::metadata(dir)
        .and_then(|m| {
            if m.is_dir() {
                Ok(())
            } else {
                Err(std::io::Error::other("not a folder"))
            }
        })
        .map_err(|e| Die::errno(format!("Error: Path '{dir}' cannot be found.\n"), &e))
}

/// The `dd` the script would run (its path is in `-v`'s messages).
fn dd_path() -> String {
    super::perl::which("dd").map_or_else(|| "dd".to_string(), |p| p.display().to_string())
}

/// Perl's `split(/PATTERN/, ...)` fields, trailing empty ones dropped.
fn split_fields<'a>(s: &'a str, sep: &dyn Fn(&'a str) -> Vec<&'a str>) -> Vec<&'a str> {
    let mut fields = sep(s);
    while fields.last() == Some(&"") {
        fields.pop();
    }
    fields
}

/// The source of one URI: the name to print, the file to read, the output
/// name's stem, the range text, whether it is a file (not memory) URI.
struct Source {
    shown: String,
    path: Vec<u8>,
    stem: String,
    /// The output file names' start: `stem` without its folder.
    base: String,
    range: Option<String>,
    is_file: bool,
}

fn one_uri(st: &mut State, uri: &str, say: &mut Say<'_>) {
    let parts = split_fields(uri, &|s| s.split("://").collect());
    let protocol = parts.first().copied().unwrap_or("");
    let specs = parts.get(1).copied().unwrap_or("");
    let fields = split_fields(specs, &|s| s.split(['#', ',', '?']).collect());
    let target = fields.first().copied().unwrap_or("");
    let range = fields.get(1).map(|r| r.to_string());
    let source = match protocol.to_lowercase().as_str() {
        "file" => {
            let path = uri_decode(target);
            if !Path::new(OsStr::from_bytes(&path)).exists() {
                err!(
                    say,
                    "Error: can't find file: {}",
                    String::from_utf8_lossy(&path)
                );
                st.errors += 1;
                return;
            }
            let base = super::perl::basename(&String::from_utf8_lossy(&path));
            let stem = match &st.out_dir {
                Some(dir) if !dir.is_empty() => catfile(dir, &base),
                Some(_) => base.clone(),
                None => format!("-/{base}"),
            };
            Source {
                shown: target.to_string(),
                path,
                stem,
                base,
                range,
                is_file: true,
            }
        }
        "memory" => {
            let running = !target.is_empty()
                && target.bytes().all(|b| b.is_ascii_digit())
                && Path::new(&format!("/proc/{target}")).exists();
            st.pid_running = running;
            if !running {
                err!(say, "Error: PID: {target} is NOT running");
                st.errors += 1;
                return;
            }
            let mem = format!("/proc/{target}/mem");
            Source {
                shown: mem.clone(),
                path: mem.into_bytes(),
                stem: format!("pid{target}"),
                base: format!("pid{target}"),
                range,
                is_file: false,
            }
        }
        _ => {
            err!(
                say,
                "Error: '{protocol}' is not recognized as a supported code object URI."
            );
            st.errors += 1;
            return;
        }
    };
    copy_range(st, uri, &source, say);
}

/// `-s`: the size, `""` for an empty or missing file.
fn size_text(path: &[u8]) -> String {
    match std::fs::metadata(OsStr::from_bytes(path)) {
        Ok(m) if m.len() > 0 => m.len().to_string(),
        _ => String::new(),
    }
}

/// A compressed code object's entry range (`entry-offset`, `entry-size`).
#[derive(Default)]
struct Entry {
    offset: Option<String>,
    size: Option<String>,
}

fn copy_range(st: &mut State, uri: &str, src: &Source, say: &mut Say<'_>) {
    let mut entry = Entry::default();
    match src.range.as_deref().filter(|r| !r.is_empty()) {
        Some(range) => {
            let mut size_given = false;
            for token in range.split('&') {
                let mut kv = token.splitn(3, '=');
                let key = kv.next().unwrap_or("");
                let value = kv.next().map(str::to_string);
                match key {
                    "size" => {
                        st.size = value;
                        size_given = true;
                    }
                    "offset" => st.offset = value,
                    "entry-offset" => entry.offset = value,
                    "entry-size" => entry.size = value,
                    _ => {}
                }
            }
            if !size_given {
                let total = perl_num(&size_text(&src.path));
                st.size = Some(perl_fmt(
                    total - perl_num(st.offset.as_deref().unwrap_or("")),
                ));
            }
        }
        None => {
            if st.pid_running {
                err!(
                    say,
                    "Error: must specify a Range Specifier (offset and size) for a memory URI: {uri}"
                );
                st.errors += 1;
                return;
            }
            st.offset = Some("0".to_string());
            st.size = Some(size_text(&src.path));
        }
    }
    let offset = st.offset.clone().unwrap_or_default();
    let size = st.size.clone().unwrap_or_default();
    if perl_num(&size) == 0.0 {
        if st.verbose {
            out_bytes(
                say,
                format!(
                    "Warning: trying to extract from {} at offset={offset} with size=0.  Nothing to extract.\n",
                    src.shown
                )
                .as_bytes(),
            );
        }
        return;
    }
    if st.verbose {
        out_bytes(
            say,
            format!("Reading input file \"{}\" ...\n", src.shown).as_bytes(),
        );
    }
    if src.is_file {
        let file_size = size_text(&src.path);
        let want = perl_num(&offset).trunc() + perl_num(&size).trunc();
        if want > perl_num(&file_size) {
            err!(
                say,
                "Error: requested offset({offset}) + size({size}) exceeds file size({file_size}) for file \"{}\".",
                String::from_utf8_lossy(&src.path)
            );
            st.errors += 1;
            return;
        }
    }
    if entry.offset.is_some() || entry.size.is_some() {
        copy_entry(st, src, (&offset, &size), &entry, say);
    } else {
        copy_plain(st, src, (&offset, &size), say);
    }
    if st.verbose {
        out_bytes(
            say,
            format!(
                "Extract request:  file: {} offset: {offset} size: {size}\n",
                src.shown
            )
            .as_bytes(),
        );
    }
}

/// A number as dd reads it (decimal digits only, here).
fn dd_number(text: &str) -> Option<u64> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// dd's quotes around a value: typographic ones in a UTF-8 locale.
fn dd_quote(text: &str) -> String {
    let locale = ["LC_ALL", "LC_MESSAGES", "LANG"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
        .unwrap_or_default()
        .to_ascii_lowercase();
    if locale.contains("utf-8") || locale.contains("utf8") {
        format!("\u{2018}{text}\u{2019}")
    } else {
        format!("'{text}'")
    }
}

/// The script's `dd bs=1` copy of `size` bytes at `offset`.
fn copy_plain(st: &mut State, src: &Source, (offset, size): (&str, &str), say: &mut Say<'_>) {
    let shown_path = String::from_utf8_lossy(&src.path).into_owned();
    let of = match st.out_dir {
        Some(_) => format!("of='{}-offset{offset}-size{size}.co'", src.stem),
        None => String::new(),
    };
    let name = format!("{}-offset{offset}-size{size}.co", src.base);
    let command = format!(
        "{} if='{shown_path}' {of} skip={offset} count={size} bs=1 status=none",
        st.dd
    );
    if st.verbose {
        out_bytes(say, format!("DD Command: {command}\n").as_bytes());
    }
    let failed = |st: &mut State, say: &mut Say<'_>, why: String| {
        err!(say, "{}: {why}", st.dd);
        err!(say, "Error: DD command ({command})  failed with RC: 256");
        st.errors += 1;
    };
    let (Some(skip), Some(count)) = (dd_number(offset), dd_number(size)) else {
        let bad = if dd_number(offset).is_none() {
            offset
        } else {
            size
        };
        failed(st, say, format!("invalid number: {}", dd_quote(bad)));
        return;
    };
    match read_range(&src.path, skip, count) {
        Ok(bytes) => write_out(st, (&of, &name), &bytes, &command, say),
        Err(e) => failed(
            st,
            say,
            format!("error reading '{shown_path}': {}", strerror(&e)),
        ),
    }
}

/// Up to `count` bytes of the file `path` from `skip` on (fewer at its end).
fn read_range(path: &[u8], skip: u64, count: u64) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(OsStr::from_bytes(path))?;
    f.seek(SeekFrom::Start(skip))?;
    let mut buf = Vec::new();
    f.take(count).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Writes what was read: to the file `name` in the output folder (the
/// path `of='…'` shows, as the script's dd names it; only inside the
/// folder, never through a link: [`out::write_in`]), or to standard
/// output.
fn write_out(
    st: &mut State,
    (of, name): (&str, &str),
    bytes: &[u8],
    command: &str,
    say: &mut Say<'_>,
) {
    let (Some(shown), Some(dir)) = (
        of.strip_prefix("of='").and_then(|s| s.strip_suffix('\'')),
        st.out_dir.as_deref(),
    ) else {
        match &mut st.captured {
            Some(buf) => buf.extend_from_slice(bytes),
            None => out_bytes(say, bytes),
        }
        return;
    };
    if let Err(e) = out::write_in(dir, &out::file_name(name.as_bytes()), bytes) {
        err!(say, "{}: failed to open '{shown}': {}", st.dd, strerror(&e));
        err!(say, "Error: DD command ({command})  failed with RC: 256");
        st.errors += 1;
    }
}

/// Our extension: entry bytes of the compressed bundle at `offset`.
fn copy_entry(
    st: &mut State,
    src: &Source,
    (offset, size): (&str, &str),
    entry: &Entry,
    say: &mut Say<'_>,
) {
    let eo = entry.offset.clone().unwrap_or_else(|| "0".to_string());
    let es = entry.size.clone().unwrap_or_default();
    let name = format!(
        "{}-offset{offset}-size{size}-entry-offset{eo}-entry-size{es}.co",
        src.base
    );
    let of = match st.out_dir {
        Some(_) => format!(
            "of='{}-offset{offset}-size{size}-entry-offset{eo}-entry-size{es}.co'",
            src.stem
        ),
        None => String::new(),
    };
    match entry_bytes(src, offset, size, &eo, &es) {
        Ok(bytes) => write_out(st, (&of, &name), &bytes, "decompress", say),
        Err(why) => {
            err!(say, "Error: {why}");
            st.errors += 1;
        }
    }
}

fn entry_bytes(
    src: &Source,
    offset: &str,
    size: &str,
    eo: &str,
    es: &str,
) -> Result<Vec<u8>, String> {
    let number = |t: &str, what: &str| {
        dd_number(t).ok_or_else(|| format!("{what} '{t}' is not a decimal number"))
    };
    let (skip, count, eo) = (
        number(offset, "offset")?,
        number(size, "size")?,
        number(eo, "entry-offset")?,
    );
    let path = String::from_utf8_lossy(&src.path).into_owned();
    // Only the CCOB's bytes are read (the range was checked against the
    // file's size).
    let ccob =
        read_range(&src.path, skip, count).map_err(|e| format!("'{path}': {}", strerror(&e)))?;
    let ccob = ccob.as_slice();
    let opts = ReadOptions {
        hash: HashCheck::Skip,
        ..ReadOptions::default()
    };
    let plain = Ccob::parse(ccob)
        .and_then(|c| c.decompress(&opts))
        .map_err(|e| format!("'{path}': compressed bundle at offset {skip}: {e}"))?;
    let total = crate::num::len64(&plain.data);
    let es = if es.is_empty() {
        total.saturating_sub(eo)
    } else {
        number(es, "entry-size")?
    };
    usize::try_from(eo)
        .ok()
        .zip(usize::try_from(es).ok())
        .and_then(|(o, n)| plain.data.get(o..o.checked_add(n)?))
        .map(<[u8]>::to_vec)
        .ok_or_else(|| {
            format!("'{path}': entry-offset {eo} + entry-size {es} is past the end of the {total} decompressed bytes")
        })
}

/// File::Spec's `canonpath` on Unix: repeated slashes and `.` parts dropped,
/// a leading `./` and a trailing slash too.
fn canonpath(path: &str) -> String {
    let mut p = path.to_string();
    while p.contains("//") {
        p = p.replace("//", "/");
    }
    loop {
        let before = p.clone();
        p = p.replace("/./", "/");
        if p.ends_with("/.") {
            p.truncate(p.len() - 1);
        }
        if p == before {
            break;
        }
    }
    if p != "./" {
        while let Some(rest) = p.strip_prefix("./") {
            p = rest.to_string();
        }
    }
    if let Some(rest) = p.strip_prefix("/../") {
        let mut rest = rest;
        while let Some(r) = rest.strip_prefix("../") {
            rest = r;
        }
        p = format!("/{rest}");
    }
    if p == "/.." {
        p = "/".to_string();
    }
    if p != "/" && p.ends_with('/') {
        p.pop();
    }
    p
}

/// File::Spec's `catfile(dir, file)`.
fn catfile(dir: &str, file: &str) -> String {
    let dir = canonpath(&format!("{dir}/"));
    let file = canonpath(file);
    if dir.ends_with('/') {
        format!("{dir}{file}")
    } else {
        format!("{dir}/{file}")
    }
}

#[cfg(test)]
pub(super) fn test_canonpath(p: &str) -> String {
    canonpath(p)
}

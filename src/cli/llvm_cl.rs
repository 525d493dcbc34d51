//! A small parser for LLVM `cl` command lines, for the drop-in front ends.
//!
//! clap cannot take LLVM's conventions: long options with one dash or two
//! (`-type=o`, `--type o`), `=value` or a separate value, `@file` response
//! files, bare boolean flags that also take `=true`/`=0`. The messages for
//! bad command lines follow LLVM's wording, since scripts match them.

use std::fmt::Write as _;

/// What an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// A boolean flag (`-x`, `-x=true`, `-x=0`).
    Flag,
    /// A value (`-x v`, `-x=v`).
    Value,
}

/// One option the tool accepts.
#[derive(Debug, Clone, Copy)]
pub struct OptSpec {
    /// Its name, without dashes.
    pub name: &'static str,
    /// What it takes.
    pub takes: Takes,
    /// Left out of "did you mean" suggestions.
    pub hidden: bool,
}

impl OptSpec {
    /// A visible flag.
    pub const fn flag(name: &'static str) -> OptSpec {
        OptSpec {
            name,
            takes: Takes::Flag,
            hidden: false,
        }
    }
    /// A visible option with a value.
    pub const fn value(name: &'static str) -> OptSpec {
        OptSpec {
            name,
            takes: Takes::Value,
            hidden: false,
        }
    }
    /// A hidden flag.
    pub const fn hidden_flag(name: &'static str) -> OptSpec {
        OptSpec {
            name,
            takes: Takes::Flag,
            hidden: true,
        }
    }
}

/// A parsed command line.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Options in command-line order: the option's name and its value
    /// (`"true"`/`"false"` for flags).
    pub opts: Vec<(&'static str, String)>,
    /// Positional arguments.
    pub positionals: Vec<String>,
}

impl Parsed {
    /// The last value of option `name`.
    pub fn last(&self, name: &str) -> Option<&str> {
        self.opts
            .iter()
            .rev()
            .find(|o| o.0 == name)
            .map(|o| o.1.as_str())
    }
    /// Every value of option `name`, in order.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.opts
            .iter()
            .filter(move |o| o.0 == name)
            .map(|o| o.1.as_str())
    }
    /// Whether flag `name` is set (its last occurrence says true).
    pub fn flag(&self, name: &str) -> bool {
        self.last(name) == Some("true")
    }
}

/// The dashes LLVM prints before an option name.
pub fn dashed(name: &str) -> String {
    if name.chars().count() == 1 {
        format!("-{name}")
    } else {
        format!("--{name}")
    }
}

/// Parses `args` (without argv[0]). `prog` is the program's base name, used
/// as the message prefix; `argv0` as typed, used in the "Try:" hint. Once
/// the whole line is read, as LLVM does, each option in `required` that did
/// not occur is an error. On error returns the lines to print on stderr
/// (exit code 1).
pub fn parse(
    prog: &str,
    argv0: &str,
    args: &[String],
    specs: &[OptSpec],
    max_positionals: usize,
    required: &[&str],
) -> Result<Parsed, Vec<String>> {
    let mut left = Expansion {
        bytes: crate::limits::MAX_ARGUMENT_BYTES,
        args: crate::limits::MAX_ARGUMENTS,
    };
    let args =
        expand_response_files(args, 0, &mut left).map_err(|e| vec![format!("{prog}: {e}")])?;
    let mut parsed = Parsed::default();
    let mut errors = Vec::new();
    let mut i = 0;
    let mut only_positional = false;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if only_positional || arg == "-" || !arg.starts_with('-') {
            if max_positionals == 0 {
                // A tool without positional options takes a bare word as an
                // option it does not know, and suggests nothing.
                errors.push(format!(
                    "{prog}: Unknown command line argument '{arg}'.  Try: '{argv0} --help'"
                ));
            } else {
                parsed.positionals.push(arg.clone());
            }
            continue;
        }
        if arg == "--" {
            only_positional = true;
            continue;
        }
        let body = arg.strip_prefix("--").unwrap_or(&arg[1..]);
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let Some(spec) = specs.iter().find(|s| s.name == name) else {
            errors.push(format!(
                "{prog}: Unknown command line argument '{arg}'.  Try: '{argv0} --help'"
            ));
            if let Some(near) = nearest(name, specs) {
                // LLVM keeps the value: `--imag=x` gets `--image=x`.
                let value = inline.map(|v| format!("={v}")).unwrap_or_default();
                errors.push(format!("{prog}: Did you mean '{}{value}'?", dashed(near)));
            }
            continue;
        };
        match option_value(spec, inline, &args, &mut i) {
            Ok(v) => parsed.opts.push((spec.name, v)),
            Err(e) => errors.push(e.line(prog, spec)),
        }
    }
    finish(prog, argv0, parsed, errors, max_positionals, required)
}

/// Why an option has no value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum NoValue<'a> {
    /// A flag given a value that is no boolean.
    NotBoolean(&'a str),
    /// An option that takes a value, last on the line without one.
    Missing,
}

impl NoValue<'_> {
    /// The error line, as LLVM words it, for option `spec` of `prog`.
    fn line(&self, prog: &str, spec: &OptSpec) -> String {
        let option = dashed(spec.name);
        match self {
            NoValue::NotBoolean(v) => format!(
                "{prog}: for the {option} option: '{v}' is invalid value for boolean argument! Try 0 or 1"
            ),
            NoValue::Missing => format!("{prog}: for the {option} option: requires a value!"),
        }
    }
}

/// The value of option `spec`: `inline` (after `=`), else `true` for a
/// flag, else the next argument (at `*i`, which it then moves past); an
/// error where a value option has none or a flag's is no boolean.
fn option_value<'a>(
    spec: &OptSpec,
    inline: Option<&'a str>,
    args: &[String],
    i: &mut usize,
) -> Result<String, NoValue<'a>> {
    match spec.takes {
        Takes::Flag => match inline {
            None | Some("true" | "TRUE" | "True" | "1") => Ok("true".to_string()),
            Some("false" | "FALSE" | "False" | "0") => Ok("false".to_string()),
            Some(v) => Err(NoValue::NotBoolean(v)),
        },
        Takes::Value => match inline {
            Some(v) => Ok(v.to_string()),
            None if *i < args.len() => {
                *i += 1;
                Ok(args[*i - 1].clone())
            }
            None => Err(NoValue::Missing),
        },
    }
}

/// The checks once the whole line is read: too many positional arguments;
/// then, unless `--help` or `--version` acts (as soon as LLVM sees them),
/// each option in `required` that did not occur.
fn finish(
    prog: &str,
    argv0: &str,
    parsed: Parsed,
    mut errors: Vec<String>,
    max_positionals: usize,
    required: &[&str],
) -> Result<Parsed, Vec<String>> {
    if parsed.positionals.len() > max_positionals {
        let mut m = format!("{prog}: Too many positional arguments specified!\n");
        let _ = write!(
            m,
            "Can specify at most {max_positionals} positional arguments: See: {argv0} --help"
        );
        errors.push(m);
    }
    // `--help` and `--version` act as soon as LLVM sees them, before the
    // checks for required options.
    let acts_now = [
        "help",
        "help-list",
        "help-hidden",
        "help-list-hidden",
        "version",
    ];
    if errors.is_empty() && parsed.opts.iter().any(|o| acts_now.contains(&o.0)) {
        return Ok(parsed);
    }
    for r in required {
        if !parsed.opts.iter().any(|o| o.0 == *r) {
            errors.push(format!(
                "{prog}: for the {} option: must be specified at least once!",
                dashed(r)
            ));
        }
    }
    if errors.is_empty() {
        Ok(parsed)
    } else {
        Err(errors)
    }
}

/// The visible option closest to `name` by edit distance. LLVM breaks ties
/// by its option table's hash order, which we cannot see; the longer name
/// matches what it picks in the cases we checked (`-bogus` → `--inputs`).
fn nearest(name: &str, specs: &[OptSpec]) -> Option<&'static str> {
    let mut best: Option<(usize, &'static str)> = None;
    for s in specs.iter().filter(|s| !s.hidden) {
        let d = edit_distance(name, s.name);
        if best.is_none_or(|(bd, bn)| d < bd || (d == bd && s.name.len() > bn.len())) {
            best = Some((d, s.name));
        }
    }
    best.map(|b| b.1)
}

/// Levenshtein distance with substitutions.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for j in 1..=b.len() {
            let cur = row[j];
            row[j] = (row[j] + 1)
                .min(row[j - 1] + 1)
                .min(prev + usize::from(ca != b[j - 1]));
            prev = cur;
        }
    }
    row[b.len()]
}

/// What response files may still add to a command line.
struct Expansion {
    /// Bytes of text read.
    bytes: u64,
    /// Arguments.
    args: usize,
}

/// Replaces each `@file` argument with the arguments in that file, split the
/// way a GNU shell would (quotes and backslashes), recursively. An unreadable
/// file leaves the argument as it is, as LLVM does. The files read, and
/// the arguments they give, all together, must stay within `left`
/// ([`MAX_ARGUMENT_BYTES`](crate::limits::MAX_ARGUMENT_BYTES),
/// [`MAX_ARGUMENTS`](crate::limits::MAX_ARGUMENTS)); past that the error
/// says which file went over.
fn expand_response_files(
    args: &[String],
    depth: usize,
    left: &mut Expansion,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for a in args {
        let Some(path) = a.strip_prefix('@').filter(|_| depth < 20) else {
            out.push(a.clone());
            continue;
        };
        let text = match read_response_file(path, left.bytes) {
            Ok(Some(text)) => text,
            Ok(None) => {
                let max = crate::limits::MAX_ARGUMENT_BYTES >> 20;
                return Err(format!(
                    "response file '{path}': the response files of this command line give more \
                     than {max} MiB (the most read)"
                ));
            }
            Err(_) => {
                out.push(a.clone());
                continue;
            }
        };
        left.bytes -= text.len() as u64;
        let words = tokenize_gnu(&text);
        drop(text);
        if words.len() > left.args {
            let max = crate::limits::MAX_ARGUMENTS;
            return Err(format!(
                "response file '{path}': the response files of this command line give more than \
                 {max} arguments (the most read)"
            ));
        }
        left.args -= words.len();
        out.extend(expand_response_files(&words, depth + 1, left)?);
    }
    Ok(out)
}

/// A response file's text, opened as inputs are (a FIFO is an error, not a
/// wait; a device is read with a bound, `/dev/null` is empty); `None` when
/// it is over `max` bytes.
fn read_response_file(path: &str, max: u64) -> std::io::Result<Option<String>> {
    let input = super::io::Input::open(path)?;
    if input.bytes().len() as u64 > max {
        return Ok(None);
    }
    String::from_utf8(input.bytes().to_vec())
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Splits `s` into arguments: white space separates, `'…'` and `"…"` quote,
/// backslash escapes the next character (inside double quotes, only `\`, `"`
/// and newline).
pub fn tokenize_gnu(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut has = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if has {
                    out.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                has = true;
            }
            '\'' => {
                has = true;
                for n in chars.by_ref() {
                    if n == '\'' {
                        break;
                    }
                    cur.push(n);
                }
            }
            '"' => {
                has = true;
                while let Some(n) = chars.next() {
                    match n {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '\n')) => {
                            cur.push(chars.next().unwrap_or('\\'));
                        }
                        _ => cur.push(n),
                    }
                }
            }
            _ => {
                cur.push(c);
                has = true;
            }
        }
    }
    if has {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[OptSpec] = &[
        OptSpec::value("o"),
        OptSpec::value("image"),
        OptSpec::flag("archive"),
    ];

    fn p(args: &[&str]) -> Result<Parsed, Vec<String>> {
        let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse("tool", "./tool", &v, SPECS, 1, &[])
    }

    #[test]
    fn dash_and_value_forms() {
        let r = p(&[
            "-o",
            "a",
            "--o=b",
            "-image",
            "x",
            "--image=y",
            "-archive=0",
            "in",
        ])
        .unwrap();
        assert_eq!(r.last("o"), Some("b"));
        assert_eq!(r.all("image").collect::<Vec<_>>(), ["x", "y"]);
        assert!(!r.flag("archive"));
        assert_eq!(r.positionals, ["in"]);
    }

    #[test]
    fn llvm_error_texts() {
        let e = p(&["--bogus"]).unwrap_err();
        assert_eq!(
            e[0],
            "tool: Unknown command line argument '--bogus'.  Try: './tool --help'"
        );
        assert_eq!(e[1], "tool: Did you mean '-o'?");
        assert_eq!(
            p(&["-o"]).unwrap_err()[0],
            "tool: for the -o option: requires a value!"
        );
        assert_eq!(
            p(&["--archive=foo"]).unwrap_err()[0],
            "tool: for the --archive option: 'foo' is invalid value for boolean argument! Try 0 or 1"
        );
        assert!(p(&["a", "b"]).unwrap_err()[0].starts_with("tool: Too many positional"));
        // The suggestion keeps the value, as LLVM's does.
        let e = p(&["--imag=file=x"]).unwrap_err();
        assert_eq!(e[1], "tool: Did you mean '--image=file=x'?");
    }

    #[test]
    fn a_tool_without_positionals_calls_them_unknown() {
        let v: Vec<String> = ["-o", "x", "foo", "--bogus"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let e = parse("tool", "./tool", &v, SPECS, 0, &[]).unwrap_err();
        assert_eq!(
            e[0],
            "tool: Unknown command line argument 'foo'.  Try: './tool --help'"
        );
        assert!(e[1].starts_with("tool: Unknown command line argument '--bogus'"));
        assert_eq!(e.len(), 3, "foo gets no suggestion, --bogus one: {e:?}");
    }

    #[test]
    fn gnu_tokenizer() {
        assert_eq!(
            tokenize_gnu(r#"a 'b c' "d \"e\"" f\ g"#),
            ["a", "b c", "d \"e\"", "f g"]
        );
    }
}

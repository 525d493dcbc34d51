//! nvprune 11.8's command line, as it reads it: options with one dash
//! (`-arch`, `-gencode`, `-o`, `-v`, `-h`, `-V`) or two (`--arch`,
//! `--generate-code`, `--output-file`, …), values after `=` or as the next
//! argument; `-gencode`'s `keyword=value` lists; and the order in which it
//! checks: the options as they come (unknown ones, missing values, an
//! option given again with another value: a warning, the last one used),
//! then help or version, one input, exactly one of `-arch` and `-gencode`,
//! the architectures named, `-o`.

use std::process::ExitCode;

use crate::tools::nvprune::{Args, Code};

/// Prints `nvprune fatal   : MESSAGE` and gives exit code 1.
pub(super) fn fatal(prog: &str, message: &str) -> ExitCode {
    eprintln!("{prog} fatal   : {message}");
    ExitCode::FAILURE
}

/// Prints `nvprune warning : MESSAGE`.
pub(super) fn warning(prog: &str, message: &str) {
    eprintln!("{prog} warning : {message}");
}

/// The options: long name, short name, whether a value follows.
const SPECS: &[(&str, &str, bool)] = &[
    ("arch", "arch", true),
    ("generate-code", "gencode", true),
    ("help", "h", false),
    ("no-relocatable-elf", "no-relocatable-elf", false),
    ("output-file", "o", true),
    ("verbose", "v", false),
    ("version", "V", false),
];

/// The SMs nvprune 11.8 knows, for `sm_`, `compute_` and `lto_` alike.
const KNOWN_SMS: &[u32] = &[
    35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90,
];

/// Our usage text: the same options as nvprune's, said in our words.
fn help(prog: &str) -> String {
    let lines = [
        (
            "--arch <gpu architecture name>",
            "-arch",
            "Keep this architecture's code: sm_XX its cubins, compute_XX its PTX.",
        ),
        (
            "--generate-code",
            "-gencode",
            "Keep the 'code' values of an nvcc-style specification, arch=compute_XX,code=[sm_XX,compute_XX] (the 'arch' value is not used); may be given several times.",
        ),
        ("--help", "-h", "Print this text."),
        (
            "--no-relocatable-elf",
            "-no-relocatable-elf",
            "Accepted; no effect.",
        ),
        ("--output-file <file>", "-o", "Write the pruned file here."),
        (
            "--verbose",
            "-v",
            "Name each object and archive member pruned.",
        ),
        ("--version", "-V", "Print the version."),
    ];
    let mut s = format!(
        "\nUsage  : {prog} [options] <object>\n\n\
         Keeps only the CUDA code of the architectures named in a relocatable object or a\n\
         static archive (offload-kit also prunes shared libraries, programs and wheels, as\n\
         `offload-kit prune --keep` does).\n\nOptions\n=======\n\n"
    );
    for (long, short, text) in lines {
        s.push_str(&format!("{long:<31} ({short})\n        {text}\n\n"));
    }
    s
}

/// Our version text.
fn version(prog: &str) -> String {
    format!(
        "{prog}: offload-kit {}, NVIDIA nvprune 11.8's command line\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// What the options said, as read in order.
#[derive(Default)]
struct Given {
    arch: Option<String>,
    gencode: Vec<String>,
    gencode_given: bool,
    output: Option<String>,
    verbose: bool,
    help: bool,
    version: bool,
    inputs: Vec<String>,
}

/// Sets an option that takes one value: a different value given again
/// warns, and the last is used.
fn set(prog: &str, slot: &mut Option<String>, long: &str, value: String) {
    if slot.as_ref().is_some_and(|v| *v != value) {
        warning(
            prog,
            &format!(
                "incompatible redefinition for option '{long}', the last value of this option was used"
            ),
        );
    }
    *slot = Some(value);
}

/// Reads the arguments in order, warning as nvprune does; `Err`: the
/// message of the first mistake.
fn read(prog: &str, args: &[String]) -> Result<Given, String> {
    let mut g = Given::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let Some(body) = a.strip_prefix('-').filter(|b| !b.is_empty()) else {
            g.inputs.push(a.clone());
            continue;
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let spec = SPECS
            .iter()
            .find(|(long, short, _)| match name.strip_prefix('-') {
                Some(long_name) => *long == long_name,
                None => *short == name,
            });
        let Some(&(long, short, takes)) = spec else {
            return Err(format!("Unknown option '{body}'"));
        };
        let value = match (takes, inline) {
            (true, Some(v)) => Some(v),
            (true, None) => {
                let v = args
                    .get(i)
                    .ok_or_else(|| format!("argument expected after '-{short}'"))?;
                i += 1;
                Some(v.clone())
            }
            (false, Some(_)) => return Err(format!("no argument expected after '-{short}'")),
            (false, None) => None,
        };
        let value = value.unwrap_or_default();
        match short {
            "arch" => set(prog, &mut g.arch, long, value),
            "gencode" => {
                g.gencode_given = true;
                g.gencode.extend(gencode_codes(&value)?);
            }
            "o" => set(prog, &mut g.output, long, value),
            "v" => g.verbose = true,
            "h" => g.help = true,
            "V" => g.version = true,
            _ => {}
        }
    }
    Ok(g)
}

/// The `code` values of a `-gencode` specification: `keyword=value`
/// items separated by commas, where `[...]` and `"..."` group (their
/// commas are the value's) and are then dropped.
fn gencode_codes(spec: &str) -> Result<Vec<String>, String> {
    let mut items = vec![String::new()];
    let (mut bracket, mut quote) = (false, false);
    for c in spec.trim_end().chars() {
        match c {
            '[' if !quote && !bracket => bracket = true,
            ']' if bracket => bracket = false,
            '"' => quote = !quote,
            ',' if !bracket && !quote => items.push(String::new()),
            _ => {
                if let Some(s) = items.last_mut() {
                    s.push(c);
                }
            }
        }
    }
    if bracket {
        return Err("Stray '[' character".into());
    }
    if quote {
        return Err("Stray '\"' character".into());
    }
    let mut code: Option<String> = None;
    let mut arch_seen = false;
    for item in items.iter().filter(|i| !i.is_empty()) {
        let Some((key, value)) = item.split_once('=') else {
            return Err(format!("'{item}' is not in 'keyword=value' format"));
        };
        let seen = match key {
            "code" => code.is_some(),
            "arch" => arch_seen,
            _ => {
                return Err(format!(
                    "Keyword '{key}' is not defined for option 'generate-code'"
                ));
            }
        };
        if seen {
            return Err(format!("redefinition of keyword '{key}' "));
        }
        match key {
            "code" => code = Some(value.to_string()),
            _ => arch_seen = true,
        }
    }
    Ok(code
        .map(|c| c.split(',').map(str::to_string).collect())
        .unwrap_or_default())
}

/// What `name` keeps, or nvprune's message for a name it does not know:
/// "Unsupported" for `sm_`, `compute_` or `lto_` and a digit, "Unknown"
/// for the rest.
fn code(name: &str) -> Result<Code, String> {
    for (prefix, ptx) in [("sm_", false), ("compute_", true), ("lto_", true)] {
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        if !rest.starts_with(|c: char| c.is_ascii_digit()) {
            break;
        }
        let known = rest
            .parse::<u32>()
            .ok()
            .filter(|n| KNOWN_SMS.contains(n) && rest == n.to_string());
        return match known {
            Some(n) => Ok(Code {
                arch: format!("sm_{n}"),
                ptx,
            }),
            None => Err(format!("Unsupported gpu architecture '{name}'")),
        };
    }
    Err(format!("Unknown arch name '{name}'"))
}

/// Parses the command line; `Err` holds the exit code when the run is
/// over (help, version, or a mistake already reported).
pub(super) fn parse(prog: &str, args: &[String]) -> Result<Args, ExitCode> {
    let g = read(prog, args).map_err(|m| fatal(prog, &m))?;
    if g.help || (!g.version && g.inputs.len() != 1) {
        print!("{}", help(prog));
        return Err(ExitCode::SUCCESS);
    }
    if g.version {
        print!("{}", version(prog));
        return Err(ExitCode::SUCCESS);
    }
    let names: Vec<String> = match (&g.arch, g.gencode.is_empty()) {
        (Some(a), true) if !g.gencode_given => vec![a.clone()],
        (None, false) => g.gencode.clone(),
        _ => return Err(fatal(prog, "Either -arch or -gencode must be specified")),
    };
    let keep = names
        .iter()
        .map(|n| code(n))
        .collect::<Result<Vec<Code>, String>>()
        .map_err(|m| fatal(prog, &m))?;
    let Some(output) = g.output else {
        return Err(fatal(prog, "Must specify output file with -o option"));
    };
    Ok(Args {
        keep,
        output,
        input: g.inputs.into_iter().next().unwrap_or_default(),
        verbose: g.verbose,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_archs() {
        assert_eq!(
            code("compute_80"),
            Ok(Code {
                arch: "sm_80".into(),
                ptx: true
            })
        );
        assert!(code("sm_90a").unwrap_err().starts_with("Unsupported"));
        assert!(code("sm_080").unwrap_err().starts_with("Unsupported"));
        assert!(code("sm_xx").unwrap_err().starts_with("Unknown"));
        assert!(code("").unwrap_err().starts_with("Unknown"));
    }

    #[test]
    fn gencode_specifications() {
        let codes = |s: &str| gencode_codes(s);
        assert_eq!(
            codes("arch=compute_75,code=[sm_75,compute_75]"),
            Ok(vec!["sm_75".to_string(), "compute_75".into()])
        );
        assert_eq!(codes("code=\"sm_80\","), Ok(vec!["sm_80".to_string()]));
        assert_eq!(codes("code=[sm_80]x"), Ok(vec!["sm_80x".to_string()]));
        assert_eq!(codes("arch=compute_80"), Ok(vec![]));
        assert_eq!(codes("code=[]"), Ok(vec![String::new()]));
        assert!(codes("code=[sm_80").unwrap_err().contains("Stray '['"));
        assert!(codes("code=a,code=b").unwrap_err().contains("redefinition"));
        assert!(codes("foo=1").unwrap_err().contains("Keyword 'foo'"));
        assert!(codes("code").unwrap_err().contains("keyword=value"));
    }
}

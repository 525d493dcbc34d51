//! `cuobjdump`'s command line, read as NVIDIA's option parser reads it
//! (measured on cuobjdump 13.5): `-short` and `--long` names only (a long
//! name after one dash, or a short one after two, is unknown), a value
//! after `=` or as the next argument (whatever it looks like), list values
//! split at commas and gathered over repeats, the whole line checked before
//! anything else is done, and `-h` before `-V`. It fills the library's
//! `crate::tools::cuobjdump::Args`.

use crate::tools::cuobjdump::{Args, Pick};

/// How an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    /// None.
    Flag,
    /// One; a second replaces the first.
    One,
    /// A comma-separated list; repeats add to it.
    List,
}

/// What an option does in our run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    All,
    Elf,
    Symbols,
    Ptx,
    ResUsage,
    Sass,
    ExtractElf,
    ExtractPtx,
    ExtractText,
    Function,
    FunctionIndex,
    Arch,
    Help,
    ListElf,
    ListPtx,
    ListText,
    OptionsFile,
    Sort,
    Version,
}

/// One option: its long and short names, what it takes, what it does.
struct Spec {
    long: &'static str,
    short: &'static str,
    takes: Takes,
    act: Act,
}

const fn spec(long: &'static str, short: &'static str, takes: Takes, act: Act) -> Spec {
    Spec {
        long,
        short,
        takes,
        act,
    }
}

/// The options cuobjdump 13.5 knows, in its help's order.
const SPECS: &[Spec] = &[
    spec("all-fatbin", "all", Takes::Flag, Act::All),
    spec("dump-elf", "elf", Takes::Flag, Act::Elf),
    spec("dump-elf-symbols", "symbols", Takes::Flag, Act::Symbols),
    spec("dump-ptx", "ptx", Takes::Flag, Act::Ptx),
    spec(
        "dump-resource-usage",
        "res-usage",
        Takes::Flag,
        Act::ResUsage,
    ),
    spec("dump-sass", "sass", Takes::Flag, Act::Sass),
    spec("extract-elf", "xelf", Takes::List, Act::ExtractElf),
    spec("extract-ptx", "xptx", Takes::List, Act::ExtractPtx),
    spec("extract-text", "xtext", Takes::List, Act::ExtractText),
    spec("function", "fun", Takes::List, Act::Function),
    spec("function-index", "findex", Takes::One, Act::FunctionIndex),
    spec("gpu-architecture", "arch", Takes::One, Act::Arch),
    spec("help", "h", Takes::Flag, Act::Help),
    spec("list-elf", "lelf", Takes::Flag, Act::ListElf),
    spec("list-ptx", "lptx", Takes::Flag, Act::ListPtx),
    spec("list-text", "ltext", Takes::One, Act::ListText),
    spec("options-file", "optf", Takes::List, Act::OptionsFile),
    spec("sort-functions", "sort", Takes::Flag, Act::Sort),
    spec("version", "V", Takes::Flag, Act::Version),
];

/// The values `-arch` accepts (cuobjdump 13.5's list: sm_75 and later).
pub(super) const ARCHS: &[&str] = &[
    "sm_100", "sm_100a", "sm_100f", "sm_103", "sm_103a", "sm_103f", "sm_107", "sm_107a", "sm_107f",
    "sm_110", "sm_110a", "sm_110f", "sm_120", "sm_120a", "sm_120f", "sm_121", "sm_121a", "sm_121f",
    "sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_90a",
];

/// What stops the run while the command line is read: cuobjdump's
/// `fatal` message.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct BadLine(pub String);

/// Reads `args` (after the program name).
pub(super) fn parse(args: &[String]) -> Result<Args, BadLine> {
    let mut out = Args::default();
    let mut arch_given: Option<String> = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (named, long) = if let Some(n) = arg.strip_prefix("--") {
            (n, true)
        } else if let Some(n) = arg.strip_prefix('-').filter(|n| !n.is_empty()) {
            (n, false)
        } else {
            out.files.push(arg.clone());
            continue;
        };
        let (name, inline) = match named.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (named, None),
        };
        // What the messages call the option: the argument without its
        // first dash, and without `=value`.
        let shown = arg[1..].split('=').next().unwrap_or_default();
        let Some(spec) = SPECS.iter().find(|s| {
            if long {
                s.long == name
            } else {
                s.short == name
            }
        }) else {
            return Err(BadLine(format!("Unknown option '{shown}'")));
        };
        let as_given = arg.split('=').next().unwrap_or_default();
        let value = match (spec.takes, inline) {
            (Takes::Flag, Some(_)) => {
                return Err(BadLine(format!("no argument expected after '{as_given}'")));
            }
            (Takes::Flag, None) => None,
            (_, Some(v)) => Some(v.to_string()),
            (_, None) => Some(
                it.next()
                    .ok_or_else(|| BadLine(format!("argument expected after '{as_given}'")))?
                    .clone(),
            ),
        };
        apply(&mut out, spec, value, &mut arch_given)?;
    }
    Ok(out)
}

/// Adds the option `spec` with `value` to `out`.
fn apply(
    out: &mut Args,
    spec: &Spec,
    value: Option<String>,
    arch_given: &mut Option<String>,
) -> Result<(), BadLine> {
    let value = value.unwrap_or_default();
    let pick = |p: &mut Option<Pick>| {
        p.get_or_insert_with(Pick::default).values.extend(
            value
                .split(',')
                .filter(|v| !v.is_empty())
                .map(str::to_string),
        );
    };
    match spec.act {
        Act::All => out.all = true,
        Act::ListElf => out.list_elf = true,
        Act::ListPtx => out.list_ptx = true,
        Act::Ptx => out.ptx = true,
        Act::Symbols => out.symbols = true,
        Act::ResUsage => out.res_usage = true,
        Act::Help => out.help = true,
        Act::Version => out.version = true,
        Act::ExtractElf => pick(&mut out.extract_elf),
        Act::ExtractPtx => pick(&mut out.extract_ptx),
        Act::Arch => {
            let Some(sm) = ARCHS
                .contains(&value.as_str())
                .then(|| sm_number(&value))
                .flatten()
            else {
                return Err(BadLine(format!(
                    "Value '{value}' is not defined for option 'gpu-architecture'"
                )));
            };
            if arch_given.as_deref().is_some_and(|a| a != value) {
                out.arch_redefined = true;
            }
            *arch_given = Some(value);
            out.arch = Some(sm);
        }
        Act::Elf
        | Act::Sass
        | Act::ExtractText
        | Act::Function
        | Act::FunctionIndex
        | Act::ListText
        | Act::OptionsFile
        | Act::Sort => {
            out.unsupported
                .get_or_insert_with(|| format!("-{}", spec.short));
        }
    }
    Ok(())
}

/// The SM number of an `-arch` value (`sm_90a` → 90): cuobjdump picks
/// entries by it, whatever the `a` or `f` (`-arch sm_90` takes an
/// `sm_90a` cubin, `-arch sm_90a` an `sm_90` PTX).
fn sm_number(arch: &str) -> Option<u32> {
    let digits = arch.strip_prefix("sm_")?.trim_end_matches(['a', 'f']);
    digits.parse().ok()
}

/// `cuobjdump -h`: the options in cuobjdump's layout (long name, short
/// name, what it does), in our words. The same text is printed when no
/// file, or more than one, is given.
pub(super) fn help_text() -> String {
    let rows: &[(&str, &str, &str)] = &[
        (
            "--all-fatbin",
            "-all",
            "Read every fatbin: by default the executable ones only, or the\n        relocatable ones when a file (or member) has no executable one.",
        ),
        (
            "--dump-elf",
            "-elf",
            "Dump the sections of each cubin (not done by offload-kit).",
        ),
        (
            "--dump-elf-symbols",
            "-symbols",
            "Print each cubin's symbols.",
        ),
        ("--dump-ptx", "-ptx", "Print the text of each PTX entry."),
        (
            "--dump-resource-usage",
            "-res-usage",
            "Print what each cubin's functions use (registers, stack, memory).",
        ),
        (
            "--dump-sass",
            "-sass",
            "Disassemble each cubin (not done by offload-kit).",
        ),
        (
            "--extract-elf <partial file name>,...",
            "-xelf",
            "Write the cubins whose names hold one of the strings to files\n        ('all': every cubin). Listing and dumping options are then ignored.",
        ),
        (
            "--extract-ptx <partial file name>,...",
            "-xptx",
            "Write the PTX entries whose names hold one of the strings to files\n        ('all': every one). Listing and dumping options are then ignored.",
        ),
        (
            "--extract-text <partial file name>,...",
            "-xtext",
            "Write the code sections of cubins to files (not done by offload-kit).",
        ),
        (
            "--function <function name>,...",
            "-fun",
            "Only these functions (not done by offload-kit).",
        ),
        (
            "--function-index <function index>",
            "-findex",
            "Only the function of this symbol index (not done by offload-kit).",
        ),
        (
            "--gpu-architecture <gpu architecture name>",
            "-arch",
            "Only the entries for this SM (its 'a' and 'f' code too).",
        ),
        ("--help", "-h", "Print this text."),
        (
            "--list-elf",
            "-lelf",
            "List the cubins, under the names -xelf writes them to.",
        ),
        (
            "--list-ptx",
            "-lptx",
            "List the PTX entries, under the names -xptx writes them to.",
        ),
        (
            "--list-text <partial file name>",
            "-ltext",
            "List the code sections of cubins (not done by offload-kit).",
        ),
        (
            "--options-file <file>,...",
            "-optf",
            "Read options from files (not done by offload-kit).",
        ),
        (
            "--sort-functions",
            "-sort",
            "Sort functions in disassembly (not done by offload-kit).",
        ),
        ("--version", "-V", "Print the version."),
    ];
    let mut s = String::from("\nUsage  : cuobjdump [options] <file>\n\nOptions\n=======\n\n");
    for (long, short, what) in rows {
        s.push_str(&format!(
            "{long:<44}{:<14}\n        {what}\n\n",
            format!("({short})")
        ));
    }
    s.push('\n');
    s
}

/// `cuobjdump -V`.
pub(super) fn version_text() -> String {
    format!(
        "cuobjdump: offload-kit {}, a drop-in for NVIDIA's cuobjdump 13.5 (listing and extraction)\n",
        env!("CARGO_PKG_VERSION")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Result<Args, BadLine> {
        let v: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        parse(&v)
    }

    fn fatal(line: &str) -> String {
        args(line).unwrap_err().0
    }

    #[test]
    fn names_and_values_as_cuobjdump_reads_them() {
        let a = args("-lelf --list-ptx -arch=sm_90a -xelf 80,,90 --extract-elf=x f").unwrap();
        assert!(a.list_elf && a.list_ptx && !a.all);
        assert_eq!(a.arch, Some(90));
        assert_eq!(a.extract_elf.unwrap().values, ["80", "90", "x"]);
        assert_eq!(a.files, ["f"]);
        let a = args("- x --gpu-architecture sm_100f -all").unwrap();
        assert_eq!((a.files.len(), a.arch, a.all), (2, Some(100), true));
        // The value is the next argument, whatever it looks like.
        assert_eq!(
            fatal("-arch -lelf f"),
            "Value '-lelf' is not defined for option 'gpu-architecture'"
        );
    }

    #[test]
    fn bad_lines_say_what_cuobjdump_says() {
        assert_eq!(fatal("--lelf f"), "Unknown option '-lelf'");
        assert_eq!(fatal("-list-elf f"), "Unknown option 'list-elf'");
        assert_eq!(fatal("-- f"), "Unknown option '-'");
        assert_eq!(fatal("-bogus=1 f"), "Unknown option 'bogus'");
        assert_eq!(fatal("-lelf=1 f"), "no argument expected after '-lelf'");
        assert_eq!(fatal("-all= f"), "no argument expected after '-all'");
        assert_eq!(fatal("-lelf -arch"), "argument expected after '-arch'");
        assert_eq!(
            fatal("--gpu-architecture"),
            "argument expected after '--gpu-architecture'"
        );
        assert_eq!(
            fatal("-arch sm_50 f"),
            "Value 'sm_50' is not defined for option 'gpu-architecture'"
        );
        assert_eq!(
            fatal("-arch= f"),
            "Value '' is not defined for option 'gpu-architecture'"
        );
        // The first fault of the line, whatever comes after it.
        assert_eq!(fatal("-h -bogus"), "Unknown option 'bogus'");
    }

    #[test]
    fn arch_given_twice_warns_only_when_it_changes() {
        assert!(!args("-arch sm_80 -arch=sm_80 f").unwrap().arch_redefined);
        let a = args("-arch sm_80 -arch sm_90 f").unwrap();
        assert!(a.arch_redefined);
        assert_eq!(a.arch, Some(90));
    }

    #[test]
    fn all_picks_everything_only_alone() {
        let pick = |v: &[&str]| Pick {
            values: v.iter().map(|s| s.to_string()).collect(),
        };
        assert!(pick(&["all"]).takes("f.1.sm_80.cubin"));
        assert!(!pick(&["all", "all"]).takes("f.1.sm_80.cubin"));
        assert!(pick(&["all", "sm_80"]).takes("f.1.sm_80.cubin"));
        assert!(!pick(&["all", "sm_80"]).takes("f.2.sm_90a.cubin"));
        assert!(!pick(&[]).takes("f.1.sm_80.cubin"));
        assert!(!pick(&["ALL"]).takes("f.1.sm_80.cubin"));
    }

    #[test]
    fn unsupported_options_are_remembered_by_their_short_name() {
        let a = args("-lelf --dump-sass -elf f").unwrap();
        assert_eq!(a.unsupported.as_deref(), Some("-sass"));
    }
}

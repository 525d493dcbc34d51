//! The `-mllvm` and `--offload-opt=` values, checked as LLVM 22's wrapper
//! checks them before anything runs: it parses them as its own LLVM
//! options, and an option it does not know, or a value an option does not
//! take, is fatal (exit 1) with LLVM's command-line parser's lines.
//!
//! offload-kit has no LLVM inside, so LLVM 22's `opt` parses them: the
//! values, then `--version`, which ends the parse without doing anything
//! and exits 0 whatever came before; the errors before it are the lines
//! LLVM's wrapper would print, named after it. `opt` knows every option
//! the wrapper knows, and a few of its own ([`OPT_ONLY`]), which the
//! wrapper does not take.

use crate::llvm::path::file_name;

/// The options LLVM 22's `opt` takes that its `clang-linker-wrapper` does
/// not: `opt`'s own (`opt --help-list-hidden` less `clang-linker-wrapper
/// -mllvm --help-list-hidden`; checked against both at test time).
pub const OPT_ONLY: &[&str] = &[
    "O0",
    "O1",
    "O2",
    "O3",
    "Os",
    "Oz",
    "S",
    "aa-pipeline",
    "bugpoint-enable-legacy-pm",
    "codegen-opt-level",
    "cs-profilegen-file",
    "cspgo-kind",
    "data-layout",
    "debug-info-for-profiling",
    "debug-pass-manager",
    "debugify-each",
    "debugify-export",
    "disable-builtin",
    "disable-debug-info-type-map",
    "disable-loop-unrolling",
    "disable-output",
    "disable-pipeline-verification",
    "disable-simplify-libcalls",
    "disable-verify",
    "discard-value-names",
    "enable-builtin",
    "enable-debugify",
    "enable-loopfusion",
    "enable-profcheck",
    "f",
    "load",
    "memory-profile-file",
    "module-hash",
    "module-summary",
    "mtriple",
    "o",
    "passes-ep-cgscc-optimizer-late",
    "passes-ep-full-link-time-optimization-early",
    "passes-ep-full-link-time-optimization-last",
    "passes-ep-late-loop-optimizations",
    "passes-ep-loop-optimizer-end",
    "passes-ep-optimizer-early",
    "passes-ep-optimizer-last",
    "passes-ep-peephole",
    "passes-ep-pipeline-early-simplification",
    "passes-ep-pipeline-start",
    "passes-ep-scalar-optimizer-late",
    "passes-ep-vectorizer-end",
    "passes-ep-vectorizer-start",
    "pgo-cold-func-opt",
    "pgo-kind",
    "print-passes",
    "profile-file",
    "profile-remapping-file",
    "pseudo-probe-for-profiling",
    "run-twice",
    "save-stats",
    "strip-debug",
    "strip-named-metadata",
    "thin-link-bitcode-file",
    "thinlto-bc",
    "thinlto-split-lto-unit",
    "time-trace",
    "time-trace-file",
    "time-trace-granularity",
    "unified-lto",
    "verify-debuginfo-preserve",
    "verify-di-preserve-export",
    "verify-each",
    "verify-each-debuginfo-preserve",
];

/// An option's name as LLVM's parser reads it: dashes and any `=value`
/// dropped.
fn option_name(arg: &str) -> &str {
    let name = arg.trim_start_matches('-');
    name.split_once('=').map_or(name, |(n, _)| n)
}

/// The lines LLVM 22's wrapper would print for `values`, or none when it
/// takes them all. `argv0` is how we were run. Without `opt`, nothing is
/// checked (the values still reach the device links, which read them).
#[cfg(feature = "files")]
pub fn check(argv0: &str, values: &[String]) -> Vec<String> {
    use std::process::{Command, Stdio};
    check_with(argv0, values, |checked| {
        let opt = super::system::find_llvm_tool("opt")?;
        let out = Command::new(&opt)
            .args(checked)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .ok()?;
        Some((opt, String::from_utf8_lossy(&out.stderr).into_owned()))
    })
}

/// [`check`], with `opt` run by `run_opt`: given the values `opt` is to
/// parse, it gives `opt`'s path and what it wrote on standard error
/// (`None`: no `opt`, or it could not be run).
pub fn check_with(
    argv0: &str,
    values: &[String],
    run_opt: impl FnOnce(&[&String]) -> Option<(String, String)>,
) -> Vec<String> {
    if values.is_empty() {
        return Vec::new();
    }
    let me = file_name(argv0);
    let unknown =
        |v: &str| format!("{me}: Unknown command line argument '{v}'.  Try: '{argv0} --help'");
    let (own, checked): (Vec<&String>, Vec<&String>) = values
        .iter()
        .partition(|v| v.starts_with('-') && OPT_ONLY.contains(&option_name(v)));
    let mut lines = Vec::new();
    if !checked.is_empty()
        && let Some((opt, text)) = run_opt(&checked)
    {
        let opt_try = format!("Try: '{opt} --help'");
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("opt: ") else {
                continue;
            };
            // A suggestion of an option only `opt` has is not LLVM's
            // wrapper's; it would suggest another, which we cannot know.
            if let Some(s) = rest.strip_prefix("Did you mean '")
                && OPT_ONLY.contains(&option_name(s.trim_end_matches("'?")))
            {
                continue;
            }
            let rest = rest.replace(&opt_try, &format!("Try: '{argv0} --help'"));
            lines.push(format!("{me}: {rest}"));
        }
    }
    lines.extend(own.iter().map(|v| unknown(v)));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(option_name("--inline-threshold=5"), "inline-threshold");
        assert_eq!(option_name("-S"), "S");
        assert_eq!(option_name("-O2"), "O2");
        // Sorted, so that the test against the tools can compare lists.
        assert!(OPT_ONLY.windows(2).all(|w| w[0] < w[1]));
        // opt's own options are refused without asking it.
        let lines = check_with("/x/clang-linker-wrapper", &["-S".to_string()], |_| None);
        assert_eq!(
            lines,
            [
                "clang-linker-wrapper: Unknown command line argument '-S'.  \
              Try: '/x/clang-linker-wrapper --help'"
            ]
        );
        assert!(check_with("w", &[], |_| None).is_empty());
    }

    #[test]
    fn opts_lines_as_the_wrappers() {
        let values = ["--inline-thresold=5".to_string(), "-O2".to_string()];
        let stderr = "opt: Unknown command line argument '--inline-thresold=5'.  \
                      Try: '/l/bin/opt --help'\n\
                      opt: Did you mean '--inline-threshold=5'?\n\
                      opt: Did you mean '-O3'?\n\
                      something else\n";
        let mut asked = Vec::new();
        let lines = check_with("bin/clang-linker-wrapper", &values, |checked| {
            asked = checked.iter().map(|s| s.to_string()).collect();
            Some(("/l/bin/opt".into(), stderr.into()))
        });
        // -O2 is opt's own: refused without asking opt.
        assert_eq!(asked, ["--inline-thresold=5"]);
        assert_eq!(
            lines,
            [
                "clang-linker-wrapper: Unknown command line argument '--inline-thresold=5'.  \
                 Try: 'bin/clang-linker-wrapper --help'",
                "clang-linker-wrapper: Did you mean '--inline-threshold=5'?",
                "clang-linker-wrapper: Unknown command line argument '-O2'.  \
                 Try: 'bin/clang-linker-wrapper --help'",
            ]
        );
    }
}

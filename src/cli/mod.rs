//! The command-line front ends. clap, anyhow and memmap2 are used only here.
//!
//! The binary is multi-call: run as `llvm-offload-binary`,
//! `clang-offload-packager`, `clang-offload-bundler` or
//! `clang-linker-wrapper` (a link or a copy under that name, optionally
//! with a version suffix such as `-22`), it is that LLVM 22 tool; as
//! `cuobjdump`, `nvprune`, `roc-obj-ls`, `roc-obj-extract` or `roc-obj`, it is
//! that vendor tool; otherwise it is `offload-kit` with its own subcommands.

mod bundle;
mod check;
mod compat;
mod diff;
mod docs;
mod extract;
mod images;
mod inspect;
mod io;
mod links;
mod list;
mod llvm_cl;
mod pack;
pub(crate) mod prune;
mod scan;
mod size;
mod split;
mod unpack;
mod wrap;

use std::process::ExitCode;

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};

/// Which LLVM tool a program name asks for, if any.
fn compat_tool(argv0: &str) -> Option<&'static str> {
    let mut name = compat::prog_name(argv0);
    name = name.strip_suffix(".exe").unwrap_or(name);
    // Debian-style version suffixes: clang-offload-packager-22.
    if let Some((base, ver)) = name.rsplit_once('-')
        && !ver.is_empty()
        && ver.bytes().all(|b| b.is_ascii_digit())
    {
        name = base;
    }
    links::TOOLS.iter().copied().find(|t| name.ends_with(t))
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    io::clean_up_on_signals();
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let argv0 = args
        .first()
        .cloned()
        .unwrap_or_else(|| "offload-kit".into());
    match compat_tool(&argv0) {
        Some("llvm-offload-binary" | "clang-offload-packager") => {
            compat::packager::main(&argv0, &args[1..])
        }
        Some("clang-offload-bundler") => compat::bundler::main(&argv0, &args[1..]),
        Some("clang-linker-wrapper") => compat::linker_wrapper::main(&argv0, &args[1..]),
        Some("cuobjdump") => compat::cuobjdump::main(&argv0, &args[1..]),
        Some("nvprune") => compat::nvprune::main(&argv0, &args[1..]),
        Some("roc-obj-ls") => compat::roc_obj::ls_main(&argv0, &args[1..]),
        Some("roc-obj-extract") => compat::roc_obj::extract_main(&argv0, &args[1..]),
        Some("roc-obj") => compat::roc_obj::obj_main(&argv0, &args[1..]),
        // The native commands take their arguments as bytes: a path
        // that is not UTF-8 is opened as it is.
        _ => native(std::env::args_os().collect()),
    }
}

#[derive(Parser)]
#[command(
    name = "offload-kit",
    version,
    about = "Pack, unpack and inspect GPU offloading binaries, without LLVM",
    long_about = "Pack, unpack and inspect GPU offloading binaries, without LLVM.\n\n\
        Run under the name llvm-offload-binary or clang-offload-packager (see \
        `offload-kit install-links`), this binary behaves as that LLVM 22 tool.",
    after_help = "Exit codes of list, inspect, extract, check, size and diff: 0 success \
        (diff: no differences); 1 a `check` requirement not met (or an `extract` selection \
        that matched nothing; diff: differences); 2 an input that could not be read or \
        parsed, or held damaged data (unless --allow-corrupt; list: always), or went past a \
        limit, or another error. The other commands exit 0 or 1, as the LLVM tools they \
        replace."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Pack(pack::Opts),
    Bundle(bundle::BundleOpts),
    Unbundle(bundle::UnbundleOpts),
    Unpack(unpack::Opts),
    List(list::Opts),
    InstallLinks(links::Opts),
    Wrap(wrap::Opts),
    Inspect(inspect::InspectOpts),
    Extract(extract::ExtractOpts),
    Check(check::CheckOpts),
    Size(size::SizeOpts),
    Prune(prune::PruneOpts),
    Split(split::SplitOpts),
    Diff(diff::DiffOpts),
    Completions(docs::CompletionsOpts),
    Manpages(docs::ManpagesOpts),
}

fn native(args: Vec<std::ffi::OsString>) -> ExitCode {
    let cli = Cli::parse_from(args);
    // The scanners' exit codes are their own (0, 1 a requirement not met,
    // 2 an input error); an error they return is an input error.
    let scanner = |r: Result<ExitCode>| r.unwrap_or_else(|e| fail(&e, scan::exit::INPUT_ERROR));
    let result = match cli.command {
        Command::Pack(o) => o.run(),
        Command::Bundle(o) => o.run(),
        Command::Unbundle(o) => o.run(),
        Command::Unpack(o) => o.run(),
        Command::List(o) => return scanner(o.run()),
        Command::InstallLinks(o) => o.run(),
        Command::Wrap(o) => o.run(),
        Command::Inspect(o) => return scanner(o.run()),
        Command::Extract(o) => return scanner(o.run()),
        Command::Check(o) => return scanner(o.run()),
        Command::Size(o) => return scanner(o.run()),
        Command::Prune(o) => return scanner(o.run()),
        Command::Split(o) => return scanner(o.run()),
        Command::Diff(o) => return scanner(o.run()),
        Command::Completions(o) => o.run(Cli::command()),
        Command::Manpages(o) => o.run(Cli::command()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, 1),
    }
}

/// Prints `e` and gives `code`, or success for a closed pipe (a reader
/// such as `head` that stopped reading).
fn fail(e: &anyhow::Error, code: u8) -> ExitCode {
    let broken_pipe = e.chain().any(|c| {
        let io = c.downcast_ref::<std::io::Error>().map(std::io::Error::kind);
        let json = c
            .downcast_ref::<serde_json::Error>()
            .and_then(serde_json::Error::io_error_kind);
        io.or(json) == Some(std::io::ErrorKind::BrokenPipe)
    });
    if broken_pipe {
        return ExitCode::SUCCESS;
    }
    eprintln!("error: {}", io::printable(&io::error_text(e)));
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::compat_tool;

    #[test]
    fn tool_names() {
        assert_eq!(
            compat_tool("/usr/bin/llvm-offload-binary"),
            Some("llvm-offload-binary")
        );
        assert_eq!(
            compat_tool("clang-offload-packager-22"),
            Some("clang-offload-packager")
        );
        assert_eq!(compat_tool("./offload-kit"), None);
        assert_eq!(
            compat_tool("/b/clang-linker-wrapper"),
            Some("clang-linker-wrapper")
        );
        assert_eq!(compat_tool("C:\\cuda\\cuobjdump.exe"), Some("cuobjdump"));
        assert_eq!(compat_tool("/opt/rocm/bin/roc-obj-ls"), Some("roc-obj-ls"));
        assert_eq!(compat_tool("roc-obj-extract"), Some("roc-obj-extract"));
        assert_eq!(compat_tool("roc-obj"), Some("roc-obj"));
        assert_eq!(compat_tool("nvprune"), Some("nvprune"));
    }
}

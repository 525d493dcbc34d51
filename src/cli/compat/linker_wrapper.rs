//! `clang-linker-wrapper`: LLVM 22's command line (the wrapper's options
//! mixed with the host linker's), parsed here into the library's
//! `link::job::Options`; the job itself (read the device input, link and
//! wrap, run the host linker) is the library's `link::exec::run`, whose
//! command lines and failure this prints. What it does not do is refused
//! with one error line.

use std::process::ExitCode;

use super::Fail;
use crate::cli::images::{self, Streams};
use crate::link::HostArg;
use crate::link::extract::Reading;
use crate::link::failure::Failure;
use crate::link::job::Options;

impl From<Failure> for Fail {
    fn from(f: Failure) -> Fail {
        Fail {
            llvm: f.llvm,
            note: f.note,
        }
    }
}

/// Options LLVM 22's tool has that this slice refuses, with why.
const UNSUPPORTED: &[(&str, &str)] = &[
    (
        "print-wrapped-module",
        "--print-wrapped-module is not supported (offload-kit writes the wrapper object \
         directly, with no LLVM IR to print)",
    ),
    (
        "wrapper-time-trace",
        "--wrapper-time-trace is not supported",
    ),
    (
        "wrapper-time-trace-granularity",
        "--wrapper-time-trace-granularity is not supported",
    ),
];

/// Splits `-name=value` / `--name=value` / `-name` / `--name`.
fn split(arg: &str) -> Option<(&str, Option<&str>)> {
    let body = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'))?;
    if body.is_empty() {
        return None;
    }
    Some(match body.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    })
}

fn unsupported(msg: &str) -> Fail {
    Fail::with_note(
        msg,
        "offload-kit's clang-linker-wrapper wraps OpenMP, HIP, CUDA and SYCL device code \
         for ELF hosts (see docs/compatibility.md)",
    )
}

/// Parses LLVM 22's command line. `Ok(None)`: help or version was printed.
pub(crate) fn parse(args: &[String]) -> Result<Option<Options>, Fail> {
    let mut o = Options::default();
    let mut it = args.iter();
    let mut after_dashes = false;
    while let Some(arg) = it.next() {
        if after_dashes {
            o.host.push(classify_host(arg, &mut it));
            continue;
        }
        if arg == "--" {
            // LLVM 22 forwards the `--` itself to the host linker.
            after_dashes = true;
            o.host.push(HostArg::Verbatim(arg.clone()));
            continue;
        }
        // lld-link's forms (Windows hosts) go to the host linker as they
        // are; `-libpath:` is a search directory too.
        if lld_link_style(arg) {
            o.host.push(HostArg::Verbatim(arg.clone()));
            continue;
        }
        if short_option(&mut o, arg, &mut it)? {
            continue;
        }
        let Some((name, v)) = split(arg) else {
            o.host.push(HostArg::Input(arg.clone()));
            continue;
        };
        if !long_option(&mut o, name, v, arg, &mut it)? {
            return Ok(None);
        }
    }
    if !check_plugin_opts(&o)? {
        return Ok(None);
    }
    Ok(Some(o))
}

/// An option's value: the joined `v`, else the next argument (an error
/// naming the option `name` where there is none).
fn value(
    it: &mut std::slice::Iter<'_, String>,
    v: Option<&str>,
    name: &str,
) -> Result<String, Fail> {
    match v {
        Some(v) => Ok(v.to_string()),
        None => it
            .next()
            .cloned()
            .ok_or_else(|| Fail::new(format!("missing argument to '{name}'"))),
    }
}

/// The short options (`-L`, `-l`, `-o`, joined or not, and `-mllvm`) into
/// `o`; whether `arg` was one.
fn short_option(
    o: &mut Options,
    arg: &str,
    it: &mut std::slice::Iter<'_, String>,
) -> Result<bool, Fail> {
    // Short joined forms first: -L<dir>, -l<name>, -o<file>.
    if let Some(rest) = arg.strip_prefix("-L")
        && !arg.starts_with("--")
    {
        let dir = if rest.is_empty() {
            value(it, None, "-L")?
        } else {
            rest.to_string()
        };
        o.host.push(HostArg::LibraryPath(dir));
        return Ok(true);
    }
    if let Some(rest) = arg.strip_prefix("-l")
        && !arg.starts_with("--")
    {
        let name = if rest.is_empty() {
            value(it, None, "-l")?
        } else {
            rest.to_string()
        };
        o.host.push(HostArg::Library(name));
        return Ok(true);
    }
    if arg == "-o" {
        o.host.push(HostArg::Output(value(it, None, "-o")?));
        return Ok(true);
    }
    if arg == "-mllvm" {
        let v = value(it, None, "-mllvm")?;
        o.mllvm.push(v.clone());
        o.plugin_opts.push(v);
        return Ok(true);
    }
    Ok(false)
}

/// The option `arg`, named `name` with the joined value `v`, into `o`;
/// `false` when it printed the help or the version.
fn long_option(
    o: &mut Options,
    name: &str,
    v: Option<&str>,
    arg: &str,
    it: &mut std::slice::Iter<'_, String>,
) -> Result<bool, Fail> {
    match name {
        "help" | "help-hidden" => {
            print!("{}", help_text());
            return Ok(false);
        }
        "version" => {
            print!("{}", super::version_text("clang-linker-wrapper"));
            return Ok(false);
        }
        "host-triple" => o.host_triple = Some(value(it, v, arg)?),
        "linker-path" => o.linker_path = Some(value(it, v, arg)?),
        "device-linker" => o.device_linker.push(value(it, v, arg)?),
        "device-compiler" => o.device_compiler.push(value(it, v, arg)?),
        "dry-run" => o.dry_run = true,
        "wrapper-verbose" => o.verbose = true,
        "save-temps" => o.save_temps = true,
        "r" | "relocatable" => {
            o.relocatable = true;
            o.host.push(HostArg::Verbatim("--relocatable".into()));
        }
        "compress" => o.compress = true,
        "emit-fatbin-only" => o.emit_fatbin_only = true,
        "cuda-path" => o.cuda_path = Some(value(it, v, arg)?),
        "compression-level" => o.compression_level = Some(value(it, v, arg)?),
        "override-image" => {
            let v = value(it, v, arg)?;
            match v.split_once('=') {
                Some(("openmp", file)) => o.override_images.push(file.to_string()),
                _ => {
                    return Err(unsupported(&format!(
                        "--override-image={v}: kinds other than openmp are not supported yet"
                    )));
                }
            }
        }
        "wrapper-jobs" => o.jobs = wrapper_jobs(&value(it, v, arg)?)?,
        "should-extract" => {
            let v = value(it, v, arg)?;
            o.should_extract.extend(v.split(',').map(str::to_string));
        }
        "offload-opt" => o.plugin_opts.push(value(it, v, arg)?),
        "embed-bitcode" => o.embed_bitcode = true,
        // LTO visibility, and the device target of the derived
        // arguments: no effect on what LLVM 22 runs.
        "whole-program" => {}
        "triple" | "arch" => drop(value(it, v, arg)?),
        "output" => o.host.push(HostArg::Output(value(it, v, arg)?)),
        "library-path" | "library" => {
            o.host.push(HostArg::LibraryPath(value(it, v, arg)?));
        }
        "rpath" => {
            let long = arg.starts_with("--") || v.is_some();
            let dir = value(it, v, arg)?;
            o.host.push(HostArg::Rpath { dir, long });
        }
        "whole-archive" if arg.starts_with("--") => o.host.push(HostArg::WholeArchive),
        "no-whole-archive" if arg.starts_with("--") => o.host.push(HostArg::NoWholeArchive),
        "linker-arg" => o.host.push(HostArg::LinkerArg(value(it, v, arg)?)),
        "compiler-arg" => o.host.push(HostArg::CompilerArg(value(it, v, arg)?)),
        _ => {
            if let Some((_, why)) = UNSUPPORTED.iter().find(|(n, _)| *n == name) {
                return Err(unsupported(why));
            }
            if name.starts_with("wrapper-") || name.starts_with("device-") {
                return Err(Fail::new(format!("unknown option '{arg}'")));
            }
            o.host.push(HostArg::Verbatim(arg.to_string()));
        }
    }
    Ok(true)
}

/// `--wrapper-jobs`' value `n`: a positive count, or `jobserver`.
fn wrapper_jobs(n: &str) -> Result<usize, Fail> {
    if n == "jobserver" {
        // No make jobserver protocol: as many as there are CPUs.
        return Ok(std::thread::available_parallelism().map_or(1, usize::from));
    }
    match n.parse::<u32>() {
        Ok(n) if n > 0 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        _ => Err(Fail::new(format!(
            "invalid value for --wrapper-jobs: '{n}'"
        ))),
    }
}

/// LLVM's wrapper parses the `-mllvm` and `--offload-opt` values itself
/// (its LTO options), so `-mllvm --help` lists LLVM's options and a pass
/// plugin that cannot be loaded is fatal before anything runs. Ours lists
/// LLVM's `opt`'s options (`false`: listed), and a plugin must at least
/// exist; `main` has the values checked by `opt` (`link::llvm_options`).
fn check_plugin_opts(o: &Options) -> Result<bool, Fail> {
    if let Some(flag) = o.plugin_opts.iter().find(|v| {
        matches!(
            v.trim_start_matches('-'),
            "help" | "help-hidden" | "help-list" | "help-list-hidden"
        )
    }) {
        llvm_help(flag);
        return Ok(false);
    }
    for v in &o.plugin_opts {
        let plugin = v.trim_start_matches('-').strip_prefix("load-pass-plugin=");
        if let Some(path) = plugin
            && !std::path::Path::new(path).is_file()
        {
            return Err(Fail::new(format!(
                "Could not load library '{path}': {path}: cannot open shared object file: \
                 No such file or directory"
            )));
        }
    }
    Ok(true)
}

/// Whether `arg` is one of lld-link's `-name:value` options that the
/// wrapper's own parser would misread (`-libpath:` as `-l ibpath:`,
/// `-out:` as an unknown option is fine but named here for clarity).
fn lld_link_style(arg: &str) -> bool {
    [
        "-libpath:",
        "/libpath:",
        "-out:",
        "/out:",
        "-wholearchive",
        "/wholearchive",
    ]
    .iter()
    .any(|p| arg.starts_with(p))
}

/// `-mllvm --help` (or `--offload-opt=--help`…): LLVM's options, as LLVM
/// 22's `opt` lists them (the values are passed to the device links, which
/// read them), after a note saying so; only the note without `opt`.
fn llvm_help(flag: &str) {
    eprintln!(
        "clang-linker-wrapper: note: offload-kit has LLVM 22's opt check -mllvm and \
         --offload-opt values, and passes them to the device links; the options they take \
         are LLVM 22's, listed by its opt"
    );
    match crate::link::system::find_llvm_tool("opt") {
        Some(opt) => {
            let _ = std::process::Command::new(opt).arg(flag).status();
        }
        None => eprintln!("clang-linker-wrapper: note: LLVM 22's opt was not found"),
    }
}

/// An argument after `--`: the host linker's, still sorted so that the
/// device link gets what LLVM gives it.
fn classify_host(arg: &str, it: &mut std::slice::Iter<'_, String>) -> HostArg {
    let next = |it: &mut std::slice::Iter<'_, String>| it.next().cloned().unwrap_or_default();
    match arg {
        "-L" => HostArg::LibraryPath(next(it)),
        "-l" => HostArg::Library(next(it)),
        "-o" => HostArg::Output(next(it)),
        "--whole-archive" => HostArg::WholeArchive,
        "--no-whole-archive" => HostArg::NoWholeArchive,
        _ if arg.starts_with("-L") => HostArg::LibraryPath(arg[2..].to_string()),
        _ if arg.starts_with("-l") => HostArg::Library(arg[2..].to_string()),
        _ if arg.starts_with('-') => HostArg::Verbatim(arg.to_string()),
        _ => HostArg::Input(arg.to_string()),
    }
}

fn help_text() -> String {
    "OVERVIEW: offload-kit as clang-linker-wrapper (LLVM 22 compatible)\n\
     \n\
     Reads the device images of the inputs (ELF and COFF objects, LLVM bitcode,\n\
     raw OffloadBinaries, archive members for a linked target), links each device\n\
     target with clang, bundles each offload kind (OpenMP: OffloadBinaries; HIP:\n\
     clang-offload-bundler; CUDA: CUDA's fatbinary; SYCL: as clang-sycl-linker\n\
     wrote it), wraps each kind in process and runs the host linker.\n\
     \n\
     USAGE: clang-linker-wrapper [options] -- <options to passed to the linker>\n\
     \n\
     OPTIONS:\n\
     \x20 --compiler-arg=<value>  An extra argument for the device compiler\n\
     \x20 --compress             Compress the HIP fat binary (a CCOB)\n\
     \x20 --cuda-path=<dir>      The CUDA installation whose bin/fatbinary is run\n\
     \x20 --compression-level=<n> The HIP fat binary's compression level\n\
     \x20 --device-compiler=<value> or <triple>=<value>\n\
     \x20                         Arguments to pass to the device compiler invocation\n\
     \x20 --device-linker=<value> or <triple>=<value>\n\
     \x20                         Arguments to pass to the device linker invocation\n\
     \x20 --dry-run               Print program arguments without running\n\
     \x20 --embed-bitcode         The device links write LLVM IR (packed as such)\n\
     \x20 --emit-fatbin-only      Write the bundled device code to -o (no host link)\n\
     \x20 --host-triple=<triple>  Triple to use for the host compilation\n\
     \x20 --linker-arg=<value>    An extra argument to be passed to the linker\n\
     \x20 --linker-path=<path>    The linker executable to invoke\n\
     \x20 -L <dir>                Add <dir> to the library search path\n\
     \x20 -mllvm <option>         An LLVM option for the device links (checked by\n\
     \x20                         LLVM 22's opt first, as LLVM checks it)\n\
     \x20 --offload-opt=<option>  An LLVM option for the device links' LTO\n\
     \x20 -l <libname>            Search for library <libname>\n\
     \x20 -o <path>               Path to file to write output\n\
     \x20 -r, --relocatable       Relocatable host link: the entry table renamed\n\
     \x20 --save-temps            Save intermediate results\n\
     \x20 --should-extract=<arch> Link archive members of <arch> even when no\n\
     \x20                         object has that target\n\
     \x20 --sysroot=<dir>         Where -L=<dir> directories are\n\
     \x20 --wrapper-jobs=<number> Run up to <number> device links at once\n\
     \x20                         (`jobserver`: one per CPU)\n\
     \x20 --wrapper-verbose       Verbose output from tools\n\
     \x20 --override-image=openmp=<file>\n\
     \x20                         Use <file> as the linked OpenMP image\n\
     \n\
     Not supported (refused): wrapper objects for non-ELF hosts (a dry run\n\
     prints LLVM's commands), SYCL on powerpc64le and riscv64 hosts,\n\
     --print-wrapped-module (no IR), --override-image of other kinds,\n\
     --wrapper-time-trace.\n\
     \n\
     ENVIRONMENT:\n\
     \x20 OFFLOAD_KIT_MAX_UNCOMPRESSED=<size>\n\
     \x20                         Most bytes the compressed OffloadBinaries of the\n\
     \x20                         inputs may inflate to, in all (suffixes K, M, G;\n\
     \x20                         default 1024 times the inputs' size, at least 128M)\n"
        .to_string()
}

/// Entry point under the name `clang-linker-wrapper`.
pub fn main(argv0: &str, args: &[String]) -> ExitCode {
    let opts = match parse(args) {
        Ok(Some(o)) => o,
        Ok(None) => return ExitCode::SUCCESS,
        Err(f) => return f.report(argv0),
    };
    let refused = crate::link::llvm_options::check(argv0, &opts.plugin_opts);
    if !refused.is_empty() {
        for line in refused {
            eprintln!("{line}");
        }
        return ExitCode::FAILURE;
    }
    // The inputs are read with the drop-ins' budget, the images of
    // compressed binaries streamed into temporary files.
    let hint = format!("{}=SIZE", images::MAX_UNCOMPRESSED_ENV);
    let reading = Reading {
        inflate: &mut |found| {
            let mut streams = Streams::new(found);
            found
                .images
                .iter()
                .map(|f| streams.inflate_to_temp_file(f))
                .collect()
        },
        data_error: &images::data_error,
        raise_hint: &|e| images::raise_hint(e, &hint),
    };
    let say = |line: &str| eprintln!("{line}");
    let budget = images::dropin_budget().map_err(|e| Failure::new(e.to_string()));
    match crate::link::exec::run(&opts, budget, reading, &say) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => Fail::from(f).report(argv0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn options_as_llvm_reads_them() {
        let o = parse(&args(&[
            "--should-extract=gfx90a,sm_70",
            "--should-extract",
            "gfx1030",
            "-libpath:./lib",
            "-lfoo",
            "-out:a.exe",
            "-mllvm",
            "-x",
            "--offload-opt=-y",
            "-mllvm=-z",
            "--embed-bitcode",
            "--whole-program",
            "--triple=amdgcn-amd-amdhsa",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(o.should_extract, ["gfx90a", "sm_70", "gfx1030"]);
        assert_eq!(o.mllvm, ["-x"]);
        assert_eq!(o.plugin_opts, ["-x", "-y"]);
        assert!(o.embed_bitcode);
        assert_eq!(
            o.host,
            [
                HostArg::Verbatim("-libpath:./lib".into()),
                HostArg::Library("foo".into()),
                HostArg::Verbatim("-out:a.exe".into()),
                // Not the wrapper's option: the host linker's.
                HostArg::Verbatim("-mllvm=-z".into()),
            ]
        );
        // Help for LLVM's options: a note, nothing run.
        assert!(parse(&args(&["-mllvm", "--help"])).unwrap().is_none());
        assert!(parse(&args(&["--print-wrapped-module"])).is_err());
        let bad = parse(&args(&["--offload-opt=-load-pass-plugin=/nonexistent.so"]));
        assert!(
            bad.unwrap_err()
                .llvm
                .contains("Could not load library '/nonexistent.so'")
        );
    }
}

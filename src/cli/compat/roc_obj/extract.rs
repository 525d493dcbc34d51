//! `roc-obj-extract [-v] [-h] [-o PATH] URI...`: copies each URI's range
//! into `<name>-offset<O>-size<S>.co` (in PATH; `-o -`: to standard
//! output). URIs come from the arguments and, when standard input is not a
//! terminal, from its lines.
//!
//! Here: the command line and where the URIs come from; the copying, with
//! what the script prints on the way, is the library's
//! `crate::tools::roc_obj::extract`.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use super::perl::{getopts, has, report, write_stdout};
use crate::tools::roc_obj::extract;

pub(super) fn main(argv0: &str, args: &[String]) -> ExitCode {
    let (opts, mut uris) = getopts("vho:", args);
    if has(&opts, 'h') {
        write_stdout(help(argv0).as_bytes());
        return ExitCode::SUCCESS;
    }
    let verbose = has(&opts, 'v');
    let mut out_dir = Some(String::new());
    if let Some((_, value)) = opts.iter().rev().find(|(c, _)| *c == 'o') {
        match value.as_deref() {
            Some("-") => out_dir = None,
            Some(dir) => {
                if let Err(die) = extract::check_folder(dir) {
                    return report(&die);
                }
                out_dir = Some(dir.to_string());
            }
            None => {}
        }
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let max = crate::limits::MAX_ARGUMENT_BYTES;
        let mut text = Vec::new();
        let _ = stdin.lock().take(max + 1).read_to_end(&mut text);
        if text.len() as u64 > max {
            eprintln!(
                "Error: standard input gives more than {} MiB of URIs (the most read).",
                max >> 20
            );
            return ExitCode::from(2);
        }
        uris.extend(
            text.split_inclusive(|&b| b == b'\n')
                .map(|l| String::from_utf8_lossy(l).into_owned()),
        );
    }
    if uris.is_empty() {
        eprintln!("Error: No arguments.");
        write_stdout(help(argv0).as_bytes());
        return ExitCode::from(1);
    }
    let errors = extract::extract_uris(&uris, verbose, out_dir, &mut super::perl::say);
    // The script exits with the count modulo 256 (256 failures: 0); never
    // 0 after a failure here.
    ExitCode::from(u8::try_from(errors.min(255)).unwrap_or(u8::MAX))
}

fn help(argv0: &str) -> String {
    format!(
        "Usage: {argv0} [-o|v|h] URI...\n\
         Copies the code objects that the URIs name (from roc-obj-ls) into\n\
         files named <file>-offset<O>-size<S>.co (offload-kit, a drop-in for\n\
         hipcc 5.2.3's roc-obj-extract). URIs are also read from standard\n\
         input, one a line, when it is not a terminal.\n\
         \n\
         -o PATH\tWrite the files into PATH (\"-\": to standard output)\n\
         -v     \tSay what is copied\n\
         -h     \tThis help\n\
         \n\
         URIs: file://FILE#offset=O&size=S (FILE percent-encoded; without a size,\n\
         to the end of FILE; without a range, all of it), memory://PID#offset=O&size=S,\n\
         and roc-obj-ls's URIs of compressed code objects (&entry-offset=&entry-size=).\n"
    )
}

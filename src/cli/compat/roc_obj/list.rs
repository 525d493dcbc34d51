//! `roc-obj-ls [-v] [-h] [-d] FILE...`: the code objects in each file's
//! `.hip_fatbin` section, one line each (bundle number, entry ID, URI).
//! Here: the command line and the listing's lines; the listing itself is
//! the library's `crate::tools::roc_obj::list_file`.

use std::process::ExitCode;

use super::perl::{getopts, has, report, write_stdout};
use crate::tools::roc_obj::{Listed, list_file};

pub(super) fn main(argv0: &str, args: &[String]) -> ExitCode {
    let (opts, files) = getopts("vhd", args);
    if has(&opts, 'h') {
        write_stdout(help(argv0).as_bytes());
        return ExitCode::SUCCESS;
    }
    let verbose = has(&opts, 'v');
    let mut counter = 1;
    let mut out = Vec::new();
    for file in &files {
        let mut each = |listed: &[Listed], started, complete| {
            print_bundle(&mut out, verbose, listed, started, complete);
        };
        let result = list_file(file, &mut counter, &mut each, &mut super::perl::say);
        if let Err(die) = result {
            write_stdout(&out);
            return report(&die);
        }
    }
    write_stdout(&out);
    ExitCode::SUCCESS
}

fn help(argv0: &str) -> String {
    format!(
        "Usage: {argv0} [-v|h] FILE...\n\
         Lists the URIs of the code objects in the .hip_fatbin sections of the\n\
         files (compressed bundles too), one per line (offload-kit, a drop-in\n\
         for hipcc 5.2.3's roc-obj-ls).\n\
         -v \tThe entry IDs' column titles, and a blank line after each bundle\n\
         -h \tThis help\n"
    )
}

/// The listing lines of one bundle, as the script prints them: the column
/// titles once its entry count is read (`started`), the blank line once all
/// its entries are (`complete`).
fn print_bundle(
    out: &mut Vec<u8>,
    verbose: bool,
    listed: &[Listed],
    started: bool,
    complete: bool,
) {
    if verbose && started {
        out.extend_from_slice(
            format!("{:<8}{:<40}{:>35}\n", "Bundle#", "Entry ID:", "URI:").as_bytes(),
        );
    }
    for l in listed {
        out.extend_from_slice(format!("{:<8}", l.bundle).as_bytes());
        out.extend_from_slice(&l.id);
        let width = l.id.len();
        out.resize(out.len() + 40usize.saturating_sub(width), b' ');
        out.extend_from_slice(format!("{:>35}", "file://").as_bytes());
        out.extend_from_slice(&l.uri.as_bytes()["file://".len()..]);
        out.push(b'\n');
    }
    if verbose && complete {
        out.push(b'\n');
    }
}

//! The same messages as LLVM's for bad command lines, from committed
//! transcripts.

use super::*;
use crate::util::{Messages, run_both, same_transcript};

/// A command line and how ours must relate to LLVM's on it.
struct Transcript {
    name: &'static str,
    tool: &'static str,
    args: &'static [&'static str],
    /// LLVM's error does not name this file: ours must add a note that does.
    adds_file: Option<&'static str>,
}

fn transcripts() -> Vec<Transcript> {
    let t = |name, args, adds_file| Transcript {
        name,
        tool: TOOL,
        args,
        adds_file,
    };
    vec![
        t(
            "no_file_key",
            &["-o", "out.bin", "--image=triple=x,arch=y"],
            None,
        ),
        t(
            "missing_image_file",
            &["-o", "out.bin", "--image=file=nonexist.o,triple=x"],
            Some("nonexist.o"),
        ),
        t(
            "output_dir_missing",
            &["-o", "nodir/out.bin", "--image=file=img.o"],
            Some("nodir/out.bin"),
        ),
        t(
            "output_is_directory",
            &["-o", "sub", "--image=file=img.o"],
            Some("sub"),
        ),
        t(
            "input_is_directory",
            &["-o", "out.bin", "--image=file=sub"],
            Some("sub"),
        ),
        t("mutually_exclusive", &["-o", "out.bin", "pack.bin"], None),
        t(
            "archive_needs_file",
            &["pack.bin", "--archive", "--image=arch=gfx90a"],
            None,
        ),
        t(
            "extract_missing_input",
            &["nonexist.bin", "--image=arch=gfx90a"],
            None,
        ),
        t("unknown_option", &["--bogus"], None),
        t("option_needs_value", &["--image=file=img.o", "-o"], None),
        t("image_needs_value", &["-o", "x", "--image"], None),
        t("bad_boolean", &["--archive=foo", "pack.bin"], None),
        t("two_positionals", &["pack.bin", "pack.bin"], None),
        t(
            "multiple_matches_warning",
            &["pack.bin", "--image=file=both.o,kind=openmp"],
            None,
        ),
        t("no_arguments_prints_help", &[], None),
        t("malformed_input", &["bad.bin"], Some("bad.bin")),
        t(
            "malformed_input_with_filter",
            &["bad.bin", "--image=arch=gfx90a"],
            Some("bad.bin"),
        ),
        t("misspelt_option_keeps_value", &["--imag=file=x"], None),
        t("misspelt_option", &["--imag", "pack.bin"], None),
        t(
            "misspelt_flag_with_value",
            &["--archiv=1", "pack.bin"],
            None,
        ),
        t("empty_pack_with_no_image", &["-o", "empty.bin"], None),
        t(
            "non_binary_input_is_ignored",
            &["img.o", "--image=arch=x"],
            None,
        ),
        t("response_file", &["@args.rsp"], None),
        Transcript {
            name: "deprecated_name_warns",
            tool: "clang-offload-packager",
            args: &["pack.bin", "--image=file=x.o,arch=gfx90a"],
            adds_file: None,
        },
    ]
}

fn run_transcript(t: Transcript) -> Result<(), Failed> {
    let work = tempdir();
    let (theirs, ours) = run_both(t.tool, t.args, work.path(), t.name, |d| {
        std::fs::write(d.join("img.o"), bytes(9, 100))?;
        std::fs::create_dir(d.join("sub"))?;
        std::fs::write(d.join("bad.bin"), b"\x10\xff\x10\xad\x0a")?;
        std::fs::write(
            d.join("args.rsp"),
            "-o from-rsp.bin '--image=file=img.o,arch=gfx90a,kind=openmp'\n",
        )?;
        run(
            &llvm(TOOL),
            &[
                "-o",
                "pack.bin",
                "--image=file=img.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp",
                "--image=file=img.o,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=openmp",
            ],
            d,
        )
        .ok()?;
        Ok(Vec::new())
    })?;
    // Help texts are our own; other output must match.
    let stdout = !t.name.contains("help");
    same_transcript(
        t.tool,
        t.name,
        &theirs,
        &ours,
        Messages::Notes(t.adds_file),
        stdout,
    )
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let mut t = Vec::new();
    for tr in transcripts() {
        t.push(trial!(run_transcript["{}", tr.name], &[TOOL, "clang-offload-packager"], move || {
            run_transcript(tr)
        }));
    }
    t
}

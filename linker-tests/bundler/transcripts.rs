//! LLVM's messages for bad command lines, from committed transcripts.

use super::*;

/// A command line whose messages and effects must match LLVM's.
struct Transcript {
    name: &'static str,
    args: &'static [&'static str],
}

#[allow(
    clippy::too_many_lines,
    reason = "a table of the transcripts, one command line each"
)]
fn transcripts() -> Vec<Transcript> {
    let t = |name, args| Transcript { name, args };
    const H: &str = "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906";
    let _ = H;
    vec![
        t(
            "no_type",
            &[
                "-targets=host-x86_64-unknown-linux-gnu",
                "-input=h",
                "-output=x",
            ],
        ),
        t("unknown_option", &["--bogus"]),
        t(
            "extra_positional",
            &["-type=bc", "-list", "-input=b.bc", "foo", "bar"],
        ),
        t(
            "misspelt_option_keeps_value",
            &["-typ=bc", "-list", "-input=b.bc"],
        ),
        t(
            "input_and_inputs",
            &[
                "-type=bc",
                "-input=h",
                "-inputs=h,d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "output_and_outputs",
            &[
                "-type=bc",
                "-input=h",
                "-output=x",
                "-outputs=y",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "inputs_deprecated",
            &[
                "-type=bc",
                "-inputs=h,d",
                "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
                "-output=x",
            ],
        ),
        t(
            "outputs_deprecated",
            &[
                "-type=bc",
                "-unbundle",
                "-input=b.bc",
                "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
                "-outputs=o1,o2",
            ],
        ),
        t(
            "list_and_unbundle",
            &["-type=bc", "-list", "-unbundle", "-input=b.bc"],
        ),
        t(
            "list_two_inputs",
            &["-type=bc", "-list", "-input=b.bc", "-input=b.bc"],
        ),
        t(
            "list_with_output",
            &["-type=bc", "-list", "-input=b.bc", "-output=x"],
        ),
        t(
            "list_with_targets",
            &[
                "-type=bc",
                "-list",
                "-input=b.bc",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "check_archive_bundling",
            &[
                "-type=a",
                "-check-input-archive",
                "-input=h",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "check_archive_not_a",
            &[
                "-type=bc",
                "-unbundle",
                "-check-input-archive",
                "-input=b.bc",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "no_output",
            &[
                "-type=bc",
                "-input=h",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t("no_targets", &["-type=bc", "-input=h", "-output=x"]),
        t(
            "unbundle_two_inputs",
            &[
                "-type=bc",
                "-unbundle",
                "-input=b.bc",
                "-input=b.bc",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "unbundle_outputs_mismatch",
            &[
                "-type=bc",
                "-unbundle",
                "-input=b.bc",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
            ],
        ),
        t(
            "bundle_archive",
            &[
                "-type=a",
                "-input=h",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "bundle_two_outputs",
            &[
                "-type=bc",
                "-input=h",
                "-output=x",
                "-output=y",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "bundle_inputs_mismatch",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "duplicate_targets",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "three_field_triple",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,openmp-nvptx64-nvidia-cuda",
            ],
        ),
        t(
            "bad_kind",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,cuda-nvptx64-nvidia-cuda-",
            ],
        ),
        t(
            "bad_kind_and_triple",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,foo-bar-baz-qux-quux",
            ],
        ),
        t(
            "bad_triple",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,openmp-foo-bar-baz-qux",
            ],
        ),
        t(
            "conflicting_target_ids",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx906:xnack+",
            ],
        ),
        t(
            "two_hosts",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,host-aarch64-unknown-linux-gnu",
            ],
        ),
        t(
            "no_host",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=openmp-nvptx64-nvidia-cuda--sm_70,hip-amdgcn-amd-amdhsa--gfx906",
            ],
        ),
        t(
            "invalid_type",
            &[
                "-type=zz",
                "-input=h",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "missing_input",
            &[
                "-type=bc",
                "-input=nonexist",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "output_dir_missing",
            &[
                "-type=bc",
                "-input=h",
                "-output=nodir/x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "bad_align",
            &[
                "-type=bc",
                "-bundle-align=abc",
                "-input=h",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "bad_level",
            &[
                "-type=bc",
                "-compression-level=abc",
                "-input=h",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "missing_bundles_three",
            &[
                "-type=bc",
                "-unbundle",
                "-input=h",
                "-output=a",
                "-output=b",
                "-output=c",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906,openmp-amdgcn-amd-amdhsa--gfx90a,openmp-nvptx64-nvidia-cuda--sm_70",
            ],
        ),
        t(
            "missing_bundles_two",
            &[
                "-type=bc",
                "-unbundle",
                "-input=b.bc",
                "-output=a",
                "-output=b",
                "-targets=openmp-amdgcn-amd-amdhsa--gfx90a,openmp-nvptx64-nvidia-cuda--sm_70",
            ],
        ),
        t(
            "non_bundle_allow_missing",
            &[
                "-type=bc",
                "-unbundle",
                "-allow-missing-bundles",
                "-input=h",
                "-output=a",
                "-output=b",
                "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
            ],
        ),
        t(
            "all_mismatch_allow_missing",
            &[
                "-type=bc",
                "-unbundle",
                "-allow-missing-bundles",
                "-input=b.bc",
                "-output=a",
                "-output=b",
                "-targets=host-aarch64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx1030",
            ],
        ),
        t("list_non_bundle", &["-type=bc", "-list", "-input=h"]),
        t("list_wrong_type", &["-type=ll", "-list", "-input=b.bc"]),
        t(
            "separate_values",
            &[
                "-type",
                "bc",
                "-targets",
                "host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
                "-input",
                "h",
                "-input",
                "d",
                "-output",
                "sep.bc",
            ],
        ),
        t(
            "double_dash",
            &[
                "--type=bc",
                "--targets=host-x86_64-unknown-linux-gnu",
                "--targets=hip-amdgcn-amd-amdhsa--gfx906",
                "--input=h",
                "--input=d",
                "--output=dd.bc",
            ],
        ),
        t("stdin_stdout", &["-type=bc", "-list", "-input=-"]),
        t(
            "output_to_stdout",
            &[
                "-type=bc",
                "-unbundle",
                "-input=b.bc",
                "-output=-",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906",
            ],
        ),
    ]
}

fn run_transcript(t: Transcript) -> Result<(), Failed> {
    let mut results = Vec::new();
    for prog in [llvm(TOOL), ours_as(TOOL)] {
        let dir = tempdir();
        let d = dir.path();
        std::fs::write(d.join("h"), b"HOSTDATA")?;
        std::fs::write(d.join("d"), b"DEV1")?;
        run(
            &llvm(TOOL),
            &[
                "-type=bc",
                "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
                "-input=h",
                "-input=d",
                "-output=b.bc",
            ],
            d,
        )
        .ok()?;
        let r = run(&prog, t.args, d);
        let stderr = r
            .stderr
            .replace(&prog.display().to_string(), "TOOL")
            .replace(TOOL, "TOOL");
        results.push((r.code, stderr, r.stdout, snapshot(d)));
    }
    let (ours, theirs) = (results.pop().unwrap(), results.pop().unwrap());
    committed_transcript(
        TOOL,
        t.name,
        &Expected {
            code: theirs.0,
            stderr: theirs.1.clone(),
        },
    )?;
    same("exit code", ours.0, theirs.0)?;
    same_messages(&ours.1, &theirs.1, None)?;
    same("stdout", ours.2, theirs.2)?;
    same("files", ours.3, theirs.3)
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let mut t = Vec::new();
    for tr in transcripts() {
        let name = format!("bundler::transcript::{}", tr.name);
        t.push(trial(name, &[TOOL], move || run_transcript(tr)));
    }
    t
}

//! `-###`: the llvm-objcopy command lines LLVM's bundler prints, and the
//! same without llvm-objcopy.

use super::*;
use crate::util::{same_transcript, run_both};

/// `-###` command lines: (name, arguments, outputs that must end up empty).
/// LLVM's exit code and stderr, masked, are committed in
/// `linker-tests/transcripts/clang-offload-bundler/<name>.txt`.
const PRINT_COMMANDS: &[(&str, &[&str], &[&str])] = &[
    (
        "bundler_print_commands_bundle",
        &[
            "-###",
            "-type=o",
            "-targets=hip-amdgcn-amd-amdhsa--gfx906,host-x86_64-unknown-linux-gnu,openmp-nvptx64-nvidia-cuda--sm_70",
            "-input=gfx906.o",
            "-input=main.o",
            "-input=d1",
            "-output=x.o",
        ],
        &["x.o"],
    ),
    (
        "bundler_print_commands_unbundle_host",
        &[
            "-###",
            "-type=o",
            "-unbundle",
            HD,
            "-input=fat.o",
            "-output=h",
            "-output=d",
        ],
        &["h"],
    ),
    (
        "bundler_print_commands_unbundle_device",
        &[
            "--###",
            "-type=o",
            "-unbundle",
            "-targets=hip-amdgcn-amd-amdhsa--gfx906",
            "-input=fat.o",
            "-output=d",
        ],
        &[],
    ),
    (
        "bundler_print_commands_archive",
        &[
            "-###",
            "-type=a",
            "-unbundle",
            HD,
            "-input=fat.a",
            "-output=h.a",
            "-output=d.a",
        ],
        &[],
    ),
    (
        "bundler_print_commands_binary_bundle",
        &[
            "-###",
            "-type=bc",
            HD,
            "-input=d1",
            "-input=d2",
            "-output=x.bc",
        ],
        &[],
    ),
];

/// `s` with the temporary directory written `$TMPDIR` and the random part
/// of LLVM's temporary file names (`clang-offload-bundler-XXXXXX.tmp`, the
/// tool's name already written `TOOL`, six hex digits) masked.
fn mask_temp_names(s: &str, tmp: &Path) -> String {
    const STEM: &str = "TOOL-";
    let s = s.replace(&tmp.display().to_string(), "$TMPDIR");
    let mut out = String::new();
    let mut rest = s.as_str();
    while let Some(at) = rest.find(STEM) {
        let (head, tail) = rest.split_at(at + STEM.len());
        out.push_str(head);
        let random = tail
            .get(..6)
            .filter(|r| r.bytes().all(|b| b.is_ascii_hexdigit()));
        match random {
            Some(_) if tail[6..].starts_with(".tmp") => {
                out.push_str("XXXXXX");
                rest = &tail[6..];
            }
            _ => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// `-###` with object bundles: LLVM's command lines (temporary names
/// masked), exit code and files, with llvm-objcopy found on `PATH` by both
/// (LLVM's is beside it, in the first `PATH` entry); the expected stderr is
/// also committed, so a change in either shows.
fn print_commands(name: &str, a: &[&str], empty: &[&str]) -> Result<(), Failed> {
    let work = tempdir();
    let path = format!(
        "{}:{}",
        crate::util::LLVM_BIN,
        std::env::var("PATH").unwrap_or_default()
    );
    // Each side's temporary directory, beside the directory it runs in.
    let tmp_of = |dir: &Path| dir.with_extension("tmp");
    let (mut theirs, mut ours) = run_both(TOOL, a, work.path(), "print", |dir| {
        copy_dir(inputs()?, dir)?;
        let tmp = tmp_of(dir);
        std::fs::create_dir_all(&tmp)?;
        Ok(vec![
            ("PATH".to_string(), path.clone()),
            ("TMPDIR".to_string(), tmp.display().to_string()),
        ])
    })?;
    for (who, side) in [("llvm", &mut theirs), ("ours", &mut ours)] {
        for e in empty {
            let len = std::fs::metadata(side.dir.join(e))?.len();
            same(&format!("{who}: size of {e}"), len, 0)?;
        }
        let tmp = tmp_of(&side.dir);
        same(
            &format!("{who}: temporary files left"),
            snapshot(&tmp).len(),
            0,
        )?;
        side.stderr = mask_temp_names(&side.stderr, &tmp);
    }
    same_transcript(TOOL, name, &theirs, &ours, Messages::Same, true)
}

/// Without an llvm-objcopy beside it or on `PATH`, LLVM 22 refuses every
/// call, `-###` included, before any other check; so does offload-kit
/// with `-###` (and writes nothing).
fn print_commands_without_objcopy() -> Result<(), Failed> {
    let work = tempdir();
    let w = work.path();
    // LLVM's bundler alone in a directory, and ours (whose link directory
    // holds no llvm-objcopy).
    let lone = w.join("lone");
    std::fs::create_dir_all(&lone)?;
    std::fs::copy(llvm(TOOL), lone.join(TOOL))?;
    let mut results = Vec::new();
    for (who, prog) in [("llvm", lone.join(TOOL)), ("ours", ours_as(TOOL))] {
        let dir = w.join(who);
        copy_dir(inputs()?, &dir)?;
        let before = snapshot(&dir);
        let tmp = w.display().to_string();
        let env = [("PATH", "/nonexistent"), ("TMPDIR", tmp.as_str())];
        let r = crate::util::run_within_env(300, &prog, PRINT_COMMANDS[0].1, &env, &dir)?;
        same(&format!("{who}: files"), snapshot(&dir), before)?;
        let stderr = r.stderr.replace(&prog.display().to_string(), "TOOL");
        results.push((r.code, stderr));
    }
    same("outcome", &results[1], &results[0])?;
    same(
        "stderr",
        results[0].1.as_str(),
        "TOOL: error: unable to find 'llvm-objcopy' in path\n",
    )
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let mut t = Vec::new();
    for &(name, a, empty) in PRINT_COMMANDS {
        t.push(trial!(
            print_commands["{name}"],
            TOOLS,
            move || print_commands(name, a, empty),
        ));
    }
    t.push(trial!(print_commands_without_objcopy, TOOLS));
    t
}

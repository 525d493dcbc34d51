//! `-###`: the llvm-objcopy command lines LLVM's bundler prints, and the
//! same without llvm-objcopy.

use super::*;

/// `-###` command lines: (name, arguments, outputs that must end up empty).
/// The expected stderr, masked, is `linker-tests/transcripts/<name>.stderr`.
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

/// Runs `prog` with `args` in `cwd` with `PATH` and `TMPDIR` set.
fn run_with_env(
    prog: &Path,
    args: &[&str],
    cwd: &Path,
    path: &str,
    tmp: &Path,
) -> crate::util::Run {
    let out = std::process::Command::new(prog)
        .args(args)
        .current_dir(cwd)
        .env("PATH", path)
        .env("TMPDIR", tmp)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", prog.display()));
    crate::util::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `s` with the temporary directory written `$TMPDIR` and the random part
/// of LLVM's temporary file names (`clang-offload-bundler-XXXXXX.tmp`,
/// six hex digits) masked.
fn mask_temp_names(s: &str, tmp: &Path) -> String {
    const STEM: &str = "clang-offload-bundler-";
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
    let w = work.path();
    let path = format!(
        "{}:{}",
        crate::util::LLVM_BIN,
        std::env::var("PATH").unwrap_or_default()
    );
    let mut results = Vec::new();
    for (who, prog) in [("llvm", llvm(TOOL)), ("ours", ours_as(TOOL))] {
        let dir = w.join(who);
        copy_dir(inputs()?, &dir)?;
        let tmp = w.join(format!("{who}-tmp"));
        std::fs::create_dir_all(&tmp)?;
        let r = run_with_env(&prog, a, &dir, &path, &tmp);
        for e in empty {
            let len = std::fs::metadata(dir.join(e))?.len();
            same(&format!("{who}: size of {e}"), len, 0)?;
        }
        same(
            &format!("{who}: temporary files left"),
            snapshot(&tmp).len(),
            0,
        )?;
        let stderr = mask_temp_names(&r.stderr, &tmp);
        results.push((r.code, stderr, r.stdout, snapshot(&dir)));
    }
    let (ours, theirs) = (
        results.pop().ok_or("no run")?,
        results.pop().ok_or("no run")?,
    );
    same("exit code", ours.0, theirs.0)?;
    same("stderr", &ours.1, &theirs.1)?;
    same("stdout", &ours.2, &theirs.2)?;
    same("files", &ours.3, &theirs.3)?;
    let expected = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("linker-tests/transcripts")
        .join(format!("{name}.stderr"));
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&expected, &theirs.1)?;
    }
    same(
        "stderr and the committed transcript",
        theirs.1,
        std::fs::read_to_string(&expected)?,
    )
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
        let r = run_with_env(&prog, PRINT_COMMANDS[0].1, &dir, "/nonexistent", w);
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
        t.push(trial(
            format!("bundler::object::{name}"),
            TOOLS,
            move || print_commands(name, a, empty),
        ));
    }
    t.push(trial(
        "bundler::object::print_commands_without_objcopy",
        TOOLS,
        print_commands_without_objcopy,
    ));
    t
}

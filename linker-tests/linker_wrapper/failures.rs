//! Bad input: a corrupt section, a failing device or host link, a missing
//! library or thin archive member, refused options; one error each and no
//! output file.

use super::*;

fn corrupt_section() -> Result<(), Failed> {
    let dir = tempdir();
    let mut bytes = std::fs::read(fixture()?.join("app.o"))?;
    let range = {
        let f = object::File::parse(&*bytes).map_err(|e| e.to_string())?;
        let s = f
            .section_by_name(".llvm.offloading")
            .ok_or("no .llvm.offloading in app.o")?;
        s.file_range().ok_or("no file range")?
    };
    // The binary's total size (bytes 8..16) far beyond the section.
    let at = usize::try_from(range.0).unwrap() + 8;
    bytes[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(dir.path().join("bad.o"), &bytes)?;
    let mut args = base_args("out");
    args.push("bad.o".into());
    let out = wrapper(&args, dir.path());
    clean_failure("corrupt .llvm.offloading", &to_run(&out), "bad.o")?;
    // LLVM's line first.
    let theirs = exec(&llvm("clang-linker-wrapper"), &args, dir.path(), &[]);
    same("exit code", out.code, theirs.code)?;
    same("message", first_error(&out), first_error(&theirs))?;
    fails(&out, dir.path(), "bad.o")
}

fn failing_device_link() -> Result<(), Failed> {
    let dir = tempdir();
    let mut args = base_args("out");
    args.extend([
        "--device-linker=--no-such-linker-option".to_string(),
        fixture()?.join("app.o").to_string_lossy().into_owned(),
    ]);
    let out = wrapper(&args, dir.path());
    fails(&out, dir.path(), "error: 'clang' failed")?;
    if !out.stderr.contains("exit code 1") {
        return Err(format!("the child's exit code is not named: {}", out.stderr).into());
    }
    Ok(())
}

fn refused(extra: &[&str]) -> Result<(), Failed> {
    let dir = tempdir();
    let mut args = base_args("out");
    args.extend(extra.iter().map(ToString::to_string));
    args.push(fixture()?.join("app.o").to_string_lossy().into_owned());
    let out = wrapper(&args, dir.path());
    clean_failure(&extra.join(" "), &to_run(&out), "not supported")?;
    fails(&out, dir.path(), "not supported")
}

/// `-l` that is nowhere: LLVM's message.
fn missing_library() -> Result<(), Failed> {
    let dir = tempdir();
    let mut args = base_args("out");
    args.extend([
        "-lno-such-library".to_string(),
        fixture()?.join("app.o").to_string_lossy().into_owned(),
    ]);
    let ours = wrapper(&args, dir.path());
    let theirs = exec(&llvm("clang-linker-wrapper"), &args, dir.path(), &[]);
    let msg = |o: &Out| o.stderr.split_once(": error: ").map(|(_, m)| m.to_string());
    same("exit code", ours.code, theirs.code)?;
    same("message", msg(&ours), msg(&theirs))?;
    fails(&ours, dir.path(), "-lno-such-library")
}

/// A thin archive whose member file is gone: LLVM's message (naming the
/// member), a note with the path, exit 1, no output.
fn thin_archive_missing_member() -> Result<(), Failed> {
    let dir = tempdir();
    std::fs::copy(fixture()?.join("app.o"), dir.path().join("gone.o"))?;
    let ar: Vec<String> = ["rcsT", "libgone.a", "gone.o"].map(String::from).to_vec();
    let made = exec(&llvm("llvm-ar"), &ar, dir.path(), &[]);
    if made.code != 0 {
        return Err(format!("llvm-ar: {}", made.stderr).into());
    }
    std::fs::remove_file(dir.path().join("gone.o"))?;
    let mut args = base_args("out");
    args.extend(["-L.".to_string(), "-lgone".into()]);
    let ours = wrapper(&args, dir.path());
    let theirs = exec(&llvm("clang-linker-wrapper"), &args, dir.path(), &[]);
    same("exit code", ours.code, theirs.code)?;
    same("message", first_error(&ours), first_error(&theirs))?;
    fails(&ours, dir.path(), "thin archive")
}

/// A host linker that fails: LLVM's message.
fn failing_host_link() -> Result<(), Failed> {
    let dir = tempdir();
    let args = vec![
        "--host-triple=x86_64-pc-linux-gnu".to_string(),
        "--linker-path=/bin/false".into(),
        "-o".into(),
        "out".into(),
        fixture()?.join("main.o").to_string_lossy().into_owned(),
    ];
    let ours = wrapper(&args, dir.path());
    let theirs = exec(&llvm("clang-linker-wrapper"), &args, dir.path(), &[]);
    let msg = |o: &Out| {
        o.stderr
            .lines()
            .find_map(|l| l.split_once(": error: ").map(|(_, m)| m.to_string()))
    };
    same("exit code", ours.code, theirs.code)?;
    same("message", msg(&ours), msg(&theirs))?;
    fails(&ours, dir.path(), "'false' failed")
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let with_ar: Vec<&str> = TOOLS.iter().copied().chain(["llvm-ar"]).collect();
    let with_false: Vec<&str> = TOOLS.iter().copied().chain(["false"]).collect();
    vec![
        trial!(thin_archive_missing_member, &with_ar),
        trial!(corrupt_section, TOOLS),
        trial!(failing_device_link, TOOLS),
        trial!(refuses_override_image_cuda, TOOLS),
        trial!(missing_library, TOOLS),
        trial!(failing_host_link, &with_false),
    ]
}

fn refuses_override_image_cuda() -> Result<(), Failed> {
    refused(&["--override-image=cuda=x.fatbin"])
}

//! Special inputs: FIFOs, devices and `/dev/null` given or named by thin
//! archives, standard input, and terminal escapes in bundle IDs.

use super::*;

fn mkfifo(path: &Path) -> Result<(), Failed> {
    let st = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .map_err(|e| e.to_string())?;
    if !st.success() {
        return Err(format!("mkfifo {} failed", path.display()).into());
    }
    Ok(())
}

/// A GNU thin archive (`ar rcT`) whose members are `names` (paths as
/// stored, each claiming `size` bytes), with every name in the `//` table.
pub fn thin_archive(names: &[&str], size: u64) -> Vec<u8> {
    let mut table = Vec::new();
    let mut offsets = Vec::new();
    for n in names {
        offsets.push(table.len());
        table.extend_from_slice(n.as_bytes());
        table.extend_from_slice(b"/\n");
    }
    let header = |name: &str, size: u64| {
        format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644).into_bytes()
    };
    let mut a = b"!<thin>\n".to_vec();
    a.extend(header("//", table.len() as u64));
    a.extend(&table);
    if table.len() % 2 == 1 {
        a.push(b'\n');
    }
    for off in offsets {
        a.extend(header(&format!("/{off}"), size));
    }
    a
}

/// The command lines to try on `x`, a path that is not a regular file:
/// every native command and both drop-ins, each with `x` as an input.
fn command_lines(x: &str, out: &str) -> Vec<(std::path::PathBuf, Vec<String>)> {
    let image = format!("file={x},triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp");
    let host = "host-x86_64-unknown-linux-gnu";
    let native: Vec<Vec<String>> = vec![
        vec!["inspect".into(), x.into()],
        vec!["inspect".into(), "--verify".into(), x.into()],
        vec!["extract".into(), x.into(), "-o".into(), out.into()],
        vec!["check".into(), "--forbid-kind=hip".into(), x.into()],
        vec!["size".into(), x.into()],
        vec!["list".into(), x.into()],
        vec!["unpack".into(), x.into(), "-o".into(), out.into()],
        vec![
            "bundle".into(),
            "--type".into(),
            "bc".into(),
            "-o".into(),
            format!("{out}/b"),
            format!("{host}={x}"),
        ],
        vec!["unbundle".into(), x.into(), "-o".into(), out.into()],
        vec![
            "wrap".into(),
            "--kind=openmp".into(),
            "-o".into(),
            format!("{out}/w.o"),
            x.into(),
        ],
        vec![
            "pack".into(),
            "-o".into(),
            format!("{out}/p"),
            "--image".into(),
            image.clone(),
        ],
    ];
    let mut v: Vec<_> = native.into_iter().map(|a| (ours(), a)).collect();
    let bundler = ours_as("clang-offload-bundler");
    for args in [
        vec!["-list".into(), "-type=o".into(), format!("-input={x}")],
        vec![
            "-unbundle".into(),
            "-type=bc".into(),
            format!("-input={x}"),
            format!("-targets={host}"),
            format!("-output={out}/u"),
        ],
        vec![
            "-type=bc".into(),
            format!("-input={x}"),
            format!("-targets={host}"),
            format!("-output={out}/b2"),
        ],
    ] {
        v.push((bundler.clone(), args));
    }
    let packager = ours_as("llvm-offload-binary");
    v.push((packager.clone(), vec![x.into()]));
    v.push((
        packager,
        vec!["-o".into(), format!("{out}/p2"), format!("--image={image}")],
    ));
    v
}

/// A FIFO with no writer, `/dev/zero` and `/dev/urandom` as inputs: each
/// command fails within seconds (a device is read up to 64 MiB), with one
/// error naming the file, exit 1 (the drop-ins too; 2 for the scanners and
/// list), and writes nothing.
fn fifos_and_devices_are_refused_at_once() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let fifo = d.join("fifo");
    mkfifo(&fifo)?;
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    let fifo = fifo.to_string_lossy().into_owned();
    let out_s = out.to_string_lossy().into_owned();
    for x in [fifo.as_str(), "/dev/zero", "/dev/urandom"] {
        for (prog, args) in command_lines(x, &out_s) {
            let r = run_within(LIMIT, &prog, &args, d)?;
            let what = format!("{} {args:?}", prog.display());
            // The scanners (and list) exit 2 for an input error.
            let scanner = ["inspect", "extract", "check", "size", "list"];
            let want = if prog == ours() && scanner.contains(&args[0].as_str()) {
                2
            } else {
                1
            };
            if r.code != want {
                return Err(format!("{what}: exit {}, not {want}: {}", r.code, r.stderr).into());
            }
            // check puts a file's error in its report, on stdout.
            let said = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
            let why = if x.starts_with("/dev/") {
                "a character device that gives more than 64 MiB"
            } else {
                "not a regular file (a FIFO)"
            };
            if !said.contains(x) || !said.contains(why) {
                return Err(format!("{what}: the error does not say what is wrong: {said}").into());
            }
            if r.stderr.contains("panicked") {
                return Err(format!("{what}: {}", r.stderr).into());
            }
            let left: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
            if !left.is_empty() {
                return Err(format!("{what}: wrote {left:?}").into());
            }
        }
    }
    // A response file that is a FIFO is not read (it would block).
    let r = run_within(
        LIMIT,
        &ours_as("llvm-offload-binary"),
        &[format!("@{fifo}")],
        d,
    )?;
    if r.code != 1 {
        return Err(format!("@fifo: exit {}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// A thin archive whose members are a FIFO, `/dev/zero` and the archive's
/// directory: `inspect` and `extract` report a problem naming each member
/// and finish; the drop-in's `-unbundle -type=a` fails naming it, exit 1.
fn thin_members_must_be_regular_files() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    mkfifo(&d.join("fifo"))?;
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    for (name, member) in [
        ("fifo.a", "fifo"),
        ("zero.a", "/dev/zero"),
        ("urandom.a", "/dev/urandom"),
    ] {
        std::fs::write(d.join(name), thin_archive(&[member], 4096)).unwrap();
        let a = d.join(name).to_string_lossy().into_owned();
        let r = run_within(LIMIT, &ours(), &["inspect", "--json", &a], d)?;
        let v: serde_json::Value = serde_json::from_slice(&r.stdout)
            .map_err(|e| format!("inspect {name}: {e}: {}", r.stderr))?;
        let problems = v["files"][0]["problems"].to_string();
        let why = if member == "fifo" {
            "not a regular file (a FIFO)"
        } else {
            "a character device that gives more than 64 MiB"
        };
        if !problems.contains(member) || !problems.contains(why) {
            return Err(format!("inspect {name}: no problem naming '{member}': {problems}").into());
        }
        let r = run_within(LIMIT, &ours(), &["inspect", &a], d)?;
        let text = String::from_utf8_lossy(&r.stdout);
        if !text.contains(member) || !text.contains(why) {
            return Err(format!("inspect {name}: nothing said: {text}").into());
        }
        let out_s = out.to_string_lossy();
        let r = run_within(LIMIT, &ours(), &["extract", &a, "-o", &out_s], d)?;
        if !r.stderr.contains(member) || r.stderr.contains("panicked") {
            return Err(format!("extract {name}: {}", r.stderr).into());
        }
        let r = run_within(
            LIMIT,
            &ours_as("clang-offload-bundler"),
            &[
                "-unbundle",
                "-type=a",
                &format!("-input={a}"),
                "-targets=hip-amdgcn-amd-amdhsa--gfx90a",
                &format!("-output={out_s}/x.a"),
                "-allow-missing-bundles",
            ],
            d,
        )?;
        if r.code != 1 || !r.stderr.contains(member) {
            return Err(format!("bundler -type=a {name}: exit {}: {}", r.code, r.stderr).into());
        }
    }
    // A thin archive naming itself: said once, not once per level.
    let len = thin_archive(&["self.a"], 0).len() as u64;
    std::fs::write(d.join("self.a"), thin_archive(&["self.a"], len)).unwrap();
    let r = run_within(LIMIT, &ours(), &["extract", "self.a", "-o", "out"], d)?;
    let warnings = r.stderr.matches("warning").count();
    if warnings != 1 || !r.stderr.contains("'self.a': it is the archive itself") {
        return Err(format!("extract self.a: {warnings} warnings: {}", r.stderr).into());
    }
    Ok(())
}

/// A binary bundle whose first ID holds an OSC title sequence, a
/// clear-screen, CR and LF (a fake row).
fn escape_bundle() -> Vec<u8> {
    let ids: [&[u8]; 2] = [
        b"hip-amdgcn-amd-amdhsa--gfx90a\x1b]0;pwned\x07\x1b[2J\rFAKE\nROW",
        b"host-x86_64-unknown-linux-gnu-",
    ];
    let header: usize = 32 + ids.iter().map(|i| 24 + i.len()).sum::<usize>();
    let mut b = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    b.extend((ids.len() as u64).to_le_bytes());
    for (k, id) in ids.iter().enumerate() {
        b.extend(((header + 4 * k) as u64).to_le_bytes());
        b.extend(4u64.to_le_bytes());
        b.extend((id.len() as u64).to_le_bytes());
        b.extend(*id);
    }
    b.extend(b"abcdefgh");
    b
}

/// Whether `out` holds a control byte other than LF.
fn has_controls(out: &[u8]) -> bool {
    String::from_utf8_lossy(out)
        .chars()
        .any(|c| c != '\n' && c.is_control())
}

/// Bundle IDs with terminal controls: every human-readable output of the
/// native commands shows them escaped, one line per entry; the drop-in's
/// `-list` writes LLVM's raw bytes into a pipe, escaped ones on a terminal.
fn terminal_escapes_in_ids_are_shown_escaped() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::write(d.join("esc.bundle"), escape_bundle()).unwrap();
    for args in [
        vec!["list", "esc.bundle"],
        vec!["inspect", "esc.bundle"],
        vec!["check", "--forbid-arch=gfx90a", "esc.bundle"],
        vec!["size", "esc.bundle"],
    ] {
        let r = run_within(LIMIT, &ours(), &args, d)?;
        if has_controls(&r.stdout) || has_controls(r.stderr.as_bytes()) {
            return Err(format!("{args:?}: raw control bytes: {:?}", r.stdout).into());
        }
        let out = String::from_utf8_lossy(&r.stdout);
        if args[0] != "size" && !out.contains("\\e]0;pwned\\x07\\e[2J\\rFAKE\\nROW") {
            return Err(format!("{args:?}: the ID is not shown escaped: {out}").into());
        }
        if out.lines().any(|l| l.starts_with("ROW")) {
            return Err(format!("{args:?}: a fake row: {out}").into());
        }
    }
    // The drop-in into a pipe: LLVM's bytes.
    let list = ["-list", "-type=bc", "-input=esc.bundle"];
    let ours_raw = run_within(LIMIT, &ours_as("clang-offload-bundler"), &list, d)?;
    let llvm_raw = run_within(LIMIT, &crate::util::llvm("clang-offload-bundler"), &list, d)?;
    crate::util::same_bytes("-list into a pipe", &ours_raw.stdout, &llvm_raw.stdout)?;
    // On a terminal (script gives it a pseudo-terminal): escaped.
    let cmd = format!(
        "{} -list -type=bc -input=esc.bundle",
        ours_as("clang-offload-bundler").display()
    );
    let r = run_within(LIMIT, Path::new("script"), &["-qec", &cmd, "/dev/null"], d)?;
    let shown = String::from_utf8_lossy(&r.stdout).replace("\r\n", "\n");
    if has_controls(shown.as_bytes()) || !shown.contains("\\e]0;pwned") {
        return Err(format!("-list on a terminal: {shown:?}").into());
    }
    Ok(())
}

/// `list -` reads a bundle and an OffloadBinary from standard input (once);
/// `inspect --verify DIR` with a v1 CCOB declaring 0 bytes around a zstd
/// frame of sequences without literals (libzstd 1.5.4 wrote through the
/// empty output buffer's dangling pointer: SIGSEGV, the walk dead) reports
/// the file's problem and goes on.
fn stdin_still_works_and_one_bad_ccob_does_not_stop_a_walk() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::write(d.join("esc.bundle"), escape_bundle()).unwrap();
    let ob =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/offload_binary/one.bin");
    for (file, want) in [
        (d.join("esc.bundle"), "host-x86_64-unknown-linux-gnu-"),
        (ob, "gfx90a"),
    ] {
        let r = run_within(
            LIMIT,
            Path::new("/bin/sh"),
            &[
                "-c".to_string(),
                "exec \"$0\" list - < \"$1\"".to_string(),
                ours().to_string_lossy().into_owned(),
                file.to_string_lossy().into_owned(),
            ],
            d,
        )?;
        if r.code != 0 || !String::from_utf8_lossy(&r.stdout).contains(want) {
            return Err(
                format!("list - < {}: exit {}: {}", file.display(), r.code, r.stderr).into(),
            );
        }
    }
    let dir = d.join("walk");
    std::fs::create_dir(&dir).unwrap();
    let frame: [u8; 15] = [
        0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x00, 0x35, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,
    ];
    let mut v1 = b"CCOB".to_vec();
    v1.extend(1u16.to_le_bytes());
    v1.extend(1u16.to_le_bytes());
    v1.extend(0u32.to_le_bytes());
    v1.extend(0u64.to_le_bytes());
    v1.extend(frame);
    std::fs::write(dir.join("a.ccob"), &v1).unwrap();
    std::fs::write(dir.join("b.bundle"), escape_bundle()).unwrap();
    let dir_s = dir.to_string_lossy().into_owned();
    for args in [
        vec!["inspect", "--verify", dir_s.as_str()],
        vec!["inspect", "--hash", dir_s.as_str()],
        vec!["list", "a.ccob"],
    ] {
        let cwd = if args[0] == "list" { dir.as_path() } else { d };
        let r = run_within(LIMIT, &ours(), &args, cwd)?;
        let out = String::from_utf8_lossy(&r.stdout);
        if r.code < 0 || r.stderr.contains("panicked") {
            return Err(format!("{args:?}: killed or panicked: {}", r.stderr).into());
        }
        // A verification or hash that failed is never a success (exit
        // 2), and the other file is still reported.
        if args[0] == "inspect"
            && (r.code != 2
                || !out.contains("b.bundle")
                || !out.contains("Destination buffer is too small"))
        {
            return Err(format!("{args:?}: exit {}: {out}", r.code).into());
        }
        if args[0] == "list" && (r.code != 2 || !r.stderr.contains("'a.ccob'")) {
            return Err(format!("{args:?}: exit {}: {}", r.code, r.stderr).into());
        }
    }
    let out = d.join("out");
    let r = run_within(
        LIMIT,
        &ours(),
        &["extract", "--verify", &dir_s, "-o", &out.to_string_lossy()],
        d,
    )?;
    if r.code < 0 || !r.stderr.contains("a.ccob") {
        return Err(format!("extract --verify: exit {}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// `/dev/null` stays an empty input: the clang driver bundles a HIP fatbin
/// with `clang-offload-bundler -type=o -input=/dev/null` as the host, and
/// the drop-in writes LLVM's bytes for it.
fn dev_null_is_an_empty_input_as_for_llvm() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::write(d.join("dev.bin"), b"device code object").unwrap();
    let args = |out: &str| {
        vec![
            "-type=o".to_string(),
            "-bundle-align=4096".into(),
            "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx90a".into(),
            "-input=/dev/null".into(),
            "-input=dev.bin".into(),
            format!("-output={out}"),
        ]
    };
    run_within(
        LIMIT,
        &ours_as("clang-offload-bundler"),
        &args("ours.hipfb"),
        d,
    )?
    .ok()?;
    run_within(
        LIMIT,
        &crate::util::llvm("clang-offload-bundler"),
        &args("llvm.hipfb"),
        d,
    )?
    .ok()?;
    let ours_b = std::fs::read(d.join("ours.hipfb")).unwrap();
    let llvm_b = std::fs::read(d.join("llvm.hipfb")).unwrap();
    crate::util::same_bytes("bundle with a /dev/null host", &ours_b, &llvm_b)?;
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
        vec![
        trial!(fifos_and_devices_are_refused_at_once, &["mkfifo"]),
        trial!(thin_members_must_be_regular_files, &["mkfifo"]),
        trial!(terminal_escapes_in_ids_are_shown_escaped, &["script", "clang-offload-bundler"]),
        trial!(dev_null_is_an_empty_input_as_for_llvm, &["clang-offload-bundler"]),
        trial!(stdin_still_works_and_one_bad_ccob_does_not_stop_a_walk, &["sh"]),
    ]
}

//! Hostile inputs that must neither hang, nor exhaust memory, nor crash:
//! FIFOs, devices, thin archives naming them (issue #11). Every command
//! runs under a time limit ([`run_within`]), so a regression fails here
//! instead of hanging CI.

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use crate::util::{ours, ours_as, run_within, tempdir, trial};

/// Seconds any command gets before it counts as hung.
const LIMIT: u64 = 20;

pub fn tests() -> Vec<Trial> {
    let t = |name: &str, f: fn() -> Result<(), Failed>| {
        trial(format!("hostile::{name}"), &["mkfifo"], f)
    };
    vec![
        t("fifos_and_devices_are_refused_at_once", special_inputs),
        t("thin_members_must_be_regular_files", thin_special_members),
        trial(
            "hostile::terminal_escapes_in_ids_are_shown_escaped",
            &["script", "clang-offload-bundler"],
            escapes,
        ),
        trial(
            "hostile::dev_null_is_an_empty_input_as_for_llvm",
            &["clang-offload-bundler"],
            dev_null_input,
        ),
        trial(
            "hostile::huge_section_alignment_is_an_error",
            &["cc"],
            huge_alignment,
        ),
        trial(
            "hostile::signals_remove_temporary_outputs",
            &["kill"],
            signals,
        ),
        trial(
            "hostile::stdin_still_works_and_one_bad_ccob_does_not_stop_a_walk",
            &["sh"],
            stdin_and_segfault,
        ),
        trial(
            "hostile::bombs_are_listed_from_their_headers",
            &["sh"],
            bombs,
        ),
    ]
}

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
fn special_inputs() -> Result<(), Failed> {
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
fn thin_special_members() -> Result<(), Failed> {
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

/// A v3 zstd CCOB of `head` followed by `zeros` zero bytes (stored hash 0),
/// compressed as a stream: 2 GiB of zeros make about 70 KB.
fn zero_bomb(head: &[u8], zeros: u64) -> Vec<u8> {
    use std::io::Write;
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    enc.write_all(head).unwrap();
    let chunk = vec![0u8; 1 << 20];
    let mut left = zeros;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        enc.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    let payload = enc.finish().unwrap();
    let total = head.len() as u64 + zeros;
    let mut c = b"CCOB".to_vec();
    c.extend(3u16.to_le_bytes());
    c.extend(1u16.to_le_bytes());
    c.extend((32 + payload.len() as u64).to_le_bytes());
    c.extend(total.to_le_bytes());
    c.extend(0u64.to_le_bytes());
    c.extend(payload);
    c
}

/// Runs our binary with its address space limited to 1 GiB, so a command
/// that decompresses a 2 GiB bomb whole fails.
fn ours_in_1g(args: &[&str], cwd: &Path) -> Result<crate::util::Run, Failed> {
    let mut sh = vec![
        "-c".to_string(),
        "ulimit -v 1048576 && exec \"$0\" \"$@\"".to_string(),
        ours().to_string_lossy().into_owned(),
    ];
    sh.extend(args.iter().map(|a| a.to_string()));
    run_within(LIMIT, Path::new("/bin/sh"), &sh, cwd)
}

/// CCOBs honestly declaring 2 GiB: `list` and plain `inspect` decompress
/// only the bundle header (a 1 GiB address space is plenty), or only the
/// first bytes of contents that are no bundle at all; `unbundle` refuses
/// what exceeds `--max-uncompressed` before decompressing.
fn bombs() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let id = b"hip-amdgcn-amd-amdhsa--gfx90a";
    let size = 2u64 << 30;
    let mut head = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    head.extend(1u64.to_le_bytes());
    let data_at = 32 + 24 + id.len() as u64;
    head.extend(data_at.to_le_bytes());
    head.extend(size.to_le_bytes());
    head.extend((id.len() as u64).to_le_bytes());
    head.extend(id);
    std::fs::write(d.join("bomb.ccob"), zero_bomb(&head, size)).unwrap();
    std::fs::write(d.join("zeros.ccob"), zero_bomb(&[], size)).unwrap();
    let size_s = size.to_string();

    let r = ours_in_1g(&["list", "bomb.ccob"], d)?;
    let out = String::from_utf8_lossy(&r.stdout);
    if r.code != 0 || !out.contains(&size_s) || !out.contains("gfx90a") {
        return Err(format!("list: exit {}: {out}{}", r.code, r.stderr).into());
    }
    let r = ours_in_1g(&["list", "--json", "bomb.ccob"], d)?;
    let v: serde_json::Value =
        serde_json::from_slice(&r.stdout).map_err(|e| format!("list --json: {e}: {}", r.stderr))?;
    let e = &v["bundle"]["entries"][0];
    if e["size"].as_u64() != Some(size) || e["offset"].as_u64() != Some(data_at) {
        return Err(format!("list --json: {v}").into());
    }
    let r = ours_in_1g(&["inspect", "--json", "bomb.ccob"], d)?;
    let v: serde_json::Value =
        serde_json::from_slice(&r.stdout).map_err(|e| format!("inspect: {e}: {}", r.stderr))?;
    let f = &v["files"][0];
    if r.code != 0
        || f["images"][0]["size"].as_u64() != Some(size)
        || f["problems"].as_array().is_none_or(|p| !p.is_empty())
    {
        return Err(format!("inspect: exit {}: {f}", r.code).into());
    }
    // Contents that are no bundle: judged from the first bytes.
    let r = ours_in_1g(&["inspect", "--json", "zeros.ccob"], d)?;
    let v: serde_json::Value = serde_json::from_slice(&r.stdout)
        .map_err(|e| format!("inspect zeros: {e}: {}", r.stderr))?;
    let problems = v["files"][0]["problems"].to_string();
    if r.code != 2 || !problems.contains("not a bundle") {
        return Err(format!("inspect zeros: exit {}: {problems}", r.code).into());
    }
    let r = ours_in_1g(&["list", "zeros.ccob"], d)?;
    if r.code != 2
        || !r
            .stderr
            .contains("'zeros.ccob': the compressed data is not a bundle")
    {
        return Err(format!("list zeros: exit {}: {}", r.code, r.stderr).into());
    }
    // unbundle: the limit is checked against the declared size first.
    let r = ours_in_1g(
        &[
            "unbundle",
            "--max-uncompressed",
            "1G",
            "bomb.ccob",
            "-o",
            "out",
        ],
        d,
    )?;
    if r.code != 1 || !r.stderr.contains("exceeds the limit of 1073741824 bytes") {
        return Err(format!("unbundle: exit {}: {}", r.code, r.stderr).into());
    }
    if d.join("out")
        .read_dir()
        .is_ok_and(|mut e| e.next().is_some())
    {
        return Err("unbundle wrote files".into());
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
fn escapes() -> Result<(), Failed> {
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

/// The `.offload-kit-*` files in `dir` (temporaries, old files aside).
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".offload-kit-"))
        .collect()
}

/// Sets `sh_addralign` of the section `name` in the ELF64 LE object `o`.
fn set_alignment(o: &mut [u8], name: &str, align: u64) -> Result<(), Failed> {
    let u16_at = |o: &[u8], at: usize| u16::from_le_bytes([o[at], o[at + 1]]) as usize;
    let u64_at = |o: &[u8], at: usize| u64::from_le_bytes(o[at..at + 8].try_into().unwrap());
    let shoff = u64_at(o, 0x28) as usize;
    let (shentsize, shnum, shstrndx) = (u16_at(o, 0x3A), u16_at(o, 0x3C), u16_at(o, 0x3E));
    let strtab = u64_at(o, shoff + shstrndx * shentsize + 0x18) as usize;
    for i in 0..shnum {
        let h = shoff + i * shentsize;
        let n = strtab + u32::from_le_bytes(o[h..h + 4].try_into().unwrap()) as usize;
        let end = n + o[n..].iter().position(|&b| b == 0).unwrap();
        if &o[n..end] == name.as_bytes() {
            o[h + 0x30..h + 0x38].copy_from_slice(&align.to_le_bytes());
            return Ok(());
        }
    }
    Err(format!("no section {name}").into())
}

/// A 1.7 KB host object whose `.data` asks for 2^32 alignment: bundling
/// it fails naming the section, exit 1, and leaves
/// no output and no temporary (it wrote 4 GiB before). 2 MiB is fine.
fn huge_alignment() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::write(d.join("host.c"), "int data[4] = {1, 2, 3, 4};\n").unwrap();
    let r = run_within(LIMIT, Path::new("cc"), &["-c", "-o", "host.o", "host.c"], d)?;
    if r.code != 0 {
        return Err(format!("cc: {}", r.stderr).into());
    }
    let good = std::fs::read(d.join("host.o")).unwrap();
    std::fs::write(d.join("dev.bin"), b"device code").unwrap();
    let targets = "host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx90a";
    for (align, ok) in [(1u64 << 32, false), (1 << 25, false), (1 << 21, true)] {
        let mut o = good.clone();
        set_alignment(&mut o, ".data", align)?;
        std::fs::write(d.join("host.o"), &o).unwrap();
        let _ = std::fs::remove_file(d.join("out.o"));
        let drop_in = run_within(
            LIMIT,
            &ours_as("clang-offload-bundler"),
            &[
                "-type=o",
                &format!("-targets={targets}"),
                "-input=host.o",
                "-input=dev.bin",
                "-output=out.o",
            ],
            d,
        )?;
        // (offload-kit bundle leaves object hosts to the drop-in.)
        for (what, r, out) in [("drop-in", &drop_in, "out.o")] {
            if ok {
                if r.code != 0 {
                    return Err(format!("{what}, alignment {align:#x}: {}", r.stderr).into());
                }
                continue;
            }
            if r.code != 1 || !r.stderr.contains("section '.data'") || !r.stderr.contains("host.o")
            {
                return Err(format!(
                    "{what}, alignment {align:#x}: exit {}: {}",
                    r.code, r.stderr
                )
                .into());
            }
            if d.join(out).exists() || !leftovers(d).is_empty() {
                return Err(
                    format!("{what}: output or temporaries left: {:?}", leftovers(d)).into(),
                );
            }
        }
    }
    Ok(())
}

/// SIGTERM or SIGINT while an output is being written: the temporary file
/// is removed and the old output put back, before the process ends.
fn signals() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    // Incompressible, at level 19 on two threads: many seconds of writing.
    std::fs::write(d.join("big.bin"), crate::util::bytes(7, 48 << 20)).unwrap();
    for sig in ["-TERM", "-INT"] {
        std::fs::write(d.join("out.bc"), b"old").unwrap();
        let mut child = std::process::Command::new(ours())
            .args([
                "bundle",
                "--type",
                "bc",
                "--compress",
                "--threads",
                "2",
                "--level",
                "19",
                "-o",
                "out.bc",
                "host-x86_64-unknown-linux-gnu=big.bin",
            ])
            .current_dir(d)
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while leftovers(d).len() < 2 {
            if start.elapsed().as_secs() > LIMIT || child.try_wait().unwrap().is_some() {
                let _ = child.kill();
                return Err("no temporary output appeared".into());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let pid = child.id().to_string();
        std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap();
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed().as_secs() > LIMIT {
                let _ = child.kill();
                return Err(format!("{sig}: still running").into());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let left = leftovers(d);
        let old = std::fs::read(d.join("out.bc")).unwrap_or_default();
        if !left.is_empty() || old != b"old" {
            return Err(format!("{sig}: left {left:?}, out.bc holds {old:?}").into());
        }
    }
    Ok(())
}

/// `list -` reads a bundle and an OffloadBinary from standard input (once);
/// `inspect --verify DIR` with a v1 CCOB declaring 0 bytes around a zstd
/// frame of sequences without literals (libzstd 1.5.4 wrote through the
/// empty output buffer's dangling pointer: SIGSEGV, the walk dead) reports
/// the file's problem and goes on.
fn stdin_and_segfault() -> Result<(), Failed> {
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
fn dev_null_input() -> Result<(), Failed> {
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

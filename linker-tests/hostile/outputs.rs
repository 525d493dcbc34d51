//! Outputs under attack: signals, output directories renamed mid-run,
//! write errors named, reports written in blocks.

use super::*;

/// SIGTERM or SIGINT while an output is being written: the old output
/// stays as it was and no temporary file is left, before the process ends.
fn signals_remove_temporary_outputs() -> Result<(), Failed> {
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
        while !writing_in(child.id(), d) {
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

/// The `.offload-kit-*` files anywhere below `dir`.
fn leftovers_below(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().unwrap().is_dir() {
            found.extend(leftovers_below(&e.path()));
        } else if name.starts_with(".offload-kit-") {
            found.push(e.path().display().to_string());
        }
    }
    found
}

/// Four entries of 64 MiB of incompressible bytes (`e0` … `e3`) and their
/// CCOB `big.ccob`, written by `bundle --compress --threads 2` (several
/// zstd frames): unbundling it takes about a second, mostly the MD5.
fn big_ccob(d: &Path) -> Result<Vec<Vec<u8>>, Failed> {
    let targets = [
        "host-x86_64-unknown-linux-gnu",
        "hip-amdgcn-amd-amdhsa--gfx90a",
        "hip-amdgcn-amd-amdhsa--gfx906",
        "hip-amdgcn-amd-amdhsa--gfx908",
    ];
    let mut args: Vec<String> = ["bundle", "--type", "bc", "--compress", "--threads", "2"]
        .map(String::from)
        .into();
    args.extend(["-o".into(), "big.ccob".into()]);
    let mut entries = Vec::new();
    for (k, t) in targets.iter().enumerate() {
        let bytes = crate::util::bytes(100 + k as u64, 64 << 20);
        std::fs::write(d.join(format!("e{k}")), &bytes).unwrap();
        args.push(format!("{t}=e{k}"));
        entries.push(bytes);
    }
    run_within(60, &ours(), &args, d)?.ok()?;
    Ok(entries)
}

/// Runs our binary with `args` in `d`, and renames `d/from` to `d/to` as
/// soon as a temporary output shows in it; returns what the command did,
/// or `None` when it ended before its temporaries were seen there after
/// the rename (too fast to tell anything: the caller tries again).
fn rename_while_running(
    d: &Path,
    args: &[&str],
    from: &str,
    to: &str,
) -> Result<Option<crate::util::Run>, Failed> {
    use std::io::Read;
    let mut child = std::process::Command::new(ours())
        .args(args)
        .current_dir(d)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = std::time::Instant::now();
    let mut renamed_mid_run = false;
    loop {
        if start.elapsed().as_secs() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{args:?}: still running after {LIMIT} s").into());
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if d.join(from).is_dir() && writing_in(child.id(), &d.join(from)) {
            std::fs::rename(d.join(from), d.join(to)).unwrap();
            // Still writing there after the rename: it came mid-run.
            renamed_mid_run = writing_in(child.id(), &d.join(to));
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed().as_secs() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{args:?}: still running after {LIMIT} s").into());
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let run = crate::util::Run {
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap_or_default(),
        stderr: String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned(),
    };
    Ok(renamed_mid_run.then_some(run))
}

/// `unbundle --threads 4` of a CCOB of four 64 MiB entries, its output
/// directory renamed while it writes: every entry lands, whole, in the
/// directory under its new name, and no `.offload-kit-*` file is left
/// anywhere (it left the temporaries, 288 MB, in the renamed directory).
fn an_output_directory_renamed_mid_unbundle_keeps_no_temporary() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let entries = big_ccob(d)?;
    let mut clean = false;
    for attempt in 0..3 {
        let (from, to) = (format!("out{attempt}"), format!("moved{attempt}"));
        std::fs::create_dir(d.join(&from)).unwrap();
        let args = ["unbundle", "big.ccob", "-o", &from, "--threads", "4"];
        let Some(r) = rename_while_running(d, &args, &from, &to)? else {
            continue;
        };
        let left = leftovers_below(d);
        if !left.is_empty() || d.join(&from).exists() {
            return Err(format!("left {left:?} (is {from} there again?)").into());
        }
        if r.code != 0 {
            // On a busy machine an entry's output may begin only after the
            // rename, when its directory's name is gone: a clean failure,
            // nothing left behind. Try again for the case that lands.
            if r.stderr.contains(&format!("'{from}/"))
                && r.stderr.contains("No such file or directory")
            {
                clean = true;
                continue;
            }
            return Err(format!("unbundle: exit {}: {}", r.code, r.stderr).into());
        }
        let mut got: Vec<(String, Vec<u8>)> = std::fs::read_dir(d.join(&to))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap())
            })
            .collect();
        got.sort();
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        crate::util::same(
            "files in the renamed directory",
            names,
            vec![
                "big-hip-amdgcn-amd-amdhsa--gfx906.0",
                "big-hip-amdgcn-amd-amdhsa--gfx908.1",
                "big-hip-amdgcn-amd-amdhsa--gfx90a.2",
                "big-host-x86_64-unknown-linux-gnu-.3",
            ],
        )?;
        for (want, name) in [(1, 2), (2, 0), (3, 1), (0, 3)] {
            if got[name].1 != entries[want] {
                return Err(format!("{}: not entry e{want}", got[name].0).into());
            }
        }
        return Ok(());
    }
    if clean {
        // Renamed mid-run each time, with outputs begun after it: clean
        // failures, no temporary left: what this test is about held.
        return Ok(());
    }
    Err("unbundle ended three times before the directory could be renamed".into())
}

/// `extract --jobs 1` of the same CCOB and then of an OffloadBinary of 50
/// images, the output directory renamed while the CCOB streams: the CCOB's
/// images land in the renamed directory, the first image of the second
/// input that cannot be written stops the extraction with one error naming
/// it (there was one per image), exit 2, and no `.offload-kit-*` file is
/// left anywhere.
fn an_output_directory_renamed_mid_extract_is_one_error() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    big_ccob(d)?;
    let mut pack: Vec<String> = vec!["pack".into(), "-o".into(), "many.bin".into()];
    for i in 0..50 {
        std::fs::write(d.join(format!("s{i}")), crate::util::bytes(i, 100)).unwrap();
        pack.push("--image".into());
        pack.push(format!(
            "file=s{i},triple=nvptx64-nvidia-cuda,arch=sm_{i},kind=openmp"
        ));
    }
    run_within(LIMIT, &ours(), &pack, d)?.ok()?;
    let mut clean = false;
    for attempt in 0..3 {
        let (from, to) = (format!("ex{attempt}"), format!("moved{attempt}"));
        std::fs::create_dir(d.join(&from)).unwrap();
        let args = [
            "extract", "--jobs", "1", "big.ccob", "many.bin", "-o", &from,
        ];
        let Some(r) = rename_while_running(d, &args, &from, &to)? else {
            continue;
        };
        let errors: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| l.starts_with("error:"))
            .collect();
        let one = errors.len() == 1
            && errors[0].contains(&format!("'{from}/"))
            && errors[0].contains("cannot write: No such file or directory");
        if r.code != 2 || !one {
            return Err(format!("extract: exit {}, errors {errors:?}", r.code).into());
        }
        let left = leftovers_below(d);
        if !left.is_empty() || d.join(&from).exists() {
            return Err(format!("left {left:?} (is {from} there again?)").into());
        }
        if !errors[0].contains(&format!("'{from}/many.bin.")) {
            // On a busy machine one of the CCOB's outputs began after the
            // rename: the same one error, nothing left; try again for the
            // case where all four land.
            clean = true;
            continue;
        }
        let mut names: Vec<String> = std::fs::read_dir(d.join(&to))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let want: Vec<String> = (0..4)
            .map(|i| {
                let id = [
                    "host-x86_64-unknown-linux-gnu-",
                    "hip-amdgcn-amd-amdhsa--gfx90a",
                    "hip-amdgcn-amd-amdhsa--gfx906",
                    "hip-amdgcn-amd-amdhsa--gfx908",
                ][i];
                format!("big.ccob.{i}.{id}.bin")
            })
            .collect();
        if names.len() != 4 || names.iter().any(|n| !want.contains(n)) {
            return Err(format!("in the renamed directory: {names:?}, not {want:?}").into());
        }
        return Ok(());
    }
    if clean {
        // Renamed mid-run each time, with outputs begun after it: clean
        // failures, no temporary left: what this test is about held.
        return Ok(());
    }
    Err("extract ended three times before the directory could be renamed".into())
}

/// SIGTERM to `bundle --compress` after its output directory was renamed:
/// the old file stays where it now is, and no temporary output is left in
/// either directory.
fn signals_clean_up_in_a_directory_moved_meanwhile() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::write(d.join("big.bin"), crate::util::bytes(7, 48 << 20)).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    std::fs::write(d.join("sub/out.bc"), b"old").unwrap();
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
            "sub/out.bc",
            "host-x86_64-unknown-linux-gnu=big.bin",
        ])
        .current_dir(d)
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !writing_in(child.id(), &d.join("sub")) {
        if start.elapsed().as_secs() > LIMIT || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            return Err("no temporary output appeared".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::rename(d.join("sub"), d.join("moved")).unwrap();
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed().as_secs() > LIMIT {
            let _ = child.kill();
            return Err("still running after SIGTERM".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let left = leftovers_below(d);
    let old = std::fs::read(d.join("moved/out.bc")).unwrap_or_default();
    if !left.is_empty() || old != b"old" || d.join("sub").exists() {
        return Err(format!("left {left:?}, moved/out.bc holds {old:?}").into());
    }
    Ok(())
}

/// `bundle --compress` that cannot write (the file-size limit, EFBIG,
/// stands for a full disk: the same write errors, without root): the error
/// names the output file, not its directory, on one thread (the
/// uncompressed bundle written beside the output fails first) and on two,
/// and nothing is left.
fn bundle_compress_errors_name_the_output_file() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::write(d.join("big.bin"), crate::util::bytes(3, 3 << 20)).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    for threads in ["1", "2"] {
        let r = run_within(
            LIMIT,
            Path::new("/bin/sh"),
            &[
                "-c",
                "trap '' XFSZ; ulimit -f 1024; exec \"$0\" bundle --type bc --compress \
                 --threads \"$1\" -o sub/out.ccob host-x86_64-unknown-linux-gnu=big.bin",
                &ours().to_string_lossy(),
                threads,
            ],
            d,
        )?;
        let names_it = r.stderr.contains("'sub/out.ccob'") && !r.stderr.contains("'sub'");
        if r.code != 1 || !names_it || !r.stderr.contains("File too large") {
            return Err(format!("--threads {threads}: exit {}: {}", r.code, r.stderr).into());
        }
        let left: Vec<_> = std::fs::read_dir(d.join("sub")).unwrap().collect();
        if !left.is_empty() {
            return Err(format!("--threads {threads}: left {left:?}").into());
        }
    }
    Ok(())
}

/// How many write(2) calls our binary made running `args` in `cwd` with
/// its standard output to the file `to`, and how many bytes they wrote:
/// read by a Python parent from the kernel's I/O accounting of the exited
/// child (`/proc/PID/io` while it is a zombie).
fn write_calls(args: &[&str], cwd: &Path, to: &Path) -> Result<(u64, u64), Failed> {
    const PARENT: &str = "import os, subprocess, sys\n\
        out = open(sys.argv[1], 'wb')\n\
        p = subprocess.Popen(sys.argv[2:], stdout=out)\n\
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)\n\
        io = dict(l.split(': ') for l in open('/proc/%d/io' % p.pid).read().splitlines())\n\
        code = p.wait()\n\
        sys.stderr.write('\\nwrites=%s bytes=%s\\n' % (io['syscw'], io['wchar']))\n\
        sys.exit(code if code >= 0 else 128 - code)\n";
    let mut a: Vec<std::ffi::OsString> = vec!["-c".into(), PARENT.into(), to.into(), ours().into()];
    a.extend(args.iter().map(std::ffi::OsString::from));
    let r = run_within(120, Path::new("/usr/bin/python3"), &a, cwd)?;
    let at = r
        .stderr
        .rfind("\nwrites=")
        .ok_or_else(|| format!("{args:?}: exit {}: {}", r.code, r.stderr))?;
    let mut it = r.stderr[at + 1..].split_whitespace().map(|w| {
        w.split_once('=')
            .and_then(|(_, n)| n.parse::<u64>().ok())
            .ok_or_else(|| format!("{args:?}: {w}"))
    });
    let (writes, bytes) = (it.next().ok_or("no count")??, it.next().ok_or("no bytes")??);
    if r.code != 0 {
        return Err(format!("{args:?}: exit {}: {}", r.code, r.stderr).into());
    }
    Ok((writes, bytes))
}

/// `inspect` (table and `--json`) of a CUDA fatbin of 200,000 entries
/// writes its report in blocks: at most one write(2) per 16 KiB on average
/// (64 KiB blocks), where standard output alone (line-buffered) made one
/// per line, and serde_json some 25 per image (14.5 s against the table's
/// 1.2 s).
fn reports_are_written_in_blocks() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    // A fatbin header, then 200,000 PTX entries of 8 bytes.
    let n = 200_000u32;
    let mut body = Vec::with_capacity(n as usize * 72);
    for i in 0..n {
        body.extend(1u16.to_le_bytes()); // PTX
        body.extend(0x0101u16.to_le_bytes());
        body.extend(64u32.to_le_bytes());
        body.extend(8u64.to_le_bytes());
        body.extend([0u8; 8]); // compressed size, options offset
        body.extend(8u16.to_le_bytes());
        body.extend(1u16.to_le_bytes());
        body.extend((50 + i % 40).to_le_bytes());
        body.extend([0u8; 8]); // no object name
        body.extend(0x11u64.to_le_bytes());
        body.extend([0u8; 16]);
        body.extend(b"//ptx\0\0\0");
    }
    let mut fatbin = vec![0x50, 0xED, 0x55, 0xBA, 1, 0, 16, 0];
    fatbin.extend((body.len() as u64).to_le_bytes());
    fatbin.extend(body);
    std::fs::write(d.join("fb.bin"), fatbin).unwrap();
    for args in [
        vec!["inspect", "fb.bin"],
        vec!["inspect", "--json", "fb.bin"],
    ] {
        let (writes, bytes) = write_calls(&args, d, &d.join("report"))?;
        let report = std::fs::read(d.join("report")).unwrap();
        // An sm_89 image is a row of the table and an "arch" of the JSON.
        let text = String::from_utf8_lossy(&report);
        let images = text.matches(" sm_89 ").count() + text.matches("\"arch\": \"sm_89\"").count();
        if images != (n / 40) as usize || bytes < report.len() as u64 {
            return Err(format!(
                "{args:?}: {images} sm_89 images in {} bytes of report ({bytes} written)",
                report.len()
            )
            .into());
        }
        if writes > bytes / (16 << 10) + 100 {
            return Err(format!("{args:?}: {writes} write calls for {bytes} bytes").into());
        }
    }
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(signals_remove_temporary_outputs, &["kill"]),
        trial!(an_output_directory_renamed_mid_unbundle_keeps_no_temporary, &[]),
        trial!(an_output_directory_renamed_mid_extract_is_one_error, &[]),
        trial!(signals_clean_up_in_a_directory_moved_meanwhile, &["kill"]),
        trial!(bundle_compress_errors_name_the_output_file, &["sh"]),
        trial!(reports_are_written_in_blocks, &["/usr/bin/python3"]),
    ]
}

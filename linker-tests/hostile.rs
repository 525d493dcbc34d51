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
/// command fails within seconds, with one error naming the file, exit 1
/// (the drop-ins too), and writes nothing.
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
            if r.code != 1 {
                return Err(format!("{what}: exit {}, not 1: {}", r.code, r.stderr).into());
            }
            // inspect puts a file's error in its table, on stdout.
            let said = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
            if !said.contains(x) || !said.contains("not a regular file") {
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
        if !problems.contains(member) || !problems.contains("not a regular file") {
            return Err(format!("inspect {name}: no problem naming '{member}': {problems}").into());
        }
        let r = run_within(LIMIT, &ours(), &["inspect", &a], d)?;
        let text = String::from_utf8_lossy(&r.stdout);
        if !text.contains(member) || !text.contains("not a regular file") {
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
    Ok(())
}

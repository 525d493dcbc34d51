//! The fifth round of hostile inputs (issue #57), writes: a file replaced
//! or appended to while `prune --in-place` runs on it is left as the other
//! writer made it (exit 2, naming it); a full disk and a damaged archive
//! are errors naming the file; `prune -d` makes its directory; a package
//! that grows when compressed again says it grew, by how much.

use std::ffi::OsStr;

use super::round5_paths::hip_bundle;
use super::*;
use crate::util::{md5_hex, run, run_within};

pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(a_file_changed_under_an_in_place_prune_is_left_as_changed, &["kill"]),
        trial!(write_and_archive_errors_of_prune_name_the_file, &["dpkg-deb"]),
        trial!(prune_makes_its_output_directory, &[]),
        trial!(a_package_that_grows_frees_nothing, &["/usr/bin/python3"]),
    ]
}

/// Sends `sig` (`-STOP`, `-CONT`) to process `pid`.
fn signal(sig: &str, pid: u32) -> Result<(), Failed> {
    let st = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()?;
    if !st.success() {
        return Err(format!("kill {sig} {pid}: {st}").into());
    }
    Ok(())
}

/// `prune --in-place` of a 64 MiB bundle, stopped once it writes its
/// output; meanwhile the file is appended to, or replaced by another; then
/// it goes on. It must leave the file as the other writer made it, and
/// exit 2 naming it. Runs that end before they are seen writing are tried
/// again.
fn a_file_changed_under_an_in_place_prune_is_left_as_changed() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    hip_bundle(d, OsStr::new("orig.hipfb"), 32 << 20)?;
    let args = ["prune", "--keep", "gfx90a", "--in-place", "work.hipfb"];
    for how in ["append", "replace"] {
        let mut caught = false;
        for _ in 0..40 {
            std::fs::copy(d.join("orig.hipfb"), d.join("work.hipfb"))?;
            let mut child = std::process::Command::new(ours())
                .args(args)
                .current_dir(d)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()?;
            while child.try_wait()?.is_none() && !writing_in(child.id(), d) {}
            if child.try_wait()?.is_some() {
                continue;
            }
            signal("-STOP", child.id())?;
            if child.try_wait()?.is_some() {
                continue;
            }
            caught = true;
            if how == "append" {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(d.join("work.hipfb"))?;
                f.write_all(b"appended")?;
            } else {
                std::fs::write(d.join("other.hipfb"), b"another writer's file")?;
                std::fs::rename(d.join("other.hipfb"), d.join("work.hipfb"))?;
            }
            let want = md5_hex(&std::fs::read(d.join("work.hipfb"))?);
            signal("-CONT", child.id())?;
            let out = child.wait_with_output()?;
            let err = String::from_utf8_lossy(&out.stderr);
            let now = md5_hex(&std::fs::read(d.join("work.hipfb"))?);
            let said = err.contains("'work.hipfb'") && err.contains("changed");
            if out.status.code() != Some(2) || !said || now != want || !leftovers(d).is_empty() {
                return Err(format!(
                    "{how}: {}: {err}; the file is {} (leftovers {:?})",
                    out.status,
                    if now == want {
                        "the other writer's"
                    } else {
                        "not the other writer's"
                    },
                    leftovers(d)
                )
                .into());
            }
            break;
        }
        if !caught {
            return Err(format!("{how}: never caught the prune writing in 40 runs").into());
        }
    }
    Ok(())
}

/// Runs our binary in `d` with the file-size limit at 1 MiB (EFBIG, as a
/// full disk fails a write, without root).
fn limited(d: &Path, args: &str) -> Result<crate::util::Run, Failed> {
    let script = format!("trap '' XFSZ; ulimit -f 1024; exec \"$0\" {args}");
    run_within(
        LIMIT,
        Path::new("/bin/sh"),
        &["-c", &script, &ours().to_string_lossy()],
        d,
    )
}

/// Fails unless `r` is exit 2 with an error line naming `file` that holds
/// `words`.
fn names(what: &str, r: &crate::util::Run, file: &str, words: &str) -> Result<(), Failed> {
    let named = r
        .stderr
        .lines()
        .any(|l| l.starts_with("error: ") && l.contains(&format!("'{file}'")) && l.contains(words));
    if r.code != 2 || !named {
        return Err(format!(
            "{what}: want exit 2 naming '{file}' ({words}); exit {}: {}",
            r.code, r.stderr
        )
        .into());
    }
    Ok(())
}

/// A bundle, a `.deb` holding it, and damaged static archives: a write
/// that fails for want of space names the file written, and every damaged
/// archive names its file.
fn write_and_archive_errors_of_prune_name_the_file() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    hip_bundle(d, OsStr::new("k.hipfb"), 2 << 20)?;
    std::fs::create_dir_all(d.join("pkg/DEBIAN"))?;
    std::fs::create_dir_all(d.join("pkg/usr/lib"))?;
    std::fs::copy(d.join("k.hipfb"), d.join("pkg/usr/lib/k.hipfb"))?;
    std::fs::write(
        d.join("pkg/DEBIAN/control"),
        "Package: k\nVersion: 1\nArchitecture: amd64\nMaintainer: k <k@example.com>\n\
         Description: a HIP bundle\n",
    )?;
    run(
        Path::new("/usr/bin/dpkg-deb"),
        &["-Zgzip", "--root-owner-group", "--build", "pkg", "k.deb"],
        d,
    )
    .ok()?;
    let r = limited(d, "prune --keep gfx90a -o out.hipfb k.hipfb")?;
    names("a bundle to -o", &r, "out.hipfb", "File too large")?;
    let r = limited(d, "prune --keep gfx90a -o out.deb k.deb")?;
    names("a .deb to -o", &r, "out.deb", "File too large")?;
    // A static archive of the bundle, cut short or with a broken header.
    let k = std::fs::read(d.join("k.hipfb"))?;
    let mut ar = b"!<arch>\n".to_vec();
    ar.extend(
        format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            "k.hipfb/",
            0,
            0,
            0,
            644,
            k.len()
        )
        .bytes(),
    );
    ar.extend(&k);
    let mut short = ar.clone();
    short.truncate(ar.len() / 2);
    let mut sizeless = ar.clone();
    sizeless[8 + 48..8 + 58].copy_from_slice(b"zz        ");
    let mut unended = ar.clone();
    unended[8 + 58..8 + 60].copy_from_slice(b"xx");
    for (name, bytes) in [
        ("short.a", short),
        ("sizeless.a", sizeless),
        ("unended.a", unended),
    ] {
        std::fs::write(d.join(name), bytes)?;
        for mode in ["--dry-run", "--in-place"] {
            let r = run_within(
                LIMIT,
                &ours(),
                &["prune", "--keep", "gfx90a", mode, name],
                d,
            )?;
            names(&format!("{name} {mode}"), &r, name, "archive")?;
        }
    }
    Ok(())
}

/// `prune -d DIR` into a directory that does not exist makes it, as
/// `extract -o` does.
fn prune_makes_its_output_directory() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    hip_bundle(d, OsStr::new("k.hipfb"), 4096)?;
    let r = run_within(
        LIMIT,
        &ours(),
        &["prune", "--keep", "gfx90a", "-d", "new/sub", "k.hipfb"],
        d,
    )?;
    let out = std::fs::metadata(d.join("new/sub/k.hipfb")).map_or(0, |m| m.len());
    let before = std::fs::metadata(d.join("k.hipfb"))?.len();
    if r.code != 0 || out == 0 || out >= before {
        return Err(format!(
            "exit {}: {}; new/sub/k.hipfb has {out} bytes",
            r.code, r.stderr
        )
        .into());
    }
    Ok(())
}

/// A wheel whose member, a static archive of a bundle, was deflated at
/// level 9 and deflates far worse at prune's level: the pruned wheel is
/// larger, and the report and `--json` say the package grew, by how much
/// (`freed` stays what its member lost).
fn a_package_that_grows_frees_nothing() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    // Blocks of 64 bytes that all start alike, drawn from 400 of them: a
    // deflate that searches its chains far finds the long matches, one
    // that gives up early finds three bytes.
    const MAKE: &str = "import random, subprocess, sys, zipfile\n\
        r = random.Random(5)\n\
        pool = [b'XYZ' + bytes(r.getrandbits(8) for _ in range(61)) for _ in range(400)]\n\
        open('a90', 'wb').write(b''.join(r.choice(pool) for _ in range(40000)))\n\
        open('a42', 'wb').write(b'gfx942 code')\n\
        open('host', 'wb').write(b'host code')\n\
        subprocess.run([sys.argv[1], 'bundle', '--type', 'o', '-o', 'k.hipfb',\n\
            'host-x86_64-unknown-linux-gnu=host', 'hipv4-amdgcn-amd-amdhsa--gfx90a=a90',\n\
            'hipv4-amdgcn-amd-amdhsa--gfx942=a42'], check=True)\n\
        k = open('k.hipfb', 'rb').read()\n\
        ar = b'!<arch>\\n' + b'%-16s%-12d%-6d%-6d%-8s%-10d`\\n' % (b'k.hipfb/', 0, 0, 0, b'644', len(k)) + k\n\
        z = zipfile.ZipFile('k.whl', 'w')\n\
        z.writestr('pkg/libk.a', ar, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)\n\
        z.close()\n";
    run(
        Path::new("/usr/bin/python3"),
        &["-c", MAKE, &ours().to_string_lossy()],
        d,
    )
    .ok()?;
    let r = run_within(
        LIMIT,
        &ours(),
        &[
            "prune", "--keep", "gfx90a", "--json", "-o", "new.whl", "k.whl",
        ],
        d,
    )?;
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout)
        .map_err(|e| format!("exit {}: bad JSON: {e}: {}", r.code, r.stderr))?;
    let f = &doc["files"][0];
    let (before, after) = (f["bytes_before"].as_u64(), f["bytes_after"].as_u64());
    let (Some(before), Some(after)) = (before, after) else {
        return Err(format!("no sizes: {doc}").into());
    };
    if after <= before {
        return Err(format!("the wheel did not grow ({before} to {after} bytes): no test").into());
    }
    // `freed` is what the members lose; the package's own growth is
    // said apart, never as bytes freed.
    if f["package_bytes"]["grew"] != after - before || f["package_bytes"].get("freed").is_some() {
        return Err(format!(
            "{before} to {after} bytes, yet the package's bytes say {}",
            f["package_bytes"]
        )
        .into());
    }
    let r = run_within(
        LIMIT,
        &ours(),
        &["prune", "--keep", "gfx90a", "-o", "new2.whl", "k.whl"],
        d,
    )?;
    let text = String::from_utf8_lossy(&r.stdout);
    let grew = format!("the package grew by {} bytes", after - before);
    if r.code != 0 || !text.contains(&grew) {
        return Err(format!("exit {}: {text}{}", r.code, r.stderr).into());
    }
    Ok(())
}

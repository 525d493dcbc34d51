//! The sixth round of hostile inputs (issue #71), records and checksums:
//! tampering is never laundered — a package file whose bytes do not match
//! its package's record of them (a wheel's RECORD, a `.deb`'s `md5sums`,
//! an installed package's RECORD or conda record in a directory) is
//! refused by name, not pruned with its row rewritten to match, unless
//! `--trust-bytes`, and then the report names the row; and `check`,
//! `inspect --verify` and `prune` agree that a package whose gzip, xz,
//! zstd, bzip2, zip or cpio (`crc`) checksum is wrong is damaged. A
//! package's file prune copies as it is is checked against its row as
//! well as one it rewrites.

use std::ffi::OsStr;

use super::round5_paths::hip_bundle;
use super::*;
use sha2::{Digest as _, Sha256};

use crate::util::{md5_hex, run};

/// What `check` says of a package one of whose rows its member's bytes
/// do not match.
const ROW_WRONG: &str = "a row of the package's record of its files is wrong";

pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(a_wheel_member_its_record_does_not_match_is_refused, &["/usr/bin/python3"]),
        trial!(a_deb_file_its_md5sums_does_not_match_is_refused, &["dpkg-deb"]),
        trial!(a_deb_file_copied_as_it_is_is_checked_against_md5sums, &["dpkg-deb"]),
        trial!(a_tree_file_its_record_does_not_match_is_left, &[]),
        trial!(a_wheel_with_a_wrong_record_row_fails_check, &["/usr/bin/python3"]),
        trial!(a_deb_with_a_wrong_md5sums_line_fails_check, &["dpkg-deb"]),
        trial!(
            a_conda_package_with_a_wrong_paths_json_row_fails_check,
            &["tar", "bzip2", "zstd", "zip"],
        ),
        trial!(
            every_checksum_a_package_carries_is_verified,
            &["/usr/bin/python3", "gzip", "xz", "zstd", "bzip2", "cpio"],
        ),
    ]
}

/// Runs the Python script `script` with `args` in `dir`.
fn python(dir: &Path, script: &str, args: &[&str]) -> Result<(), Failed> {
    let mut a = vec!["-c", script];
    a.extend_from_slice(args);
    run(Path::new("/usr/bin/python3"), &a, dir).ok()?;
    Ok(())
}

/// Runs our binary with `args` in `d`.
fn ours_in(d: &Path, args: &[&str]) -> Result<crate::util::Run, Failed> {
    run_within(LIMIT, &ours(), args, d)
}

/// Fails unless `r` exited `code` and its output names `name`.
fn says(what: &str, r: &crate::util::Run, code: i32, name: &str) -> Result<(), Failed> {
    let out = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
    if r.code != code || !out.contains(name) {
        return Err(format!("{what}: want exit {code} naming '{name}'; exit {}:\n{out}", r.code).into());
    }
    Ok(())
}

/// Makes `in.whl` in `d`: a HIP bundle `pkg/k.hipfb` (deflated), a host
/// ELF without device code `pkg/host.so` (Python's own, stored) and a
/// RECORD giving each its hash. `tamper` then changes the last byte of
/// the member it names after RECORD was written (`k`), or writes the
/// row of the one it names with other bytes' hash (`host`).
fn make_wheel(d: &Path, tamper: &str) -> Result<(), Failed> {
    hip_bundle(d, OsStr::new("k.hipfb"), 4096)?;
    let make = r#"import base64, hashlib, os, sys, zipfile
def digest(b):
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()
k = open('k.hipfb', 'rb').read()
host = open(os.path.realpath(sys.executable), 'rb').read()
files = {'pkg/__init__.py': b'', 'pkg/k.hipfb': k, 'pkg/host.so': host,
         'pkg/data.txt': b'no device code here ' * 50}
rows = {n: (digest(b), len(b)) for n, b in files.items()}
if sys.argv[1] == 'k':
    files['pkg/k.hipfb'] = k[:-1] + bytes([k[-1] ^ 1])
if sys.argv[1] == 'host':
    rows['pkg/host.so'] = (digest(b'other bytes'), len(host))
if sys.argv[1] == 'data':
    rows['pkg/data.txt'] = (digest(b'other bytes'), 1000)
if sys.argv[1] == 'init':
    rows['pkg/__init__.py'] = (digest(b'x'), 0)
rec = 'pkg-1.0.dist-info/RECORD'
text = ''.join(f'{n},{h},{s}\n' for n, (h, s) in rows.items()) + rec + ',,\n'
with zipfile.ZipFile('in.whl', 'w') as z:
    for n, b in files.items():
        m = zipfile.ZIP_STORED if n == 'pkg/host.so' else zipfile.ZIP_DEFLATED
        z.writestr(n, b, compress_type=m)
    z.writestr(rec, text)
"#;
    python(d, make, &[tamper])
}

/// A wheel whose bundle member was changed after RECORD was written, or
/// whose host library (no device code) has a wrong row, or a member
/// prune copies as it is stored (a text file, an empty `__init__.py`):
/// `prune -o` exits 2, names the member and writes nothing;
/// `--trust-bytes` prunes it and the report (text and `--json`) names the
/// row. An untouched wheel prunes cleanly.
fn a_wheel_member_its_record_does_not_match_is_refused() -> Result<(), Failed> {
    for (tamper, member) in [
        ("k", "pkg/k.hipfb"),
        ("host", "pkg/host.so"),
        ("data", "pkg/data.txt"),
        ("init", "pkg/__init__.py"),
    ] {
        let t = tempdir();
        let d = t.path();
        make_wheel(d, tamper)?;
        let prune = ["prune", "--keep", "gfx90a", "-o", "out.whl", "in.whl"];
        let r = ours_in(d, &prune)?;
        says(&format!("{tamper}: prune"), &r, 2, member)?;
        if d.join("out.whl").exists() {
            return Err(format!("{tamper}: a refused wheel was written").into());
        }
        let mut trusting = prune.to_vec();
        trusting.insert(1, "--trust-bytes");
        let r = ours_in(d, &trusting)?;
        says(&format!("{tamper}: prune --trust-bytes"), &r, 0, member)?;
        trusting.insert(1, "--json");
        std::fs::remove_file(d.join("out.whl"))?;
        let r = ours_in(d, &trusting)?;
        let json = String::from_utf8_lossy(&r.stdout);
        if r.code != 0 || !json.contains("\"records_wrong\"") || !json.contains(member) {
            return Err(format!("{tamper}: --json names no wrong row:\n{json}").into());
        }
    }
    let t = tempdir();
    let d = t.path();
    make_wheel(d, "none")?;
    let r = ours_in(d, &["prune", "--keep", "gfx90a", "-o", "out.whl", "in.whl"])?;
    if r.code != 0 || r.stdout.windows(12).any(|w| w == b"record wrong") {
        return Err(format!("an untouched wheel: exit {}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// A `.deb` built by `dpkg-deb` whose `md5sums` gives the bundle another
/// file's MD5: `prune -o` exits 2 naming it, nothing written;
/// `--trust-bytes` prunes it and names the line.
fn a_deb_file_its_md5sums_does_not_match_is_refused() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::create_dir_all(d.join("pkg/DEBIAN"))?;
    std::fs::create_dir_all(d.join("pkg/usr/lib"))?;
    hip_bundle(d, OsStr::new("pkg/usr/lib/k.hipfb"), 4096)?;
    let sums = format!("{}  usr/lib/k.hipfb\n", md5_hex(b"other bytes"));
    std::fs::write(d.join("pkg/DEBIAN/md5sums"), sums)?;
    std::fs::write(
        d.join("pkg/DEBIAN/control"),
        "Package: k\nVersion: 1\nArchitecture: amd64\nMaintainer: k <k@example.com>\n\
         Description: a HIP bundle\n",
    )?;
    let args = ["-Zgzip", "--root-owner-group", "--build", "pkg", "in.deb"];
    run(Path::new("/usr/bin/dpkg-deb"), &args, d).ok()?;
    let r = ours_in(d, &["prune", "--keep", "gfx90a", "-o", "out.deb", "in.deb"])?;
    says("prune", &r, 2, "usr/lib/k.hipfb")?;
    if d.join("out.deb").exists() {
        return Err("a refused package was written".into());
    }
    let args = ["prune", "--trust-bytes", "--keep", "gfx90a", "-o", "out.deb", "in.deb"];
    let r = ours_in(d, &args)?;
    says("prune --trust-bytes", &r, 0, "md5sums: the 'MD5' of 'usr/lib/k.hipfb'")?;
    Ok(())
}

/// A `.deb` whose `md5sums` is right for its HIP bundle but wrong for a
/// file prune copies as it is (a text file; a file of 10 bytes): `prune
/// -o` exits 2 naming the file, nothing written; `--trust-bytes` prunes
/// it and names the line; right rows prune cleanly.
fn a_deb_file_copied_as_it_is_is_checked_against_md5sums() -> Result<(), Failed> {
    for (tamper, file) in [("", ""), ("doc", "usr/share/doc/k/notes.txt"), ("tiny", "usr/share/k/tiny")] {
        let t = tempdir();
        let d = t.path();
        std::fs::create_dir_all(d.join("pkg/DEBIAN"))?;
        std::fs::create_dir_all(d.join("pkg/usr/lib"))?;
        std::fs::create_dir_all(d.join("pkg/usr/share/doc/k"))?;
        hip_bundle(d, OsStr::new("pkg/usr/lib/k.hipfb"), 4096)?;
        let notes = b"no device code here ".repeat(20);
        std::fs::write(d.join("pkg/usr/share/doc/k/notes.txt"), &notes)?;
        std::fs::create_dir_all(d.join("pkg/usr/share/k"))?;
        std::fs::write(d.join("pkg/usr/share/k/tiny"), b"0123456789")?;
        let k = std::fs::read(d.join("pkg/usr/lib/k.hipfb"))?;
        let sum = |f: &str, b: &[u8]| match f == file {
            true => md5_hex(b"other bytes"),
            false => md5_hex(b),
        };
        let sums = format!(
            "{}  usr/lib/k.hipfb\n{}  usr/share/doc/k/notes.txt\n{}  usr/share/k/tiny\n",
            sum("usr/lib/k.hipfb", &k),
            sum("usr/share/doc/k/notes.txt", &notes),
            sum("usr/share/k/tiny", b"0123456789"),
        );
        std::fs::write(d.join("pkg/DEBIAN/md5sums"), sums)?;
        std::fs::write(
            d.join("pkg/DEBIAN/control"),
            "Package: k\nVersion: 1\nArchitecture: amd64\nMaintainer: k <k@example.com>\n\
             Description: a HIP bundle\n",
        )?;
        let args = ["-Zgzip", "--root-owner-group", "--build", "pkg", "in.deb"];
        run(Path::new("/usr/bin/dpkg-deb"), &args, d).ok()?;
        let r = ours_in(d, &["prune", "--keep", "gfx90a", "-o", "out.deb", "in.deb"])?;
        if tamper.is_empty() {
            says("prune of a true package", &r, 0, "in.deb")?;
            continue;
        }
        says(&format!("{tamper}: prune"), &r, 2, file)?;
        if d.join("out.deb").exists() {
            return Err(format!("{tamper}: a refused package was written").into());
        }
        let args = ["prune", "--trust-bytes", "--keep", "gfx90a", "-o", "out.deb", "in.deb"];
        let r = ours_in(d, &args)?;
        says(&format!("{tamper}: prune --trust-bytes"), &r, 0, &format!("the 'MD5' of '{file}'"))?;
    }
    Ok(())
}

/// A venv-like tree whose RECORD gives `k.hipfb` a wrong hash, and a
/// conda environment whose record does: pruned `--in-place`, exit 1, the
/// file named and left as it was, the record unchanged; the file the
/// RECORD gives rightly (`ok.hipfb`) is pruned and its row rewritten; a
/// host library the run leaves as it is (`host.so`) is not judged by its
/// wrong row.
fn a_tree_file_its_record_does_not_match_is_left() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let site = d.join("venv/lib/site");
    std::fs::create_dir_all(site.join("pkg"))?;
    std::fs::create_dir_all(site.join("pkg-1.0.dist-info"))?;
    hip_bundle(d, OsStr::new("venv/lib/site/pkg/k.hipfb"), 4096)?;
    hip_bundle(d, OsStr::new("venv/lib/site/pkg/ok.hipfb"), 4096)?;
    let ok = std::fs::read(site.join("pkg/ok.hipfb"))?;
    let sha = |b: &[u8]| {
        use sha2::Digest as _;
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(b))
    };
    // A host library without device code whose row is wrong too: the run
    // leaves it as it is, so its row is not prune's to judge (nor is it
    // hashed).
    std::fs::copy("/bin/true", site.join("pkg/host.so"))?;
    let record = format!(
        "pkg/k.hipfb,sha256={},{}\npkg/ok.hipfb,sha256={},{}\npkg/host.so,sha256={},1\n",
        sha(b"other bytes"),
        ok.len(),
        sha(&ok),
        ok.len(),
        sha(b"other bytes"),
    );
    std::fs::write(site.join("pkg-1.0.dist-info/RECORD"), &record)?;
    let env = d.join("env");
    std::fs::create_dir_all(env.join("conda-meta"))?;
    std::fs::create_dir_all(env.join("lib"))?;
    hip_bundle(d, OsStr::new("env/lib/c.hipfb"), 4096)?;
    let c = std::fs::read(env.join("lib/c.hipfb"))?;
    let meta = format!(
        "{{\"files\": [\"lib/c.hipfb\"], \"paths_data\": {{\"paths\": [{{\"_path\": \
         \"lib/c.hipfb\", \"path_type\": \"hardlink\", \"sha256\": \"{}\", \"size_in_bytes\": \
         {}}}], \"paths_version\": 1}}}}\n",
        "ab".repeat(32),
        c.len()
    );
    std::fs::write(env.join("conda-meta/c-1.0-0.json"), &meta)?;
    let k = std::fs::read(site.join("pkg/k.hipfb"))?;
    let r = ours_in(d, &["prune", "--keep", "gfx90a", "--in-place", "venv", "env"])?;
    says("prune --in-place", &r, 1, "k.hipfb")?;
    says("prune --in-place", &r, 1, "c.hipfb")?;
    let said = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
    if said.contains("host.so") {
        return Err(format!("host.so, left as it is, was judged by its row:\n{said}").into());
    }
    let same = |p: &Path, was: &[u8]| -> Result<(), Failed> {
        match std::fs::read(p)? == was {
            true => Ok(()),
            false => Err(format!("{} changed", p.display()).into()),
        }
    };
    same(&site.join("pkg/k.hipfb"), &k)?;
    same(&env.join("lib/c.hipfb"), &c)?;
    same(&env.join("conda-meta/c-1.0-0.json"), meta.as_bytes())?;
    let now = std::fs::read(site.join("pkg/ok.hipfb"))?;
    let rec = std::fs::read_to_string(site.join("pkg-1.0.dist-info/RECORD"))?;
    let want = format!("pkg/k.hipfb,sha256={},{}\n", sha(b"other bytes"), ok.len());
    if now.len() >= ok.len() || !rec.starts_with(&want) || !rec.contains(&sha(&now)) {
        return Err(format!("ok.hipfb not pruned or RECORD wrong:\n{rec}").into());
    }
    // Trusted, the files are pruned and the rows named.
    let r = ours_in(d, &["prune", "--trust-bytes", "--keep", "gfx90a", "--in-place", "venv", "env"])?;
    says("prune --trust-bytes --in-place", &r, 0, "the 'sha256' of 'lib/c.hipfb'")?;
    says("prune --trust-bytes --in-place", &r, 0, "the 'hash' of 'pkg/k.hipfb'")?;
    Ok(())
}

/// `check`, `inspect --verify` and `prune` (with rules that drop nothing,
/// so that a whole package is copied as it is) on `file` all exit `code`;
/// prune writing nothing when it fails.
fn agree(d: &Path, file: &str, code: i32) -> Result<(), Failed> {
    let _ = std::fs::remove_dir_all(d.join("out"));
    std::fs::create_dir(d.join("out"))?;
    for args in [
        vec!["check", "--require", "gfx90a", file],
        vec!["inspect", "--verify", file],
        vec!["prune", "--keep", "gfx90a", "--keep", "gfx942", "-d", "out", file],
    ] {
        let r = ours_in(d, &args)?;
        if r.code != code {
            let out = String::from_utf8_lossy(&r.stdout);
            return Err(format!("{args:?}: want exit {code}; exit {}:\n{out}{}", r.code, r.stderr).into());
        }
    }
    if code != 0 && std::fs::read_dir(d.join("out"))?.next().is_some() {
        return Err(format!("{file}: prune wrote an output").into());
    }
    Ok(())
}

/// `file` in `d` with the byte at `at` (from the end when negative)
/// flipped.
fn flip(d: &Path, file: &str, at: i64) -> Result<(), Failed> {
    let mut b = std::fs::read(d.join(file))?;
    let i = if at < 0 { b.len() - (-at) as usize } else { at as usize };
    b[i] ^= 0x55;
    std::fs::write(d.join(file), b)?;
    Ok(())
}

/// Packages holding a HIP bundle whose checksum is wrong: a gzip
/// trailer's CRC-32 (a `.tar.gz`, a `.hipfb.gz`), an xz block's check, a
/// zstd frame's checksum, a bzip2 block's CRC, the CRC-32 of a stored
/// zip member and of a deflated one without device code. `check`,
/// `inspect --verify` and `prune` each refuse every one (exit 2).
fn every_checksum_a_package_carries_is_verified() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    hip_bundle(d, OsStr::new("k.hipfb"), 4096)?;
    run(Path::new("/usr/bin/tar"), &["-cf", "k.tar", "k.hipfb"], d).ok()?;
    for (tool, args, out) in [
        ("gzip", vec!["-kc", "k.tar"], "k.tar.gz"),
        ("gzip", vec!["-kc", "k.hipfb"], "k.hipfb.gz"),
        ("xz", vec!["-kc", "k.tar"], "k.tar.xz"),
        ("zstd", vec!["-qc", "k.tar"], "k.tar.zst"),
        ("bzip2", vec!["-kc", "k.tar"], "k.tar.bz2"),
    ] {
        let r = run(Path::new(&format!("/usr/bin/{tool}")), &args, d).ok()?;
        std::fs::write(d.join(out), r.stdout)?;
    }
    // Before damage each is read and copied.
    for f in ["k.tar.gz", "k.hipfb.gz", "k.tar.xz", "k.tar.zst", "k.tar.bz2"] {
        agree(d, f, 0)?;
    }
    flip(d, "k.tar.gz", -8)?;
    flip(d, "k.hipfb.gz", -8)?;
    // xz: the block's CRC-64 lies just before the index, whose size the
    // stream footer gives.
    let xz = std::fs::read(d.join("k.tar.xz"))?;
    let backward = i64::from(u32::from_le_bytes(xz[xz.len() - 8..xz.len() - 4].try_into()?));
    flip(d, "k.tar.xz", -12 - (backward + 1) * 4 - 1)?;
    flip(d, "k.tar.zst", -1)?;
    // bzip2: "BZh9", the block magic, then the block's CRC.
    flip(d, "k.tar.bz2", 10)?;
    for f in ["k.tar.gz", "k.hipfb.gz", "k.tar.xz", "k.tar.zst", "k.tar.bz2"] {
        agree(d, f, 2)?;
    }
    // Zips: the CRC-32 in the local header and the central directory.
    let make = r#"import zipfile
k = open('k.hipfb', 'rb').read()
for out, stored in (('s.whl', True), ('t.whl', False)):
    with zipfile.ZipFile(out, 'w') as z:
        z.writestr('pkg/k.hipfb', k, compress_type=zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED)
        z.writestr('pkg/data.txt', b'no device code here ' * 50, compress_type=zipfile.ZIP_DEFLATED)
    b = bytearray(open(out, 'rb').read())
    name = b'pkg/k.hipfb' if stored else b'pkg/data.txt'
    for sig, at, fixed in ((b'PK\x03\x04', 14, 30), (b'PK\x01\x02', 16, 46)):
        i = b.find(sig)
        while i >= 0:
            if b[i + fixed:i + fixed + len(name)] == name:
                b[i + at] ^= 0x55
            i = b.find(sig, i + 4)
    open(out, 'wb').write(b)
"#;
    python(d, make, &[])?;
    agree(d, "s.whl", 2)?;
    agree(d, "t.whl", 2)?;
    // cpio's "crc" format: each file's data sums to its header's check.
    let sh = ["-c", "echo k.hipfb | cpio --quiet -o -H crc > k.cpio"];
    run(Path::new("/bin/sh"), &sh, d).ok()?;
    agree(d, "k.cpio", 0)?;
    let k = std::fs::read(d.join("k.hipfb"))?;
    let cpio = std::fs::read(d.join("k.cpio"))?;
    let at = cpio
        .windows(k.len())
        .position(|w| w == k.as_slice())
        .ok_or("the bundle is not in the cpio")?;
    flip(d, "k.cpio", (at + k.len() - 1) as i64)?;
    agree(d, "k.cpio", 2)?;
    Ok(())
}

/// `check --forbid gfx1100` of the package `file` in `d`, whose row for
/// `member` is wrong: exit 2, naming the member and saying the row is
/// wrong; `inspect --verify` and `size` fail alike, and `check`,
/// `inspect --verify` and `prune` agree ([`agree`]).
fn row_refused(d: &Path, file: &str, member: &str) -> Result<(), Failed> {
    let r = ours_in(d, &["check", "--forbid", "gfx1100", file])?;
    says(&format!("{file}: check"), &r, 2, member)?;
    says(&format!("{file}: check"), &r, 2, ROW_WRONG)?;
    let r = ours_in(d, &["inspect", "--verify", file])?;
    says(&format!("{file}: inspect --verify"), &r, 2, member)?;
    let r = ours_in(d, &["size", file])?;
    says(&format!("{file}: size"), &r, 2, member)?;
    agree(d, file, 2)
}

/// Wheels made by Python's zipfile: one whose bundle changed after its
/// RECORD was written, one whose RECORD gives a text member (no device
/// code, deflated) another file's hash: `check` exits 2 naming the
/// member ([`row_refused`]); the untouched wheel passes everything.
fn a_wheel_with_a_wrong_record_row_fails_check() -> Result<(), Failed> {
    for (tamper, member) in [("k", "pkg/k.hipfb"), ("data", "pkg/data.txt"), ("none", "")] {
        let t = tempdir();
        let d = t.path();
        make_wheel(d, tamper)?;
        if member.is_empty() {
            let r = ours_in(d, &["check", "--forbid", "gfx1100", "in.whl"])?;
            says("an untouched wheel: check", &r, 0, "in.whl")?;
            agree(d, "in.whl", 0)?;
            continue;
        }
        row_refused(d, "in.whl", member)?;
    }
    Ok(())
}

/// `.deb`s built by `dpkg-deb` whose `md5sums` is right, or wrong for a
/// text file beside the HIP bundle: the wrong one fails `check` naming
/// the file ([`row_refused`]), the right one passes.
fn a_deb_with_a_wrong_md5sums_line_fails_check() -> Result<(), Failed> {
    for wrong in [false, true] {
        let t = tempdir();
        let d = t.path();
        std::fs::create_dir_all(d.join("pkg/DEBIAN"))?;
        std::fs::create_dir_all(d.join("pkg/usr/lib"))?;
        std::fs::create_dir_all(d.join("pkg/usr/share/doc/k"))?;
        hip_bundle(d, OsStr::new("pkg/usr/lib/k.hipfb"), 4096)?;
        let notes = b"no device code here ".repeat(20);
        std::fs::write(d.join("pkg/usr/share/doc/k/notes.txt"), &notes)?;
        let k = std::fs::read(d.join("pkg/usr/lib/k.hipfb"))?;
        let notes_md5 = match wrong {
            true => md5_hex(b"other bytes"),
            false => md5_hex(&notes),
        };
        let sums =
            format!("{}  usr/lib/k.hipfb\n{notes_md5}  usr/share/doc/k/notes.txt\n", md5_hex(&k));
        std::fs::write(d.join("pkg/DEBIAN/md5sums"), sums)?;
        std::fs::write(
            d.join("pkg/DEBIAN/control"),
            "Package: k\nVersion: 1\nArchitecture: amd64\nMaintainer: k <k@example.com>\n\
             Description: a HIP bundle\n",
        )?;
        let args = ["-Zxz", "--root-owner-group", "--build", "pkg", "in.deb"];
        run(Path::new("/usr/bin/dpkg-deb"), &args, d).ok()?;
        match wrong {
            true => row_refused(d, "in.deb", "usr/share/doc/k/notes.txt")?,
            false => {
                let r = ours_in(d, &["check", "--forbid", "gfx1100", "in.deb"])?;
                says("a true .deb: check", &r, 0, "in.deb")?;
                agree(d, "in.deb", 0)?;
            }
        }
    }
    Ok(())
}

/// Conda packages made with GNU tar, bzip2, zstd and zip (a `.tar.bz2`
/// and a `.conda` of the same files: `info/index.json`,
/// `info/paths.json`, a HIP bundle `lib/k.hipfb` and a text file
/// `lib/notes.txt`) whose `paths.json` is right, or gives the text file
/// a wrong `sha256` (then, separately, a wrong `size_in_bytes`): each
/// wrong one fails `check` naming the file ([`row_refused`]); the right
/// ones pass.
fn a_conda_package_with_a_wrong_paths_json_row_fails_check() -> Result<(), Failed> {
    for wrong in ["", "sha256", "size_in_bytes"] {
        let t = tempdir();
        let d = t.path();
        std::fs::create_dir_all(d.join("k/info"))?;
        std::fs::create_dir_all(d.join("k/lib"))?;
        std::fs::write(d.join("k/info/index.json"), r#"{"name": "k", "version": "1"}"#)?;
        hip_bundle(d, OsStr::new("k/lib/k.hipfb"), 4096)?;
        let notes = b"no device code here ".repeat(20);
        std::fs::write(d.join("k/lib/notes.txt"), &notes)?;
        let k = std::fs::read(d.join("k/lib/k.hipfb"))?;
        let hex = |b: &[u8]| -> String { Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect() };
        let mut rows = vec![
            serde_json::json!({"_path": "lib/k.hipfb", "path_type": "hardlink",
                "sha256": hex(&k), "size_in_bytes": k.len()}),
            serde_json::json!({"_path": "lib/notes.txt", "path_type": "hardlink",
                "sha256": hex(&notes), "size_in_bytes": notes.len()}),
        ];
        match wrong {
            "sha256" => rows[1]["sha256"] = hex(b"other bytes").into(),
            "size_in_bytes" => rows[1]["size_in_bytes"] = (notes.len() + 1).into(),
            _ => {}
        }
        let paths = serde_json::json!({"paths": rows, "paths_version": 1});
        std::fs::write(d.join("k/info/paths.json"), serde_json::to_string_pretty(&paths)?)?;
        let tar = |args: &[&str]| run(Path::new("/usr/bin/tar"), args, d).ok();
        let info = ["info/index.json", "info/paths.json"];
        let pkg = ["lib/k.hipfb", "lib/notes.txt"];
        let mut args = vec!["-C", "k", "--no-recursion", "-cf", "k-1-0.tar"];
        args.extend(info.iter().chain(&pkg));
        tar(&args)?;
        run(Path::new("/usr/bin/bzip2"), &["k-1-0.tar"], d).ok()?;
        let mut args = vec!["-C", "k", "--no-recursion", "-cf", "info-k-1-0.tar"];
        args.extend(info);
        tar(&args)?;
        let mut args = vec!["-C", "k", "--no-recursion", "-cf", "pkg-k-1-0.tar"];
        args.extend(pkg);
        tar(&args)?;
        for t in ["info-k-1-0.tar", "pkg-k-1-0.tar"] {
            run(Path::new("/usr/bin/zstd"), &["-q", "--rm", t], d).ok()?;
        }
        std::fs::write(d.join("metadata.json"), r#"{"conda_pkg_format_version": 2}"#)?;
        let args = ["-q", "-0", "k-1-0.conda", "metadata.json", "pkg-k-1-0.tar.zst", "info-k-1-0.tar.zst"];
        run(Path::new("/usr/bin/zip"), &args, d).ok()?;
        for file in ["k-1-0.tar.bz2", "k-1-0.conda"] {
            if wrong.is_empty() {
                let r = ours_in(d, &["check", "--forbid", "gfx1100", file])?;
                says(&format!("a true {file}: check"), &r, 0, file)?;
                agree(d, file, 0)?;
                continue;
            }
            row_refused(d, file, "lib/notes.txt")?;
            let r = ours_in(d, &["check", "--forbid", "gfx1100", file])?;
            says(file, &r, 2, &format!("the '{wrong}' of 'lib/notes.txt'"))?;
        }
    }
    Ok(())
}

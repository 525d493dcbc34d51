//! `offload-kit prune` on wheels made here (issue #41): a HIP object made
//! by our own `bundle` and `wrap` (a bundle for gfx90a and gfx942 in
//! `.hip_fatbin`) stored in a wheel twice, once deflated under a path with
//! a comma, once stored; the wheel has a top-level `.dist-info` and two
//! vendored ones. Pruned to gfx90a, every RECORD that names the objects
//! gives their new hash and size (checked by Python's `csv` and `hashlib`),
//! the one that names neither stays byte for byte, and pip installs the
//! wheel. A signed wheel is refused when it would change, and a deflated
//! member of 1.5 GiB in a 1.5 MB wheel (a zip bomb) is refused before
//! anything is inflated: one line, exit 2, no temporary file, little
//! memory.

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use crate::util::{clean_failure_code, ours, peak_of, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(every_record_names_the_pruned_members, &[
                "/usr/bin/python3",
                "/usr/lib/python3.11/ensurepip/__init__.py",
            ]),
        trial!(a_signed_wheel_is_refused_when_it_would_change, &["/usr/bin/python3"]),
        trial!(a_zip_bomb_is_refused_before_it_is_inflated, &["/usr/bin/python3"]),
    ]
}

/// The name pip wants for the wheel.
const WHEEL: &str = "offload_demo-1.0-py3-none-any.whl";

/// The member with a comma in its path (deflated).
const COMMA: &str = "offload_demo/lib,gpu.so";

/// The member stored as is.
const PLAIN: &str = "offload_demo/libplain.so";

/// Runs the Python script `script` with `args` in `dir`; its standard
/// output.
fn python(dir: &Path, script: &str, args: &[&str]) -> Result<String, Failed> {
    let mut a = vec!["-c", script];
    a.extend_from_slice(args);
    let r = run(Path::new("/usr/bin/python3"), &a, dir).ok()?;
    Ok(String::from_utf8_lossy(&r.stdout).into_owned())
}

/// Makes `dir/lib.o` (a HIP object: a bundle of a host entry, a gfx90a
/// and a gfx942 image, registered by `wrap`), `dir/pruned.o` (it pruned
/// to gfx90a on its own) and `dir/in.whl`, the wheel described above,
/// with `extra` (member names) added, each holding a few bytes.
fn wheel(dir: &Path, extra: &[&str]) -> Result<(), Failed> {
    for (name, seed) in [("a.o", 1u64), ("b.o", 2)] {
        let mut elf = b"\x7fELF".to_vec();
        elf.extend(crate::util::bytes(seed, 20_000).iter().map(|b| b % 8));
        std::fs::write(dir.join(name), elf)?;
    }
    std::fs::write(dir.join("h.o"), b"")?;
    let ours_ok = |args: &[&str]| run(&ours(), args, dir).ok().map(drop);
    ours_ok(&[
        "bundle",
        "--type",
        "o",
        "-o",
        "b.hipfb",
        "host-x86_64-unknown-linux-gnu=h.o",
        "hip-amdgcn-amd-amdhsa--gfx90a=a.o",
        "hip-amdgcn-amd-amdhsa--gfx942=b.o",
    ])?;
    ours_ok(&["wrap", "--kind=hip", "-o", "lib.o", "b.hipfb"])?;
    ours_ok(&["prune", "--keep", "gfx90a", "-o", "pruned.o", "lib.o"])?;
    // Each RECORD in its own line terminator: the top-level one LF, the
    // vendored ones CRLF.
    let make = r#"import base64, csv, hashlib, io, sys, zipfile
elf = open('lib.o', 'rb').read()
def digest(b):
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()
files = {
    'offload_demo/__init__.py': b'',
    sys.argv[1]: elf,
    sys.argv[2]: elf,
    'offload_demo-1.0.dist-info/METADATA': b'Metadata-Version: 2.1\nName: offload-demo\nVersion: 1.0\n',
    'offload_demo-1.0.dist-info/WHEEL':
        b'Wheel-Version: 1.0\nGenerator: offload-kit-test\nRoot-Is-Purelib: false\nTag: py3-none-any\n',
}
for n in sys.argv[3:]:
    files[n] = b'x'
def record(own, names, end):
    s = io.StringIO()
    w = csv.writer(s, lineterminator=end)
    for n in names:
        w.writerow([n, digest(files[n]), len(files[n])])
    w.writerow([own, '', ''])
    return s.getvalue().encode()
top = 'offload_demo-1.0.dist-info/RECORD'
helper = 'offload_demo/_vendor/gpu_helper-1.0.dist-info/RECORD'
other = 'offload_demo/_vendor/other-1.0.dist-info/RECORD'
with zipfile.ZipFile('in.whl', 'w') as z:
    for n, b in files.items():
        method = zipfile.ZIP_STORED if n == sys.argv[2] else zipfile.ZIP_DEFLATED
        z.writestr(n, b, compress_type=method)
    z.writestr(top, record(top, list(files), '\n'), compress_type=zipfile.ZIP_DEFLATED)
    z.writestr(helper, record(helper, [sys.argv[1], 'offload_demo/__init__.py'], '\r\n'),
               compress_type=zipfile.ZIP_DEFLATED)
    z.writestr(other, record(other, ['offload_demo/__init__.py'], '\r\n'),
               compress_type=zipfile.ZIP_DEFLATED)
"#;
    let mut args = vec![COMMA, PLAIN];
    args.extend_from_slice(extra);
    python(dir, make, &args)?;
    Ok(())
}

/// Pruned to gfx90a: both objects are `pruned.o` (smaller than `lib.o`);
/// every RECORD's rows match their files (hash and size, read as pip reads
/// them, with Python's `csv`), the two that name the objects name them
/// with `pruned.o`'s hash and size, the vendored one that does not stays
/// byte for byte; pip installs the wheel, and the installed object is
/// `pruned.o`.
fn every_record_names_the_pruned_members() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    wheel(d, &[])?;
    let (before, after) = (
        std::fs::metadata(d.join("lib.o"))?.len(),
        std::fs::metadata(d.join("pruned.o"))?.len(),
    );
    if after >= before {
        return Err(format!("lib.o did not shrink: {before} -> {after} bytes").into());
    }
    run(
        &ours(),
        &["prune", "--keep", "gfx90a", "-o", WHEEL, "in.whl"],
        d,
    )
    .ok()?;
    // For each RECORD: its name and the rows naming either object, as
    // `path hash size`; every row with a hash checked against its file.
    let check = r#"import base64, csv, hashlib, io, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
pruned = open('pruned.o', 'rb').read()
for rec in sorted(n for n in z.namelist() if n.endswith('.dist-info/RECORD')):
    for row in csv.reader(io.StringIO(z.read(rec).decode(), newline='')):
        if not row or not row[1]:
            continue
        algo, want = row[1].split('=', 1)
        data = z.read(row[0])
        got = base64.urlsafe_b64encode(hashlib.new(algo, data).digest()).rstrip(b'=').decode()
        assert got == want and int(row[2]) == len(data), (rec, row)
        if row[0] in sys.argv[2:]:
            assert data == pruned, row[0]
            print(rec, row[0], row[1], row[2])
"#;
    let got = python(d, check, &[WHEEL, COMMA, PLAIN])?;
    let sha = python(
        d,
        "import base64, hashlib\nprint(base64.urlsafe_b64encode(hashlib.sha256(open('pruned.o', 'rb').read()).digest()).rstrip(b'=').decode())",
        &[],
    )?;
    let row = |rec: &str, path: &str| format!("{rec} {path} sha256={} {after}", sha.trim());
    let want = [
        row("offload_demo-1.0.dist-info/RECORD", COMMA),
        row("offload_demo-1.0.dist-info/RECORD", PLAIN),
        row(
            "offload_demo/_vendor/gpu_helper-1.0.dist-info/RECORD",
            COMMA,
        ),
    ];
    same(
        "RECORD rows naming the objects",
        got.lines().collect::<Vec<_>>(),
        want.iter().map(String::as_str).collect(),
    )?;
    // The RECORD that names neither object, and the other members, as they
    // were.
    let members = "import sys, zipfile\n\
        a, b = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2])\n\
        for n in a.namelist():\n\
        \x20   print(n, a.read(n) == b.read(n))\n";
    let same_members = python(d, members, &["in.whl", WHEEL])?;
    let changed: Vec<&str> = same_members
        .lines()
        .filter_map(|l| l.strip_suffix(" False"))
        .collect();
    same(
        "members that changed",
        changed,
        vec![
            COMMA,
            PLAIN,
            "offload_demo-1.0.dist-info/RECORD",
            "offload_demo/_vendor/gpu_helper-1.0.dist-info/RECORD",
        ],
    )?;
    run(Path::new("/usr/bin/python3"), &["-m", "venv", "venv"], d).ok()?;
    run(
        &d.join("venv/bin/pip"),
        &["install", "-q", "--no-index", "--no-deps", WHEEL],
        d,
    )
    .ok()?;
    let site = std::fs::read_dir(d.join("venv/lib"))?
        .next()
        .ok_or("no site-packages")??
        .path()
        .join("site-packages");
    if std::fs::read(site.join(COMMA))? != std::fs::read(d.join("pruned.o"))? {
        return Err(format!("the installed {COMMA} is not the pruned object").into());
    }
    Ok(())
}

/// A wheel with `RECORD.jws` (and one with `RECORD.p7s`) in its
/// `.dist-info`: pruned to gfx90a it is refused (exit 2, one line naming
/// the signature, no output); pruned of nothing it is written as it was.
fn a_signed_wheel_is_refused_when_it_would_change() -> Result<(), Failed> {
    for sig in ["RECORD.jws", "RECORD.p7s"] {
        let t = tempdir();
        let d = t.path();
        let member = format!("offload_demo-1.0.dist-info/{sig}");
        wheel(d, &[&member])?;
        let r = run(
            &ours(),
            &["prune", "--keep", "gfx90a", "-o", WHEEL, "in.whl"],
            d,
        );
        clean_failure_code(&format!("prune of a wheel with {sig}"), &r, &member, 2)?;
        if !r.stderr.contains("signed") {
            return Err(format!("the error does not say the wheel is signed: {}", r.stderr).into());
        }
        if d.join(WHEEL).exists() {
            return Err("a refused wheel was written".into());
        }
        // Nothing to prune: nothing to refuse.
        run(
            &ours(),
            &["prune", "--keep", "gfx90a,gfx942", "-o", WHEEL, "in.whl"],
            d,
        )
        .ok()?;
        if !d.join(WHEEL).exists() {
            return Err("a wheel with nothing to prune was not written".into());
        }
    }
    Ok(())
}

/// A wheel of one deflated member, `pkg/libbig.so`: an ELF header and 1.5
/// GiB of zeros, in about 1.5 MB (over 1024 times smaller: more than its
/// budget). `prune -d out` refuses it in under 5 s and 512 MiB: exit 2,
/// one line naming the wheel, the member and the budget, and no file left
/// in the output directory nor in `TMPDIR`; with `--max-uncompressed 1G`
/// the line names that option. `inspect` refuses it too.
fn a_zip_bomb_is_refused_before_it_is_inflated() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let make = r#"import struct, sys, zipfile
head = b'\x7fELF\x02\x01\x01' + bytes(9) + struct.pack('<HHIQQQIHHHHHH', 3, 62, 1, 0, 0, 0, 0, 64, 56, 0, 64, 0, 0)
assert len(head) == 64
info = zipfile.ZipInfo('pkg/libbig.so', (2024, 1, 1, 0, 0, 0))
info.compress_type = zipfile.ZIP_DEFLATED
with zipfile.ZipFile('x.whl', 'w', compresslevel=9) as z:
    with z.open(info, 'w', force_zip64=True) as f:
        f.write(head)
        zeros = bytes(1 << 24)
        for _ in range(96):
            f.write(zeros)
print(z.getinfo('pkg/libbig.so').file_size)
"#;
    let size: u64 = python(d, make, &[])?.trim().parse()?;
    let wheel = std::fs::metadata(d.join("x.whl"))?.len();
    same("the member's size", size, 64 + (3 << 29))?;
    if size <= wheel * 1024 {
        return Err(format!("the bomb is within budget: {size} bytes in {wheel}").into());
    }
    std::fs::create_dir(d.join("out"))?;
    std::fs::create_dir(d.join("tmp"))?;
    let tmp = d.join("tmp");
    let env = [("TMPDIR", tmp.to_str().ok_or("TMPDIR")?)];
    let started = std::time::Instant::now();
    let (r, kib) = peak_of(
        5,
        &ours(),
        &["prune", "--keep", "sm_80", "-d", "out", "x.whl"],
        &env,
        d,
    )?;
    let took = started.elapsed();
    clean_failure_code(
        "prune of the bomb",
        &r,
        "'x.whl': member 'pkg/libbig.so'",
        2,
    )?;
    let budget = format!(
        "inflates to {size} bytes, more than the {} left of the decompression budget (1024 times",
        wheel * 1024
    );
    if !r.stderr.contains(&budget) {
        return Err(format!("want '{budget}', got: {}", r.stderr).into());
    }
    if kib > 512 << 10 {
        return Err(format!("peak RSS {kib} KiB").into());
    }
    if took.as_secs() >= 5 {
        return Err(format!("took {took:?}").into());
    }
    for dir in ["out", "tmp"] {
        let left: Vec<_> = std::fs::read_dir(d.join(dir))?.collect();
        if !left.is_empty() {
            return Err(format!("{dir}: {} file(s) left", left.len()).into());
        }
    }
    let r = run(
        &ours(),
        &[
            "prune",
            "--keep",
            "sm_80",
            "--max-uncompressed",
            "1G",
            "--dry-run",
            "x.whl",
        ],
        d,
    );
    clean_failure_code("prune --max-uncompressed 1G", &r, "pkg/libbig.so", 2)?;
    if !r
        .stderr
        .contains("more than the 1073741824 left of the decompression budget (--max-uncompressed)")
    {
        return Err(format!("--max-uncompressed 1G: {}", r.stderr).into());
    }
    let r = run(&ours(), &["inspect", "x.whl"], d);
    clean_failure_code("inspect of the bomb", &r, "x.whl", 2)
}

//! The sixth round of hostile inputs (issue #71), one budget for all work:
//! zip entries that point at one member again and again (nested, they
//! multiply), entries of one name, an OCI image naming one layer
//! thousands of times, image metadata that is a FIFO or `/dev/zero`, and
//! standard input, response files and bundled options of any length, and
//! outputs that would hold more than `--max-uncompressed` allows. Each
//! command runs under a time limit, its peak memory measured.

use std::path::Path;

use super::*;
use crate::util::{ours_peak, peak_of, run_within};

pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(zip_entries_naming_one_member_count_against_the_budget, &["/usr/bin/python3"]),
        trial!(zip_entries_of_one_name_are_refused_by_name, &["/usr/bin/python3"]),
        trial!(a_layer_named_thousands_of_times_is_read_once, &["/usr/bin/python3"]),
        trial!(prune_reads_a_layer_named_thousands_of_times_once, &["/usr/bin/python3"]),
        trial!(image_metadata_that_is_no_regular_file_is_refused, &["/usr/bin/python3"]),
        trial!(standard_input_response_files_and_options_are_bounded, &[]),
        trial!(bytes_written_count_against_the_budget, &["/usr/bin/python3"]),
    ]
}

/// Python that writes zips whose central directory names one stored
/// member `n` times under other names (the local header is the first
/// entry's): `nest.whl`, four such zips each inside the next, 100 entries
/// each (21 KB, 10^8 members seen through), and `many.whl`, one member
/// of 1 MiB named 1,000 times.
const ZIPS: &str = r#"
import struct, zlib
def naming(m, n, prefix):
    crc = zlib.crc32(m)
    local = struct.pack('<IHHHHHIIIHH', 0x04034b50, 20, 0, 0, 0, 0, crc, len(m), len(m),
                        len(prefix) + 3, 0) + prefix + b'000' + m
    cd = b''
    for i in range(n):
        name = prefix + b'%03d' % i
        cd += struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 20, 20, 0, 0, 0, 0, crc, len(m),
                          len(m), len(name), 0, 0, 0, 0, 0, 0) + name
    return local + cd + struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, n, n, len(cd), len(local), 0)
z = b'x'
for p in [b'd', b'c', b'b', b'a']:
    z = naming(z, 100, p)
open('nest.whl', 'wb').write(z)
open('many.whl', 'wb').write(naming(bytes(range(256)) * 4096, 1000, b'pkg/m'))
"#;

/// Runs python3 `script` in `d`.
fn python(script: &str, d: &Path) -> Result<(), Failed> {
    let r = run_within(LIMIT, Path::new("/usr/bin/python3"), &["-c", script], d)?;
    if r.code != 0 {
        return Err(format!("python3: exit {}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// That `r` (of `what`) exited `code` within bounds (seconds, MiB of
/// `peak` KiB), its error naming `name`.
fn bounded(what: &str, r: &crate::util::Run, peak: u64, code: i32, name: &str) -> Result<(), Failed> {
    // `check` prints its problems with its report.
    let said = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
    if r.code != code || !said.contains(name) {
        let err = said.chars().take(2000).collect::<String>();
        return Err(format!("{what}: exit {} (want {code}) naming '{name}'?\n{err}", r.code).into());
    }
    if peak > 300 << 10 {
        return Err(format!("{what}: peak memory {} MiB, over 300 MiB", peak >> 10).into());
    }
    Ok(())
}

/// The entries of `dir`.
fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// `nest.whl` stops every scanner within its budget (exit 2, naming it,
/// in seconds and megabytes, not 2.3 GB and an abort); `prune -o` of
/// `many.whl` stops with exit 2 and writes nothing (not a gigabyte).
fn zip_entries_naming_one_member_count_against_the_budget() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    python(ZIPS, d)?;
    let start = std::time::Instant::now();
    for args in [
        &["inspect", "nest.whl"][..],
        &["size", "nest.whl"],
        &["check", "--require", "gfx90a", "nest.whl"],
    ] {
        let (r, peak) = ours_peak(LIMIT, args, d)?;
        bounded(&format!("{args:?}"), &r, peak, 2, "nest.whl")?;
        if !r.stderr.contains("gave before") {
            return Err(format!("{args:?}: no word of repeated members:\n{}", r.stderr).into());
        }
    }
    if start.elapsed().as_secs() > 10 {
        return Err(format!("three scans took {:?}", start.elapsed()).into());
    }
    std::fs::create_dir(d.join("out"))?;
    let args = ["prune", "--drop", "gfx90a", "-o", "out/many.whl", "many.whl"];
    let (r, peak) = ours_peak(LIMIT, &args, d)?;
    bounded("prune -o out/many.whl many.whl", &r, peak, 2, "many.whl")?;
    if !r.stderr.contains("same bytes") || !entries(&d.join("out")).is_empty() {
        let e = &r.stderr;
        return Err(format!("prune: wrote {:?}: {e}", entries(&d.join("out"))).into());
    }
    Ok(())
}

/// A wheel of two entries named `pkg/a.so`: the scanners and prune say
/// so, by name (exit 2), instead of reading one and dropping the other.
fn zip_entries_of_one_name_are_refused_by_name() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let script = "import zipfile, warnings\nwarnings.simplefilter('ignore')\n\
        z = zipfile.ZipFile('dup.whl', 'w')\nz.writestr('pkg/a.so', b'first')\n\
        z.writestr('pkg/a.so', b'second')\nz.close()\n";
    python(script, d)?;
    std::fs::create_dir(d.join("out"))?;
    for args in [
        &["inspect", "dup.whl"][..],
        &["size", "dup.whl"],
        &["prune", "--drop", "gfx90a", "-o", "out/dup.whl", "dup.whl"],
    ] {
        let (r, peak) = ours_peak(LIMIT, args, d)?;
        bounded(&format!("{args:?}"), &r, peak, 2, "dup.whl")?;
        if !r.stderr.contains("2 entries the name 'pkg/a.so'") {
            return Err(format!("{args:?}: the name is not said:\n{}", r.stderr).into());
        }
    }
    if !entries(&d.join("out")).is_empty() {
        return Err(format!("prune wrote {:?}", entries(&d.join("out"))).into());
    }
    Ok(())
}

/// Python that writes an OCI layout `img` of one image whose manifest
/// names one gzipped layer (2 MiB of a file that does not compress)
/// `sys.argv[1]` times; the config gives each its diff ID.
const LAYOUT: &str = r#"
import gzip, hashlib, io, json, os, random, sys, tarfile
n = int(sys.argv[1])
os.makedirs('img/blobs/sha256')
def blob(b, mt):
    h = hashlib.sha256(b).hexdigest()
    open('img/blobs/sha256/' + h, 'wb').write(b)
    return {'mediaType': mt, 'digest': 'sha256:' + h, 'size': len(b)}
t = io.BytesIO()
with tarfile.open(fileobj=t, mode='w') as tf:
    data = random.Random(7).randbytes(2 << 20)
    info = tarfile.TarInfo('usr/lib/libx.so')
    info.size = len(data)
    tf.addfile(info, io.BytesIO(data))
tar = t.getvalue()
layer = blob(gzip.compress(tar, 1), 'application/vnd.oci.image.layer.v1.tar+gzip')
diff = 'sha256:' + hashlib.sha256(tar).hexdigest()
config = blob(json.dumps({'architecture': 'amd64', 'os': 'linux',
    'rootfs': {'type': 'layers', 'diff_ids': [diff] * n}}).encode(),
    'application/vnd.oci.image.config.v1+json')
manifest = blob(json.dumps({'schemaVersion': 2,
    'mediaType': 'application/vnd.oci.image.manifest.v1+json',
    'config': config, 'layers': [layer] * n}).encode(),
    'application/vnd.oci.image.manifest.v1+json')
open('img/index.json', 'w').write(json.dumps({'schemaVersion': 2, 'manifests': [manifest]}))
open('img/oci-layout', 'w').write('{"imageLayoutVersion":"1.0.0"}')
"#;

/// An image naming one 2 MiB layer 2,000 times is read once (the old
/// reading hashed and inflated it 2,000 times: half a minute and more).
fn a_layer_named_thousands_of_times_is_read_once() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let r = run_within(
        LIMIT,
        Path::new("/usr/bin/python3"),
        &["-c", LAYOUT, "2000"],
        d,
    )?;
    if r.code != 0 {
        return Err(format!("python3: {}", r.stderr).into());
    }
    let start = std::time::Instant::now();
    let (r, peak) = ours_peak(LIMIT, &["inspect", "--all", "img"], d)?;
    let took = start.elapsed();
    if r.code != 0 || peak > 300 << 10 || took.as_secs() > 8 {
        let e = &r.stderr;
        return Err(format!("inspect: exit {}, {took:?}, {peak} KiB: {e}", r.code).into());
    }
    let out = String::from_utf8_lossy(&r.stdout);
    if out.matches("usr/lib/libx.so").count() != 1 {
        return Err(format!("inspect lists libx.so other than once:\n{out}").into());
    }
    Ok(())
}

/// `prune -o` of the image naming one 2 MiB layer 2,000 times reads it
/// once, in seconds (the old prune read, inflated and hashed every
/// mention until the budget ran out, half a minute, exit 2); with a
/// `--max-uncompressed` below the layer's size it is refused, nothing
/// written.
fn prune_reads_a_layer_named_thousands_of_times_once() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let r = run_within(LIMIT, Path::new("/usr/bin/python3"), &["-c", LAYOUT, "2000"], d)?;
    if r.code != 0 {
        return Err(format!("python3: {}", r.stderr).into());
    }
    std::fs::create_dir(d.join("out"))?;
    let start = std::time::Instant::now();
    let args = ["prune", "--drop", "gfx90a", "-o", "out/img", "img"];
    let (r, peak) = ours_peak(LIMIT, &args, d)?;
    let took = start.elapsed();
    if r.code != 0 || peak > 300 << 10 || took.as_secs() > 8 {
        let e = &r.stderr;
        return Err(format!("prune: exit {}, {took:?}, {peak} KiB: {e}", r.code).into());
    }
    let args = ["prune", "--drop", "gfx90a", "--max-uncompressed", "1M", "-o", "out/small", "img"];
    let (r, peak) = ours_peak(LIMIT, &args, d)?;
    bounded("prune --max-uncompressed 1M", &r, peak, 2, "budget")?;
    if d.join("out/small").exists() {
        return Err("prune over the budget wrote out/small".into());
    }
    Ok(())
}

/// A layout's `index.json` that is a FIFO, and a manifest blob that is a
/// link to `/dev/zero`: `inspect` and `prune` exit 2 at once, naming it
/// (the old reading waited forever on the FIFO, and read `/dev/zero`
/// until memory ran out).
fn image_metadata_that_is_no_regular_file_is_refused() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let r = run_within(
        LIMIT,
        Path::new("/usr/bin/python3"),
        &["-c", LAYOUT, "1"],
        d,
    )?;
    if r.code != 0 {
        return Err(format!("python3: {}", r.stderr).into());
    }
    let index = std::fs::read_to_string(d.join("img/index.json"))?;
    let v: serde_json::Value = serde_json::from_str(&index)?;
    let manifest = v["manifests"][0]["digest"].as_str().unwrap_or_default()[7..].to_string();
    let blob = d.join("img/blobs/sha256").join(&manifest);
    std::fs::remove_file(&blob)?;
    std::os::unix::fs::symlink("/dev/zero", &blob)?;
    std::fs::create_dir(d.join("out"))?;
    let prune = ["prune", "--drop", "gfx90a", "-o", "out/img", "img"];
    for args in [&["inspect", "img"][..], &prune] {
        let (r, peak) = ours_peak(LIMIT, args, d)?;
        bounded(&format!("{args:?} (/dev/zero)"), &r, peak, 2, &manifest)?;
    }
    std::fs::remove_file(d.join("img/index.json"))?;
    let fifo = run_within(LIMIT, Path::new("mkfifo"), &["img/index.json"], d)?;
    if fifo.code != 0 {
        return Err(format!("mkfifo: {}", fifo.stderr).into());
    }
    for args in [&["inspect", "img"][..], &["check", "--require", "gfx90a", "img"], &prune] {
        let (r, peak) = ours_peak(LIMIT, args, d)?;
        bounded(&format!("{args:?} (FIFO)"), &r, peak, 2, "index.json")?;
    }
    if !entries(&d.join("out")).is_empty() {
        return Err(format!("prune wrote {:?}", entries(&d.join("out"))).into());
    }
    Ok(())
}

/// `roc-obj-extract < /dev/zero` and `llvm-offload-binary @FILE` of 40 MB
/// stop with one error, in bounded memory; `roc-obj-ls` given a megabyte
/// of bundled unknown letters is done in well under a second.
fn standard_input_response_files_and_options_are_bounded() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let extract = crate::util::ours_as("roc-obj-extract");
    let sh = [
        "-c".to_string(),
        "exec \"$0\" < /dev/zero".to_string(),
        extract.to_string_lossy().into_owned(),
    ];
    let (r, peak) = peak_of(LIMIT, Path::new("/bin/sh"), &sh, &[], d)?;
    bounded("roc-obj-extract < /dev/zero", &r, peak, 2, "standard input")?;

    std::fs::write(d.join("big.rsp"), "a\n".repeat(20 << 20))?;
    let packager = crate::util::ours_as("llvm-offload-binary");
    let (r, peak) = peak_of(LIMIT, &packager, &["@big.rsp"], &[], d)?;
    if r.code == 0 || r.stderr.lines().count() != 1 {
        return Err(format!("llvm-offload-binary @big.rsp: exit {}: {}", r.code, r.stderr).into());
    }
    bounded("llvm-offload-binary @big.rsp", &r, peak, r.code, "big.rsp")?;

    // One argument may be 128 KiB long; eight make a megabyte.
    let letters = format!("-{}", "A".repeat(120 << 10));
    let args = vec![letters; 8];
    let ls = crate::util::ours_as("roc-obj-ls");
    let start = std::time::Instant::now();
    let r = run_within(LIMIT, &ls, &args, d)?;
    let took = start.elapsed();
    if took.as_millis() > 2000 || !r.stderr.starts_with("Unknown option: A\n") {
        let head = r.stderr.chars().take(200).collect::<String>();
        return Err(format!("roc-obj-ls -AAAA…: {took:?}, exit {}: {head}", r.code).into());
    }
    Ok(())
}

/// Python that writes `in.whl`: the bundle `fat.hipfb` as `pkg/k.hipfb`
/// and its RECORD, both stored (so that reading it inflates nothing).
const STORED_WHEEL: &str = r#"
import base64, hashlib, zipfile
def digest(b):
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()
k = open('fat.hipfb', 'rb').read()
rec = 'pkg-1.0.dist-info/RECORD'
text = 'pkg/k.hipfb,%s,%d\n%s,,\n' % (digest(k), len(k), rec)
with zipfile.ZipFile('in.whl', 'w') as z:
    z.writestr('pkg/k.hipfb', k, compress_type=zipfile.ZIP_STORED)
    z.writestr(rec, text, compress_type=zipfile.ZIP_STORED)
"#;

/// That `r` (of `what`) exited 2 naming `name` and the limit, and that
/// `dir` holds exactly `left` (names) afterwards.
fn refused_written(
    what: &str,
    r: &crate::util::Run,
    name: &str,
    dir: &Path,
    left: &[&str],
) -> Result<(), Failed> {
    bounded(what, r, 0, 2, name)?;
    if !r.stderr.contains("--max-uncompressed") {
        return Err(format!("{what}: no word of the limit: {}", r.stderr).into());
    }
    let mut now = entries(dir);
    now.sort();
    if now != left {
        return Err(format!("{what}: {} holds {now:?}, want {left:?}", dir.display()).into());
    }
    Ok(())
}

/// Outputs count against `--max-uncompressed`: a bundle of two 64 KiB
/// images pruned to one (`-o`, `--in-place`), a wheel holding it stored
/// (so that nothing is inflated), and `extract` of its two images (128
/// KiB in all, each file under the 100K given) are refused with exit 2,
/// naming the output and the limit, and leave nothing written (in place,
/// the old file); so is `unpack` of an OffloadBinary of the two (exit 1). The old prune and extract wrote them, exit 0: only
/// what was inflated counted. With the default budget each is written.
fn bytes_written_count_against_the_budget() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    super::round5_paths::hip_bundle(d, std::ffi::OsStr::new("fat.hipfb"), 64 << 10)?;
    python(STORED_WHEEL, d)?;
    std::fs::create_dir(d.join("out"))?;
    let out = d.join("out");
    let small = ["--max-uncompressed", "40K"];
    let prune = |input: &str, to: &[&str], limit: &[&str]| {
        let mut args = vec!["prune", "--keep", "gfx90a"];
        args.extend_from_slice(limit);
        args.extend_from_slice(to);
        args.push(input);
        run_within(LIMIT, &ours(), &args, d)
    };
    let r = prune("fat.hipfb", &["-o", "out/fat.hipfb"], &small)?;
    refused_written("prune -o of a bundle", &r, "out/fat.hipfb", &out, &[])?;
    let r = prune("in.whl", &["-o", "out/in.whl"], &small)?;
    refused_written("prune -o of a wheel", &r, "out/in.whl", &out, &[])?;
    let before = std::fs::read(d.join("fat.hipfb"))?;
    let r = prune("fat.hipfb", &["--in-place"], &small)?;
    refused_written("prune --in-place", &r, "fat.hipfb", &out, &[])?;
    if std::fs::read(d.join("fat.hipfb"))? != before {
        return Err("prune --in-place over the budget changed the file".into());
    }
    let extract = ["extract", "--max-uncompressed", "100K", "-o", "out", "fat.hipfb"];
    let r = run_within(LIMIT, &ours(), &extract, d)?;
    refused_written("extract", &r, "fat.hipfb", &out, &[])?;
    // `unpack` checks the images' sizes first: exit 1, as for its other
    // limits (docs/cli.md), nothing written.
    let pack = [
        "pack",
        "-o",
        "ob.bin",
        "--image",
        "file=a90,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip",
        "--image",
        "file=a42,triple=amdgcn-amd-amdhsa,arch=gfx942,kind=hip",
    ];
    run_within(LIMIT, &ours(), &pack, d)?.ok()?;
    let unpack = ["unpack", "ob.bin", "-o", "out", "--max-uncompressed", "100K"];
    let r = run_within(LIMIT, &ours(), &unpack, d)?;
    if r.code != 1 || !r.stderr.contains("ob.bin") || !entries(&out).is_empty() {
        let (c, e) = (r.code, &r.stderr);
        return Err(format!("unpack: exit {c}, wrote {:?}: {e}", entries(&out)).into());
    }
    // The default budget (128 MiB at least) writes each.
    for (input, to) in [("fat.hipfb", "out/fat.hipfb"), ("in.whl", "out/in.whl")] {
        prune(input, &["-o", to], &[])?.ok()?;
    }
    let r = run_within(LIMIT, &ours(), &["extract", "-o", "out", "fat.hipfb"], d)?.ok()?;
    let listed = String::from_utf8_lossy(&r.stdout).lines().count();
    let written = entries(&out).iter().filter(|n| n.contains("gfx9")).count();
    if listed < 2 || written != 2 {
        return Err(format!("extract listed {listed} files, wrote {written} images").into());
    }
    Ok(())
}

//! `roc-obj-ls`, `roc-obj-extract` and `roc-obj`: AMD's scripts (hipcc
//! 5.2.3 from Debian bookworm, unpacked by scripts/roc-obj-tools.sh) and
//! ours under their names, run side by side on the same inputs, each in a
//! folder of its own: standard output, standard error, exit codes and the
//! files written must be the same, byte for byte. On Debian's librocrand
//! and librocsparse, on a HIP library clang-22 builds here (two translation
//! units, two GPUs), on bad inputs; and where the scripts see nothing (the
//! same library built with `--offload-compress`), ours must list and write
//! what the scripts do for the plain build.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libtest_mimic::{Failed, Trial};

use crate::real_libs::{Cache, DEB, downloads, fetched};
use crate::util::{Run, llvm, ours_as, run, run_within_env, same, same_bytes, tempdir};

const LS: &str = "/opt/offload-kit/roc-obj/bin/roc-obj-ls";
const EXTRACT: &str = "/opt/offload-kit/roc-obj/bin/roc-obj-extract";
const OBJ: &str = "/opt/offload-kit/roc-obj/bin/roc-obj";
/// What the scripts run.
const SCRIPT_TOOLS: &[&str] = &[LS, EXTRACT, OBJ, "perl", "objdump", "dd", "getopt", "awk"];
const ROCSPARSE_DEB: &str = "librocsparse0_5.3.0+dfsg-2_amd64.deb";

pub fn tests() -> Vec<Trial> {
    let with = |more: &[&'static str]| -> Vec<&'static str> {
        SCRIPT_TOOLS.iter().chain(more).copied().collect()
    };
    vec![
        trial!(rocrand_deb_as_the_scripts, &with(&["dpkg-deb"])),
        trial!(rocsparse_deb_listed_as_roc_obj_ls, &with(&["dpkg-deb"])),
        trial!(clang_hip_library_as_the_scripts, &with(&["clang++", "llvm-objdump"])),
        trial!(
            clang_compressed_library_as_the_scripts_on_its_plain_build,
            &with(&["clang++", "llvm-objdump"]),
        ),
        trial!(bad_inputs_as_the_scripts, &with(&["llvm-objcopy"])),
        trial!(damaged_bundles_no_panic, &with(&["clang++", "llvm-objcopy"])),
    ]
}

/// The script `tool` (its path) and ours under its name.
fn sides(tool: &str) -> [(&'static str, PathBuf); 2] {
    let name = Path::new(tool).file_name().unwrap_or_default();
    [("real", PathBuf::from(tool)), ("ours", ours_as(&name.to_string_lossy()))]
}

/// Runs the script `tool` and ours with `args` in `work/TAG-real` and
/// `work/TAG-ours` (made empty first), with `env`; fails unless they print
/// and exit the same and leave the same files. Gives the scripts' run.
fn both(work: &Path, tag: &str, tool: &str, args: &[&str], env: &[(&str, &str)]) -> Result<Run, Failed> {
    let mut runs = Vec::new();
    for (who, prog) in sides(tool) {
        let dir = work.join(format!("{tag}-{who}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let r = run_within_env(600, &prog, args, env, &dir)?;
        runs.push((r, crate::util::files(&dir)));
    }
    let (ours, ours_files) = runs.pop().ok_or("no run")?;
    let (real, real_files) = runs.pop().ok_or("no run")?;
    let what = format!("{tag}: {tool} {args:?}");
    same(&format!("{what}: exit code (stderr {:?} / {:?})", ours.stderr, real.stderr), ours.code, real.code)?;
    same(&format!("{what}: stderr"), &ours.stderr, &real.stderr)?;
    same_bytes(&format!("{what}: stdout"), &ours.stdout, &real.stdout)?;
    same(
        &format!("{what}: files written"),
        ours_files.keys().collect::<Vec<_>>(),
        real_files.keys().collect::<Vec<_>>(),
    )?;
    for (name, bytes) in &real_files {
        same_bytes(&format!("{what}: {name}"), &ours_files[name], bytes)?;
    }
    Ok(real)
}

/// The URIs of a listing (its lines' last fields).
fn uris(listing: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(listing)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .filter(|u| u.starts_with("file://"))
        .collect()
}

/// The `.deb` `deb` of the cache unpacked into `d/in`.
fn unpack(cache: &Path, deb: &str, d: &Path) -> Result<(), Failed> {
    std::fs::create_dir_all(d.join("in"))?;
    let deb = cache.join(deb).to_string_lossy().into_owned();
    run(Path::new("/usr/bin/dpkg-deb"), &["-x", &deb, "in"], d).ok().map(drop)
}

/// librocrand1 (one bundle of 7 code objects and a host entry): listed,
/// listed twice (bundle numbers count on), two code objects extracted (to
/// files and to standard output), and one target's extracted by roc-obj.
fn rocrand_deb_as_the_scripts() -> Result<(), Failed> {
    let d = tempdir();
    let d = d.path();
    unpack(&downloads()?, DEB, d)?;
    let lib = "../in/usr/lib/x86_64-linux-gnu/librocrand.so.1.1";
    let listing = both(d, "ls", LS, &[lib], &[])?;
    both(d, "ls-v", LS, &["-v", lib, lib], &[])?;
    let found = uris(&listing.stdout);
    if found.len() < 3 {
        return Err(format!("librocrand lists {} code objects", found.len()).into());
    }
    both(d, "extract", EXTRACT, &[&found[1], &found[2]], &[])?;
    both(d, "extract-stdout", EXTRACT, &["-v", "-o", "-", &found[1]], &[])?;
    both(d, "obj-t", OBJ, &["-t", "gfx1030$", "-o", "out", lib], &[])?;
    Ok(())
}

/// librocsparse0 (a 1.3 GB library): listed, with and without `-v`.
fn rocsparse_deb_listed_as_roc_obj_ls() -> Result<(), Failed> {
    static CACHE: Cache = Cache::new();
    let cache = fetched(&CACHE, &["--rocsparse"])?;
    let d = tempdir();
    let d = d.path();
    unpack(&cache, ROCSPARSE_DEB, d)?;
    let lib = "../in/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1";
    let listing = both(d, "ls", LS, &[lib], &[])?;
    if uris(&listing.stdout).is_empty() {
        return Err("librocsparse lists no code objects".into());
    }
    both(d, "ls-v", LS, &["-v", lib], &[])?;
    Ok(())
}

/// The HIP library clang-22 builds: `plain/libk.so` and, from the same
/// sources with `--offload-compress`, `compressed/libk.so` (each
/// translation unit's bundle a CCOB, back to back in `.hip_fatbin`).
fn built() -> Result<&'static Path, Failed> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    crate::util::built_once(&DIR, || build().map_err(|e| e.to_string()))
}

fn build() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let root = tempdir().keep();
    let src = |name: &str| Path::new(env!("CARGO_MANIFEST_DIR")).join("linker-tests").join(name);
    let hipdecl = src("prune/hipdecl.h").to_string_lossy().into_owned();
    for (kind, extra) in [("plain", &[][..]), ("compressed", &["--offload-compress"][..])] {
        let d = root.join(kind);
        std::fs::create_dir_all(&d)?;
        for (unit, cuid) in [("diff/scale.hip", "scale"), ("diff/reduce.hip", "reduce")] {
            let source = src(unit).to_string_lossy().into_owned();
            let object = format!("{cuid}.o");
            let cuid = format!("-cuid={cuid}");
            let mut args = vec![
                "-x", "hip", "-nogpulib", "-nogpuinc", "-include", &hipdecl, "-fPIC", "-c",
                "--offload-arch=gfx90a", "--offload-arch=gfx1030", &cuid,
            ];
            args.extend(extra);
            args.extend([source.as_str(), "-o", &object]);
            let r = run(&llvm("clang++"), &args, &d);
            if r.code != 0 {
                return Err(format!("clang++ {args:?}: {}", r.stderr).into());
            }
        }
        let r = run(&llvm("clang++"), &["-shared", "-o", "libk.so", "scale.o", "reduce.o"], &d);
        if r.code != 0 {
            return Err(format!("clang++ -shared: {}", r.stderr).into());
        }
    }
    Ok(root)
}

const HIP_CLANG_PATH: (&str, &str) = ("HIP_CLANG_PATH", crate::util::LLVM_BIN);

/// The plain build: listed, every code object extracted, roc-obj with
/// `-d` (disassembled by LLVM 22's llvm-objdump), with `-t` and a command.
fn clang_hip_library_as_the_scripts() -> Result<(), Failed> {
    let root = built()?;
    let d = tempdir();
    let d = d.path();
    let lib = root.join("plain/libk.so").to_string_lossy().into_owned();
    let listing = both(d, "ls", LS, &[&lib], &[])?;
    both(d, "ls-v", LS, &["-v", &lib, &lib], &[])?;
    let found = uris(&listing.stdout);
    if found.len() != 6 {
        return Err(format!("libk.so lists {} code objects, not 6:\n{}", found.len(), String::from_utf8_lossy(&listing.stdout)).into());
    }
    let all: Vec<&str> = found.iter().map(String::as_str).collect();
    both(d, "extract", EXTRACT, &all, &[])?;
    both(d, "obj-d", OBJ, &["-d", "-o", "out", &lib], &[HIP_CLANG_PATH])?;
    both(d, "obj", OBJ, &[&lib], &[])?;
    both(d, "obj-bad-re", OBJ, &["-t", "gfx(90a", &lib], &[])?;
    both(d, "obj-t-cmd", OBJ, &["-t", "gfx90a", &lib, ":", ".count", "wc", "-c", ";"], &[])?;
    Ok(())
}

/// The compressed build, where the scripts list nothing: ours lists what
/// they list for the plain build (URIs aside: ours name the CCOB and the
/// entry), extracts the same bytes, and roc-obj writes the same files.
fn clang_compressed_library_as_the_scripts_on_its_plain_build() -> Result<(), Failed> {
    let root = built()?;
    let d = tempdir();
    let d = d.path();
    let plain = root.join("plain/libk.so");
    let packed = root.join("compressed/libk.so");
    let [(_, real_ls), (_, our_ls)] = sides(LS);
    let real_plain = run(&real_ls, &["-v", "libk.so"], &root.join("plain")).ok()?;
    let real_packed = run(&real_ls, &["-v", "libk.so"], &root.join("compressed")).ok()?;
    same("the scripts' listing of the compressed build", real_packed.stdout.as_slice(), b"".as_slice())?;
    let ours = run(&our_ls, &["-v", "libk.so"], &root.join("compressed")).ok()?;
    let columns = |listing: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(listing)
            .lines()
            .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
            .collect()
    };
    same("bundle numbers and entry IDs", columns(&ours.stdout), columns(&real_plain.stdout))?;
    let ours_uris = uris(&ours.stdout);
    let mut distinct = ours_uris.clone();
    distinct.sort();
    distinct.dedup();
    same("distinct URIs", distinct.len(), ours_uris.len())?;
    // Each code object, extracted by URI, is the plain build's.
    let [(_, real_extract), (_, our_extract)] = sides(EXTRACT);
    for (theirs, mine) in uris(&real_plain.stdout).iter().zip(&ours_uris) {
        let a = run(&real_extract, &["-o", "-", theirs], &root.join("plain")).ok()?;
        let b = run(&our_extract, &["-o", "-", mine], &root.join("compressed")).ok()?;
        same_bytes(&format!("{mine} against {theirs}"), &b.stdout, &a.stdout)?;
    }
    // roc-obj: the same files, named as from the plain build.
    let [(_, real_obj), (_, our_obj)] = sides(OBJ);
    let dirs = [d.join("real"), d.join("ours")];
    let lib_of = [plain, packed];
    let mut got = Vec::new();
    for ((prog, dir), lib) in [real_obj, our_obj].iter().zip(&dirs).zip(&lib_of) {
        std::fs::create_dir_all(dir)?;
        std::fs::copy(lib, dir.join("libk.so"))?;
        let r = run(prog, &["-o", "out", "libk.so"], dir);
        got.push((r.code, r.stdout, r.stderr, crate::util::files(&dir.join("out"))));
    }
    same("roc-obj on the compressed build and on the plain one", &got[1], &got[0])?;
    if got[0].3.is_empty() {
        return Err("roc-obj wrote nothing".into());
    }
    Ok(())
}

/// Files and URIs the scripts refuse: same messages and exit codes.
fn bad_inputs_as_the_scripts() -> Result<(), Failed> {
    let d = tempdir();
    let d = d.path();
    let inputs = d.join("in");
    std::fs::create_dir_all(&inputs)?;
    std::fs::write(inputs.join("text.txt"), "not an object\n")?;
    std::fs::write(inputs.join("empty"), "")?;
    std::fs::copy("/usr/bin/dd", inputs.join("host-only"))?;
    for (tag, args) in [
        ("missing", &["../in/missing"][..]),
        ("no-section", &["../in/host-only"]),
        ("text", &["../in/text.txt"]),
        ("empty", &["../in/empty"]),
        ("help", &["-h"]),
    ] {
        if tag == "help" {
            continue; // the help texts are our own words
        }
        both(d, &format!("ls-{tag}"), LS, args, &[])?;
    }
    let text = "file://../in/text.txt";
    for (tag, args) in [
        ("missing", vec!["file://../in/missing#offset=0&size=1"]),
        ("protocol", vec!["http://x"]),
        ("too-far", vec!["file://../in/text.txt#offset=10&size=100"]),
        ("size-zero", vec!["-v", "file://../in/text.txt#offset=3&size=0"]),
        ("whole", vec!["-v", text]),
        ("rest", vec!["file://../in/text.txt?offset=4"]),
        ("carried-offset", vec!["file://../in/text.txt#offset=2&size=3", "file://../in/text.txt#size=4"]),
        ("not-decimal", vec!["file://../in/text.txt#offset=abc&size=2"]),
        ("stdout", vec!["-o", "-", "file://../in/text.txt#offset=1&size=5"]),
        ("bad-dir", vec!["-o", "nowhere", text]),
        ("none", vec![]),
    ] {
        if tag == "none" {
            // Our help text differs; the message and exit code must not.
            let [(_, real), (_, ours)] = sides(EXTRACT);
            let (a, b) = (run(&real, &args, d), run(&ours, &args, d));
            same("roc-obj-extract with no URI: exit code", b.code, a.code)?;
            same("roc-obj-extract with no URI: stderr", b.stderr, a.stderr)?;
            continue;
        }
        both(d, &format!("extract-{tag}"), EXTRACT, &args, &[])?;
    }
    for (tag, args) in [
        ("missing", &["../in/missing"][..]),
        ("no-section", &["../in/host-only"]),
        ("bad-option", &["-x", "../in/host-only"]),
        ("no-value", &["../in/host-only", "-t"]),
        ("long-unknown", &["--nope", "a"]),
        ("long-ambiguous", &["--re", "a"]),
    ] {
        both(d, &format!("obj-{tag}"), OBJ, args, &[])?;
    }
    Ok(())
}

/// Bundles cut short, a CCOB cut short, a bundle of no entries at a page
/// boundary (where the script would read it forever): ours ends, without
/// a panic.
fn damaged_bundles_no_panic() -> Result<(), Failed> {
    let root = built()?;
    let d = tempdir();
    let d = d.path();
    let dump = |lib: &str, out: &str| -> Result<Vec<u8>, Failed> {
        let arg = format!("--dump-section=.hip_fatbin={out}");
        run(&llvm("llvm-objcopy"), &[arg.as_str(), lib, "/dev/null"], d).ok()?;
        Ok(std::fs::read(d.join(out))?)
    };
    let plain = dump(&root.join("plain/libk.so").to_string_lossy(), "plain.bin")?;
    let packed = dump(&root.join("compressed/libk.so").to_string_lossy(), "packed.bin")?;
    let mut empty_bundle = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    empty_bundle.extend([0; 8]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("plain-cut-in-header", plain[..50].to_vec()),
        ("plain-cut-in-data", plain[..plain.len() / 2].to_vec()),
        ("ccob-cut", packed[..packed.len() / 2].to_vec()),
        ("ccob-bad-byte", {
            let mut p = packed.clone();
            p[40] ^= 0xff;
            p
        }),
        ("no-entries", empty_bundle),
    ];
    for (tag, bytes) in cases {
        std::fs::write(d.join(format!("{tag}.bin")), &bytes)?;
        let section = format!("--add-section=.hip_fatbin={tag}.bin");
        let elf = format!("{tag}.elf");
        run(&llvm("llvm-objcopy"), &[section.as_str(), "/usr/bin/dd", &elf], d).ok()?;
        for tool in ["roc-obj-ls", "roc-obj"] {
            let r = run_within_env(60, &ours_as(tool), &[elf.as_str()], &[], d)?;
            if r.code == 101 || r.stderr.contains("panicked") {
                return Err(format!("{tool} {tag}: exit {}: {}", r.code, r.stderr).into());
            }
        }
        let listing = run_within_env(60, &ours_as("roc-obj-ls"), &[elf.as_str()], &[], d)?;
        for uri in uris(&listing.stdout) {
            let r = run_within_env(60, &ours_as("roc-obj-extract"), &["-o", "-", &uri], &[], d)?;
            if r.code == 101 || r.stderr.contains("panicked") {
                return Err(format!("roc-obj-extract {uri}: exit {}: {}", r.code, r.stderr).into());
            }
        }
    }
    Ok(())
}

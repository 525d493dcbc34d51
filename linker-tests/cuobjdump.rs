//! offload-kit run as `cuobjdump`, held to NVIDIA's cuobjdump 13.5 run
//! at test time: standard output, standard error, the exit code and every
//! file written, byte for byte, on inputs built here (cubins from
//! `ptxas`, fatbins from `fatbinary` with and without compression, an
//! identifier and ptxas options, an object of each fatbin section, an
//! archive), on NVIDIA's libnvjpeg (LZ4-compressed cubins), libcurand
//! from the cu12 wheel and a CuPy module (zstd-compressed cubins), and on
//! bad inputs (missing, truncated, a directory, no device code) and bad
//! command lines. Nothing is normalised: both tools run in the same
//! directory one after the other, so the paths they print (the working
//! directory joined to the path given) are the same.
//!
//! Where ours differs on purpose (docs/compatibility.md): cuRAND's
//! Windows DLL, which cuobjdump refuses, lists what the Linux library
//! lists; `-h` is in our words, with the same options; `-sass` is one
//! `fatal` line.

use std::path::{Path, PathBuf};

use libtest_mimic::{Failed, Trial};

use crate::real_libs::{CUPY, WHEEL, downloads};
use crate::util::{ours, ours_as, run, same, same_bytes, snapshot, tempdir, unzip};
use crate::windows_libs::{CURAND, windows_downloads};

const PTXAS: &str = "/opt/offload-kit/cuda-tools/bin/ptxas";
const FATBINARY: &str = "/opt/offload-kit/cuda-tools/bin/fatbinary";
const CUOBJDUMP: &str = "/opt/offload-kit/cuda-tools/bin/cuobjdump";
const NVJPEG: &str = "/opt/offload-kit/cuda-tools/lib/libnvjpeg.so.12";

pub fn tests() -> Vec<Trial> {
    let built = &[PTXAS, FATBINARY, CUOBJDUMP, "llvm-objcopy", "ar", "cc"];
    vec![
        trial!(built_inputs_as_nvidia_cuobjdump, built),
        trial!(bad_inputs_and_command_lines_as_nvidia_cuobjdump, built),
        trial!(
            nvjpeg_curand_and_cupy_as_nvidia_cuobjdump,
            &[CUOBJDUMP, NVJPEG, "bash", "/usr/bin/python3"],
        ),
        trial!(
            nvshmem_archive_and_two_section_library_as_nvidia_cuobjdump,
            &[CUOBJDUMP, "bash", "/usr/bin/python3"],
        ),
        trial!(
            curand_dll_lists_what_the_linux_library_lists,
            &[CUOBJDUMP, "bash", "/usr/bin/python3"],
        ),
    ]
}

/// What one tool did: exit code, standard output and error, and the files
/// it left in its directory.
#[derive(Debug, PartialEq)]
struct Did {
    code: i32,
    stdout: String,
    stderr: String,
    files: Vec<(String, Vec<u8>)>,
}

/// Runs `prog` with `args` in the empty directory `dir`, and empties it.
fn did(prog: &Path, args: &[&str], dir: &Path) -> Result<Did, Failed> {
    let r = run(prog, args, dir);
    let files = snapshot(dir);
    for (name, _) in &files {
        std::fs::remove_file(dir.join(name))?;
    }
    Ok(Did {
        code: r.code,
        stdout: String::from_utf8_lossy(&r.stdout).into_owned(),
        stderr: r.stderr,
        files,
    })
}

/// Runs cuobjdump, then ours, with `args` in `d`/run (inputs are named
/// from there), and fails unless they did the same.
fn both(d: &Path, args: &[&str]) -> Result<(), Failed> {
    let dir = d.join("run");
    std::fs::create_dir_all(&dir)?;
    let theirs = did(Path::new(CUOBJDUMP), args, &dir)?;
    let ours = did(&ours_as("cuobjdump"), args, &dir)?;
    let what = format!("cuobjdump {}", args.join(" "));
    same(&format!("{what}: exit code"), ours.code, theirs.code)?;
    same(&format!("{what}: stderr"), &ours.stderr, &theirs.stderr)?;
    same(&format!("{what}: stdout"), &ours.stdout, &theirs.stdout)?;
    let names = |d: &Did| d.files.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    same(&format!("{what}: files"), names(&ours), names(&theirs))?;
    for ((name, a), (_, b)) in ours.files.iter().zip(&theirs.files) {
        same_bytes(&format!("{what}: {name}"), a, b)?;
    }
    Ok(())
}

fn kernels_ptx() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("linker-tests/kernels/cuda/kernels.ptx")
}

/// The inputs, in `d`: cubins `k80`, `k90a`, relocatable `k80c`, `t80c`
/// and linked `t80` (texture and surface references), `g80` and
/// relocatable `g80c` (initialised globals, a device function); the
/// fatbins `f` (two cubins, PTX; fatbinary compresses the PTX), `o` (PTX
/// and cubins interleaved, all LZ4), `i` (an identifier naming a path,
/// ptxas options, debug), `p` (PTX only), `r` (relocatable), `e` (no
/// entry); objects `plain.o` (`.nv_fatbin`),
/// `rel.o` (`__nv_relfatbin`), `both.o`, `h.o` (none), `comp.o` (`o`),
/// `ponly.o` (`p`), `e.o` (`e`, a fatbin with no entry); the archives
/// `lib.a` (`plain.o rel.o comp.o h.o`), `host.a` (`h.o`) and `ponly.a`.
fn build(d: &Path) -> Result<(), Failed> {
    let ptx = kernels_ptx();
    let ptx = ptx.to_string_lossy();
    std::fs::copy(&*ptx, d.join("k.ptx"))?;
    for (out, args) in [
        ("k80.cubin", &["-arch=sm_80"][..]),
        ("k90a.cubin", &["-arch=sm_90a"]),
        ("k80c.cubin", &["-arch=sm_80", "-c"]),
    ] {
        let mut all = args.to_vec();
        all.extend([&*ptx, "-o", out]);
        run(Path::new(PTXAS), &all, d).ok()?;
    }
    let texture = kernels_ptx().with_file_name("texture.ptx");
    let texture = texture.to_string_lossy();
    let globals = kernels_ptx().with_file_name("globals.ptx");
    let globals = globals.to_string_lossy();
    for args in [
        ["-arch=sm_80", "-c", &*texture, "-o", "t80c.cubin"],
        ["-arch=sm_80", "", &*texture, "-o", "t80.cubin"],
        ["-arch=sm_80", "-c", &*globals, "-o", "g80c.cubin"],
        ["-arch=sm_80", "", &*globals, "-o", "g80.cubin"],
    ] {
        let args: Vec<&str> = args.into_iter().filter(|a| !a.is_empty()).collect();
        run(Path::new(PTXAS), &args, d).ok()?;
    }
    let elf = |sm: &str, f: &str| format!("--image3=kind=elf,sm={sm},file={f}");
    let ptx80 = "--image3=kind=ptx,sm=80,file=k.ptx".to_string();
    let fatbins: [(&str, Vec<String>); 6] = [
        ("f", vec![elf("80", "k80.cubin"), elf("90a", "k90a.cubin"), ptx80.clone()]),
        (
            "o",
            vec![
                "--compress-all".into(),
                "--compress-mode=speed".into(),
                ptx80.clone(),
                elf("80", "k80.cubin"),
                "--image3=kind=ptx,sm=90,file=k.ptx".into(),
                elf("90a", "k90a.cubin"),
            ],
        ),
        (
            "i",
            vec![
                "-g".into(),
                "--ident=dir/sub.cu".into(),
                "--cmdline=-O2 -v".into(),
                ptx80.clone(),
                elf("80", "k80.cubin"),
            ],
        ),
        ("p", vec![ptx80]),
        ("r", vec!["-c".into(), elf("80", "k80c.cubin")]),
        ("e", vec![]),
    ];
    for (name, images) in fatbins {
        let mut args = vec!["-64".to_string(), format!("--create={name}.fatbin")];
        args.extend(images);
        run(Path::new(FATBINARY), &args, d).ok()?;
    }
    std::fs::write(d.join("h.c"), "int host_only;\n")?;
    run(Path::new("/usr/bin/cc"), &["-c", "h.c", "-o", "h.o"], d).ok()?;
    run(&ours(), &["wrap", "--kind=cuda", "-o", "plain.o", "f.fatbin"], d).ok()?;
    for (obj, fb) in [("comp.o", "o.fatbin"), ("e.o", "e.fatbin"), ("ponly.o", "p.fatbin")] {
        run(&ours(), &["wrap", "--kind=cuda", "-o", obj, fb], d).ok()?;
    }
    let add_rel = |from: &str, to: &str| {
        run(
            &crate::util::llvm("llvm-objcopy"),
            &[
                "--add-section=__nv_relfatbin=r.fatbin",
                "--set-section-flags=__nv_relfatbin=alloc,readonly,data",
                from,
                to,
            ],
            d,
        )
        .ok()
        .map(|_| ())
    };
    add_rel("h.o", "rel.o")?;
    add_rel("plain.o", "both.o")?;
    let ar = Path::new("/usr/bin/ar");
    run(ar, &["rcs", "lib.a", "plain.o", "rel.o", "comp.o", "h.o"], d).ok()?;
    run(ar, &["rcs", "host.a", "h.o"], d).ok()?;
    run(ar, &["rcs", "ponly.a", "ponly.o", "h.o"], d).ok()?;
    Ok(())
}

fn built_inputs_as_nvidia_cuobjdump() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    build(d)?;
    for input in [
        "../f.fatbin",
        "../o.fatbin",
        "../i.fatbin",
        "../p.fatbin",
        "../k80.cubin",
        "../k90a.cubin",
        "../k80c.cubin",
        "../t80c.cubin",
        "../plain.o",
        "../rel.o",
        "../both.o",
        "../lib.a",
        "../ponly.a",
        "../e.fatbin",
        "../e.o",
    ] {
        for args in [
            &["-lelf", "-lptx"][..],
            &["-lptx"],
            &["--list-elf", "-all"],
            &["-xelf", "all", "-xptx", "all"],
            &["-xelf", "all", "-xptx", "all", "-all"],
            &["-arch", "sm_90", "-lelf", "-lptx"],
            &["-arch=sm_80", "-xelf", "all", "--extract-ptx", "sm"],
            &[],
            &["-ptx"],
            &["-ptx", "-all"],
            &["-symbols", "-ptx"],
            &["-res-usage"],
            &["-res-usage", "-symbols", "-all"],
        ] {
            let mut all = args.to_vec();
            all.push(input);
            both(d, &all)?;
        }
    }
    for args in [
        &["-xelf", "90", "../f.fatbin"][..],
        &["-xelf", "sm_80,90a", "../o.fatbin"],
        &["-xelf", "all,sm_80", "../f.fatbin"],
        &["-xelf", "all", "-xelf", "all", "../f.fatbin"],
        &["-xelf", ",sm_80", "-xptx=", "../o.fatbin"],
        &["-xelf", "nomatch", "../f.fatbin"],
        &["-lelf", "-xelf", "all", "../o.fatbin"],
        &["-arch", "sm_86", "-lelf", "../f.fatbin"],
        &["-arch", "sm_80", "-arch", "sm_90", "-lelf", "../f.fatbin"],
        &["-arch", "sm_90a", "-lptx", "../o.fatbin"],
        &["-lelf", "-sass", "../f.fatbin"],
        &["-res-usage", "../g80.cubin"],
        &["-res-usage", "../g80c.cubin"],
        &["--dump-resource-usage", "-arch", "sm_80", "../o.fatbin"],
        &["-res-usage", "-lelf", "../f.fatbin"],
        &["-res-usage", "-xelf", "all", "../i.fatbin"],
        // A linked cubin with undefined texture references: cuobjdump's
        // internal error.
        &["-res-usage", "../t80.cubin"],
    ] {
        both(d, args)?;
    }
    Ok(())
}

fn bad_inputs_and_command_lines_as_nvidia_cuobjdump() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    build(d)?;
    let whole = std::fs::read(d.join("f.fatbin"))?;
    std::fs::write(d.join("cut.fatbin"), &whole[..whole.len() / 2])?;
    std::fs::write(d.join("empty"), b"")?;
    std::fs::create_dir(d.join("adir"))?;
    for input in [
        "../nothere",
        "/nonexistent/abs",
        "",
        "../adir",
        "../k.ptx",
        "../h.o",
        "../host.a",
        "../empty",
        "../cut.fatbin",
    ] {
        for args in [&["-lelf", "-lptx"][..], &["-xelf", "all"], &[], &["-res-usage"]] {
            let mut all = args.to_vec();
            all.push(input);
            both(d, &all)?;
        }
    }
    for args in [
        &["-bogus", "../f.fatbin"][..],
        &["--lelf", "../f.fatbin"],
        &["-list-elf", "../f.fatbin"],
        &["--", "../f.fatbin"],
        &["-lelf=1", "../f.fatbin"],
        &["-all=", "../f.fatbin"],
        &["-lelf", "-arch"],
        &["-lelf", "--gpu-architecture"],
        &["-arch", "sm_50", "../f.fatbin"],
        &["-arch", "sm_80a", "-lelf", "../f.fatbin"],
        &["-arch", "-lelf", "../f.fatbin"],
        &["-arch=", "../f.fatbin"],
        &["-h", "-bogus"],
        &["-lelf", "../nothere", "-bogus"],
    ] {
        both(d, args)?;
    }
    damaged_host_files(d)?;
    help(d)
}

/// A host file cut short, or whose section headers lie past its end:
/// cuobjdump says it holds no device code (exit 255); ours says the same,
/// then, on a line of its own, that it could not read the whole file.
fn damaged_host_files(d: &Path) -> Result<(), Failed> {
    let whole = std::fs::read(d.join("plain.o"))?;
    std::fs::write(d.join("cut.o"), &whole[..whole.len() / 2])?;
    let mut far = whole.clone();
    far[0x28..0x30].copy_from_slice(&(whole.len() as u64 + 100).to_le_bytes());
    std::fs::write(d.join("far.o"), &far)?;
    let lib = std::fs::read(d.join("lib.a"))?;
    std::fs::write(d.join("cut.a"), &lib[..lib.len() / 5])?;
    let dir = d.join("run");
    std::fs::create_dir_all(&dir)?;
    for input in ["../cut.o", "../far.o"] {
        let args = ["-lelf", input];
        let theirs = did(Path::new(CUOBJDUMP), &args, &dir)?;
        let ours = did(&ours_as("cuobjdump"), &args, &dir)?;
        let what = format!("cuobjdump -lelf {input}");
        same(&format!("{what}: exit code"), ours.code, 255)?;
        same(&format!("{what}: theirs"), theirs.code, 255)?;
        same(&format!("{what}: stdout"), &ours.stdout, &theirs.stdout)?;
        let (first, note) = ours.stderr.split_once('\n').unwrap_or_default();
        same(&format!("{what}: first line"), format!("{first}\n"), theirs.stderr)?;
        let shown = dir.join(input).to_string_lossy().into_owned();
        let expected = format!("cuobjdump info    : offload-kit could not read all of '{shown}' (");
        if !note.starts_with(&expected) || !note.ends_with("): no device code was found in what it read\n") {
            return Err(format!("{what}: the note on stderr is {note:?}").into());
        }
    }
    // A cubin whose first attribute record has an unknown format:
    // cuobjdump says it holds no device code (exit 255); ours says it
    // cannot be read, and why (exit 1).
    let mut cubin = std::fs::read(d.join("k80.cubin"))?;
    let at = cubin
        .windows(4)
        .position(|w| w == [4, 0x2f, 8, 0])
        .ok_or("k80.cubin has no register record")?;
    cubin[at] = 9;
    std::fs::write(d.join("badrec.cubin"), &cubin)?;
    let args = ["-res-usage", "../badrec.cubin"];
    let theirs = did(Path::new(CUOBJDUMP), &args, &dir)?;
    same("cuobjdump on a damaged record: exit code", theirs.code, 255)?;
    let ours = did(&ours_as("cuobjdump"), &args, &dir)?;
    same("ours on a damaged record: exit code", ours.code, 1)?;
    let shown = dir.join("../badrec.cubin").to_string_lossy().into_owned();
    let first = format!("cuobjdump fatal   : Invalid ELF in '{shown}'\n");
    if !ours.stderr.starts_with(&first) || !ours.stderr.contains("format 9") {
        return Err(format!("ours on a damaged record said {:?}", ours.stderr).into());
    }
    // `-symbols` reads the symbol table alone, which is sound: listed.
    let ours = did(&ours_as("cuobjdump"), &["-symbols", "../badrec.cubin"], &dir)?;
    same("ours -symbols on a damaged record: exit code", ours.code, 0)?;
    if !ours.stdout.contains("k_hidden") {
        return Err(format!("ours -symbols on a damaged record: {:?}", ours.stdout).into());
    }
    // Archives cut inside their first and a later member: the members
    // before the cut listed, then cuobjdump's own failure.
    let whole = std::fs::read(d.join("lib.a"))?;
    std::fs::write(d.join("cut2.a"), &whole[..whole.len() * 2 / 3])?;
    for args in [["-lelf", "../cut.a"], ["-lelf", "../cut2.a"]] {
        both(d, &args)?;
    }
    Ok(())
}

/// `-h`, and no file or two, print the help: ours in our words, listing
/// the same options under the same names.
fn help(d: &Path) -> Result<(), Failed> {
    let options = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("--"))
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                Some(format!("{} {}", w.next()?, w.last()?))
            })
            .collect()
    };
    let theirs = run(Path::new(CUOBJDUMP), &["-h"], d);
    for args in [&["-h"][..], &[], &["-lelf"], &["a", "b"], &["-lelf", "-h", "x"]] {
        let ours = run(&ours_as("cuobjdump"), args, d);
        same(&format!("{args:?}: exit code"), ours.code, theirs.code)?;
        same(
            &format!("{args:?}: the options listed"),
            options(&String::from_utf8_lossy(&ours.stdout)),
            options(&String::from_utf8_lossy(&theirs.stdout)),
        )?;
    }
    Ok(())
}

/// libnvjpeg as the tools carry it, libcurand from the cu12 wheel and a
/// CuPy module: lists, headers, PTX text and extracted files.
fn nvjpeg_curand_and_cupy_as_nvidia_cuobjdump() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    unzip(
        &cache.join(WHEEL),
        "nvidia/curand/lib/libcurand.so.10",
        d,
        "libcurand.so.10",
    )?;
    let cupy = "_generator_api.cpython-312-x86_64-linux-gnu.so";
    unzip(&cache.join(CUPY), &format!("cupy/random/{cupy}"), d, cupy)?;
    let cupy = format!("../{cupy}");
    for args in [
        &["-lelf", "-lptx", NVJPEG][..],
        &["-xelf", "all", NVJPEG],
        &["-arch", "sm_90", "-xptx", "all", NVJPEG],
        &[NVJPEG],
        &["-lelf", "-lptx", "../libcurand.so.10"],
        &["-xelf", "sm_90", "-xptx", "all", "../libcurand.so.10"],
        &["-arch", "sm_80", "-ptx", "../libcurand.so.10"],
        &["-lelf", "-lptx", &cupy],
        &["-xelf", "all", "-xptx", "all", &cupy],
        &["-ptx", &cupy],
        &["-symbols", "-arch", "sm_80", &cupy],
        &["-res-usage", NVJPEG],
        &["-res-usage", "-all", "../libcurand.so.10"],
        &["-res-usage", "-symbols", "-arch", "sm_90", "../libcurand.so.10"],
        &["-res-usage", "-ptx", &cupy],
    ] {
        both(d, args)?;
    }
    Ok(())
}

/// NVSHMEM 3.4.5's static archive of relocatable objects (whose device
/// functions' register counts cuobjdump reads from `sh_info`, 0 in the
/// newer ABI) and its host library, whose relocatable fatbins come before
/// its executable ones in the file (cuobjdump `-all` dumps the executable
/// ones first).
fn nvshmem_archive_and_two_section_library_as_nvidia_cuobjdump() -> Result<(), Failed> {
    static DIR: crate::real_libs::Cache = crate::real_libs::Cache::new();
    let cache = crate::real_libs::fetched(&DIR, &["--prune"])?;
    let t = tempdir();
    let d = t.path();
    let wheel = cache.join(
        "nvidia_nvshmem_cu12-3.4.5-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    );
    for lib in ["libnvshmem_device.a", "libnvshmem_host.so.3"] {
        unzip(&wheel, &format!("nvidia/nvshmem/lib/{lib}"), d, lib)?;
    }
    for args in [
        &["-res-usage", "-all", "../libnvshmem_device.a"][..],
        &["-lelf", "-lptx", "../libnvshmem_device.a"],
        &["-res-usage", "-all", "../libnvshmem_host.so.3"],
        &["-all", "-lelf", "-lptx", "../libnvshmem_host.so.3"],
        &["-all", "../libnvshmem_host.so.3"],
        &["-lelf", "-lptx", "../libnvshmem_host.so.3"],
    ] {
        both(d, args)?;
    }
    Ok(())
}

/// cuRAND's Windows DLL: cuobjdump refuses it (no device code, exit
/// 255); ours lists what cuobjdump lists of the Linux library, with the
/// same numbering and names but for the file's stem.
fn curand_dll_lists_what_the_linux_library_lists() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    unzip(
        &windows_downloads()?.join(CURAND),
        "nvidia/curand/bin/curand64_10.dll",
        d,
        "curand64_10.dll",
    )?;
    unzip(
        &downloads()?.join(WHEEL),
        "nvidia/curand/lib/libcurand.so.10",
        d,
        "libcurand.so.10",
    )?;
    let refused = run(Path::new(CUOBJDUMP), &["-lelf", "curand64_10.dll"], d);
    same("cuobjdump -lelf on the DLL: exit code", refused.code, 255)?;
    for args in [&["-lelf", "-lptx"][..], &["-arch", "sm_80", "-lelf"]] {
        let mut linux = args.to_vec();
        linux.push("libcurand.so.10");
        let theirs = run(Path::new(CUOBJDUMP), &linux, d).ok()?;
        let mut dll = args.to_vec();
        dll.push("curand64_10.dll");
        let ours = run(&ours_as("cuobjdump"), &dll, d).ok()?;
        same(
            &format!("{args:?} of the DLL, against the Linux library"),
            String::from_utf8_lossy(&ours.stdout).replace("curand64_10.", "libcurand.so."),
            String::from_utf8_lossy(&theirs.stdout).into_owned(),
        )?;
        same("stderr", ours.stderr, theirs.stderr)?;
    }
    Ok(())
}

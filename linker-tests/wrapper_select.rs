//! The `clang-linker-wrapper` drop-in against LLVM 22's, side by side with
//! `--dry-run`, on the inputs that decide what a link takes: raw
//! OffloadBinaries, archives (regular, thin, nested, `--whole-archive`)
//! of them and of real `clang -fopenmp` objects, `--should-extract`,
//! AMDGPU target IDs and `generic`, images of every offload kind and of
//! none, two kinds in one link, `-r` and `--emit-fatbin-only` for each
//! kind, `-l` lookup, lld-link style arguments, and the device-link
//! options (`--device-linker`, `--device-compiler`, `-mllvm`,
//! `--offload-opt`, `--embed-bitcode`). Each scenario must print the same
//! commands (temporary names aside) and exit with the same code; an error
//! must give LLVM's line (ours may add notes).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use libtest_mimic::{Failed, Trial};

use crate::util::{LLVM_BIN, llvm, ours_as, same, tempdir};

const TOOLS: &[&str] = &[
    "clang",
    "clang-linker-wrapper",
    "llvm-offload-binary",
    "llvm-ar",
];

/// The inputs, made once: `<name>.ob` raw OffloadBinaries of a junk
/// image, archives of them, and real OpenMP objects.
fn fixture() -> Result<&'static Path, Failed> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| make_fixture().map_err(|e| e.to_string()))
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(|e| format!("making the inputs failed: {e}").into())
}

fn run_ok(prog: &Path, args: &[&str], cwd: &Path) -> Result<(), String> {
    let out = Command::new(prog)
        .args(args)
        .current_dir(cwd)
        .output()
        .map_err(|e| format!("{}: {e}", prog.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} {args:?}: {}",
            prog.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

fn make_fixture() -> Result<PathBuf, String> {
    let dir = tempdir().keep();
    let d = dir.as_path();
    packed_binaries(d)?;
    archives(d)?;
    host_objects(d)?;
    symbol_members(d)?;
    amdgpu_objects(d)?;
    Ok(dir)
}

/// Where the test sources are.
fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("linker-tests")
}

/// OffloadBinaries of one image each, for every target the trials select
/// among (`<name>.ob`), and one file holding three of them (E6).
fn packed_binaries(d: &Path) -> Result<(), String> {
    std::fs::write(d.join("a.img"), b"x").map_err(|e| e.to_string())?;
    let binaries: &[(&str, &str)] = &[
        ("m70", "kind=openmp,triple=nvptx64-nvidia-cuda,arch=sm_70"),
        (
            "main70",
            "kind=openmp,triple=nvptx64-nvidia-cuda,arch=sm_70",
        ),
        ("c52", "kind=cuda,triple=nvptx64-nvidia-cuda,arch=sm_52"),
        ("c70", "kind=cuda,triple=nvptx64-nvidia-cuda,arch=sm_70"),
        ("c80", "kind=cuda,triple=nvptx64-nvidia-cuda,arch=sm_80"),
        (
            "on",
            "kind=openmp,triple=amdgcn-amd-amdhsa,arch=gfx90a:xnack+",
        ),
        (
            "off",
            "kind=openmp,triple=amdgcn-amd-amdhsa,arch=gfx90a:xnack-",
        ),
        ("plain", "kind=openmp,triple=amdgcn-amd-amdhsa,arch=gfx90a"),
        ("g908", "kind=openmp,triple=amdgcn-amd-amdhsa,arch=gfx908"),
        ("gen", "kind=openmp,triple=amdgcn-amd-amdhsa,arch=generic"),
        ("hip90a", "kind=hip,triple=amdgcn-amd-amdhsa,arch=gfx90a"),
        ("hip908", "kind=hip,triple=amdgcn-amd-amdhsa,arch=gfx908"),
        (
            "hipspv",
            "kind=hip,triple=spirv64-amd-amdhsa,arch=amdgcnspirv",
        ),
        ("none", "triple=amdgcn-amd-amdhsa,arch=gfx90a"),
        (
            "sycl",
            "kind=sycl,triple=spirv64-unknown-unknown,arch=generic",
        ),
        (
            "cpu",
            "kind=openmp,triple=x86_64-unknown-linux-gnu,arch=generic",
        ),
        ("cpunoarch", "kind=openmp,triple=x86_64-unknown-linux-gnu"),
        (
            "rv",
            "kind=openmp,triple=riscv64-unknown-linux-gnu,arch=generic",
        ),
    ];
    let tool = llvm("llvm-offload-binary");
    for (name, spec) in binaries {
        run_ok(
            &tool,
            &[
                "-o",
                &format!("{name}.ob"),
                &format!("--image=file=a.img,{spec}"),
            ],
            d,
        )?;
    }
    // One file holding three binaries (E6).
    let mut three = Vec::new();
    for n in ["hip90a", "plain", "hip908"] {
        three.extend(std::fs::read(d.join(format!("{n}.ob"))).map_err(|e| e.to_string())?);
    }
    std::fs::write(d.join("three.ob"), three).map_err(|e| e.to_string())?;
    Ok(())
}

/// Archives (regular, thin, nested) of the binaries, and the `-l` lookup:
/// `d1/libfoo.so` (not a library, but found first), `d2/libfoo.a`.
fn archives(d: &Path) -> Result<(), String> {
    let ar = llvm("llvm-ar");
    for (archive, flags, members) in [
        ("lib.a", "rcs", &["m70.ob", "c52.ob"][..]),
        ("thin.a", "rcsT", &["m70.ob", "c52.ob"][..]),
        ("tid.a", "rcs", &["plain.ob"][..]),
        ("gen.a", "rcs", &["gen.ob"][..]),
        ("order.a", "rcs", &["on.ob", "plain.ob", "on.ob"][..]),
        ("cpu.a", "rcs", &["cpu.ob"][..]),
    ] {
        let mut args = vec![flags, archive];
        args.extend_from_slice(members);
        run_ok(&ar, &args, d)?;
    }
    run_ok(&ar, &["rcs", "nest.a", "lib.a"], d)?;
    for sub in ["d1", "d2"] {
        std::fs::create_dir(d.join(sub)).map_err(|e| e.to_string())?;
    }
    std::fs::write(d.join("d1/libfoo.so"), b"not an object").map_err(|e| e.to_string())?;
    std::fs::copy(d.join("lib.a"), d.join("d2/libfoo.a")).map_err(|e| e.to_string())?;
    std::fs::copy(d.join("lib.a"), d.join("d2/oo.lib")).map_err(|e| e.to_string())?;
    std::fs::copy(d.join("lib.a"), d.join("d2/libbar.a")).map_err(|e| e.to_string())?;
    Ok(())
}

/// Real OpenMP objects for the host CPU, plain and with -foffload-lto, and
/// static libraries of them.
fn host_objects(d: &Path) -> Result<(), String> {
    let (src, clang, ar) = (sources(), llvm("clang"), llvm("llvm-ar"));
    let src = src.as_path();
    for (c, o, lto) in [
        ("wrap/main.c", "main.o", false),
        ("wrap/app.c", "app.o", false),
        ("linker_wrapper/two.c", "two.o", false),
        ("wrap/app.c", "app-lto.o", true),
        ("wrap/main.c", "main-flto.o", false),
    ] {
        let c = src.join(c).to_string_lossy().into_owned();
        let mut args = vec![
            "-fopenmp",
            "-fopenmp-targets=x86_64-unknown-linux-gnu",
            "-c",
            &c,
            "-o",
            o,
        ];
        if lto {
            args.push("-foffload-lto");
        }
        if o == "main-flto.o" {
            // A host built with -flto: LLVM bitcode.
            args.push("-flto");
        }
        run_ok(&clang, &args, d)?;
    }
    run_ok(&ar, &["rcs", "libfg.a", "app.o", "two.o"], d)?;
    run_ok(&ar, &["rcs", "libflto.a", "main-flto.o"], d)?;
    run_ok(&ar, &["rcs", "liblto.a", "app-lto.o"], d)?;
    Ok(())
}

/// Members whose device code only has symbols of one kind each (weak,
/// hidden, protected, common, undefined), as ELF and as bitcode
/// (-foffload-lto): LLVM 22 takes them all for a linked target, whatever
/// they define.
fn symbol_members(d: &Path) -> Result<(), String> {
    let (clang, ar) = (llvm("clang"), llvm("llvm-ar"));
    let kinds = [
        ("weak", "__attribute__((weak)) int s_weak = 1;"),
        (
            "hidden",
            "__attribute__((visibility(\"hidden\"))) int s_hidden = 1;",
        ),
        (
            "protected",
            "__attribute__((visibility(\"protected\"))) int s_protected = 1;",
        ),
        ("common", "int s_common;"),
        (
            "undef",
            "extern int s_undef; int use_undef(void) { return s_undef; }",
        ),
    ];
    let mut elf = vec!["rcs".to_string(), "libsyms.a".into()];
    let mut bc = vec!["rcs".to_string(), "libsyms-lto.a".into()];
    for (name, decl) in kinds {
        let c = format!("sym_{name}.c");
        let text = format!("#pragma omp declare target\n{decl}\n#pragma omp end declare target\n");
        std::fs::write(d.join(&c), text).map_err(|e| e.to_string())?;
        for (lto, list) in [(false, &mut elf), (true, &mut bc)] {
            let o = format!("sym_{name}{}.o", if lto { "-lto" } else { "" });
            let mut args = vec![
                "-fopenmp",
                "-fopenmp-targets=x86_64-unknown-linux-gnu",
                "-fcommon",
                "-c",
                &c,
                "-o",
                &o,
            ];
            if lto {
                args.push("-foffload-lto");
            }
            run_ok(&clang, &args, d)?;
            list.push(o);
        }
    }
    for list in [&elf, &bc] {
        let refs: Vec<&str> = list.iter().map(String::as_str).collect();
        run_ok(&ar, &refs, d)?;
    }
    Ok(())
}

/// Real AMDGPU device objects with target IDs (no device library), and a
/// static library of two of them.
fn amdgpu_objects(d: &Path) -> Result<(), String> {
    let (src, clang, ar) = (sources(), llvm("clang"), llvm("llvm-ar"));
    for (arch, o) in [
        ("gfx90a:xnack+", "amd-on.o"),
        ("gfx90a:xnack-", "amd-off.o"),
        ("gfx90a", "amd-plain.o"),
        ("gfx908", "amd-908.o"),
    ] {
        let c = src.join("wrap/app.c").to_string_lossy().into_owned();
        let a = format!("--offload-arch={arch}");
        run_ok(&clang, &["-fopenmp", &a, "-nogpulib", "-c", &c, "-o", o], d)?;
    }
    run_ok(&ar, &["rcs", "libamd.a", "amd-plain.o", "amd-908.o"], d)?;
    Ok(())
}

/// Error lines with the program's name masked, our notes dropped, and the
/// random part of temporary names masked.
fn normalize(text: &str) -> String {
    let tmp = std::env::temp_dir().to_string_lossy().into_owned();
    let mut out = String::new();
    for line in text.lines() {
        if line.contains(": note: ") {
            continue;
        }
        let line = match line.find(": error: ") {
            Some(at) if !line.starts_with(' ') => format!("WRAPPER{}", &line[at..]),
            _ => line.to_string(),
        };
        // Words, and the values inside `-input=…` or `--image3=…,file=…`.
        let mut masked = String::new();
        for piece in line.split_inclusive([' ', '=', ',']) {
            let (w, sep) = match piece.char_indices().last() {
                Some((at, ' ' | '=' | ',')) => (&piece[..at], &piece[at..]),
                _ => (piece, ""),
            };
            masked.push_str(&mask_temp(w, &tmp));
            masked.push_str(sep);
        }
        let words = [masked];
        out.push_str(&words.join(" "));
        out.push('\n');
    }
    out
}

/// A temporary file's name with its random part masked
/// (`/tmp/x-1a2b3c.o` → `/tmp/x-XXXXXX.o`).
fn mask_temp(w: &str, tmp: &str) -> String {
    let Some(dot) = w.rfind('.') else {
        return w.to_string();
    };
    let tag = w.get(dot.saturating_sub(7)..dot).unwrap_or("");
    if w.starts_with(tmp) && tag.starts_with('-') && tag[1..].bytes().all(|b| b.is_ascii_hexdigit())
    {
        format!("{}-XXXXXX{}", &w[..dot - 7], &w[dot..])
    } else {
        w.to_string()
    }
}

/// Runs both wrappers with `args` (after the common options) in the
/// fixture directory; the same exit code and the same normalized output.
fn same_dry_run(args: &str) -> Result<(), Failed> {
    let dir = fixture()?;
    let mut all = vec![
        "--host-triple=x86_64-unknown-linux-gnu".to_string(),
        "--dry-run".to_string(),
        "--linker-path=/usr/bin/ld".to_string(),
    ];
    all.extend(args.split_whitespace().map(String::from));
    // LLVM finds its tools beside itself; ours, put first on PATH, the same.
    let path = format!("{LLVM_BIN}:{}", std::env::var("PATH").unwrap_or_default());
    let run = |prog: &Path| -> Result<(i32, String), Failed> {
        let out = Command::new(prog)
            .args(&all)
            .env("PATH", &path)
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        Ok((out.status.code().unwrap_or(-1), normalize(&text)))
    };
    let (ours_code, ours) = run(&ours_as("clang-linker-wrapper"))?;
    let (llvm_code, theirs) = run(&llvm("clang-linker-wrapper"))?;
    same("commands", &ours, &theirs)?;
    same("exit code", ours_code, llvm_code)
}

/// Scenario name, arguments.
const SCENARIOS: &[(&str, &str)] = &[
    // Archive members: by target, not by symbol (docs/linker-wrapper-inputs.md §3).
    ("member_for_linked_target", "main70.ob lib.a -o a.out"),
    (
        "should_extract",
        "main70.ob lib.a --should-extract=sm_52 -o a.out",
    ),
    (
        "should_extract_alone",
        "--should-extract=sm_52,sm_70 lib.a -o a.out",
    ),
    (
        "whole_archive",
        "main70.ob --whole-archive lib.a --no-whole-archive -o a.out",
    ),
    ("archive_first", "lib.a main70.ob -o a.out"),
    ("archive_alone", "lib.a -o a.out"),
    ("thin_archive", "main70.ob thin.a -o a.out"),
    ("nested_archive", "main70.ob nest.a -o a.out"),
    ("one_pass", "--should-extract=gfx90a order.a -o a.out"),
    // AMDGPU target IDs and generic.
    ("target_id_member", "on.ob off.ob tid.a -o a.out"),
    ("target_id_order", "plain.ob on.ob -o a.out"),
    ("target_id_order_swapped", "on.ob plain.ob -o a.out"),
    ("generic_member", "plain.ob g908.ob gen.a -o a.out"),
    ("generic_alone", "gen.ob -o a.out"),
    ("generic_first", "gen.ob g908.ob -o a.out"),
    // Kinds.
    ("no_kind", "none.ob -o a.out"),
    ("no_kind_with_openmp", "none.ob plain.ob -o a.out"),
    ("two_kinds_one_link", "three.ob -o a.out"),
    ("two_kinds_two_links", "hip90a.ob g908.ob -o a.out"),
    ("hip_and_cuda", "hip90a.ob c52.ob m70.ob -o a.out"),
    ("cuda_sorted", "c70.ob c80.ob -o a.out"),
    ("hip_spirv", "hipspv.ob hip90a.ob -o a.out"),
    ("sycl", "sycl.ob -o a.out"),
    ("sycl_with_openmp", "sycl.ob plain.ob -o a.out"),
    ("cpu_generic", "cpu.ob -o a.out"),
    ("cpu_no_arch", "cpunoarch.ob -o a.out"),
    (
        "cpu_member_should_extract",
        "--should-extract=generic cpu.a -o a.out",
    ),
    ("unsupported_target", "plain.ob rv.ob -o a.out"),
    // -r and --emit-fatbin-only, for each kind.
    ("relocatable_cuda", "-r c70.ob c80.ob -o a.out"),
    ("relocatable_hip", "-r hip90a.ob -o a.out"),
    ("relocatable_two_kinds", "-r plain.ob hip908.ob -o a.out"),
    (
        "emit_fatbin_hip",
        "--emit-fatbin-only hip90a.ob hip908.ob -o a.out",
    ),
    ("emit_fatbin_cuda", "--emit-fatbin-only c52.ob -o a.out"),
    (
        "emit_fatbin_openmp",
        "--emit-fatbin-only main70.ob -o a.out",
    ),
    (
        "emit_fatbin_openmp_two",
        "--emit-fatbin-only plain.ob g908.ob -o a.out",
    ),
    ("emit_fatbin_nothing", "--emit-fatbin-only -o a.out"),
    ("no_output", "plain.ob"),
    // -l lookup.
    ("library_so_first", "main70.ob -L d1 -L d2 -lfoo -o a.out"),
    (
        "library_bstatic",
        "main70.ob -Bstatic -L d1 -L d2 -lfoo -o a.out",
    ),
    ("library_archive", "main70.ob -L d2 -lbar -o a.out"),
    (
        "library_whole",
        "--whole-archive -L d2 -lbar --no-whole-archive main70.ob -o a.out",
    ),
    ("library_exact", "main70.ob -L . -l:lib.a -o a.out"),
    (
        "library_dot_lib",
        "main70.ob --library=d2 -lfoo.lib -o a.out",
    ),
    ("library_missing", "main70.ob -lnothere -o a.out"),
    // lld-link style arguments (offload-kit writes ELF wrapper objects
    // only, so the host stays Linux: what is tested is the parsing).
    ("lld_link", "main70.ob -libpath:./d2 -out:a.exe"),
    // A Windows host: the dry run prints LLVM's commands (offload-kit
    // writes no COFF wrapper object, and refuses one outside a dry run).
    (
        "coff_host",
        "--host-triple=x86_64-unknown-windows-msvc --linker-path=/usr/bin/lld-link main70.ob \
         -libpath:./d2 -out:a.exe",
    ),
    (
        "lld_link_wholearchive",
        "main70.ob -wholearchive lib.a -out:a.exe",
    ),
    // Device-link options.
    (
        "device_args",
        "--device-linker=amdgcn-amd-amdhsa= --device-linker=k=v --device-linker=-Lx \
         --device-compiler=x86_64-unknown-linux=-nope \
         --device-compiler=x86_64-unknown-linux-gnu=-O3 --linker-arg=LA --compiler-arg=CA \
         plain.ob cpu.ob -o a.out",
    ),
    (
        "mllvm_and_offload_opt",
        "-mllvm -inline-threshold=5 --offload-opt=-pass-remarks=foo plain.ob cpu.ob c70.ob \
         -o a.out",
    ),
    ("embed_bitcode", "--embed-bitcode plain.ob -o a.out"),
    ("joined_mllvm_to_host", "-mllvm=-x plain.ob -o a.out"),
    // Real OpenMP objects for the host CPU.
    ("objects", "main.o app.o -o a.out"),
    ("object_and_library", "main.o libfg.a -o a.out"),
    ("object_and_lto_member", "main.o liblto.a -o a.out"),
    ("library_of_objects_first", "libfg.a main.o -o a.out"),
    ("bitcode_host", "main-flto.o app.o -o a.out"),
    (
        "bitcode_member",
        "app.o --whole-archive libflto.a --no-whole-archive -o a.out",
    ),
    ("symbol_kinds", "main.o libsyms.a -o a.out"),
    ("symbol_kinds_bitcode", "main.o libsyms-lto.a -o a.out"),
    (
        "symbol_kinds_whole_archive",
        "main.o --whole-archive libsyms.a --no-whole-archive -o a.out",
    ),
    // Real AMDGPU objects: target IDs against an archive's members.
    ("amdgpu_target_ids", "amd-on.o amd-off.o libamd.a -o a.out"),
    (
        "amdgpu_plain_first",
        "amd-plain.o amd-on.o libamd.a -o a.out",
    ),
];

pub fn tests() -> Vec<Trial> {
    SCENARIOS
        .iter()
        .map(|&(name, args)| {
            trial!(same_dry_run["{name}"], TOOLS, move || {
                same_dry_run(args)
            })
        })
        .collect()
}

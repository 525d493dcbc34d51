//! The differential trials: the recording stub runtime sees the same
//! registration with our object as with LLVM's (or the reference wrapper's),
//! for OpenMP, the legacy and ROCm ABIs, CUDA and HIP.

use super::*;

/// Which wrapper a differential trial compares ours with.
#[derive(Clone, Copy, PartialEq)]
enum Flavour {
    /// `--abi=llvm` against llvm-offload-wrapper + llc (PIC).
    OpenMp,
    /// `--abi=llvm` with two images against LLVM.
    TwoImages,
    /// `--abi=legacy` against the C reference.
    Legacy,
    /// `--abi=rocm` against the C reference.
    Rocm,
}

/// Links the recording stub with a wrapper object and returns its log.
fn stub_log(d: &Path, ld: &str, wrapper: &str, out: &str, legacy: bool) -> Result<String, Failed> {
    let fx = fixture()?;
    let mut args = if legacy {
        vec![
            fx.path("app-host-legacy.o"),
            fx.path("legacy-entries.o"),
            fx.path("stub32.o"),
        ]
    } else {
        vec![fx.path("app-host.o"), fx.path("stub56.o")]
    };
    args.extend([
        fx.path("stub_main.o"),
        wrapper.into(),
        "-o".into(),
        out.into(),
    ]);
    args.extend(runtime_libs());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    link(d, ld, &args)?;
    Ok(run(d, out, &[], &[])?.stdout)
}

/// Number of host entries clang put in the host object.
fn host_entries() -> Result<usize, Failed> {
    let fx = fixture()?;
    let host = std::fs::read(fx.path("app-host.o")).map_err(|e| e.to_string())?;
    let f = object::File::parse(&*host).map_err(|e| e.to_string())?;
    let s = f
        .section_by_name("llvm_offload_entries")
        .ok_or("no entries")?;
    Ok(usize::try_from(s.size()).unwrap() / 56)
}

fn differential(flavour: Flavour, ld: &'static str) -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let ob = fx.path("app-dev.ob");
    let gpu = &raw_fixture()[..];
    let inputs: Vec<&str> = match flavour {
        Flavour::TwoImages => vec![gpu, &ob],
        _ => vec![&ob],
    };
    // Ours.
    let mut args = vec!["-o", "ours.o"];
    match flavour {
        Flavour::Legacy => args.push("--abi=legacy"),
        Flavour::Rocm => args.extend(["--abi=rocm", "--offload-arch=gfx90a:xnack+"]),
        _ => {}
    }
    args.extend(&inputs);
    wrap(d, &args)?;
    // The reference.
    match flavour {
        Flavour::OpenMp | Flavour::TwoImages => {
            let mut a = vec!["--kind=openmp", "--triple", TRIPLE, "-o", "ref.bc"];
            a.extend(&inputs);
            sh(d, llvm("llvm-offload-wrapper"), &a)?;
            sh(
                d,
                llvm("llc"),
                &[
                    "-filetype=obj",
                    "-relocation-model=pic",
                    "ref.bc",
                    "-o",
                    "ref.o",
                ],
            )?;
        }
        Flavour::Legacy | Flavour::Rocm => {
            let image = format!("-DIMAGE=\"{}\"", fx.path("app-dev.so"));
            let c = src("ref_wrapper.c");
            let mut a = vec![
                "-fPIC",
                "-O1",
                "-c",
                c.to_str().unwrap(),
                &image,
                "-o",
                "ref.o",
            ];
            if flavour == Flavour::Rocm {
                a.push("-DARCH=\"gfx90a:xnack+\"");
            }
            clang(d, &a)?;
        }
    }
    let legacy = matches!(flavour, Flavour::Legacy | Flavour::Rocm);
    let ours_log = stub_log(d, ld, "ours.o", "prog-ours", legacy)?;
    let ref_log = stub_log(d, ld, "ref.o", "prog-ref", legacy)?;
    if ours_log != ref_log {
        return Err(format!(
            "the stub saw different things:\n--- ours\n{ours_log}--- reference\n{ref_log}"
        )
        .into());
    }
    let (images, elf_at) = match flavour {
        Flavour::TwoImages => (2, vec![1]),
        _ => (1, vec![0]),
    };
    check_log(&ours_log, images, host_entries()?, &elf_at)?;
    if flavour == Flavour::Rocm {
        let want =
            "__tgt_register_image_info version=1 number=0 count=1 arch=gfx90a:xnack+ opts=(null)\n";
        let info = ours_log
            .find(want)
            .ok_or_else(|| format!("no image info call:\n{ours_log}"))?;
        if info > ours_log.find("__tgt_register_lib").unwrap_or(0) {
            return Err(format!("image info registered after the library:\n{ours_log}").into());
        }
        // Both executables carry the target ID where offload-arch looks.
        for exe in ["prog-ours", "prog-ref"] {
            let bytes = std::fs::read(d.join(exe)).map_err(|e| e.to_string())?;
            let f = object::File::parse(&*bytes).map_err(|e| e.to_string())?;
            let s = f
                .section_by_name(".offload_arch_list")
                .ok_or_else(|| format!("{exe}: no .offload_arch_list"))?;
            if s.data().map_err(|e| e.to_string())? != b"gfx90a:xnack+\0" {
                return Err(format!("{exe}: wrong .offload_arch_list").into());
            }
        }
    }
    Ok(())
}

/// `--kind=cuda|hip` with a recording stand-in for the runtime
/// (`wrap/fatbin_stub.c`, which also holds one host entry of every kind,
/// type and flag the registration loop tells apart): the program built with
/// our object prints exactly the calls docs/formats/wrapper-objects.md describes, and the
/// same as with LLVM's object.
fn run_fatbin(kind: &'static str, ld: &'static str) -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let hip = kind == "hip";
    let input = fatbin_input(d, kind)?;
    wrap_kind(d, kind, &["-o", "ours.o", input])?;
    llvm_wrap_kind(d, kind, "ref.o", &[input])?;
    let stub = src("fatbin_stub.c");
    let mut c = vec!["-O1", "-c", stub.to_str().unwrap(), "-o", "stub.o"];
    if hip {
        c.push("-DHIP");
    }
    clang(d, &c)?;
    let mut logs = Vec::new();
    for (obj, exe) in [("ours.o", "prog-ours"), ("ref.o", "prog-ref")] {
        link(d, ld, &["stub.o", obj, "-o", exe])?;
        logs.push(run(d, exe, &[], &[])?.stdout);
    }
    let want = fatbin_want(hip);
    if logs[0] != want {
        return Err(format!("with our object:\n{}--- want:\n{want}", logs[0]).into());
    }
    if logs[1] != want {
        return Err(format!("with LLVM's object:\n{}--- want:\n{want}", logs[1]).into());
    }
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let mut v = Vec::new();
    for ld in ["bfd", "lld"] {
        let prog = if ld == "bfd" { "ld.bfd" } else { "ld.lld" };
        for (name, flavour) in [
            ("openmp", Flavour::OpenMp),
            ("two_images", Flavour::TwoImages),
            ("legacy", Flavour::Legacy),
            ("rocm", Flavour::Rocm),
        ] {
            let tools = base(&[prog, "llvm-offload-wrapper", "llc"]);
            v.push(trial!(
                differential["{ld}::{name}"],
                &tools,
                move || differential(flavour, ld),
            ));
        }
    }
    for (ld, prog) in [("bfd", "ld.bfd"), ("lld", "ld.lld")] {
        for kind in ["cuda", "hip"] {
            v.push(trial!(
                run_fatbin["{ld}::{kind}"],
                &base(&[prog, "llvm-offload-wrapper", "llc", "clang-offload-bundler"]),
                move || run_fatbin(kind, ld),
            ));
        }
    }
    v
}

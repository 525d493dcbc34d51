//! The program linked by each linker in each shape and run on libomptarget
//! 22: two images, a raw image, the legacy ABI, a large image, and what
//! readelf says of the objects.

use super::*;

const INFO: &[(&str, &str)] = &[("LIBOMPTARGET_INFO", "16")];

/// The shapes a program is linked in.
#[derive(Clone, Copy)]
enum Shape {
    Pie,
    NoPie,
    /// The program in a shared library that the executable needs.
    Shared,
    /// The program in a shared library loaded with dlopen and dlclose.
    Dlopen,
    /// `--gc-sections` (ld.lld also needs `-z nostart-stop-gc`).
    GcSections,
}

fn run_shape(ld: &'static str, shape: Shape) -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    wrap(d, &["-o", "wrap.o", &fx.path("app-dev.ob")])?;
    let libs = runtime_libs();
    let libs: Vec<&str> = libs.iter().map(String::as_str).collect();
    let host = fx.path("app-host.o");
    let main = fx.path("main.o");
    let mut args: Vec<&str> = Vec::new();
    match shape {
        Shape::Pie | Shape::NoPie | Shape::GcSections => {
            args.extend([host.as_str(), main.as_str(), "wrap.o", "-o", "prog"]);
            args.extend(match shape {
                Shape::Pie => &["-pie"][..],
                Shape::NoPie => &["-no-pie"][..],
                _ if ld == "lld" => &["-Wl,--gc-sections", "-Wl,-z,nostart-stop-gc"][..],
                _ => &["-Wl,--gc-sections"][..],
            });
            args.extend(&libs);
            link(d, ld, &args)?;
            check_app(&run(d, "prog", &[], INFO)?)
        }
        Shape::Shared => {
            args.extend([host.as_str(), "wrap.o", "-shared", "-o", "libapp.so"]);
            args.extend(&libs);
            link(d, ld, &args)?;
            let mut exe = vec![
                main.as_str(),
                "-L.",
                "-lapp",
                "-Wl,-rpath,$ORIGIN",
                "-o",
                "prog",
            ];
            exe.extend(&libs);
            link(d, ld, &exe)?;
            check_app(&run(d, "prog", &[], INFO)?)
        }
        Shape::Dlopen => {
            args.extend([host.as_str(), "wrap.o", "-shared", "-o", "libapp.so"]);
            args.extend(&libs);
            link(d, ld, &args)?;
            link(d, ld, &[&fx.path("dlopen_main.o"), "-ldl", "-o", "prog"])?;
            let ran = run(d, "prog", &["./libapp.so"], INFO)?;
            if !ran.stdout.ends_with("dlclose done\n") {
                return Err(format!("dlclose did not finish:\n{}", ran.stdout).into());
            }
            check_app(&ran)
        }
    }
}

/// Two images in one descriptor: an AMD GPU image no plugin can run here,
/// then the x86-64 image. The regions can only run on the device if the
/// runtime finds the second image through the descriptor.
fn run_two_images(ld: &'static str) -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    wrap(d, &["-o", "wrap.o", &raw_fixture(), &fx.path("app-dev.ob")])?;
    let libs = runtime_libs();
    let mut args = vec![fx.path("app-host.o"), fx.path("main.o"), "wrap.o".into()];
    args.extend(["-o".into(), "prog".into()]);
    args.extend(libs);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    link(d, ld, &args)?;
    check_app(&run(d, "prog", &[], INFO)?)
}

/// A raw device image (not an OffloadBinary) as input.
fn run_raw_image() -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    wrap(d, &["-o", "wrap.o", &fx.path("app-dev.so")])?;
    let mut args = vec![fx.path("app-host.o"), fx.path("main.o"), "wrap.o".into()];
    args.extend(["-o".into(), "prog".into()]);
    args.extend(runtime_libs());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    link(d, "bfd", &args)?;
    check_app(&run(d, "prog", &[], INFO)?)
}

/// The legacy ABI with libomptarget 22, which still accepts 32-byte entries.
fn run_legacy_abi(ld: &'static str) -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    wrap(d, &["--abi=legacy", "-o", "wrap.o", &fx.path("app-dev.ob")])?;
    let mut args = vec![
        fx.path("app-host-legacy.o"),
        fx.path("legacy-entries.o"),
        fx.path("main.o"),
        "wrap.o".into(),
    ];
    args.extend(["-o".into(), "prog".into()]);
    args.extend(runtime_libs());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    link(d, ld, &args)?;
    check_app(&run(d, "prog", &[], INFO)?)
}

/// A device image of a few MiB (the app's device library with filler
/// after it, which the loader ignores): its section starts at a multiple
/// of 64 KiB in the object (the fast copy) but asks linkers for 8-byte
/// alignment like LLVM's, the object reads clean, and the program runs.
fn run_large_image(ld: &'static str) -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let mut image = std::fs::read(fx.path("app-dev.so")).map_err(|e| e.to_string())?;
    image.extend(std::iter::repeat_n(0x5a, (3 << 20) + 5));
    std::fs::write(d.join("big.so"), &image).map_err(|e| e.to_string())?;
    wrap(d, &["-o", "wrap.o", "big.so"])?;
    let obj = std::fs::read(d.join("wrap.o")).map_err(|e| e.to_string())?;
    let f = object::File::parse(&*obj).map_err(|e| e.to_string())?;
    let s = f
        .section_by_name(".llvm.offloading")
        .ok_or("no .llvm.offloading")?;
    let (off, size) = s.file_range().ok_or("no file range")?;
    let bytes = usize::try_from(off)
        .ok()
        .and_then(|o| obj.get(o..o + usize::try_from(size).ok()?));
    if off % (64 << 10) != 0 || s.align() != 8 || bytes != Some(&image[..]) {
        return Err(format!(
            "image section at {off:#x}, {size} bytes, align {}: want a 64 KiB \
             multiple, the image, align 8",
            s.align()
        )
        .into());
    }
    readelf_ok(d, "wrap.o")?;
    let mut args = vec![fx.path("app-host.o"), fx.path("main.o"), "wrap.o".into()];
    args.extend(["-o".into(), "prog".into()]);
    args.extend(runtime_libs());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    link(d, ld, &args)?;
    check_app(&run(d, "prog", &[], INFO)?)
}

/// GNU readelf and llvm-readelf read every flavour of our object without a
/// warning, and llvm-objdump finds the embedded OffloadBinary.
fn readelf_clean() -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let ob = fx.path("app-dev.ob");
    let so = fx.path("app-dev.so");
    let cases: [(&str, Vec<&str>); 4] = [
        ("openmp.o", vec![&ob]),
        ("two.o", vec![&ob, &so]),
        ("legacy.o", vec!["--abi=legacy", &ob]),
        ("rocm.o", vec!["--abi=rocm", "--offload-arch=gfx906", &so]),
    ];
    for (out, extra) in &cases {
        let mut args = vec!["-o", *out];
        args.extend(extra);
        wrap(d, &args)?;
        readelf_ok(d, out)?;
    }
    let listing = Command::new(llvm("llvm-objdump"))
        .args(["--offloading", "openmp.o"])
        .current_dir(d)
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&listing.stdout);
    if !text.contains("OFFLOADING IMAGE [0]") || !text.contains(TRIPLE) {
        return Err(format!("llvm-objdump --offloading:\n{text}").into());
    }
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let mut v = Vec::new();
    for &(ld, prog) in LINKERS {
        for (name, shape) in [
            ("pie", Shape::Pie),
            ("no_pie", Shape::NoPie),
            ("shared", Shape::Shared),
            ("dlopen", Shape::Dlopen),
            ("gc_sections", Shape::GcSections),
        ] {
            v.push(trial!(
                run_shape["{ld}::{name}"],
                &base(&[prog]),
                move || run_shape(ld, shape),
            ));
        }
        v.push(trial!(
            run_two_images["{ld}"],
            &base(&[prog]),
            move || run_two_images(ld),
        ));
        v.push(trial!(
            run_legacy_abi["{ld}"],
            &base(&[prog]),
            move || run_legacy_abi(ld),
        ));
    }
    v.push(trial!(run_raw_image, &base(&["ld.bfd"])));
    for (ld, prog) in [("bfd", "ld.bfd"), ("lld", "ld.lld")] {
        v.push(trial!(
            run_large_image["{ld}"],
            &base(&[prog, "readelf", "llvm-readelf"]),
            move || run_large_image(ld),
        ));
    }
    v.push(trial!(readelf_clean, &base(&["readelf", "llvm-readelf", "llvm-objdump"])));
    v
}

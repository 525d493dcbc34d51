//! What `offload-kit wrap` refuses, and where it writes its outputs.

use super::*;

/// Bad input: one clear error naming the file, exit 1, no output.
pub(super) fn bad_input() -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let ob = std::fs::read(fx.path("app-dev.ob")).map_err(|e| e.to_string())?;
    std::fs::write(d.join("truncated.ob"), &ob[..ob.len() / 2]).map_err(|e| e.to_string())?;
    std::fs::write(d.join("header.ob"), &ob[..20]).map_err(|e| e.to_string())?;
    std::fs::create_dir(d.join("adir")).map_err(|e| e.to_string())?;
    let good = fx.path("app-dev.ob");
    let cases: &[(&[&str], &str)] = &[
        (&["--kind=openmp", "missing.ob"], "missing.ob"),
        (&["--kind=openmp", "adir"], "adir"),
        (&["--kind=openmp", &good, "truncated.ob"], "truncated.ob"),
        (&["--kind=openmp", "header.ob"], "header.ob"),
        (&["--kind=sycl", &good], "sycl"),
        (&["--kind=cuda", &good, &good], "single fatbinary"),
        (
            &["--kind=hip", "--abi=legacy", &good],
            "only for --kind=openmp",
        ),
        (&["--kind=hip", "missing.hipfb"], "missing.hipfb"),
        (
            &["--kind=cuda", "--abi=rocm", &fx.path("app-dev.so")],
            "only for --kind=openmp",
        ),
        (&["--kind=openmp", "--abi=new", &good], "new"),
        (
            &[
                "--kind=openmp",
                "--abi=rocm",
                "--triple=powerpc64le-unknown-linux-gnu",
                &fx.path("app-dev.so"),
            ],
            "app-dev.so",
        ),
        (
            &["--kind=openmp", "--triple=i686-pc-windows-msvc", &good],
            "32-bit Windows",
        ),
        (&["--kind=openmp", "--triple=bogus", &good], "bogus"),
        (
            &["--kind=openmp", "--abi=rocm", &fx.path("app-dev.so")],
            "app-dev.so",
        ),
        (&["--kind=openmp"], "no input"),
        (&[&good], "--kind"),
    ];
    for (args, mention) in cases {
        let mut all = vec!["wrap", "-o", "out.o"];
        all.extend_from_slice(args);
        let o = Command::new(ours())
            .args(&all)
            .current_dir(d)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        let stderr = String::from_utf8_lossy(&o.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let ok = o.status.code() == Some(1)
            && lines.len() == 1
            && lines[0].starts_with("error: ")
            && lines[0].contains(mention)
            && !stderr.contains("panicked");
        if !ok {
            return Err(format!("{all:?}: exit {:?}, stderr:\n{stderr}", o.status.code()).into());
        }
        let left: Vec<_> = std::fs::read_dir(d)
            .map_err(|e| e.to_string())?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n == "out.o" || n.starts_with(".offload-kit"))
            .collect();
        if !left.is_empty() {
            return Err(format!("{all:?} left {left:?} behind").into());
        }
    }
    Ok(())
}

/// Writing over an existing output replaces it (no temporary file left
/// behind); `-o -` writes the same bytes to standard output; the output does
/// not depend on the run.
pub(super) fn outputs() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let dev = fixtures.join("wrap/device.ob");
    let gpu = fixtures.join("offload_binary/one.bin");
    let (dev, gpu) = (dev.to_str().unwrap(), gpu.to_str().unwrap());
    wrap(d, &["-o", "out.o", gpu])?;
    let first = std::fs::read(d.join("out.o")).map_err(|e| e.to_string())?;
    wrap(d, &["-o", "out.o", dev])?;
    let second = std::fs::read(d.join("out.o")).map_err(|e| e.to_string())?;
    if first == second || !second.windows(8).any(|w| w == b"generic\0") {
        return Err("the second wrap did not replace the output".into());
    }
    wrap(d, &["-o", "again.o", dev])?;
    if std::fs::read(d.join("again.o")).map_err(|e| e.to_string())? != second {
        return Err("two runs wrote different bytes".into());
    }
    let o = Command::new(ours())
        .args(["wrap", "--kind=openmp", "--triple", TRIPLE, "-o", "-", dev])
        .current_dir(d)
        .output()
        .map_err(|e| e.to_string())?;
    if !o.status.success() || o.stdout != second {
        return Err(format!("-o - wrote {} bytes, want {}", o.stdout.len(), second.len()).into());
    }
    let names: Vec<String> = std::fs::read_dir(d)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if names.iter().any(|n| n.starts_with('.') || n == "-") {
        return Err(format!("left behind: {names:?}").into());
    }
    Ok(())
}

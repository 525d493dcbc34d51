//! The same packed bytes over a matrix of inputs, each tool extracting the
//! other's output, and binaries embedded in objects and archives.

use super::*;

/// One packing case: the files to create and the `--image` arguments.
struct Case {
    name: String,
    files: Vec<(String, Vec<u8>)>,
    images: Vec<String>,
}

fn case(name: &str, files: &[(&str, usize)], images: &[&str]) -> Case {
    Case {
        name: name.into(),
        files: files
            .iter()
            .enumerate()
            .map(|(i, (n, len))| (n.to_string(), bytes(i as u64 + 1, *len)))
            .collect(),
        images: images.iter().map(|s| s.to_string()).collect(),
    }
}

/// A seeded random string of `len` printable characters, for keys/values.
fn word(seed: u64, len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789_+-.:ABCXYZ";
    bytes(seed, len)
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

#[allow(
    clippy::too_many_lines,
    reason = "a table of the interop cases, one entry each"
)]
fn cases() -> Vec<Case> {
    let amd = "triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp";
    let mut v = vec![
        case(
            "openmp_amdgcn_object",
            &[("a.o", 1000)],
            &[&format!("file=a.o,{amd}")],
        ),
        case(
            "cuda_cubin",
            &[("k.cubin", 333)],
            &["file=k.cubin,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=cuda"],
        ),
        case(
            "hip_object",
            &[("h.o", 64)],
            &["file=h.o,triple=amdgcn-amd-amdhsa,arch=gfx1030,kind=hip"],
        ),
        case(
            "sycl_spirv",
            &[("s.spv", 77)],
            &["file=s.spv,triple=spirv64-unknown-unknown,arch=,kind=sycl"],
        ),
        case(
            "unknown_kind",
            &[("u.o", 8)],
            &["file=u.o,triple=x86_64-unknown-linux-gnu,arch=generic,kind=bogus"],
        ),
        case(
            "no_kind",
            &[("n.o", 9)],
            &["file=n.o,triple=x86_64-unknown-linux-gnu,arch=generic"],
        ),
        case(
            "no_triple",
            &[("t.o", 10)],
            &["file=t.o,arch=gfx908,kind=openmp"],
        ),
        case("only_file", &[("only.o", 11)], &["file=only.o"]),
        case(
            "bitcode_ext",
            &[("b.bc", 40)],
            &[&format!("file=b.bc,{amd}")],
        ),
        case(
            "fatbin_ext",
            &[("f.fatbin", 41)],
            &["file=f.fatbin,triple=nvptx64-nvidia-cuda,arch=sm_70,kind=cuda"],
        ),
        case(
            "ptx_ext",
            &[("p.s", 42)],
            &["file=p.s,triple=nvptx64-nvidia-cuda,arch=sm_90,kind=openmp"],
        ),
        case(
            "no_extension",
            &[("noext", 43)],
            &[&format!("file=noext,{amd}")],
        ),
        case(
            "unknown_extension",
            &[("x.xyz", 44)],
            &[&format!("file=x.xyz,{amd}")],
        ),
        case("empty_image", &[("e.o", 0)], &[&format!("file=e.o,{amd}")]),
        case(
            "sizes_7_8_9",
            &[("s7.o", 7), ("s8.o", 8), ("s9.o", 9)],
            &[
                &format!("file=s7.o,{amd}"),
                "file=s8.o,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=openmp",
                "file=s9.o,triple=x86_64-unknown-linux-gnu,arch=generic,kind=openmp",
            ],
        ),
        case(
            "two_images",
            &[("a.o", 100), ("b.cubin", 200)],
            &[
                &format!("file=a.o,{amd}"),
                "file=b.cubin,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=cuda",
            ],
        ),
        case(
            "extra_keys",
            &[("x.o", 50)],
            &[&format!("file=x.o,{amd},foo=bar,feature=+ptx64,zz=top")],
        ),
        case(
            "empty_values",
            &[("e.o", 51)],
            &["file=e.o,triple=,arch=,kind=openmp,extra="],
        ),
        case(
            "key_without_value",
            &[("k.o", 52)],
            &[&format!("file=k.o,{amd},justakey")],
        ),
        case(
            "repeated_keys",
            &[("r.o", 53)],
            &["file=r.o,arch=gfx906,arch=gfx908,triple=t1,triple=t2,kind=hip"],
        ),
        case(
            "empty_items",
            &[("i.o", 54)],
            &[&format!("file=i.o,,{amd},,")],
        ),
        case(
            "value_with_equals",
            &[("q.o", 55)],
            &[&format!("file=q.o,{amd},flags=-O2=x,=v")],
        ),
        case(
            "two_files_one_image",
            &[("a.o", 56), ("b.o", 57)],
            &[&format!("file=a.o,file=b.o,{amd}")],
        ),
        case(
            "tail_merging",
            &[("m.o", 58)],
            &["file=m.o,arch=march,march=arch,h=ch,ch=h,triple=amdgcn-amd-amdhsa,kind=openmp"],
        ),
        case(
            "non_ascii",
            &[("n.o", 59)],
            &[
                "file=n.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp,note=żółć ∂ 日本語,ключ=значение",
            ],
        ),
    ];
    // Eight images of every image kind and offload kind.
    let exts = ["o", "bc", "cubin", "fatbin", "s", "spv", "bin", "o"];
    let kinds = [
        "openmp", "cuda", "hip", "sycl", "none", "openmp", "hip", "cuda",
    ];
    let names: Vec<String> = (0..8).map(|i| format!("img{i}.{}", exts[i])).collect();
    v.push(Case {
        name: "eight_images_every_kind".into(),
        files: names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), bytes(100 + i as u64, 10 + 31 * i)))
            .collect(),
        images: names
            .iter()
            .enumerate()
            .map(|(i, n)| format!("file={n},triple=t{i},arch=a{i},kind={}", kinds[i]))
            .collect(),
    });
    // A .o file holding bitcode: LLVM sets IMG_Bitcode from the magic.
    let mut bc = b"BC\xC0\xDE".to_vec();
    bc.extend(bytes(7, 60));
    v.push(Case {
        name: "bitcode_magic_in_dot_o".into(),
        files: vec![("lto.o".into(), bc)],
        images: vec![format!("file=lto.o,{amd}")],
    });
    // Long keys and values take LLVM's >64-byte hashing path.
    v.push(case(
        "long_values",
        &[("l.o", 60)],
        &[&format!(
            "file=l.o,{amd},long={},{}=k",
            word(1, 500),
            word(2, 100)
        )],
    ));
    // Enough keys to make LLVM's DenseMap grow (48+).
    let many: Vec<String> = (0..60)
        .map(|i| format!("k{i}={}", word(i, i as usize % 9)))
        .collect();
    v.push(case(
        "sixty_keys",
        &[("m.o", 61)],
        &[&format!("file=m.o,{amd},{}", many.join(","))],
    ));
    // Seeded random keys and values of every length class.
    for s in 0..8u64 {
        let keys: Vec<String> = (0..(3 + s * 5))
            .map(|i| {
                format!(
                    "{}={}",
                    word(s * 1000 + i, (i * 7 % 70) as usize + 1),
                    word(s * 2000 + i, (i * 13 % 90) as usize)
                )
            })
            .collect();
        v.push(case(
            &format!("random_keys_{s}"),
            &[("r.o", 5 + s as usize)],
            &[&format!("file=r.o,kind=openmp,{}", keys.join(","))],
        ));
    }
    // One image of 64 MiB (and not a whole number of pages).
    v.push(case(
        "large_64mib",
        &[("big.o", (64 << 20) + 4093)],
        &[&format!("file=big.o,{amd}")],
    ));
    v
}

fn pack_args(c: &Case, out: &str) -> Vec<String> {
    let mut a = vec!["-o".to_string(), out.to_string()];
    a.extend(c.images.iter().map(|i| format!("--image={i}")));
    a
}

fn run_case(c: Case) -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    for (n, data) in &c.files {
        std::fs::write(d.join(n), data)?;
    }
    let theirs = run(&llvm(TOOL), &pack_args(&c, "llvm.bin"), d).ok()?;
    let mine = run(&ours_as(TOOL), &pack_args(&c, "ours.bin"), d).ok()?;
    same("stderr", mine.stderr, theirs.stderr)?;
    let a = std::fs::read(d.join("ours.bin"))?;
    let b = std::fs::read(d.join("llvm.bin"))?;
    same_bytes("packed bytes", &a, &b)?;

    // Cross extraction: each tool extracts from each output, with a filter
    // matching everything (default names) and with file= for each image.
    let mut results = Vec::new();
    for (tool, prog) in [("llvm", llvm(TOOL)), ("ours", ours_as(TOOL))] {
        for input in ["llvm.bin", "ours.bin"] {
            let out = d.join(format!("x-{tool}-{input}"));
            std::fs::create_dir(&out)?;
            std::fs::copy(d.join(input), out.join("pack.bin"))?;
            let mut args = vec!["pack.bin".to_string(), "--image=no-such-key=".to_string()];
            args.extend(
                (0..c.images.len())
                    .map(|i| format!("--image=file=named{i}.out,{}", filter_of(&c.images[i]))),
            );
            let r = run(&prog, &args, &out).ok()?;
            std::fs::remove_file(out.join("pack.bin"))?;
            let stderr = r.stderr.replace(&prog.display().to_string(), "TOOL");
            results.push((format!("{tool} extracting {input}"), snapshot(&out), stderr));
        }
    }
    for r in &results[1..] {
        if r.1 != results[0].1 || r.2 != results[0].2 {
            return Err(format!(
                "extraction differs: {} gave {:?} {:?}, {} gave {:?} {:?}",
                results[0].0,
                results[0]
                    .1
                    .iter()
                    .map(|f| (&f.0, f.1.len()))
                    .collect::<Vec<_>>(),
                results[0].2,
                r.0,
                r.1.iter().map(|f| (&f.0, f.1.len())).collect::<Vec<_>>(),
                r.2
            )
            .into());
        }
    }
    if results[0].1.is_empty() && !c.files.is_empty() {
        return Err("nothing was extracted".into());
    }
    Ok(())
}

/// The image's own keys minus `file`, as an extraction filter.
fn filter_of(image: &str) -> String {
    image
        .split(',')
        .filter(|kv| !kv.starts_with("file="))
        .collect::<Vec<_>>()
        .join(",")
}

/// Extraction from an ELF object and an archive holding an embedded
/// `.llvm.offloading` section (clang's `-fembed-offload-object`).
fn embedded_in_objects() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("a.o"), bytes(1, 300))?;
    std::fs::write(d.join("b.cubin"), bytes(2, 301))?;
    run(
        &llvm(TOOL),
        &[
            "-o",
            "dev.bin",
            "--image=file=a.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp",
            "--image=file=b.cubin,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=openmp",
        ],
        d,
    )
    .ok()?;
    std::fs::write(d.join("t.c"), "int host_value = 1;\n")?;
    run(
        &llvm("clang"),
        &[
            "-c",
            "-Xclang",
            "-fembed-offload-object=dev.bin",
            "t.c",
            "-o",
            "fat.o",
        ],
        d,
    )
    .ok()?;
    run(&llvm("llvm-ar"), &["rc", "libfat.a", "fat.o"], d).ok()?;
    for input in ["fat.o", "libfat.a"] {
        let mut snaps = Vec::new();
        for (tool, prog) in [("llvm", llvm(TOOL)), ("ours", ours_as(TOOL))] {
            let out = d.join(format!("{tool}-{input}"));
            std::fs::create_dir(&out)?;
            let args = [
                format!("../{input}"),
                "--image=kind=openmp".to_string(),
                "--image=file=one.o,arch=sm_80".to_string(),
            ];
            run(&prog, &args, &out).ok()?;
            snaps.push(snapshot(&out));
        }
        same(
            &format!("files extracted from {input}"),
            &snaps[1],
            &snaps[0],
        )?;
        if snaps[0].len() != 3 {
            return Err(format!("expected 3 files from {input}, got {}", snaps[0].len()).into());
        }
    }
    Ok(())
}

/// `--archive`: the archive LLVM writes, byte for byte.
fn archive_extraction() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(
        d.join("k.c"),
        "int kernel_a(int x) { return x + 1; }\nint dev_global = 3;\n",
    )?;
    run(&llvm("clang"), &["-c", "k.c", "-o", "k.o"], d).ok()?;
    std::fs::write(d.join("raw.bin"), bytes(3, 99))?;
    run(
        &llvm(TOOL),
        &[
            "-o",
            "dev.bin",
            "--image=file=k.o,triple=x86_64-unknown-linux-gnu,arch=generic,kind=openmp",
            "--image=file=raw.bin,triple=x86_64-unknown-linux-gnu,arch=generic,kind=openmp",
            "--image=file=k.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp",
        ],
        d,
    )
    .ok()?;
    std::fs::create_dir(d.join("sub"))?;
    std::fs::copy(d.join("dev.bin"), d.join("sub/dev-with-a-long-name.bin"))?;
    // Archives of packs and of objects carrying packs: LLVM names each
    // output member after the member the image came from.
    std::fs::copy(d.join("dev.bin"), d.join("package.o"))?;
    run(
        &llvm(TOOL),
        &[
            "-o",
            "other.o",
            "--image=file=raw.bin,triple=t,arch=gfx90a,kind=openmp",
        ],
        d,
    )
    .ok()?;
    run(
        &llvm("llvm-ar"),
        &["rc", "two.a", "package.o", "other.o"],
        d,
    )
    .ok()?;
    run(
        &llvm("clang"),
        &[
            "-c",
            "k.c",
            "-o",
            "fat.o",
            "-Xclang",
            "-fembed-offload-object=dev.bin",
        ],
        d,
    )
    .ok()?;
    run(&llvm("llvm-ar"), &["rc", "objs.a", "fat.o", "other.o"], d).ok()?;
    for (input, out, filter) in [
        ("dev.bin", "all.a", "arch=generic"),
        ("dev.bin", "one.a", "arch=gfx90a"),
        ("dev.bin", "none.a", "arch=nothing"),
        ("./sub/dev-with-a-long-name.bin", "long.a", "kind=openmp"),
        ("two.a", "from-two.a", "kind=openmp"),
        ("two.a", "gfx.a", "arch=gfx90a"),
        ("objs.a", "from-objs.a", "kind=openmp"),
    ] {
        let image = format!("--image=file={out},{filter}");
        let mut wrote = Vec::new();
        for prog in [llvm(TOOL), ours_as(TOOL)] {
            let r = run(&prog, &[input, "--archive", image.as_str()], d).ok()?;
            wrote.push((std::fs::read(d.join(out)).ok(), r.stderr));
            let _ = std::fs::remove_file(d.join(out));
        }
        let (mine, theirs) = (wrote.pop().unwrap(), wrote.pop().unwrap());
        same("stderr", mine.1, theirs.1)?;
        match (&mine.0, &theirs.0) {
            (Some(m), Some(t)) => same_bytes(&format!("archive {out} ({filter})"), m, t)?,
            (None, None) => {}
            (m, t) => {
                let msg = format!("{out}: ours wrote {}, llvm {}", m.is_some(), t.is_some());
                return Err(msg.into());
            }
        }
    }
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let mut t = Vec::new();
    for c in cases() {
        t.push(trial!(run_case["{}", c.name], &[TOOL], move || run_case(c)));
    }
    t.push(trial!(embedded_in_objects, &[TOOL, "clang", "llvm-ar"]));
    t.push(trial!(archive_extraction, &[TOOL, "clang", "llvm-ar"]));
    t
}

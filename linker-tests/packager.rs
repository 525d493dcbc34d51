//! offload-kit as `llvm-offload-binary` against the real llvm-offload-binary 22:
//! the same packed bytes over a matrix of inputs, each tool extracting the
//! other's output to the same files, the same messages for bad command
//! lines, and a clean error for each kind of malformed input.

use libtest_mimic::{Failed, Trial};

use crate::util::{
    Expected, bytes, clean_failure, clean_failure_code, committed_transcript, llvm, ours, ours_as,
    run, same, same_bytes, same_messages, snapshot, tempdir, trial,
};

const TOOL: &str = "llvm-offload-binary";

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

/// A command line and how ours must relate to LLVM's on it.
struct Transcript {
    name: &'static str,
    tool: &'static str,
    args: &'static [&'static str],
    /// LLVM's error does not name this file: ours must add a note that does.
    adds_file: Option<&'static str>,
}

fn transcripts() -> Vec<Transcript> {
    let t = |name, args, adds_file| Transcript {
        name,
        tool: TOOL,
        args,
        adds_file,
    };
    vec![
        t(
            "no_file_key",
            &["-o", "out.bin", "--image=triple=x,arch=y"],
            None,
        ),
        t(
            "missing_image_file",
            &["-o", "out.bin", "--image=file=nonexist.o,triple=x"],
            Some("nonexist.o"),
        ),
        t(
            "output_dir_missing",
            &["-o", "nodir/out.bin", "--image=file=img.o"],
            Some("nodir/out.bin"),
        ),
        t(
            "output_is_directory",
            &["-o", "sub", "--image=file=img.o"],
            Some("sub"),
        ),
        t(
            "input_is_directory",
            &["-o", "out.bin", "--image=file=sub"],
            Some("sub"),
        ),
        t("mutually_exclusive", &["-o", "out.bin", "pack.bin"], None),
        t(
            "archive_needs_file",
            &["pack.bin", "--archive", "--image=arch=gfx90a"],
            None,
        ),
        t(
            "extract_missing_input",
            &["nonexist.bin", "--image=arch=gfx90a"],
            None,
        ),
        t("unknown_option", &["--bogus"], None),
        t("option_needs_value", &["--image=file=img.o", "-o"], None),
        t("image_needs_value", &["-o", "x", "--image"], None),
        t("bad_boolean", &["--archive=foo", "pack.bin"], None),
        t("two_positionals", &["pack.bin", "pack.bin"], None),
        t(
            "multiple_matches_warning",
            &["pack.bin", "--image=file=both.o,kind=openmp"],
            None,
        ),
        t("no_arguments_prints_help", &[], None),
        t("malformed_input", &["bad.bin"], Some("bad.bin")),
        t(
            "malformed_input_with_filter",
            &["bad.bin", "--image=arch=gfx90a"],
            Some("bad.bin"),
        ),
        t("misspelt_option_keeps_value", &["--imag=file=x"], None),
        t("misspelt_option", &["--imag", "pack.bin"], None),
        t(
            "misspelt_flag_with_value",
            &["--archiv=1", "pack.bin"],
            None,
        ),
        t("empty_pack_with_no_image", &["-o", "empty.bin"], None),
        t(
            "non_binary_input_is_ignored",
            &["img.o", "--image=arch=x"],
            None,
        ),
        t("response_file", &["@args.rsp"], None),
        Transcript {
            name: "deprecated_name_warns",
            tool: "clang-offload-packager",
            args: &["pack.bin", "--image=file=x.o,arch=gfx90a"],
            adds_file: None,
        },
    ]
}

fn run_transcript(t: Transcript) -> Result<(), Failed> {
    let mut results = Vec::new();
    for prog in [llvm(t.tool), ours_as(t.tool)] {
        let dir = tempdir();
        let d = dir.path();
        std::fs::write(d.join("img.o"), bytes(9, 100))?;
        std::fs::create_dir(d.join("sub"))?;
        std::fs::write(d.join("bad.bin"), b"\x10\xff\x10\xad\x0a")?;
        std::fs::write(
            d.join("args.rsp"),
            "-o from-rsp.bin '--image=file=img.o,arch=gfx90a,kind=openmp'\n",
        )?;
        run(
            &llvm(TOOL),
            &[
                "-o",
                "pack.bin",
                "--image=file=img.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp",
                "--image=file=img.o,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=openmp",
            ],
            d,
        )
        .ok()?;
        let r = run(&prog, t.args, d);
        // Both tools print their own path: compare with it replaced.
        let stderr = r
            .stderr
            .replace(&prog.display().to_string(), "TOOL")
            .replace(t.tool, "TOOL");
        results.push((r.code, stderr, r.stdout, snapshot(d)));
    }
    let (ours, theirs) = (results.pop().unwrap(), results.pop().unwrap());
    committed_transcript(
        t.tool,
        t.name,
        &Expected {
            code: theirs.0,
            stderr: theirs.1.clone(),
        },
    )?;
    same("exit code", ours.0, theirs.0)?;
    same_messages(&ours.1, &theirs.1, t.adds_file)?;
    // Help texts are our own; other output must match.
    if !t.name.contains("help") {
        same("stdout", ours.2, theirs.2)?;
    }
    same("files left behind", ours.3, theirs.3)
}

/// A valid two-image pack, to corrupt.
fn valid_pack() -> Vec<u8> {
    use offload_kit::offload_binary::{ImageSpec, OffloadKind, layout_v1};
    let specs: Vec<ImageSpec> = (0..2)
        .map(|i| ImageSpec {
            offload_kind: OffloadKind::OFK_OpenMP,
            strings: vec![
                (b"triple".to_vec(), b"amdgcn-amd-amdhsa".to_vec()),
                (b"arch".to_vec(), format!("gfx90{i}").into_bytes()),
            ],
            size: 24,
            ..Default::default()
        })
        .collect();
    let imgs = [bytes(1, 24), bytes(2, 24)];
    let refs: Vec<&[u8]> = imgs.iter().map(|v| v.as_slice()).collect();
    let mut out = Vec::new();
    layout_v1(&specs)
        .unwrap()
        .write_to(&mut out, &refs)
        .unwrap();
    out
}

fn put64(v: &mut [u8], at: usize, x: u64) {
    v[at..at + 8].copy_from_slice(&x.to_le_bytes());
}

/// Malformed inputs LLVM 22 rejects for the same reason we do, so that our
/// message must contain its text. (For the others LLVM crashes, reads
/// garbage, or trips over something else first.)
const SAME_REASON_AS_LLVM: &[&str] = &[
    "truncated_header",
    "magic_only",
    "size_past_end",
    "unknown_version",
    "bad_magic_of_second_binary",
    "trailing_garbage",
];

/// Makes one malformed input.
type Corrupt = Box<dyn Fn() -> Vec<u8> + Send + Sync>;

/// Malformed inputs: name and the corruption.
fn malformed() -> Vec<(&'static str, Corrupt)> {
    let second = valid_pack().len() / 2; // both binaries have the same size
    vec![
        ("truncated_header", Box::new(|| valid_pack()[..20].to_vec())),
        (
            "magic_only",
            Box::new(|| vec![0x10, 0xFF, 0x10, 0xAD, 0x01]),
        ),
        (
            "truncated_in_image",
            Box::new(|| {
                let v = valid_pack();
                v[..v.len() - 9].to_vec()
            }),
        ),
        (
            "size_past_end",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 8, 1 << 40);
                v
            }),
        ),
        (
            "size_overflows",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 8, u64::MAX);
                v
            }),
        ),
        (
            "image_offset_past_end",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 32 + 24, 0xFFFF_0000);
                v
            }),
        ),
        (
            "image_size_overflows",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 32 + 32, u64::MAX - 8);
                v
            }),
        ),
        (
            "string_offset_past_end",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 32 + 8, 1 << 33);
                v
            }),
        ),
        (
            "string_value_offset_past_end",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 72 + 8, 1 << 20);
                v
            }),
        ),
        (
            "absurd_string_count",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 32 + 16, u64::MAX / 3);
                v
            }),
        ),
        (
            "image_overlaps_header",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 32 + 24, 8);
                v
            }),
        ),
        (
            "entry_overlaps_header",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 16, 8);
                v
            }),
        ),
        (
            "unknown_version",
            Box::new(|| {
                let mut v = valid_pack();
                v[4] = 9;
                v
            }),
        ),
        (
            "bad_magic_of_second_binary",
            Box::new(move || {
                let mut v = valid_pack();
                v[second + 1] = 0;
                v
            }),
        ),
        (
            "trailing_garbage",
            Box::new(|| {
                let mut v = valid_pack();
                v.extend_from_slice(&[0; 8]);
                v
            }),
        ),
        (
            "absurd_entry_count_v2",
            Box::new(|| {
                let mut v = valid_pack();
                v[4] = 2;
                put64(&mut v, 24, u64::MAX / 8);
                v
            }),
        ),
        (
            "misaligned_second_binary",
            Box::new(|| {
                let v = valid_pack();
                let mut w = v[..v.len() / 2].to_vec();
                w.extend_from_slice(&[0; 4]);
                w.extend_from_slice(&v[v.len() / 2..]);
                put64(&mut w, 8, (v.len() / 2 + 4) as u64);
                w
            }),
        ),
    ]
}

fn run_malformed(name: &'static str, data: Vec<u8>) -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let file = format!("{name}.bin");
    std::fs::write(d.join(&file), &data)?;
    let before = snapshot(d);
    let r = run(
        &ours_as(TOOL),
        &[
            file.as_str(),
            "--image=file=out.o,arch=gfx900",
            "--image=kind=openmp",
        ],
        d,
    );
    clean_failure("llvm-offload-binary", &r, &file)?;
    let r = run(&ours(), &["list", file.as_str()], d);
    clean_failure_code("list", &r, &file, 2)?;
    let r = run(&ours(), &["unpack", file.as_str(), "-o", "outdir"], d);
    clean_failure("unpack", &r, &file)?;
    same("files after the failures", snapshot(d), before)?;
    // Where LLVM 22 reports an error too (rather than crashing or accepting
    // the file), our line contains its text.
    let l = run(&llvm(TOOL), &[file.as_str(), "--image=kind=openmp"], d);
    let mine = run(&ours_as(TOOL), &[file.as_str(), "--image=kind=openmp"], d);
    if SAME_REASON_AS_LLVM.contains(&name) {
        if l.code != 1 {
            return Err(format!("LLVM accepted {name}: {}", l.stderr).into());
        }
        // LLVM's line first, character for character; the file and the
        // exact fault on a note after it.
        let mask = |r: &crate::util::Run, prog: &std::path::Path| {
            r.stderr.replace(&prog.display().to_string(), "TOOL")
        };
        same_messages(
            &mask(&mine, &ours_as(TOOL)),
            &mask(&l, &llvm(TOOL)),
            Some(&file),
        )?;
    }
    Ok(())
}

/// Our native `pack --format-version 2` output is read back by `list` and
/// `unpack` with the same images as the v1 pack.
fn native_v2_round_trip() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("a.o"), bytes(1, 1001))?;
    std::fs::write(d.join("b.cubin"), bytes(2, 7))?;
    let imgs = [
        "--image",
        "file=a.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp,x=1",
        "--image",
        "file=b.cubin,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=cuda",
    ];
    let mut a = vec!["pack", "-o", "v1.bin"];
    a.extend(imgs);
    run(&ours(), &a, d).ok()?;
    let mut a = vec!["pack", "-o", "v2.bin", "--format-version", "2"];
    a.extend(imgs);
    run(&ours(), &a, d).ok()?;
    let v2 = std::fs::read(d.join("v2.bin"))?;
    same("version field", v2[4], 2)?;
    run(&ours(), &["unpack", "v1.bin", "-o", "o1"], d).ok()?;
    run(&ours(), &["unpack", "v2.bin", "-o", "o2"], d).ok()?;
    let strip = |v: Vec<(String, Vec<u8>)>| {
        v.into_iter()
            .map(|(n, b)| (n.replacen("v1", "X", 1).replacen("v2", "X", 1), b))
            .collect::<Vec<_>>()
    };
    same(
        "unpacked files",
        strip(snapshot(&d.join("o2"))),
        strip(snapshot(&d.join("o1"))),
    )?;
    let l1 = run(&ours(), &["list", "--json", "v1.bin"], d).ok()?;
    let j: serde_json::Value = serde_json::from_slice(&l1.stdout)?;
    same("image count", j["images"].as_array().map(Vec::len), Some(2))?;
    same("arch", j["images"][0]["arch"].as_str(), Some("gfx90a"))?;
    let v1 = std::fs::read(d.join("v1.bin"))?;
    let a = std::fs::read(d.join("a.o"))?;
    let at = v1
        .windows(a.len())
        .position(|w| w == a.as_slice())
        .map(|p| p as u64);
    same(
        "file offset of image 0",
        j["images"][0]["file_offset"].as_u64(),
        at,
    )?;
    Ok(())
}

/// Replacing an existing output: a successful run replaces it; a run that
/// fails after the output was opened leaves the old file exactly as it was;
/// neither leaves temporary files behind.
fn overwriting_outputs() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("a.o"), bytes(1, 5000))?;
    std::fs::write(d.join("out.bin"), b"old contents")?;
    let ok = [
        "-o",
        "out.bin",
        "--image=file=a.o,triple=t,arch=a,kind=openmp",
    ];
    run(&ours_as(TOOL), &ok, d).ok()?;
    let first = std::fs::read(d.join("out.bin"))?;
    if first == b"old contents" {
        return Err("the output was not replaced".into());
    }
    // The second image is a directory: reading it fails after the output
    // file was created.
    std::fs::create_dir(d.join("sub"))?;
    let bad = [
        "-o",
        "out.bin",
        "--image=file=a.o,kind=openmp",
        "--image=file=sub,kind=openmp",
    ];
    let r = run(&ours_as(TOOL), &bad, d);
    same("exit code", r.code, 1)?;
    same_bytes(
        "old output after a failed run",
        &std::fs::read(d.join("out.bin"))?,
        &first,
    )?;
    let names: Vec<String> = snapshot(d).into_iter().map(|f| f.0).collect();
    same(
        "files",
        names,
        vec!["a.o".to_string(), "out.bin".to_string()],
    )?;
    Ok(())
}

/// Without `--image` (where LLVM 22 extracts nothing) every image is
/// extracted as newer LLVM does: images that are OffloadBinaries themselves
/// are replaced by theirs, names leave out an empty arch, `n` counts every
/// written image, and each is announced on stdout. A malformed inner binary
/// is an error with LLVM's message.
fn extract_all_and_nested() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("a.o"), bytes(1, 40))?;
    std::fs::write(d.join("b.o"), bytes(2, 24))?;
    std::fs::write(d.join("c.bc"), bytes(3, 16))?;
    let pack = |out: &str, images: &[&str]| -> Result<(), Failed> {
        let mut a = vec!["-o", out];
        a.extend(images);
        run(&llvm(TOOL), &a, d).ok().map(drop)
    };
    pack(
        "inner.bin",
        &[
            "--image=file=a.o,triple=x-y-z,arch=abc",
            "--image=file=b.o,triple=x-y-z,arch=def",
        ],
    )?;
    pack(
        "outer.bin",
        &[
            "--image=file=inner.bin,triple=x-y-z,arch=nested",
            "--image=file=c.bc,triple=x-y-z",
        ],
    )?;
    let r = run(&ours_as(TOOL), &["outer.bin"], d).ok()?;
    same(
        "stdout",
        String::from_utf8_lossy(&r.stdout).into_owned(),
        "Extracted: outer-x-y-z-abc.0.o\nExtracted: outer-x-y-z-def.1.o\nExtracted: outer-x-y-z.2.bc\n"
            .to_string(),
    )?;
    same_bytes(
        "abc",
        &std::fs::read(d.join("outer-x-y-z-abc.0.o"))?,
        &bytes(1, 40),
    )?;
    same_bytes(
        "def",
        &std::fs::read(d.join("outer-x-y-z-def.1.o"))?,
        &bytes(2, 24),
    )?;
    same_bytes(
        "no arch",
        &std::fs::read(d.join("outer-x-y-z.2.bc"))?,
        &bytes(3, 16),
    )?;
    // `offload-kit list` descends too, numbering inner images `0.0`, `0.1`.
    let l = run(&ours(), &["list", "--json", "outer.bin"], d).ok()?;
    let j: serde_json::Value = serde_json::from_slice(&l.stdout)?;
    let rows: Vec<(String, String, u64)> = j["images"]
        .as_array()
        .ok_or("no images")?
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap_or("?").to_string(),
                r["arch"].as_str().unwrap_or("?").to_string(),
                r["nested"].as_u64().unwrap_or(99),
            )
        })
        .collect();
    let want = [
        ("0", "nested", 2),
        ("0.0", "abc", 0),
        ("0.1", "def", 0),
        ("1", "", 0),
    ];
    same(
        "listed images",
        rows,
        want.iter()
            .map(|(p, a, n)| (p.to_string(), a.to_string(), *n))
            .collect(),
    )?;
    // With a filter, LLVM 22's behaviour stays: the nested binary is the
    // image, written whole.
    run(
        &ours_as(TOOL),
        &["outer.bin", "--image=file=got.bin,arch=nested"],
        d,
    )
    .ok()?;
    same_bytes(
        "filtered nested image",
        &std::fs::read(d.join("got.bin"))?,
        &std::fs::read(d.join("inner.bin"))?,
    )?;
    // A malformed inner binary.
    std::fs::write(d.join("bad.bin"), b"\x10\xff\x10\xad\x0a")?;
    pack("n2.bin", &["--image=file=bad.bin,triple=x-y-z,arch=nested"])?;
    let r = run(&ours_as(TOOL), &["n2.bin"], d);
    clean_failure("malformed inner binary", &r, "n2.bin")?;
    let l = run(&ours(), &["list", "n2.bin"], d);
    clean_failure_code("list of a malformed inner binary", &l, "n2.bin", 2)?;
    let first = r.stderr.lines().next().unwrap_or_default().to_string();
    if !first.ends_with("error: Invalid data was encountered while parsing the file") {
        return Err(format!("first line: {first}").into());
    }
    Ok(())
}

/// `member=NAME` picks the images of one archive member (newer LLVM; 22
/// compares it with a string the images do not have, and matches nothing).
fn member_filter() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("contentA"), b"aaaa\n")?;
    std::fs::write(d.join("contentB"), b"bbbb\n")?;
    for (out, file) in [("a.o", "contentA"), ("b.o", "contentB")] {
        let image = format!("--image=file={file},triple=x-y-z,arch=gfx90a,kind=openmp");
        run(&llvm(TOOL), &["-o", out, image.as_str()], d).ok()?;
    }
    run(&llvm("llvm-ar"), &["rcs", "lib.a", "a.o", "b.o"], d).ok()?;
    for (member, out, want) in [("a.o", "outA", "contentA"), ("b.o", "outB", "contentB")] {
        let image =
            format!("--image=member={member},triple=x-y-z,arch=gfx90a,kind=openmp,file={out}");
        let r = run(&ours_as(TOOL), &["lib.a", image.as_str()], d).ok()?;
        same("stderr", r.stderr.as_str(), "")?;
        same_bytes(
            out,
            &std::fs::read(d.join(out))?,
            &std::fs::read(d.join(want))?,
        )?;
    }
    // Without it, the filter matches both, with LLVM's warning.
    let r = run(
        &ours_as(TOOL),
        &[
            "lib.a",
            "--image=triple=x-y-z,arch=gfx90a,kind=openmp,file=both",
        ],
        d,
    )
    .ok()?;
    if !r.stderr.contains("Multiple inputs match to a single file") {
        return Err(format!("no warning: {}", r.stderr).into());
    }
    // A member that is not there matches nothing.
    run(
        &ours_as(TOOL),
        &["lib.a", "--image=member=c.o,file=none"],
        d,
    )
    .ok()?;
    same("extracted for c.o", d.join("none").exists(), false)
}

/// `--compress` (newer LLVM; 22 rejects the option) writes one version 3
/// binary whose images come back unchanged, with zstd or zlib, at any valid
/// level; levels out of range are refused as newer LLVM refuses them.
fn compressed_packs() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("a.o"), bytes(1, 5000))?;
    std::fs::write(d.join("b.cubin"), vec![7u8; 20000])?;
    let images = [
        "--image=file=a.o,triple=x-y-z,arch=abc,kind=openmp",
        "--image=file=b.cubin,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=cuda",
    ];
    for (i, opts) in [
        &["--compress"][..],
        &[
            "--compress",
            "--compression-format=zstd",
            "--compression-level=-5",
        ],
        &[
            "--compress",
            "--compression-format=zlib",
            "--compression-level=9",
        ],
        &[
            "--compress",
            "--compression-format=zlib",
            "--compression-level=0",
        ],
    ]
    .iter()
    .enumerate()
    {
        let out = format!("c{i}.bin");
        let mut a = vec!["-o", out.as_str()];
        a.extend(*opts);
        a.extend(images);
        run(&ours_as(TOOL), &a, d).ok()?;
        let packed = std::fs::read(d.join(&out))?;
        same("version", packed[4], 3)?;
        if packed.len() >= 5000 + 20000 && !opts.contains(&"--compression-level=0") {
            return Err(format!("{out} is not compressed: {} bytes", packed.len()).into());
        }
        let o1 = format!("x{i}.o");
        let o2 = format!("y{i}.cubin");
        let f1 = format!("--image=file={o1},arch=abc");
        let f2 = format!("--image=file={o2},arch=sm_80,kind=cuda");
        run(&ours_as(TOOL), &[out.as_str(), f1.as_str(), f2.as_str()], d).ok()?;
        same_bytes("image a", &std::fs::read(d.join(&o1))?, &bytes(1, 5000))?;
        same_bytes("image b", &std::fs::read(d.join(&o2))?, &[7u8; 20000])?;
        // LLVM 22 cannot read version 3 and says so; it must not crash.
        let l = run(&llvm(TOOL), &[out.as_str(), "--image=arch=abc"], d);
        same("LLVM 22's exit code on version 3", l.code, 1)?;
    }
    for (opts, want) in [
        (
            ["--compression-format=zlib", "--compression-level=12"],
            "error: invalid zlib compression level 12; expected a value in [0, 9]",
        ),
        (
            ["--compression-format=lz4", "--compression-level=1"],
            "error: invalid compression format 'lz4'; expected 'zstd' or 'zlib'",
        ),
    ] {
        let mut a = vec!["-o", "bad.bin", "--compress"];
        a.extend(opts);
        a.extend(images);
        let r = run(&ours_as(TOOL), &a, d);
        same("exit code", r.code, 1)?;
        if !r.stderr.trim_end().ends_with(want) {
            return Err(format!("want '{want}', got: {}", r.stderr).into());
        }
        same("output written", d.join("bad.bin").exists(), false)?;
    }
    Ok(())
}

/// Everything above, as trials.
pub fn tests() -> Vec<Trial> {
    let mut t = Vec::new();
    for c in cases() {
        let name = format!("packager::interop::{}", c.name);
        t.push(trial(name, &[TOOL], move || run_case(c)));
    }
    t.push(trial(
        "packager::interop::embedded_in_objects",
        &[TOOL, "clang", "llvm-ar"],
        embedded_in_objects,
    ));
    t.push(trial(
        "packager::interop::archive_extraction",
        &[TOOL, "clang", "llvm-ar"],
        archive_extraction,
    ));
    for tr in transcripts() {
        let name = format!("packager::transcript::{}", tr.name);
        t.push(trial(name, &[TOOL, "clang-offload-packager"], move || {
            run_transcript(tr)
        }));
    }
    for (name, f) in malformed() {
        t.push(trial(
            format!("packager::malformed::{name}"),
            &[TOOL],
            move || run_malformed(name, f()),
        ));
    }
    t.push(trial(
        "packager::newer::extract_all_and_nested",
        &[TOOL],
        extract_all_and_nested,
    ));
    t.push(trial(
        "packager::newer::member_filter",
        &[TOOL, "llvm-ar"],
        member_filter,
    ));
    t.push(trial(
        "packager::newer::compressed_packs",
        &[TOOL],
        compressed_packs,
    ));
    t.push(Trial::test(
        "packager::native::v2_round_trip",
        native_v2_round_trip,
    ));
    t.push(Trial::test(
        "packager::overwriting_outputs",
        overwriting_outputs,
    ));
    t
}

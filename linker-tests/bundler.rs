//! offload-kit as `clang-offload-bundler` against the real clang-offload-bundler
//! 22: the same bundle bytes over a matrix of file types, alignments, target
//! mixes and sizes; each tool unbundling the other's output to the same files;
//! the same `-list` output; LLVM's messages for bad command lines; and clean
//! errors for hostile bundles.
//!
//! The messages are in `transcripts.rs`, the hostile bundles in
//! `hostile.rs`; object bundles and archives in `object_bundles.rs` and
//! `archives.rs`.

use libtest_mimic::{Failed, Trial};

test_files! {
    transcripts,
    hostile,
    object_bundles,
    archives,
}

use crate::util::{
    bytes, clean_failure, llvm, ours_as, run, same, same_bytes,
    same_messages, snapshot, tempdir,
};

const TOOL: &str = "clang-offload-bundler";

/// Text-like content for text bundle types.
fn text(seed: u64, lines: usize, final_newline: bool) -> Vec<u8> {
    let mut s: String = (0..lines)
        .map(|i| format!("int v{seed}_{i} = {i}; // line {i}\n"))
        .collect();
    if !final_newline {
        s.pop();
    }
    s.into_bytes()
}

struct Case {
    name: String,
    file_type: &'static str,
    targets: Vec<&'static str>,
    contents: Vec<Vec<u8>>,
    extra: Vec<&'static str>,
}

const SETS: &[(&str, &[&str])] = &[
    (
        "host_openmp",
        &[
            "host-x86_64-unknown-linux-gnu",
            "openmp-amdgcn-amd-amdhsa--gfx90a",
        ],
    ),
    (
        "host_hip_nvptx",
        &[
            "host-x86_64-unknown-linux-gnu",
            "hip-amdgcn-amd-amdhsa--gfx906",
            "openmp-nvptx64-nvidia-cuda--sm_70",
        ],
    ),
    (
        "hip_only",
        &[
            "hipv4-amdgcn-amd-amdhsa--gfx90a",
            "hipv4-amdgcn-amd-amdhsa--gfx942",
        ],
    ),
    (
        "features",
        &[
            "host-x86_64-unknown-linux-gnu",
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack-",
            "hip-amdgcn-amd-amdhsa--gfx908:sramecc+:xnack-",
        ],
    ),
    (
        "unnormalized",
        &[
            "host-x86_64--linux-gnu",
            "openmp-nvptx64-nvidia-cuda-",
            "openmp-amdgcn-amd-amdhsa-elf-gfx906",
            "openmp-x86_64-pc-linux-gnu-foo",
        ],
    ),
    (
        "host_last",
        &[
            "openmp-amdgcn-amd-amdhsa--gfx1030",
            "openmp-spirv64-intel-unknown-",
            "host-aarch64-unknown-linux-gnu",
        ],
    ),
    (
        "many",
        &[
            "host-x86_64-unknown-linux-gnu-",
            "hipv4-amdgcn-amd-amdhsa--gfx900",
            "hipv4-amdgcn-amd-amdhsa--gfx906",
            "hipv4-amdgcn-amd-amdhsa--gfx908",
            "hipv4-amdgcn-amd-amdhsa--gfx90a",
            "hipv4-amdgcn-amd-amdhsa--gfx942",
            "hipv4-amdgcn-amd-amdhsa--gfx1030",
            "hipv4-amdgcn-amd-amdhsa--gfx1100",
            "hipv4-amdgcn-amd-amdhsa--gfx1101",
            "hipv4-amdgcn-amd-amdhsa--gfx1201",
            "hip-amdgcn-amd-amdhsa--gfx950",
            "hip-amdgcn-amd-amdhsa--gfx1250",
            "openmp-nvptx64-nvidia-cuda--sm_80",
            "openmp-nvptx64-nvidia-cuda--sm_90",
        ],
    ),
];

fn cases() -> Vec<Case> {
    let mut seed = 0;
    let mut v = binary_cases(&mut seed);
    v.extend(text_cases(&mut seed));
    v.extend(size_cases());
    v.extend(compressed_cases(&mut seed));
    v
}

/// Binary types: every set, with alignments 1, 8, 4096 and 3 spread over
/// them; `seed` numbers the contents.
fn binary_cases(seed: &mut u64) -> Vec<Case> {
    let mut v = Vec::new();
    for ft in ["bc", "gch", "ast", "o"] {
        for (si, (set, targets)) in SETS.iter().enumerate() {
            let align = ["1", "8", "4096", "3", "16", "1", "64"][(si + ft.len()) % 7];
            let contents = targets
                .iter()
                .map(|_| {
                    *seed += 1;
                    bytes(*seed, 100 + (*seed as usize * 37) % 900)
                })
                .collect();
            let extra = if align == "1" {
                vec![]
            } else {
                vec![match align {
                    "8" => "-bundle-align=8",
                    "4096" => "-bundle-align=4096",
                    "3" => "-bundle-align=3",
                    "16" => "-bundle-align=16",
                    _ => "-bundle-align=64",
                }]
            };
            v.push(Case {
                name: format!("{ft}_{set}_align{align}"),
                file_type: ft,
                targets: targets.to_vec(),
                contents,
                extra,
            });
        }
    }
    v
}

/// Text types, each with every other set; `seed` numbers the contents.
fn text_cases(seed: &mut u64) -> Vec<Case> {
    let mut v = Vec::new();
    for (ti, ft) in ["i", "ii", "cui", "hipi", "d", "ll", "s"]
        .into_iter()
        .enumerate()
    {
        for (si, (set, targets)) in SETS.iter().enumerate().filter(|(si, _)| (si + ti) % 2 == 0) {
            let contents = targets
                .iter()
                .enumerate()
                .map(|(i, _)| {
                    *seed += 1;
                    text(*seed, 1 + (si + i) % 4, (i + ti) % 2 == 0)
                })
                .collect();
            v.push(Case {
                name: format!("{ft}_{set}"),
                file_type: ft,
                targets: targets.to_vec(),
                contents,
                extra: vec![],
            });
        }
    }
    v
}

/// Sizes: empty host (HIP style), empty device entry, one large entry.
fn size_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let set = SETS[1].1;
    v.push(Case {
        name: "bc_empty_host".into(),
        file_type: "bc",
        targets: set.to_vec(),
        contents: vec![vec![], bytes(1, 10), bytes(2, 20)],
        extra: vec!["-bundle-align=4096"],
    });
    v.push(Case {
        name: "bc_empty_device".into(),
        file_type: "bc",
        targets: set.to_vec(),
        contents: vec![bytes(1, 10), vec![], bytes(2, 20)],
        extra: vec![],
    });
    v.push(Case {
        name: "o_empty_host_is_binary".into(),
        file_type: "o",
        targets: set.to_vec(),
        contents: vec![vec![], bytes(3, 30), bytes(4, 40)],
        extra: vec![],
    });
    v.push(Case {
        name: "bc_large_8mib".into(),
        file_type: "bc",
        targets: set.to_vec(),
        contents: vec![bytes(5, 100), bytes(6, (8 << 20) + 4093), bytes(7, 4099)],
        extra: vec!["-bundle-align=4096"],
    });
    v.push(Case {
        name: "ll_empty_entries".into(),
        file_type: "ll",
        targets: set.to_vec(),
        contents: vec![vec![], vec![], b"\n".to_vec()],
        extra: vec![],
    });
    v.push(Case {
        name: "i_crlf".into(),
        file_type: "i",
        targets: set.to_vec(),
        contents: vec![b"a\r\nb\r\n".to_vec(), b"c\r\n".to_vec(), b"d".to_vec()],
        extra: vec![],
    });
    v
}

/// Compressed bundles (CCOB v3, zstd with long-distance matching); `seed`
/// numbers the contents.
fn compressed_cases(seed: &mut u64) -> Vec<Case> {
    let mut v = Vec::new();
    for (name, ft, set, extra) in [
        ("bc_compressed", "bc", 1, vec!["-compress"]),
        (
            "bc_compressed_level9_align4096",
            "bc",
            6,
            vec!["-compress", "-compression-level=9", "-bundle-align=4096"],
        ),
        ("hipi_compressed", "hipi", 0, vec!["-compress"]),
        (
            "o_compressed_level1",
            "o",
            2,
            vec!["-compress", "-compression-level=1"],
        ),
        (
            "ll_compressed_level19",
            "ll",
            3,
            vec!["-compress", "-compression-level=19"],
        ),
        (
            "bc_compress_false_wins",
            "bc",
            1,
            vec!["-compress", "-compress=false"],
        ),
    ] {
        let targets = SETS[set].1.to_vec();
        let contents = targets
            .iter()
            .enumerate()
            .map(|(i, _)| {
                *seed += 1;
                if ft == "bc" || ft == "o" {
                    text(*seed, 200 + i * 50, true)
                } else {
                    text(*seed, 3 + i, i % 2 == 0)
                }
            })
            .collect();
        v.push(Case {
            name: name.into(),
            file_type: ft,
            targets,
            contents,
            extra,
        });
    }
    v
}

fn bundle_args(c: &Case, out: &str) -> Vec<String> {
    let mut a = vec![
        format!("-type={}", c.file_type),
        format!("-targets={}", c.targets.join(",")),
    ];
    a.extend((0..c.targets.len()).map(|i| format!("-input=in{i}")));
    a.push(format!("-output={out}"));
    a.extend(c.extra.iter().map(|s| s.to_string()));
    a
}

fn run_case(c: Case) -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    for (i, data) in c.contents.iter().enumerate() {
        std::fs::write(d.join(format!("in{i}")), data)?;
    }
    let theirs = run(&llvm(TOOL), &bundle_args(&c, "llvm.out"), d).ok()?;
    let mine = run(&ours_as(TOOL), &bundle_args(&c, "ours.out"), d).ok()?;
    same("stderr", mine.stderr, theirs.stderr)?;
    let (a, b) = (
        std::fs::read(d.join("ours.out"))?,
        std::fs::read(d.join("llvm.out"))?,
    );
    same_bytes("bundle bytes", &a, &b)?;

    // -list: both tools on both outputs print the same.
    let mut lists = Vec::new();
    for prog in [llvm(TOOL), ours_as(TOOL)] {
        for f in ["llvm.out", "ours.out"] {
            let r = run(
                &prog,
                &[
                    format!("-type={}", c.file_type),
                    "-list".into(),
                    format!("-input={f}"),
                ],
                d,
            )
            .ok()?;
            lists.push(r.stdout);
        }
    }
    for l in &lists[1..] {
        same(
            "-list output",
            String::from_utf8_lossy(l),
            String::from_utf8_lossy(&lists[0]),
        )?;
    }

    // Unbundle every target, each tool from each output.
    let mut results = Vec::new();
    for (tool, prog) in [("llvm", llvm(TOOL)), ("ours", ours_as(TOOL))] {
        for f in ["llvm.out", "ours.out"] {
            let sub = d.join(format!("u-{tool}-{f}"));
            std::fs::create_dir(&sub)?;
            let mut args = vec![
                format!("-type={}", c.file_type),
                "-unbundle".into(),
                format!("-targets={}", c.targets.join(",")),
                format!("-input=../{f}"),
            ];
            args.extend((0..c.targets.len()).map(|i| format!("-output=out{i}")));
            let r = run(&prog, &args, &sub);
            results.push((
                format!("{tool} unbundling {f}"),
                r.code,
                r.stderr.replace(&prog.display().to_string(), "TOOL"),
                snapshot(&sub),
            ));
        }
    }
    for r in &results[1..] {
        if (r.1, &r.2, &r.3) != (results[0].1, &results[0].2, &results[0].3) {
            return Err(format!(
                "unbundling differs: {} → exit {} {:?} {:?}; {} → exit {} {:?} {:?}",
                results[0].0,
                results[0].1,
                results[0].2,
                results[0]
                    .3
                    .iter()
                    .map(|f| (&f.0, f.1.len()))
                    .collect::<Vec<_>>(),
                r.0,
                r.1,
                r.2,
                r.3.iter().map(|f| (&f.0, f.1.len())).collect::<Vec<_>>()
            )
            .into());
        }
    }
    Ok(())
}

/// Requests that pick entries by target-ID compatibility and hash order.
fn unbundle_selection() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let targets = "host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx90a:xnack+,openmp-nvptx64-nvidia-cuda--sm_70";
    for i in 0..4 {
        std::fs::write(d.join(format!("in{i}")), bytes(i, 50 + i as usize))?;
    }
    run(
        &llvm(TOOL),
        &[
            "-type=bc",
            &format!("-targets={targets}"),
            "-input=in0",
            "-input=in1",
            "-input=in2",
            "-input=in3",
            "-output=b.bc",
        ],
        d,
    )
    .ok()?;
    let requests: &[&[&str]] = &[
        &[
            "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
            "hip-amdgcn-amd-amdhsa--gfx906:xnack-",
        ],
        &["hipv4-amdgcn-amd-amdhsa--gfx906"],
        &["hip-amdgcn-amd-amdhsa--gfx90a"],
        &[
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack+:sramecc-",
            "host-x86_64-unknown-linux-gnu",
        ],
        &[
            "openmp-nvptx64-nvidia-cuda--sm_70",
            "openmp-nvptx64-nvidia-cuda--sm_80",
        ],
        &["openmp-amdgcn-amd-amdhsa--gfx906"],
        &[
            "host-x86_64-unknown-linux-gnu",
            "hip-amdgcn-amd-amdhsa--gfx1030",
        ],
    ];
    for (k, req) in requests.iter().enumerate() {
        for allow in [false, true] {
            for hip_omp in [false, true] {
                let mut outs = Vec::new();
                for prog in [llvm(TOOL), ours_as(TOOL)] {
                    let sub = d.join(format!("r{k}-{allow}-{hip_omp}-{}", outs.len()));
                    std::fs::create_dir(&sub)?;
                    let mut args = vec![
                        "-type=bc".to_string(),
                        "-unbundle".into(),
                        format!("-targets={}", req.join(",")),
                        "-input=../b.bc".into(),
                    ];
                    args.extend((0..req.len()).map(|i| format!("-output=o{i}")));
                    if allow {
                        args.push("-allow-missing-bundles".into());
                    }
                    if hip_omp {
                        args.push("-hip-openmp-compatible".into());
                    }
                    let r = run(&prog, &args, &sub);
                    outs.push((
                        r.code,
                        r.stderr.replace(&prog.display().to_string(), "TOOL"),
                        snapshot(&sub),
                    ));
                }
                same(
                    &format!("request {req:?} allow={allow} hip-openmp={hip_omp}"),
                    &outs[1],
                    &outs[0],
                )?;
            }
        }
    }
    Ok(())
}

/// All of the above, as trials.
pub fn tests() -> Vec<Trial> {
    let mut t = Vec::new();
    for c in cases() {
        t.push(trial!(run_case["{}", c.name], &[TOOL], move || run_case(c)));
    }
    t.push(trial!(unbundle_selection, &[TOOL]));
    t.push(trial!(hostile::duplicate_after_normalization, &[TOOL]));
    t.push(trial!(hostile::archive_member_ccob_fault, &[TOOL, "llvm-ar"]));
    t.extend(file_trials());
    t
}

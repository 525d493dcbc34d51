//! offload-kit as `clang-offload-bundler` against the real clang-offload-bundler
//! 22: the same bundle bytes over a matrix of file types, alignments, target
//! mixes and sizes; each tool unbundling the other's output to the same files;
//! the same `-list` output; LLVM's messages for bad command lines; and clean
//! errors for hostile bundles.

use libtest_mimic::{Failed, Trial};

mod archives;
mod object_bundles;

use crate::util::{
    Expected, bytes, clean_failure, committed_transcript, llvm, ours_as, run, same, same_bytes,
    same_messages, snapshot, tempdir, trial,
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
    let mut v = Vec::new();
    let mut seed = 0;
    // Binary types: every set, with alignments 1, 8, 4096 and 3 spread over them.
    for ft in ["bc", "gch", "ast", "o"] {
        for (si, (set, targets)) in SETS.iter().enumerate() {
            let align = ["1", "8", "4096", "3", "16", "1", "64"][(si + ft.len()) % 7];
            let contents = targets
                .iter()
                .map(|_| {
                    seed += 1;
                    bytes(seed, 100 + (seed as usize * 37) % 900)
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
    // Text types.
    for (ti, ft) in ["i", "ii", "cui", "hipi", "d", "ll", "s"]
        .into_iter()
        .enumerate()
    {
        for (si, (set, targets)) in SETS.iter().enumerate().filter(|(si, _)| (si + ti) % 2 == 0) {
            let contents = targets
                .iter()
                .enumerate()
                .map(|(i, _)| {
                    seed += 1;
                    text(seed, 1 + (si + i) % 4, (i + ti) % 2 == 0)
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
    // Sizes: empty host (HIP style), empty device entry, one large entry.
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
    // Compressed bundles (CCOB v3, zstd with long-distance matching).
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
                seed += 1;
                if ft == "bc" || ft == "o" {
                    text(seed, 200 + i * 50, true)
                } else {
                    text(seed, 3 + i, i % 2 == 0)
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

/// A command line whose messages and effects must match LLVM's.
struct Transcript {
    name: &'static str,
    args: &'static [&'static str],
}

fn transcripts() -> Vec<Transcript> {
    let t = |name, args| Transcript { name, args };
    const H: &str = "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906";
    let _ = H;
    vec![
        t(
            "no_type",
            &[
                "-targets=host-x86_64-unknown-linux-gnu",
                "-input=h",
                "-output=x",
            ],
        ),
        t("unknown_option", &["--bogus"]),
        t(
            "extra_positional",
            &["-type=bc", "-list", "-input=b.bc", "foo", "bar"],
        ),
        t(
            "misspelt_option_keeps_value",
            &["-typ=bc", "-list", "-input=b.bc"],
        ),
        t(
            "input_and_inputs",
            &[
                "-type=bc",
                "-input=h",
                "-inputs=h,d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "output_and_outputs",
            &[
                "-type=bc",
                "-input=h",
                "-output=x",
                "-outputs=y",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "inputs_deprecated",
            &[
                "-type=bc",
                "-inputs=h,d",
                "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
                "-output=x",
            ],
        ),
        t(
            "outputs_deprecated",
            &[
                "-type=bc",
                "-unbundle",
                "-input=b.bc",
                "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
                "-outputs=o1,o2",
            ],
        ),
        t(
            "list_and_unbundle",
            &["-type=bc", "-list", "-unbundle", "-input=b.bc"],
        ),
        t(
            "list_two_inputs",
            &["-type=bc", "-list", "-input=b.bc", "-input=b.bc"],
        ),
        t(
            "list_with_output",
            &["-type=bc", "-list", "-input=b.bc", "-output=x"],
        ),
        t(
            "list_with_targets",
            &[
                "-type=bc",
                "-list",
                "-input=b.bc",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "check_archive_bundling",
            &[
                "-type=a",
                "-check-input-archive",
                "-input=h",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "check_archive_not_a",
            &[
                "-type=bc",
                "-unbundle",
                "-check-input-archive",
                "-input=b.bc",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "no_output",
            &[
                "-type=bc",
                "-input=h",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t("no_targets", &["-type=bc", "-input=h", "-output=x"]),
        t(
            "unbundle_two_inputs",
            &[
                "-type=bc",
                "-unbundle",
                "-input=b.bc",
                "-input=b.bc",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "unbundle_outputs_mismatch",
            &[
                "-type=bc",
                "-unbundle",
                "-input=b.bc",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
            ],
        ),
        t(
            "bundle_archive",
            &[
                "-type=a",
                "-input=h",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "bundle_two_outputs",
            &[
                "-type=bc",
                "-input=h",
                "-output=x",
                "-output=y",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "bundle_inputs_mismatch",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "duplicate_targets",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "three_field_triple",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,openmp-nvptx64-nvidia-cuda",
            ],
        ),
        t(
            "bad_kind",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,cuda-nvptx64-nvidia-cuda-",
            ],
        ),
        t(
            "bad_kind_and_triple",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,foo-bar-baz-qux-quux",
            ],
        ),
        t(
            "bad_triple",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,openmp-foo-bar-baz-qux",
            ],
        ),
        t(
            "conflicting_target_ids",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx906:xnack+",
            ],
        ),
        t(
            "two_hosts",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu,host-aarch64-unknown-linux-gnu",
            ],
        ),
        t(
            "no_host",
            &[
                "-type=bc",
                "-input=h",
                "-input=d",
                "-output=x",
                "-targets=openmp-nvptx64-nvidia-cuda--sm_70,hip-amdgcn-amd-amdhsa--gfx906",
            ],
        ),
        t(
            "invalid_type",
            &[
                "-type=zz",
                "-input=h",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "missing_input",
            &[
                "-type=bc",
                "-input=nonexist",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "output_dir_missing",
            &[
                "-type=bc",
                "-input=h",
                "-output=nodir/x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "bad_align",
            &[
                "-type=bc",
                "-bundle-align=abc",
                "-input=h",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "bad_level",
            &[
                "-type=bc",
                "-compression-level=abc",
                "-input=h",
                "-output=x",
                "-targets=host-x86_64-unknown-linux-gnu",
            ],
        ),
        t(
            "missing_bundles_three",
            &[
                "-type=bc",
                "-unbundle",
                "-input=h",
                "-output=a",
                "-output=b",
                "-output=c",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906,openmp-amdgcn-amd-amdhsa--gfx90a,openmp-nvptx64-nvidia-cuda--sm_70",
            ],
        ),
        t(
            "missing_bundles_two",
            &[
                "-type=bc",
                "-unbundle",
                "-input=b.bc",
                "-output=a",
                "-output=b",
                "-targets=openmp-amdgcn-amd-amdhsa--gfx90a,openmp-nvptx64-nvidia-cuda--sm_70",
            ],
        ),
        t(
            "non_bundle_allow_missing",
            &[
                "-type=bc",
                "-unbundle",
                "-allow-missing-bundles",
                "-input=h",
                "-output=a",
                "-output=b",
                "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
            ],
        ),
        t(
            "all_mismatch_allow_missing",
            &[
                "-type=bc",
                "-unbundle",
                "-allow-missing-bundles",
                "-input=b.bc",
                "-output=a",
                "-output=b",
                "-targets=host-aarch64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx1030",
            ],
        ),
        t("list_non_bundle", &["-type=bc", "-list", "-input=h"]),
        t("list_wrong_type", &["-type=ll", "-list", "-input=b.bc"]),
        t(
            "separate_values",
            &[
                "-type",
                "bc",
                "-targets",
                "host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
                "-input",
                "h",
                "-input",
                "d",
                "-output",
                "sep.bc",
            ],
        ),
        t(
            "double_dash",
            &[
                "--type=bc",
                "--targets=host-x86_64-unknown-linux-gnu",
                "--targets=hip-amdgcn-amd-amdhsa--gfx906",
                "--input=h",
                "--input=d",
                "--output=dd.bc",
            ],
        ),
        t("stdin_stdout", &["-type=bc", "-list", "-input=-"]),
        t(
            "output_to_stdout",
            &[
                "-type=bc",
                "-unbundle",
                "-input=b.bc",
                "-output=-",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906",
            ],
        ),
    ]
}

fn run_transcript(t: Transcript) -> Result<(), Failed> {
    let mut results = Vec::new();
    for prog in [llvm(TOOL), ours_as(TOOL)] {
        let dir = tempdir();
        let d = dir.path();
        std::fs::write(d.join("h"), b"HOSTDATA")?;
        std::fs::write(d.join("d"), b"DEV1")?;
        run(
            &llvm(TOOL),
            &[
                "-type=bc",
                "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
                "-input=h",
                "-input=d",
                "-output=b.bc",
            ],
            d,
        )
        .ok()?;
        let r = run(&prog, t.args, d);
        let stderr = r
            .stderr
            .replace(&prog.display().to_string(), "TOOL")
            .replace(TOOL, "TOOL");
        results.push((r.code, stderr, r.stdout, snapshot(d)));
    }
    let (ours, theirs) = (results.pop().unwrap(), results.pop().unwrap());
    committed_transcript(
        TOOL,
        t.name,
        &Expected {
            code: theirs.0,
            stderr: theirs.1.clone(),
        },
    )?;
    same("exit code", ours.0, theirs.0)?;
    same_messages(&ours.1, &theirs.1, None)?;
    same("stdout", ours.2, theirs.2)?;
    same("files", ours.3, theirs.3)
}

/// A valid bundle to corrupt: host and two device entries.
fn valid_bundle() -> Vec<u8> {
    use offload_kit::bundle::binary::{EntrySpec, layout};
    let specs = [
        EntrySpec {
            id: "host-x86_64-unknown-linux-gnu-".into(),
            size: 16,
        },
        EntrySpec {
            id: "hip-amdgcn-amd-amdhsa--gfx906".into(),
            size: 16,
        },
        EntrySpec {
            id: "hip-amdgcn-amd-amdhsa--gfx90a".into(),
            size: 16,
        },
    ];
    let mut out = Vec::new();
    layout(&specs, 1)
        .unwrap()
        .write_to(&mut out, &[&[1; 16], &[2; 16], &[3; 16]])
        .unwrap();
    out
}

fn put64(v: &mut [u8], at: usize, x: u64) {
    v[at..at + 8].copy_from_slice(&x.to_le_bytes());
}

type Corrupt = Box<dyn Fn() -> Vec<u8> + Send + Sync>;

fn hostile() -> Vec<(&'static str, &'static str, Corrupt)> {
    let text_no_end: Corrupt = Box::new(|| {
        b"\n// __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-\nint x;\n".to_vec()
    });
    vec![
        (
            "truncated_count",
            "bc",
            Box::new(|| valid_bundle()[..28].to_vec()),
        ),
        (
            "truncated_record",
            "bc",
            Box::new(|| valid_bundle()[..50].to_vec()),
        ),
        (
            "truncated_id",
            "bc",
            Box::new(|| valid_bundle()[..70].to_vec()),
        ),
        (
            "truncated_in_data",
            "bc",
            Box::new(|| {
                let v = valid_bundle();
                v[..v.len() - 5].to_vec()
            }),
        ),
        (
            "absurd_count",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 24, u64::MAX);
                v
            }),
        ),
        (
            "offset_past_end",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 32, 1 << 40);
                v
            }),
        ),
        (
            "size_past_end",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 40, 1 << 40);
                v
            }),
        ),
        (
            "offset_plus_size_overflows",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 32, u64::MAX - 4);
                v
            }),
        ),
        (
            "id_length_overflows",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 48, u64::MAX);
                v
            }),
        ),
        (
            "zero_offset",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 32, 0);
                v
            }),
        ),
        (
            "data_inside_header",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 32, 8);
                v
            }),
        ),
        ("text_without_end_marker", "i", text_no_end),
    ]
}

fn run_hostile(name: &'static str, file_type: &'static str, data: Vec<u8>) -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let file = format!("{name}.bundle");
    std::fs::write(d.join(&file), &data)?;
    let before = snapshot(d);
    let ty = format!("-type={file_type}");
    let input = format!("-input={file}");
    let r = run(
        &ours_as(TOOL),
        &[
            ty.as_str(),
            "-unbundle",
            input.as_str(),
            "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
            "-output=o1",
            "-output=o2",
        ],
        d,
    );
    clean_failure("unbundle", &r, &file)?;
    // Where LLVM 22 fails cleanly too (rather than crashing), ours starts
    // with its line, character for character.
    let l = run(
        &llvm(TOOL),
        &[
            ty.as_str(),
            "-unbundle",
            input.as_str(),
            "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
            "-output=l1",
            "-output=l2",
        ],
        d,
    );
    for f in ["l1", "l2"] {
        let _ = std::fs::remove_file(d.join(f));
    }
    let crashed = l.code != 1
        || ["Stack dump", "PLEASE", "LLVM ERROR"]
            .iter()
            .any(|c| l.stderr.contains(c));
    if !crashed {
        let first = |s: &str, p: &std::path::Path| {
            s.lines()
                .next()
                .unwrap_or_default()
                .replace(&p.display().to_string(), "TOOL")
        };
        same(
            "first line",
            first(&r.stderr, &ours_as(TOOL)),
            first(&l.stderr, &llvm(TOOL)),
        )?;
    }
    if file_type == "bc" {
        let r = run(&ours_as(TOOL), &[ty.as_str(), "-list", input.as_str()], d);
        clean_failure("list", &r, &file)?;
    }
    same("files after the failures", snapshot(d), before)
}

/// Two targets that normalize to one ID: LLVM 22 writes a bundle whose first
/// entry points at the wrong bytes (spec §1.5); we refuse, naming both.
fn duplicate_after_normalization() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("a"), b"DEV1")?;
    std::fs::write(d.join("b"), b"DEVI")?;
    let args = [
        "-type=bc",
        "-targets=hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa-unknown-gfx906",
        "-input=a",
        "-input=b",
        "-output=x",
    ];
    let r = run(&ours_as(TOOL), &args, d);
    clean_failure("bundle", &r, "hip-amdgcn-amd-amdhsa-unknown-gfx906")?;
    if d.join("x").exists() {
        return Err("an output was written".into());
    }
    // LLVM accepts it and writes a bundle where neither record holds the
    // second input's bytes (the first points at zero padding).
    run(&llvm(TOOL), &args, d).ok()?;
    let x = std::fs::read(d.join("x"))?;
    let entries = offload_kit::bundle::binary::read(&x)?;
    if entries.iter().any(|e| e.data == b"DEVI") {
        return Err("LLVM 22 no longer mis-writes this case: revisit the rejection".into());
    }
    Ok(())
}

/// A damaged CCOB member of an archive: LLVM's line, then a note naming the
/// archive, the member and the fault.
fn archive_member_ccob_fault() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("m1.bc"), b"CCOB\x03\x00\x01\x00")?;
    run(&llvm("llvm-ar"), &["rc", "bad.a", "m1.bc"], d).ok()?;
    let args = [
        "-unbundle",
        "-type=a",
        "-input=bad.a",
        "-targets=hip-amdgcn-amd-amdhsa--gfx906",
        "-output=o.a",
    ];
    let l = run(&llvm(TOOL), &args, d);
    let r = run(&ours_as(TOOL), &args, d);
    same("exit code", r.code, l.code)?;
    let mask = |s: &str, p: &std::path::Path| s.replace(&p.display().to_string(), "TOOL");
    same_messages(
        &mask(&r.stderr, &ours_as(TOOL)),
        &mask(&l.stderr, &llvm(TOOL)),
        Some("bad.a"),
    )?;
    if !r.stderr.contains("member 'm1.bc'") {
        return Err(format!("the note does not name the member: {}", r.stderr).into());
    }
    Ok(())
}

/// All of the above, as trials.
pub fn tests() -> Vec<Trial> {
    let mut t = Vec::new();
    for c in cases() {
        let name = format!("bundler::interop::{}", c.name);
        t.push(trial(name, &[TOOL], move || run_case(c)));
    }
    t.push(trial(
        "bundler::interop::unbundle_selection",
        &[TOOL],
        unbundle_selection,
    ));
    t.push(trial(
        "bundler::interop::duplicate_after_normalization",
        &[TOOL],
        duplicate_after_normalization,
    ));
    t.push(trial(
        "bundler::archive_member_ccob_fault",
        &[TOOL, "llvm-ar"],
        archive_member_ccob_fault,
    ));
    for tr in transcripts() {
        let name = format!("bundler::transcript::{}", tr.name);
        t.push(trial(name, &[TOOL], move || run_transcript(tr)));
    }
    for (name, ft, f) in hostile() {
        t.push(trial(
            format!("bundler::hostile::{name}"),
            &[TOOL],
            move || run_hostile(name, ft, f()),
        ));
    }
    t.extend(object_bundles::tests());
    t.extend(archives::tests());
    t
}

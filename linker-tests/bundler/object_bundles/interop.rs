//! Interop cases (each tool listing and unbundling the other's bundles the
//! same way) and transcripts of the bundler's messages, against LLVM's.

use super::*;

struct Case {
    name: &'static str,
    host: &'static str,
    /// (target, input); the host target's input is `host`.
    targets: &'static [(&'static str, &'static str)],
    /// Whether the stripped host object links into a program that runs.
    runs: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "x86_64_host_hip_openmp",
        host: "main.o",
        targets: &[
            ("host-x86_64-unknown-linux-gnu", ""),
            ("hip-amdgcn-amd-amdhsa--gfx906", "gfx906.o"),
            ("openmp-nvptx64-nvidia-cuda--sm_70", "d1"),
        ],
        runs: true,
    },
    Case {
        name: "x86_64_host_last_features_large",
        host: "main.o",
        targets: &[
            ("openmp-amdgcn-amd-amdhsa--gfx90a:xnack+", "gfx90a.bc"),
            ("hipv4-amdgcn-amd-amdhsa--gfx908:sramecc+:xnack-", "d3"),
            ("openmp-x86_64-pc-linux-gnu-", "d2"),
            ("host-x86_64--linux-gnu", ""),
        ],
        runs: true,
    },
    Case {
        name: "x86_64_host_only",
        host: "main.o",
        targets: &[("host-x86_64-unknown-linux-gnu", "")],
        runs: true,
    },
    Case {
        name: "cxx_groups_debug_info",
        host: "groups.o",
        targets: &[
            ("host-x86_64-unknown-linux-gnu", ""),
            ("hip-amdgcn-amd-amdhsa--gfx906", "gfx906.o"),
            ("hip-amdgcn-amd-amdhsa--gfx90a", "gfx90a.bc"),
        ],
        runs: true,
    },
    Case {
        name: "i386_elf32",
        host: "k32.o",
        targets: &[
            ("openmp-nvptx64-nvidia-cuda--sm_80", "d1"),
            ("host-i386-unknown-linux-gnu", ""),
            ("hip-amdgcn-amd-amdhsa--gfx906", "d3"),
        ],
        runs: false,
    },
    Case {
        name: "powerpc64_big_endian",
        host: "kbe.o",
        targets: &[
            ("host-powerpc64-unknown-linux-gnu", ""),
            ("openmp-amdgcn-amd-amdhsa--gfx942", "d2"),
        ],
        runs: false,
    },
];

fn run_case(c: &Case) -> Result<(), Failed> {
    let work = tempdir();
    let w = work.path();
    let inputs = inputs()?;
    let targets = c.targets.iter().map(|t| t.0).collect::<Vec<_>>().join(",");
    let mut bundle = vec!["-type=o".to_string(), format!("-targets={targets}")];
    for (t, input) in c.targets {
        let i = if t.starts_with("host-") {
            c.host
        } else {
            input
        };
        bundle.push(format!("-input={i}"));
    }
    bundle.push("-output=fat.o".into());
    let (theirs, ours) = run_both(inputs, w, "bundle", &bundle)?;
    same_outcome("bundling", &theirs, &ours)?;
    if ours.code != 0 {
        return Err(format!("bundling failed: {}", ours.stderr).into());
    }
    // Both fat objects side by side, each tool's under its own name.
    let both = w.join("both");
    copy_dir(inputs, &both)?;
    std::fs::copy(ours.dir.join("fat.o"), both.join("ours.o"))?;
    std::fs::copy(theirs.dir.join("fat.o"), both.join("llvm.o"))?;
    same_file(&both, "ours.o", "llvm.o")?;

    // -list: all four combinations print the same.
    let mut lists = Vec::new();
    for prog in [llvm(TOOL), ours_as(TOOL)] {
        for f in ["ours.o", "llvm.o"] {
            let r = run(&prog, &["-type=o", "-list", &format!("-input={f}")], &both).ok()?;
            lists.push(String::from_utf8_lossy(&r.stdout).into_owned());
        }
    }
    for l in &lists[1..] {
        same("-list output", l, &lists[0])?;
    }

    // Unbundle every target, each tool from each fat object.
    let n = c.targets.len();
    let mut runs = Vec::new();
    for (who, prog) in [("llvm", llvm(TOOL)), ("ours", ours_as(TOOL))] {
        for f in ["llvm.o", "ours.o"] {
            let mut a = vec![
                "-type=o".to_string(),
                "-unbundle".into(),
                format!("-targets={targets}"),
                format!("-input={f}"),
            ];
            a.extend((0..n).map(|i| format!("-output={who}-{f}-{i}")));
            let r = run(&prog, &a, &both).ok()?;
            runs.push((format!("{who}-{f}"), r.stderr));
        }
    }
    for r in &runs {
        same("unbundling stderr", &r.1, &runs[0].1)?;
    }
    for (i, (t, input)) in c.targets.iter().enumerate() {
        let reference = format!("{}-{i}", runs[0].0);
        for (tag, _) in &runs[1..] {
            let out = format!("{tag}-{i}");
            if t.starts_with("host-") {
                same_file(&both, &out, &reference)?;
            } else {
                let (a, b) = (
                    std::fs::read(both.join(&out))?,
                    std::fs::read(both.join(input))?,
                );
                if a != b {
                    return Err(format!("{out} is not {input}").into());
                }
            }
        }
        if t.starts_with("host-") {
            // LLVM's extraction of its own bundle is the original object.
            same_file(&both, &reference, c.host)?;
            if c.runs {
                let mut outputs = Vec::new();
                for obj in [
                    format!("ours-ours.o-{i}"),
                    reference.clone(),
                    "ours.o".into(),
                ] {
                    let exe = format!("{obj}.exe");
                    run(&llvm("clang"), &[obj.as_str(), "-o", exe.as_str()], &both).ok()?;
                    let r = run(&both.join(&exe), &[] as &[&str], &both).ok()?;
                    outputs.push(String::from_utf8_lossy(&r.stdout).into_owned());
                }
                if outputs[0].is_empty() {
                    return Err("the linked program printed nothing".into());
                }
                for o in &outputs[1..] {
                    same("program output", o, &outputs[0])?;
                }
            }
        }
    }
    Ok(())
}

// Transcripts

#[allow(
    clippy::too_many_lines,
    reason = "a table of the transcripts, one command line each"
)]
fn transcripts() -> Vec<(&'static str, Vec<String>)> {
    vec![
        (
            "compress_has_no_effect",
            args(&[
                "-type=o",
                HD,
                "-input=main.o",
                "-input=d1",
                "-output=x.o",
                "-compress",
            ]),
        ),
        (
            "compress_verbose",
            args(&[
                "-type=o",
                HD,
                "-input=main.o",
                "-input=d1",
                "-output=x.o",
                "-compress",
                "-verbose",
            ]),
        ),
        (
            "bundle_align_ignored",
            args(&[
                "-type=o",
                HD,
                "-input=main.o",
                "-input=d1",
                "-output=x.o",
                "-bundle-align=4096",
            ]),
        ),
        (
            "list_plain_object",
            args(&["-type=o", "-list", "-input=main.o"]),
        ),
        (
            "unbundle_plain_object",
            args(&[
                "-type=o",
                "-unbundle",
                HD,
                "-input=main.o",
                "-output=h",
                "-output=d",
            ]),
        ),
        (
            "unbundle_plain_object_allow_missing",
            args(&[
                "-type=o",
                "-unbundle",
                HD,
                "-input=main.o",
                "-output=h",
                "-output=d",
                "-allow-missing-bundles",
            ]),
        ),
        (
            "unbundle_missing_target",
            args(&[
                "-type=o",
                "-unbundle",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx1030",
                "-input=fat.o",
                "-output=a",
                "-output=b",
            ]),
        ),
        (
            "unbundle_device_only_with_features",
            args(&[
                "-type=o",
                "-unbundle",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906:xnack+,hipv4-amdgcn-amd-amdhsa--gfx906:sramecc-",
                "-input=fat.o",
                "-output=a",
                "-output=b",
            ]),
        ),
        (
            "unbundle_device_only_with_features_allow_missing",
            args(&[
                "-type=o",
                "-unbundle",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906:xnack+,hipv4-amdgcn-amd-amdhsa--gfx906:sramecc-",
                "-input=fat.o",
                "-output=a",
                "-output=b",
                "-allow-missing-bundles",
            ]),
        ),
        (
            "unbundle_device_from_compressed_object_bundle",
            args(&[
                "-type=o",
                "-unbundle",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906",
                "-input=fat.ccob",
                "-output=d",
            ]),
        ),
        (
            "unbundle_to_stdout",
            args(&[
                "-type=o",
                "-unbundle",
                "-targets=hip-amdgcn-amd-amdhsa--gfx906",
                "-input=fat.o",
                "-output=-",
            ]),
        ),
        (
            "type_a_is_refused_for_bundling",
            args(&["-type=a", HD, "-input=main.o", "-input=d1", "-output=x.o"]),
        ),
    ]
}

fn run_transcript(name: &str, a: &[String]) -> Result<(), Failed> {
    let work = tempdir();
    let (theirs, ours) = run_both(inputs()?, work.path(), name, a)?;
    same_outcome(name, &theirs, &ours)?;
    let failing = [
        "unbundle_plain_object",
        "unbundle_missing_target",
        "unbundle_device_only_with_features",
        "type_a_is_refused_for_bundling",
    ];
    same(
        &format!("{name}: success"),
        ours.code == 0,
        !failing.contains(&name),
    )
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let mut t = Vec::new();
    for (i, c) in CASES.iter().enumerate() {
        t.push(trial!(
            run_case["{}", c.name],
            TOOLS,
            move || run_case(&CASES[i]),
        ));
    }
    for (name, a) in transcripts() {
        t.push(trial!(
            run_transcript["{name}"],
            TOOLS,
            move || run_transcript(name, &a),
        ));
    }
    t
}

//! Bundle-entry IDs (`offload_kit::bundle::id`, `offload_kit::llvm::triple`)
//! against the real clang-offload-bundler 22.
//!
//! * Normalization: a large generated list of targets (every architecture,
//!   vendor, OS and environment name the triple emulation knows, in and out
//!   of place, with version suffixes, empty and unknown parts, `amdhsa`
//!   cases, known and unknown target IDs with features) is bundled, many
//!   targets per call, and the IDs LLVM stores in the header are compared
//!   with `BundleId::normalized`.
//! * Target checks: lists that LLVM rejects (format, kind, triple, conflicts,
//!   duplicates, host count, the DXIL abort) are run one per call, and LLVM's
//!   message is compared with `check_targets`' error; lists that pass must
//!   pass in both.
//! * Compatibility: hand-made bundles with many entries (IDs stored as is,
//!   normalized or not) inside an archive are unbundled with `-type=a`, which
//!   gives each entry to *every* compatible requested target; the matrix of
//!   (entry, request) pairs LLVM extracts is compared with `BundleId::serves`,
//!   with and without `-hip-openmp-compatible`.

use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use offload_kit::bundle::id::{BundleId, TargetError, check_targets};
use offload_kit::llvm::triple::{Arch, Environment, Os, Vendor};

use crate::util::{llvm, run, same, tempdir, trial};

const TOOL: &str = "clang-offload-bundler";
const HOST: &str = "host-x86_64-unknown-linux-gnu";
/// `-targets` is one argument; Linux limits one argument to 128 KiB.
const MAX_TARGETS_TEXT: usize = 60_000;
const MAX_BATCH: usize = 500;

pub fn tests() -> Vec<Trial> {
    let (valid, invalid) = corpus();
    let mut t = Vec::new();
    t.push(trial(
        "bundle_ids::normalized_like_llvm",
        &[TOOL],
        move || normalized_like_llvm(valid),
    ));
    // Failing lists cost one process each: spread them over a few trials so
    // the harness can run them in parallel.
    let lists: Vec<Vec<String>> = invalid
        .into_iter()
        .map(|t| {
            if t.starts_with("host-") {
                vec![t]
            } else {
                vec![HOST.to_owned(), t]
            }
        })
        .chain(check_lists())
        .collect();
    for (part, these) in lists.chunks(lists.len().div_ceil(3).max(1)).enumerate() {
        let these = these.to_vec();
        t.push(trial(
            format!("bundle_ids::target_checks_like_llvm_{}", part + 1),
            &[TOOL],
            move || target_checks_like_llvm(these),
        ));
    }
    t.push(trial(
        "bundle_ids::unbundle_target_checks_like_llvm",
        &[TOOL],
        unbundle_target_checks_like_llvm,
    ));
    for hip_openmp in [false, true] {
        t.push(trial(
            format!(
                "bundle_ids::compatibility_like_llvm{}",
                if hip_openmp { "_hip_openmp" } else { "" }
            ),
            &[TOOL],
            move || compatibility_like_llvm(hip_openmp),
        ));
    }
    t
}

// ---------------------------------------------------------------------------
// The generated targets
// ---------------------------------------------------------------------------

/// Architecture spellings beyond LLVM's canonical names: aliases, ARM and
/// Thumb versions, sub-architectures, and near misses.
const ARCH_SPELLINGS: &[&str] = &[
    "amd64",
    "i486",
    "i686",
    "i986",
    "x86_64h",
    "ppc",
    "ppc32",
    "ppcle",
    "ppc64",
    "ppu",
    "powerpcspe",
    "ppc64le",
    "arm64",
    "arm64e",
    "arm64ec",
    "arm64_32",
    "aarch64_lfi",
    "xscale",
    "xscaleeb",
    "armv4t",
    "armv5te",
    "armv6",
    "armv6m",
    "armv6kz",
    "armv7",
    "armv7a",
    "armv7em",
    "armv7s",
    "armv7k",
    "armv7ve",
    "armv7eb",
    "armebv7",
    "armv8a",
    "armv8.1m.main",
    "armv8m.base",
    "armv8.6a",
    "armv9.7a",
    "armv3",
    "thumbv6m",
    "thumbv7",
    "thumbv7em",
    "thumbebv7",
    "mipsel",
    "mipsisa32r6",
    "mipsisa64r6el",
    "mipsn32",
    "mipsallegrex",
    "mips64r6",
    "sparc64",
    "systemz",
    "bpf",
    "bpf_be",
    "bpf_le",
    "kalimba3",
    "spirv1.5",
    "spirv32v1.0",
    "spirv64v1.2",
    "spirv64v1.6",
    "dxilv1.3",
    "dxilv1.9",
    "riscv32be",
];

/// Spellings that are not an architecture for LLVM 22.
const BAD_ARCHES: &[&str] = &[
    "",
    "X86_64",
    "x86",
    "foo",
    "spirv1.2",
    "spirv64v1.7",
    "thumbv3",
    "armx7",
    "aarch64eb",
    "arm64_lfi",
    "pe",
    "amdgcn5",
    "nvptx32",
    "gfx906",
    "unknown",
];

const KINDS: &[&str] = &["openmp", "hip", "hipv4"];

/// Target IDs: every clang 22 `OffloadArch` name is tried separately; these
/// are the extra shapes.
const TARGET_ID_SHAPES: &[&str] = &[
    "gfx906:xnack+",
    "gfx906:xnack-:sramecc+",
    "gfx906:xnack+:sramecc-",
    "gfx906:foo+",
    "gfx906:xnack",
    "gfx906:",
    "gfx906::",
    "gfx906:xnack+:xnack-",
    ":xnack+",
    "gfx940",
    "gfx941",
    "gfx1234",
    "GFX906",
    "Sm_70",
    "sm_70:foo+",
    "sm_100f",
    "fiji",
    "foo",
    "a-b-c",
    "gfx9-4-generic:sramecc+",
    "generic:x+",
];

fn add(list: &mut Vec<String>, seen: &mut HashSet<String>, t: String) {
    if t != HOST && !t.contains(',') && seen.insert(t.clone()) {
        list.push(t);
    }
}

/// The generated targets: (those `check_targets` accepts next to a host,
/// those it rejects).
fn corpus() -> (Vec<String>, Vec<String>) {
    let mut all = Vec::new();
    let mut seen = HashSet::new();
    let kind = |i: usize| KINDS[i % KINDS.len()];
    let mut i = 0usize;
    let mut next = || {
        i += 1;
        i
    };

    // Every architecture name and spelling, with a plain and an empty rest.
    let arches: Vec<&str> = Arch::ALL[1..].iter().map(|a| a.name()).collect();
    for a in arches.iter().chain(ARCH_SPELLINGS) {
        add(
            &mut all,
            &mut seen,
            format!("{}-{a}-unknown-linux-gnu", kind(next())),
        );
        add(&mut all, &mut seen, format!("{}-{a}---", kind(next())));
    }
    // (Rejected ones cost a process each: one form only.)
    for a in BAD_ARCHES {
        add(
            &mut all,
            &mut seen,
            format!("{}-{a}-unknown-linux-gnu", kind(next())),
        );
    }
    // Vendors in place and out of place.
    for v in Vendor::ALL
        .iter()
        .map(|v| v.name())
        .chain(["", "sie", "w64", "none", "foo"])
    {
        add(&mut all, &mut seen, format!("openmp-x86_64-{v}-linux-gnu"));
        add(&mut all, &mut seen, format!("hip-aarch64-linux-{v}-"));
        add(&mut all, &mut seen, format!("hipv4-riscv64--gnu-{v}"));
    }
    // Operating systems, with versions, in and out of place.
    let extra_os = [
        "linux5.0",
        "macosx10.15",
        "macos",
        "ios17.0",
        "win32",
        "mingw32",
        "cygwin",
        "visionos",
        "shadermodel6.3",
        "shadermodel6.x",
        "vulkan1.3",
        "amdhsa5",
        "none",
        "foo",
    ];
    for o in Os::ALL.iter().map(|o| o.name()).chain(extra_os) {
        add(&mut all, &mut seen, format!("openmp-x86_64-unknown-{o}-"));
        add(
            &mut all,
            &mut seen,
            format!("hip-x86_64-unknown-{o}9.1-gnu"),
        );
        add(&mut all, &mut seen, format!("hipv4-aarch64-{o}-gnu-"));
        add(&mut all, &mut seen, format!("openmp-i686--musl-{o}"));
    }
    // Environments and object formats, in and out of place.
    let extra_env = [
        "elf",
        "coff",
        "xcoff",
        "macho",
        "goff",
        "wasm",
        "spirv",
        "dxcontainer",
        "gnuelf",
        "msvccoff",
        "androideabi",
        "androideabi21",
        "gnueabi",
        "eabihf5",
        "foo",
    ];
    for e in Environment::ALL.iter().map(|e| e.name()).chain(extra_env) {
        add(&mut all, &mut seen, format!("openmp-x86_64-pc-linux-{e}"));
        add(&mut all, &mut seen, format!("hip-armv7-{e}-linux-"));
        add(&mut all, &mut seen, format!("hipv4-aarch64-{e}--"));
        add(
            &mut all,
            &mut seen,
            format!("openmp-x86_64-unknown-windows-{e}"),
        );
        add(&mut all, &mut seen, format!("openmp-armv7-suse-linux-{e}"));
    }
    // Whole triples in unusual orders.
    for t in [
        "x86_64-linux-gnu-",
        "x86_64--linux-gnu",
        "aarch64-none-elf-",
        "arm-none-eabi-",
        "x86_64-gnu-linux-pc",
        "x86_64-pc-gnu-linux",
        "x86_64-w64-mingw32-",
        "x86_64-pc-cygwin-",
        "i686-pc-windows-elf",
        "i686-pc-win32-macho",
        "dxil-unknown-shadermodel6.0-pixel",
        "dxil-shadermodel6.9-compute-",
        "dxilv1.2-unknown-shadermodel6.3-library",
        "spirv64-intel-unknown-",
        "spirv-unknown-vulkan1.3-compute",
        "wasm32-unknown-wasip2-",
        "nvptx64-nvidia-cuda-",
        "nvptx64-cuda-nvidia-",
        "amdgcn-amdhsa-amd-",
        "x86_64-apple-darwin-",
        "arm64-apple-ios17.0-simulator",
        "x86_64-sie-ps5-",
        "mips64-unknown-linux-gnuabi64",
        "powerpc64-ibm-aix7.2-",
        "s390x-ibm-zos-",
    ] {
        for k in ["openmp", "hip"] {
            add(&mut all, &mut seen, format!("{k}-{t}"));
        }
    }
    // amdhsa: whatever sits in the environment slot is dropped.
    for (j, env) in ["", "unknown", "gnu", "elf", "gfx906", "foo", "amdhsa"]
        .iter()
        .enumerate()
    {
        for arch in ["amdgcn", "spirv64", "x86_64", "r600"] {
            add(
                &mut all,
                &mut seen,
                format!("{}-{arch}-amd-amdhsa-{env}-gfx90a", kind(j)),
            );
        }
        add(&mut all, &mut seen, format!("hip-amdgcn-amd-amdhsa-{env}"));
        add(
            &mut all,
            &mut seen,
            format!("hip-amdgcn-unknown-amdhsa-{env}-gfx906"),
        );
    }
    // Target IDs: every known processor, then the odd shapes. Each target
    // gets its own environment word so no two share a conflict group.
    // (A sweep of candidate names, independent of our own table.)
    let mut procs: Vec<String> = (600..1300)
        .map(|n| format!("gfx{n}"))
        .chain((0..130).flat_map(|n| [format!("sm_{n}"), format!("sm_{n}a"), format!("sm_{n}f")]))
        .collect();
    for p in [
        "gfx9-generic",
        "gfx9-4-generic",
        "gfx10-1-generic",
        "gfx10-3-generic",
        "gfx11-generic",
        "gfx12-generic",
        "gfx13-generic",
        "gfx90a",
        "gfx90c",
        "gfx94a",
        "amdgcnspirv",
        "generic",
        "graniterapids",
        "bmg_g21",
        "pvc",
        "native",
        "compute_70",
        "sm_",
        "gfx",
    ] {
        procs.push(p.to_owned());
    }
    procs.extend(TARGET_ID_SHAPES.iter().map(|s| (*s).to_owned()));
    for (j, p) in procs.iter().enumerate() {
        let triple = match j % 3 {
            0 => "amdgcn-amd-amdhsa",
            1 => "nvptx64-nvidia-cuda",
            _ => "spirv64-amd-amdhsa",
        };
        add(
            &mut all,
            &mut seen,
            format!("{}-{triple}-e{j}-{p}", kind(j)),
        );
    }
    // A few host targets (each bundle call can hold only one).
    for t in [
        "host-x86_64-unknown-linux-",
        "host-x86_64-pc-linux-gnu",
        "host-aarch64-linux-gnu-",
        "host-x86_64-apple-darwin-",
        "host-x86_64-unknown-linux-gnu-foo",
        "host-powerpc64le-unknown-linux-gnu-sm_70",
    ] {
        add(&mut all, &mut seen, t.to_owned());
    }
    // Malformed and invalid ones.
    for t in [
        "openmp-nvptx64-nvidia-cuda",
        "host-x86_64-unknown-linux",
        "openmp",
        "",
        "-",
        "----",
        "hip-amdgcn-amd-amdhsa",
        "cuda-nvptx64-nvidia-cuda--sm_70",
        "sycl-spir64-unknown-unknown-",
        "HIP-amdgcn-amd-amdhsa--gfx906",
        "Host-x86_64-unknown-linux-gnu",
        "-x86_64-unknown-linux-gnu",
        "hip-X86_64-Unknown-Linux-GNU",
        "cuda-foo-bar-baz-",
        "openmp-dxil-unknown-shadermodel6.10-pixel",
        "cuda-dxil-unknown-shadermodel6.12-",
        "hip-dxil-shadermodel6.10-pixel-",
    ] {
        add(&mut all, &mut seen, t.to_owned());
    }

    all.into_iter().partition(|t| {
        let list: Vec<&str> = if t.starts_with("host-") {
            vec![t]
        } else {
            vec![HOST, t]
        };
        check_targets(&list, true).is_ok()
    })
}

/// Target lists for the checks that involve several targets (§5.4, §6).
fn check_lists() -> Vec<Vec<String>> {
    let h = |ids: &[&str]| -> Vec<String> {
        ids.iter()
            .map(|t| format!("hip-amdgcn-amd-amdhsa--{t}"))
            .collect()
    };
    let mut lists = vec![
        h(&["gfx906:sramecc+:xnack+", "gfx906:xnack+"]),
        h(&["gfx906:xnack+", "gfx906:xnack+:sramecc+"]),
        h(&["gfx906", "gfx906:xnack+"]),
        h(&["gfx906:xnack+", "gfx906"]),
        h(&["gfx906:xnack-", "gfx906:xnack+"]),
        h(&["gfx906", "gfx90a:xnack+", "gfx90a"]),
        h(&["gfx906:xnack", "gfx906:xnack+"]),
        h(&["gfx906:sramecc+:foo", "gfx906:xnack+"]),
        h(&["gfx906:sramecc+:foo", "gfx90a:xnack+:foo"]),
        h(&["gfx906:foo", "gfx906:xnack+:xnack+"]),
        h(&["", "gfx906:sramecc+:foo"]),
        h(&["", "gfx906:xnack+"]),
        h(&["gfx906:", "gfx906:xnack+"]),
        h(&["gfx906::", "gfx906:xnack+"]),
        h(&["gfx906:aa+:foo", "gfx906:zz+:bar"]),
        h(&["gfx906:aa+:foo", "gfx906:aa-:bar:cc+"]),
        h(&["gfx940", "gfx906:xnack+"]),
        h(&["fiji", "gfx941:xnack+"]),
        h(&["gfx906", "gfx906"]),
        h(&[
            "gfx906",
            "gfx908",
            "gfx90a",
            "gfx942:sramecc+",
            "gfx942:sramecc-",
        ]),
        vec![
            "hip-amdgcn-amd-amdhsa-unknown-gfx906".into(),
            "hip-amdgcn-amd-amdhsa-unknown-gfx906:xnack+".into(),
        ],
        vec![
            "hip-amdgcn-amd-amdhsa--gfx906".into(),
            "hip-amdgcn-amd-amdhsa-unknown-gfx906:xnack+".into(),
        ],
        vec![
            "hip-amdgcn-amd-amdhsa-zz-gfx906:xnack+".into(),
            "hip-amdgcn-amd-amdhsa-aa-gfx906:sramecc+:foo".into(),
            "hip-amdgcn-amd-amdhsa-aa-gfx906:xnack-".into(),
            "hip-amdgcn-amd-amdhsa-zz-gfx906".into(),
        ],
        vec![
            "openmp-nvptx64-nvidia-cuda--sm_70".into(),
            "openmp-nvptx64-nvidia-cuda--sm_70:foo+".into(),
        ],
        vec![HOST.into(), "openmp-x86_64-unknown-linux-gnu".into()],
        vec![HOST.into(), HOST.into()],
        vec![HOST.into(), "host-x86_64-pc-linux-gnu".into()],
        vec!["openmp-x86_64-unknown-linux-gnu".into()],
        vec![
            "hip-amdgcn-amd-amdhsa--gfx906".into(),
            "hipv4-amdgcn-amd-amdhsa--gfx90a".into(),
        ],
        vec![
            "hip-amdgcn-amd-amdhsa--gfx906".into(),
            "openmp-amdgcn-amd-amdhsa--gfx90a".into(),
        ],
        vec![
            "hip-amdgcn-amd-amdhsa--gfx906".into(),
            "hip-amdgcn-amd-amdhsa-unknown-gfx906".into(),
        ],
        // Order of checks: the first bad target decides, duplicates first.
        vec!["cuda-x-y-z-".into(), "bad".into()],
        vec!["bad".into(), "cuda-x-y-z-".into()],
        vec![HOST.into(), "cuda-x-y-z-".into(), HOST.into()],
        vec![HOST.into(), HOST.into(), "bad".into()],
        vec!["openmp-foo-bar-baz-".into(), HOST.into(), HOST.into()],
        vec![
            HOST.into(),
            "host-x86_64-pc-linux-gnu".into(),
            "hip-amdgcn-amd-amdhsa--gfx906".into(),
            "hip-amdgcn-amd-amdhsa--gfx906:xnack+".into(),
        ],
    ];
    for l in &mut lists {
        if !l.iter().any(|t| t.starts_with("host-"))
            && !l
                .iter()
                .all(|t| t.starts_with("hip-") || t.starts_with("hipv4-"))
        {
            l.insert(0, HOST.into());
        }
    }
    lists
}

// ---------------------------------------------------------------------------
// Normalization
// ---------------------------------------------------------------------------

/// Splits targets into bundle calls: one host each (the default one unless a
/// generated host target takes its place), at most one target per conflict
/// group (kind and the four triple parts as given), and a bounded size.
fn batches(targets: Vec<String>) -> Vec<Vec<String>> {
    struct Batch {
        targets: Vec<String>,
        groups: HashSet<String>,
        host: bool,
        text: usize,
    }
    let mut out: Vec<Batch> = Vec::new();
    for t in targets {
        let group: String = t.splitn(6, '-').take(5).collect::<Vec<_>>().join("-");
        let host = t.starts_with("host-");
        let fits = |b: &Batch| {
            b.targets.len() < MAX_BATCH
                && b.text + t.len() < MAX_TARGETS_TEXT
                && !b.groups.contains(&group)
                && !(host && b.host)
        };
        let i = match out.iter().position(fits) {
            Some(i) => i,
            None => {
                out.push(Batch {
                    targets: Vec::new(),
                    groups: HashSet::new(),
                    host: false,
                    text: 0,
                });
                out.len() - 1
            }
        };
        let b = &mut out[i];
        b.text += t.len() + 1;
        b.groups.insert(group);
        b.host |= host;
        b.targets.push(t);
    }
    out.into_iter()
        .map(|mut b| {
            if !b.host {
                b.targets.insert(0, HOST.to_owned());
            }
            b.targets
        })
        .collect()
}

/// The entry IDs of a binary bundle's header, in header order.
fn header_ids(data: &[u8]) -> Result<Vec<String>, Failed> {
    let bad = || Failed::from("malformed bundle header");
    if data.get(..24) != Some(b"__CLANG_OFFLOAD_BUNDLE__".as_slice()) {
        return Err(bad());
    }
    let u64_at = |at: usize| -> Result<u64, Failed> {
        let b = data.get(at..at + 8).ok_or_else(bad)?;
        Ok(u64::from_le_bytes(b.try_into().map_err(|_| bad())?))
    };
    let n = u64_at(24)?;
    let mut at = 32usize;
    let mut ids = Vec::new();
    for _ in 0..n {
        let len = usize::try_from(u64_at(at + 16)?).map_err(|_| bad())?;
        at += 24;
        let id = data.get(at..at + len).ok_or_else(bad)?;
        ids.push(String::from_utf8_lossy(id).into_owned());
        at += len;
    }
    Ok(ids)
}

fn normalized_like_llvm(targets: Vec<String>) -> Result<(), Failed> {
    let dir = tempdir();
    let input = dir.path().join("in.bin");
    std::fs::write(&input, b"payload").map_err(|e| e.to_string())?;
    let mut compared = 0usize;
    let mut wrong = String::new();
    for batch in batches(targets) {
        let ours = check_targets(&batch, true)
            .map_err(|e| format!("our checks reject a batch LLVM should take: {e}"))?;
        let mut args = vec![
            "-type=bc".to_owned(),
            format!("-targets={}", batch.join(",")),
        ];
        args.extend(batch.iter().map(|_| "-input=in.bin".to_owned()));
        args.push("-output=out.bin".to_owned());
        let r = run(&llvm(TOOL), &args, dir.path());
        if r.code != 0 {
            return Err(format!("LLVM rejects a batch we accept: {}", r.stderr).into());
        }
        let data = std::fs::read(dir.path().join("out.bin")).map_err(|e| e.to_string())?;
        let theirs = header_ids(&data)?;
        same("entry count", theirs.len(), batch.len())?;
        for ((target, id), stored) in batch.iter().zip(&ours).zip(&theirs) {
            compared += 1;
            if id.normalized() != *stored {
                let _ = writeln!(wrong, "  {target}: ours {} llvm {stored}", id.normalized());
            }
        }
    }
    if !wrong.is_empty() {
        return Err(format!("normalized IDs differ:\n{wrong}").into());
    }
    if compared < 1000 {
        return Err(format!("only {compared} targets compared").into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Target checks and messages
// ---------------------------------------------------------------------------

/// What LLVM printed, against what `check_targets` says it should print.
fn expected_stderr(prog: &Path, e: &TargetError) -> String {
    match e {
        TargetError::UnsupportedShaderModel => format!("LLVM ERROR: {e}\n"),
        _ => format!("{}: error: {e}\n", prog.display()),
    }
}

fn target_checks_like_llvm(lists: Vec<Vec<String>>) -> Result<(), Failed> {
    let dir = tempdir();
    std::fs::write(dir.path().join("in.bin"), b"payload").map_err(|e| e.to_string())?;
    let prog = llvm(TOOL);
    let mut wrong = String::new();
    let mut undefined = 0usize;
    let total = lists.len();
    for list in lists {
        let mut args = vec![
            "-type=bc".to_owned(),
            format!("-targets={}", list.join(",")),
        ];
        args.extend(list.iter().map(|_| "-input=in.bin".to_owned()));
        args.push("-output=out.bin".to_owned());
        let r = run(&prog, &args, dir.path());
        let ours = check_targets(&list, true);
        let agree = match &ours {
            Ok(_) => r.code == 0,
            // LLVM 22 reads a target ID that does not parse through an
            // empty std::optional: a segfault on some machines, a
            // conflict or a bundle on others. Ours is an error either way
            // (its text is checked by the unit tests).
            Err(TargetError::InvalidTargetId { .. }) => {
                undefined += 1;
                true
            }
            Err(e) => r.code == 1 && r.stderr == expected_stderr(&prog, e),
        };
        if !agree {
            let _ = writeln!(
                wrong,
                "  {list:?}:\n    ours: {:?}\n    llvm: exit {} {:?}",
                ours.map(|_| ()).map_err(|e| e.to_string()),
                r.code,
                r.stderr
            );
        }
    }
    if !wrong.is_empty() {
        return Err(format!("target checks differ:\n{wrong}").into());
    }
    // Most lists must be compared with LLVM, not waved through.
    if undefined * 4 > total {
        return Err(
            format!("{undefined} of {total} lists hold target IDs that do not parse").into(),
        );
    }
    Ok(())
}

/// The same checks when unbundling: no host is fine, two are not.
fn unbundle_target_checks_like_llvm() -> Result<(), Failed> {
    let dir = tempdir();
    std::fs::write(dir.path().join("in.bin"), b"not a bundle").map_err(|e| e.to_string())?;
    let prog = llvm(TOOL);
    let lists: Vec<Vec<&str>> = vec![
        vec!["openmp-x86_64-unknown-linux-gnu"],
        vec![HOST, "host-x86_64-pc-linux-gnu"],
        vec![HOST, "hip-amdgcn-amd-amdhsa--gfx906"],
        vec![
            "hip-amdgcn-amd-amdhsa--gfx906",
            "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
        ],
        vec![
            "hip-amdgcn-amd-amdhsa--gfx906:xnack-",
            "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
        ],
        vec!["openmp-nvptx64-nvidia-cuda"],
        vec!["cuda-nvptx64-nvidia-cuda--sm_70"],
        vec![HOST, HOST],
    ];
    for list in lists {
        let mut args = vec![
            "-type=bc".to_owned(),
            "-unbundle".to_owned(),
            "-allow-missing-bundles".to_owned(),
            "-input=in.bin".to_owned(),
            format!("-targets={}", list.join(",")),
        ];
        args.extend((0..list.len()).map(|i| format!("-output=o{i}")));
        let r = run(&prog, &args, dir.path());
        match check_targets(&list, false) {
            Ok(_) => same(&format!("exit code for {list:?}"), r.code, 0)?,
            Err(e) => same(
                &format!("stderr for {list:?}"),
                r.stderr,
                expected_stderr(&prog, &e),
            )?,
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Compatibility
// ---------------------------------------------------------------------------

/// Entry IDs stored in the hand-made bundle, as is (LLVM parses stored IDs
/// without normalizing them).
fn stored_entries() -> Vec<String> {
    let mut v: Vec<String> = [
        "",
        "gfx906",
        "gfx906:xnack+",
        "gfx906:xnack-",
        "gfx906:sramecc+",
        "gfx906:sramecc-",
        "gfx906:sramecc+:xnack+",
        "gfx906:xnack-:sramecc-",
        "gfx906:xnack+:sramecc-",
        "gfx90a",
        "gfx90a:xnack+",
        "gfx1030",
        "gfx1030:xnack+",
        "gfx1010:xnack-",
        "gfx1250",
        "gfx9-generic",
        "gfx9-generic:xnack+",
        "gfx9-4-generic:sramecc+",
        "gfx940",
        "fiji",
        "gfx906:foo+",
        "gfx906:xnack",
        "gfx906:",
        "gfx906:xnack+:xnack+",
        "sm_70",
    ]
    .iter()
    .map(|t| format!("hip-amdgcn-amd-amdhsa--{t}"))
    .collect();
    v.extend(
        [
            "host-x86_64-unknown-linux-gnu-",
            "hipv4-amdgcn-amd-amdhsa--gfx906",
            "hipv4-amdgcn-amd-amdhsa--gfx906:xnack-",
            "openmp-amdgcn-amd-amdhsa--gfx906:xnack+",
            "openmp-amdgcn-amd-amdhsa--gfx90a",
            "HIP-amdgcn-amd-amdhsa--gfx906",
            "hipx-amdgcn-amd-amdhsa--gfx1030",
            "hip-amdgcn-amd-amdhsa-unknown-gfx908",
            "hip-amdgcn-amd-amdhsa-gnu-gfx908:sramecc+",
            "hip-amdgcn-amd-amdhsa5.0--gfx942:xnack-",
            "hip-amdgcn-unknown-amdhsa--gfx950",
            "hip-r600-amd-amdhsa--gfx906",
            "openmp-spirv64-amd-amdhsa--amdgcnspirv",
            "openmp-spirv64-amd-amdhsa--amdgcnspirv:xnack+",
            "hip-spirv64-amd-amdhsa-unknown-amdgcnspirv",
            "openmp-nvptx64-nvidia-cuda-unknown-sm_70",
            "openmp-nvptx64-nvidia-cuda--sm_80",
            "openmp-nvptx64-nvidia-cuda-unknown-sm_70:foo+",
            "openmp-nvptx64-nvidia-cuda-unknown-",
            "openmp-nvptx64-nvidia-cuda8.0-unknown-sm_90",
            "openmp-nvptx64-unknown-cuda-unknown-sm_70",
            "openmp-nvptx-nvidia-cuda-unknown-sm_70",
            "openmp-x86_64-unknown-linux-gnu-",
            "openmp-x86_64-pc-linux-gnu-",
            "openmp-x86_64-unknown-linux5.0-gnu-",
            "openmp-x86_64-unknown-linux-",
            "openmp-x86_64-unknown-linux-unknown-",
            "openmp-x86_64-unknown-linux-gnu-elf",
            "openmp-x86_64-linux-gnu--",
            "openmp-x86_64-apple-macosx10.15-foo-",
            "openmp-x86_64-apple-macosx-",
            "openmp-armv7-unknown-linux-gnueabihf-",
            "openmp-thumbv7-unknown-linux-gnueabihf-",
            "openmp-thumbv7s-apple-ios-",
            "openmp-x86_64-w64-windows-gnu-",
            "openmp-x86_64-pc-windows-gnu-",
            "openmp-x86_64-pc-windows-msvc-",
            "hip-x86_64-unknown-linux-gnu-",
            "openmp-aarch64-unknown-linux-gnu-sm_70",
        ]
        .map(str::to_owned),
    );
    // Sweeps: every environment, OS, vendor and architecture name, so the
    // parsed enums (not the text) decide.
    for e in Environment::ALL
        .iter()
        .map(|e| e.name())
        .chain(["elf", "coff", "macho"])
    {
        v.push(format!("openmp-x86_64-unknown-linux-{e}-"));
    }
    for o in Os::ALL
        .iter()
        .map(|o| o.name())
        .chain(["win32", "macos", "wasi0.1"])
    {
        v.push(format!("openmp-x86_64-unknown-{o}-"));
    }
    for x in Vendor::ALL.iter().map(|x| x.name()).chain(["sie", "w64"]) {
        v.push(format!("openmp-x86_64-{x}-linux-gnu-"));
    }
    for a in Arch::ALL
        .iter()
        .map(|a| a.name())
        .chain(ARCH_SPELLINGS.iter().copied())
    {
        v.push(format!("openmp-{a}-unknown-linux-gnu-"));
    }
    v.sort();
    v.dedup();
    v
}

/// Requested targets (raw `-targets` text).
fn requests() -> Vec<String> {
    let mut v = Vec::new();
    let amd = [
        "gfx906",
        "gfx906:xnack+",
        "gfx906:xnack-",
        "gfx906:xnack+:sramecc+",
        "gfx906:sramecc-:xnack-",
        "gfx906:sramecc+",
        "gfx906:sramecc-",
        "gfx908",
        "gfx908:sramecc+",
        "gfx90a",
        "gfx90a:xnack+:sramecc-",
        "gfx942",
        "gfx942:xnack-",
        "gfx950",
        "gfx1030",
        "gfx1030:xnack+",
        "gfx1010:xnack-",
        "gfx1250",
        "gfx9-generic",
        "gfx9-generic:xnack+",
        "gfx9-4-generic:sramecc+:xnack-",
        "gfx906:foo+",
        "",
        "fiji",
        "gfx906:",
        "gfx906:xnack",
    ];
    for (j, t) in amd.iter().enumerate() {
        // The environment part is dropped for amdhsa, but keeps each request
        // in its own conflict group.
        for k in ["hip", "hipv4", "openmp"] {
            v.push(format!("{k}-amdgcn-amd-amdhsa-r{j}-{t}"));
        }
    }
    v.extend(
        [
            "hip-amdgcn-unknown-amdhsa--gfx950",
            "hip-r600-amd-amdhsa--gfx906",
            "openmp-spirv64-amd-amdhsa--amdgcnspirv",
            "hip-spirv64-amd-amdhsa-x-amdgcnspirv",
            "openmp-spirv64-amd-amdhsa-y-amdgcnspirv:xnack+",
            "openmp-nvptx64-nvidia-cuda--sm_70",
            "openmp-nvptx64-nvidia-cuda-unknown-sm_80",
            "openmp-nvptx64-nvidia-cuda-x-sm_70:foo+",
            "openmp-nvptx64-nvidia-cuda-y-",
            "openmp-nvptx64-nvidia-cuda-z-sm_90",
            "openmp-nvptx64-unknown-cuda--sm_70",
            "openmp-nvptx-nvidia-cuda--sm_70",
            "openmp-x86_64-unknown-linux-gnu",
            "openmp-x86_64-pc-linux-gnu",
            "openmp-x86_64-unknown-linux-",
            "openmp-x86_64-unknown-linux6.1-gnu",
            "openmp-x86_64-linux-gnu-",
            "openmp-x86_64-apple-macosx-",
            "openmp-x86_64-apple-macosx11-gnu",
            "openmp-armv7-unknown-linux-gnueabihf",
            "openmp-thumbv7-unknown-linux-gnueabihf",
            "openmp-armv7s-apple-ios-",
            "openmp-x86_64-w64-windows-gnu",
            "openmp-x86_64-pc-windows-gnu",
            "openmp-x86_64-w64-windows-msvc",
            "hip-x86_64-unknown-linux-gnu",
            "hipv4-x86_64-unknown-linux-gnu",
            "openmp-aarch64-unknown-linux-gnu-sm_70",
        ]
        .map(str::to_owned),
    );
    for e in Environment::ALL[1..].iter().map(|e| e.name()) {
        v.push(format!("openmp-x86_64-unknown-linux-{e}9"));
    }
    for o in Os::ALL[1..]
        .iter()
        .map(|o| o.name())
        .chain(["win32", "macos"])
    {
        v.push(format!("openmp-x86_64-unknown-{o}2.0-"));
    }
    for x in Vendor::ALL
        .iter()
        .map(|x| x.name())
        .chain(["sie", "w64", "foo"])
    {
        v.push(format!("openmp-x86_64-{x}-linux-gnu"));
    }
    for a in Arch::ALL[1..]
        .iter()
        .map(|a| a.name())
        .chain(ARCH_SPELLINGS.iter().copied())
    {
        v.push(format!("openmp-{a}-unknown-linux-gnu"));
    }
    v
}

/// A binary bundle holding `entries` (ID, data), written by hand so stored
/// IDs can be anything.
fn bundle_bytes(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let header: usize = 32 + entries.iter().map(|(id, _)| 24 + id.len()).sum::<usize>();
    let mut out = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    out.extend((entries.len() as u64).to_le_bytes());
    let mut offset = header;
    for (id, data) in entries {
        out.extend((offset as u64).to_le_bytes());
        out.extend((data.len() as u64).to_le_bytes());
        out.extend((id.len() as u64).to_le_bytes());
        out.extend(id.as_bytes());
        offset += data.len();
    }
    for (_, data) in entries {
        out.extend(data);
    }
    out
}

/// A GNU archive with one member.
fn archive_bytes(name: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"!<arch>\n".to_vec();
    let header = format!(
        "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
        format!("{name}/"),
        0,
        0,
        0,
        644,
        data.len()
    );
    out.extend(header.as_bytes());
    out.extend(data);
    if data.len() % 2 == 1 {
        out.push(b'\n');
    }
    out
}

/// The contents of an archive's regular members.
fn archive_members(data: &[u8]) -> Result<Vec<Vec<u8>>, Failed> {
    let bad = || Failed::from("malformed output archive");
    let mut rest = data.strip_prefix(b"!<arch>\n".as_slice()).ok_or_else(bad)?;
    let mut members = Vec::new();
    while !rest.is_empty() {
        let header = rest.get(..60).ok_or_else(bad)?;
        let name = String::from_utf8_lossy(&header[..16]);
        let size: usize = String::from_utf8_lossy(&header[48..58])
            .trim()
            .parse()
            .map_err(|_| bad())?;
        let body = rest.get(60..60 + size).ok_or_else(bad)?;
        let name = name.trim_end();
        if name != "/" && name != "//" && name != "/SYM64/" {
            members.push(body.to_vec());
        }
        rest = rest.get(60 + size + size % 2..).unwrap_or(&[]);
    }
    Ok(members)
}

fn compatibility_like_llvm(hip_openmp: bool) -> Result<(), Failed> {
    let dir = tempdir();
    let stored = stored_entries();
    let entries: Vec<(String, Vec<u8>)> = stored
        .iter()
        .enumerate()
        .map(|(i, id)| (id.clone(), format!("E{i}\n").into_bytes()))
        .collect();
    let lib = archive_bytes("m.bc", &bundle_bytes(&entries));
    std::fs::write(dir.path().join("lib.a"), lib).map_err(|e| e.to_string())?;
    let objects: Vec<BundleId> = stored
        .iter()
        .map(|s| BundleId::parse(s).map_err(|e| format!("{s}: {e}")))
        .collect::<Result<_, _>>()?;

    // Calls: no two requests of one conflict group, none normalizing alike.
    let mut calls: Vec<(Vec<String>, HashSet<String>, HashSet<String>)> = Vec::new();
    for r in requests() {
        let group: String = r.splitn(6, '-').take(5).collect::<Vec<_>>().join("-");
        let norm = BundleId::parse(&r).map_err(|e| e.to_string())?.normalized();
        let i = match calls
            .iter()
            .position(|(_, g, n)| !g.contains(&group) && !n.contains(&norm))
        {
            Some(i) => i,
            None => {
                calls.push(Default::default());
                calls.len() - 1
            }
        };
        calls[i].0.push(r);
        calls[i].1.insert(group);
        calls[i].2.insert(norm);
    }

    let mut pairs = 0usize;
    let mut wrong = String::new();
    for (requests, _, _) in calls {
        let mut args = vec![
            "-type=a".to_owned(),
            "-unbundle".to_owned(),
            "-allow-missing-bundles".to_owned(),
            "-input=lib.a".to_owned(),
            format!("-targets={}", requests.join(",")),
        ];
        if hip_openmp {
            args.push("-hip-openmp-compatible".to_owned());
        }
        args.extend((0..requests.len()).map(|i| format!("-output=o{i}.a")));
        let r = run(&llvm(TOOL), &args, dir.path());
        if r.code != 0 {
            return Err(format!("LLVM failed on {requests:?}: {}", r.stderr).into());
        }
        for (i, req) in requests.iter().enumerate() {
            let data =
                std::fs::read(dir.path().join(format!("o{i}.a"))).map_err(|e| e.to_string())?;
            let theirs: BTreeSet<usize> = archive_members(&data)?
                .iter()
                .filter_map(|m| {
                    std::str::from_utf8(m)
                        .ok()?
                        .strip_prefix('E')?
                        .trim_end()
                        .parse()
                        .ok()
                })
                .collect();
            let request = BundleId::parse(req).map_err(|e| e.to_string())?;
            let ours: BTreeSet<usize> = objects
                .iter()
                .enumerate()
                .filter(|(_, o)| o.serves(&request, hip_openmp))
                .map(|(i, _)| i)
                .collect();
            pairs += objects.len();
            if ours != theirs {
                let name = |s: &BTreeSet<usize>| -> Vec<&str> {
                    s.iter().map(|&i| stored[i].as_str()).collect()
                };
                let _ = writeln!(
                    wrong,
                    "  request {req}:\n    only ours: {:?}\n    only llvm: {:?}",
                    name(&ours.difference(&theirs).copied().collect()),
                    name(&theirs.difference(&ours).copied().collect()),
                );
            }
        }
    }
    if !wrong.is_empty() {
        return Err(format!("code-object compatibility differs:\n{wrong}").into());
    }
    if pairs < 20_000 {
        return Err(format!("only {pairs} pairs compared").into());
    }
    Ok(())
}

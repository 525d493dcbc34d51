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
//!
//! This file generates the targets; the three kinds of trial are in
//! `normalize.rs`, `checks.rs` and `compat.rs`.

use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use offload_kit::bundle::{BundleId, TargetError, check_targets};
use offload_kit::triple::{Arch, Environment, Os, Vendor};

use crate::util::{llvm, run, same, tempdir};

mod checks;
mod compat;
mod normalize;

const TOOL: &str = "clang-offload-bundler";
const HOST: &str = "host-x86_64-unknown-linux-gnu";
/// `-targets` is one argument; Linux limits one argument to 128 KiB.
const MAX_TARGETS_TEXT: usize = 60_000;
const MAX_BATCH: usize = 500;

pub fn tests() -> Vec<Trial> {
    let (valid, invalid) = corpus();
    let mut t = Vec::new();
    t.push(trial!(normalize::normalized_like_llvm, &[TOOL], move || {
        normalize::normalized_like_llvm(valid)
    }));
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
        t.push(trial!(
            checks::target_checks_like_llvm["{}", part + 1],
            &[TOOL],
            move || checks::target_checks_like_llvm(these),
        ));
    }
    t.push(trial!(checks::unbundle_target_checks_like_llvm, &[TOOL]));
    for hip_openmp in [false, true] {
        t.push(trial!(
            compat::compatibility_like_llvm[
                "{}",
                if hip_openmp { "hip_openmp" } else { "default" }
            ],
            &[TOOL],
            move || compat::compatibility_like_llvm(hip_openmp),
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

/// The generated targets as they are made: each added once, in order.
#[derive(Default)]
struct Corpus {
    /// The targets, in the order they were made.
    all: Vec<String>,
    /// The targets made so far.
    seen: HashSet<String>,
    /// How many kinds [`Corpus::next_kind`] has given.
    made: usize,
}

/// The offload kind for the `i`th target: `openmp`, `hip` and `hipv4` in
/// turn.
fn kind(i: usize) -> &'static str {
    KINDS[i % KINDS.len()]
}

impl Corpus {
    /// Adds `t` unless it is the default host, holds a comma or was made
    /// before.
    fn add(&mut self, t: String) {
        if t != HOST && !t.contains(',') && self.seen.insert(t.clone()) {
            self.all.push(t);
        }
    }

    /// The next offload kind in turn.
    fn next_kind(&mut self) -> &'static str {
        self.made += 1;
        kind(self.made)
    }

    /// Every architecture name and spelling, and the bad ones.
    fn arches(&mut self) {
        // Every architecture name and spelling, with a plain and an empty rest.
        let arches: Vec<&str> = Arch::ALL[1..].iter().map(|a| a.name()).collect();
        for a in arches.iter().chain(ARCH_SPELLINGS) {
            let k = self.next_kind();
            self.add(format!("{k}-{a}-unknown-linux-gnu"));
            let k = self.next_kind();
            self.add(format!("{k}-{a}---"));
        }
        // (Rejected ones cost a process each: one form only.)
        for a in BAD_ARCHES {
            let k = self.next_kind();
            self.add(format!("{k}-{a}-unknown-linux-gnu"));
        }
    }

    /// Vendors in place and out of place.
    fn vendors(&mut self) {
        for v in Vendor::ALL
            .iter()
            .map(|v| v.name())
            .chain(["", "sie", "w64", "none", "foo"])
        {
            self.add(format!("openmp-x86_64-{v}-linux-gnu"));
            self.add(format!("hip-aarch64-linux-{v}-"));
            self.add(format!("hipv4-riscv64--gnu-{v}"));
        }
    }

    /// Operating systems, with versions, in and out of place.
    fn oses(&mut self) {
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
            self.add(format!("openmp-x86_64-unknown-{o}-"));
            self.add(format!("hip-x86_64-unknown-{o}9.1-gnu"));
            self.add(format!("hipv4-aarch64-{o}-gnu-"));
            self.add(format!("openmp-i686--musl-{o}"));
        }
    }

    /// Environments and object formats, in and out of place.
    fn environments(&mut self) {
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
            self.add(format!("openmp-x86_64-pc-linux-{e}"));
            self.add(format!("hip-armv7-{e}-linux-"));
            self.add(format!("hipv4-aarch64-{e}--"));
            self.add(format!("openmp-x86_64-unknown-windows-{e}"));
            self.add(format!("openmp-armv7-suse-linux-{e}"));
        }
    }

    /// Whole triples in unusual orders.
    fn whole_triples(&mut self) {
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
                self.add(format!("{k}-{t}"));
            }
        }
    }

    /// amdhsa targets, with and without target IDs.
    fn amdhsa(&mut self) {
        // amdhsa: whatever sits in the environment slot is dropped.
        for (j, env) in ["", "unknown", "gnu", "elf", "gfx906", "foo", "amdhsa"]
            .iter()
            .enumerate()
        {
            for arch in ["amdgcn", "spirv64", "x86_64", "r600"] {
                self.add(format!("{}-{arch}-amd-amdhsa-{env}-gfx90a", kind(j)));
            }
            self.add(format!("hip-amdgcn-amd-amdhsa-{env}"));
            self.add(format!("hip-amdgcn-unknown-amdhsa-{env}-gfx906"));
        }
    }

    /// Target IDs: every known processor, then the odd shapes.
    fn target_ids(&mut self) {
        // Target IDs: every known processor, then the odd shapes. Each target
        // gets its own environment word so no two share a conflict group.
        // (A sweep of candidate names, independent of our own table.)
        let mut procs: Vec<String> = (600..1300)
            .map(|n| format!("gfx{n}"))
            .chain(
                (0..130).flat_map(|n| [format!("sm_{n}"), format!("sm_{n}a"), format!("sm_{n}f")]),
            )
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
            self.add(format!("{}-{triple}-e{j}-{p}", kind(j)));
        }
    }

    /// A few host targets, then malformed and invalid ones.
    fn hosts_and_malformed(&mut self) {
        // A few host targets (each bundle call can hold only one).
        for t in [
            "host-x86_64-unknown-linux-",
            "host-x86_64-pc-linux-gnu",
            "host-aarch64-linux-gnu-",
            "host-x86_64-apple-darwin-",
            "host-x86_64-unknown-linux-gnu-foo",
            "host-powerpc64le-unknown-linux-gnu-sm_70",
        ] {
            self.add(t.to_owned());
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
            self.add(t.to_owned());
        }
    }
}

/// The generated targets: (those `check_targets` accepts next to a host,
/// those it rejects).
fn corpus() -> (Vec<String>, Vec<String>) {
    let mut c = Corpus::default();
    c.arches();
    c.vendors();
    c.oses();
    c.environments();
    c.whole_triples();
    c.amdhsa();
    c.target_ids();
    c.hosts_and_malformed();
    let all = c.all;
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

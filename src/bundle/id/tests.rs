//! Unit tests of bundle-entry IDs: parsing, normalization, compatibility
//! and the bundler's checks, against clang-offload-bundler 22's results.

use super::target_id::OFFLOAD_ARCHS;
use super::*;
use crate::error::target::FORMAT_MESSAGE;

fn id(s: &str) -> BundleId {
    BundleId::parse(s).unwrap()
}

#[test]
fn target_id_format() {
    let t = TargetId::parse("gfx90a:sramecc-:xnack+").unwrap();
    assert_eq!(t.processor, "gfx90a");
    assert_eq!(t.features.get("xnack"), Some(&true));
    assert_eq!(t.features.get("sramecc"), Some(&false));
    assert_eq!(TargetId::parse("gfx90a:").unwrap().features.len(), 0);
    assert_eq!(TargetId::parse("sm_80").unwrap().processor, "sm_80");
    for bad in [
        "",
        ":xnack+",
        "gfx90a:xnack",
        "gfx90a:xnack+:xnack-",
        "gfx90a::xnack+",
    ] {
        assert_eq!(TargetId::parse(bad), None, "{bad}");
    }
    let amdgcn = Triple::parse("amdgcn-amd-amdhsa");
    assert_eq!(
        canonical_amdgpu_processor(&amdgcn, "tahiti"),
        Some("gfx600")
    );
    assert_eq!(
        canonical_amdgpu_processor(&amdgcn, "gfx90a"),
        Some("gfx90a")
    );
    assert_eq!(canonical_amdgpu_processor(&amdgcn, "sm_80"), None);
    let nvptx = Triple::parse("nvptx64-nvidia-cuda");
    assert_eq!(canonical_amdgpu_processor(&nvptx, "gfx90a"), None);
}

#[test]
fn offload_arch_table_is_sorted() {
    assert!(OFFLOAD_ARCHS.windows(2).all(|w| w[0] < w[1]));
}

/// §5.1 examples.
#[test]
fn normalizes_like_llvm() {
    let cases = [
        (
            "host-x86_64-unknown-linux-gnu",
            "host-x86_64-unknown-linux-gnu-",
        ),
        (
            "host-x86_64-unknown-linux-",
            "host-x86_64-unknown-linux-unknown-",
        ),
        (
            "openmp-nvptx64-nvidia-cuda--sm_70",
            "openmp-nvptx64-nvidia-cuda-unknown-sm_70",
        ),
        (
            "openmp-nvptx64-nvidia-cuda-unknown-foo",
            "openmp-nvptx64-nvidia-cuda-unknown-",
        ),
        (
            "hip-amdgcn-amd-amdhsa-unknown-gfx906",
            "hip-amdgcn-amd-amdhsa--gfx906",
        ),
        (
            "hip-spirv64-amd-amdhsa--amdgcnspirv",
            "hip-spirv64-amd-amdhsa--amdgcnspirv",
        ),
        (
            "openmp-spirv64-intel-unknown-",
            "openmp-spirv64-intel-unknown-unknown-",
        ),
        (
            "host-x86_64-apple-darwin-",
            "host-x86_64-apple-darwin-unknown-",
        ),
        (
            "openmp-aarch64-linux-gnu-",
            "openmp-aarch64-unknown-linux-gnu-",
        ),
        (
            "openmp-x86_64--linux-gnu",
            "openmp-x86_64-unknown-linux-gnu-",
        ),
        (
            "openmp-aarch64-none-elf-",
            "openmp-aarch64-unknown-none-elf-",
        ),
        (
            "openmp-nvptx64-nvidia-cuda-foo",
            "openmp-nvptx64-nvidia-cuda-foo-",
        ),
        (
            "openmp-amdgcn-amd-amdhsa-elf-gfx906",
            "openmp-amdgcn-amd-amdhsa--gfx906",
        ),
        ("hip-amdgcn-amd-amdhsa-gfx906", "hip-amdgcn-amd-amdhsa--"),
        (
            "hip-amdgcn-amd-amdhsa--gfx906:xnack+:sramecc-",
            "hip-amdgcn-amd-amdhsa--gfx906:xnack+:sramecc-",
        ),
        (
            "hip-amdgcn-amd-amdhsa--gfx906:foo+",
            "hip-amdgcn-amd-amdhsa--gfx906:foo+",
        ),
        ("hip-amdgcn-amd-amdhsa--gfx940", "hip-amdgcn-amd-amdhsa--"),
        ("hip-amdgcn-amd-amdhsa--GFX906", "hip-amdgcn-amd-amdhsa--"),
        (
            "openmp-nvptx64-nvidia-cuda--Sm_70",
            "openmp-nvptx64-nvidia-cuda-unknown-",
        ),
    ];
    for (target, want) in cases {
        assert_eq!(id(target).normalized(), want, "{target}");
    }
}

#[test]
fn part_count() {
    for bad in [
        "openmp-nvptx64-nvidia-cuda",
        "host-x86_64-unknown-linux",
        "",
        "host",
    ] {
        assert_eq!(BundleId::parse(bad), Err(TargetError::Format), "{bad}");
    }
    // The sixth part keeps its dashes (and here names no known processor).
    assert_eq!(
        id("hip-amdgcn-amd-amdhsa--gfx9-generic").target_id,
        "gfx9-generic"
    );
    assert_eq!(id("hip-amdgcn-amd-amdhsa--a-b-c").target_id, "");
}

#[test]
fn validity() {
    let x = id("cuda-x86_64-unknown-linux-gnu");
    assert!(!x.kind_is_valid() && x.triple_is_valid());
    let y = id("host-X86_64-Unknown-Linux-GNU");
    assert!(y.kind_is_valid() && !y.triple_is_valid());
    for k in ["host", "openmp", "hip", "hipv4"] {
        assert!(id(&format!("{k}-x86_64---")).kind_is_valid());
    }
    assert!(!id("sycl-x86_64---").kind_is_valid());
}

fn serves(object: &str, request: &str) -> bool {
    id(object).serves(&id(request), false)
}

/// §5.3 examples.
#[test]
fn code_object_compatibility() {
    let h = "hip-amdgcn-amd-amdhsa--";
    let s = |a: &str, b: &str| serves(&format!("{h}{a}"), &format!("{h}{b}"));
    assert!(s("gfx906", "gfx906"));
    assert!(s("gfx906", "gfx906:xnack+"));
    assert!(s("gfx906", "gfx906:xnack-:sramecc+"));
    assert!(!s("gfx906:xnack+", "gfx906"));
    assert!(!s("gfx906:xnack+", "gfx906:xnack-"));
    assert!(s("gfx90a:sramecc-:xnack+", "gfx90a:xnack+:sramecc-"));
    assert!(!s("gfx1030:xnack+", "gfx1030:xnack+:foo+"));
    assert!(!s("gfx1030", "gfx1030:xnack+"));
    assert!(s("gfx1030:xnack+", "gfx1030:xnack+"), "exact text match");
    assert!(!s("gfx906", "gfx90a"));
    // An empty target ID only matches an identical request.
    assert!(s("", ""));
    assert!(!s("", "gfx906"));
    assert!(!s("gfx906", ""));
    // Non-AMDGPU: no features.
    let n = "openmp-nvptx64-nvidia-cuda--";
    assert!(serves(&format!("{n}sm_70"), &format!("{n}sm_70")));
    assert!(!serves(&format!("{n}sm_70"), &format!("{n}sm_70:foo+")));
    assert!(!serves(
        &format!("{n}sm_70:foo+"),
        &format!("{n}sm_70:foo+:bar+")
    ));
    // Triples compare as parsed enums; vendor `pc` is not `unknown`.
    assert!(serves(
        "host-x86_64-unknown-linux5.0-gnu-",
        "host-x86_64-unknown-linux-gnu"
    ));
    assert!(!serves(
        "host-x86_64-pc-linux-gnu-",
        "host-x86_64-unknown-linux-gnu"
    ));
    assert!(serves(
        "openmp-x86_64-unknown-linux-unknown-",
        "openmp-x86_64-unknown-linux-"
    ));
}

#[test]
fn kinds() {
    let hip = id("hip-amdgcn-amd-amdhsa--gfx906");
    assert!(hip.kind_compatible("hipv4", false));
    assert!(!hip.kind_compatible("openmp", false));
    assert!(hip.kind_compatible("openmp", true));
    assert!(id("HIPx-amdgcn-amd-amdhsa--").kind_compatible("openmp", true));
    assert!(id("openmp-amdgcn-amd-amdhsa--").kind_compatible("hipv4", true));
    assert!(!id("openmp-amdgcn-amd-amdhsa--").kind_compatible("host", true));
    let omp = id("openmp-amdgcn-amd-amdhsa--gfx906");
    assert!(omp.serves(&id("hip-amdgcn-amd-amdhsa--gfx906"), true));
    assert!(!omp.serves(&id("hip-amdgcn-amd-amdhsa--gfx906"), false));
    // The exact match needs the same kind text.
    assert!(!id("hip-amdgcn-amd-amdhsa--").serves(&id("hipv4-amdgcn-amd-amdhsa--"), false));
}

fn check(targets: &[&str]) -> Result<Vec<BundleId>, String> {
    check_targets(targets, true).map_err(|e| e.to_string())
}

/// §5.4 examples and the §6 messages.
#[test]
fn target_checks() {
    let g = |ids: &[&str]| -> Vec<String> {
        ids.iter()
            .map(|t| format!("hip-amdgcn-amd-amdhsa--{t}"))
            .collect()
    };
    let run = |ids: &[&str]| check_targets(&g(ids), true).map_err(|e| e.to_string());
    assert!(run(&["gfx906:sramecc+:xnack+", "gfx906:xnack+"]).is_ok());
    assert_eq!(
        run(&["gfx906:xnack+", "gfx906:xnack+:sramecc+"]).unwrap_err(),
        "Cannot bundle inputs with conflicting targets: \
         'hip-amdgcn-amd-amdhsa--gfx906:xnack+' and \
         'hip-amdgcn-amd-amdhsa--gfx906:xnack+:sramecc+'"
    );
    assert!(run(&["gfx906", "gfx906:xnack+"]).is_err());
    assert!(run(&["gfx906:xnack-", "gfx906:xnack+"]).is_ok());
    // Sorted order decides the reference, not the command line.
    assert!(run(&["gfx906:xnack+", "gfx906"]).is_err());
    // Malformed features (LLVM 22: undefined behaviour) are an error
    // naming the first such ID in sorted order.
    let invalid = |id: &str| {
        format!(
            "invalid target ID '{id}' in target 'hip-amdgcn-amd-amdhsa--{id}'; a target ID \
             is a processor and features, each ':name+' or ':name-' and named once"
        )
    };
    assert_eq!(
        run(&["gfx906:xnack+", "gfx906:xnack"]).unwrap_err(),
        invalid("gfx906:xnack")
    );
    assert_eq!(
        run(&["gfx906:sramecc+:foo", "gfx90a:xnack+:foo"]).unwrap_err(),
        invalid("gfx906:sramecc+:foo")
    );
    assert_eq!(run(&["", "gfx906::"]).unwrap_err(), invalid("gfx906::"));
    assert_eq!(
        run(&["gfx906:xnack+:xnack-"]).unwrap_err(),
        invalid("gfx906:xnack+:xnack-")
    );
    // One trailing ':' and an empty ID parse.
    assert!(run(&["gfx906:", "gfx906:xnack+"]).is_err_and(|e| e.starts_with("Cannot")));
    assert!(run(&["", "gfx906"]).is_ok());
    // The message shows the triple as given.
    assert_eq!(
        check(&[
            "hip-amdgcn-amd-amdhsa-unknown-gfx906",
            "hip-amdgcn-amd-amdhsa-unknown-gfx906:xnack+"
        ])
        .unwrap_err(),
        "Cannot bundle inputs with conflicting targets: \
         'hip-amdgcn-amd-amdhsa-unknown-gfx906' and \
         'hip-amdgcn-amd-amdhsa-unknown-gfx906:xnack+'"
    );

    assert_eq!(
        check(&[
            "host-x86_64-unknown-linux-gnu",
            "host-x86_64-unknown-linux-gnu"
        ])
        .unwrap_err(),
        "Duplicate targets are not allowed"
    );
    assert_eq!(
        check(&["host-x86_64-unknown-linux"]).unwrap_err(),
        FORMAT_MESSAGE
    );
    assert_eq!(
        check(&["cuda-amdgcn-amd-amdhsa--gfx906"]).unwrap_err(),
        "invalid target 'cuda-amdgcn-amd-amdhsa--gfx906', unknown offloading kind 'cuda'"
    );
    assert_eq!(
        check(&["host-foo-bar-baz-qux"]).unwrap_err(),
        "invalid target 'host-foo-bar-baz-qux', unknown target triple 'foo-bar-baz-qux'"
    );
    assert_eq!(
        check(&["sycl-foo-bar-baz-"]).unwrap_err(),
        "invalid target 'sycl-foo-bar-baz-', unknown offloading kind 'sycl', \
         unknown target triple 'foo-bar-baz-'"
    );
    assert_eq!(
        check(&["openmp-x86_64-unknown-linux-gnu"]).unwrap_err(),
        "expecting exactly one host target but got 0"
    );
    assert_eq!(
        check(&["host-x86_64-unknown-linux-gnu", "host-x86_64-pc-linux-gnu"]).unwrap_err(),
        "expecting exactly one host target but got 2"
    );
    assert!(
        check(&[
            "hip-amdgcn-amd-amdhsa--gfx906",
            "hipv4-amdgcn-amd-amdhsa--gfx90a"
        ])
        .is_ok()
    );
    // Unbundling allows no host, not two.
    assert!(check_targets(&["openmp-x86_64-unknown-linux-gnu"], false).is_ok());
    assert!(check_targets(&["host-x86_64---", "host-i386---"], false).is_err());
    // Duplicates are checked before the format, one target at a time.
    assert_eq!(check(&["a", "a"]).unwrap_err(), FORMAT_MESSAGE);
    assert_eq!(
        check(&["host-x86_64---", "host-x86_64---", "x"]).unwrap_err(),
        "Duplicate targets are not allowed"
    );
}

#[test]
fn conflict_helper_on_whole_ids() {
    let ids = [
        "hip-amdgcn-amd-amdhsa--gfx906",
        "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
    ];
    assert_eq!(conflicting_target_ids(ids), Some((ids[0], ids[1])));
    assert_eq!(
        conflicting_target_ids(["gfx906:xnack+", "gfx906:xnack-"]),
        None
    );
}

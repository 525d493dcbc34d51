use super::*;

fn rules(rules: &[&str]) -> Vec<Rule> {
    rules.iter().map(|r| Rule::parse(r).unwrap()).collect()
}

/// What `units` (scanned names, with `dirs` named) give for `require`:
/// `(input, location, rule, passed, present)` each.
fn verdicts(
    units: &[&str],
    dirs: &[&str],
    any: bool,
    require: &[&str],
) -> Vec<(Option<String>, String, String, bool, String)> {
    let mut found = Found::new(any);
    for u in units {
        found.add(u, dirs);
    }
    judge(&found, &rules(require))
        .into_iter()
        .map(|j| (j.input, j.location, j.rule, j.passed, j.present.join(" ")))
        .collect()
}

/// A hipBLASLt-style tree below `top`: code objects and lazy indexes for
/// each of `gpus`, and arch-neutral files.
fn hipblaslt(top: &str, gpus: &[&str]) -> Vec<String> {
    let lib = format!("{top}/lib/hipblaslt/library");
    let mut v = vec![
        format!("{lib}/TensileLibrary.dat"),
        format!("{top}/lib/libhipblaslt.so.0"),
    ];
    for g in gpus {
        v.push(format!("{lib}/TensileLibrary_lazy_{g}.dat"));
        v.push(format!(
            "{lib}/TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_{g}.co"
        ));
        v.push(format!("{lib}/extop_{g}.co"));
    }
    v
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn units_are_placed_in_their_package_directory_or_among_the_files_named() {
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        place("dist/x.whl!/pkg/library/a_gfx90a.co", &["dist"]),
        (some("dist/x.whl"), "pkg/library/a_gfx90a.co".into())
    );
    // The innermost package is the input (a conda package's tarball).
    assert_eq!(
        place("x.conda!/pkg-x.tar.zst!/lib/library/a.dat", &[]),
        (some("x.conda!/pkg-x.tar.zst"), "lib/library/a.dat".into())
    );
    // Below a directory named: its own name first, however written.
    for d in [
        "/opt/rocm/lib/hipblaslt/library",
        "/opt/rocm/lib/hipblaslt/library/",
    ] {
        assert_eq!(
            place("/opt/rocm/lib/hipblaslt/library/a_gfx942.co", &[d]),
            (some(d), "library/a_gfx942.co".into())
        );
    }
    assert_eq!(
        place("./lib/library/a_gfx942.co", &["."]),
        (some("."), "/lib/library/a_gfx942.co".into())
    );
    // The first directory named that holds it.
    assert_eq!(place("a/b/c", &["x", "a", "a/b"]).0, some("a"));
    // A file named: among the files named, by its path as given.
    assert_eq!(
        place("lib/library/a_gfx942.co", &["lib/other"]),
        (None, "lib/library/a_gfx942.co".into())
    );
}

#[test]
fn a_library_missing_a_required_gpu_fails_naming_what_it_has() {
    let all = hipblaslt("t", &["gfx90a", "gfx942"]);
    let got = verdicts(&refs(&all), &["t"], false, &["gfx942"]);
    // Two conventions (code objects, indexes), one directory, one input.
    assert_eq!(got.len(), 2, "{got:?}");
    for (input, location, rule, passed, present) in &got {
        assert_eq!(input.as_deref(), Some("t"));
        assert_eq!(location, "t/lib/hipblaslt/library");
        assert_eq!(rule, "gfx942");
        assert!(passed);
        assert_eq!(present, "gfx90a gfx942");
    }
    // gfx942's files gone: both fail, naming gfx90a as what is there.
    let some = hipblaslt("t", &["gfx90a"]);
    let got = verdicts(&refs(&some), &["t"], false, &["gfx942", "gfx90a"]);
    let fails: Vec<_> = got.iter().filter(|v| !v.3).collect();
    assert_eq!(fails.len(), 2, "{got:?}");
    assert!(fails.iter().all(|v| v.2 == "gfx942" && v.4 == "gfx90a"));
    assert!(got.iter().filter(|v| v.3).all(|v| v.2 == "gfx90a"));
    // Only its index gone: the index convention fails, the code passes.
    let mut no_index = hipblaslt("t", &["gfx90a", "gfx942"]);
    no_index.retain(|p| !p.ends_with("lazy_gfx942.dat"));
    let got = verdicts(&refs(&no_index), &["t"], false, &["gfx942"]);
    assert_eq!(
        got.iter().map(|v| v.3).collect::<Vec<_>>(),
        [true, false],
        "{got:?}"
    );
}

#[test]
fn what_is_judged_and_what_is_not() {
    let tree = hipblaslt("t", &["gfx90a"]);
    // No processor, another vendor, a CPU: not judged.
    assert!(verdicts(&refs(&tree), &["t"], false, &["*:hip", "sm_90", "x86_64"]).is_empty());
    // A kind does not matter: the processor is judged.
    let got = verdicts(&refs(&tree), &["t"], false, &["gfx90a:bitcode"]);
    assert!(got.iter().all(|v| v.3) && got.len() == 2, "{got:?}");
    // No per-GPU file at all: nothing to judge.
    assert!(
        verdicts(
            &[
                "t/lib/libhipblaslt.so.0",
                "t/lib/hipblaslt/library/TensileLibrary.dat"
            ],
            &["t"],
            false,
            &["gfx942"]
        )
        .is_empty()
    );
    // A generic target is an AMD processor, judged as prune keeps.
    let got = verdicts(&refs(&tree), &["t"], false, &["gfx9-4-generic"]);
    assert!(got.len() == 2 && got.iter().all(|v| !v.3), "{got:?}");
}

#[test]
fn gpus_are_compared_as_prune_keeps_them() {
    let lib = "r/library/Kernels.so-000-";
    let plus = [
        format!("{lib}gfx90a-xnack+.hsaco"),
        format!("{lib}gfx1100.hsaco"),
    ];
    let plus = refs(&plus);
    // A gfx90a rule keeps xnack+ files; gfx90a:xnack- does not.
    assert!(verdicts(&plus, &[], false, &["gfx90a"])[0].3);
    assert!(!verdicts(&plus, &[], false, &["gfx90a:xnack-"])[0].3);
    assert!(!verdicts(&plus, &[], false, &["gfx908"])[0].3);
    // AOTriton's families.
    let aot = ["torch/lib/aotriton.images/amd-gfx11xx/flash/a.aks2"];
    let got = verdicts(&aot, &[], false, &["gfx1100", "gfx942"]);
    assert_eq!(got.len(), 2);
    assert!(got[0].3 && !got[1].3, "{got:?}");
    assert_eq!(got[0].1, "torch/lib/aotriton.images");
    // TensorRT: a resource of the same major version serves.
    let trt = ["lib/libnvinfer_builder_resource_sm86.so.10"];
    assert!(verdicts(&trt, &[], false, &["sm_89"])[0].3);
    assert!(!verdicts(&trt, &[], false, &["sm_90"])[0].3);
    assert!(verdicts(&trt, &[], false, &["gfx942"]).is_empty());
    // A per-GPU directory: its files, grouped by the directory above.
    let dirs = [
        "p/library/gfx90a/TensileLibrary.dat",
        "p/library/gfx90a/a.co",
        "p/library/gfx942/a.co",
    ];
    let mut found = Found::new(false);
    for u in dirs {
        found.add(u, &[]);
    }
    let j = judge(&found, &rules(&["gfx90a"]));
    assert_eq!(j.len(), 1);
    assert_eq!(j[0].location, "p/library");
    assert_eq!(
        j[0].files,
        [
            "p/library/gfx90a/TensileLibrary.dat",
            "p/library/gfx90a/a.co"
        ]
    );
    assert!(
        j[0].summary().ends_with(": gfx90a has 2 file(s) (gfx90a)"),
        "{}",
        j[0].summary()
    );
}

#[test]
fn libraries_and_inputs_are_judged_apart_unless_any() {
    // Two libraries in one tree: the one without gfx942 fails alone.
    let mut tree = hipblaslt("t", &["gfx90a", "gfx942"]);
    tree.push("t/lib/rocblas/library/TensileLibrary_gfx90a.co".into());
    let got = verdicts(&refs(&tree), &["t"], false, &["gfx942"]);
    let failed: Vec<&str> = got.iter().filter(|v| !v.3).map(|v| v.1.as_str()).collect();
    assert_eq!(failed, ["t/lib/rocblas/library"], "{got:?}");
    // Split packages: each fails alone, together (--any) they pass.
    let units = [
        "a.deb!/usr/lib/rocblas/library/TensileLibrary_gfx90a.co",
        "b.deb!/usr/lib/rocblas/library/TensileLibrary_gfx942.co",
    ];
    let got = verdicts(&units, &[], false, &["gfx942"]);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].0.as_deref(), Some("a.deb"));
    assert!(!got[0].3 && got[1].3, "{got:?}");
    let got = verdicts(&units, &[], true, &["gfx942"]);
    assert_eq!(got.len(), 1);
    assert!(got[0].0.is_none() && got[0].3, "{got:?}");
    assert_eq!(got[0].4, "gfx90a gfx942");
    let j = {
        let mut f = Found::new(false);
        f.add(units[0], &[]);
        judge(&f, &rules(&["gfx942"]))
    };
    assert_eq!(
        j[0].summary(),
        "per-GPU files of rocBLAS/hipBLASLt/hipSPARSELt (Tensile) (the GPU's kernels: raw \
         AMDGPU code objects) in usr/lib/rocblas/library/: none for gfx942 (files for: gfx90a)"
    );
}

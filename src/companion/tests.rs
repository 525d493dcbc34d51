use super::*;

/// The GPU `path` is a companion file of, as a string, and its row's
/// library; `None` when it is none.
fn gpu(path: &str) -> Option<(String, &'static str)> {
    companion(path).map(|c| (c.gpu.to_string(), c.convention.library))
}

fn key(path: &str) -> Option<String> {
    gpu(path).map(|(g, _)| g)
}

#[test]
fn tensile_code_objects_flat() {
    let lib = "rocblas/2.47.0/library/";
    assert_eq!(
        key(&format!("{lib}TensileLibrary_gfx906.co")).as_deref(),
        Some("gfx906")
    );
    assert_eq!(
        key(&format!("{lib}Kernels.so-000-gfx90a-xnack+.hsaco")).as_deref(),
        Some("gfx90a:xnack+")
    );
    assert_eq!(
        key(&format!("{lib}Kernels.so-000-gfx90a-xnack-.hsaco")).as_deref(),
        Some("gfx90a:xnack-")
    );
    assert_eq!(
        key(&format!("{lib}Kernels.so-000-gfx1100.hsaco")).as_deref(),
        Some("gfx1100")
    );
    assert_eq!(key("library/extop_gfx942.co").as_deref(), Some("gfx942"));
    assert_eq!(
        key("library/hipblasltTransform_gfx942.hsaco").as_deref(),
        Some("gfx942")
    );
    assert_eq!(
        key(
            "library/TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx908.hsaco"
        )
        .as_deref(),
        Some("gfx908")
    );
    assert_eq!(
        gpu("library/TensileLibrary_gfx906.co").unwrap().1,
        TABLE[0].library
    );
    // A processor written with a feature it does not have, a feature
    // twice, a processor not known, no separator before it: no match.
    assert_eq!(key("library/TensileLibrary_gfx1100-xnack+.co"), None);
    assert_eq!(key("library/TensileLibrary_gfx90a-xnack+-xnack-.co"), None);
    assert_eq!(key("library/TensileLibrary_gfx9999.co"), None);
    assert_eq!(key("library/TensileLibrarygfx906.co"), None);
    // Not under `library/`, or of another extension.
    assert_eq!(key("lib/TensileLibrary_gfx906.co"), None);
    assert_eq!(key("library/TensileLibrary_gfx906.so"), None);
}

#[test]
fn tensile_indexes() {
    assert_eq!(
        key("x/library/TensileLibrary_lazy_gfx906.dat").as_deref(),
        Some("gfx906")
    );
    assert_eq!(
        key("library/TensileLibrary_gfx1030.dat").as_deref(),
        Some("gfx1030")
    );
    assert_eq!(
        key("library/TensileLibrary_Type_SS_Contraction_gfx942.dat.zlib").as_deref(),
        Some("gfx942")
    );
    assert_eq!(
        key("library/hipblasltExtOpLibrary_gfx942.dat").as_deref(),
        Some("gfx942")
    );
    assert_eq!(
        key("library/TensileLiteLibrary_lazy_gfx90a-xnack+_Mapping.dat").as_deref(),
        Some("gfx90a:xnack+")
    );
    // Arch-neutral indexes stay.
    for neutral in [
        "library/TensileLibrary.dat",
        "library/TensileLibrary_lazy.dat",
        "library/TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback.dat",
        "library/TensileManifest.txt",
        "library/TensileLiteLibrary_lazy_Mapping.dat",
    ] {
        assert_eq!(companion(neutral), None, "{neutral}");
    }
}

#[test]
fn tensile_directories() {
    let c = companion("lib/hipblaslt/library/gfx942/TensileLibrary_lazy.dat").unwrap();
    assert_eq!((c.gpu.to_string(), c.directory), ("gfx942".into(), 4));
    assert_eq!(c.convention.pattern, TABLE[2].pattern);
    // The directory itself, as a package's directory entry names it.
    let c = companion("lib/hipblaslt/library/gfx90a-xnack-/").unwrap();
    assert_eq!(
        (c.gpu.to_string(), c.directory),
        ("gfx90a:xnack-".into(), 4)
    );
    assert_eq!(key("library/gfx1201/a/b/c.co").as_deref(), Some("gfx1201"));
    // A directory entry matches only as a per-GPU directory.
    assert_eq!(companion("library/TensileLibrary_gfx906.co/"), None);
    assert_eq!(companion("library/generic/x.co"), None);
    assert_eq!(companion("library/gfx9999/x.co"), None);
}

#[test]
fn miopen_databases_with_cu_counts() {
    let db = "opt/rocm/share/miopen/db/";
    for (name, want) in [
        ("gfx90a68.kdb", "gfx90a"),
        ("gfx90a6e.HIP.fdb.txt", "gfx90a"),
        ("gfx90878.kdb", "gfx908"),
        ("gfx942130.db.txt", "gfx942"),
        ("gfx1030_36.kdb", "gfx1030"),
        ("gfx906_60.db", "gfx906"),
        ("gfx906_60.fdb.txt", "gfx906"),
        ("gfx942.kdb", "gfx942"),
        ("gfx1100.tn.model", "gfx1100"),
        ("gfx90a_ConvHipIgemmGroupFwdXdlops.ktn.model", "gfx90a"),
        ("gfx900_56.OpenCL.fdb.txt", "gfx900"),
        ("gfx90a_metadata.tn.model", "gfx90a"),
        ("gfx950_3d.tn.model", "gfx950"),
        ("gfx942_3d_metadata.tn.model", "gfx942"),
        (
            "gfx950_ConvHipImplicitGemm3DGroupFwdXdlops_metadata.tn.model",
            "gfx950",
        ),
    ] {
        assert_eq!(key(&format!("{db}{name}")).as_deref(), Some(want), "{name}");
    }
    for other in [
        "gfx90a68.txt",
        "gfx90a_1234.kdb",
        "gfx90a12345.kdb",
        "gfx90azz.kdb",
        "miopen.kdb",
        "gfx9999.tn.model",
        "gfx908_.tn.model",
        "gfx908.ktn.model",
        "generic_metadata.tn.model",
        "gfx900_56.OpenCL.txt",
    ] {
        assert_eq!(key(&format!("{db}{other}")), None, "{other}");
    }
    // Only in MIOpen's `db` directory.
    assert_eq!(key("share/other/db/gfx90a68.kdb"), None);
    assert_eq!(key("share/miopen/gfx90a68.kdb"), None);
    assert_eq!(gpu(&format!("{db}gfx90a68.kdb")).unwrap().1, "MIOpen");
}

/// Every name MIOpen installs into `share/miopen/db` (the list
/// `scripts/miopen-db-names.sh` made from MIOpen's source tree) is its
/// GPU's file.
#[test]
fn miopen_installed_names() {
    let list = include_str!("../../fixtures/companion/miopen-db-names.txt");
    let mut names = 0;
    for line in list.lines().filter(|l| !l.starts_with('#')) {
        let (name, want) = line.split_once(' ').unwrap();
        let got = gpu(&format!("opt/rocm/share/miopen/db/{name}"));
        assert_eq!(got, Some((want.to_string(), "MIOpen")), "{name}");
        names += 1;
    }
    assert!(names >= 50, "{names} names");
}

#[test]
fn per_gpu_libraries_and_archives() {
    assert_eq!(
        key("lib/libMIOpenCKConv_gfx942.so").as_deref(),
        Some("gfx942")
    );
    assert_eq!(
        key("lib/libMIOpenCKConv_gfx942.so.1.0").as_deref(),
        Some("gfx942")
    );
    assert_eq!(
        key("bin/MIOpenCKGroupedConv_gfx942.dll").as_deref(),
        Some("gfx942")
    );
    assert_eq!(key("bin/MIOpen.dll"), None);
    assert_eq!(key("bin/MIOpenCKGroupedConv.dll"), None);
    assert_eq!(key("lib/MIOpenCKConv_gfx942.so"), None);
    assert_eq!(key("lib/libMIOpenCK.so.1"), None);
    assert_eq!(key("lib/libMIOpen.so.1"), None);
    assert_eq!(
        key("lib/libdevice_conv_operations_gfx90a.a").as_deref(),
        Some("gfx90a")
    );
    assert_eq!(
        key("lib/libdevice_conv_operations_gfx942_fp8.a").as_deref(),
        Some("gfx942")
    );
    assert_eq!(key("lib/libdevice_conv_operations.a"), None);
    assert_eq!(key("lib/libdevice_other_operations.a"), None);
    // A host library named after no convention, whatever GPU its name says.
    assert_eq!(key("lib/libfoo_gfx942.so"), None);
}

#[test]
fn aotriton_trees_by_processor_or_family() {
    let root = "torch/lib/aotriton.images/";
    assert_eq!(
        key(&format!("{root}amd-gfx942/flash/fwd.aks2")).as_deref(),
        Some("gfx942")
    );
    let c = companion(&format!("{root}amd-gfx11xx/flash/fwd.aks2")).unwrap();
    assert_eq!((c.gpu, c.directory), (Gpu::AmdFamily("gfx11".into()), 4));
    assert_eq!(
        companion(&format!("{root}amd-gfx110x/a.aks2")).unwrap().gpu,
        Gpu::AmdFamily("gfx110".into())
    );
    assert_eq!(
        companion(&format!("{root}amd-gfx120X/a.aks2")).unwrap().gpu,
        Gpu::AmdFamily("gfx120".into())
    );
    assert_eq!(
        companion(&format!("{root}amd-gfx11/a.aks2")).unwrap().gpu,
        Gpu::AmdFamily("gfx11".into())
    );
    // No processor starts so; not `amd-`; not under aotriton.images.
    assert_eq!(companion(&format!("{root}amd-gfx77xx/a.aks2")), None);
    assert_eq!(companion(&format!("{root}nv-sm80/a.aks2")), None);
    assert_eq!(companion("torch/lib/images/amd-gfx942/a.aks2"), None);
}

#[test]
fn tensorrt_resources_and_the_ptx_one() {
    assert_eq!(
        key("lib/libnvinfer_builder_resource_sm86.so.10").as_deref(),
        Some("sm_86")
    );
    assert_eq!(
        key("tensorrt_libs/libnvinfer_builder_resource_sm120.so.10.16.0").as_deref(),
        Some("sm_120")
    );
    assert_eq!(key("lib/libnvinfer_builder_resource_ptx.so.10"), None);
    assert_eq!(key("lib/libnvinfer_builder_resource.so.10"), None);
    assert_eq!(key("lib/libnvinfer_builder_resource_sm999.so.10"), None);
    assert_eq!(key("lib/libnvinfer.so.10"), None);
}

#[test]
fn paths_are_normalized_and_never_escape() {
    assert_eq!(
        key("./library/TensileLibrary_gfx906.co").as_deref(),
        Some("gfx906")
    );
    assert_eq!(
        key("/usr//lib/library/TensileLibrary_gfx906.co").as_deref(),
        Some("gfx906")
    );
    assert_eq!(key("../library/TensileLibrary_gfx906.co"), None);
    assert_eq!(key(""), None);
    assert_eq!(key("/"), None);
}

#[test]
fn the_table_documents_every_row() {
    for c in TABLE {
        assert!(!c.library.is_empty() && !c.pattern.is_empty());
        assert!(!c.holds.is_empty() && !c.source.is_empty());
    }
}

#[test]
fn docs_prune_md_gives_every_row() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/prune.md")).unwrap();
    for c in TABLE {
        let row = format!("| {} | `{}` |", c.library, c.pattern);
        assert!(doc.contains(&row), "docs/prune.md lacks the row {row}");
        assert!(
            doc.contains(c.source.split(' ').next().unwrap()),
            "{}",
            c.source
        );
    }
}

//! Unit tests of `check`'s rules: parsing, suggestions for unknown names,
//! loader-compatible matching, coverage of sets, exact matching.

use super::*;
use crate::offload_binary::ImageKind;
use crate::scan::{Content, Offload};

fn image(triple: &str, target_id: &str, kind: Option<ImageKind>) -> Image {
    crate::scan::test_image(
        triple,
        target_id,
        Offload::of_bundle_kind("hip"),
        kind.map(Content::Image),
    )
}

#[test]
fn parsing() {
    let r = Rule::parse("gfx90a:xnack+").unwrap();
    assert_eq!(
        (r.arch.as_deref(), r.kind.as_deref()),
        (Some("gfx90a:xnack+"), None)
    );
    let r = Rule::parse("sm_90:cubin").unwrap();
    assert_eq!(
        (r.arch.as_deref(), r.kind.as_deref()),
        (Some("sm_90"), Some("cubin"))
    );
    let r = Rule::parse("*:ptx").unwrap();
    assert_eq!((r.arch, r.kind.as_deref()), (None, Some("ptx")));
    let r = Rule::parse("gfx90a:xnack-:object").unwrap();
    assert_eq!(r.arch.as_deref(), Some("gfx90a:xnack-"));
    assert!(Rule::parse(":ptx").is_err());
    assert!(Rule::parse("gfx90a:xnack+:xnack-").is_err());
    assert!(Rule::parse("").is_err());
    assert!(Rule::parse("gfx9-4-generic:sramecc+:xnack-").is_ok());
    assert!(Rule::parse("sm_100f:ptx").is_ok());
    assert!(Rule::parse("tahiti").is_ok());
    assert!(Rule::parse("x86_64").is_ok());
}

/// Rules naming nothing known are errors that name the closest known
/// names.
#[test]
fn unknown_names_are_errors_with_suggestions() {
    for (rule, says) in [
        ("sm90", "did you mean sm_90?"),
        ("sm_90:cubn", "did you mean cubin?"),
        ("gfx90A", "did you mean gfx90a?"),
        ("GFX942", "did you mean gfx942?"),
        ("gfx9999", "gfx909"),
        ("sm_91", "sm_90"),
        ("sm_86a", "unknown architecture 'sm_86a'"),
        ("compute_90", "did you mean sm_90:ptx?"),
        ("gfx90a:xnak+", "did you mean xnack?"),
        ("gfx1030:xnack+", "no target-ID features"),
        ("gfx942:xnak+", "did you mean xnack?"),
        ("sm_90:xnack-", "no target-ID features"),
        ("gfx90a:xnack", "needs a sign"),
        ("*:objekt", "did you mean object?"),
    ] {
        let e = Rule::parse(rule).unwrap_err().to_string();
        assert!(e.contains(says) && e.contains(rule), "{rule}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    assert!(Rule::parse_arch("gfx90A").is_err());
    assert!(Rule::parse_arch("*").unwrap().arch.is_none());
    assert!(Rule::parse_kind("cubn").is_err());
    assert_eq!(Rule::parse_kind("ptx").unwrap().text, "*:ptx");
}

/// (rule, image target ID, image kind, served_by, built_for)
const AMD: &[(&str, &str, Option<ImageKind>, Meets, Meets)] = &[
    ("gfx90a", "gfx90a", None, Meets::Yes, Meets::Yes),
    ("gfx90a", "gfx90a:xnack+", None, Meets::No, Meets::Yes),
    ("gfx90a:xnack-", "gfx90a", None, Meets::Yes, Meets::Yes),
    ("gfx90a:xnack+", "gfx90a", None, Meets::Yes, Meets::Yes),
    (
        "gfx90a:xnack+",
        "gfx90a:xnack+",
        None,
        Meets::Yes,
        Meets::Yes,
    ),
    ("gfx90a:xnack+", "gfx90a:xnack-", None, Meets::No, Meets::No),
    ("gfx90a:xnack-", "gfx90a:xnack+", None, Meets::No, Meets::No),
    (
        "gfx90a:xnack+",
        "gfx90a:sramecc+:xnack+",
        None,
        Meets::No,
        Meets::Yes,
    ),
    (
        "gfx90a:sramecc+:xnack+",
        "gfx90a:xnack+",
        None,
        Meets::Yes,
        Meets::Yes,
    ),
    ("gfx942", "gfx90a", None, Meets::No, Meets::No),
    ("tahiti", "gfx600", None, Meets::Yes, Meets::Yes),
    (
        "gfx90a:object",
        "gfx90a",
        Some(ImageKind::IMG_Object),
        Meets::Yes,
        Meets::Yes,
    ),
    (
        "gfx90a:object",
        "gfx90a",
        None,
        Meets::Undetermined,
        Meets::Undetermined,
    ),
    (
        "gfx90a:bitcode",
        "gfx90a",
        Some(ImageKind::IMG_Object),
        Meets::No,
        Meets::No,
    ),
    ("gfx90a:hip", "gfx90a", None, Meets::Yes, Meets::Yes),
    (
        "*:object",
        "gfx1030",
        Some(ImageKind::IMG_Object),
        Meets::Yes,
        Meets::Yes,
    ),
];

const CUBIN: Option<ImageKind> = Some(ImageKind::IMG_Cubin);
const PTX: Option<ImageKind> = Some(ImageKind::IMG_PTX);

/// (rule, image arch, image kind, served_by, built_for)
const CUDA: &[(&str, &str, Option<ImageKind>, Meets, Meets)] = &[
    ("sm_86", "sm_86", CUBIN, Meets::Yes, Meets::Yes),
    ("sm_87", "sm_86", CUBIN, Meets::Yes, Meets::No),
    ("sm_89", "sm_86", CUBIN, Meets::Yes, Meets::No),
    ("sm_90", "sm_86", CUBIN, Meets::No, Meets::No),
    ("sm_80", "sm_86", CUBIN, Meets::No, Meets::No),
    ("sm_90:cubin", "sm_90", PTX, Meets::No, Meets::No),
    ("sm_90:cubin", "sm_80", CUBIN, Meets::No, Meets::No),
    ("sm_90", "sm_80", PTX, Meets::ByPtxJit, Meets::No),
    ("sm_90:ptx", "sm_80", PTX, Meets::ByPtxJit, Meets::No),
    ("sm_100", "sm_90", PTX, Meets::ByPtxJit, Meets::No),
    // Family PTX: its family's devices from its own on, no further.
    ("sm_103", "sm_100f", PTX, Meets::ByPtxJit, Meets::No),
    ("sm_100", "sm_100f", PTX, Meets::Yes, Meets::Yes),
    ("sm_120", "sm_100f", PTX, Meets::No, Meets::No),
    ("sm_110", "sm_100f", PTX, Meets::No, Meets::No),
    // Arch-specific rules: only arch-specific code for that arch, which
    // is also all they take.
    ("sm_90a", "sm_90", CUBIN, Meets::No, Meets::No),
    ("sm_90a", "sm_90a", CUBIN, Meets::Yes, Meets::Yes),
    ("sm_90a", "sm_90a", PTX, Meets::Yes, Meets::Yes),
    ("sm_90a", "sm_80", PTX, Meets::No, Meets::No),
    ("sm_100a", "sm_100f", CUBIN, Meets::No, Meets::No),
    // Family rules: every device of the family from its own on; they take
    // family code only.
    ("sm_100f", "sm_100", CUBIN, Meets::Yes, Meets::No),
    ("sm_100f", "sm_100a", CUBIN, Meets::No, Meets::No),
    ("sm_100f", "sm_103", CUBIN, Meets::No, Meets::No),
    ("sm_120f", "sm_120f", CUBIN, Meets::Yes, Meets::Yes),
    ("sm_100f", "sm_90", PTX, Meets::ByPtxJit, Meets::No),
    ("sm_80", "sm_90", PTX, Meets::No, Meets::No),
    ("sm_90", "sm_90a", CUBIN, Meets::Yes, Meets::Yes),
    ("sm_100", "sm_90a", CUBIN, Meets::No, Meets::No),
    ("sm_100", "sm_90a", PTX, Meets::No, Meets::No),
    (
        "sm_52",
        "sm_52",
        Some(ImageKind::IMG_Bitcode),
        Meets::Yes,
        Meets::Yes,
    ),
    (
        "sm_53",
        "sm_52",
        Some(ImageKind::IMG_Bitcode),
        Meets::No,
        Meets::No,
    ),
    ("sm_120", "sm_100", CUBIN, Meets::No, Meets::No),
    ("*:ptx", "sm_50", PTX, Meets::Yes, Meets::Yes),
    ("*:cubin", "sm_50", PTX, Meets::No, Meets::No),
    // OpenMP's NVPTX images are packed as objects: cubins.
    ("sm_80:cubin", "sm_80", OBJECT, Meets::Yes, Meets::Yes),
    ("sm_86", "sm_80", OBJECT, Meets::Yes, Meets::No),
    ("sm_90", "sm_80", OBJECT, Meets::No, Meets::No),
    ("sm_80:ptx", "sm_80", OBJECT, Meets::No, Meets::No),
];

const OBJECT: Option<ImageKind> = Some(ImageKind::IMG_Object);

#[test]
fn loader_compatible_matching() {
    for (triple, table) in [("amdgcn-amd-amdhsa", AMD), ("nvptx64-nvidia-cuda", CUDA)] {
        for &(rule, target, kind, served, built) in table {
            let r = Rule::parse(rule).unwrap();
            let img = image(triple, target, kind);
            assert_eq!(
                r.served_by(&img, false),
                served,
                "{rule} served by {target}"
            );
            assert_eq!(r.built_for(&img, false), built, "{rule} built for {target}");
        }
    }
}

/// A CUDA fatbin entry's image for code `code` (`sm_90a`, `sm_100f`) of
/// kind `kind`, named as the scanner names it: a family cubin as the
/// plain one (`cuobjdump`'s name), its code kept in `cuda_arch`.
fn cuda_entry(code: &str, kind: Option<ImageKind>) -> Image {
    let name = match code.strip_suffix('f') {
        Some(plain) if kind == CUBIN => plain,
        _ => code,
    };
    let mut img = image("nvptx64-nvidia-cuda", name, kind);
    img.cuda_arch = Some(code.to_string());
    img
}

/// The devices of [`DEVICE_BY_IMAGE`]'s columns, as rules: a plain name is
/// a device of that SM, an `a` name one that asks for arch-specific code.
const DEVICES: &[&str] = &[
    "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_103",
    "sm_103a", "sm_110", "sm_120", "sm_120a", "sm_121", "sm_121a",
];

/// Which device runs which image, as NVIDIA's loader and JIT decide
/// (docs/target-rules.md §3): per image (its code and kind), one mark per
/// device of [`DEVICES`]: `Y` runs it, `J` compiles the PTX for itself,
/// `.` neither. Written out by hand from the rules, not from the code.
const DEVICE_BY_IMAGE: &[(&str, Option<ImageKind>, &str)] = &[
    //                 75 80 86 89 90 90a 100 100a 103 103a 110 120 120a 121 121a
    ("sm_80", CUBIN, ".YYY..........."),
    ("sm_86", CUBIN, "..YY..........."),
    ("sm_90", CUBIN, "....Y.........."),
    ("sm_90a", CUBIN, "....YY........."),
    ("sm_100", CUBIN, "......Y.Y......"),
    ("sm_100a", CUBIN, "......YY......."),
    ("sm_100f", CUBIN, "......Y.Y......"),
    ("sm_103f", CUBIN, "........Y......"),
    ("sm_103a", CUBIN, "........YY....."),
    ("sm_110f", CUBIN, "..........Y...."),
    ("sm_120", CUBIN, "...........Y.Y."),
    ("sm_120a", CUBIN, "...........YY.."),
    ("sm_120f", CUBIN, "...........Y.Y."),
    ("sm_121a", CUBIN, ".............YY"),
    ("sm_75", PTX, "YJJJJ.J.J.JJ.J."),
    ("sm_80", PTX, ".YJJJ.J.J.JJ.J."),
    ("sm_90", PTX, "....Y.J.J.JJ.J."),
    ("sm_90a", PTX, "....YY........."),
    ("sm_100a", PTX, "......YY......."),
    ("sm_100f", PTX, "......Y.J......"),
    ("sm_120f", PTX, "...........Y.J."),
    ("sm_121f", PTX, ".............Y."),
];

/// Every device of [`DEVICES`] against every image of
/// [`DEVICE_BY_IMAGE`]: `served_by` a rule naming the device, and
/// `loaded_by_some` (what `prune --keep` keeps) the same.
#[test]
fn cuda_device_by_image() {
    for &(code, kind, marks) in DEVICE_BY_IMAGE {
        assert_eq!(marks.len(), DEVICES.len(), "{code}");
        let img = cuda_entry(code, kind);
        for (&dev, mark) in DEVICES.iter().zip(marks.chars()) {
            let want = match mark {
                'Y' => Meets::Yes,
                'J' => Meets::ByPtxJit,
                _ => Meets::No,
            };
            let r = Rule::parse(dev).unwrap();
            assert_eq!(
                r.served_by(&img, false),
                want,
                "{dev} device, {code} {kind:?}"
            );
            assert_eq!(
                r.loaded_by_some(&img, false),
                want,
                "{dev} device, {code} {kind:?}"
            );
        }
    }
}

/// The rules of `--forbid` and `prune --drop` per image: a CUDA rule
/// takes its SM's code, of its variant when it names one (`Y`: taken).
#[test]
fn cuda_rules_take_their_variant() {
    let rules = ["sm_90", "sm_90a", "sm_100", "sm_100a", "sm_100f", "sm_120f"];
    let table: &[(&str, Option<ImageKind>, &str)] = &[
        ("sm_90", CUBIN, "Y....."),
        ("sm_90a", CUBIN, "YY...."),
        ("sm_100", CUBIN, "..Y..."),
        ("sm_100a", CUBIN, "..YY.."),
        ("sm_100f", CUBIN, "..Y.Y."),
        ("sm_103f", CUBIN, "......"),
        ("sm_120f", CUBIN, ".....Y"),
        ("sm_90a", PTX, "YY...."),
        ("sm_100f", PTX, "..Y.Y."),
    ];
    for &(code, kind, marks) in table {
        let img = cuda_entry(code, kind);
        for (rule, mark) in rules.iter().zip(marks.chars()) {
            let r = Rule::parse(rule).unwrap();
            let want = if mark == 'Y' { Meets::Yes } else { Meets::No };
            assert_eq!(
                r.built_for(&img, false),
                want,
                "{rule} takes {code} {kind:?}"
            );
            // As strings (`--exact`, `extract --arch`), the same.
            assert_eq!(
                crate::scan::select::arch_matches(&img, rule),
                want == Meets::Yes,
                "{rule} matches {code} {kind:?}"
            );
        }
    }
}

fn ids(imgs: &mut [Image]) -> Vec<&Image> {
    for (i, img) in imgs.iter_mut().enumerate() {
        img.id = i;
    }
    imgs.iter().collect()
}

/// Sets of images cover a rule when each device configuration it names
/// is served by one of them (docs/target-rules.md §2.3).
#[test]
fn coverage_of_sets() {
    let amd = |t: &str| image("amdgcn-amd-amdhsa", t, None);
    // (rule, images, passes, unserved)
    let cases: &[(&str, &[&str], bool, &[&str])] = &[
        ("gfx90a", &["gfx90a"], true, &[]),
        ("gfx90a", &["gfx90a:xnack+", "gfx90a:xnack-"], true, &[]),
        ("gfx90a", &["gfx90a:sramecc+", "gfx90a:sramecc-"], true, &[]),
        (
            "gfx90a",
            &[
                "gfx90a:sramecc+:xnack+",
                "gfx90a:sramecc+:xnack-",
                "gfx90a:sramecc-",
            ],
            true,
            &[],
        ),
        (
            "gfx90a",
            &["gfx90a:xnack+", "gfx90a:sramecc-:xnack-"],
            false,
            &["gfx90a:sramecc+:xnack-"],
        ),
        (
            "gfx90a",
            &["gfx90a:xnack+"],
            false,
            &["gfx90a:sramecc+:xnack-", "gfx90a:sramecc-:xnack-"],
        ),
        ("gfx90a:xnack-", &["gfx90a:xnack-"], true, &[]),
        ("gfx1010", &["gfx1010:xnack+", "gfx1010:xnack-"], true, &[]),
        ("gfx1030", &["gfx1030"], true, &[]),
        // Generic targets serve the processors they cover.
        ("gfx942", &["gfx9-4-generic"], true, &[]),
        ("gfx906", &["gfx9-generic"], true, &[]),
        ("gfx950:xnack+", &["gfx9-4-generic:xnack+"], true, &[]),
        (
            "gfx942",
            &["gfx9-4-generic:xnack-"],
            false,
            &["gfx942:sramecc+:xnack+", "gfx942:sramecc-:xnack+"],
        ),
        (
            "gfx90a",
            &["gfx9-generic"],
            false,
            &[
                "gfx90a:sramecc+:xnack+",
                "gfx90a:sramecc+:xnack-",
                "gfx90a:sramecc-:xnack+",
                "gfx90a:sramecc-:xnack-",
            ],
        ),
        ("gfx1100", &["gfx11-generic"], true, &[]),
        ("tahiti", &["gfx600"], true, &[]),
    ];
    for &(rule, targets, passes, unserved) in cases {
        let mut imgs: Vec<Image> = targets.iter().map(|t| amd(t)).collect();
        let c = Rule::parse(rule).unwrap().coverage(&ids(&mut imgs), false);
        assert_eq!(c.passed, passes, "{rule} by {targets:?}");
        assert_eq!(c.unserved, unserved, "{rule} by {targets:?}");
        if passes {
            assert_eq!(c.images.len(), targets.len(), "{rule} by {targets:?}");
        }
    }
    // CUDA: a family rule wants each of its devices served.
    let nv = |t: &str, k| image("nvptx64-nvidia-cuda", t, k);
    let mut imgs = vec![nv("sm_100a", CUBIN), nv("sm_103a", CUBIN)];
    let c = Rule::parse("sm_100f")
        .unwrap()
        .coverage(&ids(&mut imgs), false);
    assert!(c.passed && !c.by_ptx_jit, "{c:?}");
    let mut imgs = vec![nv("sm_100a", CUBIN)];
    let c = Rule::parse("sm_100f")
        .unwrap()
        .coverage(&ids(&mut imgs), false);
    assert_eq!(c.unserved, ["sm_103"]);
    // A rule met natively for one device and through PTX for another.
    let mut imgs = vec![nv("sm_100", CUBIN), nv("sm_90", PTX)];
    let c = Rule::parse("sm_120f")
        .unwrap()
        .coverage(&ids(&mut imgs), false);
    assert!(c.passed && c.by_ptx_jit && c.images == [1], "{c:?}");
    let c = Rule::parse("sm_120f:cubin")
        .unwrap()
        .coverage(&ids(&mut imgs), false);
    assert_eq!(c.unserved, ["sm_120", "sm_121"]);
}

#[test]
fn exact_is_string_matching() {
    let img = image("amdgcn-amd-amdhsa", "gfx90a:xnack+", None);
    assert_eq!(Rule::arch("gfx90a").served_by(&img, true), Meets::Yes);
    let img = image("nvptx64-nvidia-cuda", "sm_86", CUBIN);
    assert_eq!(Rule::arch("sm_87").served_by(&img, true), Meets::No);
}

/// How a device of a rule loads an image, in words (`prune`'s report).
#[test]
fn loading_in_words() {
    let says = |rule: &str, img: &Image| Rule::parse(rule).unwrap().loading(img);
    assert_eq!(
        says("sm_103", &cuda_entry("sm_100f", CUBIN)).as_deref(),
        Some("sm_103 devices load sm_100f code (family: sm_100 and the later 10.x devices)")
    );
    assert_eq!(
        says("sm_90a", &cuda_entry("sm_90a", CUBIN)).as_deref(),
        Some("arch-specific sm_90a code, for sm_90 devices")
    );
    assert_eq!(
        says("sm_100", &cuda_entry("sm_90", PTX)).as_deref(),
        Some("sm_100 devices compile sm_90 PTX for themselves")
    );
    assert_eq!(says("sm_100", &cuda_entry("sm_90a", CUBIN)), None);
    assert_eq!(says("sm_121", &cuda_entry("sm_120a", CUBIN)), None);
    let generic = image("amdgcn-amd-amdhsa", "gfx9-4-generic", None);
    assert_eq!(
        says("gfx942", &generic).as_deref(),
        Some(
            "gfx942:sramecc+:xnack+ devices load gfx9-4-generic code \
             (a generic target that covers gfx942)"
        )
    );
    let xnack = image("amdgcn-amd-amdhsa", "gfx90a:xnack-", None);
    assert_eq!(
        says("gfx90a", &xnack).as_deref(),
        Some("gfx90a:sramecc+:xnack- devices load gfx90a:xnack- code")
    );
    assert_eq!(
        says("*:ptx", &cuda_entry("sm_80", PTX)).as_deref(),
        Some("the rule takes any architecture")
    );
}

#[test]
fn a_cpu_rule_takes_the_host_offload_images_of_its_cpu() {
    let cpu = image("x86_64-unknown-linux-gnu", "", Some(ImageKind::IMG_Object));
    let arm = image("aarch64-unknown-linux-gnu", "", Some(ImageKind::IMG_Object));
    let gpu = image("amdgcn-amd-amdhsa", "gfx90a", Some(ImageKind::IMG_Object));
    let nvptx = image("nvptx64-nvidia-cuda", "", Some(ImageKind::IMG_Object));
    let x86 = Rule::parse("x86_64").unwrap();
    assert_eq!(x86.loaded_by_some(&cpu, false), Meets::Yes);
    assert_eq!(x86.loaded_by_some(&cpu, true), Meets::Yes);
    assert_eq!(x86.built_for(&cpu, false), Meets::Yes);
    for other in [&arm, &gpu, &nvptx] {
        assert_eq!(x86.loaded_by_some(other, false), Meets::No);
        assert_eq!(x86.built_for(other, false), Meets::No);
    }
    // An alias LLVM's triples know names the same CPU.
    assert_eq!(
        Rule::parse("arm64").map(|r| r.loaded_by_some(&arm, false)),
        Ok(Meets::Yes)
    );
    assert_eq!(
        Rule::parse("aarch64").unwrap().loaded_by_some(&cpu, false),
        Meets::No
    );
    // A GPU rule never takes a CPU image.
    assert_eq!(
        Rule::parse("gfx90a").unwrap().loaded_by_some(&cpu, false),
        Meets::No
    );
}

/// A SYCL or SPIR-V image: it names no processor, only its triple.
fn spir(triple: &str, id: usize) -> Image {
    let mut i = crate::scan::test_image(
        triple,
        "",
        Offload::of_bundle_kind("sycl"),
        Some(Content::Image(ImageKind::IMG_SPIRV)),
    );
    i.id = id;
    i
}

/// Issue #57: the SPIR and SPIR-V targets are rules that take the images
/// of their triple, in every way a rule is matched; before, `spir64`
/// parsed and matched nothing.
#[test]
fn spir_targets_name_the_images_of_their_triple() {
    let triples = [
        "spir64",
        "spir64_gen",
        "spir64_x86_64",
        "spirv64-unknown-unknown",
        "spirv64v1.5-unknown-unknown",
    ];
    let images: Vec<Image> = triples
        .iter()
        .enumerate()
        .map(|(n, t)| spir(t, n))
        .collect();
    // (rule, the images it names, by index in `triples`)
    let cases: [(&str, &[usize]); 6] = [
        ("spir64", &[0]),
        ("spir64_gen", &[1]),
        ("spir64_x86_64", &[2]),
        ("spirv64", &[3, 4]),
        ("spirv64v1.5", &[4]),
        ("spir64:spirv", &[0]),
    ];
    for (text, named) in cases {
        let r = Rule::parse(text).unwrap();
        for img in &images {
            let want = if named.contains(&img.id) {
                Meets::Yes
            } else {
                Meets::No
            };
            let what = format!("{text} on {}", img.triple);
            assert_eq!(r.built_for(img, false), want, "built_for {what}");
            assert_eq!(r.served_by(img, false), want, "served_by {what}");
            assert_eq!(r.loaded_by_some(img, false), want, "loaded_by_some {what}");
            let arch = r.arch.as_deref().unwrap();
            assert_eq!(arch_matches(img, arch), want.yes(), "arch_matches {what}");
        }
        let all: Vec<&Image> = images.iter().collect();
        let c = r.coverage(&all, false);
        assert!(c.passed, "{text}: {c:?}");
        assert_eq!(c.images, named, "{text}");
        assert_eq!(
            r.loading(&images[named[0]]).unwrap(),
            format!("built for {}", r.arch.unwrap())
        );
    }
    // The kind still counts, and no other rule takes a SPIR-V image.
    let archive = Rule::parse("spir64_gen:archive").unwrap();
    assert_eq!(archive.built_for(&images[1], false), Meets::No);
    for other in ["gfx90a", "sm_90", "x86_64", "bmg_g21"] {
        let r = Rule::parse(other).unwrap();
        for img in &images {
            assert_eq!(r.built_for(img, false), Meets::No, "{other}");
            assert_eq!(r.loaded_by_some(img, false), Meets::No, "{other}");
        }
    }
    // Nor does a SPIR rule take a GPU's image.
    let gpu = image("amdgcn-amd-amdhsa", "gfx90a", Some(ImageKind::IMG_Object));
    assert_eq!(
        Rule::parse("spir64").unwrap().built_for(&gpu, false),
        Meets::No
    );
}

/// A spelling no image can meet is a usage error, never a rule that
/// matches nothing: a GPU triple's architecture, features on a SPIR
/// target, a SPIR target in capitals.
#[test]
fn rules_that_could_name_no_image_are_errors() {
    for (rule, says) in [
        ("nvptx64", "the architecture of a triple"),
        ("amdgcn", "the architecture of a triple"),
        ("hsail64", "the architecture of a triple"),
        ("spir64:xnack+", "no target-ID features"),
        ("SPIR64_GEN", "did you mean spir64_gen?"),
        ("spir64_ge", "did you mean spir64_gen?"),
    ] {
        let e = Rule::parse(rule).unwrap_err().to_string();
        assert!(e.contains(says), "{rule}: {e}");
    }
    // r600 is a processor as well as a triple's architecture.
    assert!(Rule::parse("r600").is_ok());
}

use super::*;
use crate::kernels::Format;
use crate::offload_binary::{ImageKind, OffloadKind};
use crate::scan::HashAlgo;

/// A leaf HIP image for `arch` of `size` bytes whose contents are `seed`.
fn img(arch: &str, size: u64, seed: u8) -> Image {
    Image {
        id: 0,
        container: 0,
        index: 0,
        bundle_id: None,
        offload_kind: Offload::Kind(OffloadKind::OFK_HIP),
        image_kind: Some(Content::Image(ImageKind::IMG_Object)),
        triple: "amdgcn-amd-amdhsa".into(),
        arch: arch.into(),
        target_id: arch.into(),
        features: Vec::new(),
        cuda_arch: None,
        strings: Vec::new(),
        section: None,
        member: None,
        offset: None,
        relative_offset: 0,
        size,
        uncompressed_size: None,
        in_compressed: false,
        hash: Some(Digest {
            algo: HashAlgo::Xxh3_128,
            bytes: [seed; 16],
        }),
        nested: None,
        overlaps: None,
    }
}

fn report(images: Vec<Image>) -> Report {
    Report {
        images: images
            .into_iter()
            .enumerate()
            .map(|(id, i)| Image { id, ..i })
            .collect(),
        ..Report::default()
    }
}

fn kernel(name: &str, lds: u64, vgpr: u64) -> Kernel {
    Kernel {
        name: name.into(),
        demangled: None,
        resources: Resources {
            group_segment_fixed_size: Some(lds),
            vgpr_count: Some(vgpr),
            ..Resources::default()
        },
    }
}

fn listing(image: usize, kernels: Vec<Kernel>) -> ImageKernels {
    ImageKernels {
        image,
        listing: Ok(Listing {
            format: Format::Amdgpu,
            target: None,
            version: None,
            kernels,
            symbols: Vec::new(),
        }),
    }
}

fn targets(d: &FileDiff) -> Vec<(&str, Status)> {
    d.targets
        .iter()
        .map(|t| (t.target_id.as_str(), t.status))
        .collect()
}

#[test]
fn the_same_report_is_no_difference() {
    let r = report(vec![img("gfx90a", 10, 1), img("gfx90a", 20, 2)]);
    let d = compare(Side::new(&r), Side::new(&r));
    assert!(!d.differs());
    assert_eq!(targets(&d), [("gfx90a", Status::Same)]);
    assert_eq!(
        d.old,
        Count {
            images: 2,
            bytes: 30
        }
    );
    assert_eq!(d.old, d.new);
}

#[test]
fn targets_added_removed_and_changed_in_arch_order() {
    let old = report(vec![
        img("gfx1030", 10, 1),
        img("gfx90a", 10, 2),
        img("gfx900", 5, 3),
    ]);
    let new = report(vec![
        img("gfx942", 7, 4),
        img("gfx90a", 12, 5),
        img("gfx1030", 10, 1),
    ]);
    let d = compare(Side::new(&old), Side::new(&new));
    assert!(d.differs());
    assert_eq!(
        targets(&d),
        [
            ("gfx900", Status::Removed),
            ("gfx90a", Status::Changed),
            ("gfx942", Status::Added),
            ("gfx1030", Status::Same),
        ]
    );
    let gfx90a = &d.targets[1];
    assert_eq!(gfx90a.changed.len(), 1);
    assert_eq!(
        (gfx90a.changed[0].old.size, gfx90a.changed[0].new.size),
        (10, 12)
    );
    assert_eq!((gfx90a.changed[0].old.id, gfx90a.changed[0].new.id), (1, 1));
    assert_eq!(d.targets[0].removed.len(), 1);
    assert_eq!(d.targets[2].added[0].size, 7);
    assert_eq!((d.old.bytes, d.new.bytes), (25, 29));
}

#[test]
fn repeated_keys_pair_by_contents_then_in_order() {
    // Four translation units' gfx90a images; the new build inserts one
    // before them, changes the third and drops the last.
    let old = report(vec![
        img("gfx90a", 10, 1),
        img("gfx90a", 11, 2),
        img("gfx90a", 12, 3),
        img("gfx90a", 13, 4),
    ]);
    let new = report(vec![
        img("gfx90a", 9, 9),
        img("gfx90a", 10, 1),
        img("gfx90a", 11, 2),
        img("gfx90a", 15, 7),
    ]);
    let d = compare(Side::new(&old), Side::new(&new));
    let t = &d.targets[0];
    assert_eq!(t.status, Status::Changed);
    // Unpaired: old 12 and 13, new 9 and 15: paired in order.
    let pairs: Vec<(u64, u64)> = t.changed.iter().map(|c| (c.old.size, c.new.size)).collect();
    assert_eq!(pairs, [(12, 9), (13, 15)]);
    assert!(t.added.is_empty() && t.removed.is_empty());
    // A moved image is no change.
    let moved = report(vec![img("gfx90a", 11, 2), img("gfx90a", 10, 1)]);
    let first = report(vec![img("gfx90a", 10, 1), img("gfx90a", 11, 2)]);
    assert!(!compare(Side::new(&first), Side::new(&moved)).differs());
    // One more copy of the same contents is an addition.
    let more = report(vec![
        img("gfx90a", 10, 1),
        img("gfx90a", 11, 2),
        img("gfx90a", 10, 1),
    ]);
    let d = compare(Side::new(&first), Side::new(&more));
    assert_eq!(d.targets[0].added.len(), 1);
    assert_eq!(d.targets[0].added[0].id, 2);
}

#[test]
fn keys_part_kinds_host_entries_and_containers() {
    let mut ptx = img("sm_80", 100, 1);
    ptx.offload_kind = Offload::Kind(OffloadKind::OFK_Cuda);
    ptx.triple = "nvptx64-nvidia-cuda".into();
    ptx.image_kind = Some(Content::Image(ImageKind::IMG_PTX));
    let mut cubin = ptx.clone();
    cubin.image_kind = Some(Content::Image(ImageKind::IMG_Cubin));
    let mut host = img("", 0, 0);
    host.offload_kind = Offload::Host;
    let mut outer = img("sm_80", 500, 8);
    outer.nested = Some(1);
    let old = report(vec![ptx.clone(), host.clone(), outer.clone()]);
    let mut cubin2 = cubin.clone();
    cubin2.hash = Some(Digest {
        algo: HashAlgo::Xxh3_128,
        bytes: [5; 16],
    });
    outer.hash = None;
    let new = report(vec![ptx, cubin2, outer]);
    let d = compare(Side::new(&old), Side::new(&new));
    let kinds: Vec<(String, Status)> = d
        .targets
        .iter()
        .map(|t| {
            (
                t.image_kind.map(|k| k.to_string()).unwrap_or_default(),
                t.status,
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("cubin".into(), Status::Added),
            ("ptx".into(), Status::Same)
        ]
    );
    assert_eq!((d.old.images, d.new.images), (1, 2));
}

#[test]
fn images_without_hashes_pair_by_size() {
    let mut a = img("gfx90a", 10, 1);
    a.hash = None;
    let mut b = a.clone();
    b.uncompressed_size = Some(40);
    let old = report(vec![a.clone()]);
    assert!(!compare(Side::new(&old), Side::new(&report(vec![a]))).differs());
    let d = compare(Side::new(&old), Side::new(&report(vec![b])));
    assert_eq!(d.targets[0].changed[0].new.size, 40);
}

#[test]
fn kernels_per_key_added_removed_and_changed() {
    let old = report(vec![
        img("gfx90a", 10, 1),
        img("gfx90a", 10, 2),
        img("gfx942", 10, 3),
    ]);
    let new = report(vec![img("gfx90a", 10, 1), img("gfx90a", 12, 4)]);
    let ok = [
        listing(0, vec![kernel("scale", 0, 4)]),
        listing(1, vec![kernel("reduce", 256, 8), kernel("gone", 0, 2)]),
        listing(2, vec![kernel("scale", 0, 4)]),
    ];
    let mut reduce = kernel("reduce", 1024, 8);
    reduce.demangled = Some("reduce(float*)".into());
    let nk = [
        listing(0, vec![kernel("scale", 0, 4)]),
        listing(1, vec![reduce, kernel("fresh", 0, 1)]),
    ];
    let d = compare(Side::with_kernels(&old, &ok), Side::with_kernels(&new, &nk));
    let gfx90a = &d.targets[0];
    let k = gfx90a.kernels.as_ref().expect("kernels compared");
    let names = |v: &[Kernel]| v.iter().map(|k| k.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&k.removed), ["gone"]);
    assert_eq!(names(&k.added), ["fresh"]);
    assert_eq!(k.changed.len(), 1);
    assert_eq!(k.changed[0].name, "reduce");
    assert_eq!(k.changed[0].demangled.as_deref(), Some("reduce(float*)"));
    let figs: Vec<_> = k.changed[0].figures.iter().collect();
    assert_eq!(
        figs,
        [(
            &"lds".to_string(),
            &Change {
                old: Some(256),
                new: Some(1024)
            }
        )]
    );
    // A removed target lists no kernels; without both sides' kernels
    // none are compared.
    assert_eq!(d.targets[1].status, Status::Removed);
    assert!(d.targets[1].kernels.is_none());
    let d = compare(Side::with_kernels(&old, &ok), Side::new(&new));
    assert!(d.targets.iter().all(|t| t.kernels.is_none()));
}

#[test]
fn a_kernel_change_alone_is_a_difference() {
    let r = report(vec![img("gfx90a", 10, 1)]);
    let a = [listing(0, vec![kernel("k", 0, 4)])];
    let b = [listing(0, vec![kernel("k", 0, 6)])];
    let d = compare(Side::with_kernels(&r, &a), Side::with_kernels(&r, &b));
    assert_eq!(d.targets[0].status, Status::Same);
    assert!(d.differs());
    let same = compare(Side::with_kernels(&r, &a), Side::with_kernels(&r, &a));
    assert!(!same.differs());
}

#[test]
fn damaged_symbols_are_no_kernels_removed() {
    let r = report(vec![img("gfx90a", 10, 1)]);
    let a = [listing(0, vec![kernel("k", 0, 4)])];
    let damaged = [ImageKernels {
        image: 0,
        listing: Err(crate::scan::Unread::new("invalid ELF image")),
    }];
    let d = compare(Side::with_kernels(&r, &a), Side::with_kernels(&r, &damaged));
    assert_eq!(d.targets[0].kernels, None);
    assert!(!d.differs());
}

#[test]
fn json_names() {
    let old = report(vec![img("gfx90a", 10, 1)]);
    let new = report(vec![img("gfx90a", 11, 2)]);
    let d = compare(Side::new(&old), Side::new(&new));
    let v = serde_json::to_value(&d).expect("serializes");
    let t = &v["targets"][0];
    assert_eq!(t["offload_kind"], "hip");
    assert_eq!(t["image_kind"], "object");
    assert_eq!(t["status"], "changed");
    assert_eq!(t["old"]["bytes"], 10);
    assert_eq!(t["changed"][0]["new"]["size"], 11);
    assert!(
        t["changed"][0]["old"]["hash"]
            .as_str()
            .is_some_and(|h| h.starts_with("xxh3-128:01"))
    );
    assert!(t.get("kernels").is_none());
}

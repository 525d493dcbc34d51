//! Damaged data, one rule: under `verify` every compressed thing is
//! decoded and every stored hash checked, whatever fails is a problem of
//! kind damage, and [`Report::in_damaged_data`] names every image that
//! lies in it (what `extract` keeps nothing of).

use super::*;

/// A fatbin of a compressed cubin for sm_80 (LZ4 or zstd, as `zstd`
/// says) whose stored data is damaged, and a good plain cubin for sm_90.
fn fatbin_with_damaged_entry(zstd: bool) -> Vec<u8> {
    let cubin: Vec<u8> = b"\x7fELF"
        .iter()
        .copied()
        .chain((0..3000u32).map(|i| (i % 31) as u8))
        .collect();
    let (mut payload, flag) = if zstd {
        (zstd::bulk::compress(&cubin, 3).unwrap(), fatbin::FLAG_ZSTD)
    } else {
        (lz4_flex::block::compress(&cubin), fatbin::FLAG_LZ4)
    };
    // Both decoders refuse this: an LZ4 match reaching before the output,
    // a zstd frame whose magic is gone.
    if zstd {
        payload[0] ^= 0xff;
    } else {
        payload.splice(0..0, [0x10, b'x', 0xFF, 0x7F]);
    }
    fatbin::build_compressed(&[
        (2, 80, 0x11 | flag, &payload, cubin.len() as u64),
        (2, 90, 0x11, b"\x7fELF-plain-cubin", 0),
    ])
}

fn verify() -> Options {
    Options {
        verify: true,
        ..Options::default()
    }
}

#[test]
fn verify_decodes_every_compressed_fatbin_entry() {
    for zstd in [false, true] {
        let f = fatbin_with_damaged_entry(zstd);
        // Listing reads the headers only: the damage is not seen.
        let r = scan(&f, &Options::default());
        assert!(!r.damaged(), "{zstd}: {:?}", r.problems);
        // --verify decodes the cubin: damage of the fatbin, naming the
        // entry, and every image of that fatbin lies in it.
        let r = scan(&f, &verify());
        assert!(r.damaged(), "{zstd}");
        assert_eq!(r.problems.len(), 1, "{zstd}: {:?}", r.problems);
        let p = &r.problems[0];
        assert_eq!(p.container, Some(0));
        let method = if zstd { "zstd" } else { "LZ4" };
        assert!(
            p.message.contains("CUDA fatbin entry 0 (sm_80 cubin)") && p.message.contains(method),
            "{}",
            p.message
        );
        assert_eq!(r.images.len(), 2);
        assert_eq!(r.in_damaged_data(), vec![true, true], "{zstd}");
        // A visitor that wants the entry is told, and the problem is the
        // same as without one.
        let mut v = Sinks::default();
        let rv = scan_with(&f, &Options::default(), &mut v);
        assert_eq!(rv.problems, r.problems, "{zstd}");
        assert_eq!(v.failed.len(), 1, "{zstd}: {:?}", v.failed);
    }
}

#[test]
fn a_ccob_failing_its_hash_hands_nothing_over() {
    let plain = bundle(
        &[
            (HOST, b""),
            (GFX90A, b"\x7fELF-one-image"),
            ("hipv4-amdgcn-amd-amdhsa--gfx942", b"\x7fELF-another"),
        ],
        1,
    );
    let mut c = ccob(&plain);
    // The stored hash: the last 8 bytes of a version 3 header.
    c[31] ^= 0x5a;
    // Without verify the hash is not checked, and the contents decode.
    let mut v = Sinks::default();
    let r = scan_with(&c, &Options::default(), &mut v);
    assert!(!r.damaged(), "{:?}", r.problems);
    assert_eq!(v.kept.lock().unwrap().len(), 2);
    // Under verify: damage of the CCOB, nothing handed over (each wanted
    // image is unavailable, naming the hash), every entry in damaged data.
    let mut v = Sinks::default();
    let r = scan_with(&c, &verify(), &mut v);
    assert!(r.damaged());
    let ccob_id = r
        .containers
        .iter()
        .position(|k| k.kind == ContainerKind::Ccob)
        .unwrap();
    let hash = r.containers[ccob_id].compression.as_ref().unwrap();
    assert_eq!(hash.hash_ok, Some(false));
    assert!(
        r.problems
            .iter()
            .any(|p| p.container == Some(ccob_id) && p.message.contains("stored hash")),
        "{:?}",
        r.problems
    );
    assert!(v.kept.lock().unwrap().is_empty());
    assert_eq!(v.failed.len(), 2, "{:?}", v.failed);
    assert!(
        v.failed.iter().all(|w| w.contains("stored hash")),
        "{:?}",
        v.failed
    );
    assert_eq!(r.images.len(), 3);
    assert!(r.in_damaged_data().iter().all(|&d| d));
}

#[test]
fn damaged_data_reaches_up_through_images_and_down_through_containers() {
    // Two OffloadBinaries: the first's image is a fatbin with a damaged
    // entry, the second's a plain ELF.
    let f = fatbin_with_damaged_entry(false);
    let mut file = offload_binary(&[("nvptx64-nvidia-cuda", "sm_80", &f)]);
    file.extend(offload_binary(&[(
        "amdgcn-amd-amdhsa",
        "gfx90a",
        b"\x7fELF-fine",
    )]));
    let r = scan(&file, &verify());
    assert!(r.damaged());
    let kinds: Vec<ContainerKind> = r.containers.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [
            ContainerKind::OffloadBinary,
            ContainerKind::CudaFatbin,
            ContainerKind::OffloadBinary
        ]
    );
    let damaged: Vec<(String, bool)> = r
        .images
        .iter()
        .zip(r.in_damaged_data())
        .map(|(i, d)| (i.arch.clone(), d))
        .collect();
    // The image holding the fatbin and both of the fatbin's entries lie in
    // damaged data; the other binary's image does not.
    assert_eq!(
        damaged,
        [
            ("sm_80".to_string(), true),
            ("sm_80".to_string(), true),
            ("sm_90".to_string(), true),
            ("gfx90a".to_string(), false),
        ]
    );
    // An undamaged file: nothing.
    let r = scan(&file[..0], &verify());
    assert!(r.in_damaged_data().is_empty());
    let good = offload_binary(&[("amdgcn-amd-amdhsa", "gfx90a", b"\x7fELF-fine")]);
    assert_eq!(scan(&good, &verify()).in_damaged_data(), [false]);
}

#[test]
fn damage_inside_an_image_that_is_no_container_marks_that_image() {
    // An OffloadBinary whose image starts as a CUDA fatbin but is none (its
    // header is cut): the damage lies in that image, not its neighbour's.
    let f = fatbin_with_damaged_entry(false);
    let mut file = offload_binary(&[("nvptx64-nvidia-cuda", "sm_80", &f[..12])]);
    file.extend(offload_binary(&[(
        "amdgcn-amd-amdhsa",
        "gfx90a",
        b"\x7fELF-fine",
    )]));
    let r = scan(&file, &Options::default());
    assert!(r.damaged(), "{:?}", r.problems);
    assert_eq!(r.problems[0].within, Some(Parent::Image(0)));
    assert_eq!(r.in_damaged_data(), [true, false]);
}

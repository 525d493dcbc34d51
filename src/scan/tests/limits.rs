//! The work a file may cause, whatever its bytes: entries that share
//! bytes are read once, and one budget of images, containers and
//! decompressed bytes covers every nested read (issue #24's fan-out
//! files, made here in a few lines).

use super::*;
use crate::num::usize_from;
use crate::offload_binary::{Compression, compress};

/// A binary bundle of `k` entries that all point at the same `inner`
/// bytes.
pub(crate) fn shared_bundle(inner: &[u8], k: usize) -> Vec<u8> {
    let ids: Vec<String> = (0..k)
        .map(|i| format!("hip-amdgcn-amd-amdhsa--gfx{}", 900 + i))
        .collect();
    let mut head = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    head.extend((k as u64).to_le_bytes());
    let size: usize = head.len() + ids.iter().map(|i| 24 + i.len()).sum::<usize>();
    let at = size.next_multiple_of(8);
    for id in &ids {
        head.extend((at as u64).to_le_bytes());
        head.extend((inner.len() as u64).to_le_bytes());
        head.extend((id.len() as u64).to_le_bytes());
        head.extend(id.as_bytes());
    }
    head.resize(at, 0);
    head.extend_from_slice(inner);
    head
}

/// `depth` levels of [`shared_bundle`] around a small ELF-looking image:
/// `k^depth` images if every entry were followed.
pub(crate) fn fan_out(k: usize, depth: usize) -> Vec<u8> {
    let mut x = b"\x7fELF".to_vec();
    x.resize(64, 0);
    for _ in 0..depth {
        x = shared_bundle(&x, k);
    }
    x
}

/// `depth` levels of compressed (version 3, zstd) OffloadBinaries, each
/// holding `k` copies of the level below: the copies cost zstd almost
/// nothing, so a few KB stand for `k^depth` images.
pub(crate) fn compressed_fan_out(k: usize, depth: usize) -> Vec<u8> {
    let mut x = b"\x7fELF".to_vec();
    x.resize(64, 0);
    for level in 0..depth {
        let copies: Vec<(&str, &str, &[u8])> = (0..k)
            .map(|_| ("amdgcn-amd-amdhsa", "gfx90a", &x[..]))
            .collect();
        let specs: Vec<ImageSpec> = copies
            .iter()
            .map(|(t, a, d)| ImageSpec {
                image_kind: ImageKind::IMG_Object,
                offload_kind: OffloadKind::OFK_OpenMP,
                flags: 0,
                strings: vec![
                    (b"triple".to_vec(), t.as_bytes().to_vec()),
                    (b"arch".to_vec(), a.as_bytes().to_vec()),
                ],
                size: d.len() as u64,
            })
            .collect();
        let layout =
            crate::offload_binary::layout(&specs, crate::offload_binary::Version::V3).unwrap();
        let bytes: Vec<&[u8]> = copies.iter().map(|c| c.2).collect();
        let mut plain = Vec::new();
        layout.write_to(&mut plain, &bytes).unwrap();
        let how = if level % 2 == 0 {
            Compression::Zstd
        } else {
            Compression::Zlib
        };
        x = compress(&plain, how, 19).unwrap();
    }
    x
}

/// Records what a visitor was given.
#[derive(Default)]
struct Given(Vec<usize>);

impl Visit for Given {
    fn wants(&mut self, _: &Image) -> bool {
        true
    }
    fn image(&mut self, image: &Image, _: &[u8]) {
        self.0.push(image.id);
    }
}

#[test]
fn entries_that_share_bytes_are_read_once() {
    // Ten entries on the same bytes, nine levels: 10^9 images if followed.
    let file = fan_out(10, 9);
    assert!(file.len() < 6000, "{}", file.len());
    let mut given = Given::default();
    let r = scan_with(&file, &Options::default(), &mut given);
    assert!(r.stopped.is_none());
    // Each level: one entry read (and walked), nine reported unread.
    assert_eq!(r.containers.len(), 8, "the depth limit still applies");
    assert_eq!(r.images.len(), 80);
    let unread: Vec<&Image> = r.images.iter().filter(|i| !i.is_read()).collect();
    assert_eq!(unread.len(), 72);
    for i in &unread {
        assert_eq!(i.overlaps, Some(0));
        assert!(i.nested.is_none() && i.hash.is_none());
        assert!(
            !given.0.contains(&i.id),
            "an unread entry went to the visitor"
        );
    }
    let overlap = r
        .problems
        .iter()
        .filter(|p| p.message.contains("overlaps entry 0"))
        .count();
    assert_eq!(overlap, 72);
    assert!(r.damaged());
    // Partial overlaps count too; touching ranges and empty entries do not.
    let a = b"0123456789abcdef";
    let ok = bundle(
        &[
            (HOST, b""),
            (GFX90A, a),
            ("hip-amdgcn-amd-amdhsa--gfx1030", a),
        ],
        8,
    );
    let r = scan(&ok, &Options::default());
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let mut bad = ok.clone();
    // Entry 2 starts 8 bytes into entry 1.
    let e2 = 32 + (24 + HOST.len()) + (24 + GFX90A.len());
    let off = u64::from_le_bytes(bad[e2..e2 + 8].try_into().unwrap());
    bad[e2..e2 + 8].copy_from_slice(&(off - 8).to_le_bytes());
    let r = scan(&bad, &Options::default());
    assert_eq!(r.images[2].overlaps, Some(1), "{:?}", r.problems);
    assert!(r.images[1].is_read() && r.images[0].is_read());
}

#[test]
fn shared_entries_inside_a_ccob_are_neither_hashed_nor_visited() {
    let file = ccob(&fan_out(10, 3));
    for (verify, hash) in [(false, None), (true, Some(HashAlgo::Md5))] {
        let opts = Options {
            verify,
            hash,
            ..Options::default()
        };
        let mut given = Given::default();
        let r = scan_with(&file, &opts, &mut given);
        assert!(r.stopped.is_none());
        let top: Vec<&Image> = r.images.iter().filter(|i| i.container == 1).collect();
        assert_eq!(top.len(), 10, "{:?}", r.problems);
        for i in &top[1..] {
            assert_eq!(i.overlaps, Some(0), "verify {verify}");
            assert!(i.hash.is_none() && !given.0.contains(&i.id));
        }
        assert!(r.damaged());
        assert!(r.images.len() <= 30, "{}", r.images.len());
    }
}

#[test]
fn limits_stop_the_scan_and_say_which() {
    let file = fan_out(3, 6);
    let r = scan(
        &file,
        &Options {
            max_images: 5,
            ..Options::default()
        },
    );
    assert_eq!(r.stopped, Some(Limit::Images(5)));
    assert!(
        r.images.is_empty() && r.containers.is_empty(),
        "nothing kept"
    );
    assert!(r.damaged());
    assert!(
        r.stopped
            .unwrap()
            .to_string()
            .contains("more than 5 images"),
        "{}",
        r.stopped.unwrap()
    );
    let r = scan(
        &file,
        &Options {
            max_containers: 2,
            ..Options::default()
        },
    );
    assert_eq!(r.stopped, Some(Limit::Containers(2)));
    // Within the limits: the same file is read.
    let r = scan(
        &file,
        &Options {
            max_images: 1000,
            max_containers: 1000,
            ..Options::default()
        },
    );
    assert!(r.stopped.is_none());
    assert_eq!(r.containers.len(), 6);
}

#[test]
fn one_decompression_budget_covers_every_nested_stream() {
    // Four copies per level, seventeen levels: 4^17 images if followed,
    // from a file of a few KB.
    let file = compressed_fan_out(4, 17);
    assert!(file.len() < 8192, "{}", file.len());
    let budget = 64 << 20;
    let opts = Options {
        max_uncompressed: budget,
        hash: Some(HashAlgo::Xxh3_128),
        ..Options::default()
    };
    let t = std::time::Instant::now();
    let r = scan(&file, &opts);
    assert!(
        matches!(r.stopped, Some(Limit::Uncompressed { limit, .. }) if limit == budget),
        "{:?}",
        r.stopped
    );
    assert!(r.decompressed <= 2 * budget, "{}", r.decompressed);
    assert!(t.elapsed().as_secs() < 30);
    // With the depth limit the same file fits.
    let r = scan(
        &file,
        &Options {
            max_depth: 4,
            ..opts
        },
    );
    assert!(r.stopped.is_none(), "{:?}", r.stopped);
    assert_eq!(r.images.len(), 4 + 16 + 64 + 256);
}

#[test]
fn the_default_budget_follows_the_file_size() {
    assert_eq!(default_max_uncompressed(0), 128 << 20);
    assert_eq!(default_max_uncompressed(5000), 128 << 20);
    assert_eq!(default_max_uncompressed(1 << 20), 1 << 30);
    assert_eq!(default_max_uncompressed(1 << 40), 16 << 30);
}

/// The fan-out shapes above, as seeds of the fuzz targets
/// (`fixtures/fuzz/scan/fanout-*`; `scripts/fuzz.sh` copies every fixture
/// into every corpus): written with `OFFLOAD_KIT_WRITE_SEEDS=1`, checked
/// against the generators otherwise, so they stay what they say.
#[test]
fn fan_out_seeds_are_committed() {
    let seeds: [(&str, Vec<u8>); 5] = [
        ("fanout-shared-k10-d9.bin", fan_out(10, 9)),
        ("fanout-shared-k4-d4.ccob", ccob(&fan_out(4, 4))),
        ("fanout-compressed-k4-d17.ob", compressed_fan_out(4, 17)),
        ("fanout-compressed-k8-d5.ob", compressed_fan_out(8, 5)),
        (
            "fanout-shared-in-ob.ob",
            offload_binary(&[("amdgcn-amd-amdhsa", "gfx90a", &fan_out(3, 5))]),
        ),
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fuzz/scan");
    for (name, bytes) in seeds {
        let path = dir.join(name);
        if std::env::var_os("OFFLOAD_KIT_WRITE_SEEDS").is_some() {
            std::fs::write(&path, &bytes).unwrap();
        }
        let committed = std::fs::read(&path).unwrap_or_default();
        assert!(committed == bytes, "{name} differs from its generator");
        // Each stays cheap to scan.
        let r = scan(&bytes, &Options::default());
        assert!(
            r.images.len() < 100_000 && r.decompressed < 1 << 30,
            "{name}"
        );
    }
}

#[test]
fn what_can_only_be_read_whole_is_bounded_in_memory() {
    // A compressed OffloadBinary whose image is a bundle (so it is read
    // whole, to walk the bundle) of more than MAX_WHOLE bytes.
    let mut image = shared_bundle(b"\x7fELF", 1);
    image.resize(usize_from(MAX_WHOLE) + 4096, 0);
    let spec = ImageSpec {
        image_kind: ImageKind::IMG_Object,
        offload_kind: OffloadKind::OFK_OpenMP,
        flags: 0,
        strings: vec![(b"arch".to_vec(), b"gfx90a".to_vec())],
        size: image.len() as u64,
    };
    let layout =
        crate::offload_binary::layout(&[spec], crate::offload_binary::Version::V3).unwrap();
    let mut plain = Vec::new();
    layout.write_to(&mut plain, &[&image[..]]).unwrap();
    drop(image);
    let file = compress(&plain, Compression::Zstd, 1).unwrap();
    drop(plain);
    let r = scan(&file, &Options::default());
    assert!(
        matches!(r.stopped, Some(Limit::Whole(n)) if n > MAX_WHOLE),
        "{:?}",
        r.stopped
    );
    assert!(r.damaged() && r.images.is_empty());
}

/// A compressed OffloadBinary whose stream is damaged past its header,
/// padded to 8 bytes: a candidate that sets a decoder up and fails at
/// once; and the size it declares inflated.
fn failing_candidate(how: Compression) -> (Vec<u8>, u64) {
    let spec = ImageSpec {
        image_kind: ImageKind::IMG_Object,
        offload_kind: OffloadKind::OFK_OpenMP,
        strings: vec![(b"arch".to_vec(), b"gfx90a".to_vec())],
        size: 64,
        ..ImageSpec::default()
    };
    let mut plain = Vec::new();
    crate::offload_binary::layout_v3(&[spec])
        .unwrap()
        .write_to(&mut plain, &[&[7u8; 64]])
        .unwrap();
    let mut c = compress(&plain, how, 6).unwrap();
    let n = c.len();
    c[n - 16..].fill(0xff);
    c.resize(c.len().next_multiple_of(8), 0);
    (c, plain.len() as u64)
}

#[test]
fn each_decoder_set_up_is_paid_from_the_budget() {
    // 16 MiB of failing candidates, inside a compressed binary of a few
    // KiB: ~130,000 decoders to set up. Each is charged DECODER_SETUP, so
    // the scan stops at the budget instead of setting them all up.
    for how in [Compression::Zlib, Compression::Zstd] {
        let (one, inflated) = failing_candidate(how);
        let blob: Vec<u8> = one.iter().copied().cycle().take(16 << 20).collect();
        let outer = compress(&offload_binary_of(&blob), Compression::Zstd, 19).unwrap();
        assert!(outer.len() < 64 << 10, "{}", outer.len());
        let opts = Options {
            max_uncompressed: 256 << 20,
            ..Options::default()
        };
        let r = scan(&outer, &opts);
        let Some(Limit::Uncompressed { declared, .. }) = r.stopped else {
            panic!("{how:?}: not stopped by the budget: {:?}", r.stopped);
        };
        // The limit names the candidate whose decoder could not be paid.
        assert_eq!(declared, inflated, "{how:?}");
        // A few legitimate compressed binaries stay well inside it.
        let r = scan(
            &compress(&offload_binary_of(&[9; 4096]), how, 6).unwrap(),
            &opts,
        );
        assert!(r.stopped.is_none() && r.images.len() == 1, "{how:?}: {r:?}");
    }
}

/// An uncompressed v3 OffloadBinary holding `image`.
fn offload_binary_of(image: &[u8]) -> Vec<u8> {
    let spec = ImageSpec {
        image_kind: ImageKind::IMG_Object,
        offload_kind: OffloadKind::OFK_OpenMP,
        size: image.len() as u64,
        ..ImageSpec::default()
    };
    let mut out = Vec::new();
    crate::offload_binary::layout_v3(&[spec])
        .unwrap()
        .write_to(&mut out, &[image])
        .unwrap();
    out
}

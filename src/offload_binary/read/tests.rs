//! Unit tests of the OffloadBinary reader: round trips of every version,
//! compressed binaries and bombs, overlaps, truncations and hostile counts.

use super::*;
use crate::offload_binary::kinds::{ImageKind, OffloadKind};
use crate::offload_binary::write::{Compression, ImageSpec, compress, layout};

fn specs() -> (Vec<ImageSpec>, Vec<Vec<u8>>) {
    let images: Vec<Vec<u8>> = vec![
        b"first image".to_vec(),
        vec![],
        (0..=255u8).cycle().take(5000).collect(),
    ];
    let specs = images
        .iter()
        .enumerate()
        .map(|(i, img)| ImageSpec {
            image_kind: ImageKind(u16::try_from(i).unwrap() + 1),
            offload_kind: OffloadKind::OFK_HIP,
            flags: u32::try_from(i).unwrap(),
            strings: vec![
                (b"triple".to_vec(), b"amdgcn-amd-amdhsa".to_vec()),
                (b"arch".to_vec(), format!("gfx9{i}").into_bytes()),
                (b"empty".to_vec(), Vec::new()),
            ],
            size: img.len() as u64,
        })
        .collect();
    (specs, images)
}

fn write(version: u32) -> Vec<u8> {
    let (specs, images) = specs();
    let refs: Vec<&[u8]> = images.iter().map(Vec::as_slice).collect();
    let mut out = Vec::new();
    layout(
        &specs,
        crate::offload_binary::Version::try_from(version).unwrap(),
    )
    .unwrap()
    .write_to(&mut out, &refs)
    .unwrap();
    out
}

fn check(images: &[OffloadImage<'_>], version: u32, compressed: bool) {
    let (specs, data) = specs();
    assert_eq!(images.len(), specs.len());
    for ((img, spec), bytes) in images.iter().zip(&specs).zip(&data) {
        assert_eq!(img.version, version);
        assert_eq!(img.compressed, compressed);
        assert_eq!(&*img.image, bytes.as_slice());
        assert_eq!(img.image_kind, spec.image_kind);
        assert_eq!(img.offload_kind, spec.offload_kind);
        assert_eq!(img.flags, spec.flags);
        let strings: Vec<(Vec<u8>, Vec<u8>)> = img
            .strings
            .iter()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(strings, spec.strings);
    }
}

#[test]
fn every_version_round_trips() {
    for v in [1, 2, 3] {
        let data = write(v);
        assert_eq!(data.len() % 8, 0);
        check(&read_all(&data, &Limits::default()).unwrap(), v, false);
    }
}

#[test]
fn compressed_v3_reads_with_zstd_and_zlib() {
    for how in [Compression::Zstd, Compression::Zlib] {
        let packed = compress(&write(3), how, 3).unwrap();
        assert!(packed.len() < write(3).len());
        // Two compressed binaries back to back: the padding is skipped.
        let mut two = packed.clone();
        two.extend_from_slice(&packed);
        let images = read_all(&two, &Limits::default()).unwrap();
        check(&images[..3], 3, true);
        check(&images[3..], 3, true);
    }
}

#[test]
fn compressed_v3_with_wrong_inflated_size_is_rejected() {
    let packed = compress(&write(3), Compression::Zstd, 3).unwrap();
    for delta in [-8i64, 8, 1 << 20] {
        let mut bad = packed.clone();
        let inflated = u64::from_le_bytes(bad[32..40].try_into().unwrap());
        bad[32..40].copy_from_slice(&inflated.wrapping_add_signed(delta).to_le_bytes());
        let e = read_all(&bad, &Limits::default()).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Decompress { .. }), "{e}");
    }
}

#[test]
fn bytes_after_the_compressed_stream_are_an_error_for_zlib_as_for_zstd() {
    for how in [Compression::Zstd, Compression::Zlib] {
        let packed = compress(&write(3), how, 3).unwrap();
        let stored = usize_from(u64::from_le_bytes(packed[8..16].try_into().unwrap()));
        let mut bad = packed[..stored].to_vec();
        bad.extend_from_slice(b"GARBAGE!");
        let size = len64(&bad);
        bad[8..16].copy_from_slice(&size.to_le_bytes());
        let e = read_all(&bad, &Limits::default()).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Decompress { .. }),
            "{how:?}: {e}"
        );
        if how == Compression::Zlib {
            assert!(e.to_string().contains("8 bytes after the end"), "{e}");
        }
    }
}

#[test]
fn inflating_past_the_limit_is_refused_before_decompressing() {
    let packed = compress(&write(3), Compression::Zstd, 3).unwrap();
    let e = read_all(&packed, &Limits::uncompressed(1000)).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::LimitExceeded { .. }), "{e}");
}

#[test]
fn a_small_bomb_is_stopped_at_its_declared_size() {
    // 64 MiB of zeros compresses to a few KiB; declaring a small inflated
    // size must stop decompression there, not after 64 MiB.
    let v3 = write(3);
    let body = vec![0u8; 64 << 20];
    let mut packed = v3[..40].to_vec();
    let z = zstd::bulk::compress(&body, 1).unwrap();
    packed[8..16].copy_from_slice(&(40 + z.len() as u64).to_le_bytes());
    packed[32..40].copy_from_slice(&(v3.len() as u64).to_le_bytes());
    packed.extend_from_slice(&z);
    packed.resize(packed.len().div_ceil(8) * 8, 0);
    let e = read_all(&packed, &Limits::default()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Decompress { .. }), "{e}");
}

#[test]
fn overlapping_images_in_one_binary_are_rejected() {
    let mut data = write(2);
    // Entry 2's image starts where entry 0's does.
    let e0_image = u64::from_le_bytes(data[32 + 24..32 + 32].try_into().unwrap());
    data[32 + 80 + 24..32 + 80 + 32].copy_from_slice(&e0_image.to_le_bytes());
    let e = read_all(&data, &Limits::default()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Overlap { .. }), "{e}");
}

#[test]
fn a_binary_of_100k_images_reads_in_linear_time() {
    // Each image was checked against every earlier one: 5e9 checks,
    // minutes even in a release build. Now each costs O(log n).
    let n = 100_000;
    let specs: Vec<ImageSpec> = (0..n)
        .map(|_| ImageSpec {
            size: 1,
            ..ImageSpec::default()
        })
        .collect();
    let bytes = vec![7u8; n];
    let refs: Vec<&[u8]> = bytes.chunks(1).collect();
    let mut out = Vec::new();
    layout(&specs, crate::offload_binary::Version::V2)
        .unwrap()
        .write_to(&mut out, &refs)
        .unwrap();
    let images = read_all(&out, &Limits::default()).unwrap();
    assert_eq!(images.len(), n);
    // Image 99,999 moved onto image 50,000: the overlap is still found.
    let entry = |i: usize| 32 + i * 40;
    let off = u64::from_le_bytes(
        out[entry(50_000) + 24..entry(50_000) + 32]
            .try_into()
            .unwrap(),
    );
    let last = entry(n - 1);
    out[last + 24..last + 32].copy_from_slice(&off.to_le_bytes());
    let e = read_all(&out, &Limits::default()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Overlap { .. }), "{e}");
}

#[test]
fn absurd_entry_count_is_rejected() {
    let mut data = write(2);
    data[24..32].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    assert!(read_all(&data, &Limits::default()).is_err());
}

#[test]
fn v2_value_past_the_end_is_rejected() {
    let mut data = write(2);
    // First string entry (after header and 3 entries): value size.
    let at = 32 + 3 * 40 + 16;
    data[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let e = read_all(&data, &Limits::default()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::OutOfBounds { .. }), "{e}");
}

#[test]
fn key_without_terminator_is_rejected() {
    let mut data = write(1);
    let size = usize_from(u64::from_le_bytes(data[8..16].try_into().unwrap()));
    // Point the first key at the last byte of the binary, then make it
    // non-zero: no NUL follows inside the binary.
    data[72..80].copy_from_slice(&(size as u64 - 1).to_le_bytes());
    data[size - 1] = b'x';
    let e = read_all(&data[..size], &Limits::default()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::OutOfBounds { .. }), "{e}");
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    for v in [1, 2, 3] {
        let data = write(v);
        let whole = read_all(&data, &Limits::default()).unwrap();
        let ends: Vec<usize> = whole
            .iter()
            .map(|i| usize_from(i.binary_offset + i.binary_size))
            .collect();
        for cut in 1..data.len() {
            // A cut on a binary boundary is a valid, shorter input.
            let r = read_all(&data[..cut], &Limits::default());
            assert_eq!(r.is_ok(), ends.contains(&cut), "version {v}, cut at {cut}");
        }
    }
}

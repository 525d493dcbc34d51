//! Unit tests of the fatbin reader and the wrappers: what `build` writes,
//! lying sizes, LZ4 and zstd entries, wrappers written and read back.

use super::*;

#[test]
fn reads_what_build_writes() {
    let fb = build(&[
        (KIND_ELF, 80, FLAG_64BIT | FLAG_CUDA | 0x10, b"\x7fELFcubin"),
        (KIND_PTX, 80, FLAG_64BIT | FLAG_CUDA, b".version 7.0\0"),
    ]);
    let f = read(&fb).unwrap();
    assert_eq!(f.size, fb.len() as u64);
    assert_eq!(f.entries.len(), 2);
    assert_eq!(f.entries[0].kind, KIND_ELF);
    assert_eq!(f.entries[0].arch_name(), "sm_80");
    assert_eq!(&f.entries[0].payload[..9], b"\x7fELFcubin");
    assert_eq!(f.entries[0].payload.len(), 16);
    assert_eq!(f.entries[1].payload_offset, 16 + 64 + 16 + 64);
    assert_eq!(f.entries[1].triple(), "nvptx64-nvidia-cuda");
    assert!(!f.entries[1].compressed());
}

#[test]
fn lying_sizes_are_errors() {
    let fb = build(&[(KIND_ELF, 52, 1, b"abcdefgh")]);
    // Container size past the end.
    let mut bad = fb.clone();
    bad[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(read(&bad).is_err());
    // Entry payload past the container.
    let mut bad = fb.clone();
    bad[16 + 8..16 + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(read(&bad).is_err());
    // Entry header size too small, or too large.
    let mut bad = fb.clone();
    bad[16 + 4..16 + 8].copy_from_slice(&8u32.to_le_bytes());
    assert!(read(&bad).is_err());
    let mut bad = fb.clone();
    bad[16 + 4..16 + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(read(&bad).is_err());
    // Every truncation.
    for cut in 0..fb.len() {
        assert!(read(&fb[..cut]).is_err(), "cut at {cut}");
    }
    // Wrong version.
    let mut bad = fb;
    bad[4] = 2;
    assert!(read(&bad).is_err());
}

/// `abcabcabcabcxyz` as an LZ4 block, written by hand: three literals
/// and a 9-byte match 3 back, then three literals.
const LZ4_HAND: &[u8] = &[0x35, b'a', b'b', b'c', 3, 0, 0x30, b'x', b'y', b'z'];
const LZ4_HAND_OUT: &[u8] = b"abcabcabcabcxyz";

fn lz4(data: &[u8], size: u64) -> Result<Vec<u8>> {
    decompress(Method::Lz4, data, size, u64::MAX)
}

#[test]
fn lz4_blocks_decode_to_the_declared_size() {
    assert_eq!(lz4(LZ4_HAND, 15).unwrap(), LZ4_HAND_OUT);
    // Literals only, and nothing at all.
    assert_eq!(lz4(&[0x20, b'h', b'i'], 2).unwrap(), b"hi");
    assert_eq!(lz4(&[0x00], 0).unwrap(), b"");
    // What an encoder writes decodes back, at every length.
    // The most compressible data stays within the 255-fold ceiling.
    let zeros = vec![0u8; 16 << 20];
    let c = lz4_flex::block::compress(&zeros);
    assert!(c.len() * 255 >= zeros.len() && c.len() * 250 < zeros.len());
    assert!(lz4(&c, zeros.len() as u64).unwrap() == zeros);
    for n in [0usize, 1, 5, 64, 1000, 70_000] {
        let data: Vec<u8> = (0..n)
            .map(|i| u8::try_from(i * 7 % 251).unwrap() ^ u8::try_from(i / 300 % 256).unwrap())
            .collect();
        let c = lz4_flex::block::compress(&data);
        assert_eq!(lz4(&c, n as u64).unwrap(), data, "{n} bytes");
    }
}

#[test]
fn corrupt_or_lying_lz4_is_an_error() {
    let err = |data: &[u8], size: u64| lz4(data, size).unwrap_err().to_string();
    // A size larger or smaller than the data decodes to.
    assert!(
        err(LZ4_HAND, 16).contains("decodes to 15 bytes"),
        "{}",
        err(LZ4_HAND, 16)
    );
    assert!(
        err(LZ4_HAND, 14).contains("more than the 14 bytes"),
        "{}",
        err(LZ4_HAND, 14)
    );
    // A size no LZ4 data that short can hold: refused before decoding.
    let e = err(LZ4_HAND, 1 << 40);
    assert!(e.contains("cannot hold"), "{e}");
    // Over the caller's limit.
    let e = decompress(Method::Lz4, LZ4_HAND, 15, 14).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::LimitExceeded { .. }), "{e}");
    // Offset 0, an offset before the start, literals past the end.
    assert!(lz4(&[0x10, b'a', 0, 0], 5).is_err());
    assert!(lz4(&[0x10, b'a', 2, 0], 5).is_err());
    assert!(lz4(&[0x50, b'a'], 5).is_err());
    // Every truncation, and every byte changed: an error or the right
    // size, never a panic.
    for cut in 0..LZ4_HAND.len() {
        assert!(lz4(&LZ4_HAND[..cut], 15).is_err(), "cut at {cut}");
    }
    let data: Vec<u8> = (0..3000u32).map(|i| (i % 13) as u8).collect();
    let c = lz4_flex::block::compress(&data);
    for i in 0..c.len() {
        for flip in [0x01, 0x80, 0xFF] {
            let mut bad = c.clone();
            bad[i] ^= flip;
            if let Ok(d) = lz4(&bad, 3000) {
                assert_eq!(d.len(), 3000);
            }
        }
    }
}

#[test]
fn zstd_frames_decode_to_the_declared_size() {
    let data: Vec<u8> = (0..5000u32).map(|i| (i % 97) as u8).collect();
    let z = zstd::bulk::compress(&data, 3).unwrap();
    let dec = |d: &[u8], size: u64| decompress(Method::Zstd, d, size, u64::MAX);
    assert_eq!(dec(&z, 5000).unwrap(), data);
    let e = dec(&z, 5001).unwrap_err().to_string();
    assert!(e.contains("decodes to 5000 bytes"), "{e}");
    let e = dec(&z, 4999).unwrap_err().to_string();
    assert!(e.contains("more than the 4999 bytes"), "{e}");
    for cut in 0..z.len() {
        assert!(dec(&z[..cut], 5000).is_err(), "cut at {cut}");
    }
    let mut bad = z.clone();
    bad[0] ^= 0xFF;
    assert!(dec(&bad, 5000).is_err());
    // A bomb declared small stops there.
    let bomb = zstd::bulk::compress(&vec![0u8; 32 << 20], 1).unwrap();
    assert!(dec(&bomb, 100).is_err());
    let e = decompress(Method::Zstd, &bomb, 32 << 20, 1 << 20).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::LimitExceeded { .. }), "{e}");
}

#[test]
fn compressed_entries_read_and_decompress() {
    let cubin: Vec<u8> = b"\x7fELF"
        .iter()
        .copied()
        .chain((0..900u32).map(|i| (i % 31) as u8))
        .collect();
    let ptx = b".version 8.0\n.target sm_80\n.target sm_80\n\0";
    let lz = lz4_flex::block::compress(&cubin);
    let zs = zstd::bulk::compress(ptx, 3).unwrap();
    let fb = build_compressed(&[
        (KIND_ELF, 80, 0x11 | FLAG_LZ4, &lz, cubin.len() as u64),
        (KIND_PTX, 80, 0x11 | FLAG_ZSTD, &zs, ptx.len() as u64),
        (KIND_ELF, 90, 0x11, b"\x7fELFplain", 0),
    ]);
    let f = read(&fb).unwrap();
    let [a, b, c] = &f.entries[..] else {
        panic!("three entries")
    };
    assert_eq!(
        (a.compression(), b.compression(), c.compression()),
        (Some("lz4"), Some("zstd"), None)
    );
    // The payload is the compressed bytes, without the padding.
    assert_eq!(a.payload, &lz[..]);
    assert_eq!(a.decompressed_size, Some(cubin.len() as u64));
    assert_eq!(a.contents(u64::MAX).unwrap().as_ref(), &cubin[..]);
    assert_eq!(b.contents(u64::MAX).unwrap().as_ref(), &ptx[..]);
    // An entry that is not compressed is borrowed as it is.
    assert!(matches!(c.contents(0).unwrap(), Cow::Borrowed(_)));
    assert!(a.contents(10).is_err());
}

#[test]
fn wrappers() {
    let mut seg = Vec::new();
    for (magic, ptr) in [(WRAPPER_HIP, 0x3000u64), (WRAPPER_CUDA, 0x4000)] {
        seg.extend_from_slice(&magic.to_le_bytes());
        seg.extend_from_slice(&1u32.to_le_bytes());
        seg.extend_from_slice(&ptr.to_le_bytes());
        seg.extend_from_slice(&0u64.to_le_bytes());
    }
    let w = read_wrappers(&seg, true).unwrap();
    assert_eq!(w.len(), 2);
    assert_eq!(w[0].1.flavor(), "hip");
    assert_eq!(w[1].0, 24);
    assert_eq!(w[1].1.data, 0x4000);
    seg[24] ^= 0xFF;
    assert!(read_wrappers(&seg, true).is_err());
    assert!(read_wrappers(&seg[..30], true).is_err());
}

#[test]
fn write_wrapper_reads_back() {
    let le = write_wrapper(WRAPPER_CUDA, 1, false);
    let w = read_wrappers(&le, true).unwrap();
    assert_eq!(w[0].1.magic, WRAPPER_CUDA);
    assert_eq!(w[0].1.version, 1);
    assert_eq!(w[0].1.data, 0);
    let be = write_wrapper(WRAPPER_HIP, 1, true);
    assert_eq!(&be[..8], &[0x48, 0x49, 0x50, 0x46, 0, 0, 0, 1]);
}

/// A cubin of ELF ABI 8 for SM `sm`, whose `.nv.compat` record 9 holds
/// `arch_specific` (`e_flags` as `ptxas` 13 writes them: the same for
/// `sm_90` and `sm_90a`).
fn abi8_cubin(sm: u32, arch_specific: u8) -> Vec<u8> {
    use crate::kernels::tests::{cubin, sec};
    let compat = vec![
        2,
        9,
        arch_specific,
        0,
        2,
        2,
        1,
        0,
        4,
        11,
        8,
        0,
        9,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ];
    cubin(
        8,
        0x0600_0004 | (sm << 8),
        &[sec(".nv.compat", 0, compat)],
        &[],
    )
}

/// Names as `cuobjdump` 13 gives them: PTX by the entry's flags, a cubin
/// by its own marks when it is stored as it is, else by the flags; a
/// family cubin as the plain one, its variant kept.
#[test]
fn arch_specific_and_family_entries() {
    let flags = FLAG_64BIT | FLAG_CUDA | 0x10;
    let (a, f) = (FLAG_ARCH_SPECIFIC, FLAG_FAMILY);
    let (c90a, c90, c100) = (abi8_cubin(90, 1), abi8_cubin(90, 0), abi8_cubin(100, 0));
    let fb = build(&[
        (KIND_PTX, 90, flags | a, b".target sm_90a\0"),
        (KIND_PTX, 100, flags | f, b".target sm_100f\0"),
        (KIND_PTX, 90, flags | a | f, b"x\0"),
        (KIND_PTX, 90, flags, b".target sm_90a\0"),
        (KIND_ELF, 90, flags, &c90a),
        (KIND_ELF, 90, flags | a, &c90),
        (KIND_ELF, 100, flags | f, &c100),
        (KIND_ELF, 90, flags | a, b"\x7fELF, but no cubin"),
        (KIND_ELF, 120, flags | a | FLAG_ZSTD, b"compressed"),
        (KIND_ELF, 120, flags | f | FLAG_ZSTD, b"compressed"),
        (KIND_ELF, 80, flags, &c90),
    ]);
    let f = read(&fb).unwrap();
    let names: Vec<(String, String, Variant)> = f
        .entries
        .iter()
        .map(|e| (e.arch_name(), e.code_arch(), e.variant))
        .collect();
    let want = [
        ("sm_90a", "sm_90a", Variant::ArchSpecific),
        ("sm_100f", "sm_100f", Variant::Family),
        ("sm_90a", "sm_90a", Variant::ArchSpecific),
        ("sm_90", "sm_90", Variant::Plain),
        ("sm_90a", "sm_90a", Variant::ArchSpecific),
        ("sm_90", "sm_90", Variant::Plain),
        ("sm_100", "sm_100f", Variant::Family),
        ("sm_90a", "sm_90a", Variant::ArchSpecific),
        ("sm_120a", "sm_120a", Variant::ArchSpecific),
        ("sm_120", "sm_120f", Variant::Family),
        ("sm_80", "sm_80", Variant::Plain),
    ]
    .map(|(n, c, v)| (n.to_string(), c.to_string(), v));
    assert_eq!(names, want);
}

/// A cubin is read wherever its bytes start (`object` reads unaligned
/// headers).
#[test]
fn cubins_read_at_any_alignment() {
    let c = abi8_cubin(100, 1);
    let want = cubin::Target {
        sm: 100,
        arch_specific: true,
    };
    for shift in 0..8 {
        let mut v = vec![0u8; shift];
        v.extend_from_slice(&c);
        assert_eq!(cubin::read(&v[shift..]), Some(want), "shift {shift}");
    }
}

/// A PTX entry laid out as `fatbinary --ident=myid --cmdline='-O2 -v'`
/// writes it: an 88-byte header whose name sits at 64 and whose options
/// pointer (offset 20: 72) holds the text's offset (80) and length (6).
fn entry_with_options(options_field: u32, text_at: u32, text_len: u32) -> Vec<u8> {
    let payload = b".version 8.0\n\0\0\0";
    let mut e = Vec::new();
    e.extend_from_slice(&(KIND_PTX).to_le_bytes());
    e.extend_from_slice(&0x0101u16.to_le_bytes());
    e.extend_from_slice(&88u32.to_le_bytes());
    e.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    e.extend_from_slice(&0u32.to_le_bytes()); // compressed size
    e.extend_from_slice(&options_field.to_le_bytes());
    e.extend_from_slice(&[0, 0, 8, 0]); // version 8.0
    e.extend_from_slice(&80u32.to_le_bytes());
    e.extend_from_slice(&64u32.to_le_bytes()); // name offset
    e.extend_from_slice(&4u32.to_le_bytes()); // name length
    e.extend_from_slice(&(FLAG_64BIT | 0x10).to_le_bytes());
    e.extend_from_slice(&[0; 16]);
    e.extend_from_slice(b"myid\0\0\0\0");
    e.extend_from_slice(&text_at.to_le_bytes());
    e.extend_from_slice(&text_len.to_le_bytes());
    e.extend_from_slice(b"-O2 -v\0\0");
    assert_eq!(e.len(), 88);
    e.extend_from_slice(payload);
    let mut fb = MAGIC.to_vec();
    fb.extend_from_slice(&1u16.to_le_bytes());
    fb.extend_from_slice(&16u16.to_le_bytes());
    fb.extend_from_slice(&(e.len() as u64).to_le_bytes());
    fb.extend_from_slice(&e);
    fb
}

#[test]
fn entry_options_are_read_where_the_header_points() {
    let fb = entry_with_options(72, 80, 6);
    let f = read(&fb).unwrap();
    let e = &f.entries[0];
    assert_eq!(e.name, Some(&b"myid"[..]));
    assert_eq!(e.options, Some(&b"-O2 -v"[..]));
    // Up to the first NUL; an empty text is no options, but recorded.
    assert_eq!(
        read(&entry_with_options(72, 80, 8)).unwrap().entries[0].options,
        Some(&b"-O2 -v"[..])
    );
    assert_eq!(
        read(&entry_with_options(72, 86, 0)).unwrap().entries[0].options,
        Some(&b""[..])
    );
    // No pointer, a pointer into the fixed header, or a text that runs
    // out of the entry (or overflows): none, and the entry still reads.
    for (field, at, len) in [
        (0, 80, 6),
        (8, 80, 6),
        (72, 8, 6),
        (72, 80, 1000),
        (72, u32::MAX, 6),
        (72, 80, u32::MAX),
        (u32::MAX, 80, 6),
    ] {
        let fb = entry_with_options(field, at, len);
        let f = read(&fb).unwrap();
        assert_eq!(f.entries[0].options, None, "{field} {at} {len}");
        assert_eq!(f.entries[0].name, Some(&b"myid"[..]));
    }
}

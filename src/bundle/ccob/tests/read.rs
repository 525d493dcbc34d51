//! Reading CCOBs: truncation, lying sizes, trailing bytes, hashes, v1,
//! concatenated CCOBs, bombs, frames and corrupt payloads.

use super::*;
use crate::num::len64;

#[test]
fn every_truncation_is_an_error() {
    let u = llvm_bundle();
    let mut inputs = vec![llvm_v3(), llvm_v2()];
    inputs.push(compress_to_vec(&u, &zlib_opts(3)).unwrap().0);
    inputs.push(compress_to_vec(&u, &zlib_opts(2)).unwrap().0);
    for c in &inputs {
        for cut in 0..c.len() {
            let part = &c[..cut];
            assert!(
                decompress(part, &ReadOptions::default()).is_err(),
                "cut {cut}"
            );
            assert!(decompress_all(part, &ReadOptions::default()).is_err() || cut == 0);
            let f = fault_of(decompress(part, &ReadOptions::default()));
            let hsize = usize::from(c[4] == 3) * 8 + 24;
            if (4..hsize).contains(&cut) {
                assert!(matches!(f, Fault::TruncatedHeader { .. }), "{f:?}");
                assert_eq!(f.llvm_message(), "Compressed bundle header size too small");
            } else if cut >= hsize {
                assert!(matches!(f, Fault::TotalSizePastEnd { .. }), "{f:?}");
            }
        }
    }
}

#[test]
fn unknown_versions_and_methods() {
    for v in [0u16, 4, 5, 255, 65535] {
        let mut c = llvm_v3();
        c[4..6].copy_from_slice(&v.to_le_bytes());
        let f = fault_of(decompress(&c, &ReadOptions::default()));
        assert_eq!(f, Fault::UnknownVersion(v));
        assert_eq!(f.llvm_message(), "Compressed bundle header size too small");
    }
    let mut c = llvm_v3();
    c[6] = 2;
    let f = fault_of(decompress(&c, &ReadOptions::default()));
    assert_eq!(f, Fault::UnknownMethod(2));
    assert_eq!(f.llvm_message(), "Unknown compressing method");
    assert_eq!(
        fault_of(Header::parse(b"BOCC\x03\0\x01\0")),
        Fault::NotCompressed
    );
    assert!(!llvm_treats_as_compressed(b"CCOB\x03\0\x01"));
    assert!(llvm_treats_as_compressed(b"CCOB\x03\0\x01\0"));
}

#[test]
fn lying_uncompressed_sizes() {
    let u = llvm_bundle();
    let n = u.len() as u64;
    for base in [llvm_v3(), compress_to_vec(&u, &zlib_opts(2)).unwrap().0] {
        let zlib = base[6] == 0;
        // Too large: LLVM accepts and truncates; a corrupt file here.
        let mut c = base.clone();
        set_uncompressed(&mut c, n + 1);
        assert_eq!(
            fault_of(decompress(&c, &ReadOptions::default())),
            Fault::SizeMismatch {
                declared: n + 1,
                actual: n
            }
        );
        // Too small: LLVM's error.
        for small in [n - 1, 0] {
            let mut c = base.clone();
            set_uncompressed(&mut c, small);
            let f = fault_of(decompress(&c, &ReadOptions::default()));
            let want = match (zlib, small) {
                (false, _) => "Destination buffer is too small",
                (true, 0) => "zlib error: Z_DATA_ERROR",
                (true, _) => "zlib error: Z_BUF_ERROR",
            };
            assert_eq!(
                f.llvm_message(),
                format!("Could not decompress embedded file contents: {want}"),
                "{f}"
            );
        }
    }
}

#[test]
fn lying_total_sizes() {
    let c0 = llvm_v3();
    let len = c0.len() as u64;
    let mut c = c0.clone();
    set_total(&mut c, len + 1);
    assert_eq!(
        fault_of(decompress(&c, &ReadOptions::default())),
        Fault::TotalSizePastEnd {
            total: len + 1,
            available: len
        }
    );
    for small in [0, 31] {
        let mut c = c0.clone();
        set_total(&mut c, small);
        assert_eq!(
            fault_of(Ccob::parse(&c)),
            Fault::TotalSizeTooSmall {
                total: small,
                header: 32
            }
        );
    }
    // One byte short: the frame is cut (zstd's message), and in a single
    // file the last byte is left over.
    let mut c = c0.clone();
    set_total(&mut c, len - 1);
    let f = fault_of(decompress(&c, &ReadOptions::default()));
    assert_eq!(
        f,
        Fault::TrailingBytes {
            method: Method::ZSTD,
            at: len - 1,
            count: 1
        }
    );
    let f = fault_of(Ccob::parse(&c).unwrap().decompress(&ReadOptions::default()));
    assert_eq!(
        f.llvm_message(),
        "Could not decompress embedded file contents: Src size is incorrect"
    );
    // Exactly the header: nothing to decompress.
    let mut c = c0[..32].to_vec();
    set_total(&mut c, 32);
    assert!(matches!(
        fault_of(decompress(&c, &ReadOptions::default())),
        Fault::ImpossibleSize { .. }
    ));
}

#[test]
fn trailing_bytes() {
    let mut c = llvm_v3();
    c.push(0);
    assert_eq!(
        fault_of(decompress(&c, &ReadOptions::default())),
        Fault::TrailingBytes {
            method: Method::ZSTD,
            at: 178,
            count: 1
        }
    );
    // Zero padding after the last CCOB is fine when reading them all.
    assert_eq!(
        decompress_all(&c, &ReadOptions::default()).unwrap().len(),
        1
    );
    // Junk after a zlib stream but inside the total size: zlib (and so
    // LLVM) ignores it; it is an error here.
    let (mut z, _) = compress_to_vec(&llvm_bundle(), &zlib_opts(3)).unwrap();
    z.extend(b"junk");
    let total = z.len() as u64;
    set_total(&mut z, total);
    assert_eq!(
        fault_of(decompress(&z, &ReadOptions::default())),
        Fault::TrailingBytes {
            method: Method::ZLIB,
            at: total - 32 - 4,
            count: 4
        }
    );
}

#[test]
fn hash_policies() {
    let mut c = llvm_v3();
    c[24] ^= 0xff;
    let stored = u64::from_le_bytes(c[24..32].try_into().unwrap());
    assert_eq!(
        fault_of(decompress(&c, &ReadOptions::default())),
        Fault::HashMismatch {
            stored,
            computed: 0xb327_753c_1dff_9eb8
        }
    );
    let d = decompress(&c, &opts(HashCheck::Report)).unwrap();
    assert_eq!(d.hash_matches(), Some(false));
    assert_eq!(d.header.hash, 0xb327_753c_1dff_9e47);
    assert_eq!(d.computed_hash, Some(0xb327_753c_1dff_9eb8));
    let d = decompress(&c, &opts(HashCheck::Skip)).unwrap();
    assert_eq!(d.computed_hash, None);
    assert_eq!(d.hash_matches(), None);
    assert_ne!(truncated_md5(&d.data), d.header.hash);
}

/// A hand-made v1 CCOB around `data`.
fn v1(data: &[u8], method: Method) -> Vec<u8> {
    let o = CompressOptions {
        method,
        level: method.default_level(),
        ..CompressOptions::default()
    };
    let (c3, r) = compress_to_vec(data, &o).unwrap();
    let h = Header {
        version: 1,
        total_size: None,
        ..r.header
    };
    let mut c = h.to_bytes().unwrap();
    c.extend(&c3[32..]);
    c
}

#[test]
fn reads_v1() {
    let u = llvm_bundle();
    for m in [Method::ZSTD, Method::ZLIB] {
        let c = v1(&u, m);
        let d = decompress(&c, &ReadOptions::default()).unwrap();
        assert_eq!(d.data, u);
        assert_eq!(d.header.total_size, None);
        assert_eq!(d.header.version, 1);
        assert_eq!(d.header.method, m);
    }
}

#[test]
fn back_to_back() {
    // Random bytes are stored verbatim by zstd, so "CCOB" written into
    // them shows up inside the compressed data.
    let mut tricky = noise(11, 5000);
    for at in [100, 2000, 4000] {
        tricky[at..at + 4].copy_from_slice(b"CCOB");
    }
    let a = text(1, 70_000);
    let b = text(2, 1234);
    let v1_data = text(4, 999);
    let mut all = Vec::new();
    let mut offsets = Vec::new();
    let parts: Vec<Vec<u8>> = vec![
        compress_to_vec(&a, &CompressOptions::default()).unwrap().0,
        compress_to_vec(&b, &zlib_opts(2)).unwrap().0,
        compress_to_vec(&tricky, &CompressOptions::default())
            .unwrap()
            .0,
        v1(&v1_data, Method::ZSTD),
        compress_to_vec(&a, &v3(2)).unwrap().0,
    ];
    assert!(memchr::memmem::find(&parts[2][32..], b"CCOB").is_some());
    for (i, p) in parts.iter().enumerate() {
        offsets.push(all.len() as u64);
        all.extend(p);
        if i == 1 {
            // Section alignment between two of them.
            all.resize(all.len().next_multiple_of(4096), 0);
        }
    }
    all.extend([0; 7]);
    let got = decompress_all(&all, &ReadOptions::default()).unwrap();
    let want = [&a, &b, &tricky, &v1_data, &a];
    assert_eq!(got.len(), want.len());
    for ((g, w), off) in got.iter().zip(want).zip(&offsets) {
        assert_eq!(&g.data, w);
        assert_eq!(g.offset, *off);
    }
    // A v1 zlib CCOB has no end but the data's: it must come last.
    let mut tail = all.clone();
    tail.extend(v1(&b, Method::ZLIB));
    assert_eq!(
        decompress_all(&tail, &ReadOptions::default())
            .unwrap()
            .len(),
        6
    );
    // Junk between them is an error that says where.
    let mut junk = parts[0].clone();
    junk.extend(b"\0\0junk");
    let e = decompress_all(&junk, &ReadOptions::default()).unwrap_err();
    assert!(matches!(
        e.kind(),
        ErrorKind::Ccob {
            fault: Fault::NotCompressed,
            offset
        } if *offset == parts[0].len() as u64 + 2
    ));
    // The sum of the sizes is bounded too.
    let small = ReadOptions {
        limits: crate::Limits::uncompressed(100_000),
        ..ReadOptions::default()
    };
    // 70 000 + 1234 + 5000 + 999 read, then 70 000 more: 147 233.
    assert_eq!(
        fault_of(decompress_all(&all, &small)),
        Fault::TooLarge {
            declared: 147_233,
            limit: 100_000
        }
    );
    assert!(
        decompress_all(&[], &ReadOptions::default())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn bombs_are_refused_before_allocating() {
    let mut c = llvm_v3();
    set_uncompressed(&mut c, 1 << 40);
    assert_eq!(
        fault_of(decompress(&c, &ReadOptions::default())),
        Fault::TooLarge {
            declared: 1 << 40,
            limit: 16 << 30
        }
    );
    set_uncompressed(&mut c, 1 << 30);
    assert_eq!(
        fault_of(decompress(&c, &ReadOptions::default())),
        Fault::ImpossibleSize {
            declared: 1 << 30,
            compressed: 146,
            method: Method::ZSTD
        }
    );
    // Within every bound, but the data is smaller than declared.
    set_uncompressed(&mut c, 1 << 20);
    assert!(matches!(
        fault_of(decompress(&c, &ReadOptions::default())),
        Fault::SizeMismatch { .. } | Fault::Decompress { .. }
    ));
}

#[test]
fn inflating_past_the_declared_size_stops_there() {
    // A frame without a content size, so zstd cannot tell up front.
    let data = text(9, 100_000);
    let mut cctx = zstd_safe::CCtx::create();
    cctx.set_parameter(zstd_safe::CParameter::ContentSizeFlag(false))
        .unwrap();
    let mut frame = Vec::with_capacity(200_000);
    cctx.compress2(&mut frame, &data).unwrap();
    let declared = 50_000u64;
    let c = zstd_ccob(&frame, declared, truncated_md5(&data));
    let f = fault_of(decompress(&c, &ReadOptions::default()));
    assert_eq!(
        f.llvm_message(),
        "Could not decompress embedded file contents: Destination buffer is too small"
    );
    // zlib: a stream of 100 000 bytes declared as 50 000.
    let (mut z, _) = compress_to_vec(&data, &zlib_opts(3)).unwrap();
    set_uncompressed(&mut z, declared);
    let f = fault_of(decompress(&z, &ReadOptions::default()));
    assert_eq!(
        f.llvm_message(),
        "Could not decompress embedded file contents: zlib error: Z_BUF_ERROR"
    );
    assert!(f.to_string().contains("more than the 50000 bytes"), "{f}");
}

#[test]
fn hashing_while_decoding_spans_many_chunks() {
    // 20 MiB: three 8 MiB chunks go through the hashing thread.
    let data: Vec<u8> = (0..20u32 << 20)
        .map(|i| (i % 251).to_le_bytes()[0] ^ (i >> 13).to_le_bytes()[0])
        .collect();
    let (packed, _) = compress_to_vec(&data, &CompressOptions::default()).unwrap();
    let d = decompress(&packed, &ReadOptions::default()).unwrap();
    assert_eq!(d.data, data);
    assert_eq!(d.hash_matches(), Some(true));
    // A wrong stored hash is caught on this path too.
    let mut bad = packed.clone();
    bad[24] ^= 1;
    assert!(decompress(&bad, &ReadOptions::default()).is_err());
    // A truncated payload gives the same error with and without hashing.
    let cut = &packed[..packed.len() - 100];
    let skip = ReadOptions {
        hash: HashCheck::Skip,
        ..ReadOptions::default()
    };
    let (a, b) = (
        decompress(cut, &ReadOptions::default()),
        decompress(cut, &skip),
    );
    assert_eq!(a.unwrap_err().to_string(), b.unwrap_err().to_string());
}

#[test]
fn multi_frame_payloads() {
    // Frames back to back, as our worker threads write them, decode on
    // the hashing path (`Some`) exactly when they fill the declared
    // size and end with the payload.
    let data: Vec<u8> = (0..20u32 << 20)
        .map(|i| (i % 253).to_le_bytes()[0] ^ (i >> 11).to_le_bytes()[0])
        .collect();
    let frame = |part: &[u8]| zstd::bulk::compress(part, 3).unwrap();
    let cuts = [0, 5 << 20, (5 << 20) + 1, 13 << 20, 20 << 20];
    let mut payload = Vec::new();
    for w in cuts.windows(2) {
        payload.extend(frame(&data[w[0]..w[1]]));
    }
    let n = data.len() as u64;
    let (out, hash) = inflate_zstd_hashing(&payload, n).unwrap();
    assert!(out == data && hash == truncated_md5(&data));
    // An empty frame after the data, or a skippable one, changes nothing.
    let mut more = payload.clone();
    more.extend(frame(&[]));
    more.extend([0x50, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 9, 9]);
    assert!(inflate_zstd_hashing(&more, n).is_some());
    // Declared too small or too large by one byte.
    assert!(inflate_zstd_hashing(&payload, n - 1).is_none());
    assert!(inflate_zstd_hashing(&payload, n + 1).is_none());
    // A frame with data after the declared size is filled.
    let mut extra = payload.clone();
    extra.extend(frame(b"x"));
    assert!(inflate_zstd_hashing(&extra, n).is_none());
    // Cut inside the last frame, or junk after it.
    assert!(inflate_zstd_hashing(&payload[..payload.len() - 1], n).is_none());
    let mut junk = payload.clone();
    junk.push(0);
    assert!(inflate_zstd_hashing(&junk, n).is_none());
    // The public reader agrees with LLVM's one-shot call on all of them.
    let ccob = |payload: &[u8], declared: u64| zstd_ccob(payload, declared, truncated_md5(&data));
    assert_eq!(
        decompress(&ccob(&more, n), &ReadOptions::default())
            .unwrap()
            .data,
        data
    );
    for (p, d) in [(&extra, n), (&junk, n), (&payload, n + 1)] {
        let c = ccob(p, d);
        let skip = ReadOptions {
            hash: HashCheck::Skip,
            ..ReadOptions::default()
        };
        let (a, b) = (
            decompress(&c, &ReadOptions::default()),
            decompress(&c, &skip),
        );
        assert_eq!(a.unwrap_err().to_string(), b.unwrap_err().to_string());
    }
}

#[test]
fn empty_payloads() {
    // LLVM decompresses an empty zstd payload to nothing; so do we when
    // the header agrees.
    let mut c = Header {
        version: 3,
        method: Method::ZSTD,
        total_size: Some(32),
        uncompressed_size: 0,
        hash: truncated_md5(b""),
    }
    .to_bytes()
    .unwrap();
    let d = decompress(&c, &ReadOptions::default()).unwrap();
    assert!(d.data.is_empty());
    assert_eq!(d.compressed_size, 0);
    assert_eq!(d.computed_hash, Some(truncated_md5(b"")));
    c[6] = 0;
    let f = fault_of(decompress(&c, &ReadOptions::default()));
    assert_eq!(
        f.llvm_message(),
        "Could not decompress embedded file contents: zlib error: Z_DATA_ERROR"
    );
}

/// A zstd frame whose one block holds a sequence but no literals, its
/// header saying it holds 0 bytes: libzstd 1.5.4 given it with an
/// output buffer of capacity 0 writes through the (dangling) pointer.
const SEQUENCE_WITHOUT_LITERALS: [u8; 15] = [
    0x28, 0xB5, 0x2F, 0xFD, // magic
    0x20, 0x00, // single segment, content size 0
    0x35, 0x00, 0x00, // last block, compressed, 6 bytes
    0x00, // raw literals, 0 of them
    0x01, 0x00, 0x00, 0x00, 0x02, // 1 sequence, predefined tables
];

#[test]
fn a_declared_size_of_zero_never_hands_zstd_an_empty_buffer() {
    let mut samples = Vec::new();
    for version in [1u16, 2, 3] {
        let total = (version > 1).then_some(0);
        let h = Header {
            version,
            method: Method::ZSTD,
            total_size: total,
            uncompressed_size: 0,
            hash: 0,
        };
        let mut c = h.to_bytes().unwrap();
        for _ in 0..2 {
            // The frame once, then twice.
            c.extend(SEQUENCE_WITHOUT_LITERALS);
            if version > 1 {
                let n = len64(&c);
                set_total(&mut c, n);
            }
            samples.push(c.clone());
        }
    }
    for c in &samples {
        for hash in [HashCheck::Enforce, HashCheck::Report, HashCheck::Skip] {
            // Before the fix, the process died with SIGSEGV here.
            assert!(decompress(c, &opts(hash)).is_err());
            assert!(decompress_all(c, &opts(hash)).is_err());
        }
    }
    let f = fault_of(decompress(&samples[0], &opts(HashCheck::Enforce)));
    assert_eq!(
        f.llvm_message(),
        "Could not decompress embedded file contents: Destination buffer is too small"
    );
    // A declared size that is filled exactly, then more sequences: the
    // hashing decoder's tail check gets a 1-byte buffer too.
    let u = b"abcabcabcabcabcabc".to_vec();
    let (mut c, _) = compress_to_vec(&u, &CompressOptions::default()).unwrap();
    c.extend(SEQUENCE_WITHOUT_LITERALS);
    let n = len64(&c);
    set_total(&mut c, n);
    for hash in [HashCheck::Enforce, HashCheck::Report, HashCheck::Skip] {
        assert!(decompress(&c, &opts(hash)).is_err());
    }
}

#[test]
fn corrupt_payloads_fail_cleanly() {
    for base in [
        llvm_v3(),
        compress_to_vec(&llvm_bundle(), &zlib_opts(3)).unwrap().0,
    ] {
        for i in 32..base.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut c = base.clone();
                c[i] ^= flip;
                // Mostly errors; never a panic, never more than declared.
                if let Ok(d) = decompress(&c, &opts(HashCheck::Report)) {
                    assert_eq!(d.data.len() as u64, d.header.uncompressed_size);
                }
            }
        }
    }
}

#[test]
fn fuzz_body_on_samples() {
    let u = llvm_bundle();
    let mut samples = vec![
        llvm_v3(),
        llvm_v2(),
        v1(&u, Method::ZSTD),
        v1(&u, Method::ZLIB),
    ];
    samples.push(compress_to_vec(&u, &zlib_opts(3)).unwrap().0);
    let joined = samples.concat();
    samples.push(joined);
    for s in &samples {
        for cut in 0..=s.len() {
            crate::fuzz::ccob_read(&s[..cut]);
        }
        for i in 0..s.len().min(64) {
            let mut c = s.clone();
            c[i] ^= 0x5a;
            crate::fuzz::ccob_read(&c);
        }
        // Damage inside the compressed data too (where streaming and
        // whole-buffer decoding must fail alike).
        for i in (64..s.len()).step_by(3) {
            for bit in [0x01, 0x80] {
                let mut c = s.clone();
                c[i] ^= bit;
                crate::fuzz::ccob_read(&c);
            }
        }
    }
}

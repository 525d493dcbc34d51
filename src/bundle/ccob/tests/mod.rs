//! Tests of the CCOB reader and writer: shared samples and helpers and
//! writing here; reading (faults, limits, frames) in `read.rs`. The verbose
//! report texts and the environment variables are the bundler job's
//! (`src/tools/bundler/job/`), writing to files is
//! `src/tools/bundler/compressed.rs`'s.

use std::fmt;
use std::io::{self, Write};

use zstd::zstd_safe;

use super::Fault;
use super::header::*;
use super::raw::*;
use super::read::*;
use super::stream::*;
use super::write::*;
use super::*;
use crate::error::{Error, ErrorKind, Result};

/// The uncompressed bundle `clang-offload-bundler` 22 makes from
/// `h.bc` = `host` and `d.bc` = 6 × `kernel void f() {}\n` with
/// `-type=bc -targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx90a`.
fn llvm_bundle() -> Vec<u8> {
    let mut b = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    b.extend(2u64.to_le_bytes());
    for (off, size, id) in [
        (0x8bu64, 4u64, &b"host-x86_64-unknown-linux-gnu-"[..]),
        (0x8f, 0x72, &b"hip-amdgcn-amd-amdhsa--gfx90a"[..]),
    ] {
        b.extend(off.to_le_bytes());
        b.extend(size.to_le_bytes());
        b.extend((id.len() as u64).to_le_bytes());
        b.extend(id);
    }
    b.extend(b"host");
    b.extend(b"kernel void f() {}\n".repeat(6));
    assert_eq!(b.len(), 257);
    b
}

/// Its `-compress` output (version 3), and with
/// `COMPRESSED_BUNDLE_FORMAT_VERSION=2`.
const LLVM_V3: &str = "43434f4203000100b2000000000000000101000000000000b89eff1d3c7527b3\
        28b52ffd600100450400c4065f5f434c414e475f4f46464c4f41445f42554e444c455f5f02008b00\
        04001e00686f73742d7838365f36342d756e6b6e6f776e2d6c696e75782d676e752d8f0072001d00\
        6869702d616d6467636e6873612d2d6766783930616b65726e656c20766f696420662829207b7d0a\
        0b00d96682856d76b6546c0703838101c603038381c1c00e600c";
const LLVM_V2_HEADER: &str = "43434f4202000100aa00000001010000b89eff1d3c7527b3";

fn unhex(s: &str) -> Vec<u8> {
    let s: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    s.chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

fn llvm_v3() -> Vec<u8> {
    unhex(LLVM_V3)
}

fn llvm_v2() -> Vec<u8> {
    let mut v = unhex(LLVM_V2_HEADER);
    v.extend(&llvm_v3()[32..]);
    v
}

/// Deterministic pseudo-random bytes (xorshift).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24).to_le_bytes()[0]
        })
        .collect()
}

/// Compressible bytes: words from a small random vocabulary.
fn text(seed: u64, len: usize) -> Vec<u8> {
    let vocab: Vec<Vec<u8>> = (0..64)
        .map(|i| noise(seed + i, 1 + usize::try_from(i % 9).unwrap()))
        .collect();
    let picks = noise(seed ^ 0xabc, len);
    let mut out = Vec::with_capacity(len + 16);
    let mut i = 0;
    while out.len() < len {
        out.extend(&vocab[picks[i % picks.len()] as usize % vocab.len()]);
        i += 1;
    }
    out.truncate(len);
    out
}

fn fault_of(r: Result<impl fmt::Debug>) -> Fault {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => fault(&e)
            .cloned()
            .unwrap_or_else(|| panic!("not a CCOB error: {e}")),
    }
}

fn opts(hash: HashCheck) -> ReadOptions {
    ReadOptions {
        limits: crate::Limits::default(),
        hash,
    }
}

fn zlib_opts(version: u16) -> CompressOptions {
    CompressOptions {
        version,
        method: Method::ZLIB,
        level: ZLIB_DEFAULT_LEVEL,
        threads: 0,
    }
}

fn v3(version: u16) -> CompressOptions {
    CompressOptions {
        version,
        ..CompressOptions::default()
    }
}

/// Sets the header's uncompressed size (v2/v3).
/// A v3 zstd CCOB around `payload`, declaring `declared` bytes.
fn zstd_ccob(payload: &[u8], declared: u64, hash: u64) -> Vec<u8> {
    let mut c = Header {
        version: 3,
        method: Method::ZSTD,
        total_size: Some(32 + payload.len() as u64),
        uncompressed_size: declared,
        hash,
    }
    .to_bytes()
    .unwrap();
    c.extend(payload);
    c
}

fn set_uncompressed(c: &mut [u8], n: u64) {
    if c[4] == 2 {
        c[12..16].copy_from_slice(&u32::try_from(n).unwrap().to_le_bytes());
    } else {
        c[16..24].copy_from_slice(&n.to_le_bytes());
    }
}

fn set_total(c: &mut [u8], n: u64) {
    if c[4] == 2 {
        c[8..12].copy_from_slice(&u32::try_from(n).unwrap().to_le_bytes());
    } else {
        c[8..16].copy_from_slice(&n.to_le_bytes());
    }
}

#[test]
fn links_system_libzstd_1_5_4() {
    // Byte identity with LLVM 22 on Debian 12 needs its libzstd.
    assert_eq!(zstd_safe::version_number(), 10504);
}

#[test]
fn writes_llvm_bytes_v3_and_v2() {
    let u = llvm_bundle();
    let (c3, r3) = compress_to_vec(&u, &CompressOptions::default()).unwrap();
    assert_eq!(c3, llvm_v3());
    assert_eq!(r3.header.total_size, Some(178));
    let (c2, _) = compress_to_vec(&u, &v3(2)).unwrap();
    assert_eq!(c2, llvm_v2());
}

#[test]
fn compression_report_has_llvm_facts() {
    // What LLVM 22's verbose report prints for this bundle.
    let (_, r) = compress_to_vec(&llvm_bundle(), &CompressOptions::default()).unwrap();
    assert_eq!(
        r,
        CompressReport {
            header: Header {
                version: 3,
                method: Method::ZSTD,
                total_size: Some(178),
                uncompressed_size: 257,
                hash: 0xb327_753c_1dff_9eb8,
            },
            level: 3,
            compressed_size: 146,
        }
    );
}

#[test]
fn reads_llvm_v3_and_v2_with_llvm_report() {
    for (c, v, total) in [(llvm_v3(), 3, 178), (llvm_v2(), 2, 170)] {
        let d = decompress(&c, &ReadOptions::default()).unwrap();
        assert_eq!(d.data, llvm_bundle());
        assert_eq!(d.header.version, v);
        assert_eq!(d.hash_matches(), Some(true));
        // What LLVM 22's verbose report prints for them.
        assert_eq!(d.header.total_size, Some(total));
        assert_eq!(d.header.method, Method::ZSTD);
        assert_eq!(d.compressed_size, 146);
        assert_eq!(d.header.uncompressed_size, 257);
        assert_eq!(d.header.hash, 0xb327_753c_1dff_9eb8);
        assert_eq!(d.computed_hash, Some(0xb327_753c_1dff_9eb8));
    }
}

#[test]
fn round_trips_versions_methods_sizes() {
    for len in [0usize, 1, 1000, 300_000] {
        let data = text(len as u64, len);
        for o in [v3(3), v3(2), zlib_opts(3), zlib_opts(2)] {
            let (c, r) = compress_to_vec(&data, &o).unwrap();
            assert_eq!(r.header.total_size, Some(c.len() as u64));
            assert_eq!(r.header.uncompressed_size, len as u64);
            assert_eq!(r.compressed_size + r.header.size(), c.len() as u64);
            let h = Header::parse(&c).unwrap();
            assert_eq!(h, r.header);
            let d = decompress(&c, &ReadOptions::default()).unwrap();
            assert_eq!(d.data, data, "{o:?} len {len}");
            assert_eq!(d.size, c.len() as u64);
        }
    }
}

#[test]
fn threaded_output_decompresses() {
    let data = text(7, 3 << 20);
    let o = CompressOptions {
        threads: 2,
        ..CompressOptions::default()
    };
    let (c, _) = compress_to_vec(&data, &o).unwrap();
    assert_eq!(decompress(&c, &ReadOptions::default()).unwrap().data, data);
    // Two frames of 1.5 MiB, one per worker.
    let first = zstd_safe::find_frame_compressed_size(&c[32..]).unwrap();
    assert!(first < c.len() - 32);
    assert_eq!(
        zstd_safe::get_frame_content_size(&c[32..]).unwrap(),
        Some(3 << 19)
    );
    // Too small to split: the same bytes as on one thread.
    let small = text(8, 1000);
    assert_eq!(
        compress_to_vec(&small, &o).unwrap().0,
        compress_to_vec(&small, &CompressOptions::default())
            .unwrap()
            .0
    );
}

#[test]
fn levels_pass_through() {
    let data = text(3, 5000);
    for level in [1, 9, 19, 100, -5, 0] {
        let o = CompressOptions {
            level,
            ..CompressOptions::default()
        };
        let (c, r) = compress_to_vec(&data, &o).unwrap();
        assert_eq!(r.level, level);
        assert_eq!(decompress(&c, &ReadOptions::default()).unwrap().data, data);
    }
    assert_eq!(
        fault_of(compress_to_vec(
            &data,
            &CompressOptions {
                level: 10,
                ..zlib_opts(3)
            }
        )),
        Fault::InvalidLevel(10)
    );
}

#[test]
fn only_versions_2_and_3_are_written() {
    for v in [0, 1, 4] {
        assert_eq!(
            fault_of(compress_to_vec(b"x", &v3(v))),
            Fault::UnsupportedWriteVersion(v)
        );
    }
    let o = CompressOptions {
        method: Method(2),
        ..CompressOptions::default()
    };
    assert_eq!(
        fault_of(compress_to_vec(b"x", &o)),
        Fault::UnsupportedWriteMethod(2)
    );
}

#[test]
fn compresses_at_the_writer_position() {
    let data = text(5, 10_000);
    let mut cur = io::Cursor::new(b"abc".to_vec());
    cur.set_position(3);
    compress(&data, &CompressOptions::default(), &mut cur).unwrap();
    assert_eq!(cur.position(), cur.get_ref().len() as u64);
    let out = cur.into_inner();
    assert_eq!(&out[..3], b"abc");
    assert_eq!(
        out[3..],
        compress_to_vec(&data, &CompressOptions::default())
            .unwrap()
            .0
    );
}

#[test]
fn v2_limits_have_llvm_messages() {
    let h = Header {
        version: 2,
        method: Method::ZSTD,
        total_size: Some(100),
        uncompressed_size: 1 << 32,
        hash: 0,
    };
    let f = fault_of(h.to_bytes());
    assert_eq!(f, Fault::UncompressedSizeLimit(2));
    assert_eq!(
        f.llvm_message(),
        "Uncompressed size exceeds version 2 limit"
    );
    let h = Header {
        total_size: Some(1 << 32),
        uncompressed_size: 5,
        ..h
    };
    let f = fault_of(h.to_bytes());
    assert_eq!(f.llvm_message(), "Total file size exceeds version 2 limit");
    // The streaming check behind the total-size limit.
    let mut sink = Vec::new();
    let mut c = Counter {
        inner: &mut sink,
        count: 0,
        limit: 10,
        over: false,
    };
    c.write_all(&[0; 10]).unwrap();
    assert!(c.write_all(&[0]).is_err());
    assert!(c.over);
}

/// `compress_into` with the hash computed from the data.
fn into_buffer(data: &[u8], o: &CompressOptions) -> Result<(Vec<u8>, CompressReport)> {
    let mut buf = vec![0xee; usize::try_from(compressed_bound(data.len() as u64, o)?).unwrap()];
    let r = compress_into(data, o, &mut buf, || Ok(truncated_md5(data)))?;
    buf.truncate(usize::try_from(r.header.total_size.unwrap()).unwrap());
    Ok((buf, r))
}

#[test]
fn compress_into_writes_what_compress_writes() {
    // On one thread, LLVM's own bytes; the rest as `compress` has them.
    let mut cases = vec![(llvm_bundle(), v3(3)), (llvm_bundle(), v3(2))];
    for len in [0usize, 1, 70_000, 3 << 20] {
        let data = text(len as u64 + 1, len);
        for o in [
            v3(3),
            v3(2),
            zlib_opts(3),
            CompressOptions { level: 19, ..v3(3) },
            CompressOptions {
                threads: 2,
                ..v3(3)
            },
        ] {
            cases.push((data.clone(), o));
        }
    }
    for (data, o) in &cases {
        let (whole, r) = compress_to_vec(data, o).unwrap();
        let (into, r2) = into_buffer(data, o).unwrap();
        assert_eq!(into, whole, "{o:?}, {} bytes", data.len());
        assert_eq!(r2, r);
    }
    assert_eq!(into_buffer(&llvm_bundle(), &v3(3)).unwrap().0, llvm_v3());
}

#[test]
fn compress_into_needs_the_bound_and_takes_the_callers_hash() {
    let data = text(9, 5000);
    let o = CompressOptions::default();
    let bound = compressed_bound(5000, &o).unwrap();
    assert_eq!(bound, 32 + zstd_safe::compress_bound(5000) as u64);
    let mut short = vec![0u8; usize::try_from(bound).unwrap() - 1];
    let f = fault_of(compress_into(&data, &o, &mut short, || Ok(0)));
    assert!(matches!(f, Fault::Compress { .. }), "{f:?}");
    // The hash is whatever the caller's function says; its error is the
    // call's.
    let mut buf = vec![0u8; usize::try_from(bound).unwrap()];
    let r = compress_into(&data, &o, &mut buf, || Ok(0x1234)).unwrap();
    assert_eq!(Header::parse(&buf).unwrap().hash, 0x1234);
    assert_eq!(r.header.hash, 0x1234);
    let e = compress_into(&data, &o, &mut buf, || {
        Err(io::Error::other("no hash").into())
    })
    .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Io(_)), "{e}");
    // What cannot be written fails before anything is compressed.
    assert_eq!(
        fault_of(compressed_bound(1 << 32, &v3(2))),
        Fault::UncompressedSizeLimit(2)
    );
    assert_eq!(
        fault_of(compressed_bound(1, &v3(4))),
        Fault::UnsupportedWriteVersion(4)
    );
    assert_eq!(
        fault_of(compressed_bound(u64::MAX, &v3(3))),
        Fault::UncompressedSizeLimit(3)
    );
}

#[test]
fn bundle_hasher_is_the_stored_hash() {
    let data = text(4, 100_000);
    let mut h = BundleHasher::new();
    for chunk in data.chunks(777) {
        h.write_all(chunk).unwrap();
    }
    assert_eq!(h.finish(), truncated_md5(&data));
}

#[test]
fn pieces_compress_as_the_whole_and_are_released() {
    use std::sync::Mutex;
    let data = text(6, 5 << 20);
    let pieces: Vec<&[u8]> = vec![&data[..10], &[], &data[10..3 << 20], &data[3 << 20..]];
    for o in [
        zlib_opts(3),
        CompressOptions {
            threads: 2,
            ..v3(3)
        },
    ] {
        let released = Mutex::new(Vec::new());
        let release = |s: &[u8]| {
            let start = s.as_ptr() as usize - data.as_ptr() as usize;
            released.lock().unwrap().push(start..start + s.len());
        };
        let mut cur = io::Cursor::new(Vec::new());
        let r = compress_pieces(&pieces, &o, &mut cur, &release).unwrap();
        let c = cur.into_inner();
        let (whole, r2) = compress_to_vec(&data, &o).unwrap();
        if o.method == Method::ZLIB {
            assert_eq!(c, whole);
            assert_eq!(r, r2);
        }
        // zstd's frames follow the pieces: other bytes, the same bundle.
        let d = decompress(&c, &ReadOptions::default()).unwrap();
        assert_eq!(d.data, data, "{o:?}");
        assert_eq!(r.header.hash, r2.header.hash);
        // Every byte was given back twice: once hashed, once compressed.
        let mut got = released.into_inner().unwrap();
        assert_eq!(
            got.iter().map(|r| r.len()).sum::<usize>(),
            2 * data.len(),
            "{o:?}"
        );
        got.sort_by_key(|r| r.start);
        let covered = got.iter().fold(
            0,
            |end, r| if r.start <= end { end.max(r.end) } else { end },
        );
        assert_eq!(covered, data.len(), "{o:?}");
    }
    let f = fault_of(compress_pieces(
        &pieces,
        &v3(3),
        &mut io::Cursor::new(Vec::new()),
        &|_| {},
    ));
    assert!(matches!(f, Fault::Compress { .. }), "{f:?}");
}

mod read;
mod stream;

#[test]
fn hash_formatting() {
    assert_eq!(hex_hash(0x7b73_8f23_2da0_7fa8), "0x7b738f232da07fa8");
    assert_eq!(hex_hash(0x0012_3456_78ab_cdef), "0x12345678abcdef");
    assert_eq!(hex_hash(0), "0x00000000000000");
}

#[test]
fn errors_carry_offsets_and_llvm_texts() {
    let e = decompress(b"CCOB\x07\0\x01\0", &ReadOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "compressed bundle at offset 0x0: unknown version 7 (1, 2 and 3 exist)"
    );
    assert_eq!(
        llvm_message(&e).as_deref(),
        Some("Compressed bundle header size too small")
    );
    assert_eq!(llvm_message(&Error::usage("x")), None);
}

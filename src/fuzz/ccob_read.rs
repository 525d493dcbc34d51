//! The fuzz body of compressed bundles (CCOB).

/// Reads `data` as one CCOB and as back-to-back CCOBs; whatever
/// decompresses must compress again (zstd v3, zlib v2) to CCOBs that read
/// back to the same bytes. Must never panic.
pub fn ccob_read(data: &[u8]) {
    use crate::bundle::ccob::{self as ccob, CompressOptions, HashCheck, Method, ReadOptions};

    let opts = ReadOptions {
        limits: crate::Limits::uncompressed(1 << 24),
        hash: HashCheck::Report,
    };
    let _ = ccob::Header::parse(data);
    if let Ok(c) = ccob::Ccob::parse(data) {
        assert!(c.size <= data.len() as u64);
        assert_eq!(c.header.size() + c.payload.len() as u64, c.size);
    }
    let whole = ccob::decompress(data, &opts);
    if let Ok(d) = &whole {
        assert_eq!(d.size, data.len() as u64);
    }
    // Streamed, on one thread and on two (frames decoded apart), the same
    // bytes or the same fault (LLVM's message).
    for threads in [None, Some(1), Some(2)] {
        let Ok(c) = ccob::Ccob::parse_whole(data) else {
            break;
        };
        let n = c.header.uncompressed_size.min(1 << 24);
        let mut got = Vec::new();
        let mut wanted = [ccob::Wanted {
            range: 0..n,
            out: &mut got,
        }];
        let end = ccob::StreamEnd::Whole;
        let streamed = match threads {
            None => c.stream_to(&mut wanted, &opts, end),
            Some(t) => {
                let payload = std::io::Cursor::new(c.payload);
                c.stream_parallel(payload, &mut wanted, &opts, end, t)
            }
        };
        match (&whole, streamed) {
            (Ok(d), Ok(s)) => {
                assert_eq!(got, d.data);
                assert_eq!(s.computed_hash, d.computed_hash);
            }
            (Err(a), Err(b)) => assert_eq!(ccob::llvm_message(a), ccob::llvm_message(&b)),
            (a, b) => panic!(
                "whole {:?}, streamed {:?}",
                a.as_ref().map(|d| d.data.len()),
                b.map_err(|e| e.to_string())
            ),
        }
    }
    let Ok(all) = ccob::decompress_all(data, &opts) else {
        return;
    };
    let mut total = 0u64;
    for d in &all {
        assert_eq!(d.data.len() as u64, d.header.uncompressed_size);
        assert!(d.offset + d.size <= data.len() as u64);
        total += d.data.len() as u64;
        if d.data.len() > 1 << 20 {
            continue;
        }
        let zlib = CompressOptions {
            version: 2,
            method: Method::ZLIB,
            level: 6,
            threads: 0,
        };
        for o in [CompressOptions::default(), zlib] {
            let (c, r) = ccob::compress_to_vec(&d.data, &o).expect("compress what was read");
            assert_eq!(r.header.total_size, Some(c.len() as u64));
            let again = ccob::decompress(&c, &ReadOptions::default()).expect("re-read");
            assert_eq!(again.data, d.data);
        }
    }
    assert!(total <= 1 << 24);
}

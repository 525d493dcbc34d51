//! Compressed bundles streamed to image sinks: what plain bundles give,
//! and nothing kept from a damaged one.

use super::*;

/// A bundle worth streaming: an empty host entry, two ELF images (one over
/// 1 MiB, so that a threaded CCOB has several frames), an empty device
/// entry; `tail` after it.
fn streamable(tail: &[u8]) -> Vec<u8> {
    let mut small = b"\x7fELF".to_vec();
    small.extend(noise(200_000, 3).iter().map(|b| b % 16));
    let mut big = b"\x7fELF".to_vec();
    big.extend(noise(1_600_000, 4).iter().map(|b| b % 8));
    let mut b = bundle(
        &[
            (HOST, b""),
            (GFX90A, &small),
            ("hipv4-amdgcn-amd-amdhsa--gfx942", &big),
            ("hipv4-amdgcn-amd-amdhsa--gfx1100", b""),
        ],
        4096,
    );
    b.extend_from_slice(tail);
    b
}

/// What a report says about its images and problems, where compressed
/// and plain bundles must agree.
fn facts(r: &Report) -> (Vec<String>, Vec<String>) {
    let images = r
        .images
        .iter()
        .map(|i| {
            format!(
                "{:?} {:?} {} {} {:?}",
                i.bundle_id,
                i.image_kind.map(|k| k.to_string()),
                i.relative_offset,
                i.size,
                i.hash.map(|h| h.to_string())
            )
        })
        .collect();
    let problems = r.problems.iter().map(|p| p.message.clone()).collect();
    (images, problems)
}

#[test]
fn compressed_bundles_stream_to_what_plain_ones_give() {
    let threaded = CompressOptions {
        threads: 2,
        ..CompressOptions::default()
    };
    let zlib = CompressOptions {
        method: ccob::Method::ZLIB,
        version: 2,
        level: 6,
        threads: 0,
    };
    for tail in [&b""[..], &[0; 100], b"\0\0garbage"] {
        let plain = streamable(tail);
        for copts in [CompressOptions::default(), threaded, zlib] {
            let c = ccob::compress_to_vec(&plain, &copts).unwrap().0;
            for (verify, hash) in [
                (true, None),
                (false, Some(HashAlgo::Xxh3_128)),
                (true, Some(HashAlgo::Md5)),
            ] {
                let what = format!("tail {tail:?}, {copts:?}, {verify} {hash:?}");
                let opts = Options {
                    verify,
                    hash,
                    ..Options::default()
                };
                let p = scan(&plain, &opts);
                let z = scan(&c, &opts);
                assert_eq!(facts(&z), facts(&p), "{what}");
                let comp = z.containers[0].compression.as_ref().unwrap();
                assert!(comp.decompressed, "{what}");
                assert_eq!(comp.hash_ok, verify.then_some(true), "{what}");
                assert_eq!(z.containers[1].size, p.containers[0].size, "{what}");
                // The images a visitor wants, streamed to its sinks, with
                // and without the options.
                for opts in [opts, Options::default()] {
                    let mut plain_v = Sinks::default();
                    scan_with(&plain, &opts, &mut plain_v);
                    let mut v = Sinks::default();
                    scan_with(&c, &opts, &mut v);
                    assert!(v.failed.is_empty(), "{what}");
                    assert_eq!(
                        *v.kept.lock().unwrap(),
                        *plain_v.kept.lock().unwrap(),
                        "{what}"
                    );
                    assert_eq!(v.kept.lock().unwrap().len(), 3, "{what}");
                }
            }
        }
    }
}

#[test]
fn damaged_compressed_bundles_keep_nothing_streamed() {
    let plain = streamable(b"");
    // Cut short, its total size fixed up: the stream ends early (a
    // flipped byte may well decode, to other bytes: LLVM writes no zstd
    // checksum, and only --verify checks the stored hash).
    let mut c = ccob(&plain);
    c.truncate(c.len() - 100);
    let len = c.len() as u64;
    c[8..16].copy_from_slice(&len.to_le_bytes());
    for verify in [false, true] {
        let opts = Options {
            verify,
            ..Options::default()
        };
        let mut v = Sinks::default();
        let r = scan_with(&c, &opts, &mut v);
        assert!(v.kept.lock().unwrap().is_empty(), "{verify}");
        assert!(!r.problems.is_empty(), "{verify}");
        if !verify {
            // Listed from the bundle header; each wanted image failed.
            assert_eq!(v.failed.len(), 3, "{:?}", v.failed);
        }
    }
}

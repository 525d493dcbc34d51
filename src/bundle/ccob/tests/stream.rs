//! Streaming against whole-buffer decompression: for every method,
//! version, frame count, choice of wanted entries, hash policy and place to
//! stop, [`Ccob::stream_to`] writes exactly the bytes that slicing the
//! result of [`decompress`] gives, and fails exactly where it fails, with
//! the same LLVM message.

use super::*;
use crate::bundle::binary;

/// A binary bundle of `entries` (ID, data), each entry's data aligned to
/// 4096 as HIP bundles are.
fn bundle_of(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let header: u64 = 32
        + entries
            .iter()
            .map(|(id, _)| 24 + id.len() as u64)
            .sum::<u64>();
    let mut at = header;
    let mut offsets = Vec::new();
    for (_, d) in entries {
        at = at.next_multiple_of(4096);
        offsets.push(at);
        at += d.len() as u64;
    }
    let mut b = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    b.extend((entries.len() as u64).to_le_bytes());
    for ((id, d), off) in entries.iter().zip(&offsets) {
        b.extend(off.to_le_bytes());
        b.extend((d.len() as u64).to_le_bytes());
        b.extend((id.len() as u64).to_le_bytes());
        b.extend(id.as_bytes());
    }
    for ((_, d), off) in entries.iter().zip(&offsets) {
        b.resize(usize::try_from(*off).unwrap(), 0);
        b.extend(d);
    }
    b
}

/// Four entries: a small host one and three device images.
fn sample(image: usize) -> Vec<u8> {
    bundle_of(&[
        (
            "host-x86_64-unknown-linux-gnu-",
            b"host code object".to_vec(),
        ),
        ("hipv4-amdgcn-amd-amdhsa--gfx90a", text(1, image)),
        ("hipv4-amdgcn-amd-amdhsa--gfx942", noise(2, image / 3)),
        ("hipv4-amdgcn-amd-amdhsa--gfx1100", text(3, image)),
    ])
}

/// The CCOB `c` (v2/v3) rewritten as version 1 (no total size).
fn as_v1(c: &[u8]) -> Vec<u8> {
    let h = Header::parse(c).unwrap();
    let mut v1 = Header {
        version: 1,
        total_size: None,
        ..h
    }
    .to_bytes()
    .unwrap();
    v1.extend(&c[usize::try_from(h.size()).unwrap()..]);
    v1
}

/// The CCOBs of the matrix: (name, bytes).
fn ccobs(u: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let zlib = compress_to_vec(u, &zlib_opts(3)).unwrap().0;
    let zlib2 = compress_to_vec(u, &zlib_opts(2)).unwrap().0;
    let one = compress_to_vec(u, &CompressOptions::default()).unwrap().0;
    let two = compress_to_vec(u, &v3(2)).unwrap().0;
    let frames = compress_to_vec(
        u,
        &CompressOptions {
            threads: 2,
            ..CompressOptions::default()
        },
    )
    .unwrap()
    .0;
    let h = Header::parse(&frames).unwrap();
    let payload = &frames[32..];
    let mut count = 0;
    let mut rest = payload;
    while !rest.is_empty() {
        rest = &rest[zstd_safe::find_frame_compressed_size(rest).unwrap()..];
        count += 1;
    }
    assert!(count > 1, "several frames");
    assert_eq!(h.version, 3);
    out.push(("zlib v3".into(), zlib.clone()));
    out.push(("zlib v2".into(), zlib2));
    out.push(("zlib v1".into(), as_v1(&zlib)));
    out.push(("zstd v3".into(), one.clone()));
    out.push(("zstd v2".into(), two));
    out.push(("zstd v1".into(), as_v1(&one)));
    out.push((format!("zstd v3 {count} frames"), frames.clone()));
    // A v1 CCOB ends with its first frame: the others are trailing bytes.
    out.push((format!("zstd v1 {count} frames"), as_v1(&frames)));
    // No data at all: zstd's one-shot call makes nothing of it, zlib
    // fails; a zlib stream without its checksum fails.
    let empty = zstd_ccob(&[], 0, truncated_md5(b""));
    let mut empty_zlib = empty.clone();
    empty_zlib[6] = 0;
    out.push(("zstd empty".into(), empty));
    out.push(("zlib empty".into(), empty_zlib));
    let mut unchecked = zlib[..zlib.len() - 4].to_vec();
    let len = unchecked.len() as u64;
    set_total(&mut unchecked, len);
    out.push(("zlib without its checksum".into(), unchecked));
    // Lies and damage.
    for (name, base) in [("zstd", &one), ("zlib", &zlib), ("zstd frames", &frames)] {
        let n = u.len() as u64;
        for (what, size) in [("short", n - 1), ("long", n + 1)] {
            let mut c = base.clone();
            set_uncompressed(&mut c, size);
            out.push((format!("{name} declares {what}"), c));
        }
        let mut bad = base.clone();
        bad[24] ^= 1;
        out.push((format!("{name} bad hash"), bad));
        let mut cut = base[..base.len() - 7].to_vec();
        let len = cut.len() as u64;
        set_total(&mut cut, len);
        out.push((format!("{name} cut"), cut));
        // Damage near the end, after every entry's data but the last.
        let mut hit = base.clone();
        let at = hit.len() - 40;
        hit[at] ^= 0x55;
        out.push((format!("{name} damaged near the end"), hit));
        // Damage in the first block (the first frame of several).
        let mut hit = base.clone();
        hit[60] ^= 0x55;
        out.push((format!("{name} damaged at the start"), hit));
    }
    out
}

/// The outcome of a read: the bytes of each range, or LLVM's message.
type Outcome = std::result::Result<Vec<Vec<u8>>, String>;

fn message(e: &Error) -> String {
    llvm_message(e).unwrap_or_else(|| e.to_string())
}

fn whole(c: &[u8], ranges: &[std::ops::Range<u64>], hash: HashCheck) -> Outcome {
    let d = decompress(c, &opts(hash)).map_err(|e| message(&e))?;
    ranges
        .iter()
        .map(|r| {
            let (start, end) = (usize::try_from(r.start), usize::try_from(r.end));
            d.data
                .get(start.unwrap()..end.unwrap())
                .map(<[u8]>::to_vec)
                .ok_or_else(|| "past the end".to_string())
        })
        .collect()
}

fn streamed(
    c: &[u8],
    ranges: &[std::ops::Range<u64>],
    hash: HashCheck,
    end: StreamEnd,
) -> (Outcome, Option<Streamed>) {
    streamed_on(c, ranges, hash, end, None)
}

/// [`streamed`] through [`Ccob::stream_to`] (`threads` `None`) or
/// [`Ccob::stream_parallel`] on that many threads.
fn streamed_on(
    c: &[u8],
    ranges: &[std::ops::Range<u64>],
    hash: HashCheck,
    end: StreamEnd,
    threads: Option<u32>,
) -> (Outcome, Option<Streamed>) {
    let ccob = match Ccob::parse_whole(c) {
        Ok(x) => x,
        Err(e) => return (Err(message(&e)), None),
    };
    let mut outs: Vec<Vec<u8>> = vec![Vec::new(); ranges.len()];
    let mut wanted: Vec<Wanted<'_>> = outs
        .iter_mut()
        .zip(ranges)
        .map(|(o, r)| Wanted {
            range: r.clone(),
            out: o,
        })
        .collect();
    let r = match threads {
        None => ccob.stream_to(&mut wanted, &opts(hash), end),
        Some(n) => {
            let payload = io::Cursor::new(ccob.payload);
            ccob.stream_parallel(payload, &mut wanted, &opts(hash), end, n)
        }
    };
    drop(wanted);
    match r {
        Ok(s) => (Ok(outs), Some(s)),
        Err(e) => (Err(message(&e)), None),
    }
}

#[test]
fn streaming_gives_what_whole_buffers_give() {
    let u = sample(700_000);
    let entries = binary::read(&u).unwrap();
    let range = |i: usize| {
        let e = &entries[i];
        e.offset..e.offset + e.data.len() as u64
    };
    let n = u.len() as u64;
    let choices: Vec<(&str, Vec<std::ops::Range<u64>>)> = vec![
        ("first", vec![range(0)]),
        ("middle", vec![range(2)]),
        ("last", vec![range(3)]),
        ("all", (0..4).map(range).collect()),
        ("all, last first", (0..4).rev().map(range).collect()),
        ("whole bundle", std::iter::once(0..n).collect()),
        ("overlapping", vec![range(1), 0..n, range(1)]),
        ("none", vec![]),
    ];
    let mut stopped_early = 0;
    for (name, c) in ccobs(&u) {
        for (which, ranges) in &choices {
            for hash in [HashCheck::Enforce, HashCheck::Report, HashCheck::Skip] {
                for end in [StreamEnd::LastWanted, StreamEnd::Whole] {
                    let what = format!("{name}, {which}, {hash:?}, {end:?}");
                    let expected = whole(&c, ranges, hash);
                    let (got, report) = streamed(&c, ranges, hash, end);
                    // On one thread, on two (our frames: one decoding, or
                    // two without the hash) and on three, the same
                    // outcome; stopping early may end on a frame boundary
                    // rather than on the last wanted byte.
                    for threads in [1, 2, 3] {
                        let (t_got, t_report) = streamed_on(&c, ranges, hash, end, Some(threads));
                        let what = format!("{what}, {threads} threads");
                        if t_got != got {
                            // A damaged frame holding the last wanted byte
                            // is decoded whole on threads, so its damage is
                            // found, as the whole-buffer read finds it.
                            assert!(name.contains("damaged"), "{what}");
                            assert_eq!((hash, end), (HashCheck::Skip, StreamEnd::LastWanted));
                            assert_eq!(t_got, expected, "{what}");
                            continue;
                        }
                        if let (Some(a), Some(b)) = (&report, &t_report) {
                            assert_eq!(a.computed_hash, b.computed_hash, "{what}");
                            assert_eq!(a.header, b.header, "{what}");
                            assert!(b.decompressed >= a.decompressed, "{what}");
                            assert!(b.decompressed <= a.header.uncompressed_size, "{what}");
                        }
                        assert_eq!(report.is_some(), t_report.is_some(), "{what}");
                    }
                    let declared = Header::parse(&c).unwrap().uncompressed_size;
                    if ranges.iter().any(|r| r.end > declared) {
                        // The caller's mistake (bundle records are checked
                        // against the declared size first): refused.
                        assert!(got.is_err(), "{what}");
                        continue;
                    }
                    let Some(s) = report else {
                        assert_eq!(got, expected, "{what}");
                        continue;
                    };
                    let early = s.decompressed < s.header.uncompressed_size;
                    if early {
                        stopped_early += 1;
                        // Only without the hash, and only where the frame
                        // headers vouch for the declared size.
                        assert_eq!((hash, end), (HashCheck::Skip, StreamEnd::LastWanted));
                        assert!(!name.contains("declares"), "{what}");
                        // What lies past the last wanted byte is not read:
                        // the whole-buffer read may find damage there.
                        if expected.is_err() {
                            assert!(name.contains("damaged"), "{what}");
                            let d = decompress(&c, &opts(hash));
                            assert!(d.is_err());
                            continue;
                        }
                    } else {
                        assert_eq!(s.decompressed, declared, "{what}");
                    }
                    assert_eq!(got, expected, "{what}");
                    assert_eq!(s.computed_hash.is_some(), hash != HashCheck::Skip, "{what}");
                    if let Ok(d) = decompress(&c, &opts(HashCheck::Report)) {
                        if hash != HashCheck::Skip {
                            assert_eq!(s.computed_hash, d.computed_hash, "{what}");
                        }
                        assert_eq!(s.compressed_size, d.compressed_size, "{what}");
                        assert_eq!(s.header, d.header, "{what}");
                    }
                }
            }
        }
    }
    assert!(stopped_early > 0);
}

#[test]
fn streaming_stops_after_the_last_wanted_byte() {
    let u = sample(2_000_000);
    let entries = binary::read(&u).unwrap();
    let first = entries[1].offset..entries[1].offset + entries[1].data.len() as u64;
    let c = compress_to_vec(&u, &CompressOptions::default()).unwrap().0;
    let (got, s) = streamed(
        &c,
        std::slice::from_ref(&first),
        HashCheck::Skip,
        StreamEnd::LastWanted,
    );
    assert_eq!(got.unwrap()[0], entries[1].data);
    assert_eq!(s.unwrap().decompressed, first.end);
    // A declared size the frame headers do not confirm: to the end (and
    // the lie found).
    let mut lie = c.clone();
    set_uncompressed(&mut lie, u.len() as u64 + 10);
    let (got, _) = streamed(&lie, &[first], HashCheck::Skip, StreamEnd::LastWanted);
    assert_eq!(
        got.unwrap_err(),
        fault_of(decompress(&lie, &opts(HashCheck::Skip))).llvm_message()
    );
}

#[test]
fn streaming_refuses_bombs_and_ranges_past_the_end() {
    let u = sample(10_000);
    let c = compress_to_vec(&u, &CompressOptions::default()).unwrap().0;
    let ccob = Ccob::parse_whole(&c).unwrap();
    let mut sink = Vec::new();
    let n = u.len() as u64;
    let mut past = [Wanted {
        range: 0..n + 1,
        out: &mut sink,
    }];
    assert!(
        ccob.stream_to(&mut past, &opts(HashCheck::Skip), StreamEnd::Whole)
            .is_err()
    );
    let small = ReadOptions {
        limits: crate::Limits::uncompressed(n - 1),
        hash: HashCheck::Skip,
    };
    let f = fault_of(ccob.stream_to(&mut [], &small, StreamEnd::Whole));
    assert!(matches!(f, Fault::TooLarge { .. }));
}

/// `c` (v2/v3) with its last `k` bytes cut off and its total size
/// following.
fn cut(c: &[u8], k: usize) -> Vec<u8> {
    let mut v = c[..c.len() - k].to_vec();
    let h = Header::parse(c).unwrap();
    let n = v.len();
    if h.version == 3 {
        v[8..16].copy_from_slice(&(n as u64).to_le_bytes());
    } else {
        v[8..12].copy_from_slice(&u32::try_from(n).unwrap().to_le_bytes());
    }
    v
}

#[test]
fn a_cut_stream_is_named_by_llvm_call_only_when_small() {
    let fault = |n: usize| {
        let c = compress_to_vec(&vec![0u8; n], &CompressOptions::default())
            .unwrap()
            .0;
        let c = cut(&c, 3);
        let ccob = Ccob::parse_whole(&c).unwrap();
        fault_of(ccob.stream_to(&mut [], &opts(HashCheck::Skip), StreamEnd::Whole))
    };
    // Small: LLVM's whole-buffer call again, for its words.
    let Fault::Decompress { llvm, .. } = fault(1 << 20) else {
        panic!("not a decompression fault")
    };
    assert_eq!(llvm, "Src size is incorrect");
    // Over NAME_FAULT_IN_MEMORY: named from the stream, nothing held.
    let big = usize::try_from(NAME_FAULT_IN_MEMORY).unwrap() + 4096;
    let Fault::Decompress { llvm, detail, .. } = fault(big) else {
        panic!("not a decompression fault")
    };
    assert_eq!(llvm, detail);
    assert_ne!(llvm, "Src size is incorrect");
}

#[test]
fn write_errors_are_io_errors() {
    struct Full;
    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from_raw_os_error(28))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let u = sample(10_000);
    let c = compress_to_vec(&u, &CompressOptions::default()).unwrap().0;
    let ccob = Ccob::parse_whole(&c).unwrap();
    for hash in [HashCheck::Enforce, HashCheck::Skip] {
        let mut full = Full;
        let mut w = [Wanted {
            range: 0..10,
            out: &mut full,
        }];
        let e = ccob
            .stream_to(&mut w, &opts(hash), StreamEnd::Whole)
            .unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Io(_)), "{e}");
    }
}

/// zstd's own walk over the frames (which needs them in memory), as the
/// oracle for [`super::stream::zstd_frames_content_size`].
fn frames_content_size_by_zstd(payload: &[u8]) -> Option<u64> {
    let mut rest = payload;
    let mut sum = 0u64;
    while !rest.is_empty() {
        let n = zstd_safe::find_frame_compressed_size(rest).ok()?;
        if n == 0 {
            return None;
        }
        let size = zstd_safe::get_frame_content_size(&rest[..n]).ok()??;
        sum = sum.checked_add(size)?;
        rest = &rest[n..];
    }
    (!payload.is_empty()).then_some(sum)
}

#[test]
fn frame_headers_are_walked_as_zstd_walks_them() {
    let u = sample(600_000);
    let mut payloads: Vec<Vec<u8>> = Vec::new();
    for threads in [0, 2] {
        for level in [1, 3, 19] {
            let c = compress_to_vec(
                &u,
                &CompressOptions {
                    threads,
                    level,
                    ..CompressOptions::default()
                },
            )
            .unwrap()
            .0;
            payloads.push(c[32..].to_vec());
        }
    }
    // Frames without a content size, with a checksum, skippable frames,
    // an empty frame, raw and RLE blocks.
    let mut streamed = Vec::new();
    let mut enc = zstd::stream::write::Encoder::new(&mut streamed, 3).unwrap();
    enc.include_checksum(true).unwrap();
    enc.write_all(&u[..100_000]).unwrap();
    enc.finish().unwrap();
    payloads.push(streamed.clone());
    let with_size = |data: &[u8], checksum: bool| {
        let mut cctx = zstd_safe::CCtx::create();
        cctx.set_parameter(zstd_safe::CParameter::ChecksumFlag(checksum))
            .unwrap();
        let mut out = vec![0u8; zstd_safe::compress_bound(data.len())];
        let n = cctx.compress2(&mut out[..], data).unwrap();
        out.truncate(n);
        out
    };
    let mut mixed = with_size(&noise(9, 300_000), true);
    mixed.extend([0x5A, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 1, 2, 3]);
    mixed.extend(with_size(b"", false));
    mixed.extend(with_size(&[7u8; 1000], false));
    mixed.extend(with_size(&[7u8; 300], false));
    payloads.push(mixed);
    for p in &payloads {
        let cut = p[..p.len() - 1].to_vec();
        let mut longer = p.clone();
        longer.push(0);
        for q in [p, &cut, &longer, &Vec::new()] {
            assert_eq!(
                super::stream::zstd_frames_content_size(&mut io::Cursor::new(q), q.len() as u64),
                frames_content_size_by_zstd(q),
            );
        }
    }
}

/// Every entry of a bundle streamed out, for bundles of no entry, one
/// empty entry, one of one byte, empty entries among full ones, fifty
/// small ones and one of 3 MB (several frames on threads), compressed
/// every way (zlib and zstd, versions 1 to 3, one frame or several),
/// streamed on one thread or several: the bytes whole-buffer reading gives.
#[test]
fn streams_every_entry_of_every_shape() {
    let ids: Vec<String> = (0..50)
        .map(|i| format!("hipv4-amdgcn-amd-amdhsa--gfx{}", 900 + i))
        .collect();
    let host = "host-x86_64-unknown-linux-gnu-";
    let gfx = |i: usize| ids[i].as_str();
    let shapes: Vec<Vec<(&str, Vec<u8>)>> = vec![
        vec![],
        vec![(host, vec![])],
        vec![(gfx(0), vec![7])],
        vec![
            (host, vec![]),
            (gfx(0), text(5, 3000)),
            (gfx(1), vec![]),
            (gfx(2), noise(6, 5000)),
        ],
        (0..50).map(|i| (gfx(i), text(i as u64, i * 37))).collect(),
        vec![(host, vec![]), (gfx(3), text(7, 3_000_000))],
    ];
    let mut several_frames = 0;
    for entries in &shapes {
        let u = bundle_of(entries);
        let found = binary::read(&u).unwrap();
        let ranges: Vec<std::ops::Range<u64>> = found
            .iter()
            .map(|e| e.offset..e.offset + e.data.len() as u64)
            .collect();
        let expected: Vec<Vec<u8>> = found.iter().map(|e| e.data.to_vec()).collect();
        let threaded = CompressOptions {
            threads: 2,
            ..CompressOptions::default()
        };
        let mut cs = Vec::new();
        for o in [
            CompressOptions::default(),
            threaded,
            v3(2),
            zlib_opts(3),
            zlib_opts(2),
        ] {
            let c = compress_to_vec(&u, &o).unwrap().0;
            if o.threads == 0 {
                cs.push(as_v1(&c));
            }
            cs.push(c);
        }
        for c in &cs {
            let payload = &c[usize::try_from(Header::parse(c).unwrap().size()).unwrap()..];
            let ccob = Ccob::parse_whole(c).unwrap();
            if ccob
                .parallel_frames(&mut io::Cursor::new(payload))
                .is_some()
            {
                several_frames += 1;
            }
            for threads in [None, Some(1), Some(2), Some(4)] {
                for hash in [HashCheck::Enforce, HashCheck::Skip] {
                    let (got, s) = streamed_on(c, &ranges, hash, StreamEnd::Whole, threads);
                    let what = format!("{} entries, {threads:?} threads, {hash:?}", entries.len());
                    assert_eq!(got.as_ref(), Ok(&expected), "{what}");
                    assert_eq!(s.unwrap().decompressed, u.len() as u64, "{what}");
                }
            }
        }
    }
    assert!(several_frames > 0);
}

/// CCOBs one after another (zero padding between them, as in a section):
/// each parsed where the previous one ends and streamed gives what
/// [`decompress_all`] gives.
#[test]
fn concatenated_ccobs_stream_one_by_one() {
    let (a, b) = (sample(50_000), sample(1_500_000));
    let threaded = CompressOptions {
        threads: 2,
        ..CompressOptions::default()
    };
    let mut cat = compress_to_vec(&a, &CompressOptions::default()).unwrap().0;
    cat.extend([0u8; 8]);
    cat.extend(compress_to_vec(&b, &threaded).unwrap().0);
    cat.extend(compress_to_vec(&a, &zlib_opts(2)).unwrap().0);
    cat.extend(as_v1(
        &compress_to_vec(&b, &CompressOptions::default()).unwrap().0,
    ));
    let all = decompress_all(&cat, &opts(HashCheck::Enforce)).unwrap();
    assert_eq!(all.len(), 4);
    for d in &all {
        let at = usize::try_from(d.offset).unwrap();
        let c = Ccob::parse(&cat[at..]).unwrap();
        assert_eq!(c.size, d.size);
        for threads in [1, 2] {
            let mut out = Vec::new();
            let mut w = [Wanted {
                range: 0..d.data.len() as u64,
                out: &mut out,
            }];
            let s = c
                .stream_parallel(
                    io::Cursor::new(c.payload),
                    &mut w,
                    &opts(HashCheck::Enforce),
                    StreamEnd::Whole,
                    threads,
                )
                .unwrap();
            assert_eq!(out, d.data);
            assert_eq!(s.computed_hash, d.computed_hash);
        }
    }
}

/// Counts the bytes written to it, and the non-zero ones.
#[derive(Default)]
struct Zeros {
    len: u64,
    non_zero: u64,
}

impl Write for Zeros {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.len += buf.len() as u64;
        self.non_zero += buf.iter().filter(|&&b| b != 0).count() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A bundle of one entry of 4 GiB + 5 bytes of zeros (more than version
/// 2 holds), compressed as one zstd frame and as frames of 32 MiB: the
/// entry streams out whole on one thread and on two, in memory that does
/// not grow with it (the test itself never holds the contents), and a
/// declared size one byte short is an error.
#[test]
fn streams_more_than_4_gib() {
    const FRAME: usize = 32 << 20;
    let id = "hipv4-amdgcn-amd-amdhsa--gfx90a";
    let size = (4u64 << 30) + 5;
    let mut head = bundle_of(&[(id, vec![1])]);
    let offset = head.len() as u64 - 1;
    head.pop();
    head[32..40].copy_from_slice(&offset.to_le_bytes());
    head[40..48].copy_from_slice(&size.to_le_bytes());
    let total = offset + size;
    // The contents: `head`, then zeros, in pieces of at most FRAME bytes.
    let mut zeros = vec![0u8; FRAME];
    let mut pieces = |each: &mut dyn FnMut(&[u8])| {
        let mut at = 0u64;
        while at < total {
            let n = usize::try_from((total - at).min(FRAME as u64)).unwrap();
            let buf = &mut zeros[..n];
            if at == 0 {
                buf[..head.len()].copy_from_slice(&head);
            }
            each(buf);
            if at == 0 {
                buf[..head.len()].fill(0);
            }
            at += n as u64;
        }
    };
    let mut framed = Vec::new();
    let mut one = Vec::new();
    {
        let mut enc = zstd::stream::write::Encoder::new(&mut one, 1).unwrap();
        enc.set_pledged_src_size(Some(total)).unwrap();
        let mut cctx = zstd_safe::CCtx::create();
        let mut out = Vec::with_capacity(zstd_safe::compress_bound(FRAME));
        let mut each = |piece: &[u8]| {
            enc.write_all(piece).unwrap();
            out.clear();
            cctx.compress2(&mut out, piece).unwrap();
            framed.extend_from_slice(&out);
        };
        pieces(&mut each);
        enc.finish().unwrap();
    }
    let mut start = Vec::new();
    // A lie is named by decoding the payload whole (as LLVM would, to
    // give its message): 4 GiB of memory, so only one of them here (the
    // lies are tried on small bundles above).
    let cases = [
        ("one frame", &one, 0i64, [1, 2].as_slice()),
        ("32 MiB frames", &framed, 0, &[1, 2]),
        ("32 MiB frames", &framed, -1, &[2]),
    ];
    for (name, payload, lie, threads) in cases {
        let declared = total.checked_add_signed(lie).unwrap();
        let c = zstd_ccob(payload, declared, 0);
        let ccob = Ccob::parse_whole(&c).unwrap();
        {
            for &threads in threads {
                let what = format!("{name}, declared {lie:+}, {threads} threads");
                let mut entry = Zeros::default();
                start.clear();
                let mut w = [
                    Wanted {
                        range: 0..offset,
                        out: &mut start,
                    },
                    Wanted {
                        range: offset..total.min(declared),
                        out: &mut entry,
                    },
                ];
                let r = ccob.stream_parallel(
                    io::Cursor::new(ccob.payload),
                    &mut w,
                    &opts(HashCheck::Skip),
                    StreamEnd::Whole,
                    threads,
                );
                if lie != 0 {
                    assert!(r.is_err(), "{what}");
                    continue;
                }
                assert_eq!(r.unwrap().decompressed, total, "{what}");
                assert_eq!(start, head, "{what}");
                assert_eq!((entry.len, entry.non_zero), (size, 0), "{what}");
            }
        }
    }
}

//! Compressed OffloadBinaries and compressed CUDA fatbin entries, streamed:
//! what a visitor's sinks get and the hashes equal what the whole-buffer
//! decompression gives, and damaged or lying data keeps nothing.

use super::*;
use crate::num::usize_from;
use crate::offload_binary::{self as ob, Compression as Packing};

/// How a visitor got an image (by id): streamed to a sink and kept, in
/// one piece, or not at all (and why).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Got {
    Streamed(usize, Vec<u8>),
    Piece(usize, Vec<u8>),
    Failed(usize, String),
}

type Log = std::sync::Arc<std::sync::Mutex<Vec<Got>>>;

/// How a [`Record`] takes an image's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Take {
    /// Handed over in one piece ([`Visit::image`]).
    #[default]
    Piece,
    /// Streamed to a sink.
    Sink,
    /// Read by a reader of its own ([`Visit::reader`]), which logs what
    /// it read as a [`Got::Piece`] when it comes back.
    Read,
}

/// Takes every image, as `take` says.
#[derive(Default)]
struct Record {
    take: Take,
    log: Log,
}

/// [`Record`]'s reader: keeps the bytes it reads.
struct Keep(Option<Vec<u8>>);

impl ImageReader for Keep {
    fn read(&mut self, bytes: &[u8]) {
        assert!(self.0.is_none(), "read twice");
        self.0 = Some(bytes.to_vec());
    }
}

impl Record {
    fn new(take: Take) -> Record {
        Record {
            take,
            log: Log::default(),
        }
    }

    fn got(&self) -> Vec<Got> {
        self.log.lock().unwrap().clone()
    }
}

impl Visit for Record {
    fn wants(&mut self, _: &Image) -> bool {
        true
    }
    fn image(&mut self, image: &Image, bytes: &[u8]) {
        let got = match self.take {
            Take::Read => Got::Failed(image.id, "handed over, not read".into()),
            _ => Got::Piece(image.id, bytes.to_vec()),
        };
        self.log.lock().unwrap().push(got);
    }
    fn reader(&mut self, _: &Image) -> Option<Box<dyn ImageReader>> {
        (self.take == Take::Read).then(|| Box::new(Keep(None)) as Box<dyn ImageReader>)
    }
    fn read(
        &mut self,
        image: &Image,
        reader: Box<dyn ImageReader>,
        end: std::result::Result<(), Unread>,
    ) {
        let reader: Box<dyn std::any::Any> = reader;
        let keep = reader.downcast::<Keep>().expect("our own reader back");
        let got = match (end, keep.0) {
            (Ok(()), Some(bytes)) => Got::Piece(image.id, bytes),
            (Ok(()), None) => Got::Failed(image.id, "back unread".into()),
            (Err(why), _) => Got::Failed(image.id, why.to_string()),
        };
        self.log.lock().unwrap().push(got);
    }
    fn unavailable(&mut self, image: &Image, why: &Unread) {
        self.log
            .lock()
            .unwrap()
            .push(Got::Failed(image.id, why.to_string()));
    }
    fn sink(&mut self, image: &Image) -> Option<Box<dyn ImageSink>> {
        let (id, log) = (image.id, self.log.clone());
        (self.take == Take::Sink).then(|| {
            VecSink::boxed(move |bytes| {
                log.lock().unwrap().push(Got::Streamed(id, bytes));
            })
        })
    }
    fn streamed(
        &mut self,
        image: &Image,
        sink: Box<dyn ImageSink>,
        end: std::result::Result<(), SinkError>,
    ) {
        match end {
            Ok(()) => sink.keep().unwrap(),
            Err(SinkError::Data(why)) => self.unavailable(image, &why),
            Err(SinkError::Write(e)) => self.unavailable(image, &Unread::new(e.to_string())),
        }
    }
}

/// Scans `data` on `threads` threads with a [`Record`] that takes every
/// image as `take`: what it got, and the report.
fn recorded(data: &[u8], take: Take, threads: usize) -> (Vec<Got>, Report) {
    let mut v = Record::new(take);
    let o = Options {
        threads,
        ..Options::default()
    };
    let r = scan_with(data, &o, &mut v);
    (v.got(), r)
}

/// The ways damaged images are taken: each way on one thread, and
/// readers on two as well.
const DAMAGED: [(Take, usize); 4] = [
    (Take::Sink, 1),
    (Take::Piece, 1),
    (Take::Read, 1),
    (Take::Read, 2),
];

/// A version 3 binary (uncompressed) of these images, each with its own
/// triple and architecture.
fn v3(images: &[&[u8]]) -> Vec<u8> {
    let specs: Vec<ImageSpec> = images
        .iter()
        .enumerate()
        .map(|(i, data)| ImageSpec {
            image_kind: ImageKind::IMG_Object,
            offload_kind: OffloadKind::OFK_OpenMP,
            flags: 0,
            strings: vec![
                (b"triple".to_vec(), b"amdgcn-amd-amdhsa".to_vec()),
                (b"arch".to_vec(), format!("gfx90{i}").into_bytes()),
            ],
            size: data.len() as u64,
        })
        .collect();
    let mut out = Vec::new();
    ob::layout_v3(&specs)
        .unwrap()
        .write_to(&mut out, images)
        .unwrap();
    out
}

/// Image sets: one image, three with an empty one between, an empty one
/// first, one over a decompressor chunk.
fn image_sets() -> Vec<Vec<Vec<u8>>> {
    let elf = |n: usize, seed: u64| {
        let mut v = b"\x7fELF".to_vec();
        v.extend(noise(n, seed).iter().map(|b| b % 32));
        v
    };
    vec![
        vec![elf(5000, 1)],
        vec![elf(3000, 2), Vec::new(), elf(70_000, 3)],
        vec![Vec::new(), elf(10, 4)],
        vec![elf(2_500_000, 5), elf(100, 6)],
    ]
}

/// The facts of a report that a compressed binary and its plain form
/// share: per image, its metadata, place in the binary, size and hash.
fn ob_facts(r: &Report) -> Vec<String> {
    r.images
        .iter()
        .map(|i| {
            format!(
                "{} {} {:?} {} {} {:?} {:?}",
                i.triple,
                i.target_id,
                i.image_kind.map(|k| k.to_string()),
                i.relative_offset,
                i.size,
                i.hash.map(|h| h.to_string()),
                i.nested
            )
        })
        .collect()
}

#[test]
fn compressed_offload_binaries_stream_to_what_whole_inflation_gives() {
    for images in image_sets() {
        let refs: Vec<&[u8]> = images.iter().map(Vec::as_slice).collect();
        let plain = v3(&refs);
        for how in [Packing::Zstd, Packing::Zlib] {
            let packed = ob::compress(&plain, how, 3).unwrap();
            let what = format!("{} images, {how:?}", images.len());
            // The whole-buffer reader's images.
            let whole = ob::read_all(&packed, &crate::Limits::default()).unwrap();
            let whole: Vec<Vec<u8>> = whole.iter().map(|i| i.image.to_vec()).collect();
            assert_eq!(whole, images, "{what}");
            // The tables came from the first bytes.
            let inf = ob::read_inflating(&packed, 0, &crate::Limits::default())
                .unwrap()
                .unwrap();
            assert_eq!(inf.images.len(), images.len(), "{what}");
            for hash in [None, Some(HashAlgo::Md5)] {
                let opts = Options {
                    hash,
                    ..Options::default()
                };
                let p = scan(&plain, &opts);
                let z = scan(&packed, &opts);
                assert!(z.problems.is_empty(), "{what}: {:?}", z.problems);
                assert_eq!(ob_facts(&z), ob_facts(&p), "{what}");
                let comp = z.containers[0].compression.as_ref().unwrap();
                assert!(comp.decompressed, "{what}");
                if let Some(h) = hash {
                    for (img, bytes) in z.images.iter().zip(&whole) {
                        assert_eq!(img.hash, Some(h.digest(bytes)), "{what}");
                    }
                }
                // Streamed to sinks, or in one piece from a buffer of the
                // image alone (handed over, or to a reader).
                for take in [Take::Sink, Take::Piece, Take::Read] {
                    let sinks = take == Take::Sink;
                    let mut v = Record::new(take);
                    scan_with(&packed, &opts, &mut v);
                    let want: Vec<Got> = whole
                        .iter()
                        .enumerate()
                        .map(|(i, b)| {
                            if sinks {
                                Got::Streamed(i, b.clone())
                            } else {
                                Got::Piece(i, b.clone())
                            }
                        })
                        .collect();
                    assert!(v.got() == want, "{what}, {take:?}");
                }
            }
        }
    }
}

#[test]
fn compressed_offload_binaries_that_lie_or_are_cut_keep_nothing() {
    let images = &image_sets()[1];
    let refs: Vec<&[u8]> = images.iter().map(Vec::as_slice).collect();
    let plain = v3(&refs);
    for how in [Packing::Zstd, Packing::Zlib] {
        let packed = ob::compress(&plain, how, 3).unwrap();
        let stored = u64::from_le_bytes(packed[8..16].try_into().unwrap());
        let inflated = u64::from_le_bytes(packed[32..40].try_into().unwrap());
        let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
        for delta in [-8i64, -1, 1, 8, 1 << 20] {
            let mut bad = packed.clone();
            let lie = inflated.wrapping_add_signed(delta);
            bad[32..40].copy_from_slice(&lie.to_le_bytes());
            cases.push((format!("inflated size {delta:+}"), bad));
        }
        // Cut: the compressed data loses its last 100 bytes (the sizes
        // fixed up to match), or the middle of the stream is damaged.
        let mut cut = packed[..usize_from(stored) - 100].to_vec();
        cut[8..16].copy_from_slice(&(stored - 100).to_le_bytes());
        cut.resize(cut.len().div_ceil(8) * 8, 0);
        cases.push(("cut".into(), cut));
        let mut torn = packed.clone();
        let mid = usize_from(stored) * 2 / 3;
        torn[mid..mid + 16].fill(0xA5);
        cases.push(("torn".into(), torn));
        for (what, bad) in cases {
            let whole = ob::read_all(&bad, &crate::Limits::default());
            for (take, threads) in DAMAGED {
                let (got, r) = recorded(&bad, take, threads);
                let what = format!("{how:?} {what}, {take:?}");
                // What the whole-buffer reader says, or (damage that still
                // inflates to the declared size: zlib's check caught it,
                // zstd's frames have no checksum) the bytes it gives.
                match &whole {
                    Err(e) => {
                        assert!(got.is_empty(), "{what}: {got:?}");
                        assert_eq!(r.problems.len(), 1, "{what}: {:?}", r.problems);
                        let m = &r.problems[0].message;
                        assert!(m.contains(&e.to_string()), "{what}: {m} / {e}");
                    }
                    Ok(imgs) => {
                        let got: Vec<Vec<u8>> = got
                            .into_iter()
                            .map(|g| match g {
                                Got::Streamed(_, b) | Got::Piece(_, b) => b,
                                Got::Failed(i, w) => panic!("{what}: {i} failed: {w}"),
                            })
                            .collect();
                        let want: Vec<Vec<u8>> = imgs.iter().map(|i| i.image.to_vec()).collect();
                        assert_eq!(got, want, "{what}");
                    }
                }
            }
        }
    }
}

/// A version 3 binary of one image (`image_len` bytes) whose string
/// entries and strings come after the image, not before it: the tables
/// lie `image_len` bytes into the inflated binary.
fn tables_last(image_len: usize) -> (Vec<u8>, Vec<u8>) {
    let image: Vec<u8> = noise(image_len, 9).iter().map(|b| b % 4).collect();
    let b = v3(&[&image]);
    // Header (40), one entry (40), then the string entries and table up to
    // the image, which runs to the end (less padding).
    let entry = 40;
    let string_at = u64::from_le_bytes(b[entry + 8..entry + 16].try_into().unwrap());
    let image_at = u64::from_le_bytes(b[entry + 24..entry + 32].try_into().unwrap());
    let (string_at, image_at) = (usize_from(string_at), usize_from(image_at));
    let strings = b[string_at..image_at].to_vec();
    let mut out = b[..string_at].to_vec();
    let new_image_at = out.len() as u64;
    out.extend_from_slice(&image);
    let new_strings_at = out.len();
    let moved = |old: u64| old - string_at as u64 + new_strings_at as u64;
    out.extend_from_slice(&strings);
    out.resize(out.len().div_ceil(8) * 8, 0);
    let size = out.len() as u64;
    out[8..16].copy_from_slice(&size.to_le_bytes());
    out[entry + 8..entry + 16].copy_from_slice(&moved(string_at as u64).to_le_bytes());
    out[entry + 24..entry + 32].copy_from_slice(&new_image_at.to_le_bytes());
    // Two string entries (key, value, size) pointing into the table.
    for k in 0..2 {
        let se = new_strings_at + 24 * k;
        for field in [se, se + 8] {
            let old = u64::from_le_bytes(out[field..field + 8].try_into().unwrap());
            out[field..field + 8].copy_from_slice(&moved(old).to_le_bytes());
        }
    }
    (out, image)
}

#[test]
fn tables_past_the_first_bytes_are_read_from_more_or_from_the_whole() {
    // 100 KiB in: found by reading further; 17 MiB in: past the most read
    // for tables, so the binary is inflated whole, with the same report.
    for (len, streamed) in [(100 << 10, true), (17 << 20, false)] {
        let (plain, image) = tables_last(len);
        assert_eq!(
            ob::read_all(&plain, &crate::Limits::default()).unwrap()[0].image,
            image
        );
        let packed = ob::compress(&plain, Packing::Zstd, 1).unwrap();
        let inf = ob::read_inflating(&packed, 0, &crate::Limits::default()).unwrap();
        assert_eq!(inf.is_some(), streamed, "{len}");
        let opts = Options {
            hash: Some(HashAlgo::Xxh3_128),
            ..Options::default()
        };
        let z = scan(&packed, &opts);
        assert!(z.problems.is_empty(), "{len}: {:?}", z.problems);
        assert_eq!(ob_facts(&z), ob_facts(&scan(&plain, &opts)), "{len}");
        let mut v = Record::new(Take::Sink);
        scan_with(&packed, &Options::default(), &mut v);
        let want = if streamed {
            Got::Streamed(0, image)
        } else {
            Got::Piece(0, image)
        };
        assert!(v.got() == [want], "{len}");
    }
}

#[test]
fn a_compressed_offload_binary_holding_containers_is_walked_from_memory() {
    // An image that is itself an OffloadBinary: its containers are found,
    // as in the plain binary, and the visitor gets every image (whole).
    let inner = super::offload_binary(&[("nvptx64-nvidia-cuda", "sm_80", b"cubin")]);
    let plain = v3(&[b"\x7fELFhost", &inner]);
    let packed = ob::compress(&plain, Packing::Zlib, 6).unwrap();
    let z = scan(&packed, &Options::default());
    let p = scan(&plain, &Options::default());
    assert_eq!(ob_facts(&z), ob_facts(&p));
    assert_eq!(z.containers.len(), 2);
    assert_eq!(z.images[1].nested, Some(1));
    let mut v = Record::new(Take::Sink);
    scan_with(&packed, &Options::default(), &mut v);
    let got = v.got();
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|g| matches!(g, Got::Piece(..))), "{got:?}");
    assert_eq!(got[2], Got::Piece(2, b"cubin".to_vec()));
}

/// A fatbin of compressed entries: LZ4 and zstd, empty and large (a
/// cubin longer than the LZ4 history and than a decoding step), and a
/// plain entry; with what each decompresses to.
fn fatbin_matrix() -> (Vec<u8>, Vec<Vec<u8>>) {
    let elf = |n: usize, seed: u64| -> Vec<u8> {
        let mut v = b"\x7fELF".to_vec();
        v.extend(noise(n, seed).iter().map(|b| b % 16));
        v
    };
    let images = vec![
        Vec::new(),
        elf(300_000, 1),
        b"\x7fELF".to_vec(),
        Vec::new(),
        elf(40_000, 2),
        elf(200, 3),
    ];
    let lz = |d: &[u8]| lz4_flex::block::compress(d);
    let zs = |d: &[u8]| zstd::bulk::compress(d, 3).unwrap();
    let payloads = [
        lz(&images[0]),
        lz(&images[1]),
        lz(&images[2]),
        zs(&images[3]),
        zs(&images[4]),
    ];
    let mut entries: Vec<(u16, u32, u64, &[u8], u64)> = payloads
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let flag = if i < 3 {
                fatbin::FLAG_LZ4
            } else {
                fatbin::FLAG_ZSTD
            };
            (2, 80, 0x11 | flag, p.as_slice(), images[i].len() as u64)
        })
        .collect();
    entries.push((2, 90, 0x11, images[5].as_slice(), 0));
    let f = fatbin::build_compressed(&entries);
    (f, images)
}

#[test]
fn compressed_fatbin_entries_stream_to_what_whole_decompression_gives() {
    let (f, images) = fatbin_matrix();
    let parsed = fatbin::read(&f).unwrap();
    // The whole-buffer decompression of each entry: the images.
    for (e, img) in parsed.entries.iter().zip(&images).take(5) {
        assert_eq!(e.contents(u64::MAX).unwrap().as_ref(), &img[..]);
    }
    let r = scan(
        &f,
        &Options {
            hash: Some(HashAlgo::Md5),
            ..Options::default()
        },
    );
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    for ((img, bytes), e) in r.images.iter().zip(&images).zip(&parsed.entries) {
        // The plain entry's bytes are its payload, padding and all.
        let bytes = if e.compressed() { bytes } else { e.payload };
        assert_eq!(img.hash, Some(HashAlgo::Md5.digest(bytes)), "{}", img.id);
    }
    // Entries decoded on several threads: the same report, the same bytes
    // (an uncompressed entry may come before the compressed ones ahead of
    // it).
    let one = format!(
        "{:?}",
        scan(
            &f,
            &Options {
                verify: true,
                ..Options::default()
            }
        )
    );
    for threads in [2, 4] {
        let o = Options {
            verify: true,
            threads,
            ..Options::default()
        };
        assert_eq!(format!("{:?}", scan(&f, &o)), one, "{threads} threads");
    }
    for (take, threads) in [
        (Take::Sink, 1),
        (Take::Piece, 1),
        (Take::Read, 1),
        (Take::Sink, 3),
        (Take::Piece, 3),
        (Take::Read, 3),
    ] {
        let sinks = take == Take::Sink;
        let (mut got, _) = recorded(&f, take, threads);
        got.sort_by_key(|g| match g {
            Got::Streamed(id, _) | Got::Piece(id, _) | Got::Failed(id, ..) => *id,
        });
        assert_eq!(got.len(), images.len());
        for (i, (g, want)) in got.iter().zip(&images).enumerate() {
            // The plain entry is handed over from the input (padded to 8).
            let ok = match g {
                Got::Streamed(id, b) => sinks && *id == i && b == want,
                Got::Piece(id, b) if i == 5 => *id == i && b.starts_with(want),
                Got::Piece(id, b) => !sinks && *id == i && b == want,
                Got::Failed(..) => false,
            };
            assert!(ok, "entry {i}, {take:?}, {threads} threads: {g:?}");
        }
    }
}

/// Whether `why` tells what the whole-buffer decompression's error `e`
/// does (a limit: the scan's budget left, not the whole one).
fn says(why: &str, e: &crate::Error) -> bool {
    match e.kind() {
        crate::ErrorKind::LimitExceeded { .. } => why.contains("exceeds the limit"),
        _ => why.contains(&e.to_string()),
    }
}

#[test]
fn compressed_fatbin_entries_that_lie_or_are_cut_keep_nothing() {
    let (f, _) = fatbin_matrix();
    let parsed = fatbin::read(&f).unwrap();
    // Each compressed entry's declared size one more and one less, and its
    // compressed size cut.
    for (i, e) in parsed.entries.iter().enumerate().take(5) {
        let at = usize_from(e.offset);
        let declared = e.decompressed_size.unwrap();
        let csize = u32::try_from(e.payload.len()).unwrap();
        let mut cases = Vec::new();
        for lie in [declared + 1, declared.wrapping_sub(1)] {
            let mut bad = f.clone();
            bad[at + 56..at + 64].copy_from_slice(&lie.to_le_bytes());
            cases.push((format!("declares {lie}"), bad));
        }
        if csize > 1 {
            let mut bad = f.clone();
            bad[at + 16..at + 20].copy_from_slice(&(csize / 2).to_le_bytes());
            cases.push(("cut".into(), bad));
        }
        for (what, bad) in cases {
            let b = fatbin::read(&bad).unwrap();
            // Within the scan's default budget.
            let whole = b.entries[i].contents(Options::default().max_uncompressed);
            let what = format!("entry {i}: {what}");
            for (take, threads) in DAMAGED {
                let (got, r) = recorded(&bad, take, threads);
                if r.stopped.is_some() {
                    // A size past the whole budget (a lie of 2^64 - 1
                    // bytes) stops the scan: nothing of it is read.
                    assert!(
                        matches!(r.stopped, Some(Limit::Uncompressed { .. })),
                        "{what}"
                    );
                    assert!(whole.is_err(), "{what}");
                    continue;
                }
                let mine: Vec<&Got> = got
                    .iter()
                    .filter(|g| matches!(g, Got::Streamed(id, _) | Got::Piece(id, _) | Got::Failed(id, _) if *id == i))
                    .collect();
                // A failure the visitor gets is also the fatbin's problem.
                let problems = usize::from(whole.is_err());
                assert_eq!(r.problems.len(), problems, "{what}: {:?}", r.problems);
                assert!(r.problems.iter().all(|p| p.container == Some(0)), "{what}");
                match &whole {
                    Err(e) => {
                        let ok = matches!(mine[..], [Got::Failed(_, why)] if says(why, e));
                        assert!(ok, "{what}: {mine:?} / {e}");
                        assert!(says(&r.problems[0].message, e), "{what}");
                    }
                    // An empty LZ4 block declared as 4294967295 bytes, say,
                    // cannot decode; any that does gives the same bytes.
                    Ok(b) => assert!(
                        matches!(mine[..], [Got::Streamed(_, s) | Got::Piece(_, s)] if s == b.as_ref()),
                        "{what}"
                    ),
                }
                // The other entries are untouched.
                assert_eq!(got.len(), 6, "{what}");
            }
            // Hashing: a problem naming the entry, no hash for it.
            let opts = Options {
                hash: Some(HashAlgo::Xxh3_128),
                ..Options::default()
            };
            let r = scan(&bad, &opts);
            if r.stopped.is_some() {
                continue;
            }
            if let Err(e) = &whole {
                assert_eq!(r.problems.len(), 1, "{what}: {:?}", r.problems);
                let m = &r.problems[0].message;
                assert!(
                    m.contains(&format!("CUDA fatbin entry {i} (sm_80 cubin)")) && says(m, e),
                    "{what}: {m}"
                );
                assert!(r.images[i].hash.is_none(), "{what}");
            }
        }
    }
}

#[test]
fn failing_streams_use_up_the_budget() {
    // Three zstd entries that each decode to one byte less than declared:
    // each failure is charged its declared size, so that a file of many
    // cannot decode the budget over and over; the third finds it spent.
    let n = 100_000usize;
    let payload = zstd::bulk::compress(&noise(n, 7), 3).unwrap();
    let lie = n as u64 + 1;
    let entries: Vec<(u16, u32, u64, &[u8], u64)> = (0..3)
        .map(|_| (2, 80, 0x11 | fatbin::FLAG_ZSTD, payload.as_slice(), lie))
        .collect();
    let f = fatbin::build_compressed(&entries);
    let opts = Options {
        hash: Some(HashAlgo::Md5),
        // Two entries' declared sizes and decoder set-ups, not three.
        max_uncompressed: 2 * (lie + super::super::walk::DECODER_SETUP) + 10,
        ..Options::default()
    };
    let r = scan(&f, &opts);
    let messages: Vec<&str> = r.problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages.iter().all(|m| !m.contains("exceeds the limit")),
        "{messages:?}"
    );
    // The third finds the budget spent: the scan stops there.
    assert_eq!(
        r.stopped,
        Some(Limit::Uncompressed {
            limit: 2 * (lie + super::super::walk::DECODER_SETUP) + 10,
            declared: lie
        })
    );
}

#[test]
fn damaged_fatbin_entries_are_reported_in_entry_order_whatever_the_threads() {
    // Entry 0 is long and fails at its end (it declares a byte more than
    // it holds); entry 1 declares more than its data can hold (a problem
    // found before anything is decoded); entry 2, stored, is a fatbin
    // that does not parse (a problem of the walk into it); entry 3 is cut.
    // With threads, entry 0 is still being decoded while the others are
    // looked at: the report must still list them as one thread does.
    let long: Vec<u8> = b"\x7fELF"
        .iter()
        .copied()
        .chain(noise(3 << 20, 9).iter().map(|b| b % 4))
        .collect();
    let lz = lz4_flex::block::compress(&long);
    let small = lz4_flex::block::compress(b"\x7fELF and more");
    let mut nested = fatbin::build(&[(2, 80, 0x11, b"\x7fELF")]);
    nested.truncate(24);
    let cut = &small[..small.len() - 2];
    let entries: Vec<(u16, u32, u64, &[u8], u64)> = vec![
        (2, 80, 0x11 | fatbin::FLAG_LZ4, &lz, long.len() as u64 + 1),
        (2, 86, 0x11 | fatbin::FLAG_LZ4, &small, 1 << 20),
        (2, 89, 0x11, &nested, 0),
        (2, 90, 0x11 | fatbin::FLAG_LZ4, cut, 17),
    ];
    let f = fatbin::build_compressed(&entries);
    let report = |threads: usize| {
        scan(
            &f,
            &Options {
                verify: true,
                threads,
                ..Options::default()
            },
        )
    };
    let one = report(1);
    let said: Vec<&str> = one.problems.iter().map(|p| p.message.as_str()).collect();
    assert!(said.len() >= 4, "{said:?}");
    for (i, m) in said.iter().enumerate().filter(|(i, _)| *i < 2) {
        assert!(m.contains(&format!("CUDA fatbin entry {i} ")), "{said:?}");
    }
    assert!(
        said.last().unwrap().contains("CUDA fatbin entry 3 "),
        "{said:?}"
    );
    let one = format!("{one:?}");
    for threads in [2, 3] {
        for _ in 0..3 {
            assert_eq!(format!("{:?}", report(threads)), one, "{threads} threads");
        }
    }
    // A limit met at entry 3, while entry 0 is still being decoded: what
    // was found of the entries before it is in the report, as with one
    // thread.
    let stopped = |threads: usize| {
        scan(
            &f,
            &Options {
                verify: true,
                threads,
                max_images: 3,
                ..Options::default()
            },
        )
    };
    let one = stopped(1);
    assert!(matches!(one.stopped, Some(Limit::Images(3))), "{one:?}");
    assert_eq!(one.problems.len(), 3, "{:?}", one.problems);
    let one = format!("{one:?}");
    for threads in [2, 3] {
        assert_eq!(format!("{:?}", stopped(threads)), one, "{threads} threads");
    }
}

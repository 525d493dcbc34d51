//! CUDA fatbins: compressed entries hashed and visited decompressed, PTX
//! as its text, corrupt entries reported once.

use super::*;

/// A fatbin with an LZ4 cubin, a zstd PTX entry and a plain cubin, and
/// what the first two decompress to.
fn compressed_fatbin() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let cubin: Vec<u8> = b"\x7fELF"
        .iter()
        .copied()
        .chain((0..2000u32).map(|i| (i % 29) as u8))
        .collect();
    let ptx = b".version 8.0\n.target sm_80\n.address_size 64\n\n\n\n\n\n\0".to_vec();
    let lz = lz4_flex::block::compress(&cubin);
    let zs = zstd::bulk::compress(&ptx, 3).unwrap();
    let f = fatbin::build_compressed(&[
        (2, 80, 0x11 | fatbin::FLAG_LZ4, &lz, cubin.len() as u64),
        (1, 80, 0x11 | fatbin::FLAG_ZSTD, &zs, ptx.len() as u64),
        (2, 90, 0x11, b"\x7fELF-plain", 0),
    ]);
    (f, cubin, ptx)
}

struct CollectAll(Vec<Vec<u8>>, Vec<(usize, String)>);

impl Visit for CollectAll {
    fn wants(&mut self, _: &Image) -> bool {
        true
    }
    fn image(&mut self, _: &Image, bytes: &[u8]) {
        self.0.push(bytes.to_vec());
    }
    fn unavailable(&mut self, image: &Image, why: &Unread) {
        self.1.push((image.id, why.to_string()));
    }
}

#[test]
fn compressed_fatbin_entries_are_hashed_and_visited_decompressed() {
    let (f, cubin, ptx) = compressed_fatbin();
    // PTX is its text, without the NUL that ends it (as cuobjdump -xptx
    // writes it).
    let text = &ptx[..ptx.len() - 1];
    // Listing decompresses no cubin, only PTX (for its text's size), and
    // reports both sizes.
    let r = scan(&f, &Options::default());
    sane(&r, f.len());
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(r.images[0].uncompressed_size, Some(cubin.len() as u64));
    assert!(r.images[0].size < cubin.len() as u64);
    assert_eq!(r.images[1].uncompressed_size, Some(text.len() as u64));
    assert_eq!(r.decompressed, ptx.len() as u64);
    assert_eq!(r.images[2].uncompressed_size, None);
    // Hashes are of the decompressed bytes.
    let opts = Options {
        hash: Some(HashAlgo::Md5),
        ..Options::default()
    };
    let r = scan(&f, &opts);
    let hashes: Vec<String> = r
        .images
        .iter()
        .map(|i| i.hash.as_ref().unwrap().to_string())
        .collect();
    assert_eq!(
        hashes,
        [
            HashAlgo::Md5.hash(&cubin),
            HashAlgo::Md5.hash(text),
            HashAlgo::Md5.hash(b"\x7fELF-plain\0\0\0\0\0\0")
        ]
    );
    // So are the bytes a visitor gets.
    let mut v = CollectAll(Vec::new(), Vec::new());
    scan_with(&f, &Options::default(), &mut v);
    assert_eq!(v.0[..2], [cubin.clone(), text.to_vec()]);
    assert!(v.1.is_empty());
    // `size` counts the decompressed bytes, and the compressed ones as stored.
    let s = size("f", f.len() as u64, &r);
    let c = &s.by_kind["cubin"];
    assert_eq!(c.bytes, cubin.len() as u64 + 16);
    assert_eq!(c.stored, r.images[0].size + 16);
    assert_eq!(s.by_kind["ptx"].bytes, text.len() as u64);
    assert_eq!(s.by_kind["ptx"].stored, r.images[1].size);
}

/// PTX entries stored as they are: the text before the first NUL, in the
/// size, the hash and the bytes a visitor gets; the NUL, the padding and
/// anything after a NUL are left out, as `cuobjdump -xptx` leaves them.
#[test]
fn plain_ptx_entries_are_their_text() {
    let text = b".version 8.0\n.target sm_90\n.address_size 64\n// 45 bytes";
    let mut stored = text.to_vec();
    stored.extend_from_slice(b"\0//after the NUL\n");
    let f = fatbin::build_compressed(&[
        (1, 90, 0x11, &stored, 0),
        (1, 80, 0x11, text, 0), // no NUL at all: all text
    ]);
    let opts = Options {
        hash: Some(HashAlgo::Md5),
        ..Options::default()
    };
    let r = scan(&f, &opts);
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(r.images[0].size, text.len() as u64);
    assert_eq!(
        r.images[0].hash.as_ref().unwrap().to_string(),
        HashAlgo::Md5.hash(text)
    );
    // The padding (to 8 bytes) is zeros: left out too.
    assert_eq!(r.images[1].size, text.len() as u64);
    let mut v = CollectAll(Vec::new(), Vec::new());
    scan_with(&f, &Options::default(), &mut v);
    assert_eq!(v.0, [text.to_vec(), text.to_vec()]);
    let s = size("f", f.len() as u64, &r);
    assert_eq!(s.by_kind["ptx"].bytes, 2 * text.len() as u64);
}

/// A compressed PTX entry whose text ends before its last byte: the size
/// (known without --hash), the hash and the visitor's bytes all stop at
/// the first NUL.
#[test]
fn compressed_ptx_stops_at_its_first_nul() {
    let text = b".version 8.0\n.target sm_100\n";
    let mut data = text.to_vec();
    data.extend_from_slice(b"\0\0tail\0");
    let lz = lz4_flex::block::compress(&data);
    let f = fatbin::build_compressed(&[(1, 100, 0x11 | fatbin::FLAG_LZ4, &lz, data.len() as u64)]);
    let r = scan(&f, &Options::default());
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(r.images[0].uncompressed_size, Some(text.len() as u64));
    let s = size("f", f.len() as u64, &r);
    assert_eq!(s.by_kind["ptx"].bytes, text.len() as u64);
    let opts = Options {
        hash: Some(HashAlgo::Md5),
        ..Options::default()
    };
    let r = scan(&f, &opts);
    assert_eq!(
        r.images[0].hash.as_ref().unwrap().to_string(),
        HashAlgo::Md5.hash(text)
    );
    let mut v = CollectAll(Vec::new(), Vec::new());
    scan_with(&f, &Options::default(), &mut v);
    assert_eq!(v.0, [text.to_vec()]);
    // A compressed PTX entry that does not decompress is damage, found
    // without --hash (its size cannot be told otherwise).
    let f =
        fatbin::build_compressed(&[(1, 100, 0x11 | fatbin::FLAG_LZ4, &lz, data.len() as u64 + 1)]);
    let r = scan(&f, &Options::default());
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert_eq!(r.images[0].uncompressed_size, Some(data.len() as u64 + 1));
}

#[test]
fn corrupt_compressed_fatbin_entries_are_reported_once() {
    let (mut f, _, _) = compressed_fatbin();
    // The cubin's declared size lies (one byte more than it decodes to).
    let at = 16 + 56;
    let n = u64::from_le_bytes(f[at..at + 8].try_into().unwrap());
    f[at..at + 8].copy_from_slice(&(n + 1).to_le_bytes());
    // Listing does not decompress: nothing is wrong yet.
    let r = scan(&f, &Options::default());
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    // Hashing is a problem naming the entry; the image has no hash.
    let opts = Options {
        hash: Some(HashAlgo::Xxh3_128),
        ..Options::default()
    };
    let r = scan(&f, &opts);
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    let m = &r.problems[0].message;
    assert!(
        m.contains("CUDA fatbin entry 0 (sm_80 cubin)") && m.contains("LZ4"),
        "{m}"
    );
    assert!(r.images[0].hash.is_none() && r.images[1].hash.is_some());
    // A visitor that wanted it is told too (the problem is the same), and
    // gets the other images.
    let mut v = CollectAll(Vec::new(), Vec::new());
    let r = scan_with(&f, &Options::default(), &mut v);
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert_eq!(&r.problems[0].message, m);
    assert_eq!(v.0.len(), 2);
    assert_eq!(v.1.len(), 1);
    assert_eq!(v.1[0].0, 0);
    // The budget bounds what one file may decompress.
    let (f, _, _) = compressed_fatbin();
    let opts = Options {
        hash: Some(HashAlgo::Xxh3_128),
        max_uncompressed: 100,
        ..Options::default()
    };
    let r = scan(&f, &opts);
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert!(
        matches!(r.stopped, Some(Limit::Uncompressed { limit: 100, .. })),
        "{:?}",
        r.stopped
    );
}

/// Fatbin entries are named as `cuobjdump` names them, and say what their
/// code is for: an arch-specific cubin `sm_90a`, a family cubin `sm_100`
/// built for `sm_100f`, family PTX `sm_120f`.
#[test]
fn arch_specific_and_family_entries_are_named_as_cuobjdump_names_them() {
    let (a, f) = (fatbin::FLAG_ARCH_SPECIFIC, fatbin::FLAG_FAMILY);
    let data = fatbin::build(&[
        (2, 90, 0x11 | a, b"\x7fELF"),
        (2, 100, 0x11 | f, b"\x7fELF"),
        (1, 120, 0x11 | f, b".target sm_120f\0"),
        (2, 80, 0x11, b"\x7fELF"),
    ]);
    let r = scan(&data, &Options::default());
    let got: Vec<(&str, &str, Option<&str>)> = r
        .images
        .iter()
        .map(|i| {
            (
                i.arch.as_str(),
                i.target_id.as_str(),
                i.cuda_arch.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("sm_90a", "sm_90a", Some("sm_90a")),
            ("sm_100", "sm_100", Some("sm_100f")),
            ("sm_120f", "sm_120f", Some("sm_120f")),
            ("sm_80", "sm_80", Some("sm_80")),
        ]
    );
    assert_eq!(r.images[1].code_arch(), "sm_100f");
}

//! Scanner tests on containers made in memory: each container kind found
//! raw and as a file, nesting, and hostile inputs (truncation, lying sizes,
//! compression bombs, magics sprinkled in noise, nesting bombs). Nothing may
//! panic; a bad candidate is skipped (raw scan) or reported (where a
//! container was expected), never fatal.

use super::*;
use crate::bundle::binary::{self as bundle, EntrySpec};
use crate::bundle::ccob::{self as ccob, CompressOptions};
use crate::fatbin;
use crate::offload_binary::{ImageKind, ImageSpec, OffloadKind};

mod damage;
mod limits;
mod streamed;

pub(crate) fn offload_binary(images: &[(&str, &str, &[u8])]) -> Vec<u8> {
    let specs: Vec<ImageSpec> = images
        .iter()
        .map(|(triple, arch, data)| ImageSpec {
            image_kind: ImageKind::IMG_Object,
            offload_kind: OffloadKind::OFK_OpenMP,
            flags: 0,
            strings: vec![
                (b"triple".to_vec(), triple.as_bytes().to_vec()),
                (b"arch".to_vec(), arch.as_bytes().to_vec()),
            ],
            size: data.len() as u64,
        })
        .collect();
    let layout = crate::offload_binary::layout(&specs, 1).unwrap();
    let bytes: Vec<&[u8]> = images.iter().map(|i| i.2).collect();
    let mut out = Vec::new();
    layout.write_to(&mut out, &bytes).unwrap();
    out
}

pub(crate) fn bundle(entries: &[(&str, &[u8])], align: u64) -> Vec<u8> {
    let specs: Vec<EntrySpec> = entries
        .iter()
        .map(|(id, d)| EntrySpec {
            id: id.to_string(),
            size: d.len() as u64,
        })
        .collect();
    let layout = bundle::layout(&specs, align).unwrap();
    let bytes: Vec<&[u8]> = entries.iter().map(|e| e.1).collect();
    let mut out = Vec::new();
    layout.write_to(&mut out, &bytes).unwrap();
    out
}

pub(crate) fn ccob(data: &[u8]) -> Vec<u8> {
    ccob::compress_to_vec(data, &CompressOptions::default())
        .unwrap()
        .0
}

const GFX90A: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+";
const HOST: &str = "host-x86_64-unknown-linux-gnu-";

fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[3]
        })
        .collect()
}

fn raw() -> Options {
    Options {
        mode: Mode::Raw,
        ..Options::default()
    }
}

/// Every image's file range lies in the file, and every id is in range.
fn sane(r: &Report, len: usize) {
    for i in &r.images {
        if let Some(o) = i.offset {
            assert!(o + i.size <= len as u64, "image {} past the end", i.id);
        }
        assert!(i.container < r.containers.len());
        assert!(i.nested.is_none_or(|n| n < r.containers.len()));
    }
    for c in &r.containers {
        if let Some(o) = c.offset {
            assert!(o + c.size <= len as u64, "container {} past the end", c.id);
        }
        match c.parent {
            Some(Parent::Image(p)) => assert!(p < r.images.len()),
            Some(Parent::Container(p)) => assert!(p < c.id),
            None => {}
        }
    }
}

/// One blob holding each kind of container, between noise.
fn mixed() -> (Vec<u8>, [usize; 4]) {
    let ob = offload_binary(&[("amdgcn-amd-amdhsa", "gfx942", b"\x7fELF-device-code")]);
    let b = bundle(&[(HOST, b""), (GFX90A, b"\x7fELF-hip-code")], 8);
    let c = ccob(&bundle(&[(GFX90A, b"\x7fELF-compressed")], 1));
    let f = fatbin::build(&[
        (2, 80, 0x15, b"\x7fELF-cubin"),
        (1, 80, 0x15, b".version 7.0\0"),
    ]);
    let mut blob = noise(1000, 1);
    let mut at = [0; 4];
    for (i, part) in [&ob, &b, &c, &f].into_iter().enumerate() {
        // OffloadBinaries need 8-byte alignment within what holds them.
        while !blob.len().is_multiple_of(8) {
            blob.push(0);
        }
        at[i] = blob.len();
        blob.extend_from_slice(part);
        blob.extend_from_slice(&noise(333, i as u64 + 7));
    }
    (blob, at)
}

#[test]
fn raw_scan_finds_every_kind_of_container() {
    let (blob, at) = mixed();
    let r = scan(&blob, &raw());
    sane(&r, blob.len());
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let kinds: Vec<(ContainerKind, Option<u64>)> =
        r.containers.iter().map(|c| (c.kind, c.offset)).collect();
    assert_eq!(
        kinds,
        vec![
            (ContainerKind::OffloadBinary, Some(at[0] as u64)),
            (ContainerKind::Bundle, Some(at[1] as u64)),
            (ContainerKind::Ccob, Some(at[2] as u64)),
            (ContainerKind::Bundle, None),
            (ContainerKind::CudaFatbin, Some(at[3] as u64)),
        ]
    );
    let archs: Vec<&str> = r.images.iter().map(|i| i.target_id.as_str()).collect();
    assert_eq!(
        archs,
        [
            "gfx942",
            "",
            "gfx90a:xnack+",
            "gfx90a:xnack+",
            "sm_80",
            "sm_80"
        ]
    );
    assert_eq!(r.images[2].features, ["xnack+"]);
    assert_eq!(r.images[2].offload_kind, "hip");
    assert_eq!(
        r.images[4].image_kind.map(|k| k.to_string()).as_deref(),
        Some("cubin")
    );
    assert_eq!(
        r.images[5].image_kind.map(|k| k.to_string()).as_deref(),
        Some("ptx")
    );
    // The CCOB was not decompressed into memory, but its entry's kind was
    // read from the first bytes of the stream.
    assert!(!r.containers[2].compression.as_ref().unwrap().decompressed);
    assert_eq!(
        r.images[3].image_kind.map(|k| k.to_string()).as_deref(),
        Some("object")
    );
    // Offsets point at the bytes.
    let img = &r.images[0];
    let o = usize::try_from(img.offset.unwrap()).unwrap();
    assert_eq!(&blob[o..o + 16], b"\x7fELF-device-code");
}

#[test]
fn verify_and_hash_read_compressed_contents() {
    let (blob, _) = mixed();
    let opts = Options {
        verify: true,
        hash: Some(HashAlgo::Md5),
        ..raw()
    };
    let r = scan(&blob, &opts);
    let z = r.containers[2].compression.as_ref().unwrap();
    assert!(z.decompressed);
    assert_eq!(z.hash_ok, Some(true));
    assert_eq!(
        r.images[3].image_kind.map(|k| k.to_string()).as_deref(),
        Some("object")
    );
    assert_eq!(
        r.images[3]
            .hash
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some(HashAlgo::Md5.hash(b"\x7fELF-compressed").as_str())
    );
    assert!(
        r.images[0]
            .hash
            .as_ref()
            .is_some_and(|h| h.to_string().starts_with("md5:"))
    );
}

struct Collect(Vec<(String, Vec<u8>)>);

impl Visit for Collect {
    fn wants(&mut self, image: &Image) -> bool {
        image.arch == "gfx90a"
    }
    fn image(&mut self, image: &Image, bytes: &[u8]) {
        self.0.push((image.target_id.clone(), bytes.to_vec()));
    }
}

#[test]
fn a_visitor_gets_bytes_even_from_compressed_bundles() {
    let (blob, _) = mixed();
    let mut v = Collect(Vec::new());
    let r = scan_with(&blob, &raw(), &mut v);
    assert_eq!(
        v.0,
        vec![
            ("gfx90a:xnack+".to_string(), b"\x7fELF-hip-code".to_vec()),
            ("gfx90a:xnack+".to_string(), b"\x7fELF-compressed".to_vec()),
        ]
    );
    // Decompressed because the visitor wanted an image of it.
    assert!(r.containers[2].compression.as_ref().unwrap().decompressed);
}

#[test]
fn truncation_never_panics() {
    let (blob, _) = mixed();
    for mode in [Mode::Auto, Mode::Raw, Mode::Sections] {
        let opts = Options {
            mode,
            verify: mode == Mode::Raw,
            report_rejects: true,
            ..Options::default()
        };
        for cut in (0..blob.len()).step_by(3) {
            let r = scan(&blob[..cut], &opts);
            sane(&r, cut);
        }
    }
}

#[test]
fn a_file_that_is_a_container_is_read_as_one() {
    let b = bundle(&[(HOST, b""), (GFX90A, b"\x7fELF")], 4096);
    let r = scan(&b, &Options::default());
    assert_eq!(r.format, "bundle");
    assert_eq!(r.images.len(), 2);
    assert_eq!(r.images[1].offset, Some(4096));
    // Truncated inside its last entry: reported, not fatal.
    let r = scan(&b[..4098], &Options::default());
    assert!(r.images.is_empty());
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert!(r.problems[0].message.contains("bundle"));
}

#[test]
fn lying_sizes_are_skipped_in_a_raw_scan_and_reported_in_a_sequence() {
    let mut b = bundle(&[(GFX90A, b"\x7fELF")], 1);
    // The entry's size claims far more than the file has.
    b[40..48].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let mut blob = noise(100, 3);
    blob.extend_from_slice(&b);
    let r = scan(&blob, &raw());
    assert!(r.images.is_empty() && r.problems.is_empty());
    let r = scan(
        &blob,
        &Options {
            report_rejects: true,
            ..raw()
        },
    );
    assert_eq!(r.problems.len(), 1);
    assert!(r.problems[0].message.contains("raw-scan candidate"));
    // The same bundle as a whole file: a problem.
    let r = scan(&b, &Options::default());
    assert!(r.images.is_empty());
    assert_eq!(r.problems.len(), 1);

    // An OffloadBinary whose size field lies, a CCOB whose total size lies,
    // a fatbin whose entry size lies.
    let mut ob = offload_binary(&[("t", "a", b"data")]);
    ob[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    let mut c = ccob(&bundle(&[(GFX90A, b"x")], 1));
    c[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    let mut f = fatbin::build(&[(2, 80, 1, b"abc")]);
    f[16 + 8..16 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
    for bad in [ob, c, f] {
        let r = scan(&bad, &Options::default());
        assert!(r.images.is_empty());
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        let r = scan(&bad, &raw());
        assert!(r.images.is_empty() && r.problems.is_empty());
    }
}

#[test]
fn compression_bombs_are_refused() {
    // 64 MiB of zeros in a bundle compresses to a few KiB.
    let zeros = vec![0u8; 64 << 20];
    let bomb = ccob(&bundle(&[(GFX90A, &zeros)], 1));
    drop(zeros);
    assert!(bomb.len() < 1 << 20);
    // Listing reads only the bundle header: fine, and cheap.
    let r = scan(&bomb, &Options::default());
    assert_eq!(r.images.len(), 1);
    assert_eq!(r.images[0].size, 64 << 20);
    // Decompressing it whole is refused beyond the limit, before allocating.
    let opts = Options {
        verify: true,
        max_uncompressed: 1 << 20,
        ..Options::default()
    };
    let r = scan(&bomb, &opts);
    assert!(r.images.is_empty());
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert!(
        matches!(r.stopped, Some(Limit::Uncompressed { limit, declared })
            if limit == 1 << 20 && declared > 64 << 20),
        "{:?}",
        r.stopped
    );
    // A declared size smaller than what the data expands to: refused while
    // decompressing, with no more than the declared size allocated.
    let mut liar = bomb.clone();
    liar[16..24].copy_from_slice(&1000u64.to_le_bytes());
    for verify in [false, true] {
        let r = scan(
            &liar,
            &Options {
                verify,
                ..Options::default()
            },
        );
        assert!(r.images.is_empty());
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    }
    // Zero bytes declared as 16 GiB: impossible for the compressed size.
    let mut huge = bomb;
    huge[16..24].copy_from_slice(&(16u64 << 30).to_le_bytes());
    let r = scan(
        &huge,
        &Options {
            verify: true,
            ..Options::default()
        },
    );
    assert!(r.images.is_empty());
    assert_eq!(r.problems.len(), 1);
}

#[test]
fn magics_sprinkled_in_noise_are_skipped() {
    let mut blob = noise(1 << 20, 9);
    let mut x = 12345usize;
    for i in 0..5000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let m = magic::Magic::ALL[i % 4].bytes();
        let at = (x >> 20) % (blob.len() - 64);
        blob[at..at + m.len()].copy_from_slice(m);
    }
    let r = scan(&blob, &raw());
    sane(&r, blob.len());
    assert!(r.containers.is_empty());
    assert!(r.problems.is_empty());
    let r = scan(
        &blob,
        &Options {
            report_rejects: true,
            ..raw()
        },
    );
    assert!(r.containers.is_empty());
    assert!(r.problems.len() > 4000, "{}", r.problems.len());
    // A real container among them is still found.
    let ob = offload_binary(&[("amdgcn-amd-amdhsa", "gfx1030", b"code")]);
    blob.truncate(1 << 19);
    blob.extend_from_slice(&ob);
    blob.extend_from_slice(&noise(4096, 10));
    let r = scan(&blob, &raw());
    assert_eq!(r.images.len(), 1);
    assert_eq!(r.images[0].arch, "gfx1030");
}

#[test]
fn nesting_bombs_stop_at_the_depth_limit() {
    let mut inner = offload_binary(&[("t", "leaf", b"\x7fELF")]);
    for _ in 0..30 {
        inner = offload_binary(&[("t", "wrap", &inner)]);
    }
    let r = scan(&inner, &Options::default());
    assert_eq!(r.containers.len(), 8);
    assert_eq!(r.images.len(), 8);
    assert_eq!(r.problems.len(), 1);
    assert!(
        r.problems[0].message.contains("nesting"),
        "{:?}",
        r.problems
    );
    // A depth, not a size.
    assert!(
        r.problems[0]
            .message
            .ends_with("container nesting exceeds the limit of 8 levels"),
        "{}",
        r.problems[0].message
    );
    // Nested images point at their containers.
    assert_eq!(r.images[0].nested, Some(1));
    assert_eq!(r.containers[1].parent, Some(Parent::Image(0)));
}

#[test]
fn ccob_holding_garbage_is_reported() {
    let c = ccob(b"this is not a bundle at all, just text");
    let r = scan(&c, &Options::default());
    assert_eq!(r.containers.len(), 1);
    assert!(r.images.is_empty());
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
}

#[test]
fn text_bundles_are_read_whole() {
    let text = b"\n; __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-\nhost\n; __CLANG_OFFLOAD_BUNDLE____END__ host-x86_64-unknown-linux-gnu-\n\n; __CLANG_OFFLOAD_BUNDLE____START__ hip-amdgcn-amd-amdhsa--gfx90a\ndevice\n; __CLANG_OFFLOAD_BUNDLE____END__ hip-amdgcn-amd-amdhsa--gfx90a\n";
    let r = scan(text, &Options::default());
    assert_eq!(r.containers.len(), 1);
    assert_eq!(r.containers[0].kind, ContainerKind::TextBundle);
    assert_eq!(r.images.len(), 2);
    let o = usize::try_from(r.images[1].offset.unwrap()).unwrap();
    assert_eq!(&text[o..o + 6], b"device");
    // Compressed, it is read after decompression.
    let r = scan(&ccob(text), &Options::default());
    assert_eq!(r.containers.len(), 2);
    assert_eq!(r.containers[1].kind, ContainerKind::TextBundle);
    assert_eq!(r.images.len(), 2);
}

#[test]
fn sequences_report_unexplained_bytes() {
    let mut b = bundle(&[(GFX90A, b"\x7fELF")], 1);
    b.extend_from_slice(&[0; 16]);
    b.extend_from_slice(b"garbage");
    let r = scan(&b, &Options::default());
    assert_eq!(r.images.len(), 1);
    assert_eq!(r.problems.len(), 1);
    assert!(r.problems[0].message.contains("unrecognized"));
}

#[test]
fn rejected_candidates_name_file_offsets() {
    // A CCOB magic with an unknown version, 0x1234 bytes into noise.
    let mut data = vec![0x11u8; 0x2000];
    data[0x1234..0x1234 + 8].copy_from_slice(b"CCOB\x09\x00\x01\x00");
    let r = scan(
        &data,
        &Options {
            report_rejects: true,
            ..raw()
        },
    );
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    let p = &r.problems[0];
    assert_eq!(p.offset, Some(0x1234));
    assert!(p.message.contains("at offset 0x1234"), "{}", p.message);
}

#[test]
fn impossible_declared_sizes_are_caught_when_only_listing() {
    // Listing reads just the bundle header inside a CCOB; a declared size
    // its payload cannot produce must not be listed as a huge bundle.
    let mut c = ccob(&bundle(&[(GFX90A, b"x")], 1));
    c[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let r = scan(&c, &Options::default());
    assert!(r.images.is_empty() && r.containers.is_empty(), "{r:?}");
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert!(
        r.problems[0].message.contains("cannot hold"),
        "{}",
        r.problems[0].message
    );
}

/// An ELF object with an empty `__CLANG_OFFLOAD_BUNDLE__` section and an
/// empty `.llvm.offloading` section, both with `sh_offset` 0x800000006f:
/// the reader does not check the offset of an empty section.
fn empty_sections_far_away() -> Vec<u8> {
    use object::write::Object as WObject;
    use object::{Architecture, BinaryFormat, Endianness, SectionKind};
    let mut o = WObject::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    for name in [
        &b"__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--gfx90a"[..],
        b".llvm.offloading",
    ] {
        o.add_section(Vec::new(), name.to_vec(), SectionKind::Other);
    }
    let mut elf = o.write().unwrap();
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let shoff = usize::try_from(u64_at(&elf, 0x28)).unwrap();
    let shnum = usize::from(u16::from_le_bytes([elf[0x3C], elf[0x3D]]));
    for i in 1..shnum {
        let h = shoff + i * 64;
        let size = u64_at(&elf, h + 0x20);
        if size == 0 {
            elf[h + 0x18..h + 0x20].copy_from_slice(&0x80_0000_006f_u64.to_le_bytes());
        }
    }
    elf
}

#[test]
fn empty_sections_past_the_end_place_no_image_there() {
    // The fuzz finding: an image reported at offset 0x800000006f of a
    // file of a few hundred bytes.
    let elf = empty_sections_far_away();
    let r = scan(&elf, &Options::default());
    sane(&r, elf.len());
    assert!(r.images.is_empty(), "{:?}", r.images);
    assert!(
        r.problems
            .iter()
            .any(|p| p.message.contains("lies outside the file")),
        "{:?}",
        r.problems
    );
    crate::fuzz::scan(&elf);
}

/// A GNU thin archive naming `members` (each claiming `size` bytes).
fn thin_archive(members: &[&str], size: usize) -> Vec<u8> {
    let mut table = String::new();
    let mut offsets = Vec::new();
    for m in members {
        offsets.push(table.len());
        table += &format!("{m}/\n");
    }
    if table.len() % 2 == 1 {
        table.push('\n');
    }
    let header = |name: &str, size: usize| {
        format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644)
    };
    let mut a = String::from("!<thin>\n") + &header("//", table.len()) + &table;
    for off in offsets {
        a += &header(&format!("/{off}"), size);
    }
    a.into_bytes()
}

/// Hands out files by name, counting the reads.
struct Files(Vec<(&'static str, Vec<u8>)>, usize);

impl Visit for Files {
    fn wants(&mut self, _: &Image) -> bool {
        false
    }
    fn image(&mut self, _: &Image, _: &[u8]) {}
    fn thin_member(&mut self, name: &str) -> ThinMember {
        self.1 += 1;
        let (_, bytes) = self.0.iter().find(|(n, _)| *n == name)?;
        Some(Ok(Box::new(bytes.clone())))
    }
}

#[test]
fn thin_archives_naming_each_other_are_read_once() {
    // b.a names c.a five times, c.a names b.a five times: read blindly to
    // the depth limit, that was 5^8 files and 5^8 identical problems.
    // Sizes are fixed-width fields: the lengths do not depend on them.
    let len = thin_archive(&["c.a"; 5], 0).len();
    let b = thin_archive(&["c.a"; 5], len);
    let c = thin_archive(&["b.a"; 5], len);
    let mut files = Files(vec![("b.a", b.clone()), ("c.a", c)], 0);
    let r = scan_with(&b, &Options::default(), &mut files);
    // c.a five times, in each b.a five times, whose members are cycles.
    assert_eq!(files.1, 5 + 25);
    let cycles = r
        .problems
        .iter()
        .filter(|p| p.message.contains("a cycle"))
        .count();
    assert_eq!(cycles, 125, "{:?}", r.problems);
    assert!(r.problems.iter().all(|p| !p.message.contains("too deeply")));
}

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
    fn unavailable(&mut self, image: &Image, why: &str) {
        self.1.push((image.id, why.into()));
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

/// Images kept by [`Sinks`]: (target ID, bytes).
type Kept = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// Streams images to sinks, keeping what each got once told to keep it.
#[derive(Default)]
struct Sinks {
    kept: Kept,
    failed: Vec<String>,
}

/// A sink that collects what it is given and, when kept, hands it to its
/// function.
struct VecSink(Vec<u8>, Box<dyn FnOnce(Vec<u8>) + Send>);

impl VecSink {
    fn boxed(keep: impl FnOnce(Vec<u8>) + Send + 'static) -> Box<dyn ImageSink> {
        Box::new(VecSink(Vec::new(), Box::new(keep)))
    }
}

impl std::io::Write for VecSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl ImageSink for VecSink {
    fn keep(self: Box<Self>) -> std::io::Result<()> {
        let VecSink(bytes, keep) = *self;
        keep(bytes);
        Ok(())
    }
}

impl Visit for Sinks {
    fn wants(&mut self, image: &Image) -> bool {
        !image.offload_kind.is_host()
    }
    fn image(&mut self, image: &Image, bytes: &[u8]) {
        self.kept
            .lock()
            .unwrap()
            .push((image.target_id.clone(), bytes.to_vec()));
    }
    fn unavailable(&mut self, image: &Image, why: &str) {
        self.failed.push(format!("{}: {why}", image.target_id));
    }
    fn sink(&mut self, image: &Image) -> Option<Box<dyn ImageSink>> {
        let (name, kept) = (image.target_id.clone(), self.kept.clone());
        Some(VecSink::boxed(move |bytes| {
            kept.lock().unwrap().push((name, bytes));
        }))
    }
    fn streamed(
        &mut self,
        image: &Image,
        sink: Box<dyn ImageSink>,
        end: std::result::Result<(), SinkError>,
    ) {
        match end {
            Ok(()) => sink.keep().unwrap(),
            Err(e) => self.failed.push(format!("{}: {e:?}", image.target_id)),
        }
    }
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

/// A raw scan still names what the file is: an ELF object is `ELF64`, an
/// archive `archive`, only bytes of no known format are `data`.
#[test]
fn raw_scans_name_the_format() {
    use object::write::Object as WObject;
    use object::{Architecture, BinaryFormat, Endianness, SectionKind};
    let mut o = WObject::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let s = o.add_section(Vec::new(), b".data".to_vec(), SectionKind::Data);
    o.append_section_data(
        s,
        &offload_binary(&[("amdgcn-amd-amdhsa", "gfx90a", b"x")]),
        8,
    );
    let elf = o.write().unwrap();
    let r = scan(&elf, &raw());
    assert_eq!(r.format, "ELF64");
    assert_eq!(r.images.len(), 1);
    assert_eq!(scan(&elf, &Options::default()).format, "ELF64");
    let mut ar = crate::archive::MAGIC.to_vec();
    ar.extend_from_slice(&noise(64, 3));
    assert_eq!(scan(&ar, &raw()).format, "archive");
    assert_eq!(scan(&noise(256, 1), &raw()).format, "data");
}

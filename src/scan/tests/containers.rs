//! Each container kind found raw and as a file, with its hashes and
//! the bytes a visitor gets, and the format a raw scan names.

use super::*;

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
    let mut ar = crate::host::ar::MAGIC.to_vec();
    ar.extend_from_slice(&noise(64, 3));
    assert_eq!(scan(&ar, &raw()).format, "archive");
    assert_eq!(scan(&noise(256, 1), &raw()).format, "data");
}

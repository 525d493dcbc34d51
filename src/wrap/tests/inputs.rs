//! What the inputs may be: raw images, images left in place, empty
//! images, spliced binaries, and the errors for those refused.

use super::*;

/// Raw input: the whole file is the image.
#[test]
fn raw_input_is_whole_image() {
    let raw = filler(2, 1001);
    let img = Image::new(&raw).unwrap();
    assert_eq!(img.image, 0..1001);
    assert_eq!(img.arch, None);
    let out = to_vec(&opts(Abi::Llvm), &[img]).unwrap();
    let rel = relocs(&out, ".data.rel.ro");
    assert_eq!(rel[0], r(0, R_64, ".llvm.offloading", 0));
    assert_eq!(rel[1], r(8, R_64, ".llvm.offloading", 1001));
    assert_eq!(contents(&out, ".llvm.offloading"), raw);
}

/// The layout refers to the image instead of holding its bytes.
#[test]
fn layout_does_not_copy_images() {
    for n in [1usize, 2] {
        let big = filler(10, 1 << 20);
        let imgs: Vec<Image> = (0..n).map(|_| Image::new(&big).unwrap()).collect();
        let layout = layout(&opts(Abi::Llvm), &imgs).unwrap();
        let built: u64 = layout
            .pieces
            .iter()
            .map(|p| match p {
                Piece::Bytes(b) => b.len() as u64,
                _ => 0,
            })
            .sum();
        assert!(built < 4096, "{built} bytes built");
        let images = layout.image_indices();
        assert_eq!(images, (0..n).collect::<Vec<_>>());
        let v = to_vec(&opts(Abi::Llvm), &imgs).unwrap();
        assert_eq!(v.len() as u64, layout.size);
        // Deterministic.
        assert_eq!(v, to_vec(&opts(Abi::Llvm), &imgs).unwrap());
    }
}

#[test]
fn empty_image() {
    let out = to_vec(&opts(Abi::Llvm), &[Image::new(&[]).unwrap()]).unwrap();
    assert_eq!(section(&sections(&out), ".llvm.offloading").4, 0);
}

#[test]
fn errors() {
    let raw = filler(11, 16);
    let img = || Image::new(&raw).unwrap();
    let err = |o: Options, imgs: &[Image]| to_vec(&o, imgs).unwrap_err().to_string();
    assert!(err(opts(Abi::Llvm), &[]).contains("no input"));
    // riscv64 writes every ABI (see `riscv64_legacy_and_rocm`).
    let mut o = opts(Abi::Llvm);
    o.triple = "riscv64-unknown-linux-gnu".into();
    for abi in [Abi::Llvm, Abi::Legacy] {
        o.abi = abi;
        assert!(to_vec(&o, &[img()]).is_ok());
    }
    o.abi = Abi::Rocm;
    assert!(err(o.clone(), &[img()]).contains("image 0 has no offload arch"));

    assert_eq!(Kind::parse("cuda").unwrap(), Kind::Cuda);
    assert_eq!(Kind::parse("hip").unwrap(), Kind::Hip);
    // CUDA and HIP take exactly one input, and only the default ABI.
    for kind in [Kind::Cuda, Kind::Hip] {
        let mut o = opts(Abi::Llvm);
        o.kind = kind;
        let two = err(o.clone(), &[Image::raw(&raw), Image::raw(&raw)]);
        assert!(two.contains("single fatbinary or offload bundle"), "{two}");
        let mut o = opts(Abi::Legacy);
        o.kind = kind;
        assert!(err(o, &[Image::raw(&raw)]).contains("only for --kind=openmp"));
    }
    assert!(
        Kind::parse("sycl")
            .unwrap_err()
            .to_string()
            .contains("unknown offload kind")
    );
    assert!(
        Abi::parse("new")
            .unwrap_err()
            .to_string()
            .contains("unknown ABI")
    );
    assert_eq!(Abi::parse("rocm").unwrap(), Abi::Rocm);

    // A damaged OffloadBinary is an error, not a wrong range.
    let ob = offload_binary(&filler(12, 100), "generic");
    for cut in [4, 20, 60, ob.len() - 1] {
        assert!(Image::new(&ob[..cut]).is_err(), "cut at {cut}");
    }
    // A compressed (v3) binary has no image bytes in place to point at.
    let spec = ImageSpec {
        image_kind: ImageKind::IMG_Object,
        offload_kind: OffloadKind::OFK_OpenMP,
        flags: 0,
        strings: vec![],
        size: 64,
    };
    let mut v3 = Vec::new();
    crate::offload_binary::layout(&[spec], crate::offload_binary::Version::V3)
        .unwrap()
        .write_to(&mut v3, &[&filler(13, 64)])
        .unwrap();
    let packed =
        crate::offload_binary::compress(&v3, crate::offload_binary::Compression::Zlib, 6).unwrap();
    assert_eq!(
        Image::new(&v3).unwrap().image.end - Image::new(&v3).unwrap().image.start,
        64
    );
    let e = Image::new(&packed).unwrap_err().to_string();
    assert!(e.contains("compressed"), "{e}");
    let mut bad = ob.clone();
    bad[4] = 9; // version
    assert!(Image::new(&bad).is_err());
    for f in std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/offload_binary/malformed"
    ))
    .unwrap()
    {
        let p = f.unwrap().path();
        if p.file_name().unwrap() == "trailing-bytes.bin" {
            continue; // only the first binary is read, as in LLVM
        }
        let bytes = std::fs::read(&p).unwrap();
        assert!(Image::new(&bytes).is_err(), "{}", p.display());
    }
}

/// An object written from input shapes with the packed binaries spliced in
/// (how the linker wrapper wraps without writing each binary out first)
/// is the object written from the packed binaries themselves, for every
/// ABI and relocatable or not.
#[test]
fn shapes_with_spliced_binaries_match_whole_inputs() {
    let images = [filler(1, 100), filler(2, 4099), Vec::new()];
    let specs: Vec<ImageSpec> = images
        .iter()
        .enumerate()
        .map(|(i, img)| ImageSpec {
            image_kind: ImageKind::IMG_Object,
            offload_kind: OffloadKind::OFK_OpenMP,
            flags: 0,
            strings: vec![
                (b"triple".to_vec(), b"x86_64-unknown-linux-gnu".to_vec()),
                (b"arch".to_vec(), format!("gfx90{i}").into_bytes()),
            ],
            size: img.len() as u64,
        })
        .collect();
    let packed: Vec<Vec<u8>> = images
        .iter()
        .enumerate()
        .map(|(i, img)| offload_binary(img, &format!("gfx90{i}")))
        .collect();
    let parts: Vec<_> = specs
        .iter()
        .map(|s| crate::offload_binary::layout_v1_one(s).unwrap())
        .collect();
    let shapes: Vec<InputShape> = parts
        .iter()
        .zip(&specs)
        .map(|((l, range), s)| {
            let arch = String::from_utf8(s.strings[1].1.clone()).unwrap();
            InputShape::new(l.size, range.clone(), Some(arch))
        })
        .collect();
    let layouts: Vec<Layout> = parts.into_iter().map(|(l, _)| l).collect();
    for abi in [Abi::Llvm, Abi::Legacy, Abi::Rocm] {
        for relocatable in [false, true] {
            let o = Options {
                relocatable: relocatable && abi == Abi::Llvm,
                llc_layout: true,
                ..opts(abi)
            };
            let whole: Vec<Image<'_>> = packed.iter().map(|p| Image::new(p).unwrap()).collect();
            let expected = to_vec(&o, &whole).unwrap();
            let spliced = layout_shapes(&o, &shapes)
                .unwrap()
                .splice(&layouts)
                .unwrap();
            let mut got = Vec::new();
            let payloads: Vec<&[u8]> = images.iter().map(Vec::as_slice).collect();
            spliced.write_to(&mut got, &payloads).unwrap();
            assert_eq!(got, expected, "{abi:?}, relocatable {relocatable}");
        }
    }
}

//! The COFF objects read back with `object`: sections, symbols,
//! relocations, checksums, unwind data, the large-image layout, and what
//! is refused. Byte-for-byte comparisons with llc 22 are in
//! `linker-tests/wrap/coff.rs`.

use object::pe;
use object::read::coff::CoffFile;
use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget, SymbolSection};

use crate::ErrorKind;
use crate::llvm::jam_crc::{JamCrc, jam_crc};
use crate::wrap::{Abi, Image, InputShape, Kind, Options, layout, layout_shapes, to_vec};

fn opts(kind: Kind, triple: &str) -> Options {
    Options {
        kind,
        abi: Abi::Llvm,
        triple: triple.into(),
        llc_layout: true,
        relocatable: false,
    }
}

fn filler(seed: u8, n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| (i.to_le_bytes()[0]).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

const X64: &str = "x86_64-pc-windows-msvc";
const ARM64: &str = "aarch64-pc-windows-msvc";

/// Section names in order.
fn section_names(out: &[u8]) -> Vec<String> {
    let f = object::File::parse(out).unwrap();
    f.sections()
        .map(|s| s.name().unwrap().to_string())
        .collect()
}

/// Each section's checksum (from its symbol's auxiliary record) against
/// the JamCRC of its bytes.
fn check_checksums(out: &[u8]) {
    let f: CoffFile<'_> = CoffFile::parse(out).unwrap();
    let table = f.coff_symbol_table();
    for s in f.sections() {
        let data = s.data().unwrap();
        let sym = f
            .symbols()
            .find(|y| {
                y.name().unwrap() == s.name().unwrap() && y.section_index() == Some(s.index())
            })
            .unwrap();
        let aux = table.aux_section(sym.index()).unwrap();
        let want = if s.name().unwrap() == ".bss" {
            0
        } else {
            jam_crc(data)
        };
        assert_eq!(
            aux.check_sum.get(object::LittleEndian),
            want,
            "{}",
            s.name().unwrap()
        );
    }
}

/// The x64 CUDA object: llc's sections, the weak bounds with their
/// defaults, the constructor's initializer, and `.pdata` with three
/// relocated words per function.
#[test]
fn x64_cuda() {
    let fatbin = filler(1, 100);
    let out = to_vec(&opts(Kind::Cuda, X64), &[Image::raw(&fatbin)]).unwrap();
    assert_eq!(&out[..2], &pe::IMAGE_FILE_MACHINE_AMD64.0.to_le_bytes());
    assert_eq!(
        section_names(&out),
        [
            ".text",
            ".data",
            ".bss",
            ".text.startup",
            ".xdata",
            "llvm_offload_entries$OA",
            "llvm_offload_entries$OZ",
            ".nv_fatbin",
            ".nvFatBinSegment",
            ".CRT$XCA00101",
            ".pdata",
        ]
    );
    check_checksums(&out);
    let f = object::File::parse(&*out).unwrap();
    let image = f.section_by_name(".nv_fatbin").unwrap();
    assert_eq!(image.data().unwrap(), &fatbin[..]);
    assert_eq!(image.align(), 16);
    let start = f.symbol_by_name("__start_llvm_offload_entries").unwrap();
    assert!(start.is_weak());
    let default = f
        .symbol_by_name(".weak.__start_llvm_offload_entries.default")
        .unwrap();
    assert_eq!(
        default.section(),
        SymbolSection::Section(
            f.section_by_name("llvm_offload_entries$OA")
                .unwrap()
                .index()
        )
    );
    let pdata = f.section_by_name(".pdata").unwrap();
    assert_eq!(pdata.relocations().count(), 9);
    let ctor = f.section_by_name(".CRT$XCA00101").unwrap();
    let (_, r) = ctor.relocations().next().unwrap();
    let RelocationTarget::Symbol(s) = r.target() else {
        panic!("the constructor's pointer has no symbol")
    };
    assert_eq!(
        f.symbol_by_index(s).unwrap().name().unwrap(),
        ".cuda.fatbin_reg"
    );
    let names: Vec<&str> = f.symbols().map(|s| s.name().unwrap()).collect();
    assert_eq!(names.last(), Some(&"offload.wrapper.module"));
    assert!(names.contains(&"@feat.00"));
}

/// OpenMP with an OffloadBinary and a raw input: each image relocated
/// against its own symbol, ImageStart and ImageEnd as in-place addends;
/// the section's checksum covers both inputs and the padding between.
#[test]
fn x64_openmp_two_inputs() {
    let raw = filler(2, 13);
    let spec = crate::offload_binary::ImageSpec {
        image_kind: crate::offload_binary::ImageKind::IMG_Object,
        offload_kind: crate::offload_binary::OffloadKind::OFK_OpenMP,
        flags: 0,
        strings: vec![(b"triple".to_vec(), b"x86_64-unknown-linux-gnu".to_vec())],
        size: 40,
    };
    let (pack, _) = crate::offload_binary::layout_v1_one(&spec).unwrap();
    let mut bin = Vec::new();
    let inner = filler(3, 40);
    pack.write_to(&mut bin, &[&inner]).unwrap();
    let images = [Image::raw(&raw), Image::new(&bin).unwrap()];
    let out = to_vec(&opts(Kind::OpenMp, X64), &images).unwrap();
    check_checksums(&out);
    let f = object::File::parse(&*out).unwrap();
    let off = f.section_by_name(".llvm.offloading").unwrap();
    let data = off.data().unwrap();
    assert_eq!(&data[..13], &raw[..]);
    assert_eq!(&data[16..], &bin[..]);
    let rdata = f.section_by_name(".rdata").unwrap();
    let bytes = rdata.data().unwrap();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    assert_eq!((word(0), word(8)), (0, 13));
    assert_eq!(
        (word(32), word(40)),
        (images[1].image.start, images[1].image.end)
    );
    // NumDeviceImages.
    assert_eq!(word(64), 2);
    let targets: Vec<String> = rdata
        .relocations()
        .map(|(_, r)| match r.target() {
            RelocationTarget::Symbol(s) => f.symbol_by_index(s).unwrap().name().unwrap().into(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(targets[4], ".omp_offloading.device_image.1");
    assert_eq!(targets[8], ".omp_offloading.device_images");
}

/// x64 unwind records: the OpenMP functions reserve 40 bytes
/// (`sub rsp, 40`: 4 bytes of prologue, `UWOP_ALLOC_SMALL` of 40).
#[test]
fn x64_unwind() {
    let out = to_vec(&opts(Kind::OpenMp, X64), &[Image::raw(b"x")]).unwrap();
    let f = object::File::parse(&*out).unwrap();
    #[rustfmt::skip]
    let record = [
        1,    // version 1, no flags
        4,    // prologue size
        1,    // one unwind code
        0,    // no frame register
        4,    // at offset 4 (after `sub rsp, 40`)
        0x42, // UWOP_ALLOC_SMALL, (40 / 8 - 1) = 4
        0, 0, // padding to an even count
    ];
    let xdata = f.section_by_name(".xdata").unwrap().data().unwrap();
    assert_eq!(xdata, [record, record].concat());
    let pdata = f.section_by_name(".pdata").unwrap().data().unwrap();
    // (start, end, unwind record) of each function.
    let words: Vec<u32> = pdata
        .chunks(4)
        .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
        .collect();
    assert_eq!(words, [0, 0x22, 0, 0x30, 0x46, 8]);
}

/// ARM64: the OpenMP functions' unwind data is packed into `.pdata` (lr
/// saved alone in a 16-byte frame), so `.xdata` is empty; a section of
/// more than 1 MiB gets a label at each MiB.
#[test]
fn arm64_packed_unwind_and_labels() {
    let big = vec![7u8; (2 << 20) + 1];
    let out = to_vec(&opts(Kind::OpenMp, ARM64), &[Image::raw(&big)]).unwrap();
    let f = object::File::parse(&*out).unwrap();
    assert_eq!(&out[..2], &pe::IMAGE_FILE_MACHINE_ARM64.0.to_le_bytes());
    assert!(
        f.section_by_name(".xdata")
            .unwrap()
            .data()
            .unwrap()
            .is_empty()
    );
    let pdata = f.section_by_name(".pdata").unwrap().data().unwrap();
    let words: Vec<u32> = pdata
        .chunks(4)
        .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
        .collect();
    // Flag 1, FunctionLength 9 and 6 words, CR 1, FrameSize 1 (16 bytes).
    assert_eq!(words, [0, 0x00a0_0025, 0x24, 0x00a0_0019]);
    let labels: Vec<(String, u64)> = f
        .symbols()
        .filter(|s| s.name().unwrap().starts_with("$L"))
        .map(|s| (s.name().unwrap().to_string(), s.address()))
        .collect();
    assert_eq!(
        labels,
        [
            ("$L.llvm.offloading_1".to_string(), 1 << 20),
            ("$L.llvm.offloading_2".to_string(), 2 << 20),
        ]
    );
    check_checksums(&out);
}

/// MinGW: the constructor in `.ctors.65434` (writable) and a `.drectve`
/// that keeps the bounds out of a DLL's exports.
#[test]
fn mingw() {
    let out = to_vec(
        &opts(Kind::Hip, "x86_64-w64-windows-gnu"),
        &[Image::raw(b"bundle")],
    )
    .unwrap();
    let f = object::File::parse(&*out).unwrap();
    let names = section_names(&out);
    assert!(names.contains(&".ctors.65434".to_string()));
    assert!(!names.contains(&".CRT$XCA00101".to_string()));
    let d = f.section_by_name(".drectve").unwrap().data().unwrap();
    assert_eq!(
        d,
        b" -exclude-symbols:__start_llvm_offload_entries -exclude-symbols:__stop_llvm_offload_entries"
    );
    // x64 HIP: the entry loop's jump table in `.rdata`.
    let table = f.section_by_name(".rdata").unwrap();
    assert_eq!(table.size(), 16);
    assert_eq!(table.relocations().count(), 4);
}

/// Without llc's layout a large image starts at a multiple of 64 KiB in
/// the file; with it, right after the section before. Either way the
/// image is a piece of the layout, never copied in.
#[test]
fn large_image_layout() {
    let big = filler(5, (1 << 20) + 3);
    for llc_layout in [false, true] {
        let o = Options {
            llc_layout,
            ..opts(Kind::Cuda, X64)
        };
        let l = layout(&o, &[Image::raw(&big)]).unwrap();
        assert_eq!(l.image_indices(), [0]);
        let mut out = Vec::new();
        l.write_to(&mut out, &[&big]).unwrap();
        let f: CoffFile<'_> = CoffFile::parse(&*out).unwrap();
        let s = f.section_by_name(".nv_fatbin").unwrap();
        let (at, len) = s.file_range().unwrap();
        assert_eq!(len, big.len() as u64);
        assert_eq!(at % (64 << 10) == 0, !llc_layout, "llc_layout {llc_layout}");
        assert_eq!(s.data().unwrap(), &big[..]);
        check_checksums(&out);
    }
}

/// An input known by its shape and checksum gives the same object as
/// its bytes; without its checksum, a COFF object cannot be written.
#[test]
fn shapes() {
    let a = filler(6, 30);
    let b = filler(7, 9);
    let o = opts(Kind::OpenMp, ARM64);
    let want = to_vec(&o, &[Image::raw(&a), Image::raw(&b)]).unwrap();
    let shape = |x: &[u8]| {
        let mut crc = JamCrc::new();
        crc.update(x);
        InputShape::new(x.len() as u64, 0..x.len() as u64, None).with_crc(crc)
    };
    let l = layout_shapes(&o, &[shape(&a), shape(&b)]).unwrap();
    let mut out = Vec::new();
    l.write_to(&mut out, &[&a, &b]).unwrap();
    assert_eq!(out, want);
    let bare = InputShape::new(3, 0..3, None);
    assert!(layout_shapes(&o, &[bare]).is_err());
}

/// What is refused: other Windows CPUs and environments, the legacy and
/// ROCm ABIs; a Windows triple written as ELF stays the ELF path's.
#[test]
fn refused() {
    for (t, want) in [
        ("i686-pc-windows-msvc", "32-bit Windows"),
        ("armv7-pc-windows-msvc", "'armv7'"),
        ("x86_64-pc-windows-itanium", "'itanium'"),
    ] {
        let e = to_vec(&opts(Kind::Cuda, t), &[Image::raw(b"f")]).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::UnsupportedTriple { .. }),
            "{t}"
        );
        assert!(e.to_string().contains(want), "{t}: {e}");
    }
    for abi in [Abi::Legacy, Abi::Rocm] {
        let o = Options {
            abi,
            ..opts(Kind::OpenMp, X64)
        };
        let e = to_vec(&o, &[Image::raw(b"f")]).unwrap_err();
        assert!(e.to_string().contains("Windows"), "{e}");
    }
    let e = to_vec(
        &opts(Kind::Cuda, X64),
        &[Image::raw(b"a"), Image::raw(b"b")],
    )
    .unwrap_err();
    assert!(e.to_string().contains("single"), "{e}");
}

//! Unit tests of the embedded-object reader: LLVM's own files, modules made
//! by hand, damaged and hostile inputs.

use super::codes::*;
use super::*;
use crate::bitcode::stream::testing::Writer;
use crate::tests::Rng;

fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    std::fs::read(p.join(name)).unwrap()
}

/// Every object's global name and bytes.
fn read(data: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let objects = offloading_objects(data)?;
    let mut out = Vec::new();
    for o in &objects.objects {
        let bytes = objects.bytes(o)?;
        out.push((o.global.clone(), bytes));
    }
    Ok(out)
}

#[test]
fn reads_the_objects_llvm_reads_in_metadata_order() {
    let data = fixture("bitcode/embedded.bc");
    let multi = fixture("offload_binary/multi.bin");
    let one = fixture("offload_binary/one.bin");
    let objects = offloading_objects(&data).unwrap();
    let sizes: Vec<u64> = objects.objects.iter().map(|o| o.size).collect();
    assert_eq!(sizes, [880, 176, 176]);
    assert_eq!(objects.total_size(), 880 + 176 + 176);
    // Another section, a pointer, a zeroinitializer, a node of one
    // operand and one with the operands swapped are passed over; the
    // i32 array (a DATA record) is read as its bytes.
    let got = read(&data).unwrap();
    let want = [
        ("multi".to_string(), multi),
        ("one".to_string(), one.clone()),
        ("words".to_string(), one),
    ];
    assert_eq!(got, want);
}

#[test]
fn a_wrapper_header_changes_nothing_but_offsets() {
    let bc = fixture("bitcode/embedded.bc");
    let mut wrapped = Vec::new();
    for w in [0x0B17_C0DEu32, 0, 20, u32::try_from(bc.len()).unwrap(), 7] {
        wrapped.extend_from_slice(&w.to_le_bytes());
    }
    wrapped.extend_from_slice(&bc);
    assert_eq!(read(&wrapped).unwrap(), read(&bc).unwrap());
    // A header pointing past the end.
    wrapped[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = read(&wrapped).unwrap_err();
    assert!(e.to_string().contains("outside the file"), "{e}");
}

#[test]
fn reads_every_encoding_of_a_data_sequence() {
    let got = read(&fixture("bitcode/kinds.bc")).unwrap();
    let le = |v: &[u64], w: usize| -> Vec<u8> {
        v.iter()
            .flat_map(|x| x.to_le_bytes()[..w].to_vec())
            .collect()
    };
    let bytes = vec![1, 2, 0, 4, 5];
    let want: Vec<(&str, Vec<u8>)> = vec![
        ("bytes", bytes.clone()),
        // A CSTRING record: its NUL is implicit.
        ("cstr", b"hello\0".to_vec()),
        ("vec", vec![1, 2, 3, 255]),
        ("i16", le(&[1, 0xfffe, 770], 2)),
        ("i64", le(&[1, u64::MAX], 8)),
        (
            "f32",
            le(
                &[u64::from(1.0f32.to_bits()), u64::from((-2.5f32).to_bits())],
                4,
            ),
        ),
        ("f64", le(&[1.0f64.to_bits(), 0.5f64.to_bits()], 8)),
        ("half", le(&[0x3c00, 0x4000], 2)),
        // The declaration and the struct are passed over; the first
        // operand again is read again.
        ("bytes", bytes),
    ];
    let want: Vec<(String, Vec<u8>)> = want.into_iter().map(|(n, b)| (n.to_string(), b)).collect();
    assert_eq!(got, want);
}

#[test]
fn clang_lto_objects() {
    for (obj, image) in [
        ("bitcode/openmp.o", "bitcode/openmp.o.image"),
        ("bitcode/amdgcn.o", "bitcode/amdgcn.o.image"),
    ] {
        let got = read(&fixture(obj)).unwrap();
        assert_eq!(got.len(), 1, "{obj}");
        assert_eq!(got[0].0, "llvm.embedded.object");
        let images = crate::offload_binary::find_images(&got[0].1, &Default::default()).unwrap();
        assert_eq!(images.len(), 1);
        assert_eq!(&images[0].image.image[..], fixture(image), "{obj}");
    }
}

#[test]
fn damaged_files_fail_or_read_the_same_bytes() {
    let data = fixture("bitcode/embedded.bc");
    let want: Vec<Vec<u8>> = read(&data).unwrap().into_iter().map(|o| o.1).collect();
    let check = |d: &[u8]| {
        if let Ok(got) = read(d) {
            let got: Vec<Vec<u8>> = got.into_iter().map(|o| o.1).collect();
            got == want
        } else {
            true
        }
    };
    // Every truncation (at a multiple of 4 bytes: the others are
    // refused for their size) fails, but for one in the string table
    // after the module, which only loses the names.
    for n in (0..data.len()).step_by(4) {
        assert!(check(&data[..n]), "truncated to {n}");
    }
    // Damage anywhere: an error or whatever it reads, never a panic.
    let mut rng = Rng(0x5eed);
    for _ in 0..3000 {
        let mut d = data.clone();
        for _ in 0..=rng.below(3) {
            let at = rng.index(d.len());
            d[at] ^= 1 << rng.below(8);
        }
        let _ = read(&d);
    }
}

/// What [`module`] puts in the test module.
struct Spec {
    version: u64,
    /// The code and operands of the initializer's record.
    init: (u64, Vec<u64>),
    /// Metadata records before the embedded-objects node.
    extra_md: Vec<(u64, Vec<u64>)>,
    /// The operands of `llvm.embedded.objects` (metadata IDs; the node
    /// is ID 2 plus the number of extra records).
    named: Option<Vec<u64>>,
    modules: usize,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            version: 2,
            init: (CST_CODE_STRING, b"\x10\xff\x10\xad".map(u64::from).to_vec()),
            extra_md: Vec::new(),
            named: None,
            modules: 1,
        }
    }
}

fn chars(s: &[u8]) -> Vec<u64> {
    s.iter().map(|&c| u64::from(c)).collect()
}

/// A module made by hand: type 0 = i8, type 1 = [4 x i8]; value 0 =
/// the global `g`, initialized with value 1 = `spec.init`; metadata
/// 0 = ".llvm.offloading", 1 = `ptr @g`, then `spec.extra_md`, then
/// the node `!{ptr @g, !".llvm.offloading"}`.
fn module(spec: &Spec) -> Vec<u8> {
    let mut w = Writer::default();
    w.raw(b"BC\xc0\xde");
    for _ in 0..spec.modules {
        let m = w.enter(2, MODULE_BLOCK, 3);
        w.record(3, MODULE_CODE_VERSION, &[spec.version]);
        let t = w.enter(3, TYPE_BLOCK, 4);
        w.record(4, TYPE_CODE_INTEGER, &[8]);
        w.record(4, TYPE_CODE_ARRAY, &[4, 0]);
        w.end(4, t);
        w.record(3, MODULE_CODE_GLOBALVAR, &[0, 1, 1, 1, 2, 0, 0, 0]);
        let c = w.enter(3, CONSTANTS_BLOCK, 4);
        w.record(4, CST_CODE_SETTYPE, &[1]);
        w.record(4, spec.init.0, &spec.init.1);
        w.end(4, c);
        let md = w.enter(3, METADATA_BLOCK, 3);
        w.record(3, METADATA_STRING_OLD, &chars(b".llvm.offloading"));
        w.record(3, METADATA_VALUE, &[0, 0]);
        for (code, ops) in &spec.extra_md {
            w.record(3, *code, ops);
        }
        let node = 2 + spec.extra_md.len() as u64;
        w.record(3, METADATA_NODE, &[2, 1]);
        w.record(3, METADATA_NAME, &chars(EMBEDDED_OBJECTS));
        let named = spec.named.clone().unwrap_or(vec![node]);
        w.record(3, METADATA_NAMED_NODE, &named);
        w.end(3, md);
        w.end(3, m);
    }
    // The string table: an abbreviation [STRTAB_BLOB, blob].
    let s = w.enter(2, STRTAB_BLOCK, 3);
    w.fixed(2, 3);
    w.vbr(2, 5);
    w.fixed(1, 1);
    w.vbr(1, 8);
    w.fixed(0, 1);
    w.fixed(5, 3);
    w.fixed(4, 3);
    w.vbr(1, 6);
    w.align32();
    w.raw(b"g\0\0\0");
    w.end(3, s);
    w.bytes
}

/// A module made by hand whose one object holds `bytes`.
pub(crate) fn module_holding(bytes: &[u8]) -> Vec<u8> {
    module(&Spec {
        init: (CST_CODE_STRING, chars(bytes)),
        ..Spec::default()
    })
}

fn error_of(spec: &Spec) -> String {
    match read(&module(spec)) {
        Ok(v) => panic!("read {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_module_made_by_hand_reads() {
    let got = read(&module(&Spec::default())).unwrap();
    assert_eq!(got, [("g".to_string(), b"\x10\xff\x10\xad".to_vec())]);
    // Records that define metadata move the node along; others do not.
    let spec = Spec {
        extra_md: vec![(6, vec![0, 1]), (16, vec![0, 0, 0]), (38, vec![1, 2])],
        named: Some(vec![3]),
        ..Spec::default()
    };
    assert_eq!(read(&module(&spec)).unwrap().len(), 1);
    // A zeroinitializer-like all-zero array is passed over by LLVM.
    let spec = Spec {
        init: (CST_CODE_STRING, vec![0; 4]),
        ..Spec::default()
    };
    assert_eq!(read(&module(&spec)).unwrap(), [("g".to_string(), vec![])]);
    // No llvm.embedded.objects operands: nothing.
    let spec = Spec {
        named: Some(vec![]),
        ..Spec::default()
    };
    assert!(read(&module(&spec)).unwrap().is_empty());
}

#[test]
fn what_cannot_be_read_is_an_error_naming_it() {
    let cases: Vec<(Spec, &str)> = vec![
        (
            Spec {
                version: 1,
                ..Spec::default()
            },
            "older than LLVM 5",
        ),
        (
            Spec {
                modules: 2,
                ..Spec::default()
            },
            "more than one module",
        ),
        (
            Spec {
                extra_md: vec![(99, vec![])],
                ..Spec::default()
            },
            "metadata record this reader does not know",
        ),
        (
            Spec {
                named: Some(vec![0]),
                ..Spec::default()
            },
            "is not a metadata node",
        ),
        (
            Spec {
                named: Some(vec![1000]),
                ..Spec::default()
            },
            "names no metadata",
        ),
        (
            Spec {
                init: (CST_CODE_AGGREGATE, vec![1, 1, 1, 1]),
                ..Spec::default()
            },
            "aggregate",
        ),
        (
            Spec {
                init: (CST_CODE_STRING, vec![]),
                ..Spec::default()
            },
            "empty data constant",
        ),
        (
            Spec {
                init: (CST_CODE_DATA, vec![1]),
                extra_md: vec![],
                ..Spec::default()
            },
            // [4 x i8] is fine for DATA: this one reads.
            "",
        ),
    ];
    for (spec, want) in cases {
        if want.is_empty() {
            assert_eq!(read(&module(&spec)).unwrap()[0].1, [1]);
            continue;
        }
        let e = error_of(&spec);
        assert!(e.contains(want), "{e} (wanted {want:?})");
        assert!(e.starts_with("invalid LLVM bitcode"), "{e}");
    }
}

#[test]
fn huge_counts_fail_without_allocating() {
    // An unabbreviated record that claims 2^40 operands.
    let mut data = module(&Spec::default());
    let mut w = Writer::default();
    w.raw(b"BC\xc0\xde");
    let m = w.enter(2, MODULE_BLOCK, 3);
    w.record(3, MODULE_CODE_VERSION, &[2]);
    w.fixed(3, 3);
    w.vbr(MODULE_CODE_GLOBALVAR, 6);
    w.vbr(1 << 40, 6);
    w.end(3, m);
    let e = read(&w.bytes).unwrap_err().to_string();
    assert!(
        e.contains("end of bitcode") || e.contains("too many"),
        "{e}"
    );
    // METADATA_STRINGS claiming 2^50 strings.
    let mut w = Writer::default();
    w.raw(b"BC\xc0\xde");
    let m = w.enter(2, MODULE_BLOCK, 3);
    w.record(3, MODULE_CODE_VERSION, &[2]);
    let md = w.enter(3, METADATA_BLOCK, 3);
    // Abbreviation 4: [STRINGS, vbr6, vbr6, blob].
    w.fixed(2, 3);
    w.vbr(4, 5);
    w.fixed(1, 1);
    w.vbr(METADATA_STRINGS, 8);
    for _ in 0..2 {
        w.fixed(0, 1);
        w.fixed(2, 3);
        w.vbr(6, 5);
    }
    w.fixed(0, 1);
    w.fixed(5, 3);
    w.fixed(4, 3);
    w.vbr(1 << 50, 6);
    w.vbr(4, 6);
    w.vbr(8, 6);
    w.align32();
    w.raw(b"\x05\0\0\0abcd");
    w.end(3, md);
    w.end(3, m);
    let e = read(&w.bytes).unwrap_err().to_string();
    assert!(e.contains("METADATA_STRINGS"), "{e}");
    // A blob longer than the file.
    let n = data.len();
    data.truncate(n - 8);
    assert!(read(&data).is_err());
}

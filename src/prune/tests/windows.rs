//! Windows PE images (issue #43): a CUDA DLL built here
//! ([`crate::tests::pe`]) pruned and shrunk, its wrappers' absolute
//! addresses following the packed fatbins, its later sections moved down
//! in the file by whole file-alignment units with their addresses kept, the
//! checksum computed again; a signed DLL refused unless its signature goes;
//! an overlay, a pointer into a container, or a fat-binary section whose
//! raw data is off the file alignment or overlapped keeping the layout.

use object::LittleEndian as LE;
use object::read::pe::PeFile64;

use super::{Ptx, keep};
use crate::fatbin;
use crate::prune::{FilePruning, Options, prune_file};
use crate::scan::{self, ContainerKind};
use crate::tests::pe::{self, Extras};

/// An entry of `len` bytes of one value: a cubin's bytes, for the test.
fn cubin(fill: u8, len: usize) -> Vec<u8> {
    let mut v = b"\x7fELF".to_vec();
    v.resize(len, fill);
    v
}

/// Two fatbins, each with an sm_80 and an sm_90 cubin (4 KiB each).
fn fatbins() -> Vec<Vec<u8>> {
    vec![
        fatbin::build(&[
            (2, 80, 0x11, &cubin(1, 0x1000)),
            (2, 90, 0x11, &cubin(2, 0x1000)),
        ]),
        fatbin::build(&[
            (2, 90, 0x11, &cubin(3, 0x1000)),
            (2, 80, 0x11, &cubin(4, 0x1000)),
        ]),
    ]
}

fn prune(data: &[u8], opts: &Options) -> crate::error::Result<FilePruning> {
    prune_file(data, &keep(&["sm_80"], Ptx::Newest), opts)
}

/// The images of `data` a scan finds: (arch, bytes).
fn images(data: &[u8]) -> Vec<(String, Vec<u8>)> {
    let r = scan::scan(data, &scan::Options::default());
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    r.images
        .iter()
        .map(|i| {
            let at = usize::try_from(i.offset.unwrap()).unwrap();
            (
                i.arch.clone(),
                data[at..at + usize::try_from(i.size).unwrap()].to_vec(),
            )
        })
        .collect()
}

/// The section headers of a PE image: (name, RVA, virtual size, raw
/// pointer, raw size).
fn sections(data: &[u8]) -> Vec<(String, u32, u32, u32, u32)> {
    let f = PeFile64::parse(data).unwrap();
    f.section_table()
        .iter()
        .map(|s| {
            (
                String::from_utf8_lossy(s.raw_name())
                    .trim_end_matches('\0')
                    .to_string(),
                s.virtual_address.get(LE),
                s.virtual_size.get(LE),
                s.pointer_to_raw_data.get(LE),
                s.size_of_raw_data.get(LE),
            )
        })
        .collect()
}

/// The base relocations of a PE image: (RVA, type).
fn relocations(data: &[u8]) -> Vec<(u32, u16)> {
    let f = PeFile64::parse(data).unwrap();
    let mut out = Vec::new();
    let dirs = f.data_directories();
    let mut blocks = dirs
        .relocation_blocks(data, &f.section_table())
        .unwrap()
        .unwrap();
    while let Some(b) = blocks.next().unwrap() {
        out.extend(b.map(|r| (r.virtual_address, r.typ.0)));
    }
    out
}

#[test]
fn a_cuda_dll_shrinks_and_its_wrappers_follow_the_packed_fatbins() {
    for arm64 in [false, true] {
        let extras = Extras {
            arm64,
            checksum: true,
            ..Extras::default()
        };
        let dll = pe::cuda_dll_with(&fatbins(), &extras);
        let data = &dll.bytes;
        let p = prune(data, &Options::default()).unwrap();
        assert!(p.not_shrunk.is_none(), "{:?}", p.not_shrunk);
        let out = p.output.unwrap().to_vec(&[data]).unwrap();
        keeps_sm_80_through_wrappers(data, &out);
        // Cut by whole file-alignment units, the addresses kept.
        let (before, after) = (sections(data), sections(&out));
        let cut = u32::try_from(data.len() - out.len()).unwrap();
        assert!(cut >= 0x2000 && cut % 0x200 == 0, "cut {cut:#x}");
        assert_eq!(u64::from(cut), p.freed);
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            assert_eq!(
                (&b.0, b.1, b.2),
                (&a.0, a.1, a.2),
                "section {i}: name and addresses"
            );
            match i {
                0 => assert_eq!((b.3, b.4), (a.3, a.4)),
                1 => assert_eq!((b.3, b.4 - cut), (a.3, a.4)),
                _ => assert_eq!((b.3 - cut, b.4), (a.3, a.4)),
            }
        }
        assert_eq!(relocations(&out), relocations(data));
        let at = pe::checksum_at(&out);
        let stored = u32::from_le_bytes(out[at..at + 4].try_into().unwrap());
        assert_eq!(stored, pe::checksum(&out));
        assert_ne!(stored, 0);
        let s = p.shrunk.unwrap();
        assert_eq!((s.section.as_str(), s.mapping), (".nv_fatb", "section"));
    }
}

#[test]
fn without_shrinking_the_dll_keeps_its_layout() {
    let dll = pe::cuda_dll(&fatbins(), false);
    let opts = Options {
        no_shrink: true,
        ..Options::default()
    };
    let p = prune(&dll.bytes, &opts).unwrap();
    let out = p.output.unwrap().to_vec(&[&dll.bytes]).unwrap();
    assert_eq!(out.len(), dll.bytes.len());
    assert_eq!(sections(&out), sections(&dll.bytes));
    assert_eq!(images(&out).len(), 2);
}

#[test]
fn a_signed_dll_is_refused_unless_its_signature_goes() {
    let extras = Extras {
        certificates: Some(vec![0x5a; 0x400]),
        checksum: true,
        ..Extras::default()
    };
    let dll = pe::cuda_dll_with(&fatbins(), &extras);
    let e = prune(&dll.bytes, &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Authenticode") && e.contains("--strip-signature"),
        "{e}"
    );
    for no_shrink in [false, true] {
        let opts = Options {
            strip_signature: true,
            no_shrink,
            ..Options::default()
        };
        let p = prune(&dll.bytes, &opts).unwrap();
        assert_eq!(p.signature_removed, Some(0x400));
        let out = p.output.unwrap().to_vec(&[&dll.bytes]).unwrap();
        let f = PeFile64::parse(&out[..]).unwrap();
        // `object` answers no entry for one of zeros.
        let security = f
            .data_directories()
            .get(object::pe::IMAGE_DIRECTORY_ENTRY_SECURITY)
            .map(|d| (d.virtual_address.get(LE), d.size.get(LE)));
        assert!(security.is_none_or(|d| d == (0, 0)), "{security:?}");
        assert!(!out.windows(0x400).any(|w| w.iter().all(|&b| b == 0x5a)));
        let at = pe::checksum_at(&out);
        assert_eq!(
            u32::from_le_bytes(out[at..at + 4].try_into().unwrap()),
            pe::checksum(&out)
        );
        assert_eq!(images(&out).len(), 2);
    }
}

#[test]
fn an_overlay_or_a_pointer_into_a_fatbin_keeps_the_layout() {
    let overlay = Extras {
        overlay: b"installer payload".to_vec(),
        ..Extras::default()
    };
    // Past the first fatbin's header: inside a container.
    let pointer = Extras {
        text_pointer: Some(0x40),
        ..Extras::default()
    };
    for (extras, says) in [(overlay, "overlay"), (pointer, "inside a container")] {
        let dll = pe::cuda_dll_with(&fatbins(), &extras);
        let p = prune(&dll.bytes, &Options::default()).unwrap();
        let why = p.not_shrunk.clone().unwrap_or_default();
        assert!(why.contains(says), "{why}");
        let out = p.output.unwrap().to_vec(&[&dll.bytes]).unwrap();
        assert_eq!(out.len(), dll.bytes.len());
        assert_eq!(images(&out).len(), 2);
    }
    // A pointer at a fatbin's start is fixed like a wrapper's.
    let at_start = Extras {
        text_pointer: Some(0),
        ..Extras::default()
    };
    let dll = pe::cuda_dll_with(&fatbins(), &at_start);
    let p = prune(&dll.bytes, &Options::default()).unwrap();
    assert!(p.not_shrunk.is_none(), "{:?}", p.not_shrunk);
}

/// The PE image `data` with section `i`'s `SizeOfRawData` set to `size`.
fn with_raw_size(data: &[u8], i: usize, size: u32) -> Vec<u8> {
    let pe = u32::from_le_bytes(data[0x3c..0x40].try_into().unwrap()) as usize;
    let optional = usize::from(u16::from_le_bytes([data[pe + 20], data[pe + 21]]));
    let at = pe + 24 + optional + 40 * i + 16;
    let mut out = data.to_vec();
    out[at..at + 4].copy_from_slice(&size.to_le_bytes());
    out
}

#[test]
fn a_fatbin_section_off_the_file_alignment_or_overlapped_keeps_the_layout() {
    let dll = pe::cuda_dll(&fatbins(), false);
    let before = sections(&dll.bytes);
    let (name, _, vsize, _, raw) = before[1].clone();
    assert_eq!(name, ".nv_fatb");
    // Cut to 64 bytes past the fatbins: no multiple of 512. Shrunk from
    // there, the sections after it would move by such a number, and a
    // loader (reading raw data from 512-byte units) would miss them.
    let short = vsize.next_multiple_of(0x40) | 0x40;
    assert!(short < raw && short % 0x200 != 0);
    let overlapping = raw + 0x200;
    for (size, says) in [
        (short, "SizeOfRawData (0x"),
        (overlapping, "overlaps section `.nv_fatb`'s"),
    ] {
        let data = with_raw_size(&dll.bytes, 1, size);
        let p = prune(&data, &Options::default()).unwrap();
        let why = p.not_shrunk.clone().unwrap_or_default();
        assert!(why.contains(says), "{why}");
        let out = p.output.unwrap().to_vec(&[&data]).unwrap();
        assert_eq!(sections(&out), sections(&data));
        assert_eq!(relocations(&out), relocations(&data));
        assert_eq!(images(&out).len(), 2);
    }
}

/// The symbols of a COFF object: (name, section index, value).
fn coff_symbols(data: &[u8]) -> Vec<(String, Option<usize>, u64)> {
    use object::{Object as _, ObjectSymbol as _};
    let f = object::File::parse(data).unwrap();
    f.symbols()
        .map(|s| {
            (
                s.name().unwrap().to_string(),
                s.section_index().map(|i| i.0),
                s.address(),
            )
        })
        .collect()
}

/// The section-definition record of the COFF section `name`: (length,
/// relocation count, checksum).
fn coff_definition(data: &[u8], name: &str) -> (u32, u16, u32) {
    use object::read::coff::{CoffFile, Symbol as _};
    let f = CoffFile::<&[u8]>::parse(data).unwrap();
    let symbols = f.coff_symbol_table();
    for (i, s) in symbols.iter() {
        if s.name(symbols.strings()).unwrap() == name.as_bytes() && s.has_aux_section() {
            let a = symbols.aux_section(i).unwrap();
            return (
                a.length.get(LE),
                a.number_of_relocations.get(LE),
                a.check_sum.get(LE),
            );
        }
    }
    panic!("no definition of {name}")
}

/// The JamCRC LLVM writes in a section definition: CRC-32 with initial
/// value 0 and no final inversion.
fn jam_crc(data: &[u8]) -> u32 {
    let mut c = 0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    c
}

#[test]
fn a_coff_object_shrinks_and_its_symbols_follow_the_fatbins() {
    use object::{Object as _, ObjectSection as _};
    for arm64 in [false, true] {
        let obj = pe::coff_object(&fatbins(), arm64);
        let p = prune(&obj, &Options::default()).unwrap();
        let out = p.output.unwrap().to_vec(&[&obj]).unwrap();
        assert_eq!(p.freed, u64::try_from(obj.len() - out.len()).unwrap());
        let r = keeps_sm_80_through_wrappers(&obj, &out);
        // `fatbin1` names the second fatbin's new place.
        let fatbin_at: Vec<u64> = r
            .containers
            .iter()
            .filter(|c| c.kind == ContainerKind::CudaFatbin)
            .map(|c| c.relative_offset)
            .collect();
        let f = object::File::parse(&*out).unwrap();
        let sec = f.section_by_name(".nv_fatbin").unwrap();
        let values: Vec<u64> = coff_symbols(&out)
            .into_iter()
            .filter(|(n, _, _)| n.starts_with("fatbin"))
            .map(|(_, _, v)| v)
            .collect();
        assert_eq!(values, fatbin_at);
        let before: Vec<u64> = coff_symbols(&obj)
            .into_iter()
            .filter(|(n, _, _)| n.starts_with("fatbin"))
            .map(|(_, _, v)| v)
            .collect();
        assert_eq!(values[0], before[0]);
        assert!(values[1] < before[1], "{values:?} {before:?}");
        // The definition record says the new length, and its checksum is
        // the contents' when the input had one.
        let contents = sec.data().unwrap();
        let (len, relocs, sum) = coff_definition(&out, ".nv_fatbin");
        assert_eq!((len as usize, relocs), (contents.len(), 0));
        if coff_definition(&obj, ".nv_fatbin").2 != 0 {
            assert_eq!(sum, jam_crc(contents));
        }
    }
}

#[test]
fn a_coff_reference_into_a_fatbin_is_refused() {
    use object::{Object as _, ObjectSection as _};
    let obj = pe::coff_object(&fatbins(), false);
    // Symbol `fatbin1` (its 7-byte name in place) moved 8 bytes into its
    // fatbin, and the wrapper's stored addend -8, so that the wrapper
    // still leads to the fatbin's start.
    let symtab = u32::from_le_bytes(obj[8..12].try_into().unwrap()) as usize;
    let count = u32::from_le_bytes(obj[12..16].try_into().unwrap()) as usize;
    let at = (0..count)
        .map(|i| symtab + 18 * i)
        .find(|&a| obj[a..a + 8] == *b"fatbin1\0")
        .unwrap();
    let mut inside = obj.clone();
    let v = u32::from_le_bytes(inside[at + 8..at + 12].try_into().unwrap());
    inside[at + 8..at + 12].copy_from_slice(&(v + 8).to_le_bytes());
    let seg = object::File::parse(&*obj).unwrap();
    let (field, _) = seg
        .section_by_name(".nvFatBinSegment")
        .unwrap()
        .file_range()
        .unwrap();
    let f = usize::try_from(field).unwrap() + 24 + 8;
    inside[f..f + 8].copy_from_slice(&(-8i64).to_le_bytes());
    let r = scan::scan(&inside, &scan::Options::default());
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let e = prune(&inside, &Options::default()).unwrap_err().to_string();
    assert!(e.contains("'fatbin1'") && e.contains("not done"), "{e}");
}

/// Checks that `out`, [`fatbins`] pruned to sm_80 from `before`, holds the
/// kept cubins byte for byte, each found through its wrapper, and that
/// both wrappers still lead to a fatbin; returns the scan of `out`.
fn keeps_sm_80_through_wrappers(before: &[u8], out: &[u8]) -> scan::Report {
    let kept: Vec<(String, Vec<u8>)> = images(before)
        .into_iter()
        .filter(|(a, _)| a == "sm_80")
        .collect();
    assert_eq!(images(out), kept);
    let r = scan::scan(out, &scan::Options::default());
    let wrapped: Vec<_> = r
        .containers
        .iter()
        .filter_map(|c| c.wrapper.as_ref()?.target_container)
        .map(|t| r.containers[t].kind)
        .collect();
    assert_eq!(wrapped, vec![ContainerKind::CudaFatbin; 2]);
    r
}

//! Hostile inputs: truncation, lying sizes, compression bombs, magics in
//! noise, nesting bombs, unexplained bytes, impossible sizes, sections
//! past the end, thin archives naming each other.

use super::*;

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

/// A sound CCOB (header and stream read) around a bundle whose header does
/// not: a container with damage inside, whether or not the options
/// decompress everything. It used to be a silently rejected raw-scan
/// candidate without `hash`/`verify`, its compressed bytes scanned again
/// as if loose (and a bundle stored verbatim in them then edited by prune).
#[test]
fn ccob_around_an_unreadable_bundle_header_is_damage_in_every_mode() {
    let mut b = bundle(&[(GFX90A, b"\x7fELF")], 1);
    // Entry 0's ID length reaches far past the contents.
    b[48..56].copy_from_slice(&(1u64 << 32).to_le_bytes());
    let c = ccob(&b);
    for opts in [
        Options::default(),
        raw(),
        Options {
            hash: Some(crate::scan::HashAlgo::Xxh3_128),
            ..Options::default()
        },
        Options {
            verify: true,
            ..Options::default()
        },
    ] {
        let r = scan(&c, &opts);
        assert_eq!(r.containers.len(), 1, "{opts:?}: {:?}", r.containers);
        assert_eq!(r.containers[0].kind, ContainerKind::Ccob, "{opts:?}");
        assert!(r.images.is_empty(), "{opts:?}: {:?}", r.images);
        assert_eq!(r.problems.len(), 1, "{opts:?}: {:?}", r.problems);
        assert!(
            r.problems[0].message.contains("ID of bundle entry 0"),
            "{opts:?}: {}",
            r.problems[0].message
        );
    }
}

/// A fuzz input whose two CUDA fatbin entries declare an uncompressed size
/// near 2^64: `size` adds them up (and a sum of files adds those again)
/// without overflowing, which panicked with the release build's overflow
/// checks; the totals saturate.
#[test]
fn declared_sizes_near_2_64_saturate_the_size_totals() {
    let data =
        include_bytes!("../../../fixtures/fuzz/kernels/70a43014f7bf34a68168f958ff600b4694c9bdbf");
    let r = scan(data, &Options::default());
    let huge = r
        .images
        .iter()
        .filter(|i| i.uncompressed_size.is_some_and(|u| u > u64::MAX / 2))
        .count();
    assert_eq!(huge, 2, "{:?}", r.images);
    let one = crate::scan::size("f", data.len() as u64, &r);
    let sm = one.by_target.values().map(|t| t.bytes).max();
    assert_eq!(sm, Some(u64::MAX));
    let both = crate::scan::SizeReport::sum("all", [&one, &one]);
    assert!(both.by_target.values().any(|t| t.bytes == u64::MAX));
    assert!(both.by_kind.values().any(|t| t.bytes == u64::MAX));
}

/// A section table that names the bytes of one `.data` section holding
/// fatbin headers 200 times over: the count of fatbins in other data
/// sections searches no more bytes than the file has, so it stops long
/// before the 200th, and the sections past 16 are counted together.
#[test]
fn fatbins_elsewhere_search_at_most_the_file() {
    use object::write::Object as WObject;
    use object::{Architecture, BinaryFormat, Endianness, SectionKind};
    const COPIES: usize = 200;
    let mut o = WObject::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let s = o.add_section(Vec::new(), b".data".to_vec(), SectionKind::Data);
    // Four fatbin headers, each with 16 bytes of contents.
    let mut data = Vec::new();
    for _ in 0..4 {
        data.extend_from_slice(&fatbin::MAGIC);
        data.extend_from_slice(&1u16.to_le_bytes());
        data.extend_from_slice(&16u16.to_le_bytes());
        data.extend_from_slice(&16u64.to_le_bytes());
        data.extend_from_slice(&[0; 16]);
    }
    o.append_section_data(s, &data, 8);
    for i in 0..COPIES {
        o.add_section(Vec::new(), format!(".d{i}").into_bytes(), SectionKind::Data);
    }
    let mut elf = o.write().unwrap();
    // Each .dN's header (empty, at the end of the table) is pointed at
    // .data's bytes.
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let shoff = usize::try_from(u64_at(&elf, 0x28)).unwrap();
    let shnum = usize::from(u16::from_le_bytes([elf[0x3c], elf[0x3d]]));
    let header = |i: usize| shoff + 64 * i;
    let data_at = (0..shnum)
        .find(|&i| u64_at(&elf, header(i) + 0x20) == data.len() as u64)
        .unwrap();
    let (off, size) = (
        u64_at(&elf, header(data_at) + 0x18),
        u64_at(&elf, header(data_at) + 0x20),
    );
    let mut patched = 0;
    for i in 0..shnum {
        if i != data_at && u64_at(&elf, header(i) + 4) & 0xffff_ffff == 1 {
            // SHT_PROGBITS and empty: one of the .dN.
            if u64_at(&elf, header(i) + 0x20) == 0 {
                elf[header(i) + 0x18..header(i) + 0x20].copy_from_slice(&off.to_le_bytes());
                elf[header(i) + 0x20..header(i) + 0x28].copy_from_slice(&size.to_le_bytes());
                patched += 1;
            }
        }
    }
    assert_eq!(patched, COPIES);
    let r = scan(&elf, &Options::default());
    let total: u64 = r.fatbins_elsewhere.iter().map(|(_, n)| n).sum();
    let searched = total / 4;
    assert!(searched >= 2, "{:?}", r.fatbins_elsewhere);
    assert!(
        searched as usize <= elf.len() / data.len(),
        "{searched} sections of {} bytes searched in a file of {}",
        data.len(),
        elf.len()
    );
    assert!(r.fatbins_elsewhere.len() <= 17);
    assert_eq!(r.fatbins_elsewhere[0], (".data".to_owned(), 4));
}

/// A relocatable object whose image table (`.tgtimg`) has 5,000 rows for
/// its one zstd-compressed image (found through the section's own
/// relocations), one row whose image claims to decompress to 2^64 - 1
/// bytes, and half a row: the image is read once, each other row of it
/// is an unread entry that overlaps it (a problem in the words of the
/// bundle reader), and the huge one is over the decompression budget
/// (nothing of that size is allocated).
#[test]
fn image_table_rows_read_each_image_once_within_the_budget() {
    const ROWS: u64 = 5_000;
    let image = b"\x03\x02\x23\x07 a SPIR-V module, as far as its magic goes".repeat(4);
    let frame = zstd::bulk::compress(&image, 3).unwrap();
    let mut images = frame.clone();
    images.resize(frame.len().next_multiple_of(16), 0);
    let second = images.len() as i64;
    images.extend_from_slice(&frame);
    let mut rows: Vec<(i64, u64)> = (0..ROWS).map(|_| (0, image.len() as u64)).collect();
    rows.push((second, u64::MAX));
    let elf = table_object(&images, &rows, &[1; 8]);
    let opts = Options {
        hash: Some(HashAlgo::Xxh3_128),
        ..Options::default()
    };
    let r = scan(&elf, &opts);
    let rows = usize::try_from(ROWS).unwrap();
    assert_eq!(r.images.len(), rows + 1);
    assert_eq!(r.images[0].uncompressed_size, Some(image.len() as u64));
    assert_eq!(
        r.images[0].image_kind,
        Some(Content::Image(ImageKind::IMG_SPIRV))
    );
    assert!(r.images[0].hash.is_some() && r.images[0].is_read());
    assert!(
        r.images[1..rows]
            .iter()
            .all(|i| i.overlaps == Some(0) && i.hash.is_none())
    );
    assert!(r.images[rows].hash.is_none() && r.images[rows].is_read());
    let said: Vec<&str> = r.problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(
        said.iter()
            .filter(|m| m.contains("overlaps entry 0: entries of one container never share bytes"))
            .count(),
        rows - 1,
    );
    assert!(
        said.iter().any(|m| m.contains("last row is 8 bytes")),
        "{said:?}"
    );
    assert!(
        said.iter().any(|m| m.contains("18446744073709551615")),
        "{said:?}"
    );
}

/// A relocatable x86-64 ELF object as Intel's SYCL wrapper lays one out:
/// `images` in a section `__CLANG_OFFLOAD_BUNDLE__sycl-spir64`, and an
/// image table (`.tgtimg`) of `rows` (the offset in that section a
/// relocation gives, the size), then the bytes `tail`.
fn table_object(images: &[u8], rows: &[(i64, u64)], tail: &[u8]) -> Vec<u8> {
    use object::write::{Object as WObject, Relocation};
    use object::{
        Architecture, BinaryFormat, Endianness, RelocationEncoding, RelocationFlags,
        RelocationKind, SectionKind,
    };
    let mut o = WObject::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let b = o.add_section(
        Vec::new(),
        b"__CLANG_OFFLOAD_BUNDLE__sycl-spir64".to_vec(),
        SectionKind::ReadOnlyData,
    );
    o.append_section_data(b, images, 16);
    let t = o.add_section(Vec::new(), b".tgtimg".to_vec(), SectionKind::ReadOnlyData);
    let mut table = Vec::new();
    for (_, size) in rows {
        table.extend_from_slice(&0u64.to_le_bytes());
        table.extend_from_slice(&size.to_le_bytes());
    }
    table.extend_from_slice(tail);
    o.append_section_data(t, &table, 16);
    let sym = o.section_symbol(b);
    for (row, &(addend, _)) in (0u64..).zip(rows) {
        let flags = RelocationFlags::Generic {
            kind: RelocationKind::Absolute,
            encoding: RelocationEncoding::Generic,
            size: 64,
        };
        let at = Relocation {
            offset: row * 16,
            symbol: sym,
            addend,
            flags,
        };
        o.add_relocation(t, at).unwrap();
    }
    o.write().unwrap()
}

/// Issue #57: an image table of 2,000 rows over one 64 KiB image, each
/// starting 16 bytes further in and running to its end, made `extract`
/// write 94 MiB and `size` count 99 MB from a file of 100 KiB. The rows
/// overlap, which is damage as in a bundle: the first is read, every
/// other is an unread entry that overlaps it, in the bundle reader's
/// words; nothing of the container is extracted, and `size` counts the
/// image once.
#[test]
fn overlapping_image_table_rows_are_damage_and_counted_once() {
    const ROWS: usize = 2_000;
    const IMAGE: usize = 64 << 10;
    let mut image = b"\x03\x02\x23\x07".to_vec();
    image.resize(IMAGE, 7);
    let rows: Vec<(i64, u64)> = (0..ROWS)
        .map(|i| (16 * i as i64, (IMAGE - 16 * i) as u64))
        .collect();
    let elf = table_object(&image, &rows, &[]);
    let opts = Options {
        hash: Some(HashAlgo::Xxh3_128),
        ..Options::default()
    };
    let r = scan(&elf, &opts);
    assert!(r.damaged());
    assert_eq!(r.images.len(), ROWS);
    assert!(r.images[0].is_read() && r.images[0].hash.is_some());
    for (n, i) in r.images.iter().enumerate().skip(1) {
        assert_eq!(i.overlaps, Some(0), "row {n}");
        assert!(i.hash.is_none(), "row {n}");
    }
    let overlaps: Vec<&Problem> = r
        .problems
        .iter()
        .filter(|p| {
            p.message
                .contains("overlaps entry 0: entries of one container never share bytes")
        })
        .collect();
    assert_eq!(overlaps.len(), ROWS - 1, "{:?}", r.problems.first());
    assert!(overlaps.iter().all(|p| p.container == Some(0)));
    assert!(
        r.problems[0]
            .message
            .starts_with("entry 1 (bytes 0x10..0x10000) overlaps entry 0")
    );
    // Nothing of it is kept by `extract`, and `size` counts the image once.
    assert!(r.in_damaged_data().iter().all(|&d| d));
    let s = crate::scan::size::size("t.o", elf.len() as u64, &r);
    assert_eq!(s.total.bytes, IMAGE as u64);
}

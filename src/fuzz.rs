//! Fuzz bodies, shared by the cargo-fuzz targets in `scripts/fuzz/` and by a
//! unit test that runs them over every file in `fixtures/`, so stable CI
//! exercises them too.

use crate::offload_binary::{self, ImageSpec, Limits};

/// Reads `data` as OffloadBinaries; whatever is read must survive a write
/// and a second read unchanged. Must never panic.
pub fn offload_binary_read(data: &[u8]) {
    offload_binary_budget(data);
    let limits = Limits {
        max_inflated: 1 << 24,
    };
    let Ok(images) = offload_binary::read_all(data, &limits) else {
        return;
    };
    for img in &images {
        assert!(img.image.len() as u64 <= data.len() as u64 || img.compressed);
    }
    let specs: Vec<ImageSpec> = images
        .iter()
        .map(|i| ImageSpec {
            image_kind: i.image_kind,
            offload_kind: i.offload_kind,
            flags: i.flags,
            strings: i
                .strings
                .iter()
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect(),
            size: i.image.len() as u64,
        })
        .collect();
    let bytes: Vec<&[u8]> = images.iter().map(|i| &*i.image).collect();
    for version in [1, 2] {
        // Values holding NUL cannot round-trip through version 1.
        if version == 1
            && specs.iter().any(|s| {
                s.strings
                    .iter()
                    .any(|(k, v)| k.contains(&0) || v.contains(&0))
            })
        {
            continue;
        }
        if specs
            .iter()
            .any(|s| s.strings.iter().any(|(k, _)| k.contains(&0)))
        {
            continue;
        }
        let version = offload_binary::Version::try_from(version).expect("a version read");
        let layout = offload_binary::layout(&specs, version).expect("layout of read images");
        let mut out = Vec::new();
        layout.write_to(&mut out, &bytes).expect("write to memory");
        assert_eq!(out.len() as u64, layout.size);
        let again = offload_binary::read_all(&out, &limits).expect("re-read what we wrote");
        assert_eq!(again.len(), images.len());
        for (a, b) in images.iter().zip(&again) {
            assert_eq!(a.image, b.image);
            assert_eq!(a.image_kind, b.image_kind);
            assert_eq!(a.offload_kind, b.offload_kind);
            assert_eq!(a.strings, b.strings);
        }
    }
}

/// Reads `data` as `list` and the packager do, within one budget for the
/// whole read (nested binaries included): however the binaries nest and
/// whatever they declare, no more is inflated, and no more images read,
/// than the budget allows.
fn offload_binary_budget(data: &[u8]) {
    use crate::offload_binary::{Budget, BudgetLimits, Inflate, Spent, find_images_streamed};
    let budget = Budget::new(BudgetLimits {
        max_inflated: Some(1 << 24),
        max_images: Some(10_000),
        max_files: Some(10_000),
        max_depth: Some(8),
    });
    budget.add_input(data.len() as u64);
    if let Ok(found) = find_images_streamed(data, &budget, Inflate::Nested) {
        let _ = offload_binary::listing::rows(&found.images, &budget, &|_| None);
    }
    assert!(budget.spent(Spent::Inflated) <= 1 << 24);
    assert!(budget.spent(Spent::Images) <= 10_000);
}

/// Reads `data` as a clang offload bundle in every layout (binary, each
/// text prefix, object), and matches its entries against a few requests as
/// the unbundler does; a binary bundle that reads must lay out again to the
/// same entries. Must never panic.
pub fn bundle_read(data: &[u8]) {
    use crate::bundle::{self, Format, binary, id::BundleId, select};

    for format in [
        Format::Binary,
        Format::Text("//"),
        Format::Text("#"),
        Format::Text(";"),
        Format::Object,
    ] {
        let Ok(found) = bundle::entries(data, format) else {
            continue;
        };
        for f in &found {
            assert!(f.data.len() <= data.len());
        }
        let ids: Vec<&[u8]> = found.iter().map(|f| f.id).collect();
        let requests: Vec<BundleId> = [
            "host-x86_64-unknown-linux-gnu",
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
        ]
        .iter()
        .filter_map(|t| BundleId::parse(t).ok())
        .collect();
        let _ = select::assign(&ids, &requests, true);
    }
    bundle_objects_and_archives(data);
    let _ = Format::detect(data);
    if let Ok(entries) = binary::read(data) {
        let specs: Vec<binary::EntrySpec> = entries
            .iter()
            .map(|e| binary::EntrySpec {
                id: String::from_utf8_lossy(e.id).into_owned(),
                size: e.data.len() as u64,
            })
            .collect();
        if entries.iter().all(|e| std::str::from_utf8(e.id).is_ok()) {
            let layout = binary::layout(&specs, 1).expect("layout of read entries");
            let bytes: Vec<&[u8]> = entries.iter().map(|e| e.data).collect();
            let mut out = Vec::new();
            layout.write_to(&mut out, &bytes).expect("write to memory");
            let again = binary::read(&out).expect("re-read what we wrote");
            assert_eq!(again.len(), entries.len());
            for (a, b) in entries.iter().zip(&again) {
                assert_eq!((a.id, a.data), (b.id, b.data));
            }
        }
    }
}

/// Whether `data` is an ELF file whose header announces program headers
/// (or cannot be told).
fn has_program_headers(data: &[u8]) -> bool {
    use ::object::Endianness;
    use ::object::elf::{FileHeader32, FileHeader64};
    use ::object::read::elf::FileHeader;
    fn phnum<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> bool {
        H::parse(data)
            .ok()
            .and_then(|h| Some(h.e_phnum(h.endian().ok()?) != 0))
            .unwrap_or(true)
    }
    match ::object::FileKind::parse(data) {
        Ok(::object::FileKind::Elf32) => phnum::<FileHeader32<Endianness>>(data),
        Ok(::object::FileKind::Elf64) => phnum::<FileHeader64<Endianness>>(data),
        _ => true,
    }
}

/// The number of section headers of the ELF file `data`, when its file
/// header and section table read.
fn elf_section_count(data: &[u8]) -> Option<usize> {
    use ::object::Endianness;
    use ::object::elf::{FileHeader32, FileHeader64};
    use ::object::read::elf::FileHeader;
    fn count<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> Option<usize> {
        let h = H::parse(data).ok()?;
        let table = h.sections(h.endian().ok()?, data).ok()?;
        Some(table.len())
    }
    match ::object::FileKind::parse(data).ok()? {
        ::object::FileKind::Elf32 => count::<FileHeader32<Endianness>>(data),
        ::object::FileKind::Elf64 => count::<FileHeader64<Endianness>>(data),
        _ => None,
    }
}

/// Whether a rewritten object is small enough to build in memory: section
/// alignments in hostile input can place sections terabytes apart (the
/// layout describes the gap as zeros; llvm-objcopy would try to allocate
/// it all).
fn fits_in_memory(w: &crate::bundle::object::Written, input: usize) -> bool {
    w.layout.size <= (input as u64).saturating_mul(4).saturating_add(1 << 20)
}

/// The object-bundle editor and the archive unbundler on `data`: an object
/// file's entry names, its host extraction (which must hold no bundle
/// section), and adding a section to it; `data` as an archive of bundles
/// (conflict check, and unbundling for a few requests with CCOB members
/// decompressed under a size limit).
fn bundle_objects_and_archives(data: &[u8]) {
    use crate::bundle::archive_unbundle::{self, Member};
    use crate::bundle::ccob::{self as ccob, HashCheck, ReadOptions};
    use crate::bundle::id::BundleId;
    use crate::bundle::{self, object};

    if bundle::is_object(data) {
        let _ = object::entry_ids(data);
        if let Ok(w) = object::strip(data)
            && fits_in_memory(&w, data.len())
        {
            let stripped = w
                .to_vec(&[data])
                .expect("spans of the stripped object resolve");
            assert_eq!(stripped.len() as u64, w.layout.size);
            if let Ok(left) = object::entries(&stripped) {
                // llvm-objcopy writes segments' bytes over the sections
                // they cover, so in a file with program headers a segment
                // over the name table brings the old names back: a bundle
                // section's name can survive (byte-identical to
                // llvm-objcopy 22 on two fuzz inputs, replayed from
                // fixtures/fuzz/bundle_read).
                assert!(
                    left.is_empty() || has_program_headers(data),
                    "bundle sections survived stripping"
                );
            }
        }
        let extra = object::NewSection {
            id: "openmp-x86_64-unknown-linux-gnu-",
            data: b"DEVICE",
        };
        if let Ok(w) = object::bundle(data, &[extra])
            && fits_in_memory(&w, data.len())
        {
            let fat = w
                .to_vec(&[data, extra.data])
                .expect("spans of the bundle resolve");
            // llvm-objcopy writes no section headers for an input without a
            // section-name table, and the bundle editor follows it: then
            // there is nothing to read back (see `object_rewrite`).
            let has_sections = {
                use ::object::Object;
                let copy = object::Aligned::copy_of(&fat);
                ::object::File::parse(copy.bytes()).is_ok_and(|f| f.sections().next().is_some())
            };
            // A linked input's sections inside segments are copied with
            // their segment (llvm-objcopy's rule), so a section-name table
            // there goes stale and the added names need not read back.
            if let Ok(found) = object::entries(&fat)
                && has_sections
                && !has_program_headers(data)
            {
                let last = found.last().expect("the added section is read back");
                assert_eq!((last.id, last.data), (extra.id.as_bytes(), extra.data));
            }
        }
    }
    let requests: Vec<BundleId> = [
        "host-x86_64-unknown-linux-gnu",
        "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
        "openmp-amdgcn-amd-amdhsa-gfx906",
        "openmp-amdgcn-amd-amdhsa-gfx908",
    ]
    .iter()
    .filter_map(|t| BundleId::parse(t).ok())
    .collect();
    let _ = archive_unbundle::check_archive(data, &[], "fuzz.a");
    let inflate = |m: &Member<'_>| {
        let opts = ReadOptions {
            limits: ccob::Limits {
                max_uncompressed: 1 << 24,
            },
            hash: HashCheck::Report,
        };
        crate::bundle::ops::open(m.data, &opts).map(|d| d.map(|d| d.data))
    };
    if let Ok(lists) = archive_unbundle::unbundle(data, &[], &requests, true, inflate) {
        assert_eq!(lists.len(), requests.len());
        for list in &lists {
            let members: Vec<crate::archive::Member> = list
                .iter()
                .map(|x| crate::archive::Member {
                    name: x.name.clone(),
                    data: x.data(),
                })
                .collect();
            let _ = crate::archive::layout_gnu(&members, true);
        }
    }
}

/// The object-bundle rewrite (llvm-objcopy's, emulated) on `data`: the host
/// extraction and bundling two sections into it. Must never panic; and
/// when the input reads as an object without segments, what either returns
/// must read again:
/// no bundle section left after stripping, the added sections last after
/// bundling, and both rewritten once more without a new error. (Contents the
/// rewrite copies as they are, such as a malformed `SHT_DYNSYM`, keep an
/// unreadable input unreadable.)
pub fn object_rewrite(data: &[u8]) {
    use crate::bundle::object::{self, Aligned, HOST_MARKER, NewSection};

    /// The entries of a rewritten object, and whether it has sections
    /// (llvm-objcopy writes no section headers for an input without a
    /// section-name table). Its ELF header and section table must read;
    /// the object crate's whole-file reader is not asked, because it
    /// refuses shapes llvm-objcopy accepts and writes again, such as a
    /// relocation section that applies to another relocation section.
    fn reparse(out: &[u8]) -> (Vec<crate::bundle::Found<'_>>, bool) {
        let copy = Aligned::copy_of(out);
        let has_sections = elf_section_count(copy.bytes())
            .expect("the rewritten object's ELF header and section table read")
            > 0;
        let found = object::entries(out).expect("the rewritten object's sections read");
        (found, has_sections)
    }
    let readable = Aligned::copy_of(data);
    // Sections inside segments are copied with their segment, not
    // rewritten (llvm-objcopy's rule): a name table there goes stale, so
    // only unlinked objects must read back.
    let linked =
        ::object::File::parse(readable.bytes()).is_err() || has_program_headers(readable.bytes());
    if linked || object::entries(readable.bytes()).is_err() {
        for w in [object::strip(data), object::bundle(data, &[])]
            .into_iter()
            .flatten()
        {
            if fits_in_memory(&w, data.len()) {
                let out = w.to_vec(&[data]).expect("spans of the rewrite resolve");
                assert_eq!(out.len() as u64, w.layout.size);
            }
        }
        return;
    }
    if let Ok(w) = object::strip(data)
        && fits_in_memory(&w, data.len())
    {
        let out = w
            .to_vec(&[data])
            .expect("spans of the stripped object resolve");
        assert_eq!(out.len() as u64, w.layout.size);
        assert!(
            reparse(&out).0.is_empty(),
            "bundle sections survived stripping"
        );
        object::strip(&out).expect("the stripped object strips again");
    }
    let device: &[u8] = b"DEVICE-IMAGE";
    let added = [
        NewSection {
            id: "host-x86_64-unknown-linux-gnu-",
            data: HOST_MARKER,
        },
        NewSection {
            id: "openmp-amdgcn-amd-amdhsa--gfx90a",
            data: device,
        },
    ];
    if let Ok(w) = object::bundle(data, &added)
        && fits_in_memory(&w, data.len())
    {
        let out = w
            .to_vec(&[data, HOST_MARKER, device])
            .expect("spans of the bundle resolve");
        assert_eq!(out.len() as u64, w.layout.size);
        let (found, has_sections) = reparse(&out);
        if !has_sections {
            return;
        }
        let n = found.len();
        assert!(n >= 2, "the added sections are read back");
        assert_eq!(
            (found[n - 2].id, found[n - 2].data),
            (added[0].id.as_bytes(), HOST_MARKER)
        );
        assert_eq!(
            (found[n - 1].id, found[n - 1].data),
            (added[1].id.as_bytes(), device)
        );
        // The added sections hold no symbols: the bundle strips when the
        // input does, unless an input section has an added section's name
        // (llvm-objcopy's `--set-section-flags` then makes it
        // `readonly,exclude` too, which can turn a dynamic relocation
        // section into a plain one that LLVM refuses as well).
        let renamed = object::entries(data).is_ok_and(|found| {
            found
                .iter()
                .any(|f| added.iter().any(|a| f.id == a.id.as_bytes()))
        });
        match object::strip(&out) {
            Ok(stripped) => {
                let back = stripped.to_vec(&[&out]).expect("spans resolve");
                assert!(reparse(&back).0.is_empty());
            }
            Err(e) => assert!(
                renamed || object::strip(data).is_err(),
                "only the bundle fails: {e}"
            ),
        }
    }
}

/// Reads `data` as one CCOB and as back-to-back CCOBs; whatever
/// decompresses must compress again (zstd v3, zlib v2) to CCOBs that read
/// back to the same bytes. Must never panic.
pub fn ccob_read(data: &[u8]) {
    use crate::bundle::ccob::{self as ccob, CompressOptions, HashCheck, Method, ReadOptions};

    let opts = ReadOptions {
        limits: ccob::Limits {
            max_uncompressed: 1 << 24,
        },
        hash: HashCheck::Report,
    };
    let _ = ccob::Header::parse(data);
    if let Ok(c) = ccob::Ccob::parse(data) {
        assert!(c.size <= data.len() as u64);
        assert_eq!(c.header.size() + c.payload.len() as u64, c.size);
    }
    let whole = ccob::decompress(data, &opts);
    if let Ok(d) = &whole {
        assert_eq!(d.size, data.len() as u64);
    }
    // Streamed, on one thread and on two (frames decoded apart), the same
    // bytes or the same fault (LLVM's message).
    for threads in [None, Some(1), Some(2)] {
        let Ok(c) = ccob::Ccob::parse_whole(data) else {
            break;
        };
        let n = c.header.uncompressed_size.min(1 << 24);
        let mut got = Vec::new();
        let mut wanted = [ccob::Wanted {
            range: 0..n,
            out: &mut got,
        }];
        let end = ccob::StreamEnd::Whole;
        let streamed = match threads {
            None => c.stream_to(&mut wanted, &opts, end),
            Some(t) => {
                let payload = std::io::Cursor::new(c.payload);
                c.stream_parallel(payload, &mut wanted, &opts, end, t)
            }
        };
        match (&whole, streamed) {
            (Ok(d), Ok(s)) => {
                assert_eq!(got, d.data);
                assert_eq!(s.computed_hash, d.computed_hash);
            }
            (Err(a), Err(b)) => assert_eq!(ccob::llvm_message(a), ccob::llvm_message(&b)),
            (a, b) => panic!(
                "whole {:?}, streamed {:?}",
                a.as_ref().map(|d| d.data.len()),
                b.map_err(|e| e.to_string())
            ),
        }
    }
    let Ok(all) = ccob::decompress_all(data, &opts) else {
        return;
    };
    let mut total = 0u64;
    for d in &all {
        assert_eq!(d.data.len() as u64, d.header.uncompressed_size);
        assert!(d.offset + d.size <= data.len() as u64);
        total += d.data.len() as u64;
        if d.data.len() > 1 << 20 {
            continue;
        }
        let zlib = CompressOptions {
            version: 2,
            method: Method::ZLIB,
            level: 6,
            threads: 0,
        };
        for o in [CompressOptions::default(), zlib] {
            let (c, r) = ccob::compress_to_vec(&d.data, &o).expect("compress what was read");
            assert_eq!(r.header.total_size, Some(c.len() as u64));
            let again = ccob::decompress(&c, &ReadOptions::default()).expect("re-read");
            assert_eq!(again.data, d.data);
        }
    }
    assert!(total <= 1 << 24);
}

/// The decompression budget of the [`scan`] body.
const WORK_BYTES: u64 = 1 << 24;

/// The image and container limits of the [`scan`] body.
const WORK_IMAGES: usize = 20_000;

/// Scans `data` in every mode, listing only and decompressing everything,
/// with a visitor that takes every image: the report must be consistent
/// (ranges inside the file, parents before children, image counts) and the
/// bytes handed out must be the ones the offsets name. Must never panic.
pub fn scan(data: &[u8]) {
    use crate::scan::{self, HashAlgo, Image, Mode, Options, Parent, Visit};

    struct Check<'d> {
        data: &'d [u8],
        /// Images handed over.
        given: usize,
    }
    impl Visit for Check<'_> {
        fn wants(&mut self, _: &Image) -> bool {
            true
        }
        fn image(&mut self, img: &Image, bytes: &[u8]) {
            self.given += 1;
            // A compressed image (a CUDA fatbin entry) is handed over
            // decompressed.
            if let Some(n) = img.uncompressed_size {
                assert_eq!(bytes.len() as u64, n);
                return;
            }
            assert_eq!(bytes.len() as u64, img.size);
            if let Some(o) = img.offset {
                let o = usize::try_from(o).expect("offset fits");
                assert_eq!(&self.data[o..o + bytes.len()], bytes);
            }
        }
    }

    let len = data.len() as u64;
    for mode in [Mode::Auto, Mode::Sections, Mode::Raw] {
        for full in [false, true] {
            let opts = Options {
                mode,
                verify: full,
                hash: full.then_some(HashAlgo::Xxh3_128),
                max_uncompressed: WORK_BYTES,
                max_images: WORK_IMAGES,
                max_containers: WORK_IMAGES,
                report_rejects: true,
                ..Options::default()
            };
            let mut check = Check { data, given: 0 };
            let r = if full {
                scan::scan_with(data, &opts, &mut check)
            } else {
                scan::scan(data, &opts)
            };
            // The work one input may cause, whatever its bytes: within the
            // limits, each stream decoded at most twice (once to list and
            // hash, once for the visitor), each image handed over once.
            assert!(r.images.len() <= WORK_IMAGES && r.containers.len() <= WORK_IMAGES);
            // `size` and a sum of files: the sizes a file declares (near
            // 2^64) add up without overflowing.
            let one = scan::size("f", len, &r);
            let all = scan::SizeReport::sum("all", [&one, &one]);
            assert!(all.total.images == one.total.images.saturating_mul(2));
            assert!(
                check.given <= WORK_IMAGES,
                "{} images handed over",
                check.given
            );
            assert!(
                r.decompressed <= 2 * WORK_BYTES,
                "{} bytes decompressed",
                r.decompressed
            );
            if r.stopped.is_some() {
                assert!(r.images.is_empty() && r.containers.is_empty());
            }
            for c in &r.containers {
                if let Some(o) = c.offset {
                    assert!(o.checked_add(c.size).is_some_and(|e| e <= len));
                }
                match c.parent {
                    Some(Parent::Container(p)) => assert!(p < c.id),
                    Some(Parent::Image(i)) => assert!(i < r.images.len()),
                    None => {}
                }
            }
            for i in &r.images {
                if let Some(o) = i.offset {
                    assert!(o.checked_add(i.size).is_some_and(|e| e <= len));
                }
                assert!(i.container < r.containers.len());
            }
            let held: usize = r.containers.iter().map(|c| c.images).sum();
            assert_eq!(held, r.images.len());
            entries::disjoint(&r);
            // CUDA fatbin entries decoded on several threads: the same
            // report.
            if full && mode == Mode::Auto {
                let threads = Options { threads: 3, ..opts };
                let mut again = Check { data, given: 0 };
                let r3 = scan::scan_with(data, &threads, &mut again);
                assert_eq!(format!("{r3:?}"), format!("{r:?}"));
                assert_eq!(again.given, check.given);
                readers::readers_agree(data, &opts);
            }
        }
    }
}

/// Reads `data` as an `ar` archive, the ways offload-kit does: the
/// drop-in's member reader (a thin archive's member files are `data`
/// itself, cut to the size each claims, or all of it), the writer's symbol
/// reader on each member, a write and re-read of what was read, and the
/// scanner's archive walk with thin members that name the archive again
/// (cycles). Must never panic; members lie inside what was read.
pub fn archive(data: &[u8]) {
    use crate::archive::{self as writer};
    use crate::bundle::archive_unbundle as ar;
    use crate::scan::{self, Image, Options, ThinMember, Visit};

    // Thin member files: the archive itself.
    let thin: Vec<&[u8]> = match ar::thin_member_names(data) {
        Ok(Some(names)) => names.iter().map(|_| data).collect(),
        _ => Vec::new(),
    };
    if let Ok(members) = ar::members(data, &thin) {
        let within = |m: &[u8]| {
            let (base, start) = (data.as_ptr() as usize, m.as_ptr() as usize);
            m.is_empty() || (start >= base && start + m.len() <= base + data.len())
        };
        for m in &members {
            assert!(within(m.data), "a member outside the archive");
            let _ = writer::member_symbols(m.data);
        }
        // What was read is written and read back the same (names that
        // the writer cannot store, or members it cannot index, are refused).
        let to_write: Vec<writer::Member<'_>> = members
            .iter()
            .map(|m| writer::Member {
                name: String::from_utf8_lossy(m.name).into_owned(),
                data: m.data,
            })
            .collect();
        let bytes: Vec<&[u8]> = members.iter().map(|m| m.data).collect();
        if let Ok(layout) = writer::layout_gnu(&to_write, false) {
            let mut out = Vec::new();
            layout.write_to(&mut out, &bytes).expect("write to memory");
            assert_eq!(out.len() as u64, layout.size);
            let again = ar::members(&out, &[]).expect("re-read what we wrote");
            assert_eq!(again.len(), members.len());
            for (a, b) in members.iter().zip(&again) {
                assert_eq!(a.data, b.data);
            }
        }
    }
    let _ = ar::check_archive(data, &thin, "fuzz.a");

    /// Thin members are this archive again, or a prefix of it.
    struct Thin<'d>(&'d [u8]);
    impl Visit for Thin<'_> {
        fn wants(&mut self, _: &Image) -> bool {
            true
        }
        fn image(&mut self, img: &Image, bytes: &[u8]) {
            // A compressed image is handed over decompressed.
            let n = img.uncompressed_size.unwrap_or(img.size);
            assert_eq!(bytes.len() as u64, n);
        }
        fn thin_member(&mut self, name: &str) -> ThinMember {
            let n = name.len().min(self.0.len());
            let bytes = if name.len().is_multiple_of(2) {
                self.0
            } else {
                &self.0[..n]
            };
            Some(Ok(Box::new(bytes.to_vec())))
        }
    }
    let opts = Options {
        max_uncompressed: 1 << 24,
        ..Options::default()
    };
    let r = scan::scan_with(data, &opts, &mut Thin(data));
    for i in &r.images {
        if let Some(o) = i.offset {
            assert!(
                o.checked_add(i.size)
                    .is_some_and(|e| e <= data.len() as u64)
            );
        }
    }
}

/// A fuzz body: runs one input and panics on a broken invariant.
pub type Body = fn(&[u8]);

/// Reads `data` as every kind of package ([`crate::package`]), the kind
/// it is detected as first: every stored member must lie inside `data`, and
/// compressed members are read to their end (at most 16 MiB each). Must
/// never panic.
pub fn package(data: &[u8]) {
    use crate::package::{self, Compression, Contents, Kind, Members};
    use std::io::Read;

    struct Drain<'d> {
        data: &'d [u8],
    }
    impl Members for Drain<'_> {
        fn member(
            &mut self,
            _path: &str,
            contents: std::result::Result<Contents<'_, '_>, String>,
        ) -> crate::error::Result<()> {
            match contents {
                Ok(Contents::Stored(b)) => {
                    let (base, start) = (self.data.as_ptr() as usize, b.as_ptr() as usize);
                    assert!(
                        b.is_empty()
                            || (start >= base && start + b.len() <= base + self.data.len()),
                        "a stored member outside the package"
                    );
                }
                Ok(Contents::Stream { reader, .. } | Contents::Unsized(reader)) => {
                    let mut sink = Vec::new();
                    let _ = reader.take(1 << 24).read_to_end(&mut sink);
                }
                Err(_) => {}
            }
            Ok(())
        }
    }

    let mut kinds = vec![
        Kind::Zip,
        Kind::Deb,
        Kind::Tar(Compression::None),
        Kind::Tar(Compression::Gzip),
        Kind::Tar(Compression::Xz),
        Kind::Tar(Compression::Zstd),
        Kind::Tar(Compression::Bzip2),
        Kind::Tar(Compression::Lzma),
        Kind::Compressed(Compression::Gzip),
        Kind::Compressed(Compression::Bzip2),
        Kind::Compressed(Compression::Lzma),
        Kind::Cpio,
    ];
    if let Some(k) = package::detect(data) {
        kinds.retain(|&x| x != k);
        kinds.insert(0, k);
    }
    for k in kinds {
        let _ = package::members(data, k, &mut Drain { data });
    }
}

/// Bytes the scan of one pruned file may decompress, in the `prune` body.
const PRUNE_WORK_BYTES: u64 = 1 << 24;

/// Prunes `data` as `offload-kit prune` does (a static archive member by
/// member, any other file whole), with rules that keep or drop AMDGPU and
/// CUDA targets, shrinking linked files and not: whatever the bytes, no
/// panic (every offset and size is checked, overflow included), and a file
/// that is pruned comes out no larger than it went in (a relocatable
/// object: but for its sections' alignments), holding every image
/// that stayed with its bytes unchanged, and stays as it is when pruned
/// again by the same rules. The work is bounded by the scan's
/// decompression budget ([`PRUNE_WORK_BYTES`]); the fuzzer's time and
/// memory limits for this target (scripts/fuzz.sh) hold each input to it.
pub fn prune(data: &[u8]) {
    use crate::prune::{Ptx, Rules, Selection};
    use crate::scan::Rule;
    let rule = |r: &str| Rule::parse(r).expect("a rule");
    let selections = [
        Selection {
            rules: Rules::Keep(vec![rule("gfx90a")]),
            ptx: Ptx::Newest,
        },
        Selection {
            rules: Rules::Keep(vec![rule("sm_80")]),
            ptx: Ptx::All,
        },
        Selection {
            rules: Rules::Drop(vec![rule("gfx942"), rule("sm_70")]),
            ptx: Ptx::None,
        },
    ];
    let _ = crate::prune::package_not_pruned(data);
    #[cfg(feature = "files")]
    tar_rewrite(data);
    #[cfg(feature = "cli")]
    if crate::package::detect(data) == Some(crate::package::Kind::Zip) {
        wheel(data, &selections);
    }
    prune_with(data, &selections);
}

/// `data` read as a tar archive by the `.deb` rewriter
/// (`prune::deb::tar`), within [`PRUNE_WORK_BYTES`]: copied entry by
/// entry, it comes out byte for byte; with every regular file's data
/// replaced by its first half, it reads back with the same entries, each
/// file holding that half.
#[cfg(feature = "files")]
fn tar_rewrite(data: &[u8]) {
    use std::io::{Read, Write};

    use crate::prune::deb::tar::{Fault, Walk};
    let mut w = Walk::new(data, Vec::new(), PRUNE_WORK_BYTES);
    let copied = (|| -> Result<(), Fault> {
        while let Some(h) = w.next()? {
            w.copy(&h)?;
        }
        Ok(())
    })();
    if copied.is_ok() {
        assert!(w.into_inner() == data, "a tar archive copied changed");
    }
    // What each entry holds: a file its data, anything else nothing.
    let halved = |h: &crate::prune::deb::tar::Header| h.is_file() && !h.size_in_pax;
    let mut w = Walk::new(data, Vec::new(), PRUNE_WORK_BYTES);
    let mut want = Vec::new();
    let rewritten = (|| -> Result<(), Fault> {
        while let Some(h) = w.next()? {
            if !halved(&h) {
                w.copy(&h)?;
                want.push((h.path, None));
                continue;
            }
            let mut body = Vec::new();
            w.body().read_to_end(&mut body).map_err(Fault::Read)?;
            w.skip_body()?;
            let half = &body[..body.len() / 2];
            w.write_header(&h, half.len() as u64)?;
            w.out().write_all(half).map_err(Fault::Write)?;
            w.pad(half.len() as u64)?;
            want.push((h.path, Some(half.to_vec())));
        }
        Ok(())
    })();
    if rewritten.is_err() {
        return;
    }
    let out = w.into_inner();
    let mut r = Walk::new(&out[..], std::io::sink(), u64::MAX);
    let mut got = Vec::new();
    while let Some(h) = r.next().expect("a rewritten tar archive reads") {
        let body = halved(&h).then(|| {
            let mut b = Vec::new();
            r.body()
                .read_to_end(&mut b)
                .expect("a rewritten file reads");
            b
        });
        r.skip_body().expect("a rewritten entry reads");
        got.push((h.path, body));
    }
    assert!(got == want, "a rewritten tar archive reads back otherwise");
}

/// [`prune`]'s rules on one file (an archive, or any other file).
fn prune_with(data: &[u8], selections: &[crate::prune::Selection]) {
    use crate::prune::Options;
    let first = data.first().copied().unwrap_or(0);
    for (k, sel) in selections.iter().enumerate() {
        let opts = Options {
            threads: 1,
            max_uncompressed: Some(PRUNE_WORK_BYTES),
            allow_empty: first & (1 << k) != 0,
            no_shrink: first & 0x80 != 0,
            strip_signature: first & 0x40 != 0,
        };
        let Some(out) = pruned(data, sel, &opts) else {
            continue;
        };
        // A relocatable object is written as llvm-objcopy writes it, each
        // section at its alignment: hostile alignments (up to 16 MiB, past
        // which the rewrite refuses) can make it larger. Anything else only
        // loses bytes.
        let relocatable = crate::container::ar::is_archive(data)
            || crate::container::elf::peek(data).and_then(|h| h.file_type())
                == Some(object::elf::ET_REL);
        let most = if relocatable {
            data.len().saturating_add(256 << 20)
        } else {
            data.len()
        };
        assert!(
            out.len() <= most,
            "pruned to {} bytes from {}",
            out.len(),
            data.len()
        );
        kept_images_are_there(data, &out, sel);
        assert!(
            pruned(&out, sel, &opts).is_none(),
            "pruned again, the file changes"
        );
    }
}

/// A wheel's members (the first 32, up to 1 MiB each): each RECORD
/// rewritten with new hashes for every other file it names
/// ([`record_rewrite`]), each ELF member pruned as a file.
#[cfg(feature = "cli")]
fn wheel(data: &[u8], selections: &[crate::prune::Selection]) {
    use std::io::Read;
    let Ok(mut zip) = zip::ZipArchive::new(std::io::Cursor::new(data)) else {
        return;
    };
    for i in 0..zip.len().min(32) {
        let Ok(f) = zip.by_index(i) else {
            continue;
        };
        let mut bytes = Vec::new();
        if f.take(1 << 20).read_to_end(&mut bytes).is_err() {
            continue;
        }
        record_rewrite(&bytes);
        if bytes.starts_with(b"\x7fELF") {
            prune_with(&bytes, selections);
        }
    }
}

/// `text` read as a wheel's RECORD, every other path it names given a new
/// hash and size: the rewritten RECORD has the same rows, those named with
/// their new hash and size, every other one as it was.
#[cfg(feature = "cli")]
fn record_rewrite(text: &[u8]) {
    use std::collections::BTreeMap;
    let rows = |t: &[u8]| -> Option<Vec<csv::ByteRecord>> {
        let mut r = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(t);
        r.byte_records().collect::<Result<Vec<_>, _>>().ok()
    };
    let Some(before) = rows(text) else {
        return;
    };
    let paths: Vec<String> = before
        .iter()
        .step_by(2)
        .filter_map(|r| std::str::from_utf8(r.get(0)?).ok().map(str::to_string))
        .collect();
    let changed: BTreeMap<&str, (u64, &str)> = paths
        .iter()
        .map(|p| (p.as_str(), (p.len() as u64, "NEWHASH")))
        .collect();
    let Ok(new) = crate::prune::wheel::new_record(text, &changed) else {
        return;
    };
    let Some(new) = new else {
        assert!(
            changed.is_empty(),
            "a RECORD naming {paths:?} was left as it was"
        );
        return;
    };
    let after = rows(&new).expect("the rewritten RECORD reads as CSV");
    assert_eq!(after.len(), before.len(), "rows added or lost");
    for (a, b) in before.iter().zip(&after) {
        let path = std::str::from_utf8(a.get(0).unwrap_or_default()).ok();
        match path.and_then(|p| changed.get(p)) {
            Some((n, h)) => {
                let want = [
                    path.unwrap_or_default().to_string(),
                    format!("sha256={h}"),
                    n.to_string(),
                ];
                let got: Vec<&[u8]> = b.iter().collect();
                assert_eq!(got, want.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
            }
            None => assert_eq!(a, b, "a row not named changed"),
        }
    }
}

/// `data` pruned by `sel` as the command line prunes a file (an `ar`
/// archive member by member), written out; `None` when nothing changes or
/// it is refused.
fn pruned(
    data: &[u8],
    sel: &crate::prune::Selection,
    opts: &crate::prune::Options,
) -> Option<Vec<u8>> {
    let output = if crate::container::ar::is_archive(data) {
        crate::prune::prune_archive(data, |_, member| {
            crate::prune::prune_file(member, sel, opts).map(|p| p.output)
        })
        .ok()?
    } else {
        crate::prune::prune_file(data, sel, opts).ok()?.output
    }?;
    let bytes = output.to_vec(data).expect("write to memory");
    assert_eq!(bytes.len() as u64, output.size());
    Some(bytes)
}

/// Every image of `before` that `sel` keeps (by its target and hash) is an
/// image of `after`, as many times.
fn kept_images_are_there(before: &[u8], after: &[u8], sel: &crate::prune::Selection) {
    use crate::scan::{self, HashAlgo, Options};
    let opts = Options {
        hash: Some(HashAlgo::Xxh3_128),
        max_uncompressed: PRUNE_WORK_BYTES,
        ..Options::default()
    };
    let (r0, r1) = (scan::scan(before, &opts), scan::scan(after, &opts));
    if crate::container::ar::is_archive(before) || r0.stopped.is_some() {
        // (An archive's members are pruned apart: their images are counted
        // by member, which this does not follow.)
        return;
    }
    let verdicts = sel.decide(&r0);
    // An image stays when it and every image it lies in stay.
    let survives = |i: &crate::scan::Image| {
        let mut at = Some(i.id);
        let mut steps = 0;
        while let Some(id) = at {
            let img = &r0.images[id];
            if !verdicts[id].stays() || steps > r0.images.len() {
                return false;
            }
            steps += 1;
            let mut c = img.container;
            at = loop {
                match r0.containers[c].parent {
                    Some(scan::Parent::Image(p)) => break Some(p),
                    Some(scan::Parent::Container(p)) => c = p,
                    None => break None,
                }
            };
        }
        true
    };
    let key = |i: &crate::scan::Image| (i.target_id.clone(), i.hash);
    let mut left: Vec<_> = r1.images.iter().map(key).collect();
    for i in r0.images.iter().filter(|i| i.hash.is_some() && survives(i)) {
        let k = key(i);
        let at = left.iter().position(|l| *l == k);
        assert!(
            at.is_some(),
            "image {} ({}) stayed, but is gone",
            i.id,
            i.target_id
        );
        left.swap_remove(at.unwrap_or_default());
    }
}

/// Every fuzz body, by the name of its cargo-fuzz target (scripts/fuzz/).
pub const TARGETS: &[(&str, Body)] = &[
    ("offload_binary_read", offload_binary_read),
    ("bundle_read", bundle_read),
    ("object_rewrite", object_rewrite),
    ("ccob_read", ccob_read),
    ("scan", scan),
    ("archive", archive),
    ("package", package),
    ("lz4_block", lz4_block),
    ("lz4_fast", lz4_fast),
    ("kernels", kernels),
    ("prune", prune),
];

mod entries;
mod kernels;
mod lz4;
mod readers;
#[cfg(test)]
mod tests;

pub use kernels::kernels;
#[cfg(test)]
pub(crate) use lz4::liblz4_may_differ;
pub use lz4::{lz4_block, lz4_fast};

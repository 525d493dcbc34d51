//! The fuzz body of offload bundles: every bundle layout, and bundles in
//! objects and archives; the ELF helpers `object_rewrite` shares.

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
pub(super) fn has_program_headers(data: &[u8]) -> bool {
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
pub(super) fn elf_section_count(data: &[u8]) -> Option<usize> {
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
pub(super) fn fits_in_memory(w: &crate::host::object::Written, input: usize) -> bool {
    w.layout.size <= (input as u64).saturating_mul(4).saturating_add(1 << 20)
}

/// The object-bundle editor and the archive unbundler on `data`: an object
/// file's entry names, its host extraction (which must hold no bundle
/// section), and adding a section to it; `data` as an archive of bundles
/// (conflict check, and unbundling for a few requests with CCOB members
/// decompressed under a size limit).
fn bundle_objects_and_archives(data: &[u8]) {
    use crate::bundle::archive_unbundle::{self, Member};
    use crate::bundle::ccob::{HashCheck, ReadOptions};
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
                let copy = crate::host::object::Aligned::copy_of(&fat);
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
            limits: crate::Limits::uncompressed(1 << 24),
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

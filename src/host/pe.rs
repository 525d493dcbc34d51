//! Whether a PE image's headers can be believed: every table they name lies
//! in the file or the image, as the PE format requires (Microsoft's "PE
//! Format" specification, sections "Optional Header Data Directories",
//! "Section Table" and "The .reloc Section"). The scanner reports what is
//! wrong as damage, so that no command calls a damaged DLL clean, and
//! `prune` reads the base relocations through [`base_relocations`], so that
//! it takes exactly what the scan took.
//!
//! What is checked, the first failure named:
//!
//! | what | rule |
//! |---|---|
//! | headers | the DOS header, NT headers, data directory table and section table lie in the file (`object`'s reader); the directories fit in `SizeOfOptionalHeader`, as the specification says they do ("in the remainder of the optional header"), so a huge `NumberOfRvaAndSizes` is damage, while a count above 16 that fits is not (loaders read the first 16) |
//! | section raw data | `PointerToRawData + SizeOfRawData` within the file (sections without raw data, a zero pointer or size, have none to check) |
//! | data directories 0-14 | RVA plus size within `SizeOfImage`; the certificate table (entry 4) holds a file offset instead, and lies within the file |
//! | base relocations | the table lies in a section's raw data; each block's `SizeOfBlock` is at least its 8-byte header, a multiple of 4 (blocks start on 32-bit boundaries) and within the table; each fixup of a known width (`HIGH`, `LOW`, `HIGHLOW`, `HIGHADJ`, `DIR64`) lies within `SizeOfImage` |
//!
//! Not damage: an empty relocation block (8 bytes, no entries; nothing
//! forbids one), directory entries past the 16th, fixups of types whose
//! width depends on the machine (their targets are not checked).

use object::LittleEndian as LE;
use object::pe;
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader};

use crate::bytes::{le, le_at};

/// The names of the 15 data directories the specification defines, by
/// index (the 16th is reserved).
const DIRECTORIES: [&str; 15] = [
    "export table",
    "import table",
    "resource table",
    "exception table",
    "certificate table",
    "base relocation table",
    "debug directory",
    "architecture data",
    "global pointer",
    "TLS table",
    "load configuration table",
    "bound import table",
    "import address table",
    "delay import descriptor",
    "CLR runtime header",
];

/// One base relocation (a fixup the loader applies): its RVA and type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BaseReloc {
    /// The RVA of the field it fixes.
    pub rva: u32,
    /// `IMAGE_REL_BASED_*`.
    pub typ: pe::BaseRelocationType,
}

/// What is wrong with the headers of `data`, a PE image of the format
/// `kind` (as the scan read it), in words; `None` when nothing is, or when
/// `kind` is no PE image's.
pub(crate) fn damage(data: &[u8], kind: object::FileKind) -> Option<String> {
    base_relocations(data, kind).err().filter(|_| is_pe(kind))
}

/// Whether `kind` is a PE image's (what `object` calls PE32 or PE32+).
pub(crate) fn is_pe(kind: object::FileKind) -> bool {
    matches!(kind, object::FileKind::Pe32 | object::FileKind::Pe64)
}

/// The base relocations of `data`, a PE image of the format `kind`, in
/// table order, checked as [`damage`] checks them; or what is wrong.
pub(crate) fn base_relocations(
    data: &[u8],
    kind: object::FileKind,
) -> Result<Vec<BaseReloc>, String> {
    match kind {
        object::FileKind::Pe64 => check::<pe::ImageNtHeaders64>(data),
        object::FileKind::Pe32 => check::<pe::ImageNtHeaders32>(data),
        _ => Err("it is no PE image".into()),
    }
}

/// The headers of `data` read as `Pe` and checked; its base relocations.
fn check<Pe: ImageNtHeaders>(data: &[u8]) -> Result<Vec<BaseReloc>, String> {
    let bad = |e: object::read::Error| format!("its PE headers cannot be read ({e})");
    let len = data.len() as u64;
    let dos = pe::ImageDosHeader::parse(data).map_err(bad)?;
    let mut offset = u64::from(dos.nt_headers_offset());
    let (nt, dirs) = Pe::parse(data, &mut offset).map_err(bad)?;
    let table = nt.sections(data, offset).map_err(bad)?;
    for (i, s) in table.iter().enumerate() {
        let (ptr, size) = (s.pointer_to_raw_data.get(LE), s.size_of_raw_data.get(LE));
        if ptr != 0 && size != 0 && u64::from(ptr) + u64::from(size) > len {
            return Err(format!(
                "the raw data of section {} `{}` ({size:#x} bytes at {ptr:#x}) runs past the \
                 end of the file ({len:#x} bytes)",
                i + 1,
                String::from_utf8_lossy(s.raw_name()).trim_end_matches('\0')
            ));
        }
    }
    let image_size = u64::from(nt.optional_header().size_of_image());
    for (i, d) in dirs.iter().enumerate().take(DIRECTORIES.len()) {
        let (at, size) = (
            u64::from(d.virtual_address.get(LE)),
            u64::from(d.size.get(LE)),
        );
        if size == 0 {
            continue;
        }
        let (limit, what) = match i {
            pe::IMAGE_DIRECTORY_ENTRY_SECURITY => (len, "the file"),
            _ => (image_size, "the image"),
        };
        if at + size > limit {
            return Err(format!(
                "the {} ({size:#x} bytes at {at:#x}) runs past the end of {what} ({limit:#x} \
                 bytes)",
                DIRECTORIES[i]
            ));
        }
    }
    let Some(d) = dirs.get(pe::IMAGE_DIRECTORY_ENTRY_BASERELOC) else {
        return Ok(Vec::new());
    };
    if d.size.get(LE) == 0 {
        return Ok(Vec::new());
    }
    let at = d.virtual_address.get(LE);
    let bytes = table
        .pe_data_at(data, at)
        .and_then(|b| b.get(..usize::try_from(d.size.get(LE)).ok()?))
        .ok_or_else(|| {
            format!(
                "the base relocation table ({:#x} bytes at RVA {at:#x}) lies outside the raw \
                 data of every section",
                d.size.get(LE)
            )
        })?;
    blocks(bytes, image_size)
}

/// The fixups of the base relocation table `bytes`, each checked to lie
/// within an image of `image_size` bytes.
fn blocks(mut bytes: &[u8], image_size: u64) -> Result<Vec<BaseReloc>, String> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while !bytes.is_empty() {
        let field = |k: usize| le_at::<u32>(bytes, k);
        let (Some(page), Some(size)) = (field(0), field(4)) else {
            return Err(format!(
                "the base relocation table ends in {} bytes at {at:#x}, too few for a block \
                 header",
                bytes.len()
            ));
        };
        let fits = usize::try_from(size)
            .ok()
            .filter(|&n| n >= 8 && n % 4 == 0 && n <= bytes.len());
        let Some(n) = fits else {
            return Err(format!(
                "the base relocation block at {at:#x} of the table says it is {size} bytes long \
                 ({} are left; a block is a multiple of 4, at least 8)",
                bytes.len()
            ));
        };
        let mut adjust = false;
        for e in bytes[8..n].chunks_exact(2) {
            let e = le::<u16>([e[0], e[1]]);
            if std::mem::take(&mut adjust) {
                // The parameter of the `HIGHADJ` before it, no fixup.
                continue;
            }
            let typ = pe::BaseRelocationType(e >> 12);
            let rva = u64::from(page) + u64::from(e & 0xfff);
            let width = match typ {
                pe::IMAGE_REL_BASED_ABSOLUTE => continue,
                pe::IMAGE_REL_BASED_HIGH | pe::IMAGE_REL_BASED_LOW => 2,
                pe::IMAGE_REL_BASED_HIGHADJ => {
                    adjust = true;
                    2
                }
                pe::IMAGE_REL_BASED_HIGHLOW => 4,
                pe::IMAGE_REL_BASED_DIR64 => 8,
                _ => 0,
            };
            if rva + width > image_size {
                return Err(format!(
                    "a base relocation (type {}) at RVA {rva:#x} lies past the end of the \
                     image ({image_size:#x} bytes)",
                    typ.0
                ));
            }
            // Below `image_size`, a 32-bit value.
            let rva = u32::try_from(rva).map_err(|_| "a base relocation's RVA passes 4 GiB")?;
            out.push(BaseReloc { rva, typ });
        }
        bytes = &bytes[n..];
        at += n;
    }
    Ok(out)
}

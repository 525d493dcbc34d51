//! What pruning reads of a Windows PE image's headers ([`PeImage`]): its
//! sections, alignments, checksum, certificate table, debug directory
//! and base relocations, with the file offsets of the fields a rewrite
//! may change (see [`crate::host::linked::pe`], which rewrites them).

use std::mem::{offset_of, size_of};

use object::pe::{
    self, ImageDebugDirectory, ImageFileHeader, ImageOptionalHeader32, ImageOptionalHeader64,
    ImageSectionHeader,
};
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader};
use object::{LittleEndian as LE, ReadRef};

use crate::host::linked::checked::Refusal;
use crate::num::{len64, u64_from};

/// The checksum sits at the same place in both optional headers.
const CHECKSUM: usize = offset_of!(ImageOptionalHeader64, check_sum);
const _: () = assert!(CHECKSUM == offset_of!(ImageOptionalHeader32, check_sum));
/// So does `SizeOfInitializedData`.
const INIT_DATA: usize = offset_of!(ImageOptionalHeader64, size_of_initialized_data);
const _: () = assert!(INIT_DATA == offset_of!(ImageOptionalHeader32, size_of_initialized_data));

/// One section header, read.
#[derive(Debug, Clone)]
pub(crate) struct Section {
    /// Its name (8 bytes at most in an image).
    pub(crate) name: String,
    /// The file offset of its header.
    pub(crate) header_at: u64,
    /// Its RVA and virtual size.
    pub(crate) rva: u32,
    pub(crate) vsize: u32,
    /// Its raw data: file offset and size.
    pub(crate) raw_ptr: u64,
    pub(crate) raw_size: u64,
    /// `Characteristics`.
    pub(crate) flags: pe::SectionFlags,
    /// `PointerToRelocations` and `PointerToLinenumbers` (0 in images).
    pub(crate) relocs_ptr: u32,
    pub(crate) lines_ptr: u32,
}

impl Section {
    /// The file range of its raw data, when it has some.
    pub(crate) fn raw(&self) -> Option<(u64, u64)> {
        (self.raw_size != 0).then(|| (self.raw_ptr, self.raw_ptr.saturating_add(self.raw_size)))
    }
}

/// What pruning needs of a PE image's headers, with the file offsets of
/// the fields it may change.
#[derive(Debug, Clone)]
pub(crate) struct PeImage {
    /// PE32+ (pointers are 8 bytes).
    pub(crate) is_64: bool,
    pub(crate) image_base: u64,
    pub(crate) file_alignment: u64,
    /// `SectionAlignment`: below a page, the raw data lies at the
    /// addresses (file offset = RVA) and cannot move.
    pub(crate) section_alignment: u64,
    /// `SizeOfHeaders`: the headers' bytes, from offset 0.
    pub(crate) headers_end: u64,
    /// The checksum and where it is.
    pub(crate) checksum_at: u64,
    pub(crate) checksum: u32,
    /// `SizeOfInitializedData` and where it is.
    pub(crate) init_data_at: u64,
    pub(crate) init_data: u32,
    /// `PointerToSymbolTable` and where it is.
    pub(crate) symtab_at: u64,
    pub(crate) symtab: u32,
    /// The security directory entry's file offset, and the certificate
    /// table it names (file offset and size; `None` when there is none).
    pub(crate) security_at: u64,
    pub(crate) certificates: Option<(u64, u64)>,
    /// The sections, in table order.
    pub(crate) sections: Vec<Section>,
    /// Each debug directory entry's `PointerToRawData`: where the field
    /// is, and its value.
    pub(crate) debug: Vec<(u64, u64)>,
    /// The base relocations: RVA and type.
    pub(crate) relocs: Vec<(u32, pe::BaseRelocationType)>,
}

/// The format of `data` when it is a PE image (what `object` calls PE32
/// or PE32+), for a file the scan has not read ([`crate::host::pe::is_pe`]
/// for one it has).
pub(crate) fn pe_kind(data: &[u8]) -> Option<object::FileKind> {
    crate::host::file_kind(data)
        .ok()
        .filter(|k| crate::host::pe::is_pe(*k))
}

impl PeImage {
    /// Reads the headers of `data`, a PE image of the format `kind` (as
    /// the scan read it).
    pub(crate) fn read(data: &[u8], kind: object::FileKind) -> Result<PeImage, Refusal> {
        match kind {
            object::FileKind::Pe64 => read_as::<pe::ImageNtHeaders64>(data, kind),
            object::FileKind::Pe32 => read_as::<pe::ImageNtHeaders32>(data, kind),
            _ => Err("it is no PE image".into()),
        }
    }

    /// The file offset of RVA `rva` and the bytes of raw data from there
    /// to its section's end, when a section's raw data holds it.
    pub(crate) fn offset_of_rva(&self, rva: u32) -> Option<(u64, u64)> {
        self.sections.iter().find_map(|s| {
            let d = u64::from(rva.checked_sub(s.rva)?);
            let size = s.raw_size.min(u64::from(s.vsize));
            (d < size).then(|| (s.raw_ptr + d, size - d))
        })
    }
}

/// [`PeImage::read`] for headers of type `Pe`.
fn read_as<Pe: ImageNtHeaders>(data: &[u8], kind: object::FileKind) -> Result<PeImage, Refusal> {
    let bad = |e: object::read::Error| format!("its PE headers cannot be read ({e})");
    let dos = pe::ImageDosHeader::parse(data).map_err(bad)?;
    let nt_at = u64::from(dos.nt_headers_offset());
    let mut offset = nt_at;
    let (nt, dirs) = Pe::parse(data, &mut offset).map_err(bad)?;
    let table = nt.sections(data, offset).map_err(bad)?;
    let opt = nt.optional_header();
    let file_header_at = nt_at + 4;
    let opt_at = file_header_at + u64_from(size_of::<ImageFileHeader>());
    let dirs_at = opt_at + u64_from(size_of::<Pe::ImageOptionalHeader>());
    let mut sections = Vec::new();
    for (i, s) in table.iter().enumerate() {
        let name = String::from_utf8_lossy(s.raw_name())
            .trim_end_matches('\0')
            .to_string();
        sections.push(Section {
            name,
            header_at: offset + u64_from(i * size_of::<ImageSectionHeader>()),
            rva: s.virtual_address.get(LE),
            vsize: s.virtual_size.get(LE),
            raw_ptr: u64::from(s.pointer_to_raw_data.get(LE)),
            raw_size: u64::from(s.size_of_raw_data.get(LE)),
            flags: s.characteristics.get(LE),
            relocs_ptr: s.pointer_to_relocations.get(LE),
            lines_ptr: s.pointer_to_linenumbers.get(LE),
        });
    }
    let len = len64(data);
    for s in &sections {
        if let Some((_, end)) = s.raw()
            && end > len
        {
            return Err(format!(
                "section `{}`'s raw data runs past the end of the file",
                s.name
            ));
        }
    }
    let certificates = match dirs.get(pe::IMAGE_DIRECTORY_ENTRY_SECURITY) {
        Some(d) if d.size.get(LE) != 0 => {
            // The security directory holds a file offset, not an RVA.
            let at = u64::from(d.virtual_address.get(LE));
            let size = u64::from(d.size.get(LE));
            if at.checked_add(size).is_none_or(|e| e > len) {
                return Err("the certificate table runs past the end of the file".into());
            }
            Some((at, size))
        }
        _ => None,
    };
    let mut image = PeImage {
        is_64: nt.is_type_64(),
        image_base: opt.image_base(),
        file_alignment: u64::from(opt.file_alignment()),
        section_alignment: u64::from(opt.section_alignment()),
        headers_end: u64::from(opt.size_of_headers()),
        checksum_at: opt_at + u64_from(CHECKSUM),
        checksum: opt.check_sum(),
        init_data_at: opt_at + u64_from(INIT_DATA),
        init_data: opt.size_of_initialized_data(),
        symtab_at: file_header_at + u64_from(offset_of!(ImageFileHeader, pointer_to_symbol_table)),
        symtab: nt.file_header().pointer_to_symbol_table.get(LE),
        security_at: dirs_at + u64_from(pe::IMAGE_DIRECTORY_ENTRY_SECURITY * 8),
        certificates,
        sections,
        debug: Vec::new(),
        relocs: Vec::new(),
    };
    if !image.file_alignment.is_power_of_two() || image.file_alignment > 0x1_0000 {
        return Err(format!(
            "its file alignment {:#x} is not one a loader takes",
            image.file_alignment
        ));
    }
    if let Some(d) = dirs.get(pe::IMAGE_DIRECTORY_ENTRY_DEBUG) {
        image.debug = debug_pointers(data, &image, d)?;
    }
    // Read as the scan read them: one reader, one verdict on damage.
    image.relocs = crate::host::pe::base_relocations(data, kind)?
        .into_iter()
        .map(|r| (r.rva, r.typ))
        .collect();
    Ok(image)
}

/// The `PointerToRawData` fields of the debug directory `d` of `image`
/// (entries with data in the file): where each field is, and its value.
fn debug_pointers(
    data: &[u8],
    image: &PeImage,
    d: &pe::ImageDataDirectory,
) -> Result<Vec<(u64, u64)>, Refusal> {
    let mut out = Vec::new();
    if d.size.get(LE) == 0 {
        return Ok(out);
    }
    let entry = u64_from(size_of::<ImageDebugDirectory>());
    let (at, room) = image
        .offset_of_rva(d.virtual_address.get(LE))
        .ok_or("the debug directory lies in no section's raw data")?;
    let size = u64::from(d.size.get(LE));
    if size > room {
        return Err("the debug directory runs past its section".into());
    }
    for k in 0..size / entry {
        let e: &ImageDebugDirectory = data
            .read_at(at + k * entry)
            .map_err(|()| "a debug directory entry cannot be read")?;
        if e.size_of_data.get(LE) != 0 && e.pointer_to_raw_data.get(LE) != 0 {
            let field =
                at + k * entry + u64_from(offset_of!(ImageDebugDirectory, pointer_to_raw_data));
            out.push((field, u64::from(e.pointer_to_raw_data.get(LE))));
        }
    }
    Ok(out)
}

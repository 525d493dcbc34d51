//! Where object files (ELF, COFF, Mach-O) keep device images: the section
//! table says, so a multi-GiB file is answered by reading its headers.
//!
//! | section | holds | source |
//! |---|---|---|
//! | type `SHT_LLVM_OFFLOADING` (0x6fff4c0b), or named `.llvm.offloading*` (COFF, and ELF written by other tools); Mach-O `__offloading` | OffloadBinaries, back to back | LLVM 22 `BinaryFormat/ELF.h`, docs/formats/sections.md |
//! | `.hip_fatbin` (COFF `.hip_fat`, Mach-O `__hip_fatbin`) | clang bundles and CCOBs, back to back, 4096-aligned | docs/formats/bundles.md, docs/formats/sections.md |
//! | `.nv_fatbin`, `__nv_relfatbin` (8-character PE image names `.nv_fatb`, `__nv_rel`; Mach-O `__nv_fatbin`) | CUDA fatbin containers | docs/formats/cuda-fatbin.md |
//! | `.hipFatBinSegment`, `.nvFatBinSegment` (Mach-O `__fatbin`; 8-character COFF image names `.hipFatB`, `.nvFatBi`) | fatbin wrappers pointing at the above | docs/formats/cuda-fatbin.md |
//! | `.llvm` in a PE image (lld-link cuts `.llvm.offloading` there, with the other `.llvm.*` sections) | OffloadBinaries among other data (the offload entries' names) | docs/windows.md |
//! | `__CLANG_OFFLOAD_BUNDLE__<ID>` (PE: `__CLANG_`, all merged, IDs lost) | one entry of a bundled object (`clang-offload-bundler -type=o`, HIP `-fgpu-rdc -c`); in a library linked by Intel's SYCL compiler, its images for that target | docs/formats/bundles.md §3, docs/formats/sycl.md |
//! | `.tgtimg` | (address, size) of each image Intel's SYCL wrapper embeds | docs/formats/sycl.md |
//!
//! Sections are recognised by type (ELF) or name, whatever their flags:
//! `.llvm.offloading` is `SHF_EXCLUDE` in relocatable objects and allocated
//! in executables.

use object::read::elf::{FileHeader, SectionHeader};
use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget, SymbolSection};

use crate::bytes::Bytes;
use crate::fatbin;
use crate::num::{len64, u64_from};

pub(super) mod sycl;
use crate::offload_binary::container::{self, SHT_LLVM_OFFLOADING};

/// What a section holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Role {
    /// OffloadBinaries.
    OffloadBinaries,
    /// Bundles, CCOBs or CUDA fatbin containers.
    Fatbins,
    /// Fatbin wrappers.
    Wrappers,
    /// One entry of a bundled object; the ID follows the prefix.
    BundleEntry(Vec<u8>),
    /// OffloadBinaries among other bytes: a PE image's `.llvm` section,
    /// where lld-link puts every `.llvm.*` input section (it cuts an output
    /// section's name at its second dot), so the OffloadBinaries of
    /// `.llvm.offloading` share it with the offload entries' name strings
    /// of `.llvm.rodata.offloading`.
    Mixed,
    /// `.tgtimg`: the address and size of each device image that Intel's
    /// SYCL wrapper embeds, pointer-sized pairs (see
    /// [`ObjectFile::image_table`]).
    ImageTable,
}

/// A section that holds device code.
#[derive(Debug, Clone)]
pub(super) struct Section<'data> {
    /// Its name.
    pub name: String,
    /// What it holds.
    pub role: Role,
    /// Its bytes.
    pub data: &'data [u8],
    /// Its offset in the file.
    pub offset: u64,
    /// Its address (for wrappers: where their pointers live).
    pub address: u64,
}

/// A parsed object file: its device sections, and what is needed to follow
/// a wrapper's pointer.
pub(super) struct ObjectFile<'data> {
    file: object::File<'data>,
    /// The file's bytes.
    data: &'data [u8],
    /// A name for the format (`ELF64`, `COFF`, …).
    pub format: &'static str,
    /// Whether the file has a section table at all (a stripped executable
    /// has none, and needs a raw scan).
    pub has_sections: bool,
    /// Pointer-sized fields are 8 bytes.
    pub wide: bool,
    /// The device sections, in section-table order.
    pub sections: Vec<Section<'data>>,
    /// Sections that could not be read, with the reason.
    pub problems: Vec<(String, String)>,
    /// What is wrong with the headers of a PE image or COFF object: a table
    /// they name lies outside the file or the image (see
    /// [`crate::host::pe`] and [`crate::host::object::coff_damage`]).
    pub damage: Option<String>,
}

/// Bundle-entry sections are named with the binary bundle magic and the ID.
const BUNDLE_PREFIX: &[u8] = crate::bundle::binary::MAGIC;

/// What is left of a bundle-entry section's name in a PE image.
pub(super) const CUT_BUNDLE_SECTION: &[u8] = b"__CLANG_";

fn role_by_name(name: &[u8]) -> Option<Role> {
    if let Some(id) = name.strip_prefix(BUNDLE_PREFIX) {
        return Some(Role::BundleEntry(id.to_vec()));
    }
    if name.starts_with(container::SECTION.as_bytes()) || name == b"__offloading" {
        return Some(Role::OffloadBinaries);
    }
    match name {
        // A PE image cuts `__CLANG_OFFLOAD_BUNDLE__<ID>` to 8 bytes (and
        // its linker may merge every such section into one): the IDs are
        // lost.
        CUT_BUNDLE_SECTION => Some(Role::BundleEntry(Vec::new())),
        b".tgtimg" => Some(Role::ImageTable),
        fatbin::SECTION_HIP
        | b".hip_fat"
        | b"__hip_fatbin"
        | fatbin::SECTION_CUDA
        | b".nv_fatb"
        | b"__nv_fatbin"
        | b"__nv_relfatbin"
        | b"__nv_rel" => Some(Role::Fatbins),
        fatbin::WRAPPER_SECTION_HIP
        | fatbin::WRAPPER_SECTION_CUDA
        | b"__fatbin"
        | b".hipFatB"
        | b".nvFatBi" => Some(Role::Wrappers),
        _ => None,
    }
}

/// The ELF section type and name offset of section `index`, for ELF files.
fn elf_type(file: &object::File<'_>, index: object::SectionIndex) -> Option<(u32, u32)> {
    fn of<'data, H: FileHeader>(
        f: &object::read::elf::ElfFile<'data, H>,
        index: object::SectionIndex,
    ) -> Option<(u32, u32)> {
        let s = f.elf_section_table().section(index).ok()?;
        Some((s.sh_type(f.endian()).0, s.sh_name(f.endian())))
    }
    match file {
        object::File::Elf32(f) => of(f, index),
        object::File::Elf64(f) => of(f, index),
        _ => None,
    }
}

/// The host format `data` starts as (ELF, COFF, PE, Mach-O), from its
/// header alone; `None` for any other kind of file.
pub(super) fn host_kind(data: &[u8]) -> Option<object::FileKind> {
    host_of(crate::host::file_kind(data).ok())
}

/// The host format of a file that `object::FileKind::parse` read as
/// `kind` ([`host_kind`] for a caller that has the kind already).
pub(super) fn host_of(kind: Option<object::FileKind>) -> Option<object::FileKind> {
    use object::FileKind as K;
    let kind = kind?;
    matches!(
        kind,
        K::Elf32 | K::Elf64 | K::Coff | K::CoffBig | K::Pe32 | K::Pe64 | K::MachO32 | K::MachO64
    )
    .then_some(kind)
}

/// The report's name of the host format `kind` (`ELF64`, `COFF`, `PE`,
/// `Mach-O`).
pub(super) fn format_name(kind: object::FileKind) -> &'static str {
    use object::FileKind as K;
    match kind {
        K::Elf32 => "ELF32",
        K::Elf64 => "ELF64",
        K::Coff | K::CoffBig => "COFF",
        K::Pe32 | K::Pe64 => "PE",
        _ => "Mach-O",
    }
}

/// Parses `data`, a file of the host format `kind` ([`host_kind`]).
pub(super) fn parse(
    data: &[u8],
    kind: object::FileKind,
) -> Result<ObjectFile<'_>, object::read::Error> {
    let format = format_name(kind);
    let file = object::File::parse(data)?;
    let mut sections = Vec::new();
    let mut problems = Vec::new();
    let mut has_sections = false;
    for s in file.sections() {
        let Ok(mut name) = s.name_bytes() else {
            continue;
        };
        let elf = elf_type(&file, s.index());
        if elf.is_some_and(|(_, offset)| offset == 0) {
            // LLVM reads a name offset of 0 as the empty name, whatever
            // the name table holds there.
            name = &[];
        }
        if !name.is_empty() {
            has_sections = true;
        }
        let role = match elf {
            Some((SHT_LLVM_OFFLOADING, _)) => Some(Role::OffloadBinaries),
            None if format == "PE" && name == b".llvm" => Some(Role::Mixed),
            _ => role_by_name(name),
        };
        let Some(role) = role else { continue };
        let name = String::from_utf8_lossy(name).into_owned();
        let Some((offset, _)) = s.file_range() else {
            // No file bytes (SHT_NOBITS): nothing to read.
            continue;
        };
        match s.data() {
            // An empty section's sh_offset is not checked by the reader: a
            // bogus one would place an empty image far past the end.
            Ok(bytes)
                if offset
                    .checked_add(bytes.len() as u64)
                    .is_none_or(|end| end > data.len() as u64) =>
            {
                problems.push((
                    name,
                    format!(
                        "its offset {offset:#x} lies outside the file ({} bytes)",
                        data.len()
                    ),
                ));
            }
            Ok(bytes) => sections.push(Section {
                name,
                role,
                data: bytes,
                offset,
                address: s.address(),
            }),
            Err(e) => problems.push((name, e.to_string())),
        }
    }
    // A COFF object says it is not 64-bit whatever its machine (`object`
    // reads the format's fields as 32-bit); its pointers are as wide as the
    // machine's addresses.
    let wide = file.is_64() || file.architecture().address_size() == Some(object::AddressSize::U64);
    let damage = match format {
        "PE" => crate::host::pe::damage(data, kind).map(|d| format!("damaged PE image: {d}")),
        "COFF" => crate::host::object::coff_damage(data, kind),
        _ => None,
    };
    Ok(ObjectFile {
        file,
        data,
        format,
        has_sections,
        wide,
        sections,
        problems,
        damage,
    })
}

impl<'data> ObjectFile<'data> {
    /// The CUDA fatbins in the file's other data sections (`.rodata`,
    /// `.data`, `.ldata`, PE's `.rdata` …): fatbins a library loads itself
    /// (cuFFT keeps thousands in `.data`), which no CUDA runtime registers
    /// and `cuobjdump` does not read. Counted by their headers (at 8-byte
    /// alignment, version 1, 16-byte header, a size that fits the
    /// section), not walked: the scan that lists them is `--raw`. By
    /// section, in section-table order, the sections with none left out.
    ///
    /// The sections searched add up to at most the file's size (a section
    /// table that names the same bytes many times gets no more work), and
    /// the sections with roles are looked up once.
    pub(super) fn fatbins_elsewhere(&self) -> Vec<(String, u64)> {
        use object::SectionKind as K;
        let mut out: Vec<(String, u64)> = Vec::new();
        let skip: std::collections::HashSet<&str> = self
            .sections
            .iter()
            .map(|d| d.name.as_str())
            .chain(self.problems.iter().map(|(p, _)| p.as_str()))
            .collect();
        let kinds = [
            K::Data,
            K::ReadOnlyData,
            K::ReadOnlyDataWithRel,
            K::ReadOnlyString,
        ];
        let searched = |s: &object::Section<'_, '_>| {
            s.name_bytes()
                .is_ok_and(|n| !skip.contains(String::from_utf8_lossy(n).as_ref()))
        };
        for (s, data) in self.data_sections(&kinds, searched) {
            let name = String::from_utf8_lossy(s.name_bytes().unwrap_or_default());
            let n = fatbin_headers(data, s.address());
            if n == 0 {
                continue;
            }
            add_elsewhere(&mut out, &name, n);
        }
        out
    }

    /// The sections of the kinds `kinds` that `searched` takes, with their
    /// bytes, in section-table order, as long as the bytes handed out add
    /// up to at most the file's size (a section table that names the same
    /// bytes many times gets no more work).
    fn data_sections<'f>(
        &'f self,
        kinds: &'f [object::SectionKind],
        searched: impl Fn(&object::Section<'data, 'f>) -> bool + 'f,
    ) -> impl Iterator<Item = (object::Section<'data, 'f>, &'data [u8])> + 'f {
        let mut budget = len64(self.data);
        self.file
            .sections()
            .filter(move |s| kinds.contains(&s.kind()) && searched(s))
            .filter_map(|s| s.data().ok().map(|d| (s, d)))
            .map_while(move |(s, d)| {
                budget = budget.checked_sub(len64(d))?;
                Some((s, d))
            })
    }

    /// The file offset of the address `addr`, if a section with file bytes
    /// covers it: all of the section's bytes, or, in a PE image, the first
    /// ones (a PE section's raw data may be shorter than its virtual size,
    /// and the loader fills the rest with zeros; a pruned DLL's fat-binary
    /// section is).
    fn offset_of_address(&self, addr: u64) -> Option<u64> {
        if addr == 0 {
            return None;
        }
        let pe = self.format == "PE";
        self.file.sections().find_map(|s| {
            let (off, size) = s.file_range()?;
            let start = s.address();
            (addr >= start && addr - start < size && (pe || s.size() == size))
                .then(|| off.checked_add(addr - start))?
        })
    }

    /// The file offset a pointer field with relocation `r` holds, `stored`
    /// being what the field holds (the addend of a COFF relocation).
    fn relocated(&self, r: &object::Relocation, stored: u64) -> Option<u64> {
        let coff = self.format == "COFF";
        let (base, sym_addr) = match r.target() {
            RelocationTarget::Symbol(i) => {
                let sym = self.file.symbol_by_index(i).ok()?;
                let SymbolSection::Section(si) = sym.section() else {
                    return None;
                };
                let target = self.file.section_by_index(si).ok()?;
                (
                    target.file_range()?.0,
                    sym.address().checked_sub(target.address())?,
                )
            }
            RelocationTarget::Section(si) => {
                (self.file.section_by_index(si).ok()?.file_range()?.0, 0)
            }
            _ => return None,
        };
        let addend = match coff && r.has_implicit_addend() {
            true => stored.cast_signed(),
            false => r.addend(),
        };
        base.checked_add(sym_addr)?.checked_add_signed(addend)
    }

    /// Where the pointer stored at `field` (a section offset) of section
    /// `sec` points, as a file offset: the value itself when the linker
    /// wrote it; else a relocation at that place (a symbol plus addend in a
    /// relocatable object, the addend being what the field holds in a COFF
    /// object, or a relative dynamic relocation in a PIE whose linker left
    /// the field zero).
    pub(super) fn resolve_pointer(
        &self,
        sec: &Section<'_>,
        field: u64,
        stored: u64,
    ) -> Option<u64> {
        // A COFF object's sections have no addresses: what its field holds
        // is the addend of the relocation there (COFF relocations keep it
        // in place), never an address.
        let coff = self.format == "COFF";
        if !coff && let Some(off) = self.offset_of_address(stored) {
            return Some(off);
        }
        let section = self.file.sections().find(|s| {
            s.file_range().is_some_and(|(o, _)| o == sec.offset) && s.address() == sec.address
        })?;
        for (at, r) in section.relocations() {
            if at == field {
                return self.relocated(&r, stored);
            }
        }
        let addr = sec.address.checked_add(field)?;
        for (at, r) in self.file.dynamic_relocations()? {
            if at == addr && r.target() == RelocationTarget::Absolute {
                return self.offset_of_address(u64::try_from(r.addend()).ok()?);
            }
        }
        None
    }
}

/// How many plausible CUDA fatbin headers `data`, loaded at `address`,
/// holds at 8-byte-aligned addresses (a section need not start at one:
/// cuFFT's `.ldata` does not): the magic, version 1, a 16-byte header and
/// a nonzero size of contents that ends inside `data`.
fn fatbin_headers(data: &[u8], address: u64) -> u64 {
    let mut n = 0;
    for at in memchr::memmem::find_iter(data, &fatbin::MAGIC) {
        if !address.wrapping_add(len64(&data[..at])).is_multiple_of(8) {
            continue;
        }
        let Some(h) = Bytes::new(data).read_at_as::<fatbin::Header>(u64_from(at)) else {
            continue;
        };
        let (version, header, size) = (h.version.get(), h.header_size.get(), h.size.get());
        let room = len64(&data[at + 16..]);
        if version == 1 && header == 16 && size > 0 && size <= room {
            n += 1;
        }
    }
    n
}

/// How many sections [`add_elsewhere`] names; the fatbins of the others
/// are counted under [`OTHER_SECTIONS`].
const ELSEWHERE_SECTIONS: usize = 16;

/// The name the fatbins of the sections past [`ELSEWHERE_SECTIONS`] are
/// counted under.
pub(super) const OTHER_SECTIONS: &str = "(other sections)";

/// Adds `n` fatbins found in section `name` to `to`: to that section's
/// count, or a new one, or, when [`ELSEWHERE_SECTIONS`] are named
/// already, to [`OTHER_SECTIONS`] (a file of thousands of sections, or an
/// archive of thousands of members, keeps the list and its upkeep short).
pub(super) fn add_elsewhere(to: &mut Vec<(String, u64)>, name: &str, n: u64) {
    if let Some((_, m)) = to.iter_mut().find(|(o, _)| o == name) {
        *m = m.saturating_add(n);
    } else if to.len() < ELSEWHERE_SECTIONS {
        to.push((name.to_owned(), n));
    } else if let Some((_, m)) = to.iter_mut().find(|(o, _)| o == OTHER_SECTIONS) {
        *m = m.saturating_add(n);
    } else {
        to.push((OTHER_SECTIONS.to_owned(), n));
    }
}

#[cfg(test)]
mod tests {
    use super::fatbin_headers;

    /// A fatbin header at `at` of `buf`: version 1, 16-byte header,
    /// `size` bytes of contents.
    fn header(buf: &mut [u8], at: usize, version: u16, size: u64) {
        buf[at..at + 4].copy_from_slice(&crate::fatbin::MAGIC);
        buf[at + 4..at + 6].copy_from_slice(&version.to_le_bytes());
        buf[at + 6..at + 8].copy_from_slice(&16u16.to_le_bytes());
        buf[at + 8..at + 16].copy_from_slice(&size.to_le_bytes());
    }

    #[test]
    fn past_sixteen_sections_the_rest_are_counted_together() {
        use super::{OTHER_SECTIONS, add_elsewhere};
        let mut to = Vec::new();
        for i in 0..40 {
            add_elsewhere(&mut to, &format!(".d{i}"), 2);
        }
        add_elsewhere(&mut to, ".d3", 1);
        assert_eq!(to.len(), 17);
        assert_eq!(to[3], (".d3".to_owned(), 3));
        assert_eq!(to[16], (OTHER_SECTIONS.to_owned(), 48));
    }

    #[test]
    fn fatbin_headers_are_counted_where_one_could_be() {
        let mut buf = vec![0u8; 256];
        header(&mut buf, 0, 1, 48); // counted
        header(&mut buf, 64, 1, 176); // counted: its contents end at the end
        assert_eq!(fatbin_headers(&buf, 0), 2);
        // The same bytes loaded at an address that is not 8-aligned.
        assert_eq!(fatbin_headers(&buf, 4), 0);
        // Moved 4 bytes on, in a section that starts 4 bytes past an
        // 8-byte boundary (as cuFFT's .ldata does): aligned again.
        let mut moved = vec![0u8; 4];
        moved.extend_from_slice(&buf);
        assert_eq!(fatbin_headers(&moved, 4), 2);
        header(&mut buf, 64, 1, 177); // one byte past the end
        assert_eq!(fatbin_headers(&buf, 0), 1);
        header(&mut buf, 64, 2, 16); // version 2
        assert_eq!(fatbin_headers(&buf, 0), 1);
        header(&mut buf, 64, 1, 0); // no contents
        assert_eq!(fatbin_headers(&buf, 0), 1);
        buf[64..80].fill(0);
        header(&mut buf, 100, 1, 16); // not at 8-byte alignment
        assert_eq!(fatbin_headers(&buf, 0), 1);
        // A magic too near the end for a header.
        let mut short = vec![0u8; 20];
        short[8..12].copy_from_slice(&crate::fatbin::MAGIC);
        assert_eq!(fatbin_headers(&short, 0), 0);
    }
}

//! Where OffloadBinaries are found in a file, as LLVM 22's
//! `extractOffloadBinaries` looks for them: a file that is itself a sequence
//! of binaries; ELF objects, executables and shared libraries, in sections of
//! type `SHT_LLVM_OFFLOADING`; COFF objects, in sections named
//! `.llvm.offloading*`; and the members of `ar` archives. Other files hold
//! none.

use object::read::archive::ArchiveFile;
use object::read::elf::{FileHeader, SectionHeader};
use object::{FileKind, elf};

use super::read::{Limits, OffloadImage, has_magic, read_all};
use crate::error::{Error, Result};

/// Section type of `.llvm.offloading` (`SHT_LLVM_OFFLOADING` in LLVM 22's
/// `BinaryFormat/ELF.h`; older notes giving 0x6fff4c08 are wrong).
pub const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c0b;

/// The name of the ELF section clang puts OffloadBinaries in (COFF
/// objects use names starting with it).
pub const SECTION: &str = ".llvm.offloading";

/// An image and where it was found.
#[derive(Debug, Clone)]
pub struct FoundImage<'data> {
    /// The archive member it came from, if any (outermost first).
    pub member: Option<String>,
    /// The section it came from, if any.
    pub section: Option<String>,
    /// The image.
    pub image: OffloadImage<'data>,
}

const MAX_DEPTH: u32 = 4;

/// Every image in `data`, in file order.
pub fn find_images<'data>(data: &'data [u8], limits: &Limits) -> Result<Vec<FoundImage<'data>>> {
    let mut out = Vec::new();
    find_in(data, limits, None, 0, &mut out)?;
    Ok(out)
}

fn find_in<'data>(
    data: &'data [u8],
    limits: &Limits,
    member: Option<&str>,
    depth: u32,
    out: &mut Vec<FoundImage<'data>>,
) -> Result<()> {
    let push = |out: &mut Vec<FoundImage<'data>>,
                images: Vec<OffloadImage<'data>>,
                section: Option<&str>| {
        out.extend(images.into_iter().map(|image| FoundImage {
            member: member.map(str::to_string),
            section: section.map(str::to_string),
            image,
        }));
    };
    if has_magic(data) {
        push(out, read_all(data, limits)?, None);
        return Ok(());
    }
    if super::kinds::is_bitcode(data) {
        return Err(Error::invalid(
            "input",
            "LLVM bitcode is not supported: offload-kit does not read `llvm.embedded.objects`",
        ));
    }
    match FileKind::parse(data) {
        Ok(FileKind::Elf32) => elf_sections::<elf::FileHeader32<object::Endianness>>(
            data,
            limits,
            &mut |imgs, name| push(out, imgs, Some(name)),
        ),
        Ok(FileKind::Elf64) => elf_sections::<elf::FileHeader64<object::Endianness>>(
            data,
            limits,
            &mut |imgs, name| push(out, imgs, Some(name)),
        ),
        Ok(FileKind::Coff) => {
            use object::{Object, ObjectSection};
            let file = object::read::coff::CoffFile::<&[u8]>::parse(data)
                .map_err(|e| obj_err("COFF object", e))?;
            for s in file.sections() {
                let name = s.name().map_err(|e| obj_err("COFF section name", e))?;
                if name.starts_with(SECTION) {
                    let bytes = s.data().map_err(|e| obj_err("COFF section", e))?;
                    push(out, read_all(bytes, limits)?, Some(name));
                }
            }
            Ok(())
        }
        Ok(FileKind::Archive) if depth < MAX_DEPTH => {
            let ar = ArchiveFile::parse(data).map_err(|e| obj_err("archive", e))?;
            for m in ar.members() {
                let m = m.map_err(|e| obj_err("archive member", e))?;
                let name = String::from_utf8_lossy(m.name()).into_owned();
                let bytes = m.data(data).map_err(|e| obj_err("archive member", e))?;
                let full = match member {
                    Some(outer) => format!("{outer}({name})"),
                    None => name,
                };
                find_in(bytes, limits, Some(&full), depth + 1, out)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn elf_sections<'data, H: FileHeader<Endian = object::Endianness>>(
    data: &'data [u8],
    limits: &Limits,
    found: &mut dyn FnMut(Vec<OffloadImage<'data>>, &str),
) -> Result<()> {
    let hdr = H::parse(data).map_err(|e| obj_err("ELF header", e))?;
    let endian = hdr.endian().map_err(|e| obj_err("ELF header", e))?;
    let sections = hdr
        .sections(endian, data)
        .map_err(|e| obj_err("ELF section table", e))?;
    for s in sections.iter() {
        if s.sh_type(endian).0 != SHT_LLVM_OFFLOADING {
            continue;
        }
        let name = sections
            .section_name(endian, s)
            .map_err(|e| obj_err("ELF section name", e))?;
        let name = String::from_utf8_lossy(name).into_owned();
        let bytes = s
            .data(endian, data)
            .map_err(|e| obj_err("ELF section", e))?;
        found(read_all(bytes, limits)?, &name);
    }
    Ok(())
}

fn obj_err(what: &str, e: object::read::Error) -> Error {
    Error::invalid(what, e.to_string())
}

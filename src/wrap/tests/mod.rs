//! The wrapper object read back with `object::read` and `gimli::read`, and
//! checked against the facts of docs/formats/wrapper-objects.md (LLVM 22's PIC output).
//! This file holds the helpers that read an object back; the tests are in
//! one file per topic.

use object::elf;
use object::read::elf::{ElfFile64, FileHeader as _, SectionHeader as _};
use object::{LittleEndian as LE, Object as _, ObjectSection as _, ObjectSymbol as _};

use super::*;
use crate::layout::Piece;
use crate::offload_binary::{ImageKind, ImageSpec, OffloadKind};

mod abis;
mod cpus;
mod fatbin;
mod inputs;
mod openmp;

fn opts(abi: Abi) -> Options {
    Options {
        kind: Kind::OpenMp,
        abi,
        triple: "x86_64-unknown-linux-gnu".into(),
        llc_layout: false,
        relocatable: false,
    }
}

/// Deterministic filler bytes.
fn filler(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from((i * 31 + usize::from(seed) * 7) % 251).unwrap())
        .collect()
}

/// An OffloadBinary (version 1) holding `image`, as llvm-offload-binary
/// writes it.
fn offload_binary(image: &[u8], arch: &str) -> Vec<u8> {
    let spec = ImageSpec {
        image_kind: ImageKind::IMG_Object,
        offload_kind: OffloadKind::OFK_OpenMP,
        flags: 0,
        strings: vec![
            (b"triple".to_vec(), b"x86_64-unknown-linux-gnu".to_vec()),
            (b"arch".to_vec(), arch.as_bytes().to_vec()),
        ],
        size: image.len() as u64,
    };
    let layout =
        crate::offload_binary::layout(&[spec], crate::offload_binary::Version::V1).unwrap();
    let mut out = Vec::new();
    layout.write_to(&mut out, &[image]).unwrap();
    out
}

/// Section header facts: (name, sh_type, sh_flags, sh_addralign, size).
fn sections(data: &[u8]) -> Vec<(String, u32, u64, u64, u64)> {
    let f = ElfFile64::<LE>::parse(data).unwrap();
    f.sections()
        .map(|s| {
            let h = s.elf_section_header();
            (
                s.name().unwrap().to_string(),
                h.sh_type(LE).0,
                h.sh_flags(LE).0,
                h.sh_addralign(LE),
                h.sh_size(LE),
            )
        })
        .collect()
}

fn section<'a>(
    all: &'a [(String, u32, u64, u64, u64)],
    name: &str,
) -> &'a (String, u32, u64, u64, u64) {
    all.iter()
        .find(|s| s.0 == name)
        .unwrap_or_else(|| panic!("no section {name}"))
}

/// Symbol facts: (name, bind, type, visibility, section name, value, size),
/// in symbol-table order, from index 1.
type Sym = (String, u8, u8, u8, String, u64, u64);

fn symbols(data: &[u8]) -> Vec<Sym> {
    let f = ElfFile64::<LE>::parse(data).unwrap();
    f.symbols()
        .map(|s| {
            let e = s.elf_symbol();
            let sec = match s.section_index() {
                Some(i) => f.section_by_index(i).unwrap().name().unwrap().to_string(),
                None => String::new(),
            };
            let name = if e.st_type() == elf::STT_SECTION {
                format!("[{sec}]")
            } else {
                s.name().unwrap().to_string()
            };
            (
                name,
                e.st_bind().0,
                e.st_type().0,
                e.st_visibility().0,
                sec,
                s.address(),
                s.size(),
            )
        })
        .collect()
}

/// Relocations of a section: (offset, r_type, symbol name, addend).
fn relocs(data: &[u8], section: &str) -> Vec<(u64, u32, String, i64)> {
    let f = ElfFile64::<LE>::parse(data).unwrap();
    let s = f.section_by_name(section).unwrap();
    s.relocations()
        .map(|(off, r)| {
            let object::RelocationFlags::Elf { r_type } = r.flags() else {
                panic!("not ELF")
            };
            let object::RelocationTarget::Symbol(i) = r.target() else {
                panic!("not a symbol")
            };
            let sym = f.symbol_by_index(i).unwrap();
            let name = if sym.kind() == object::SymbolKind::Section {
                f.section_by_index(sym.section_index().unwrap())
                    .unwrap()
                    .name()
                    .unwrap()
                    .to_string()
            } else {
                sym.name().unwrap().to_string()
            };
            (off, r_type.0, name, r.addend())
        })
        .collect()
}

fn contents(data: &[u8], name: &str) -> Vec<u8> {
    // Either byte order.
    let f = object::File::parse(data).unwrap();
    f.section_by_name(name).unwrap().data().unwrap().to_vec()
}

const LOCAL: u8 = elf::STB_LOCAL.0;
const GLOBAL: u8 = elf::STB_GLOBAL.0;
const DEFAULT: u8 = elf::STV_DEFAULT.0;
const HIDDEN: u8 = elf::STV_HIDDEN.0;
const NOTYPE: u8 = elf::STT_NOTYPE.0;
const OBJECT: u8 = elf::STT_OBJECT.0;
const FUNC: u8 = elf::STT_FUNC.0;
const R_64: u32 = elf::R_X86_64_64.0;
const R_PC32: u32 = elf::R_X86_64_PC32.0;
const R_PLT32: u32 = elf::R_X86_64_PLT32.0;

fn sym(name: &str, bind: u8, ty: u8, vis: u8, sec: &str, value: u64, size: u64) -> Sym {
    (name.into(), bind, ty, vis, sec.into(), value, size)
}

fn r(off: u64, ty: u32, sym: &str, addend: i64) -> (u64, u32, String, i64) {
    (off, ty, sym.into(), addend)
}

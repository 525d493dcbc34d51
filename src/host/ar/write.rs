//! The `ar` archive writer: GNU archives laid out byte for byte as LLVM 22's
//! `writeArchive` lays them out, with LLVM's symbol table. The layout and
//! the rules are the public [`crate::archive`]'s documentation; the members'
//! symbols are read here from ELF files, from COFF objects (`coff`) and from
//! LLVM bitcode (`bitcode`).

use std::collections::HashMap;

use object::Endianness;
use object::elf;
use object::read::elf::{FileHeader, Sym};

use super::MAGIC;
use crate::bytes::Bytes;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, Piece};
use crate::num::len64;

mod bitcode;
mod coff;
mod symbols;

use symbols::SymbolsError;

/// Size of a member header.
const HEADER_SIZE: u64 = 60;

/// The largest member LLVM writes: its size must fit the 10-digit field.
pub(crate) const MAX_MEMBER_SIZE: u64 = 9_999_999_999;

/// Where LLVM switches to the `/SYM64/` symbol table: the offset of the last
/// member header, with a 32-bit table, at or beyond this.
pub const SYM64_THRESHOLD: u64 = 1 << 32;

/// One member to write. The writer reads `data` only to find symbols; the
/// [`Layout`] refers to the bytes by the member's index.
#[derive(Debug, Clone)]
pub struct Member<'a> {
    /// The member name (LLVM uses the input file's name as given).
    pub name: String,
    /// The member bytes (typically a slice of a mapped file).
    pub data: &'a [u8],
}

/// Lays out a GNU archive as LLVM 22 writes it deterministically.
///
/// `Piece::Image(i)` stands for `members[i].data`. With `symtab`, the symbol
/// table is built as LLVM's `SymtabWritingMode::NormalSymtab` does.
pub fn layout_gnu(members: &[Member<'_>], symtab: bool) -> Result<Layout> {
    layout_gnu_with_threshold(members, symtab, SYM64_THRESHOLD)
}

/// Each member's header, and the long-name table (padded to an even
/// size): neither depends on where members land.
fn member_headers(members: &[Member<'_>]) -> Result<(Vec<Vec<u8>>, Vec<u8>)> {
    let mut long_names: Vec<u8> = Vec::new();
    let mut long_offsets: HashMap<&str, u64> = HashMap::new();
    let mut headers = Vec::with_capacity(members.len());
    for (i, m) in members.iter().enumerate() {
        let size = len64(m.data);
        if size > MAX_MEMBER_SIZE {
            return Err(ErrorKind::LimitExceeded {
                what: format!("archive member {i} ('{}')", m.name),
                limit: MAX_MEMBER_SIZE,
            }
            .into());
        }
        // An empty name would be written as `/`, the symbol table's name,
        // and the member lost to every reader.
        // A long name ends at "/\n" in the name table: a name holding a
        // newline cannot be stored so that it reads back.
        if m.name.contains('\n') {
            return Err(Error::usage(format!(
                "archive member {i} has a name with a newline, which a GNU archive cannot store"
            )));
        }
        if m.name.is_empty() {
            return Err(Error::usage(format!(
                "archive member {i} has an empty name"
            )));
        }
        let mut name = Vec::new();
        if m.name.len() < 16 && !m.name.contains('/') {
            name.extend_from_slice(m.name.as_bytes());
            name.push(b'/');
        } else {
            let at = *long_offsets.entry(m.name.as_str()).or_insert_with(|| {
                let at = len64(&long_names);
                long_names.extend_from_slice(m.name.as_bytes());
                long_names.extend_from_slice(b"/\n");
                at
            });
            name.push(b'/');
            name.extend_from_slice(at.to_string().as_bytes());
        }
        let mut h = Vec::new();
        header(&mut h, &name, b"644", size)?;
        headers.push(h);
    }
    if long_names.len() % 2 == 1 {
        long_names.push(b'\n');
    }
    Ok((headers, long_names))
}

/// The symbol table's names (all of them, NUL-terminated), how many each
/// member lists, and whether any member is an object to LLVM.
fn symbol_names(members: &[Member<'_>], symtab: bool) -> Result<(Vec<u8>, Vec<u64>, bool)> {
    let mut names: Vec<u8> = Vec::new();
    let mut per_member: Vec<u64> = vec![0; members.len()];
    let mut has_object = false;
    if symtab {
        for (i, m) in members.iter().enumerate() {
            let what = || format!("archive member {i} ('{}')", m.name);
            let Some(syms) =
                symbols_of(m.data).map_err(|d| Error::invalid(what(), d.to_string()))?
            else {
                continue;
            };
            has_object = true;
            for s in &syms {
                names.extend_from_slice(s);
                names.push(0);
            }
            per_member[i] = len64(&syms);
        }
        if has_object && names.is_empty() {
            // LLVM keeps the table of an archive with objects but no symbols
            // non-empty (for old Solaris tools); after padding to an even
            // size these are all NUL bytes either way.
            names.extend_from_slice(&[0; 3]);
        }
    }
    Ok((names, per_member, has_object))
}

/// [`layout_gnu`] with the `/SYM64/` switch at `sym64_threshold` instead of
/// [`SYM64_THRESHOLD`] (4 GiB), as LLVM does with its `SYM64_THRESHOLD`
/// environment variable set: what tests use to get the 64-bit symbol
/// table from small archives.
pub fn layout_gnu_with_threshold(
    members: &[Member<'_>],
    symtab: bool,
    sym64_threshold: u64,
) -> Result<Layout> {
    let (headers, long_names) = member_headers(members)?;
    let (names, per_member, has_object) = symbol_names(members, symtab)?;
    let write_symtab = symtab && has_object;
    let num_syms: u64 = per_member.iter().sum();

    // Where each member's header lands after the archive's own headers.
    let mut rel_offsets = Vec::with_capacity(members.len());
    let mut rel: u64 = 0;
    for m in members {
        rel_offsets.push(rel);
        rel = add(add(rel, HEADER_SIZE)?, even(len64(m.data))?)?;
    }
    let last_rel = rel_offsets.last().copied().unwrap_or(0);

    let long_table_size = if long_names.is_empty() {
        0
    } else {
        add(HEADER_SIZE, len64(&long_names))?
    };
    let headers_size = |word: u64| -> Result<u64> {
        let mut n = add(len64(MAGIC), long_table_size)?;
        if write_symtab {
            n = add(
                add(n, HEADER_SIZE)?,
                symtab_size(word, num_syms, len64(&names))?,
            )?;
        }
        Ok(n)
    };
    let word = if write_symtab && add(headers_size(4)?, last_rel)? >= sym64_threshold {
        8
    } else {
        4
    };
    let base = headers_size(word)?;

    let mut out = Out::default();
    out.bytes(MAGIC);
    if write_symtab {
        let size = symtab_size(word, num_syms, len64(&names))?;
        let mut t = Vec::new();
        header(
            &mut t,
            if word == 8 { b"/SYM64/" } else { b"/" },
            b"0",
            size,
        )?;
        push_word(&mut t, word, num_syms)?;
        for (i, &n) in per_member.iter().enumerate() {
            let at = add(base, rel_offsets[i])?;
            for _ in 0..n {
                push_word(&mut t, word, at)?;
            }
        }
        t.extend_from_slice(&names);
        if t.len() % 2 == 1 {
            t.push(0);
        }
        out.bytes(&t);
    }
    if !long_names.is_empty() {
        let mut t = Vec::new();
        field(&mut t, b"//", 48)?;
        field(&mut t, len64(&long_names).to_string().as_bytes(), 10)?;
        t.extend_from_slice(b"`\n");
        t.extend_from_slice(&long_names);
        out.bytes(&t);
    }
    for (i, (m, h)) in members.iter().zip(&headers).enumerate() {
        out.bytes(h);
        out.image(i, len64(m.data));
        if m.data.len() % 2 == 1 {
            out.bytes(b"\n");
        }
    }
    let layout = out.finish();
    debug_assert_eq!(Some(layout.size), base.checked_add(rel));
    Ok(layout)
}

/// The names LLVM's archive writer lists for a member, in its order: `None`
/// if LLVM does not treat the member as an object (it then adds nothing, not
/// even an empty symbol table).
///
/// Fails for members LLVM reads symbols from in formats other than ELF,
/// COFF and LLVM bitcode, for bitcode without a readable symbol table, and
/// for ELF and COFF files that do not parse.
#[cfg(any(test, fuzzing))]
pub(crate) fn member_symbols(data: &[u8]) -> Result<Option<Vec<&[u8]>>> {
    symbols_of(data).map_err(|d| Error::invalid("archive member", d.to_string()))
}

fn symbols_of(data: &[u8]) -> std::result::Result<Option<Vec<&[u8]>>, SymbolsError> {
    match llvm_format(data) {
        Format::Raw => Ok(None),
        Format::Elf => elf_symbols(data).map(Some),
        Format::Coff => coff::symbols(data).map(Some),
        Format::Bitcode => bitcode::symbols(data)
            .map(Some)
            .map_err(SymbolsError::Bitcode),
        Format::Other(f) => Err(SymbolsError::Other(f)),
    }
}

/// How LLVM's `identify_magic` and `SymbolicFile::isSymbolicFile` see a
/// member, as far as the archive symbol table is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Not an object: no symbols, no effect on the symbol table.
    Raw,
    Elf,
    /// A COFF object, regular or `/bigobj`.
    Coff,
    Bitcode,
    /// An object format this writer cannot list symbols of.
    Other(&'static str),
}

fn llvm_format(d: &[u8]) -> Format {
    if d.len() < 4 {
        return Format::Raw;
    }
    let (b0, b1) = (d[0], d[1]);
    if d.starts_with(b"\x7fELF") {
        return if d.len() >= 18 {
            Format::Elf
        } else {
            Format::Raw
        };
    }
    if d.starts_with(b"BC\xc0\xde") || d.starts_with(b"\xde\xc0\x17\x0b") {
        return Format::Bitcode;
    }
    // COFF machine types, and the chain of `case` fall-throughs in
    // `identify_magic` that decides which second byte each accepts.
    let coff = match b0 {
        0xf0 | 0x83 | 0x84 | 0x66 | 0x50 | 0x4c | 0xc4 => b1 == 0x01 || b1 == 0x02,
        0x90 | 0x68 => b1 == 0x02,
        0x64 => b1 == 0x86 || b1 == 0xaa,
        0x41 | 0x4e => b1 == 0xa6,
        _ => false,
    };
    if coff {
        return Format::Coff;
    }
    if b0 == 0 {
        const WIN_RES: &[u8; 16] = b"\0\0\0\0\x20\0\0\0\xff\xff\0\0\xff\xff\0\0";
        if crate::host::object::coff::is_bigobj(d) {
            return Format::Coff;
        }
        if d.starts_with(b"\0\0\xff\xff") {
            return Format::Other("COFF import library");
        }
        if d.starts_with(WIN_RES) {
            return Format::Raw;
        }
        if b1 == 0 {
            return Format::Coff;
        }
        if d.starts_with(b"\0asm") {
            return Format::Other("WebAssembly");
        }
        return Format::Raw;
    }
    if d.starts_with(b"\x01\xdf") || d.starts_with(b"\x01\xf7") {
        return Format::Other("XCOFF");
    }
    if d.starts_with(b"\x03\xf0\x00") {
        return Format::Other("GOFF");
    }
    if d.starts_with(b"DXBC") {
        return Format::Other("DXContainer");
    }
    // Mach-O, when the file type (bytes 12..16) is one LLVM knows.
    let macho_type = |min: usize, big: bool| {
        let t = d.get(12..16).filter(|_| d.len() >= min)?;
        let (z, v) = if big {
            (&t[..3], t[3])
        } else {
            (&t[1..], t[0])
        };
        (z == [0, 0, 0] && (1..=12).contains(&v)).then_some(())
    };
    let macho = match d.get(..4) {
        Some(b"\xfe\xed\xfa\xce") => macho_type(28, true),
        Some(b"\xfe\xed\xfa\xcf") => macho_type(32, true),
        Some(b"\xce\xfa\xed\xfe") => macho_type(28, false),
        Some(b"\xcf\xfa\xed\xfe") => macho_type(32, false),
        _ => None,
    };
    if macho.is_some() {
        return Format::Other("Mach-O");
    }
    if d.starts_with(b"MZ") && d.len() >= 0x40 {
        let bytes = Bytes::new(d);
        let is_pe = bytes
            .u32_le_at(0x3c)
            .and_then(|pe| bytes.tail_at(u64::from(pe)))
            .is_some_and(|rest| rest.starts_with(b"PE\0\0"));
        if is_pe {
            return Format::Other("PE/COFF");
        }
    }
    Format::Raw
}

fn elf_symbols(data: &[u8]) -> std::result::Result<Vec<&[u8]>, SymbolsError> {
    match data.get(4) {
        Some(1) => elf_symbols_of::<elf::FileHeader32<Endianness>>(data),
        Some(2) => elf_symbols_of::<elf::FileHeader64<Endianness>>(data),
        _ => Err(SymbolsError::ElfClass),
    }
}

/// The ELF symbols LLVM lists: `isArchiveSymbol` in ArchiveWriter.cpp over
/// the flags `ELFObjectFile::getSymbolFlags` gives each `.symtab` entry.
fn elf_symbols_of<Elf: FileHeader<Endian = Endianness>>(
    data: &[u8],
) -> std::result::Result<Vec<&[u8]>, SymbolsError> {
    let e = SymbolsError::Elf;
    let header = Elf::parse(data).map_err(e)?;
    let endian = header.endian().map_err(e)?;
    let machine = header.e_machine(endian);
    let sections = header.sections(endian, data).map_err(e)?;
    // The first SHT_SYMTAB section, as LLVM takes it; none means no symbols.
    let symtab = sections.symbols(endian, data, elf::SHT_SYMTAB).map_err(e)?;
    let strings = symtab.strings();
    let mut out = Vec::new();
    // Entry 0 is the null symbol, which LLVM marks format-specific.
    for sym in symtab.symbols().iter().skip(1) {
        let ty = sym.st_type();
        if sym.st_bind() == elf::STB_LOCAL || ty == elf::STT_FILE || ty == elf::STT_SECTION {
            continue;
        }
        let shndx = sym.st_shndx(endian);
        let common = ty == elf::STT_COMMON || shndx == elf::SHN_COMMON;
        if shndx == elf::SHN_UNDEF && !common {
            continue;
        }
        let name = sym.name(endian, strings);
        if let Ok(n) = name
            && is_mapping_symbol(machine, n)
        {
            continue;
        }
        out.push(name.map_err(e)?);
    }
    Ok(out)
}

/// Names LLVM marks format-specific on some machines (mapping symbols).
fn is_mapping_symbol(machine: elf::Machine, name: &[u8]) -> bool {
    let any = |prefixes: &[&[u8]]| prefixes.iter().any(|p| name.starts_with(p));
    match machine {
        elf::EM_AARCH64 => any(&[b"$d", b"$x"]),
        elf::EM_ARM => name.is_empty() || any(&[b"$d", b"$t", b"$a"]),
        elf::EM_CSKY => any(&[b"$d", b"$t"]),
        elf::EM_RISCV => any(&[b"$d", b"$x"]),
        _ => false,
    }
}

/// The size of a symbol table body with `word`-byte numbers: count,
/// offsets, names, padding to even.
fn symtab_size(word: u64, num_syms: u64, names_len: u64) -> Result<u64> {
    let n = num_syms
        .checked_add(1)
        .and_then(|n| n.checked_mul(word))
        .ok_or_else(too_large)?;
    even(add(n, names_len)?)
}

fn push_word(out: &mut Vec<u8>, word: u64, v: u64) -> Result<()> {
    if word == 8 {
        out.extend_from_slice(&v.to_be_bytes());
    } else {
        let v = u32::try_from(v).map_err(|_| too_large())?;
        out.extend_from_slice(&v.to_be_bytes());
    }
    Ok(())
}

/// Appends a 60-byte header with the deterministic time and owner.
fn header(out: &mut Vec<u8>, name: &[u8], mode: &[u8], size: u64) -> Result<()> {
    field(out, name, 16)?;
    field(out, b"0", 12)?; // mtime
    field(out, b"0", 6)?; // uid
    field(out, b"0", 6)?; // gid
    field(out, mode, 8)?;
    field(out, size.to_string().as_bytes(), 10)?;
    out.extend_from_slice(b"`\n");
    Ok(())
}

/// Appends `value` padded with spaces to `width`.
fn field(out: &mut Vec<u8>, value: &[u8], width: usize) -> Result<()> {
    let pad = width.checked_sub(value.len()).ok_or_else(|| {
        Error::invalid(
            "archive header field",
            format!(
                "'{}' does not fit in {width} bytes",
                String::from_utf8_lossy(value)
            ),
        )
    })?;
    out.extend_from_slice(value);
    out.resize(out.len() + pad, b' ');
    Ok(())
}

fn too_large() -> Error {
    Error::too_large("the archive")
}

fn add(a: u64, b: u64) -> Result<u64> {
    a.checked_add(b).ok_or_else(too_large)
}

fn even(x: u64) -> Result<u64> {
    x.checked_next_multiple_of(2).ok_or_else(too_large)
}

/// Builds a [`Layout`], merging consecutive bytes into one piece.
#[derive(Default)]
struct Out {
    layout: Layout,
    pending: Vec<u8>,
}

impl Out {
    fn bytes(&mut self, b: &[u8]) {
        self.pending.extend_from_slice(b);
    }

    fn image(&mut self, i: usize, len: u64) {
        self.flush();
        self.layout.push(Piece::Image(i), len);
    }

    fn flush(&mut self) {
        let b = std::mem::take(&mut self.pending);
        let n = len64(&b);
        self.layout.push(Piece::Bytes(b), n);
    }

    fn finish(mut self) -> Layout {
        self.flush();
        self.layout
    }
}

#[cfg(test)]
mod tests;

//! Reading an ELF file into the [`Model`] as llvm-objcopy's `ELFBuilder`
//! does, refusing what it refuses: section headers, the section-name
//! table, symbols, links (relocations, groups, extended index tables) and
//! segments; and the symbol field of relocation entries, read and set.

use std::borrow::Cow;

use object::read::elf::{FileHeader, ProgramHeader as _, SectionHeader, SectionTable, Sym as _};
use object::write::elf::{Encoder, Rel};
use object::{Endianness, U32, elf, pod};

use super::checked::{invalid, lossy};
use super::crel::{self, Crel};
use super::model::{Def, Kind, Model, Sec, Seg, Symbol};
use super::model::{SHF_ALLOC, SHF_COMPRESSED};
use super::read_err;
use crate::error::{Error, Result};
use crate::num::usize_from;

/// The input and what every reading step needs to know of it.
struct Input<'d> {
    data: &'d [u8],
    is_64: bool,
    endian: Endianness,
    /// The section headers after the null one (the model's sections).
    count: usize,
}

impl Input<'_> {
    /// The model index of section header `index`; `what` words the error
    /// when it names none (0, or past the table).
    fn section(&self, index: u32, what: &dyn Fn() -> String) -> Result<usize> {
        let i = index as usize;
        if i == 0 || i > self.count {
            return Err(invalid(what()));
        }
        Ok(i - 1)
    }

    /// The contents of section `s`, which reading the headers found inside
    /// the file.
    fn contents(&self, s: &Sec<'_>) -> &[u8] {
        &self.data[usize_from(s.orig_offset)..][..usize_from(s.size)]
    }
}

/// Reads the ELF file `data` (64-bit if `is_64`) into the model.
pub(super) fn read<'d, Elf: FileHeader<Endian = Endianness>>(
    data: &'d [u8],
    is_64: bool,
) -> Result<Model<'d>> {
    let header = Elf::parse(data).map_err(read_err)?;
    let endian = header.endian().map_err(read_err)?;
    let ident = header.e_ident();
    let e_phoff: u64 = header.e_phoff(endian).into();
    if e_phoff > data.len() as u64 {
        return Err(invalid("the program headers lie outside the file"));
    }
    let phdrs = header.program_headers(endian, data).map_err(read_err)?;
    if phdrs.len() >= 0xffff {
        return Err(Error::usage(
            "objects with 65535 or more program headers are not supported by offload-kit",
        ));
    }
    let table = header.sections(endian, data).map_err(read_err)?;
    let shstrndx = if table.is_empty() {
        0
    } else {
        header.shstrndx(endian, data).map_err(read_err)?
    };
    let input = Input {
        data,
        is_64,
        endian,
        count: table.len().saturating_sub(1),
    };
    let (mut secs, symtab, shndx) = read_sections(&input, &table)?;
    // The input's alignments must not size the output.
    super::check_alignments(
        secs.iter()
            .map(|s| (&*s.name, s.sh_type != elf::SHT_NOBITS, s.align)),
    )?;
    let names = names_table(&input, &secs, shstrndx)?;
    let symbols = match symtab {
        Some(st) => {
            let machine = header.e_machine(endian);
            read_symbols(&input, &table, machine, &mut secs, st, shndx)?
        }
        None => Vec::new(),
    };
    let mips64el = header.is_mips64el(endian);
    read_links(&input, mips64el, &mut secs, symtab, symbols.len())?;
    let table_size = u64::from(header.e_phentsize(endian)) * phdrs.len() as u64;
    let segs = read_segments::<Elf>(&input, phdrs, &mut secs, e_phoff, table_size)?;
    Ok(Model {
        is_64,
        endian,
        os_abi: ident.os_abi.0,
        abi_version: ident.abi_version,
        e_type: header.e_type(endian).0,
        e_machine: header.e_machine(endian).0,
        e_version: header.e_version(endian),
        e_entry: header.e_entry(endian).into(),
        e_flags: header.e_flags(endian).0,
        names,
        symtab,
        secs,
        segs,
        symbols,
        order: Vec::new(),
        indices_changed: false,
        keep_strings: false,
    })
}

/// How llvm-objcopy treats a section of type `sh_type` with `flags`.
fn section_kind(sh_type: elf::SectionType, flags: u64) -> Kind {
    let alloc = flags & SHF_ALLOC != 0;
    match sh_type {
        elf::SHT_REL | elf::SHT_RELA if alloc => Kind::DynRel,
        elf::SHT_REL | elf::SHT_RELA => Kind::Rel,
        elf::SHT_CREL if alloc => Kind::DynRel,
        elf::SHT_CREL => Kind::Crel,
        elf::SHT_STRTAB if !alloc => Kind::StrTab,
        elf::SHT_GROUP => Kind::Group,
        elf::SHT_SYMTAB => Kind::SymTab,
        elf::SHT_SYMTAB_SHNDX => Kind::Shndx,
        elf::SHT_HASH
        | elf::SHT_GNU_HASH
        | elf::SHT_DYNSYM
        | elf::SHT_DYNAMIC
        | elf::SHT_NOBITS => Kind::Plain,
        _ if flags & SHF_COMPRESSED != 0 => Kind::Opaque,
        _ => Kind::Plain,
    }
}

/// The sections (the headers after the null one), with the model indices
/// of the symbol table and of the extended index table. One of each is
/// allowed; contents must lie in the file, as llvm-objcopy reads them all.
fn read_sections<'d, Elf: FileHeader<Endian = Endianness>>(
    input: &Input<'d>,
    table: &SectionTable<'d, Elf>,
) -> Result<(Vec<Sec<'d>>, Option<usize>, Option<usize>)> {
    let Input { data, endian, .. } = *input;
    let mut secs = Vec::with_capacity(input.count);
    let mut symtab = None;
    let mut shndx = None;
    for (index, sh) in table.enumerate().skip(1) {
        let i = index.0;
        let sh_type = sh.sh_type(endian);
        let flags: u64 = sh.sh_flags(endian).0;
        let size: u64 = sh.sh_size(endian).into();
        let offset: u64 = sh.sh_offset(endian).into();
        let kind = section_kind(sh_type, flags);
        match kind {
            Kind::SymTab if symtab.is_some() => {
                return Err(invalid("found multiple SHT_SYMTAB sections"));
            }
            Kind::SymTab => symtab = Some(i - 1),
            Kind::Shndx if shndx.is_some() => {
                return Err(Error::usage(
                    "objects with several SHT_SYMTAB_SHNDX sections are not supported \
                     by offload-kit",
                ));
            }
            Kind::Shndx => shndx = Some(i - 1),
            _ => {}
        }
        let name = super::llvm_section_name(table, endian, sh).map_err(read_err)?;
        // Contents must lie in the file (llvm-objcopy reads them all).
        if sh_type != elf::SHT_NOBITS
            && offset
                .checked_add(size)
                .is_none_or(|end| end > data.len() as u64)
        {
            return Err(invalid(format!(
                "section '{}' lies outside the file (offset {offset:#x}, size {size:#x})",
                lossy(name)
            )));
        }
        let align: u64 = sh.sh_addralign(endian).into();
        secs.push(Sec {
            addr: sh.sh_addr(endian).into(),
            link: sh.sh_link(endian),
            info: sh.sh_info(endian),
            orig_offset: offset,
            name_at: sh.sh_name(endian),
            ..Sec::created(
                Cow::Borrowed(name),
                kind,
                (sh_type, flags),
                size,
                (align, sh.sh_entsize(endian).into()),
            )
        });
    }
    Ok((secs, symtab, shndx))
}

/// llvm-objcopy's check of a string table it reads names from
/// ([`super::check_string_table`]).
fn check_string_table(data: &[u8], sec: &Sec<'_>, index: usize) -> Result<()> {
    let bytes = usize::try_from(sec.orig_offset)
        .ok()
        .zip(usize::try_from(sec.size).ok())
        .and_then(|(at, len)| data.get(at..at.checked_add(len)?));
    super::check_string_table(bytes, index)
}

/// The section-name table `e_shstrndx` names (none for 0): a
/// non-allocated string table that passes [`check_string_table`].
fn names_table(input: &Input<'_>, secs: &[Sec<'_>], shstrndx: u32) -> Result<Option<usize>> {
    if shstrndx == 0 {
        return Ok(None);
    }
    let n = input.section(shstrndx, &|| {
        format!("e_shstrndx field value {shstrndx} is invalid")
    })?;
    if secs[n].kind != Kind::StrTab {
        return Err(invalid(format!(
            "e_shstrndx field value {shstrndx} does not reference a string table"
        )));
    }
    check_string_table(input.data, &secs[n], n + 1)?;
    Ok(Some(n))
}

/// Whether `index` is a reserved section index llvm-objcopy accepts in a
/// symbol for this machine.
fn valid_reserved(index: u16, machine: elf::Machine) -> bool {
    if index == elf::SHN_ABS.0 || index == elf::SHN_COMMON.0 {
        return true;
    }
    match machine {
        // SHN_AMDGPU_LDS.
        elf::EM_AMDGPU => index == 0xff00,
        // SHN_MIPS_ACOMMON, SHN_MIPS_SCOMMON, SHN_MIPS_SUNDEFINED.
        elf::EM_MIPS => matches!(index, 0xff00 | 0xff03 | 0xff04),
        // SHN_HEXAGON_SCOMMON and its sized variants.
        elf::EM_HEXAGON => matches!(index, 0xff00..=0xff04),
        _ => false,
    }
}

/// What a symbol's section index is read against.
struct Indices<'d> {
    /// The extended index table (model index), if the input has one.
    shndx: Option<usize>,
    /// Its entries (none without one).
    extended: &'d [U32<Endianness>],
    /// The number of symbols, which the extended table must match.
    symbols: usize,
    /// The file's machine, which decides the reserved indices allowed.
    machine: elf::Machine,
}

/// The symbols of symbol table `st` (model index), whose string table and
/// entry size are checked first; `shndx` is the extended index table.
/// Sets the symbol table's `link_sec`.
fn read_symbols<'d, Elf: FileHeader<Endian = Endianness>>(
    input: &Input<'d>,
    table: &SectionTable<'d, Elf>,
    machine: elf::Machine,
    secs: &mut [Sec<'d>],
    st: usize,
    shndx: Option<usize>,
) -> Result<Vec<Symbol<'d>>> {
    let Input { data, endian, .. } = *input;
    let sym_size = Encoder::new(endian, input.is_64, elf::EM_NONE).sym_size();
    let sh = table
        .section(object::SectionIndex(st + 1))
        .map_err(read_err)?;
    let link = input.section(secs[st].link, &|| {
        format!(
            "symbol table has link index of {} which is not a valid index",
            secs[st].link
        )
    })?;
    if secs[link].kind != Kind::StrTab {
        return Err(invalid(format!(
            "symbol table has link index of {} which is not a string table",
            secs[st].link
        )));
    }
    check_string_table(data, &secs[link], link + 1)?;
    secs[st].link_sec = Some(link);
    if secs[st].entsize != sym_size {
        return Err(invalid(format!(
            "section '{}' has an invalid sh_entsize: {}",
            lossy(&secs[st].name),
            secs[st].entsize
        )));
    }
    let syms: &[Elf::Sym] = sh.data_as_array(endian, data).map_err(read_err)?;
    let strings = table
        .strings(endian, data, object::SectionIndex(link + 1))
        .map_err(read_err)?;
    let extended: &[U32<Endianness>] = match shndx {
        Some(x) => {
            let sh = table
                .section(object::SectionIndex(x + 1))
                .map_err(read_err)?;
            sh.data_as_array(endian, data).map_err(read_err)?
        }
        None => &[],
    };
    let indices = Indices {
        shndx,
        extended,
        symbols: syms.len(),
        machine,
    };
    let mut symbols = Vec::with_capacity(syms.len());
    for (k, sym) in syms.iter().enumerate() {
        let name = strings
            .get(sym.st_name(endian))
            .map_err(|_| invalid(format!("symbol {k} has a name outside the string table")))?;
        let def = symbol_def(input, &indices, k, name, sym.st_shndx(endian).0)?;
        symbols.push(Symbol {
            name,
            name_at: sym.st_name(endian),
            info: sym.st_info().0,
            other: sym.st_other().0,
            def,
            value: sym.st_value(endian).into(),
            size: sym.st_size(endian).into(),
            removed: false,
        });
    }
    Ok(symbols)
}

/// Where symbol `k` (`name`, section index `st_shndx`) is defined:
/// `SHN_XINDEX` looks in the extended table, reserved indices must be ones
/// the machine has, others must name a section.
fn symbol_def(
    input: &Input<'_>,
    indices: &Indices<'_>,
    k: usize,
    name: &[u8],
    st_shndx: u16,
) -> Result<Def> {
    Ok(if st_shndx == elf::SHN_XINDEX.0 {
        if indices.shndx.is_none() {
            return Err(invalid(format!(
                "symbol '{}' has index SHN_XINDEX but no SHT_SYMTAB_SHNDX section exists",
                lossy(name)
            )));
        }
        if indices.extended.len() != indices.symbols {
            return Err(invalid(
                "symbol section index table does not have the same number of entries \
                 as the symbol table",
            ));
        }
        let x = indices.extended[k].get(input.endian);
        Def::Section(input.section(x, &|| {
            format!("symbol '{}' has invalid section index {x}", lossy(name))
        })?)
    } else if st_shndx >= elf::SHN_LORESERVE {
        if !valid_reserved(st_shndx, indices.machine) {
            return Err(invalid(format!(
                "symbol '{}' has unsupported value greater than or equal to \
                 SHN_LORESERVE: {st_shndx}",
                lossy(name)
            )));
        }
        Def::Reserved(st_shndx)
    } else if st_shndx != elf::SHN_UNDEF.0 {
        Def::Section(input.section(u32::from(st_shndx), &|| {
            format!(
                "symbol '{}' is defined has invalid section index {st_shndx}",
                lossy(name)
            )
        })?)
    } else {
        Def::Undef
    })
}

/// Resolves each section's links, in section order: `sh_link` and
/// `sh_info` of relocation sections (their entries read), groups (their
/// members read) and extended index tables, each checked as llvm-objcopy
/// checks it. `symbols` is the number of symbols.
fn read_links(
    input: &Input<'_>,
    mips64el: bool,
    secs: &mut [Sec<'_>],
    symtab: Option<usize>,
    symbols: usize,
) -> Result<()> {
    for i in 0..secs.len() {
        let s = &secs[i];
        let name = lossy(&s.name);
        match s.kind {
            Kind::Plain | Kind::DynRel | Kind::Crel | Kind::Rel => {
                link_and_target(input, secs, i, symtab)?;
                let s = &secs[i];
                if s.kind == Kind::Crel {
                    let (relocs, entries) = read_crel(input, s, symbols)?;
                    secs[i].relocs = relocs;
                    secs[i].crel = entries;
                } else if s.kind == Kind::Rel {
                    secs[i].relocs = read_rel(input, mips64el, s, symtab, symbols)?;
                }
            }
            Kind::Group => secs[i].group = Some(read_group(input, s, symtab, symbols)?),
            Kind::Shndx => {
                let l = input.section(s.link, &|| {
                    format!("link field value {} in section '{name}' is invalid", s.link)
                })?;
                if Some(l) != symtab {
                    return Err(invalid(format!(
                        "link field value {} in section '{name}' is not a symbol table",
                        s.link
                    )));
                }
            }
            Kind::Opaque | Kind::StrTab | Kind::SymTab | Kind::Added(_) => {}
        }
    }
    Ok(())
}

/// The `sh_link` of plain and relocation section `i` (a relocation
/// section's must be the symbol table, an allocated one's the dynamic
/// symbol table; a plain section linked to the symbol table is marked
/// [`Sec::symtab_link`]) and a relocation section's `sh_info`, the section
/// it applies to.
fn link_and_target(
    input: &Input<'_>,
    secs: &mut [Sec<'_>],
    i: usize,
    symtab: Option<usize>,
) -> Result<()> {
    let s = &secs[i];
    let name = lossy(&s.name);
    if s.link != 0 {
        let l = input.section(s.link, &|| {
            format!("link field value {} in section '{name}' is invalid", s.link)
        })?;
        if matches!(s.kind, Kind::Rel | Kind::Crel) && Some(l) != symtab {
            return Err(invalid(format!(
                "link field value {} in section '{name}' is not a symbol table",
                s.link
            )));
        }
        if s.kind == Kind::DynRel && secs[l].sh_type != elf::SHT_DYNSYM {
            return Err(invalid(format!(
                "link field value {} in section '{name}' is not a dynamic \
                 symbol table",
                s.link
            )));
        }
        if s.kind == Kind::Plain && secs[l].sh_type == elf::SHT_SYMTAB {
            secs[i].symtab_link = true;
        } else {
            secs[i].link_sec = Some(l);
        }
    }
    let s = &secs[i];
    if s.kind != Kind::Plain && s.info != 0 {
        let t = input.section(s.info, &|| {
            format!("info field value {} in section '{name}' is invalid", s.info)
        })?;
        secs[i].target = Some(t);
    }
    Ok(())
}

/// The entries of compact relocation section `s`, decoded, and as
/// [`Sec::relocs`] (offsets, symbols and types); each symbol index must be
/// below `symbols`.
fn read_crel(input: &Input<'_>, s: &Sec<'_>, symbols: usize) -> Result<(Vec<Rel>, Vec<Crel>)> {
    let entries = crel::decode(input.contents(s), input.is_64)
        .map_err(|e| invalid(format!("section '{}': {e}", lossy(&s.name))))?;
    let mut relocs = Vec::with_capacity(entries.len());
    for e in &entries {
        if e.sym != 0 && e.sym as usize >= symbols {
            return Err(invalid(format!("invalid symbol index: {}", e.sym)));
        }
        relocs.push(Rel {
            r_offset: e.offset,
            r_sym: e.sym,
            r_type: elf::RelocationType(e.ty),
            r_addend: 0,
        });
    }
    Ok((relocs, entries))
}

/// The entries of relocation section `s` as [`Sec::relocs`]: its entry
/// size must be the type's, and each symbol index below `symbols` (with a
/// symbol table at all).
fn read_rel(
    input: &Input<'_>,
    mips64el: bool,
    s: &Sec<'_>,
    symtab: Option<usize>,
    symbols: usize,
) -> Result<Vec<Rel>> {
    let name = lossy(&s.name);
    let is_rela = s.sh_type == elf::SHT_RELA;
    let entsize = Encoder::new(input.endian, input.is_64, elf::EM_NONE).rel_size(is_rela);
    if s.entsize != entsize || !s.size.is_multiple_of(entsize) {
        return Err(invalid(format!(
            "section '{name}' has an invalid sh_entsize: {}",
            s.entsize
        )));
    }
    let relocs = decode_relocations(input, s, is_rela, mips64el)?;
    for r in &relocs {
        let sym = r.r_sym;
        if sym != 0 {
            if symtab.is_none() {
                return Err(invalid(format!(
                    "'{name}': relocation references symbol with index {sym}, \
                     but there is no symbol table"
                )));
            }
            if sym as usize >= symbols {
                return Err(invalid(format!("invalid symbol index: {sym}")));
            }
        }
    }
    Ok(relocs)
}

/// The entries of relocation section `s` (`SHT_RELA` ones if `is_rela`),
/// as llvm-objcopy reads them: on MIPS64 little-endian (`mips64el`) the
/// `r_info` word of `SHT_REL` entries too has that machine's layout, which
/// the `object` crate reads only for `SHT_RELA` entries; an `SHT_REL` entry
/// there is read as one with a zero addend.
fn decode_relocations(
    input: &Input<'_>,
    s: &Sec<'_>,
    is_rela: bool,
    mips64el: bool,
) -> Result<Vec<Rel>> {
    use elf::{Rel32, Rel64, Rela32, Rela64};
    fn all<T: pod::Pod>(b: &[u8]) -> Result<&[T]> {
        pod::slice_from_all_bytes(b).map_err(|()| invalid("relocations do not fill their section"))
    }
    let (bytes, endian) = (input.contents(s), input.endian);
    Ok(match (input.is_64, is_rela) {
        (true, true) => all(bytes)?
            .iter()
            .map(|r: &Rela64<Endianness>| Rel::from_rela(endian, r, mips64el))
            .collect(),
        (true, false) => all(bytes)?
            .iter()
            .map(|&r: &Rel64<Endianness>| Rel::from_rela(endian, &Rela64::from(r), mips64el))
            .collect(),
        (false, true) => all(bytes)?
            .iter()
            .map(|r: &Rela32<Endianness>| Rel::from_rela(endian, r, false))
            .collect(),
        (false, false) => all(bytes)?
            .iter()
            .map(|r: &Rel32<Endianness>| Rel::from_rel(endian, r))
            .collect(),
    })
}

/// Group section `s` as [`Sec::group`]: its flag word, its members and its
/// signature symbol (`sh_info`, when `sh_link` names the symbol table;
/// below `symbols`).
fn read_group(
    input: &Input<'_>,
    s: &Sec<'_>,
    symtab: Option<usize>,
    symbols: usize,
) -> Result<(u32, Vec<usize>, Option<usize>)> {
    let name = lossy(&s.name);
    if !s.align.is_multiple_of(4) {
        return Err(invalid(format!(
            "invalid alignment {} of group section '{name}'",
            s.align
        )));
    }
    let mut sym = None;
    if s.link != 0 {
        let l = input.section(s.link, &|| {
            format!(
                "link field value '{}' in section '{name}' is invalid",
                s.link
            )
        })?;
        if Some(l) != symtab {
            return Err(invalid(format!(
                "link field value '{}' in section '{name}' is not a symbol table",
                s.link
            )));
        }
        if s.info as usize >= symbols {
            return Err(invalid(format!(
                "info field value '{}' in section '{name}' is not a valid symbol index",
                s.info
            )));
        }
        sym = Some(s.info as usize);
    }
    let bytes = input.contents(s);
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return Err(invalid(format!(
            "the content of the section {name} is malformed"
        )));
    }
    let word = |c: &[u8]| U32::<Endianness>::from_bytes([c[0], c[1], c[2], c[3]]);
    let mut words = bytes.chunks_exact(4).map(|c| word(c).get(input.endian));
    let flag = words.next().unwrap_or(0);
    let mut members = Vec::new();
    for m in words {
        members.push(input.section(m, &|| {
            format!("group member index {m} in section '{name}' is invalid")
        })?);
    }
    Ok((flag, members, sym))
}

/// The program headers as segments, then the ELF header's pseudo-segment
/// (its size set when writing) and the program header table's
/// (`table_size` bytes at `e_phoff`), each with its parent; each section's
/// parent is the earliest-starting real segment that holds it wholly.
fn read_segments<Elf: FileHeader<Endian = Endianness>>(
    input: &Input<'_>,
    phdrs: &[Elf::ProgramHeader],
    secs: &mut [Sec<'_>],
    e_phoff: u64,
    table_size: u64,
) -> Result<Vec<Seg>> {
    let endian = input.endian;
    let mut segs = Vec::with_capacity(phdrs.len() + 2);
    for (index, ph) in phdrs.iter().enumerate() {
        let orig_offset: u64 = ph.p_offset(endian).into();
        let filesz: u64 = ph.p_filesz(endian).into();
        if orig_offset
            .checked_add(filesz)
            .is_none_or(|end| end > input.data.len() as u64)
        {
            return Err(invalid(format!(
                "program header with offset {orig_offset:#x} and file size {filesz:#x} goes \
                 past the end of the file"
            )));
        }
        segs.push(Seg {
            p_type: ph.p_type(endian).0,
            p_flags: ph.p_flags(endian).0,
            orig_offset,
            vaddr: ph.p_vaddr(endian).into(),
            paddr: ph.p_paddr(endian).into(),
            filesz,
            memsz: ph.p_memsz(endian).into(),
            align: ph.p_align(endian).into(),
            index,
            parent: None,
        });
        let seg = &segs[index];
        for sec in secs.iter_mut() {
            if seg.contains(sec)
                && sec
                    .parent
                    .is_none_or(|p: usize| segs[p].orig_offset > seg.orig_offset)
            {
                sec.parent = Some(index);
            }
        }
    }
    let real = segs.len();
    segs.push(Seg {
        p_type: elf::PT_PHDR.0,
        p_flags: 0,
        orig_offset: 0,
        vaddr: 0,
        paddr: 0,
        filesz: 0,
        memsz: 0,
        align: 0,
        index: real,
        parent: None,
    });
    segs.push(Seg {
        p_type: elf::PT_PHDR.0,
        p_flags: 0,
        orig_offset: e_phoff,
        vaddr: e_phoff,
        paddr: 0,
        filesz: table_size,
        memsz: table_size,
        align: if input.is_64 { 8 } else { 4 },
        index: real + 1,
        parent: None,
    });
    for child in 0..segs.len() {
        set_parent(&mut segs, real, child);
    }
    Ok(segs)
}

/// Sets `segs[child].parent` to the most enclosing real segment (the first
/// `real` ones), as llvm-objcopy's `setParentSegment` does.
fn set_parent(segs: &mut [Seg], real: usize, child: usize) {
    for p in 0..real {
        if p == child || !segs[p].holds(&segs[child]) || !segs[p].before(&segs[child]) {
            continue;
        }
        if segs[child].parent.is_none_or(|q| segs[p].before(&segs[q])) {
            segs[child].parent = Some(p);
        }
    }
}

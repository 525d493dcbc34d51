//! The ELF rewrite `llvm-objcopy` 22 does for the bundler, emulated byte for
//! byte: removing the bundle sections (`--regex
//! --remove-section=__CLANG_OFFLOAD_BUNDLE__.*`) or adding one section per
//! target (`--add-section` with `--set-section-flags=…=readonly,exclude`).
//!
//! llvm-objcopy does not patch the input: it reads the file into a model
//! and writes a new file from it. What the model keeps and rebuilds, as
//! found in `llvm/lib/ObjCopy/ELF/ELFObject.cpp` and `ELFObjcopy.cpp` of
//! LLVM 22 and checked against the installed tool:
//!
//! - **Sections** keep their order; removed ones leave no gap in the
//!   numbering; added ones come last. Relocation sections that apply to a
//!   removed section go too, and so do groups whose members all go (a group
//!   without members always goes).
//! - **File layout**: segments first (linked hosts: shared objects,
//!   executables), in offset order, each at its place inside the segment
//!   holding it or at the next offset congruent to its address modulo its
//!   alignment; their bytes are copied whole (sections inside them are not
//!   rewritten; removed ones are zeroed), the ELF header and program
//!   headers written over them. Then every other section in the order of
//!   its offset in the input (added sections last), each at the next
//!   multiple of its alignment (0 counts as 1), `SHT_NOBITS` taking no
//!   room; then the section header table at the next multiple of the word
//!   size. Gaps are zeros. Without program headers, `e_phoff` and
//!   `e_phentsize` are 0.
//! - **String tables** (non-allocated `SHT_STRTAB`) are rebuilt with
//!   `StringTableBuilder`'s tail-merged ELF layout from the names that use
//!   them: section names for the `e_shstrndx` table, symbol names for the
//!   symbol table's, both when they are one table (clang's `.strtab`). A
//!   table nothing uses is left holding one zero byte.
//! - **The symbol table** is rewritten: symbols defined in removed sections
//!   go, locals are moved first (keeping order), `st_shndx` is renumbered,
//!   `sh_info` is one past the last local, `sh_addralign` becomes the word
//!   size. If any symbol index changed, other sections linked to the symbol
//!   table (`.llvm_addrsig`, call-graph profiles) lose that link (`sh_link`
//!   0), as their contents would be stale.
//! - **Relocation sections** are rewritten with the new symbol indices,
//!   word-aligned (compact `SHT_CREL` ones decoded and encoded again, see
//!   [`crel`]); `sh_link` and `sh_info` follow the renumbering.
//!   A kept relocation against a symbol defined in a removed section is an
//!   error.
//! - **Groups** are rewritten with renumbered members (removed ones
//!   dropped) and the new signature symbol index; a group whose signature
//!   is local loses `GRP_COMDAT`.
//! - **Other sections** are copied, their `sh_link` renumbered (`sh_info`
//!   is kept as it was).
//! - **Extended section indices**: an `SHT_SYMTAB_SHNDX` table is kept, and
//!   made (`.symtab_shndx`, after the added sections) when missing, only if
//!   a section that defined a symbol in the input ends up at index 0xff00
//!   or above; otherwise it is dropped. Section 0 then holds the section
//!   count and the name table's index as ELF requires.
//! - **The ELF header** keeps class, byte order, OS ABI and ABI version,
//!   type, machine, version, entry and flags; everything else is written
//!   anew.
//!
//! Output is a [`Written`]: tables are built in memory, section contents
//! are byte ranges of the inputs.

use std::borrow::Cow;
use std::collections::BTreeMap;

use object::read::elf::{FileHeader, ProgramHeader as _, SectionHeader, Sym as _};
use object::{Endianness, U16, U32, U64, elf, pod};

use super::{NewSection, Span, Written, is_bundle_section};
use crate::error::{Error, Result};
use crate::layout::Piece;
use crate::llvm::string_table::StringTable;
use crate::num::usize_from;
use crel::Crel;

/// Image pieces smaller than this are copied into the layout.
const SPAN_MIN: usize = 4096;

// Flag values as plain integers.
const SHF_ALLOC: u64 = elf::SHF_ALLOC.0;
const SHF_GROUP: u64 = elf::SHF_GROUP.0;
const SHF_EXCLUDE: u64 = elf::SHF_EXCLUDE.0;
const SHF_COMPRESSED: u64 = elf::SHF_COMPRESSED.0;
const STB_LOCAL: u8 = elf::STB_LOCAL.0;
const GRP_COMDAT: u32 = elf::GRP_COMDAT.0;

/// What to change in the object.
pub(super) struct Edit<'e> {
    /// Remove every section whose name starts with the bundle magic.
    pub remove_bundles: bool,
    /// Sections to add, in order; span source `i + 1` is `add[i].data`.
    pub add: &'e [NewSection<'e>],
}

/// What llvm-objcopy makes of the ELF object `data` with `edit`. Span
/// source 0 is `data`.
pub(super) fn rewrite(data: &[u8], edit: &Edit<'_>) -> Result<Written> {
    let mut model = match object::FileKind::parse(data).map_err(read_err)? {
        object::FileKind::Elf32 => read::<elf::FileHeader32<Endianness>>(data, false)?,
        object::FileKind::Elf64 => read::<elf::FileHeader64<Endianness>>(data, true)?,
        other => return Err(super::unsupported(other, doing(edit))),
    };
    model.edit(edit)?;
    model.write(data, edit.add)
}

fn doing(edit: &Edit<'_>) -> &'static str {
    if edit.remove_bundles {
        "extracting the host object from"
    } else {
        "bundling into"
    }
}

fn read_err(e: object::read::Error) -> Error {
    Error::invalid("object file", e.to_string())
}

fn invalid(detail: impl Into<String>) -> Error {
    Error::invalid("object file", detail)
}

fn lossy(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

/// How llvm-objcopy treats a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Contents copied; `sh_link` renumbered.
    Plain,
    /// Contents copied; `sh_link` and `sh_info` kept (compressed sections,
    /// which llvm-objcopy does not look into).
    Opaque,
    /// A string table rebuilt from the names that use it.
    StrTab,
    /// The symbol table.
    SymTab,
    /// A relocation section (non-allocated `SHT_REL`/`SHT_RELA`).
    Rel,
    /// A compact relocation section, decoded and encoded again.
    Crel,
    /// An allocated relocation section: contents copied, links renumbered.
    DynRel,
    /// A section group.
    Group,
    /// An extended section index table.
    Shndx,
    /// A section added by the edit: span source `k`.
    Added(usize),
}

struct Sec<'d> {
    name: Cow<'d, [u8]>,
    kind: Kind,
    sh_type: elf::SectionType,
    flags: u64,
    addr: u64,
    size: u64,
    link: u32,
    info: u32,
    align: u64,
    entsize: u64,
    /// Offset in the input (`u64::MAX` for added sections).
    orig_offset: u64,
    /// The section `sh_link` names (model index), for the kinds that
    /// renumber it.
    link_sec: Option<usize>,
    /// `sh_link` names the symbol table (restored only while no symbol
    /// index changes).
    symtab_link: bool,
    /// Relocation sections: the section they apply to.
    target: Option<usize>,
    /// Relocation sections: (entry offset in the input, symbol index,
    /// `r_offset`).
    relocs: Vec<(usize, u32, u64)>,
    /// Compact relocation sections: the decoded entries.
    crel: Vec<Crel>,
    /// Groups: flag word, members (model indices), signature symbol.
    group: Option<(u32, Vec<usize>, Option<usize>)>,
    /// The segment whose bytes hold the section (index into `segs`).
    parent: Option<usize>,
    /// An `SHT_NOBITS` section made `SHT_PROGBITS`: room, but no contents.
    was_nobits: bool,
    removed: bool,
}

impl<'d> Sec<'d> {
    /// A section with `(sh_type, flags)` and `(align, entsize)` as given,
    /// no place in the input and nothing linked yet: one the rewrite adds,
    /// or the start of one read from the input (which then sets its
    /// address, offset, link and info).
    fn created(
        name: Cow<'d, [u8]>,
        kind: Kind,
        (sh_type, flags): (elf::SectionType, u64),
        size: u64,
        (align, entsize): (u64, u64),
    ) -> Sec<'d> {
        Sec {
            name,
            kind,
            sh_type,
            flags,
            addr: 0,
            size,
            link: 0,
            info: 0,
            align,
            entsize,
            orig_offset: u64::MAX,
            link_sec: None,
            symtab_link: false,
            target: None,
            relocs: Vec::new(),
            crel: Vec::new(),
            group: None,
            parent: None,
            was_nobits: false,
            removed: false,
        }
    }
}

/// A segment as llvm-objcopy models it: the program headers, then its
/// two pseudo-segments for the ELF header and the program header table.
#[derive(Debug, Clone)]
struct Seg {
    p_type: u32,
    p_flags: u32,
    orig_offset: u64,
    vaddr: u64,
    paddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
    index: usize,
    /// The segment it lies in (see [`Seg::before`]).
    parent: Option<usize>,
}

impl Seg {
    /// llvm-objcopy's segment order: by offset, then larger alignment,
    /// then index; a parent always comes before its children.
    fn before(&self, other: &Seg) -> bool {
        if self.orig_offset != other.orig_offset {
            return self.orig_offset < other.orig_offset;
        }
        if self.align != other.align {
            return self.align > other.align;
        }
        self.index < other.index
    }

    /// Whether `child` starts inside this segment's file bytes.
    fn holds(&self, child: &Seg) -> bool {
        self.orig_offset <= child.orig_offset
            && u128::from(self.orig_offset) + u128::from(self.filesz)
                > u128::from(child.orig_offset)
    }

    /// Whether the section lies wholly inside this segment (an empty
    /// section counts as one byte; `SHT_NOBITS` by address).
    fn contains(&self, s: &Sec<'_>) -> bool {
        let size = u128::from(s.size.max(1));
        if s.sh_type == elf::SHT_NOBITS {
            let tls = s.flags & elf::SHF_TLS.0 != 0;
            return s.flags & SHF_ALLOC != 0
                && tls == (self.p_type == elf::PT_TLS.0)
                && self.vaddr <= s.addr
                && u128::from(self.vaddr) + u128::from(self.memsz) >= u128::from(s.addr) + size;
        }
        self.orig_offset <= s.orig_offset
            && u128::from(self.orig_offset) + u128::from(self.filesz)
                >= u128::from(s.orig_offset) + size
    }
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

/// LLVM's `alignTo(value, align, skew)`: the least `x >= value` with
/// `x % align == skew % align`.
fn align_skew(value: u64, align: u64, skew: u64) -> Result<u64> {
    let skew = skew % align;
    let v = u128::from(value) + u128::from(align) - 1 - u128::from(skew);
    u64::try_from(v / u128::from(align) * u128::from(align) + u128::from(skew))
        .map_err(|_| invalid("segment alignment overflows"))
}

/// Where a symbol is defined.
#[derive(Debug, Clone, Copy)]
enum Def {
    Undef,
    Section(usize),
    Reserved(u16),
}

struct Symbol<'d> {
    name: &'d [u8],
    info: u8,
    other: u8,
    def: Def,
    value: u64,
    size: u64,
    removed: bool,
}

struct Model<'d> {
    is_64: bool,
    endian: Endianness,
    mips64el: bool,
    os_abi: u8,
    abi_version: u8,
    e_type: u16,
    e_machine: u16,
    e_version: u32,
    e_entry: u64,
    e_flags: u32,
    /// The section-name table (model index), if the input has one.
    names: Option<usize>,
    /// The symbol table (model index).
    symtab: Option<usize>,
    /// Section index `i` (1-based) is `secs[i - 1]`.
    secs: Vec<Sec<'d>>,
    /// The program headers, then the ELF header's and the program header
    /// table's pseudo-segments.
    segs: Vec<Seg>,
    symbols: Vec<Symbol<'d>>,
    /// Final symbol order (indices into `symbols`).
    order: Vec<usize>,
    indices_changed: bool,
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

/// llvm-objcopy's check of a string table it reads names from
/// ([`super::check_string_table`]).
fn check_string_table(data: &[u8], sec: &Sec<'_>, index: usize) -> Result<()> {
    let bytes = usize::try_from(sec.orig_offset)
        .ok()
        .zip(usize::try_from(sec.size).ok())
        .and_then(|(at, len)| data.get(at..at.checked_add(len)?));
    super::check_string_table(bytes, index)
}

#[allow(
    clippy::too_many_lines,
    reason = "split in the host-container rework (#27)"
)]
fn read<'d, Elf: FileHeader<Endian = Endianness>>(
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
    let (sym_size, rel_size, rela_size) = if is_64 { (24, 16, 24) } else { (16, 8, 12) };
    let count = table.len().saturating_sub(1);
    let mut secs = Vec::with_capacity(count);
    let mut symtab = None;
    let mut shndx = None;
    for (index, sh) in table.enumerate().skip(1) {
        let i = index.0;
        let sh_type = sh.sh_type(endian);
        let flags: u64 = sh.sh_flags(endian).0;
        let size: u64 = sh.sh_size(endian).into();
        let offset: u64 = sh.sh_offset(endian).into();
        let alloc = flags & SHF_ALLOC != 0;
        let kind = match sh_type {
            elf::SHT_REL | elf::SHT_RELA if alloc => Kind::DynRel,
            elf::SHT_REL | elf::SHT_RELA => Kind::Rel,
            elf::SHT_CREL if alloc => Kind::DynRel,
            elf::SHT_CREL => Kind::Crel,
            elf::SHT_STRTAB if !alloc => Kind::StrTab,
            elf::SHT_GROUP => Kind::Group,
            elf::SHT_SYMTAB => {
                if symtab.is_some() {
                    return Err(invalid("found multiple SHT_SYMTAB sections"));
                }
                symtab = Some(i - 1);
                Kind::SymTab
            }
            elf::SHT_SYMTAB_SHNDX => {
                if shndx.is_some() {
                    return Err(Error::usage(
                        "objects with several SHT_SYMTAB_SHNDX sections are not supported \
                         by offload-kit",
                    ));
                }
                shndx = Some(i - 1);
                Kind::Shndx
            }
            elf::SHT_HASH
            | elf::SHT_GNU_HASH
            | elf::SHT_DYNSYM
            | elf::SHT_DYNAMIC
            | elf::SHT_NOBITS => Kind::Plain,
            _ if flags & SHF_COMPRESSED != 0 => Kind::Opaque,
            _ => Kind::Plain,
        };
        let name = super::llvm_section_name(&table, endian, sh).map_err(read_err)?;
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
            ..Sec::created(
                Cow::Borrowed(name),
                kind,
                (sh_type, flags),
                size,
                (align, sh.sh_entsize(endian).into()),
            )
        });
    }
    // The input's alignments must not size the output.
    super::check_alignments(
        secs.iter()
            .map(|s| (&*s.name, s.sh_type != elf::SHT_NOBITS, s.align)),
    )?;
    let section = |index: u32, what: &dyn Fn() -> String| -> Result<usize> {
        let i = index as usize;
        if i == 0 || i > count {
            return Err(invalid(what()));
        }
        Ok(i - 1)
    };
    let names = if shstrndx == 0 {
        None
    } else {
        let n = section(shstrndx, &|| {
            format!("e_shstrndx field value {shstrndx} is invalid")
        })?;
        if secs[n].kind != Kind::StrTab {
            return Err(invalid(format!(
                "e_shstrndx field value {shstrndx} does not reference a string table"
            )));
        }
        check_string_table(data, &secs[n], n + 1)?;
        Some(n)
    };

    // Symbols.
    let mut symbols = Vec::new();
    if let Some(st) = symtab {
        let sh = table
            .section(object::SectionIndex(st + 1))
            .map_err(read_err)?;
        let link = section(secs[st].link, &|| {
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
        let shndx_data: &[U32<Endianness>] = match shndx {
            Some(x) => {
                let sh = table
                    .section(object::SectionIndex(x + 1))
                    .map_err(read_err)?;
                sh.data_as_array(endian, data).map_err(read_err)?
            }
            None => &[],
        };
        for (k, sym) in syms.iter().enumerate() {
            let name = strings
                .get(sym.st_name(endian))
                .map_err(|_| invalid(format!("symbol {k} has a name outside the string table")))?;
            let st_shndx = sym.st_shndx(endian).0;
            let def = if st_shndx == elf::SHN_XINDEX.0 {
                if shndx.is_none() {
                    return Err(invalid(format!(
                        "symbol '{}' has index SHN_XINDEX but no SHT_SYMTAB_SHNDX section exists",
                        lossy(name)
                    )));
                }
                if shndx_data.len() != syms.len() {
                    return Err(invalid(
                        "symbol section index table does not have the same number of entries \
                         as the symbol table",
                    ));
                }
                let x = shndx_data[k].get(endian);
                Def::Section(section(x, &|| {
                    format!("symbol '{}' has invalid section index {x}", lossy(name))
                })?)
            } else if st_shndx >= elf::SHN_LORESERVE {
                if !valid_reserved(st_shndx, header.e_machine(endian)) {
                    return Err(invalid(format!(
                        "symbol '{}' has unsupported value greater than or equal to \
                         SHN_LORESERVE: {st_shndx}",
                        lossy(name)
                    )));
                }
                Def::Reserved(st_shndx)
            } else if st_shndx != elf::SHN_UNDEF.0 {
                Def::Section(section(u32::from(st_shndx), &|| {
                    format!(
                        "symbol '{}' is defined has invalid section index {st_shndx}",
                        lossy(name)
                    )
                })?)
            } else {
                Def::Undef
            };
            symbols.push(Symbol {
                name,
                info: sym.st_info().0,
                other: sym.st_other().0,
                def,
                value: sym.st_value(endian).into(),
                size: sym.st_size(endian).into(),
                removed: false,
            });
        }
    }

    // Links, relocations and groups.
    let mips64el = header.is_mips64el(endian);
    for i in 0..secs.len() {
        let s = &secs[i];
        let name = lossy(&s.name);
        match s.kind {
            Kind::Plain | Kind::DynRel | Kind::Crel | Kind::Rel => {
                if s.link != 0 {
                    let l = section(s.link, &|| {
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
                    let t = section(s.info, &|| {
                        format!("info field value {} in section '{name}' is invalid", s.info)
                    })?;
                    secs[i].target = Some(t);
                }
                if secs[i].kind == Kind::Crel {
                    let s = &secs[i];
                    let bytes = &data[usize_from(s.orig_offset)..][..usize_from(s.size)];
                    let entries = crel::decode(bytes, is_64)
                        .map_err(|e| invalid(format!("section '{name}': {e}")))?;
                    let mut relocs = Vec::with_capacity(entries.len());
                    for e in &entries {
                        if e.sym != 0 && e.sym as usize >= symbols.len() {
                            return Err(invalid(format!("invalid symbol index: {}", e.sym)));
                        }
                        relocs.push((0, e.sym, e.offset));
                    }
                    secs[i].relocs = relocs;
                    secs[i].crel = entries;
                }
                if secs[i].kind == Kind::Rel {
                    let s = &secs[i];
                    let rela = s.sh_type == elf::SHT_RELA;
                    let entsize = if rela { rela_size } else { rel_size };
                    if s.entsize != entsize || s.size % entsize != 0 {
                        return Err(invalid(format!(
                            "section '{name}' has an invalid sh_entsize: {}",
                            s.entsize
                        )));
                    }
                    let start = usize_from(s.orig_offset);
                    let mut relocs = Vec::new();
                    for k in 0..usize_from(s.size / entsize) {
                        let at = start + k * usize_from(entsize);
                        let sym = reloc_symbol(data, at, is_64, endian, mips64el)?;
                        if sym != 0 {
                            if symtab.is_none() {
                                return Err(invalid(format!(
                                    "'{name}': relocation references symbol with index {sym}, \
                                     but there is no symbol table"
                                )));
                            }
                            if sym as usize >= symbols.len() {
                                return Err(invalid(format!("invalid symbol index: {sym}")));
                            }
                        }
                        let r_offset = if is_64 {
                            let b: [u8; 8] = data[at..at + 8].try_into().unwrap_or_default();
                            U64::<Endianness>::from_bytes(b).get(endian)
                        } else {
                            let b: [u8; 4] = data[at..at + 4].try_into().unwrap_or_default();
                            u64::from(U32::<Endianness>::from_bytes(b).get(endian))
                        };
                        relocs.push((at, sym, r_offset));
                    }
                    secs[i].relocs = relocs;
                }
            }
            Kind::Group => {
                if s.align % 4 != 0 {
                    return Err(invalid(format!(
                        "invalid alignment {} of group section '{name}'",
                        s.align
                    )));
                }
                let mut sym = None;
                if s.link != 0 {
                    let l = section(s.link, &|| {
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
                    if s.info as usize >= symbols.len() {
                        return Err(invalid(format!(
                            "info field value '{}' in section '{name}' is not a valid symbol index",
                            s.info
                        )));
                    }
                    sym = Some(s.info as usize);
                }
                let bytes = &data[usize_from(s.orig_offset)..][..usize_from(s.size)];
                if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
                    return Err(invalid(format!(
                        "the content of the section {name} is malformed"
                    )));
                }
                let word = |c: &[u8]| U32::<Endianness>::from_bytes([c[0], c[1], c[2], c[3]]);
                let mut words = bytes.chunks_exact(4).map(|c| word(c).get(endian));
                let flag = words.next().unwrap_or(0);
                let mut members = Vec::new();
                for m in words {
                    members.push(section(m, &|| {
                        format!("group member index {m} in section '{name}' is invalid")
                    })?);
                }
                secs[i].group = Some((flag, members, sym));
            }
            Kind::Shndx => {
                let l = section(s.link, &|| {
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
    // Segments, and which holds each section.
    let mut segs = Vec::with_capacity(phdrs.len() + 2);
    for (index, ph) in phdrs.iter().enumerate() {
        let orig_offset: u64 = ph.p_offset(endian).into();
        let filesz: u64 = ph.p_filesz(endian).into();
        if orig_offset
            .checked_add(filesz)
            .is_none_or(|end| end > data.len() as u64)
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
    // The ELF header (its size is set when writing) and the program header
    // table.
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
    let table = u64::from(header.e_phentsize(endian)) * phdrs.len() as u64;
    segs.push(Seg {
        p_type: elf::PT_PHDR.0,
        p_flags: 0,
        orig_offset: e_phoff,
        vaddr: e_phoff,
        paddr: 0,
        filesz: table,
        memsz: table,
        align: if is_64 { 8 } else { 4 },
        index: real + 1,
        parent: None,
    });
    for child in 0..segs.len() {
        set_parent(&mut segs, real, child);
    }
    Ok(Model {
        is_64,
        endian,
        mips64el,
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
    })
}

/// The symbol index of the relocation entry at `at`.
fn reloc_symbol(
    data: &[u8],
    at: usize,
    is_64: bool,
    endian: Endianness,
    mips64el: bool,
) -> Result<u32> {
    let field = |off: usize| -> Result<[u8; 4]> {
        data.get(at + off..at + off + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| invalid("relocation outside the file"))
    };
    Ok(if !is_64 {
        U32::<Endianness>::from_bytes(field(4)?).get(endian) >> 8
    } else if mips64el {
        u32::from_le_bytes(field(8)?)
    } else if endian == Endianness::Little {
        u32::from_le_bytes(field(12)?)
    } else {
        u32::from_be_bytes(field(8)?)
    })
}

/// The relocation entry at `at` with its symbol index set to `sym`.
fn reloc_with_symbol(
    data: &[u8],
    at: usize,
    len: usize,
    is_64: bool,
    endian: Endianness,
    mips64el: bool,
    sym: u32,
) -> Vec<u8> {
    let mut e = data[at..at + len].to_vec();
    if !is_64 {
        let mut f = [0u8; 4];
        f.copy_from_slice(&e[4..8]);
        let info = U32::<Endianness>::from_bytes(f).get(endian);
        let new = U32::new(endian, (sym << 8) | (info & 0xff));
        e[4..8].copy_from_slice(pod::bytes_of(&new));
    } else if mips64el {
        e[8..12].copy_from_slice(&sym.to_le_bytes());
    } else if endian == Endianness::Little {
        e[12..16].copy_from_slice(&sym.to_le_bytes());
    } else {
        e[8..12].copy_from_slice(&sym.to_be_bytes());
    }
    e
}

impl<'d> Model<'d> {
    /// Removes and adds sections as llvm-objcopy does for `edit`.
    fn edit(&mut self, edit: &Edit<'d>) -> Result<()> {
        let doomed: Vec<bool> = self
            .secs
            .iter()
            .map(|s| edit.remove_bundles && is_bundle_section(&s.name))
            .collect();
        self.remove_sections(&doomed)?;

        // Locals first, keeping order.
        let kept: Vec<usize> = (0..self.symbols.len())
            .filter(|&k| !self.symbols[k].removed)
            .collect();
        let local = |k: &usize| self.symbols[*k].info >> 4 == STB_LOCAL;
        let mut order: Vec<usize> = kept.iter().copied().filter(local).collect();
        order.extend(kept.iter().copied().filter(|k| !local(k)));
        self.indices_changed |= order.iter().enumerate().any(|(new, &old)| new != old);
        self.order = order;

        for (k, s) in edit.add.iter().enumerate() {
            let mut name = super::MAGIC.to_vec();
            name.extend_from_slice(s.id.as_bytes());
            // --set-section-flags applies to every section of that name.
            for old in self
                .secs
                .iter_mut()
                .filter(|x| !x.removed && *x.name == name[..])
            {
                set_readonly_exclude(old);
            }
            self.secs.push(Sec::created(
                Cow::Owned(name),
                Kind::Added(k + 1),
                (elf::SHT_PROGBITS, SHF_EXCLUDE),
                s.data.len() as u64,
                (1, 0),
            ));
        }

        // The extended index table: needed when a section that had a symbol
        // defined in it (in the input) gets an index past SHN_LORESERVE;
        // made when missing, removed when not needed.
        let reserve = usize::from(elf::SHN_LORESERVE);
        let live: Vec<usize> = (0..self.secs.len())
            .filter(|&i| !self.secs[i].removed)
            .collect();
        let needs_large = live.len() >= reserve && {
            let mut has_symbol = vec![false; self.secs.len()];
            for sym in &self.symbols {
                if let Def::Section(d) = sym.def {
                    has_symbol[d] = true;
                }
            }
            live[reserve - 1..].iter().any(|&i| has_symbol[i])
        };
        let shndx = live
            .iter()
            .copied()
            .find(|&i| self.secs[i].kind == Kind::Shndx);
        match (needs_large, shndx) {
            (true, None) if self.symtab.is_some() => self.secs.push(Sec::created(
                Cow::Borrowed(b".symtab_shndx"),
                Kind::Shndx,
                (elf::SHT_SYMTAB_SHNDX, 0),
                0,
                (4, 4),
            )),
            (false, Some(x)) => {
                let mut doomed = vec![false; self.secs.len()];
                doomed[x] = true;
                self.remove_sections(&doomed)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// llvm-objcopy's `Object::removeSections`: `doomed` sections, the
    /// relocation sections applying to them and groups left without
    /// members go; what still refers to them is an error, or loses it.
    #[allow(
        clippy::too_many_lines,
        reason = "split in the host-container rework (#27)"
    )]
    fn remove_sections(&mut self, doomed: &[bool]) -> Result<()> {
        let n = self.secs.len();
        let mut gone = vec![false; n];
        for i in 0..n {
            let s = &self.secs[i];
            if s.removed {
                continue;
            }
            gone[i] = doomed[i]
                || match s.kind {
                    Kind::Rel | Kind::Crel | Kind::DynRel => s.target.is_some_and(|t| doomed[t]),
                    Kind::Group => s
                        .group
                        .as_ref()
                        .is_some_and(|(_, members, _)| members.iter().all(|&m| doomed[m])),
                    _ => false,
                };
        }
        if !gone.iter().any(|&g| g) {
            return Ok(());
        }
        // A removed group's members leave the group.
        for (i, &g) in gone.iter().enumerate() {
            if g && let Some((_, members, _)) = self.secs[i].group.clone() {
                for m in members {
                    self.secs[m].flags &= !SHF_GROUP;
                }
            }
        }
        let name = |i: usize| lossy(&self.secs[i].name);
        let mut regrouped = Vec::new();
        for i in 0..n {
            if gone[i] || self.secs[i].removed {
                continue;
            }
            let s = &self.secs[i];
            let refers = |l: Option<usize>| l.is_some_and(|l| gone[l]);
            match s.kind {
                Kind::SymTab => {
                    if refers(s.link_sec) {
                        return Err(cannot_remove(&name(s.link_sec.unwrap_or(0)), &name(i)));
                    }
                    let mut any = false;
                    for sym in self.symbols.iter_mut().skip(1) {
                        if let Def::Section(d) = sym.def
                            && gone[d]
                            && !sym.removed
                        {
                            sym.removed = true;
                            any = true;
                        }
                    }
                    self.indices_changed |= any;
                }
                Kind::Rel | Kind::Crel => {
                    if s.link != 0 && self.symtab.is_some_and(|t| gone[t]) {
                        return Err(cannot_remove(&name(self.symtab.unwrap_or(0)), &name(i)));
                    }
                    for &(_, sym, r_offset) in &s.relocs {
                        let Some(symbol) = self.symbols.get(sym as usize).filter(|_| sym != 0)
                        else {
                            continue;
                        };
                        if let Def::Section(d) = symbol.def
                            && gone[d]
                        {
                            let target = s.target.map_or_else(|| name(i), name);
                            return Err(Error::usage(format!(
                                "cannot remove the bundle sections: section '{target}' has a \
                                 relocation (offset {:#x}) against symbol '{}', which is \
                                 defined in a bundle section",
                                r_offset,
                                lossy(symbol.name)
                            )));
                        }
                    }
                }
                Kind::Plain | Kind::DynRel => {
                    if refers(s.link_sec) {
                        return Err(cannot_remove(&name(s.link_sec.unwrap_or(0)), &name(i)));
                    }
                }
                Kind::Group => {
                    let (_, members, sym) = s.group.clone().unwrap_or_default();
                    if s.link != 0 && self.symtab.is_some_and(|t| gone[t]) {
                        return Err(cannot_remove(".symtab", &name(i)));
                    }
                    if let Some(sym) = sym
                        && let Def::Section(d) = self.symbols[sym].def
                        && gone[d]
                    {
                        return Err(Error::usage(format!(
                            "cannot remove the bundle sections: the signature symbol of \
                             group section '{}' is defined in a bundle section",
                            name(i)
                        )));
                    }
                    let members = members.into_iter().filter(|&m| !gone[m]).collect();
                    regrouped.push((i, members));
                }
                Kind::Opaque | Kind::StrTab | Kind::Shndx | Kind::Added(_) => {}
            }
        }
        if self.names.is_some_and(|x| gone[x]) {
            return Err(invalid("the section-name string table would be removed"));
        }
        if self.symtab.is_some_and(|x| gone[x]) {
            return Err(invalid("the symbol table would be removed"));
        }
        for (i, members) in regrouped {
            if let Some(g) = &mut self.secs[i].group {
                g.1 = members;
            }
        }
        for (s, g) in self.secs.iter_mut().zip(gone) {
            s.removed |= g;
        }
        Ok(())
    }

    /// Lays the file out and writes it.
    #[allow(
        clippy::too_many_lines,
        reason = "split in the host-container rework (#27)"
    )]
    fn write(&self, data: &[u8], add: &[NewSection<'_>]) -> Result<Written> {
        let edit_data = |source: usize| -> Result<&[u8]> {
            source
                .checked_sub(1)
                .and_then(|k| add.get(k))
                .map(|s| s.data)
                .ok_or_else(|| bug("added section without data"))
        };
        let word: u64 = if self.is_64 { 8 } else { 4 };
        let ehsize: u64 = if self.is_64 { 64 } else { 52 };
        let shentsize: u64 = if self.is_64 { 64 } else { 40 };
        // Output index of each live section.
        let mut index = vec![0u32; self.secs.len()];
        let mut live = Vec::new();
        for (i, s) in self.secs.iter().enumerate() {
            if !s.removed {
                live.push(i);
                index[i] = to_u32(live.len())?;
            }
        }
        // Output index of each symbol. A relocation naming symbol 0 names
        // no symbol and keeps 0, even when the input's entry 0 is not null
        // and moves (llvm-objcopy reads it as no symbol).
        let sym_index = {
            let mut v = vec![0u32; self.symbols.len()];
            for (new, &old) in self.order.iter().enumerate() {
                v[old] = to_u32(new)?;
            }
            if let Some(first) = v.first_mut() {
                *first = 0;
            }
            v
        };

        // String tables.
        let mut strings: BTreeMap<usize, Vec<&[u8]>> = BTreeMap::new();
        for &i in &live {
            if self.secs[i].kind == Kind::StrTab {
                strings.insert(i, Vec::new());
            }
        }
        if let Some(n) = self.names {
            let list = strings.entry(n).or_default();
            list.extend(live.iter().map(|&i| &*self.secs[i].name));
        }
        if let Some(st) = self.symtab
            && let Some(l) = self.secs[st].link_sec
        {
            let list = strings.entry(l).or_default();
            list.extend(self.order.iter().map(|&k| self.symbols[k].name));
        }
        let tables: BTreeMap<usize, StringTable> = strings
            .into_iter()
            .map(|(i, list)| (i, StringTable::build(list)))
            .collect();
        let name_offset = |i: usize| -> Result<u32> {
            let Some(n) = self.names else { return Ok(0) };
            let off = tables[&n]
                .offset(&self.secs[i].name)
                .ok_or_else(|| bug("section name not in its table"))?;
            u32::try_from(off).map_err(|_| invalid("string table larger than 4 GiB"))
        };

        // Sizes and contents.
        enum Body {
            Span(usize, usize, usize),
            Bytes(Vec<u8>),
            None,
        }
        struct Out {
            sec: usize,
            size: u64,
            align: u64,
            entsize: u64,
            link: u32,
            info: u32,
            body: Body,
        }
        let restore = self.symtab.is_some() && !self.indices_changed;
        let mut outs = Vec::with_capacity(live.len());
        for &i in &live {
            let s = &self.secs[i];
            let span = || Body::Span(0, usize_from(s.orig_offset), usize_from(s.size));
            let renumber = |l: Option<usize>| l.map_or(0, |l| index[l]);
            let mut o = Out {
                sec: i,
                size: s.size,
                align: s.align,
                // llvm-objcopy keeps the low 32 bits of `sh_entsize` (its
                // model holds it as a 32-bit word).
                entsize: s.entsize & u64::from(u32::MAX),
                link: s.link,
                info: s.info,
                // A former SHT_NOBITS section has no contents to write: its
                // bytes stay zeros.
                body: if s.sh_type == elf::SHT_NOBITS || s.was_nobits {
                    Body::None
                } else {
                    span()
                },
            };
            match s.kind {
                Kind::Plain => {
                    o.link = if s.symtab_link && restore {
                        renumber(self.symtab)
                    } else {
                        renumber(s.link_sec)
                    };
                }
                Kind::Opaque => {}
                Kind::DynRel => {
                    o.link = renumber(s.link_sec);
                    if s.target.is_some() {
                        o.info = renumber(s.target);
                    }
                }
                Kind::Crel => {
                    o.link = renumber(s.link_sec);
                    if s.target.is_some() {
                        o.info = renumber(s.target);
                    }
                    let entries: Vec<Crel> = s
                        .crel
                        .iter()
                        .map(|e| Crel {
                            sym: sym_index.get(e.sym as usize).copied().unwrap_or(0),
                            ..*e
                        })
                        .collect();
                    let bytes = crel::encode(&entries, self.is_64);
                    o.size = bytes.len() as u64;
                    o.body = Body::Bytes(bytes);
                }
                Kind::StrTab => {
                    let t = tables
                        .get(&i)
                        .ok_or_else(|| bug("string table not built"))?;
                    o.size = t.bytes().len() as u64;
                    o.body = Body::Bytes(t.bytes().to_vec());
                }
                Kind::SymTab => {
                    let sym_size = if self.is_64 { 24 } else { 16 };
                    o.entsize = sym_size;
                    o.size = self.order.len() as u64 * sym_size;
                    o.align = word;
                    o.link = renumber(s.link_sec);
                    let strtab = s.link_sec.and_then(|l| tables.get(&l));
                    let mut bytes = Vec::with_capacity(usize_from(o.size));
                    let mut last_local = 0;
                    for (new, &k) in self.order.iter().enumerate() {
                        let sym = &self.symbols[k];
                        if sym.info >> 4 == STB_LOCAL {
                            last_local = new;
                        }
                        let st_name = match strtab {
                            Some(t) => t
                                .offset(sym.name)
                                .ok_or_else(|| bug("symbol name not in its table"))?,
                            None => 0,
                        };
                        let st_shndx = match sym.def {
                            Def::Undef => 0,
                            Def::Reserved(x) => x,
                            // Large indices are in the extended table.
                            Def::Section(d) => u16::try_from(index[d])
                                .ok()
                                .filter(|&x| x < elf::SHN_LORESERVE)
                                .unwrap_or(elf::SHN_XINDEX.0),
                        };
                        self.put_sym(&mut bytes, st_name, sym, st_shndx)?;
                    }
                    o.info = to_u32(last_local + 1)?;
                    o.body = Body::Bytes(bytes);
                }
                Kind::Rel => {
                    let entsize = s.entsize;
                    o.align = word;
                    o.link = if s.link != 0 {
                        renumber(self.symtab)
                    } else {
                        0
                    };
                    if s.target.is_some() {
                        o.info = renumber(s.target);
                    }
                    if self.indices_changed {
                        let mut bytes = Vec::with_capacity(usize_from(s.size));
                        for &(at, sym, _) in &s.relocs {
                            let new = sym_index.get(sym as usize).copied().unwrap_or(0);
                            bytes.extend(reloc_with_symbol(
                                data,
                                at,
                                usize_from(entsize),
                                self.is_64,
                                self.endian,
                                self.mips64el,
                                new,
                            ));
                        }
                        o.body = Body::Bytes(bytes);
                    }
                }
                Kind::Group => {
                    let (flag, members, sym) = s.group.clone().unwrap_or_default();
                    let mut flag = flag;
                    let local = sym.is_some_and(|k| self.symbols[k].info >> 4 == STB_LOCAL);
                    if flag & GRP_COMDAT != 0 && local {
                        flag &= !GRP_COMDAT;
                    }
                    o.link = if s.link != 0 {
                        renumber(self.symtab)
                    } else {
                        0
                    };
                    o.info = sym.map_or(0, |k| sym_index[k]);
                    let mut bytes = Vec::new();
                    for w in std::iter::once(flag).chain(members.iter().map(|&m| index[m])) {
                        bytes.extend_from_slice(pod::bytes_of(&U32::new(self.endian, w)));
                    }
                    o.size = bytes.len() as u64;
                    o.body = Body::Bytes(bytes);
                }
                Kind::Shndx => {
                    o.size = self.order.len() as u64 * 4;
                    o.link = renumber(self.symtab);
                    let mut bytes = Vec::with_capacity(usize_from(o.size));
                    for &k in &self.order {
                        let x = match self.symbols[k].def {
                            Def::Section(d) if index[d] >= u32::from(elf::SHN_LORESERVE) => {
                                index[d]
                            }
                            _ => 0,
                        };
                        bytes.extend_from_slice(pod::bytes_of(&U32::new(self.endian, x)));
                    }
                    o.body = Body::Bytes(bytes);
                }
                Kind::Added(k) => o.body = Body::Span(k, 0, usize_from(s.size)),
            }
            outs.push(o);
        }

        // Segments first: each at its offset within its parent, or at the
        // next offset congruent to its address modulo its alignment.
        let mut segs = self.segs.clone();
        let real = segs.len() - 2;
        segs[real].filesz = ehsize;
        segs[real].memsz = ehsize;
        let mut seg_order: Vec<usize> = (0..segs.len()).collect();
        seg_order.sort_by(|&a, &b| {
            if segs[a].before(&segs[b]) {
                std::cmp::Ordering::Less
            } else if segs[b].before(&segs[a]) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        let mut seg_at = vec![0u64; segs.len()];
        let mut offset = 0u64;
        for &k in &seg_order {
            let seg = &segs[k];
            let at = match seg.parent {
                Some(p) => {
                    seg_at[p].wrapping_add(seg.orig_offset.wrapping_sub(segs[p].orig_offset))
                }
                None => align_skew(offset, seg.align.max(1), seg.vaddr)?,
            };
            seg_at[k] = at;
            let end = at
                .checked_add(seg.filesz)
                .ok_or_else(|| invalid("segment sizes overflow"))?;
            offset = offset.max(end);
        }

        // Sections: inside their segment, or after the segments by input
        // offset (added sections last), each aligned.
        let mut placed = vec![0u64; outs.len()];
        let mut by_offset: Vec<usize> = Vec::new();
        for (k, o) in outs.iter().enumerate() {
            let s = &self.secs[o.sec];
            match s.parent {
                Some(p) => {
                    placed[k] =
                        seg_at[p].wrapping_add(s.orig_offset.wrapping_sub(segs[p].orig_offset));
                }
                None => by_offset.push(k),
            }
        }
        by_offset.sort_by_key(|&k| self.secs[outs[k].sec].orig_offset);
        for &k in &by_offset {
            let o = &outs[k];
            offset = checked_align(offset, o.align)?;
            placed[k] = offset;
            if self.secs[o.sec].sh_type != elf::SHT_NOBITS {
                offset = offset
                    .checked_add(o.size)
                    .ok_or_else(|| invalid("section sizes overflow"))?;
            }
        }
        let headers = self.names.is_some();
        let shoff = if headers {
            checked_align(offset, word)?
        } else {
            offset
        };

        // The whole file must have a size (alignments in hostile input can
        // push offsets to the end of the 64-bit range).
        let table = (live.len() as u64 + 1) * shentsize;
        let total = if headers {
            shoff
                .checked_add(table)
                .ok_or_else(|| invalid("the rewritten object would be larger than 2^64 bytes"))?
        } else {
            shoff
        };

        // The file, written in llvm-objcopy's order (later writes win):
        // segment contents, zeros over removed sections inside segments,
        // the ELF header, the program headers, the other sections, the
        // section headers.
        let mut c = Canvas::default();
        for seg in &segs[..real] {
            c.put(
                seg_at[seg.index],
                Chunk::Span(0, usize_from(seg.orig_offset), usize_from(seg.filesz)),
            );
        }
        for s in &self.secs {
            if let (true, Some(p)) = (s.removed, s.parent)
                && s.sh_type != elf::SHT_NOBITS
                && s.size != 0
            {
                let at = seg_at[p].wrapping_add(s.orig_offset.wrapping_sub(segs[p].orig_offset));
                c.put(at, Chunk::Zeros(s.size));
            }
        }
        let shnum = live.len() as u64 + 1;
        let with_table = headers && !live.is_empty();
        let phoff = if real == 0 { 0 } else { seg_at[real + 1] };
        c.put(
            0,
            Chunk::Bytes(self.ehdr(&EhdrFields {
                phoff,
                phnum: real,
                shoff: if with_table { shoff } else { 0 },
                shnum: if with_table { shnum } else { 0 },
                shstrndx: if with_table {
                    self.names.map_or(0, |n| index[n])
                } else {
                    0
                },
                shentsize: if with_table { shentsize } else { 0 },
            })),
        );
        let phentsize: u64 = if self.is_64 { 56 } else { 32 };
        for (i, seg) in segs[..real].iter().enumerate() {
            let at = seg_at[real + 1]
                .checked_add(i as u64 * phentsize)
                .ok_or_else(|| invalid("program headers past the end"))?;
            c.put(at, Chunk::Bytes(self.phdr(seg, seg_at[i])?));
        }
        for (k, o) in outs.iter().enumerate() {
            if self.secs[o.sec].parent.is_some() {
                continue;
            }
            match &o.body {
                Body::None => {}
                Body::Bytes(b) => c.put(placed[k], Chunk::Bytes(b.clone())),
                Body::Span(source, off, len) => {
                    c.put(placed[k], Chunk::Span(*source, *off, *len));
                }
            }
        }
        if headers {
            // Section 0 holds the count and the name table's index when
            // they do not fit the ELF header.
            let reserve = u64::from(elf::SHN_LORESERVE);
            let names_index = self.names.map_or(0, |n| index[n]);
            let mut bytes = self.shdr(&ShdrFields {
                name: 0,
                sh_type: elf::SHT_NULL,
                flags: 0,
                addr: 0,
                offset: 0,
                size: if shnum >= reserve { shnum } else { 0 },
                link: if u64::from(names_index) >= reserve {
                    names_index
                } else {
                    0
                },
                info: 0,
                align: 0,
                entsize: 0,
            })?;
            for (k, o) in outs.iter().enumerate() {
                let s = &self.secs[o.sec];
                bytes.extend(self.shdr(&ShdrFields {
                    name: name_offset(o.sec)?,
                    sh_type: s.sh_type,
                    flags: s.flags,
                    addr: s.addr,
                    offset: placed[k],
                    size: o.size,
                    link: o.link,
                    info: o.info,
                    align: o.align,
                    entsize: o.entsize,
                })?);
            }
            c.put(shoff, Chunk::Bytes(bytes));
        }
        let sources = |source: usize| -> Result<&[u8]> {
            if source == 0 {
                Ok(data)
            } else {
                edit_data(source)
            }
        };
        c.finish(total, sources)
    }

    fn put_sym(&self, out: &mut Vec<u8>, name: u64, sym: &Symbol<'_>, shndx: u16) -> Result<()> {
        let e = self.endian;
        let name = u32::try_from(name).map_err(|_| invalid("string table larger than 4 GiB"))?;
        if self.is_64 {
            let s = elf::Sym64 {
                st_name: U32::new(e, name),
                st_info: elf::SymbolInfo(sym.info),
                st_other: elf::SymbolOther(sym.other),
                st_shndx: U16::new(e, elf::SymbolSection(shndx)),
                st_value: U64::new(e, sym.value),
                st_size: U64::new(e, sym.size),
            };
            out.extend_from_slice(pod::bytes_of(&s));
        } else {
            let s = elf::Sym32 {
                st_name: U32::new(e, name),
                st_value: U32::new(e, narrow(sym.value)?),
                st_size: U32::new(e, narrow(sym.size)?),
                st_info: elf::SymbolInfo(sym.info),
                st_other: elf::SymbolOther(sym.other),
                st_shndx: U16::new(e, elf::SymbolSection(shndx)),
            };
            out.extend_from_slice(pod::bytes_of(&s));
        }
        Ok(())
    }

    fn ehdr(&self, f: &EhdrFields) -> Vec<u8> {
        let EhdrFields {
            phoff,
            phnum,
            shoff,
            shnum,
            shstrndx,
            shentsize,
        } = *f;
        let e = self.endian;
        let ident = elf::Ident {
            magic: elf::ELFMAG,
            class: if self.is_64 {
                elf::ELFCLASS64
            } else {
                elf::ELFCLASS32
            },
            data: if e == Endianness::Big {
                elf::ELFDATA2MSB
            } else {
                elf::ELFDATA2LSB
            },
            version: elf::EV_CURRENT,
            os_abi: elf::OsAbi(self.os_abi),
            abi_version: self.abi_version,
            padding: [0; 7],
        };
        // No program headers: no entry size either. (More than 65534
        // program headers are refused when reading.)
        let (phnum, phentsize) = match u16::try_from(phnum) {
            Ok(0) | Err(_) => (0, 0),
            Ok(n) => (n, if self.is_64 { 56 } else { 32 }),
        };
        // Values past SHN_LORESERVE go to section 0.
        let shnum = u16::try_from(shnum)
            .ok()
            .filter(|&n| n < elf::SHN_LORESERVE)
            .unwrap_or(0);
        let shstrndx = elf::SymbolSection(
            u16::try_from(shstrndx)
                .ok()
                .filter(|&n| n < elf::SHN_LORESERVE)
                .unwrap_or(elf::SHN_XINDEX.0),
        );
        let shentsize = u16::try_from(shentsize).unwrap_or(0);
        if self.is_64 {
            let h = elf::FileHeader64 {
                e_ident: ident,
                e_type: U16::new(e, elf::FileType(self.e_type)),
                e_machine: U16::new(e, elf::Machine(self.e_machine)),
                e_version: U32::new(e, self.e_version),
                e_entry: U64::new(e, self.e_entry),
                e_phoff: U64::new(e, phoff),
                e_shoff: U64::new(e, shoff),
                e_flags: U32::new(e, elf::FileFlags(self.e_flags)),
                e_ehsize: U16::new(e, 64),
                e_phentsize: U16::new(e, phentsize),
                e_phnum: U16::new(e, phnum),
                e_shentsize: U16::new(e, shentsize),
                e_shnum: U16::new(e, shnum),
                e_shstrndx: U16::new(e, shstrndx),
            };
            pod::bytes_of(&h).to_vec()
        } else {
            let h = elf::FileHeader32 {
                e_ident: ident,
                e_type: U16::new(e, elf::FileType(self.e_type)),
                e_machine: U16::new(e, elf::Machine(self.e_machine)),
                e_version: U32::new(e, self.e_version),
                e_entry: U32::new(e, narrow(self.e_entry).unwrap_or(0)),
                e_phoff: U32::new(e, narrow(phoff).unwrap_or(0)),
                e_shoff: U32::new(e, narrow(shoff).unwrap_or(0)),
                e_flags: U32::new(e, elf::FileFlags(self.e_flags)),
                e_ehsize: U16::new(e, 52),
                e_phentsize: U16::new(e, phentsize),
                e_phnum: U16::new(e, phnum),
                e_shentsize: U16::new(e, shentsize),
                e_shnum: U16::new(e, shnum),
                e_shstrndx: U16::new(e, shstrndx),
            };
            pod::bytes_of(&h).to_vec()
        }
    }

    /// A program header: the segment's own values at its new offset.
    fn phdr(&self, seg: &Seg, offset: u64) -> Result<Vec<u8>> {
        let e = self.endian;
        let p_type = elf::ProgramType(seg.p_type);
        let p_flags = elf::ProgramFlags(seg.p_flags);
        Ok(if self.is_64 {
            let h = elf::ProgramHeader64 {
                p_type: U32::new(e, p_type),
                p_flags: U32::new(e, p_flags),
                p_offset: U64::new(e, offset),
                p_vaddr: U64::new(e, seg.vaddr),
                p_paddr: U64::new(e, seg.paddr),
                p_filesz: U64::new(e, seg.filesz),
                p_memsz: U64::new(e, seg.memsz),
                p_align: U64::new(e, seg.align),
            };
            pod::bytes_of(&h).to_vec()
        } else {
            let h = elf::ProgramHeader32 {
                p_type: U32::new(e, p_type),
                p_offset: U32::new(e, narrow(offset)?),
                p_vaddr: U32::new(e, narrow(seg.vaddr)?),
                p_paddr: U32::new(e, narrow(seg.paddr)?),
                p_filesz: U32::new(e, narrow(seg.filesz)?),
                p_memsz: U32::new(e, narrow(seg.memsz)?),
                p_flags: U32::new(e, p_flags),
                p_align: U32::new(e, narrow(seg.align)?),
            };
            pod::bytes_of(&h).to_vec()
        })
    }

    fn shdr(&self, f: &ShdrFields) -> Result<Vec<u8>> {
        let e = self.endian;
        Ok(if self.is_64 {
            let h = elf::SectionHeader64 {
                sh_name: U32::new(e, f.name),
                sh_type: U32::new(e, f.sh_type),
                sh_flags: U64::new(e, elf::SectionFlags(f.flags)),
                sh_addr: U64::new(e, f.addr),
                sh_offset: U64::new(e, f.offset),
                sh_size: U64::new(e, f.size),
                sh_link: U32::new(e, f.link),
                sh_info: U32::new(e, f.info),
                sh_addralign: U64::new(e, f.align),
                sh_entsize: U64::new(e, f.entsize),
            };
            pod::bytes_of(&h).to_vec()
        } else {
            let h = elf::SectionHeader32 {
                sh_name: U32::new(e, f.name),
                sh_type: U32::new(e, f.sh_type),
                sh_flags: U32::new_u64(e, elf::SectionFlags(f.flags))
                    .map_err(|_| invalid("section flags do not fit 32 bits"))?,
                sh_addr: U32::new(e, narrow(f.addr)?),
                sh_offset: U32::new(e, narrow(f.offset)?),
                sh_size: U32::new(e, narrow(f.size)?),
                sh_link: U32::new(e, f.link),
                sh_info: U32::new(e, f.info),
                sh_addralign: U32::new(e, narrow(f.align)?),
                sh_entsize: U32::new(e, narrow(f.entsize)?),
            };
            pod::bytes_of(&h).to_vec()
        })
    }
}

/// One section header's values.
struct ShdrFields {
    name: u32,
    sh_type: elf::SectionType,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    align: u64,
    entsize: u64,
}

/// `--set-section-flags=…=readonly,exclude` on a section that already has
/// the name: only `SHF_EXCLUDE`, plus the flags llvm-objcopy preserves.
fn set_readonly_exclude(s: &mut Sec<'_>) {
    let preserve = (SHF_COMPRESSED
        | SHF_GROUP
        | elf::SHF_LINK_ORDER.0
        | elf::SHF_MASKOS
        | elf::SHF_MASKPROC
        | elf::SHF_TLS.0
        | elf::SHF_INFO_LINK.0)
        & !SHF_EXCLUDE;
    s.flags = (s.flags & preserve) | SHF_EXCLUDE;
    if s.sh_type == elf::SHT_NOBITS {
        // Not allocated any more: it becomes PROGBITS, still without
        // contents.
        s.sh_type = elf::SHT_PROGBITS;
        s.was_nobits = true;
    }
}

fn cannot_remove(what: &str, by: &str) -> Error {
    Error::usage(format!(
        "cannot remove the bundle sections: section '{what}' is referenced by the section '{by}'"
    ))
}

fn narrow(v: u64) -> Result<u32> {
    u32::try_from(v).map_err(|_| invalid(format!("value {v:#x} does not fit a 32-bit field")))
}

fn to_u32(x: usize) -> Result<u32> {
    u32::try_from(x).map_err(|_| invalid(format!("{x} entries do not fit a 32-bit index")))
}

fn checked_align(offset: u64, align: u64) -> Result<u64> {
    offset
        .checked_next_multiple_of(align.max(1))
        .ok_or_else(|| invalid("section alignment overflows"))
}

/// An internal inconsistency (a bug in this module, not bad input).
fn bug(what: &str) -> Error {
    Error::write("object file", format!("internal error: {what}"))
}

/// One piece of the file being written.
#[derive(Debug, Clone)]
enum Chunk {
    /// Bytes of span source `.0` from `.1`, `.2` long.
    Span(usize, usize, usize),
    Bytes(Vec<u8>),
    Zeros(u64),
}

impl Chunk {
    fn len(&self) -> u64 {
        match self {
            Chunk::Span(_, _, n) => *n as u64,
            Chunk::Bytes(b) => b.len() as u64,
            Chunk::Zeros(n) => *n,
        }
    }

    /// The part from `from` to `to` (relative offsets).
    fn part(&self, from: u64, to: u64) -> Chunk {
        match self {
            Chunk::Span(src, off, _) => {
                Chunk::Span(*src, off + usize_from(from), usize_from(to - from))
            }
            Chunk::Bytes(b) => Chunk::Bytes(b[usize_from(from)..usize_from(to)].to_vec()),
            Chunk::Zeros(_) => Chunk::Zeros(to - from),
        }
    }
}

/// The file as pieces at offsets, where a later piece overwrites what it
/// covers (as llvm-objcopy writes into its buffer); gaps are zeros.
#[derive(Default)]
struct Canvas {
    /// Sorted, non-overlapping (start, piece).
    parts: Vec<(u64, Chunk)>,
}

impl Canvas {
    fn put(&mut self, at: u64, chunk: Chunk) {
        let len = chunk.len();
        if len == 0 {
            return;
        }
        let end = at.saturating_add(len);
        // Parts are sorted and disjoint, so their ends are sorted too: the
        // ones overlapping [at, end) are one run.
        let first = self
            .parts
            .partition_point(|(start, c)| start + c.len() <= at);
        let mut last = first;
        while last < self.parts.len() && self.parts[last].0 < end {
            last += 1;
        }
        let mut replace = Vec::with_capacity(3);
        if let Some((start, c)) = self.parts[first..last].first()
            && *start < at
        {
            replace.push((*start, c.part(0, at - start)));
        }
        replace.push((at, chunk));
        if let Some((start, c)) = self.parts[first..last].last() {
            let (start, stop) = (*start, start + c.len());
            if stop > end {
                replace.push((end, c.part(end - start, stop - start)));
            }
        }
        self.parts.splice(first..last, replace);
    }

    /// The pieces up to `total` bytes; `source(k)` is span source `k`.
    fn finish<'s>(self, total: u64, source: impl Fn(usize) -> Result<&'s [u8]>) -> Result<Written> {
        let mut w = Written::default();
        let mut pending: Vec<u8> = Vec::new();
        let mut at = 0u64;
        let flush = |w: &mut Written, pending: &mut Vec<u8>| {
            if !pending.is_empty() {
                let b = std::mem::take(pending);
                let n = b.len() as u64;
                w.layout.push(Piece::Bytes(b), n);
            }
        };
        let zeros = |w: &mut Written, pending: &mut Vec<u8>, n: u64| {
            if n <= SPAN_MIN as u64 {
                pending.resize(pending.len() + usize_from(n), 0);
            } else {
                flush(w, pending);
                w.layout.push(Piece::Zeros(n), n);
            }
        };
        for (start, c) in self.parts {
            if start >= total {
                break;
            }
            zeros(&mut w, &mut pending, start - at);
            let c = if start + c.len() > total {
                c.part(0, total - start)
            } else {
                c
            };
            at = start + c.len();
            match c {
                Chunk::Bytes(b) => pending.extend_from_slice(&b),
                Chunk::Zeros(n) => zeros(&mut w, &mut pending, n),
                Chunk::Span(src, offset, len) if len >= SPAN_MIN => {
                    flush(&mut w, &mut pending);
                    w.layout.push(Piece::Image(w.spans.len()), len as u64);
                    w.spans.push(Span {
                        source: src,
                        offset,
                        len,
                    });
                }
                Chunk::Span(src, offset, len) => {
                    let b = source(src)?
                        .get(offset..offset + len)
                        .ok_or_else(|| bug("section outside its input"))?;
                    pending.extend_from_slice(b);
                }
            }
        }
        zeros(&mut w, &mut pending, total.saturating_sub(at));
        flush(&mut w, &mut pending);
        Ok(w)
    }
}

/// The ELF header's values that depend on the layout.
#[derive(Clone, Copy)]
struct EhdrFields {
    phoff: u64,
    phnum: usize,
    shoff: u64,
    shnum: u64,
    shstrndx: u32,
    shentsize: u64,
}

/// LLVM's compact relocation format (`SHT_CREL`), as `decodeCrel` in
/// `llvm/Object/ELF.h` reads it and `encodeCrel` in `llvm/MC/MCELFExtras.h`
/// writes it: a ULEB128 header (count × 8, an addend flag, the offset
/// shift), then per entry a byte of offset delta and flags (symbol, type,
/// addend deltas present), more offset bits in ULEB128 when its top bit is
/// set, and the present deltas in SLEB128. Arithmetic wraps at the word
/// size.
#[allow(
    clippy::cast_possible_truncation,
    reason = "the format's deltas wrap at 32 bits (symbol, type) or the word size, as LLVM's do"
)]
mod crel {
    /// One decoded relocation.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) struct Crel {
        pub offset: u64,
        pub sym: u32,
        pub ty: u32,
        pub addend: u64,
    }

    const HDR_ADDEND: u64 = 4;

    fn mask(is_64: bool) -> u64 {
        if is_64 { u64::MAX } else { u64::from(u32::MAX) }
    }

    struct Reader<'a> {
        data: &'a [u8],
        at: usize,
    }

    impl Reader<'_> {
        fn byte(&mut self) -> Result<u8, String> {
            let b = *self
                .data
                .get(self.at)
                .ok_or("compact relocations end early")?;
            self.at += 1;
            Ok(b)
        }

        /// ULEB128 and SLEB128 as LLVM's `DataExtractor` reads them (bits
        /// past 64 are an error).
        fn leb(&mut self, signed: bool) -> Result<u64, String> {
            let mut value = 0u64;
            let mut shift = 0u32;
            loop {
                let b = self.byte()?;
                let low = u64::from(b & 0x7f);
                if shift >= 64 || (shift > 0 && (low << shift) >> shift != low) {
                    return Err("LEB128 value too large".into());
                }
                value |= low << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    if signed && shift < 64 && b & 0x40 != 0 {
                        value |= u64::MAX << shift;
                    }
                    return Ok(value);
                }
            }
        }
    }

    /// The entries of `data`.
    pub(super) fn decode(data: &[u8], is_64: bool) -> Result<Vec<Crel>, String> {
        let m = mask(is_64);
        let mut r = Reader { data, at: 0 };
        let hdr = r.leb(false)?;
        let count = hdr / 8;
        let flag_bits = if hdr & HDR_ADDEND != 0 { 3 } else { 2 };
        let shift = hdr % HDR_ADDEND;
        if count > data.len() as u64 {
            return Err(format!(
                "{count} compact relocations in {} bytes",
                data.len()
            ));
        }
        let (mut offset, mut addend) = (0u64, 0u64);
        let (mut sym, mut ty) = (0u32, 0u32);
        let mut out = Vec::new();
        for _ in 0..count {
            let b = r.byte()?;
            offset = offset.wrapping_add(u64::from(b >> flag_bits)) & m;
            if b >= 0x80 {
                let more = r.leb(false)?.wrapping_shl(7 - flag_bits);
                offset = offset.wrapping_add(more.wrapping_sub(0x80 >> flag_bits)) & m;
            }
            if b & 1 != 0 {
                sym = sym.wrapping_add(r.leb(true)? as u32);
            }
            if b & 2 != 0 {
                ty = ty.wrapping_add(r.leb(true)? as u32);
            }
            if u64::from(b) & 4 & hdr != 0 {
                addend = addend.wrapping_add(r.leb(true)?) & m;
            }
            out.push(Crel {
                offset: offset.wrapping_shl(shift as u32) & m,
                sym,
                ty,
                addend,
            });
        }
        Ok(out)
    }

    fn uleb(out: &mut Vec<u8>, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    fn sleb(out: &mut Vec<u8>, mut v: i64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if (v == 0 && b & 0x40 == 0) || (v == -1 && b & 0x40 != 0) {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    /// `entries` encoded (always with explicit addends).
    pub(super) fn encode(entries: &[Crel], is_64: bool) -> Vec<u8> {
        let m = mask(is_64);
        let offset_mask = entries.iter().fold(8u64, |acc, e| acc | e.offset) & m;
        let shift = u64::from(offset_mask.trailing_zeros());
        let mut out = Vec::new();
        uleb(&mut out, (entries.len() as u64 * 8) + HDR_ADDEND + shift);
        let (mut offset, mut addend) = (0u64, 0u64);
        let (mut sym, mut ty) = (0u32, 0u32);
        for e in entries {
            let delta = (e.offset.wrapping_sub(offset) & m) >> shift;
            offset = e.offset;
            let b = ((delta << 3) as u8)
                .wrapping_add(u8::from(sym != e.sym))
                .wrapping_add(if ty != e.ty { 2 } else { 0 })
                .wrapping_add(if addend != e.addend { 4 } else { 0 });
            if delta < 0x10 {
                out.push(b);
            } else {
                out.push(b | 0x80);
                uleb(&mut out, delta >> 4);
            }
            if b & 1 != 0 {
                sleb(&mut out, i64::from(e.sym.wrapping_sub(sym) as i32));
                sym = e.sym;
            }
            if b & 2 != 0 {
                sleb(&mut out, i64::from(e.ty.wrapping_sub(ty) as i32));
                ty = e.ty;
            }
            if b & 4 != 0 {
                let d = e.addend.wrapping_sub(addend) & m;
                let d = if is_64 {
                    d as i64
                } else {
                    i64::from(d as u32 as i32)
                };
                sleb(&mut out, d);
                addend = e.addend;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::crel::{self, Crel};

    #[test]
    fn compact_relocations_round_trip() {
        for is_64 in [true, false] {
            let top = if is_64 { u64::MAX } else { u64::from(u32::MAX) };
            let entries = [
                Crel {
                    offset: 8,
                    sym: 3,
                    ty: 2,
                    addend: top - 3,
                },
                Crel {
                    offset: 16,
                    sym: 3,
                    ty: 2,
                    addend: top - 3,
                },
                Crel {
                    offset: 0x10_0000,
                    sym: 1,
                    ty: 4,
                    addend: 100_000,
                },
                Crel {
                    offset: 0x10_0008,
                    sym: 70_000,
                    ty: 4,
                    addend: 0,
                },
            ];
            let bytes = crel::encode(&entries, is_64);
            assert_eq!(crel::decode(&bytes, is_64).unwrap(), entries);
            // Offsets all multiples of 8: shift 3 in the header.
            assert_eq!(bytes[0] & 3, 3);
        }
        assert!(crel::decode(&[0x28, 0x01], true).is_err(), "truncated");
        assert!(crel::decode(&[], true).is_err());
    }
}

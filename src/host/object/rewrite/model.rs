//! The model llvm-objcopy reads an ELF file into and writes the new file
//! from: sections, segments and symbols, with the few questions about them
//! every phase asks, and each live section as it is written ([`Out`]),
//! which the writer makes and the layout places.

use std::borrow::Cow;

use object::write::elf::{Encoder, Rel};
use object::{Endianness, elf};

use super::crel::Crel;

// Flag values as plain integers.
pub(super) const SHF_ALLOC: u64 = elf::SHF_ALLOC.0;
pub(super) const SHF_GROUP: u64 = elf::SHF_GROUP.0;
pub(super) const SHF_EXCLUDE: u64 = elf::SHF_EXCLUDE.0;
pub(super) const SHF_COMPRESSED: u64 = elf::SHF_COMPRESSED.0;
pub(super) const STB_LOCAL: u8 = elf::STB_LOCAL.0;
pub(super) const GRP_COMDAT: u32 = elf::GRP_COMDAT.0;

/// How llvm-objcopy treats a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
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

/// A section: its header's values, what it links to as model indices, and
/// what llvm-objcopy decoded of its contents.
pub(super) struct Sec<'d> {
    pub(super) name: Cow<'d, [u8]>,
    /// `sh_name` as read (0 for added sections).
    pub(super) name_at: u32,
    pub(super) kind: Kind,
    pub(super) sh_type: elf::SectionType,
    pub(super) flags: u64,
    pub(super) addr: u64,
    pub(super) size: u64,
    pub(super) link: u32,
    pub(super) info: u32,
    pub(super) align: u64,
    pub(super) entsize: u64,
    /// Offset in the input (`u64::MAX` for added sections).
    pub(super) orig_offset: u64,
    /// The section `sh_link` names (model index), for the kinds that
    /// renumber it.
    pub(super) link_sec: Option<usize>,
    /// `sh_link` names the symbol table (restored only while no symbol
    /// index changes).
    pub(super) symtab_link: bool,
    /// Relocation sections: the section they apply to.
    pub(super) target: Option<usize>,
    /// Relocation sections: the entries as read (for compact ones, without
    /// their addends, which [`Sec::crel`] holds).
    pub(super) relocs: Vec<Rel>,
    /// Compact relocation sections: the decoded entries.
    pub(super) crel: Vec<Crel>,
    /// Groups: flag word, members (model indices), signature symbol.
    pub(super) group: Option<(u32, Vec<usize>, Option<usize>)>,
    /// The segment whose bytes hold the section (index into `segs`).
    pub(super) parent: Option<usize>,
    /// An `SHT_NOBITS` section made `SHT_PROGBITS`: room, but no contents.
    pub(super) was_nobits: bool,
    pub(super) removed: bool,
    /// New contents: the edit's update with this index.
    pub(super) update: Option<usize>,
}

impl<'d> Sec<'d> {
    /// A section with `(sh_type, flags)` and `(align, entsize)` as given,
    /// no place in the input and nothing linked yet: one the rewrite adds,
    /// or the start of one read from the input (which then sets its
    /// address, offset, link and info).
    pub(super) fn created(
        name: Cow<'d, [u8]>,
        kind: Kind,
        (sh_type, flags): (elf::SectionType, u64),
        size: u64,
        (align, entsize): (u64, u64),
    ) -> Sec<'d> {
        Sec {
            name,
            name_at: 0,
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
            update: None,
        }
    }
}

/// A segment as llvm-objcopy models it: the program headers, then its
/// two pseudo-segments for the ELF header and the program header table.
#[derive(Debug, Clone)]
pub(super) struct Seg {
    pub(super) p_type: u32,
    pub(super) p_flags: u32,
    pub(super) orig_offset: u64,
    pub(super) vaddr: u64,
    pub(super) paddr: u64,
    pub(super) filesz: u64,
    pub(super) memsz: u64,
    pub(super) align: u64,
    pub(super) index: usize,
    /// The segment it lies in (see [`Seg::before`]).
    pub(super) parent: Option<usize>,
}

impl Seg {
    /// llvm-objcopy's segment order: by offset, then larger alignment,
    /// then index; a parent always comes before its children.
    pub(super) fn before(&self, other: &Seg) -> bool {
        if self.orig_offset != other.orig_offset {
            return self.orig_offset < other.orig_offset;
        }
        if self.align != other.align {
            return self.align > other.align;
        }
        self.index < other.index
    }

    /// Whether `child` starts inside this segment's file bytes.
    pub(super) fn holds(&self, child: &Seg) -> bool {
        self.orig_offset <= child.orig_offset
            && u128::from(self.orig_offset) + u128::from(self.filesz)
                > u128::from(child.orig_offset)
    }

    /// Whether the section lies wholly inside this segment (an empty
    /// section counts as one byte; `SHT_NOBITS` by address).
    pub(super) fn contains(&self, s: &Sec<'_>) -> bool {
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

/// Where a symbol is defined.
#[derive(Debug, Clone, Copy)]
pub(super) enum Def {
    Undef,
    Section(usize),
    Reserved(u16),
}

/// A symbol of the symbol table.
pub(super) struct Symbol<'d> {
    pub(super) name: &'d [u8],
    /// `st_name` as read.
    pub(super) name_at: u32,
    pub(super) info: u8,
    pub(super) other: u8,
    pub(super) def: Def,
    pub(super) value: u64,
    pub(super) size: u64,
    pub(super) removed: bool,
}

/// The whole file as llvm-objcopy holds it between reading and writing.
pub(super) struct Model<'d> {
    pub(super) is_64: bool,
    pub(super) endian: Endianness,
    pub(super) os_abi: u8,
    pub(super) abi_version: u8,
    pub(super) e_type: u16,
    pub(super) e_machine: u16,
    pub(super) e_version: u32,
    pub(super) e_entry: u64,
    pub(super) e_flags: u32,
    /// The section-name table (model index), if the input has one.
    pub(super) names: Option<usize>,
    /// The symbol table (model index).
    pub(super) symtab: Option<usize>,
    /// Section index `i` (1-based) is `secs[i - 1]`.
    pub(super) secs: Vec<Sec<'d>>,
    /// The program headers, then the ELF header's and the program header
    /// table's pseudo-segments.
    pub(super) segs: Vec<Seg>,
    pub(super) symbols: Vec<Symbol<'d>>,
    /// Final symbol order (indices into `symbols`).
    pub(super) order: Vec<usize>,
    pub(super) indices_changed: bool,
    /// The string tables stay as read ([`Edit::keep_strings`](super::super::model::Edit::keep_strings)).
    pub(super) keep_strings: bool,
}

impl Model<'_> {
    /// The encoder of the file's ELF structures (class, byte order, and
    /// the machine for MIPS64 little-endian relocations).
    pub(super) fn encoder(&self) -> Encoder<Endianness> {
        Encoder::new(self.endian, self.is_64, elf::Machine(self.e_machine))
    }

    /// The word size in bytes: 8 for ELF64, 4 for ELF32.
    pub(super) fn word(&self) -> u64 {
        self.encoder().address_size()
    }

    /// The size of the ELF header.
    pub(super) fn ehsize(&self) -> u64 {
        self.encoder().file_header_size()
    }

    /// The size of one section header.
    pub(super) fn shentsize(&self) -> u64 {
        self.encoder().section_header_size()
    }
}

/// What a section written holds.
pub(super) enum Body {
    /// Bytes of span source `.0` from `.1`, `.2` long.
    Span(usize, usize, usize),
    /// Bytes built here.
    Bytes(Vec<u8>),
    /// Nothing (`SHT_NOBITS`, or a former one).
    None,
}

/// A live section as it is written: its header's values that the rewrite
/// may change, and its contents.
pub(super) struct Out {
    /// The section (model index).
    pub(super) sec: usize,
    pub(super) size: u64,
    pub(super) align: u64,
    pub(super) entsize: u64,
    pub(super) link: u32,
    pub(super) info: u32,
    pub(super) body: Body,
}

//! The writer of a [`Relocatable`]: the plan (names, symbol indices,
//! section indices), the file offsets, then the ELF header, contents,
//! symbols, relocations, strings and section headers in llc's order.

use object::Endianness;
use object::elf;
use object::write::elf::{Encoder, FileHeader, FileHeaderLayout, Rel, SectionHeader, Sym};

use super::{Contents, Place, Relocatable, Symbol, align_up, write_error};
use crate::error::{Error, Result};
use crate::layout::{Builder, Layout};
use crate::llvm::string_table::StringTable;
use crate::num::len64;

impl Relocatable {
    /// The file, as pieces.
    pub(crate) fn write(&self) -> Result<Layout> {
        let enc = Encoder::new(self.endian, true, self.machine);
        let plan = self.plan(&enc)?;
        let mut out = Builder::default();
        enc.file_header(
            &mut out.pending,
            &FileHeader {
                os_abi: self.os_abi,
                abi_version: 0,
                e_type: elf::ET_REL,
                e_machine: self.machine,
                e_entry: 0,
                e_flags: elf::FileFlags(self.e_flags),
            },
            &FileHeaderLayout {
                e_phoff: 0,
                segment_num: 0,
                e_shoff: plan.shoff,
                section_num: plan.section_num,
                shstrtab_index: 1,
            },
        )
        .map_err(write_error)?;
        self.write_contents(&plan, &mut out);
        self.write_symbols(&plan, &enc, &mut out)?;
        self.write_relocations(&plan, &enc, &mut out);
        out.pad_to(plan.strtab_at);
        out.bytes(plan.strings.bytes());
        out.pad_to(plan.shoff);
        self.write_section_headers(&plan, &enc, &mut out.pending)?;
        Ok(out.finish())
    }

    /// Where everything goes: symbol and section indices, names, file
    /// offsets.
    fn plan(&self, enc: &Encoder<Endianness>) -> Result<Plan> {
        // Symbol table order: the local symbols, then the others, each in
        // the order they were added; `table[id]` is a symbol's index.
        let is_local = |s: &Symbol| s.st_info.st_bind() == elf::STB_LOCAL;
        let order: Vec<usize> = (0..self.symbols.len())
            .filter(|&i| is_local(&self.symbols[i]))
            .chain((0..self.symbols.len()).filter(|&i| !is_local(&self.symbols[i])))
            .collect();
        let first_global = self.symbols.iter().filter(|s| is_local(s)).count();
        let mut table = vec![0u32; self.symbols.len()];
        for (at, &id) in order.iter().enumerate() {
            table[id] = u32::try_from(at + 1).map_err(write_error)?;
        }

        // Names, and section header indices: null, .strtab, each section
        // followed by its relocations, .symtab.
        let rela_names: Vec<Option<Vec<u8>>> = self
            .sections
            .iter()
            .map(|s| (!s.relocs.is_empty()).then(|| [&b".rela"[..], &s.name].concat()))
            .collect();
        let strings = StringTable::build(
            self.sections
                .iter()
                .map(|s| &s.name[..])
                .chain(rela_names.iter().flatten().map(|n| &n[..]))
                .chain([&b".strtab"[..], b".symtab"])
                .chain(self.symbols.iter().map(|s| &s.name[..])),
        );
        let mut index = Vec::with_capacity(self.sections.len());
        let mut next = 2u32;
        for r in &rela_names {
            index.push(next);
            next += if r.is_some() { 2 } else { 1 };
        }
        let symtab_index = next;
        let section_num = next + 1;
        if section_num >= u32::from(elf::SHN_LORESERVE) {
            return Err(write_error("too many sections"));
        }
        let mut plan = Plan {
            order,
            table,
            first_global: u32::try_from(first_global + 1).map_err(write_error)?,
            rela_names,
            strings,
            index,
            symtab_index,
            section_num,
            offsets: Vec::new(),
            symtab_at: 0,
            symtab_len: 0,
            rela_at: Vec::new(),
            strtab_at: 0,
            shoff: 0,
        };
        self.place(enc, &mut plan)?;
        Ok(plan)
    }

    /// The file offsets of `plan`: the sections' contents in order, then
    /// `.symtab`, the `.rela` sections, `.strtab` and the section headers.
    fn place(&self, enc: &Encoder<Endianness>, plan: &mut Plan) -> Result<()> {
        let too_large = || Error::too_large("the wrapper object");
        let add = |a: u64, b: u64| a.checked_add(b).ok_or_else(too_large);
        let mut at = enc.file_header_size();
        for s in &self.sections {
            at = align_up(at, s.file_align)?;
            plan.offsets.push(at);
            at = add(at, s.file_size())?;
        }
        plan.symtab_at = align_up(at, 8)?;
        plan.symtab_len = enc.sym_size() * (len64(&self.symbols) + 1);
        at = add(plan.symtab_at, plan.symtab_len)?;
        for s in &self.sections {
            if s.relocs.is_empty() {
                plan.rela_at.push(0);
                continue;
            }
            at = align_up(at, 8)?;
            plan.rela_at.push(at);
            at = add(at, enc.rel_size(true) * len64(&s.relocs))?;
        }
        plan.strtab_at = at;
        plan.shoff = align_up(add(at, len64(plan.strings.bytes()))?, 8)?;
        Ok(())
    }

    /// Each section's contents at its offset; images as pieces.
    fn write_contents(&self, plan: &Plan, out: &mut Builder) {
        for (s, &off) in self.sections.iter().zip(&plan.offsets) {
            out.pad_to(off);
            match &s.contents {
                Contents::Bytes(b) => out.bytes(b),
                Contents::Images(placed) => {
                    // In file order, which need not be the images' order.
                    let mut order: Vec<usize> = (0..placed.len()).collect();
                    order.sort_by_key(|&i| placed[i].0);
                    for i in order {
                        let (o, len) = placed[i];
                        out.pad_to(off + o);
                        out.image(i, len);
                    }
                    out.pad_to(off + s.size());
                }
                Contents::NoBits(_) => {}
            }
        }
    }

    /// `.symtab`.
    fn write_symbols(
        &self,
        plan: &Plan,
        enc: &Encoder<Endianness>,
        out: &mut Builder,
    ) -> Result<()> {
        out.pad_to(plan.symtab_at);
        enc.null_symbol(&mut out.pending);
        for s in plan.order.iter().map(|&i| &self.symbols[i]) {
            let (section, st_shndx) = match s.place {
                Place::Undefined => (None, elf::SHN_UNDEF),
                Place::Absolute => (None, elf::SHN_ABS),
                Place::Section(id) => (Some(plan.index[id.0]), elf::SHN_UNDEF),
            };
            enc.symbol(
                &mut out.pending,
                &Sym {
                    section,
                    st_name: plan.name(&s.name)?,
                    st_info: s.st_info,
                    st_other: s.st_other,
                    st_shndx,
                    st_value: s.value,
                    st_size: s.size,
                },
            );
        }
        Ok(())
    }

    /// The `.rela` sections.
    fn write_relocations(&self, plan: &Plan, enc: &Encoder<Endianness>, out: &mut Builder) {
        for (s, &off) in self.sections.iter().zip(&plan.rela_at) {
            if s.relocs.is_empty() {
                continue;
            }
            out.pad_to(off);
            for r in &s.relocs {
                enc.relocation(
                    &mut out.pending,
                    true,
                    &Rel {
                        r_offset: r.offset,
                        r_sym: plan.table[r.symbol.0],
                        r_type: r.r_type,
                        r_addend: r.addend,
                    },
                );
            }
        }
    }

    /// The section header table.
    fn write_section_headers(
        &self,
        plan: &Plan,
        enc: &Encoder<Endianness>,
        p: &mut Vec<u8>,
    ) -> Result<()> {
        enc.null_section_header(
            p,
            &FileHeaderLayout {
                section_num: plan.section_num,
                shstrtab_index: 1,
                ..FileHeaderLayout::default()
            },
        );
        enc.section_header(
            p,
            &SectionHeader {
                sh_name: plan.name(b".strtab")?,
                sh_offset: plan.strtab_at,
                sh_size: len64(plan.strings.bytes()),
                ..enc.strtab_section_header()
            },
        );
        for (i, s) in self.sections.iter().enumerate() {
            enc.section_header(
                p,
                &SectionHeader {
                    sh_name: plan.name(&s.name)?,
                    sh_type: s.sh_type,
                    sh_flags: s.sh_flags,
                    sh_addr: 0,
                    sh_offset: plan.offsets[i],
                    sh_size: s.size(),
                    sh_link: 0,
                    sh_info: 0,
                    sh_addralign: s.align,
                    sh_entsize: s.entsize,
                },
            );
            if let Some(rela) = &plan.rela_names[i] {
                enc.section_header(
                    p,
                    &SectionHeader {
                        sh_name: plan.name(rela)?,
                        sh_offset: plan.rela_at[i],
                        sh_size: enc.rel_size(true) * len64(&s.relocs),
                        sh_link: plan.symtab_index,
                        sh_info: plan.index[i],
                        ..enc.relocation_section_header(true)
                    },
                );
            }
        }
        enc.section_header(
            p,
            &SectionHeader {
                sh_name: plan.name(b".symtab")?,
                sh_offset: plan.symtab_at,
                sh_size: plan.symtab_len,
                ..enc.symtab_section_header(1, plan.first_global)
            },
        );
        Ok(())
    }
}

/// Where [`Relocatable::write`] puts everything.
struct Plan {
    /// Symbols in table order (ids).
    order: Vec<usize>,
    /// Each symbol's index in the table, by id.
    table: Vec<u32>,
    /// Index of the first global symbol (`sh_info` of `.symtab`).
    first_global: u32,
    /// Name of each section's `.rela` section, if it has relocations.
    rela_names: Vec<Option<Vec<u8>>>,
    /// The one string table.
    strings: StringTable,
    /// Each section's header index.
    index: Vec<u32>,
    /// `.symtab`'s header index.
    symtab_index: u32,
    /// Number of section headers.
    section_num: u32,
    /// File offset of each section's contents.
    offsets: Vec<u64>,
    /// File offset and size of `.symtab`.
    symtab_at: u64,
    symtab_len: u64,
    /// File offset of each section's `.rela` section (0 without one).
    rela_at: Vec<u64>,
    /// File offset of `.strtab`.
    strtab_at: u64,
    /// File offset of the section header table.
    shoff: u64,
}

impl Plan {
    /// Offset of `s` in the string table.
    fn name(&self, s: &[u8]) -> Result<u32> {
        let off = self
            .strings
            .offset(s)
            .ok_or_else(|| write_error("a name is missing from the string table"))?;
        u32::try_from(off).map_err(write_error)
    }
}

//! Writing the edited model: each live section's contents and header
//! values ([`Out`]: tables rebuilt, relocations and groups renumbered,
//! other contents byte ranges of the inputs), then the file put together
//! on a [`Canvas`] in llvm-objcopy's order, with the ELF header, program
//! headers and section headers encoded for the file's class and byte
//! order.

use std::collections::BTreeMap;

use object::{Endianness, U16, U32, U64, elf, pod};

use super::crel::{self, Crel};
use super::layout::{Numbering, Placement};
use super::model::{Def, Kind, Model, Sec, Seg, Symbol};
use super::read::reloc_with_symbol;
use super::{Edit, GRP_COMDAT, Part, STB_LOCAL, Span, Written, bug, invalid, narrow, to_u32};
use crate::error::Result;
use crate::layout::Piece;
use crate::llvm::string_table::StringTable;
use crate::num::usize_from;

/// Image pieces smaller than this are copied into the layout.
const SPAN_MIN: usize = 4096;

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

impl Model<'_> {
    /// Lays the file out and writes it: span source 0 is `data`, source
    /// `k + 1` is `edit.add[k]`, then come `edit.extra`'s.
    pub(super) fn write(&self, data: &[u8], edit: &Edit<'_>) -> Result<Written> {
        let add = edit.add;
        let num = self.numbering()?;
        let tables = self.string_tables(&num.live);
        let outs = num
            .live
            .iter()
            .map(|&i| self.output(data, &num, &tables, i))
            .collect::<Result<Vec<Out>>>()?;
        let place = self.place(&outs)?;

        // The file, written in llvm-objcopy's order (later writes win):
        // segment contents, zeros over removed sections inside segments,
        // the ELF header, the program headers, the other sections, the
        // section headers.
        let mut c = Canvas::default();
        self.put_segments(&mut c, &place);
        self.put_file_headers(&mut c, &num, &place)?;
        for (o, &at) in outs.iter().zip(&place.placed) {
            if self.secs[o.sec].parent.is_some() {
                continue;
            }
            if let Some(k) = self.secs[o.sec].update {
                put_parts(&mut c, at, edit.update[k].parts, add.len());
                continue;
            }
            match &o.body {
                Body::None => {}
                Body::Bytes(b) => c.put(at, Chunk::Bytes(b.clone())),
                Body::Span(source, off, len) => c.put(at, Chunk::Span(*source, *off, *len)),
            }
        }
        if self.names.is_some() {
            let headers = self.section_headers(&outs, &num, &place, &tables)?;
            c.put(place.shoff, Chunk::Bytes(headers));
        }
        let sources = |source: usize| -> Result<&[u8]> {
            if source == 0 {
                return Ok(data);
            }
            let k = source - 1;
            add.get(k)
                .map(|s| s.data)
                .or_else(|| edit.extra.get(k - add.len()).copied())
                .ok_or_else(|| bug("added section without data"))
        };
        c.finish(place.total, sources)
    }

    /// The string tables that stay, rebuilt: the section-name table from
    /// the live sections' names, the symbol table's from the symbols' (both
    /// when they are one table); a table nothing uses holds one zero byte.
    fn string_tables(&self, live: &[usize]) -> BTreeMap<usize, StringTable> {
        let mut strings: BTreeMap<usize, Vec<&[u8]>> = BTreeMap::new();
        for &i in live {
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
        strings
            .into_iter()
            .map(|(i, list)| (i, StringTable::build(list)))
            .collect()
    }

    /// Section `i` as written: links renumbered as its kind asks, tables,
    /// relocations and groups rebuilt, other contents a span of the input.
    fn output(
        &self,
        data: &[u8],
        num: &Numbering,
        tables: &BTreeMap<usize, StringTable>,
        i: usize,
    ) -> Result<Out> {
        let s = &self.secs[i];
        let renumber = |l: Option<usize>| l.map_or(0, |l| num.index[l]);
        // A link to the symbol table is kept only while no symbol moved.
        let restore = self.symtab.is_some() && !self.indices_changed;
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
                Body::Span(0, usize_from(s.orig_offset), usize_from(s.size))
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
                        sym: num.sym_index.get(e.sym as usize).copied().unwrap_or(0),
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
                o.align = self.word();
                o.link = renumber(s.link_sec);
                let strtab = s.link_sec.and_then(|l| tables.get(&l));
                let (bytes, locals) = self.symbol_table(num, strtab, o.size)?;
                o.info = locals;
                o.body = Body::Bytes(bytes);
            }
            Kind::Rel => {
                o.align = self.word();
                o.link = if s.link != 0 {
                    renumber(self.symtab)
                } else {
                    0
                };
                if s.target.is_some() {
                    o.info = renumber(s.target);
                }
                if self.indices_changed {
                    o.body = Body::Bytes(self.relocations(data, s, num));
                }
            }
            Kind::Group => {
                let (_, _, sym) = s.group.clone().unwrap_or_default();
                o.link = if s.link != 0 {
                    renumber(self.symtab)
                } else {
                    0
                };
                o.info = sym.map_or(0, |k| num.sym_index[k]);
                let bytes = self.group(s, num);
                o.size = bytes.len() as u64;
                o.body = Body::Bytes(bytes);
            }
            Kind::Shndx => {
                o.size = self.order.len() as u64 * 4;
                o.link = renumber(self.symtab);
                o.body = Body::Bytes(self.extended_indices(num, o.size));
            }
            Kind::Added(k) => o.body = Body::Span(k, 0, usize_from(s.size)),
        }
        Ok(o)
    }

    /// The symbol table's contents (`size` bytes) with names in `strtab`,
    /// and its `sh_info`: one past the last local symbol.
    fn symbol_table(
        &self,
        num: &Numbering,
        strtab: Option<&StringTable>,
        size: u64,
    ) -> Result<(Vec<u8>, u32)> {
        let mut bytes = Vec::with_capacity(usize_from(size));
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
                Def::Section(d) => u16::try_from(num.index[d])
                    .ok()
                    .filter(|&x| x < elf::SHN_LORESERVE)
                    .unwrap_or(elf::SHN_XINDEX.0),
            };
            self.put_sym(&mut bytes, st_name, sym, st_shndx)?;
        }
        Ok((bytes, to_u32(last_local + 1)?))
    }

    /// Relocation section `s`'s entries with their new symbol indices.
    fn relocations(&self, data: &[u8], s: &Sec<'_>, num: &Numbering) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(usize_from(s.size));
        for &(at, sym, _) in &s.relocs {
            let new = num.sym_index.get(sym as usize).copied().unwrap_or(0);
            bytes.extend(reloc_with_symbol(
                data,
                at,
                usize_from(s.entsize),
                self.is_64,
                self.endian,
                self.mips64el,
                new,
            ));
        }
        bytes
    }

    /// Group section `s`'s contents: its flag word (without `GRP_COMDAT`
    /// when the signature is local) and its members' new indices.
    fn group(&self, s: &Sec<'_>, num: &Numbering) -> Vec<u8> {
        let (flag, members, sym) = s.group.clone().unwrap_or_default();
        let mut flag = flag;
        let local = sym.is_some_and(|k| self.symbols[k].info >> 4 == STB_LOCAL);
        if flag & GRP_COMDAT != 0 && local {
            flag &= !GRP_COMDAT;
        }
        let mut bytes = Vec::new();
        for w in std::iter::once(flag).chain(members.iter().map(|&m| num.index[m])) {
            bytes.extend_from_slice(pod::bytes_of(&U32::new(self.endian, w)));
        }
        bytes
    }

    /// The extended index table's contents (`size` bytes): per symbol, its
    /// section's index when that is `SHN_LORESERVE` or more, else 0.
    fn extended_indices(&self, num: &Numbering, size: u64) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(usize_from(size));
        for &k in &self.order {
            let x = match self.symbols[k].def {
                Def::Section(d) if num.index[d] >= u32::from(elf::SHN_LORESERVE) => num.index[d],
                _ => 0,
            };
            bytes.extend_from_slice(pod::bytes_of(&U32::new(self.endian, x)));
        }
        bytes
    }

    /// The segments' contents at their new offsets, then zeros over the
    /// removed sections inside them.
    fn put_segments(&self, c: &mut Canvas, place: &Placement) {
        for seg in &place.segs[..place.real()] {
            c.put(
                place.seg_at[seg.index],
                Chunk::Span(0, usize_from(seg.orig_offset), usize_from(seg.filesz)),
            );
        }
        for s in &self.secs {
            if let (true, Some(p)) = (s.removed, s.parent)
                && s.sh_type != elf::SHT_NOBITS
                && s.size != 0
            {
                c.put(place.in_segment(p, s.orig_offset), Chunk::Zeros(s.size));
            }
        }
    }

    /// The ELF header and the program headers. Without a section-name
    /// table (or without sections) the header names no section header
    /// table.
    fn put_file_headers(&self, c: &mut Canvas, num: &Numbering, place: &Placement) -> Result<()> {
        let real = place.real();
        let shnum = num.live.len() as u64 + 1;
        let with_table = self.names.is_some() && !num.live.is_empty();
        let phoff = if real == 0 { 0 } else { place.seg_at[real + 1] };
        c.put(
            0,
            Chunk::Bytes(self.ehdr(&EhdrFields {
                phoff,
                phnum: real,
                shoff: if with_table { place.shoff } else { 0 },
                shnum: if with_table { shnum } else { 0 },
                shstrndx: if with_table {
                    self.names.map_or(0, |n| num.index[n])
                } else {
                    0
                },
                shentsize: if with_table { self.shentsize() } else { 0 },
            })),
        );
        for (i, seg) in place.segs[..real].iter().enumerate() {
            let at = place.seg_at[real + 1]
                .checked_add(i as u64 * self.phentsize())
                .ok_or_else(|| invalid("program headers past the end"))?;
            c.put(at, Chunk::Bytes(self.phdr(seg, place.seg_at[i])?));
        }
        Ok(())
    }

    /// The section header table: section 0, holding the count and the name
    /// table's index when they do not fit the ELF header, then one header
    /// per section written.
    fn section_headers(
        &self,
        outs: &[Out],
        num: &Numbering,
        place: &Placement,
        tables: &BTreeMap<usize, StringTable>,
    ) -> Result<Vec<u8>> {
        let reserve = u64::from(elf::SHN_LORESERVE);
        let shnum = num.live.len() as u64 + 1;
        let names_index = self.names.map_or(0, |n| num.index[n]);
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
        for (o, &offset) in outs.iter().zip(&place.placed) {
            let s = &self.secs[o.sec];
            bytes.extend(self.shdr(&ShdrFields {
                name: self.name_offset(tables, o.sec)?,
                sh_type: s.sh_type,
                flags: s.flags,
                addr: s.addr,
                offset,
                size: o.size,
                link: o.link,
                info: o.info,
                align: o.align,
                entsize: o.entsize,
            })?);
        }
        Ok(bytes)
    }

    /// Where section `i`'s name is in the section-name table (0 without
    /// one).
    fn name_offset(&self, tables: &BTreeMap<usize, StringTable>, i: usize) -> Result<u32> {
        let Some(n) = self.names else { return Ok(0) };
        let off = tables[&n]
            .offset(&self.secs[i].name)
            .ok_or_else(|| bug("section name not in its table"))?;
        u32::try_from(off).map_err(|_| invalid("string table larger than 4 GiB"))
    }

    /// Appends `sym` to `out` as a symbol table entry with name offset
    /// `name` and section index `shndx`.
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

    /// The ELF header: the input's identity with the layout's values `f`.
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

    /// A section header with the values `f`.
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

/// An update's parts, one after the other from `at`; their span source
/// `j + 1` (an extra source) is the rewrite's `added + 1 + j`.
fn put_parts(c: &mut Canvas, mut at: u64, parts: &[Part], added: usize) {
    for p in parts {
        let chunk = match p {
            Part::Span {
                source: 0,
                offset,
                len,
            } => Chunk::Span(0, *offset, *len),
            Part::Span {
                source,
                offset,
                len,
            } => Chunk::Span(added + source, *offset, *len),
            Part::Bytes(b) => Chunk::Bytes(b.clone()),
            Part::Zeros(n) => Chunk::Zeros(*n),
        };
        let n = chunk.len();
        c.put(at, chunk);
        at += n;
    }
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

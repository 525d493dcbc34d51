//! Writing the edited model: each live section's contents and header
//! values ([`Out`]: tables rebuilt, relocations and groups renumbered,
//! other contents byte ranges of the inputs), then the file put together
//! on a [`Canvas`] in llvm-objcopy's order.
//!
//! The ELF structures (the ELF header, program and section headers,
//! symbols, relocations) are encoded by `object`'s ELF [`Encoder`], the
//! one the wrapper object is written with too, for the file's class, byte
//! order and machine; where it cannot write what llvm-objcopy writes, a
//! small step here says why ([`put_version`], [`put_relocation`]). The
//! 32-bit encodings truncate, so values for them are checked first
//! ([`Model::fits`]).

use std::collections::BTreeMap;

use object::write::WritableBufferExt as _;
use object::write::elf::{
    Encoder, FileHeader, FileHeaderLayout, ProgramHeader, Rel, SectionHeader, Sym,
};
use object::{Endianness, U32, elf, pod};

use super::checked::{bug, invalid, narrow, to_u32};
use super::crel::{self, Crel};
use super::layout::{Numbering, Placement};
use super::model::{Body, Def, Kind, Model, Out, Sec};
use super::model::{GRP_COMDAT, STB_LOCAL};
use super::{Edit, Part, Written};
use crate::error::Result;
use crate::layout::Piece;
use crate::llvm::string_table::StringTable;
use crate::num::usize_from;

/// Image pieces smaller than this are copied into the layout.
const SPAN_MIN: usize = 4096;

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
            .map(|&i| self.output(&num, &tables, i))
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
    /// None when they are kept as read.
    fn string_tables(&self, live: &[usize]) -> BTreeMap<usize, StringTable> {
        let mut strings: BTreeMap<usize, Vec<&[u8]>> = BTreeMap::new();
        if self.keep_strings {
            return BTreeMap::new();
        }
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
        num: &Numbering,
        tables: &BTreeMap<usize, StringTable>,
        i: usize,
    ) -> Result<Out> {
        let s = &self.secs[i];
        let renumber = |l: Option<usize>| l.map_or(0, |l| num.index[l]);
        // A link to the symbol table is kept only while no symbol moved.
        let restore = self.symtab.is_some() && !self.indices_changed;
        let mut o = as_read(s, i);
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
                let bytes = self.crel(s, num);
                o.size = bytes.len() as u64;
                o.body = Body::Bytes(bytes);
            }
            // Kept as read: a span of the input, as `as_read` has it.
            Kind::StrTab if self.keep_strings => {}
            Kind::StrTab => {
                let t = tables
                    .get(&i)
                    .ok_or_else(|| bug("string table not built"))?;
                o.size = t.bytes().len() as u64;
                o.body = Body::Bytes(t.bytes().to_vec());
            }
            Kind::SymTab => {
                let sym_size = self.encoder().sym_size();
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
                    o.body = Body::Bytes(self.relocations(s, num));
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

    /// The CREL relocations of `s`, their symbols renumbered, encoded.
    fn crel(&self, s: &Sec<'_>, num: &Numbering) -> Vec<u8> {
        let entries: Vec<Crel> = s
            .crel
            .iter()
            .map(|e| Crel {
                sym: num.sym_index.get(e.sym as usize).copied().unwrap_or(0),
                ..*e
            })
            .collect();
        crel::encode(&entries, self.is_64)
    }

    /// The symbol table's contents (`size` bytes) with names in `strtab`,
    /// and its `sh_info`: one past the last local symbol.
    fn symbol_table(
        &self,
        num: &Numbering,
        strtab: Option<&StringTable>,
        size: u64,
    ) -> Result<(Vec<u8>, u32)> {
        let enc = self.encoder();
        let mut bytes = Vec::with_capacity(usize_from(size));
        let mut last_local = 0;
        for (new, &k) in self.order.iter().enumerate() {
            let sym = &self.symbols[k];
            if sym.info >> 4 == STB_LOCAL {
                last_local = new;
            }
            let st_name = match strtab {
                _ if self.keep_strings => u64::from(sym.name_at),
                Some(t) => t
                    .offset(sym.name)
                    .ok_or_else(|| bug("symbol name not in its table"))?,
                None => 0,
            };
            // The encoder puts indices of SHN_LORESERVE and more in the
            // extended table's care (SHN_XINDEX).
            let (section, st_shndx) = match sym.def {
                Def::Undef => (None, elf::SHN_UNDEF),
                Def::Reserved(x) => (None, elf::SymbolSection(x)),
                Def::Section(d) => (Some(num.index[d]), elf::SHN_UNDEF),
            };
            enc.symbol(
                &mut bytes,
                &Sym {
                    section,
                    st_name: u32::try_from(st_name)
                        .map_err(|_| invalid("string table larger than 4 GiB"))?,
                    st_info: elf::SymbolInfo(sym.info),
                    st_other: elf::SymbolOther(sym.other),
                    st_shndx,
                    st_value: self.fits(sym.value)?,
                    st_size: self.fits(sym.size)?,
                },
            );
        }
        Ok((bytes, to_u32(last_local + 1)?))
    }

    /// Relocation section `s`'s entries with their new symbol indices.
    fn relocations(&self, s: &Sec<'_>, num: &Numbering) -> Vec<u8> {
        let enc = self.encoder();
        let is_rela = s.sh_type == elf::SHT_RELA;
        let mut bytes = Vec::with_capacity(usize_from(s.size));
        for r in &s.relocs {
            let r = Rel {
                r_sym: num.sym_index.get(r.r_sym as usize).copied().unwrap_or(0),
                ..r.clone()
            };
            put_relocation(enc, &mut bytes, is_rela, &r);
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
            bytes.write_u32(self.endian, w);
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
            bytes.write_u32(self.endian, x);
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
        let enc = self.encoder();
        let real = place.real();
        let with_table = self.names.is_some() && !num.live.is_empty();
        let table_at = place.seg_at[real + 1];
        let layout = FileHeaderLayout {
            e_phoff: if real == 0 { 0 } else { self.fits(table_at)? },
            // No more than 65534 (read refuses more): no PN_XNUM.
            segment_num: to_u32(real)?,
            e_shoff: if with_table {
                self.fits(place.shoff)?
            } else {
                0
            },
            section_num: if with_table {
                to_u32(num.live.len() + 1)?
            } else {
                0
            },
            shstrtab_index: if with_table {
                self.names.map_or(0, |n| num.index[n])
            } else {
                0
            },
        };
        let header = FileHeader {
            os_abi: elf::OsAbi(self.os_abi),
            abi_version: self.abi_version,
            e_type: elf::FileType(self.e_type),
            e_machine: elf::Machine(self.e_machine),
            e_entry: self.fits(self.e_entry)?,
            e_flags: elf::FileFlags(self.e_flags),
        };
        let mut bytes = Vec::new();
        enc.file_header(&mut bytes, &header, &layout)
            .map_err(|e| bug(&e.to_string()))?;
        put_version(&mut bytes, self.endian, self.e_version);
        c.put(0, Chunk::Bytes(bytes));
        let mut bytes = Vec::new();
        for (seg, &offset) in place.segs[..real].iter().zip(&place.seg_at) {
            enc.program_header(
                &mut bytes,
                &ProgramHeader {
                    p_type: elf::ProgramType(seg.p_type),
                    p_flags: elf::ProgramFlags(seg.p_flags),
                    p_offset: self.fits(offset)?,
                    p_vaddr: self.fits(seg.vaddr)?,
                    p_paddr: self.fits(seg.paddr)?,
                    p_filesz: self.fits(seg.filesz)?,
                    p_memsz: self.fits(seg.memsz)?,
                    p_align: self.fits(seg.align)?,
                },
            );
        }
        if table_at.checked_add(bytes.len() as u64).is_none() {
            return Err(invalid("program headers past the end"));
        }
        c.put(table_at, Chunk::Bytes(bytes));
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
        let enc = self.encoder();
        let mut bytes = Vec::new();
        enc.null_section_header(
            &mut bytes,
            &FileHeaderLayout {
                section_num: to_u32(num.live.len() + 1)?,
                shstrtab_index: self.names.map_or(0, |n| num.index[n]),
                ..FileHeaderLayout::default()
            },
        );
        for (o, &offset) in outs.iter().zip(&place.placed) {
            let s = &self.secs[o.sec];
            if !self.is_64 && u32::try_from(s.flags).is_err() {
                return Err(invalid("section flags do not fit 32 bits"));
            }
            enc.section_header(
                &mut bytes,
                &SectionHeader {
                    sh_name: self.name_offset(tables, o.sec)?,
                    sh_type: s.sh_type,
                    sh_flags: elf::SectionFlags(s.flags),
                    sh_addr: self.fits(s.addr)?,
                    sh_offset: self.fits(offset)?,
                    sh_size: self.fits(o.size)?,
                    sh_link: o.link,
                    sh_info: o.info,
                    sh_addralign: self.fits(o.align)?,
                    sh_entsize: self.fits(o.entsize)?,
                },
            );
        }
        Ok(bytes)
    }

    /// Where section `i`'s name is in the section-name table (0 without
    /// one).
    fn name_offset(&self, tables: &BTreeMap<usize, StringTable>, i: usize) -> Result<u32> {
        let Some(n) = self.names else { return Ok(0) };
        if self.keep_strings {
            return Ok(self.secs[i].name_at);
        }
        let off = tables[&n]
            .offset(&self.secs[i].name)
            .ok_or_else(|| bug("section name not in its table"))?;
        u32::try_from(off).map_err(|_| invalid("string table larger than 4 GiB"))
    }

    /// `v`, for a field that is 32 bits wide in ELF32 files, where the
    /// encoder would truncate it: an error when it does not fit.
    fn fits(&self, v: u64) -> Result<u64> {
        if !self.is_64 {
            narrow(v)?;
        }
        Ok(v)
    }
}

/// Sets `e_version` in the ELF header `ehdr` to the input's `version`.
/// llvm-objcopy copies the field; the encoder always writes `EV_CURRENT`
/// (1), so any other value (which readers accept: only `EI_VERSION` is
/// checked) is put in afterwards, at its offset, the same in both classes.
fn put_version(ehdr: &mut [u8], endian: Endianness, version: u32) {
    const AT: usize = std::mem::offset_of!(elf::FileHeader64<Endianness>, e_version);
    const _: () = assert!(AT == std::mem::offset_of!(elf::FileHeader32<Endianness>, e_version));
    if version != u32::from(elf::EV_CURRENT.0) {
        ehdr[AT..AT + 4].copy_from_slice(pod::bytes_of(&U32::new(endian, version)));
    }
}

/// Appends relocation `r` to `out`, an `SHT_RELA` entry if `is_rela`.
///
/// On MIPS64 little-endian, llvm-objcopy writes the machine's own `r_info`
/// layout (symbol first, then the three type bytes reversed) for `SHT_REL`
/// entries too, where the encoder uses it for `SHT_RELA` entries only: such
/// an entry is encoded as an `SHT_RELA` one, whose first two fields are the
/// same, and the addend (zero, as read) dropped.
fn put_relocation(enc: Encoder<Endianness>, out: &mut Vec<u8>, is_rela: bool, r: &Rel) {
    if enc.is_mips64el() && !is_rela {
        let end = out.len() + usize_from(enc.rel_size(false));
        enc.relocation(out, true, r);
        out.truncate(end);
    } else {
        enc.relocation(out, is_rela, r);
    }
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

/// Section `i` (`s`) as it was read: its header fields, and its bytes
/// where the input holds them; [`Model::output`] changes what its kind
/// changes.
fn as_read(s: &Sec<'_>, i: usize) -> Out {
    Out {
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
    }
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
                    w.span(src, offset as u64, len as u64);
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

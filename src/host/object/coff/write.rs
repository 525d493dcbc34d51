//! Writing the [`Model`] as llvm-objcopy's COFF writer does: symbols
//! renumbered, headers, raw data and relocations laid out without padding,
//! then the symbol and string tables.

use super::model::{
    AUX_SIZE, Contents, MAX_SECTIONS_16, MIN_SPECIAL_16, Model, RELOCATION_SIZE, SCN_CNT_CODE,
    SCN_NRELOC_OVFL, SECTION_HEADER_SIZE, SYM_CLASS_STATIC, Sec, invalid, lossy,
};
use super::read::BIGOBJ_MAGIC;
use super::strtab::{StringTable, long_section_name};
use crate::bytes::le;
use crate::error::Result;
use crate::host::object::{Part, Span, Written};
use crate::layout::{Layout, Piece};

/// The control-flow-guard sections that are lists of symbol indices.
const SYMBOL_INDEX_SECTIONS: [&[u8]; 4] = [b".gljmp$y", b".giats$y", b".gfids$y", b".gehcont$y"];

/// Where one section's raw data and relocations go.
#[derive(Debug, Clone, Copy, Default)]
struct Place {
    raw: u32,
    relocs: u32,
    count: u16,
    flags: u32,
}

impl<'d> Model<'d> {
    /// The output file.
    pub(super) fn write(mut self) -> Result<Written> {
        // A special section number a 16-bit field cannot hold keeps the
        // 32-bit field of `/bigobj` (docs in `coff/mod.rs`).
        let big = self.sections.len() > MAX_SECTIONS_16
            || self.live().any(|s| s.section < MIN_SPECIAL_16);
        let sym_size = if big { 20 } else { 18 };
        let (new_index, raw_count) = self.number_symbols(sym_size)?;
        // Section id -> 1-based output index (0: removed).
        let count = to_u32(self.sections.len())?;
        let mut sec_index = vec![0u32; self.next_id];
        for (k, s) in self.sections.iter().enumerate() {
            sec_index[s.id] = to_u32(k + 1)?;
        }
        self.fix_symbols(&new_index, &sec_index)?;
        self.fix_symbol_indices(&new_index)?;
        let relocs = self.relocation_bytes(&new_index)?;
        let header_size = if big { 56 } else { 20 };
        let head_len = (header_size + SECTION_HEADER_SIZE * self.sections.len()) as u64;
        let (places, size) = self.place(head_len)?;
        let long = |n: &&[u8]| n.len() > 8;
        let section_names: Vec<&[u8]> = self
            .sections
            .iter()
            .map(|s| &*s.name)
            .filter(long)
            .collect();
        let symbol_names: Vec<&[u8]> = self.live().map(|s| s.name).filter(long).collect();
        let strings = StringTable::build(&section_names, &symbol_names);
        let symbol_table = offset(size)?;
        let total = size + raw_count * sym_size as u64 + strings.len();
        let string_size = u32::try_from(strings.len())
            .ok()
            .filter(|_| u32::try_from(total).is_ok())
            .ok_or_else(|| invalid(format!("the output ({total} bytes) is too large for COFF")))?;
        let symtab = self.symbol_table(&strings, &sec_index, sym_size, big)?;
        let raw_count = u32::try_from(raw_count)
            .map_err(|_| invalid(format!("{raw_count} symbol records do not fit COFF")))?;
        let mut head = self.file_header(big, count, symbol_table, raw_count);
        for (s, p) in self.sections.iter().zip(&places) {
            head.extend_from_slice(&section_header(s, p, &strings)?);
        }
        let mut out = Layout::default();
        out.push(Piece::Bytes(head), head_len);
        let spans = self.put_sections(&mut out, relocs)?;
        let n = symtab.len() as u64;
        out.push(Piece::Bytes(symtab), n);
        out.push(
            Piece::Bytes(strings.into_bytes(string_size)),
            u64::from(string_size),
        );
        if out.size != total {
            return Err(bug(&format!(
                "laid out {} bytes, expected {total}",
                out.size
            )));
        }
        Ok(Written {
            layout: out,
            spans,
            built: Vec::new(),
        })
    }

    /// Where each section's raw data and relocations go, the headers taking
    /// the first `head_len` bytes; and where the symbol table goes.
    fn place(&self, head_len: u64) -> Result<(Vec<Place>, u64)> {
        let mut size = head_len;
        let mut places = Vec::with_capacity(self.sections.len());
        for s in &self.sections {
            let n = s.relocs.len();
            let mut p = Place {
                flags: s.flags,
                ..Place::default()
            };
            if s.raw_size > 0 {
                p.raw = offset(size)?;
            }
            size += u64::from(s.raw_size);
            match u16::try_from(n) {
                Ok(c) if c < 0xffff => {
                    p.count = c;
                    p.relocs = if n > 0 { offset(size)? } else { 0 };
                }
                _ => {
                    p.flags |= SCN_NRELOC_OVFL;
                    p.count = 0xffff;
                    p.relocs = offset(size)?;
                    size += RELOCATION_SIZE as u64;
                }
            }
            size += (n * RELOCATION_SIZE) as u64;
            places.push(p);
        }
        Ok((places, size))
    }

    /// Appends each section's raw data and relocation records (`relocs`)
    /// to `out`; the spans its image pieces stand for.
    fn put_sections(self, out: &mut Layout, relocs: Vec<Vec<u8>>) -> Result<Vec<Span>> {
        let mut spans = Vec::new();
        for (s, r) in self.sections.into_iter().zip(relocs) {
            let len = s.contents.len() as u64;
            match s.contents {
                Contents::None | Contents::Span { len: 0, .. } => {}
                Contents::Span {
                    source,
                    offset,
                    len,
                } => push_span(out, &mut spans, source, offset, len),
                Contents::Owned(b) => out.push(Piece::Bytes(b), len),
                Contents::Parts(parts, _) => {
                    for p in parts {
                        match p {
                            Part::Span {
                                source,
                                offset,
                                len,
                            } => push_span(out, &mut spans, source, offset, len),
                            Part::Bytes(b) => {
                                let n = b.len() as u64;
                                out.push(Piece::Bytes(b), n);
                            }
                            Part::Zeros(n) => out.push(Piece::Zeros(n), n),
                        }
                    }
                }
            }
            // Raw data the input did not have: zeros, or int3 for code.
            let pad = u64::from(s.raw_size).saturating_sub(len);
            if s.flags & SCN_CNT_CODE != 0 && pad > 0 {
                let n = usize::try_from(pad).map_err(|_| bug("padding"))?;
                out.push(Piece::Bytes(vec![0xcc; n]), pad);
            } else {
                out.push(Piece::Zeros(pad), pad);
            }
            let n = r.len() as u64;
            out.push(Piece::Bytes(r), n);
        }
        Ok(spans)
    }

    /// The symbols still there.
    fn live(&self) -> impl Iterator<Item = &super::model::Sym<'d>> {
        self.symbols.iter().filter(|s| !s.removed)
    }

    /// Gives file records the auxiliary records their names need and
    /// numbers the symbols: the new raw index of each input symbol (by
    /// position), and the number of records.
    fn number_symbols(&mut self, sym_size: usize) -> Result<(Vec<Option<u32>>, u64)> {
        let mut index = vec![None; self.symbols.len()];
        let mut next = 0u64;
        for (k, s) in self.symbols.iter_mut().enumerate() {
            if s.removed {
                continue;
            }
            if let Some(f) = s.file.filter(|f| !f.is_empty()) {
                s.aux_count = u8::try_from(f.len().div_ceil(sym_size)).map_err(|_| {
                    invalid(format!("file name of symbol {} is too long", s.raw_index))
                })?;
            }
            index[k] = Some(
                u32::try_from(next)
                    .map_err(|_| invalid(format!("{next} symbol records do not fit COFF")))?,
            );
            next += 1 + u64::from(s.aux_count);
        }
        Ok((index, next))
    }

    /// Section numbers, section-definition numbers and weak-external tags
    /// of the symbols, renumbered.
    fn fix_symbols(&mut self, new_index: &[Option<u32>], sec_index: &[u32]) -> Result<()> {
        for s in self.symbols.iter_mut().filter(|s| !s.removed) {
            if let Some(id) = s.section_id() {
                let own = sec_index[id];
                if own == 0 {
                    return Err(invalid(format!(
                        "symbol '{}' points to a removed section",
                        lossy(s.name)
                    )));
                }
                if s.aux_count == 1
                    && s.class == SYM_CLASS_STATIC
                    && let Some(a) = s.aux.first_mut()
                {
                    let n = if s.associated == 0 {
                        own
                    } else {
                        match sec_index[s.associated] {
                            0 => {
                                return Err(invalid(format!(
                                    "symbol '{}' is associative to a removed section",
                                    lossy(s.name)
                                )));
                            }
                            n => n,
                        }
                    };
                    // The low half, then (after the selection byte) the high.
                    let b = n.to_le_bytes();
                    a[12..14].copy_from_slice(&b[..2]);
                    a[16..18].copy_from_slice(&b[2..]);
                }
            }
            if let Some(w) = s.weak
                && s.aux_count == 1
                && let Some(a) = s.aux.first_mut()
            {
                let t = new_index[w].ok_or_else(|| {
                    invalid(format!(
                        "symbol '{}' is missing its weak target",
                        lossy(s.name)
                    ))
                })?;
                a[..4].copy_from_slice(&t.to_le_bytes());
            }
        }
        Ok(())
    }

    /// The relocation records of each section, symbol indices renumbered.
    fn relocation_bytes(&self, new_index: &[Option<u32>]) -> Result<Vec<Vec<u8>>> {
        self.sections
            .iter()
            .map(|s| {
                let n = s.relocs.len();
                let mut out = Vec::with_capacity((n + 1) * RELOCATION_SIZE);
                if n >= 0xffff {
                    out.extend_from_slice(&to_u32(n + 1)?.to_le_bytes());
                    out.extend_from_slice(&[0; 6]);
                }
                for r in &s.relocs {
                    let t = new_index[r.symbol].ok_or_else(|| {
                        let sym = &self.symbols[r.symbol];
                        invalid(format!(
                            "relocation target '{}' ({}) not found",
                            lossy(sym.name),
                            r.symbol
                        ))
                    })?;
                    out.extend_from_slice(&r.offset.to_le_bytes());
                    out.extend_from_slice(&t.to_le_bytes());
                    out.extend_from_slice(&r.kind.to_le_bytes());
                }
                Ok(out)
            })
            .collect()
    }

    /// Renumbers the control-flow-guard tables (lists of symbol indices)
    /// and updates their sections' checksums.
    fn fix_symbol_indices(&mut self, new_index: &[Option<u32>]) -> Result<()> {
        let is_table = |n: &[u8]| SYMBOL_INDEX_SECTIONS.contains(&n);
        if !self.sections.iter().any(|s| is_table(&s.name)) {
            return Ok(());
        }
        // Old raw index -> new raw index.
        let renumber: std::collections::HashMap<u32, u32> = self
            .symbols
            .iter()
            .zip(new_index)
            .filter_map(|(s, n)| Some((u32::try_from(s.raw_index).ok()?, (*n)?)))
            .collect();
        for k in 0..self.sections.len() {
            let sec = &self.sections[k];
            if !is_table(&sec.name) || sec.contents.len() == 0 {
                continue;
            }
            let name = lossy(&sec.name);
            let Contents::Span {
                source: 0,
                offset,
                len,
            } = sec.contents
            else {
                continue;
            };
            let Some(def) = self.symbols.iter().rposition(|s| {
                !s.removed
                    && s.class == SYM_CLASS_STATIC
                    && s.aux_count == 1
                    && s.value == 0
                    && is_table(s.name)
                    && s.section_id() == Some(sec.id)
            }) else {
                return Err(invalid(format!(
                    "section '{name}' does not have the corresponding symbol or the symbol has \
                     unexpected format"
                )));
            };
            if len % 4 != 0 {
                return Err(invalid(format!(
                    "section '{name}' ({len} bytes) is not a list of 4-byte symbol indices"
                )));
            }
            let old = self.data.get(offset..offset + len).unwrap_or(&[]);
            let mut new = Vec::with_capacity(len);
            for id in old.chunks_exact(4) {
                let id = le::<u32>([id[0], id[1], id[2], id[3]]);
                let n = renumber.get(&id).ok_or_else(|| {
                    invalid(format!(
                        "section '{name}' contains a .symidx ({id}) that is incorrect or was \
                         stripped"
                    ))
                })?;
                new.extend_from_slice(&n.to_le_bytes());
            }
            let crc = jam_crc(&new);
            if let Some(a) = self.symbols[def].aux.first_mut() {
                a[8..12].copy_from_slice(&crc.to_le_bytes());
            }
            let sec = &mut self.sections[k];
            sec.raw_size = to_u32(new.len())?;
            sec.contents = Contents::Owned(new);
        }
        Ok(())
    }

    /// The file header (regular or `/bigobj`).
    fn file_header(&self, big: bool, count: u32, symbol_table: u32, symbols: u32) -> Vec<u8> {
        let mut h = Vec::with_capacity(56);
        if big {
            h.extend_from_slice(&[0, 0, 0xff, 0xff, 2, 0]);
            h.extend_from_slice(&self.machine.to_le_bytes());
            h.extend_from_slice(&self.timestamp.to_le_bytes());
            h.extend_from_slice(&BIGOBJ_MAGIC);
            h.extend_from_slice(&[0; 16]);
            h.extend_from_slice(&count.to_le_bytes());
        } else {
            h.extend_from_slice(&self.machine.to_le_bytes());
            // At most 65279 sections here.
            h.extend_from_slice(&count.to_le_bytes()[..2]);
            h.extend_from_slice(&self.timestamp.to_le_bytes());
        }
        h.extend_from_slice(&symbol_table.to_le_bytes());
        h.extend_from_slice(&symbols.to_le_bytes());
        if !big {
            h.extend_from_slice(&0u16.to_le_bytes());
            h.extend_from_slice(&self.characteristics.to_le_bytes());
        }
        h
    }

    /// The symbol table's bytes.
    fn symbol_table(
        &self,
        strings: &StringTable,
        sec_index: &[u32],
        size: usize,
        big: bool,
    ) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for s in self.live() {
            let mut rec = vec![0u8; size];
            if s.name.len() > 8 {
                let at = strings.offset(s.name).ok_or_else(|| bug("symbol name"))?;
                let at = u32::try_from(at).map_err(|_| bug("string table offset"))?;
                rec[4..8].copy_from_slice(&at.to_le_bytes());
            } else {
                // strncpy: up to the first null byte, zeros after.
                let n = s.name.iter().position(|&b| b == 0).unwrap_or(s.name.len());
                rec[..n].copy_from_slice(&s.name[..n]);
            }
            rec[8..12].copy_from_slice(&s.value.to_le_bytes());
            // Special section numbers are negative; both widths hold their
            // low bits.
            let number = match s.section_id() {
                Some(id) => i64::from(sec_index[id]),
                None => s.section,
            }
            .to_le_bytes();
            let o = if big {
                rec[12..16].copy_from_slice(&number[..4]);
                2
            } else {
                rec[12..14].copy_from_slice(&number[..2]);
                0
            };
            rec[14 + o..16 + o].copy_from_slice(&s.kind.to_le_bytes());
            rec[16 + o] = s.class;
            rec[17 + o] = s.aux_count;
            out.extend_from_slice(&rec);
            match s.file {
                Some(f) => {
                    let mut aux = vec![0u8; usize::from(s.aux_count) * size];
                    let n = f.len().min(aux.len());
                    aux[..n].copy_from_slice(&f[..n]);
                    out.extend_from_slice(&aux);
                }
                None => {
                    for a in &s.aux {
                        out.extend_from_slice(a);
                        out.resize(out.len() + size - AUX_SIZE, 0);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A section header.
fn section_header(s: &Sec<'_>, p: &Place, strings: &StringTable) -> Result<[u8; 40]> {
    let mut h = [0u8; SECTION_HEADER_SIZE];
    if s.name.len() > 8 {
        let at = strings.offset(&s.name).ok_or_else(|| bug("section name"))?;
        let field = long_section_name(at).ok_or_else(|| {
            invalid(format!(
                "COFF string table is greater than 64GB, unable to encode the name of section '{}'",
                lossy(&s.name)
            ))
        })?;
        h[..8].copy_from_slice(&field);
    } else {
        h[..s.name.len()].copy_from_slice(&s.name);
    }
    let fields = [
        s.virtual_size,
        s.virtual_address,
        s.raw_size,
        p.raw,
        p.relocs,
        s.line_numbers,
    ];
    for (k, v) in fields.iter().enumerate() {
        h[8 + 4 * k..12 + 4 * k].copy_from_slice(&v.to_le_bytes());
    }
    h[32..34].copy_from_slice(&p.count.to_le_bytes());
    h[34..36].copy_from_slice(&s.line_count.to_le_bytes());
    h[36..40].copy_from_slice(&p.flags.to_le_bytes());
    Ok(h)
}

/// `JamCRC` with initial value 0 (`crate::llvm::jam_crc`).
pub(super) fn jam_crc(data: &[u8]) -> u32 {
    crate::llvm::jam_crc::jam_crc(data)
}

/// A file offset, which COFF keeps in 32 bits.
fn offset(at: u64) -> Result<u32> {
    u32::try_from(at).map_err(|_| invalid(format!("offset {at:#x} is too large for COFF")))
}

/// A count or an index for a 32-bit field.
fn to_u32(x: usize) -> Result<u32> {
    u32::try_from(x).map_err(|_| invalid(format!("{x} does not fit a 32-bit field")))
}

/// An internal inconsistency.
fn bug(what: &str) -> crate::error::Error {
    crate::error::Error::write("COFF object file", format!("internal error: {what}"))
}

/// Appends to `out` a piece standing for `len` bytes of input `source` from
/// `offset`, and the span it stands for to `spans`.
fn push_span(out: &mut Layout, spans: &mut Vec<Span>, source: usize, offset: usize, len: usize) {
    out.push(Piece::Image(spans.len()), len as u64);
    spans.push(Span {
        source,
        offset,
        len,
    });
}

//! Reading a COFF object into the [`Model`], as llvm-objcopy's COFF reader
//! does on top of LLVM's `COFFObjectFile`, with every offset and size
//! checked against the file (where LLVM reads past its buffer, this is an
//! error).

use std::borrow::Cow;

use super::model::{
    AUX_SIZE, COMDAT_SELECT_ASSOCIATIVE, Contents, MAX_SECTIONS_16, Model, RELOCATION_SIZE, Reloc,
    SCN_NRELOC_OVFL, SECTION_HEADER_SIZE, SYM_CLASS_FILE, SYM_CLASS_STATIC,
    SYM_CLASS_WEAK_EXTERNAL, Sec, Sym, invalid, lossy,
};
use crate::bytes::{le, le_at};
use crate::error::{Error, Result};

/// The class ID that marks a `/bigobj` header.
pub(super) const BIGOBJ_MAGIC: [u8; 16] = object::pe::ANON_OBJECT_HEADER_BIGOBJ_CLASS_ID.0;

/// The little-endian `u16` at `at`.
pub(crate) fn u16_at(data: &[u8], at: usize) -> Option<u16> {
    le_at(data, at)
}

/// The little-endian `u32` at `at`.
pub(crate) fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    le_at(data, at)
}

/// Whether `data` starts with a `/bigobj` header, as LLVM's
/// `identify_magic` sees it: machine 0, section count 0xffff, version 2 or
/// more, and the `/bigobj` class ID.
pub(crate) fn is_bigobj(data: &[u8]) -> bool {
    data.starts_with(b"\0\0\xff\xff")
        && u16_at(data, 4).is_some_and(|v| v >= 2)
        && data.get(12..28) == Some(&BIGOBJ_MAGIC[..])
}

/// The section number of the symbol record `rec` (18 bytes, or 20 in a
/// `/bigobj`), signed as LLVM reads it: a regular object's 16-bit numbers
/// past [`MAX_SECTIONS_16`] are the special ones (-256 to -1).
pub(crate) fn section_number(rec: &[u8], big: bool) -> i64 {
    if big {
        i64::from(u32_at(rec, 12).unwrap_or(0) as i32)
    } else {
        let n = u16_at(rec, 12).unwrap_or(0);
        if usize::from(n) <= MAX_SECTIONS_16 {
            i64::from(n)
        } else {
            i64::from(n as i16)
        }
    }
}

/// The name the symbol record `rec` holds itself (up to 8 bytes, up to a
/// null byte); `None` when it is in the string table (the first four bytes
/// zero, the offset in the next four).
pub(crate) fn short_name(rec: &[u8]) -> Option<&[u8]> {
    if rec[..4] == [0; 4] {
        return None;
    }
    let n = if rec[7] == 0 {
        rec[..8].iter().position(|&b| b == 0).unwrap_or(8)
    } else {
        8
    };
    Some(&rec[..n])
}

/// `len` bytes of `data` from `at`, if they are all there.
fn bytes_at(data: &[u8], at: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(at).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    data.get(start..end)
}

/// What the file header says.
struct Header {
    /// `/bigobj` (32-bit section numbers, 20-byte symbols).
    big: bool,
    machine: u16,
    timestamp: u32,
    characteristics: u16,
    sections: u32,
    symbol_table: u32,
    symbols: u32,
    /// Where the section table starts.
    section_table: u64,
}

/// Reads the file header, as LLVM's `COFFObjectFile` does for an object.
fn header(data: &[u8]) -> Result<Header> {
    let short = || {
        invalid(format!(
            "{} bytes are too few for a COFF header",
            data.len()
        ))
    };
    if data.starts_with(b"MZ") {
        return Err(Error::unsupported(
            "bundling into or extracting from PE images is not supported by offload-kit \
             (only ELF and COFF object files)",
        ));
    }
    let machine = u16_at(data, 0).ok_or_else(short)?;
    let count = u16_at(data, 2).ok_or_else(short)?;
    if machine == 0 && count == 0xffff {
        if is_bigobj(data) && data.len() >= 56 {
            let at = |o| u32_at(data, o).ok_or_else(short);
            return Ok(Header {
                big: true,
                machine: u16_at(data, 6).ok_or_else(short)?,
                timestamp: at(8)?,
                characteristics: 0,
                sections: at(44)?,
                symbol_table: at(48)?,
                symbols: at(52)?,
                section_table: 56,
            });
        }
        return Err(Error::unsupported(
            "short import libraries hold no sections to bundle into",
        ));
    }
    let at = |o| u32_at(data, o).ok_or_else(short);
    Ok(Header {
        big: false,
        machine,
        timestamp: at(4)?,
        characteristics: u16_at(data, 18).ok_or_else(short)?,
        sections: u32::from(count),
        symbol_table: at(8)?,
        symbols: at(12)?,
        section_table: 20 + u64::from(u16_at(data, 16).ok_or_else(short)?),
    })
}

/// The string table: its bytes, the size field included (empty when the
/// file has none or it is empty).
struct Strings<'d>(&'d [u8]);

impl<'d> Strings<'d> {
    /// The string at `offset`, up to its null byte.
    fn get(&self, offset: u32, what: impl Fn() -> String) -> Result<&'d [u8]> {
        let t = self.0;
        if t.len() <= 4 {
            return Err(invalid(format!(
                "{} is in the string table, which is empty",
                what()
            )));
        }
        let at = offset as usize;
        let tail = t.get(at..).filter(|r| !r.is_empty()).ok_or_else(|| {
            invalid(format!(
                "{} is at string table offset {offset}, past its end ({} bytes)",
                what(),
                t.len()
            ))
        })?;
        // The table ends in a null byte (checked when it was read).
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        Ok(&tail[..end])
    }
}

/// Reads the symbol and string tables' place: the string table's bytes.
fn strings<'d>(data: &'d [u8], h: &Header) -> Result<Strings<'d>> {
    let size = if h.big { 20 } else { 18 };
    if h.symbol_table == 0 {
        if h.symbols != 0 {
            return Err(invalid("symbol table missing"));
        }
        return Ok(Strings(&[]));
    }
    let symbols = u64::from(h.symbols) * size;
    let start = u64::from(h.symbol_table) + symbols;
    let table = bytes_at(data, u64::from(h.symbol_table), symbols)
        .and_then(|_| u32_at(data, usize::try_from(start).ok()?))
        .and_then(|len| bytes_at(data, start, u64::from(len)));
    match table {
        // LLVM recovers from a symbol table it cannot read by having none.
        None if h.symbols == 0 => Ok(Strings(&[])),
        None => Err(invalid(format!(
            "the symbol table ({} symbols at offset {:#x}) or the string table after it lies \
             outside the file ({} bytes)",
            h.symbols,
            h.symbol_table,
            data.len()
        ))),
        Some(t) if t.len() > 4 && t.last() != Some(&0) => {
            Err(invalid("string table missing null terminator"))
        }
        Some(t) => Ok(Strings(t)),
    }
}

/// A section's name: inline, or `/decimal` and `//base64` offsets into the
/// string table.
fn section_name<'d>(raw: &'d [u8], strings: &Strings<'d>, index: usize) -> Result<&'d [u8]> {
    let name = raw.split(|&b| b == 0).next().unwrap_or(raw);
    let Some(rest) = name.strip_prefix(b"/") else {
        return Ok(name);
    };
    let bad = || {
        invalid(format!(
            "section {index} has an invalid name '{}'",
            lossy(name)
        ))
    };
    let offset = if let Some(b64) = rest.strip_prefix(b"/") {
        if b64.len() > 6 {
            return Err(bad());
        }
        let mut v = 0u64;
        for &c in b64 {
            let d = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'+' => 62,
                b'/' => 63,
                _ => return Err(bad()),
            };
            v = v * 64 + u64::from(d);
        }
        u32::try_from(v).map_err(|_| bad())?
    } else {
        std::str::from_utf8(rest)
            .ok()
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<u32>().ok())
            .ok_or_else(bad)?
    };
    strings.get(offset, || format!("the name of section {index}"))
}

/// Reads the COFF object `data` into the model llvm-objcopy edits.
pub(super) fn read(data: &[u8]) -> Result<Model<'_>> {
    let h = header(data)?;
    let count = h.sections as usize;
    let table = bytes_at(
        data,
        h.section_table,
        u64::from(h.sections) * SECTION_HEADER_SIZE as u64,
    )
    .ok_or_else(|| {
        invalid(format!(
            "the section table ({count} sections at offset {:#x}) runs past the end of the file \
             ({} bytes)",
            h.section_table,
            data.len()
        ))
    })?;
    let strings = strings(data, &h)?;
    let mut raw_relocs = Vec::with_capacity(count);
    let mut sections = Vec::with_capacity(count);
    for (i, hdr) in table.chunks_exact(SECTION_HEADER_SIZE).enumerate() {
        let (sec, relocs) = section(data, hdr, i + 1, &strings)?;
        sections.push(sec);
        raw_relocs.push(relocs);
    }
    let symbols = symbols(data, &h, &strings, count)?;
    // Raw symbol-table index -> symbol (None: an auxiliary record).
    let mut raw = Vec::with_capacity(h.symbols as usize);
    for (k, s) in symbols.iter().enumerate() {
        raw.push(Some(k));
        raw.extend(std::iter::repeat_n(None, usize::from(s.aux_count)));
    }
    let target = |index: usize, what: &str| -> Result<usize> {
        match raw.get(index) {
            None => Err(invalid(format!("{what} {index} is out of range"))),
            Some(None) => Err(invalid(format!(
                "{what} {index} is an auxiliary record, not a symbol"
            ))),
            Some(Some(k)) => Ok(*k),
        }
    };
    let mut symbols = symbols;
    for s in &mut symbols {
        if let Some(w) = s.weak {
            s.weak = Some(target(w, "weak external reference")?);
        }
    }
    for (sec, relocs) in sections.iter_mut().zip(raw_relocs) {
        sec.relocs = relocs
            .chunks_exact(RELOCATION_SIZE)
            .map(|r| {
                let sym = u32_at(r, 4).unwrap_or(0) as usize;
                Ok(Reloc {
                    offset: u32_at(r, 0).unwrap_or(0),
                    symbol: target(sym, "relocation symbol index")?,
                    kind: u16_at(r, 8).unwrap_or(0),
                })
            })
            .collect::<Result<_>>()?;
    }
    Ok(Model {
        machine: h.machine,
        timestamp: h.timestamp,
        characteristics: h.characteristics,
        next_id: count + 1,
        data,
        sections,
        symbols,
    })
}

/// Section `index` (from 1) of the file, from its header `hdr`, and the
/// bytes of its relocations.
fn section<'d>(
    data: &'d [u8],
    hdr: &'d [u8],
    index: usize,
    strings: &Strings<'d>,
) -> Result<(Sec<'d>, &'d [u8])> {
    let f = |o| u32_at(hdr, o).unwrap_or(0);
    let name = section_name(&hdr[..8], strings, index)?;
    let (raw_size, pointer, flags) = (f(16), f(20), f(36));
    let outside = |what: &str, at: u64, len: u64| {
        invalid(format!(
            "the {what} of section '{}' ({len} bytes at offset {at:#x}) lie outside the file \
             ({} bytes)",
            lossy(name),
            data.len()
        ))
    };
    let contents = if pointer == 0 {
        Contents::None
    } else {
        bytes_at(data, pointer.into(), raw_size.into())
            .ok_or_else(|| outside("contents", pointer.into(), raw_size.into()))?;
        Contents::Span {
            source: 0,
            offset: pointer as usize,
            len: raw_size as usize,
        }
    };
    // More than 65534 relocations: the count is in the first record.
    let (mut at, count16) = (u64::from(f(24)), u16_at(hdr, 32).unwrap_or(0));
    let count = if flags & SCN_NRELOC_OVFL != 0 && count16 == 0xffff {
        let first = bytes_at(data, at, RELOCATION_SIZE as u64).and_then(|r| u32_at(r, 0));
        at += RELOCATION_SIZE as u64;
        first.map_or(0, |n| u64::from(n.wrapping_sub(1)))
    } else {
        u64::from(count16)
    };
    let relocs = if count == 0 {
        &data[..0]
    } else {
        let len = count * RELOCATION_SIZE as u64;
        bytes_at(data, at, len).ok_or_else(|| outside("relocations", at, len))?
    };
    let sec = Sec {
        id: index,
        name: Cow::Borrowed(name),
        virtual_size: f(8),
        virtual_address: f(12),
        raw_size,
        line_numbers: f(28),
        line_count: u16_at(hdr, 34).unwrap_or(0),
        flags: flags & !SCN_NRELOC_OVFL,
        contents,
        relocs: Vec::new(),
    };
    Ok((sec, relocs))
}

/// The symbols, with their section ids (`sections` of them in the input);
/// weak externals' targets are still raw indices.
fn symbols<'d>(
    data: &'d [u8],
    h: &Header,
    strings: &Strings<'d>,
    sections: usize,
) -> Result<Vec<Sym<'d>>> {
    let size = if h.big { 20 } else { 18 };
    let total = h.symbols as usize;
    // Checked by `strings`.
    let table = bytes_at(
        data,
        h.symbol_table.into(),
        u64::from(h.symbols) * size as u64,
    )
    .unwrap_or(&[]);
    let mut out = Vec::new();
    let mut i = 0usize;
    while i < total {
        let rec = table
            .get(i * size..(i + 1) * size)
            .ok_or_else(|| invalid(format!("symbol {i} lies outside the symbol table")))?;
        let s = |o| if h.big { o + 2 } else { o };
        let (class, aux_count) = (rec[s(16)], rec[s(17)]);
        let end = i + 1 + usize::from(aux_count);
        let aux_bytes = table.get((i + 1) * size..end * size).ok_or_else(|| {
            invalid(format!(
                "the {aux_count} auxiliary records of symbol {i} run past the symbol table \
                 ({total} records)"
            ))
        })?;
        let name = match short_name(rec) {
            Some(name) => name,
            None => {
                let offset = u32_at(rec, 4).unwrap_or(0);
                strings.get(offset, || format!("the name of symbol {i}"))?
            }
        };
        let section = section_number(rec, h.big);
        if section > sections as i64 {
            return Err(invalid(format!(
                "symbol '{}' is in section {section}, past the {sections} sections",
                lossy(name)
            )));
        }
        let (mut file, mut aux) = (None, Vec::new());
        if class == SYM_CLASS_FILE {
            let n = aux_bytes.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
            file = Some(&aux_bytes[..n]);
        } else {
            for a in aux_bytes.chunks_exact(size) {
                let mut p = [0u8; AUX_SIZE];
                p.copy_from_slice(&a[..AUX_SIZE]);
                aux.push(p);
            }
        }
        let (mut associated, mut weak) = (0, None);
        if let Some(a) = aux.first() {
            if class == SYM_CLASS_STATIC && a[14] == COMDAT_SELECT_ASSOCIATIVE {
                let low = u32::from(le::<u16>([a[12], a[13]]));
                let high = if h.big {
                    u32::from(le::<u16>([a[16], a[17]])) << 16
                } else {
                    0
                };
                let n = (low | high) as i32;
                if n <= 0 || n as usize > sections {
                    return Err(invalid(format!(
                        "symbol '{}' is associative to section {n}, which does not exist",
                        lossy(name)
                    )));
                }
                associated = n as usize;
            } else if class == SYM_CLASS_WEAK_EXTERNAL {
                weak = Some(le::<u32>([a[0], a[1], a[2], a[3]]) as usize);
            }
        }
        out.push(Sym {
            name,
            value: u32_at(rec, 8).unwrap_or(0),
            kind: u16_at(rec, s(14)).unwrap_or(0),
            class,
            aux_count,
            aux,
            file,
            section,
            associated,
            weak,
            raw_index: i,
            removed: false,
        });
        i = end;
    }
    Ok(out)
}

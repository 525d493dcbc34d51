//! LLVM's compact relocation format (`SHT_CREL`), as `decodeCrel` in
//! `llvm/Object/ELF.h` reads it and `encodeCrel` in `llvm/MC/MCELFExtras.h`
//! writes it: a ULEB128 header (count × 8, an addend flag, the offset
//! shift), then per entry a byte of offset delta and flags (symbol, type,
//! addend deltas present), more offset bits in ULEB128 when its top bit is
//! set, and the present deltas in SLEB128. Arithmetic wraps at the word
//! size.

#![allow(
    clippy::cast_possible_truncation,
    reason = "the format's deltas wrap at 32 bits (symbol, type) or the word size, as LLVM's do"
)]

/// One decoded relocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Crel {
    pub offset: u64,
    pub sym: u32,
    pub ty: u32,
    pub addend: u64,
}

const HDR_ADDEND: u64 = 4;

/// Why compact relocations cannot be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CrelError {
    /// The data ends inside an entry.
    EndsEarly,
    /// A LEB128 value has bits past 64.
    LebTooLarge,
    /// The header counts more entries than there are bytes.
    Count {
        /// The entries the header counts.
        count: u64,
        /// The bytes of the section.
        len: usize,
    },
}

impl std::fmt::Display for CrelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CrelError::EndsEarly => f.write_str("compact relocations end early"),
            CrelError::LebTooLarge => f.write_str("LEB128 value too large"),
            CrelError::Count { count, len } => {
                write!(f, "{count} compact relocations in {len} bytes")
            }
        }
    }
}

fn mask(is_64: bool) -> u64 {
    if is_64 { u64::MAX } else { u64::from(u32::MAX) }
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, CrelError> {
        let b = *self.data.get(self.at).ok_or(CrelError::EndsEarly)?;
        self.at += 1;
        Ok(b)
    }

    /// ULEB128 and SLEB128 as LLVM's `DataExtractor` reads them (bits
    /// past 64 are an error).
    fn leb(&mut self, signed: bool) -> Result<u64, CrelError> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let b = self.byte()?;
            let low = u64::from(b & 0x7f);
            if shift >= 64 || (shift > 0 && (low << shift) >> shift != low) {
                return Err(CrelError::LebTooLarge);
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
pub(super) fn decode(data: &[u8], is_64: bool) -> Result<Vec<Crel>, CrelError> {
    let m = mask(is_64);
    let mut r = Reader { data, at: 0 };
    let hdr = r.leb(false)?;
    let count = hdr / 8;
    let flag_bits = if hdr & HDR_ADDEND != 0 { 3 } else { 2 };
    let shift = hdr % HDR_ADDEND;
    if count > data.len() as u64 {
        return Err(CrelError::Count {
            count,
            len: data.len(),
        });
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

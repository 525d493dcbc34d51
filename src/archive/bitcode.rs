//! The symbols of an LLVM bitcode archive member, read from its `irsymtab`.
//!
//! The archive writer ([`super::layout_gnu`]) must list every member's
//! symbols in the archive symbol table exactly as LLVM does, and device
//! libraries are archives of bitcode as often as of ELF (`llvm-ar` of
//! `-emit-llvm` outputs, `clang-offload-bundler -type=a` of bitcode
//! bundles). LLVM's archive writer loads bitcode as an `IRObjectFile` and
//! lists the module's global values; this module gets the same list without
//! an IR reader. Clang (any LLVM since 5) also stores that list,
//! in the same order and with the same flags, as the `irsymtab` in a
//! top-level `SYMTAB_BLOCK` whose strings live in the `STRTAB_BLOCK` that
//! follows (`llvm/include/llvm/Object/IRSymtab.h`,
//! `llvm/lib/Bitcode/Reader/BitcodeReader.cpp`). This reads the bitstream
//! just far enough to find those two blobs, and reads the symbols (their
//! flags and names) out of them. Anything it cannot read is an error, so
//! that the writer refuses the member instead of writing a symbol table that
//! differs from LLVM's.

use crate::bytes::Bytes;
use crate::num::len64;

/// `bitc::MODULE_BLOCK_ID`.
const MODULE_BLOCK: u64 = 8;
/// `bitc::STRTAB_BLOCK_ID`.
const STRTAB_BLOCK: u64 = 23;
/// `bitc::SYMTAB_BLOCK_ID`.
const SYMTAB_BLOCK: u64 = 25;
/// `bitc::STRTAB_BLOB` and `bitc::SYMTAB_BLOB`.
const BLOB_RECORD: u64 = 1;

/// `storage::Header::kCurrentVersion`.
const IRSYMTAB_VERSION: u32 = 3;
/// `sizeof(storage::Header)`: a version word and nine (offset, size) pairs.
const HEADER_SIZE: usize = 76;
/// `sizeof(storage::Symbol)`: name, IR name, comdat index, flags.
const SYMBOL_SIZE: u64 = 24;
// `storage::Symbol::FlagBits`.
const FB_UNDEFINED: u32 = 1 << 3;
const FB_COMMON: u32 = 1 << 5;
const FB_GLOBAL: u32 = 1 << 10;
const FB_FORMAT_SPECIFIC: u32 = 1 << 11;

type Res<T> = Result<T, &'static str>;

/// The names LLVM lists for this bitcode file (raw or wrapped).
pub(super) fn symbols(data: &[u8]) -> Res<Vec<&[u8]>> {
    let bc = unwrap(data)?;
    let (symtab, strtab, modules) = find_tables(bc)?;
    if modules == 0 {
        return Err("no module");
    }
    if symtab.len() < HEADER_SIZE || strtab.is_empty() {
        return Err("no irsymtab");
    }
    if word(symtab, 0)? != IRSYMTAB_VERSION {
        return Err("unsupported irsymtab version");
    }
    if u64::from(word(symtab, 16)?) != modules {
        // A concatenation of bitcode files (`llvm-cat -b`): LLVM rebuilds.
        return Err("irsymtab does not cover every module");
    }
    let at = word(symtab, 28)?;
    let count = word(symtab, 32)?;
    let table = Bytes::new(symtab)
        .read_at(u64::from(at), u64::from(count) * SYMBOL_SIZE)
        .ok_or("irsymtab symbols out of bounds")?;
    let strtab = Bytes::new(strtab);
    let mut out = Vec::new();
    let mut syms = Bytes::new(table);
    while let Some(sym) = syms.read_bytes(SYMBOL_SIZE) {
        let flags = word(sym, 20)?;
        let listed = flags & FB_GLOBAL != 0
            && flags & FB_FORMAT_SPECIFIC == 0
            && (flags & FB_UNDEFINED == 0 || flags & FB_COMMON != 0);
        if listed {
            let (off, len) = (word(sym, 0)?, word(sym, 4)?);
            let name = strtab
                .read_at(u64::from(off), u64::from(len))
                .ok_or("irsymtab name out of bounds")?;
            out.push(name);
        }
    }
    Ok(out)
}

/// The little-endian 32-bit word at `at` in `d`.
fn word(d: &[u8], at: u64) -> Res<u32> {
    Bytes::new(d).u32_le_at(at).ok_or("truncated irsymtab")
}

/// The bitstream inside an optional wrapper header (magic, version,
/// offset, size, CPU type; little-endian words).
fn unwrap(data: &[u8]) -> Res<&[u8]> {
    let bc = if data.starts_with(b"\xde\xc0\x17\x0b") {
        if data.len() < 20 {
            return Err("truncated wrapper header");
        }
        let (off, size) = (word(data, 8)?, word(data, 12)?);
        Bytes::new(data)
            .read_at(u64::from(off), u64::from(size))
            .ok_or("wrapper header points outside the file")?
    } else {
        data
    };
    if bc.len() % 4 != 0 {
        return Err("size is not a multiple of 4 bytes");
    }
    if !bc.starts_with(b"BC\xc0\xde") {
        return Err("invalid bitcode signature");
    }
    Ok(bc)
}

/// Walks the top level like `getBitcodeFileContents`: the first
/// non-empty symbol table, the first string table after it, and the
/// number of modules.
fn find_tables(bc: &[u8]) -> Res<(&[u8], &[u8], u64)> {
    let mut bits = Bits { data: bc, bit: 32 };
    let mut abbrevs: Vec<Vec<Op>> = Vec::new();
    let (mut symtab, mut strtab, mut modules): (&[u8], &[u8], u64) = (&[], &[], 0);
    loop {
        // LLVM stops when at most 8 bytes remain (tolerating padding).
        let byte = usize::try_from(bits.bit / 8).map_err(|_| "offset overflow")?;
        if byte.saturating_add(8) >= bc.len() {
            break;
        }
        match bits.read(2)? {
            0 => return Err("malformed block"),
            1 => match bits.vbr(8)? {
                SYMTAB_BLOCK => {
                    let blob = block_blob(&mut bits)?;
                    if symtab.is_empty() {
                        symtab = blob;
                    }
                }
                STRTAB_BLOCK => {
                    let blob = block_blob(&mut bits)?;
                    if !symtab.is_empty() && strtab.is_empty() {
                        strtab = blob;
                    }
                }
                id => {
                    if id == MODULE_BLOCK {
                        modules += 1;
                    }
                    skip_block(&mut bits)?;
                }
            },
            2 => abbrevs.push(read_abbrev(&mut bits)?),
            3 => {
                unabbreviated(&mut bits)?;
            }
            id => {
                let ops = abbrev(&abbrevs, id)?;
                abbreviated(&mut bits, ops)?;
            }
        }
    }
    Ok((symtab, strtab, modules))
}

/// An abbreviation operand (`BitCodeAbbrevOp`).
#[derive(Debug, Clone, Copy)]
enum Op {
    Literal(u64),
    Fixed(u32),
    Vbr(u32),
    Array,
    Char6,
    Blob,
}

fn abbrev(abbrevs: &[Vec<Op>], id: u64) -> Res<&[Op]> {
    id.checked_sub(4)
        .and_then(|i| usize::try_from(i).ok())
        .and_then(|i| abbrevs.get(i))
        .map(Vec::as_slice)
        .ok_or("undefined abbreviation")
}

/// Reads the blob of the last `BLOB_RECORD` in the block just entered
/// (its ID already read), like `readBlobInRecord`.
fn block_blob<'a>(bits: &mut Bits<'a>) -> Res<&'a [u8]> {
    let width = bits.vbr(4)?;
    if width == 0 || width > 32 {
        return Err("invalid abbreviation width");
    }
    let width = u32::try_from(width).map_err(|_| "invalid abbreviation width")?;
    bits.align32()?;
    bits.read(32)?;
    let mut abbrevs: Vec<Vec<Op>> = Vec::new();
    let mut blob: &[u8] = &[];
    loop {
        match bits.read(width)? {
            0 => {
                bits.align32()?;
                return Ok(blob);
            }
            1 => {
                bits.vbr(8)?;
                skip_block(bits)?;
            }
            2 => abbrevs.push(read_abbrev(bits)?),
            3 => {
                if unabbreviated(bits)? == BLOB_RECORD {
                    blob = &[];
                }
            }
            id => {
                let ops = abbrev(&abbrevs, id)?;
                let (code, b) = abbreviated(bits, ops)?;
                if code == BLOB_RECORD {
                    blob = b.unwrap_or(&[]);
                }
            }
        }
    }
}

/// Skips the block just entered (its ID already read).
fn skip_block(bits: &mut Bits<'_>) -> Res<()> {
    bits.vbr(4)?;
    bits.align32()?;
    let words = bits.read(32)?;
    let to = words
        .checked_mul(32)
        .and_then(|n| n.checked_add(bits.bit))
        .filter(|&to| to <= bits.len())
        .ok_or("block extends past the end")?;
    bits.bit = to;
    Ok(())
}

/// Reads a `DEFINE_ABBREV` body.
fn read_abbrev(bits: &mut Bits<'_>) -> Res<Vec<Op>> {
    let n = bits.vbr(5)?;
    let mut ops = Vec::new();
    for _ in 0..n {
        if bits.read(1)? == 1 {
            ops.push(Op::Literal(bits.vbr(8)?));
            continue;
        }
        let op = match bits.read(3)? {
            e @ (1 | 2) => {
                let w = bits.vbr(5)?;
                match (e, u32::try_from(w)) {
                    // Zero-width fields read as literal zero, as in LLVM.
                    (_, Ok(0)) => Op::Literal(0),
                    (1, Ok(w @ 1..=64)) => Op::Fixed(w),
                    (2, Ok(w @ 2..=64)) => Op::Vbr(w),
                    _ => return Err("invalid abbreviation operand width"),
                }
            }
            3 => Op::Array,
            4 => Op::Char6,
            5 => Op::Blob,
            _ => return Err("invalid abbreviation encoding"),
        };
        ops.push(op);
    }
    if ops.is_empty() {
        return Err("abbreviation with no operands");
    }
    Ok(ops)
}

/// Skips an `UNABBREV_RECORD`, returning its code.
fn unabbreviated(bits: &mut Bits<'_>) -> Res<u64> {
    let code = bits.vbr(6)?;
    let n = bits.vbr(6)?;
    for _ in 0..n {
        bits.vbr(6)?;
    }
    Ok(code)
}

/// Reads a record in abbreviation `ops`: its code and blob, if any.
fn abbreviated<'a>(bits: &mut Bits<'a>, ops: &[Op]) -> Res<(u64, Option<&'a [u8]>)> {
    let (first, rest) = ops.split_first().ok_or("abbreviation with no operands")?;
    let code = match *first {
        Op::Array | Op::Blob => return Err("abbreviation starts with an array or a blob"),
        op => scalar(bits, op)?,
    };
    let mut blob = None;
    let mut i = 0;
    while let Some(&op) = rest.get(i) {
        match op {
            Op::Array => {
                let n = bits.vbr(6)?;
                if i + 2 != rest.len() {
                    return Err("array operand is not second to last");
                }
                let elt = rest[i + 1];
                if matches!(elt, Op::Literal(_) | Op::Array | Op::Blob) {
                    return Err("invalid array element encoding");
                }
                for _ in 0..n {
                    scalar(bits, elt)?;
                }
                i += 1;
            }
            Op::Blob => {
                let n = bits.vbr(6)?;
                bits.align32()?;
                let start = bits.bit / 8;
                let end = start.checked_add(n).ok_or("blob too long")?;
                let padded = end.checked_next_multiple_of(4).ok_or("blob too long")?;
                if padded > bits.len() / 8 {
                    return Err("blob extends past the end");
                }
                let range = usize::try_from(start).ok().zip(usize::try_from(end).ok());
                blob = range.and_then(|(s, e)| bits.data.get(s..e));
                bits.bit = padded * 8;
            }
            op => {
                scalar(bits, op)?;
            }
        }
        i += 1;
    }
    Ok((code, blob))
}

fn scalar(bits: &mut Bits<'_>, op: Op) -> Res<u64> {
    match op {
        Op::Literal(v) => Ok(v),
        Op::Fixed(w) => bits.read(w),
        Op::Vbr(w) => bits.vbr(w),
        Op::Char6 => bits.read(6),
        Op::Array | Op::Blob => Err("invalid scalar operand"),
    }
}

/// A bit cursor: bits are taken from each byte starting at the least
/// significant one.
struct Bits<'a> {
    data: &'a [u8],
    bit: u64,
}

impl Bits<'_> {
    fn len(&self) -> u64 {
        len64(self.data).saturating_mul(8)
    }

    fn read(&mut self, n: u32) -> Res<u64> {
        let end = self
            .bit
            .checked_add(u64::from(n))
            .filter(|&e| e <= self.len());
        let end = end.ok_or("unexpected end of bitcode")?;
        let mut v = 0u64;
        for (i, b) in (self.bit..end).enumerate() {
            let byte = usize::try_from(b / 8).ok().and_then(|at| self.data.get(at));
            let byte = byte.ok_or("unexpected end of bitcode")?;
            v |= u64::from((byte >> (b % 8)) & 1) << i;
        }
        self.bit = end;
        Ok(v)
    }

    fn vbr(&mut self, n: u32) -> Res<u64> {
        debug_assert!((2..=64).contains(&n));
        let hi = 1u64 << (n - 1);
        let mut v = 0u64;
        let mut shift = 0u32;
        loop {
            let piece = self.read(n)?;
            if shift >= 64 {
                return Err("unterminated VBR");
            }
            v |= (piece & (hi - 1)) << shift;
            if piece & hi == 0 {
                return Ok(v);
            }
            shift += n - 1;
        }
    }

    fn align32(&mut self) -> Res<()> {
        let to = self
            .bit
            .checked_next_multiple_of(32)
            .filter(|&to| to <= self.len());
        self.bit = to.ok_or("unexpected end of bitcode")?;
        Ok(())
    }
}

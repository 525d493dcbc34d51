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

use crate::bitcode::stream::{Bits, Cursor, Entry, Res, Value};
use crate::bitcode::unwrap;
use crate::bytes::Bytes;

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

/// Walks the top level like `getBitcodeFileContents`: the first
/// non-empty symbol table, the first string table after it, and the
/// number of modules.
fn find_tables(bc: &[u8]) -> Res<(&[u8], &[u8], u64)> {
    let mut bits = Bits::new(bc);
    bits.seek(32)?;
    let mut cur = Cursor::new(bits);
    let (mut symtab, mut strtab, mut modules): (&[u8], &[u8], u64) = (&[], &[], 0);
    loop {
        // LLVM stops when at most 8 bytes remain (tolerating padding).
        let byte = usize::try_from(cur.bits.pos() / 8).map_err(|_| "offset overflow")?;
        if byte.saturating_add(8) >= bc.len() {
            break;
        }
        match cur.next()? {
            Entry::End => return Err("malformed block"),
            Entry::Block(SYMTAB_BLOCK) => {
                let blob = block_blob(&mut cur, SYMTAB_BLOCK)?;
                if symtab.is_empty() {
                    symtab = blob;
                }
            }
            Entry::Block(STRTAB_BLOCK) => {
                let blob = block_blob(&mut cur, STRTAB_BLOCK)?;
                if !symtab.is_empty() && strtab.is_empty() {
                    strtab = blob;
                }
            }
            Entry::Block(id) => {
                if id == MODULE_BLOCK {
                    modules += 1;
                }
                cur.skip()?;
            }
            Entry::Record(id) => cur.record(id)?.skip_rest()?,
        }
    }
    Ok((symtab, strtab, modules))
}

/// Reads the blob of the last `BLOB_RECORD` in the block just announced
/// (its ID already read), like `readBlobInRecord`.
fn block_blob<'a>(cur: &mut Cursor<'a>, id: u64) -> Res<&'a [u8]> {
    cur.enter(id)?;
    let mut blob: &[u8] = &[];
    loop {
        match cur.next()? {
            Entry::End => return Ok(blob),
            Entry::Block(_) => cur.skip()?,
            Entry::Record(id) => {
                let mut r = cur.record(id)?;
                let code = r.code();
                let mut found = None;
                while let Some(v) = r.next()? {
                    if let Value::Blob(b) = v {
                        found = Some(b);
                    }
                }
                if code == BLOB_RECORD {
                    blob = found.unwrap_or(&[]);
                }
            }
        }
    }
}

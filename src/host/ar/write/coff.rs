//! The symbols LLVM's archive writer lists for a COFF object member
//! (regular or `/bigobj`): those its `COFFObjectFile` calls global and
//! defined, and not format-specific, in symbol-table order. The raw
//! structures are read as the COFF editor reads them
//! ([`crate::host::object::coff`]); this module keeps LLVM's archive
//! writer's leniency (a symbol table it cannot read is none).

use object::pe::{
    IMAGE_SYM_CLASS_EXTERNAL, IMAGE_SYM_CLASS_FILE, IMAGE_SYM_CLASS_STATIC,
    IMAGE_SYM_CLASS_WEAK_EXTERNAL, IMAGE_WEAK_EXTERN_SEARCH_ALIAS,
};

use super::symbols::SymbolsError;
use crate::host::object::coff::{is_bigobj, section_number, short_name, u16_at, u32_at};

/// `IMAGE_SYM_CLASS_EXTERNAL`.
const CLASS_EXTERNAL: u8 = IMAGE_SYM_CLASS_EXTERNAL.0;
/// `IMAGE_SYM_CLASS_STATIC`.
const CLASS_STATIC: u8 = IMAGE_SYM_CLASS_STATIC.0;
/// `IMAGE_SYM_CLASS_FILE`.
const CLASS_FILE: u8 = IMAGE_SYM_CLASS_FILE.0;
/// `IMAGE_SYM_CLASS_WEAK_EXTERNAL`.
const CLASS_WEAK_EXTERNAL: u8 = IMAGE_SYM_CLASS_WEAK_EXTERNAL.0;
/// `IMAGE_WEAK_EXTERN_SEARCH_ALIAS`: a weak external that is defined.
const WEAK_SEARCH_ALIAS: u32 = IMAGE_WEAK_EXTERN_SEARCH_ALIAS.0;

/// The archive symbols of the COFF object `d`. A symbol table LLVM cannot
/// read counts as none, as in LLVM; a name it cannot read is an error.
pub(super) fn symbols(d: &[u8]) -> Result<Vec<&[u8]>, SymbolsError> {
    let big = is_bigobj(d) && d.len() >= 56;
    let (table, count) = if big {
        (u32_at(d, 48), u32_at(d, 52))
    } else {
        (u32_at(d, 8), u32_at(d, 12))
    };
    // What LLVM's `COFFObjectFile` checks before it reads symbols: the
    // header and the section table within the file, and a symbol table
    // where there are symbols.
    let sections = if big {
        u32_at(d, 44).map(|n| (56u64, u64::from(n)))
    } else {
        u16_at(d, 16)
            .zip(u16_at(d, 2))
            .map(|(opt, n)| (20 + u64::from(opt), u64::from(n)))
    };
    let (Some(table), Some(count), Some((at, n))) = (table, count, sections) else {
        return Err(SymbolsError::CoffHeader);
    };
    if d.len() < 20 || at + 40 * n > d.len() as u64 {
        return Err(SymbolsError::CoffSections);
    }
    if table == 0 {
        if count != 0 {
            return Err(SymbolsError::CoffSymtabMissing);
        }
        return Ok(Vec::new());
    }
    let size: usize = if big { 20 } else { 18 };
    let start = table as usize;
    let Some(strings_at) = (count as usize)
        .checked_mul(size)
        .and_then(|n| n.checked_add(start))
    else {
        return Ok(Vec::new());
    };
    let strings =
        u32_at(d, strings_at).and_then(|n| d.get(strings_at..strings_at.checked_add(n as usize)?));
    let (Some(records), Some(strings)) = (d.get(start..strings_at), strings) else {
        return Ok(Vec::new());
    };
    if strings.len() > 4 && strings.last() != Some(&0) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(rec) = records.get(i * size..(i + 1) * size) {
        let o = if big { 2 } else { 0 };
        let (class, aux) = (rec[16 + o], rec[17 + o]);
        let number = section_number(rec, big);
        let value = u32_at(rec, 8).unwrap_or(0);
        let section_definition =
            aux > 0 && (class == CLASS_STATIC || (class == CLASS_EXTERNAL && number == -1));
        let global = class == CLASS_EXTERNAL || class == CLASS_WEAK_EXTERNAL;
        let weak_undefined = class == CLASS_WEAK_EXTERNAL
            && aux > 0
            && records
                .get((i + 1) * size..(i + 2) * size)
                .and_then(|a| u32_at(a, 4))
                .is_some_and(|c| c != WEAK_SEARCH_ALIAS);
        let undefined = weak_undefined || (class == CLASS_EXTERNAL && number == 0 && value == 0);
        if global && !undefined && class != CLASS_FILE && !section_definition {
            out.push(name(rec, strings, i)?);
        }
        i += 1 + usize::from(aux);
    }
    Ok(out)
}

/// A symbol's name: inline, or in the string table.
fn name<'d>(rec: &'d [u8], strings: &'d [u8], i: usize) -> Result<&'d [u8], SymbolsError> {
    if let Some(name) = short_name(rec) {
        return Ok(name);
    }
    let offset = u32_at(rec, 4).unwrap_or(0) as usize;
    if strings.len() <= 4 {
        return Err(SymbolsError::CoffNameNoStrings(i));
    }
    let tail = strings
        .get(offset..)
        .filter(|t| !t.is_empty())
        .ok_or(SymbolsError::CoffNamePast(i))?;
    Ok(&tail[..tail.iter().position(|&b| b == 0).unwrap_or(tail.len())])
}

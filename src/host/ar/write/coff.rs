//! The symbols LLVM's archive writer lists for a COFF object member
//! (regular or `/bigobj`): those its `COFFObjectFile` calls global and
//! defined, and not format-specific, in symbol-table order.

/// `IMAGE_SYM_CLASS_EXTERNAL`.
const CLASS_EXTERNAL: u8 = 2;
/// `IMAGE_SYM_CLASS_STATIC`.
const CLASS_STATIC: u8 = 3;
/// `IMAGE_SYM_CLASS_FILE`.
const CLASS_FILE: u8 = 103;
/// `IMAGE_SYM_CLASS_WEAK_EXTERNAL`.
const CLASS_WEAK_EXTERNAL: u8 = 105;
/// `IMAGE_WEAK_EXTERN_SEARCH_ALIAS`: a weak external that is defined.
const WEAK_SEARCH_ALIAS: u32 = 3;

/// The class ID that marks a `/bigobj` header.
const BIGOBJ_MAGIC: [u8; 16] = object::pe::ANON_OBJECT_HEADER_BIGOBJ_CLASS_ID.0;

fn u16_at(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        d.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        d.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// Whether `d` starts with a `/bigobj` header, as LLVM's `identify_magic`
/// sees it.
pub(super) fn is_bigobj(d: &[u8]) -> bool {
    d.starts_with(b"\0\0\xff\xff")
        && u16_at(d, 4).is_some_and(|v| v >= 2)
        && d.get(12..28) == Some(&BIGOBJ_MAGIC[..])
}

/// The archive symbols of the COFF object `d`. A symbol table LLVM cannot
/// read counts as none, as in LLVM; a name it cannot read is an error.
pub(super) fn symbols(d: &[u8]) -> Result<Vec<&[u8]>, String> {
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
        return Err("COFF header past the end".into());
    };
    if d.len() < 20 || at + 40 * n > d.len() as u64 {
        return Err("COFF section table past the end".into());
    }
    if table == 0 {
        if count != 0 {
            return Err("COFF symbol table missing".into());
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
        let number = if big {
            i64::from(u32_at(rec, 12).unwrap_or(0) as i32)
        } else {
            let n = u16_at(rec, 12).unwrap_or(0);
            if n <= 65279 {
                i64::from(n)
            } else {
                i64::from(n as i16)
            }
        };
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
fn name<'d>(rec: &'d [u8], strings: &'d [u8], i: usize) -> Result<&'d [u8], String> {
    if rec[..4] != [0; 4] {
        let n = if rec[7] == 0 {
            rec[..8].iter().position(|&b| b == 0).unwrap_or(8)
        } else {
            8
        };
        return Ok(&rec[..n]);
    }
    let offset = u32_at(rec, 4).unwrap_or(0) as usize;
    if strings.len() <= 4 {
        return Err(format!(
            "the name of COFF symbol {i} is in an empty string table"
        ));
    }
    let tail = strings
        .get(offset..)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("the name of COFF symbol {i} is past the string table"))?;
    Ok(&tail[..tail.iter().position(|&b| b == 0).unwrap_or(tail.len())])
}

//! Pruning a static archive: each member the caller prunes takes its new
//! size, every other entry is copied as it is, and the symbol tables (GNU
//! `/`, or `/SYM64/`, and a Microsoft archive's second linker member) are
//! given the members' new header offsets, so a linker still finds each
//! symbol's member. The archive keeps its entries'
//! order, names, dates, owners and modes: only sizes and offsets change.

use super::output::Output;
use crate::bytes::le_at;
use crate::error::{Error, Result};
use crate::host::ar::{self, HEADER_LEN, RawEntry};
use crate::layout::Piece;
use crate::num::usize_from;

fn invalid(detail: impl Into<String>) -> Error {
    Error::invalid("archive", detail)
}

/// The regular archive `data` with each member that `prune_member` (given
/// the member's name and bytes) returns a new form for replaced by it;
/// `None` when no member changes. The caller's errors pass through.
pub fn prune<E: From<Error>>(
    data: &[u8],
    mut prune_member: impl FnMut(&str, &[u8]) -> std::result::Result<Option<Output>, E>,
) -> std::result::Result<Option<Output>, E> {
    let (entries, names) = read(data)?;
    if ar::is_thin(data) {
        return Err(
            invalid("a thin archive's members are files of their own (see `resize_thin`)").into(),
        );
    }
    let mut new: Vec<Option<Output>> = Vec::with_capacity(entries.len());
    for e in &entries {
        if is_table(e.name) {
            new.push(None);
            continue;
        }
        let name = names.resolve(e)?;
        new.push(prune_member(&name, slice(data, e.data, e.size))?);
    }
    if new.iter().all(Option::is_none) {
        return Ok(None);
    }
    // Each entry's new header offset.
    let mut at = crate::host::ar::MAGIC.len() as u64;
    let mut moved = Vec::with_capacity(entries.len());
    for (e, n) in entries.iter().zip(&new) {
        moved.push((e.header, at));
        let size = n.as_ref().map_or(e.size, Output::size);
        at = [HEADER_LEN, size, size % 2]
            .into_iter()
            .try_fold(at, u64::checked_add)
            .ok_or_else(|| invalid("the pruned archive would be larger than 2^64 bytes"))?;
    }
    let mut out = Output::default();
    out.span(0, 0, crate::host::ar::MAGIC.len() as u64);
    // A Microsoft archive (`.lib`) has two linker members named `/`: the
    // GNU table first, then its own.
    let mut linker_members = 0;
    for (e, n) in entries.iter().zip(new) {
        match n {
            Some(member) => {
                let size = member.size();
                out.piece(Piece::Bytes(header_with_size(data, e, size)?));
                out.append_at(e.data, member);
                if size % 2 == 1 {
                    out.piece(Piece::Bytes(b"\n".to_vec()));
                }
            }
            None if e.name == b"/" || e.name == b"/SYM64/" => {
                out.span(0, e.header, HEADER_LEN);
                let old = slice(data, e.data, e.size);
                let table = if e.name == b"/" {
                    linker_members += 1;
                    match linker_members {
                        1 => symbol_table(old, false, &moved)?,
                        _ => microsoft_symbol_table(old, &moved)?,
                    }
                } else {
                    symbol_table(old, true, &moved)?
                };
                out.piece(Piece::Bytes(table));
                out.span(0, e.data + e.size, e.size % 2);
            }
            None => out.span(0, e.header, HEADER_LEN + e.size + e.size % 2),
        }
    }
    Ok(Some(out))
}

/// The names of a thin archive's members, in order (paths relative to the
/// archive's directory unless absolute).
pub fn thin_members(data: &[u8]) -> Result<Vec<String>> {
    let (entries, names) = read(data)?;
    entries
        .iter()
        .filter(|e| !e.in_file)
        .map(|e| names.resolve(e))
        .collect()
}

/// The thin archive `data` with each member's recorded size set to
/// `sizes[i]` (members in order, as [`thin_members`] names them): its
/// members were pruned where they lie. Nothing moves in a thin archive, so
/// the symbol table stays as it is.
pub fn resize_thin(data: &[u8], sizes: &[u64]) -> Result<Output> {
    let (entries, _) = read(data)?;
    let members: Vec<&RawEntry<'_>> = entries.iter().filter(|e| !e.in_file).collect();
    if members.len() != sizes.len() {
        return Err(invalid("one size per member is needed"));
    }
    let mut out = Output::default();
    let mut at = 0;
    for (e, &size) in members.into_iter().zip(sizes) {
        out.span(0, at, e.header - at);
        out.piece(Piece::Bytes(header_with_size(data, e, size)?));
        at = e.header + HEADER_LEN;
    }
    out.span(0, at, data.len() as u64 - at);
    Ok(out)
}

fn slice(data: &[u8], at: u64, size: u64) -> &[u8] {
    &data[usize_from(at)..usize_from(at + size)]
}

/// Whether an entry is one of the archive's tables, not a member.
fn is_table(name: &[u8]) -> bool {
    name == b"/" || name == b"//" || name == b"/SYM64/"
}

/// The entries of the regular or thin archive `data` ([`ar::entries`]) and
/// its long names, every member's name checked to resolve
/// ([`Names::resolve`]): a writer keeps the name fields and the long-name
/// table as they are, so an archive whose names LLVM's reader refuses
/// would be written again as one it refuses.
fn read(data: &[u8]) -> Result<(Vec<RawEntry<'_>>, Names<'_>)> {
    let entries = ar::entries(data).map_err(|e| invalid(e.to_string()))?;
    let names = Names {
        table: entries
            .iter()
            .find(|e| e.name == b"//")
            .map_or(&[][..], |e| slice(data, e.data, e.size)),
        // Microsoft's archives have two linker members named `/`, and
        // their long names end in a NUL; GNU's end in `/\n`.
        coff: entries.len() >= 2 && entries[0].name == b"/" && entries[1].name == b"/",
    };
    for e in &entries {
        names.resolve(e)?;
    }
    Ok((entries, names))
}

/// An archive's long-name table (`//`), and how its names end.
struct Names<'data> {
    table: &'data [u8],
    coff: bool,
}

impl Names<'_> {
    /// The name of entry `e`: `name/` (GNU), `/N` (offset `N` into the
    /// long-name table, up to its `/\n`, or its NUL in a Microsoft
    /// archive), the special members' own names, or the field as it is
    /// (System V without the slash). A `/N` field that is not decimal,
    /// points past the table or at a name the table does not end is
    /// damage, as LLVM's `ArchiveMemberHeader::getName` reads it.
    fn resolve(&self, e: &RawEntry<'_>) -> Result<String> {
        let field = e.name;
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let Some(digits) = field.strip_prefix(b"/") else {
            return Ok(lossy(field.strip_suffix(b"/").unwrap_or(field)));
        };
        if is_table(field) || SPECIAL.contains(&field) {
            return Ok(lossy(field));
        }
        let bad = |why: String| {
            invalid(format!(
                "the name field '{}' of the member header at {:#x} {why}",
                lossy(field),
                e.header
            ))
        };
        let at = std::str::from_utf8(digits)
            .ok()
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<usize>().ok())
            .ok_or_else(|| bad("is not '/' and a decimal offset".into()))?;
        let rest = self
            .table
            .get(at..)
            .filter(|r| !r.is_empty())
            .ok_or_else(|| {
                bad(format!(
                    "points past the long-name table ({} bytes)",
                    self.table.len()
                ))
            })?;
        let end = match self.coff {
            true => rest.iter().position(|&b| b == 0),
            false => rest
                .iter()
                .position(|&b| b == b'\n')
                .filter(|&n| n > 0 && rest[n - 1] == b'/')
                .map(|n| n - 1),
        };
        let end = end.ok_or_else(|| {
            let want = if self.coff { "a NUL" } else { "'/\\n'" };
            bad(format!(
                "points at a long name that {want} does not end in the table"
            ))
        })?;
        Ok(lossy(&rest[..end]))
    }
}

/// Members LLVM's reader takes by their own names, though they start
/// with `/`: Windows SDK and WDK libraries hold them.
const SPECIAL: [&[u8]; 2] = [b"/<XFGHASHMAP>/", b"/<ECSYMBOLS>/"];

/// Entry `e`'s header with its size field set to `size`.
fn header_with_size(data: &[u8], e: &RawEntry<'_>, size: u64) -> Result<Vec<u8>> {
    let mut h = slice(data, e.header, HEADER_LEN).to_vec();
    let field = format!("{size:<10}");
    if field.len() != 10 {
        return Err(invalid(format!(
            "a member of {size} bytes does not fit an archive header"
        )));
    }
    h[48..58].copy_from_slice(field.as_bytes());
    Ok(h)
}

/// A GNU symbol table (`/`: 32-bit big-endian count and offsets;
/// `/SYM64/`: 64-bit) with each member offset moved as `moved` says (old
/// header offset, new).
fn symbol_table(table: &[u8], wide: bool, moved: &[(u64, u64)]) -> Result<Vec<u8>> {
    let w = if wide { 8 } else { 4 };
    let read = |at: usize| -> Option<u64> {
        let b = table.get(at..at + w)?;
        Some(b.iter().fold(0u64, |v, &x| (v << 8) | u64::from(x)))
    };
    let short = || invalid("the symbol table is cut short");
    let count = usize_from(read(0).ok_or_else(short)?);
    if count.checked_mul(w).is_none_or(|n| n > table.len() - w) {
        return Err(short());
    }
    let mut out = table.to_vec();
    for k in 0..count {
        let at = w + k * w;
        let old = read(at).ok_or_else(short)?;
        let new = moved
            .binary_search_by_key(&old, |&(o, _)| o)
            .map(|i| moved[i].1)
            .map_err(|_| {
                invalid(format!(
                    "the symbol table points at {old:#x}, where no member starts"
                ))
            })?;
        if !wide && new > u64::from(u32::MAX) {
            return Err(invalid("a member would lie past 4 GiB"));
        }
        out[at..at + w].copy_from_slice(&new.to_be_bytes()[8 - w..]);
    }
    Ok(out)
}

/// The second linker member of a Microsoft archive (`.lib`), with each
/// member offset moved as `moved` says: a little-endian `u32` count of
/// members and their header offsets, then the symbols' 16-bit indices into
/// those offsets and their names, which stay (members keep their order).
/// See the PE format specification, "Second Linker Member".
fn microsoft_symbol_table(table: &[u8], moved: &[(u64, u64)]) -> Result<Vec<u8>> {
    let short = || invalid("the second linker member is cut short");
    let read = |at: usize| le_at::<u32>(table, at);
    let count = usize::try_from(read(0).ok_or_else(short)?).map_err(|_| short())?;
    let end = count
        .checked_mul(4)
        .and_then(|n| n.checked_add(4))
        .filter(|&n| n <= table.len())
        .ok_or_else(short)?;
    let mut out = table.to_vec();
    for at in (4..end).step_by(4) {
        let old = u64::from(read(at).ok_or_else(short)?);
        let new = moved
            .binary_search_by_key(&old, |&(o, _)| o)
            .map(|i| moved[i].1)
            .map_err(|_| {
                invalid(format!(
                    "the second linker member points at {old:#x}, where no member starts"
                ))
            })?;
        let new = u32::try_from(new).map_err(|_| invalid("a member would lie past 4 GiB"))?;
        out[at..at + 4].copy_from_slice(&new.to_le_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &[u8]) -> RawEntry<'_> {
        RawEntry {
            header: 8,
            name,
            data: 68,
            size: 0,
            in_file: true,
        }
    }

    #[test]
    fn long_names_and_gnu_names() {
        let gnu = Names {
            table: b"a_rather_long_member_name.o/\nb.o/\n",
            coff: false,
        };
        let name = |n: &Names<'_>, f: &'static [u8]| n.resolve(&entry(f));
        assert_eq!(name(&gnu, b"/0").unwrap(), "a_rather_long_member_name.o");
        assert_eq!(name(&gnu, b"/29").unwrap(), "b.o");
        assert_eq!(name(&gnu, b"c.o/").unwrap(), "c.o");
        assert_eq!(name(&gnu, b"/<ECSYMBOLS>/").unwrap(), "/<ECSYMBOLS>/");
        let past = name(&gnu, b"/999").unwrap_err().to_string();
        assert!(
            past.ends_with(
                "the name field '/999' of the member header at 0x8 points past the long-name \
                 table (34 bytes)"
            ),
            "{past}"
        );
        assert!(name(&gnu, b"/34").is_err());
        assert!(name(&gnu, b"/1x").is_err());
        assert!(name(&gnu, b"/-1").is_err());
        let cut = Names {
            table: b"a_rather_long_member_name.o",
            coff: false,
        };
        assert!(name(&cut, b"/0").is_err());
        let coff = Names {
            table: b"a_rather_long_member_name.obj\0b.obj\0",
            coff: true,
        };
        assert_eq!(name(&coff, b"/30").unwrap(), "b.obj");
        let unended = Names {
            table: b"a_rather_long_member_name.obj",
            coff: true,
        };
        assert!(name(&unended, b"/0").is_err());
    }

    #[test]
    fn symbol_offsets_follow_their_members() {
        let mut t = vec![0, 0, 0, 2, 0, 0, 0, 8, 0, 0, 1, 0];
        t.extend_from_slice(b"f\0g\0");
        let out = symbol_table(&t, false, &[(8, 8), (0x100, 0x80)]).unwrap();
        assert_eq!(&out[8..12], &[0, 0, 0, 0x80]);
        assert_eq!(&out[12..], b"f\0g\0");
        assert!(symbol_table(&t, false, &[(8, 8)]).is_err());
        assert!(symbol_table(&t[..10], false, &[(8, 8)]).is_err());
    }
}

//! The binary bundle layout: reading with every field checked, and writing
//! with LLVM's alignment rules, without holding entry data.

use crate::bytes::Bytes;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{Layout, Piece};
use crate::llvm::string_map;
use crate::num::{len64, usize_from};

/// The magic that starts a binary bundle (no NUL).
pub const MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";

/// One entry of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'data> {
    /// The entry ID as stored (normally a normalized bundle-entry ID).
    pub id: &'data [u8],
    /// Offset of the data from the start of the bundle.
    pub offset: u64,
    /// The data.
    pub data: &'data [u8],
}

impl Entry<'_> {
    /// The ID as text (lossy for non-UTF-8 bytes).
    pub fn id_str(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.id)
    }
}

/// Whether `data` starts with the bundle magic.
pub fn has_magic(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

/// Where the bytes a header read needs would end, and the field that is
/// missing (`field` is its offset).
struct Need {
    /// Bytes of the bundle a read needs to get further: the whole record
    /// (or the count) being read.
    need: u64,
    /// Offset of the first missing field.
    field: u64,
    /// What that field is.
    what: &'static str,
}

/// A record with its ID.
struct RawRecord<'data> {
    index: u64,
    offset: u64,
    size: u64,
    id: &'data [u8],
}

/// What is being read: a whole bundle, or the first bytes of one (the
/// contents of a compressed bundle, decompressed only that far). They name
/// what an entry lies outside of and the overlap differently.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    File,
    Prefix,
}

/// Reads the header of a binary bundle of `total` bytes from `buf` (all
/// of it, or its first bytes), checking every field: the records, and the
/// end of the header; `Ok(Err(need))` when `buf` ends too early.
fn read_header(
    buf: &[u8],
    total: u64,
    source: Source,
) -> Result<std::result::Result<(Vec<RawRecord<'_>>, u64), Need>> {
    let within = match source {
        Source::File => "file",
        Source::Prefix => "bundle",
    };
    let mut cur = Bytes::new(buf);
    // The magic, then the entry count.
    let n = cur.skip(24).and_then(|()| cur.read_u64_le());
    let Some(n) = n else {
        return Ok(Err(Need {
            need: 32,
            field: 24,
            what: "bundle entry count",
        }));
    };
    // Each record takes at least 24 bytes.
    if total < 32 || n.checked_mul(24).is_none_or(|need| need > total - 32) {
        return Err(Error::invalid(
            "bundle entry count",
            format!("{n} records of at least 24 bytes cannot fit in {total} bytes"),
        ));
    }
    let mut records = Vec::new();
    for i in 0..n {
        let record = cur.position();
        let mut fields = [0u64; 3];
        for f in &mut fields {
            let field = cur.position();
            let Some(v) = cur.read_u64_le() else {
                return Ok(Err(Need {
                    need: record + 24,
                    field,
                    what: "bundle entry record",
                }));
            };
            *f = v;
        }
        let [offset, size, id_len] = fields;
        let at = cur.position();
        let id_end = at
            .checked_add(id_len)
            .filter(|&e| e <= total)
            .ok_or_else(|| ErrorKind::OutOfBounds {
                what: format!("ID of bundle entry {i}"),
                offset: at,
                size: id_len,
                within,
                limit: total,
            })?;
        let Some(id) = cur.read_bytes(id_len) else {
            return Ok(Err(Need {
                need: id_end,
                field: at,
                what: "bundle entry ID",
            }));
        };
        records.push(RawRecord {
            index: i,
            offset,
            size,
            id,
        });
    }
    let header_end = cur.position();
    for r in &records {
        let id = String::from_utf8_lossy(r.id);
        let i = r.index;
        let end = r
            .offset
            .checked_add(r.size)
            .filter(|&e| e <= total)
            .ok_or_else(|| ErrorKind::OutOfBounds {
                what: format!("data of bundle entry {i} ({id})"),
                offset: r.offset,
                size: r.size,
                within,
                limit: total,
            })?;
        if r.offset == 0 || (r.size != 0 && r.offset < header_end) {
            let first = match source {
                Source::File => format!("data of bundle entry {i} ({:#x}..{end:#x})", r.offset),
                Source::Prefix => format!("data of bundle entry {i} at {:#x}", r.offset),
            };
            return Err(ErrorKind::Overlap {
                first,
                second: format!("bundle header (0x0..{header_end:#x})"),
            }
            .into());
        }
    }
    Ok(Ok((records, header_end)))
}

/// Reads the binary bundle in `data` (which must start with the magic), in
/// file order. Where LLVM 22 silently stops reading (and then crashes or
/// calls the file "not a bundle"), this reports exactly what is wrong: a
/// truncated header, an entry count that cannot fit, an ID or data range
/// outside the file, data overlapping the header, or a zero data offset.
/// Entries whose data overlap each other are allowed: LLVM itself writes them
/// when two targets normalize to the same ID.
pub fn read(data: &[u8]) -> Result<Vec<Entry<'_>>> {
    if !has_magic(data) {
        return Err(ErrorKind::BadMagic {
            what: "bundle",
            offset: 0,
            expected: "__CLANG_OFFLOAD_BUNDLE__",
        }
        .into());
    }
    let len = len64(data);
    let records = match read_header(data, len, Source::File)? {
        Ok((records, _)) => records,
        Err(need) => {
            return Err(ErrorKind::Truncated {
                what: need.what,
                offset: need.field,
                need: 8,
                have: len.saturating_sub(need.field),
            }
            .into());
        }
    };
    Ok(records
        .into_iter()
        .map(|r| Entry {
            id: r.id,
            offset: r.offset,
            data: &data[usize_from(r.offset)..usize_from(r.offset + r.size)],
        })
        .collect())
}

/// A bundle record read from the first bytes of a bundle (the contents of
/// a compressed bundle, decompressed only that far): the entry's data is
/// not at hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The entry ID as stored.
    pub id: Vec<u8>,
    /// Offset of the entry's data in the bundle.
    pub offset: u64,
    /// Size of the entry's data.
    pub size: u64,
}

/// What the first bytes of a bundle say (see [`read_prefix`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prefix {
    /// The header needs the bundle's first this many bytes.
    Need(u64),
    /// Not a binary bundle.
    NotBinary,
    /// The records, in file order.
    Records(Vec<Record>),
}

/// Reads the records of a binary bundle of `total` bytes from its first
/// bytes `buf`, with the checks [`read`] makes on whole bundles (entries
/// inside the bundle, after the header, never at 0).
pub fn read_prefix(buf: &[u8], total: u64) -> Result<Prefix> {
    if buf.len() < MAGIC.len() {
        if !MAGIC.starts_with(buf) {
            return Ok(Prefix::NotBinary);
        }
        return Ok(Prefix::Need(32));
    }
    if !has_magic(buf) {
        return Ok(Prefix::NotBinary);
    }
    match read_header(buf, total, Source::Prefix)? {
        Err(need) => Ok(Prefix::Need(need.need)),
        Ok((records, _)) => Ok(Prefix::Records(
            records
                .into_iter()
                .map(|r| Record {
                    id: r.id.to_vec(),
                    offset: r.offset,
                    size: r.size,
                })
                .collect(),
        )),
    }
}

/// The bytes the header of `entries` (read by [`read`]) occupies.
pub fn header_size(entries: &[Entry<'_>]) -> u64 {
    32 + entries.iter().map(|e| 24 + len64(e.id)).sum::<u64>()
}

/// The entries as LLVM 22 iterates them (for `-list` and when matching
/// targets): its `StringMap` order, a later duplicate ID replacing the data
/// of an earlier one in the earlier one's place.
///
/// Linear in the number of entries (plus the map's own probing): the last
/// entry of each ID is found through a hash map, not by a search per entry.
pub fn in_llvm_order<'a, 'data>(entries: &'a [Entry<'data>]) -> Vec<&'a Entry<'data>> {
    let ids: Vec<&[u8]> = entries.iter().map(|e| e.id).collect();
    llvm_order(&ids).into_iter().map(|i| &entries[i]).collect()
}

/// [`in_llvm_order`] for entries known by their IDs alone (in file order):
/// the indices of the entries LLVM 22 iterates, in its order.
pub fn llvm_order(ids: &[&[u8]]) -> Vec<usize> {
    // The last entry with each ID wins.
    let last: std::collections::HashMap<&[u8], usize> =
        ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    string_map::order_of(ids)
        .into_iter()
        .map(|first| last.get(ids[first]).copied().unwrap_or(first))
        .collect()
}

/// An entry to write: its (normalized) ID and data size; the data stays with
/// the caller and is referred to by index.
#[derive(Debug, Clone)]
pub struct EntrySpec {
    /// The ID to store.
    pub id: String,
    /// Size of the data.
    pub size: u64,
}

/// Lays out a binary bundle of `entries`, in order, each entry's data at the
/// running position rounded up to a multiple of `align` (any value ≥ 1; no
/// padding after the last entry), as LLVM 22 does. When two entries have the
/// same ID, LLVM writes offsets that point at the wrong data (docs/formats/bundles.md
/// §1); callers reject duplicate normalized IDs before calling this.
pub fn layout(entries: &[EntrySpec], align: u64) -> Result<Layout> {
    if align == 0 {
        return Err(Error::usage("bundle alignment must be at least 1"));
    }
    let overflow = || Error::too_large("the bundle");
    let mut header_len = 32u64;
    for e in entries {
        header_len = header_len
            .checked_add(24 + e.id.len() as u64)
            .ok_or_else(overflow)?;
    }
    // Data offsets.
    let mut offsets = Vec::with_capacity(entries.len());
    let mut pos = header_len;
    for e in entries {
        let at = pos
            .div_ceil(align)
            .checked_mul(align)
            .ok_or_else(overflow)?;
        offsets.push(at);
        pos = at.checked_add(e.size).ok_or_else(overflow)?;
    }
    let mut header = Vec::with_capacity(usize_from(header_len));
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for (e, off) in entries.iter().zip(&offsets) {
        header.extend_from_slice(&off.to_le_bytes());
        header.extend_from_slice(&e.size.to_le_bytes());
        header.extend_from_slice(&(e.id.len() as u64).to_le_bytes());
        header.extend_from_slice(e.id.as_bytes());
    }
    let mut layout = Layout::default();
    layout.push(Piece::Bytes(header), header_len);
    let mut pos = header_len;
    for (i, (e, off)) in entries.iter().zip(&offsets).enumerate() {
        layout.push(Piece::Zeros(off - pos), off - pos);
        layout.push(Piece::Image(i), e.size);
        pos = off + e.size;
    }
    Ok(layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(id: &str, size: u64) -> EntrySpec {
        EntrySpec {
            id: id.into(),
            size,
        }
    }

    #[test]
    fn matches_the_spec_example() {
        // docs/formats/bundles.md §1: header ends at 0xc6, data follow.
        let specs = [
            spec("host-x86_64-unknown-linux-gnu-", 8),
            spec("hip-amdgcn-amd-amdhsa--gfx906", 4),
            spec("openmp-nvptx64-nvidia-cuda-unknown-", 8),
        ];
        let mut out = Vec::new();
        layout(&specs, 1)
            .unwrap()
            .write_to(&mut out, &[b"HOSTDATA", b"DEV1", b"DEVICE22"])
            .unwrap();
        assert_eq!(&out[0xc6..], b"HOSTDATADEV1DEVICE22");
        let e = read(&out).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(e[1].offset, 0xce);
        assert_eq!(e[2].data, b"DEVICE22");
        let order: Vec<_> = in_llvm_order(&e)
            .iter()
            .map(|e| e.id_str().into_owned())
            .collect();
        assert_eq!(order[2], "host-x86_64-unknown-linux-gnu-");
    }

    #[test]
    fn alignment_pads_before_each_entry_not_after_the_last() {
        let specs = [spec("host-x86_64-unknown-linux-gnu-", 3), spec("b", 5)];
        let l = layout(&specs, 4096).unwrap();
        assert_eq!(l.size, 0x2000 + 5);
        let l = layout(&specs, 3).unwrap();
        let mut out = Vec::new();
        l.write_to(&mut out, &[b"abc", b"defgh"]).unwrap();
        let e = read(&out).unwrap();
        assert_eq!(e[0].offset % 3, 0);
        assert_eq!(e[1].offset % 3, 0);
        assert!(layout(&specs, 0).is_err());
    }

    #[test]
    fn every_truncation_is_an_error() {
        let specs = [
            spec("host-x86_64-unknown-linux-gnu-", 10),
            spec("hip-amdgcn-amd-amdhsa--gfx906", 10),
        ];
        let mut out = Vec::new();
        layout(&specs, 1)
            .unwrap()
            .write_to(&mut out, &[&[1; 10], &[2; 10]])
            .unwrap();
        assert!(read(&out).is_ok());
        for cut in 0..out.len() {
            assert!(read(&out[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// `in_llvm_order` as it was written first: a backward search for each
    /// entry's last duplicate (quadratic, but obviously right).
    fn naive_order<'a, 'data>(entries: &'a [Entry<'data>]) -> Vec<&'a Entry<'data>> {
        let ids: Vec<&[u8]> = entries.iter().map(|e| e.id).collect();
        string_map::order_of(&ids)
            .into_iter()
            .map(|first| {
                let id = entries[first].id;
                entries.iter().rev().find(|e| e.id == id).unwrap()
            })
            .collect()
    }

    fn entries_of(ids: &[String]) -> Vec<Entry<'_>> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| Entry {
                id: id.as_bytes(),
                offset: i as u64,
                data: &[],
            })
            .collect()
    }

    #[test]
    fn llvm_order_keeps_the_last_duplicate_in_the_first_place() {
        let ids: Vec<String> = (0..3000)
            .map(|i| format!("hip-amdgcn-amd-amdhsa--gfx{}", (i * 7919) % 1000))
            .collect();
        let e = entries_of(&ids);
        let fast: Vec<u64> = in_llvm_order(&e).iter().map(|e| e.offset).collect();
        let slow: Vec<u64> = naive_order(&e).iter().map(|e| e.offset).collect();
        assert_eq!(fast.len(), 1000);
        assert_eq!(fast, slow);
    }

    #[test]
    fn llvm_order_of_200k_entries_is_not_quadratic() {
        // With a search per entry this took minutes (2e10 comparisons);
        // linear, it is a fraction of a second even in a debug build.
        let ids: Vec<String> = (0..200_000).map(|i| format!("openmp-x-{i}")).collect();
        let e = entries_of(&ids);
        let order = in_llvm_order(&e);
        assert_eq!(order.len(), 200_000);
        let mut seen: Vec<u64> = order.iter().map(|e| e.offset).collect();
        seen.sort_unstable();
        assert!(seen.iter().enumerate().all(|(i, &o)| o == i as u64));
    }

    #[test]
    fn hostile_fields_are_errors() {
        let specs = [spec("x", 4)];
        let mut good = Vec::new();
        layout(&specs, 1)
            .unwrap()
            .write_to(&mut good, &[b"data"])
            .unwrap();
        let put = |at: usize, v: u64| {
            let mut b = good.clone();
            b[at..at + 8].copy_from_slice(&v.to_le_bytes());
            b
        };
        for bad in [
            put(24, u64::MAX),     // absurd count
            put(24, 1 << 40),      // count too large for the file
            put(32, 0),            // zero offset
            put(32, 8),            // data inside the header
            put(32, u64::MAX - 1), // offset + size overflows
            put(40, 1 << 50),      // size past the end
            put(48, u64::MAX),     // ID length overflows
        ] {
            assert!(read(&bad).is_err());
        }
    }
}

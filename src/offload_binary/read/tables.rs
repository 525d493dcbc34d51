//! The tables of an uncompressed (or inflated) OffloadBinary read and
//! checked: entries, string tables and images, every range against the
//! binary and against each other.

use std::borrow::Cow;

use zerocopy::FromBytes;

use super::image::{KeyValue, OffloadImage};
use crate::bytes::Bytes;
use crate::error::{Error, ErrorKind, Result};
use crate::num::{len64, usize_from};
use crate::offload_binary::kinds::{ImageKind, OffloadKind};
use crate::offload_binary::raw::{
    ENTRY_SIZE, Entry, HEADER_SIZE, HEADER_V3_SIZE, Header, STRING_ENTRY_V1_SIZE,
    STRING_ENTRY_V2_SIZE, StringEntryV1, StringEntryV2,
};

/// A named byte range, for overlap checks.
struct Region {
    name: String,
    start: u64,
    end: u64,
}

impl Region {
    fn new(name: String, start: u64, len: u64) -> Region {
        Region {
            name,
            start,
            end: start + len,
        }
    }
    fn describe(&self) -> String {
        format!("{} ({:#x}..{:#x})", self.name, self.start, self.end)
    }
}

pub(super) fn read_uncompressed<'data>(
    bin: &'data [u8],
    hdr: &Header,
    at: u64,
    stored_size: u64,
    compressed: bool,
    out: &mut Vec<OffloadImage<'data>>,
) -> Result<()> {
    let entries = match read_tables(bin, len64(bin), hdr, at) {
        Ok(e) => e,
        Err(Tables::Bad(e)) => return Err(e),
        // The whole binary is at hand.
        Err(Tables::Beyond) => return Err(Error::invalid("OffloadBinary", "tables past its end")),
    };
    for (i, e) in entries.into_iter().enumerate() {
        let (start, end) = e.image;
        let bytes = Cow::Borrowed(&bin[usize_from(start)..usize_from(end)]);
        out.push(e.into_image(i, at, stored_size, compressed, bytes));
    }
    Ok(())
}

/// Why the tables of a binary were not read.
pub(crate) enum Tables {
    /// They are malformed.
    Bad(Error),
    /// One lies (partly) past the bytes at hand, a prefix of the binary.
    Beyond,
}

impl From<Error> for Tables {
    fn from(e: Error) -> Tables {
        Tables::Bad(e)
    }
}

/// One entry of a binary, as its tables describe it.
pub(crate) struct Described<'data> {
    version: u32,
    entry: Entry,
    strings: Vec<KeyValue<'data>>,
    /// Where its image lies in the binary.
    pub(crate) image: (u64, u64),
}

impl<'data> Described<'data> {
    /// Entry `index` of the binary at `at` (stored in `stored_size` bytes)
    /// with its image's bytes.
    pub(crate) fn into_image<'b>(
        self,
        index: usize,
        at: u64,
        stored_size: u64,
        compressed: bool,
        image: Cow<'b, [u8]>,
    ) -> OffloadImage<'b>
    where
        'data: 'b,
    {
        let e = self.entry;
        OffloadImage {
            version: self.version,
            binary_offset: at,
            binary_size: stored_size,
            index: index as u64,
            compressed,
            image_kind: ImageKind(e.image_kind.get()),
            offload_kind: OffloadKind(e.offload_kind.get()),
            flags: e.flags.get(),
            strings: self.strings,
            image_offset: self.image.0,
            image,
        }
    }
}

/// Reads the tables of a binary of `size` bytes (header `hdr`, at `at` in
/// the caller's buffer) from `bin`, its first bytes: the whole binary, or a
/// prefix of it (its first bytes inflated), when a table that lies past
/// the prefix is [`Tables::Beyond`]. Every check is made against `size`, so
/// a prefix that holds the tables gives what the whole binary gives.
pub(crate) fn read_tables<'data>(
    bin: &'data [u8],
    size: u64,
    hdr: &Header,
    at: u64,
) -> Result<Vec<Described<'data>>, Tables> {
    let version = hdr.version.get();
    let hdr_size = if version >= 3 {
        HEADER_V3_SIZE
    } else {
        HEADER_SIZE
    };
    if size < hdr_size + ENTRY_SIZE {
        return Err(truncated(
            "OffloadBinary header and entry",
            at,
            hdr_size + ENTRY_SIZE,
            size,
        )
        .into());
    }
    let entry_offset = hdr.entry_offset.get();
    let count = entry_count(hdr, size, at)?;
    let table_len = count
        .checked_mul(ENTRY_SIZE)
        .filter(|&n| n <= size)
        .ok_or_else(|| {
            Error::invalid(
                format!("entry count of the OffloadBinary at {at:#x}"),
                format!("{count} entries of {ENTRY_SIZE} bytes cannot fit in {size} bytes"),
            )
        })?;
    let header = Region::new("header".into(), 0, hdr_size);
    let table = checked_region(size, "entry table", entry_offset, table_len)?;
    at_hand(bin, &table)?;
    let mut fixed = Regions::default();
    fixed.push_disjoint(header)?;
    fixed.push_disjoint(table)?;

    let mut entries = Vec::new();
    for i in 0..count {
        let off = entry_offset + i * ENTRY_SIZE;
        // In range: the table was checked.
        let (e, _) = Entry::read_from_prefix(tail(bin, off))
            .map_err(|_| truncated("entry", off, ENTRY_SIZE, size.saturating_sub(off)))?;
        let se_size = if version == 1 {
            STRING_ENTRY_V1_SIZE
        } else {
            STRING_ENTRY_V2_SIZE
        };
        let n = e.num_strings.get();
        let se_len = n.checked_mul(se_size).ok_or_else(|| {
            Error::invalid(
                format!("string count of entry {i}"),
                format!("{n} is absurd"),
            )
        })?;
        let se = checked_region(
            size,
            &format!("string entries of entry {i}"),
            e.string_offset.get(),
            se_len,
        )?;
        at_hand(bin, &se)?;
        fixed.push_disjoint(se)?;
        entries.push(e);
    }
    let mut images: Vec<(u64, u64)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let img = checked_region(
            size,
            &format!("image of entry {i}"),
            e.image_offset.get(),
            e.image_size.get(),
        )?;
        images.push((img.start, img.end));
        fixed.push_disjoint(img)?;
    }
    let mut out = Vec::with_capacity(entries.len());
    for (i, (e, image)) in entries.into_iter().zip(images).enumerate() {
        let strings = read_strings(bin, size, &e, version, i)?;
        out.push(Described {
            version,
            entry: e,
            strings,
            image,
        });
    }
    Ok(out)
}

/// The number of entries of a binary of `size` bytes (header `hdr`, at
/// `at`): version 1 has one, its header's field the entry's size (checked);
/// later versions store the count there.
fn entry_count(hdr: &Header, size: u64, at: u64) -> Result<u64, Tables> {
    if hdr.version.get() != 1 {
        return Ok(hdr.entry_size_or_count.get());
    }
    let entry_size = hdr.entry_size_or_count.get();
    if entry_size < ENTRY_SIZE || entry_size > size - HEADER_SIZE {
        return Err(Error::invalid(
            format!("entry size of the OffloadBinary at {at:#x}"),
            format!("{entry_size} (an entry is {ENTRY_SIZE} bytes, the binary {size})"),
        )
        .into());
    }
    Ok(1)
}

/// Fails with [`Tables::Beyond`] unless region `r` lies inside `bin`.
fn at_hand(bin: &[u8], r: &Region) -> Result<(), Tables> {
    if r.end > len64(bin) {
        return Err(Tables::Beyond);
    }
    Ok(())
}

fn read_strings<'data>(
    bin: &'data [u8],
    size: u64,
    e: &Entry,
    version: u32,
    i: usize,
) -> Result<Vec<KeyValue<'data>>, Tables> {
    let n = e.num_strings.get();
    let base = e.string_offset.get();
    let mut strings = Vec::new();
    for j in 0..n {
        // The string entries were checked to lie in `bin`.
        let (key_at, value) = if version == 1 {
            let at = base + j * STRING_ENTRY_V1_SIZE;
            let (s, _) = StringEntryV1::read_from_prefix(tail(bin, at)).map_err(|_| {
                let have = size.saturating_sub(at);
                truncated("string entry", at, STRING_ENTRY_V1_SIZE, have)
            })?;
            (
                s.key_offset.get(),
                c_string(bin, size, s.value_offset.get(), || {
                    format!("value {j} of entry {i}")
                })?,
            )
        } else {
            let at = base + j * STRING_ENTRY_V2_SIZE;
            let (s, _) = StringEntryV2::read_from_prefix(tail(bin, at)).map_err(|_| {
                let have = size.saturating_sub(at);
                truncated("string entry", at, STRING_ENTRY_V2_SIZE, have)
            })?;
            let r = checked_region(
                size,
                &format!("value {j} of entry {i}"),
                s.value_offset.get(),
                s.value_size.get(),
            )?;
            at_hand(bin, &r)?;
            (
                s.key_offset.get(),
                &bin[usize_from(r.start)..usize_from(r.end)],
            )
        };
        let key = c_string(bin, size, key_at, || format!("key {j} of entry {i}"))?;
        strings.push((Cow::Borrowed(key), Cow::Borrowed(value)));
    }
    Ok(strings)
}

/// The NUL-terminated string at `at`, which must end inside the binary of
/// `size` bytes whose first bytes are `bin`.
fn c_string(bin: &[u8], size: u64, at: u64, what: impl Fn() -> String) -> Result<&[u8], Tables> {
    let out_of_bounds = |what: String, len: u64| -> Tables {
        Error::from(ErrorKind::OutOfBounds {
            what,
            offset: at,
            size: len,
            within: "binary",
            limit: size,
        })
        .into()
    };
    if at >= size {
        return Err(out_of_bounds(what(), 1));
    }
    let Some(rest) = usize::try_from(at).ok().and_then(|a| bin.get(a..)) else {
        return Err(Tables::Beyond);
    };
    match memchr::memchr(0, rest) {
        Some(n) => Ok(&rest[..n]),
        None if len64(bin) < size => Err(Tables::Beyond),
        None => Err(out_of_bounds(
            format!("{} (no terminating NUL)", what()),
            len64(rest),
        )),
    }
}

fn checked_region(size: u64, what: &str, offset: u64, len: u64) -> Result<Region> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(Region::new(what.to_string(), offset, len)),
        _ => Err(ErrorKind::OutOfBounds {
            what: what.to_string(),
            offset,
            size: len,
            within: "binary",
            limit: size,
        }
        .into()),
    }
}

/// Regions that must not overlap (the header, the tables, the images),
/// kept sorted so that each check costs O(log n), not a pass over all of
/// them: a binary with a million entries is read in linear time.
#[derive(Default)]
struct Regions {
    /// The non-empty regions, by start; disjoint, so sorted by end too.
    spans: std::collections::BTreeMap<u64, Region>,
    /// The empty ones, by offset: a non-empty region around one overlaps it.
    points: std::collections::BTreeMap<u64, Region>,
}

impl Regions {
    /// Adds `r`, failing if it is non-empty and overlaps a region added
    /// before (an empty one counts when it lies strictly inside `r`).
    fn push_disjoint(&mut self, r: Region) -> Result<()> {
        if r.start == r.end {
            self.points.entry(r.start).or_insert(r);
            return Ok(());
        }
        // Of the disjoint spans starting before `r` ends, only the last can
        // reach into `r`.
        if let Some((_, o)) = self.spans.range(..r.end).next_back()
            && o.end > r.start
        {
            return Err(overlap(&r, o));
        }
        if let Some((_, o)) = self.points.range(r.start + 1..r.end).next() {
            return Err(overlap(&r, o));
        }
        self.spans.insert(r.start, r);
        Ok(())
    }
}

fn overlap(a: &Region, b: &Region) -> Error {
    ErrorKind::Overlap {
        first: a.describe(),
        second: b.describe(),
    }
    .into()
}

/// `have` is how many bytes remain from `offset` to the end of the data.
pub(super) fn truncated(what: &'static str, offset: u64, need: u64, have: u64) -> Error {
    ErrorKind::Truncated {
        what,
        offset,
        need,
        have,
    }
    .into()
}

/// The bytes of `data` from `at` on; empty when `at` is past the end.
pub(super) fn tail(data: &[u8], at: u64) -> &[u8] {
    Bytes::new(data).tail_at(at).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_overlap_as_a_pairwise_check_says() {
        // Every placement of a region among a few fixed ones, empty ones
        // included, against the obvious quadratic rule.
        let fixed = [(0u64, 4u64), (10, 10), (12, 16), (20, 21)];
        let pairwise = |s: u64, e: u64| s != e && fixed.iter().any(|&(a, b)| a < e && s < b);
        for s in 0..24 {
            for e in s..24 {
                let mut r = Regions::default();
                for (i, &(a, b)) in fixed.iter().enumerate() {
                    r.push_disjoint(Region::new(format!("f{i}"), a, b - a))
                        .unwrap();
                }
                let got = r.push_disjoint(Region::new("r".into(), s, e - s)).is_err();
                assert_eq!(got, pairwise(s, e), "{s}..{e}");
            }
        }
    }
}

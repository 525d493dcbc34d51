//! A header structure written back ([`Owned`]), as rpm exports one: the
//! index entries in their order (sorted by tag), the region entry first
//! (tag 63 in a main header, 62 in a signature header) whose data is the
//! 16-byte trailer at the end of the store; every other entry's data laid
//! out in the index's order, each aligned to its type (two bytes for
//! 16-bit numbers, four for 32-bit, eight for 64-bit), zeros between.
//! rpm's reader insists on that order: each entry's data must start after
//! the previous one's end. A header read and written back unchanged comes
//! out byte for byte as rpm wrote it.

use super::header::{
    BIN, Entry, Header, I18NSTRING, INT16, INT32, INT64, MAGIC, STRING, STRING_ARRAY,
};

/// The tags of the region entries: a main header's, a signature header's.
const HEADERIMMUTABLE: u32 = 63;
const HEADERSIGNATURES: u32 = 62;

/// The most entries and the largest store a header may have (as rpm bounds
/// them).
const MAX_ENTRIES: usize = 0xffff;
const MAX_STORE: usize = 0x0fff_ffff;

/// One entry and its data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Item {
    /// Its tag.
    pub(super) tag: u32,
    /// Its type, as the format numbers them.
    pub(super) kind: u32,
    /// How many values it holds.
    pub(super) count: u32,
    /// Its values' bytes, as stored.
    pub(super) data: Vec<u8>,
}

impl Item {
    /// A string entry.
    pub(super) fn string(tag: u32, s: &str) -> Item {
        Item {
            tag,
            kind: STRING,
            count: 1,
            data: [s.as_bytes(), b"\0"].concat(),
        }
    }

    /// A binary entry.
    pub(super) fn bin(tag: u32, b: &[u8]) -> Item {
        Item {
            tag,
            kind: BIN,
            count: u32::try_from(b.len()).unwrap_or(u32::MAX),
            data: b.to_vec(),
        }
    }

    /// An entry of one number, 32-bit when `wide` is false.
    pub(super) fn number(tag: u32, wide: bool, n: u64) -> Item {
        let data = match wide {
            true => n.to_be_bytes().to_vec(),
            false => u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes().to_vec(),
        };
        let kind = if wide { INT64 } else { INT32 };
        Item {
            tag,
            kind,
            count: 1,
            data,
        }
    }

    /// Its values' bytes, one slice each (a string with its NUL).
    pub(super) fn values(&self) -> Result<Vec<&[u8]>, String> {
        let width = match self.kind {
            INT16 => 2,
            INT32 => 4,
            INT64 => 8,
            STRING_ARRAY | I18NSTRING => 0,
            1 | 2 => 1,
            _ => return Err(format!("tag {} holds no array", self.tag)),
        };
        if width > 0 {
            return Ok(self.data.chunks_exact(width).collect());
        }
        Ok(self.data.split_inclusive(|&b| b == 0).collect())
    }

    /// The entry with only the values `keep` says (one flag per value).
    pub(super) fn keeping(&self, keep: &[bool]) -> Result<Item, String> {
        let values = self.values()?;
        if values.len() != keep.len() {
            return Err(format!(
                "tag {} holds {} values, not one per file ({})",
                self.tag,
                values.len(),
                keep.len()
            ));
        }
        let kept: Vec<&[u8]> = values
            .into_iter()
            .zip(keep)
            .filter_map(|(v, &k)| k.then_some(v))
            .collect();
        Ok(Item {
            count: u32::try_from(kept.len()).unwrap_or(u32::MAX),
            data: kept.concat(),
            ..*self
        })
    }
}

/// How many bytes an entry of `kind` and `count` takes of `from` (the
/// store from its offset on), or why it cannot be told.
fn data_len(kind: u32, count: u32, from: &[u8]) -> Result<usize, String> {
    let n = count as usize;
    let fixed = match kind {
        0 => Some(0),
        1 | 2 | BIN => Some(n),
        INT16 => n.checked_mul(2),
        INT32 => n.checked_mul(4),
        INT64 => n.checked_mul(8),
        STRING | STRING_ARRAY | I18NSTRING => None,
        _ => return Err(format!("type {kind} is not a type rpm writes")),
    };
    if let Some(len) = fixed {
        return match from.len() >= len {
            true => Ok(len),
            false => Err("its data runs past the header's store".into()),
        };
    }
    if kind == STRING && count != 1 {
        return Err("a string entry counts more than one string".into());
    }
    let mut len = 0;
    for _ in 0..count {
        let nul = memchr::memchr(0, &from[len..])
            .ok_or_else(|| "a string runs past the header's store".to_string())?;
        len += nul + 1;
    }
    Ok(len)
}

/// How a type's data is aligned in the store.
fn align_of(kind: u32) -> usize {
    match kind {
        INT16 => 2,
        INT32 => 4,
        INT64 => 8,
        _ => 1,
    }
}

/// A header held as its entries, to be changed and written back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Owned {
    /// The tag of its region entry, if it has one (all rpm ≥ 4.0.1
    /// writes): the region is then the whole header.
    region: Option<u32>,
    /// The other entries, in their order.
    items: Vec<Item>,
}

impl Owned {
    /// The entries of `h` with their data. A header whose region does not
    /// span it whole (entries added after it was signed), or whose data
    /// is not laid out as rpm lays it out, is not taken.
    pub(super) fn of(h: &Header<'_>) -> Result<Owned, String> {
        let mut entries = h.entries.as_slice();
        let mut region = None;
        if let Some(first) = entries.first()
            && matches!(first.tag, HEADERIMMUTABLE | HEADERSIGNATURES)
        {
            check_region(h, *first)?;
            region = Some(first.tag);
            entries = &entries[1..];
        }
        // The region's trailer ends the store: no other data runs into it.
        let end = match region {
            Some(_) => h.store.len() - 16,
            None => h.store.len(),
        };
        let mut items = Vec::with_capacity(entries.len());
        for e in entries {
            let from = h.data(*e)?;
            let from = from
                .get(..end.saturating_sub(e.offset as usize))
                .unwrap_or_default();
            let len = data_len(e.kind, e.count, from).map_err(|why| h.lie(*e, &why))?;
            items.push(Item {
                tag: e.tag,
                kind: e.kind,
                count: e.count,
                data: from[..len].to_vec(),
            });
        }
        Ok(Owned { region, items })
    }

    /// The entry of `tag`, if any.
    pub(super) fn get(&self, tag: u32) -> Option<&Item> {
        self.items.iter().find(|i| i.tag == tag)
    }

    /// The entries.
    pub(super) fn items(&self) -> &[Item] {
        &self.items
    }

    /// Each entry replaced by what `f` makes of it (`None`: kept).
    pub(super) fn map(
        &mut self,
        mut f: impl FnMut(&Item) -> Result<Option<Item>, String>,
    ) -> Result<(), String> {
        for item in &mut self.items {
            if let Some(new) = f(item)? {
                *item = new;
            }
        }
        Ok(())
    }

    /// `item` in place of the entry of its tag, or added in the tags'
    /// order.
    pub(super) fn set(&mut self, item: Item) {
        match self.items.iter().position(|i| i.tag >= item.tag) {
            Some(at) if self.items[at].tag == item.tag => self.items[at] = item,
            Some(at) => self.items.insert(at, item),
            None => self.items.push(item),
        }
    }

    /// Removes the entry of `tag`; whether there was one.
    pub(super) fn remove(&mut self, tag: u32) -> bool {
        let before = self.items.len();
        self.items.retain(|i| i.tag != tag);
        self.items.len() < before
    }

    /// The header structure's bytes, as rpm exports one.
    pub(super) fn to_bytes(&self) -> Result<Vec<u8>, String> {
        let entries = self.items.len() + usize::from(self.region.is_some());
        if entries > MAX_ENTRIES {
            return Err(format!(
                "a header of {entries} entries is more than rpm reads"
            ));
        }
        let mut index = Vec::with_capacity(entries * 16);
        let mut store: Vec<u8> = Vec::new();
        let entry = |index: &mut Vec<u8>, tag: u32, kind: u32, offset: u32, count: u32| {
            for n in [tag, kind, offset, count] {
                index.extend_from_slice(&n.to_be_bytes());
            }
        };
        let mut rest = Vec::with_capacity(self.items.len() * 16);
        for i in &self.items {
            store.resize(store.len().next_multiple_of(align_of(i.kind)), 0);
            let offset = u32::try_from(store.len()).map_err(|_| "the header is too large")?;
            entry(&mut rest, i.tag, i.kind, offset, i.count);
            store.extend_from_slice(&i.data);
        }
        if let Some(tag) = self.region {
            // The trailer: the region's tag, its type, minus the size of
            // the region's index entries, and its own size.
            let at = u32::try_from(store.len()).map_err(|_| "the header is too large")?;
            let back = i32::try_from(entries * 16).map_err(|_| "the header is too large")?;
            entry(&mut index, tag, BIN, at, 16);
            let mut trailer = Vec::with_capacity(16);
            entry(&mut trailer, tag, BIN, (-back).cast_unsigned(), 16);
            store.extend_from_slice(&trailer);
        }
        index.extend_from_slice(&rest);
        if store.len() > MAX_STORE {
            return Err(format!(
                "a header of {} bytes is more than rpm reads",
                store.len()
            ));
        }
        let mut out = Vec::with_capacity(16 + index.len() + store.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&u32::try_from(entries).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(&u32::try_from(store.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(&index);
        out.extend_from_slice(&store);
        Ok(out)
    }
}

/// Checks that the region entry `first` of `h` spans the whole header, as
/// rpm writes it: its trailer (the region's tag, binary, minus 16 times
/// the number of entries, 16) the last 16 bytes of the store.
fn check_region(h: &Header<'_>, first: Entry) -> Result<(), String> {
    let whole = "its header's region is not the whole header (entries were added after it \
                 was made), which prune does not rewrite";
    if first.kind != BIN || first.count != 16 {
        return Err(h.lie(first, "a region entry is 16 bytes of binary data"));
    }
    let at = first.offset as usize;
    if at.checked_add(16) != Some(h.store.len()) {
        return Err(whole.into());
    }
    let t = &h.store[at..];
    let n = |i: usize| crate::bytes::be::<u32>([t[i], t[i + 1], t[i + 2], t[i + 3]]);
    // At most 64 Ki entries ([`Header::parse`]): the product fits.
    let entries = u32::try_from(h.entries.len()).unwrap_or(u32::MAX);
    let back = 0u32.wrapping_sub(entries.wrapping_mul(16));
    if n(0) != first.tag || n(4) != BIN || n(12) != 16 {
        return Err(h.lie(first, "its trailer is not a region's"));
    }
    if n(8) != back {
        return Err(whole.into());
    }
    Ok(())
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "the headers made here are small: their lengths fit in 32 bits"
)]
mod tests {
    use super::*;

    /// A header laid out as rpm exports one: a region entry (`region`)
    /// first, then `items` in their order, each aligned to its type,
    /// the region's trailer last.
    fn exported(region: u32, items: &[(u32, u32, u32, &[u8])]) -> Vec<u8> {
        let mut index = Vec::new();
        let mut store = Vec::new();
        for &(tag, kind, count, data) in items {
            while store.len() % align_of(kind) != 0 {
                store.push(0);
            }
            for n in [tag, kind, store.len() as u32, count] {
                index.extend_from_slice(&n.to_be_bytes());
            }
            store.extend_from_slice(data);
        }
        let n = items.len() as u32 + 1;
        let mut first = Vec::new();
        for v in [region, 7, store.len() as u32, 16] {
            first.extend_from_slice(&v.to_be_bytes());
        }
        for v in [region, 7, 0u32.wrapping_sub(16 * n), 16] {
            store.extend_from_slice(&v.to_be_bytes());
        }
        let mut out = vec![0x8e, 0xad, 0xe8, 0x01, 0, 0, 0, 0];
        out.extend_from_slice(&n.to_be_bytes());
        out.extend_from_slice(&(store.len() as u32).to_be_bytes());
        out.extend(first);
        out.extend(index);
        out.extend(store);
        out
    }

    /// Entries of every type and alignment: a string of odd length before
    /// 16-bit, 32-bit and 64-bit numbers, string arrays, binary data.
    fn sample() -> Vec<u8> {
        exported(
            63,
            &[
                (1000, STRING, 1, b"abc\0"),
                (1004, I18NSTRING, 1, b"x\0"),
                (1028, INT32, 3, &[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]),
                (1030, INT16, 3, &[0x81, 0xa4, 0x81, 0xa4, 0x41, 0xed]),
                (1035, STRING_ARRAY, 3, b"aa\0bb\0\0"),
                (1117, STRING_ARRAY, 3, b"a.so\0b.so\0lib\0"),
                (5008, INT64, 3, &[0; 24]),
                (5092, BIN, 3, b"xyz"),
            ],
        )
    }

    fn owned(bytes: &[u8]) -> Result<Owned, String> {
        let (h, end) = Header::parse(bytes, 0, "the header")?;
        assert_eq!(end, bytes.len());
        Owned::of(&h)
    }

    #[test]
    fn an_unchanged_header_is_written_back_byte_for_byte() {
        let bytes = sample();
        assert_eq!(owned(&bytes).unwrap().to_bytes().unwrap(), bytes);
        let sig = exported(
            62,
            &[(269, STRING, 1, b"ab\0"), (1000, INT32, 1, &[0, 0, 1, 0])],
        );
        assert_eq!(owned(&sig).unwrap().to_bytes().unwrap(), sig);
    }

    #[test]
    fn values_dropped_and_entries_changed_are_laid_out_again() {
        let mut h = owned(&sample()).unwrap();
        let keep = [true, false, true];
        h.map(|i| match i.count == 3 && i.kind != BIN {
            true => i.keeping(&keep).map(Some),
            false => Ok(None),
        })
        .unwrap();
        h.set(Item::string(1001, "1.0"));
        h.set(Item::number(1009, false, 7));
        assert!(h.remove(5092));
        assert!(!h.remove(5092));
        let want = exported(
            63,
            &[
                (1000, STRING, 1, b"abc\0"),
                (1001, STRING, 1, b"1.0\0"),
                (1004, I18NSTRING, 1, b"x\0"),
                (1009, INT32, 1, &[0, 0, 0, 7]),
                (1028, INT32, 2, &[0, 0, 0, 1, 0, 0, 0, 3]),
                (1030, INT16, 2, &[0x81, 0xa4, 0x41, 0xed]),
                (1035, STRING_ARRAY, 2, b"aa\0\0"),
                (1117, STRING_ARRAY, 2, b"a.so\0lib\0"),
                (5008, INT64, 2, &[0; 16]),
            ],
        );
        let got = h.to_bytes().unwrap();
        assert_eq!(got, want);
        // What was written reads back as the same entries.
        assert_eq!(owned(&got).unwrap(), h);
        let e = h.items()[4].keeping(&[true]).unwrap_err();
        assert!(e.contains("not one per file"), "{e}");
    }

    #[test]
    fn a_region_short_of_the_whole_header_or_a_bad_entry_is_refused() {
        // A trailer that counts fewer entries than the header has.
        let mut bytes = sample();
        let trailer = bytes.len() - 16;
        bytes[trailer + 8..trailer + 12].copy_from_slice(&0u32.wrapping_sub(32).to_be_bytes());
        let e = owned(&bytes).unwrap_err();
        assert!(e.contains("region is not the whole header"), "{e}");
        // A string that runs off the store.
        let bad = exported(63, &[(1000, STRING_ARRAY, 5, b"a\0b\0")]);
        let e = owned(&bad).unwrap_err();
        assert!(
            e.contains("tag 1000") && e.contains("past the header's store"),
            "{e}"
        );
        // A type rpm does not write.
        let bad = exported(63, &[(1000, 12, 1, b"a\0")]);
        assert!(owned(&bad).unwrap_err().contains("type 12"));
    }
}

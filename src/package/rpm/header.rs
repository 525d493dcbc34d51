//! An RPM header structure (the signature header and the main header share
//! it): the magic `8E AD E8 01`, four reserved bytes, the number of index
//! entries and the size of the data store (32-bit big-endian each), the
//! entries (tag, type, offset into the store, count: 16 bytes each), then
//! the store. Every entry's data is checked to lie within the store before
//! it is used.

/// The magic that starts a header structure.
pub(super) const MAGIC: [u8; 4] = [0x8e, 0xad, 0xe8, 0x01];

/// The most index entries a header may have, and the largest store (as
/// rpm itself bounds them: 64 Ki entries, 256 MiB of data).
const MAX_ENTRIES: u32 = 0xffff;
const MAX_STORE: u32 = 0x0fff_ffff;

/// Entry types, as the format numbers them.
pub(super) const INT16: u32 = 3;
pub(super) const INT32: u32 = 4;
pub(super) const INT64: u32 = 5;
pub(super) const STRING: u32 = 6;
pub(super) const BIN: u32 = 7;
pub(super) const STRING_ARRAY: u32 = 8;
pub(super) const I18NSTRING: u32 = 9;

/// One index entry.
#[derive(Clone, Copy)]
pub(super) struct Entry {
    pub(super) tag: u32,
    pub(super) kind: u32,
    pub(super) offset: u32,
    pub(super) count: u32,
}

/// A header read from a package's bytes.
pub(super) struct Header<'a> {
    pub(super) entries: Vec<Entry>,
    pub(super) store: &'a [u8],
}

/// A big-endian `u32` at `at` in `b` (the caller checked the length).
fn be32(b: &[u8], at: usize) -> u32 {
    crate::bytes::be::<u32>([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl<'a> Header<'a> {
    /// The header that starts `at` in `bytes` (`what` names it in
    /// errors: "the signature header"), and where it ends.
    pub(super) fn parse(bytes: &'a [u8], at: usize, what: &str) -> Result<(Self, usize), String> {
        let intro = at
            .checked_add(16)
            .and_then(|end| bytes.get(at..end))
            .ok_or_else(|| format!("{what} at offset {at} is cut short"))?;
        if intro[..4] != MAGIC {
            return Err(format!(
                "{what} at offset {at} does not start with the header magic 8e ad e8 01"
            ));
        }
        let (count, size) = (be32(intro, 8), be32(intro, 12));
        if count > MAX_ENTRIES || size > MAX_STORE {
            return Err(format!(
                "{what} claims {count} entries and {size} bytes of data, past what a header may hold"
            ));
        }
        // Both fit in 32 bits, the entries' bytes in 20 + 4: no overflow.
        let index_at = at + 16;
        let store_at = index_at + count as usize * 16;
        let end = store_at + size as usize;
        let (index, store) = match (bytes.get(index_at..store_at), bytes.get(store_at..end)) {
            (Some(i), Some(s)) => (i, s),
            _ => {
                return Err(format!(
                    "{what} claims {count} entries and {size} bytes of data, which end past the \
                     file ({} bytes)",
                    bytes.len()
                ));
            }
        };
        let entries = index
            .chunks_exact(16)
            .map(|e| Entry {
                tag: be32(e, 0),
                kind: be32(e, 4),
                offset: be32(e, 8),
                count: be32(e, 12),
            })
            .collect();
        Ok((Header { entries, store }, end))
    }

    /// The entry of `tag`, if any.
    fn entry(&self, tag: u32) -> Option<Entry> {
        self.entries.iter().find(|e| e.tag == tag).copied()
    }

    /// The store's bytes from the entry's offset on, checked.
    pub(super) fn data(&self, e: Entry) -> Result<&'a [u8], String> {
        self.store
            .get(e.offset as usize..)
            .ok_or_else(|| self.lie(e, "its data starts past the header's store"))
    }

    /// The error for entry `e`, which says `why`.
    pub(super) fn lie(&self, e: Entry, why: &str) -> String {
        format!(
            "the header's tag {} (type {}, count {}, offset {}) is damaged: {why}",
            e.tag, e.kind, e.count, e.offset
        )
    }

    /// The strings of `tag` (a string array, or one string), each without
    /// its terminating NUL; `None` when the header has no such tag.
    pub(super) fn strings(&self, tag: u32) -> Result<Option<Vec<&'a [u8]>>, String> {
        let Some(e) = self.entry(tag) else {
            return Ok(None);
        };
        let count = match e.kind {
            STRING => 1,
            STRING_ARRAY | I18NSTRING => e.count,
            _ => return Err(self.lie(e, "it is not a string")),
        };
        let mut rest = self.data(e)?;
        // Each string takes a byte at least: a count past the store is a
        // lie found before anything is allocated for it.
        if count as usize > rest.len() {
            return Err(self.lie(e, "it counts more strings than its data holds"));
        }
        let mut out = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let nul = memchr::memchr(0, rest)
                .ok_or_else(|| self.lie(e, "a string runs past the header's store"))?;
            out.push(&rest[..nul]);
            rest = &rest[nul + 1..];
        }
        Ok(Some(out))
    }

    /// The one string of `tag`, if the header has it.
    pub(super) fn string(&self, tag: u32) -> Result<Option<&'a [u8]>, String> {
        Ok(self.strings(tag)?.and_then(|s| s.into_iter().next()))
    }

    /// The numbers of `tag`, an array of big-endian integers of `width`
    /// bytes (type `kind`), widened; `None` when the header has no such tag.
    fn numbers(&self, tag: u32, kind: u32, width: usize) -> Result<Option<Vec<u64>>, String> {
        let Some(e) = self.entry(tag) else {
            return Ok(None);
        };
        if e.kind != kind {
            return Err(self.lie(e, &format!("it is not an array of {width}-byte numbers")));
        }
        let len = (e.count as usize)
            .checked_mul(width)
            .ok_or_else(|| self.lie(e, "its count is too large"))?;
        let data = self
            .data(e)?
            .get(..len)
            .ok_or_else(|| self.lie(e, "its numbers run past the header's store"))?;
        let wide = |c: &[u8]| c.iter().fold(0u64, |n, &b| (n << 8) | u64::from(b));
        Ok(Some(data.chunks_exact(width).map(wide).collect()))
    }

    /// The 16-bit numbers of `tag`.
    pub(super) fn int16s(&self, tag: u32) -> Result<Option<Vec<u64>>, String> {
        self.numbers(tag, INT16, 2)
    }

    /// The 32-bit numbers of `tag`.
    pub(super) fn int32s(&self, tag: u32) -> Result<Option<Vec<u64>>, String> {
        self.numbers(tag, INT32, 4)
    }

    /// The 64-bit numbers of `tag`.
    pub(super) fn int64s(&self, tag: u32) -> Result<Option<Vec<u64>>, String> {
        self.numbers(tag, INT64, 8)
    }
}

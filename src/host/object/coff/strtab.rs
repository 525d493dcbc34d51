//! The COFF string table as LLVM's `StringTableBuilder` (`WinCOFF` kind)
//! lays it out for llvm-objcopy: a 4-byte size field, then the strings,
//! each ending in a null byte. Long section names go first (so that their
//! offsets stay short enough for the 8-byte name field), then the other
//! strings; within each group the strings are sorted by their reversed
//! bytes, descending, and a string that is a suffix of the one placed just
//! before it shares its bytes (also across the two groups).
//!
//! LLVM's COFF object writer (`llc -filetype=obj`) builds the same table
//! with a single group: the wrapper's COFF objects (`crate::wrap`) pass no
//! section names as the first group.

use std::collections::BTreeMap;

/// A finished string table.
#[derive(Debug, Clone)]
pub(crate) struct StringTable {
    bytes: Vec<u8>,
    offsets: BTreeMap<Vec<u8>, u64>,
}

impl StringTable {
    /// The table of `first` (long section names) and `rest` (long symbol
    /// names); a string in both counts as a section name.
    pub(crate) fn build(first: &[&[u8]], rest: &[&[u8]]) -> StringTable {
        let mut high: Vec<&[u8]> = first.to_vec();
        high.sort_unstable();
        high.dedup();
        let mut low: Vec<&[u8]> = rest
            .iter()
            .copied()
            .filter(|s| high.binary_search(s).is_err())
            .collect();
        low.sort_unstable();
        low.dedup();
        let by_reversed = |a: &&[u8], b: &&[u8]| b.iter().rev().cmp(a.iter().rev());
        high.sort_by(by_reversed);
        low.sort_by(by_reversed);
        let mut bytes = vec![0u8; 4];
        let mut offsets = BTreeMap::new();
        let mut prev: Option<(&[u8], u64)> = None;
        for s in high.into_iter().chain(low) {
            let off = match prev {
                Some((p, at)) if p.ends_with(s) => at + (p.len() - s.len()) as u64,
                _ => {
                    let at = bytes.len() as u64;
                    bytes.extend_from_slice(s);
                    bytes.push(0);
                    prev = Some((s, at));
                    at
                }
            };
            offsets.insert(s.to_vec(), off);
        }
        StringTable { bytes, offsets }
    }

    /// The table's size in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// The table's bytes, the size field filled in with `size` (the
    /// caller has checked that the size fits).
    pub(crate) fn into_bytes(mut self, size: u32) -> Vec<u8> {
        self.bytes[..4].copy_from_slice(&size.to_le_bytes());
        self.bytes
    }

    /// The offset of `s`, which must have been added.
    pub(crate) fn offset(&self, s: &[u8]) -> Option<u64> {
        self.offsets.get(s).copied()
    }
}

/// The 8-byte name field of a section whose name is at `offset` in the
/// string table: `/` and the offset in decimal up to 9,999,999, then `//`
/// and six base-64 digits; `None` past 64^6 - 1.
pub(crate) fn long_section_name(offset: u64) -> Option<[u8; 8]> {
    let mut out = [0u8; 8];
    if offset <= 9_999_999 {
        let text = format!("/{offset}");
        out[..text.len()].copy_from_slice(text.as_bytes());
        return Some(out);
    }
    if offset >= 1 << 36 {
        return None;
    }
    const DIGITS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    out[..2].copy_from_slice(b"//");
    let mut v = offset;
    for slot in out[2..].iter_mut().rev() {
        // The low six bits: the last base-64 digit.
        *slot = DIGITS[usize::from(v.to_le_bytes()[0] & 63)];
        v /= 64;
    }
    Some(out)
}

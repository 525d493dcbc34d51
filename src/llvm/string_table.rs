//! LLVM's `StringTableBuilder` in its ELF flavour, as the OffloadBinary writer
//! uses it: byte 0 is NUL (the empty string's offset), the distinct non-empty
//! strings are sorted by their reversed bytes in descending order, and a string
//! that is a suffix of the string placed just before it shares that string's
//! tail instead of being stored again.

use std::collections::BTreeMap;

/// A finished string table: its bytes and the offset of every added string.
#[derive(Debug, Clone)]
pub struct StringTable {
    bytes: Vec<u8>,
    offsets: BTreeMap<Vec<u8>, u64>,
}

impl StringTable {
    /// Builds the table holding `strings` (duplicates and order do not matter).
    pub fn build<'a>(strings: impl IntoIterator<Item = &'a [u8]>) -> StringTable {
        let mut uniq: Vec<&[u8]> = strings.into_iter().filter(|s| !s.is_empty()).collect();
        uniq.sort_unstable();
        uniq.dedup();
        // Descending by reversed bytes; a string sorts below any string that
        // extends it to the left (it is a suffix of it), so the longer comes
        // first and the shorter can share its tail.
        uniq.sort_by(|a, b| b.iter().rev().cmp(a.iter().rev()));
        let mut bytes = vec![0u8];
        let mut offsets = BTreeMap::new();
        offsets.insert(Vec::new(), 0);
        let mut prev: Option<(&[u8], u64)> = None;
        for s in uniq {
            let off = match prev {
                Some((p, poff)) if p.ends_with(s) => poff + (p.len() - s.len()) as u64,
                _ => {
                    let off = bytes.len() as u64;
                    bytes.extend_from_slice(s);
                    bytes.push(0);
                    prev = Some((s, off));
                    off
                }
            };
            offsets.insert(s.to_vec(), off);
        }
        StringTable { bytes, offsets }
    }

    /// The table's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The offset of `s`, which must have been added.
    pub fn offset(&self, s: &[u8]) -> Option<u64> {
        self.offsets.get(s).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_layout_llvm_writes() {
        // From a real llvm-offload-binary 22 output (spec §9.1 dump).
        let t = StringTable::build(
            [&b"arch"[..], b"gfx908", b"triple", b"amdgcn-amd-amdhsa"]
                .iter()
                .copied(),
        );
        assert_eq!(t.bytes(), b"\0arch\0triple\0amdgcn-amd-amdhsa\0gfx908\0");
        assert_eq!(t.offset(b"arch"), Some(1));
        assert_eq!(t.offset(b""), Some(0));
    }

    #[test]
    fn tail_merges_suffixes() {
        let t = StringTable::build([&b"march"[..], b"arch", b"h"].iter().copied());
        assert_eq!(t.bytes(), b"\0march\0");
        assert_eq!(t.offset(b"arch"), Some(2));
        assert_eq!(t.offset(b"h"), Some(5));
    }
}

//! The first pass over the module's metadata: every record that defines
//! metadata numbered in order, the strings equal to `.llvm.offloading`, and
//! the operands of `llvm.embedded.objects`.

use super::codes::{
    EMBEDDED_OBJECTS, METADATA_BLOCK, METADATA_DISTINCT_NODE, METADATA_NAME, METADATA_NAMED_NODE,
    METADATA_NODE, METADATA_STRING_OLD, METADATA_STRINGS, METADATA_VALUE, defines_metadata,
};
use super::{At, MAX_OPERANDS, Md, Module, OFFLOADING_SECTION, Run, all_values};
use crate::bitcode::stream::{Bits, Entry, Res, Value};

impl Module<'_> {
    fn push_md(&mut self, md: Md, count: u64) -> Res<()> {
        let first = self.next_md;
        self.next_md = first.checked_add(count).ok_or("too many metadata")?;
        if let (Md::Other | Md::String, Some(last)) = (md, self.mds.last_mut())
            && last.what == md
        {
            last.count += count;
            return Ok(());
        }
        self.keep(1)?;
        self.mds.push(Run {
            first,
            count,
            what: md,
        });
        Ok(())
    }

    pub(super) fn read_metadata(&mut self) -> Res<()> {
        self.cur.enter(METADATA_BLOCK)?;
        let block = self.md_blocks.len();
        loop {
            let entry = self.cur.next()?;
            let id = match entry {
                Entry::End => {
                    self.md_blocks.push(self.cur.take_closed());
                    return Ok(());
                }
                Entry::Block(_) => {
                    self.cur.skip()?;
                    continue;
                }
                Entry::Record(id) => id,
            };
            let pos = self.cur.bits.pos();
            let mut r = self.cur.record(id)?;
            match r.code() {
                METADATA_STRINGS => {
                    let blob = r.values(&mut self.vals, MAX_OPERANDS)?;
                    self.strings(blob.unwrap_or(&[]))?;
                }
                METADATA_STRING_OLD => {
                    all_values(&mut r, &mut self.vals)?;
                    let same = self
                        .vals
                        .iter()
                        .map(|&v| v.to_le_bytes()[0])
                        .eq(OFFLOADING_SECTION.bytes());
                    if same {
                        self.offloading.push(self.next_md);
                    }
                    self.push_md(Md::String, 1)?;
                }
                METADATA_VALUE => {
                    r.values(&mut self.vals, MAX_OPERANDS)?;
                    let &[_, value] = self.vals.as_slice() else {
                        return Err("METADATA_VALUE record is not [type, value]");
                    };
                    self.push_md(Md::Value(value), 1)?;
                }
                METADATA_NODE | METADATA_DISTINCT_NODE => {
                    r.skip_rest()?;
                    self.push_md(Md::Node(At { block, pos, id }), 1)?;
                }
                METADATA_NAME => {
                    r.values(&mut self.vals, MAX_OPERANDS)?;
                    let wanted = self
                        .vals
                        .iter()
                        .map(|&v| v.to_le_bytes()[0])
                        .eq(EMBEDDED_OBJECTS.iter().copied());
                    self.named_node(wanted)?;
                }
                code => match defines_metadata(code) {
                    Some(true) => {
                        r.skip_rest()?;
                        self.push_md(Md::Other, 1)?;
                    }
                    Some(false) => r.skip_rest()?,
                    None => {
                        return Err(
                            "a metadata record this reader does not know (the numbering of \
                             the metadata after it would be a guess)",
                        );
                    }
                },
            }
        }
    }

    /// The `METADATA_NAMED_NODE` record that must follow a `METADATA_NAME`;
    /// its operands are kept when `wanted`.
    fn named_node(&mut self, wanted: bool) -> Res<()> {
        let Entry::Record(id) = self.cur.next()? else {
            return Err("METADATA_NAME not followed by METADATA_NAMED_NODE");
        };
        let mut r = self.cur.record(id)?;
        if r.code() != METADATA_NAMED_NODE {
            return Err("METADATA_NAME not followed by METADATA_NAMED_NODE");
        }
        if !wanted {
            return r.skip_rest();
        }
        let max = usize::try_from(self.cap).unwrap_or(usize::MAX);
        while let Some(v) = r.next()? {
            let Value::Scalar(md) = v else {
                return Err("blob in METADATA_NAMED_NODE");
            };
            if self.named.len() >= max {
                return Err(
                    "llvm.embedded.objects has more operands than the bitcode's size allows",
                );
            }
            self.named.push(md);
        }
        Ok(())
    }

    /// A `METADATA_STRINGS` record's blob (the record's operands, count
    /// and offset, in `self.vals`): the lengths as VBR6 fields, then the
    /// characters from the offset.
    fn strings(&mut self, blob: &[u8]) -> Res<()> {
        let &[count, offset] = self.vals.as_slice() else {
            return Err("METADATA_STRINGS record is not [count, offset, blob]");
        };
        if count == 0 {
            return Err("METADATA_STRINGS with no strings");
        }
        let offset = usize::try_from(offset)
            .ok()
            .filter(|&o| o <= blob.len())
            .ok_or("METADATA_STRINGS offset past its blob")?;
        let (lengths, mut chars) = blob.split_at(offset);
        let mut bits = Bits::new(lengths);
        // Each length takes at least 6 bits.
        if count > bits.len() / 6 {
            return Err("METADATA_STRINGS lengths truncated");
        }
        for i in 0..count {
            let len = bits
                .vbr(6)
                .map_err(|_| "METADATA_STRINGS lengths truncated")?;
            let len = usize::try_from(len)
                .ok()
                .filter(|&l| l <= chars.len())
                .ok_or("METADATA_STRINGS characters truncated")?;
            let (s, rest) = chars.split_at(len);
            if s == OFFLOADING_SECTION.as_bytes() {
                self.offloading.push(self.next_md + i);
            }
            chars = rest;
        }
        self.push_md(Md::String, count)
    }

    /// What metadata ID `id` is.
    pub(super) fn md(&self, id: u64) -> Option<Md> {
        let i = self.mds.partition_point(|r| r.first + r.count <= id);
        self.mds
            .get(i)
            .filter(|r| r.first <= id && id - r.first < r.count)
            .map(|r| r.what)
    }
}

//! Clang offload bundles, binary and text, and the entries of object
//! bundles: each entry an image, its kind told from its first bytes;
//! entries that overlap an earlier one are reported and left unread.

use super::walker::{
    Loc, Ranges, SNIFF_HEAD, Walker, lossy, overlap_message, sniff, split_target_id,
};
use crate::bundle::{self, binary, text};
use crate::error::Result;
use crate::num::len64;
use crate::scan::{ContainerKind, Image, Offload};

impl Walker<'_> {
    /// A binary bundle at `sub`, its entries as images; returns the bytes
    /// it spans (its header or its last entry's end, whichever is later).
    pub(super) fn bundle(&mut self, sub: &[u8], loc: &Loc, rel: u64) -> Result<u64> {
        let entries = binary::read(sub)?;
        let header_end = binary::header_size(&entries);
        let extent = entries
            .iter()
            .map(|e| e.offset + len64(e.data))
            .fold(header_end, u64::max);
        let id = self.new_container(ContainerKind::Bundle, None, loc, rel, extent);
        let inner = Loc {
            depth: loc.depth + 1,
            ..loc.clone()
        };
        let mut ranges = Ranges::default();
        for (i, e) in entries.iter().enumerate() {
            if self.stopped() {
                break;
            }
            let size = len64(e.data);
            if let Some(j) = ranges.take(e.offset, e.offset + size, i) {
                self.problem(
                    &inner.at(e.offset),
                    Some(id),
                    overlap_message(i, j, e.offset, e.offset + size),
                );
                let at = EntryAt::new(id, i, e.id, e.offset, len64(e.data));
                self.overlapping_entry(&at, j, e.data, &inner);
                continue;
            }
            let at = EntryAt::new(id, i, e.id, e.offset, size);
            self.bundle_entry(&at, Some(e.data), &inner);
        }
        Ok(extent)
    }

    /// `bytes` as a text bundle whose markers start with `prefix`.
    pub(super) fn text_bundle(&mut self, bytes: &[u8], prefix: &str, loc: &Loc) {
        match text::read(bytes, prefix) {
            Ok(entries) => {
                let id = self.new_container(ContainerKind::TextBundle, None, loc, 0, len64(bytes));
                let inner = Loc {
                    depth: loc.depth + 1,
                    ..loc.clone()
                };
                let base = bytes.as_ptr() as usize;
                for (i, e) in entries.iter().enumerate() {
                    if self.stopped() {
                        break;
                    }
                    let off = (e.data.as_ptr() as usize).saturating_sub(base) as u64;
                    let at = EntryAt::new(id, i, e.id, off, len64(e.data));
                    self.bundle_entry(&at, Some(e.data), &inner);
                }
            }
            Err(e) => self.problem(loc, None, format!("invalid text bundle: {e}")),
        }
    }

    /// Pushes one bundle entry; `loc` is its container's inside.
    pub(super) fn bundle_entry(&mut self, e: &EntryAt<'_>, bytes: Option<&[u8]>, loc: &Loc) {
        let image = self.bundle_image(e, bytes, loc);
        self.push_image(image, bytes, &loc.at(e.offset));
    }

    /// Pushes bundle entry `e` whose bytes overlap those of entry
    /// `overlaps`: its kind from its first bytes, nothing else read (no
    /// hash, no visitor, no containers inside).
    pub(super) fn overlapping_entry(
        &mut self,
        e: &EntryAt<'_>,
        overlaps: usize,
        bytes: &[u8],
        loc: &Loc,
    ) {
        let head = &bytes[..bytes.len().min(SNIFF_HEAD)];
        let mut image = self.bundle_image(e, None, loc);
        image.image_kind = Some(sniff(head));
        image.overlaps = Some(overlaps);
        self.push_image(image, None, &loc.at(e.offset));
    }

    /// The image of bundle entry `e`: what its ID says, and its kind from
    /// `bytes` when they are read.
    pub(super) fn bundle_image(&self, e: &EntryAt<'_>, bytes: Option<&[u8]>, loc: &Loc) -> Image {
        let EntryAt {
            container,
            index,
            id,
            offset,
            size,
        } = *e;
        let text = lossy(id);
        let d = bundle::id::describe(&text);
        let kind = Offload::of_bundle_kind(&d.kind);
        let (triple, target_id) = (d.triple, d.target_id);
        let (arch, features) = split_target_id(&target_id);
        Image {
            id: 0,
            container,
            index,
            bundle_id: Some(text),
            offload_kind: kind,
            image_kind: bytes.map(sniff),
            triple,
            arch,
            target_id,
            features,
            cuda_arch: None,
            strings: Vec::new(),
            section: loc.section.clone(),
            member: loc.member.clone(),
            offset: loc.abs.and_then(|a| a.checked_add(offset)),
            relative_offset: offset,
            size,
            uncompressed_size: None,
            in_compressed: loc.in_compressed,
            hash: None,
            nested: None,
            overlaps: None,
        }
    }
}

/// Where a binary bundle with these records ends: after its header or
/// its last entry's data, whichever is later.
pub(super) fn bundle_extent(records: &[binary::Record]) -> u64 {
    let header = 32 + records.iter().map(|r| 24 + len64(&r.id)).sum::<u64>();
    records
        .iter()
        .map(|r| r.offset + r.size)
        .fold(header, u64::max)
}

/// Where a bundle entry lies: its container, its index there, its ID, and
/// its offset and size inside the container.
#[derive(Clone, Copy)]
pub(super) struct EntryAt<'b> {
    pub(super) container: usize,
    pub(super) index: usize,
    pub(super) id: &'b [u8],
    pub(super) offset: u64,
    pub(super) size: u64,
}

impl<'b> EntryAt<'b> {
    pub(super) fn new(
        container: usize,
        index: usize,
        id: &'b [u8],
        offset: u64,
        size: u64,
    ) -> Self {
        EntryAt {
            container,
            index,
            id,
            offset,
            size,
        }
    }
}

//! OffloadBinaries (`10 FF 10 AD`): their images, a compressed binary
//! streamed when its tables come first (as LLVM writes them) and inflated
//! whole otherwise.

use super::stream::Source;
use super::walker::{Loc, Walker, lossy, over_budget, split_target_id};
use crate::error::{Error, Result};
use crate::num::len64;
use crate::offload_binary::{self, OffloadImage};
use crate::scan::MAX_WHOLE;
use crate::scan::magic::Magic;
use crate::scan::tap::Tap;
use crate::scan::{Compression, ContainerKind, Content, Image, Offload, Unread};

impl Walker<'_> {
    /// An OffloadBinary at `sub`, its images walked; returns its size.
    pub(super) fn offload_binary(&mut self, sub: &[u8], loc: &Loc, rel: u64) -> Result<u64> {
        if let Some(head) = offload_binary::header_summary(sub)
            && head.method.is_some()
            && (!self.fits(head.inflated_size) || !self.setup(head.inflated_size))
        {
            return Err(over_budget(head.inflated_size, self.budget));
        }
        let limits = crate::Limits::uncompressed(self.budget);
        if let Some(inflating) = offload_binary::read_inflating(sub, 0, &limits)?
            && let Some(size) = self.offload_binary_streamed(&inflating, sub, loc, rel)?
        {
            return Ok(size);
        }
        if let Some(head) = offload_binary::header_summary(sub)
            && head.method.is_some()
            && !self.whole(head.inflated_size)
        {
            return Err(over_budget(head.inflated_size, MAX_WHOLE));
        }
        let mut imgs: Vec<OffloadImage<'_>> = Vec::new();
        let size = offload_binary::read_binary(sub, 0, &limits, &mut imgs)?;
        let compressed = imgs.first().is_some_and(|i| i.compressed);
        if compressed && let Some(head) = offload_binary::header_summary(sub) {
            self.report.decompressed = self.report.decompressed.saturating_add(head.inflated_size);
        }
        let (id, inner) = self.push_offload_binary(size, compressed, sub, loc, rel)?;
        for (i, img) in imgs.iter().enumerate() {
            if self.stopped() {
                break;
            }
            let image = self.offload_image(id, i, img, len64(&img.image), loc, &inner);
            let at = if compressed {
                Loc {
                    abs: None,
                    ..inner.clone()
                }
            } else {
                inner.at(img.image_offset)
            };
            self.push_image(image, Some(&img.image), &at);
        }
        Ok(size)
    }

    /// A compressed OffloadBinary whose tables come first, as LLVM writes
    /// them: the inflated binary is streamed once, each image's first
    /// bytes and hash taken as it passes, and the images a visitor wants
    /// streamed to it in a second pass, so the binary is never in memory.
    /// The report is the one the whole-buffer walk makes. `None` (nothing
    /// reported) when an image starts with a container's magic: the caller
    /// then inflates the binary whole and walks the containers inside from
    /// memory, as for a CCOB.
    fn offload_binary_streamed(
        &mut self,
        b: &offload_binary::Inflating<'_>,
        sub: &[u8],
        loc: &Loc,
        rel: u64,
    ) -> Result<Option<u64>> {
        let mut taps: Vec<Tap> = b
            .images
            .iter()
            .map(|p| self.first_pass_tap(p.meta.image_offset, p.size))
            .collect();
        let declared = b.inflated_size;
        let limit = self.budget;
        let source = Source::Decoded(b.reader()?, declared);
        self.tap_charged(source, &mut taps, declared, limit)?;
        if taps.iter().any(|t| Magic::at_start(&t.head).is_some()) {
            return Ok(None);
        }
        let (id, inner) = self.push_offload_binary(b.size, true, sub, loc, rel)?;
        let at = Loc {
            abs: None,
            ..inner.clone()
        };
        let mut ids = Vec::new();
        for (i, (p, t)) in b.images.iter().zip(taps).enumerate() {
            if self.stopped() {
                break;
            }
            let mut image = self.offload_image(id, i, &p.meta, p.size, loc, &inner);
            image.hash = t.hasher.map(crate::scan::Hasher::finish);
            ids.push(self.push_image(image, None, &at));
        }
        let wanted = self.wanted(ids);
        if !wanted.is_empty() {
            let mut taps = self.visitor_taps(&wanted);
            // The same bytes again: within the same budget.
            let run = b
                .reader()
                .and_then(|r| self.tap(Source::Decoded(r, declared), &mut taps, declared, limit));
            if let Err(e) = &run {
                self.problem(loc, Some(id), format!("cannot decompress: {e}"));
            }
            self.hand_over(&wanted, taps, run.map(|_| ()).map_err(Unread::from));
        }
        Ok(Some(b.size))
    }

    /// Reports the OffloadBinary `sub` starts with (`size` bytes as
    /// stored, `compressed` or not), its inflated size taken from the
    /// budget; returns its id and where its images lie.
    fn push_offload_binary(
        &mut self,
        size: u64,
        compressed: bool,
        sub: &[u8],
        loc: &Loc,
        rel: u64,
    ) -> Result<(usize, Loc)> {
        let head = offload_binary::header_summary(sub)
            .ok_or_else(|| Error::invalid("OffloadBinary header", "shorter than its 32 bytes"))?;
        let id = self.new_container(
            ContainerKind::OffloadBinary,
            Some(head.version),
            loc,
            rel,
            size,
        );
        if compressed {
            let inflated = head.inflated_size;
            let body_at = head.body_offset;
            self.budget = self.budget.saturating_sub(inflated);
            self.report.containers[id].compression = Some(Compression {
                method: head.method.unwrap_or("zlib").into(),
                compressed_size: size.saturating_sub(body_at),
                uncompressed_size: inflated.saturating_sub(body_at),
                stored_hash: None,
                decompressed: true,
                hash_ok: None,
            });
        }
        let inner = Loc {
            depth: loc.depth + 1,
            in_compressed: loc.in_compressed || compressed,
            ..loc.clone()
        };
        Ok((id, inner))
    }

    /// Image `i` (`size` bytes) of OffloadBinary container `id` at `loc`,
    /// its inside `inner`.
    fn offload_image(
        &self,
        id: usize,
        i: usize,
        img: &OffloadImage<'_>,
        size: u64,
        loc: &Loc,
        inner: &Loc,
    ) -> Image {
        let arch_full = lossy(img.arch());
        let (arch, features) = split_target_id(&arch_full);
        let strings = img
            .strings
            .iter()
            .filter(|(k, _)| &**k != b"triple" && &**k != b"arch")
            .map(|(k, v)| (lossy(k), lossy(v)))
            .collect();
        Image {
            id: 0,
            container: id,
            index: i,
            bundle_id: None,
            offload_kind: Offload::Kind(img.offload_kind),
            image_kind: Some(Content::Image(img.image_kind)),
            triple: lossy(img.triple()),
            arch,
            target_id: arch_full,
            features,
            cuda_arch: None,
            strings,
            section: loc.section.clone(),
            member: loc.member.clone(),
            offset: if img.compressed {
                None
            } else {
                loc.abs.and_then(|a| a.checked_add(img.image_offset))
            },
            relative_offset: img.image_offset,
            size,
            uncompressed_size: None,
            in_compressed: inner.in_compressed,
            hash: None,
            nested: None,
            overlaps: None,
        }
    }
}

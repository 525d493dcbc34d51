//! Compressed offload bundles (CCOB): listed from the bundle header when
//! nothing needs the contents, streamed when the hash or a visitor does
//! (the contents never in memory), decompressed whole when an entry holds
//! containers of its own.

use super::bundle::bundle_extent;
use super::stream::Source;
use super::walker::{Expect, Loc, Ranges, SNIFF_HEAD, Walker, over_budget, overlap_message, sniff};
use crate::bundle::ccob::{self as ccob, Ccob, HashCheck, ReadOptions};
use crate::bundle::{self, binary};
use crate::error::Result;
use crate::num::{len64, usize_from};
use crate::scan::magic::Magic;
use crate::scan::tap::Tap;
use crate::scan::{Compression, ContainerKind, Image, Parent, StoredHash, Unread};

impl Walker<'_> {
    /// A CCOB at `sub`: its contents listed, streamed or walked as the
    /// options and the visitor need (see the module docs).
    pub(super) fn ccob(&mut self, sub: &[u8], loc: &Loc, rel: u64) -> Result<u64> {
        let mut c = Ccob::parse(sub)?;
        if !self.setup(c.header.uncompressed_size) {
            return Err(over_budget(c.header.uncompressed_size, self.budget));
        }
        c.end_v1_zlib_stream(c.header.uncompressed_size.min(self.budget))?;
        // Listing reads only the bundle header; a size the payload cannot
        // produce is still caught.
        c.check_declared_size()?;
        let mut full = self.opts.verify || self.opts.hash.is_some();
        // A bundle header that cannot be read is left to the whole-buffer
        // read to name, with or without the options that decompress
        // everything: the CCOB itself is sound (its header and stream
        // read), so it is a container with damage inside, never a rejected
        // raw-scan candidate whose bytes are scanned again as if loose.
        let records = match c.bundle_records() {
            Ok(r) => r,
            Err(_) => {
                full = true;
                None
            }
        };
        if !full && records.is_none() {
            // Not a binary bundle: a text or object bundle is listed from
            // the whole contents; anything else is none, and a bomb of
            // zeros is not decompressed past its first bytes.
            let prefix = c.decompress_prefix(bundle::SNIFF_LEN)?;
            if !bundle::may_be_text_or_object_bundle(&prefix) {
                let id = self.push_ccob(&c, loc, rel);
                self.problem(
                    loc,
                    Some(id),
                    "the compressed data is not a bundle (judged from its first bytes; \
                     --verify decompresses it all)"
                        .into(),
                );
                return Ok(c.size);
            }
        }
        let inner = Loc {
            abs: None,
            depth: loc.depth + 1,
            in_compressed: true,
            ..loc.clone()
        };
        if let Some(records) = &records
            && full
            && self.ccob_streamed_whole(&c, loc, rel, &inner, records)?
        {
            return Ok(c.size);
        }
        if let Some(records) = records.filter(|_| !full) {
            // Header only, unless the visitor wants an image.
            self.ccob_listed(&c, loc, rel, inner, &records);
            return Ok(c.size);
        }
        let d = self.decompress(&c)?;
        let id = self.push_ccob(&c, loc, rel);
        self.note_decompressed(id, d.header.hash, d.computed_hash);
        let inner = Loc {
            parent: Some(Parent::Container(id)),
            ..inner
        };
        self.region(&d.data, &inner, Expect::Sequence { whole: true });
        Ok(c.size)
    }

    /// A CCOB holding a binary bundle, without
    /// [`Options::verify`](crate::scan::Options::verify) and
    /// [`Options::hash`](crate::scan::Options::hash): reported from the
    /// bundle header (`inner`: the CCOB's inside), each entry's kind from
    /// its first bytes. Entries a visitor wants are streamed to it; when an
    /// entry holds containers of its own, the contents are decompressed and
    /// walked from memory instead.
    fn ccob_listed(
        &mut self,
        c: &Ccob<'_>,
        loc: &Loc,
        rel: u64,
        inner: Loc,
        records: &[binary::Record],
    ) {
        let id = self.push_ccob(c, loc, rel);
        let inner = Loc {
            parent: Some(Parent::Container(id)),
            ..inner
        };
        let mut drafts: Vec<Image> = records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let at = super::bundle::EntryAt::new(0, i, &r.id, r.offset, r.size);
                self.bundle_image(&at, None, &inner)
            })
            .collect();
        let nested = self.peek_kinds(c, records, &mut drafts);
        let mut wanted = false;
        for d in &drafts {
            wanted |= self.visit.wants(d);
        }
        if !wanted {
            if inner.depth >= self.opts.max_depth {
                self.problem(loc, Some(id), "containers nested too deeply".into());
                return;
            }
            let b = self.new_container(
                ContainerKind::Bundle,
                None,
                &inner,
                0,
                c.header.uncompressed_size,
            );
            let mut ids = Vec::new();
            for mut d in drafts {
                if self.stopped() {
                    break;
                }
                d.container = b;
                ids.push(self.push_image(d, None, &inner));
            }
            self.mark_overlaps(b, &ids, &inner);
            return;
        }
        // The wanted entries stream to the visitor, unless an entry
        // holds containers of its own, which are walked from memory.
        if !nested && inner.depth < self.opts.max_depth {
            self.ccob_streamed_wanted(c, id, &inner, records, drafts);
            return;
        }
        match self.decompress(c) {
            Ok(d) => {
                self.note_decompressed(id, d.header.hash, d.computed_hash);
                self.region(&d.data, &inner, Expect::Sequence { whole: true });
            }
            Err(e) => self.problem(loc, Some(id), format!("cannot decompress: {e}")),
        }
    }

    /// Sets the kind of each entry's draft (`drafts`, as `records`) from
    /// its first bytes, read in one pass over the decompressed stream
    /// (nothing of it kept), and charges the budget with what that pass
    /// decoded. Whether an entry starts with a container's magic.
    fn peek_kinds(
        &mut self,
        c: &Ccob<'_>,
        records: &[binary::Record],
        drafts: &mut [Image],
    ) -> bool {
        let offsets: Vec<u64> = records.iter().map(|r| r.offset).collect();
        let limit = self.budget.min(c.header.uncompressed_size);
        let heads = c.peek(&offsets, SNIFF_HEAD, limit);
        // What the peek decoded, at most: up to the last entry's head.
        let reach = offsets
            .iter()
            .max()
            .map_or(0, |&o| o.saturating_add(SNIFF_HEAD as u64));
        let peeked = len64(c.payload)
            .saturating_mul(ccob::PEEK_RATIO)
            .max(ccob::PEEK_FLOOR)
            .min(limit)
            .min(reach);
        self.budget = self.budget.saturating_sub(peeked);
        self.report.decompressed = self.report.decompressed.saturating_add(peeked);
        let mut nested = false;
        for ((d, r), head) in drafts.iter_mut().zip(records).zip(heads) {
            if let Some(mut head) = head {
                head.truncate(usize_from(r.size));
                nested |= Magic::at_start(&head).is_some();
                d.image_kind = Some(sniff(&head));
            }
        }
        nested
    }

    /// [`Options::verify`](crate::scan::Options::verify) or
    /// [`Options::hash`](crate::scan::Options::hash) on a CCOB holding a
    /// binary bundle: the contents are streamed once (the stored hash checked
    /// under `verify`), each entry's first bytes and hash taken as it
    /// passes, and the entries a visitor wants streamed to it in a second
    /// pass, so the contents are never in memory. The report is the one
    /// the whole-buffer walk makes. `false` (nothing reported) when an
    /// entry holds containers of its own or the nesting is too deep: the
    /// caller then walks the whole contents.
    fn ccob_streamed_whole(
        &mut self,
        c: &Ccob<'_>,
        loc: &Loc,
        rel: u64,
        inner: &Loc,
        records: &[binary::Record],
    ) -> Result<bool> {
        if inner.depth >= self.opts.max_depth {
            return Ok(false);
        }
        let mut ranges = Ranges::default();
        let mut taps: Vec<Tap> = records
            .iter()
            .enumerate()
            .map(
                |(i, r)| match ranges.take(r.offset, r.offset.saturating_add(r.size), i) {
                    // Not hashed: its bytes are another entry's.
                    Some(_) => Tap::new(r.offset..r.offset + r.size, SNIFF_HEAD),
                    None => self.first_pass_tap(r.offset, r.size),
                },
            )
            .collect();
        let extent = bundle_extent(records);
        let hash = if self.opts.verify {
            HashCheck::Report
        } else {
            HashCheck::Skip
        };
        let limit = self.budget;
        let tapped = self.tap_charged(Source::Ccob(c, hash), &mut taps, extent, limit)?;
        if taps.iter().any(|t| Magic::at_start(&t.head).is_some()) {
            return Ok(false);
        }
        self.budget = self.budget.saturating_sub(tapped.decompressed);
        let id = self.push_ccob(c, loc, rel);
        if let Some(z) = &mut self.report.containers[id].compression {
            z.decompressed = true;
        }
        self.note_decompressed(id, c.header.hash, tapped.computed_hash);
        let inner = Loc {
            parent: Some(Parent::Container(id)),
            ..inner.clone()
        };
        let declared = c.header.uncompressed_size;
        let tail = tapped.first_non_zero;
        let ids = self.push_streamed_bundle(&inner, records, extent, declared, taps, tail);
        let wanted = self.wanted(ids);
        if wanted.is_empty() {
            return Ok(true);
        }
        if tapped.computed_hash.is_some_and(|h| h != c.header.hash) {
            // Contents that fail their stored hash are damaged: nothing of
            // them is handed over (the problem is reported above), and no
            // sink is asked for.
            let why = Unread::new(format!(
                "the compressed bundle's stored hash {} does not match its contents",
                ccob::hex_hash(c.header.hash)
            ));
            for i in wanted {
                self.visit.unavailable(&self.report.images[i], &why);
            }
            return Ok(true);
        }
        let mut taps = self.visitor_taps(&wanted);
        // The same bytes again: within the same budget.
        let run = self
            .tap(Source::Ccob(c, HashCheck::Skip), &mut taps, u64::MAX, limit)
            .map(|_| ());
        if let Err(e) = &run {
            self.problem(loc, Some(id), format!("cannot decompress: {e}"));
        }
        self.hand_over(&wanted, taps, run.map_err(Unread::from));
        Ok(true)
    }

    /// Without [`Options::verify`](crate::scan::Options::verify) and
    /// [`Options::hash`](crate::scan::Options::hash), a visitor wants
    /// entries of a CCOB holding a binary bundle (CCOB container `id`,
    /// entries `drafts` with their kinds): the entries are reported and
    /// the wanted ones streamed to the visitor; a stream that fails is a
    /// problem of the CCOB, and each wanted image unavailable.
    fn ccob_streamed_wanted(
        &mut self,
        c: &Ccob<'_>,
        id: usize,
        inner: &Loc,
        records: &[binary::Record],
        drafts: Vec<Image>,
    ) {
        let extent = bundle_extent(records);
        let b = self.new_container(ContainerKind::Bundle, None, inner, 0, extent);
        let entries = Loc {
            depth: inner.depth + 1,
            ..inner.clone()
        };
        let mut ids = Vec::new();
        for (mut d, r) in drafts.into_iter().zip(records) {
            if self.stopped() {
                break;
            }
            d.container = b;
            ids.push(self.push_image(d, None, &entries.at(r.offset)));
        }
        self.mark_overlaps(b, &ids, &entries);
        let wanted = self.wanted(ids);
        let mut taps = self.visitor_taps(&wanted);
        let source = Source::Ccob(c, HashCheck::Skip);
        let run = self.tap_charged(source, &mut taps, extent, self.budget);
        let why = match run {
            Ok(t) => {
                self.budget = self.budget.saturating_sub(t.decompressed);
                if let Some(z) = &mut self.report.containers[id].compression {
                    z.decompressed = true;
                }
                self.tail_problem(inner, t.decompressed, t.first_non_zero);
                Ok(())
            }
            Err(e) => {
                let at = Loc {
                    abs: self.report.containers[id].offset,
                    ..inner.clone()
                };
                self.problem(&at, Some(id), format!("cannot decompress: {e}"));
                Err(Unread::from(e))
            }
        };
        self.hand_over(&wanted, taps, why);
    }

    /// Marks the images `ids` of bundle `container` (entries whose data
    /// lie in decompressed contents, `inner`) that overlap an earlier one
    /// as unread, each with its problem, and drops their hashes.
    fn mark_overlaps(&mut self, container: usize, ids: &[usize], inner: &Loc) {
        let mut ranges = Ranges::default();
        for (i, &id) in ids.iter().enumerate() {
            let img = &self.report.images[id];
            let (start, end) = (
                img.relative_offset,
                img.relative_offset.saturating_add(img.size),
            );
            if let Some(j) = ranges.take(start, end, i) {
                self.report.images[id].hash = None;
                self.report.images[id].overlaps = Some(j);
                self.problem(
                    &inner.at(start),
                    Some(container),
                    overlap_message(i, j, start, end),
                );
            }
        }
    }

    /// Reports the entries of a bundle streamed from a CCOB (`inner`: the
    /// CCOB's inside), as the walk of the whole contents would: a bundle
    /// container of `extent` bytes, each entry with the kind its first
    /// bytes show and its hash, and non-zero bytes at `tail` after it
    /// (the contents being `declared` bytes). Returns the images' ids.
    fn push_streamed_bundle(
        &mut self,
        inner: &Loc,
        records: &[binary::Record],
        extent: u64,
        declared: u64,
        taps: Vec<Tap>,
        tail: Option<u64>,
    ) -> Vec<usize> {
        let b = self.new_container(ContainerKind::Bundle, None, inner, 0, extent);
        let entries = Loc {
            depth: inner.depth + 1,
            ..inner.clone()
        };
        let mut ids = Vec::new();
        for (i, (r, t)) in records.iter().zip(taps).enumerate() {
            if self.stopped() {
                break;
            }
            let at = super::bundle::EntryAt::new(b, i, &r.id, r.offset, r.size);
            let mut image = self.bundle_image(&at, None, &entries);
            image.image_kind = Some(sniff(&t.head));
            image.hash = t.hasher.map(crate::scan::Hasher::finish);
            ids.push(self.push_image(image, None, &entries.at(r.offset)));
        }
        self.mark_overlaps(b, &ids, &entries);
        self.tail_problem(inner, declared, tail);
        ids
    }

    /// The problem the whole-buffer walk reports for non-zero bytes at
    /// `tail` after a bundle, up to `end`, the end of the contents.
    fn tail_problem(&mut self, inner: &Loc, end: u64, tail: Option<u64>) {
        let Some(at) = tail else { return };
        let n = end.saturating_sub(at);
        self.problem(
            &inner.at(at),
            None,
            format!("{n} bytes of unrecognized data where containers were expected"),
        );
    }

    /// Reports the CCOB `c` as a container, its contents not yet
    /// decompressed; returns its id.
    fn push_ccob(&mut self, c: &Ccob<'_>, loc: &Loc, rel: u64) -> usize {
        let id = self.new_container(
            ContainerKind::Ccob,
            Some(u32::from(c.header.version)),
            loc,
            rel,
            c.size,
        );
        self.report.containers[id].compression = Some(Compression {
            method: c.header.method.to_string(),
            compressed_size: len64(c.payload),
            uncompressed_size: c.header.uncompressed_size,
            stored_hash: Some(StoredHash(c.header.hash)),
            decompressed: false,
            hash_ok: None,
        });
        id
    }

    /// The CCOB's contents, decompressed whole within the limits and the
    /// budget (which pays for them).
    fn decompress(&mut self, c: &Ccob<'_>) -> Result<ccob::Decompressed> {
        let declared = c.header.uncompressed_size;
        if !self.whole(declared) || !self.fits(declared) {
            return Err(over_budget(declared, self.budget));
        }
        self.report.decompressed = self.report.decompressed.saturating_add(declared);
        let opts = ReadOptions {
            limits: crate::Limits::uncompressed(self.budget),
            hash: if self.opts.verify {
                HashCheck::Report
            } else {
                HashCheck::Skip
            },
        };
        let d = match c.decompress(&opts) {
            Ok(d) => d,
            Err(e) => {
                // A stream that fails counts whole, as in `tap_charged`:
                // else candidates each failing at their last byte could
                // decode the budget over and over.
                self.budget = self.budget.saturating_sub(declared);
                return Err(e);
            }
        };
        self.budget = self.budget.saturating_sub(len64(&d.data));
        Ok(d)
    }

    /// Records that CCOB `id` (stored hash `stored`) was decompressed,
    /// and whether the hash computed over its contents matches.
    fn note_decompressed(&mut self, id: usize, stored: u64, computed: Option<u64>) {
        let ok = computed.map(|h| h == stored);
        if let Some(c) = &mut self.report.containers[id].compression {
            c.decompressed = true;
            c.hash_ok = ok;
        }
        if ok == Some(false) {
            let l = Loc {
                abs: self.report.containers[id].offset,
                section: self.report.containers[id].section.clone(),
                member: self.report.containers[id].member.clone(),
                ..Loc::default()
            };
            self.problem(
                &l,
                Some(id),
                format!(
                    "the stored hash {} does not match the contents ({})",
                    ccob::hex_hash(stored),
                    ccob::hex_hash(computed.unwrap_or_default())
                ),
            );
        }
    }
}

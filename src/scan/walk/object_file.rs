//! Object files read through their section headers: the sections that
//! hold containers walked as sequences, fatbin wrapper sections read as
//! wrappers, and bundle-entry sections as one object bundle, whose
//! entries are the images an image table (`.tgtimg`) lists in them, or
//! else each section whole.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;

use super::walker::{Expect, Loc, Ranges, SNIFF_HEAD, Walker, over_budget, overlap_message, sniff};
use crate::num::{len64, usize_from};
use crate::package::Compression;
use crate::scan::sections::sycl::{RowError, Span, TableEntry};
use crate::scan::sections::{CUT_BUNDLE_SECTION, ObjectFile, Role, Section};
use crate::scan::{ContainerKind, Unread};

impl Walker<'_> {
    /// Walks the sections of object file `o` that hold containers, and its
    /// bundle-entry sections and image tables as one object bundle.
    pub(super) fn object(&mut self, o: &ObjectFile<'_>, loc: &Loc) {
        let mut bundle_sections = Vec::new();
        let mut tables = Vec::new();
        for sec in &o.sections {
            if self.stopped() {
                break;
            }
            let l = Loc {
                section: Some(sec.name.clone()),
                ..loc.at(sec.offset)
            };
            match &sec.role {
                Role::OffloadBinaries | Role::Fatbins => {
                    self.region(sec.data, &l, Expect::Sequence { whole: false });
                }
                Role::Mixed => self.region(sec.data, &l, Expect::Among),
                Role::Wrappers => self.wrappers(o, sec, &l, loc.abs),
                Role::BundleEntry(id) => bundle_sections.push((id.clone(), sec, l)),
                Role::ImageTable => tables.push((sec, l)),
            }
        }
        for (name, err) in &o.problems {
            let l = Loc {
                section: Some(name.clone()),
                ..loc.clone()
            };
            self.problem(&l, None, format!("cannot read the section: {err}"));
        }
        self.object_bundle(o, &bundle_sections, &tables, loc);
    }

    /// The bundle-entry sections `bundle_sections` (ID, section, place)
    /// and the rows of the image tables `tables` of object file `o`, as
    /// one object bundle: the images the rows list, each in the section it
    /// lies in, and each bundle-entry section that holds none, whole.
    fn object_bundle(
        &mut self,
        o: &ObjectFile<'_>,
        bundle_sections: &[(Vec<u8>, &Section<'_>, Loc)],
        tables: &[(&Section<'_>, Loc)],
        loc: &Loc,
    ) {
        let listed = self.table_entries(o, tables);
        if bundle_sections.is_empty() && listed.is_empty() {
            return;
        }
        let by_section = self.by_section(o, listed, loc);
        let targets = {
            let cut: HashSet<u64> = by_section
                .values()
                .filter(|(span, _)| span.name.as_bytes() == CUT_BUNDLE_SECTION)
                .flat_map(|(_, es)| es.iter().map(|e| e.address))
                .collect();
            o.sycl_targets(&cut)
        };
        let whole: Vec<_> = bundle_sections
            .iter()
            .filter(|(_, sec, _)| !by_section.contains_key(&sec.offset))
            .collect();
        // Sections a hostile header makes huge add up to at most 2^64 - 1.
        let size = whole
            .iter()
            .map(|(_, s, _)| len64(s.data))
            .chain(by_section.values().map(|(span, _)| span.end - span.start))
            .fold(0u64, u64::saturating_add);
        let id = self.new_container(ContainerKind::ObjectBundle, None, loc, 0, size);
        self.report.containers[id].offset = None;
        let mut index = 0;
        // Sections, or rows, of one image or of images that share bytes
        // are damage: each byte is read once, by the first entry at it.
        let mut ranges = Ranges::default();
        for (name, sec, l) in whole {
            if self.stopped() {
                break;
            }
            let inner = Loc {
                depth: loc.depth + 1,
                ..l.clone()
            };
            let size = len64(sec.data);
            let end = sec.offset.saturating_add(size);
            let at = super::bundle::EntryAt::new(id, index, name, 0, size);
            match ranges.take(sec.offset, end, index) {
                Some(j) => {
                    let why = overlap_message(index, j, sec.offset, end);
                    self.problem(&inner, Some(id), why);
                    self.overlapping_entry(&at, j, sec.data, &inner);
                }
                None => self.bundle_entry(&at, Some(sec.data), &inner),
            }
            index += 1;
        }
        for (span, mut entries) in by_section.into_values() {
            entries.sort_by_key(|e| e.offset);
            let named = bundle_sections
                .iter()
                .find(|(_, sec, _)| sec.offset == span.start)
                .map(|(name, _, _)| name.as_slice())
                .filter(|n| !n.is_empty());
            let inner = Loc {
                section: Some(span.name.clone()),
                depth: loc.depth + 1,
                ..loc.at(span.start)
            };
            for e in entries {
                if self.stopped() {
                    break;
                }
                let target = targets.get(&e.address).map(|t| format!("sycl-{t}"));
                let id_text = named.or(target.as_deref().map(str::as_bytes));
                let at = TableRow {
                    container: id,
                    index,
                    id: id_text.unwrap_or_default(),
                    span: &span,
                    row: &e,
                };
                let stored = stored_image(o.bytes(), &span, &e);
                let overlaps = stored.as_ref().ok().and_then(|(bytes, _)| {
                    ranges.take(e.offset, e.offset.saturating_add(len64(bytes)), index)
                });
                match (overlaps, stored) {
                    (Some(j), Ok((bytes, _))) => self.overlapping_row(&at, j, bytes, &inner),
                    (_, stored) => self.table_image(&at, stored, &inner),
                }
                index += 1;
            }
        }
    }

    /// The table rows `listed` by the section they lie in (by its start);
    /// a row in no section is a problem.
    fn by_section(
        &mut self,
        o: &ObjectFile<'_>,
        listed: Vec<TableEntry>,
        loc: &Loc,
    ) -> BTreeMap<u64, (Span, Vec<TableEntry>)> {
        let mut by_section: BTreeMap<u64, (Span, Vec<TableEntry>)> = BTreeMap::new();
        let spans = if listed.is_empty() {
            None
        } else {
            Some(o.spans())
        };
        for e in listed {
            let Some(span) = spans.as_ref().and_then(|s| s.at(e.offset)).cloned() else {
                self.problem(
                    loc,
                    None,
                    format!(
                        "the image table's row {} leads to offset {:#x}, which no section holds",
                        e.index, e.offset
                    ),
                );
                continue;
            };
            by_section
                .entry(span.start)
                .or_insert_with(|| (span, Vec::new()))
                .1
                .push(e);
        }
        by_section
    }

    /// The rows of the image tables `tables`, each row that does not lead
    /// into the file reported as a problem of its table. Rows that give
    /// one image again are kept: they are damage ([`Ranges`]), reported
    /// where the images are read.
    fn table_entries(
        &mut self,
        o: &ObjectFile<'_>,
        tables: &[(&Section<'_>, Loc)],
    ) -> Vec<TableEntry> {
        let mut out = Vec::new();
        for (sec, l) in tables {
            for row in o.image_table(sec) {
                match row {
                    Ok(e) => out.push(e),
                    Err(why) => self.problem(l, None, why.to_string()),
                }
            }
        }
        out
    }

    /// Pushes table row `at`, whose stored bytes `bytes` overlap those of
    /// entry `overlaps` of its container, as the bundle reader pushes such
    /// an entry: the overlap a problem of the container (which makes it
    /// damaged), the image unread.
    fn overlapping_row(&mut self, at: &TableRow<'_>, overlaps: usize, bytes: &[u8], inner: &Loc) {
        let rel = at.row.offset - at.span.start;
        let end = rel.saturating_add(len64(bytes));
        let why = overlap_message(at.index, overlaps, rel, end);
        self.problem(&inner.at(rel), Some(at.container), why);
        let e = super::bundle::EntryAt::new(at.container, at.index, at.id, rel, len64(bytes));
        self.overlapping_entry(&e, overlaps, bytes, inner);
    }

    /// Pushes the image of table row `at` as an entry of its object
    /// bundle, from its stored bytes (`stored`: [`stored_image`]'s answer,
    /// or why there are none): the row's size in bytes from its address,
    /// or, where a zstd frame starts there (the wrapper's compression),
    /// that frame, which must decompress to the row's size. It is
    /// decompressed when its bytes are asked for (a hash, a visitor) or
    /// checked (`--verify`), else only its first bytes, for its kind.
    fn table_image(&mut self, at: &TableRow<'_>, stored: Stored<'_>, inner: &Loc) {
        let TableRow {
            container,
            index,
            id,
            span,
            row: e,
        } = *at;
        let rel = e.offset - span.start;
        let (stored, zstd) = match stored {
            Ok(s) => s,
            Err(why) => {
                self.problem(&inner.at(rel), Some(container), why.to_string());
                return;
            }
        };
        if !zstd {
            let at = super::bundle::EntryAt::new(container, index, id, rel, e.size);
            self.bundle_entry(&at, Some(stored), inner);
            return;
        }
        let at = super::bundle::EntryAt::new(container, index, id, rel, len64(stored));
        let mut image = self.bundle_image(&at, None, inner);
        image.uncompressed_size = Some(e.size);
        image.strings.push(("compression".into(), "zstd".into()));
        let wanted = self.opts.hash.is_some() || self.opts.verify || self.visit.wants(&image);
        if !wanted {
            let mut head = Vec::with_capacity(SNIFF_HEAD);
            if let Ok(d) = zstd::stream::read::Decoder::with_buffer(stored) {
                let _ = d.take(SNIFF_HEAD as u64).read_to_end(&mut head);
            }
            image.image_kind = Some(sniff(&head));
            self.push_image(image, None, &inner.at(rel));
            return;
        }
        let decoded = if e.size > self.budget {
            Err(over_budget(e.size, self.budget).to_string())
        } else {
            self.budget -= e.size;
            match zstd::bulk::decompress(stored, usize_from(e.size)) {
                Ok(v) if len64(&v) == e.size => Ok(v),
                Ok(v) => Err(format!(
                    "it decompresses to {} bytes where the image table says {}",
                    v.len(),
                    e.size
                )),
                Err(err) => Err(format!("it does not decompress ({err})")),
            }
        }
        .map_err(Unread::new);
        match decoded {
            Ok(v) => {
                image.image_kind = Some(sniff(&v));
                self.push_image(image, Some(&v), &inner.at(rel));
            }
            Err(why) => {
                self.problem(
                    &inner.at(rel),
                    Some(container),
                    format!("the zstd-compressed image at {:#x}: {why}", e.offset),
                );
                let id = self.push_image(image, None, &inner.at(rel));
                self.visit.unavailable(&self.report.images[id], &why);
            }
        }
    }
}

/// A table row's stored bytes and whether they are a zstd frame, or the
/// problem that there are none.
type Stored<'d> = Result<(&'d [u8], bool), RowError>;

/// A table row, as an entry of its object bundle: the bundle, the entry's
/// index and bundle ID, the section it lies in, the row.
#[derive(Clone, Copy)]
struct TableRow<'a> {
    container: usize,
    index: usize,
    id: &'a [u8],
    span: &'a Span,
    row: &'a TableEntry,
}

/// The bytes table row `e` stores in section `span` of `file`: the row's
/// size in bytes from its address, or, where a zstd frame starts there,
/// that frame (with `true`); an `Err` saying what runs past the end of
/// the section or the file.
fn stored_image<'d>(file: &'d [u8], span: &Span, e: &TableEntry) -> Stored<'d> {
    let end = usize_from(span.end.min(len64(file)));
    let rest = file.get(usize_from(e.offset)..end).unwrap_or_default();
    let past = |size| RowError::PastEnd {
        index: e.index,
        size,
        offset: e.offset,
        section: span.name.clone(),
    };
    if crate::package::compression_of(rest) != Some(Compression::Zstd) {
        return match rest.get(..usize_from(e.size)) {
            Some(bytes) => Ok((bytes, false)),
            None => Err(past(Some(e.size))),
        };
    }
    zstd::zstd_safe::find_frame_compressed_size(rest)
        .ok()
        .and_then(|n| rest.get(..n))
        .map(|frame| (frame, true))
        .ok_or_else(|| past(None))
}

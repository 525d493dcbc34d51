//! The recursive walk: files, archive members, sections, byte ranges that
//! hold containers, containers and their images.

use crate::container::ar::{self, Archive};
use crate::container::elf;

mod cuda_fatbin;

use super::magic::{Finders, Magic};
use super::sections::{self, ObjectFile, Role};
use super::tap::{self, Tap, TapOut, ZeroTail};
use super::{
    Compression, Container, ContainerKind, Content, Image, Limit, MAX_WHOLE, Mode, NoVisit,
    Offload, Options, Parent, Problem, ProblemKind, Report, SinkError, StoredHash, Visit,
    WrapperInfo,
};
use crate::bundle::ccob::{self as ccob, Ccob, HashCheck, ReadOptions};
use crate::bundle::{self, binary, text};
use crate::error::{Error, ErrorKind, Result};
use crate::fatbin;
use crate::num::{len64, usize_from};
use crate::offload_binary::{self, ImageKind, OffloadImage};

/// Scans `data`, the bytes of a whole file. See the [module docs](super).
pub fn scan(data: &[u8], opts: &Options) -> Report {
    scan_with(data, opts, &mut NoVisit)
}

/// [`scan`], handing the bytes of the images `visit` wants to `visit`.
pub fn scan_with(data: &[u8], opts: &Options, visit: &mut dyn Visit) -> Report {
    let finders = Finders::new();
    let mut w = Walker {
        opts,
        finders: &finders,
        visit,
        report: Report::default(),
        budget: opts.max_uncompressed,
        thin_chain: Vec::new(),
        thin_reads: MAX_THIN_READS,
    };
    let top = Loc {
        abs: Some(0),
        ..Loc::default()
    };
    w.report.format = w.file(data, &top, 0);
    w.resolve_wrappers();
    if w.report.stopped.is_some() {
        // Incomplete, and possibly large: what was found is not kept.
        w.report.images = Vec::new();
        w.report.containers = Vec::new();
    }
    w.report
}

/// Where a byte range lies.
#[derive(Debug, Clone, Default)]
struct Loc {
    /// File offset of its first byte (`None` inside decompressed data).
    abs: Option<u64>,
    section: Option<String>,
    member: Option<String>,
    /// What containers found in it lie in.
    parent: Option<Parent>,
    /// Containers around it.
    depth: u32,
    in_compressed: bool,
}

impl Loc {
    fn at(&self, off: u64) -> Loc {
        Loc {
            abs: self.abs.and_then(|a| a.checked_add(off)),
            ..self.clone()
        }
    }
}

/// What a byte range is expected to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Containers back to back, zero padding allowed (a section's contents,
    /// an image that starts with a magic, decompressed contents). Anything
    /// else is a problem. `whole`: the range may be one text bundle.
    Sequence { whole: bool },
    /// Anything; candidates that fail are skipped (a raw scan).
    Raw { whole: bool },
}

impl Expect {
    fn whole(self) -> bool {
        matches!(
            self,
            Expect::Sequence { whole: true } | Expect::Raw { whole: true }
        )
    }
}

/// Where the bytes [`Walker::tap`] streams come from.
enum Source<'s> {
    /// A CCOB's contents, its stored hash checked as asked.
    Ccob(&'s Ccob<'s>, HashCheck),
    /// Decompressed data that is exactly this many bytes or fails the
    /// read (a compressed OffloadBinary, a compressed CUDA fatbin entry).
    Decoded(Box<dyn std::io::Read + 's>, u64),
}

impl Source<'_> {
    /// The bytes the stream declares.
    fn declared(&self) -> u64 {
        match self {
            Source::Ccob(c, _) => c.header.uncompressed_size,
            Source::Decoded(_, n) => *n,
        }
    }
}

/// What a [`Walker::tap`] found.
struct Tapped {
    /// Bytes decompressed.
    decompressed: u64,
    /// A CCOB's truncated MD5, when its hash was asked for.
    computed_hash: Option<u64>,
    /// The first non-zero byte after the tail (a bundle's end).
    first_non_zero: Option<u64>,
}

struct Walker<'a> {
    opts: &'a Options,
    finders: &'a Finders,
    visit: &'a mut dyn Visit,
    report: Report,
    /// Decompression still allowed, in bytes.
    budget: u64,
    /// The thin archives' member files being read now, outermost first: a
    /// name met again is a cycle (an archive naming itself), read once.
    thin_chain: Vec<String>,
    /// Thin archives' member files still allowed to be read in this scan
    /// (archives of many members naming each other would otherwise fan
    /// out exponentially up to the depth limit).
    thin_reads: u32,
}

/// The most thin archives' member files one scan reads.
const MAX_THIN_READS: u32 = 100_000;

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `gfx90a:xnack+:sramecc-` → (`gfx90a`, [`xnack+`, `sramecc-`]).
fn split_target_id(t: &str) -> (String, Vec<String>) {
    let mut parts = t.split(':');
    let arch = parts.next().unwrap_or_default().to_string();
    (arch, parts.map(str::to_string).collect())
}

/// What the bytes of a bundle entry are.
/// The bytes [`sniff`] needs to tell every kind it knows (the longest
/// magic, a bundle's, is 24 bytes; an ELF machine is at 18).
const SNIFF_HEAD: usize = 24;

fn sniff(b: &[u8]) -> Content {
    if b.is_empty() {
        Content::Image(ImageKind::IMG_None)
    } else if b.starts_with(&object::elf::ELFMAG) {
        if elf::peek(b).and_then(|p| p.machine()) == Some(object::elf::EM_CUDA) {
            Content::Image(ImageKind::IMG_Cubin)
        } else {
            Content::Image(ImageKind::IMG_Object)
        }
    } else if offload_binary::kinds::is_bitcode(b) {
        Content::Image(ImageKind::IMG_Bitcode)
    } else if offload_binary::kinds::is_spirv(b) {
        Content::Image(ImageKind::IMG_SPIRV)
    } else if b.starts_with(crate::archive::MAGIC) {
        Content::Archive
    } else {
        match Magic::at_start(b) {
            Some(Magic::Fatbin) => Content::Image(ImageKind::IMG_Fatbinary),
            Some(Magic::OffloadBinary) => Content::OffloadBinary,
            Some(Magic::Bundle) => Content::Bundle,
            Some(Magic::Ccob) => Content::Ccob,
            None => Content::Unknown,
        }
    }
}

impl Walker<'_> {
    fn problem(&mut self, loc: &Loc, container: Option<usize>, message: String) {
        self.problem_of(ProblemKind::Damage, loc, container, message);
    }

    fn problem_of(
        &mut self,
        kind: ProblemKind,
        loc: &Loc,
        container: Option<usize>,
        message: String,
    ) {
        if self.stopped() {
            return;
        }
        self.report.problems.push(Problem {
            offset: loc.abs,
            section: loc.section.clone(),
            member: loc.member.clone(),
            container,
            message,
            kind,
            within: loc.parent,
        });
    }

    /// Whether a limit stopped the scan: every walk returns at once.
    fn stopped(&self) -> bool {
        self.report.stopped.is_some()
    }

    /// Stops the scan at `limit` (the first limit reached is the one
    /// reported).
    fn stop(&mut self, limit: Limit) {
        if self.report.stopped.is_none() {
            self.report.stopped = Some(limit);
        }
    }

    /// Whether compressed data declaring `declared` bytes may be held in
    /// memory whole ([`MAX_WHOLE`]); stops the scan when not.
    fn whole(&mut self, declared: u64) -> bool {
        if declared > MAX_WHOLE {
            self.stop(Limit::Whole(declared));
            return false;
        }
        true
    }

    /// Whether a stream declaring `declared` bytes may be decompressed
    /// whole within what is left of the budget; stops the scan when not.
    fn fits(&mut self, declared: u64) -> bool {
        if declared > self.budget {
            self.stop(Limit::Uncompressed {
                limit: self.opts.max_uncompressed,
                declared,
            });
            return false;
        }
        true
    }

    /// Charges the budget for setting up one decoder (of a compressed
    /// container or entry, before any byte is decoded): [`DECODER_SETUP`]
    /// bytes, what decoding that much costs. Without it, many small
    /// candidates that each fail at once (a stream of repeated compressed
    /// headers, a few KiB of file) would each set up a decoder for free.
    /// `false` (the scan stopped, naming the stream's own `declared`
    /// size) when the budget cannot pay.
    fn setup(&mut self, declared: u64) -> bool {
        if DECODER_SETUP > self.budget {
            self.stop(Limit::Uncompressed {
                limit: self.opts.max_uncompressed,
                declared,
            });
            return false;
        }
        self.budget -= DECODER_SETUP;
        true
    }

    /// Scans a whole file (or archive member); returns what it is.
    fn file(&mut self, data: &[u8], loc: &Loc, nest: u32) -> &'static str {
        let starts = Magic::at_start(data);
        let raw_format = match starts {
            Some(Magic::OffloadBinary) => "offload-binary",
            Some(Magic::Bundle) => "bundle",
            Some(Magic::Ccob) => "ccob",
            Some(Magic::Fatbin) => "cuda-fatbin",
            // What the file is, even when its structure is not used.
            None if data.starts_with(crate::archive::MAGIC)
                || data.starts_with(crate::archive::THIN_MAGIC) =>
            {
                "archive"
            }
            None => sections::format_of(data).unwrap_or("data"),
        };
        if self.opts.mode == Mode::Raw {
            self.report.used_raw_scan = true;
            self.region(data, loc, Expect::Raw { whole: true });
            return raw_format;
        }
        if data.starts_with(crate::archive::MAGIC) || data.starts_with(crate::archive::THIN_MAGIC) {
            self.archive(data, loc, nest);
            return "archive";
        }
        match sections::parse(data) {
            Some(Ok(o)) if o.has_sections => {
                self.report.used_sections = true;
                self.object(&o, loc);
                return o.format;
            }
            Some(Ok(o)) => {
                if self.opts.mode == Mode::Auto {
                    self.report.used_raw_scan = true;
                    self.region(data, loc, Expect::Raw { whole: false });
                } else {
                    self.problem(loc, None, "the file has no section headers".into());
                }
                return o.format;
            }
            Some(Err(e)) => {
                let msg = format!("cannot read the object file: {e}");
                if self.opts.mode == Mode::Auto {
                    self.report.used_raw_scan = true;
                    self.problem(loc, None, format!("{msg}; scanned it raw instead"));
                    self.region(data, loc, Expect::Raw { whole: false });
                } else {
                    self.problem(loc, None, msg);
                }
                return "object";
            }
            None => {}
        }
        match (self.opts.mode, starts) {
            (_, Some(_)) => self.region(data, loc, Expect::Sequence { whole: true }),
            (Mode::Auto, None) => {
                self.report.used_raw_scan = true;
                self.region(data, loc, Expect::Raw { whole: true });
            }
            _ => {}
        }
        raw_format
    }

    fn archive(&mut self, data: &[u8], loc: &Loc, nest: u32) {
        if nest >= self.opts.max_depth {
            self.problem(loc, None, "archives nested too deeply".into());
            return;
        }
        let ar = match Archive::parse(data) {
            Ok(ar) => ar,
            Err(e) => {
                self.problem(loc, None, format!("cannot read the archive: {e}"));
                return;
            }
        };
        for m in ar.members() {
            if self.stopped() {
                return;
            }
            let m = match m {
                Ok(m) => m,
                Err(e) => {
                    self.problem(loc, None, format!("cannot read an archive member: {e}"));
                    return;
                }
            };
            let name = lossy(m.name());
            let (off, _) = m.range();
            let member = match &loc.member {
                Some(outer) => format!("{outer}({name})"),
                None => name.clone(),
            };
            if m.is_thin() {
                self.thin_member(&m, &name, member, loc, nest);
                continue;
            }
            let l = Loc {
                member: Some(member),
                ..loc.at(off)
            };
            match m.data() {
                Ok(bytes) => {
                    self.file(bytes, &l, nest + 1);
                }
                Err(e) => self.problem(&l, None, format!("cannot read the member: {e}")),
            }
        }
    }

    /// A thin archive's member, read from its own file if the visitor
    /// can (it has no offset in this file).
    fn thin_member(
        &mut self,
        m: &ar::Member<'_>,
        name: &str,
        member: String,
        loc: &Loc,
        nest: u32,
    ) {
        let l = Loc {
            member: Some(member),
            abs: None,
            ..loc.clone()
        };
        if self.thin_chain.iter().any(|n| n == name) {
            self.problem(
                &l,
                None,
                format!(
                    "the thin archive's member file '{name}' is an archive around it (a \
                     cycle): not read again"
                ),
            );
            return;
        }
        if self.thin_reads == 0 {
            self.problem(
                &l,
                None,
                format!(
                    "member file '{name}' not read: this file's thin archives name more than \
                     {MAX_THIN_READS} member files"
                ),
            );
            return;
        }
        self.thin_reads -= 1;
        match self.visit.thin_member(name) {
            None => self.problem(
                &l,
                None,
                format!("member of a thin archive, kept in the file '{name}': not read"),
            ),
            Some(Err(why)) => self.problem(
                &l,
                None,
                format!("cannot read the thin archive's member file '{name}': {why}"),
            ),
            Some(Ok(held)) => {
                let bytes = (*held).as_ref();
                if let Err(e) = m.thin_data(bytes) {
                    self.problem(&l, None, e.to_string());
                }
                self.thin_chain.push(name.to_string());
                self.file(bytes, &l, nest + 1);
                self.thin_chain.pop();
            }
        }
    }

    fn object(&mut self, o: &ObjectFile<'_>, loc: &Loc) {
        let mut bundle_sections = Vec::new();
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
                Role::Wrappers => self.wrappers(o, sec, &l, loc.abs),
                Role::BundleEntry(id) => bundle_sections.push((id.clone(), sec, l)),
            }
        }
        for (name, err) in &o.problems {
            let l = Loc {
                section: Some(name.clone()),
                ..loc.clone()
            };
            self.problem(&l, None, format!("cannot read the section: {err}"));
        }
        if bundle_sections.is_empty() {
            return;
        }
        let size = bundle_sections.iter().map(|(_, s, _)| len64(s.data)).sum();
        let id = self.new_container(ContainerKind::ObjectBundle, None, loc, 0, size);
        self.report.containers[id].offset = None;
        for (i, (name, sec, l)) in bundle_sections.into_iter().enumerate() {
            if self.stopped() {
                break;
            }
            let inner = Loc {
                depth: loc.depth + 1,
                ..l
            };
            self.bundle_entry(id, i, &name, 0, len64(sec.data), Some(sec.data), &inner);
        }
    }

    /// The fatbin wrappers of section `sec`; `base` is the file offset of
    /// the object (an archive member's start), which their pointers'
    /// object-relative targets are moved by, so that they are file offsets
    /// as the containers' are (`None`, a thin archive's member: left
    /// object-relative).
    fn wrappers(
        &mut self,
        o: &ObjectFile<'_>,
        sec: &sections::Section<'_>,
        loc: &Loc,
        base: Option<u64>,
    ) {
        let list = match fatbin::read_wrappers(sec.data, o.wide) {
            Ok(l) => l,
            Err(e) => {
                self.problem(loc, None, e.to_string());
                return;
            }
        };
        let ptr_at = fatbin::WRAPPER_DATA_OFFSET;
        let size = if o.wide {
            fatbin::WRAPPER_SIZE_64
        } else {
            fatbin::WRAPPER_SIZE_32
        } as u64;
        for (at, w) in list {
            if self.stopped() {
                break;
            }
            let target = o
                .resolve_pointer(sec, at + ptr_at, w.data)
                .and_then(|t| t.checked_add(base.unwrap_or(0)));
            let id = self.new_container(
                ContainerKind::FatbinWrapper,
                Some(w.version),
                &loc.at(at),
                at,
                size,
            );
            self.report.containers[id].wrapper = Some(WrapperInfo {
                flavor: w.flavor(),
                magic: w.magic,
                version: w.version,
                target,
                target_container: None,
            });
        }
    }

    fn resolve_wrappers(&mut self) {
        // The first container that is no wrapper at each file offset.
        let mut at: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
        for c in &self.report.containers {
            if let Some(o) = c.offset
                && c.kind != ContainerKind::FatbinWrapper
            {
                at.entry(o).or_insert(c.id);
            }
        }
        for c in &mut self.report.containers {
            if let Some(w) = &mut c.wrapper
                && let Some(t) = w.target
            {
                w.target_container = at.get(&t).copied();
            }
        }
    }

    fn new_container(
        &mut self,
        kind: ContainerKind,
        version: Option<u32>,
        loc: &Loc,
        relative_offset: u64,
        size: u64,
    ) -> usize {
        let id = self.report.containers.len();
        if id >= self.opts.max_containers {
            self.stop(Limit::Containers(self.opts.max_containers));
        }
        self.report.containers.push(Container {
            id,
            kind,
            version,
            parent: loc.parent,
            member: loc.member.clone(),
            section: loc.section.clone(),
            offset: loc.abs,
            relative_offset,
            size,
            compression: None,
            wrapper: None,
            images: 0,
        });
        id
    }

    /// Finds the containers in `bytes`. See [`Expect`].
    fn region(&mut self, bytes: &[u8], loc: &Loc, expect: Expect) {
        let finders = self.finders;
        finders.search(bytes, |cands| {
            let mut cursor = 0usize;
            let mut explained = true;
            let sequence = matches!(expect, Expect::Sequence { .. });
            while let Some((pos, magic)) = cands.next() {
                if self.stopped() {
                    return;
                }
                if pos < cursor {
                    continue;
                }
                if magic == Magic::Bundle && text::is_marker(&bytes[pos..]) {
                    // A text bundle's marker; the file (or decompressed
                    // contents) may be a text bundle.
                    if expect.whole()
                        && cursor == 0
                        && let Some(prefix) = text::prefix_at(bytes, pos)
                    {
                        self.text_bundle(bytes, prefix, loc);
                        return;
                    }
                    continue;
                }
                if sequence && explained {
                    self.gap(bytes, cursor, pos, loc);
                }
                match self.container_at(bytes, pos, magic, loc) {
                    Ok(extent) => {
                        cursor = pos
                            .saturating_add(usize_from(extent).max(1))
                            .min(bytes.len());
                        cands.skip_to(cursor);
                        explained = true;
                    }
                    Err(e) => {
                        // In a sequence, the first failure explains the bytes up
                        // to the next container; later candidates in them are
                        // noise.
                        if (sequence && explained) || self.opts.report_rejects {
                            let (kind, what) = if sequence {
                                (ProblemKind::Damage, format!("invalid {}", kind_of(magic)))
                            } else {
                                (
                                    ProblemKind::Rejected,
                                    format!("not a valid {} (raw-scan candidate)", kind_of(magic)),
                                )
                            };
                            // The reader's offsets are the candidate's; make
                            // them the file's (or the region's, inside
                            // decompressed data).
                            let here = loc.at(pos as u64);
                            let base = here.abs.unwrap_or(pos as u64);
                            let e = e.rebased(base);
                            let msg = rebase_at(&format!("{what}: {e}"), base);
                            self.problem_of(kind, &here, None, msg);
                        }
                        explained = false;
                    }
                }
            }
            if sequence && explained {
                self.gap(bytes, cursor, bytes.len(), loc);
            }
        });
    }

    /// Reports non-zero bytes between containers of a sequence.
    fn gap(&mut self, bytes: &[u8], from: usize, to: usize, loc: &Loc) {
        let Some(g) = bytes.get(from..to) else { return };
        if let Some(first) = g.iter().position(|&b| b != 0) {
            let at = from + first;
            self.problem(
                &loc.at(at as u64),
                None,
                format!(
                    "{} bytes of unrecognized data where containers were expected",
                    to - at
                ),
            );
        }
    }

    /// Reads the container at `pos` of `bytes`; returns the bytes it
    /// occupies.
    fn container_at(&mut self, bytes: &[u8], pos: usize, magic: Magic, loc: &Loc) -> Result<u64> {
        if loc.depth >= self.opts.max_depth {
            return Err(ErrorKind::DepthExceeded {
                what: "container nesting".into(),
                limit: u64::from(self.opts.max_depth),
            }
            .into());
        }
        let sub = &bytes[pos..];
        let l = loc.at(pos as u64);
        let rel = pos as u64;
        match magic {
            Magic::OffloadBinary => self.offload_binary(sub, &l, rel),
            Magic::Bundle => self.bundle(sub, &l, rel),
            Magic::Ccob => self.ccob(sub, &l, rel),
            Magic::Fatbin => self.fatbin(sub, &l, rel),
        }
    }

    fn offload_binary(&mut self, sub: &[u8], loc: &Loc, rel: u64) -> Result<u64> {
        if let Some(head) = offload_binary::header_summary(sub)
            && head.method.is_some()
            && (!self.fits(head.inflated_size) || !self.setup(head.inflated_size))
        {
            return Err(over_budget(head.inflated_size, self.budget));
        }
        let limits = offload_binary::Limits {
            max_inflated: self.budget,
        };
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
            image.hash = t.hasher.map(super::Hasher::finish);
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
            self.hand_over(&wanted, taps, run.map(|_| ()).map_err(|e| e.to_string()));
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

    fn bundle(&mut self, sub: &[u8], loc: &Loc, rel: u64) -> Result<u64> {
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
                self.overlapping_entry(id, i, j, e.id, e.offset, e.data, &inner);
                continue;
            }
            self.bundle_entry(id, i, e.id, e.offset, size, Some(e.data), &inner);
        }
        Ok(extent)
    }

    fn text_bundle(&mut self, bytes: &[u8], prefix: &str, loc: &Loc) {
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
                    self.bundle_entry(id, i, e.id, off, len64(e.data), Some(e.data), &inner);
                }
            }
            Err(e) => self.problem(loc, None, format!("invalid text bundle: {e}")),
        }
    }

    /// Pushes one bundle entry; `loc` is its container's inside.
    #[allow(clippy::too_many_arguments)]
    fn bundle_entry(
        &mut self,
        container: usize,
        index: usize,
        id: &[u8],
        offset: u64,
        size: u64,
        bytes: Option<&[u8]>,
        loc: &Loc,
    ) {
        let image = self.bundle_image(container, index, id, offset, size, bytes, loc);
        self.push_image(image, bytes, &loc.at(offset));
    }

    /// Pushes bundle entry `index` of container `container` whose bytes
    /// overlap an earlier entry's: its kind from its first bytes, nothing
    /// else read (no hash, no visitor, no containers inside).
    #[allow(clippy::too_many_arguments)]
    fn overlapping_entry(
        &mut self,
        container: usize,
        index: usize,
        overlaps: usize,
        id: &[u8],
        offset: u64,
        bytes: &[u8],
        loc: &Loc,
    ) {
        let head = &bytes[..bytes.len().min(SNIFF_HEAD)];
        let mut image = self.bundle_image(container, index, id, offset, len64(bytes), None, loc);
        image.image_kind = Some(sniff(head));
        image.overlaps = Some(overlaps);
        self.push_image(image, None, &loc.at(offset));
    }

    #[allow(clippy::too_many_arguments)]
    fn bundle_image(
        &self,
        container: usize,
        index: usize,
        id: &[u8],
        offset: u64,
        size: u64,
        bytes: Option<&[u8]>,
        loc: &Loc,
    ) -> Image {
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

    #[allow(
        clippy::too_many_lines,
        reason = "split in the host-container rework (#27)"
    )]
    fn ccob(&mut self, sub: &[u8], loc: &Loc, rel: u64) -> Result<u64> {
        let mut c = Ccob::parse(sub)?;
        if !self.setup(c.header.uncompressed_size) {
            return Err(over_budget(c.header.uncompressed_size, self.budget));
        }
        c.end_v1_zlib_stream(c.header.uncompressed_size.min(self.budget))?;
        // Listing reads only the bundle header; a size the payload cannot
        // produce is still caught.
        c.check_declared_size()?;
        let full = self.opts.verify || self.opts.hash.is_some();
        // When everything is decompressed anyway, a bundle header that
        // cannot be read is left to the whole-buffer read to name.
        let records = match c.bundle_records() {
            Ok(r) => r,
            Err(_) if full => None,
            Err(e) => return Err(e),
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
            let id = self.push_ccob(&c, loc, rel);
            let inner = Loc {
                parent: Some(Parent::Container(id)),
                ..inner
            };
            let mut drafts: Vec<Image> = records
                .iter()
                .enumerate()
                .map(|(i, r)| self.bundle_image(0, i, &r.id, r.offset, r.size, None, &inner))
                .collect();
            // Each entry's kind from its first bytes, read in one pass over
            // the decompressed stream (nothing of it kept).
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
            for ((d, r), head) in drafts.iter_mut().zip(&records).zip(heads) {
                if let Some(mut head) = head {
                    head.truncate(usize_from(r.size));
                    nested |= Magic::at_start(&head).is_some();
                    d.image_kind = Some(sniff(&head));
                }
            }
            let mut wanted = false;
            for d in &drafts {
                wanted |= self.visit.wants(d);
            }
            if !wanted {
                if inner.depth >= self.opts.max_depth {
                    self.problem(loc, Some(id), "containers nested too deeply".into());
                    return Ok(c.size);
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
                return Ok(c.size);
            }
            // The wanted entries stream to the visitor, unless an entry
            // holds containers of its own, which are walked from memory.
            if !nested && inner.depth < self.opts.max_depth {
                self.ccob_streamed_wanted(&c, id, &inner, &records, drafts);
                return Ok(c.size);
            }
            match self.decompress(&c) {
                Ok(d) => {
                    self.note_decompressed(id, d.header.hash, d.computed_hash);
                    self.region(&d.data, &inner, Expect::Sequence { whole: true });
                }
                Err(e) => self.problem(loc, Some(id), format!("cannot decompress: {e}")),
            }
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

    /// [`Options::verify`] or [`Options::hash`] on a CCOB holding a binary
    /// bundle: the contents are streamed once (the stored hash checked
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
            let why = format!(
                "the compressed bundle's stored hash {} does not match its contents",
                ccob::hex_hash(c.header.hash)
            );
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
        self.hand_over(&wanted, taps, run.map_err(|e| e.to_string()));
        Ok(true)
    }

    /// The images among `ids` the visitor wants (never one left unread).
    fn wanted(&mut self, ids: Vec<usize>) -> Vec<usize> {
        ids.into_iter()
            .filter(|&i| {
                self.report.images[i].is_read() && self.visit.wants(&self.report.images[i])
            })
            .collect()
    }

    /// Without [`Options::verify`] and [`Options::hash`], a visitor wants
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
                Err(e.to_string())
            }
        };
        self.hand_over(&wanted, taps, why);
    }

    /// Streams `source` once into `taps` (each its range), producing at
    /// most `limit` bytes, and checks the bytes from `tail` on for zeros.
    /// The one way every compressed container's images are streamed.
    fn tap(
        &mut self,
        source: Source<'_>,
        taps: &mut [Tap],
        tail: u64,
        limit: u64,
    ) -> Result<Tapped> {
        let declared = source.declared();
        // Counted before it runs: a stream that fails counts whole.
        self.report.decompressed = self.report.decompressed.saturating_add(declared);
        let mut zeros = ZeroTail::new(tail.min(declared));
        let mut wanted: Vec<ccob::Wanted<'_>> = taps
            .iter_mut()
            .map(|t| ccob::Wanted {
                range: t.range.clone(),
                out: t,
            })
            .collect();
        if tail < declared {
            wanted.push(ccob::Wanted {
                range: tail..declared,
                out: &mut zeros,
            });
        }
        let (decompressed, computed_hash) = match source {
            Source::Ccob(c, hash) => {
                let opts = ReadOptions {
                    limits: ccob::Limits {
                        max_uncompressed: limit,
                    },
                    hash,
                };
                // Two threads: the MD5 apart from the decoding, or our
                // multi-frame CCOBs decoded a frame per thread.
                let streamed = c.stream_parallel(
                    std::io::Cursor::new(c.payload),
                    &mut wanted,
                    &opts,
                    ccob::StreamEnd::Whole,
                    2,
                )?;
                (streamed.decompressed, streamed.computed_hash)
            }
            Source::Decoded(mut r, n) => {
                if n > limit {
                    return Err(ErrorKind::LimitExceeded {
                        what: format!("decompressed data of {n} bytes"),
                        limit,
                    }
                    .into());
                }
                (tap::pump(&mut *r, n, &mut wanted, &mut Vec::new())?, None)
            }
        };
        drop(wanted);
        Ok(Tapped {
            decompressed,
            computed_hash,
            first_non_zero: zeros.first_non_zero,
        })
    }

    /// [`Walker::tap`] for a container's first stream, charging the budget
    /// with the declared size when the stream fails after it was let start
    /// (within the budget): its decoding was done, and without the charge
    /// many containers each failing at their last byte could decode the
    /// budget over and over. A success is charged by the caller.
    fn tap_charged(
        &mut self,
        source: Source<'_>,
        taps: &mut [Tap],
        tail: u64,
        limit: u64,
    ) -> Result<Tapped> {
        let declared = source.declared();
        if !self.fits(declared) {
            return Err(over_budget(declared, self.budget));
        }
        let run = self.tap(source, taps, tail, limit);
        if run.is_err() && declared <= self.budget {
            self.budget -= declared;
        }
        run
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
            let mut image = self.bundle_image(b, i, &r.id, r.offset, r.size, None, &entries);
            image.image_kind = Some(sniff(&t.head));
            image.hash = t.hasher.map(super::Hasher::finish);
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

    /// A tap for each of `images` (bundle entries inside a CCOB, images of
    /// a compressed OffloadBinary: their bytes in the decompressed data),
    /// to the visitor's sink where it gives one, else into memory.
    fn visitor_taps(&mut self, images: &[usize]) -> Vec<Tap> {
        images
            .iter()
            .map(|&i| {
                let img = &self.report.images[i];
                let range = img.relative_offset..img.relative_offset + img.size;
                self.visitor_tap(i, range)
            })
            .collect()
    }

    /// A tap for the first pass over a compressed container's data, on the
    /// `size` bytes of an image at `start`: its first bytes (for its kind)
    /// and its hash, when asked for.
    fn first_pass_tap(&self, start: u64, size: u64) -> Tap {
        let mut t = Tap::new(start..start + size, SNIFF_HEAD);
        t.hasher = self.opts.hash.map(|h| h.hasher());
        t
    }

    /// A tap on `range` of a stream for image `i`, to the visitor's sink
    /// where it gives one, else into memory.
    fn visitor_tap(&mut self, i: usize, range: std::ops::Range<u64>) -> Tap {
        let mut t = Tap::new(range, 0);
        t.out = match self.visit.sink(&self.report.images[i]) {
            Some(s) => TapOut::Sink(s, None),
            None => TapOut::Buffer(Vec::new()),
        };
        t
    }

    /// Hands what `taps` (one per image of `images`) got to the visitor:
    /// each sink back with how its stream ended, bytes in memory to
    /// [`Visit::image`]; when the stream failed (`why`), every image is
    /// unavailable.
    fn hand_over(
        &mut self,
        images: &[usize],
        taps: Vec<Tap>,
        why: std::result::Result<(), String>,
    ) {
        // Past a limit nothing more is handed over: each sink comes back
        // failed, each image is unavailable.
        let why = match self.report.stopped {
            Some(limit) => Err(format!("the scan stopped: {limit}")),
            None => why,
        };
        for (&i, t) in images.iter().zip(taps) {
            let img = &self.report.images[i];
            match (t.out, &why) {
                (TapOut::Sink(sink, error), Ok(())) => {
                    let end = error.map_or(Ok(()), |e| Err(SinkError::Write(e)));
                    self.visit.streamed(img, sink, end);
                }
                (TapOut::Sink(sink, _), Err(w)) => {
                    self.visit
                        .streamed(img, sink, Err(SinkError::Data(w.clone())));
                }
                (TapOut::Buffer(bytes), Ok(())) => self.visit.image(img, &bytes),
                (TapOut::Buffer(_), Err(w)) => self.visit.unavailable(img, w),
                (TapOut::Nowhere, _) => {}
            }
        }
    }

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

    fn decompress(&mut self, c: &Ccob<'_>) -> Result<ccob::Decompressed> {
        let declared = c.header.uncompressed_size;
        if !self.whole(declared) || !self.fits(declared) {
            return Err(over_budget(declared, self.budget));
        }
        self.report.decompressed = self.report.decompressed.saturating_add(declared);
        let opts = ReadOptions {
            limits: ccob::Limits {
                max_uncompressed: self.budget,
            },
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

    /// Records an image, hashes it, hands it to the visitor, and walks the
    /// containers inside it. `loc` is where its bytes lie.
    fn push_image(&mut self, mut image: Image, bytes: Option<&[u8]>, loc: &Loc) -> usize {
        let id = self.report.images.len();
        if id >= self.opts.max_images {
            self.stop(Limit::Images(self.opts.max_images));
        }
        // Past a limit the image is recorded (its id is used) but nothing
        // more is done for it.
        let bytes = bytes.filter(|_| !self.stopped());
        image.id = id;
        if let (Some(h), Some(b)) = (self.opts.hash, bytes) {
            image.hash = Some(h.digest(b));
        }
        let leafy = image.uncompressed_size.is_some();
        self.report.containers[image.container].images += 1;
        self.report.images.push(image);
        let Some(b) = bytes else { return id };
        if self.visit.wants(&self.report.images[id]) {
            self.visit.image(&self.report.images[id], b);
        }
        if !leafy && Magic::at_start(b).is_some() {
            let before = self.report.containers.len();
            let l = Loc {
                parent: Some(Parent::Image(id)),
                ..loc.clone()
            };
            self.region(b, &l, Expect::Sequence { whole: false });
            if self.report.containers.len() > before {
                self.report.images[id].nested = Some(before);
            }
        }
        id
    }
}

/// Where a binary bundle with these records ends: after its header or
/// its last entry's data, whichever is later.
fn bundle_extent(records: &[binary::Record]) -> u64 {
    let header = 32 + records.iter().map(|r| 24 + len64(&r.id)).sum::<u64>();
    records
        .iter()
        .map(|r| r.offset + r.size)
        .fold(header, u64::max)
}

/// A fatbin entry's kind, as messages name it.
fn entry_kind(kind: u16) -> String {
    match kind {
        fatbin::KIND_PTX => "ptx".into(),
        fatbin::KIND_ELF => "cubin".into(),
        k => format!("kind {k}"),
    }
}

fn kind_of(m: Magic) -> &'static str {
    match m {
        Magic::OffloadBinary => "OffloadBinary",
        Magic::Bundle => "bundle",
        Magic::Ccob => "compressed bundle (CCOB)",
        Magic::Fatbin => "CUDA fatbin",
    }
}

/// Byte ranges of one container's entries, walked at most once each: an
/// entry whose non-empty range overlaps one accepted before it is damage
/// (no tool writes such entries; they are how a few kilobytes fan out to
/// millions of images), reported and left unread.
#[derive(Debug, Default)]
struct Ranges {
    /// Accepted ranges by start: (end, entry).
    taken: std::collections::BTreeMap<u64, (u64, usize)>,
}

impl Ranges {
    /// Accepts `start..end` for entry `entry`, or returns the earlier entry
    /// it overlaps.
    fn take(&mut self, start: u64, end: u64, entry: usize) -> Option<usize> {
        if end <= start {
            return None;
        }
        if let Some((_, &(e, j))) = self.taken.range(..end).next_back()
            && e > start
        {
            return Some(j);
        }
        self.taken.insert(start, (end, entry));
        None
    }
}

/// The problem message for entry `i` (`start..end`) overlapping entry `j`.
fn overlap_message(i: usize, j: usize, start: u64, end: u64) -> String {
    format!(
        "entry {i} (bytes {start:#x}..{end:#x}) overlaps entry {j}: entries of one container \
         never share bytes, so entry {i} is not read"
    )
}

/// The error of a stream declaring `declared` bytes where `left` remain of
/// the budget (the scan has stopped; it is never reported).
/// What setting up one decoder costs the budget, in decompressed bytes:
/// about what decoding this much takes (zstd's context alone is some
/// 100 KiB to set up).
pub(super) const DECODER_SETUP: u64 = 32 << 10;

fn over_budget(declared: u64, left: u64) -> Error {
    ErrorKind::LimitExceeded {
        what: format!("decompressed data of {declared} bytes"),
        limit: left,
    }
    .into()
}

/// `msg` with every `at 0x…` offset moved on by `base`. The readers name
/// the structures they meet by their offset in the bytes they were given
/// (`OffloadBinary at 0x0`, `CUDA fatbin entry at 0x40`), which start at
/// the candidate; `base` makes them the file's, as the problem's own
/// offset is. (Offsets in an error's fields are moved by
/// [`Error::rebased`].)
fn rebase_at(msg: &str, base: u64) -> String {
    const AT: &str = "at 0x";
    if base == 0 {
        return msg.to_string();
    }
    let mut out = String::with_capacity(msg.len() + 8);
    let mut rest = msg;
    while let Some(i) = rest.find(AT) {
        let digits = rest[i + AT.len()..]
            .bytes()
            .take_while(u8::is_ascii_hexdigit)
            .count();
        let end = i + AT.len() + digits;
        match u64::from_str_radix(&rest[i + AT.len()..end], 16) {
            Ok(n) if digits > 0 => {
                out.push_str(&rest[..i]);
                out.push_str(&format!("at {:#x}", n.saturating_add(base)));
            }
            _ => out.push_str(&rest[..end]),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod rebase_tests {
    #[test]
    fn at_offsets_move_and_nothing_else_does() {
        let m = "invalid CUDA fatbin: payload of the CUDA fatbin entry at 0x40 (offset 0x10, \
                 size 0x8) lies outside; what at 0xzz, at 0x";
        assert_eq!(
            super::rebase_at(m, 0x1d0),
            "invalid CUDA fatbin: payload of the CUDA fatbin entry at 0x210 (offset 0x10, \
             size 0x8) lies outside; what at 0xzz, at 0x"
        );
        assert_eq!(
            super::rebase_at("OffloadBinary at 0x0", 0),
            "OffloadBinary at 0x0"
        );
        assert_eq!(
            super::rebase_at("at 0xffffffffffffffff", 5),
            "at 0xffffffffffffffff"
        );
    }
}

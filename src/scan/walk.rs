//! The recursive walk: files, archive members, sections, byte ranges that
//! hold containers, containers and their images.

use std::io::Read;

use object::read::archive::ArchiveFile;

use super::fatbin;
use super::magic::{Finders, Magic};
use super::sections::{self, ObjectFile, Role};
use super::{
    Compression, Container, ContainerKind, Image, Mode, NoVisit, Options, Parent, Problem, Report,
    Visit, WrapperInfo,
};
use crate::bundle::ccob::{self as ccob, Ccob, HashCheck, Method, ReadOptions};
use crate::bundle::{binary, id::BundleId, text};
use crate::error::{Error, ErrorKind, Result};
use crate::num::usize_from;
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
    w.report
}

/// The largest bundle header read from a partly decompressed CCOB.
const MAX_BUNDLE_HEADER: u64 = 1 << 20;

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

/// A bundle record read from a partly decompressed bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The entry ID as stored.
    pub id: Vec<u8>,
    /// Offset of the entry's data in the (uncompressed) bundle.
    pub offset: u64,
    /// Size of the entry's data.
    pub size: u64,
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn len64(b: &[u8]) -> u64 {
    b.len() as u64
}

/// `gfx90a:xnack+:sramecc-` → (`gfx90a`, [`xnack+`, `sramecc-`]).
fn split_target_id(t: &str) -> (String, Vec<String>) {
    let mut parts = t.split(':');
    let arch = parts.next().unwrap_or_default().to_string();
    (arch, parts.map(str::to_string).collect())
}

/// The image-kind name of an OffloadBinary entry.
fn declared_kind(k: ImageKind) -> String {
    match k.0 {
        0 => "none".into(),
        1 => "object".into(),
        2 => "bitcode".into(),
        3 => "cubin".into(),
        4 => "fatbinary".into(),
        5 => "ptx".into(),
        6 => "spirv".into(),
        n => format!("unknown-{n}"),
    }
}

/// What the bytes of a bundle entry are.
fn sniff(b: &[u8]) -> String {
    const EM_CUDA: u16 = 190;
    let k = if b.is_empty() {
        "none"
    } else if b.starts_with(b"\x7fELF") {
        let machine = b.get(18..20).map(|m| u16::from_le_bytes([m[0], m[1]]));
        if machine == Some(EM_CUDA) {
            "cubin"
        } else {
            "object"
        }
    } else if b.starts_with(b"BC\xC0\xDE") || b.starts_with(&[0xDE, 0xC0, 0x17, 0x0B]) {
        "bitcode"
    } else if b.starts_with(&[0x03, 0x02, 0x23, 0x07]) {
        "spirv"
    } else if b.starts_with(b"!<arch>\n") {
        "archive"
    } else {
        match Magic::at_start(b) {
            Some(Magic::Fatbin) => "fatbinary",
            Some(Magic::OffloadBinary) => "offload-binary",
            Some(Magic::Bundle) => "bundle",
            Some(Magic::Ccob) => "ccob",
            None => "unknown",
        }
    };
    k.to_string()
}

/// A bundle-entry ID as (offload kind, triple, target ID), reported as
/// written: the triple without its trailing `-`, the target ID even when
/// its processor is one clang does not know.
fn parse_bundle_id(id: &str) -> (String, String, String) {
    let sixth = id.splitn(6, '-').nth(5).unwrap_or_default();
    match BundleId::parse(id) {
        Ok(b) => {
            let kind = if b.kind == "hipv4" {
                "hip".to_string()
            } else {
                b.kind.clone()
            };
            let triple = b.normalized_triple().trim_end_matches('-').to_string();
            let target = if b.target_id.is_empty() {
                sixth.to_string()
            } else {
                b.target_id
            };
            (kind, triple, target)
        }
        Err(_) => {
            let (kind, rest) = id.split_once('-').unwrap_or((id, ""));
            (
                kind.to_string(),
                rest.trim_end_matches('-').to_string(),
                String::new(),
            )
        }
    }
}

fn u64_at(b: &[u8], at: u64) -> Option<u64> {
    let s = b.get(usize_from(at)..usize_from(at.checked_add(8)?))?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// What a prefix of a decompressed bundle says.
enum Records {
    /// The header needs this many bytes.
    Need(u64),
    /// Not a binary bundle.
    NotBinary,
    /// The records.
    Done(Vec<Record>),
}

/// Reads the records of a binary bundle of `total` bytes from its first
/// bytes `buf`, with the checks `bundle::binary::read` makes on whole
/// bundles (entries inside the bundle, after the header, never at 0).
fn parse_records(buf: &[u8], total: u64) -> Result<Records> {
    if len64(buf) < binary::MAGIC.len() as u64 {
        if !binary::MAGIC.starts_with(buf) {
            return Ok(Records::NotBinary);
        }
        return Ok(Records::Need(32));
    }
    if !binary::has_magic(buf) {
        return Ok(Records::NotBinary);
    }
    let Some(n) = u64_at(buf, 24) else {
        return Ok(Records::Need(32));
    };
    if total < 32 || n.checked_mul(24).is_none_or(|need| need > total - 32) {
        return Err(Error::invalid(
            "bundle entry count",
            format!("{n} records of at least 24 bytes cannot fit in {total} bytes"),
        ));
    }
    let mut at = 32u64;
    let mut out = Vec::new();
    for i in 0..n {
        let (Some(offset), Some(size), Some(id_len)) =
            (u64_at(buf, at), u64_at(buf, at + 8), u64_at(buf, at + 16))
        else {
            return Ok(Records::Need(at + 24));
        };
        at += 24;
        let id_end = at
            .checked_add(id_len)
            .filter(|&e| e <= total)
            .ok_or_else(|| ErrorKind::OutOfBounds {
                what: format!("ID of bundle entry {i}"),
                offset: at,
                size: id_len,
                within: "bundle",
                limit: total,
            })?;
        let Some(id) = buf.get(usize_from(at)..usize_from(id_end)) else {
            return Ok(Records::Need(id_end));
        };
        out.push(Record {
            id: id.to_vec(),
            offset,
            size,
        });
        at = id_end;
    }
    for (i, r) in out.iter().enumerate() {
        let end = r.offset.checked_add(r.size).filter(|&e| e <= total);
        if end.is_none() {
            return Err(ErrorKind::OutOfBounds {
                what: format!("data of bundle entry {i} ({})", lossy(&r.id)),
                offset: r.offset,
                size: r.size,
                within: "bundle",
                limit: total,
            }
            .into());
        }
        if r.offset == 0 || (r.size != 0 && r.offset < at) {
            return Err(ErrorKind::Overlap {
                first: format!("data of bundle entry {i} at {:#x}", r.offset),
                second: format!("bundle header (0x0..{at:#x})"),
            }
            .into());
        }
    }
    Ok(Records::Done(out))
}

fn decompress_error(what: &'static str, e: &std::io::Error) -> Error {
    ErrorKind::Decompress {
        what,
        detail: e.to_string(),
    }
    .into()
}

/// The records of the bundle a CCOB holds, in file order, decompressing
/// only as far as the bundle header (at most 1 MiB of it); `None` when the
/// contents are not a binary bundle.
pub fn ccob_records(c: &Ccob<'_>) -> Result<Option<Vec<Record>>> {
    let total = c.header.uncompressed_size;
    let (what, mut dec): (&'static str, Box<dyn Read + '_>) = if c.header.method == Method::ZSTD {
        let d = zstd::stream::read::Decoder::with_buffer(c.payload)
            .map_err(|e| decompress_error("zstd data", &e))?;
        ("zstd data", Box::new(d))
    } else {
        (
            "zlib data",
            Box::new(flate2::read::ZlibDecoder::new(c.payload)),
        )
    };
    let mut buf = Vec::new();
    let mut want = 32u64.min(total);
    loop {
        let have = len64(&buf);
        if want > have {
            (&mut dec)
                .take(want - have)
                .read_to_end(&mut buf)
                .map_err(|e| decompress_error(what, &e))?;
        }
        match parse_records(&buf, total)? {
            Records::Done(r) => return Ok(Some(r)),
            Records::NotBinary => return Ok(None),
            Records::Need(n) => {
                if len64(&buf) < want || n > total {
                    return Err(Error::invalid(
                        "compressed bundle",
                        format!(
                            "the contents end after {} bytes, inside the bundle header",
                            buf.len()
                        ),
                    ));
                }
                if n > MAX_BUNDLE_HEADER {
                    return Err(ErrorKind::LimitExceeded {
                        what: "bundle header in a compressed bundle".into(),
                        limit: MAX_BUNDLE_HEADER,
                    }
                    .into());
                }
                want = n
                    .max(want.saturating_mul(2))
                    .min(total)
                    .min(MAX_BUNDLE_HEADER);
            }
        }
    }
}

/// Where a v1 zlib CCOB's stream ends (v1 has no total size): inflates into
/// a scratch buffer, producing at most `limit` bytes.
fn zlib_stream_len(payload: &[u8], limit: u64) -> Result<u64> {
    let mut z = flate2::Decompress::new(true);
    let mut scratch = vec![0u8; 64 << 10];
    loop {
        let rest = payload.get(usize_from(z.total_in())..).unwrap_or_default();
        let before = (z.total_in(), z.total_out());
        let status = z
            .decompress(rest, &mut scratch, flate2::FlushDecompress::None)
            .map_err(|e| ErrorKind::Decompress {
                what: "zlib data",
                detail: e.to_string(),
            })?;
        if status == flate2::Status::StreamEnd {
            return Ok(z.total_in());
        }
        if z.total_out() > limit {
            return Err(ErrorKind::LimitExceeded {
                what: "zlib data".into(),
                limit,
            }
            .into());
        }
        if (z.total_in(), z.total_out()) == before {
            return Err(ErrorKind::Decompress {
                what: "zlib data",
                detail: "the stream ends early".into(),
            }
            .into());
        }
    }
}

/// The comment prefix of the text-bundle start marker at `pos`, when it is
/// one (`\n<prefix> __CLANG_OFFLOAD_BUNDLE____START__ `).
fn text_prefix(bytes: &[u8], pos: usize) -> Option<&'static str> {
    if !bytes[pos..].starts_with(b"__CLANG_OFFLOAD_BUNDLE____START__ ") {
        return None;
    }
    ["//", "#", ";"].into_iter().find(|p| {
        let need = p.len() + 2;
        pos >= need
            && bytes[pos - need] == b'\n'
            && &bytes[pos - need + 1..pos - 1] == p.as_bytes()
            && bytes[pos - 1] == b' '
    })
}

fn is_text_marker(b: &[u8]) -> bool {
    b.starts_with(b"__CLANG_OFFLOAD_BUNDLE____START__")
        || b.starts_with(b"__CLANG_OFFLOAD_BUNDLE____END__")
}

impl Walker<'_> {
    fn problem(&mut self, loc: &Loc, container: Option<usize>, message: String) {
        self.report.problems.push(Problem {
            offset: loc.abs,
            section: loc.section.clone(),
            member: loc.member.clone(),
            container,
            message,
        });
    }

    /// Scans a whole file (or archive member); returns what it is.
    fn file(&mut self, data: &[u8], loc: &Loc, nest: u32) -> &'static str {
        let starts = Magic::at_start(data);
        let raw_format = match starts {
            Some(Magic::OffloadBinary) => "offload-binary",
            Some(Magic::Bundle) => "bundle",
            Some(Magic::Ccob) => "ccob",
            Some(Magic::Fatbin) => "cuda-fatbin",
            None => "data",
        };
        if self.opts.mode == Mode::Raw {
            self.report.used_raw_scan = true;
            self.region(data, loc, Expect::Raw { whole: true });
            return raw_format;
        }
        if data.starts_with(b"!<arch>\n") || data.starts_with(b"!<thin>\n") {
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
        let ar = match ArchiveFile::parse(data) {
            Ok(ar) => ar,
            Err(e) => {
                self.problem(loc, None, format!("cannot read the archive: {e}"));
                return;
            }
        };
        for m in ar.members() {
            let m = match m {
                Ok(m) => m,
                Err(e) => {
                    self.problem(loc, None, format!("cannot read an archive member: {e}"));
                    return;
                }
            };
            let name = lossy(m.name());
            let (off, _) = m.file_range();
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
            match m.data(data) {
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
        m: &object::read::archive::ArchiveMember<'_>,
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
                if bytes.len() as u64 != m.size() {
                    self.problem(
                        &l,
                        None,
                        format!(
                            "the thin archive's member file '{name}' has {} bytes, the \
                             archive says {}",
                            bytes.len(),
                            m.size()
                        ),
                    );
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
            let l = Loc {
                section: Some(sec.name.clone()),
                ..loc.at(sec.offset)
            };
            match &sec.role {
                Role::OffloadBinaries | Role::Fatbins => {
                    self.region(sec.data, &l, Expect::Sequence { whole: false });
                }
                Role::Wrappers => self.wrappers(o, sec, &l),
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
            let inner = Loc {
                depth: loc.depth + 1,
                ..l
            };
            self.bundle_entry(id, i, &name, 0, len64(sec.data), Some(sec.data), &inner);
        }
    }

    fn wrappers(&mut self, o: &ObjectFile<'_>, sec: &sections::Section<'_>, loc: &Loc) {
        let list = match fatbin::read_wrappers(sec.data, o.wide) {
            Ok(l) => l,
            Err(e) => {
                self.problem(loc, None, e.to_string());
                return;
            }
        };
        let ptr_at = 8;
        let size = if o.wide { 24 } else { 16 };
        for (at, w) in list {
            let target = o.resolve_pointer(sec, at + ptr_at, w.data);
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
        let found: Vec<(usize, Option<usize>)> =
            self.report
                .containers
                .iter()
                .filter_map(|c| {
                    let t = c.wrapper.as_ref()?.target?;
                    let hit =
                        self.report.containers.iter().find(|d| {
                            d.offset == Some(t) && d.kind != ContainerKind::FatbinWrapper
                        });
                    Some((c.id, hit.map(|d| d.id)))
                })
                .collect();
        for (id, hit) in found {
            if let Some(w) = &mut self.report.containers[id].wrapper {
                w.target_container = hit;
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
                if pos < cursor {
                    continue;
                }
                if magic == Magic::Bundle && is_text_marker(&bytes[pos..]) {
                    // A text bundle's marker; the file (or decompressed
                    // contents) may be a text bundle.
                    if expect.whole()
                        && cursor == 0
                        && let Some(prefix) = text_prefix(bytes, pos)
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
                            let what = if sequence {
                                format!("invalid {}", kind_of(magic))
                            } else {
                                format!("not a valid {} (raw-scan candidate)", kind_of(magic))
                            };
                            // The reader's offsets are the candidate's; make
                            // them the file's (or the region's, inside
                            // decompressed data).
                            let here = loc.at(pos as u64);
                            let e = e.rebased(here.abs.unwrap_or(pos as u64));
                            self.problem(&here, None, format!("{what}: {e}"));
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
        let limits = offload_binary::Limits {
            max_inflated: self.budget,
        };
        let mut imgs: Vec<OffloadImage<'_>> = Vec::new();
        let size = offload_binary::read_binary(sub, 0, &limits, &mut imgs)?;
        let version = u32::from_le_bytes([sub[4], sub[5], sub[6], sub[7]]);
        let id = self.new_container(ContainerKind::OffloadBinary, Some(version), loc, rel, size);
        let compressed = imgs.first().is_some_and(|i| i.compressed);
        if compressed {
            let inflated = u64_at(sub, 32).unwrap_or(0);
            let body_at = u64_at(sub, 16).unwrap_or(0);
            let method = sub
                .get(usize_from(body_at)..)
                .is_some_and(|b| b.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]));
            self.budget = self.budget.saturating_sub(inflated);
            self.report.containers[id].compression = Some(Compression {
                method: if method { "zstd" } else { "zlib" }.into(),
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
        for (i, img) in imgs.iter().enumerate() {
            let arch_full = lossy(img.arch());
            let (arch, features) = split_target_id(&arch_full);
            let strings = img
                .strings
                .iter()
                .filter(|(k, _)| &**k != b"triple" && &**k != b"arch")
                .map(|(k, v)| (lossy(k), lossy(v)))
                .collect();
            let image = Image {
                id: 0,
                container: id,
                index: i,
                bundle_id: None,
                offload_kind: img.offload_kind.to_string(),
                image_kind: Some(declared_kind(img.image_kind)),
                triple: lossy(img.triple()),
                arch,
                target_id: arch_full,
                features,
                strings,
                section: loc.section.clone(),
                member: loc.member.clone(),
                offset: if compressed {
                    None
                } else {
                    loc.abs.and_then(|a| a.checked_add(img.image_offset))
                },
                relative_offset: img.image_offset,
                size: len64(&img.image),
                uncompressed_size: None,
                in_compressed: inner.in_compressed,
                hash: None,
                nested: None,
            };
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

    fn bundle(&mut self, sub: &[u8], loc: &Loc, rel: u64) -> Result<u64> {
        let entries = binary::read(sub)?;
        let header_end: u64 = 32 + entries.iter().map(|e| 24 + len64(e.id)).sum::<u64>();
        let extent = entries
            .iter()
            .map(|e| e.offset + len64(e.data))
            .fold(header_end, u64::max);
        let id = self.new_container(ContainerKind::Bundle, None, loc, rel, extent);
        let inner = Loc {
            depth: loc.depth + 1,
            ..loc.clone()
        };
        for (i, e) in entries.iter().enumerate() {
            self.bundle_entry(id, i, e.id, e.offset, len64(e.data), Some(e.data), &inner);
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
        let (kind, triple, target_id) = parse_bundle_id(&text);
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
        }
    }

    fn ccob(&mut self, sub: &[u8], loc: &Loc, rel: u64) -> Result<u64> {
        let mut c = Ccob::parse(sub)?;
        if c.header.version == 1 && c.header.method == Method::ZLIB {
            let n = zlib_stream_len(c.payload, c.header.uncompressed_size.min(self.budget))?;
            c.payload = &c.payload[..usize_from(n)];
            c.size = c.header.size() + n;
        }
        // Listing reads only the bundle header; a size the payload cannot
        // produce is still caught.
        c.check_declared_size()?;
        let full = self.opts.verify || self.opts.hash.is_some();
        let records = if full { None } else { ccob_records(&c)? };
        if !full && records.is_none() {
            // Not a binary bundle: a text or object bundle is listed from
            // the whole contents; anything else is none, and a bomb of
            // zeros is not decompressed past its first bytes.
            let prefix = c.decompress_prefix(super::CCOB_SNIFF)?;
            if !super::may_be_text_or_object_bundle(&prefix) {
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
        if let Some(records) = records {
            // Header only, unless the visitor wants an image.
            let id = self.push_ccob(&c, loc, rel);
            let inner = Loc {
                parent: Some(Parent::Container(id)),
                ..inner
            };
            let drafts: Vec<Image> = records
                .iter()
                .enumerate()
                .map(|(i, r)| self.bundle_image(0, i, &r.id, r.offset, r.size, None, &inner))
                .collect();
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
                for mut d in drafts {
                    d.container = b;
                    self.push_image(d, None, &inner);
                }
                return Ok(c.size);
            }
            match self.decompress(&c) {
                Ok(d) => {
                    self.note_decompressed(id, &d);
                    self.region(&d.data, &inner, Expect::Sequence { whole: true });
                }
                Err(e) => self.problem(loc, Some(id), format!("cannot decompress: {e}")),
            }
            return Ok(c.size);
        }
        let d = self.decompress(&c)?;
        let id = self.push_ccob(&c, loc, rel);
        self.note_decompressed(id, &d);
        let inner = Loc {
            parent: Some(Parent::Container(id)),
            ..inner
        };
        self.region(&d.data, &inner, Expect::Sequence { whole: true });
        Ok(c.size)
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
            stored_hash: Some(ccob::hex_hash(c.header.hash)),
            decompressed: false,
            hash_ok: None,
        });
        id
    }

    fn decompress(&mut self, c: &Ccob<'_>) -> Result<ccob::Decompressed> {
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
        let d = c.decompress(&opts)?;
        self.budget = self.budget.saturating_sub(len64(&d.data));
        Ok(d)
    }

    fn note_decompressed(&mut self, id: usize, d: &ccob::Decompressed) {
        let ok = d.hash_matches();
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
                    ccob::hex_hash(d.header.hash),
                    ccob::hex_hash(d.computed_hash.unwrap_or_default())
                ),
            );
        }
    }

    fn fatbin(&mut self, sub: &[u8], loc: &Loc, rel: u64) -> Result<u64> {
        let f = fatbin::read(sub)?;
        let id = self.new_container(
            ContainerKind::CudaFatbin,
            Some(u32::from(f.version)),
            loc,
            rel,
            f.size,
        );
        let inner = Loc {
            depth: loc.depth + 1,
            ..loc.clone()
        };
        for (i, e) in f.entries.iter().enumerate() {
            let arch = e.arch_name();
            let mut strings = Vec::new();
            if let Some(n) = e.name {
                strings.push(("name".to_string(), lossy(n)));
            }
            strings.push((
                "code_version".to_string(),
                format!("{}.{}", e.version.0, e.version.1),
            ));
            if let Some(m) = e.compression() {
                strings.push(("compression".to_string(), m.to_string()));
            }
            let image = Image {
                id: 0,
                container: id,
                index: i,
                bundle_id: None,
                offload_kind: if e.flags & 0x8 != 0 && e.flags & fatbin::FLAG_CUDA == 0 {
                    "opencl".into()
                } else {
                    "cuda".into()
                },
                image_kind: Some(match e.kind {
                    fatbin::KIND_PTX => "ptx".into(),
                    fatbin::KIND_ELF => "cubin".into(),
                    k => format!("unknown-{k}"),
                }),
                triple: e.triple().into(),
                arch: arch.clone(),
                target_id: arch,
                features: Vec::new(),
                strings,
                section: loc.section.clone(),
                member: loc.member.clone(),
                offset: loc.abs.and_then(|a| a.checked_add(e.payload_offset)),
                relative_offset: e.payload_offset,
                size: len64(e.payload),
                uncompressed_size: e.decompressed_size,
                in_compressed: loc.in_compressed,
                hash: None,
                nested: None,
            };
            self.push_image(image, Some(e.payload), &inner.at(e.payload_offset));
        }
        Ok(f.size)
    }

    /// Records an image, hashes it, hands it to the visitor, and walks the
    /// containers inside it. `loc` is where its bytes lie.
    fn push_image(&mut self, mut image: Image, bytes: Option<&[u8]>, loc: &Loc) -> usize {
        let id = self.report.images.len();
        image.id = id;
        if let (Some(h), Some(b)) = (self.opts.hash, bytes) {
            image.hash = Some(h.hash(b));
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

fn kind_of(m: Magic) -> &'static str {
    match m {
        Magic::OffloadBinary => "OffloadBinary",
        Magic::Bundle => "bundle",
        Magic::Ccob => "compressed bundle (CCOB)",
        Magic::Fatbin => "CUDA fatbin",
    }
}

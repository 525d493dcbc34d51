//! What pruning one file does: each container that loses entries,
//! rewritten where it lies ([`Edit`]), worked out from the file's scan
//! [`Report`] and the [`Verdict`]s on its images, before anything is
//! written. A container is rewritten in place: its new bytes start where
//! it started (so whatever points at it, a fatbin wrapper or a
//! registration call, still does) and the bytes it frees up to its old end
//! are zeros (and, in a file on disk, holes).
//!
//! What this part does not rewrite, it refuses, naming the container,
//! rather than leave a file that says less than it seems to: containers
//! inside other images or inside compressed data (a compressed bundle's
//! own bundle excepted: the CCOB is rebuilt around it), and the
//! `__CLANG_OFFLOAD_BUNDLE__` sections of a host object. OffloadBinaries
//! in a linked program go whole, and the OpenMP descriptor that registers
//! them is rewritten to register the others ([`Plan::registrations`]);
//! one whose descriptor is not found is refused.
//!
//! It refuses, too, the layouts where a rewrite would overwrite what must
//! stay: a container listed twice or overlapping another (two section
//! headers for one section), and, in a linked file, a container whose
//! bytes are also those of the ELF header, a header table, another section
//! or a segment other than its load segment ([`Fixed`]).

use std::fmt;

use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, elf};

use super::containers::{self, Pruned};
use super::shrink::openmp::Registration;
use super::{Options, Verdict};
use crate::error::{Error, Result};
use crate::num::{len64, usize_from};
use crate::scan::{Container, ContainerKind, Image, Parent, Report};

/// One container rewritten where it lies.
#[derive(Debug, Clone)]
pub struct Edit {
    /// The container's id in the report.
    pub container: usize,
    /// Where it starts in the file.
    pub offset: u64,
    /// Bytes it occupied.
    pub size: u64,
    /// What it becomes: its ranges are of the container's bytes (from
    /// `offset`), or of `built` when the new container was built whole.
    pub pruned: Pruned,
    /// The new container's bytes, when built in memory (a recompressed
    /// CCOB).
    pub built: Option<Vec<u8>>,
}

impl Edit {
    /// Bytes the rewrite frees (zeros after the new container). [`plan`]
    /// makes no edit whose new container is larger than the old (0 for
    /// one made otherwise).
    pub fn freed(&self) -> u64 {
        self.size.saturating_sub(self.pruned.layout.size)
    }

    /// Where it ends in the file, when that is in `len` bytes.
    fn end_within(&self, len: u64) -> Option<u64> {
        self.offset.checked_add(self.size).filter(|&e| e <= len)
    }
}

/// What pruning a file does.
///
/// A plan that [`plan`] makes holds its edits in file order, each inside
/// the file, none overlapping another, and none larger after than before
/// ([`Plan::check`]): what [`Output`](super::Output) relies on.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The containers rewritten, in file order.
    pub edits: Vec<Edit>,
    /// The OpenMP descriptors that register OffloadBinaries the edits
    /// remove (a linked ELF file's), rewritten to register the others.
    pub(crate) registrations: Vec<Registration>,
    /// The bytes those rewrites put in the file, by file offset, when
    /// nothing moves (the file rewritten in place): in order, apart, and
    /// apart from the edits.
    pub(crate) patches: Vec<(u64, Vec<u8>)>,
}

impl Plan {
    /// Whether the file stays as it is.
    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }

    /// Bytes freed in all. (The edits of a plan that [`plan`] makes lie
    /// apart in the file, so the sum is at most its size: saturating
    /// never changes it.)
    pub fn freed(&self) -> u64 {
        self.edits
            .iter()
            .map(Edit::freed)
            .fold(0, u64::saturating_add)
    }

    /// Checks that the edits are in file order, inside a file of `len`
    /// bytes, apart from one another, and no larger after than before.
    pub fn check(&self, len: u64) -> Result<()> {
        let mut pos = 0;
        for e in &self.edits {
            let end = e
                .end_within(len)
                .ok_or_else(|| Error::invalid("file", "a container runs past its end"))?;
            if e.offset < pos {
                return Err(Error::unsupported(format!(
                    "two containers to rewrite overlap at {:#x}: nothing is pruned",
                    e.offset
                )));
            }
            if e.pruned.layout.size > e.size {
                return Err(Error::unsupported(format!(
                    "the container at {:#x} would grow: nothing is pruned",
                    e.offset
                )));
            }
            pos = end;
        }
        Ok(())
    }
}

/// What holds the containers, which decides what can be done with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// A linked program or shared library: containers are rewritten where
    /// they lie (OffloadBinaries there go whole, and their OpenMP
    /// descriptor is rewritten).
    Linked,
    /// A relocatable object: sections are rewritten, so OffloadBinaries can
    /// go whole, and a host object's bundle sections are the object
    /// rewrite's to remove (no edit here).
    Relocatable,
    /// A bare container file (or a run of OffloadBinaries): the freed bytes
    /// are cut out, so OffloadBinaries can go whole.
    Raw,
}

/// A container that cannot be pruned here.
fn refuse(kind: ContainerKind, at: Option<u64>, why: &str) -> Error {
    let at = at.map_or(String::new(), |o| format!(" at {o:#x}"));
    Error::usage(format!(
        "the {}{at} would lose images, but {why}",
        kind.name()
    ))
}

/// The edits that prune `data` (scanned as `report`) to the images whose
/// verdict says they stay, in a file that is a `host`, as `opts` say.
pub fn plan(
    data: &[u8],
    report: &Report,
    verdicts: &[Verdict],
    host: Host,
    opts: &Options,
) -> Result<Plan> {
    if report.damaged() {
        return Err(Error::invalid(
            "file",
            "it holds damaged data (see `offload-kit inspect`): nothing is pruned",
        ));
    }
    if verdicts.len() != report.images.len() {
        return Err(Error::usage("one verdict per image is needed"));
    }
    if host == Host::Linked
        && report.used_raw_scan
        && crate::container::elf::peek(data).is_some_and(|p| p.has_section_table())
    {
        // Its section headers name nothing readable, so where its
        // containers are was found by their bytes; rewritten, those bytes
        // could make the headers read otherwise (a name table inside a
        // container), and the file say something else than what was
        // pruned.
        return Err(Error::unsupported(
            "it has section headers, but none the scanner can read (it was scanned raw): \
             nothing is pruned",
        ));
    }
    check_device_left(report, verdicts, opts.allow_empty)?;
    let mut plan = Plan::default();
    // Bundles inside a CCOB that the CCOB's edit takes care of.
    let mut inside_ccob = vec![false; report.containers.len()];
    for c in &report.containers {
        if inside_ccob[c.id] {
            continue;
        }
        let edit = if c.kind == ContainerKind::Ccob {
            ccob_edit(data, report, verdicts, c, opts)?.map(|(edit, inner)| {
                inside_ccob[inner] = true;
                edit
            })
        } else if c.kind == ContainerKind::OffloadBinary && host != Host::Linked {
            whole_binary_edit(data, report, verdicts, c)?
        } else if c.kind == ContainerKind::OffloadBinary {
            linked_binary_edit(data, report, verdicts, c)?
        } else if c.kind == ContainerKind::ObjectBundle && host == Host::Relocatable {
            None
        } else {
            container_edit(data, report, verdicts, c)?
        };
        plan.edits.extend(edit);
    }
    plan.edits.sort_by_key(|e| e.offset);
    if host == Host::Linked {
        plan.registrations = registrations(data, report, &plan)?;
    }
    check_apart(report, &plan)?;
    if !plan.registrations.is_empty() {
        plan.patches = patches_in_place(&plan)?;
    }
    plan.check(len64(data))?;
    if host == Host::Linked && !plan.is_empty() {
        check_linked(data, report, &plan)?;
    }
    Ok(plan)
}

/// Whether `img` is device code: an image for a device, not a bundle's
/// host entry nor an empty placeholder.
fn is_device_code(img: &Image) -> bool {
    let placeholder = img.size == 0 && img.arch.is_empty();
    !img.offload_kind.is_host() && !placeholder
}

/// Whether the file `report` describes holds device code, and whether
/// some of it stays by `verdicts` (one per image).
pub(crate) fn device_code(report: &Report, verdicts: &[Verdict]) -> (bool, bool) {
    let mut device = report.images.iter().filter(|i| is_device_code(i));
    let held = device.clone().next().is_some();
    let left = device.any(|i| verdicts.get(i.id).is_some_and(|v| v.stays()));
    (held, left)
}

/// The containers of `report` that hold device code of which nothing
/// stays by `verdicts`, by id in the report's order: what pruning empties
/// (a CUDA fatbin left with no entry, a bundle with its host entry alone,
/// an OffloadBinary removed whole).
pub(crate) fn emptied(report: &Report, verdicts: &[Verdict]) -> Vec<usize> {
    let mut held = vec![false; report.containers.len()];
    let mut left = vec![false; report.containers.len()];
    for i in report.images.iter().filter(|i| is_device_code(i)) {
        if let Some(h) = held.get_mut(i.container) {
            *h = true;
        }
        if verdicts.get(i.id).is_some_and(|v| v.stays())
            && let Some(l) = left.get_mut(i.container)
        {
            *l = true;
        }
    }
    (0..held.len()).filter(|&c| held[c] && !left[c]).collect()
}

/// Refuses, unless `allow_empty`, to prune a file that holds device code
/// of which nothing would stay. Containers that keep none are fine when
/// others keep some: a library built per translation unit has fatbins
/// for old GPUs alone, which a rule for a new one empties.
fn check_device_left(report: &Report, verdicts: &[Verdict], allow_empty: bool) -> Result<()> {
    let (held, left) = device_code(report, verdicts);
    if allow_empty || !held || left || verdicts.iter().all(|v| v.stays()) {
        return Ok(());
    }
    let n = emptied(report, verdicts).len();
    // Fatbins the file loads itself (cuFFT's kernels) are not pruned: a
    // user reading "no device image would stay" should not think the
    // file has no code for the GPU.
    let also = report
        .fatbins_elsewhere_said()
        .map(|t| {
            format!(" (the {t}, which the file loads itself, are not pruned and stay as they are)")
        })
        .unwrap_or_default();
    Err(Error::usage(format!(
        "no device image of the file would stay ({n} container(s) would keep none): \
         --allow-empty allows that{also}"
    )))
}

/// Refuses a plan that edits a container whose bytes another container
/// (not inside it) claims too: one container found twice, through two
/// section headers for one section, would be rewritten twice and its
/// freed bytes counted twice.
///
/// The containers are swept in file order, each against the one reaching
/// furthest before it: when an edited container overlaps another, that
/// pair is met (the one reaching furthest when the later of the two comes
/// is the edited one, or one that overlaps it and comes first).
fn check_apart(report: &Report, plan: &Plan) -> Result<()> {
    let mut edited = vec![false; report.containers.len()];
    for e in &plan.edits {
        *edited
            .get_mut(e.container)
            .ok_or_else(|| Error::usage("an edit names no container of the report"))? = true;
    }
    // A container that claims bytes past 2^64 is cut there, where no file
    // byte lies: it still covers every byte it claims.
    let mut placed: Vec<(u64, u64, usize)> = report
        .containers
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let start = c.offset.filter(|_| c.parent.is_none())?;
            Some((start, start.saturating_add(c.size), i))
        })
        .filter(|&(start, end, _)| start < end)
        .collect();
    placed.sort_unstable();
    // The container reaching furthest so far: where it ends, and which.
    let mut reach: Option<(u64, usize)> = None;
    for &(start, end, i) in &placed {
        if let Some((r_end, r)) = reach
            && start < r_end
            && (edited[i] || edited[r])
        {
            let (a, b) = (&report.containers[r], &report.containers[i]);
            return Err(Error::unsupported(overlap(a, b)));
        }
        if reach.is_none_or(|(r_end, _)| end > r_end) {
            reach = Some((end, i));
        }
    }
    Ok(())
}

/// What is wrong with containers `a` and `b`, which overlap.
fn overlap(a: &Container, b: &Container) -> String {
    let at = |c: &Container| c.offset.unwrap_or(0);
    if (at(a), a.size, a.kind) == (at(b), b.size, b.kind) {
        let through = match (&a.section, &b.section) {
            (Some(x), Some(y)) if x == y => {
                format!(" through two section headers `{x}` (one section listed twice)")
            }
            (Some(x), Some(y)) => format!(" through sections `{x}` and `{y}`"),
            _ => String::new(),
        };
        return format!(
            "the {} at {:#x} is found twice{through}: nothing is pruned",
            a.kind,
            at(a)
        );
    }
    format!(
        "the {} at {:#x} ({} bytes) overlaps the {} at {:#x}: nothing is pruned",
        a.kind,
        at(a),
        a.size,
        b.kind,
        at(b)
    )
}

/// What a part of a linked file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// The ELF header, or the program or section header table.
    Header,
    /// The section of this index.
    Section(usize),
    /// The segment of this index, and whether it is a load segment.
    Segment(usize, bool),
}

/// A part of a linked file that pruning must leave as it is, where it is:
/// the ELF header, a header table, a section with bytes in the file
/// (`SHT_NOBITS` and the null section have none), a segment's file bytes.
#[derive(Debug, Clone)]
pub(crate) struct Fixed {
    /// What it is.
    pub part: Part,
    /// Its name in messages (`the section header table`, ``section 7
    /// `.dynsym` ``, `segment 5 PT_DYNAMIC`).
    pub what: String,
    /// Its file bytes, `[start, end)`.
    pub start: u64,
    pub end: u64,
}

impl Fixed {
    /// Whether it shares a byte with `[start, end)`.
    pub(crate) fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start < end && start < self.end
    }

    /// Whether it holds all of `[start, end)`.
    pub(crate) fn holds(&self, start: u64, end: u64) -> bool {
        self.start <= start && end <= self.end
    }
}

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:#x}..{:#x})", self.what, self.start, self.end)
    }
}

/// The parts of the linked ELF file or PE image `data` that must stay
/// ([`Fixed`]), read with `object`'s readers; an error when its headers
/// cannot be read (then what a rewrite would overwrite cannot be told).
pub(crate) fn fixed_parts(data: &[u8]) -> Result<Vec<Fixed>> {
    match object::FileKind::parse(data) {
        Ok(object::FileKind::Elf32) => fixed_parts_of::<elf::FileHeader32<Endianness>>(data),
        Ok(object::FileKind::Elf64) => fixed_parts_of::<elf::FileHeader64<Endianness>>(data),
        Ok(object::FileKind::Pe32 | object::FileKind::Pe64) => {
            super::shrink::pe::PeImage::read(data)
                .map(|pe| pe.fixed_parts())
                .map_err(|why| Error::unsupported(format!("{why}: nothing is pruned")))
        }
        _ => Err(Error::unsupported(
            "its ELF header cannot be read: nothing is pruned",
        )),
    }
}

/// [`fixed_parts`] for a file of class `Elf`.
fn fixed_parts_of<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> Result<Vec<Fixed>> {
    let bad = |e: object::read::Error| {
        Error::unsupported(format!(
            "its ELF headers cannot be read ({e}): nothing is pruned"
        ))
    };
    let header = Elf::parse(data).map_err(bad)?;
    let endian = header.endian().map_err(bad)?;
    let phdrs = header.program_headers(endian, data).map_err(bad)?;
    let shdrs = header.section_headers(endian, data).map_err(bad)?;
    let names = header.section_strings(endian, data, shdrs).ok();
    // The tables were read from `data`, so they end inside it: no sum
    // below of a table's offset and length overflows.
    let table = |what: &str, start: u64, len: usize| -> Result<Fixed> {
        let end = start
            .checked_add(crate::num::u64_from(len))
            .ok_or_else(|| Error::invalid("file", format!("the {what} runs past its end")))?;
        Ok(Fixed {
            part: Part::Header,
            what: format!("the {what}"),
            start,
            end,
        })
    };
    let mut parts = vec![table("ELF header", 0, size_of::<Elf>())?];
    if !phdrs.is_empty() {
        let start = header.e_phoff(endian).into();
        parts.push(table("program header table", start, size_of_val(phdrs))?);
    }
    if !shdrs.is_empty() {
        let start = header.e_shoff(endian).into();
        parts.push(table("section header table", start, size_of_val(shdrs))?);
    }
    // A section or segment may claim bytes up to past 2^64: its range is
    // cut at 2^64, where no file byte lies, so it still covers every byte
    // of the file it claims (saturating is safe for the overlap checks).
    for (i, s) in shdrs.iter().enumerate() {
        let Some((start, size)) = s.file_range(endian) else {
            continue;
        };
        if size == 0 || s.sh_type(endian) == elf::SHT_NULL {
            continue;
        }
        let name = names
            .and_then(|t| s.name(endian, t).ok())
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        parts.push(Fixed {
            part: Part::Section(i),
            what: format!("section {i} `{name}`"),
            start,
            end: start.saturating_add(size),
        });
    }
    for (i, p) in phdrs.iter().enumerate() {
        let (start, size) = p.file_range(endian);
        if size == 0 {
            continue;
        }
        let ty = p.p_type(endian);
        parts.push(Fixed {
            part: Part::Segment(i, ty == elf::PT_LOAD),
            what: format!("segment {i} {}", segment_type(ty)),
            start,
            end: start.saturating_add(size),
        });
    }
    Ok(parts)
}

/// A segment type's name, for messages.
fn segment_type(ty: elf::ProgramType) -> String {
    let name = match ty {
        elf::PT_LOAD => "PT_LOAD",
        elf::PT_DYNAMIC => "PT_DYNAMIC",
        elf::PT_INTERP => "PT_INTERP",
        elf::PT_NOTE => "PT_NOTE",
        elf::PT_PHDR => "PT_PHDR",
        elf::PT_TLS => "PT_TLS",
        elf::PT_GNU_EH_FRAME => "PT_GNU_EH_FRAME",
        elf::PT_GNU_RELRO => "PT_GNU_RELRO",
        elf::PT_GNU_PROPERTY => "PT_GNU_PROPERTY",
        other => return format!("type {other:#x}"),
    };
    name.to_string()
}

/// Refuses a plan for the linked file `data` that would rewrite (or free,
/// as zeros or by cutting them out) bytes that are also those of a part
/// that must stay: the ELF header, a header table, a section other than
/// the one that holds the container, a segment other than a load segment
/// that holds it; and one whose container two sections hold (a section
/// listed twice, or two that overlap).
///
/// The plan's edits are in file order and apart ([`Plan::check`]), so
/// the edits a part shares bytes with are a run of them, found by binary
/// search, and all but the first and the last of the run lie inside the
/// part: those two tell whether the part holds them all.
fn check_linked(data: &[u8], report: &Report, plan: &Plan) -> Result<()> {
    let parts = fixed_parts(data)?;
    let edits = &plan.edits;
    let end = |e: &Edit| e.end_within(len64(data)).unwrap_or(u64::MAX);
    // The run of edits each section that holds some holds, `[first, last)`.
    let mut held: Vec<(usize, usize, &Fixed)> = Vec::new();
    for p in &parts {
        let first = edits.partition_point(|e| end(e) <= p.start);
        let last = edits.partition_point(|e| e.offset < p.end);
        if first >= last {
            continue;
        }
        let may_hold = match p.part {
            Part::Header => false,
            Part::Section(_) => true,
            Part::Segment(_, load) => load,
        };
        if let Some(e) = [&edits[first], &edits[last - 1]]
            .into_iter()
            .find(|e| !may_hold || !p.holds(e.offset, end(e)))
        {
            let kind = kind_of(report, e);
            let freed_from = e.offset.saturating_add(e.pruned.layout.size);
            let how = if p.overlaps(freed_from, end(e)) {
                format!("inside the bytes the {kind} at {:#x} would free", e.offset)
            } else {
                format!(
                    "inside the {kind} at {:#x}, which pruning rewrites",
                    e.offset
                )
            };
            return Err(Error::unsupported(format!(
                "{p} lies {how}: nothing is pruned"
            )));
        }
        if matches!(p.part, Part::Section(_)) {
            held.push((first, last, p));
        }
    }
    // Two runs that share an edit share it with the run before them in
    // order of their first edits.
    held.sort_unstable_by_key(|&(first, last, _)| (first, last));
    for pair in held.windows(2) {
        let ((_, a_last, a), (b_first, _, b)) = (pair[0], pair[1]);
        if b_first < a_last {
            let e = &edits[b_first];
            let why = if (a.start, a.end) == (b.start, b.end) {
                format!(
                    "{a} is listed twice in the section header table, again as {}",
                    b.what
                )
            } else {
                format!(
                    "{a} and {b} overlap, both holding the {} at {:#x}",
                    kind_of(report, e),
                    e.offset
                )
            };
            return Err(Error::unsupported(format!("{why}: nothing is pruned")));
        }
    }
    Ok(())
}

/// The kind of container edit `e` rewrites, for messages.
fn kind_of(report: &Report, e: &Edit) -> &'static str {
    report
        .containers
        .get(e.container)
        .map_or("container", |c| c.kind.name())
}

/// Whether each entry of container `id` stays, in order; `None` when all
/// of them do.
fn stays_of(report: &Report, verdicts: &[Verdict], id: usize) -> Option<Vec<bool>> {
    let mut images: Vec<&Image> = report.images.iter().filter(|i| i.container == id).collect();
    images.sort_by_key(|i| i.index);
    let stays: Vec<bool> = images.iter().map(|i| verdicts[i.id].stays()).collect();
    (!stays.iter().all(|&s| s)).then_some(stays)
}

/// Container `c`'s bytes and offset, once checked that it lies in the
/// file itself.
fn container_bytes<'d>(data: &'d [u8], c: &Container) -> Result<(u64, &'d [u8])> {
    let (Some(offset), None) = (c.offset, c.parent) else {
        return Err(refuse(
            c.kind,
            c.offset,
            "it lies inside another image or compressed data",
        ));
    };
    let end = offset
        .checked_add(c.size)
        .filter(|&e| e <= data.len() as u64)
        .ok_or_else(|| Error::invalid("file", "a container runs past its end"))?;
    Ok((offset, &data[usize_from(offset)..usize_from(end)]))
}

/// The edit of container `c` (not a CCOB) when it loses entries.
fn container_edit(
    data: &[u8],
    report: &Report,
    verdicts: &[Verdict],
    c: &Container,
) -> Result<Option<Edit>> {
    let Some(stays) = stays_of(report, verdicts, c.id) else {
        return Ok(None);
    };
    match c.kind {
        ContainerKind::Bundle | ContainerKind::CudaFatbin => {}
        ContainerKind::ObjectBundle => {
            return Err(refuse(
                c.kind,
                c.offset,
                "its sections are pruned only in a relocatable object, not in a linked file",
            ));
        }
        other => {
            return Err(refuse(
                other,
                c.offset,
                "this kind of container is not pruned yet",
            ));
        }
    }
    let (offset, bytes) = container_bytes(data, c)?;
    let pruned = match c.kind {
        ContainerKind::Bundle => containers::bundle(bytes, &stays)?,
        ContainerKind::CudaFatbin => containers::fatbin(bytes, &stays)?,
        other => {
            return Err(refuse(
                other,
                c.offset,
                "this kind of container is not pruned yet",
            ));
        }
    };
    if pruned.layout.size > c.size {
        return Err(refuse(
            c.kind,
            c.offset,
            "its pruned form would be larger than it is",
        ));
    }
    Ok(Some(Edit {
        container: c.id,
        offset,
        size: c.size,
        pruned,
        built: None,
    }))
}

/// The edit that drops OffloadBinary `c` of a linked file whole when its
/// images go ([`whole_binary_edit`]); one that keeps some of them is
/// refused (the OpenMP runtime is handed one image of each OffloadBinary:
/// its first).
fn linked_binary_edit(
    data: &[u8],
    report: &Report,
    verdicts: &[Verdict],
    c: &Container,
) -> Result<Option<Edit>> {
    match stays_of(report, verdicts, c.id) {
        None => Ok(None),
        Some(stays) if stays.iter().all(|&s| !s) => whole_binary_edit(data, report, verdicts, c),
        Some(_) => Err(refuse(
            c.kind,
            c.offset,
            "it would keep some of its images: a linked program's OffloadBinary goes whole \
             or stays whole",
        )),
    }
}

/// The OpenMP descriptors of the linked file `data` that register the
/// OffloadBinaries `plan` removes, each with the images that stay; refused,
/// naming the first such OffloadBinary, when their registration is not
/// found or not known.
fn registrations(data: &[u8], report: &Report, plan: &Plan) -> Result<Vec<Registration>> {
    let dropped: Vec<usize> = plan
        .edits
        .iter()
        .filter(|e| {
            report
                .containers
                .get(e.container)
                .is_some_and(|c| c.kind == ContainerKind::OffloadBinary)
        })
        .map(|e| e.container)
        .collect();
    let Some(&first) = dropped.first() else {
        return Ok(Vec::new());
    };
    super::shrink::openmp::registrations(data, report, &dropped).map_err(|why| {
        let c = &report.containers[first];
        refuse(
            c.kind,
            c.offset,
            &format!("its OpenMP registration cannot be edited: {why}"),
        )
    })
}

/// The bytes `plan`'s registrations put in the file when nothing moves,
/// by file offset; refused when two of them, or one and an edit, share a
/// byte.
fn patches_in_place(plan: &Plan) -> Result<Vec<(u64, Vec<u8>)>> {
    let mut all = Vec::new();
    for r in &plan.registrations {
        all.extend(r.patches(&|v| Ok(v)).map_err(Error::unsupported)?);
    }
    all.sort_unstable();
    all.dedup();
    let mut ranges: Vec<(u64, u64)> = all
        .iter()
        .map(|(at, b)| (*at, at.saturating_add(len64(b))))
        .chain(
            plan.edits
                .iter()
                .map(|e| (e.offset, e.offset.saturating_add(e.size))),
        )
        .collect();
    ranges.sort_unstable();
    if let Some(w) = ranges.windows(2).find(|w| w[1].0 < w[0].1) {
        return Err(Error::unsupported(format!(
            "the OpenMP descriptor's rewrite at {:#x} overlaps other bytes pruning \
             rewrites: nothing is pruned",
            w[1].0
        )));
    }
    Ok(all)
}

/// The edit that drops OffloadBinary `c` whole when its image goes
/// (its bytes cut out of the section or file).
fn whole_binary_edit(
    data: &[u8],
    report: &Report,
    verdicts: &[Verdict],
    c: &Container,
) -> Result<Option<Edit>> {
    if stays_of(report, verdicts, c.id).is_none() {
        return Ok(None);
    }
    let (Some(offset), None) = (c.offset, c.parent) else {
        return Err(refuse(
            c.kind,
            c.offset,
            "it lies inside another image or compressed data",
        ));
    };
    if offset
        .checked_add(c.size)
        .is_none_or(|e| e > data.len() as u64)
    {
        return Err(Error::invalid("file", "a container runs past its end"));
    }
    let images = report.images.iter().filter(|i| i.container == c.id).count();
    Ok(Some(Edit {
        container: c.id,
        offset,
        size: c.size,
        pruned: Pruned {
            layout: crate::layout::Layout::default(),
            ranges: Vec::new(),
            kept: 0,
            dropped: images,
        },
        built: None,
    }))
}

/// The edit of CCOB `c` when the bundle it holds loses entries, and that
/// bundle's container id; `None` when every entry stays.
fn ccob_edit(
    data: &[u8],
    report: &Report,
    verdicts: &[Verdict],
    c: &Container,
    opts: &Options,
) -> Result<Option<(Edit, usize)>> {
    let Some(inner) = report
        .containers
        .iter()
        .find(|k| k.parent == Some(Parent::Container(c.id)) && k.kind == ContainerKind::Bundle)
    else {
        return Ok(None);
    };
    let Some(stays) = stays_of(report, verdicts, inner.id) else {
        return Ok(None);
    };
    let (offset, bytes) = container_bytes(data, c)?;
    let (pruned, built) = containers::ccob(bytes, &stays, opts.threads())?;
    if pruned.layout.size > c.size {
        return Err(refuse(
            c.kind,
            c.offset,
            "compressed again, it would be larger than it is",
        ));
    }
    Ok(Some((
        Edit {
            container: c.id,
            offset,
            size: c.size,
            pruned,
            built: Some(built),
        },
        inner.id,
    )))
}

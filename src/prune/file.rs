//! One file's bytes pruned, whatever they hold: the scan, the verdicts and
//! the pruned file to write, by the file's kind (see [`super::output`]).
//! A static archive is pruned member by member with [`super::archive`]
//! and this on each member.

use super::output::Output;
use super::plan::{self, Host};
use super::{Options, Selection, Verdict};
use crate::error::{Error, Result};
use crate::host::elf;
use crate::host::linked::facts::Facts;
use crate::scan::{self, ContainerKind, Report};

/// What kind of file prune has, as far as its first bytes tell: read
/// once, by the first function that needs it (`prune_path` for a file on
/// disk, [`Pruning::of`](super::path::Pruning::of) for a member), and
/// passed down, so that no callee asks again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Class {
    /// Its package format ([`crate::package::detect`]).
    pub(crate) package: Option<crate::package::Kind>,
    /// Its host format when the caller read it already
    /// ([`crate::host::file_kind`]); `None`: read where needed.
    pub(crate) host: Option<object::FileKind>,
}

impl Class {
    /// The class of `data`, whose host format the caller read as `host`
    /// (`None`: not read).
    pub(crate) fn of(data: &[u8], host: Option<object::FileKind>) -> Class {
        Class {
            package: crate::package::detect(data),
            host,
        }
    }
}

/// What pruning one file does.
#[derive(Debug)]
#[non_exhaustive]
pub struct FilePruning {
    /// What the scan found.
    pub report: Report,
    /// The verdict on each of the report's images, by image id.
    pub verdicts: Vec<Verdict>,
    /// Containers rewritten (bundle sections removed count one each).
    pub rewritten: usize,
    /// Bytes freed: zeroed where they lie, or cut out of the file.
    pub freed: u64,
    /// The pruned file; `None` when nothing changes.
    pub output: Option<Output>,
    /// For a linked file rewritten in place rather than shrunk: why.
    pub not_shrunk: Option<String>,
    /// For a linked file shrunk: what became of its layout.
    pub shrunk: Option<crate::host::linked::Shrunk>,
    /// The containers (ids in the report) that held device images and
    /// keep none: a CUDA fatbin becomes one with no entry, a bundle keeps
    /// its host entry alone, an OffloadBinary (in an object or a bare
    /// file) goes whole. Each is still registered as before, and a device
    /// finds nothing to load in it, as it found nothing it could load
    /// before. A file that would keep no device image at all is refused
    /// unless [`Options::allow_empty`].
    pub emptied: Vec<usize>,
    /// For a PE image whose Authenticode signature
    /// [`Options::strip_signature`] removed: the bytes of its certificate
    /// table.
    pub signature_removed: Option<u64>,
    /// The file is device code alone, every image of which the rules drop
    /// (a file that is itself one device image, or a bare container file,
    /// whose images all have a known kind and a processor the rules drop):
    /// it is to be removed whole, not rewritten (`output` is `None`,
    /// `freed` its size). Never set for a host binary, an archive or a
    /// package.
    pub remove: bool,
}

/// Scans `data` and works out its pruned form: a relocatable object (ELF or
/// COFF) with its sections shrunk (`object`), a linked program or shared
/// library with each container rewritten where it lies, a bare container
/// file (containers from its first byte to its last) with the freed bytes
/// cut out. Archives are the caller's to walk ([`super::archive::prune`]).
/// Any other file that would lose images is refused, naming what it is
/// when that is known (a tar or cpio archive, a zip archive with bytes in
/// front of it): bytes are cut only where a format says they are a
/// container.
///
/// A file that is device code alone, every image of which the rules drop
/// (a code object, a cubin, a bundle, fatbin or OffloadBinary file: see
/// [`FilePruning::remove`]), is not rewritten: the result says it is to
/// be removed whole. ([`PathOptions::keep_files`](super::PathOptions::keep_files)
/// refuses such a file instead, as any file that would keep no device
/// image.)
pub fn prune_file(data: &[u8], selection: &Selection, opts: &Options) -> Result<FilePruning> {
    prune_file_as(data, None, selection, opts, false)
}

/// [`prune_file`], except that with `keep_files` a file that is device
/// code alone the rules drop all of is pruned (or refused) as any other
/// file, never marked to be removed. `kind` is the file's format when the
/// caller read it already ([`crate::host::file_kind`]); `None`: read here.
pub(crate) fn prune_file_as(
    data: &[u8],
    kind: Option<object::FileKind>,
    selection: &Selection,
    opts: &Options,
    keep_files: bool,
) -> Result<FilePruning> {
    let scan_opts = scan::Options {
        max_uncompressed: opts
            .max_uncompressed
            .unwrap_or_else(|| scan::default_max_uncompressed(data.len() as u64)),
        // Entries are copied as stored: PTX text need not be measured.
        ptx_text: false,
        ..scan::Options::default()
    };
    let kind = kind.or_else(|| crate::host::file_kind(data).ok());
    let report: Report = scan::scan_of(data, &scan_opts, &mut scan::NoVisit, kind);
    let verdicts = selection.decide(&report);
    let emptied = plan::emptied(&report, &verdicts);
    let mut p = FilePruning {
        report,
        verdicts,
        rewritten: 0,
        freed: 0,
        output: None,
        not_shrunk: None,
        shrunk: None,
        emptied,
        signature_removed: None,
        remove: false,
    };
    // The ELF header, peeked at once for the checks below.
    let peek = elf::peek(data);
    if !keep_files && removable(data, peek.is_some(), &p.report, &p.verdicts, selection) {
        p.remove = true;
        p.freed = data.len() as u64;
        return Ok(p);
    }
    if p.report
        .containers
        .iter()
        .any(|c| c.kind == ContainerKind::ImageFile)
    {
        return image_file(p, keep_files);
    }
    let kind = p.report.host;
    let pe = kind.is_some_and(crate::host::pe::is_pe);
    let host = host_of(peek, kind, pe);
    if host == Host::Relocatable {
        if let Some(o) = super::object::prune(data, &p.report, &p.verdicts, opts)? {
            p.rewritten = o.rewritten;
            p.freed = (data.len() as u64).saturating_sub(o.output.size());
            p.output = Some(o.output);
        }
        return Ok(p);
    }
    // The host's headers, each read once: by the plan's checks, then by
    // the rewrite.
    let facts = Facts::new(data, kind);
    let mut plan = plan::plan_with(data, &p.report, &p.verdicts, host, opts, &facts)?;
    if plan.is_empty() {
        return Ok(p);
    }
    if host == Host::Raw
        && let Some(why) = not_made_of_containers(data, &p.report)
    {
        return Err(Error::unsupported(why));
    }
    p.rewritten = plan.edits.len();
    p.freed = plan.freed();
    let len = data.len() as u64;
    if pe {
        pe_output(data, &facts, &mut p, &plan, opts)?;
        return Ok(p);
    }
    p.output = Some(match host {
        Host::Linked if !opts.no_shrink => {
            match super::shrink::shrink(data, &p.report, &plan, &facts) {
                Ok((o, shrunk)) => {
                    p.freed = len.saturating_sub(o.size());
                    p.shrunk = Some(shrunk);
                    o
                }
                Err(why) => {
                    p.not_shrunk = Some(why);
                    super::output::in_place(len, &mut plan)
                }
            }
        }
        Host::Linked => super::output::in_place(len, &mut plan),
        _ => super::output::cut(len, &mut plan),
    });
    Ok(p)
}

/// What kind of host a file (its ELF header `peek`, when it has one; of
/// format `kind`; `pe` when a PE image) is to prune: a relocatable
/// object, a linked file, or raw containers.
fn host_of(peek: Option<elf::Peek<'_>>, kind: Option<object::FileKind>, pe: bool) -> Host {
    let coff = matches!(
        kind,
        Some(object::FileKind::Coff | object::FileKind::CoffBig)
    );
    match peek.and_then(|h| h.file_type()) {
        Some(object::elf::ET_REL) => Host::Relocatable,
        Some(_) => Host::Linked,
        None if pe => Host::Linked,
        None if coff => Host::Relocatable,
        None => Host::Raw,
    }
}

/// Whether the file `data` (an ELF file when `is_elf`, scanned as
/// `report`, judged by `verdicts`) is device code alone, every image of which `sel` drops, so that it
/// can go whole: a file that is itself one device image (a code object, a
/// cubin) or a bare container file (a bundle, CCOB, fatbin or run of
/// OffloadBinaries from its first byte to its last, zeros between);
/// never an ELF, PE or COFF file with host code, an archive or a package.
/// Every image must have a known kind and a processor that the rules drop:
/// an image with no processor (generic bitcode, SPIR-V), of a kind the
/// scan cannot tell, PTX that a kept device can JIT-compile, or a bundle's
/// host entry that is not empty keeps the file. A damaged file is never
/// removable.
pub(crate) fn removable(
    data: &[u8],
    is_elf: bool,
    report: &Report,
    verdicts: &[Verdict],
    sel: &Selection,
) -> bool {
    if report.damaged() || report.images.len() != verdicts.len() {
        return false;
    }
    let image_file = report
        .containers
        .iter()
        .any(|c| c.kind == ContainerKind::ImageFile);
    let bare = !image_file
        && !is_elf
        && report.host.is_none()
        && !crate::host::ar::is_archive(data)
        && report.containers.iter().any(|c| c.parent.is_none())
        && not_made_of_containers(data, report).is_none();
    if !(image_file || bare) {
        return false;
    }
    let mut dropped = false;
    for img in &report.images {
        if img.offload_kind.is_host() {
            if img.size > 0 {
                return false;
            }
            continue;
        }
        if img.size == 0 && img.arch.is_empty() {
            continue;
        }
        if verdicts[img.id] != Verdict::Drop || img.arch.is_empty() || !known_kind(img) {
            return false;
        }
        if super::model::is_ptx(img)
            && let super::Rules::Keep(rules) = &sel.rules
            && rules.iter().any(|r| r.loaded_by_some(img, false).yes())
        {
            return false;
        }
        dropped = true;
    }
    dropped
}

/// Whether the scan could tell what `img` is: an object, bitcode, a
/// cubin, PTX, SPIR-V or a fatbin.
fn known_kind(img: &crate::scan::Image) -> bool {
    use crate::offload_binary::ImageKind as K;
    matches!(
        img.image_kind,
        Some(scan::Content::Image(
            K::IMG_Object
                | K::IMG_Bitcode
                | K::IMG_Cubin
                | K::IMG_Fatbinary
                | K::IMG_PTX
                | K::IMG_SPIRV
        ))
    )
}

/// A file that is itself one device image (a cubin, a code object, PTX…):
/// kept as it is when its image stays; when it goes (and
/// `--keep-files` keeps it, or it is not [`removable`]), refused
/// whatever [`Options::allow_empty`] says, since no form of the file holds
/// no image; refused when damaged, as any file.
fn image_file(p: FilePruning, keep_files: bool) -> Result<FilePruning> {
    if p.report.damaged() {
        return Err(Error::invalid(
            "file",
            "it holds damaged data (see `offload-kit inspect`): nothing is pruned",
        ));
    }
    if p.verdicts.iter().all(|v| v.stays()) {
        return Ok(p);
    }
    let what = p.report.images.first().map_or_else(String::new, |i| {
        let kind = i
            .image_kind
            .map_or_else(|| "image".into(), |k| k.to_string());
        format!(" ({} {kind})", i.target_id)
    });
    let why = match keep_files {
        true => "--keep-files keeps such a file",
        false => {
            "prune removes a file only when every image in it has a kind and a target \
                  the rules drop (a generic one, such as SPIR-V or bitcode for no processor, \
                  may be loaded by a kept device)"
        }
    };
    Err(Error::usage(format!(
        "the file is itself one device image{what}, which the rules do not keep: {why} \
         (remove it yourself, or keep its target)"
    )))
}

/// The pruned form of the PE image `data` that `plan` prunes: shrunk
/// (unless [`Options::no_shrink`], or when the layout does not allow it,
/// then rewritten in place and `not_shrunk` says why), with its signature
/// removed when [`Options::strip_signature`]; a signed image is refused
/// without it. Its headers are those `facts` read for the plan.
fn pe_output(
    data: &[u8],
    facts: &Facts<'_>,
    p: &mut FilePruning,
    plan: &plan::Plan,
    opts: &Options,
) -> Result<()> {
    let image = facts
        .pe()
        .map_err(|why| Error::unsupported(format!("{why}: nothing is pruned")))?;
    if let Some((at, size)) = image.certificates {
        if !opts.strip_signature {
            return Err(Error::usage(format!(
                "it carries an Authenticode signature ({size} bytes of certificates at \
                 {at:#x}), which any change breaks: --strip-signature removes it"
            )));
        }
        p.signature_removed = Some(size);
    }
    let len = data.len() as u64;
    let shrunk = match opts.no_shrink {
        true => None,
        false => match super::shrink::pe_shrink(data, image, &p.report, plan, opts.strip_signature)
        {
            Ok(done) => Some(done),
            Err(why) => {
                p.not_shrunk = Some(why);
                None
            }
        },
    };
    let out = match shrunk {
        Some((o, s)) => {
            p.shrunk = Some(s);
            o
        }
        None => super::shrink::pe_in_place(data, image, &p.report, plan, opts.strip_signature)
            .map_err(|why| Error::unsupported(format!("{why}: nothing is pruned")))?,
    };
    if p.shrunk.is_some() || p.signature_removed.is_some() {
        p.freed = len.saturating_sub(out.size());
    }
    p.output = Some(out);
    Ok(())
}

/// What `data` is when it is an archive or package whose format says
/// where its members lie, which prune does not rewrite as bytes: a tar
/// archive (compressed or not), a Debian package, a cpio archive, an RPM
/// package, a zip archive with bytes in front of it, in words; `None` otherwise. (A zip
/// from its first byte is a wheel, and a Debian package a file named
/// `prune_path` prunes file by file.)
pub(crate) fn package_not_pruned(data: &[u8]) -> Option<&'static str> {
    package_not_pruned_as(data, crate::package::detect(data))
}

/// [`package_not_pruned`] of `data`, whose package format the caller
/// read as `detected`.
pub(crate) fn package_not_pruned_as(
    data: &[u8],
    detected: Option<crate::package::Kind>,
) -> Option<&'static str> {
    use crate::package::{self, Kind};
    match detected {
        Some(Kind::Tar(_)) => Some("a tar archive"),
        Some(Kind::Deb) => Some("a Debian package"),
        Some(Kind::Cpio) => Some("a cpio archive"),
        Some(Kind::Rpm) => Some("an RPM package"),
        Some(Kind::Squashfs) => Some("a squashfs filesystem"),
        Some(Kind::Sif) => Some("a SIF image"),
        Some(Kind::AppImage) => Some("an AppImage"),
        Some(Kind::Compressed(_)) => Some("a compressed file"),
        _ if is_cpio(data) => Some("a cpio archive"),
        _ if package::zip_prefix(data).is_some() => {
            Some("a zip archive with bytes in front of it (a self-extracting archive?)")
        }
        _ => None,
    }
}

/// Bytes of a file's start that tell whether prune reads its format
/// ([`readable`]): a tar header's block, and as far as the farthest magic
/// of a format not read lies ([`crate::scan::UNREAD_REACH`]: an ISO 9660
/// image's, 32 KiB in), so that a package's member of such a format is
/// refused, never copied as bytes without device code.
pub(crate) const HEAD: u64 = match crate::scan::UNREAD_REACH {
    r if r > 512 => r as u64,
    _ => 512,
};

/// Whether a file starting with `head` is of a format prune reads: it
/// may hold something to remove, or prune refuses it saying what it is.
/// `Some(Some(kind))` for a COFF object, the one format told here by
/// reading the format of the file ([`crate::host::file_kind`]: its first
/// bytes, all within `head`), which its prune then need not read again;
/// `Some(None)` for the others, told by their first bytes.
#[cfg(feature = "files")]
pub(crate) fn readable(head: &[u8]) -> Option<Option<object::FileKind>> {
    let known = head.starts_with(b"\x7fELF")
        || head.starts_with(b"MZ")
        || crate::host::ar::is_archive(head)
        || crate::scan::magic::Magic::at_start(head).is_some()
        || crate::scan::is_image_file(head)
        || crate::package::detect(head).is_some()
        || package_not_pruned(head).is_some()
        || crate::scan::unread_format(head).is_some();
    if known {
        return Some(None);
    }
    match crate::host::file_kind(head) {
        Ok(kind @ (object::FileKind::Coff | object::FileKind::CoffBig)) => Some(Some(kind)),
        _ => None,
    }
}

/// Why `data`, which is no ELF file, cannot have bytes cut out of it: it is
/// a package or archive whose format says where its members lie, or bytes
/// of a format not known here lie outside every container the scan found
/// at its top level; `None` for a bare container file (top-level
/// containers from offset 0 on, nothing but zeros between and after them).
fn not_made_of_containers(data: &[u8], report: &Report) -> Option<String> {
    if crate::package::detect(data) == Some(crate::package::Kind::Zip) {
        return Some("it is a zip archive: prune rewrites zip archives as wheels".into());
    }
    if let Some(what) = package_not_pruned(data) {
        return Some(format!(
            "it is {what}: prune cuts bytes only out of bare container files, and does not \
             rewrite such archives (unpack it, prune its files, pack it again)"
        ));
    }
    let mut tops: Vec<(u64, u64)> = report
        .containers
        .iter()
        .filter(|c| c.parent.is_none())
        .filter_map(|c| Some((c.offset?, c.size)))
        .collect();
    tops.sort_unstable();
    let mut at = 0u64;
    for (offset, size) in tops {
        if offset > at && !zeros(data, at, offset) {
            return Some(unknown_bytes(at));
        }
        at = at.max(offset.saturating_add(size));
    }
    if !zeros(data, at.min(data.len() as u64), data.len() as u64) {
        return Some(unknown_bytes(at));
    }
    None
}

/// The refusal of a file with bytes of an unknown format at `at`.
fn unknown_bytes(at: u64) -> String {
    format!(
        "its format is not known (the bytes at {at:#x} belong to no container): prune cuts \
         bytes only out of bare container files, ELF files, static archives and wheels"
    )
}

/// Whether `data[from..to]` is all zeros (padding between containers); a
/// range outside `data` is not.
fn zeros(data: &[u8], from: u64, to: u64) -> bool {
    let (Ok(from), Ok(to)) = (usize::try_from(from), usize::try_from(to)) else {
        return false;
    };
    data.get(from..to)
        .is_some_and(|b| b.iter().all(|&x| x == 0))
}

/// Whether `data` starts as a cpio archive does: the ASCII headers
/// (`070701`, `070702`, `070707`) or the old binary one in either byte
/// order.
fn is_cpio(data: &[u8]) -> bool {
    [
        &b"070701"[..],
        b"070702",
        b"070707",
        b"\xc7\x71",
        b"\x71\xc7",
    ]
    .iter()
    .any(|m| data.starts_with(m))
}

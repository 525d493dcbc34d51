//! Packages that prune reads but does not rewrite: tar and cpio archives
//! (compressed or not, conda's `.tar.bz2` among them), single compressed
//! files (`libfoo.so.gz`), packages inside other packages (a wheel in a
//! wheel, a `.conda`'s inner tars). Each is looked through, every member
//! at any depth scanned, within one decompression budget, so that prune
//! can tell the truth about it: refused, by name, when it holds device
//! images the rules drop; "nothing to remove" only when it was read to the
//! end and holds none.

use std::io::Read;
use std::path::Path;

use super::budget::{Budget, inflate};
use super::model::{Options, Selection, Verdict};
use super::path::error::{PathError, PathErrorKind};
use super::path::report::{ImageGroup, merge};
use crate::package::{self, Contents, Kind};
use crate::scan;

/// How deeply packages may nest (as the scanners allow).
const MAX_DEPTH: u32 = 4;

/// What a package holds, all members together.
#[derive(Default)]
struct Held {
    /// Device images found (a bundle's host entries aside).
    images: usize,
    /// Of those, the ones the rules drop.
    dropped: usize,
    /// The member holding the first image the rules drop.
    first: Option<String>,
    /// What stays, by target and kind.
    kept: Vec<ImageGroup>,
    /// Whether a member is a conda package's index (`info/index.json`,
    /// or a `.conda`'s `metadata.json`).
    conda: bool,
}

/// The walk through one package and the packages in it.
struct Look<'a> {
    sel: &'a Selection,
    /// The file on disk, for errors.
    path: &'a Path,
    /// The package's name as reports show it (`path`, or a member).
    name: String,
    budget: &'a mut Budget,
    held: &'a mut Held,
    depth: u32,
    /// The package's bytes.
    bytes: &'a [u8],
    /// Its stored members seen so far: one whose bytes another gave
    /// already costs budget to read again.
    overlaps: package::Overlaps,
    /// The first error met; it stops the walk.
    error: Option<PathError>,
}

impl Look<'_> {
    /// The bytes of the member `name` (`PACKAGE!/PATH`): a package looked
    /// into in turn, anything else scanned.
    fn bytes(&mut self, name: String, bytes: &[u8]) -> Result<(), PathError> {
        if let Some(kind) = package::detect(bytes) {
            if self.depth + 1 >= MAX_DEPTH {
                let why = format!("packages nested more than {MAX_DEPTH} deep");
                return Err(PathError::said(
                    PathErrorKind::Content,
                    self.path,
                    &name,
                    why,
                ));
            }
            return look(
                self.sel,
                self.path,
                name,
                bytes,
                kind,
                self.budget,
                self.held,
                self.depth + 1,
            );
        }
        if let Some(format) = scan::unread_format(bytes) {
            let why = format.why();
            return Err(PathError::said(
                PathErrorKind::Refused,
                self.path,
                &name,
                why,
            ));
        }
        let opts = scan::Options {
            max_uncompressed: self.budget.left,
            ptx_text: false,
            ..scan::Options::default()
        };
        let report = scan::scan(bytes, &opts);
        if let Some(p) = report
            .problems
            .iter()
            .find(|p| p.kind == scan::ProblemKind::Damage)
        {
            let why = format!("it holds damaged data: {}", p.message);
            return Err(PathError::said(
                PathErrorKind::Content,
                self.path,
                &name,
                why,
            ));
        }
        if let Some(limit) = &report.stopped {
            let why = format!("its scan stopped early: {limit}");
            return Err(PathError::said(
                PathErrorKind::Content,
                self.path,
                &name,
                why,
            ));
        }
        let verdicts = self.sel.decide(&report);
        let held = &mut *self.held;
        for img in &report.images {
            if img.offload_kind.is_host() {
                continue;
            }
            held.images += 1;
            if verdicts[img.id] == Verdict::Drop {
                held.dropped += 1;
                held.first.get_or_insert_with(|| name.clone());
            }
        }
        held.kept.extend(super::path::report::groups(
            report
                .images
                .iter()
                .filter(|i| verdicts[i.id] == Verdict::Keep),
            |i| self.sel.why(i),
        ));
        Ok(())
    }
}

impl package::Members for Look<'_> {
    fn member(
        &mut self,
        path: &str,
        contents: Result<Contents<'_, '_>, String>,
    ) -> crate::error::Result<()> {
        if self.error.is_some() {
            return Ok(());
        }
        let path = match path {
            "" => package::decompressed_name(&self.name),
            p => p.trim_start_matches('/'),
        };
        if self.depth == 0 && matches!(path, "info/index.json" | "metadata.json") {
            self.held.conda = true;
        }
        let name = format!("{}!/{path}", self.name);
        let done = match contents {
            Ok(Contents::Stored(bytes)) => {
                let cost = self.overlaps.cost(self.bytes, bytes);
                self.budget
                    .take(self.path, &name, cost)
                    .and_then(|()| self.bytes(name, bytes))
            }
            Ok(Contents::Stream { reader, size }) => self
                .budget
                .take(self.path, &name, size)
                .and_then(|()| inflate(self.path, &name, &[], reader, size))
                .and_then(|member| self.bytes(name, member.bytes())),
            Ok(Contents::Unsized(reader)) => spool_unsized(self.path, &name, reader, self.budget)
                .and_then(|member| self.bytes(name, member.bytes())),
            Err(e) => Err(PathError::said(
                PathErrorKind::Content,
                self.path,
                &name,
                format!("cannot be read: {e}"),
            )),
        };
        if let Err(e) = done {
            self.error = Some(e);
        }
        Ok(())
    }
}

/// Looks through the package `bytes` (of `kind`, named `name`) and the
/// packages inside it, adding what they hold to `held`.
#[allow(
    clippy::too_many_arguments,
    reason = "one recursive step, its state passed down"
)]
fn look(
    sel: &Selection,
    path: &Path,
    name: String,
    bytes: &[u8],
    kind: Kind,
    budget: &mut Budget,
    held: &mut Held,
    depth: u32,
) -> Result<(), PathError> {
    // An RPM, a squashfs or a SIF is rewritten on its own, not inside
    // another package; an AppImage is read by the scanners, but prune has
    // no writer for it: never kept as it is, whatever it holds, nor taken
    // for a file without device code.
    if matches!(
        kind,
        Kind::Rpm | Kind::Squashfs | Kind::Sif | Kind::AppImage
    ) {
        return Err(PathError::said(
            PathErrorKind::Refused,
            path,
            &name,
            format!("it is {}: {}", what(kind, false), advice(kind, false)),
        ));
    }
    let mut l = Look {
        sel,
        path,
        name,
        budget,
        held,
        depth,
        bytes,
        overlaps: package::Overlaps::default(),
        error: None,
    };
    let walked = package::members(bytes, kind, &mut l);
    if let Some(e) = l.error {
        return Err(e);
    }
    walked.map_err(|e| PathError::content(path, &l.name, e))
}

/// Reads the one member of a compressed file, whose size nothing
/// declares, within what is left of `budget`.
fn spool_unsized(
    path: &Path,
    name: &str,
    reader: &mut dyn Read,
    budget: &mut Budget,
) -> Result<crate::files::Input, PathError> {
    let cannot = |e: std::io::Error| PathError::member(path, name, "cannot be inflated", e);
    match crate::files::Input::spool(reader, budget.left).map_err(cannot)? {
        Some(member) => {
            budget.take(path, name, member.bytes().len() as u64)?;
            Ok(member)
        }
        None => Err(budget.passed(path, name, budget.left.saturating_add(1))),
    }
}

/// The package `data` (the file `path`, or a member of it named `name`),
/// of `kind`, as prune leaves it: as it is when it holds nothing the rules
/// drop (what stays, and whether it holds device images, returned),
/// refused otherwise, naming what it is, how many images would go and
/// where the first lies.
pub(crate) fn pruning(
    sel: &Selection,
    path: &Path,
    name: &str,
    data: &[u8],
    kind: Kind,
    opts: &Options,
) -> Result<(Vec<ImageGroup>, bool), PathError> {
    let mut budget = Budget::new(data.len() as u64, opts.max_uncompressed);
    let mut held = Held::default();
    look(
        sel,
        path,
        name.to_string(),
        data,
        kind,
        &mut budget,
        &mut held,
        0,
    )?;
    if held.dropped > 0 {
        let what = what(kind, held.conda);
        let first = held.first.unwrap_or_default();
        let why = format!(
            "it is {what} holding {} device image(s) the rules drop (the first in '{first}'): \
             {}",
            held.dropped,
            advice(kind, held.conda),
        );
        return Err(PathError::said(PathErrorKind::Refused, path, name, why));
    }
    Ok((merge(held.kept), held.images > 0))
}

/// What a package of `kind` is, in words.
fn what(kind: Kind, conda: bool) -> String {
    match kind {
        Kind::Zip if conda => "a conda package (.conda)".into(),
        Kind::Tar(package::Compression::Bzip2) if conda => "a conda package (.tar.bz2)".into(),
        Kind::Tar(package::Compression::None) => "a tar archive".into(),
        Kind::Tar(c) => format!("a tar archive ({}-compressed)", c.name()),
        Kind::Compressed(c) => format!("{} {}-compressed file", article(c), c.name()),
        Kind::Zip => "a zip archive inside a package".into(),
        Kind::Deb => "a Debian package inside a package".into(),
        Kind::Cpio => "a cpio archive".into(),
        Kind::Rpm => "an RPM package inside a package".into(),
        Kind::Squashfs | Kind::Sif | Kind::AppImage => format!("{} {kind}", kind.article()),
    }
}

/// The article before a method's name: "an xz-", "a gzip-".
fn article(c: package::Compression) -> &'static str {
    match c {
        package::Compression::Xz
        | package::Compression::Lzma
        | package::Compression::Lz4
        | package::Compression::Lzip => "an",
        _ => "a",
    }
}

/// What the user can do instead.
fn advice(kind: Kind, conda: bool) -> &'static str {
    match kind {
        _ if conda => {
            "prune does not rewrite conda packages yet (extract it, prune its files, pack it \
             again)"
        }
        Kind::Compressed(_) => {
            "prune does not rewrite compressed files (decompress it, prune the file, compress \
             it again)"
        }
        Kind::Tar(_) | Kind::Cpio => {
            "prune does not rewrite such archives (unpack it, prune its files, pack it again)"
        }
        Kind::AppImage => {
            "prune does not rewrite AppImages (unsquashfs it, prune its files, build it again)"
        }
        Kind::Zip | Kind::Deb | Kind::Rpm | Kind::Squashfs | Kind::Sif => {
            "prune does not rewrite packages inside packages (prune it on its own, then put it \
             back)"
        }
    }
}

/// Whether the zip archive `zip` is a conda package (`.conda`): a
/// `metadata.json` beside `pkg-*` and `info-*` tar archives (as the
/// scanners tell it, [`crate::package::records::is_conda_zip`]).
pub(crate) use crate::package::records::is_conda_zip as is_conda;

//! Pruning a conda package, either format: a `.conda` (a zip of stored
//! members: `metadata.json`, `info-*.tar.zst`, `pkg-*.tar.zst`) or a
//! `.tar.bz2` (one bzip2 tar holding `info/` and the payload).
//!
//! The payload is walked as a `.deb`'s `data.tar` is ([`walk`]): each
//! file of a format prune reads pruned as if named alone, per-GPU files
//! whose GPU the rules drop left out, every other entry copied block for
//! block, each file checked against its `info/paths.json` row on the way.
//! Then `info/paths.json` and `info/files` follow ([`info`]), and the
//! tars are compressed again as they came ([`compress`]): zstd at level
//! 19, bzip2 at the block size its header gives. A `.conda`'s members
//! keep their order, names, times and modes, stored again.
//!
//! Streamed, three passes: the info archive read (for a `.tar.bz2`, the
//! package read up to its `info/` files), the payload walked into a
//! scratch file beside the output, then the info archive written again
//! with the new records. A file whose `prefix_placeholder` would move is
//! refused, as is a package without `info/paths.json`, one whose rows do
//! not match its files, and an entry named outside the prefix: nothing
//! is written then.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Seek as _, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use super::Selection;
use super::budget::Budget;
use super::path::{
    CondaRecords, PathError, PathErrorKind, PathOptions, PathReport, finish, merge, write_through,
};
use crate::files::{Input, Output};
use crate::package::tar::walk::Walk;
use crate::package::zipfile::{self, Fate};
use crate::package::{self, Compression};

mod compress;
mod cx;
mod info;
mod walk;

pub(crate) use cx::Cx;
use info::Info;
use walk::{Walked, walk_payload};

/// What [`CondaRecords::next`] says.
const REINDEX: &str = "the package's own SHA-256 and size changed: index its channel again \
                       (conda index, rattler-index) before installing from it";

impl Cx<'_> {
    /// The rows of `info`'s `paths.json`, if it has one.
    pub(super) fn read_rows(&mut self, info: &Info) -> Result<(), PathError> {
        if let Some(text) = info.paths_json.as_deref() {
            // One that cannot be read is an error when the package changes.
            match info::rows(text) {
                Ok(rows) => self.rows = rows,
                Err(why) => self.unreadable = Some(why),
            }
        }
        Ok(())
    }

    /// A package without `info/paths.json` is refused when it would
    /// change: its files' hashes could not be checked or given.
    pub(super) fn need_rows(&self, info: &Info, w: &Walked) -> Result<(), PathError> {
        if w.unchanged() {
            return Ok(());
        }
        if let Some(why) = &self.unreadable {
            return Err(self.said(format!("info/paths.json: {why}")));
        }
        if info.paths_json.is_some() {
            return Ok(());
        }
        let why = "it is a conda package with no info/paths.json (which lists its files' \
                   hashes), holding device image(s) the rules drop: prune rewrites only \
                   packages that have one";
        Err(PathError::said(
            PathErrorKind::Refused,
            self.input,
            &self.name,
            why,
        ))
    }
}

/// A reader of `bytes`, compressed with `c`, where the walk is.
fn decode<'a>(
    cx: &Cx<'_>,
    bytes: &'a [u8],
    c: Compression,
) -> Result<Box<dyn std::io::Read + 'a>, PathError> {
    package::decoder(bytes, c).map_err(|e| cx.said(format!("{}: cannot be read: {e}", cx.place)))
}

/// Whether `data` (a zip) is a `.conda`.
pub(crate) fn is_conda(data: &[u8]) -> bool {
    zip::ZipArchive::new(std::io::Cursor::new(data)).is_ok_and(|z| super::packed::is_conda(&z))
}

/// The records' new texts, and what changed in them.
struct Records {
    paths_json: Option<Vec<u8>>,
    files: Option<Vec<u8>>,
    said: CondaRecords,
}

/// `info`'s records brought up to what the walk `w` did.
fn records(cx: &Cx<'_>, info: &Info, w: &Walked) -> Result<Records, PathError> {
    let text = info.paths_json.as_deref().filter(|_| !w.unchanged());
    let new = info::new_paths_json(text.unwrap_or(b"{}"), &w.changed, &w.gone)
        .map_err(|e| cx.said(format!("info/paths.json: {e}")))?;
    let (paths_json, rows_rewritten, rows_removed) = match new {
        Some((b, r, d)) => (Some(b), r, d),
        None => (None, 0, 0),
    };
    let files = info
        .files
        .as_deref()
        .and_then(|f| info::new_files(f, &w.gone));
    let files_lines_removed = files.as_ref().map_or(0, |f| f.1);
    Ok(Records {
        paths_json,
        files: files.map(|f| f.0),
        said: CondaRecords {
            rows_rewritten,
            rows_removed,
            files_lines_removed,
            next: REINDEX,
        },
    })
}

/// Ends the report of a walk: the device code left checked, the groups
/// merged, the refusals noted.
fn close(cx: &Cx<'_>, rep: &mut PathReport, w: &mut Walked) -> Result<(), PathError> {
    w.all
        .check_device_left(cx.input, &cx.name, &cx.opts.prune)?;
    rep.kept = merge(std::mem::take(&mut rep.kept));
    rep.dropped = merge(std::mem::take(&mut rep.dropped));
    rep.members_refused = std::mem::take(&mut w.refused);
    Ok(())
}

/// Ends a walk (`close`), checks that `info/paths.json` had a row for
/// what changed, and brings the records up to it: whether the package is
/// unchanged, and the records' new texts (said in `rep` when it changed).
fn settle(
    cx: &Cx<'_>,
    info: &Info,
    rep: &mut PathReport,
    walked: &mut Walked,
) -> Result<(bool, Records), PathError> {
    close(cx, rep, walked)?;
    cx.need_rows(info, walked)?;
    let unchanged = walked.unchanged();
    let records = records(cx, info, walked)?;
    if !unchanged {
        rep.conda = Some(records.said.clone());
    }
    Ok((unchanged, records))
}

/// A scratch file beside `out` (or a temporary one).
fn scratch(cx: &Cx<'_>, out: &Output) -> Result<File, PathError> {
    match out.scratch_file() {
        Some(f) => f,
        None => tempfile::tempfile(),
    }
    .map_err(|e| PathError::io(PathErrorKind::Io, cx.input, e))
}

/// Writes `file` to `out` as it is (a package with nothing to remove,
/// written elsewhere).
fn copy_whole(file: &Input, out: &mut Output) -> std::io::Result<()> {
    file.copy_to(file.bytes(), out)
}

/// A `.conda`, `input` with `meta`, mapped as `file`: its payload pruned,
/// its records following, the package written where `opts` says.
pub(crate) fn prune_conda(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    file: &Input,
) -> Result<PathReport, PathError> {
    let data = file.bytes();
    let mut budget = Budget::new(data.len() as u64, opts.prune.max_uncompressed);
    let mut cx = Cx::new(sel, opts, input, budget.why, false);
    let mut zin =
        zip::ZipArchive::new(std::io::Cursor::new(data)).map_err(|e| PathError::zip(input, e))?;
    super::budget::zip_directory(input, data, &mut zin)?;
    let (info_at, info_bytes) = tar_member(&cx, &mut zin, data, "info-")?;
    let (pkg_at, pkg_bytes) = tar_member(&cx, &mut zin, data, "pkg-")?;
    cx.place = format!("member '{}'", member_name(&zin, info_at));
    let zstd = Compression::Zstd;
    let info = info::read_info(
        &mut Walk::new(decode(&cx, info_bytes, zstd)?, std::io::sink(), budget.left),
        true,
    )
    .map_err(|f| cx.fault(f))?;
    cx.read_rows(&info)?;
    cx.place = format!("member '{}'", member_name(&zin, pkg_at));
    let mut rep = PathReport::new(&cx.name, data, meta).package();
    let dest = opts.output_path(input)?;
    let mut out = match &dest {
        Some(d) => Some(
            crate::prune::path::create(opts, d, data.len() as u64)
                .map_err(|e| PathError::write(d, e))?,
        ),
        None => None,
    };
    let threads = opts.prune.threads();
    let (mut walked, pkg_new) = file.releasing(|| {
        let reader = decode(&cx, pkg_bytes, zstd)?;
        let Some(out) = out.as_ref() else {
            let mut walk = Walk::new(reader, std::io::sink(), budget.left);
            return Ok((walk_payload(&cx, &mut walk, &mut rep)?, None));
        };
        let packer = compress::zstd(
            BufWriter::with_capacity(1 << 20, scratch(&cx, out)?),
            threads,
        )
        .map_err(|e| PathError::io(PathErrorKind::Io, input, e))?;
        let mut walk = Walk::new(reader, packer, budget.left);
        let walked = walk_payload(&cx, &mut walk, &mut rep)?;
        budget.left = budget.left.saturating_sub(walk.read());
        let f = walk
            .into_inner()
            .finish()
            .and_then(|w| w.into_inner().map_err(|e| e.into_error()))
            .map_err(|e| PathError::io(PathErrorKind::Io, input, e))?;
        Ok::<_, PathError>((walked, Some(f)))
    })?;
    let (unchanged, records) = settle(&cx, &info, &mut rep, &mut walked)?;
    let (Some(dest), Some(mut out), Some(pkg_new)) = (dest, out.take(), pkg_new) else {
        return Ok(rep);
    };
    if unchanged && opts.destination == super::Destination::InPlace {
        rep.disk_after = Some(rep.disk_before);
        return Ok(rep);
    }
    let through = write_through(opts, input, meta)?;
    if unchanged {
        copy_whole(file, &mut out).map_err(|e| PathError::write(&dest, e))?;
    } else {
        cx.place = format!("member '{}'", member_name(&zin, info_at));
        let mut walk = Walk::new(
            decode(&cx, info_bytes, zstd)?,
            compress::zstd(Vec::new(), threads)
                .map_err(|e| PathError::io(PathErrorKind::Io, input, e))?,
            u64::MAX,
        );
        info::rewrite_info(
            &mut walk,
            records.paths_json.as_deref(),
            records.files.as_deref(),
        )
        .map_err(|f| cx.fault(f))?;
        let info_new = walk
            .into_inner()
            .finish()
            .map_err(|e| PathError::io(PathErrorKind::Io, input, e))?;
        let temp = out
            .temp_file()
            .ok_or_else(|| PathError::write(&dest, None))?;
        write_zip(&mut zin, (info_at, info_new), (pkg_at, pkg_new), temp).map_err(|e| match e {
            zipfile::Error::Write(e) => PathError::zip(input, e.into()),
            e => PathError::zip_file(input, e),
        })?;
    }
    finish(opts, out, meta, &dest, &mut rep, through)?;
    rep.package_written();
    Ok(rep)
}

/// The name of the member `i` of `zin`.
fn member_name(zin: &zip::ZipArchive<std::io::Cursor<&[u8]>>, i: usize) -> String {
    zin.name_for_index(i)
        .and_then(Result::ok)
        .unwrap_or_default()
        .to_string()
}

/// The member of the `.conda` `zin` (bytes `data`) named `prefix…​.tar.zst`:
/// its index and its bytes, which must be stored (as conda writes them)
/// and match their CRC-32.
fn tar_member<'a>(
    cx: &Cx<'_>,
    zin: &mut zip::ZipArchive<std::io::Cursor<&'a [u8]>>,
    data: &'a [u8],
    prefix: &str,
) -> Result<(usize, &'a [u8]), PathError> {
    let at = (0..zin.len())
        .find(|&i| {
            let n = member_name(zin, i);
            n.starts_with(prefix) && n.ends_with(".tar.zst")
        })
        .ok_or_else(|| cx.said(format!("it has no {prefix}*.tar.zst member")))?;
    let name = member_name(zin, at);
    let f = zin
        .by_index_raw(at)
        .map_err(|e| PathError::zip(cx.input, e))?;
    if f.compression() != zip::CompressionMethod::Stored || f.encrypted() {
        return Err(cx.said(format!(
            "member '{name}' is not stored as is in the zip, as conda stores it: prune does not \
             rewrite such a package"
        )));
    }
    let bytes = crate::package::zipfile::stored(&name, data, &f)
        .map_err(|e| PathError::zip_file(cx.input, e))?;
    Ok((at, bytes))
}

/// Writes the `.conda` `zin` to `file`, members in their order: the info
/// archive (`info`: its index and new bytes) and the payload (`pkg`: its
/// index and scratch file) stored, each keeping its name, time, external
/// attributes and host system; every other member copied as it is.
fn write_zip(
    zin: &mut zip::ZipArchive<std::io::Cursor<&[u8]>>,
    info: (usize, Vec<u8>),
    pkg: (usize, File),
    file: &File,
) -> Result<(), zipfile::Error> {
    let pkg_new = zipfile::New::file(pkg.1).map_err(zipfile::Error::Write)?;
    let fates = BTreeMap::from([
        (
            info.0,
            Fate::Replaced(Arc::new(zipfile::New::bytes(info.1))),
        ),
        (pkg.0, Fate::Replaced(Arc::new(pkg_new))),
    ]);
    zipfile::write(zin, &fates, &BTreeMap::new(), zipfile::Method::Stored, file)
}

/// A `.tar.bz2`, `input` with `meta`, mapped as `file`: `None` when it is
/// not a conda package (no `info/index.json`), else as [`prune_conda`].
/// Its payload is walked into an uncompressed scratch file, which is then
/// compressed into the output with the records replaced.
pub(crate) fn prune_tar_bz2(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    file: &Input,
) -> Result<Option<PathReport>, PathError> {
    let data = file.bytes();
    if !input.to_string_lossy().ends_with(".tar.bz2") {
        return Ok(None);
    }
    let mut budget = Budget::new(data.len() as u64, opts.prune.max_uncompressed);
    let mut cx = Cx::new(sel, opts, input, budget.why, true);
    let bz2 = Compression::Bzip2;
    let info = info::read_info(
        &mut Walk::new(decode(&cx, data, bz2)?, std::io::sink(), budget.left),
        false,
    )
    .map_err(|f| cx.fault(f))?;
    if !info.index {
        return Ok(None);
    }
    cx.read_rows(&info)?;
    let level = compress::bzip2_level(data).unwrap_or(9);
    let mut rep = PathReport::new(&cx.name, data, meta).package();
    let dest = opts.output_path(input)?;
    let mut out = match &dest {
        Some(d) => Some(
            crate::prune::path::create(opts, d, data.len() as u64)
                .map_err(|e| PathError::write(d, e))?,
        ),
        None => None,
    };
    let (mut walked, tar) = file.releasing(|| {
        let reader = decode(&cx, data, bz2)?;
        let Some(out) = out.as_ref() else {
            let mut walk = Walk::new(reader, std::io::sink(), budget.left);
            return Ok((walk_payload(&cx, &mut walk, &mut rep)?, None));
        };
        let mut walk = Walk::new(
            reader,
            BufWriter::with_capacity(1 << 20, scratch(&cx, out)?),
            budget.left,
        );
        let walked = walk_payload(&cx, &mut walk, &mut rep)?;
        budget.left = budget.left.saturating_sub(walk.read());
        let f = walk
            .into_inner()
            .into_inner()
            .map_err(|e| PathError::io(PathErrorKind::Io, input, e.into_error()))?;
        Ok::<_, PathError>((walked, Some(f)))
    })?;
    let (unchanged, records) = settle(&cx, &info, &mut rep, &mut walked)?;
    let (Some(dest), Some(mut out), Some(mut tar)) = (dest, out.take(), tar) else {
        return Ok(Some(rep));
    };
    if unchanged && opts.destination == super::Destination::InPlace {
        rep.disk_after = Some(rep.disk_before);
        return Ok(Some(rep));
    }
    let through = write_through(opts, input, meta)?;
    let cannot = |e| PathError::write(&dest, e);
    if unchanged {
        copy_whole(file, &mut out).map_err(cannot)?;
    } else {
        tar.seek(SeekFrom::Start(0)).map_err(cannot)?;
        let reader = std::io::BufReader::with_capacity(1 << 20, tar);
        let mut walk = Walk::new(reader, compress::bzip2(&mut out, level), u64::MAX);
        info::rewrite_info(
            &mut walk,
            records.paths_json.as_deref(),
            records.files.as_deref(),
        )
        .map_err(|f| cx.fault(f))?;
        walk.into_inner().finish().map_err(cannot)?;
    }
    finish(opts, out, meta, &dest, &mut rep, through)?;
    rep.package_written();
    Ok(Some(rep))
}

#[cfg(test)]
mod tests;

//! Each output of a [`Plan`] written: its records brought up to what the
//! read did ([`Plan::records`]), its info archive rewritten with them
//! (and any other text the caller gives, such as a new `index.json`),
//! and the package put together as it came: a `.conda`'s members in
//! their order with their names, times and modes, stored again; a
//! `.tar.bz2` compressed again at its block size.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Seek as _, SeekFrom, Write};
use std::sync::Arc;

use super::error::Error;
use super::info::{self, Texts};
use super::read::{Container, Package, decode, member_name};
use super::rewrite::Plan;
use crate::package::tar::walk::Walk;
use crate::package::{Compression, Fate, New, zipfile};

/// An output's records, brought up to what the read did.
#[derive(Default)]
pub(crate) struct Records {
    /// `info/paths.json`'s new text, where it changes.
    pub(crate) paths_json: Option<Vec<u8>>,
    /// `info/files`' new text, where it changes.
    pub(crate) files: Option<Vec<u8>>,
    /// Rows of `paths.json` given a new hash and size.
    pub(crate) rows_rewritten: usize,
    /// Rows of `paths.json` taken out.
    pub(crate) rows_removed: usize,
    /// Lines of `info/files` taken out.
    pub(crate) files_lines_removed: usize,
}

/// Where an output is written.
pub(crate) enum Target<'a> {
    /// A `.conda`'s zip, into this file.
    File(&'a File),
    /// A `.tar.bz2`'s stream.
    Stream(&'a mut dyn Write),
}

impl Plan {
    /// The records of output `k` of the package `p`. A package without
    /// a readable `info/paths.json` is refused when the output changes:
    /// its files' hashes could not be checked or given.
    pub(crate) fn records(&self, p: &Package<'_>, k: usize) -> Result<Records, Error> {
        let Some(o) = self.outs.get(k).filter(|_| !self.unchanged(k)) else {
            return Ok(Records::default());
        };
        if let Some(why) = &p.rows.unreadable {
            return Err(Error::Damaged(format!("info/paths.json: {why}")));
        }
        let Some(text) = p.info.paths_json.as_deref() else {
            return Err(Error::Refused(
                "it is a conda package with no info/paths.json (which lists its files' \
                 hashes), holding device image(s) the rules drop: prune rewrites only \
                 packages that have one"
                    .into(),
            ));
        };
        let new = info::new_paths_json(text, &o.changed, &o.gone)
            .map_err(|e| Error::Damaged(format!("info/paths.json: {e}")))?;
        let (paths_json, rows_rewritten, rows_removed) = match new {
            Some((b, r, d)) => (Some(b), r, d),
            None => (None, 0, 0),
        };
        let files = p
            .info
            .files
            .as_deref()
            .and_then(|f| info::new_files(f, &o.gone));
        Ok(Records {
            paths_json,
            rows_rewritten,
            rows_removed,
            files_lines_removed: files.as_ref().map_or(0, |f| f.1),
            files: files.map(|f| f.0),
        })
    }

    /// Writes output `k` of the package `p` to `target`, with the
    /// records `r` and, where given, `index_json` as its
    /// `info/index.json` and `stem` as its name (a `.conda`'s inner tars
    /// are named after the package, `info-STEM.tar.zst`, and found so);
    /// zstd on `threads` worker threads.
    pub(crate) fn write(
        &mut self,
        p: &mut Package<'_>,
        k: usize,
        (r, index_json, stem): (&Records, Option<&[u8]>, Option<&str>),
        target: Target<'_>,
        threads: u32,
    ) -> Result<(), Error> {
        let texts = Texts {
            paths_json: r.paths_json.as_deref(),
            files: r.files.as_deref(),
            index_json,
        };
        let unchanged = self.unchanged(k);
        let payload = self.outs.get_mut(k).and_then(|o| o.payload.take());
        match (&mut p.container, target) {
            (Container::Conda { zip, info, pkg }, Target::File(file)) => {
                let place = format!("member '{}'", member_name(zip, info.0));
                let mut walk = Walk::new(
                    decode(&place, info.1, Compression::Zstd)?,
                    super::compress::zstd(Vec::new(), threads).map_err(Error::Scratch)?,
                    u64::MAX,
                );
                info::rewrite_info(&mut walk, texts).map_err(|f| Error::fault(&place, f))?;
                let info_new = walk.into_inner().finish().map_err(Error::Scratch)?;
                let payload = payload.filter(|_| !unchanged);
                if let Some(stem) = stem {
                    return renamed(zip, (*info, info_new), (*pkg, payload), stem, file);
                }
                let mut fates =
                    BTreeMap::from([(info.0, Fate::Replaced(Arc::new(New::bytes(info_new))))]);
                if let Some(f) = payload {
                    let new = New::file(f).map_err(|e| Error::Zip(zipfile::Error::Write(e)))?;
                    fates.insert(pkg.0, Fate::Replaced(Arc::new(new)));
                }
                zipfile::write(zip, &fates, &BTreeMap::new(), zipfile::Method::Stored, file)
                    .map_err(Error::Zip)
            }
            (Container::TarBz2 { level }, Target::Stream(out)) => {
                let mut tar =
                    payload.ok_or_else(|| Error::Write(std::io::Error::other("no payload")))?;
                tar.seek(SeekFrom::Start(0)).map_err(Error::Write)?;
                let reader = BufReader::with_capacity(1 << 20, tar);
                let mut walk = Walk::new(reader, super::compress::bzip2(out, *level), u64::MAX);
                info::rewrite_info(&mut walk, texts)
                    .map_err(|f| Error::fault("its tar archive", f))?;
                walk.into_inner().finish().map_err(Error::Write)?;
                Ok(())
            }
            _ => Err(Error::Write(std::io::Error::other(
                "a .conda is written to a file, a .tar.bz2 to a stream",
            ))),
        }
    }
}

/// Writes the `.conda` `zip` to `file` with its inner tars named after
/// `stem`: every other member as it is, then the info archive (its index
/// and new bytes) and the payload (its index, and its new bytes where it
/// changed) under their new names, stored, each with its own header's
/// fields.
fn renamed(
    zip: &mut super::read::Zip<'_>,
    (info_at, info_new): ((usize, &[u8]), Vec<u8>),
    (pkg_at, payload): ((usize, &[u8]), Option<File>),
    stem: &str,
    file: &File,
) -> Result<(), Error> {
    let pkg_new = match payload {
        Some(mut f) => {
            let mut v = Vec::new();
            f.seek(SeekFrom::Start(0)).map_err(Error::Scratch)?;
            std::io::Read::read_to_end(&mut f, &mut v).map_err(Error::Scratch)?;
            v
        }
        None => pkg_at.1.to_vec(),
    };
    let fates = BTreeMap::from([(info_at.0, Fate::Removed), (pkg_at.0, Fate::Removed)]);
    let added = [
        zipfile::Added {
            name: format!("info-{stem}.tar.zst"),
            bytes: &info_new,
            like: info_at.0,
        },
        zipfile::Added {
            name: format!("pkg-{stem}.tar.zst"),
            bytes: &pkg_new,
            like: pkg_at.0,
        },
    ];
    let method = zipfile::Method::Stored;
    zipfile::write_adding(zip, &fates, &BTreeMap::new(), method, &added, file).map_err(Error::Zip)
}

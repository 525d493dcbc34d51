//! A `docker save` archive pruned: a plain tar holding `manifest.json`
//! (each image's `Config` and `Layers`, members of the archive), the
//! configs and the layer tars. Each image is read from its top layer
//! down as a layout's is ([`super::layer`]); a layer with a changed
//! entry is written again with its own compression (as `docker save`
//! and `skopeo` write them, mostly none), its `rootfs.diff_ids` entry
//! in the config follows, and a member named after the old digest
//! (`<diff_id>.tar`, `<config digest>.json`, `blobs/sha256/<digest>`)
//! is renamed after the new one, with `manifest.json` and the symbolic
//! links that lead to it (`<id>/layer.tar -> ../<diff_id>.tar`). Every
//! other member is copied as it is, in its order. The archive is written
//! as any pruned file is: a new file renamed into place once whole.
//!
//! A layer two images share is rewritten only when both see it change
//! alike; otherwise the archive is refused (the images would need
//! different copies of one member). An archive that also holds an OCI
//! layout (`index.json`, `oci-layout`: Docker 25 and later write both)
//! has its index and the manifests it names rewritten too ([`oci`]), so
//! that both views name the same new blobs.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::Path;

use super::super::Selection;
use super::super::path::{
    Destination, PathError, PathErrorKind, PathOptions, PathReport, Pruning, finish, merge,
    write_through,
};
use crate::files::{Input, Output};
use crate::package::oci::json::{self, Step};
use crate::package::oci::{Saved, TarIndex, is_legacy, saved_images};
use crate::package::tar::walk::{Header, Walk};
use crate::package::{self, Compression, Kind};

pub(crate) mod groups;
mod oci;
mod read;

/// What replaces a member: its new name, if it is renamed, and its bytes.
struct Replacement {
    name: Option<String>,
    content: File,
    len: u64,
}

/// The rewrite of one archive.
struct Run<'a> {
    sel: &'a Selection,
    opts: &'a PathOptions,
    input: &'a Path,
    data: &'a [u8],
    members: &'a TarIndex<'a>,
    out: Option<Output>,
    /// Whether the new members are written (not a dry run).
    write: bool,
    rep: PathReport,
    all: Pruning,
    /// Members replaced, by path; with the digest of what replaces them.
    replaced: BTreeMap<String, (Replacement, String)>,
    /// Members some image uses as they are.
    kept: BTreeSet<String>,
    /// Symbolic links given a new target, by path.
    relinked: BTreeMap<String, String>,
    /// Edits of `manifest.json`.
    edits: Vec<(std::ops::Range<usize>, Vec<u8>)>,
    /// The digests of the members replaced (their old SHA-256, in hex,
    /// where it is known), each with the new one and the new size: what
    /// the OCI layout inside the archive is given in their place.
    moved: BTreeMap<String, (String, u64)>,
}

/// Whether `data` is a `docker save` archive: a plain tar holding a
/// `manifest.json` that lists images, each naming its config.
fn saved(data: &[u8]) -> Option<(TarIndex<'_>, String, Vec<Saved>)> {
    if package::detect(data) != Some(Kind::Tar(Compression::None)) {
        return None;
    }
    let members = TarIndex::all(data)?;
    let at = members.resolve("manifest.json")?;
    let images = saved_images(members.data(&at)?)?;
    images
        .iter()
        .all(|i| i.config.is_some())
        .then_some((members, at, images))
}

/// Whether `data` is a `docker save` archive ([`saved`]): for the fuzz
/// body `image_metadata`.
#[cfg(any(test, fuzzing))]
pub(super) fn saved_for_fuzz(data: &[u8]) -> bool {
    saved(data).is_some()
}

/// Prunes the `docker save` archive `input` (`file`, with `meta`) as
/// `opts` say; `None` when it is no such archive.
pub(crate) fn prune_docker(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    file: &Input,
) -> Result<Option<PathReport>, PathError> {
    let data = file.bytes();
    let Some((members, manifest_at, images)) = saved(data) else {
        return Ok(None);
    };
    let name = crate::files::shown(input).into_owned();
    let dest = opts.output_path(input)?;
    let out = match &dest {
        Some(d) => Some(
            crate::prune::path::create(opts, d, data.len() as u64)
                .map_err(|e| PathError::write(d, e))?,
        ),
        None => None,
    };
    let rep = PathReport::new(&name, data, meta).package();
    let mut runs = [Run::new(sel, opts, input, (data, &members), out, rep)];
    let mut budget = budget_of(opts, data);
    Run::read_images(&mut runs, (&images, &[]), &mut budget, &mut Vec::new())?;
    let [mut run] = runs;
    run.all.check_device_left(input, &name, &opts.prune)?;
    if run.write && !run.replaced.is_empty() {
        run.oci_layout()?;
    }
    let mut rep = std::mem::replace(&mut run.rep, PathReport::new(&name, &[], meta).package());
    rep.kept = merge(std::mem::take(&mut rep.kept));
    rep.dropped = merge(std::mem::take(&mut rep.dropped));
    let (Some(dest), Some(mut out)) = (dest, run.out.take()) else {
        return Ok(Some(rep));
    };
    if run.replaced.is_empty() && opts.destination == Destination::InPlace {
        rep.disk_after = Some(rep.disk_before);
        return Ok(Some(rep));
    }
    let through = write_through(opts, input, meta)?;
    let manifest = json::splice(
        run.members.data(&manifest_at).unwrap_or_default(),
        std::mem::take(&mut run.edits),
    )
    .ok_or_else(|| run.said("manifest.json: cannot be rewritten".into()))?;
    run.write(&mut out, &manifest_at, &manifest)
        .map_err(|e| PathError::write(&dest, e))?;
    finish(opts, out, meta, &dest, &mut rep, through)?;
    rep.package_written();
    Ok(Some(rep))
}

/// The bytes a read of the archive `data` may inflate, as `opts` say.
fn budget_of(opts: &PathOptions, data: &[u8]) -> u64 {
    let given = opts.prune.max_uncompressed;
    given.unwrap_or_else(|| crate::scan::default_max_uncompressed(data.len() as u64))
}

impl<'a> Run<'a> {
    /// The rewrite of the archive `data` (whose members are `members`)
    /// that prune with `sel` and `opts` makes, written to `out` (none in
    /// a dry run), reporting into `rep`.
    fn new(
        sel: &'a Selection,
        opts: &'a PathOptions,
        input: &'a Path,
        (data, members): (&'a [u8], &'a TarIndex<'a>),
        out: Option<Output>,
        rep: PathReport,
    ) -> Run<'a> {
        Run {
            sel,
            opts,
            input,
            data,
            members,
            write: out.is_some(),
            out,
            rep,
            all: Pruning::default(),
            replaced: BTreeMap::new(),
            kept: BTreeSet::new(),
            relinked: BTreeMap::new(),
            edits: Vec::new(),
            moved: BTreeMap::new(),
        }
    }

    /// `'ARCHIVE': WHY`.
    fn said(&self, why: String) -> PathError {
        let name = crate::files::shown(self.input).into_owned();
        PathError::said(PathErrorKind::Content, self.input, &name, why)
    }

    /// The member `path` names, read: its resolved path and bytes.
    fn member(&self, field: &str, path: &str) -> Result<(String, &'a [u8]), PathError> {
        let at = self.members.resolve(path);
        match at.as_deref().and_then(|a| self.members.data(a)) {
            Some(b) => Ok((at.unwrap_or_default(), b)),
            None => Err(self.said(format!(
                "{field} names '{path}', which the archive does not hold"
            ))),
        }
    }

    /// A scratch file beside the output.
    fn scratch(&self) -> Result<File, PathError> {
        match self.out.as_ref().and_then(Output::scratch_file) {
            Some(f) => f,
            None => tempfile::tempfile(),
        }
        .map_err(|e| PathError::io(PathErrorKind::Io, self.input, e))
    }

    /// A scratch file holding `bytes`, read from its start.
    fn scratch_with(&self, bytes: &[u8]) -> Result<File, PathError> {
        let mut f = self.scratch()?;
        f.write_all(bytes).map_err(|e| self.io(e))?;
        f.seek(SeekFrom::Start(0)).map_err(|e| self.io(e))?;
        Ok(f)
    }

    fn io(&self, e: std::io::Error) -> PathError {
        PathError::io(PathErrorKind::Io, self.input, e)
    }

    /// Notes that the member `at` is replaced by `content` (`len` bytes,
    /// of digest `new`); renamed when its name holds the old digest
    /// `old` and can be renamed, as can every link to it.
    fn replace(
        &mut self,
        at: &str,
        old: &str,
        new: &str,
        mut content: File,
        len: u64,
    ) -> Result<(), PathError> {
        content.seek(SeekFrom::Start(0)).map_err(|e| self.io(e))?;
        let renamed = at.replace(old, new);
        let links: Vec<(String, String)> = self
            .members
            .entries()
            .filter(|(p, m)| m.link.is_some() && self.members.resolve(p).as_deref() == Some(at))
            .map(|(p, m)| {
                (
                    p.clone(),
                    m.link.clone().unwrap_or_default().replace(old, new),
                )
            })
            .collect();
        let can = at.contains(old)
            && renamed.len() <= 100
            && self.members.entry(at).is_some_and(|m| m.plain)
            && links.iter().all(|(p, l)| {
                l.len() <= 100 && l.contains(new) && self.members.entry(p).is_some_and(|m| m.plain)
            });
        if can {
            self.relinked.extend(links);
        }
        let r = Replacement {
            name: can.then_some(renamed),
            content,
            len,
        };
        self.replaced.insert(at.to_string(), (r, new.to_string()));
        Ok(())
    }

    /// Gives the string at `at` in `manifest.json` (which names the
    /// member `path`) the member's new name, when it was renamed and is
    /// named directly.
    fn rename_in_manifest(&mut self, at: &[Step<'_>], path: &str) -> Result<(), PathError> {
        let Ok(p) = crate::package::oci::normal(path) else {
            return Ok(());
        };
        let Some(new) = self.replaced.get(&p).and_then(|(r, _)| r.name.clone()) else {
            return Ok(());
        };
        let manifest = self
            .members
            .resolve("manifest.json")
            .and_then(|m| self.members.data(&m))
            .unwrap_or_default();
        let r = json::span(manifest, at)
            .ok_or_else(|| self.said("manifest.json: cannot be rewritten".into()))?;
        if self.edits.iter().all(|(e, _)| *e != r) {
            let text = serde_json::to_string(&new).unwrap_or_default();
            self.edits.push((r, text.into_bytes()));
        }
        Ok(())
    }

    /// The legacy entries ([`is_legacy`](crate::package::oci::is_legacy)) left out of an archive whose
    /// layers changed: their v1 layer IDs were derived from the old
    /// layers, which the `json` files describe, and every loader since
    /// Docker 1.10 (and skopeo) reads `manifest.json` instead. A member
    /// `manifest.json` names itself (a layer the format of Docker 1.10
    /// to 24 stores as `<id>/layer.tar`) stays, as does a directory
    /// holding one.
    fn legacy(&self) -> BTreeSet<String> {
        if self.replaced.is_empty() {
            return BTreeSet::new();
        }
        let named = |p: &str| self.kept.contains(p) || self.replaced.contains_key(p);
        let mut legacy: BTreeSet<String> = self
            .members
            .entries()
            .filter(|(p, m)| is_legacy(p, m.dir) && !named(p))
            .map(|(p, _)| p.clone())
            .collect();
        let holding: BTreeSet<&str> = (self.kept.iter())
            .chain(self.replaced.keys())
            .filter_map(|p| p.split_once('/').map(|(d, _)| d))
            .collect();
        legacy.retain(|p| !holding.contains(p.as_str()));
        legacy
    }

    /// Writes the archive to `out`: every member as it was, but those
    /// replaced, the links given new targets, `manifest.json` (at
    /// `manifest_at`, now `manifest`) and the legacy entries left out.
    fn write(
        &mut self,
        out: &mut Output,
        manifest_at: &str,
        manifest: &[u8],
    ) -> std::io::Result<()> {
        let fail = |f| std::io::Error::other(format!("{f:?}"));
        let legacy = self.legacy();
        let mut walk = Walk::new(self.data, out, u64::MAX);
        while let Some(h) = walk.next().map_err(fail)? {
            let path = crate::package::oci::normal(&h.path_lossy()).unwrap_or_default();
            if legacy.contains(&path) {
                walk.skip_body().map_err(fail)?;
            } else if path == manifest_at {
                walk.skip_body().map_err(fail)?;
                walk.write_header(&h, manifest.len() as u64).map_err(fail)?;
                walk.out().write_all(manifest)?;
                walk.pad(manifest.len() as u64).map_err(fail)?;
            } else if let Some((r, _)) = self.replaced.get_mut(&path) {
                walk.skip_body().map_err(fail)?;
                let h = named(&h, r.name.as_deref(), None);
                walk.write_header(&h, r.len).map_err(fail)?;
                let copied = std::io::copy(&mut (&r.content).take(r.len), walk.out())?;
                if copied != r.len {
                    return Err(std::io::Error::other("a scratch file was cut short"));
                }
                walk.pad(r.len).map_err(fail)?;
            } else if let Some(to) = self.relinked.get(&path) {
                let h = named(&h, None, Some(to));
                walk.write_header(&h, h.size).map_err(fail)?;
                walk.pass_body().map_err(fail)?;
            } else {
                walk.copy(&h).map_err(fail)?;
            }
        }
        walk.into_inner().flush()
    }
}

/// `h` with its name field set to `name` and its link name to `link`,
/// where given (each fitting in its 100 bytes, checked before).
fn named(h: &Header, name: Option<&str>, link: Option<&str>) -> Header {
    let mut h = h.clone();
    for (range, value) in [(0..100, name), (157..257, link)] {
        if let Some(v) = value.filter(|v| v.len() <= 100) {
            h.block[range.clone()].fill(0);
            h.block[range.start..range.start + v.len()].copy_from_slice(v.as_bytes());
        }
    }
    h
}

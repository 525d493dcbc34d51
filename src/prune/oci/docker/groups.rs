//! A `docker save` archive read once into one new image per group of
//! GPUs, for `offload-kit split` ([`crate::prune::split`]): each layer is
//! read once and decided for every group by prune's own decider of a
//! layer's entries ([`super::read`]), each group's rewrite noting what
//! its layers and configs became as `prune --keep GROUP -o` alone would,
//! so that each group's config, layers and (in an archive Docker 25 and
//! later write) OCI manifest are the blobs prune writes.
//!
//! The new archive holds every member of the input as it was, in its
//! order; after a member some group replaced comes each group's new
//! member in its place (once per name: a name holds the digest of its
//! bytes), so that a layer no group changes is stored once.
//! `manifest.json` lists the input's images, then each group's copy of
//! each, named by its RepoTags with `-LABEL` after each tag; the OCI
//! index, where there is one, names each group's manifests likewise.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::Path;

use serde_json::Value;

use super::super::groups::{copies_among, named_otherwise};
use super::super::layer::Companions;
use super::{PathError, PathOptions, PathReport, Run, Saved, budget_of, saved};
use crate::files::{Input, Output};
use crate::package::oci::{IMAGE_NAME, REF_NAME, TarIndex};
use crate::package::tar::walk::{Header, Walk};
use crate::prune::Selection;
use crate::prune::path::{PathErrorKind, merge};

/// A `docker save` archive opened: its members and images.
pub(crate) struct Archive<'a> {
    input: &'a Path,
    data: &'a [u8],
    meta: &'a std::fs::Metadata,
    members: TarIndex<'a>,
    /// Where `manifest.json` is.
    manifest_at: String,
    images: Vec<Saved>,
    /// `manifest.json`, each image's entry as it is.
    entries: Vec<Value>,
}

/// The archive read for each group, its new members staged.
pub(crate) struct Grouped<'a> {
    archive: &'a Archive<'a>,
    runs: Vec<Run<'a>>,
    /// Each group's report, as its prune gives it.
    pub(crate) reps: Vec<PathReport>,
    /// The per-GPU files met, with their GPUs.
    pub(crate) companions: Companions,
    /// For each group, whether device code is left in it, as prune
    /// checks it: the error prune would give where none is.
    pub(crate) left: Vec<Result<(), PathError>>,
}

impl<'a> Archive<'a> {
    /// The `docker save` archive `input` (`file`, with `meta`); `None`
    /// when it is no such archive.
    pub(crate) fn of(
        input: &'a Path,
        file: &'a Input,
        meta: &'a std::fs::Metadata,
    ) -> Option<Archive<'a>> {
        let data = file.bytes();
        let (members, manifest_at, images) = saved(data)?;
        let entries = serde_json::from_slice(members.data(&manifest_at)?).ok()?;
        Some(Archive {
            input,
            data,
            meta,
            members,
            manifest_at,
            images,
            entries,
        })
    }

    /// Each image's RepoTags (none where it has none), in
    /// `manifest.json`'s order.
    pub(crate) fn tags(&self) -> Vec<Vec<String>> {
        let tags = |i: &Saved| i.repo_tags.clone().unwrap_or_default();
        self.images.iter().map(tags).collect()
    }

    /// The images that are a split's earlier outputs (by their place in
    /// [`Archive::tags`]), carried as they are and split for no group: each tagged
    /// `REPO:TAG-LABEL` alone, where another image is tagged `REPO:TAG`.
    pub(crate) fn carried(&self) -> Vec<usize> {
        carried_of(&self.tags())
    }

    /// Reads the archive once into one rewrite per selection of `sels`,
    /// as `prune` with each and `opts` would, but for the images
    /// `carried` names; `write`: the new members are staged (and the OCI
    /// index inside, if any, rewritten for each group, refused as prune
    /// refuses it).
    pub(crate) fn read_groups(
        &'a self,
        sels: &[&'a Selection],
        opts: &'a PathOptions,
        write: bool,
        carried: &[usize],
    ) -> Result<Grouped<'a>, PathError> {
        let name = crate::files::shown(self.input).into_owned();
        let mut runs: Vec<Run<'a>> = Vec::with_capacity(sels.len());
        for sel in sels {
            let rep = PathReport::new(&name, self.data, self.meta).package();
            let mut run = Run::new(sel, opts, self.input, (self.data, &self.members), None, rep);
            run.write = write;
            runs.push(run);
        }
        let mut budget = budget_of(opts, self.data);
        let mut companions = Vec::new();
        let images = (&self.images[..], carried);
        Run::read_images(&mut runs, images, &mut budget, &mut companions)?;
        let mut reps = Vec::with_capacity(runs.len());
        let mut left = Vec::with_capacity(runs.len());
        for run in &mut runs {
            left.push(run.all.check_device_left(self.input, &name, &opts.prune));
            if write && !run.replaced.is_empty() {
                run.oci_layout()?;
            }
            let empty = PathReport::new(&name, &[], self.meta).package();
            let mut rep = std::mem::replace(&mut run.rep, empty);
            rep.kept = merge(std::mem::take(&mut rep.kept));
            rep.dropped = merge(std::mem::take(&mut rep.dropped));
            reps.push(rep);
        }
        Ok(Grouped {
            archive: self,
            runs,
            reps,
            companions,
            left,
        })
    }
}

/// `reference` (`REPO:TAG`; `REPO` alone is `REPO:latest`) with
/// `-LABEL` after its tag.
pub(crate) fn tagged(reference: &str, label: &str) -> String {
    let slash = reference.rfind('/').map_or(0, |i| i + 1);
    match reference[slash..].contains(':') {
        true => format!("{reference}-{label}"),
        false => format!("{reference}:latest-{label}"),
    }
}

impl Grouped<'_> {
    /// Writes the new archive as `file_name` in `dir` (a temporary file
    /// renamed into place once whole): the input's members, each group's
    /// new members after those they replace, `manifest.json` naming each
    /// group's copy of image `i` by `names[group][i]` (none where that is
    /// empty: a carried image) and the OCI index (if any) naming each
    /// group's manifests with `-LABEL` (`labels`) after their tags. A
    /// copy the input already holds (the same entry, name and all) is not
    /// added again.
    pub(crate) fn commit(
        mut self,
        labels: &[String],
        names: &[Vec<Vec<String>>],
        dir: &Path,
        file_name: &OsStr,
    ) -> Result<(), PathError> {
        let a = self.archive;
        let index_at = a.members.resolve("index.json");
        let new_names: Vec<BTreeMap<String, String>> = (self.runs.iter())
            .map(|r| member_names(r, index_at.as_deref(), &a.manifest_at))
            .collect();
        let manifest = self.manifest(&new_names, names)?;
        let index = match &index_at {
            Some(at) => Some(self.index(at, labels)?),
            None => None,
        };
        let path = dir.join(file_name);
        let mut out = Output::create_in(dir, file_name).map_err(|e| PathError::write(&path, e))?;
        let docs = [(a.manifest_at.as_str(), manifest)]
            .into_iter()
            .chain(index_at.as_deref().zip(index))
            .collect();
        self.write(&mut out, &new_names, docs)
            .map_err(|e| PathError::write(&path, e))?;
        out.commit().map_err(|e| PathError::write(&path, e))
    }

    /// The new `manifest.json`: the input's images, then each group's
    /// copy of each, named by `names`, its config and layers by their new
    /// members (`new_names`) where the group replaced them; a copy whose
    /// first tag the input has is that image where it is the same entry,
    /// refused where it is not.
    fn manifest(
        &self,
        new_names: &[BTreeMap<String, String>],
        names: &[Vec<Vec<String>>],
    ) -> Result<Vec<u8>, PathError> {
        let a = self.archive;
        let renamed = |k: usize, p: &str| -> Value {
            let at = crate::package::oci::normal(p).ok();
            let at = at.and_then(|p| a.members.resolve(&p));
            let new = at.and_then(|at| new_names.get(k).and_then(|n| n.get(&at)));
            Value::from(new.map_or(p, String::as_str))
        };
        let mut all = a.entries.clone();
        for (k, group) in names.iter().enumerate() {
            for ((entry, img), tags) in a.entries.iter().zip(&a.images).zip(group) {
                let Some(first) = tags.first() else {
                    continue;
                };
                let mut e = entry.clone();
                let obj = e
                    .as_object_mut()
                    .ok_or_else(|| self.said("an image is no object"))?;
                obj.insert("RepoTags".into(), Value::from(tags.clone()));
                obj.insert("Config".into(), renamed(k, img.config()));
                let layers = img.layers.iter().map(|l| renamed(k, l)).collect();
                obj.insert("Layers".into(), Value::Array(layers));
                let has = |t: &Value| t.as_array().is_some_and(|t| t.iter().any(|t| t == first));
                match a
                    .entries
                    .iter()
                    .find(|x| x.get("RepoTags").is_some_and(has))
                {
                    Some(x) if *x == e => {}
                    Some(_) => return Err(self.said(&named_otherwise(first))),
                    None => all.push(e),
                }
            }
        }
        serde_json::to_vec(&all).map_err(|e| self.said(&e.to_string()))
    }

    /// The new `index.json` (at `at`): the input's, its `manifests`
    /// followed by each group's (as the group's prune rewrote them), each
    /// named with `-LABEL` (`labels`) after its tag; but for a split's
    /// earlier outputs ([`carried_descs`]) and a named copy the input has
    /// as it is. An entry with no name is kept once where no group changes
    /// its image, and refused where one does.
    fn index(&mut self, at: &str, labels: &[String]) -> Result<Vec<u8>, PathError> {
        let a = self.archive;
        let text = a.members.data(at).unwrap_or_default();
        let input = a.input;
        let name = crate::files::shown(input).into_owned();
        let said = |e: serde_json::Error| {
            let why = format!("index.json: {e}");
            PathError::said(PathErrorKind::Content, input, &name, why)
        };
        let io = |e| PathError::io(PathErrorKind::Io, input, e);
        let mut doc: Value = serde_json::from_slice(text).map_err(said)?;
        let input_descs: Vec<Value> = doc
            .get("manifests")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let carried = carried_descs(&input_descs);
        let mut all = input_descs.clone();
        for (run, label) in self.runs.iter_mut().zip(labels) {
            let theirs: Value = match run.replaced.get_mut(at) {
                Some((r, _)) => {
                    let mut bytes = Vec::new();
                    r.content.seek(SeekFrom::Start(0)).map_err(io)?;
                    (&r.content).read_to_end(&mut bytes).map_err(io)?;
                    serde_json::from_slice(&bytes).map_err(said)?
                }
                None => doc.clone(),
            };
            let descs = theirs.get("manifests").and_then(Value::as_array);
            for (p, d) in descs.into_iter().flatten().enumerate() {
                let copy = named(d.clone(), label);
                if copy == *d {
                    // Unnamed: the input's entry is kept once; a copy the
                    // group changed could not be told from the others.
                    if input_descs.contains(d) {
                        continue;
                    }
                    return Err(self.said(&format!(
                        "index.json: manifests[{p}] names no image (no 'io.containerd.image.name' \
                         or 'org.opencontainers.image.ref.name'), so the group '{label}''s copy of \
                         it could not be told from the input's (docker save it by name)"
                    )));
                }
                if !carried.contains(&p) && !input_descs.contains(&copy) {
                    all.push(copy);
                }
            }
        }
        if let Some(root) = doc.as_object_mut() {
            root.insert("manifests".into(), Value::Array(all));
        }
        serde_json::to_vec(&doc).map_err(said)
    }

    /// `'ARCHIVE': WHY`.
    fn said(&self, why: &str) -> PathError {
        let input = self.archive.input;
        let name = crate::files::shown(input).into_owned();
        PathError::said(PathErrorKind::Content, input, &name, why.to_string())
    }

    /// Writes the archive to `out`: every member as it was but the
    /// documents `docs` (by path: their new bytes), each followed by the
    /// new members that replace it in the groups (`new_names`), each
    /// name once.
    fn write(
        &mut self,
        out: &mut Output,
        new_names: &[BTreeMap<String, String>],
        docs: BTreeMap<&str, Vec<u8>>,
    ) -> std::io::Result<()> {
        let fail = |f| std::io::Error::other(format!("{f:?}"));
        let a = self.archive;
        let mut written: BTreeSet<String> = BTreeSet::new();
        let mut walk = Walk::new(a.data, out, u64::MAX);
        while let Some(h) = walk.next().map_err(fail)? {
            let path = crate::package::oci::normal(&h.path_lossy()).unwrap_or_default();
            match docs.get(path.as_str()) {
                Some(doc) => {
                    walk.skip_body().map_err(fail)?;
                    walk.write_header(&h, doc.len() as u64).map_err(fail)?;
                    walk.out().write_all(doc)?;
                    walk.pad(doc.len() as u64).map_err(fail)?;
                }
                None => walk.copy(&h).map_err(fail)?,
            }
            for (run, names) in self.runs.iter_mut().zip(new_names) {
                let (Some(new), Some((r, _))) = (names.get(&path), run.replaced.get_mut(&path))
                else {
                    continue;
                };
                if a.members.entry(new).is_some() || !written.insert(new.clone()) {
                    continue;
                }
                walk.write_header(&fresh(&h, new), r.len).map_err(fail)?;
                r.content.seek(SeekFrom::Start(0))?;
                let copied = std::io::copy(&mut (&r.content).take(r.len), walk.out())?;
                if copied != r.len {
                    return Err(std::io::Error::other("a scratch file was cut short"));
                }
                walk.pad(r.len).map_err(fail)?;
            }
        }
        walk.into_inner().flush()
    }
}

/// The names of the new members of the rewrite `run`, by the member
/// each replaces (`index.json` at `index_at` and `manifest.json` at
/// `manifest_at` aside): the name prune gives it where prune renames it,
/// else `blobs/sha256/<digest>`.
fn member_names(
    run: &Run<'_>,
    index_at: Option<&str>,
    manifest_at: &str,
) -> BTreeMap<String, String> {
    (run.replaced.iter())
        .filter(|(at, _)| Some(at.as_str()) != index_at && *at != manifest_at)
        .map(|(at, (r, hex))| {
            let name = r.name.clone();
            (
                at.clone(),
                name.unwrap_or_else(|| format!("blobs/sha256/{hex}")),
            )
        })
        .collect()
}

/// The images of `tags` (each image's RepoTags) tagged `REPO:TAG-LABEL`
/// alone, where another is tagged `REPO:TAG` ([`Archive::carried`]).
fn carried_of(tags: &[Vec<String>]) -> Vec<usize> {
    let names: Vec<Vec<&str>> = (tags.iter())
        .map(|t| t.iter().map(String::as_str).collect())
        .collect();
    copies_among(&names)
}

/// The descriptors of `descs` (an OCI index's) that are a split's
/// earlier outputs: named (by either annotation) `NAME-LABEL` where
/// another is named `NAME`.
fn carried_descs(descs: &[Value]) -> Vec<usize> {
    let by = |key: &str| {
        let names: Vec<Vec<&str>> = (descs.iter())
            .map(|d| {
                let name = d.get("annotations").and_then(|a| a.get(key));
                name.and_then(Value::as_str).into_iter().collect()
            })
            .collect();
        copies_among(&names)
    };
    let (refs, images) = (by(REF_NAME), by(IMAGE_NAME));
    (0..descs.len())
        .filter(|p| refs.contains(p) || images.contains(p))
        .collect()
}

/// The descriptor `d` of an OCI index with `-LABEL` after the tag of
/// each name it has.
fn named(mut d: Value, label: &str) -> Value {
    let notes = d.get_mut("annotations").and_then(Value::as_object_mut);
    for (key, value) in notes.into_iter().flatten() {
        let Some(v) = value.as_str() else { continue };
        let new = match key.as_str() {
            IMAGE_NAME => tagged(v, label),
            // A bare tag, as Docker writes it, or a whole reference.
            REF_NAME if !v.contains([':', '/']) => format!("{v}-{label}"),
            REF_NAME => tagged(v, label),
            _ => continue,
        };
        *value = Value::from(new);
    }
    d
}

/// The header of a new regular file named `name` (at most 100 bytes: a
/// digest's name), as `h` (the member it replaces) but for its name: no
/// extension entries, no prefix.
fn fresh(h: &Header, name: &str) -> Header {
    let mut h = h.clone();
    h.extensions.clear();
    h.sparse_map.clear();
    h.block[0..100].fill(0);
    h.block[..name.len().min(100)].copy_from_slice(&name.as_bytes()[..name.len().min(100)]);
    if &h.block[257..262] == b"ustar" {
        h.block[345..500].fill(0);
    }
    h.block[156] = b'0';
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_gain_the_label_after_the_tag() {
        assert_eq!(tagged("t:latest", "sm86"), "t:latest-sm86");
        assert_eq!(
            tagged("localhost:5000/a/b:1.0", "gfx90a"),
            "localhost:5000/a/b:1.0-gfx90a"
        );
        assert_eq!(
            tagged("localhost:5000/a/b", "x"),
            "localhost:5000/a/b:latest-x"
        );
        let d = serde_json::json!({"digest": "sha256:00", "annotations": {
            IMAGE_NAME: "docker.io/library/t:latest", REF_NAME: "latest", "other": "latest"}});
        let n = named(d, "sm86");
        assert_eq!(
            n["annotations"][IMAGE_NAME],
            "docker.io/library/t:latest-sm86"
        );
        assert_eq!(n["annotations"][REF_NAME], "latest-sm86");
        assert_eq!(n["annotations"]["other"], "latest");
    }

    #[test]
    fn earlier_outputs_are_told_by_their_tags_and_names() {
        let tags = |t: &[&[&str]]| -> Vec<Vec<String>> {
            t.iter()
                .map(|i| i.iter().map(|s| s.to_string()).collect())
                .collect()
        };
        let t = tags(&[
            &["t:a", "t:1"],
            &["t:a-sm86", "t:1-sm86"],
            &["t:a-dev"],
            &[],
        ]);
        assert_eq!(carried_of(&t), [1]);
        // Tagged as another image's copy, and as something else too.
        let t = tags(&[&["t:a"], &["t:a-sm86", "u:b"], &["t:a-gfx90a.gfx942"]]);
        assert_eq!(carried_of(&t), [2]);
        let d = |r: &str| serde_json::json!({"digest": "sha256:00", "annotations": {REF_NAME: r}});
        assert_eq!(
            carried_descs(&[d("t"), d("t-sm86"), d("u-sm86"), d("t-v1")]),
            [1]
        );
    }
}

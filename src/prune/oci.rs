//! Pruning a container image: an OCI image layout directory (`oci-layout`,
//! `index.json`, `blobs/sha256/…`), into a new layout (`-o NEW`) or in
//! place.
//!
//! Each image the index names ([`model`]) is read from its top layer
//! down, so that only the copy of a file a container sees is rewritten
//! ([`layer`]): a library pruned as if named alone, a per-GPU file whose
//! GPU the rules drop left out; a file a layer above replaces or whites
//! out is left as it is. A layer with a changed entry is written again,
//! every other entry's header and data copied as they were, compressed
//! with its media type's method (gzip at level 6, zstd at level 3, or
//! none): the format's rewrite ([`oci::rewrite`]) asks prune's decider
//! of a layer's entries what each becomes. Then the chain follows, each
//! document edited only where a value changed ([`oci::chain`]): the
//! layer's `rootfs.diff_ids` entry in the config, the layer's and the
//! config's `digest` and `size` in the manifest, the manifest's in the
//! index that names it (an index blob in turn, up to `index.json`).
//!
//! Refused by name, nothing written: a blob whose size or SHA-256 is not
//! its descriptor's, a manifest naming a missing blob, a layer that is no
//! tar, an entry leading out of the root, a `rootfs.diff_ids` entry that
//! is not its layer's; and when a layer would change: annotations that
//! describe byte offsets in it (eStargz, zstd:chunked), or a layer above
//! it that cannot be read (an unknown media type, a foreign layer whose
//! blob is not in the layout), whose whiteouts are unknown.
//!
//! Writing ([`commit`]): in place, the new blobs first (each under a
//! temporary name, renamed to its digest), then `index.json` replaced in
//! one step, then the blobs the old index reached and the new one does
//! not removed; a run killed at any point leaves a layout that verifies,
//! the old image or the new. A new layout is made in a temporary
//! directory beside the destination and renamed to it once complete.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::Selection;
use super::path::{
    ImageRewritten, PathError, PathErrorKind, PathOptions, PathReport, Pruning, merge,
};

mod commit;
pub(super) mod docker;
pub(super) mod groups;
mod layer;
mod model;
mod records;
#[cfg(test)]
mod tests;

/// Reads the OCI layout `dir` (when given) and `data` as a `docker save`
/// archive, as prune does before it rewrites anything: for the fuzz body
/// `image_metadata`.
#[cfg(any(test, fuzzing))]
pub(crate) fn metadata_for_fuzz(dir: Option<&Path>, data: &[u8]) {
    if let Some(dir) = dir {
        let _ = model::Layout { dir, at: None }.read();
    }
    let _ = docker::saved_for_fuzz(data);
}

use crate::package::oci::chain::{self, Unedited};
use crate::package::oci::{self, Desc, Entry, Image, Index};
use commit::Stage;
use layer::{Above, LayerCx, method};
use model::Layout;

pub(crate) use docker::prune_docker;

/// Whether `dir` is an OCI image layout (it holds a file `oci-layout`),
/// as the scanners tell.
pub(crate) fn is_layout(dir: &std::path::Path) -> bool {
    dir.join(oci::LAYOUT_FILE).is_file()
}

/// What [`ImageRewritten::next`] says.
const RESIGN: &str = "its manifest and layer digests changed: signatures and attestations over \
                      the old digests (cosign's sha256-….sig and .att tags, referrers) no longer \
                      match it; sign it again and push it under its tags";

/// A layer written again: its new blob's hex, its size, its diff_id.
type NewLayer = (String, u64, String);

/// One output of a rewrite of a layout: what decides it, what it found.
struct Out<'a> {
    sel: &'a Selection,
    rep: PathReport,
    all: Pruning,
    changes: Vec<ImageRewritten>,
    /// Every image's layers after the rewrite, by its name.
    layers_after: Vec<(String, Vec<String>)>,
    /// The entries of `index.json` that changed: index, new blob's hex,
    /// size.
    top: Vec<(usize, String, u64)>,
}

/// One rewrite of a layout, read once into one output or more.
struct Run<'a> {
    opts: &'a PathOptions,
    input: &'a Path,
    layout: Layout<'a>,
    stage: Option<Stage>,
    /// Bytes the layers may still inflate to.
    budget: u64,
    outs: Vec<Out<'a>>,
    /// The per-GPU files met, with their GPUs.
    companions: layer::Companions,
    /// Whether the layout holds one image (its files are then named
    /// `LAYOUT!/…`, else `LAYOUT:NAME!/…`, as the scanners name them).
    single: bool,
    /// The entries of `index.json` carried as they are, not rewritten
    /// (a split's earlier outputs, split again).
    carried: Vec<usize>,
}

/// A layout opened for a rewrite: its index, its report before, the
/// stage its new blobs go to (writing `OUTPUTS` of them).
struct Opened<'a> {
    layout: Layout<'a>,
    index: Index,
    rep: PathReport,
    size: u64,
}

/// Opens the layout `input` (through `at` where given) for a rewrite.
fn opened(
    input: &Path,
    at: Option<crate::prune::anchor::LayoutAt>,
) -> Result<Opened<'_>, PathError> {
    let name = crate::files::shown(input).into_owned();
    let meta = match &at {
        Some(at) => at
            .dir
            .try_clone()
            .and_then(|fd| std::fs::File::from(fd).metadata()),
        None => std::fs::metadata(input),
    }
    .map_err(|e| PathError::open(input, e))?;
    let layout = Layout {
        dir: input,
        at: at.clone(),
    };
    let index = layout
        .read()
        .map_err(|e| PathError::said(PathErrorKind::Content, input, &name, e.to_string()))?;
    let size = commit::layout_size(input, at.as_ref());
    let mut rep = PathReport::new(&name, &[], &meta).package();
    (rep.bytes_before, rep.disk_before) = size;
    rep.bytes_after = size.0;
    // A directory's links are its subdirectories: not names of it.
    rep.hard_links = 1;
    Ok(Opened {
        layout,
        index,
        rep,
        size: size.0,
    })
}

impl<'a> Run<'a> {
    /// The rewrite of the layout `o` into one output per selection of
    /// `sels`, its new blobs going to `stage`.
    fn new(
        sels: &[&'a Selection],
        opts: &'a PathOptions,
        input: &'a Path,
        o: &Opened<'a>,
        stage: Option<Stage>,
    ) -> Run<'a> {
        let given = opts.prune.max_uncompressed;
        let outs = sels
            .iter()
            .map(|sel| Out {
                sel,
                rep: o.rep.clone(),
                all: Pruning::default(),
                changes: Vec::new(),
                layers_after: Vec::new(),
                top: Vec::new(),
            })
            .collect();
        Run {
            opts,
            input,
            layout: o.layout.clone(),
            stage,
            budget: given.unwrap_or_else(|| crate::scan::default_max_uncompressed(o.size)),
            outs,
            companions: Vec::new(),
            single: images(&o.index) == 1,
            carried: Vec::new(),
        }
    }
}

/// Prunes the image layout `input` as `opts` say: see the module's
/// documentation.
///
/// In place, `at` holds the handles of the layout's directory and blob
/// store when it was reached through them (in a walked tree, or named):
/// it is then written through them alone ([`commit`]).
pub(crate) fn prune_layout(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    at: Option<crate::prune::anchor::LayoutAt>,
) -> Result<PathReport, PathError> {
    let o = opened(input, at.clone())?;
    let stage = Stage::new(opts, input, at, o.size)?;
    let mut run = Run::new(&[sel], opts, input, &o, stage);
    let new_index = run.index(&o.index, false)?.pop().flatten();
    let Some(out) = run.outs.pop() else {
        return Ok(o.rep);
    };
    let name = crate::files::shown(input).into_owned();
    out.all.check_device_left(input, &name, &opts.prune)?;
    let mut rep = out.rep;
    rep.images = no_longer_shared(out.changes, &out.layers_after);
    rep.kept = merge(std::mem::take(&mut rep.kept));
    rep.dropped = merge(std::mem::take(&mut rep.dropped));
    let Some(stage) = run.stage else {
        return Ok(rep);
    };
    stage.commit(input, &o.index, new_index.as_deref(), &mut rep)?;
    Ok(rep)
}

/// The images rewritten, each told which of its old layers other images
/// of the layout (`after`: each image's layers after the rewrite) still
/// use.
fn no_longer_shared(
    mut changes: Vec<ImageRewritten>,
    after: &[(String, Vec<String>)],
) -> Vec<ImageRewritten> {
    for c in &mut changes {
        for (old, _) in &c.layers {
            let users: Vec<&str> = after
                .iter()
                .filter(|(name, layers)| *name != c.image && layers.contains(old))
                .map(|(name, _)| name.as_str())
                .collect();
            if !users.is_empty() {
                c.no_longer_shared
                    .push(format!("{old} (still used by {})", users.join(", ")));
            }
        }
    }
    changes
}

/// What the rewrite of one image did in one output so far.
struct InImage {
    /// What the layers above the one being read did.
    above: Above,
    /// The layers that changed, by index: new blob hex, size, diff_id.
    new_layers: BTreeMap<usize, NewLayer>,
    change: ImageRewritten,
    /// The image's layers, each changed one's new digest in its place.
    after: Vec<String>,
}

impl InImage {
    /// Nothing done yet of the image `img`, whose descriptor is `d`.
    fn new(d: &Desc, img: &Image) -> InImage {
        InImage {
            above: Above::default(),
            new_layers: BTreeMap::new(),
            change: ImageRewritten {
                image: img.name.clone(),
                manifest_before: d.digest.clone(),
                manifest_after: String::new(),
                layers: Vec::new(),
                no_longer_shared: Vec::new(),
                next: RESIGN,
            },
            after: img.layers.iter().map(|l| l.digest.clone()).collect(),
        }
    }

    /// The layer `i`, which is a layer read above that became `new`.
    fn again(&mut self, i: usize, new: &NewLayer) {
        self.after[i] = match new.0.is_empty() {
            true => String::new(),
            false => format!("sha256:{}", new.0),
        };
        self.new_layers.insert(i, new.clone());
    }
}

/// How many images `idx` names, those of indexes inside it counted.
fn images(idx: &Index) -> usize {
    idx.entries
        .iter()
        .map(|e| match e {
            Entry::Index(inner) => images(inner),
            Entry::Image(..) => 1,
            Entry::Other => 0,
        })
        .sum()
}

impl Run<'_> {
    /// `'LAYOUT': WHY`, of kind `kind`.
    fn said(&self, kind: PathErrorKind, why: String) -> PathError {
        let name = crate::files::shown(self.input).into_owned();
        PathError::said(kind, self.input, &name, why)
    }

    /// The index `idx` in each output, with the descriptors of what
    /// changed under it given their new digests and sizes; `None` where
    /// nothing did. At the `top` (`index.json`), each output notes its
    /// entries that changed.
    fn index(&mut self, idx: &Index, top: bool) -> Result<Vec<Option<Vec<u8>>>, PathError> {
        let n = self.outs.len();
        let mut edits: Vec<chain::Edits> = vec![Vec::new(); n];
        for (i, e) in idx.entries.iter().enumerate() {
            let new = match e {
                _ if top && self.carried.contains(&i) => vec![None; n],
                Entry::Index(inner) => self.index(inner, false)?,
                Entry::Image(d, img) => self.image(d, img)?,
                Entry::Other => vec![None; n],
            };
            for (k, bytes) in new.into_iter().enumerate() {
                let Some(bytes) = bytes else {
                    continue;
                };
                let (hex, size) = self.put(&bytes)?;
                chain::index_entry(&idx.bytes, i, &hex, size, &mut edits[k])
                    .map_err(|e| self.unedited(&idx.what, &e))?;
                if top {
                    self.outs[k].top.push((i, hex, size));
                }
            }
        }
        edits
            .into_iter()
            .map(|edits| match edits.is_empty() {
                true => Ok(None),
                false => chain::spliced(&idx.bytes, edits)
                    .map(Some)
                    .map_err(|e| self.unedited(&idx.what, &e)),
            })
            .collect()
    }

    /// Stages the small blob `bytes` (a config, a manifest, an index):
    /// its digest's hex and its size.
    fn put(&mut self, bytes: &[u8]) -> Result<(String, u64), PathError> {
        let hex = oci::hex_sha(bytes);
        if let Some(s) = self.stage.as_mut() {
            s.put(&hex, bytes)?;
        }
        Ok((hex, bytes.len() as u64))
    }

    /// The error of the document `what` that cannot be edited.
    fn unedited(&self, what: &str, e: &Unedited) -> PathError {
        self.said(PathErrorKind::Content, e.said(what))
    }

    /// The image `img` (its descriptor `d`) pruned for each output,
    /// layer by layer from the top, each layer read once for all: its
    /// new manifest in each, or `None` where no layer changed.
    fn image(&mut self, d: &Desc, img: &Image) -> Result<Vec<Option<Vec<u8>>>, PathError> {
        let cx_name = match self.single {
            true => crate::files::shown(self.input).into_owned(),
            false => format!("{}:{}", crate::files::shown(self.input), img.name),
        };
        let mut ins: Vec<InImage> = self.outs.iter().map(|_| InImage::new(d, img)).collect();
        let mut blocked: Option<String> = None;
        // Each layer read, by its digest: its old diff_id, and what it
        // became in each output where it changed.
        let mut read: HashMap<&str, (String, Vec<Option<NewLayer>>)> = HashMap::new();
        for (i, l) in img.layers.iter().enumerate().rev() {
            let place = format!("{} ({}): layers[{i}] ({})", img.field, d.digest, l.digest);
            if let Some((old_diff, new)) = read.get(l.digest.as_str()) {
                // Named again below: the copy above hides every file of
                // it and lost the same paths, so it becomes what that
                // copy became, read once.
                self.check_diff(&place, img, i, old_diff)?;
                for (one, new) in ins.iter_mut().zip(new) {
                    if let Some(new) = new {
                        one.again(i, new);
                    }
                }
                continue;
            }
            let cxs: Vec<LayerCx<'_>> = self
                .outs
                .iter()
                .map(|o| LayerCx {
                    sel: o.sel,
                    opts: self.opts,
                    input: self.input,
                    name: cx_name.clone(),
                    place: place.clone(),
                })
                .collect();
            let Some(cx) = cxs.first() else {
                return Ok(Vec::new());
            };
            let Some((m, file)) = self.open(cx, l, &mut blocked)? else {
                continue;
            };
            let rs = self.layer(&cxs, file, l, m, &mut ins)?;
            let old_diff = rs.first().map(|r| r.old_diff.clone()).unwrap_or_default();
            self.check_diff(&place, img, i, &old_diff)?;
            let mut news = Vec::new();
            for (k, r) in rs.into_iter().enumerate() {
                let new = self.settle(k, (&place, i, l, m), r, blocked.as_deref(), &mut ins[k])?;
                news.push(new);
            }
            read.insert(&l.digest, (old_diff, news));
        }
        let mut manifests = Vec::new();
        for (k, one) in ins.into_iter().enumerate() {
            manifests.push(self.finish_image(k, img, one)?);
        }
        Ok(manifests)
    }

    /// Reads the layer `l` (its blob `file`, compressed with `m`) once
    /// into every output (each with its context in `cxs` and what the
    /// layers above did in it in `ins`).
    fn layer(
        &mut self,
        cxs: &[LayerCx<'_>],
        file: std::fs::File,
        l: &Desc,
        m: layer::Method,
        ins: &mut [InImage],
    ) -> Result<Vec<layer::Rewritten>, PathError> {
        let mut parts = Vec::with_capacity(cxs.len());
        for ((cx, out), one) in cxs.iter().zip(self.outs.iter_mut()).zip(ins.iter_mut()) {
            let scratch = match self.stage.as_ref() {
                Some(s) => Some((s.scratch(self.input)?, s.scratch(self.input)?)),
                None => None,
            };
            parts.push(layer::Part {
                cx,
                above: &mut one.above,
                rep: &mut out.rep,
                scratch,
            });
        }
        let (rs, found) = layer::rewrite_each(file, Some(l), m, parts, &mut self.budget)?;
        for c in found {
            if !self.companions.contains(&c) {
                self.companions.push(c);
            }
        }
        for one in ins.iter_mut() {
            one.above.shadow.next_layer();
        }
        Ok(rs)
    }

    /// What the layer `i` (`l`, compressed with `m`, at `place`) became
    /// in output `k` (`r`): its new blob packed when it changed (refused
    /// where `blocked` or its annotations say), noted in `one`.
    fn settle(
        &mut self,
        k: usize,
        (place, i, l, m): (&str, usize, &Desc, layer::Method),
        r: layer::Rewritten,
        blocked: Option<&str>,
        one: &mut InImage,
    ) -> Result<Option<NewLayer>, PathError> {
        let out = &mut self.outs[k];
        out.all.add_device(&r.walked.all);
        out.rep.members_refused.extend(r.walked.refused);
        if !r.walked.changed {
            return Ok(None);
        }
        self.refusals(place, l, blocked)?;
        let (new_hex, size) = match (self.stage.as_mut(), r.tar) {
            (Some(s), Some(mut tar)) => {
                s.pack(self.input, &mut tar, m, self.opts.prune.threads())?
            }
            _ => (String::new(), 0),
        };
        let shown = match new_hex.is_empty() {
            true => String::new(),
            false => format!("sha256:{new_hex}"),
        };
        one.change.layers.push((l.digest.clone(), shown.clone()));
        one.after[i] = shown;
        let new = (new_hex, size, r.new_diff);
        one.new_layers.insert(i, new.clone());
        Ok(Some(new))
    }

    /// The image `img` done in output `k` (`one`): its new manifest, or
    /// `None` when no layer changed.
    fn finish_image(
        &mut self,
        k: usize,
        img: &Image,
        mut one: InImage,
    ) -> Result<Option<Vec<u8>>, PathError> {
        self.outs[k]
            .layers_after
            .push((img.name.clone(), one.after));
        if one.new_layers.is_empty() {
            return Ok(None);
        }
        one.change.layers.reverse();
        let new = self.chain(img, &one.new_layers)?;
        if self.stage.is_some() {
            one.change.manifest_after = format!("sha256:{}", oci::hex_sha(&new));
        }
        self.outs[k].changes.push(one.change);
        Ok(Some(new))
    }

    /// Refuses the layer `i` of `img` (at `place`) when its config's
    /// `rootfs.diff_ids` entry is not `old_diff`, the layer's
    /// uncompressed SHA-256.
    fn check_diff(
        &self,
        place: &str,
        img: &Image,
        i: usize,
        old_diff: &str,
    ) -> Result<(), PathError> {
        if img.diff_ids.get(i).map(String::as_str) == Some(old_diff) {
            return Ok(());
        }
        Err(self.said(
            PathErrorKind::Content,
            format!(
                "{place}: the config {}'s 'rootfs.diff_ids[{i}]' says {}, the layer's \
                 uncompressed SHA-256 is {old_diff}",
                img.config.digest,
                img.diff_ids.get(i).map_or("nothing", String::as_str),
            ),
        ))
    }

    /// The layer `l` opened, with its method; `None` when it cannot be
    /// read (its media type is not a layer's, or it is foreign and not
    /// here), said in `blocked` for the layers below.
    fn open(
        &self,
        cx: &LayerCx<'_>,
        l: &Desc,
        blocked: &mut Option<String>,
    ) -> Result<Option<(layer::Method, std::fs::File)>, PathError> {
        let place = &cx.place;
        let Some(m) = method(&l.media_type) else {
            blocked.get_or_insert(format!(
                "{place}: its media type '{}' is not a layer prune reads",
                l.media_type
            ));
            return Ok(None);
        };
        let hex = l
            .hex()
            .ok_or_else(|| cx.said(&format!("'digest' '{}' is not a sha256 digest", l.digest)))?;
        let blob = self.layout.blob_path(hex);
        if layer::is_foreign(&l.media_type) && !self.layout.has_blob(hex) {
            blocked.get_or_insert(format!("{place}: a foreign layer whose blob is not here"));
            return Ok(None);
        }
        let (file, _) = self.layout.open_blob(hex).map_err(|e| {
            cx.said(&format!(
                "cannot open the blob '{}': {}",
                crate::files::shown(&blob),
                crate::files::strerror(&e)
            ))
        })?;
        Ok(Some((m, file)))
    }

    /// Refuses the change of the layer `l` (at `place`) when it carries
    /// byte-offset annotations, or a layer above could not be read
    /// (`blocked`).
    fn refusals(&self, place: &str, l: &Desc, blocked: Option<&str>) -> Result<(), PathError> {
        if let Some(a) = layer::offsets_annotation(l) {
            return Err(self.said(
                PathErrorKind::Refused,
                format!(
                    "{place}: its annotation '{a}' describes byte offsets inside the blob \
                     (eStargz or zstd:chunked), which rewriting the layer would make false: \
                     prune does not rewrite such layers (convert the image to plain gzip \
                     layers first)"
                ),
            ));
        }
        if let Some(b) = blocked {
            return Err(self.said(
                PathErrorKind::Refused,
                format!(
                    "{place} would change, but a layer above it cannot be read ({b}): what it \
                     hides is unknown"
                ),
            ));
        }
        Ok(())
    }

    /// The config and manifest of `img` with the layers `new` (by index:
    /// new blob hex, size, diff_id) in place of theirs: the new manifest.
    fn chain(
        &mut self,
        img: &Image,
        new: &BTreeMap<usize, (String, u64, String)>,
    ) -> Result<Vec<u8>, PathError> {
        let cfield = format!("the config {}", img.config.digest);
        let diffs = new.iter().map(|(&i, (_, _, diff))| (i, diff.as_str()));
        let config =
            chain::config(&img.config_bytes, diffs).map_err(|e| self.unedited(&cfield, &e))?;
        let (chex, csize) = self.put(&config)?;
        let layers = new
            .iter()
            .map(|(&i, (hex, size, _))| (i, hex.as_str(), *size));
        chain::manifest(&img.manifest, (&chex, csize), layers)
            .map_err(|e| self.unedited(&img.field, &e))
    }
}

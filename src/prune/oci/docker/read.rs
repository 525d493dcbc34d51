//! The images of a `docker save` archive read into one rewrite or more
//! ([`Run`], one per selection): each layer is read once, from the top
//! layer of each image down, and decided for every rewrite by prune's
//! own decider of a layer's entries ([`layer::rewrite_each`]); each
//! rewrite then notes what its layers and configs became, as prune of
//! its selection alone would.

use std::collections::BTreeMap;
use std::io::{Seek as _, SeekFrom};

use super::super::layer::{self, Above, Companions, LayerCx, Method, Part, Rewritten};
use super::{PathError, Run, Saved};
use crate::package::oci::chain;
use crate::package::oci::json::Step;
use crate::package::oci::{ConfigDoc, Desc, DiffIdsWhy, hex_sha};

impl<'a> Run<'a> {
    /// Reads every image of `images` (those of `manifest.json`) but
    /// those `carried` names (by index: left as they are) once into each
    /// of `runs` (at least one), inflating no more than `budget`; the
    /// per-GPU files met go into `companions`.
    pub(super) fn read_images(
        runs: &mut [Run<'a>],
        (images, carried): (&[Saved], &[usize]),
        budget: &mut u64,
        companions: &mut Companions,
    ) -> Result<(), PathError> {
        let single = images.len() == 1;
        for (i, img) in images.iter().enumerate() {
            if !carried.contains(&i) {
                image(runs, i, img, single, budget, companions)?;
            }
        }
        Ok(())
    }
}

/// Reads the image `img`, the `i`th of `manifest.json`, into each of
/// `runs`.
fn image(
    runs: &mut [Run<'_>],
    i: usize,
    img: &Saved,
    single: bool,
    budget: &mut u64,
    companions: &mut Companions,
) -> Result<(), PathError> {
    let Some(first) = runs.first() else {
        return Ok(());
    };
    let field = format!("manifest.json: [{i}]");
    let (config_at, config) = first.member(&format!("{field}.Config"), img.config())?;
    let diff_ids = ConfigDoc::diff_ids_for(config, img.layers.len()).map_err(|e| match e {
        DiffIdsWhy::Json(e) => first.said(format!(
            "{field}.Config ('{config_at}'): not an image config: {e}"
        )),
        DiffIdsWhy::Count { ids, layers } => first.said(format!(
            "{field}: 'Layers' lists {layers} layers, its config's 'rootfs.diff_ids' {ids}"
        )),
    })?;
    let shown = crate::files::shown(first.input).into_owned();
    let name = match single {
        true => shown,
        false => format!("{shown}:{}", img.config()),
    };
    let mut aboves: Vec<Above> = runs.iter().map(|_| Above::default()).collect();
    let mut new_diffs = vec![BTreeMap::new(); runs.len()];
    for (j, path) in img.layers.iter().enumerate().rev() {
        let place = format!("{field}.Layers[{j}] ('{path}')");
        let l = Layer {
            name: &name,
            place: &place,
            path,
            diff: &diff_ids[j],
        };
        let diffs = l.read(runs, &mut aboves, budget, companions)?;
        for ((run, diff), news) in runs.iter_mut().zip(diffs).zip(&mut new_diffs) {
            if let Some(diff) = diff {
                news.insert(j, diff);
                let at = [Step::At(i), Step::Key("Layers"), Step::At(j)];
                run.rename_in_manifest(&at, path)?;
            }
        }
    }
    for (run, news) in runs.iter_mut().zip(&new_diffs) {
        run.config(i, img, (&config_at, config), news)?;
    }
    Ok(())
}

/// One layer of an image, as `manifest.json` names it.
struct Layer<'l> {
    /// The image's name for its files.
    name: &'l str,
    /// The layer, for messages.
    place: &'l str,
    /// The member `manifest.json` names.
    path: &'l str,
    /// Its diff_id, as the config says.
    diff: &'l str,
}

impl Layer<'_> {
    /// Reads the layer once into each of `runs` (the layers above it in
    /// `aboves`, one per run): each run's new diff_id where it changed.
    fn read(
        &self,
        runs: &mut [Run<'_>],
        aboves: &mut [Above],
        budget: &mut u64,
        companions: &mut Companions,
    ) -> Result<Vec<Option<String>>, PathError> {
        let Some(first) = runs.first() else {
            return Ok(Vec::new());
        };
        let (at, bytes) = first.member(self.place, self.path)?;
        let m = layer::method_of_bytes(bytes)
            .ok_or_else(|| first.said(format!("{}: it is not a tar archive", self.place)))?;
        // A member named by its digest is checked against it.
        let expect = Desc::of_blob_member(&at, bytes.len() as u64);
        let cxs: Vec<LayerCx<'_>> = runs
            .iter()
            .map(|r| LayerCx {
                sel: r.sel,
                opts: r.opts,
                input: r.input,
                name: self.name.to_string(),
                place: self.place.to_string(),
            })
            .collect();
        let mut scratches = Vec::with_capacity(runs.len());
        for r in runs.iter() {
            scratches.push(match r.write {
                true => Some((r.scratch()?, r.scratch()?)),
                false => None,
            });
        }
        let parts = (cxs.iter().zip(aboves.iter_mut()))
            .zip(runs.iter_mut().zip(scratches))
            .map(|((cx, above), (run, scratch))| Part {
                cx,
                above,
                rep: &mut run.rep,
                scratch,
            })
            .collect();
        let (done, met) = layer::rewrite_each(bytes, expect.as_ref(), m, parts, budget)?;
        companions.extend(met);
        aboves.iter_mut().for_each(|a| a.shadow.next_layer());
        let mut diffs = Vec::with_capacity(runs.len());
        for (run, r) in runs.iter_mut().zip(done) {
            diffs.push(run.settle_layer(self, &at, m, expect.as_ref(), r)?);
        }
        Ok(diffs)
    }
}

impl Run<'_> {
    /// Notes what the layer `l` (the member `at`, compressed with `m`,
    /// checked against `expect`) became in this rewrite, `r`: its new
    /// diff_id when it changed, the member then replaced.
    fn settle_layer(
        &mut self,
        l: &Layer<'_>,
        at: &str,
        m: Method,
        expect: Option<&Desc>,
        r: Rewritten,
    ) -> Result<Option<String>, PathError> {
        let (place, diff) = (l.place, l.diff);
        if r.old_diff != diff {
            return Err(self.said(format!(
                "{place}: its config's 'rootfs.diff_ids' says {diff}, the layer's uncompressed \
                 SHA-256 is {}",
                r.old_diff
            )));
        }
        self.all.add_device(&r.walked.all);
        self.rep.members_refused.extend(r.walked.refused);
        let shared = |why: &str| {
            self.said(format!(
                "{place}: the member '{at}' is a layer of several images, {why}: prune does \
                 not rewrite it"
            ))
        };
        if !r.walked.changed {
            if self.replaced.contains_key(at) {
                return Err(shared(
                    "which another image sees change and this one does not",
                ));
            }
            self.kept.insert(at.to_string());
            return Ok(None);
        }
        if self.kept.contains(at) {
            return Err(shared("which this image sees change and another does not"));
        }
        let Some(mut tar) = r.tar else {
            return Ok(Some(r.new_diff));
        };
        let (content, digest, len) = match m {
            Method::Plain => {
                let len = tar.seek(SeekFrom::End(0)).map_err(|e| self.io(e))?;
                let hex = r.new_diff.get(7..).unwrap_or_default().to_string();
                (tar, hex, len)
            }
            _ => {
                let f = self.scratch()?;
                let (hex, len) = layer::pack(&mut tar, m, &f, self.opts.prune.threads())
                    .map_err(|e| self.io(e))?;
                (f, hex, len)
            }
        };
        if let Some((_, was)) = self.replaced.get(at) {
            if *was != digest {
                return Err(shared("which the images see change differently"));
            }
            return Ok(Some(r.new_diff));
        }
        let old = expect.map_or(diff, |d| d.digest.as_str());
        let old = old.get(7..).unwrap_or_default().to_string();
        // The member's own digest: checked against its name, or its
        // diff_id when it is a plain tar.
        if expect.is_some() || m == Method::Plain {
            self.moved.insert(old.clone(), (digest.clone(), len));
        }
        self.replace(at, &old, &digest, content, len)?;
        Ok(Some(r.new_diff))
    }

    /// Gives the config of the image `img` (the `i`th of `manifest.json`;
    /// the member `at`, whose bytes are `config`) the new diff_ids
    /// `new_diffs` (by layer) where there are any: the config replaced.
    fn config(
        &mut self,
        i: usize,
        img: &Saved,
        (at, config): (&str, &[u8]),
        new_diffs: &BTreeMap<usize, String>,
    ) -> Result<(), PathError> {
        if new_diffs.is_empty() || !self.write {
            return Ok(());
        }
        let diffs = new_diffs.iter().map(|(j, d)| (*j, d.as_str()));
        let new =
            chain::config(config, diffs).map_err(|e| self.said(e.said(&format!("'{at}'"))))?;
        let (old_hex, new_hex) = (hex_sha(config), hex_sha(&new));
        let f = self.scratch_with(&new)?;
        let len = new.len() as u64;
        self.moved.insert(old_hex.clone(), (new_hex.clone(), len));
        self.replace(at, &old_hex, &new_hex, f, len)?;
        self.rename_in_manifest(&[Step::At(i), Step::Key("Config")], img.config())
    }
}

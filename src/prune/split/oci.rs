//! Splitting one OCI image layout into one image per group of GPUs, in
//! one read of its layers ([`crate::prune::oci::rewrite_groups`]: each
//! layer is read once and decided for every group by prune's own decider
//! of a layer's entries), so that each group's manifest, config and
//! layers are the blobs `prune --keep GROUP -o` writes.
//!
//! The output is one new layout in the output directory, named as the
//! input is: its `index.json` names the input's images as the input
//! does (the images for every GPU), then each group's, named by
//! `org.opencontainers.image.ref.name` `TAG-LABEL` (the input's name
//! for the image, then the group's label: `latest-sm86`), or `LABEL` for
//! the one unnamed image of a layout. Blobs are stored once by digest,
//! so a layer no group changes is stored once. `umoci unpack --image
//! DIR:TAG-LABEL` and `skopeo copy oci:DIR:TAG-LABEL …` take one.
//!
//! Such an output split again is read as an input whose earlier outputs
//! ([`carried`]: `TAG-LABEL` beside `TAG`) are carried as they are and
//! split for no group; a group's image named as one of them is that one
//! where its descriptor is the same (it is not added again), and refused
//! where it is not. So an output split again for its own groups (or some
//! of them) is the same bytes.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::coverage::{coverage, kept_of};
use super::deb::unserved;
use super::report::{SplitOptions, SplitOutput, SplitReport, named_once};
use super::targets::Held;
use super::variant::{self, NULL};
use crate::package::oci::{Entry, Index};
use crate::prune::oci::groups::{copies_among, named_otherwise, rewrite_groups};
use crate::prune::path::{Destination, PathError, PathErrorKind, PathOptions};
use crate::prune::{Rules, Selection};
use crate::scan::rule::Rule;

/// The annotation that names an image of a layout.
const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// The most characters of a name (as a registry's tag may have).
const NAME_MAX: usize = 128;

/// Whether `input` is an OCI image layout directory.
pub(super) fn is_oci(input: &Path) -> bool {
    input.is_dir() && crate::prune::oci::is_layout(input)
}

/// Whether the file `input` (not named as a wheel is) starts as a `docker
/// save` archive does ([`super::saved`] splits one).
pub(super) fn is_saved(input: &Path) -> bool {
    !input.to_string_lossy().ends_with(".whl")
        && input.is_file()
        && std::fs::File::open(input).is_ok_and(crate::package::oci::starts_as_saved)
}

/// Splits the OCI layout `input` as `o` says, writing the new layout
/// into `o.dir` whole or not at all.
pub(super) fn split(input: &Path, o: &SplitOptions) -> Result<SplitReport, PathError> {
    let name = crate::files::shown(input).into_owned();
    let refuse = |why: String| PathError::said(PathErrorKind::Refused, input, &name, why);
    let targets = || per_gpu(input, o);
    let p = prelude(input, o, "layout as a new directory", targets, &refuse)?;
    std::fs::create_dir_all(&o.dir).map_err(|e| PathError::write(&o.dir, e))?;
    let refs: Vec<&Selection> = p.sels.iter().collect();
    let mut g = rewrite_groups(&refs, &p.opts, input, |i| carried(i, &p.labels))?;
    let first = g.reps.first();
    let held = Held::of_report(first, &g.companions);
    unserved(&p.groups, &held).map_err(&refuse)?;
    std::mem::take(&mut g.left)
        .into_iter()
        .try_for_each(|r| r)?;
    let names = Names::of(&g.index, &p.labels).map_err(&refuse)?;
    let index_json = index_json(&g.index.bytes, &g.tops, &names).map_err(&refuse)?;
    let c = coverage(&held, &p.labels, &kept_of(&g.reps), &g.companions, &p.sels);
    let shown = crate::files::shown(&p.dest).into_owned();
    let mut outputs = Vec::new();
    for (k, ((label, group), rep)) in p.labels.iter().zip(&p.groups).zip(&g.reps).enumerate() {
        outputs.push(SplitOutput {
            label: label.clone(),
            gpus: group.iter().map(Rule::to_string).collect(),
            path: format!("{shown}:{}", names.first_of(k)),
            properties: names.of_group(k),
            index: None,
            kept: rep.kept.clone(),
        });
    }
    let whole = first.map(|r| r.kept.iter().chain(&r.dropped).cloned().collect());
    outputs.push(SplitOutput {
        label: NULL.to_string(),
        gpus: Vec::new(),
        path: format!("{shown}:{}", names.original.first().map_or("", |n| n)),
        properties: names
            .original
            .iter()
            .map(|n| format!("{REF_NAME}: {n}"))
            .collect(),
        index: None,
        kept: crate::prune::path::merge(whole.unwrap_or_default()),
    });
    let members_refused = named_once(Vec::new(), g.reps.iter().flat_map(|r| &r.members_refused));
    let mut rep = g.before.clone();
    g.commit(&index_json, &mut rep)?;
    Ok(SplitReport::of(
        name.clone(),
        "oci",
        outputs,
        c,
        members_refused,
    ))
}

/// What the split of an OCI layout and of a `docker save` archive
/// ([`super::saved`]) both start from.
pub(super) struct Prelude {
    /// The groups, as [`SplitOptions::groups`] finds them.
    pub(super) groups: Vec<Vec<Rule>>,
    /// Each group's label ([`labels`]).
    pub(super) labels: Vec<String>,
    /// What prune keeps for each group.
    pub(super) sels: Vec<Selection>,
    /// The options of each group's prune, writing into the output directory.
    pub(super) opts: PathOptions,
    /// The new output, named as the input is.
    pub(super) dest: PathBuf,
}

/// The groups, labels, selections and prune options of the split of
/// `input` as `o` says (`targets` finds the device targets for
/// `--per-gpu`), and its output's path: refused (`refuse`) where a label
/// is not one or the output exists (split writes the new `what`, as
/// `archive as a new file`).
pub(super) fn prelude(
    input: &Path,
    o: &SplitOptions,
    what: &str,
    targets: impl FnOnce() -> Result<Vec<String>, PathError>,
    refuse: &impl Fn(String) -> PathError,
) -> Result<Prelude, PathError> {
    let groups = o.groups(targets, refuse)?;
    let labels = labels(&groups).map_err(refuse)?;
    let sels = o.selections(&groups);
    let mut opts = o.path_options();
    opts.destination = Destination::Directory(o.dir.clone());
    let dest = opts.output_path(input)?.unwrap_or_else(|| o.dir.clone());
    if dest.symlink_metadata().is_ok() {
        return Err(refuse(format!(
            "'{}' exists: split writes the new {what} (remove it, or give another -d)",
            crate::files::shown(&dest)
        )));
    }
    Ok(Prelude {
        groups,
        labels,
        sels,
        opts,
        dest,
    })
}

/// The device targets the layout holds code or per-GPU files for, as
/// prune's decider finds them in a read that keeps everything and writes
/// nothing: what `--per-gpu` makes one group of each.
fn per_gpu(input: &Path, o: &SplitOptions) -> Result<Vec<String>, PathError> {
    let all = Selection {
        rules: Rules::Drop(Vec::new()),
        ptx: o.ptx,
    };
    let opts = o.path_options();
    let g = rewrite_groups(&[&all], &opts, input, |i| carried(i, &[]))?;
    let images = g.reps.iter().flat_map(|r| r.kept.iter().chain(&r.dropped));
    let gpus = g.companions.iter().map(|(_, g)| g.clone());
    Ok(Held::of(images, gpus).targets())
}

/// The label of each group (its rules' variant tokens joined by `.`:
/// `sm86`, `gfx90a.gfx942`), each distinct.
pub(super) fn labels(groups: &[Vec<Rule>]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for g in groups {
        let tokens: Vec<String> = g.iter().map(|r| variant::token(&r.to_string())).collect();
        let label = tokens.join(".");
        if label.is_empty() || label == NULL {
            return Err(format!("the group '{label}' gives no label"));
        }
        if out.contains(&label) {
            return Err(format!(
                "two groups are both labelled '{label}': name each once"
            ));
        }
        out.push(label);
    }
    Ok(out)
}

/// The names of the images of the new layout.
#[derive(Debug)]
struct Names {
    /// The input's names of its images, in `index.json`'s order.
    original: Vec<String>,
    /// For each group, each image's entry in `index.json` (its index
    /// there) and its name in the group: `TAG-LABEL`.
    groups: Vec<Vec<(usize, String)>>,
    /// The entries of `index.json` that are a split's earlier outputs
    /// ([`carried`]), with their names.
    carried: Vec<(usize, String)>,
}

/// The name (`org.opencontainers.image.ref.name`) of each entry of the
/// `index.json` whose bytes are `bytes`, in its order.
fn entry_names(bytes: &[u8]) -> Result<Vec<Option<String>>, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let descs = doc.get("manifests").and_then(Value::as_array);
    let name = |d: &Value| {
        let notes = d.get("annotations").and_then(|a| a.get(REF_NAME));
        notes.and_then(Value::as_str).map(str::to_string)
    };
    Ok(descs.into_iter().flatten().map(name).collect())
}

/// The entries of `index` (a layout's `index.json`) that are a split's
/// earlier outputs, carried as they are and split for no group: each
/// image named `NAME-LABEL` beside another image named `NAME`, or (where
/// one image is unnamed) named as one of `labels`.
fn carried(index: &Index, labels: &[String]) -> Vec<usize> {
    let names = entry_names(&index.bytes).unwrap_or_default();
    let images: Vec<(usize, Option<&str>)> = (index.entries.iter().enumerate())
        .filter(|(_, e)| !matches!(e, Entry::Other))
        .map(|(i, _)| (i, names.get(i).and_then(Option::as_deref)))
        .collect();
    let unnamed = images.iter().filter(|(_, n)| n.is_none()).count();
    let image_names: Vec<Vec<&str>> = images
        .iter()
        .map(|(_, n)| n.iter().copied().collect())
        .collect();
    let copies = copies_among(&image_names);
    let labelled = |n: &str| unnamed == 1 && labels.iter().any(|l| l == n);
    (images.iter().enumerate())
        .filter(|(k, (_, n))| n.is_some_and(|n| copies.contains(k) || labelled(n)))
        .map(|(_, (i, _))| *i)
        .collect()
}

impl Names {
    /// The names in the layout whose `index.json` is `index` of each
    /// group's image (of each labelled as `labels` say) but for the
    /// split's earlier outputs ([`carried`]); refused where two would be
    /// the same, an image has no name but is not the only one, or a name
    /// is not one a registry's tag may be. A name an earlier output has
    /// is checked by [`index_json`].
    fn of(index: &Index, labels: &[String]) -> Result<Names, String> {
        let names = entry_names(&index.bytes)?;
        let name_of = |i: usize| names.get(i).cloned().flatten();
        let carried: Vec<(usize, String)> = (carried(index, labels).into_iter())
            .filter_map(|i| name_of(i).map(|n| (i, n)))
            .collect();
        let images: Vec<usize> = (index.entries.iter().enumerate())
            .filter(|(i, e)| !matches!(e, Entry::Other) && !carried.iter().any(|(j, _)| j == i))
            .map(|(i, _)| i)
            .collect();
        let original: Vec<String> = names.iter().flatten().cloned().collect();
        let mut taken: Vec<String> = (names.iter().enumerate())
            .filter(|(i, _)| !carried.iter().any(|(j, _)| j == i))
            .filter_map(|(_, n)| n.clone())
            .collect();
        let mut groups = Vec::new();
        for label in labels {
            let mut one = Vec::new();
            for &i in &images {
                let new = match name_of(i) {
                    Some(tag) => format!("{tag}-{label}"),
                    None if images.len() == 1 => label.clone(),
                    None => {
                        return Err(format!(
                            "index.json: manifests[{i}] has no '{REF_NAME}' to name its \
                             image for each group after"
                        ));
                    }
                };
                check(&new, &taken)?;
                taken.push(new.clone());
                one.push((i, new));
            }
            groups.push(one);
        }
        Ok(Names {
            original,
            groups,
            carried,
        })
    }

    /// The first name of group `k`'s images.
    fn first_of(&self, k: usize) -> &str {
        self.groups
            .get(k)
            .and_then(|g| g.first())
            .map_or("", |(_, n)| n)
    }

    /// The lines of the report that give group `k`'s names.
    fn of_group(&self, k: usize) -> Vec<String> {
        let names = self.groups.get(k).into_iter().flatten();
        names.map(|(_, n)| format!("{REF_NAME}: {n}")).collect()
    }
}

/// Refuses the name `new` where it is in `taken`, or no tag a registry
/// takes (`[A-Za-z0-9_][A-Za-z0-9_.-]*`, at most [`NAME_MAX`]).
pub(super) fn check(new: &str, taken: &[String]) -> Result<(), String> {
    if taken.iter().any(|t| t == new) {
        return Err(format!(
            "its image '{new}' would be named twice: the input already names one so, or two \
             groups' images would be"
        ));
    }
    let first_ok = new
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let rest_ok = new
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !first_ok || !rest_ok || new.len() > NAME_MAX {
        return Err(format!(
            "its image would be named '{new}', which is no tag a registry takes \
             ([A-Za-z0-9_][A-Za-z0-9_.-]*, at most {NAME_MAX} characters)"
        ));
    }
    Ok(())
}

/// The new layout's `index.json`: the input's (`bytes`), its
/// `manifests` followed by each group's images (the input's descriptor
/// of each, with the new digest and size where the group changed it, as
/// `tops` says, and its name). A group's image whose descriptor an
/// earlier output has, name and all, is that output, not added again;
/// one named as an earlier output but other is refused.
fn index_json(
    bytes: &[u8],
    tops: &[Vec<(usize, String, u64)>],
    names: &Names,
) -> Result<Vec<u8>, String> {
    let mut doc: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let descs: Vec<Value> = doc
        .get("manifests")
        .and_then(Value::as_array)
        .cloned()
        .ok_or("index.json has no 'manifests'")?;
    let mut all = descs.clone();
    for (group, top) in names.groups.iter().zip(tops) {
        for (i, name) in group {
            let mut d = descs.get(*i).cloned().ok_or("index.json changed")?;
            let obj = d.as_object_mut().ok_or("a descriptor is no object")?;
            if let Some((_, hex, size)) = top.iter().find(|(t, _, _)| t == i) {
                obj.insert("digest".into(), Value::from(format!("sha256:{hex}")));
                obj.insert("size".into(), Value::from(*size));
            }
            let notes = obj
                .entry("annotations")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            let notes = notes.as_object_mut().ok_or("'annotations' is no object")?;
            notes.insert(REF_NAME.into(), Value::from(name.clone()));
            match names.carried.iter().find(|(_, n)| n == name) {
                Some((j, _)) if descs.get(*j) == Some(&d) => continue,
                Some(_) => return Err(named_otherwise(name)),
                None => all.push(d),
            }
        }
    }
    let root = doc.as_object_mut().ok_or("index.json is no object")?;
    root.insert("manifests".into(), Value::Array(all));
    serde_json::to_vec(&doc).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prune::oci::groups::{is_copy_name, label_shaped};

    fn groups(lists: &[&str]) -> Vec<Vec<Rule>> {
        lists
            .iter()
            .map(|l| l.split(',').map(|r| Rule::parse(r).unwrap()).collect())
            .collect()
    }

    #[test]
    fn labels_join_the_tokens_with_dots_each_once() {
        let l = labels(&groups(&["sm_86", "gfx90a,gfx942", "gfx90a:xnack+"])).unwrap();
        assert_eq!(l, ["sm86", "gfx90a.gfx942", "gfx90a_xnackp"]);
        let e = labels(&groups(&["sm_86", "sm_86"])).unwrap_err();
        assert!(e.contains("both labelled 'sm86'"), "{e}");
    }

    #[test]
    fn names_are_tags_a_registry_takes_and_taken_once() {
        let taken = vec!["t".to_string(), "t-sm86".to_string()];
        assert!(check("t-gfx90a", &taken).is_ok());
        assert!(check("t-sm86", &taken).unwrap_err().contains("named twice"));
        assert!(check("-x", &taken).unwrap_err().contains("no tag"));
        assert!(check("t:x", &taken).unwrap_err().contains("no tag"));
        assert!(
            check(&"a".repeat(129), &taken)
                .unwrap_err()
                .contains("no tag")
        );
    }

    /// An image entry (what it holds matters not here).
    fn image() -> Entry {
        let desc: crate::package::oci::Desc =
            serde_json::from_str(r#"{"digest":"sha256:00","size":1}"#).unwrap();
        Entry::Image(
            desc.clone(),
            Box::new(crate::package::oci::Image {
                name: String::new(),
                field: String::new(),
                manifest: Vec::new(),
                config: desc,
                config_bytes: Vec::new(),
                layers: Vec::new(),
                diff_ids: Vec::new(),
            }),
        )
    }

    /// An index of two images named `names` (`None`: unnamed) and a
    /// signature named `sig`.
    fn index(names: [Option<&str>; 2]) -> Index {
        index_with(names, "sig")
    }

    /// An index of two images named `names` (`None`: unnamed) and a
    /// signature named `sig`.
    fn index_with(names: [Option<&str>; 2], sig: &str) -> Index {
        let desc = |n: Option<&str>| match n {
            Some(n) => {
                format!(r#"{{"digest":"sha256:00","size":1,"annotations":{{"{REF_NAME}":"{n}"}}}}"#)
            }
            None => r#"{"digest":"sha256:00","size":1}"#.to_string(),
        };
        let bytes = format!(
            r#"{{"schemaVersion":2,"manifests":[{},{},{}]}}"#,
            desc(names[0]),
            desc(names[1]),
            desc(Some(sig))
        );
        Index {
            what: "index.json".into(),
            bytes: bytes.into_bytes(),
            entries: vec![image(), image(), Entry::Other],
        }
    }

    #[test]
    fn each_image_is_named_per_group_and_an_unnamed_one_among_several_refused() {
        let labels = ["sm86".to_string(), "gfx90a".to_string()];
        let n = Names::of(&index([Some("t"), Some("u")]), &labels).unwrap();
        assert_eq!(n.original, ["t", "u", "sig"]);
        let want = |l: &str| vec![(0, format!("t-{l}")), (1, format!("u-{l}"))];
        assert_eq!(n.groups, [want("sm86"), want("gfx90a")]);
        assert_eq!(n.first_of(1), "t-gfx90a");
        let e = Names::of(&index([Some("t"), None]), &labels).unwrap_err();
        assert!(e.contains("manifests[1] has no"), "{e}");
        // A name the input gives something other than an earlier output.
        let e = Names::of(&index_with([Some("t"), Some("u")], "t-sm86"), &labels).unwrap_err();
        assert!(e.contains("'t-sm86' would be named twice"), "{e}");
    }

    #[test]
    fn labels_are_told_from_words_and_cpus() {
        for l in [
            "sm86",
            "gfx90a.gfx942",
            "gfx90a_xnackp",
            "sm90a",
            "sm86_cubin",
            "__ptx",
        ] {
            assert!(label_shaped(l), "{l}");
        }
        for l in [
            "dev", "latest", "v1", "arm64", "x86_64", "null", "", "sm86.", "Sm86",
        ] {
            assert!(!label_shaped(l), "{l}");
        }
        let other = |b: &str| b == "t";
        assert!(is_copy_name("t-gfx1030.gfx908", other));
        assert!(!is_copy_name("u-sm86", other));
        assert!(!is_copy_name("t-dev", other));
    }

    #[test]
    fn an_earlier_output_is_carried_not_suffixed_again() {
        let labels = ["sm86".to_string(), "gfx90a".to_string()];
        // t-sm86 is the output of a split of t: split for no group.
        let n = Names::of(&index([Some("t"), Some("t-sm86")]), &labels).unwrap();
        assert_eq!(n.carried, [(1, "t-sm86".to_string())]);
        assert_eq!(
            n.groups,
            [
                vec![(0, "t-sm86".to_string())],
                vec![(0, "t-gfx90a".to_string())]
            ]
        );
        // The one unnamed image's output is named by its label alone.
        let n = Names::of(&index([None, Some("sm86")]), &labels[..1]).unwrap();
        assert_eq!(n.carried, [(1, "sm86".to_string())]);
        assert_eq!(n.groups, [vec![(0, "sm86".to_string())]]);
        // Not an output of a group this split has: two unnamed-ish images.
        let e = Names::of(&index([None, Some("sm86")]), &labels[1..]).unwrap_err();
        assert!(e.contains("manifests[0] has no"), "{e}");
    }

    #[test]
    fn a_copy_named_as_an_earlier_output_is_it_or_refused() {
        let labels = ["sm86".to_string(), "gfx90a".to_string()];
        let input = index([Some("t"), Some("t-sm86")]);
        let n = Names::of(&input, &labels).unwrap();
        // The sm86 copy of t is the same descriptor as t-sm86: not added.
        let out = index_json(&input.bytes, &[vec![], vec![(0, "ab".into(), 5)]], &n).unwrap();
        let doc: Value = serde_json::from_slice(&out).unwrap();
        let named: Vec<&str> = (doc["manifests"].as_array().unwrap().iter())
            .map(|d| d["annotations"][REF_NAME].as_str().unwrap())
            .collect();
        assert_eq!(named, ["t", "t-sm86", "sig", "t-gfx90a"]);
        assert_eq!(doc["manifests"][3]["digest"], "sha256:ab");
        // Only the sm86 group: the same bytes as the input's, parsed.
        let n = Names::of(&input, &labels[..1]).unwrap();
        let out = index_json(&input.bytes, &[vec![]], &n).unwrap();
        let parsed: Value = serde_json::from_slice(&input.bytes).unwrap();
        assert_eq!(out, serde_json::to_vec(&parsed).unwrap());
        // The copy of t is other than t-sm86: refused.
        let e = index_json(&input.bytes, &[vec![(0, "cd".into(), 5)]], &n).unwrap_err();
        assert!(e.contains("'t-sm86' would be named twice"), "{e}");
    }
}

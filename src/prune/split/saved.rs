//! Splitting one `docker save` archive into one image per group of GPUs,
//! in one read of its layers ([`crate::prune::oci::docker::groups`]: each
//! layer is read once and decided for every group by prune's own decider
//! of a layer's entries), so that each group's config, layers and (where
//! Docker 25 and later saved an OCI layout beside `manifest.json`) OCI
//! manifest are the blobs `prune --keep GROUP -o` writes.
//!
//! The output is one new archive in the output directory, named as the
//! input is: it holds the input's images under their own RepoTags, then
//! each group's copy of each, tagged `REPO:TAG-LABEL` (the group's label
//! after each tag: `t:latest-sm86`), in `manifest.json` and in the OCI
//! index alike. A layer no group changes is stored once. `docker load`
//! and `skopeo copy docker-archive:FILE:REPO:TAG-LABEL …` take one.

use std::path::Path;

use super::coverage::{coverage, kept_of};
use super::deb::unserved;
use super::oci::{check, prelude};
use super::report::{SplitOptions, SplitOutput, SplitReport, named_once};
use super::targets::Held;
use super::variant::NULL;
use crate::files::Input;
use crate::prune::oci::docker::groups::{Archive, tagged};
use crate::prune::path::{PathError, PathErrorKind};
use crate::prune::{Rules, Selection};
use crate::scan::rule::Rule;

/// Splits the `docker save` archive `input` as `o` says, writing the new
/// archive into `o.dir` whole or not at all.
pub(super) fn split(input: &Path, o: &SplitOptions) -> Result<SplitReport, PathError> {
    let name = crate::files::shown(input).into_owned();
    let refuse = |why: String| PathError::said(PathErrorKind::Refused, input, &name, why);
    let meta = std::fs::metadata(input).map_err(|e| PathError::open(input, e))?;
    let file = Input::open(input).map_err(|e| PathError::open(input, e))?;
    let archive = Archive::of(input, &file, &meta).ok_or_else(|| {
        let why = "manifest.json: it lists no images this reads (each a 'Config' and \
                   'Layers')";
        PathError::said(PathErrorKind::Content, input, &name, why.to_string())
    })?;
    let per_gpu = || per_gpu(&archive, o);
    let p = prelude(input, o, "archive as a new file", per_gpu, &refuse)?;
    let tags = archive.tags();
    let carried = archive.carried();
    let names = names(&tags, &p.labels, &carried).map_err(&refuse)?;
    let refs: Vec<&Selection> = p.sels.iter().collect();
    let mut g = archive.read_groups(&refs, &p.opts, true, &carried)?;
    let first = g.reps.first();
    let held = Held::of_report(first, &g.companions);
    unserved(&p.groups, &held).map_err(&refuse)?;
    std::mem::take(&mut g.left)
        .into_iter()
        .try_for_each(|r| r)?;
    let c = coverage(&held, &p.labels, &kept_of(&g.reps), &g.companions, &p.sels);
    let shown = crate::files::shown(&p.dest).into_owned();
    let line = |tags: &[String]| tags.iter().map(|t| format!("RepoTags: {t}")).collect();
    let mut outputs = Vec::new();
    for (((label, group), rep), names) in p.labels.iter().zip(&p.groups).zip(&g.reps).zip(&names) {
        let flat: Vec<String> = names.iter().flatten().cloned().collect();
        outputs.push(SplitOutput {
            label: label.clone(),
            gpus: group.iter().map(Rule::to_string).collect(),
            path: format!("{shown}:{}", flat.first().map_or("", |n| n)),
            properties: line(&flat),
            index: None,
            kept: rep.kept.clone(),
        });
    }
    let first = g.reps.first();
    let whole = first.map(|r| r.kept.iter().chain(&r.dropped).cloned().collect());
    let flat: Vec<String> = tags.iter().flatten().cloned().collect();
    outputs.push(SplitOutput {
        label: NULL.to_string(),
        gpus: Vec::new(),
        path: format!("{shown}:{}", flat.first().map_or("", |n| n)),
        properties: line(&flat),
        index: None,
        kept: crate::prune::path::merge(whole.unwrap_or_default()),
    });
    let members_refused = named_once(Vec::new(), g.reps.iter().flat_map(|r| &r.members_refused));
    let (Some(dir), Some(file_name)) = (p.dest.parent(), p.dest.file_name()) else {
        return Err(refuse("the output has no name".into()));
    };
    std::fs::create_dir_all(dir).map_err(|e| PathError::write(dir, e))?;
    g.commit(&p.labels, &names, dir, file_name)?;
    Ok(SplitReport::of(
        name.clone(),
        "docker",
        outputs,
        c,
        members_refused,
    ))
}

/// The device targets the archive holds code or per-GPU files for, as
/// prune's decider finds them in a read that keeps everything and writes
/// nothing: what `--per-gpu` makes one group of each.
fn per_gpu(archive: &Archive<'_>, o: &SplitOptions) -> Result<Vec<String>, PathError> {
    let all = Selection {
        rules: Rules::Drop(Vec::new()),
        ptx: o.ptx,
    };
    let opts = o.path_options();
    let g = archive.read_groups(&[&all], &opts, false, &archive.carried())?;
    let images = g.reps.iter().flat_map(|r| r.kept.iter().chain(&r.dropped));
    let gpus = g.companions.iter().map(|(_, g)| g.clone());
    Ok(Held::of(images, gpus).targets())
}

/// For each group (labelled as `labels` say), each image's new RepoTags
/// (`tags`, each image's own, with `-LABEL` after each tag; none for a
/// split's earlier output, `carried`); refused where an image has no tag,
/// a new tag is one the archive (but for an earlier output, which the
/// commit checks) or another group already has, or no tag a registry
/// takes.
fn names(
    tags: &[Vec<String>],
    labels: &[String],
    carried: &[usize],
) -> Result<Vec<Vec<Vec<String>>>, String> {
    let mut whole: Vec<String> = (tags.iter().enumerate())
        .filter(|(i, _)| !carried.contains(i))
        .flat_map(|(_, t)| t.iter().cloned())
        .collect();
    let mut out = Vec::new();
    for label in labels {
        let mut group = Vec::new();
        for (i, image) in tags.iter().enumerate() {
            if carried.contains(&i) {
                group.push(Vec::new());
                continue;
            }
            if image.is_empty() {
                return Err(format!(
                    "manifest.json: [{i}] has no 'RepoTags' to name its image for each group \
                     after (docker save it by name, not by ID)"
                ));
            }
            let mut new = Vec::new();
            for t in image {
                let n = tagged(t, label);
                if whole.contains(&n) {
                    return Err(format!(
                        "its image '{n}' would be named twice: the input already names one \
                         so, or two groups' images would be"
                    ));
                }
                // The tag alone is checked as a registry takes it.
                check(&tag_of(&n), &[]).map_err(|e| e.replace(&tag_of(&n), &n))?;
                whole.push(n.clone());
                new.push(n);
            }
            group.push(new);
        }
        out.push(group);
    }
    Ok(out)
}

/// The tag of `reference` (`REPO:TAG`).
fn tag_of(reference: &str) -> String {
    let slash = reference.rfind('/').map_or(0, |i| i + 1);
    let last = &reference[slash..];
    last.rsplit_once(':').map_or(last, |(_, t)| t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_image_is_tagged_per_group_and_an_untagged_one_refused() {
        let labels = ["sm86".to_string(), "gfx90a".to_string()];
        let tags = vec![
            vec!["t:latest".to_string(), "t:1".to_string()],
            vec!["r:5000/u:v".to_string()],
        ];
        let n = names(&tags, &labels, &[]).unwrap();
        assert_eq!(
            n[0],
            [vec!["t:latest-sm86", "t:1-sm86"], vec!["r:5000/u:v-sm86"]]
        );
        assert_eq!(n[1][1], ["r:5000/u:v-gfx90a"]);
        let e = names(&[vec![]], &labels, &[]).unwrap_err();
        assert!(e.contains("[0] has no 'RepoTags'"), "{e}");
        let twice = vec![vec!["t:a".to_string(), "t:a-sm86".to_string()]];
        let e = names(&twice, &labels, &[]).unwrap_err();
        assert!(e.contains("'t:a-sm86' would be named twice"), "{e}");
        let long = vec![vec![format!("t:{}", "a".repeat(125))]];
        assert!(names(&long, &labels, &[]).unwrap_err().contains("no tag"));
    }

    #[test]
    fn an_earlier_output_gets_no_copy_and_its_tags_are_left_to_the_commit() {
        let labels = ["sm86".to_string(), "gfx90a".to_string()];
        let tags = vec![vec!["t:a".to_string()], vec!["t:a-sm86".to_string()]];
        let n = names(&tags, &labels, &[1]).unwrap();
        assert_eq!(n[0], [vec!["t:a-sm86".to_string()], vec![]]);
        assert_eq!(n[1], [vec!["t:a-gfx90a".to_string()], vec![]]);
        // Not carried, the same tag is refused here.
        let e = names(&tags, &labels, &[]).unwrap_err();
        assert!(e.contains("'t:a-sm86' would be named twice"), "{e}");
    }
}

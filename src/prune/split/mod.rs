//! Splitting one package into one package per group of GPUs (`offload-kit
//! split`, issue #74): a `.deb` ([`deb`]), a conda package ([`conda`]), a
//! directory or another file ([`tree`]), and here a wheel, in one read: each member is read once and decided
//! for every group by prune's own decider of a wheel ([`decide`]), so
//! that each group's output holds exactly what `prune --keep GROUP -o`
//! writes; one more output, the null variant, holds what the input held.
//! Each output gains the metadata an installer picks it by
//! ([`variant`]: a PEP 825 variant label in its name and a
//! `*.dist-info/variant.json` listed in its RECORD), and beside them go
//! the `{name}-{version}-variants.json` and a PEP 503 index directory per
//! group for pip ([`write`]). The report says, for every device target
//! the wheel serves ([`targets`]), which outputs serve it.
//!
//! It lives under `prune` because it is prune's decisions, made several
//! times in one read: it reuses prune's wheel decider, reports and errors
//! without widening what `prune` shows the rest of the crate.

mod conda;
mod conda_index;
mod coverage;
mod deb;
mod deb_control;
mod oci;
mod report;
mod saved;
mod targets;
mod tree;
mod tree_copy;
mod variant;
mod write;

use std::path::Path;

use super::budget::Budget;
use super::fan::Fan;
use super::path::{PathError, PathErrorKind, PathReport};
use super::wheel::{Members, not_signed};
use super::{ImageGroup, Rules, Selection};
use crate::files::Input;
use crate::package::zipfile::{self, Archive};
use crate::scan::rule::Rule;
use coverage::{coverage, kept_of};
use report::named_once;
pub(crate) use report::{Gpus, SplitOptions, SplitOutput, SplitReport};
use targets::Held;
use variant::{NULL, Properties, WheelName};

/// Splits the wheel, `.deb`, conda package, OCI image layout, `docker save`
/// archive, directory or other file `input` as `o` says, writing every output into `o.dir` or
/// none of them.
pub(crate) fn split_path(input: &Path, o: &SplitOptions) -> Result<SplitReport, PathError> {
    // What a split killed outright (SIGKILL) left in the output directory.
    crate::files::TempTree::reap_in(&o.dir);
    // Only a directory or a regular file is opened: a FIFO would wait for
    // a writer, a device would be read without end.
    let meta = std::fs::metadata(input).map_err(|e| PathError::open(input, e))?;
    if !meta.is_dir() && !meta.is_file() {
        let name = crate::files::shown(input);
        let why = "it is neither a regular file nor a directory".to_string();
        return Err(PathError::said(PathErrorKind::Refused, input, &name, why));
    }
    if deb::is_deb(input) {
        return deb::split(input, o);
    }
    if conda::is_conda(input) {
        return conda::split(input, o);
    }
    if oci::is_oci(input) {
        return oci::split(input, o);
    }
    if oci::is_saved(input) {
        return saved::split(input, o);
    }
    let name = crate::files::shown(input).into_owned();
    let wheel = input.extension().is_some_and(|e| e == "whl");
    if !wheel && tree::is_tree(input) {
        return tree::split(input, o);
    }
    split_wheel(input, o, &name)
}

/// Splits the wheel `input` (shown as `name`) as `o` says.
fn split_wheel(input: &Path, o: &SplitOptions, name: &str) -> Result<SplitReport, PathError> {
    let refuse = |why: String| PathError::said(PathErrorKind::Refused, input, name, why);
    let file_name = input.file_name().map(|n| n.to_string_lossy().into_owned());
    let wheel = WheelName::parse(file_name.as_deref().unwrap_or_default()).map_err(refuse)?;
    let meta = std::fs::metadata(input).map_err(|e| PathError::open(input, e))?;
    let file = Input::open(input).map_err(|e| PathError::open(input, e))?;
    let data = file.bytes();
    let mut archive = Archive::open(data).map_err(|e| PathError::zip_file(input, e))?;
    not_signed(&archive, input, name)?;
    let groups = o.groups(
        || per_gpu(&mut archive, input, name, &meta, data, o),
        refuse,
    )?;
    let labels = variant::labels(&groups).map_err(refuse)?;
    let sels = o.selections(&groups);
    let opts = o.path_options();
    let each = sels
        .iter()
        .map(|s| Members::new(s, &opts, input, name, PathReport::new(name, data, &meta)))
        .collect();
    let mut d = Fan::and_kept_whole(each);
    let mut budget = Budget::new(data.len() as u64, o.max_uncompressed);
    let plan = zipfile::rewrite(&mut archive, &mut budget, &mut d)
        .map_err(|e| PathError::failed(input, e))?;
    let first = d.each.first().map(Members::report);
    let held = Held::of_report(first, &d.companions);
    deb::unserved(&groups, &held).map_err(refuse)?;
    let companions = std::mem::take(&mut d.companions);
    let everything: Vec<ImageGroup> = first
        .map(|r| r.kept.iter().chain(&r.dropped).cloned().collect())
        .unwrap_or_default();
    let reps: Vec<PathReport> = d
        .each
        .into_iter()
        .map(Members::finish)
        .collect::<Result<_, _>>()?;
    // A variant wheel (an output, split again) holds its own GPUs' code
    // only: no null variant of it could serve every GPU. (The null
    // variant itself holds the input's.)
    let null = wheel.label.as_deref().is_none_or(|l| l == NULL);
    let mut outputs = outputs_of(&labels, &groups, &reps, everything, null);
    let c = coverage(&held, &labels, &kept_of(&reps), &companions, &sels);
    let variants_json = write::write_all(&mut archive, &plan, &wheel, &mut outputs, o, input)?;
    let members_refused = named_once(Vec::new(), reps.iter().flat_map(|r| &r.members_refused));
    Ok(SplitReport {
        variants_json: Some(variants_json),
        ..SplitReport::of(
            name.to_string(),
            "wheel",
            outputs.into_iter().map(|(o, _)| o).collect(),
            c,
            members_refused,
        )
    })
}

/// The outputs of the groups (`labels`, `groups`, and the reports of
/// their prunes), then, if `null`, the null variant holding `everything`,
/// each with its properties; not yet written.
fn outputs_of(
    labels: &[String],
    groups: &[Vec<Rule>],
    reps: &[PathReport],
    everything: Vec<ImageGroup>,
    null: bool,
) -> Vec<(SplitOutput, Properties)> {
    let mut outputs: Vec<(SplitOutput, Properties)> = Vec::new();
    for ((label, g), rep) in labels.iter().zip(groups).zip(reps) {
        let mut props = Properties::default();
        rep.kept.iter().for_each(|k| props.add(&k.target, &k.kind));
        let out = SplitOutput {
            label: label.clone(),
            gpus: g.iter().map(Rule::to_string).collect(),
            path: String::new(),
            properties: props.lines(),
            index: None,
            kept: rep.kept.clone(),
        };
        outputs.push((out, props));
    }
    if !null {
        return outputs;
    }
    let whole = super::path::merge(
        everything
            .into_iter()
            .map(|g| ImageGroup { why: None, ..g })
            .collect(),
    );
    let null = SplitOutput {
        label: NULL.to_string(),
        gpus: Vec::new(),
        path: String::new(),
        properties: Vec::new(),
        index: None,
        kept: whole,
    };
    outputs.push((null, Properties::default()));
    outputs
}

/// The device targets the wheel `archive` (`input`, named `name`, whose
/// bytes are `data`) serves, as prune's decider of a wheel finds them in
/// a read that keeps everything (its images, and the names of its
/// per-GPU files): what `--per-gpu` makes one group of each. (A read
/// before the split's own.)
fn per_gpu(
    archive: &mut Archive<'_>,
    input: &Path,
    name: &str,
    meta: &std::fs::Metadata,
    data: &[u8],
    o: &SplitOptions,
) -> Result<Vec<String>, PathError> {
    let all = Selection {
        rules: Rules::Drop(Vec::new()),
        ptx: o.ptx,
    };
    let opts = o.path_options();
    let rep = PathReport::new(name, data, meta);
    let mut d = Fan::and_kept_whole(vec![Members::new(&all, &opts, input, name, rep)]);
    let mut budget = Budget::new(data.len() as u64, o.max_uncompressed);
    zipfile::rewrite(archive, &mut budget, &mut d).map_err(|e| PathError::failed(input, e))?;
    let first = d.each.first().map(Members::report);
    Ok(Held::of_report(first, &d.companions).targets())
}

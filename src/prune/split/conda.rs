//! Splitting one conda package (`.conda` or `.tar.bz2`) into one build
//! per group of GPUs, in one read of its payload: each file is read once
//! and decided for every group by prune's own decider of a package
//! ([`crate::prune::fan`], asked as a conda package's files are), so that
//! each output's files and records are exactly what `prune --keep GROUP
//! -o` writes; each output's `info/index.json` then gains what makes the
//! solver pick it ([`super::conda_index`]: a build string of its own, the
//! run constraint of its vendor's virtual package, a build number that
//! ranks it).

use std::ffi::OsStr;
use std::path::Path;

use super::conda_index::{Constraint, Original, constraint};
use super::coverage::{coverage, kept_of};
use super::deb::{scratch_file, unserved};
use super::report::{SplitOptions, SplitOutput, SplitReport};
use super::targets::Held;
use super::variant;
use crate::files::{Input, Output, TempTree};
use crate::package::conda::{self, Container, Package, Target};
use crate::prune::conda::{AsConda, Errors};
use crate::prune::deb::Files;
use crate::prune::fan::Fan;
use crate::prune::job::Job;
use crate::prune::path::{PathError, PathErrorKind, PathReport};
use crate::prune::{Rules, Selection};
use crate::scan::rule::Rule;

/// Whether `input` is named as a conda package is.
pub(super) fn is_conda(input: &Path) -> bool {
    let name = input.to_string_lossy();
    name.ends_with(".conda") || name.ends_with(".tar.bz2")
}

/// Splits the conda package `input` as `o` says, writing every output
/// into `o.dir` or none of them.
pub(super) fn split(input: &Path, o: &SplitOptions) -> Result<SplitReport, PathError> {
    let name = crate::files::shown(input).into_owned();
    let refuse = |why: String| PathError::said(PathErrorKind::Refused, input, &name, why);
    let (meta, file) = opened(input)?;
    let data = file.bytes();
    let opts = o.path_options();
    let threads = opts.prune.threads();
    let everything = Selection {
        rules: Rules::Drop(Vec::new()),
        ptx: o.ptx,
    };
    let whole = Job::new(&everything, &opts, input);
    let mut budget = whole.budget(data);
    let errors = Errors {
        job: &whole,
        dest: None,
        why: budget.why,
    };
    let (mut package, original) = open(input, data, budget.left, &errors)?;
    let groups = o.groups(|| per_gpu(&package, &file, &whole, &meta), refuse)?;
    let constraints: Vec<Constraint> = groups
        .iter()
        .map(|g| constraint(g))
        .collect::<Result<_, _>>()
        .map_err(&refuse)?;
    let labels = labels(&groups).map_err(&refuse)?;
    let sels = o.selections(&groups);
    let jobs: Vec<Job<'_>> = sels.iter().map(|s| Job::new(s, &opts, input)).collect();
    let each = jobs
        .iter()
        .map(|j| Files::new(j, PathReport::new(&name, data, &meta)))
        .collect();
    let mut d = AsConda(Fan::new(each));
    let scratch = (0..sels.len())
        .map(|_| scratch_file(&o.dir).map(Some))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| PathError::io(PathErrorKind::Io, input, e))?;
    let plan =
        file.releasing(|| conda::rewrite(&package, &mut budget.left, &mut d, scratch, threads));
    let mut plan = plan.map_err(|e| errors.failed(e))?;
    let mut d = d.0;
    let companions = std::mem::take(&mut d.companions);
    let first = d.each.first().map(Files::report);
    let held = Held::of_report(first, &companions);
    unserved(&groups, &held).map_err(&refuse)?;
    let reps: Vec<PathReport> = d
        .each
        .into_iter()
        .map(Files::finish)
        .collect::<Result<_, _>>()?;
    let c = coverage(&held, &labels, &kept_of(&reps), &companions, &sels);
    let numbers = original.numbers(&labels, &constraints);
    let mut writes = Vec::new();
    for k in 0..groups.len() {
        let build = original.build_of(&labels[k]);
        let records = plan.records(&package, k).map_err(|e| errors.map(e))?;
        let index = original.edited(&build, numbers[k], &constraints[k]);
        writes.push((original.file_name(&build, ext(&package)), records, index));
    }
    let outputs = outputs_of(
        &labels,
        &groups,
        &reps,
        (&constraints, &numbers),
        (&original, &writes, &o.dir),
    );
    let w = Writer {
        errors: &errors,
        threads,
    };
    w.all(&mut plan, &mut package, &writes, &o.dir)?;
    Ok(SplitReport::of(
        name.clone(),
        "conda",
        outputs,
        c,
        refused(&reps),
    ))
}

/// The conda package `input` (its bytes `data`), its info archive read
/// within `limit` bytes, and its `index.json`; refused by name when it is
/// none, or its `index.json` is not what conda writes.
fn open<'a>(
    input: &Path,
    data: &'a [u8],
    limit: u64,
    errors: &Errors<'_>,
) -> Result<(Package<'a>, Original), PathError> {
    let name = &errors.job.name;
    let refuse = |why: String| PathError::said(PathErrorKind::Refused, input, name, why);
    let opened = match input.to_string_lossy().ends_with(".conda") {
        true => Package::conda(data, limit).map(Some),
        false => Package::tar_bz2(data, limit),
    };
    let package = opened
        .map_err(|e| errors.map(e))?
        .ok_or_else(|| refuse("it is no conda package: it has no info/index.json".into()))?;
    let text =
        package.info.index_json.as_deref().ok_or_else(|| {
            refuse("its info/index.json is no regular file of at most 1 MiB".into())
        })?;
    let original = Original::read(text).map_err(&refuse)?;
    Ok((package, original))
}

/// The metadata of `input`, and `input` mapped.
fn opened(input: &Path) -> Result<(std::fs::Metadata, Input), PathError> {
    let meta = std::fs::metadata(input).map_err(|e| PathError::open(input, e))?;
    let file = Input::open(input).map_err(|e| PathError::open(input, e))?;
    Ok((meta, file))
}

/// One output to write: its file name, records and `index.json`.
type Write = (String, conda::Records, Vec<u8>);

/// The refusals of the groups' prunes (`reps`), each once.
fn refused(reps: &[PathReport]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in reps.iter().flat_map(|r| &r.members_refused) {
        if !out.contains(r) {
            out.push(r.clone());
        }
    }
    out
}

/// The file name extension of the package `p`'s container.
fn ext(p: &Package<'_>) -> &'static str {
    match p.container {
        Container::Conda { .. } => ".conda",
        Container::TarBz2 { .. } => ".tar.bz2",
    }
}

/// The outputs of the groups (`labels`, `groups`, the reports of their
/// prunes, their constraints and build numbers), each with the metadata
/// it gained and the file `writes` names for it in `dir`.
fn outputs_of(
    labels: &[String],
    groups: &[Vec<Rule>],
    reps: &[PathReport],
    (constraints, numbers): (&[Constraint], &[u64]),
    (original, writes, dir): (&Original, &[Write], &Path),
) -> Vec<SplitOutput> {
    let mut outputs = Vec::new();
    for (k, ((label, g), rep)) in labels.iter().zip(groups).zip(reps).enumerate() {
        let mut properties = vec![
            format!("build: {}", original.build_of(label)),
            format!("build_number: {}", numbers[k]),
        ];
        properties.extend(
            constraints[k]
                .depends
                .iter()
                .map(|s| format!("depends: {s}")),
        );
        outputs.push(SplitOutput {
            label: label.clone(),
            gpus: g.iter().map(Rule::to_string).collect(),
            path: crate::files::shown(&dir.join(&writes[k].0)).into_owned(),
            properties,
            index: None,
            kept: rep.kept.clone(),
        });
    }
    outputs
}

/// The label of each group (its rules' variant tokens joined by `_`, as a
/// build string takes them), each distinct.
pub(super) fn labels(groups: &[Vec<Rule>]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for g in groups {
        let tokens: Vec<String> = g.iter().map(|r| variant::token(&r.to_string())).collect();
        let label = tokens.join("_");
        if out.contains(&label) {
            return Err(format!(
                "two groups are both labelled '{label}': name each once"
            ));
        }
        out.push(label);
    }
    Ok(out)
}

/// The device targets the package holds code or per-GPU files for, as
/// prune's decider finds them in a read that keeps everything (`whole`'s)
/// and writes nothing: what `--per-gpu` makes one group of each.
fn per_gpu(
    package: &Package<'_>,
    file: &Input,
    whole: &Job<'_>,
    meta: &std::fs::Metadata,
) -> Result<Vec<String>, PathError> {
    let rep = PathReport::new(&whole.name, file.bytes(), meta);
    let mut d = AsConda(Fan::new(vec![Files::new(whole, rep)]));
    let mut budget = whole.budget(file.bytes());
    let errors = Errors {
        job: whole,
        dest: None,
        why: budget.why,
    };
    let threads = whole.opts.prune.threads();
    file.releasing(|| conda::rewrite(package, &mut budget.left, &mut d, vec![None], threads))
        .map_err(|e| errors.failed(e))?;
    let AsConda(mut d) = d;
    let gpus: Vec<_> = d.companions.iter().map(|(_, g)| g.clone()).collect();
    let rep = d.each.pop().map(Files::finish).transpose()?;
    let images = rep.iter().flat_map(|r| r.kept.iter().chain(&r.dropped));
    Ok(Held::of(images, gpus.into_iter()).targets())
}

/// What writes a split package's outputs.
struct Writer<'a> {
    errors: &'a Errors<'a>,
    threads: u32,
}

impl Writer<'_> {
    /// Writes output `k` of `plan` for each of `writes` (its file name,
    /// records and `index.json`), first into a temporary directory inside
    /// `dir`, then each to its name in one step. An error before the
    /// moves leaves `dir` as it was.
    fn all(
        &self,
        plan: &mut conda::Plan,
        package: &mut Package<'_>,
        writes: &[Write],
        dir: &Path,
    ) -> Result<(), PathError> {
        std::fs::create_dir_all(dir).map_err(|e| PathError::write(dir, e))?;
        let stage = TempTree::new_in(dir).map_err(|e| PathError::write(dir, e))?;
        let at = stage.path();
        for (k, (file_name, records, index)) in writes.iter().enumerate() {
            let path = at.join(file_name);
            let mut w = Output::create_in(at, OsStr::new(file_name))
                .map_err(|e| PathError::write(&path, e))?;
            let errors = Errors {
                dest: Some(&path),
                ..*self.errors
            };
            let stem = file_name.strip_suffix(".conda");
            let target = match package.container {
                Container::Conda { .. } => {
                    Target::File(w.temp_file().ok_or_else(|| PathError::write(&path, None))?)
                }
                Container::TarBz2 { .. } => Target::Stream(&mut w),
            };
            plan.write(
                package,
                k,
                (records, Some(index), stem),
                target,
                self.threads,
            )
            .map_err(|e| errors.map(e))?;
            w.commit().map_err(|e| PathError::write(&path, e))?;
        }
        // Every package is whole: each now takes its name.
        for (m, _, _) in writes {
            let to = dir.join(m);
            std::fs::rename(at.join(m), &to).map_err(|e| PathError::write(&to, e))?;
        }
        drop(stage);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn conda_packages_are_told_by_their_names() {
        assert!(super::is_conda(std::path::Path::new("k-1.0-h0_0.conda")));
        assert!(super::is_conda(std::path::Path::new("k-1.0-h0_0.tar.bz2")));
        assert!(!super::is_conda(std::path::Path::new(
            "k-1.0-py3-none-any.whl"
        )));
    }
}

//! Splitting one Debian package into one binary package per group of
//! GPUs, in one read of its data archive: each file is read once and
//! decided for every group by prune's own decider of a package
//! ([`crate::prune::fan`]), so that each output's files are exactly what
//! `prune --keep GROUP -o` writes; each output's control archive then
//! gains the fields that make it stand in for the original
//! ([`super::deb_control`]), with `md5sums` and `Installed-Size` true.

use std::ffi::OsStr;
use std::io::Read as _;
use std::path::Path;

use super::coverage::{coverage, kept_of};
use super::deb_control::{self, Original};
use super::report::{SplitOptions, SplitOutput, SplitReport, named_once};
use super::targets::Held;
use super::variant;
use crate::files::{Input, Output, TempTree};
use crate::package::deb::{self, Failed, Package, Plan};
use crate::package::tar::walk::Walk;
use crate::prune::budget::Budget;
use crate::prune::deb::{Errors, Files, Written};
use crate::prune::fan::Fan;
use crate::prune::job::Job;
use crate::prune::path::{PathError, PathErrorKind, PathOptions, PathReport};
use crate::prune::{Rules, Selection};
use crate::scan::rule::Rule;

/// Whether the file `input` is a Debian package (by its first bytes; one
/// that cannot be read is left to the split that reads it).
pub(super) fn is_deb(input: &Path) -> bool {
    let mut head = Vec::new();
    let read = std::fs::File::open(input).and_then(|f| f.take(32).read_to_end(&mut head));
    read.is_ok() && crate::package::detect(&head) == Some(crate::package::Kind::Deb)
}

/// The most bytes of a `control` file read.
const CONTROL_MAX: u64 = 1 << 20;

/// Splits the Debian package `input` as `o` says, writing every output
/// into `o.dir` or none of them.
pub(super) fn split(input: &Path, o: &SplitOptions) -> Result<SplitReport, PathError> {
    let name = crate::files::shown(input).into_owned();
    let refuse = |why: String| PathError::said(PathErrorKind::Refused, input, &name, why);
    let meta = std::fs::metadata(input).map_err(|e| PathError::open(input, e))?;
    let file = Input::open(input).map_err(|e| PathError::open(input, e))?;
    let data = file.bytes();
    let mut budget = Budget::new(data.len() as u64, o.max_uncompressed);
    let errors = Errors {
        input,
        name: &name,
        dest: None,
        why: budget.why,
    };
    let package = Package::open(data, budget.left).map_err(|e| errors.map(e))?;
    if let Some(sig) = package.signature() {
        return Err(refuse(format!(
            "it is signed ('{sig}'), and a split package's signature would not verify: remove \
             the signature members from it first"
        )));
    }
    let text = control_text(&package, budget.left).map_err(|e| errors.map(e))?;
    let original = Original::read(&text).map_err(&refuse)?;
    let opts = o.path_options();
    let threads = opts.prune.threads();
    let groups = o.groups(|| per_gpu(&package, &file, &opts, o, input, &name), refuse)?;
    let labels = labels(&groups, &original).map_err(&refuse)?;
    let names: Vec<String> = labels.iter().map(|l| original.output(l)).collect();
    let sels = o.selections(&groups);
    let jobs: Vec<Job<'_>> = sels.iter().map(|s| Job::new(s, &opts, input)).collect();
    let each = jobs
        .iter()
        .map(|j| Files::new(j, PathReport::new(&name, data, &meta)))
        .collect();
    let mut d = Fan::new(each);
    let scratch = (0..sels.len())
        .map(|_| scratch_file(&o.dir).map(Some))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| PathError::io(PathErrorKind::Io, input, e))?;
    let plan =
        file.releasing(|| deb::rewrite(&package, &mut budget.left, &mut d, scratch, threads));
    let mut plan = plan.map_err(|e| match e {
        Failed::Package(e) => errors.map(e),
        Failed::Caller(e) => e,
    })?;
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
    let mut outputs = outputs_of(&labels, &groups, &reps, &names, &original);
    let written = Writer {
        file: &file,
        package: &package,
        original: &original,
        errors: &errors,
    };
    written.all(&mut plan, &mut budget.left, &names, &mut outputs, &o.dir)?;
    let members_refused = named_once(Vec::new(), reps.iter().flat_map(|r| &r.members_refused));
    Ok(SplitReport::of(
        name.clone(),
        "deb",
        outputs,
        c,
        members_refused,
    ))
}

/// Why a group of `groups` is not served by what the package holds
/// (`held`), if one is not.
pub(super) fn unserved(groups: &[Vec<Rule>], held: &Held) -> Result<(), String> {
    if groups.is_empty() {
        return Err("it holds no device target to split by".into());
    }
    for g in groups {
        if let Some(r) = g.iter().find(|r| !held.served(r)) {
            let group: Vec<String> = g.iter().map(Rule::to_string).collect();
            return Err(format!(
                "nothing in it serves '{r}' (--gpus {}): it holds code for {}",
                group.join(","),
                held.targets().join(", ")
            ));
        }
    }
    Ok(())
}

/// The outputs of the groups (`labels`, `groups`, the reports of their
/// prunes, the packages' `names`), with the control fields each gains;
/// not yet written.
fn outputs_of(
    labels: &[String],
    groups: &[Vec<Rule>],
    reps: &[PathReport],
    names: &[String],
    original: &Original,
) -> Vec<SplitOutput> {
    let mut outputs = Vec::new();
    for (((label, g), rep), out) in labels.iter().zip(groups).zip(reps).zip(names) {
        let fields = deb_control::added(original, out, names);
        outputs.push(SplitOutput {
            label: label.clone(),
            gpus: g.iter().map(Rule::to_string).collect(),
            path: original.file_name(out),
            properties: fields.iter().map(|(n, v)| format!("{n}: {v}")).collect(),
            index: None,
            kept: rep.kept.clone(),
        });
    }
    outputs
}

/// A scratch file for an output's data archive: in `dir` where it is
/// (a file there has no name, and the output is copied from it on the
/// same file system), else a temporary one.
pub(super) fn scratch_file(dir: &Path) -> std::io::Result<std::fs::File> {
    match dir.is_dir() {
        true => tempfile::tempfile_in(dir),
        false => tempfile::tempfile(),
    }
}

/// The text of the `control` file of `p`, read within `limit` bytes.
fn control_text(p: &Package<'_>, limit: u64) -> Result<Vec<u8>, deb::Error> {
    let none = || deb::Error::Refused("it has no control archive with a 'control' file".into());
    let at = p.control.ok_or_else(none)?;
    let member = p.name(at);
    let bytes = p.bytes(at);
    let c = match crate::package::is_tar_header(bytes) {
        true => crate::package::Compression::None,
        false => crate::package::compression_of(bytes).ok_or_else(none)?,
    };
    let fault = |f| deb::Error::fault(&member, f);
    let reader = crate::package::decoder(bytes, c).map_err(|e| deb::Error::Member {
        member: member.clone(),
        doing: "cannot be read",
        source: e.into(),
    })?;
    let mut walk = Walk::new(reader, std::io::sink(), limit);
    while let Some(h) = walk.next().map_err(fault)? {
        if !(h.is_file() && h.path == b"control") {
            walk.copy(&h).map_err(fault)?;
            continue;
        }
        if h.size > CONTROL_MAX {
            return Err(deb::Error::Refused(format!(
                "its member '{member}' holds a control file of {} bytes, more than the \
                 {CONTROL_MAX} read",
                h.size
            )));
        }
        let mut text = Vec::new();
        walk.body()
            .read_to_end(&mut text)
            .map_err(|e| fault(crate::package::tar::Fault::Read(e)))?;
        return Ok(text);
    }
    Err(none())
}

/// The device targets the package holds code or per-GPU files for, as
/// prune's decider finds them in a read that keeps everything and
/// writes nothing: what `--per-gpu` makes one group of each. (A read
/// before the split's own.)
fn per_gpu(
    package: &Package<'_>,
    file: &Input,
    opts: &PathOptions,
    o: &SplitOptions,
    input: &Path,
    name: &str,
) -> Result<Vec<String>, PathError> {
    let all = Selection {
        rules: Rules::Drop(Vec::new()),
        ptx: o.ptx,
    };
    let meta = std::fs::metadata(input).map_err(|e| PathError::open(input, e))?;
    let rep = PathReport::new(name, file.bytes(), &meta);
    let job = Job::new(&all, opts, input);
    let mut d = Fan::new(vec![Files::new(&job, rep)]);
    let mut budget = Budget::new(file.bytes().len() as u64, o.max_uncompressed);
    let errors = Errors {
        input,
        name,
        dest: None,
        why: budget.why,
    };
    let threads = opts.prune.threads();
    let plan =
        file.releasing(|| deb::rewrite(package, &mut budget.left, &mut d, vec![None], threads));
    plan.map_err(|e| match e {
        Failed::Package(e) => errors.map(e),
        Failed::Caller(e) => e,
    })?;
    let gpus: Vec<_> = d.companions.iter().map(|(_, g)| g.clone()).collect();
    let rep = d.each.pop().map(Files::finish).transpose()?;
    let images = rep.iter().flat_map(|r| r.kept.iter().chain(&r.dropped));
    Ok(Held::of(images, gpus.into_iter()).targets())
}

/// The label of each group, as a package name takes it (a wheel's
/// variant label, `_` as `-`), each distinct.
fn labels(groups: &[Vec<Rule>], original: &Original) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for g in groups {
        let tokens: Vec<String> = g.iter().map(|r| variant::token(&r.to_string())).collect();
        let label = tokens.join(".").replace('_', "-");
        let said: Vec<String> = g.iter().map(Rule::to_string).collect();
        if !deb_control::is_package_name(&original.output(&label)) {
            return Err(format!(
                "the group '{}' gives no package name dpkg takes ('{}')",
                said.join(","),
                original.output(&label)
            ));
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

/// What writes a split package's outputs.
struct Writer<'a> {
    /// The package read.
    file: &'a Input,
    package: &'a Package<'a>,
    original: &'a Original,
    errors: &'a Errors<'a>,
}

impl Writer<'_> {
    /// Writes output `k` of `plan` as the package `names[k]` for each of
    /// `outputs` (within `limit`), first into a temporary directory inside
    /// `dir`, then each to its name in one step; notes in each output
    /// where it went. An error before the moves leaves `dir` as it was.
    fn all(
        &self,
        plan: &mut Plan,
        limit: &mut u64,
        names: &[String],
        outputs: &mut [SplitOutput],
        dir: &Path,
    ) -> Result<(), PathError> {
        std::fs::create_dir_all(dir).map_err(|e| PathError::write(dir, e))?;
        let stage = TempTree::new_in(dir).map_err(|e| PathError::write(dir, e))?;
        let at = stage.path();
        let mut moves = Vec::new();
        for (k, (name, out)) in names.iter().zip(outputs.iter_mut()).enumerate() {
            let fields = deb_control::added(self.original, name, names);
            let edit = |text: &[u8]| deb_control::edit(&self.original.undone(text), &fields);
            let file_name = self.original.file_name(name);
            let path = at.join(&file_name);
            let mut w = Output::create_in(at, OsStr::new(&file_name))
                .map_err(|e| PathError::write(&path, e))?;
            let mut sink = Written {
                file: self.file,
                out: &mut w,
            };
            let errors = Errors {
                dest: Some(&path),
                ..*self.errors
            };
            plan.write_edited(self.package, k, limit, Some(&edit), &mut sink)
                .map_err(|e| errors.map(e))?;
            w.commit().map_err(|e| PathError::write(&path, e))?;
            out.path = crate::files::shown(&dir.join(&file_name)).into_owned();
            moves.push(file_name);
        }
        // Every package is whole: each now takes its name.
        for m in &moves {
            let to = dir.join(m);
            std::fs::rename(at.join(m), &to).map_err(|e| PathError::write(&to, e))?;
        }
        drop(stage);
        Ok(())
    }
}

//! The words of a split: what it is asked ([`SplitOptions`]) and what it
//! reports ([`SplitReport`], the command line's JSON).

use std::path::PathBuf;

use serde::Serialize;

use crate::prune::path::PathOptions;
use crate::prune::{ImageGroup, Ptx, Rules, Selection};
use crate::scan::rule::Rule;

/// Which groups a split makes.
#[derive(Debug, Clone)]
pub(crate) enum Gpus {
    /// These groups, each one output.
    Given(Vec<Vec<Rule>>),
    /// One group per device target the input serves.
    PerGpu,
}

/// How a split is made.
#[derive(Debug, Clone)]
pub(crate) struct SplitOptions {
    /// The groups.
    pub(crate) gpus: Gpus,
    /// Which PTX each group keeps (as `prune --ptx`).
    pub(crate) ptx: Ptx,
    /// The directory the outputs go to.
    pub(crate) dir: PathBuf,
    /// Bytes a read may inflate (`--max-uncompressed`).
    pub(crate) max_uncompressed: Option<u64>,
    /// Threads that compress and write outputs (`--threads`; 0: every
    /// CPU).
    pub(crate) threads: u32,
}

impl SplitOptions {
    /// The groups: those given, or (`--per-gpu`) one per device target
    /// `targets` finds (read only then); a target that is no rule, or
    /// none, is refused (`refuse`).
    pub(crate) fn groups<E>(
        &self,
        targets: impl FnOnce() -> Result<Vec<String>, E>,
        refuse: impl Fn(String) -> E,
    ) -> Result<Vec<Vec<Rule>>, E> {
        let groups: Vec<Vec<Rule>> = match &self.gpus {
            Gpus::Given(g) => g.clone(),
            Gpus::PerGpu => targets()?
                .iter()
                .map(|t| Rule::parse(t).map(|r| vec![r]))
                .collect::<Result<_, _>>()
                .map_err(|e| refuse(e.to_string()))?,
        };
        if groups.is_empty() {
            return Err(refuse("it holds no device target to split by".into()));
        }
        Ok(groups)
    }

    /// What prune keeps for each of `groups`.
    pub(crate) fn selections(&self, groups: &[Vec<Rule>]) -> Vec<Selection> {
        groups
            .iter()
            .map(|g| Selection {
                rules: Rules::Keep(g.clone()),
                ptx: self.ptx,
            })
            .collect()
    }

    /// The options of each group's prune: its defaults, with the split's
    /// `--max-uncompressed` and `--threads`.
    pub(crate) fn path_options(&self) -> PathOptions {
        let mut opts = PathOptions::default();
        opts.prune.max_uncompressed = self.max_uncompressed;
        opts.prune.threads = self.threads;
        opts
    }
}

/// One output of a split.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SplitOutput {
    /// Its label: a wheel's variant label (`null` for the one that holds
    /// what the input held), what a package's name ends in.
    pub(crate) label: String,
    /// Its group's rules (none for `null`).
    pub(crate) gpus: Vec<String>,
    /// The wheel or package written.
    pub(crate) path: String,
    /// A wheel's properties, `namespace :: feature :: value`; the control
    /// fields a package gained, `Name: value`.
    pub(crate) properties: Vec<String>,
    /// The PEP 503 index directory pip installs it from (`--index-url`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) index: Option<String>,
    /// Its device images, by target and kind.
    pub(crate) kept: Vec<ImageGroup>,
}

/// Which outputs serve one thing of the input (a device target, an image
/// group, a per-GPU file); none but `null` when `outputs` is empty.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Served {
    /// The device target, the image group's target and kind
    /// (`sm_86 cubin`), or the file's name.
    pub(crate) what: String,
    /// The labels of the outputs of groups that serve it.
    pub(crate) outputs: Vec<String>,
}

/// What a split serves ([`super::coverage`]): for each device target
/// the input serves, each image group of the input and each per-GPU
/// file, the labels of the groups that hold it.
pub(super) struct Coverage {
    pub(super) targets: Vec<Served>,
    pub(super) images: Vec<Served>,
    pub(super) files: Vec<Served>,
}

/// What a split did.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SplitReport {
    /// The input.
    pub(crate) input: String,
    /// What it is: `wheel`, `deb` or `conda`.
    pub(crate) format: &'static str,
    /// The outputs, the groups' in order, then (for a wheel) `null`.
    pub(crate) outputs: Vec<SplitOutput>,
    /// The `{name}-{version}-variants.json` written (for a wheel).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) variants_json: Option<String>,
    /// Each device target the input serves.
    pub(crate) targets: Vec<Served>,
    /// Each image group of the input.
    pub(crate) images: Vec<Served>,
    /// Each per-GPU file of the input.
    pub(crate) files: Vec<Served>,
    /// Members some group's prune refused, left as they were (as prune
    /// names them).
    pub(crate) members_refused: Vec<String>,
}

impl SplitReport {
    /// The report of the split of `input` (shown as it is named), a
    /// `format`, into `outputs`, served as `c` says, with the members
    /// `members_refused`; no `variants_json` (a wheel's split sets it).
    pub(super) fn of(
        input: String,
        format: &'static str,
        outputs: Vec<SplitOutput>,
        c: Coverage,
        members_refused: Vec<String>,
    ) -> SplitReport {
        SplitReport {
            input,
            format,
            outputs,
            variants_json: None,
            targets: c.targets,
            images: c.images,
            files: c.files,
            members_refused,
        }
    }
}

/// `first`, then each of `more` not already listed: the members every
/// group's prune refused (and what no output holds), each named once.
pub(super) fn named_once<'a>(
    mut first: Vec<String>,
    more: impl IntoIterator<Item = &'a String>,
) -> Vec<String> {
    for r in more {
        if !first.contains(r) {
            first.push(r.clone());
        }
    }
    first
}

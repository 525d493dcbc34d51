//! One file's bytes pruned, whatever they hold: the scan, the verdicts and
//! the pruned file to write, by the file's kind (see [`super::output`]).
//! A static archive is pruned member by member with [`super::archive`]
//! and this on each member.

use super::output::Output;
use super::plan::{self, Host};
use super::{Options, Selection, Verdict};
use crate::container::elf;
use crate::error::Result;
use crate::scan::{self, Report};

/// What pruning one file does.
#[derive(Debug)]
#[non_exhaustive]
pub struct FilePruning {
    /// What the scan found.
    pub report: Report,
    /// The verdict on each of the report's images, by image id.
    pub verdicts: Vec<Verdict>,
    /// Containers rewritten (bundle sections removed count one each).
    pub rewritten: usize,
    /// Bytes freed: zeroed where they lie, or cut out of the file.
    pub freed: u64,
    /// The pruned file; `None` when nothing changes.
    pub output: Option<Output>,
    /// For a linked file rewritten in place rather than shrunk: why.
    pub not_shrunk: Option<String>,
    /// For a linked file shrunk: what became of its layout.
    pub shrunk: Option<super::shrink::Shrunk>,
}

/// Scans `data` and works out its pruned form: a relocatable object with
/// its sections shrunk (`object`), a linked program or shared
/// library with each container rewritten where it lies, anything else (a
/// bare container) with the freed bytes cut out. Archives are the
/// caller's to walk ([`super::archive::prune`]).
pub fn prune_file(data: &[u8], selection: &Selection, opts: &Options) -> Result<FilePruning> {
    let scan_opts = scan::Options {
        max_uncompressed: scan::default_max_uncompressed(data.len() as u64),
        ..scan::Options::default()
    };
    let report: Report = scan::scan(data, &scan_opts);
    let verdicts = selection.decide(&report);
    let mut p = FilePruning {
        report,
        verdicts,
        rewritten: 0,
        freed: 0,
        output: None,
        not_shrunk: None,
        shrunk: None,
    };
    let host = match elf::peek(data).and_then(|h| h.file_type()) {
        Some(object::elf::ET_REL) => Host::Relocatable,
        Some(_) => Host::Linked,
        None => Host::Raw,
    };
    if host == Host::Relocatable {
        if let Some(o) = super::object::prune(data, &p.report, &p.verdicts, opts)? {
            p.rewritten = o.rewritten;
            p.freed = (data.len() as u64).saturating_sub(o.output.size());
            p.output = Some(o.output);
        }
        return Ok(p);
    }
    let mut plan = plan::plan(data, &p.report, &p.verdicts, host, opts)?;
    if plan.is_empty() {
        return Ok(p);
    }
    p.rewritten = plan.edits.len();
    p.freed = plan.freed();
    let len = data.len() as u64;
    p.output = Some(match host {
        Host::Linked if !opts.no_shrink => match super::shrink::shrink(data, &p.report, &plan) {
            Ok((o, shrunk)) => {
                p.freed = len.saturating_sub(o.size());
                p.shrunk = Some(shrunk);
                o
            }
            Err(why) => {
                p.not_shrunk = Some(why);
                Output::in_place(len, &mut plan)
            }
        },
        Host::Linked => Output::in_place(len, &mut plan),
        _ => Output::cut(len, &mut plan),
    });
    Ok(p)
}

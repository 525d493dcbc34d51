//! Pruning an RPM package: what becomes of each of its files, as prune
//! decides it inside a `.deb` (each library pruned as if named alone,
//! each per-GPU file whose GPU the rules drop removed by name); the
//! payload, headers and digests are the format layer's
//! ([`crate::package::rpm::rewrite`]). A signed package that changes
//! loses its signatures (they would not verify), and the report names
//! them: `rpmsign --addsign` signs it again. With `--strict`, a signed
//! package that would change is refused instead.

use std::io::Write as _;
use std::path::Path;

use super::job::{Job, SeenWhole, Wholes, copy_scratch, failed};
use super::model::Selection;
use super::path::{PathError, PathErrorKind, PathOptions, PathReport};
use crate::files::Input;
use crate::package::rpm::rewrite::{self, Member};

/// An RPM, `input` with `meta`, mapped as `file`: each library of its
/// payload pruned, each per-GPU file the rules drop removed, its headers
/// made true, written where `opts` says. Damaged data, or a change the
/// package cannot take (a file removed whose hard links stay, a per-file
/// tag prune does not know), is an error and nothing is written.
pub(crate) fn prune(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    file: &Input,
) -> Result<PathReport, PathError> {
    let data = file.bytes();
    let job = Job::new(sel, opts, input);
    let name = &job.name;
    let budget = job.budget(data);
    let mut d = Wholes::new(&job, PathReport::new(name, data, meta));
    let dest = opts.output_path(input)?;
    let io = |e| job.io(e);
    let mut scratch = match &dest {
        Some(_) => Some(tempfile::tempfile().map_err(io)?),
        None => None,
    };
    let threads = opts.prune.threads();
    let new = rewrite::rewrite(data, &mut d, scratch.as_mut(), (threads, budget.left))
        .map_err(|e| failed(&job, e))?;
    let mut rep = d.found.finish(&job)?;
    if let Some(new) = &new {
        if opts.strict && !new.unsigned.is_empty() {
            return Err(signed(input, name, &new.unsigned));
        }
        rep.signatures_removed = new.unsigned.iter().map(|s| (*s).to_string()).collect();
    }
    let size = data.len() as u64;
    job.write((meta, size), (dest, new.is_none()), rep, |out, dest| {
        let written = match (&new, scratch.as_mut()) {
            (Some(new), Some(scratch)) => out
                .write_all(&new.head)
                .and_then(|()| copy_scratch(scratch, out)),
            _ => file.copy_to(data, out),
        };
        written.map_err(|e| PathError::write(dest, e))
    })
}

/// The refusal (with [`PathOptions::strict`]) of the package `name`,
/// which the prune would change, for the signatures `unsigned` it has.
fn signed(input: &Path, name: &str, unsigned: &[&str]) -> PathError {
    let why = format!(
        "it is signed ({}), and they would not verify once it changes: without --strict \
         they are removed (sign it again with rpmsign --addsign)",
        unsigned.join(", ")
    );
    PathError::said(PathErrorKind::Refused, input, name, why)
}

/// An RPM's payload entry, as prune's decider sees it ([`Wholes`]).
impl SeenWhole for Member<'_> {
    fn path(&self) -> &str {
        self.path
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn kind(&self) -> (bool, bool) {
        (self.regular, self.directory)
    }
}

//! The directories a [`super::prune_tree`] run empties: each directory
//! below a directory named that held a file removed whole (for what it
//! holds, or by its name as a library's per-GPU file), once nothing is
//! left in it but what the run removed, and so up the tree; never a
//! directory named, never one that was empty before, never one holding
//! anything else. Deepest first. (Nothing of the rest of `prune` is named
//! here.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// How an emptied directory is removed: given it and the root it lies
/// under.
pub(super) type RemoveDir<'a> = &'a dyn Fn(&Path, &Path) -> std::io::Result<()>;

/// How the names in a directory are listed: given it and the root it
/// lies under (`None`: it cannot be listed, left alone).
pub(super) type ListDir<'a> = &'a dyn Fn(&Path, &Path) -> Option<Vec<std::ffi::OsString>>;

/// The directories under `roots` that removing `gone` (the paths of the
/// files removed) empties, deepest first, each with what removing it
/// did: removed by `remove` (given the directory and the root it lies
/// under), else only found (a dry run); what each holds is listed by
/// `list`. A directory that cannot be removed is reported with its error
/// and keeps its parent.
pub(super) fn emptied(
    roots: &[&Path],
    gone: impl IntoIterator<Item = PathBuf>,
    list: ListDir<'_>,
    remove: Option<RemoveDir<'_>>,
) -> Vec<(PathBuf, std::io::Result<()>)> {
    let mut gone: BTreeSet<PathBuf> = gone.into_iter().collect();
    // Candidates, deepest first: the parents of what went.
    let mut todo: BTreeSet<(usize, PathBuf)> = BTreeSet::new();
    let add = |p: &Path, todo: &mut BTreeSet<(usize, PathBuf)>| {
        if let Some(dir) = p.parent()
            && roots.iter().any(|r| dir.starts_with(r) && dir != *r)
        {
            todo.insert((dir.components().count(), dir.to_path_buf()));
        }
    };
    for p in &gone {
        add(p, &mut todo);
    }
    let mut out = Vec::new();
    while let Some((_, dir)) = todo.pop_last() {
        let root = roots.iter().find(|r| dir.starts_with(r)).copied();
        let root = root.unwrap_or(Path::new(""));
        let Some(names) = list(&dir, root) else {
            continue;
        };
        if !names.iter().all(|n| gone.contains(&dir.join(n))) {
            continue;
        }
        let done = match remove {
            Some(remove) => remove(&dir, root),
            None => Ok(()),
        };
        if done.is_ok() {
            add(&dir, &mut todo);
            gone.insert(dir.clone());
        }
        out.push((dir, done));
    }
    out
}

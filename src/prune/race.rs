//! A test's hook into [`super::prune_tree`] between its steps, to race
//! changes to the tree against it deterministically (tests only).

use std::cell::RefCell;
use std::path::Path;

/// A step of a tree's prune.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The walk is done; no file has been handled (the path: the
    /// directory walked).
    Walked,
    /// A file found is about to be opened (the path: the file).
    Open,
    /// The output of a file opened is about to be started (the path: the
    /// file).
    Create,
    /// A file opened is about to be replaced or removed (the path: the
    /// file).
    Commit,
}

/// What a test does at each step.
type Hook = Box<dyn FnMut(Phase, &Path)>;

thread_local! {
    static HOOK: RefCell<Option<Hook>> = RefCell::new(None);
}

/// Calls this thread's hook, if any, at `phase` for `path`.
pub(crate) fn at(phase: Phase, path: &Path) {
    HOOK.with(|h| {
        if let Some(f) = h.borrow_mut().as_mut() {
            f(phase, path);
        }
    });
}

/// Runs `f` with `hook` called at each step of this thread's prunes.
pub(crate) fn with<R>(hook: impl FnMut(Phase, &Path) + 'static, f: impl FnOnce() -> R) -> R {
    HOOK.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
    let r = f();
    HOOK.with(|h| *h.borrow_mut() = None);
    r
}

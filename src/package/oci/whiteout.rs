//! What a container sees of its image's layers: each layer read from the
//! top one down, a file of a lower layer is left out when a layer above
//! holds an entry of the same path, whites it out (`.wh.NAME`), makes a
//! directory above it opaque (`.wh..wh..opq`) or puts something that is
//! not a directory where one of its directories was ([`Shadow`]); and the
//! paths of layer entries made comparable ([`normal`]).

use std::collections::HashSet;
use std::fmt;

/// Which files of the layers read so far (those above the one being read)
/// hide a lower layer's files, and what the layer being read adds.
#[derive(Default)]
pub(crate) struct Shadow {
    /// Paths that layers above hold (any entry) or white out.
    taken: HashSet<String>,
    /// Paths below which layers above hide everything: whited out,
    /// opaque directories, and entries that are not directories.
    covered: HashSet<String>,
    /// What the layer being read adds, for the layers below it.
    pending: Vec<(String, bool)>,
}

/// What one entry of a layer is to a scan.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    /// A file the container sees: scan it.
    Visible,
    /// A file hidden by a layer above, or a whiteout: skip it.
    Hidden,
}

impl Shadow {
    /// Takes in an entry of the layer being read, at `path` ([`normal`]);
    /// `dir` says it is a directory. Says whether the container sees it.
    pub(crate) fn entry(&mut self, path: String, dir: bool) -> Seen {
        let (parent, base) = match path.rsplit_once('/') {
            Some((p, b)) => (p, b),
            None => ("", path.as_str()),
        };
        if base == ".wh..wh..opq" {
            self.pending.push((parent.to_string(), true));
            return Seen::Hidden;
        }
        if let Some(gone) = base.strip_prefix(".wh.") {
            let gone = if parent.is_empty() {
                gone.to_string()
            } else {
                format!("{parent}/{gone}")
            };
            self.pending.push((gone, true));
            return Seen::Hidden;
        }
        let seen = if self.hidden(&path) {
            Seen::Hidden
        } else {
            Seen::Visible
        };
        self.pending.push((path, !dir));
        seen
    }

    /// Whether layers above hide `path`.
    fn hidden(&self, path: &str) -> bool {
        if self.taken.contains(path) || self.covered.contains("") {
            return true;
        }
        path.match_indices('/')
            .any(|(i, _)| self.covered.contains(&path[..i]))
    }

    /// Ends the layer being read: what it holds now hides the files of
    /// the layers below.
    pub(crate) fn next_layer(&mut self) {
        for (path, below) in self.pending.drain(..) {
            if below {
                self.covered.insert(path.clone());
            }
            self.taken.insert(path);
        }
    }
}

/// `path` without `./`, a leading or trailing `/` or empty components; an
/// error for a `..` component (a path out of the image's root).
pub(crate) fn normal(path: &str) -> Result<String, OutOfRoot> {
    let mut out = String::with_capacity(path.len());
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(OutOfRoot(path.to_string())),
            p => {
                if !out.is_empty() {
                    out.push('/');
                }
                out.push_str(p);
            }
        }
    }
    Ok(out)
}

/// A layer entry's path that leads out of the image's root (a `..`
/// component).
#[derive(Debug)]
pub(crate) struct OutOfRoot(pub(crate) String);

impl fmt::Display for OutOfRoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the entry '{}' leads out of the image's root", self.0)
    }
}

impl std::error::Error for OutOfRoot {}

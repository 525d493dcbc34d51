//! The directories named on a command line of which a report shows no
//! file, and the input each file was found under: so that a report gives
//! a verdict on every input named, even one whose files all pass quietly.

use std::path::PathBuf;

use crate::inputs::Scanned;

/// The input named in `inputs` that the file `path` is, or was found in
/// (a directory, a package); else the file itself (before any `!/`).
pub(crate) fn input_of<'a>(inputs: &'a [String], path: &'a str) -> &'a str {
    inputs
        .iter()
        .find(|i| {
            path.strip_prefix(i.as_str()).is_some_and(|rest| {
                rest.is_empty()
                    || rest.starts_with('/')
                    || rest.starts_with("!/")
                    || i.ends_with('/')
            })
        })
        .map_or_else(|| path.split("!/").next().unwrap_or(path), String::as_str)
}

/// A directory named on the command line of which a report shows no file:
/// it is empty, or none of its files holds anything to show.
pub(crate) struct QuietDir {
    /// The directory as named.
    pub(crate) path: String,
    /// The files its walk found (a package's members not counted apart).
    pub(crate) files: u64,
    /// Their bytes.
    pub(crate) bytes: u64,
    /// The files and package members scanned in it.
    pub(crate) entries: usize,
}

impl QuietDir {
    /// The verdict on the directory: `DIR: no files found` or `DIR: N
    /// file(s), B bytes, none with device code`.
    pub(crate) fn line(&self) -> String {
        match self.files {
            0 => format!("{}: empty directory: no device code", self.path),
            n => format!(
                "{}: directory of {n} file(s), {} bytes: none holds device code",
                self.path, self.bytes
            ),
        }
    }
}

/// The directories among `paths` (OCI layouts aside: they are read as
/// images) of which no file among `scanned` is shown (each file comes
/// with whether its report shows it), so that a report still gives a
/// verdict on each input.
pub(crate) fn quiet_dirs<'a>(
    paths: &[PathBuf],
    scanned: impl IntoIterator<Item = (&'a Scanned, bool)>,
) -> Vec<QuietDir> {
    let inputs: Vec<String> = paths
        .iter()
        .map(|p| crate::files::shown(p).into_owned())
        .collect();
    let mut dirs: Vec<(QuietDir, bool)> = paths
        .iter()
        .zip(&inputs)
        .filter(|(p, _)| p.is_dir() && !crate::inputs::oci::is_layout(p))
        .map(|(_, i)| {
            let dir = QuietDir {
                path: i.clone(),
                files: 0,
                bytes: 0,
                entries: 0,
            };
            (dir, false)
        })
        .collect();
    if dirs.is_empty() {
        return Vec::new();
    }
    for (s, shown) in scanned.into_iter().filter(|(s, _)| s.found) {
        let input = input_of(&inputs, &s.path);
        let Some((dir, any)) = dirs.iter_mut().find(|(d, _)| d.path == input) else {
            continue;
        };
        *any |= shown;
        dir.entries += 1;
        if !s.path.contains("!/") {
            dir.files += 1;
            dir.bytes = dir.bytes.saturating_add(s.size);
        }
    }
    dirs.into_iter()
        .filter(|(_, any)| !any)
        .map(|(d, _)| d)
        .collect()
}

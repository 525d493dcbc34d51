//! A split's outputs written: every file first into a temporary
//! directory inside the output directory (removed with all it holds on an
//! error or a signal), then each moved to its name in one step. An error
//! before the moves leaves the output directory as it was.

use std::ffi::OsStr;
use std::path::Path;

use sha2::Digest as _;

use super::report::{SplitOptions, SplitOutput};
use super::variant::{self, NULL, Properties, WheelName};
use crate::files::{Output, TempTree};
use crate::package::zipfile::{Archive, Plan};
use crate::prune::{PathError, PathErrorKind};

/// Writes output `k` of `plan` for each of `outputs` (in their order, the
/// null variant last), the `-variants.json` and each group's index
/// directory into `o.dir`, noting in each output where it went; the
/// `-variants.json`'s path.
pub(super) fn write_all<B: AsRef<[u8]> + Sync>(
    archive: &mut Archive<'_>,
    plan: &Plan<'_, B>,
    wheel: &WheelName,
    outputs: &mut [(SplitOutput, Properties)],
    o: &SplitOptions,
    input: &Path,
) -> Result<String, PathError> {
    let dir = &o.dir;
    std::fs::create_dir_all(dir).map_err(|e| PathError::write(dir, e))?;
    let stage = TempTree::new_in(dir).map_err(|e| PathError::write(dir, e))?;
    let at = stage.path();
    let dist_info = dist_info(archive, wheel).map_err(|why| {
        let name = crate::files::shown(input);
        PathError::said(PathErrorKind::Refused, input, &name, why)
    })?;
    let files: Vec<String> = outputs
        .iter()
        .map(|(o, _)| wheel.variant(&o.label))
        .collect();
    let jsons: Vec<Vec<u8>> = outputs
        .iter()
        .map(|(o, props)| variant::variant_json(&o.label, props))
        .collect();
    let one = |k: usize, a: &mut Archive<'_>| -> Result<(), PathError> {
        let added = [(format!("{dist_info}/variant.json"), &jsons[k][..])];
        let path = at.join(&files[k]);
        let mut w =
            Output::create_in(at, OsStr::new(&files[k])).map_err(|e| PathError::write(&path, e))?;
        let f = w.temp_file().ok_or_else(|| PathError::write(&path, None))?;
        plan.write_adding(a, k, &added, f)
            .map_err(|e| PathError::zip_file(input, e))?;
        w.commit().map_err(|e| PathError::write(&path, e))
    };
    let threads = o.path_options().prune.threads();
    side_by_side(archive, input, outputs.len(), threads, &one)?;
    let mut table = Vec::new();
    let mut moves: Vec<String> = Vec::new();
    for ((out, props), file) in outputs.iter_mut().zip(files) {
        table.push((out.label.clone(), props.clone()));
        out.path = crate::files::shown(&dir.join(&file)).into_owned();
        moves.push(file);
    }
    let json = wheel.variants_json();
    let json_at = at.join(&json);
    std::fs::write(&json_at, variant::variants_json(&table))
        .map_err(|e| PathError::write(&json_at, e))?;
    moves.push(json.clone());
    let mut indexes = Vec::new();
    for (out, _) in outputs.iter_mut().filter(|(o, _)| o.label != NULL) {
        index(at, wheel, &out.label).map_err(|e| PathError::write(&at.join("index"), e))?;
        out.index = Some(crate::files::shown(&dir.join("index").join(&out.label)).into_owned());
        indexes.push(out.label.clone());
    }
    // Every file is whole: each now takes its name.
    for m in &moves {
        let to = dir.join(m);
        std::fs::rename(at.join(m), &to).map_err(|e| PathError::write(&to, e))?;
    }
    if !indexes.is_empty() {
        let root = dir.join("index");
        std::fs::create_dir_all(&root).map_err(|e| PathError::write(&root, e))?;
        for (n, label) in indexes.iter().enumerate() {
            let to = root.join(label);
            if to.symlink_metadata().is_ok() {
                // The old index goes with the temporary directory.
                let old = at.join(format!("old-{n}"));
                std::fs::rename(&to, &old).map_err(|e| PathError::write(&to, e))?;
            }
            let from = at.join("index").join(label);
            std::fs::rename(&from, &to).map_err(|e| PathError::write(&to, e))?;
        }
    }
    drop(stage);
    Ok(crate::files::shown(&dir.join(json)).into_owned())
}

/// Writes outputs `0..n` with `one`, side by side on up to `threads`
/// threads, each thread with its own reader of `archive`'s bytes
/// (`input`'s; output `k` on thread `k % threads`); the first error by
/// output.
fn side_by_side(
    archive: &mut Archive<'_>,
    input: &Path,
    n: usize,
    threads: u32,
    one: &(dyn Fn(usize, &mut Archive<'_>) -> Result<(), PathError> + Sync),
) -> Result<(), PathError> {
    let threads = usize::try_from(threads).unwrap_or(usize::MAX).min(n).max(1);
    if threads == 1 {
        return (0..n).try_for_each(|k| one(k, archive));
    }
    let data = archive.data;
    let mut results: Vec<(usize, Result<(), PathError>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut done = Vec::new();
                    let mut a = match Archive::open(data) {
                        Ok(a) => a,
                        // The archive opened once already: it opens again.
                        Err(e) => return vec![(t, Err(PathError::zip_file(input, e)))],
                    };
                    for k in (t..n).step_by(threads) {
                        done.push((k, one(k, &mut a)));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    results.sort_by_key(|(k, _)| *k);
    results.into_iter().try_for_each(|(_, r)| r)
}

/// The `*.dist-info` directory of `archive` that names the wheel's
/// distribution and version (its RECORD read), the one a `variant.json`
/// goes in.
fn dist_info(archive: &Archive<'_>, wheel: &WheelName) -> Result<String, String> {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['-', '.'], "_");
    let want = norm(&format!("{}-{}", wheel.name, wheel.version));
    let dirs: Vec<String> = (0..archive.len())
        .filter_map(|i| archive.zip.name_for_index(i).and_then(Result::ok))
        .filter_map(|n| n.strip_suffix("/RECORD").map(str::to_string))
        .filter(|d| !d.contains('/') && d.ends_with(".dist-info"))
        .collect();
    let found = dirs.iter().find(|d| {
        let stem = d.trim_end_matches(".dist-info");
        let (n, v) = stem.rsplit_once('-').unwrap_or((stem, ""));
        norm(&format!("{n}-{v}")) == want
    });
    match found {
        Some(d) => Ok(d.clone()),
        None => Err(format!(
            "it has no '{}-{}.dist-info/RECORD' for the variant.json to be listed in",
            wheel.name, wheel.version
        )),
    }
}

/// The PEP 503 index of the group labelled `label` under `at/index`: its
/// wheel (`at`'s variant file, linked under the input's own name, which
/// pip reads as a plain wheel), the project's page linking it with its
/// SHA-256, and the root page linking the project.
fn index(at: &Path, wheel: &WheelName, label: &str) -> std::io::Result<()> {
    let project = wheel.project();
    let root = at.join("index").join(label);
    let dir = root.join(&project);
    std::fs::create_dir_all(&dir)?;
    let built = at.join(wheel.variant(label));
    let plain = format!("{}.whl", wheel.stem);
    if std::fs::hard_link(&built, dir.join(&plain)).is_err() {
        std::fs::copy(&built, dir.join(&plain))?;
    }
    let mut sha = sha2::Sha256::new();
    std::io::copy(&mut std::fs::File::open(&built)?, &mut sha)?;
    let hex: String = sha.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let href = format!("{}#sha256={hex}", variant::url_path(&plain));
    let page = variant::index_page(&format!("Links for {project}"), &[(href, plain)]);
    std::fs::write(dir.join("index.html"), page)?;
    let top = variant::index_page(
        "Simple index",
        &[(format!("{}/", variant::url_path(&project)), project.clone())],
    );
    std::fs::write(root.join("index.html"), top)
}

//! What pruning one file did (or would do): [`PathReport`], with the
//! images kept and dropped in [`ImageGroup`]s, as `offload-kit prune`
//! prints it (text, or JSON of schema `offload-kit/prune/1`).

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

use serde::Serialize;

use super::super::Shrunk;
use crate::scan::Image;
use crate::scan::sort::arch_cmp;

/// Images kept or dropped, per target and kind.
///
/// # Examples
///
/// ```
/// use offload_kit::prune::{PathOptions, prune_path};
/// # use offload_kit::bundle::{self, Format};
/// # use offload_kit::prune::{Ptx, Rules, Selection};
/// # use offload_kit::scan::Rule;
/// # let dir = tempfile::tempdir()?;
/// # let (host, gfx90a, gfx942) = (b"host".to_vec(), vec![1u8; 64], vec![2u8; 64]);
/// # let entries = [
/// #     ("host-x86_64-unknown-linux-gnu-".to_string(), host.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), gfx90a.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx942".to_string(), gfx942.len() as u64),
/// # ];
/// # let mut file = Vec::new();
/// # bundle::layout(Format::Binary, &entries, 8)?.write_to(&mut file, &[&host, &gfx90a, &gfx942])?;
/// # let input = dir.path().join("kernels.hipfb");
/// # std::fs::write(&input, &file)?;
/// # let keep = Selection { rules: Rules::Keep(vec![Rule::parse("gfx90a")?]), ptx: Ptx::Newest };
///
/// let report = prune_path(&input, &keep, &PathOptions::default())?;
/// let kept = &report.kept[0];
/// assert_eq!((kept.target.as_str(), kept.images, kept.bytes), ("gfx90a", 1, 64));
/// assert!(kept.why.as_deref().is_some_and(|w| w.starts_with("gfx90a: ")));
/// assert_eq!((report.dropped[0].target.as_str(), &report.dropped[0].why), ("gfx942", &None));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ImageGroup {
    /// The images' target ID (`gfx90a:xnack+`, `sm_86`), or their triple
    /// when they have none (SYCL's `spir64`, a bare SPIR-V file's `spirv`).
    pub target: String,
    /// Their kind (`object`, `ptx`, `cubin`; `unknown` where the scan could
    /// not tell).
    pub kind: String,
    /// How many.
    pub images: usize,
    /// Their bytes, together.
    pub bytes: u64,
    /// For kept images: the rule that keeps them, and how a device it
    /// names loads them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// What pruning one file did (or, in a dry run, would do).
///
/// Its fields, serialized, are the command line's JSON (one element of
/// `files` in a document of schema `offload-kit/prune/1`).
///
/// # Examples
///
/// ```
/// use offload_kit::prune::{PathOptions, prune_path};
/// # use offload_kit::bundle::{self, Format};
/// # use offload_kit::prune::{Ptx, Rules, Selection};
/// # use offload_kit::scan::Rule;
/// # let dir = tempfile::tempdir()?;
/// # let (host, gfx90a, gfx942) = (b"host".to_vec(), vec![1u8; 64], vec![2u8; 64]);
/// # let entries = [
/// #     ("host-x86_64-unknown-linux-gnu-".to_string(), host.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), gfx90a.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx942".to_string(), gfx942.len() as u64),
/// # ];
/// # let mut file = Vec::new();
/// # bundle::layout(Format::Binary, &entries, 8)?.write_to(&mut file, &[&host, &gfx90a, &gfx942])?;
/// # let input = dir.path().join("kernels.hipfb");
/// # std::fs::write(&input, &file)?;
/// # let keep = Selection { rules: Rules::Keep(vec![Rule::parse("gfx90a")?]), ptx: Ptx::Newest };
///
/// let report = prune_path(&input, &keep, &PathOptions::default())?;
/// assert_eq!((report.containers_rewritten, report.bytes_before), (1, file.len() as u64));
/// assert_eq!((report.output, report.disk_after), (None, None), "a dry run");
/// let json = serde_json::to_value(&report.dropped)?;
/// assert_eq!(json, serde_json::json!([
///     { "target": "gfx942", "kind": "unknown", "images": 1, "bytes": 64 }
/// ]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct PathReport {
    /// The file pruned, as named.
    pub path: String,
    /// Where the pruned file went; `None` in a dry run, and in place when
    /// nothing changed.
    pub output: Option<String>,
    /// Containers rewritten (bundle sections removed count one each).
    pub containers_rewritten: usize,
    /// Of those, the containers that keep no device image: no device of
    /// the rules loads any of theirs ([`FilePruning::emptied`](crate::prune::FilePruning::emptied)).
    pub emptied: usize,
    /// The file's size.
    pub bytes_before: u64,
    /// The output's size (the file's, when nothing was written).
    pub bytes_after: u64,
    /// Bytes the file took on disk.
    pub disk_before: u64,
    /// Bytes the output takes on disk; `None` in a dry run.
    pub disk_after: Option<u64>,
    /// For a linked file rewritten in place rather than shrunk: why. For a
    /// wheel, each linked member rewritten so, as `'MEMBER': why`, joined
    /// by `; `.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_shrunk: Option<String>,
    /// For a linked file shrunk: what became of its layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shrunk: Option<Shrunk>,
    /// For a Windows PE image whose Authenticode signature went
    /// ([`Options::strip_signature`](crate::prune::Options::strip_signature)): the
    /// bytes of its certificate table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature_removed: Option<u64>,
    /// Links the input had (in place and more than one, the others keep
    /// the old file unless [`PathOptions::keep_hard_links`](super::PathOptions::keep_hard_links)).
    pub hard_links: u64,
    /// Bytes freed: zeroed where they lie, or cut out of the file. For a
    /// package (wheel, `.deb`, conda package, image), the bytes its files
    /// lose before compression, what an install of it no longer takes,
    /// in a dry run and a written run alike; what the package's own file
    /// lost is [`PathReport::package_bytes`].
    pub freed: u64,
    /// For a package: what its own file lost or gained in size, written
    /// again (compression decides it, so a dry run cannot know it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package_bytes: Option<PackageBytes>,
    /// The images that stay.
    pub kept: Vec<ImageGroup>,
    /// The images that go.
    pub dropped: Vec<ImageGroup>,
    /// Files of a package (a `.deb`) left as they were because prune
    /// refuses to rewrite them, each message naming the file in the
    /// package and why (`'x.deb!/usr/lib/k.a': …`); the rest of the
    /// package is pruned.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members_refused: Vec<String>,
    /// With [`PathOptions::trust_bytes`](super::PathOptions::trust_bytes):
    /// each row of a record of the package's files (a wheel's `RECORD`, a
    /// `.deb`'s `md5sums`, an installed package's RECORD or conda record)
    /// that its file's bytes did not match, as a message naming the
    /// record, the file, what the row said and what the bytes are.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub records_wrong: Vec<String>,
    /// For an RPM rewritten (or that would be): the signatures it lost,
    /// which no longer verified ("RSA header signature"); `rpmsign
    /// --addsign` signs it again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub signatures_removed: Vec<String>,
    /// Files removed whole (in a dry run, that would be), being device
    /// code alone that the rules drop all of
    /// ([`FilePruning::remove`](crate::prune::FilePruning::remove)): the
    /// file itself, or files of a wheel or `.deb` (`x.deb!/usr/lib/k.co`),
    /// each with its bytes (before compression).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<RemovedFile>,
    /// For a conda package that changes (or would): what became of its
    /// records of its files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conda: Option<CondaRecords>,
    /// For a container image (an OCI image layout) that changes (or
    /// would): each image rewritten, and what its user loses.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageRewritten>,
}

/// One image of a layout rewritten by a prune ([`PathReport::images`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ImageRewritten {
    /// The image: its `org.opencontainers.image.ref.name`, else the start
    /// of its manifest's digest.
    pub image: String,
    /// Its manifest's digest before (`sha256:…`).
    pub manifest_before: String,
    /// Its manifest's digest after (empty in a dry run).
    pub manifest_after: String,
    /// Each layer rewritten: its digest before and after (after: empty in
    /// a dry run).
    pub layers: Vec<(String, String)>,
    /// The old layers of this image that other images of the layout
    /// still use: no longer shared with them (stored twice, pulled twice).
    pub no_longer_shared: Vec<String>,
    /// What to do next, in words: signatures and attestations over the
    /// old digests no longer match, the image is to be signed and pushed
    /// again.
    pub next: &'static str,
}

/// What pruning a conda package did to its records ([`PathReport::conda`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CondaRecords {
    /// Rows of `info/paths.json` given a new `sha256` and `size_in_bytes`.
    pub rows_rewritten: usize,
    /// Rows of `info/paths.json` taken out, of files removed.
    pub rows_removed: usize,
    /// Lines of `info/files` taken out, of files removed.
    pub files_lines_removed: usize,
    /// What to do next, in words: the package's own hash changed, so a
    /// channel that holds it must be indexed again.
    pub next: &'static str,
}

/// A file removed whole by a prune ([`PathReport::removed`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RemovedFile {
    /// The file, as named or found, or the file in a package
    /// (`PACKAGE!/PATH`).
    pub path: String,
    /// Its size.
    pub bytes: u64,
    /// For a file removed by its name, a library's per-GPU file whose
    /// GPU the rules drop (docs/prune.md lists the conventions): the
    /// library.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    /// For such a file: the GPU its name says it serves (`gfx906`,
    /// `gfx90a:xnack+`, `sm_86`, `gfx11* (family)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// For such a file: why it goes, in words (`rocBLAS/… per-GPU file
    /// for gfx906 (…)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl RemovedFile {
    /// A file removed for what it holds (device code alone the rules drop
    /// all of).
    pub(crate) fn whole(path: String, bytes: u64) -> RemovedFile {
        let why = fallback(&path)
            .map(|f| format!("device code alone that the rules drop all of; without it {f}"));
        RemovedFile {
            path,
            bytes,
            library: None,
            gpu: None,
            why,
        }
    }

    /// A library's per-GPU file `c`, removed by its name.
    pub(crate) fn by_name(
        path: String,
        bytes: u64,
        c: &crate::companion::Companion,
    ) -> RemovedFile {
        RemovedFile {
            path,
            bytes,
            library: Some(c.convention.library.to_string()),
            gpu: Some(c.gpu.to_string()),
            why: Some(super::super::companion::reason(c)),
        }
    }
}

impl CondaRecords {
    /// The report's line on them (in a dry run, what would be).
    pub(crate) fn line(&self, dry_run: bool) -> String {
        let verb = if dry_run {
            "would be updated"
        } else {
            "updated"
        };
        format!(
            "  conda records {verb}: info/paths.json: {} row(s) given new hashes and sizes, {} \
             row(s) of removed files taken out; info/files: {} line(s) taken out; {}",
            self.rows_rewritten, self.rows_removed, self.files_lines_removed, self.next
        )
    }
}

impl ImageRewritten {
    /// The report's lines on it (in a dry run, what would be).
    pub(crate) fn lines(&self, dry_run: bool) -> Vec<String> {
        let verb = if dry_run { "would be " } else { "" };
        let mut out = vec![format!(
            "  image {}: manifest {} {verb}rewritten{}",
            self.image,
            self.manifest_before,
            arrow(&self.manifest_after)
        )];
        for (before, after) in &self.layers {
            out.push(format!("    layer {before}{}", arrow(after)));
        }
        if !self.no_longer_shared.is_empty() {
            out.push(format!(
                "    no longer shared with other images of the layout: {}",
                self.no_longer_shared.join(", ")
            ));
        }
        out.push(format!("    {}", self.next));
        out
    }
}

/// ` -> AFTER`, or nothing when there is no after (a dry run).
fn arrow(after: &str) -> String {
    match after {
        "" => String::new(),
        a => format!(" -> {a}"),
    }
}

/// What a package's own file lost or gained in size when written again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PackageBytes {
    /// Not written (a dry run): compression decides it, so it is not
    /// known.
    Unknown,
    /// The file lost these bytes.
    Freed(u64),
    /// Compressed again, the file grew by these bytes.
    Grew(u64),
}

impl PathReport {
    /// Marks the report as a package's, its own size change not known
    /// until it is written ([`PathReport::package_written`]).
    pub(crate) fn package(mut self) -> PathReport {
        self.package_bytes = Some(PackageBytes::Unknown);
        self
    }

    /// Notes what the package's file lost or gained in size, written
    /// again (`bytes_before` against `bytes_after`); `freed` stays what
    /// its files lost.
    pub(crate) fn package_written(&mut self) {
        let (before, after) = (self.bytes_before, self.bytes_after);
        self.package_bytes = Some(match after > before {
            true => PackageBytes::Grew(after - before),
            false => PackageBytes::Freed(before - after),
        });
    }

    /// The report on `data` (the file `name`, with `meta`) before anything
    /// is pruned: nothing rewritten, nothing written yet.
    pub(crate) fn new(name: &str, data: &[u8], meta: &std::fs::Metadata) -> PathReport {
        PathReport {
            path: name.to_string(),
            output: None,
            containers_rewritten: 0,
            emptied: 0,
            bytes_before: data.len() as u64,
            bytes_after: data.len() as u64,
            disk_before: meta.blocks() * 512,
            disk_after: None,
            not_shrunk: None,
            shrunk: None,
            signature_removed: None,
            hard_links: meta.nlink(),
            freed: 0,
            package_bytes: None,
            kept: Vec::new(),
            dropped: Vec::new(),
            members_refused: Vec::new(),
            records_wrong: Vec::new(),
            signatures_removed: Vec::new(),
            removed: Vec::new(),
            conda: None,
            images: Vec::new(),
        }
    }
}

/// The images, one group per target, kind and reason (`why`, for kept
/// images).
pub(crate) fn groups<'a>(
    images: impl Iterator<Item = &'a Image>,
    why: impl Fn(&Image) -> Option<String>,
) -> Vec<ImageGroup> {
    merge(
        images
            .map(|i| ImageGroup {
                target: i.target_or_triple().to_string(),
                kind: i
                    .image_kind
                    .as_ref()
                    .map_or("unknown".to_string(), |k| k.to_string()),
                images: 1,
                bytes: i.size,
                why: why(i),
            })
            .collect(),
    )
}

/// Groups merged: one row per target, kind and reason.
pub(crate) fn merge(gs: Vec<ImageGroup>) -> Vec<ImageGroup> {
    let mut m: BTreeMap<(String, String, Option<String>), ImageGroup> = BTreeMap::new();
    for g in gs {
        let e = m
            .entry((g.target.clone(), g.kind.clone(), g.why.clone()))
            .or_insert(ImageGroup {
                images: 0,
                bytes: 0,
                ..g.clone()
            });
        // Saturating: the scan reports the sizes a file declares (near
        // 2^64 in a hostile one), and a total must not overflow.
        e.images = e.images.saturating_add(g.images);
        e.bytes = e.bytes.saturating_add(g.bytes);
    }
    let mut v: Vec<ImageGroup> = m.into_values().collect();
    v.sort_by(|a, b| {
        arch_cmp(&a.target, &b.target)
            .then_with(|| a.kind.cmp(&b.kind))
            .then_with(|| a.why.cmp(&b.why))
    });
    v
}

/// What a library does when the file `path` is gone, for the files whose
/// loss makes a library fall back to another copy: hipBLASLt looks for
/// `hipblasltTransform.hsaco` beside itself (`hipblaslt/library/`), and
/// when it is not there, under ROCm's default prefix.
fn fallback(path: &str) -> Option<&'static str> {
    let name = path.rsplit(['/', '!']).next()?;
    (name == "hipblasltTransform.hsaco").then_some(
        "hipBLASLt loads /opt/rocm/lib/hipblaslt/library/hipblasltTransform.hsaco, the copy \
         under ROCm's default prefix, which may belong to another ROCm version (or be missing)",
    )
}

#[cfg(test)]
mod tests {
    use super::RemovedFile;

    #[test]
    fn the_hipblaslt_transform_removed_names_the_copy_loaded_instead() {
        for path in [
            "opt/rocm/lib/hipblaslt/library/hipblasltTransform.hsaco",
            "x.whl!/torch/lib/hipblaslt/library/hipblasltTransform.hsaco",
        ] {
            let why = RemovedFile::whole(path.into(), 1).why.unwrap();
            assert!(why.contains("/opt/rocm/lib/hipblaslt/library/hipblasltTransform.hsaco"));
        }
        let other = RemovedFile::whole(
            "lib/hipblaslt/library/Kernels.so-000-gfx908.hsaco".into(),
            1,
        );
        assert_eq!(other.why, None);
    }
}

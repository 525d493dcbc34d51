//! Container images as the scanners read them: an OCI image layout (a
//! directory holding `oci-layout`, `index.json` and `blobs/`) or a
//! `docker save` archive (a tar whose `manifest.json` names each image's
//! layers), each image's files as a container started from it sees them.
//!
//! The layers are read from the top one down. A file of a lower layer is
//! left out when a layer above holds an entry of the same path, whites it
//! out (`.wh.NAME`), makes a directory above it opaque (`.wh..wh..opq`) or
//! puts something that is not a directory where one of its directories
//! was ([`Shadow`]). What a layout names is checked before it is read:
//! each blob's digest is one this reader can name a file by, and its size
//! and SHA-256 are the ones its descriptor says. Each layer, as it is read,
//! must decompress to the bytes its config's `rootfs.diff_ids` names.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::Digest as _;

mod error;
pub(crate) use error::ImageError;
use error::NotWhy;

/// The largest index, manifest or `manifest.json` read (they are JSON of
/// a few kilobytes).
const MAX_JSON: u64 = 16 << 20;

/// How deeply indexes may nest (an index of platforms inside the
/// layout's index is one level).
const MAX_INDEX_DEPTH: u32 = 4;

/// One image of a layout or an archive: the name it is shown under
/// (`None` when it is the input's only image) and its layers, the lowest
/// first.
#[derive(Debug)]
pub(crate) struct Image {
    pub(crate) name: Option<String>,
    pub(crate) layers: Vec<Layer>,
}

/// Where one layer's bytes are, and what they must hash to.
#[derive(Debug)]
pub(crate) struct Layer {
    /// A blob file of a layout, or a member of an archive, by its path.
    pub(crate) blob: PathBuf,
    /// The SHA-256 the blob must have, when a descriptor or its name says
    /// it.
    pub(crate) sha256: Option<[u8; 32]>,
    /// The size a descriptor gives it.
    pub(crate) size: Option<u64>,
    /// The SHA-256 its tar, decompressed, must have: the image config's
    /// `rootfs.diff_ids` entry for it.
    pub(crate) diff_id: Option<[u8; 32]>,
}

impl Layer {
    /// Checks `bytes` against the digest and size the descriptor gave.
    pub(crate) fn check(&self, bytes: &[u8]) -> Result<(), ImageError> {
        check_blob(bytes, self.sha256.as_ref(), self.size)
    }
}

/// Checks a blob's `bytes` against the `size` and SHA-256 given for it.
fn check_blob(
    bytes: &[u8],
    sha256: Option<&[u8; 32]>,
    size: Option<u64>,
) -> Result<(), ImageError> {
    if let Some(size) = size
        && bytes.len() as u64 != size
    {
        return Err(ImageError::Size {
            len: bytes.len() as u64,
            said: size,
        });
    }
    match sha256 {
        Some(want) if sha2::Sha256::digest(bytes).as_slice() != want => Err(ImageError::Digest),
        _ => Ok(()),
    }
}

/// Whether `dir` is an OCI image layout (it holds a file `oci-layout`).
pub(crate) fn is_layout(dir: &Path) -> bool {
    dir.join("oci-layout").is_file()
}

/// The images of the layout `dir`: those its `index.json` names (indexes
/// inside it followed), in its order.
pub(crate) fn layout_images(dir: &Path) -> Result<Vec<Image>, ImageError> {
    let index = read_small(&dir.join("index.json"))?;
    let mut images = Vec::new();
    let mut layout = Layout {
        dir,
        images: &mut images,
    };
    layout.index(&index, "index.json", None, 0)?;
    if images.len() == 1 {
        images[0].name = None;
    }
    Ok(images)
}

/// Reads a JSON file of a layout, within [`MAX_JSON`]. Anything but a
/// regular file (a FIFO, a device, a link to `/dev/zero`) is refused
/// before it is read.
fn read_small(path: &Path) -> Result<Vec<u8>, ImageError> {
    let name = || crate::files::shown(path).into_owned();
    let (file, len) = crate::files::open_regular(path).map_err(|e| ImageError::Open(name(), e))?;
    if len > MAX_JSON {
        return Err(ImageError::Large(name(), MAX_JSON));
    }
    crate::files::read_at_most(file, MAX_JSON)
        .map_err(|e| ImageError::Read(name(), e))?
        .ok_or_else(|| ImageError::Large(name(), MAX_JSON))
}

/// A descriptor: what a blob is, its digest and its size.
#[derive(Deserialize)]
struct Descriptor {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    digest: String,
    size: u64,
    #[serde(default)]
    annotations: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    platform: Option<Platform>,
}

#[derive(Deserialize)]
struct Platform {
    #[serde(default)]
    os: String,
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    variant: Option<String>,
}

/// An index (`index.json`, or an index blob) or a manifest: an index has
/// `manifests`, a manifest `layers`.
#[derive(Deserialize)]
struct Document {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    #[serde(default)]
    manifests: Option<Vec<Descriptor>>,
    #[serde(default)]
    layers: Option<Vec<Descriptor>>,
    #[serde(default)]
    config: Option<Descriptor>,
}

/// The part of an image config read here.
#[derive(Deserialize)]
struct Config {
    rootfs: RootFs,
}

#[derive(Deserialize)]
struct RootFs {
    diff_ids: Vec<String>,
}

/// The `rootfs.diff_ids` of the image config `bytes` (named `what`), one
/// for each of `layers` layers.
fn diff_ids(bytes: &[u8], what: &str, layers: usize) -> Result<Vec<[u8; 32]>, ImageError> {
    let config: Config = serde_json::from_slice(bytes).map_err(|e| ImageError::Not {
        what: format!("'{what}'"),
        kind: "an image config",
        why: NotWhy::Json(e),
    })?;
    let ids = config.rootfs.diff_ids;
    if ids.len() != layers {
        let e = ImageError::DiffIdCount {
            ids: ids.len(),
            layers,
        };
        return Err(e.at(format!("'{what}'")));
    }
    ids.iter()
        .enumerate()
        .map(|(i, id)| {
            digest_bytes(id).map_err(|e| e.at(format!("'{what}': rootfs.diff_ids[{i}]")))
        })
        .collect()
}

/// The annotation that names an image of a layout.
const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// Media types of layers whose annotations describe byte offsets inside
/// them are read like any layer; these are the manifest kinds.
fn is_index(media_type: &str) -> bool {
    media_type.ends_with("image.index.v1+json") || media_type.ends_with("manifest.list.v2+json")
}

/// A walk of one layout's indexes.
struct Layout<'a> {
    dir: &'a Path,
    images: &'a mut Vec<Image>,
}

impl Layout<'_> {
    /// The images the index `bytes` (named `what`) names; `name` is the
    /// name the index itself was given.
    fn index(
        &mut self,
        bytes: &[u8],
        what: &str,
        name: Option<&str>,
        depth: u32,
    ) -> Result<(), ImageError> {
        if depth > MAX_INDEX_DEPTH {
            return Err(ImageError::Deep(MAX_INDEX_DEPTH));
        }
        let not_index = |why| ImageError::Not {
            what: format!("'{what}'"),
            kind: "an image index",
            why,
        };
        let doc: Document =
            serde_json::from_slice(bytes).map_err(|e| not_index(NotWhy::Json(e)))?;
        let Some(manifests) = doc.manifests else {
            return Err(not_index(NotWhy::Lacks("manifests")));
        };
        for (i, d) in manifests.iter().enumerate() {
            let own = d
                .annotations
                .get(REF_NAME)
                .cloned()
                .or_else(|| d.platform.as_ref().map(platform_name))
                .unwrap_or_else(|| short(&d.digest).to_string());
            let shown = match name {
                Some(n) => format!("{n}@{own}"),
                None => own,
            };
            let field = format!("{what}: manifests[{i}]");
            let blob = self.blob(d, &field, MAX_JSON)?;
            if is_index(&d.media_type) {
                self.index(&blob, &d.digest, Some(&shown), depth + 1)?;
                continue;
            }
            let not_manifest = |why| ImageError::Not {
                what: format!("{field} ({})", d.digest),
                kind: "an image manifest",
                why,
            };
            let m: Document =
                serde_json::from_slice(&blob).map_err(|e| not_manifest(NotWhy::Json(e)))?;
            if is_index(&m.media_type) || m.manifests.is_some() {
                self.index(&blob, &d.digest, Some(&shown), depth + 1)?;
                continue;
            }
            let Some(layers) = m.layers else {
                return Err(not_manifest(NotWhy::Lacks("layers")));
            };
            let Some(config) = m.config else {
                return Err(not_manifest(NotWhy::Lacks("config")));
            };
            let bytes = self.blob(&config, &format!("{} config", d.digest), MAX_JSON)?;
            let ids = diff_ids(&bytes, &config.digest, layers.len())?;
            let layers = layers
                .iter()
                .zip(ids)
                .map(|(l, id)| {
                    let (blob, sha256) = self.blob_path(l, &format!("{} layer", d.digest))?;
                    Ok(Layer {
                        blob,
                        sha256: Some(sha256),
                        size: Some(l.size),
                        diff_id: Some(id),
                    })
                })
                .collect::<Result<Vec<_>, ImageError>>()?;
            self.images.push(Image {
                name: Some(shown),
                layers,
            });
        }
        Ok(())
    }

    /// The file of the blob `d` names, checked to be one of this
    /// layout's blobs, and the SHA-256 its digest gives.
    fn blob_path(&self, d: &Descriptor, field: &str) -> Result<(PathBuf, [u8; 32]), ImageError> {
        let sha256 = digest_bytes(&d.digest).map_err(|e| e.at(field))?;
        let hex = d.digest.strip_prefix("sha256:").unwrap_or_default();
        Ok((self.dir.join("blobs").join("sha256").join(hex), sha256))
    }

    /// A small blob's bytes (an index, a manifest), checked against `d`.
    fn blob(&self, d: &Descriptor, field: &str, max: u64) -> Result<Vec<u8>, ImageError> {
        let (path, sha256) = self.blob_path(d, field)?;
        if d.size > max {
            let e = ImageError::Blob {
                digest: d.digest.clone(),
                size: d.size,
                max,
            };
            return Err(e.at(field));
        }
        let bytes = read_small(&path)?;
        check_blob(&bytes, Some(&sha256), Some(d.size))
            .map_err(|e| e.at(format!("{field} ({})", d.digest)))?;
        Ok(bytes)
    }
}

/// `os/architecture[/variant]`.
fn platform_name(p: &Platform) -> String {
    match &p.variant {
        Some(v) => format!("{}/{}/{v}", p.os, p.architecture),
        None => format!("{}/{}", p.os, p.architecture),
    }
}

/// `sha256:` and the digest's first 12 hex digits.
fn short(digest: &str) -> &str {
    digest.get(..19).unwrap_or(digest)
}

/// The 32 bytes of a `sha256:<hex>` digest: 64 lowercase hex digits, as
/// the OCI image spec writes them (and so a file name in `blobs/sha256`).
fn digest_bytes(digest: &str) -> Result<[u8; 32], ImageError> {
    let bad = || ImageError::NotSha256(digest.to_string());
    let hex = digest
        .strip_prefix("sha256:")
        .filter(|h| {
            h.len() == 64
                && h.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
        .ok_or_else(bad)?;
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(hex.get(2 * i..2 * i + 2).ok_or_else(bad)?, 16)
            .map_err(|_| bad())?;
    }
    Ok(out)
}

/// One image of a `docker save` archive's `manifest.json`.
#[derive(Deserialize)]
struct Saved {
    #[serde(rename = "RepoTags", default)]
    repo_tags: Option<Vec<String>>,
    #[serde(rename = "Config", default)]
    config: String,
    #[serde(rename = "Layers")]
    layers: Vec<String>,
}

/// The SHA-256 a `docker save` archive's member name says its bytes have:
/// `blobs/sha256/<hex>` (as newer Docker writes layers and configs) or a
/// config's `<hex>.json` (its image ID, as older Docker writes it).
fn named_sha256(member: &str) -> Option<[u8; 32]> {
    let hex = member
        .strip_prefix("blobs/sha256/")
        .or_else(|| member.strip_suffix(".json"))?;
    digest_bytes(&format!("sha256:{hex}")).ok()
}

/// Whether `first`, the path of a tar's first entry, is one a `docker
/// save` archive starts with: a layer's or config's name (64 hex digits,
/// then `/`, `.json` or `.tar`), `blobs/` (Docker 25 on), or one of the
/// archive's own files.
pub(crate) fn may_be_saved(first: &str) -> bool {
    let first = first.trim_start_matches("./");
    let hex = first
        .get(..64)
        .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    let rest = first.get(64..).unwrap_or("");
    (hex && (rest.is_empty() || rest.starts_with('/') || rest == ".json" || rest == ".tar"))
        || first == "blobs"
        || first.starts_with("blobs/")
        || ["manifest.json", "repositories", "index.json", "oci-layout"].contains(&first)
}

impl TarIndex<'_> {
    /// The images of a `docker save` archive, from its `manifest.json`:
    /// each layer a member path of the archive, its diff ID from the
    /// image's config. `None` when there is no `manifest.json` that lists
    /// images (the tar is some other tar); an error when a config cannot
    /// be read or does not fit the image.
    pub(crate) fn saved_images(&self) -> Option<Result<Vec<Image>, ImageError>> {
        let saved: Vec<Saved> = serde_json::from_slice(self.get("manifest.json")?).ok()?;
        let several = saved.len() > 1;
        let images = saved
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                let name = several.then(|| match s.repo_tags.as_deref() {
                    Some([tag, ..]) => tag.clone(),
                    _ if !s.config.is_empty() => s.config.clone(),
                    _ => format!("#{i}"),
                });
                let config = self
                    .get(&s.config)
                    .ok_or_else(|| ImageError::NoConfig(s.config.clone()).at("manifest.json"))?;
                if let Some(want) = named_sha256(&s.config)
                    && sha2::Sha256::digest(config).as_slice() != want
                {
                    return Err(ImageError::Digest.at(format!("the config '{}'", s.config)));
                }
                let ids = diff_ids(config, &s.config, s.layers.len())?;
                let layers = s
                    .layers
                    .into_iter()
                    .zip(ids)
                    .map(|(l, id)| Layer {
                        // A layer named by its digest is checked against it.
                        sha256: l.strip_prefix("blobs/sha256/").and(named_sha256(&l)),
                        blob: PathBuf::from(l),
                        size: None,
                        diff_id: Some(id),
                    })
                    .collect();
                Ok(Image { name, layers })
            })
            .collect();
        Some(images)
    }
}

/// The files of a plain tar archive by their paths, as slices of it, for
/// a `docker save` archive's layers and `manifest.json`.
pub(crate) struct TarIndex<'a> {
    bytes: &'a [u8],
    /// Each entry: a file's place, or where a symbolic link leads.
    entries: HashMap<String, Entry>,
}

enum Entry {
    File { at: usize, len: usize },
    Link(String),
}

/// How many links [`TarIndex::get`] follows.
const MAX_LINKS: usize = 8;

impl<'a> TarIndex<'a> {
    /// The index of `bytes` when it is a tar archive holding a top-level
    /// `manifest.json` (read through its headers once for that, then
    /// again for the index); `None` otherwise, or when its headers cannot
    /// be read (the package walk reports that).
    pub(crate) fn read(bytes: &'a [u8]) -> Option<TarIndex<'a>> {
        let mut found = false;
        for e in tar::Archive::new(bytes).entries().ok()? {
            let e = e.ok()?;
            if normal(&String::from_utf8_lossy(&e.path_bytes())).ok()? == "manifest.json" {
                found = true;
                break;
            }
        }
        if !found {
            return None;
        }
        let mut entries = HashMap::new();
        for e in tar::Archive::new(bytes).entries().ok()? {
            let e = e.ok()?;
            let path = normal(&String::from_utf8_lossy(&e.path_bytes())).ok()?;
            let t = e.header().entry_type();
            let entry = if t.is_symlink() {
                let to = String::from_utf8_lossy(&e.link_name_bytes()?).into_owned();
                Entry::Link(to)
            } else if t.is_file() || t.is_contiguous() {
                Entry::File {
                    at: usize::try_from(e.raw_file_position()).ok()?,
                    len: usize::try_from(e.size()).ok()?,
                }
            } else {
                continue;
            };
            entries.insert(path, entry);
        }
        Some(TarIndex { bytes, entries })
    }

    /// The bytes of the file at `path`, symbolic links followed (relative
    /// to their directory, within the archive).
    pub(crate) fn get(&self, path: &str) -> Option<&'a [u8]> {
        let mut path = normal(path).ok()?;
        for _ in 0..=MAX_LINKS {
            match self.entries.get(&path)? {
                Entry::File { at, len } => return self.bytes.get(*at..at.checked_add(*len)?),
                Entry::Link(to) => {
                    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
                    path = normal(&format!("{dir}/{to}")).ok()?;
                }
            }
        }
        None
    }
}

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
pub(crate) fn normal(path: &str) -> Result<String, ImageError> {
    let mut out = String::with_capacity(path.len());
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(ImageError::OutOfRoot(path.to_string())),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn layers(ls: &[&[(&str, bool)]]) -> Vec<(String, Seen)> {
        let mut s = Shadow::default();
        let mut out = Vec::new();
        for l in ls.iter().rev() {
            for (p, dir) in *l {
                out.push((p.to_string(), s.entry(normal(p).unwrap(), *dir)));
            }
            s.next_layer();
        }
        out
    }

    #[test]
    fn upper_layers_hide_lower_files() {
        let seen = layers(&[
            &[
                ("usr/lib/a.so", false),
                ("usr/lib/gone.so", false),
                ("opt/x/y.so", false),
                ("etc/d/z.so", false),
                ("replaced.so", false),
            ],
            &[
                ("./usr/lib/.wh.gone.so", false),
                ("opt/x", false),
                ("etc/d/.wh..wh..opq", false),
                ("etc/d/new.so", false),
                ("replaced.so", false),
            ],
        ]);
        let visible: Vec<&str> = seen
            .iter()
            .filter(|(_, s)| *s == Seen::Visible)
            .map(|(p, _)| p.as_str())
            .collect();
        assert_eq!(
            visible,
            ["opt/x", "etc/d/new.so", "replaced.so", "usr/lib/a.so"],
            "{seen:?}"
        );
    }

    #[test]
    fn a_directory_in_a_layer_above_keeps_what_is_below_it() {
        let seen = layers(&[&[("d/f.so", false)], &[("d", true), ("d/g.so", false)]]);
        assert!(seen.iter().all(|(_, s)| *s == Seen::Visible), "{seen:?}");
    }

    #[test]
    fn paths_out_of_the_root_are_refused() {
        assert!(normal("usr/../../etc/passwd").is_err());
        assert_eq!(normal("./a//b/").unwrap(), "a/b");
    }

    #[test]
    fn digests_are_read_strictly() {
        assert!(digest_bytes(&format!("sha256:{}", "ab".repeat(32))).is_ok());
        assert!(digest_bytes("sha256:../../x").is_err());
        assert!(digest_bytes(&format!("sha512:{}", "ab".repeat(32))).is_err());
        assert!(digest_bytes(&format!("sha256:{}", "AB".repeat(32))).is_err());
        assert!(digest_bytes(&format!("sha256:+f{}", "ab".repeat(31))).is_err());
    }

    #[test]
    fn docker_archives_are_told_by_their_first_entry() {
        let hex = "0123456789abcdef".repeat(4);
        for yes in [
            format!("{hex}/"),
            format!("{hex}.tar"),
            format!("./{hex}.json"),
            "blobs/".into(),
        ] {
            assert!(may_be_saved(&yes), "{yes}");
        }
        for no in ["usr/", "lib/libfoo.so", &hex[..63], &format!("{hex}x")] {
            assert!(!may_be_saved(no), "{no}");
        }
    }
}

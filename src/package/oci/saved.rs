//! `docker save` archives: a plain tar whose `manifest.json` names each
//! image's config and layers, members of the archive ([`TarIndex`]).

use std::collections::HashMap;

use serde::Deserialize;

use super::digests::digest_bytes;
use super::walk::Blobs;
use super::whiteout::normal;

/// One image of a `docker save` archive's `manifest.json`, for the
/// scanners and for prune's rewrite of the archive alike.
#[derive(Deserialize)]
pub(crate) struct Saved {
    /// Its names (`REPO:TAG`), where it has any.
    #[serde(rename = "RepoTags", default)]
    pub(crate) repo_tags: Option<Vec<String>>,
    /// The member holding its config, where the entry names one.
    #[serde(rename = "Config", default)]
    pub(crate) config: Option<String>,
    /// The members holding its layers, lowest first.
    #[serde(rename = "Layers")]
    pub(crate) layers: Vec<String>,
}

impl Saved {
    /// The member holding the image's config (empty where the entry
    /// names none).
    pub(crate) fn config(&self) -> &str {
        self.config.as_deref().unwrap_or_default()
    }
}

/// The images a `docker save` archive's `manifest.json` (`text`) lists,
/// in its order; `None` when it is no such list.
pub(crate) fn saved_images(text: &[u8]) -> Option<Vec<Saved>> {
    serde_json::from_slice(text).ok()
}

/// The SHA-256 a `docker save` archive's member name says its bytes have:
/// `blobs/sha256/<hex>` (as newer Docker writes layers and configs) or a
/// config's `<hex>.json` (its image ID, as older Docker writes it).
pub(crate) fn named_sha256(member: &str) -> Option<[u8; 32]> {
    let hex = member
        .strip_prefix("blobs/sha256/")
        .or_else(|| member.strip_suffix(".json"))?;
    digest_bytes(&format!("sha256:{hex}"))
}

/// Whether `path` (a directory when `dir`) is one of the entries the
/// first `docker save` format, from before Docker 1.10, wrote for loaders
/// older than `manifest.json`: `repositories`, and the directory named by
/// a v1 layer ID (64 hex digits) with its `json`, `VERSION` and
/// `layer.tar`.
pub(crate) fn is_legacy(path: &str, dir: bool) -> bool {
    use super::digests::is_hex;
    match path.split_once('/') {
        None => path == "repositories" || (dir && is_hex(path)),
        Some((id, name)) => is_hex(id) && ["json", "VERSION", "layer.tar"].contains(&name),
    }
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

/// Whether the tar archive `archive` gives starts as a `docker save`
/// archive does ([`may_be_saved`] of its first entry's path); only that
/// first header is read.
pub(crate) fn starts_as_saved(archive: impl std::io::Read) -> bool {
    let mut tar = crate::package::tar::Reader::new(archive, u64::MAX);
    match tar.next() {
        Ok(Some(h)) => may_be_saved(&h.path_lossy()),
        _ => false,
    }
}

/// The entries of a plain tar archive by their paths, as slices of it: a
/// `docker save` archive's layers, configs and `manifest.json`, for the
/// scanners and for prune's rewrite of the archive alike.
pub(crate) struct TarIndex<'a> {
    bytes: &'a [u8],
    entries: HashMap<String, TarEntry>,
}

/// One entry of a [`TarIndex`] (the last of its path, if there are several).
pub(crate) struct TarEntry {
    /// Where its data lies in the archive, and its size.
    pub(crate) at: usize,
    pub(crate) len: usize,
    /// A symbolic link's target, as written.
    pub(crate) link: Option<String>,
    /// Whether its header holds its whole name (no long name or pax
    /// `path`, no POSIX prefix), so that it can be renamed in place.
    pub(crate) plain: bool,
    /// Whether it is a directory.
    pub(crate) dir: bool,
    /// Whether it is a regular (or contiguous) file.
    pub(crate) file: bool,
}

/// How many symbolic links [`TarIndex::resolve`] follows.
const MAX_LINKS: usize = 8;

impl<'a> TarIndex<'a> {
    /// The index of `bytes` when it is a tar archive holding a top-level
    /// `manifest.json`; `None` otherwise, or when its headers cannot be
    /// read (the package walk reports that).
    pub(crate) fn read(bytes: &'a [u8]) -> Option<TarIndex<'a>> {
        Self::all(bytes).filter(|i| i.entries.contains_key("manifest.json"))
    }

    /// The index of every entry of the tar archive `bytes`, by its path
    /// made normal; `None` when its headers cannot be read or a path
    /// leads out of the archive.
    pub(crate) fn all(bytes: &'a [u8]) -> Option<TarIndex<'a>> {
        let mut entries = HashMap::new();
        let mut tar = crate::package::tar::Reader::new(bytes, u64::MAX);
        while let Some(h) = tar.next().ok()? {
            let given = String::from_utf8_lossy(&h.path);
            let path = normal(&given).ok()?;
            let link = (h.kind() == b'2').then(|| {
                let root = if h.link_absolute { "/" } else { "" };
                format!("{root}{}", String::from_utf8_lossy(&h.link))
            });
            let entry = TarEntry {
                at: usize::try_from(tar.read()).ok()?,
                len: usize::try_from(h.size).ok()?,
                link,
                plain: h.named_in_block,
                dir: h.kind() == b'5',
                file: h.is_file(),
            };
            entries.insert(path, entry);
        }
        Some(TarIndex { bytes, entries })
    }

    /// The entry at `path` (made normal), links not followed.
    pub(crate) fn entry(&self, path: &str) -> Option<&TarEntry> {
        self.entries.get(path)
    }

    /// Every entry, by path, in no order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&String, &TarEntry)> {
        self.entries.iter()
    }

    /// The path of the entry `path` leads to, symbolic links followed; a
    /// link's `..` may climb to the archive's root (`<id>/layer.tar ->
    /// ../<diff_id>.tar`), never above it, and an absolute target leads
    /// nowhere.
    pub(crate) fn resolve(&self, path: &str) -> Option<String> {
        let mut path = normal(path).ok()?;
        for _ in 0..=MAX_LINKS {
            let m = self.entries.get(&path)?;
            let Some(to) = &m.link else {
                return Some(path);
            };
            let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
            path = link_target(dir, to)?;
        }
        None
    }

    /// The data of the entry at `path` (already resolved), whatever its
    /// kind.
    pub(crate) fn data(&self, path: &str) -> Option<&'a [u8]> {
        let m = self.entries.get(path)?;
        self.bytes.get(m.at..m.at.checked_add(m.len)?)
    }

    /// The bytes of the file at `path`, symbolic links followed.
    pub(crate) fn get(&self, path: &str) -> Option<&'a [u8]> {
        let at = self.resolve(path)?;
        self.entries.get(&at)?.file.then_some(())?;
        self.data(&at)
    }
}

/// The path the link target `to`, written in the directory `dir`, names
/// inside the archive; `None` when it climbs above the archive's root or
/// is absolute.
fn link_target(dir: &str, to: &str) -> Option<String> {
    if to.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in to.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// A `docker save` archive of Docker 25 and later holds an OCI layout
/// beside `manifest.json`: its `index.json` and `blobs/sha256/`, served
/// from the archive's bytes.
impl Blobs for TarIndex<'_> {
    /// The file is not in the archive, or over the cap.
    type Error = ();

    fn index_json(&self, cap: u64) -> Result<Vec<u8>, ()> {
        within(self.get("index.json"), cap)
    }

    fn blob(&self, hex: &str, cap: u64) -> Result<Vec<u8>, ()> {
        within(self.get(&format!("blobs/sha256/{hex}")), cap)
    }
}

/// `bytes`, when there are some and at most `cap` of them.
fn within(bytes: Option<&[u8]>, cap: u64) -> Result<Vec<u8>, ()> {
    match bytes {
        Some(b) if b.len() as u64 <= cap => Ok(b.to_vec()),
        _ => Err(()),
    }
}

//! `docker save` archives: a plain tar whose `manifest.json` names each
//! image's config and layers, members of the archive ([`TarIndex`]).

use std::collections::HashMap;

use serde::Deserialize;

use super::digests::digest_bytes;
use super::walk::Blobs;
use super::whiteout::normal;

/// One image of a `docker save` archive's `manifest.json`.
#[derive(Deserialize)]
pub(crate) struct Saved {
    #[serde(rename = "RepoTags", default)]
    pub(crate) repo_tags: Option<Vec<String>>,
    #[serde(rename = "Config", default)]
    pub(crate) config: String,
    #[serde(rename = "Layers")]
    pub(crate) layers: Vec<String>,
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

/// The files of a plain tar archive by their paths, as slices of it, for
/// a `docker save` archive's layers and `manifest.json`.
pub(crate) struct TarIndex<'a> {
    bytes: &'a [u8],
    /// Each entry: a file's place, or where a symbolic link leads.
    entries: HashMap<String, Member>,
}

enum Member {
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
                Member::Link(to)
            } else if t.is_file() || t.is_contiguous() {
                Member::File {
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
                Member::File { at, len } => return self.bytes.get(*at..at.checked_add(*len)?),
                Member::Link(to) => {
                    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
                    path = normal(&format!("{dir}/{to}")).ok()?;
                }
            }
        }
        None
    }
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

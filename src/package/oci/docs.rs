//! The JSON documents of an image (descriptors, indexes, manifests, image
//! configs) as serde reads them, and what the walk makes of them: an
//! [`Index`] of [`Entry`]s, each image with its manifest, config and
//! layers.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

/// A descriptor: what a blob is, its digest and its size.
#[derive(Deserialize, Clone, Debug)]
pub(crate) struct Desc {
    #[serde(rename = "mediaType", default)]
    pub(crate) media_type: String,
    pub(crate) digest: String,
    pub(crate) size: u64,
    #[serde(default)]
    pub(crate) annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) platform: Option<Platform>,
}

impl Desc {
    /// The digest's hex, when it is a sha256 digest a blob's file can be
    /// named by.
    pub(crate) fn hex(&self) -> Option<&str> {
        super::digests::sha256_hex(&self.digest)
    }

    /// What a `docker save` archive's member named `blobs/sha256/<hex>`
    /// (Docker 25 on) must be, its data being `size` bytes: a descriptor
    /// of that digest and size, against which its bytes are checked.
    /// `None` for any other name.
    pub(crate) fn of_blob_member(member: &str, size: u64) -> Option<Desc> {
        let hex = member
            .strip_prefix("blobs/sha256/")
            .filter(|h| super::digests::is_hex(h))?;
        Some(Desc {
            media_type: String::new(),
            digest: format!("sha256:{hex}"),
            size,
            annotations: BTreeMap::new(),
            platform: None,
        })
    }
}

/// The platform an index's descriptor says its image runs on.
#[derive(Deserialize, Clone, Debug)]
pub(crate) struct Platform {
    #[serde(default)]
    os: String,
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    variant: Option<String>,
}

impl Platform {
    /// `os/architecture[/variant]`.
    pub(crate) fn name(&self) -> String {
        match &self.variant {
            Some(v) => format!("{}/{}/{v}", self.os, self.architecture),
            None => format!("{}/{}", self.os, self.architecture),
        }
    }
}

/// An index or a manifest as the scanners read either: an index has
/// `manifests`, a manifest `layers` and `config`.
#[derive(Deserialize)]
pub(super) struct Document {
    #[serde(rename = "mediaType", default)]
    pub(super) media_type: String,
    #[serde(default)]
    pub(super) manifests: Option<Vec<Desc>>,
    #[serde(default)]
    pub(super) layers: Option<Vec<Desc>>,
    #[serde(default)]
    pub(super) config: Option<Desc>,
}

/// An index as prune reads it: its `manifests`, nothing else.
#[derive(Deserialize)]
pub(super) struct IndexDoc {
    pub(super) manifests: Vec<Desc>,
}

/// A manifest as prune reads it: what it must hold to be an image's, and
/// whether it is an index after all.
#[derive(Deserialize)]
pub(super) struct ManifestDoc {
    #[serde(rename = "mediaType", default)]
    pub(super) media_type: String,
    #[serde(default)]
    pub(super) manifests: Option<serde_json::Value>,
    pub(super) config: Option<Desc>,
    #[serde(default)]
    pub(super) layers: Option<Vec<Desc>>,
}

/// The part of an image config read here.
#[derive(Deserialize)]
pub(crate) struct ConfigDoc {
    pub(crate) rootfs: RootFs,
}

impl ConfigDoc {
    /// The `rootfs.diff_ids` of the image config `bytes`, when it is one
    /// and lists one for each of its image's `layers` layers (the entries
    /// are not checked to be digests here).
    pub(crate) fn diff_ids_for(bytes: &[u8], layers: usize) -> Result<Vec<String>, DiffIdsWhy> {
        let c: ConfigDoc = serde_json::from_slice(bytes).map_err(DiffIdsWhy::Json)?;
        let ids = c.rootfs.diff_ids;
        if ids.len() != layers {
            return Err(DiffIdsWhy::Count {
                ids: ids.len(),
                layers,
            });
        }
        Ok(ids)
    }
}

/// Why an image config gives no diff_id for each of its image's layers
/// ([`ConfigDoc::diff_ids_for`]); each caller words it.
#[derive(Debug)]
pub(crate) enum DiffIdsWhy {
    /// It is not an image config: serde's words.
    Json(serde_json::Error),
    /// Its `rootfs.diff_ids` lists `ids` entries, the image `layers`
    /// layers.
    Count { ids: usize, layers: usize },
}

/// An image config's `rootfs`.
#[derive(Deserialize)]
pub(crate) struct RootFs {
    /// The SHA-256 of each layer's tar, decompressed, the lowest first.
    pub(crate) diff_ids: Vec<String>,
}

/// An index document (`index.json`, or an index blob) and what each of
/// its `manifests` is.
pub(crate) struct Index {
    /// The document, for messages: `index.json` or its digest.
    pub(crate) what: String,
    pub(crate) bytes: Vec<u8>,
    pub(crate) entries: Vec<Entry>,
}

/// What one descriptor of an index names.
pub(crate) enum Entry {
    /// An index inside it.
    Index(Index),
    /// An image: a manifest with an image config and layers.
    Image(Desc, Box<Image>),
    /// Anything else (a signature, an attestation, an artifact): left as
    /// it is (only where the walk is [`Mode::Rewrite`](super::Mode)).
    Other,
}

/// One image's manifest, config and layers.
pub(crate) struct Image {
    /// Its name, for messages and reports: its `ref.name` annotation (or
    /// platform, for the scanners) or its digest's start, after the name
    /// of the index it is in.
    pub(crate) name: String,
    /// Where its descriptor is (`index.json: manifests[0]`).
    pub(crate) field: String,
    pub(crate) manifest: Vec<u8>,
    pub(crate) config: Desc,
    pub(crate) config_bytes: Vec<u8>,
    pub(crate) layers: Vec<Desc>,
    /// `rootfs.diff_ids`, one for each layer.
    pub(crate) diff_ids: Vec<String>,
}

/// Why a document is not what it must be.
#[derive(Debug)]
pub(crate) enum NotWhy {
    /// It is not JSON of that shape: the parser's words.
    Json(serde_json::Error),
    /// It lacks this field.
    Lacks(&'static str),
}

impl fmt::Display for NotWhy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotWhy::Json(e) => write!(f, "{e}"),
            NotWhy::Lacks(field) => write!(f, "it has no '{field}'"),
        }
    }
}

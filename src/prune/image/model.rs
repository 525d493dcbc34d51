//! An OCI image layout read for its rewrite: `index.json`, the indexes
//! and manifests it names, each image's config and layers, every small
//! blob checked against its descriptor's size and SHA-256 as it is read
//! (a layer's are checked as it streams, `layer`).

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::Digest as _;

use crate::prune::anchor::LayoutAt;

/// The largest index, manifest or config read (JSON of kilobytes).
pub(super) const MAX_JSON: u64 = 16 << 20;

/// How deeply indexes may nest.
const MAX_DEPTH: u32 = 4;

/// The annotation that names an image of a layout.
const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// Why a layout cannot be read for its rewrite: where (the document and
/// field, `index.json: manifests[0]`), and what is wrong there. Its
/// `Display` is the message the refusal shows.
#[derive(Debug)]
pub(super) struct Unreadable {
    at: String,
    why: Why,
}

/// What is wrong with a layout's document or blob.
#[derive(Debug)]
enum Why {
    /// A `digest` that is no sha256 digest this reader names a file by.
    NotSha256(String),
    /// A small blob whose `size` is over [`MAX_JSON`].
    OverRead(u64),
    /// A blob (`digest`) of `is` bytes whose descriptor `said` another
    /// size.
    Size {
        said: u64,
        digest: String,
        is: u64,
    },
    /// A blob whose SHA-256 is not the `digest` its descriptor gives.
    Digest(String),
    /// A file that cannot be opened, or read.
    Open(String, std::io::Error),
    Read(String, std::io::Error),
    /// A file over [`MAX_JSON`].
    Big(String),
    /// Indexes nested deeper than [`MAX_DEPTH`].
    Nested,
    /// A document that is not the JSON it should be (`what` it should
    /// be, and serde's words).
    Not(&'static str, String),
    /// A config whose `rootfs.diff_ids` count other than its manifest's
    /// layers.
    Layers {
        diff_ids: usize,
        layers: usize,
    },
}

impl Unreadable {
    fn new(at: impl Into<String>, why: Why) -> Unreadable {
        Unreadable { at: at.into(), why }
    }
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.at)?;
        let err = crate::files::strerror;
        match &self.why {
            Why::NotSha256(d) => write!(f, "'digest' '{d}' is not a sha256 digest"),
            Why::OverRead(n) => write!(
                f,
                "'size' says {n} bytes, over the {MAX_JSON} read of such a blob"
            ),
            Why::Size { said, digest, is } => {
                write!(f, "'size' says {said}, the blob {digest} is {is} bytes")
            }
            Why::Digest(d) => write!(f, "'digest' says {d}, the blob's SHA-256 is another"),
            Why::Open(name, e) => write!(f, "cannot open '{name}': {}", err(e)),
            Why::Read(name, e) => write!(f, "cannot read '{name}': {}", err(e)),
            Why::Big(name) => write!(f, "'{name}' is over {MAX_JSON} bytes"),
            Why::Nested => write!(f, "indexes nest more than {MAX_DEPTH} deep"),
            Why::Not(what, e) => write!(f, "not {what}: {e}"),
            Why::Layers { diff_ids, layers } => write!(
                f,
                "'rootfs.diff_ids' lists {diff_ids} layers, the manifest {layers}"
            ),
        }
    }
}

/// A descriptor: what a blob is, its digest and its size.
#[derive(Deserialize, Clone, Debug)]
pub(super) struct Desc {
    #[serde(rename = "mediaType", default)]
    pub(super) media_type: String,
    pub(super) digest: String,
    pub(super) size: u64,
    #[serde(default)]
    pub(super) annotations: BTreeMap<String, String>,
}

impl Desc {
    /// The digest's hex, when it is a sha256 digest this reader names a
    /// file by.
    pub(super) fn hex(&self) -> Option<&str> {
        self.digest.strip_prefix("sha256:").filter(|h| is_hex(h))
    }
}

/// Whether `h` is 64 lowercase hex digits.
pub(super) fn is_hex(h: &str) -> bool {
    h.len() == 64
        && h.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Lowercase hex of `bytes`.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An index document (`index.json`, or an index blob) and what each of
/// its `manifests` is.
pub(super) struct Index {
    /// The document, for messages: `index.json` or its digest.
    pub(super) what: String,
    pub(super) bytes: Vec<u8>,
    pub(super) entries: Vec<Entry>,
}

/// What one descriptor of an index names.
pub(super) enum Entry {
    /// An index inside it.
    Index(Index),
    /// An image: a manifest with an image config and layers.
    Image(Desc, Box<Image>),
    /// Anything else (a signature, an attestation, an artifact): left as
    /// it is.
    Other,
}

/// One image's manifest, config and layers.
pub(super) struct Image {
    /// Its name, for messages and the report.
    pub(super) name: String,
    /// Where its descriptor is (`index.json: manifests[0]`).
    pub(super) field: String,
    pub(super) manifest: Vec<u8>,
    pub(super) config: Desc,
    pub(super) config_bytes: Vec<u8>,
    pub(super) layers: Vec<Desc>,
    /// `rootfs.diff_ids`.
    pub(super) diff_ids: Vec<String>,
}

#[derive(Deserialize)]
struct IndexDoc {
    manifests: Vec<Desc>,
}

#[derive(Deserialize)]
struct ManifestDoc {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    #[serde(default)]
    manifests: Option<serde_json::Value>,
    config: Option<Desc>,
    #[serde(default)]
    layers: Option<Vec<Desc>>,
}

#[derive(Deserialize)]
pub(super) struct ConfigDoc {
    pub(super) rootfs: RootFs,
}

#[derive(Deserialize)]
pub(super) struct RootFs {
    pub(super) diff_ids: Vec<String>,
}

/// Whether `media_type` is an index's.
pub(super) fn is_index(media_type: &str) -> bool {
    media_type.ends_with("image.index.v1+json") || media_type.ends_with("manifest.list.v2+json")
}

/// Whether `media_type` is an image config's.
fn is_image_config(media_type: &str) -> bool {
    matches!(
        media_type,
        "application/vnd.oci.image.config.v1+json"
            | "application/vnd.docker.container.image.v1+json"
    )
}

/// A layout being read.
pub(super) struct Layout<'a> {
    pub(super) dir: &'a Path,
    /// The handles of its directory and blob store, where it was reached
    /// through them (found in a walked tree, or named, in place or in a
    /// dry run): each of its files is then opened in them, a symbolic
    /// link refused, never followed; by its path otherwise (`-o`, `-d`).
    pub(super) at: Option<LayoutAt>,
}

impl Layout<'_> {
    /// The file of the blob `hex`.
    pub(super) fn blob_path(&self, hex: &str) -> PathBuf {
        self.dir.join("blobs").join("sha256").join(hex)
    }

    /// The blob `hex` opened for reading, with its size: a regular file
    /// (on the tree's file system, reached through the handles).
    pub(super) fn open_blob(&self, hex: &str) -> std::io::Result<(File, u64)> {
        let Some(at) = &self.at else {
            return crate::files::open_regular(&self.blob_path(hex));
        };
        match &at.blobs {
            Some(store) => opened_in(store, hex, at.dev()),
            None => Err(std::io::ErrorKind::NotFound.into()),
        }
    }

    /// Whether the layout holds a blob `hex` (not followed, through the
    /// handles: a link there is one).
    pub(super) fn has_blob(&self, hex: &str) -> bool {
        let Some(at) = &self.at else {
            return self.blob_path(hex).exists();
        };
        at.blobs.as_ref().is_some_and(|store| {
            rustix::fs::statat(&**store, hex, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_ok()
        })
    }

    /// `index.json`, read with everything it names.
    pub(super) fn read(&self) -> Result<Index, Unreadable> {
        let path = self.dir.join("index.json");
        let opened = match &self.at {
            Some(at) => opened_in(&at.dir, "index.json", at.dev()),
            None => crate::files::open_regular(&path),
        };
        let bytes = read_small(opened, &path, "index.json")?;
        self.index("index.json".into(), bytes, None, 0)
    }

    /// The small blob `d` (named at `field`), checked against it.
    pub(super) fn small_blob(&self, d: &Desc, field: &str) -> Result<Vec<u8>, Unreadable> {
        let hex = d
            .hex()
            .ok_or_else(|| Unreadable::new(field, Why::NotSha256(d.digest.clone())))?;
        if d.size > MAX_JSON {
            return Err(Unreadable::new(field, Why::OverRead(d.size)));
        }
        let bytes = read_small(self.open_blob(hex), &self.blob_path(hex), field)?;
        if bytes.len() as u64 != d.size {
            let why = Why::Size {
                said: d.size,
                digest: d.digest.clone(),
                is: bytes.len() as u64,
            };
            return Err(Unreadable::new(field, why));
        }
        if hex_sha(&bytes) != hex {
            return Err(Unreadable::new(field, Why::Digest(d.digest.clone())));
        }
        Ok(bytes)
    }

    fn index(
        &self,
        what: String,
        bytes: Vec<u8>,
        name: Option<&str>,
        depth: u32,
    ) -> Result<Index, Unreadable> {
        if depth > MAX_DEPTH {
            return Err(Unreadable::new(what, Why::Nested));
        }
        let doc: IndexDoc = serde_json::from_slice(&bytes)
            .map_err(|e| Unreadable::new(&what, Why::Not("an image index", e.to_string())))?;
        let mut entries = Vec::with_capacity(doc.manifests.len());
        for (i, d) in doc.manifests.into_iter().enumerate() {
            let field = format!("{what}: manifests[{i}]");
            let own = d
                .annotations
                .get(REF_NAME)
                .cloned()
                .unwrap_or_else(|| d.digest.get(..19).unwrap_or(&d.digest).to_string());
            let shown = match name {
                Some(n) => format!("{n}@{own}"),
                None => own,
            };
            let blob = self.small_blob(&d, &field)?;
            let m: ManifestDoc = match serde_json::from_slice(&blob) {
                Ok(m) => m,
                Err(_) if !d.media_type.ends_with("+json") => {
                    entries.push(Entry::Other);
                    continue;
                }
                Err(e) => {
                    let at = format!("{field} ({})", d.digest);
                    return Err(Unreadable::new(at, Why::Not("a manifest", e.to_string())));
                }
            };
            if is_index(&d.media_type) || is_index(&m.media_type) || m.manifests.is_some() {
                let inner = self.index(d.digest.clone(), blob, Some(&shown), depth + 1)?;
                entries.push(Entry::Index(inner));
                continue;
            }
            let (Some(config), Some(layers)) = (m.config, m.layers) else {
                entries.push(Entry::Other);
                continue;
            };
            if !is_image_config(&config.media_type) {
                entries.push(Entry::Other);
                continue;
            }
            let cfield = format!("{} config", d.digest);
            let config_bytes = self.small_blob(&config, &cfield)?;
            let at = format!("{cfield} ({})", config.digest);
            let c: ConfigDoc = serde_json::from_slice(&config_bytes)
                .map_err(|e| Unreadable::new(&at, Why::Not("an image config", e.to_string())))?;
            if c.rootfs.diff_ids.len() != layers.len() {
                let why = Why::Layers {
                    diff_ids: c.rootfs.diff_ids.len(),
                    layers: layers.len(),
                };
                return Err(Unreadable::new(at, why));
            }
            let image = Image {
                name: shown,
                field,
                manifest: blob,
                config,
                config_bytes,
                layers,
                diff_ids: c.rootfs.diff_ids,
            };
            entries.push(Entry::Image(d, Box::new(image)));
        }
        Ok(Index {
            what,
            bytes,
            entries,
        })
    }
}

/// The SHA-256 of `bytes`, in hex.
pub(super) fn hex_sha(bytes: &[u8]) -> String {
    hex(&sha2::Sha256::digest(bytes))
}

/// The regular file `name` in the directory whose handle is `dir`, on
/// the device `dev`, opened for reading with its size: a symbolic link is
/// refused, not followed; a file on another file system too.
fn opened_in(dir: &std::os::fd::OwnedFd, name: &str, dev: u64) -> std::io::Result<(File, u64)> {
    use std::os::unix::fs::MetadataExt;
    let (file, len) = crate::files::open_regular_at(dir, std::ffi::OsStr::new(name))?;
    if file.metadata()?.dev() != dev {
        return Err(std::io::Error::other(
            "it is on another file system than the tree (a mount point): not read",
        ));
    }
    Ok((file, len))
}

/// A JSON file of a layout (`opened`: opened from `path`), within
/// [`MAX_JSON`]; `field` names it in messages. Anything but a regular
/// file (a FIFO, a device, a link to `/dev/zero`) is refused before it is
/// read.
fn read_small(
    opened: std::io::Result<(File, u64)>,
    path: &Path,
    field: &str,
) -> Result<Vec<u8>, Unreadable> {
    let name = crate::files::shown(path).into_owned();
    let (file, len) = opened.map_err(|e| Unreadable::new(field, Why::Open(name.clone(), e)))?;
    if len > MAX_JSON {
        return Err(Unreadable::new(field, Why::Big(name)));
    }
    match crate::files::read_at_most(file, MAX_JSON) {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(Unreadable::new(field, Why::Big(name))),
        Err(e) => Err(Unreadable::new(field, Why::Read(name, e))),
    }
}

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
//!
//! The documents, the walk of a layout and the whiteouts are
//! [`crate::package::oci`]'s, which prune reads images with too; here a
//! layout's files are read by their paths, and its errors are worded as
//! the scanners report them ([`ImageError`]).

use std::path::{Path, PathBuf};

use sha2::Digest as _;

use crate::files::Small;
use crate::package::oci::{
    self, Blobs, DiffIdsWhy, Entry, Index, MAX_JSON, Mode, NotWhy, OciError,
};

mod error;
pub(crate) use error::ImageError;
pub(crate) use oci::{Seen, Shadow, TarIndex, normal, starts_as_saved};

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
    dir.join(oci::LAYOUT_FILE).is_file()
}

/// The images of the layout `dir`: those its `index.json` names (indexes
/// inside it followed), in its order.
pub(crate) fn layout_images(dir: &Path) -> Result<Vec<Image>, ImageError> {
    let index = oci::read(&Dir(dir), Mode::Scan).map_err(said)?;
    let mut images = Vec::new();
    flatten(dir, index, &mut images);
    if images.len() == 1 {
        images[0].name = None;
    }
    Ok(images)
}

/// Adds the images of `index` to `images`, those of indexes inside it
/// where they are: each layer a blob file of the layout `dir`.
fn flatten(dir: &Path, index: Index, images: &mut Vec<Image>) {
    for e in index.entries {
        match e {
            Entry::Index(inner) => flatten(dir, inner, images),
            Entry::Image(_, img) => {
                let img = *img;
                let layers = (img.layers.iter().zip(&img.diff_ids))
                    .map(|(l, id)| Layer {
                        blob: dir
                            .join("blobs")
                            .join("sha256")
                            .join(l.hex().unwrap_or_default()),
                        sha256: oci::digest_bytes(&l.digest),
                        size: Some(l.size),
                        diff_id: oci::digest_bytes(id),
                    })
                    .collect();
                images.push(Image {
                    name: Some(img.name),
                    layers,
                });
            }
            Entry::Other => {}
        }
    }
}

/// A layout's directory, whose files are read by their paths.
struct Dir<'a>(&'a Path);

impl Blobs for Dir<'_> {
    type Error = ImageError;

    fn index_json(&self, cap: u64) -> Result<Vec<u8>, ImageError> {
        read_small(&self.0.join("index.json"), cap)
    }

    fn blob(&self, hex: &str, cap: u64) -> Result<Vec<u8>, ImageError> {
        read_small(&self.0.join("blobs").join("sha256").join(hex), cap)
    }
}

/// The scanners' words for why a layout cannot be read.
fn said(e: OciError<ImageError>) -> ImageError {
    let not = |what, kind, why| ImageError::Not { what, kind, why };
    match e {
        OciError::Deep { .. } => ImageError::Deep(oci::MAX_DEPTH),
        OciError::NotIndex { what, why } => not(format!("'{what}'"), "an image index", why),
        OciError::NotSha256 { field, digest } => ImageError::NotSha256(digest).at(field),
        OciError::OverRead {
            field,
            digest,
            size,
        } => ImageError::Blob {
            digest,
            size,
            max: MAX_JSON,
        }
        .at(field),
        OciError::Store { err, .. } => err,
        OciError::Size {
            field,
            digest,
            said,
            is,
        } => ImageError::Size { len: is, said }.at(format!("{field} ({digest})")),
        OciError::Digest { field, digest } => ImageError::Digest.at(format!("{field} ({digest})")),
        OciError::NotManifest { field, digest, why } => {
            not(format!("{field} ({digest})"), "an image manifest", why)
        }
        OciError::NotConfig { config, why, .. } => {
            not(format!("'{config}'"), "an image config", NotWhy::Json(why))
        }
        OciError::DiffIdCount {
            config,
            ids,
            layers,
            ..
        } => ImageError::DiffIdCount { ids, layers }.at(format!("'{config}'")),
        OciError::DiffId {
            config,
            index,
            digest,
        } => ImageError::NotSha256(digest).at(format!("'{config}': rootfs.diff_ids[{index}]")),
        OciError::LayerDigest { manifest, digest } => {
            ImageError::NotSha256(digest).at(format!("{manifest} layer"))
        }
    }
}

/// Reads a JSON file of a layout, within `max` bytes (the walk's
/// [`MAX_JSON`]). Anything but a regular file (a FIFO, a device, a link
/// to `/dev/zero`) is refused before it is read.
fn read_small(path: &Path, max: u64) -> Result<Vec<u8>, ImageError> {
    let name = crate::files::shown(path).into_owned();
    let opened = crate::files::open_regular(path);
    crate::files::read_small(opened, max).map_err(|e| match e {
        Small::Open(e) => ImageError::Open(name, e),
        Small::Big => ImageError::Large(name, max),
        Small::Read(e) => ImageError::Read(name, e),
    })
}

/// The `rootfs.diff_ids` of the image config `bytes` (named `what`), one
/// for each of `layers` layers.
fn diff_ids(bytes: &[u8], what: &str, layers: usize) -> Result<Vec<[u8; 32]>, ImageError> {
    let ids = oci::ConfigDoc::diff_ids_for(bytes, layers).map_err(|e| match e {
        DiffIdsWhy::Json(e) => ImageError::Not {
            what: format!("'{what}'"),
            kind: "an image config",
            why: NotWhy::Json(e),
        },
        DiffIdsWhy::Count { ids, layers } => {
            ImageError::DiffIdCount { ids, layers }.at(format!("'{what}'"))
        }
    })?;
    ids.iter()
        .enumerate()
        .map(|(i, id)| {
            digest_bytes(id).map_err(|e| e.at(format!("'{what}': rootfs.diff_ids[{i}]")))
        })
        .collect()
}

/// The 32 bytes of a `sha256:<hex>` digest ([`oci::digest_bytes`]).
fn digest_bytes(digest: &str) -> Result<[u8; 32], ImageError> {
    oci::digest_bytes(digest).ok_or_else(|| ImageError::NotSha256(digest.to_string()))
}

/// The images of a `docker save` archive, from its `manifest.json`:
/// each layer a member path of the archive, its diff ID from the
/// image's config. `None` when there is no `manifest.json` that lists
/// images (the tar is some other tar); an error when a config cannot
/// be read or does not fit the image.
pub(crate) fn saved_images(index: &TarIndex<'_>) -> Option<Result<Vec<Image>, ImageError>> {
    let saved = oci::saved_images(index.get("manifest.json")?)?;
    let several = saved.len() > 1;
    let images = saved
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let name = several.then(|| match s.repo_tags.as_deref() {
                Some([tag, ..]) => tag.clone(),
                _ if !s.config().is_empty() => s.config().to_string(),
                _ => format!("#{i}"),
            });
            let config = index
                .get(s.config())
                .ok_or_else(|| ImageError::NoConfig(s.config().to_string()).at("manifest.json"))?;
            if let Some(want) = oci::named_sha256(s.config())
                && sha2::Sha256::digest(config).as_slice() != want
            {
                return Err(ImageError::Digest.at(format!("the config '{}'", s.config())));
            }
            let ids = diff_ids(config, s.config(), s.layers.len())?;
            let layers = s
                .layers
                .into_iter()
                .zip(ids)
                .map(|(l, id)| Layer {
                    // A layer named by its digest is checked against it.
                    sha256: l.strip_prefix("blobs/sha256/").and(oci::named_sha256(&l)),
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

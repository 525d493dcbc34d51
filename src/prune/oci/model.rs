//! An OCI image layout read for its rewrite ([`crate::package::oci`]'s
//! walk: `index.json`, the indexes and manifests it names, each image's
//! config and layers, every small blob checked against its descriptor's
//! size and SHA-256 as it is read; a layer's are checked as it streams,
//! `layer`), its files reached through the layout's directory handles
//! where it has them.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::files::Small;
use crate::package::oci::{self, Blobs, Index, MAX_DEPTH, MAX_JSON, Mode, OciError};
use crate::prune::anchor::LayoutAt;

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
pub(super) enum Why {
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

/// A layout being read.
#[derive(Clone)]
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
        oci::read(self, Mode::Rewrite).map_err(said)
    }
}

/// The layout's files: through its handles where it has them, by their
/// paths otherwise.
impl Blobs for Layout<'_> {
    type Error = Why;

    fn index_json(&self, cap: u64) -> Result<Vec<u8>, Why> {
        let path = self.dir.join("index.json");
        let opened = match &self.at {
            Some(at) => opened_in(&at.dir, "index.json", at.dev()),
            None => crate::files::open_regular(&path),
        };
        read_small(opened, &path, cap)
    }

    fn blob(&self, hex: &str, cap: u64) -> Result<Vec<u8>, Why> {
        read_small(self.open_blob(hex), &self.blob_path(hex), cap)
    }
}

/// Prune's words for why a layout cannot be read.
fn said(e: OciError<Why>) -> Unreadable {
    let not = |what, e: &dyn fmt::Display| Why::Not(what, e.to_string());
    match e {
        OciError::Deep { what } => Unreadable::new(what, Why::Nested),
        OciError::NotIndex { what, why } => Unreadable::new(what, not("an image index", &why)),
        OciError::NotSha256 { field, digest } => Unreadable::new(field, Why::NotSha256(digest)),
        OciError::OverRead { field, size, .. } => Unreadable::new(field, Why::OverRead(size)),
        OciError::Store { field, err } => Unreadable::new(field, err),
        OciError::Size {
            field,
            digest,
            said,
            is,
        } => Unreadable::new(field, Why::Size { said, digest, is }),
        OciError::Digest { field, digest } => Unreadable::new(field, Why::Digest(digest)),
        OciError::NotManifest { field, digest, why } => {
            Unreadable::new(format!("{field} ({digest})"), not("a manifest", &why))
        }
        OciError::NotConfig {
            manifest,
            config,
            why,
        } => Unreadable::new(
            format!("{manifest} config ({config})"),
            not("an image config", &why),
        ),
        OciError::DiffIdCount {
            manifest,
            config,
            ids,
            layers,
        } => Unreadable::new(
            format!("{manifest} config ({config})"),
            Why::Layers {
                diff_ids: ids,
                layers,
            },
        ),
        // Read for the scanners alone.
        OciError::DiffId {
            config,
            index,
            digest,
        } => Unreadable::new(
            format!("{config}: rootfs.diff_ids[{index}]"),
            Why::NotSha256(digest),
        ),
        OciError::LayerDigest { manifest, digest } => {
            Unreadable::new(format!("{manifest} layer"), Why::NotSha256(digest))
        }
    }
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

/// A JSON file of a layout (`opened`: opened from `path`), within `max`
/// bytes (the walk's [`MAX_JSON`], which [`Why::Big`] names). Anything
/// but a regular file (a FIFO, a device, a link to `/dev/zero`) is
/// refused before it is read.
fn read_small(opened: std::io::Result<(File, u64)>, path: &Path, max: u64) -> Result<Vec<u8>, Why> {
    let name = crate::files::shown(path).into_owned();
    crate::files::read_small(opened, max).map_err(|e| match e {
        Small::Open(e) => Why::Open(name, e),
        Small::Big => Why::Big(name),
        Small::Read(e) => Why::Read(name, e),
    })
}

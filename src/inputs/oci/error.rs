//! Why an image of an OCI layout or a `docker save` archive, or one of its
//! layers, could not be read ([`ImageError`]). Its `Display` is the text
//! reports show; where the walk gives it to a command it becomes a
//! [`Unread`] in one line (`From`).

use std::fmt;
use std::io;

use crate::package::oci::{NotWhy, OutOfRoot};
use crate::scan::Unread;

/// Why an image, or a layer of it, could not be read.
#[derive(Debug)]
pub(crate) enum ImageError {
    /// A JSON file of a layout (named as messages show it) cannot be
    /// opened.
    Open(String, io::Error),
    /// A JSON file of a layout cannot be read.
    Read(String, io::Error),
    /// A JSON file of a layout is larger than this many bytes.
    Large(String, u64),
    /// A blob whose size (`len`) is not the one its descriptor says.
    Size { len: u64, said: u64 },
    /// A blob or config whose SHA-256 is not the digest it is named by.
    Digest,
    /// A digest that is not `sha256:` and 64 lowercase hex digits.
    NotSha256(String),
    /// A document (`what`, as messages show it) that is not `kind` (an
    /// image index, manifest or config).
    Not {
        what: String,
        kind: &'static str,
        why: NotWhy,
    },
    /// An image config whose `rootfs.diff_ids` names `ids` layers where
    /// its manifest names `layers`.
    DiffIdCount { ids: usize, layers: usize },
    /// Indexes nested more than this deep.
    Deep(u32),
    /// A small blob (an index, a manifest, a config) over `max` bytes.
    Blob { digest: String, size: u64, max: u64 },
    /// A config a `docker save` archive's `manifest.json` names that is
    /// not in the archive.
    NoConfig(String),
    /// A layer that is not a tar archive.
    NotTar,
    /// A layer whose tar hashes to `got`, not to `want`, its image
    /// config's `rootfs.diff_ids[index]`.
    DiffId {
        got: [u8; 32],
        index: usize,
        want: [u8; 32],
    },
    /// A layer a `docker save` archive names that it does not hold.
    NoMember,
    /// A layer that cannot be opened or read, as the scan says it.
    Unread(Unread),
    /// The error, where it happened (a field of a document, a blob, a
    /// layer): `at: error`.
    At(String, Box<ImageError>),
}

impl ImageError {
    /// This error, where it happened (`at`).
    pub(crate) fn at(self, at: impl Into<String>) -> ImageError {
        ImageError::At(at.into(), Box::new(self))
    }
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let strerror = crate::files::strerror;
        match self {
            ImageError::Open(name, e) => write!(f, "cannot open '{name}': {}", strerror(e)),
            ImageError::Read(name, e) => write!(f, "cannot read '{name}': {}", strerror(e)),
            ImageError::Large(name, max) => write!(f, "'{name}' is over {max} bytes"),
            ImageError::Size { len, said } => {
                write!(f, "it is {len} bytes, its descriptor says {said}")
            }
            ImageError::Digest => f.write_str("its SHA-256 is not the digest it is named by"),
            ImageError::NotSha256(d) => write!(f, "the digest '{d}' is not a sha256 digest"),
            ImageError::Not { what, kind, why } => write!(f, "{what} is not {kind}: {why}"),
            ImageError::DiffIdCount { ids, layers } => {
                write!(
                    f,
                    "rootfs.diff_ids names {ids} layers, the manifest {layers}"
                )
            }
            ImageError::Deep(max) => write!(f, "indexes nest more than {max} deep"),
            ImageError::Blob { digest, size, max } => {
                write!(f, "the blob {digest} is {size} bytes, over {max}")
            }
            ImageError::NoConfig(c) => write!(f, "the config '{c}' is not in the archive"),
            ImageError::NotTar => f.write_str("it is not a tar archive"),
            ImageError::DiffId { got, index, want } => write!(
                f,
                "its tar's SHA-256 is {}, not rootfs.diff_ids[{index}] of the image config ({})",
                digest_string(got),
                digest_string(want)
            ),
            ImageError::NoMember => f.write_str("the archive holds no such file"),
            ImageError::Unread(u) => write!(f, "{u}"),
            ImageError::At(at, e) => write!(f, "{at}: {e}"),
        }
    }
}

impl std::error::Error for ImageError {}

/// The `sha256:<hex>` digest of `sha`.
fn digest_string(sha: &[u8; 32]) -> String {
    format!("sha256:{}", crate::package::oci::hex(sha))
}

/// What the commands are given: the message.
impl From<ImageError> for Unread {
    fn from(e: ImageError) -> Unread {
        Unread::new(e.to_string())
    }
}

/// A layer entry's path out of the image's root, as the commands are
/// given it.
impl From<OutOfRoot> for Unread {
    fn from(e: OutOfRoot) -> Unread {
        Unread::new(e.to_string())
    }
}

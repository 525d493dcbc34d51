//! Container images in the OCI image layout and `docker save` archives,
//! read once for the scanners and for prune: the documents (descriptors,
//! indexes, manifests, image configs), their media types and digests, the
//! caps on what is read, the walk from `index.json` through the indexes
//! and manifests it names to each image's config and layers ([`read`]),
//! and what a layer's whiteouts hide ([`Shadow`]).
//!
//! A layer is rewritten as it streams ([`layer`]: its method, its
//! blob's and tar's digests, its new blob), asking the caller what each
//! entry becomes in each output ([`rewrite`]: the [`Decide`] seam every
//! package format shares), and the documents above it edited where a
//! value changed ([`chain`], on [`json`]'s spans). Once the package
//! records inside a layer are brought up to date, its tar is copied again
//! with their data replaced ([`replace_files`]).
//!
//! [`Decide`]: crate::package::Decide
//!
//! Nothing here opens a path: a layout's files are reached through
//! [`Blobs`], which a directory (the scanners', or prune's through its
//! directory handles) or a tar archive's bytes ([`TarIndex`]) serves;
//! [`reachable`] lists the blobs an index reaches, read through a
//! closure.
//! Errors carry what went wrong and where ([`OciError`]); each caller
//! words them as its messages always have.

/// The file whose presence makes a directory an OCI image layout.
pub(crate) const LAYOUT_FILE: &str = "oci-layout";

pub(crate) mod chain;
mod digests;
mod docs;
pub(crate) mod json;
pub(crate) mod layer;
mod reach;
mod replaced;
pub(crate) mod rewrite;
mod saved;
mod walk;
mod whiteout;

pub(crate) use digests::{
    IMAGE_NAME, MAX_DEPTH, MAX_JSON, REF_NAME, digest_bytes, hex, hex_sha, sha256_hex,
};
pub(crate) use docs::{ConfigDoc, Desc, DiffIdsWhy, Entry, Image, Index, NotWhy};
pub(crate) use reach::reachable;
pub(crate) use replaced::{ReplaceError, replace_files};
#[cfg(test)]
use saved::may_be_saved;
pub(crate) use saved::{Saved, TarIndex, is_legacy, named_sha256, saved_images, starts_as_saved};
pub(crate) use walk::{Blobs, Mode, OciError, read};
pub(crate) use whiteout::{OutOfRoot, Seen, Shadow, normal};

#[cfg(test)]
mod tests;

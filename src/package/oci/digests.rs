//! The constants and little tests of the format: caps, media types,
//! digests and their hex.

use sha2::Digest as _;

/// The largest index, manifest, config or `manifest.json` read (they are
/// JSON of a few kilobytes).
pub(crate) const MAX_JSON: u64 = 16 << 20;

/// How deeply indexes may nest (an index of platforms inside the
/// layout's index is one level).
pub(crate) const MAX_DEPTH: u32 = 4;

/// The annotation that names an image of a layout.
pub(crate) const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// The annotation containerd (and Docker) give an image's full name
/// (`docker.io/library/NAME:TAG`).
pub(crate) const IMAGE_NAME: &str = "io.containerd.image.name";

/// Whether `media_type` is an index's (OCI, or Docker's manifest list).
pub(crate) fn is_index(media_type: &str) -> bool {
    media_type.ends_with("image.index.v1+json") || media_type.ends_with("manifest.list.v2+json")
}

/// Whether `media_type` is an image config's.
pub(crate) fn is_image_config(media_type: &str) -> bool {
    matches!(
        media_type,
        "application/vnd.oci.image.config.v1+json"
            | "application/vnd.docker.container.image.v1+json"
    )
}

/// Whether `h` is 64 lowercase hex digits: a SHA-256 as the OCI image
/// spec writes it, and so a file name in `blobs/sha256`.
pub(crate) fn is_hex(h: &str) -> bool {
    h.len() == 64
        && h.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The hex of the `sha256:<hex>` digest `digest`, when it is one
/// ([`is_hex`]).
pub(crate) fn sha256_hex(digest: &str) -> Option<&str> {
    digest.strip_prefix("sha256:").filter(|h| is_hex(h))
}

/// The 32 bytes of the `sha256:<hex>` digest `digest`, when it is one
/// ([`sha256_hex`]).
pub(crate) fn digest_bytes(digest: &str) -> Option<[u8; 32]> {
    let hex = sha256_hex(digest)?;
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The SHA-256 of `bytes`, in hex.
pub(crate) fn hex_sha(bytes: &[u8]) -> String {
    hex(&sha2::Sha256::digest(bytes))
}

//! What `offload-kit list` reports: one [`Row`] per OffloadBinary image
//! (images of OffloadBinaries nested in images included, as newer LLVM
//! lists them), or a clang offload bundle's [`Listing`]. The types
//! serialize as `list --json` prints them ([`Document`]).

use serde::{Serialize, Serializer};

use super::{FoundImage, ImageKind, OffloadImage, OffloadKind};
use crate::bundle::listing::Listing;

/// One image, as `list` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Row {
    /// The index of the image among the file's images (nested images have
    /// the index of the image they lie in).
    pub index: usize,
    /// Where the image sits among nested OffloadBinaries: `"2"` for the
    /// file's third image, `"2.0"` for the first image inside it.
    pub path: String,
    /// How many images the image holds when it is an OffloadBinary itself.
    pub nested: usize,
    /// The archive member it came from, if any.
    pub member: Option<String>,
    /// The section it came from, if any.
    pub section: Option<String>,
    /// Always `OffloadBinary`.
    pub format: &'static str,
    /// The OffloadBinary version.
    pub version: u32,
    /// Whether the OffloadBinary is compressed.
    pub compressed: bool,
    /// Where the OffloadBinary starts in what it was read from.
    pub binary_offset: u64,
    /// The image's offset in the file, when it is a slice of the file and
    /// not empty.
    pub file_offset: Option<u64>,
    /// The offload kind, as its `Display` names it.
    #[serde(serialize_with = "as_text")]
    pub offload_kind: OffloadKind,
    /// The image kind, as its `Display` names it.
    #[serde(serialize_with = "as_text")]
    pub image_kind: ImageKind,
    /// The `triple` string (lossily decoded).
    pub triple: String,
    /// The `arch` string (lossily decoded).
    pub arch: String,
    /// The image's size in bytes.
    pub size: u64,
    /// Every string of the image, in file order, `triple` and `arch`
    /// included (lossily decoded).
    pub strings: Vec<(String, String)>,
}

impl Row {
    /// The row of `image`, found as `found` (or inside it), at `path` among
    /// nested binaries, holding `nested` images itself; `file_offset` is
    /// where the image's bytes lie in the file, if they are a slice of it.
    pub fn new(
        found: &FoundImage<'_>,
        image: &OffloadImage<'_>,
        index: usize,
        path: String,
        nested: usize,
        file_offset: Option<u64>,
    ) -> Row {
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        Row {
            index,
            path,
            nested,
            member: found.member.clone(),
            section: found.section.clone(),
            format: "OffloadBinary",
            version: image.version,
            compressed: image.compressed,
            binary_offset: image.binary_offset,
            file_offset: file_offset.filter(|_| !image.image.is_empty()),
            offload_kind: image.offload_kind,
            image_kind: image.image_kind,
            triple: lossy(image.triple()),
            arch: lossy(image.arch()),
            size: image.image.len() as u64,
            strings: image
                .strings
                .iter()
                .map(|(k, v)| (lossy(k), lossy(v)))
                .collect(),
        }
    }
}

/// The `list --json` document for one file: its rows, or (with no rows)
/// the bundle it is.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Document<'a> {
    /// The file, as named.
    pub file: &'a str,
    /// The OffloadBinary images.
    pub images: &'a [Row],
    /// The bundle, when the file is one.
    pub bundle: Option<&'a Listing>,
}

/// Serializes a value as the text it displays as.
fn as_text<T: std::fmt::Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

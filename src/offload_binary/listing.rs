//! What `offload-kit list` reports: one [`Row`] per OffloadBinary image
//! (images of OffloadBinaries nested in images included, as newer LLVM
//! lists them), or a clang offload bundle's [`Listing`]. The types
//! serialize as `list --json` prints them ([`Document`]).

use serde::{Serialize, Serializer};

use super::{FoundImage, ImageKind, Limits, OffloadImage, OffloadKind, has_magic, read_all};
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
    /// The image kind, named as every report of offload-kit names it
    /// ([`ImageKind::report_name`]).
    #[serde(serialize_with = "as_report_name")]
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

/// How deep [`rows`] follows OffloadBinaries inside images.
pub const MAX_NESTING: usize = 16;

/// Why [`rows`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum RowsError {
    /// OffloadBinaries nested more than [`MAX_NESTING`] deep.
    TooDeep,
    /// An image that starts with the OffloadBinary magic is no valid
    /// OffloadBinary.
    Inner {
        /// The image's path among nested binaries ([`Row::path`]).
        path: String,
        /// What is wrong with it.
        error: crate::Error,
    },
}

impl std::fmt::Display for RowsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowsError::TooDeep => {
                write!(f, "OffloadBinaries nested more than {MAX_NESTING} deep")
            }
            RowsError::Inner { path, .. } => {
                write!(f, "the OffloadBinary inside image {path}")
            }
        }
    }
}

impl std::error::Error for RowsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RowsError::TooDeep => None,
            RowsError::Inner { error, .. } => Some(error),
        }
    }
}

/// The rows of the images `found` in a file: each image, followed, when
/// it is an OffloadBinary itself, by the rows of the images inside it
/// (`2.0`, `2.1`, …), as newer LLVM lists them. `file_offset` tells where
/// a slice of the file lies in it (`None` for bytes that are not a slice
/// of the file, or when the file is not at hand).
pub fn rows(
    found: &[FoundImage<'_>],
    limits: &Limits,
    file_offset: &dyn Fn(&[u8]) -> Option<u64>,
) -> Result<Vec<Row>, RowsError> {
    let mut out = Vec::new();
    for (index, f) in found.iter().enumerate() {
        let at = Place {
            found: f,
            index,
            depth: 0,
        };
        push_rows(
            &at,
            &f.image,
            index.to_string(),
            limits,
            file_offset,
            &mut out,
        )?;
    }
    Ok(out)
}

/// The image of the file a row comes from, and how deep it is nested.
struct Place<'a, 'd> {
    found: &'a FoundImage<'d>,
    index: usize,
    depth: usize,
}

/// Appends the row of `image` (at `path` among nested binaries) and the
/// rows of the images inside it.
fn push_rows(
    at: &Place<'_, '_>,
    image: &OffloadImage<'_>,
    path: String,
    limits: &Limits,
    file_offset: &dyn Fn(&[u8]) -> Option<u64>,
    out: &mut Vec<Row>,
) -> Result<(), RowsError> {
    let inner = if has_magic(&image.image) {
        if at.depth >= MAX_NESTING {
            return Err(RowsError::TooDeep);
        }
        read_all(&image.image, limits).map_err(|error| RowsError::Inner {
            path: path.clone(),
            error,
        })?
    } else {
        Vec::new()
    };
    out.push(Row::new(
        at.found,
        image,
        at.index,
        path.clone(),
        inner.len(),
        file_offset(&image.image),
    ));
    let deeper = Place {
        depth: at.depth + 1,
        ..*at
    };
    for (k, i) in inner.iter().enumerate() {
        push_rows(&deeper, i, format!("{path}.{k}"), limits, file_offset, out)?;
    }
    Ok(())
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

fn as_report_name<S: Serializer>(v: &ImageKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.report_name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offload_binary::find_images;

    #[test]
    fn rows_of_a_file() {
        let data = include_bytes!("../../fixtures/offload_binary/one.bin");
        let found = find_images(data, &Limits::default()).unwrap();
        let base = data.as_ptr() as usize;
        let offset = |b: &[u8]| Some((b.as_ptr() as usize - base) as u64);
        let rows = rows(&found, &Limits::default(), &offset).unwrap();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(
            (r.path.as_str(), r.nested, r.format),
            ("0", 0, "OffloadBinary")
        );
        assert_eq!(
            (r.triple.as_str(), r.arch.as_str()),
            ("amdgcn-amd-amdhsa", "gfx90a")
        );
        assert!(
            r.file_offset
                .is_some_and(|o| o + r.size <= data.len() as u64)
        );
        let json = serde_json::to_value(r).unwrap();
        assert_eq!(json["offload_kind"], "openmp");
        assert_eq!(json["image_kind"], r.image_kind.report_name().as_ref());
    }
}

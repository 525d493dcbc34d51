//! What `offload-kit list` reports: one [`Row`] per OffloadBinary image
//! (images of OffloadBinaries nested in images included, as newer LLVM
//! lists them), or a clang offload bundle's [`Listing`]. The types
//! serialize as `list --json` prints them ([`Document`]).

use serde::{Serialize, Serializer};

use super::{
    Budget, FoundImage, ImageKind, Inflate, OffloadImage, OffloadKind, find_images_streamed,
    find_images_streamed_of, has_magic,
};
use crate::bundle::listing::{Compressed, Entry, Listing};

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
    /// The row of `image` (of `size` bytes), found as `found` (or inside
    /// it), at `path` among nested binaries, holding `nested` images
    /// itself; `file_offset` is where the image's bytes lie in the file, if
    /// they are a slice of it.
    pub fn new(
        found: &FoundImage<'_>,
        image: &OffloadImage<'_>,
        size: u64,
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
            size,
            strings: image
                .strings
                .iter()
                .map(|(k, v)| (lossy(k), lossy(v)))
                .collect(),
        }
    }
}

/// Why [`rows`] failed: an image that starts with the OffloadBinary magic
/// is no valid OffloadBinary, or reading it would go past the command's
/// budget (nesting too deep, too many bytes inflated or images).
#[derive(Debug)]
#[non_exhaustive]
pub struct RowsError {
    /// The image's path among nested binaries ([`Row::path`]).
    pub path: String,
    /// What is wrong with it.
    pub error: crate::Error,
}

impl std::fmt::Display for RowsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the OffloadBinary inside image {}", self.path)
    }
}

impl std::error::Error for RowsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The rows of the images `found` in a file (by
/// [`find_images_streamed`] with [`Inflate::Nested`], or
/// [`find_images`](super::find_images)): each image, followed, when it is
/// an OffloadBinary itself, by the rows of the images inside it (`2.0`,
/// `2.1`, …), as newer LLVM lists them. Nested binaries are read with the
/// same `budget` (their depth checked against it), their compressed data
/// streamed through once and only their nested binaries kept in memory.
/// `file_offset` tells where a slice of the file lies in it (`None` for
/// bytes that are not a slice of the file, or when the file is not at
/// hand).
pub fn rows(
    found: &[FoundImage<'_>],
    budget: &Budget,
    file_offset: &dyn Fn(&[u8]) -> Option<u64>,
) -> Result<Vec<Row>, RowsError> {
    let mut out = Vec::new();
    for (index, f) in found.iter().enumerate() {
        let at = Place {
            found: f,
            index,
            depth: 0,
        };
        push_rows(&at, f, index.to_string(), budget, file_offset, &mut out)?;
    }
    Ok(out)
}

/// The image of the file a row comes from, and how deep it is nested.
struct Place<'a, 'd> {
    found: &'a FoundImage<'d>,
    index: usize,
    depth: u64,
}

/// Appends the row of `image` (at `path` among nested binaries) and the
/// rows of the images inside it.
fn push_rows(
    at: &Place<'_, '_>,
    image: &FoundImage<'_>,
    path: String,
    budget: &Budget,
    file_offset: &dyn Fn(&[u8]) -> Option<u64>,
    out: &mut Vec<Row>,
) -> Result<(), RowsError> {
    let bytes = &image.image.image;
    let inner = if has_magic(bytes) {
        let fail = |error| RowsError {
            path: path.clone(),
            error,
        };
        budget
            .check_depth(at.depth + 1, || format!("nested {} deep", at.depth + 1))
            .map_err(fail)?;
        find_images_streamed(bytes, budget, Inflate::Nested)
            .map_err(fail)?
            .images
    } else {
        Vec::new()
    };
    out.push(Row::new(
        at.found,
        &image.image,
        image.size(),
        at.index,
        path.clone(),
        inner.len(),
        file_offset(bytes),
    ));
    let deeper = Place {
        depth: at.depth + 1,
        ..*at
    };
    for (k, i) in inner.iter().enumerate() {
        push_rows(&deeper, i, format!("{path}.{k}"), budget, file_offset, out)?;
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
    use crate::Limits;
    use crate::offload_binary::find_images;

    #[test]
    fn rows_of_a_file() {
        let data = include_bytes!("../../fixtures/offload_binary/one.bin");
        let found = find_images(data, &Limits::default()).unwrap();
        let base = data.as_ptr() as usize;
        let offset = |b: &[u8]| Some((b.as_ptr() as usize - base) as u64);
        let rows = rows(&found, &Budget::default(), &offset).unwrap();
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

/// Why a file that looks like a clang offload bundle cannot be listed.
#[derive(Debug)]
pub(crate) enum BundleListingError {
    /// Its bytes (or its compressed contents) cannot be read.
    Read(crate::Error),
    /// It is compressed, and what it holds is no bundle.
    NotABundle,
}

impl From<crate::Error> for BundleListingError {
    fn from(e: crate::Error) -> BundleListingError {
        BundleListingError::Read(e)
    }
}

/// The input as a clang offload bundle, if it is one (binary, text, object
/// with bundle sections, or any of them compressed).
///
/// An object that carries OffloadBinaries too is none: those are listed
/// the usual way. `kind` is the input's format as `object::FileKind::parse`
/// reads it (`None`: an error), which the caller read once.
pub(crate) fn bundle_listing(
    input: &[u8],
    kind: Option<object::FileKind>,
    budget: &Budget,
) -> Result<Option<Listing>, BundleListingError> {
    use crate::bundle::ccob::{HashCheck, ReadOptions};
    use crate::bundle::{self, Format};
    if let Some(listing) = ccob_header_listing(input)? {
        return Ok(Some(listing));
    }
    let opts = ReadOptions {
        hash: HashCheck::Enforce,
        limits: crate::Limits::default(),
    };
    let inflated = bundle::ops::open(input, &opts)?;
    let data = inflated.as_ref().map_or(input, |d| d.data.as_slice());
    // The object format of `data`: the input's, or the decompressed
    // contents', read once for the format, the OffloadBinaries and the
    // entries.
    let kind = match &inflated {
        None => bundle::object_kind_of(kind),
        Some(_) => bundle::object_kind(data),
    };
    let Some(format) = Format::detect_of(data, kind) else {
        if inflated.is_some() {
            return Err(BundleListingError::NotABundle);
        }
        return Ok(None);
    };
    // (Only the tables are read, within what is left of the budget, which
    // the listing spends again.)
    if format == Format::Object
        && find_images_streamed_of(data, kind, &budget.fork(), Inflate::Tables)
            .is_ok_and(|v| !v.images.is_empty())
    {
        return Ok(None);
    }
    let found = bundle::entries_of(data, format, kind)?;
    let base = data.as_ptr() as usize;
    let entries = found
        .iter()
        .enumerate()
        .map(|(index, f)| {
            let offset = (f.data.as_ptr() as usize).saturating_sub(base) as u64;
            Entry::new(index, f.id, offset, f.data.len() as u64)
        })
        .collect();
    let compressed = inflated.map(|d| Compressed::new(&d.header, d.compressed_size));
    Ok(Some(Listing::new(format, compressed, entries)))
}

/// The listing of a CCOB that holds a binary bundle, from the bundle
/// header alone: the contents are streamed only that far, so a bomb costs
/// nothing (the stored hash is not checked: `inspect --verify` does).
/// `None` for anything else, listed from the whole contents; an error for
/// contents whose first bytes show they are no bundle at all.
fn ccob_header_listing(data: &[u8]) -> Result<Option<Listing>, BundleListingError> {
    use crate::bundle::{self, binary, ccob};
    if !ccob::llvm_treats_as_compressed(data) {
        return Ok(None);
    }
    // Anything irregular is left to the full read, for its exact error.
    let Ok(c) = ccob::Ccob::parse(data) else {
        return Ok(None);
    };
    if c.size != data.len() as u64 || c.check_declared_size().is_err() {
        return Ok(None);
    }
    let records = match c.bundle_records() {
        Ok(Some(r)) => r,
        Ok(None) => {
            let prefix = c.decompress_prefix(bundle::SNIFF_LEN)?;
            if !bundle::may_be_text_or_object_bundle(&prefix) {
                return Err(BundleListingError::NotABundle);
            }
            return Ok(None);
        }
        Err(_) => return Ok(None),
    };
    // LLVM's order, by the records' IDs (the entry's `offset` holds its
    // record index here).
    let stand_ins: Vec<binary::Entry> = records
        .iter()
        .enumerate()
        .map(|(i, r)| binary::Entry {
            id: &r.id,
            offset: i as u64,
            data: &[],
        })
        .collect();
    let entries = binary::in_llvm_order(&stand_ins)
        .into_iter()
        .enumerate()
        .map(|(index, e)| {
            let r = &records[usize::try_from(e.offset).unwrap_or_default()];
            Entry::new(index, &r.id, r.offset, r.size)
        })
        .collect();
    Ok(Some(Listing::new(
        bundle::Format::Binary,
        Some(Compressed::of(&c)),
        entries,
    )))
}

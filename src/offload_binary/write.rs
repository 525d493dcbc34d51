//! Writing OffloadBinaries.
//!
//! A writer never holds image bytes: it produces a [`Layout`], a list of
//! [`Piece`]s (metadata bytes it built, runs of zero padding, and references
//! to the caller's images by index), which the caller writes out, copying each
//! image straight from its file. [`Layout::write_to`] does that for images
//! already in memory.
//!
//! Version 1 (what LLVM 22 writes) is one binary per image, concatenated:
//! header, entry, string entries, string table, zero padding to 8, the image,
//! zero padding to 8. Version 2 is one binary for all images: header, all
//! entries, all string entries, one string table, padding, the images back to
//! back, padding.

use zerocopy::IntoBytes;

use super::kinds::{ImageKind, OffloadKind};
use super::raw::{
    ALIGN, ENTRY_SIZE, Entry, HEADER_SIZE, HEADER_V3_SIZE, Header, MAGIC, STRING_ENTRY_V1_SIZE,
    STRING_ENTRY_V2_SIZE, StringEntryV1, StringEntryV2, align_up,
};
use crate::error::{Error, Result};
use crate::layout::{Layout, Piece};
use crate::llvm::string_table::StringTable;
use crate::num::usize_from;

/// The metadata of one image to write; the bytes stay with the caller.
#[derive(Debug, Clone, Default)]
pub struct ImageSpec {
    /// Image kind.
    pub image_kind: ImageKind,
    /// Offload kind.
    pub offload_kind: OffloadKind,
    /// Entry flags.
    pub flags: u32,
    /// Key/value strings, in the order their string entries are written.
    pub strings: Vec<(Vec<u8>, Vec<u8>)>,
    /// Size of the image in bytes.
    pub size: u64,
}

fn too_large() -> Error {
    Error::too_large("the OffloadBinary")
}

fn add(a: u64, b: u64) -> Result<u64> {
    a.checked_add(b).ok_or_else(too_large)
}

fn align8(x: u64) -> Result<u64> {
    align_up(x, ALIGN).ok_or_else(too_large)
}

/// Lays out version 1: one binary per image, in order, as LLVM 22 writes them.
pub(crate) fn layout_v1(images: &[ImageSpec]) -> Result<Layout> {
    let mut layout = Layout::default();
    for (i, img) in images.iter().enumerate() {
        push_v1(&mut layout, i, img)?;
    }
    Ok(layout)
}

/// One image packed in a version 1 binary ([`layout_v1`] of `img` alone),
/// and where the image lies in it: what a wrapper embedding the binary
/// needs to point the runtime at the image without writing the binary out
/// first.
pub(crate) fn layout_v1_one(img: &ImageSpec) -> Result<(Layout, std::ops::Range<u64>)> {
    let mut layout = Layout::default();
    let image = push_v1(&mut layout, 0, img)?;
    Ok((layout, image))
}

/// Appends the binary of image `i` to `layout`; returns where the image
/// lies in that binary.
fn push_v1(layout: &mut Layout, i: usize, img: &ImageSpec) -> Result<std::ops::Range<u64>> {
    let table = StringTable::build(
        img.strings
            .iter()
            .flat_map(|(k, v)| [k.as_slice(), v.as_slice()]),
    );
    let n = img.strings.len() as u64;
    let strtab_at = HEADER_SIZE + ENTRY_SIZE + STRING_ENTRY_V1_SIZE * n;
    let image_at = align8(add(strtab_at, table.bytes().len() as u64)?)?;
    let size = align8(add(image_at, img.size)?)?;

    let mut meta = Vec::with_capacity(usize_from(image_at));
    let hdr = Header {
        magic: MAGIC,
        version: 1.into(),
        size: size.into(),
        entry_offset: HEADER_SIZE.into(),
        entry_size_or_count: ENTRY_SIZE.into(),
    };
    meta.extend_from_slice(hdr.as_bytes());
    let entry = Entry {
        image_kind: img.image_kind.0.into(),
        offload_kind: img.offload_kind.0.into(),
        flags: img.flags.into(),
        string_offset: (HEADER_SIZE + ENTRY_SIZE).into(),
        num_strings: n.into(),
        image_offset: image_at.into(),
        image_size: img.size.into(),
    };
    meta.extend_from_slice(entry.as_bytes());
    for (k, v) in &img.strings {
        let se = StringEntryV1 {
            key_offset: (strtab_at + table.offset(k).unwrap_or(0)).into(),
            value_offset: (strtab_at + table.offset(v).unwrap_or(0)).into(),
        };
        meta.extend_from_slice(se.as_bytes());
    }
    meta.extend_from_slice(table.bytes());
    meta.resize(usize_from(image_at), 0);
    layout.push(Piece::Bytes(meta), image_at);
    layout.push(Piece::Image(i), img.size);
    layout.push(
        Piece::Zeros(size - image_at - img.size),
        size - image_at - img.size,
    );
    Ok(image_at..image_at + img.size)
}

/// Lays out version 2: one binary holding every image as an entry, as newer
/// LLVM writes it (32-byte header, 24-byte string entries with value sizes).
pub(crate) fn layout_v2(images: &[ImageSpec]) -> Result<Layout> {
    layout_multi(images, 2)
}

/// Lays out version 3 without compression: version 2 with the 40-byte header
/// (inflated size 0). See [`compress`] for the compressed form.
pub(crate) fn layout_v3(images: &[ImageSpec]) -> Result<Layout> {
    layout_multi(images, 3)
}

fn layout_multi(images: &[ImageSpec], version: u32) -> Result<Layout> {
    let header_size = if version >= 3 {
        HEADER_V3_SIZE
    } else {
        HEADER_SIZE
    };
    let mut layout = Layout::default();
    if images.is_empty() {
        return Ok(layout);
    }
    let table = StringTable::build(images.iter().flat_map(|img| {
        img.strings
            .iter()
            .flat_map(|(k, v)| [k.as_slice(), v.as_slice()])
    }));
    let count = images.len() as u64;
    let nstrings: u64 = images.iter().map(|i| i.strings.len() as u64).sum();
    let entries_len = ENTRY_SIZE * count;
    let strtab_at = header_size + entries_len + STRING_ENTRY_V2_SIZE * nstrings;
    let data_at = align8(add(strtab_at, table.bytes().len() as u64)?)?;
    let mut total_images = 0u64;
    for img in images {
        total_images = add(total_images, img.size)?;
    }
    let size = align8(add(data_at, total_images)?)?;

    let mut meta = Vec::with_capacity(usize_from(data_at));
    let hdr = Header {
        magic: MAGIC,
        version: version.into(),
        size: size.into(),
        entry_offset: header_size.into(),
        entry_size_or_count: count.into(),
    };
    meta.extend_from_slice(hdr.as_bytes());
    if version >= 3 {
        meta.extend_from_slice(&0u64.to_le_bytes()); // inflated size: not compressed
    }
    let mut se_at = header_size + entries_len;
    let mut image_at = data_at;
    for img in images {
        let n = img.strings.len() as u64;
        let entry = Entry {
            image_kind: img.image_kind.0.into(),
            offload_kind: img.offload_kind.0.into(),
            flags: img.flags.into(),
            string_offset: se_at.into(),
            num_strings: n.into(),
            image_offset: image_at.into(),
            image_size: img.size.into(),
        };
        meta.extend_from_slice(entry.as_bytes());
        se_at += STRING_ENTRY_V2_SIZE * n;
        image_at += img.size;
    }
    for img in images {
        for (k, v) in &img.strings {
            let se = StringEntryV2 {
                key_offset: (strtab_at + table.offset(k).unwrap_or(0)).into(),
                value_offset: (strtab_at + table.offset(v).unwrap_or(0)).into(),
                value_size: (v.len() as u64).into(),
            };
            meta.extend_from_slice(se.as_bytes());
        }
    }
    meta.extend_from_slice(table.bytes());
    meta.resize(usize_from(data_at), 0);
    layout.push(Piece::Bytes(meta), data_at);
    for (i, img) in images.iter().enumerate() {
        layout.push(Piece::Image(i), img.size);
    }
    layout.push(
        Piece::Zeros(size - data_at - total_images),
        size - data_at - total_images,
    );
    Ok(layout)
}

/// An OffloadBinary format version to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Version {
    /// Version 1, what LLVM 22 writes: one binary per image, concatenated.
    #[default]
    V1,
    /// Version 2 (newer LLVM): one binary holding every image as an entry,
    /// 24-byte string entries with value sizes.
    V2,
    /// Version 3: version 2 with the 40-byte header, uncompressed as laid
    /// out; [`compress`] compresses it.
    V3,
}

impl Version {
    /// The number the header stores.
    pub fn number(self) -> u32 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
            Version::V3 => 3,
        }
    }
}

impl TryFrom<u32> for Version {
    type Error = Error;

    /// The version numbered `n`: 1, 2 or 3; any other is an error.
    fn try_from(n: u32) -> Result<Version> {
        match n {
            1 => Ok(Version::V1),
            2 => Ok(Version::V2),
            3 => Ok(Version::V3),
            v => Err(Error::usage(format!(
                "cannot write OffloadBinary version {v}: only 1, 2 and 3 are written"
            ))),
        }
    }
}

/// Lays out `images` as OffloadBinaries of `version` (version 3
/// uncompressed: see [`compress`]). The layout refers to the images by
/// index; [`Layout::write_to`] writes it.
pub fn layout(images: &[ImageSpec], version: Version) -> Result<Layout> {
    match version {
        Version::V1 => layout_v1(images),
        Version::V2 => layout_v2(images),
        Version::V3 => layout_v3(images),
    }
}

/// Compression of a version 3 binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// A zlib stream (RFC 1950).
    Zlib,
    /// A zstd frame.
    Zstd,
}

/// Compresses an uncompressed version 3 binary (as [`layout`] writes it for
/// [`Version::V3`]):
/// everything after the header is compressed, the header gets the inflated
/// size, and the result is padded to 8 bytes (the padding is not counted in
/// the header's size), as newer LLVM does. This holds the whole binary in
/// memory, which compression needs anyway.
pub fn compress(binary: &[u8], how: Compression, level: i32) -> Result<Vec<u8>> {
    use std::io::Write as _;
    let hdr_len = usize_from(HEADER_V3_SIZE);
    if binary.len() < hdr_len || binary[4..8] != 3u32.to_le_bytes() {
        return Err(Error::usage(
            "compress needs an uncompressed version 3 binary",
        ));
    }
    let body = &binary[hdr_len..];
    let packed = match how {
        Compression::Zstd => zstd::bulk::compress(body, level)?,
        Compression::Zlib => {
            let level = flate2::Compression::new(level.clamp(0, 9).unsigned_abs());
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
            e.write_all(body)?;
            e.finish()?
        }
    };
    let mut out = binary[..hdr_len].to_vec();
    let size = HEADER_V3_SIZE + packed.len() as u64;
    out[8..16].copy_from_slice(&size.to_le_bytes());
    out[32..40].copy_from_slice(&(binary.len() as u64).to_le_bytes());
    out.extend_from_slice(&packed);
    out.resize(usize_from(align8(size)?), 0);
    Ok(out)
}

//! Reading OffloadBinaries: versions 1, 2 and 3, one after another in a buffer.
//!
//! Nothing here trusts a field: every offset and size is checked against the
//! binary it belongs to, the fixed tables (header, entries, string entries)
//! must not overlap each other or any image, images must not overlap each
//! other, and compressed (v3) data inflates to at most [`Limits::max_inflated`]
//! bytes. Image bytes are borrowed from the input when it is not compressed,
//! so a caller holding a mapped file can copy them file to file.

use std::borrow::Cow;
use std::io::Read;

use zerocopy::FromBytes;

use super::kinds::{ImageKind, OffloadKind};
use super::raw::{
    ALIGN, ENTRY_SIZE, Entry, HEADER_SIZE, HEADER_V3_SIZE, Header, HeaderV3, MAGIC,
    STRING_ENTRY_V1_SIZE, STRING_ENTRY_V2_SIZE, StringEntryV1, StringEntryV2, align_up,
};
use crate::bytes::Bytes;
use crate::decoded::Exact;
use crate::error::{Error, ErrorKind, Result};
use crate::num::{len64, usize_from};

/// Bounds applied while reading.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest size a compressed (v3) binary may inflate to.
    pub max_inflated: u64,
}

impl Default for Limits {
    fn default() -> Self {
        // Device images reach a few GiB; anything beyond this is a bomb.
        Limits {
            max_inflated: 8 << 30,
        }
    }
}

/// A key and its value, borrowed from the input or owned (after inflating).
pub type KeyValue<'data> = (Cow<'data, [u8]>, Cow<'data, [u8]>);

/// One image of an OffloadBinary, with its metadata.
#[derive(Debug, Clone)]
pub struct OffloadImage<'data> {
    /// Version of the binary the image came from.
    pub version: u32,
    /// Offset of that binary in the buffer that was read.
    pub binary_offset: u64,
    /// Size of that binary as stored (compressed size for compressed v3).
    pub binary_size: u64,
    /// Index of the entry within its binary.
    pub index: u64,
    /// Whether the binary was compressed (v3).
    pub compressed: bool,
    /// Image kind.
    pub image_kind: ImageKind,
    /// Offload kind.
    pub offload_kind: OffloadKind,
    /// Entry flags.
    pub flags: u32,
    /// Key/value strings, in file order.
    pub strings: Vec<KeyValue<'data>>,
    /// Offset of the image from the start of its (uncompressed) binary.
    pub image_offset: u64,
    /// The image bytes.
    pub image: Cow<'data, [u8]>,
}

impl<'data> OffloadImage<'data> {
    /// The value of `key` (the last one if the key repeats), as LLVM's map does.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.strings
            .iter()
            .rev()
            .find(|(k, _)| **k == *key)
            .map(|(_, v)| &**v)
    }

    /// The value of `key`, or empty if absent (LLVM's `getString`).
    pub fn string(&self, key: &str) -> &[u8] {
        self.get(key.as_bytes()).unwrap_or_default()
    }

    /// The `triple` string.
    pub fn triple(&self) -> &[u8] {
        self.string("triple")
    }

    /// The `arch` string.
    pub fn arch(&self) -> &[u8] {
        self.string("arch")
    }

    /// A copy that owns all its data.
    pub fn into_owned(self) -> OffloadImage<'static> {
        OffloadImage {
            strings: self
                .strings
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.into_owned()), Cow::Owned(v.into_owned())))
                .collect(),
            image: Cow::Owned(self.image.into_owned()),
            ..self
        }
    }
}

/// Whether `data` starts with the OffloadBinary magic.
pub fn has_magic(data: &[u8]) -> bool {
    data.starts_with(&MAGIC)
}

/// Reads every OffloadBinary in `data`: they follow each other, each starting
/// at the next multiple of 8 after the previous one's `size` (newer LLVM
/// realigns like this; LLVM 22 does not, but everything it writes has sizes
/// that are multiples of 8, and compressed v3 binaries need it). Bytes after
/// the last binary that are not another binary are an error, as in LLVM.
pub fn read_all<'data>(data: &'data [u8], limits: &Limits) -> Result<Vec<OffloadImage<'data>>> {
    let mut out = Vec::new();
    let mut at = 0u64;
    while at < len64(data) {
        let size = read_binary(data, at, limits, &mut out)?;
        // `at + size` is within `data`, so neither step overflows.
        at = align_up(at + size, ALIGN).unwrap_or(u64::MAX);
    }
    Ok(out)
}

/// Reads the one OffloadBinary at `at` in `data`, appending its images to
/// `out`; returns its stored size.
pub fn read_binary<'data>(
    data: &'data [u8],
    at: u64,
    limits: &Limits,
    out: &mut Vec<OffloadImage<'data>>,
) -> Result<u64> {
    let Located {
        bin,
        header,
        compressed,
    } = locate(data, at)?;
    let size = len64(bin);
    if let Some(h3) = compressed {
        out.extend(read_compressed(bin, &h3, at, limits)?);
        return Ok(size);
    }
    read_uncompressed(bin, &header, at, size, false, out)?;
    Ok(size)
}

/// The OffloadBinary at some offset of a buffer, its header checked.
pub(super) struct Located<'data> {
    /// Its bytes, as stored.
    pub(super) bin: &'data [u8],
    pub(super) header: Header,
    /// The version 3 header of a compressed binary.
    pub(super) compressed: Option<HeaderV3>,
}

/// Finds the OffloadBinary at `at` in `data`: checks its magic, alignment,
/// version and size.
pub(super) fn locate(data: &[u8], at: u64) -> Result<Located<'_>> {
    let rest = tail(data, at);
    if !has_magic(rest) {
        return Err(ErrorKind::BadMagic {
            what: "OffloadBinary",
            offset: at,
            expected: "10 FF 10 AD",
        }
        .into());
    }
    if !at.is_multiple_of(ALIGN) {
        return Err(ErrorKind::Misaligned {
            what: "OffloadBinary",
            offset: at,
            align: ALIGN,
        }
        .into());
    }
    let Ok((hdr, _)) = Header::read_from_prefix(rest) else {
        return Err(truncated(
            "OffloadBinary header",
            at,
            HEADER_SIZE,
            len64(rest),
        ));
    };
    let version = hdr.version.get();
    if !(1..=3).contains(&version) {
        return Err(ErrorKind::UnsupportedVersion {
            what: "OffloadBinary",
            version: u64::from(version),
            offset: at,
        }
        .into());
    }
    // LLVM 22 wants room for a header and an entry before it looks further.
    if version < 3 && len64(rest) < HEADER_SIZE + ENTRY_SIZE {
        return Err(truncated(
            "OffloadBinary header",
            at,
            HEADER_SIZE + ENTRY_SIZE,
            len64(rest),
        ));
    }
    let size = hdr.size.get();
    if size > len64(rest) {
        return Err(ErrorKind::OutOfBounds {
            what: format!("OffloadBinary at {at:#x}"),
            offset: at,
            size,
            within: "input",
            limit: len64(data),
        }
        .into());
    }
    // `size <= rest.len()`, so it fits in usize.
    let bin = &rest[..usize_from(size)];
    let mut compressed = None;
    if version == 3 {
        let Ok((h3, _)) = HeaderV3::read_from_prefix(bin) else {
            return Err(truncated(
                "OffloadBinary v3 header",
                at,
                HEADER_V3_SIZE,
                len64(bin),
            ));
        };
        if h3.inflated_size.get() != 0 {
            compressed = Some(h3);
        }
    }
    Ok(Located {
        bin,
        header: hdr,
        compressed,
    })
}

fn read_compressed(
    bin: &[u8],
    h3: &HeaderV3,
    at: u64,
    limits: &Limits,
) -> Result<Vec<OffloadImage<'static>>> {
    let (body_at, inflated) = compressed_body(bin, h3, at, limits)?;
    // The uncompressed binary, in one buffer of its exact size: its header
    // and what lies before the compressed data, then the body inflated
    // straight after them (never a second copy).
    let whole = inflate_whole(bin, h3, body_at, inflated)?;
    let mut images = Vec::new();
    let hdr = whole_header(h3);
    read_uncompressed(&whole, &hdr, at, len64(bin), true, &mut images)?;
    Ok(images.into_iter().map(OffloadImage::into_owned).collect())
}

/// The compressed binary `bin` (header `h3`, data from `body_at`) inflated
/// whole into one buffer of exactly `inflated` bytes, allocated once:
/// [`inflated_head`], then [`body_reader`] read to its end. `inflated` is
/// checked against the caller's limit before this is called.
///
/// [`read_all`] and [`read_binary`] inflate a compressed version 3 binary
/// whole: it is a complete OffloadBinary whose entry table and string
/// table give offsets anywhere in it. The scanner and the commands stream
/// it instead where the tables come first, as LLVM writes them
/// ([`read_inflating`](super::read_inflating),
/// [`find_images_streamed`](super::find_images_streamed)).
pub(super) fn inflate_whole(
    bin: &[u8],
    h3: &HeaderV3,
    body_at: u64,
    inflated: u64,
) -> Result<Vec<u8>> {
    let Ok(cap) = usize::try_from(inflated) else {
        return Err(ErrorKind::LimitExceeded {
            what: "inflated size".into(),
            limit: usize::MAX as u64,
        }
        .into());
    };
    let head = inflated_head(bin, h3, body_at);
    let mut whole = Vec::new();
    whole.try_reserve_exact(cap).map_err(|_| {
        Error::from(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!("no memory for the {inflated} bytes a compressed OffloadBinary inflates to"),
        ))
    })?;
    whole.extend_from_slice(&head);
    let mut body = body_reader(tail(bin, body_at), inflated - body_at)?;
    // The vector is exactly as large as the data: `read_to_end` probes for
    // the end with a small read on the stack, never growing it.
    body.read_to_end(&mut whole).map_err(Error::from_io)?;
    Ok(whole)
}

/// The header of a compressed binary `h3` once inflated: its size the
/// inflated size, and no inflated size.
pub(super) fn whole_header(h3: &HeaderV3) -> Header {
    let mut hdr = h3.base;
    hdr.size.set(h3.inflated_size.get());
    hdr
}

/// The first `body_at` bytes of the compressed binary `bin` (header `h3`)
/// once inflated: the header as the uncompressed binary has it (size =
/// inflated size, no inflated size), then the bytes before the
/// compressed data.
pub(super) fn inflated_head(bin: &[u8], h3: &HeaderV3, body_at: u64) -> Vec<u8> {
    let mut hdr = *h3;
    hdr.base = whole_header(h3);
    hdr.inflated_size.set(0);
    let mut head = zerocopy::IntoBytes::as_bytes(&hdr).to_vec();
    head.extend_from_slice(&bin[usize_from(HEADER_V3_SIZE)..usize_from(body_at)]);
    head
}

/// Checks where a compressed binary's data starts (`body_at`, returned)
/// and the size it inflates to (returned), against the binary and
/// `limits`.
pub(super) fn compressed_body(
    bin: &[u8],
    h3: &HeaderV3,
    at: u64,
    limits: &Limits,
) -> Result<(u64, u64)> {
    let size = len64(bin);
    let body_at = h3.base.entry_offset.get();
    let inflated = h3.inflated_size.get();
    if body_at < HEADER_V3_SIZE || body_at > size {
        return Err(ErrorKind::OutOfBounds {
            what: "compressed data".into(),
            offset: body_at,
            size: size.saturating_sub(body_at),
            within: "binary",
            limit: size,
        }
        .into());
    }
    if inflated < body_at {
        return Err(Error::invalid(
            "inflated size",
            format!("{inflated} is smaller than the header ({body_at} bytes)"),
        ));
    }
    if inflated > limits.max_inflated {
        return Err(ErrorKind::LimitExceeded {
            what: format!("compressed OffloadBinary at {at:#x} (inflated size {inflated})"),
            limit: limits.max_inflated,
        }
        .into());
    }
    Ok((body_at, inflated))
}

/// What the header of an OffloadBinary says about its form, for reports:
/// its version and, for a compressed version 3 binary, how it is
/// compressed. Only meaningful for a binary [`read_binary`] accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeaderSummary {
    /// The format version.
    pub version: u32,
    /// For a compressed binary: the method, `zstd` or `zlib`.
    pub method: Option<&'static str>,
    /// For a compressed binary: offset of the compressed data (the header
    /// and entry table before it stay uncompressed).
    pub body_offset: u64,
    /// For a compressed binary: the size of the whole binary once inflated.
    pub inflated_size: u64,
}

/// Reads the header of the OffloadBinary that starts `bin` (see
/// [`HeaderSummary`]); `None` when it is too short for a header.
pub fn header_summary(bin: &[u8]) -> Option<HeaderSummary> {
    let (hdr, _) = Header::read_from_prefix(bin).ok()?;
    let version = hdr.version.get();
    let inflated = match HeaderV3::read_from_prefix(bin) {
        Ok((h3, _)) if version == 3 => h3.inflated_size.get(),
        _ => 0,
    };
    let body_offset = hdr.entry_offset.get();
    let method = (inflated != 0).then(|| {
        let body = bin.get(usize_from(body_offset)..).unwrap_or_default();
        if is_zstd(body) { "zstd" } else { "zlib" }
    });
    Some(HeaderSummary {
        version,
        method,
        body_offset,
        inflated_size: inflated,
    })
}

/// Whether compressed data starts with a zstd frame's magic (else zlib).
fn is_zstd(compressed: &[u8]) -> bool {
    compressed.starts_with(&[0x28, 0xB5, 0x2F, 0xFD])
}

/// The zstd (by magic) or zlib data of a compressed binary as a stream of
/// exactly `want` bytes; data that ends early, inflates further or is
/// corrupt fails the read ([`ErrorKind::Decompress`] inside the
/// `io::Error`).
pub(super) fn body_reader(compressed: &[u8], want: u64) -> Result<Box<dyn Read + '_>> {
    fn says(got: Option<u64>, want: u64) -> String {
        let got = got.map_or_else(|| format!("more than {want}"), |n| n.to_string());
        format!("inflates to {got} bytes, the header says {want}")
    }
    if is_zstd(compressed) {
        let what = "zstd data";
        let dec = zstd::stream::read::Decoder::with_buffer(compressed).map_err(|e| {
            ErrorKind::Decompress {
                what,
                detail: e.to_string(),
            }
        })?;
        Ok(Box::new(Exact::new(dec, what, want, says)))
    } else {
        let dec = ZlibToEnd(flate2::bufread::ZlibDecoder::new(compressed));
        Ok(Box::new(Exact::new(dec, "zlib data", want, says)))
    }
}

/// A zlib stream that must fill its compressed data: bytes after the end
/// of the stream are an error when it ends, as zstd refuses bytes after
/// its last frame.
struct ZlibToEnd<'a>(flate2::bufread::ZlibDecoder<&'a [u8]>);

impl Read for ZlibToEnd<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        // What the decoder has not consumed when the stream has ended.
        let rest = self.0.get_ref().len();
        if n == 0 && !buf.is_empty() && rest != 0 {
            return Err(std::io::Error::other(format!(
                "{rest} bytes after the end of the zlib stream"
            )));
        }
        Ok(n)
    }
}

/// A named byte range, for overlap checks.
struct Region {
    name: String,
    start: u64,
    end: u64,
}

impl Region {
    fn new(name: String, start: u64, len: u64) -> Region {
        Region {
            name,
            start,
            end: start + len,
        }
    }
    fn describe(&self) -> String {
        format!("{} ({:#x}..{:#x})", self.name, self.start, self.end)
    }
}

fn read_uncompressed<'data>(
    bin: &'data [u8],
    hdr: &Header,
    at: u64,
    stored_size: u64,
    compressed: bool,
    out: &mut Vec<OffloadImage<'data>>,
) -> Result<()> {
    let entries = match read_tables(bin, len64(bin), hdr, at) {
        Ok(e) => e,
        Err(Tables::Bad(e)) => return Err(e),
        // The whole binary is at hand.
        Err(Tables::Beyond) => return Err(Error::invalid("OffloadBinary", "tables past its end")),
    };
    for (i, e) in entries.into_iter().enumerate() {
        let (start, end) = e.image;
        let bytes = Cow::Borrowed(&bin[usize_from(start)..usize_from(end)]);
        out.push(e.into_image(i, at, stored_size, compressed, bytes));
    }
    Ok(())
}

/// Why the tables of a binary were not read.
pub(super) enum Tables {
    /// They are malformed.
    Bad(Error),
    /// One lies (partly) past the bytes at hand, a prefix of the binary.
    Beyond,
}

impl From<Error> for Tables {
    fn from(e: Error) -> Tables {
        Tables::Bad(e)
    }
}

/// One entry of a binary, as its tables describe it.
pub(super) struct Described<'data> {
    version: u32,
    entry: Entry,
    strings: Vec<KeyValue<'data>>,
    /// Where its image lies in the binary.
    pub(super) image: (u64, u64),
}

impl<'data> Described<'data> {
    /// Entry `index` of the binary at `at` (stored in `stored_size` bytes)
    /// with its image's bytes.
    pub(super) fn into_image<'b>(
        self,
        index: usize,
        at: u64,
        stored_size: u64,
        compressed: bool,
        image: Cow<'b, [u8]>,
    ) -> OffloadImage<'b>
    where
        'data: 'b,
    {
        let e = self.entry;
        OffloadImage {
            version: self.version,
            binary_offset: at,
            binary_size: stored_size,
            index: index as u64,
            compressed,
            image_kind: ImageKind(e.image_kind.get()),
            offload_kind: OffloadKind(e.offload_kind.get()),
            flags: e.flags.get(),
            strings: self.strings,
            image_offset: self.image.0,
            image,
        }
    }
}

/// Reads the tables of a binary of `size` bytes (header `hdr`, at `at` in
/// the caller's buffer) from `bin`, its first bytes: the whole binary, or a
/// prefix of it (its first bytes inflated), when a table that lies past
/// the prefix is [`Tables::Beyond`]. Every check is made against `size`, so
/// a prefix that holds the tables gives what the whole binary gives.
pub(super) fn read_tables<'data>(
    bin: &'data [u8],
    size: u64,
    hdr: &Header,
    at: u64,
) -> Result<Vec<Described<'data>>, Tables> {
    let version = hdr.version.get();
    let hdr_size = if version >= 3 {
        HEADER_V3_SIZE
    } else {
        HEADER_SIZE
    };
    if size < hdr_size + ENTRY_SIZE {
        return Err(truncated(
            "OffloadBinary header and entry",
            at,
            hdr_size + ENTRY_SIZE,
            size,
        )
        .into());
    }
    let entry_offset = hdr.entry_offset.get();
    let count = if version == 1 {
        let entry_size = hdr.entry_size_or_count.get();
        if entry_size < ENTRY_SIZE || entry_size > size - HEADER_SIZE {
            return Err(Error::invalid(
                format!("entry size of the OffloadBinary at {at:#x}"),
                format!("{entry_size} (an entry is {ENTRY_SIZE} bytes, the binary {size})"),
            )
            .into());
        }
        1
    } else {
        hdr.entry_size_or_count.get()
    };
    let table_len = count
        .checked_mul(ENTRY_SIZE)
        .filter(|&n| n <= size)
        .ok_or_else(|| {
            Error::invalid(
                format!("entry count of the OffloadBinary at {at:#x}"),
                format!("{count} entries of {ENTRY_SIZE} bytes cannot fit in {size} bytes"),
            )
        })?;
    let header = Region::new("header".into(), 0, hdr_size);
    let table = checked_region(size, "entry table", entry_offset, table_len)?;
    at_hand(bin, &table)?;
    let mut fixed = Regions::default();
    fixed.push_disjoint(header)?;
    fixed.push_disjoint(table)?;

    let mut entries = Vec::new();
    for i in 0..count {
        let off = entry_offset + i * ENTRY_SIZE;
        // In range: the table was checked.
        let (e, _) = Entry::read_from_prefix(tail(bin, off))
            .map_err(|_| truncated("entry", off, ENTRY_SIZE, size.saturating_sub(off)))?;
        let se_size = if version == 1 {
            STRING_ENTRY_V1_SIZE
        } else {
            STRING_ENTRY_V2_SIZE
        };
        let n = e.num_strings.get();
        let se_len = n.checked_mul(se_size).ok_or_else(|| {
            Error::invalid(
                format!("string count of entry {i}"),
                format!("{n} is absurd"),
            )
        })?;
        let se = checked_region(
            size,
            &format!("string entries of entry {i}"),
            e.string_offset.get(),
            se_len,
        )?;
        at_hand(bin, &se)?;
        fixed.push_disjoint(se)?;
        entries.push(e);
    }
    let mut images: Vec<(u64, u64)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let img = checked_region(
            size,
            &format!("image of entry {i}"),
            e.image_offset.get(),
            e.image_size.get(),
        )?;
        images.push((img.start, img.end));
        fixed.push_disjoint(img)?;
    }
    let mut out = Vec::with_capacity(entries.len());
    for (i, (e, image)) in entries.into_iter().zip(images).enumerate() {
        let strings = read_strings(bin, size, &e, version, i)?;
        out.push(Described {
            version,
            entry: e,
            strings,
            image,
        });
    }
    Ok(out)
}

/// Fails with [`Tables::Beyond`] unless region `r` lies inside `bin`.
fn at_hand(bin: &[u8], r: &Region) -> Result<(), Tables> {
    if r.end > len64(bin) {
        return Err(Tables::Beyond);
    }
    Ok(())
}

fn read_strings<'data>(
    bin: &'data [u8],
    size: u64,
    e: &Entry,
    version: u32,
    i: usize,
) -> Result<Vec<KeyValue<'data>>, Tables> {
    let n = e.num_strings.get();
    let base = e.string_offset.get();
    let mut strings = Vec::new();
    for j in 0..n {
        // The string entries were checked to lie in `bin`.
        let (key_at, value) = if version == 1 {
            let at = base + j * STRING_ENTRY_V1_SIZE;
            let (s, _) = StringEntryV1::read_from_prefix(tail(bin, at)).map_err(|_| {
                let have = size.saturating_sub(at);
                truncated("string entry", at, STRING_ENTRY_V1_SIZE, have)
            })?;
            (
                s.key_offset.get(),
                c_string(bin, size, s.value_offset.get(), || {
                    format!("value {j} of entry {i}")
                })?,
            )
        } else {
            let at = base + j * STRING_ENTRY_V2_SIZE;
            let (s, _) = StringEntryV2::read_from_prefix(tail(bin, at)).map_err(|_| {
                let have = size.saturating_sub(at);
                truncated("string entry", at, STRING_ENTRY_V2_SIZE, have)
            })?;
            let r = checked_region(
                size,
                &format!("value {j} of entry {i}"),
                s.value_offset.get(),
                s.value_size.get(),
            )?;
            at_hand(bin, &r)?;
            (
                s.key_offset.get(),
                &bin[usize_from(r.start)..usize_from(r.end)],
            )
        };
        let key = c_string(bin, size, key_at, || format!("key {j} of entry {i}"))?;
        strings.push((Cow::Borrowed(key), Cow::Borrowed(value)));
    }
    Ok(strings)
}

/// The NUL-terminated string at `at`, which must end inside the binary of
/// `size` bytes whose first bytes are `bin`.
fn c_string(bin: &[u8], size: u64, at: u64, what: impl Fn() -> String) -> Result<&[u8], Tables> {
    let out_of_bounds = |what: String, len: u64| -> Tables {
        Error::from(ErrorKind::OutOfBounds {
            what,
            offset: at,
            size: len,
            within: "binary",
            limit: size,
        })
        .into()
    };
    if at >= size {
        return Err(out_of_bounds(what(), 1));
    }
    let Some(rest) = usize::try_from(at).ok().and_then(|a| bin.get(a..)) else {
        return Err(Tables::Beyond);
    };
    match memchr::memchr(0, rest) {
        Some(n) => Ok(&rest[..n]),
        None if len64(bin) < size => Err(Tables::Beyond),
        None => Err(out_of_bounds(
            format!("{} (no terminating NUL)", what()),
            len64(rest),
        )),
    }
}

fn checked_region(size: u64, what: &str, offset: u64, len: u64) -> Result<Region> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(Region::new(what.to_string(), offset, len)),
        _ => Err(ErrorKind::OutOfBounds {
            what: what.to_string(),
            offset,
            size: len,
            within: "binary",
            limit: size,
        }
        .into()),
    }
}

/// Regions that must not overlap (the header, the tables, the images),
/// kept sorted so that each check costs O(log n), not a pass over all of
/// them: a binary with a million entries is read in linear time.
#[derive(Default)]
struct Regions {
    /// The non-empty regions, by start; disjoint, so sorted by end too.
    spans: std::collections::BTreeMap<u64, Region>,
    /// The empty ones, by offset: a non-empty region around one overlaps it.
    points: std::collections::BTreeMap<u64, Region>,
}

impl Regions {
    /// Adds `r`, failing if it is non-empty and overlaps a region added
    /// before (an empty one counts when it lies strictly inside `r`).
    fn push_disjoint(&mut self, r: Region) -> Result<()> {
        if r.start == r.end {
            self.points.entry(r.start).or_insert(r);
            return Ok(());
        }
        // Of the disjoint spans starting before `r` ends, only the last can
        // reach into `r`.
        if let Some((_, o)) = self.spans.range(..r.end).next_back()
            && o.end > r.start
        {
            return Err(overlap(&r, o));
        }
        if let Some((_, o)) = self.points.range(r.start + 1..r.end).next() {
            return Err(overlap(&r, o));
        }
        self.spans.insert(r.start, r);
        Ok(())
    }
}

fn overlap(a: &Region, b: &Region) -> Error {
    ErrorKind::Overlap {
        first: a.describe(),
        second: b.describe(),
    }
    .into()
}

/// `have` is how many bytes remain from `offset` to the end of the data.
fn truncated(what: &'static str, offset: u64, need: u64, have: u64) -> Error {
    ErrorKind::Truncated {
        what,
        offset,
        need,
        have,
    }
    .into()
}

/// The bytes of `data` from `at` on; empty when `at` is past the end.
fn tail(data: &[u8], at: u64) -> &[u8] {
    Bytes::new(data).tail_at(at).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offload_binary::write::{Compression, ImageSpec, compress_v3, layout};

    fn specs() -> (Vec<ImageSpec>, Vec<Vec<u8>>) {
        let images: Vec<Vec<u8>> = vec![
            b"first image".to_vec(),
            vec![],
            (0..=255u8).cycle().take(5000).collect(),
        ];
        let specs = images
            .iter()
            .enumerate()
            .map(|(i, img)| ImageSpec {
                image_kind: ImageKind(u16::try_from(i).unwrap() + 1),
                offload_kind: OffloadKind::OFK_HIP,
                flags: u32::try_from(i).unwrap(),
                strings: vec![
                    (b"triple".to_vec(), b"amdgcn-amd-amdhsa".to_vec()),
                    (b"arch".to_vec(), format!("gfx9{i}").into_bytes()),
                    (b"empty".to_vec(), Vec::new()),
                ],
                size: img.len() as u64,
            })
            .collect();
        (specs, images)
    }

    fn write(version: u32) -> Vec<u8> {
        let (specs, images) = specs();
        let refs: Vec<&[u8]> = images.iter().map(Vec::as_slice).collect();
        let mut out = Vec::new();
        layout(&specs, version)
            .unwrap()
            .write_to(&mut out, &refs)
            .unwrap();
        out
    }

    fn check(images: &[OffloadImage<'_>], version: u32, compressed: bool) {
        let (specs, data) = specs();
        assert_eq!(images.len(), specs.len());
        for ((img, spec), bytes) in images.iter().zip(&specs).zip(&data) {
            assert_eq!(img.version, version);
            assert_eq!(img.compressed, compressed);
            assert_eq!(&*img.image, bytes.as_slice());
            assert_eq!(img.image_kind, spec.image_kind);
            assert_eq!(img.offload_kind, spec.offload_kind);
            assert_eq!(img.flags, spec.flags);
            let strings: Vec<(Vec<u8>, Vec<u8>)> = img
                .strings
                .iter()
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect();
            assert_eq!(strings, spec.strings);
        }
    }

    #[test]
    fn every_version_round_trips() {
        for v in [1, 2, 3] {
            let data = write(v);
            assert_eq!(data.len() % 8, 0);
            check(&read_all(&data, &Limits::default()).unwrap(), v, false);
        }
    }

    #[test]
    fn compressed_v3_reads_with_zstd_and_zlib() {
        for how in [Compression::Zstd, Compression::Zlib] {
            let packed = compress_v3(&write(3), how, 3).unwrap();
            assert!(packed.len() < write(3).len());
            // Two compressed binaries back to back: the padding is skipped.
            let mut two = packed.clone();
            two.extend_from_slice(&packed);
            let images = read_all(&two, &Limits::default()).unwrap();
            check(&images[..3], 3, true);
            check(&images[3..], 3, true);
        }
    }

    #[test]
    fn compressed_v3_with_wrong_inflated_size_is_rejected() {
        let packed = compress_v3(&write(3), Compression::Zstd, 3).unwrap();
        for delta in [-8i64, 8, 1 << 20] {
            let mut bad = packed.clone();
            let inflated = u64::from_le_bytes(bad[32..40].try_into().unwrap());
            bad[32..40].copy_from_slice(&inflated.wrapping_add_signed(delta).to_le_bytes());
            let e = read_all(&bad, &Limits::default()).unwrap_err();
            assert!(matches!(e.kind(), ErrorKind::Decompress { .. }), "{e}");
        }
    }

    #[test]
    fn bytes_after_the_compressed_stream_are_an_error_for_zlib_as_for_zstd() {
        for how in [Compression::Zstd, Compression::Zlib] {
            let packed = compress_v3(&write(3), how, 3).unwrap();
            let stored = usize_from(u64::from_le_bytes(packed[8..16].try_into().unwrap()));
            let mut bad = packed[..stored].to_vec();
            bad.extend_from_slice(b"GARBAGE!");
            let size = len64(&bad);
            bad[8..16].copy_from_slice(&size.to_le_bytes());
            let e = read_all(&bad, &Limits::default()).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::Decompress { .. }),
                "{how:?}: {e}"
            );
            if how == Compression::Zlib {
                assert!(e.to_string().contains("8 bytes after the end"), "{e}");
            }
        }
    }

    #[test]
    fn inflating_past_the_limit_is_refused_before_decompressing() {
        let packed = compress_v3(&write(3), Compression::Zstd, 3).unwrap();
        let e = read_all(&packed, &Limits { max_inflated: 1000 }).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::LimitExceeded { .. }), "{e}");
    }

    #[test]
    fn a_small_bomb_is_stopped_at_its_declared_size() {
        // 64 MiB of zeros compresses to a few KiB; declaring a small inflated
        // size must stop decompression there, not after 64 MiB.
        let v3 = write(3);
        let body = vec![0u8; 64 << 20];
        let mut packed = v3[..40].to_vec();
        let z = zstd::bulk::compress(&body, 1).unwrap();
        packed[8..16].copy_from_slice(&(40 + z.len() as u64).to_le_bytes());
        packed[32..40].copy_from_slice(&(v3.len() as u64).to_le_bytes());
        packed.extend_from_slice(&z);
        packed.resize(packed.len().div_ceil(8) * 8, 0);
        let e = read_all(&packed, &Limits::default()).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Decompress { .. }), "{e}");
    }

    #[test]
    fn overlapping_images_in_one_binary_are_rejected() {
        let mut data = write(2);
        // Entry 2's image starts where entry 0's does.
        let e0_image = u64::from_le_bytes(data[32 + 24..32 + 32].try_into().unwrap());
        data[32 + 80 + 24..32 + 80 + 32].copy_from_slice(&e0_image.to_le_bytes());
        let e = read_all(&data, &Limits::default()).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Overlap { .. }), "{e}");
    }

    #[test]
    fn a_binary_of_100k_images_reads_in_linear_time() {
        // Each image was checked against every earlier one: 5e9 checks,
        // minutes even in a release build. Now each costs O(log n).
        let n = 100_000;
        let specs: Vec<ImageSpec> = (0..n)
            .map(|_| ImageSpec {
                size: 1,
                ..ImageSpec::default()
            })
            .collect();
        let bytes = vec![7u8; n];
        let refs: Vec<&[u8]> = bytes.chunks(1).collect();
        let mut out = Vec::new();
        layout(&specs, 2)
            .unwrap()
            .write_to(&mut out, &refs)
            .unwrap();
        let images = read_all(&out, &Limits::default()).unwrap();
        assert_eq!(images.len(), n);
        // Image 99,999 moved onto image 50,000: the overlap is still found.
        let entry = |i: usize| 32 + i * 40;
        let off = u64::from_le_bytes(
            out[entry(50_000) + 24..entry(50_000) + 32]
                .try_into()
                .unwrap(),
        );
        let last = entry(n - 1);
        out[last + 24..last + 32].copy_from_slice(&off.to_le_bytes());
        let e = read_all(&out, &Limits::default()).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Overlap { .. }), "{e}");
    }

    #[test]
    fn regions_overlap_as_a_pairwise_check_says() {
        // Every placement of a region among a few fixed ones, empty ones
        // included, against the obvious quadratic rule.
        let fixed = [(0u64, 4u64), (10, 10), (12, 16), (20, 21)];
        let pairwise = |s: u64, e: u64| s != e && fixed.iter().any(|&(a, b)| a < e && s < b);
        for s in 0..24 {
            for e in s..24 {
                let mut r = Regions::default();
                for (i, &(a, b)) in fixed.iter().enumerate() {
                    r.push_disjoint(Region::new(format!("f{i}"), a, b - a))
                        .unwrap();
                }
                let got = r.push_disjoint(Region::new("r".into(), s, e - s)).is_err();
                assert_eq!(got, pairwise(s, e), "{s}..{e}");
            }
        }
    }

    #[test]
    fn absurd_entry_count_is_rejected() {
        let mut data = write(2);
        data[24..32].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
        assert!(read_all(&data, &Limits::default()).is_err());
    }

    #[test]
    fn v2_value_past_the_end_is_rejected() {
        let mut data = write(2);
        // First string entry (after header and 3 entries): value size.
        let at = 32 + 3 * 40 + 16;
        data[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let e = read_all(&data, &Limits::default()).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::OutOfBounds { .. }), "{e}");
    }

    #[test]
    fn key_without_terminator_is_rejected() {
        let mut data = write(1);
        let size = usize_from(u64::from_le_bytes(data[8..16].try_into().unwrap()));
        // Point the first key at the last byte of the binary, then make it
        // non-zero: no NUL follows inside the binary.
        data[72..80].copy_from_slice(&(size as u64 - 1).to_le_bytes());
        data[size - 1] = b'x';
        let e = read_all(&data[..size], &Limits::default()).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::OutOfBounds { .. }), "{e}");
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        for v in [1, 2, 3] {
            let data = write(v);
            let whole = read_all(&data, &Limits::default()).unwrap();
            let ends: Vec<usize> = whole
                .iter()
                .map(|i| usize_from(i.binary_offset + i.binary_size))
                .collect();
            for cut in 1..data.len() {
                // A cut on a binary boundary is a valid, shorter input.
                let r = read_all(&data[..cut], &Limits::default());
                assert_eq!(r.is_ok(), ends.contains(&cut), "version {v}, cut at {cut}");
            }
        }
    }
}

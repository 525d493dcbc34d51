//! The bundler's operations, shared by the native commands and the
//! `clang-offload-bundler` drop-in: bundling (targets → host → format →
//! layout or object edit → optional compression), opening a bundle
//! (decompressing a CCOB, in this one place) and unbundling (entry
//! selection, the host object of an object bundle, missing entries).
//!
//! Nothing here prints, reads the environment or opens files: the front ends
//! (`tools::bundler::job` for the drop-in, the native commands) open the
//! inputs, call these in LLVM's order of checks, and render the typed
//! results as their messages; `tools::bundler::write` writes what
//! [`bundle`] makes. The results describe what to write
//! ([`Layout`]s and [`Written`] objects whose images are byte ranges of the
//! inputs); image bytes are copied only when a bundle is compressed.

use super::ccob::{self, Decompressed, ReadOptions};
use super::id::{BundleId, TargetError};
use super::object::{self, HOST_MARKER, NewSection};
use super::{Format, Found, select};
use crate::error::{Error, Result};
use crate::host::object::Written;
use crate::layout::{Layout, Piece};
use ::object::FileKind;

/// The checked targets of a bundling run, in the order given.
#[derive(Debug, Clone)]
pub struct Targets {
    /// The parsed targets.
    pub ids: Vec<BundleId>,
    /// Their normalized IDs, the entries' names.
    pub normalized: Vec<String>,
}

/// Why [`Targets::for_bundling`] refuses the targets.
#[derive(Debug)]
pub enum TargetsError {
    /// A target fails LLVM's checks (LLVM's message).
    Invalid(TargetError),
    /// Targets `first` and `second` (indices, earlier first) normalize to
    /// the same entry `id`; LLVM 22 writes offsets that point at the wrong
    /// data here.
    Duplicate {
        /// The earlier target.
        first: usize,
        /// The later target.
        second: usize,
        /// The normalized ID they share.
        id: String,
    },
}

impl Targets {
    /// Checks `targets` for bundling (LLVM's checks, in its order), then
    /// refuses two that normalize alike.
    pub fn for_bundling(targets: &[String]) -> std::result::Result<Targets, TargetsError> {
        let ids = super::id::check_targets(targets, true).map_err(TargetsError::Invalid)?;
        let normalized: Vec<String> = ids.iter().map(BundleId::normalized).collect();
        if let Some((first, second)) = first_duplicate(&normalized) {
            let id = normalized[second].clone();
            return Err(TargetsError::Duplicate { first, second, id });
        }
        Ok(Targets { ids, normalized })
    }

    /// The input holding the host's code: the host target's, else the first
    /// (LLVM's choice, which also picks the format).
    pub fn host(&self) -> usize {
        self.ids.iter().position(BundleId::is_host).unwrap_or(0)
    }
}

/// Why [`bundle`] fails.
#[derive(Debug)]
pub enum BundleError {
    /// LLVM does not know the file type.
    UnknownType,
    /// An object host but no host target (LLVM 22 crashes).
    ObjectWithoutHost,
    /// The host object cannot be edited (its error).
    Object(Error),
    /// The bundle cannot be laid out.
    Layout(Error),
}

/// What [`bundle`] makes.
#[derive(Debug)]
pub enum Bundled {
    /// A binary or text bundle: `Piece::Image(i)` is the whole of input `i`.
    Layout(Layout),
    /// The host object with one section per target. Span source 0 is the
    /// host input, `i + 1` the data of target `i` (see [`Bundled::sources`]).
    Object {
        /// The edited object.
        written: Written,
        /// The host target's index.
        host: usize,
    },
}

impl Bundled {
    /// For an object bundle, the bytes each span source stands for, given
    /// the inputs: the host object, then each target's section data (the
    /// host's is [`HOST_MARKER`]). Empty for a layout.
    pub fn sources<'a>(&self, targets: &Targets, inputs: &[&'a [u8]]) -> Vec<&'a [u8]> {
        match self {
            Bundled::Layout(_) => Vec::new(),
            Bundled::Object { host, .. } => std::iter::once(inputs[*host])
                .chain(section_data(targets, inputs).map(|(_, d)| d))
                .collect(),
        }
    }
}

/// Section data per target for an object bundle: (input index, bytes).
fn section_data<'t, 'a: 't>(
    targets: &'t Targets,
    inputs: &'t [&'a [u8]],
) -> impl Iterator<Item = (usize, &'a [u8])> + 't {
    targets
        .ids
        .iter()
        .zip(inputs)
        .enumerate()
        .map(|(i, (id, data))| (i, if id.is_host() { HOST_MARKER } else { data }))
}

/// The format of a bundle of `file_type` whose host input's format is
/// `kind` (what [`object_kind`](super::object_kind) gives for it, read once
/// by the caller for this and [`bundle`]).
pub fn bundle_format(
    file_type: &str,
    kind: Option<FileKind>,
) -> std::result::Result<Format, BundleError> {
    Format::for_type_of(file_type, kind).ok_or(BundleError::UnknownType)
}

/// Bundles `inputs` (one per target, opened by the caller after
/// [`Targets::for_bundling`]) in `format` (from [`bundle_format`]); binary
/// data aligned to `align`. An object host gets one section per target, as
/// LLVM does with llvm-objcopy. `kind` is the host input's format, as
/// [`bundle_format`] was given it.
pub fn bundle(
    targets: &Targets,
    format: Format,
    inputs: &[&[u8]],
    align: u64,
    kind: Option<FileKind>,
) -> std::result::Result<Bundled, BundleError> {
    if format == Format::Object {
        let Some(host) = targets.ids.iter().position(BundleId::is_host) else {
            return Err(BundleError::ObjectWithoutHost);
        };
        let sections: Vec<NewSection> = section_data(targets, inputs)
            .map(|(i, data)| NewSection {
                id: &targets.normalized[i],
                data,
            })
            .collect();
        let written = match kind {
            Some(kind) => object::bundle_of(inputs[host], kind, &sections),
            // (Read here for a format that is not `bundle_format`'s.)
            None => object::bundle(inputs[host], &sections),
        }
        .map_err(BundleError::Object)?;
        return Ok(Bundled::Object { written, host });
    }
    let entries: Vec<(String, u64)> = targets
        .normalized
        .iter()
        .cloned()
        .zip(inputs.iter().map(|i| i.len() as u64))
        .collect();
    super::layout(format, &entries, align)
        .map(Bundled::Layout)
        .map_err(BundleError::Layout)
}

/// The whole uncompressed bundle of `layout` over `inputs`, compressed into a
/// CCOB (the bytes LLVM's `-compress` writes), with what LLVM's verbose mode
/// reports. The bundle and the CCOB are built in memory: writing a file
/// (`tools::bundler::compressed::write_ccob`), the bundle goes to a mapped file compressed with
/// [`ccob::compress_into`] instead, or, not byte-identical to LLVM, its
/// [`pieces`] stream through [`ccob::compress_pieces`].
/// The first two entries (indices, earlier first) whose normalized IDs are
/// equal. LLVM 22 accepts such targets and writes a bundle whose offsets
/// point at the wrong data, so the bundlers refuse them.
fn first_duplicate(normalized: &[String]) -> Option<(usize, usize)> {
    let mut first: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    normalized
        .iter()
        .enumerate()
        .find_map(|(i, n)| match first.entry(n) {
            std::collections::hash_map::Entry::Occupied(o) => Some((*o.get(), i)),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i);
                None
            }
        })
}

#[cfg(test)]
pub fn compress_layout(
    layout: &Layout,
    inputs: &[&[u8]],
    opts: &ccob::CompressOptions,
) -> Result<(Vec<u8>, ccob::CompressReport)> {
    let mut whole = Vec::with_capacity(usize::try_from(layout.size).unwrap_or(0));
    layout.write_to(&mut whole, inputs)?;
    ccob::compress_to_vec(&whole, opts)
}

/// The uncompressed bundle of `layout` over `inputs` as consecutive slices
/// (the bytes built, zeros, the inputs themselves), nothing copied: what
/// [`ccob::compress_pieces`] takes. Zeros come in slices of at most 64 KiB.
/// `None` if the layout refers to an input that is not there.
pub fn pieces<'a>(layout: &'a Layout, inputs: &[&'a [u8]]) -> Option<Vec<&'a [u8]>> {
    static ZEROS: [u8; 1 << 16] = [0; 1 << 16];
    let mut v = Vec::with_capacity(layout.pieces.len());
    for p in &layout.pieces {
        match p {
            Piece::Bytes(b) => v.push(&b[..]),
            Piece::Zeros(n) => {
                let mut left = *n;
                while left > 0 {
                    let k = left.min(ZEROS.len() as u64);
                    v.push(&ZEROS[..usize::try_from(k).ok()?]);
                    left -= k;
                }
            }
            Piece::Image(i) => v.push(*inputs.get(*i)?),
        }
    }
    Some(v)
}

/// `data` decompressed when LLVM 22 would take it for a CCOB (`None`
/// otherwise): the one place a bundle's input is inflated.
pub fn open(data: &[u8], opts: &ReadOptions) -> Result<Option<Decompressed>> {
    if !ccob::llvm_treats_as_compressed(data) {
        return Ok(None);
    }
    ccob::decompress(data, opts).map(Some)
}

/// The entry IDs of a bundle (`data`, already [`open`]ed) in `format`, in
/// LLVM's `-list` order: an object's bundle sections are listed by name
/// without reading them, as LLVM does.
/// `kind` is what [`object_kind`](super::object_kind) gives for `data`,
/// read once by the caller.
pub fn list(data: &[u8], format: Format, kind: Option<FileKind>) -> Result<Vec<&[u8]>> {
    if format == Format::Object {
        return match kind {
            Some(kind) => object::entry_ids_of(data, kind),
            None => object::entry_ids(data),
        };
    }
    Ok(super::entries(data, format)?.iter().map(|e| e.id).collect())
}

/// What one unbundling request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extract<'a> {
    /// These bytes of the bundle.
    Entry(&'a [u8]),
    /// The host entry of an object bundle: the object without its bundle
    /// sections ([`host_object`]).
    ObjectHost,
    /// No entry: an empty file when missing entries are allowed.
    Missing,
    /// No entry, and no request got one: LLVM takes the whole input for the
    /// host's code when missing entries are allowed.
    MissingHost,
}

/// The entries of a bundle (`data`, already [`open`]ed) in `format`, in
/// LLVM's order.
/// `kind` is what [`object_kind`](super::object_kind) gives for `data`,
/// read once by the caller.
pub fn entries(data: &[u8], format: Format, kind: Option<FileKind>) -> Result<Vec<Found<'_>>> {
    super::entries_of(data, format, kind)
}

/// What each request gets from `found` (the entries of a bundle in
/// `format`), by LLVM's target-ID rules and hash order.
pub fn unbundle<'a>(
    found: &[Found<'a>],
    format: Format,
    requests: &[BundleId],
    hip_openmp_compatible: bool,
) -> Result<Vec<Extract<'a>>> {
    let ids: Vec<&[u8]> = found.iter().map(|f| f.id).collect();
    let got = select::assign(&ids, requests, hip_openmp_compatible)?;
    let none_found = got.iter().all(Option::is_none);
    Ok(got
        .iter()
        .zip(requests)
        .map(|(g, r)| match g {
            Some(e) => extract(&found[*e], format),
            None if none_found && r.is_host() => Extract::MissingHost,
            None => Extract::Missing,
        })
        .collect())
}

/// What one request gets from a binary bundle known by its records alone
/// (the contents of a compressed bundle, decompressed as far as the bundle
/// header): see [`unbundle_records`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// The data of this record (an index into the records given).
    Record(usize),
    /// No entry: an empty file when missing entries are allowed.
    Missing,
    /// No entry, and no request got one: the whole bundle goes to this
    /// host request when missing entries are allowed.
    MissingHost,
}

/// [`unbundle`] for a binary bundle known by its `records` (in file
/// order): which record each request gets, by the same rules and order.
pub fn unbundle_records(
    records: &[super::binary::Record],
    requests: &[BundleId],
    hip_openmp_compatible: bool,
) -> Result<Vec<Pick>> {
    let ids: Vec<&[u8]> = records.iter().map(|r| &r.id[..]).collect();
    let order = super::binary::llvm_order(&ids);
    let ordered: Vec<&[u8]> = order.iter().map(|&i| ids[i]).collect();
    let got = select::assign(&ordered, requests, hip_openmp_compatible)?;
    let none_found = got.iter().all(Option::is_none);
    Ok(got
        .iter()
        .zip(requests)
        .map(|(g, r)| match g {
            Some(e) => Pick::Record(order[*e]),
            None if none_found && r.is_host() => Pick::MissingHost,
            None => Pick::Missing,
        })
        .collect())
}

/// What an entry found in a bundle of `format` extracts to.
pub fn extract<'a>(found: &Found<'a>, format: Format) -> Extract<'a> {
    if format == Format::Object && found.data == HOST_MARKER {
        Extract::ObjectHost
    } else {
        Extract::Entry(found.data)
    }
}

/// The host's code of an object bundle: the object without its bundle
/// sections (what `llvm-objcopy --remove-section` leaves); span source 0 is
/// `data`.
pub fn host_object(data: &[u8]) -> Result<Written> {
    object::strip(data)
}

/// [`host_object`] for a caller that read the format of `data` already:
/// `kind` is what [`object_kind`](super::object_kind) gives for it (`None`:
/// read here).
pub(crate) fn host_object_of(data: &[u8], kind: Option<FileKind>) -> Result<Written> {
    match kind {
        Some(kind) => object::strip_of(data, kind),
        None => object::strip(data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::binary;

    /// A binary bundle of `ids`, entry `i` holding `i` as its one byte
    /// (so an entry's data tells which record it is).
    fn bundle_of(ids: &[&str]) -> Vec<u8> {
        let header: u64 = 32 + ids.iter().map(|id| 24 + id.len() as u64).sum::<u64>();
        let mut b = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
        b.extend((ids.len() as u64).to_le_bytes());
        for (i, id) in ids.iter().enumerate() {
            b.extend((header + i as u64).to_le_bytes());
            b.extend(1u64.to_le_bytes());
            b.extend((id.len() as u64).to_le_bytes());
            b.extend(id.as_bytes());
        }
        b.extend((0..ids.len()).map(|i| u8::try_from(i).unwrap()));
        b
    }

    #[test]
    fn pieces_are_the_layout_written_out() {
        let layout = Layout {
            pieces: vec![
                Piece::Bytes(b"head".to_vec()),
                Piece::Zeros(150_000),
                Piece::Image(1),
                Piece::Image(0),
            ],
            size: 4 + 150_000 + 3 + 2,
        };
        let inputs: [&[u8]; 2] = [b"ab", b"cde"];
        let pieces = pieces(&layout, &inputs).unwrap();
        let mut whole = Vec::new();
        layout.write_to(&mut whole, &inputs).unwrap();
        assert_eq!(pieces.concat(), whole);
        assert!(pieces.iter().all(|p| p.len() <= 1 << 16));
        // The inputs themselves, not copies.
        assert_eq!(pieces[pieces.len() - 1].as_ptr(), inputs[0].as_ptr());
        assert!(super::pieces(&layout, &inputs[..1]).is_none());
    }

    #[test]
    fn records_are_picked_as_whole_bundles_are() {
        let hip = |a: &str| format!("hip-amdgcn-amd-amdhsa--{a}");
        let ids: Vec<String> = vec![
            "host-x86_64-unknown-linux-gnu-".into(),
            hip("gfx90a"),
            hip("gfx90a:xnack+"),
            hip("gfx906"),
            // A duplicate ID: LLVM keeps the later data in the earlier place.
            hip("gfx90a"),
            "openmp-amdgcn-amd-amdhsa--gfx1030".into(),
        ];
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let data = bundle_of(&ids);
        let found = entries(&data, Format::Binary, None).unwrap();
        let records: Vec<binary::Record> = binary::read(&data)
            .unwrap()
            .iter()
            .map(|e| binary::Record {
                id: e.id.to_vec(),
                offset: e.offset,
                size: e.data.len() as u64,
            })
            .collect();
        let request_sets: [&[&str]; 6] = [
            &["hip-amdgcn-amd-amdhsa-gfx90a"],
            &[
                "hip-amdgcn-amd-amdhsa-gfx90a:xnack+",
                "hip-amdgcn-amd-amdhsa-gfx90a:xnack-",
            ],
            &[
                "host-x86_64-unknown-linux-gnu",
                "openmp-amdgcn-amd-amdhsa-gfx1030",
            ],
            &[
                "hip-amdgcn-amd-amdhsa-gfx1100",
                "host-aarch64-unknown-linux-gnu",
            ],
            &[
                "openmp-amdgcn-amd-amdhsa-gfx906",
                "hip-amdgcn-amd-amdhsa-gfx906",
            ],
            &[
                "hip-amdgcn-amd-amdhsa-gfx1100",
                "hip-amdgcn-amd-amdhsa-gfx906",
            ],
        ];
        for requests in request_sets {
            let requests: Vec<String> = requests.iter().map(|s| s.to_string()).collect();
            let requests = crate::bundle::id::check_targets(&requests, false).unwrap();
            for compat in [false, true] {
                let whole = unbundle(&found, Format::Binary, &requests, compat).unwrap();
                let picks = unbundle_records(&records, &requests, compat).unwrap();
                let as_whole: Vec<Extract<'_>> = picks
                    .iter()
                    .map(|p| match *p {
                        Pick::Record(i) => {
                            let off = usize::try_from(records[i].offset).unwrap();
                            Extract::Entry(&data[off..off + 1])
                        }
                        Pick::Missing => Extract::Missing,
                        Pick::MissingHost => Extract::MissingHost,
                    })
                    .collect();
                assert_eq!(as_whole, whole, "{requests:?} {compat}");
            }
        }
    }
}

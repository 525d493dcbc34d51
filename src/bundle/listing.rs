//! A clang offload bundle as `offload-kit list` reports it: its format,
//! how it is compressed and its entries. Serializes as the `bundle` of
//! `list --json` ([`crate::offload_binary::listing::Document`]).

use serde::Serialize;

use super::Format;
use super::ccob::{Ccob, Header};
use super::id::BundleId;

/// A bundle's listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Listing {
    /// `binary`, `text` or `object` ([`format_name`]).
    pub format: &'static str,
    /// How it is compressed, when it came in a CCOB.
    pub compressed: Option<Compressed>,
    /// Its entries, in the order listed.
    pub entries: Vec<Entry>,
}

impl Listing {
    /// The listing of a bundle in `format` with these entries, compressed
    /// as `compressed` says.
    pub fn new(format: Format, compressed: Option<Compressed>, entries: Vec<Entry>) -> Listing {
        Listing {
            format: format_name(format),
            compressed,
            entries,
        }
    }
}

/// The name a listing gives a bundle format: `binary`, `text`, `object`.
pub fn format_name(format: Format) -> &'static str {
    match format {
        Format::Binary => "binary",
        Format::Text(_) => "text",
        Format::Object => "object",
    }
}

/// How a listed bundle is compressed (its CCOB header).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Compressed {
    /// The CCOB version.
    pub version: u16,
    /// `zstd` or `zlib`.
    pub method: String,
    /// Bytes of compressed data.
    pub compressed_size: u64,
    /// Bytes it decompresses to, as declared.
    pub uncompressed_size: u64,
    /// The stored hash, as `0x` and 16 lowercase hex digits.
    pub hash: String,
}

impl Compressed {
    /// The fields of a CCOB `header` whose payload is `compressed_size`
    /// bytes.
    pub fn new(header: &Header, compressed_size: u64) -> Compressed {
        Compressed {
            version: header.version,
            method: header.method.to_string(),
            compressed_size,
            uncompressed_size: header.uncompressed_size,
            hash: format!("{:#018x}", header.hash),
        }
    }

    /// The fields of a parsed CCOB.
    pub fn of(ccob: &Ccob<'_>) -> Compressed {
        Compressed::new(&ccob.header, ccob.payload.len() as u64)
    }
}

/// One entry of a listed bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Entry {
    /// Its position in the listing.
    pub index: usize,
    /// Its bundle-entry ID, as stored (lossily decoded).
    pub id: String,
    /// The ID's offload kind (empty when the ID does not parse).
    pub kind: String,
    /// The ID's triple, normalized, without a trailing `-` (empty when the
    /// ID does not parse).
    pub triple: String,
    /// The ID's target ID (empty when there is none).
    pub target_id: String,
    /// Its offset in the bundle.
    pub offset: u64,
    /// Its size in bytes.
    pub size: u64,
}

impl Entry {
    /// The entry at `index` of the listing, with stored ID `id`, at
    /// `offset` and of `size` bytes.
    pub fn new(index: usize, id: &[u8], offset: u64, size: u64) -> Entry {
        let id = String::from_utf8_lossy(id).into_owned();
        let parsed = BundleId::parse(&id).ok();
        Entry {
            index,
            kind: parsed.as_ref().map(|p| p.kind.clone()).unwrap_or_default(),
            triple: parsed
                .as_ref()
                .map(|p| p.normalized_triple().trim_end_matches('-').to_string())
                .unwrap_or_default(),
            target_id: parsed
                .as_ref()
                .map(|p| p.target_id.clone())
                .unwrap_or_default(),
            id,
            offset,
            size,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_the_parts_of_their_id() {
        let e = Entry::new(0, b"hip-amdgcn-amd-amdhsa--gfx90a:xnack+", 150, 6);
        assert_eq!(
            (e.kind.as_str(), e.triple.as_str(), e.target_id.as_str()),
            ("hip", "amdgcn-amd-amdhsa", "gfx90a:xnack+")
        );
        let odd = Entry::new(1, b"not an id", 0, 0);
        assert_eq!((odd.kind.as_str(), odd.triple.as_str()), ("", ""));
        let l = Listing::new(Format::Binary, None, vec![e]);
        assert_eq!(
            serde_json::to_string(&l).unwrap(),
            r#"{"format":"binary","compressed":null,"entries":[{"index":0,"#.to_owned()
                + r#""id":"hip-amdgcn-amd-amdhsa--gfx90a:xnack+","kind":"hip","#
                + r#""triple":"amdgcn-amd-amdhsa","target_id":"gfx90a:xnack+","#
                + r#""offset":150,"size":6}]}"#
        );
    }
}

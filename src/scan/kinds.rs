//! The typed kinds and hashes of scanned images, and the names reports
//! give them (the `inspect --json` texts). Each type serializes as the
//! text it displays as.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::offload_binary::{ImageKind, OffloadKind};

/// Which offloading model an image is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Offload {
    /// One of the OffloadBinary's kinds (also for bundle entries and fatbin
    /// entries of those models); named as [`OffloadKind`] displays.
    Kind(OffloadKind),
    /// A bundle's host entry (`host`).
    Host,
    /// OpenCL code in a CUDA fatbin (`opencl`).
    OpenCl,
    /// A bundle entry's kind that is none of the above, as written.
    Other(String),
}

impl Offload {
    /// The kind of a bundle-entry ID's kind part (`hipv4` is HIP).
    pub fn of_bundle_kind(kind: &str) -> Offload {
        match kind {
            "host" => Offload::Host,
            "hipv4" => Offload::Kind(OffloadKind::OFK_HIP),
            "none" => Offload::Kind(OffloadKind::OFK_None),
            k => {
                let known = OffloadKind::from_name(k);
                if known != OffloadKind::OFK_None {
                    Offload::Kind(known)
                } else {
                    Offload::Other(k.to_string())
                }
            }
        }
    }

    /// Whether this is a bundle's host entry.
    pub fn is_host(&self) -> bool {
        *self == Offload::Host
    }
}

impl fmt::Display for Offload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Offload::Kind(k) => k.fmt(f),
            Offload::Host => f.write_str("host"),
            Offload::OpenCl => f.write_str("opencl"),
            Offload::Other(s) => f.write_str(s),
        }
    }
}

impl PartialEq<str> for Offload {
    fn eq(&self, other: &str) -> bool {
        match self {
            Offload::Kind(k) => k.to_string() == other,
            Offload::Host => other == "host",
            Offload::OpenCl => other == "opencl",
            Offload::Other(s) => s == other,
        }
    }
}

impl PartialEq<&str> for Offload {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

/// What an image's bytes are: declared by its container, or, for bundle
/// entries, told from the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Content {
    /// An OffloadBinary image kind (declared, or what the bytes are: ELF
    /// objects, cubins, bitcode, SPIR-V, fatbins; `IMG_None` for no bytes).
    Image(ImageKind),
    /// A CUDA fatbin entry kind other than PTX and ELF.
    FatbinEntry(u16),
    /// An `ar` archive.
    Archive,
    /// An OffloadBinary.
    OffloadBinary,
    /// A binary bundle.
    Bundle,
    /// A compressed bundle.
    Ccob,
    /// Bytes of no known kind.
    Unknown,
}

impl fmt::Display for Content {
    /// The names reports use: `none`, `object`, `bitcode`, `cubin`,
    /// `fatbinary`, `ptx`, `spirv`, `nvvm` (a CUDA fatbin's NVVM IR),
    /// `unknown-<n>`, `archive`,
    /// `offload-binary`, `bundle`, `ccob`, `unknown`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match *self {
            Content::Image(k) => return f.write_str(&k.report_name()),
            Content::FatbinEntry(crate::fatbin::KIND_NVVM) => "nvvm",
            Content::FatbinEntry(n) => return write!(f, "unknown-{n}"),
            Content::Archive => "archive",
            Content::OffloadBinary => "offload-binary",
            Content::Bundle => "bundle",
            Content::Ccob => "ccob",
            Content::Unknown => "unknown",
        };
        f.write_str(name)
    }
}

/// A content hash algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashAlgo {
    /// XXH3, 128-bit (hex as `xxhsum -H2` prints it).
    Xxh3_128,
    /// MD5 (hex as `md5sum` prints it).
    Md5,
}

impl HashAlgo {
    /// The name used in reports (`xxh3-128`, `md5`).
    pub fn name(self) -> &'static str {
        match self {
            HashAlgo::Xxh3_128 => "xxh3-128",
            HashAlgo::Md5 => "md5",
        }
    }

    /// The digest of `data`.
    pub fn digest(self, data: &[u8]) -> Digest {
        let bytes = match self {
            HashAlgo::Xxh3_128 => xxhash_rust::xxh3::xxh3_128(data).to_be_bytes(),
            HashAlgo::Md5 => {
                use md5::Digest as _;
                md5::Md5::digest(data).into()
            }
        };
        Digest { algo: self, bytes }
    }

    /// The hash of `data`, as `<name>:<hex>` (see [`Digest`]).
    pub fn hash(self, data: &[u8]) -> String {
        self.digest(data).to_string()
    }

    /// A hasher fed piece by piece: [`Hasher::finish`] gives what
    /// [`HashAlgo::digest`] gives for the pieces put together.
    pub(crate) fn hasher(self) -> Hasher {
        match self {
            HashAlgo::Xxh3_128 => Hasher::Xxh3(Box::new(xxhash_rust::xxh3::Xxh3::new())),
            HashAlgo::Md5 => Hasher::Md5(md5::Md5::default()),
        }
    }
}

/// A hash computed over bytes that come in pieces (an image streamed out
/// of compressed data). See [`HashAlgo::hasher`].
#[derive(Clone)]
pub enum Hasher {
    /// XXH3-128.
    Xxh3(Box<xxhash_rust::xxh3::Xxh3>),
    /// MD5.
    Md5(md5::Md5),
}

impl Hasher {
    /// Adds the next piece.
    pub fn update(&mut self, piece: &[u8]) {
        match self {
            Hasher::Xxh3(h) => h.update(piece),
            Hasher::Md5(h) => md5::Digest::update(h, piece),
        }
    }

    /// The digest of everything added.
    pub fn finish(self) -> Digest {
        match self {
            Hasher::Xxh3(h) => Digest {
                algo: HashAlgo::Xxh3_128,
                bytes: h.digest128().to_be_bytes(),
            },
            Hasher::Md5(h) => Digest {
                algo: HashAlgo::Md5,
                bytes: md5::Digest::finalize(h).into(),
            },
        }
    }
}

/// A content hash: the algorithm and the digest bytes (XXH3-128 as the
/// big-endian 128-bit value, so its hex is `xxhsum -H2`'s). Both
/// algorithms give 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest {
    /// The algorithm.
    pub algo: HashAlgo,
    /// The digest.
    pub bytes: [u8; 16],
}

impl fmt::Display for Digest {
    /// `<algorithm name>:<lowercase hex>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.algo.name())?;
        f.write_str(":")?;
        for b in &self.bytes {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// The hash a CCOB stores: the first 8 bytes of the MD5 of its contents,
/// as a little-endian 64-bit value. Displays (and serializes) as LLVM
/// prints it: `0x`-prefixed lowercase hex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StoredHash(pub u64);

impl fmt::Display for StoredHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::bundle::ccob::hex_hash(self.0))
    }
}

/// Serializes a value as the text it displays as.
macro_rules! serialize_as_text {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    )*};
}

serialize_as_text!(Offload, Content, Digest, StoredHash);

impl Serialize for HashAlgo {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_report_texts() {
        assert_eq!(Offload::of_bundle_kind("hipv4"), "hip");
        assert_eq!(Offload::of_bundle_kind("host"), "host");
        assert_eq!(Offload::of_bundle_kind("weird"), "weird");
        assert_eq!(Offload::Kind(OffloadKind(77)).to_string(), "unknown(77)");
        assert_eq!(Content::Image(ImageKind(9)).to_string(), "unknown-9");
        assert_eq!(Content::Image(ImageKind::IMG_Object).to_string(), "object");
        assert_eq!(
            HashAlgo::Xxh3_128.hash(b"abc"),
            format!("xxh3-128:{:032x}", xxhash_rust::xxh3::xxh3_128(b"abc"))
        );
        assert_eq!(
            HashAlgo::Md5.hash(b""),
            "md5:d41d8cd98f00b204e9800998ecf8427e"
        );
        // Piece by piece, the same digests (XXH3 changes its method past
        // 240 bytes and past its 1 KiB stripes).
        let data: Vec<u8> = (0..5000u32)
            .map(|i| u8::try_from(i * 7 % 251).unwrap())
            .collect();
        for algo in [HashAlgo::Xxh3_128, HashAlgo::Md5] {
            for len in [0, 1, 16, 240, 241, 1024, 5000] {
                let mut h = algo.hasher();
                for piece in data[..len].chunks(97) {
                    h.update(piece);
                }
                assert_eq!(h.finish(), algo.digest(&data[..len]), "{algo:?} {len}");
            }
        }
    }
}

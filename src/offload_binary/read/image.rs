//! What reading an OffloadBinary gives: its images ([`OffloadImage`]).

use std::borrow::Cow;

use crate::offload_binary::kinds::{ImageKind, OffloadKind};

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

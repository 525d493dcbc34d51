//! One entry of a bundle as read, whatever its layout.

/// One entry of a bundle, in any format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found<'data> {
    /// The entry ID as stored.
    pub id: &'data [u8],
    /// The entry's data (for an object bundle's host entry, the one-byte
    /// marker `\0`).
    pub data: &'data [u8],
}

//! The rewrite's errors, and the checked conversions to 32-bit fields.

use crate::error::{Error, Result};

/// An invalid object file, `detail` saying how.
pub(super) fn invalid(detail: impl Into<String>) -> Error {
    Error::invalid("object file", detail)
}

/// A name as text for messages.
pub(super) fn lossy(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

/// `v` for a 32-bit field of an ELF32 file.
pub(super) fn narrow(v: u64) -> Result<u32> {
    u32::try_from(v).map_err(|_| invalid(format!("value {v:#x} does not fit a 32-bit field")))
}

/// A count or an index for a 32-bit field.
pub(super) fn to_u32(x: usize) -> Result<u32> {
    u32::try_from(x).map_err(|_| invalid(format!("{x} entries do not fit a 32-bit index")))
}

/// An internal inconsistency (a bug in this module, not bad input).
pub(super) fn bug(what: &str) -> Error {
    Error::write("object file", format!("internal error: {what}"))
}

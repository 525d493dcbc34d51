//! Integer conversions for offsets and sizes.

/// A `u64` offset or size as `usize`. Callers use it on values already
/// checked against the length of an in-memory slice, which always fits; any
/// other value saturates, so a slice index made from it fails its bounds
/// check instead of wrapping to a wrong position.
pub(crate) fn usize_from(x: u64) -> usize {
    usize::try_from(x).unwrap_or(usize::MAX)
}

//! Integer conversions for offsets and sizes.

/// A `u64` offset or size as `usize`. Callers use it on values already
/// checked against the length of an in-memory slice, which always fits; any
/// other value saturates, so a slice index made from it fails its bounds
/// check instead of wrapping to a wrong position.
pub(crate) fn usize_from(x: u64) -> usize {
    usize::try_from(x).unwrap_or(usize::MAX)
}

/// The length of a slice as a `u64`, the type offsets and sizes are
/// checked in. A `usize` fits in a `u64` on every target Rust supports;
/// were it ever wider, the length saturates.
pub(crate) fn len64<T>(s: &[T]) -> u64 {
    u64_from(s.len())
}

/// A `usize` count or offset as a `u64` (saturating, as [`len64`]).
pub(crate) fn u64_from(x: usize) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

//! Why a file is not shrunk ([`Refusal`]), and the checked sums that say
//! so when an offset or address would overflow.

/// Why a file was not shrunk.
pub type Refusal = String;

/// `a + b`, or a refusal when the sum passes 2^64.
pub(crate) fn add(a: u64, b: u64) -> Result<u64, Refusal> {
    a.checked_add(b)
        .ok_or_else(|| format!("an offset or address overflows ({a:#x} + {b:#x})"))
}

/// `a - b`, or a refusal when `b` is the larger.
pub(crate) fn sub(a: u64, b: u64) -> Result<u64, Refusal> {
    a.checked_sub(b)
        .ok_or_else(|| format!("an offset or address lies before another ({a:#x} - {b:#x})"))
}

/// `a` rounded up to a multiple of `m`, or a refusal when that passes
/// 2^64 (or `m` is 0).
pub(crate) fn round_up(a: u64, m: u64) -> Result<u64, Refusal> {
    a.checked_next_multiple_of(m)
        .ok_or_else(|| format!("{a:#x} rounded up to a multiple of {m:#x} overflows"))
}

//! Numbers as LLVM prints them in its reports.

use std::time::Duration;

// ---------------------------------------------------------------------------
// Number formatting, as LLVM prints it

/// `1234567` → `"1,234,567"`, as LLVM's `formatWithCommas`.
pub fn with_commas(n: u64) -> String {
    let digits = n.to_string();
    let mut s = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            s.push(',');
        }
        s.push(c);
    }
    s
}

/// A double as glibc's `printf("%.2lf")`. Rust rounds ties to even like
/// glibc; NaN differs: on x86-64 every NaN reaching LLVM's lines (0/0,
/// then propagated) has its sign set, which glibc prints `-nan`.
pub(super) fn printf_2f(x: f64) -> String {
    if x.is_nan() {
        "-nan".into()
    } else {
        format!("{x:.2}")
    }
}

/// MB/s as LLVM computes it: MiB over seconds.
pub(super) fn speed(bytes: u64, elapsed: Duration) -> f64 {
    (bytes as f64 / (1024.0 * 1024.0)) / elapsed.as_secs_f64()
}

//! Natural order for architecture names: runs of digits compare as
//! numbers, so `sm_50` < `sm_100` and `gfx90a` < `gfx942` < `gfx1100`.

use std::cmp::Ordering;

/// Compares `a` and `b` with runs of ASCII digits as numbers (leading
/// zeros ignored; equal numbers then compare as text).
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let run = |s: &[u8]| s.iter().take_while(|b| b.is_ascii_digit()).count();
                let (m, n) = (run(x), run(y));
                let strip = |s: &[u8]| {
                    let z = s.iter().take_while(|&&b| b == b'0').count();
                    s[z..].to_vec()
                };
                let (p, q) = (strip(&x[..m]), strip(&y[..n]));
                let o = p.len().cmp(&q.len()).then_with(|| p.cmp(&q));
                if o != Ordering::Equal {
                    return o;
                }
                x = &x[m..];
                y = &y[n..];
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(d);
                }
                x = &x[1..];
                y = &y[1..];
            }
        }
    }
}

/// Sorts `v` in [natural order](natural_cmp).
pub fn natural_sort(v: &mut [String]) {
    v.sort_by(|a, b| natural_cmp(a, b));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_as_numbers() {
        let mut v: Vec<String> = [
            "sm_100", "gfx1100", "sm_50", "gfx942", "gfx90a", "sm_90a", "sm_90",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        natural_sort(&mut v);
        assert_eq!(
            v,
            [
                "gfx90a", "gfx942", "gfx1100", "sm_50", "sm_90", "sm_90a", "sm_100"
            ]
        );
        assert_eq!(natural_cmp("a01", "a1"), Ordering::Less);
    }
}

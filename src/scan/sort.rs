//! Orders for architecture names. [`arch_cmp`] reads AMDGPU and CUDA
//! names as the versions they stand for (`gfx803` < `gfx900` < `gfx90a` <
//! `gfx1030`, `sm_50` < `sm_90` < `sm_100`), which plain [`natural_cmp`]
//! (runs of digits as numbers) gets wrong for AMDGPU: `gfx90a` is ISA
//! 9.0.10, not "90 then a", and would sort before `gfx803`.

use std::cmp::Ordering;

use crate::targets;

/// What an architecture name sorts by: AMDGPU names first, by ISA
/// version, then CUDA names by number, then anything else.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// (major, minor, 0 generic / 1 processor, stepping); R600 names
    /// (0, their place in LLVM's table, 1, 0).
    Amd([u32; 4]),
    /// (number, 0 plain / 1 `f` / 2 `a`, 0 `sm` / 1 `compute`).
    Cuda([u32; 3]),
    Other,
}

/// The key of a processor name (no features).
fn key(processor: &str) -> Key {
    let lower = processor.to_ascii_lowercase();
    let name = targets::amdgpu(&lower).map_or(lower.as_str(), |g| g.canonical);
    if let Some(i) = targets::R600.iter().position(|g| g.name == name) {
        return Key::Amd([0, u32::try_from(i).unwrap_or(u32::MAX), 1, 0]);
    }
    if let Some(rest) = name.strip_prefix("gfx") {
        let number = |s: &str| {
            (!s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u32>().ok())
                .flatten()
        };
        if let Some(g) = rest.strip_suffix("-generic") {
            let (major, minor) = g.split_once('-').unwrap_or((g, "0"));
            if let (Some(major), Some(minor)) = (number(major), number(minor)) {
                return Key::Amd([major, minor, 0, 0]);
            }
        } else if rest.len() >= 3 && rest.is_ascii() {
            // gfx<major><minor digit><stepping, a hex digit>.
            let (head, step) = rest.split_at(rest.len() - 1);
            let (major, minor) = head.split_at(head.len() - 1);
            if let (Some(major), Some(minor), Ok(step)) =
                (number(major), number(minor), u32::from_str_radix(step, 16))
            {
                return Key::Amd([major, minor, 1, step]);
            }
        }
    }
    for (prefix, p) in [("sm_", 0), ("compute_", 1)] {
        if let Some(rest) = name.strip_prefix(prefix)
            && let Some((n, suffix)) = targets::parse_sm(&format!("sm_{rest}"))
        {
            let rank = match suffix {
                None => 0,
                Some('f') => 1,
                Some(_) => 2,
            };
            return Key::Cuda([n, rank, p]);
        }
    }
    Key::Other
}

/// Compares architecture names (target IDs, features and all) by what
/// they stand for: AMDGPU names by ISA version (a generic target just
/// before the processors it starts with: `gfx9-generic` < `gfx900`,
/// `gfx90c` < `gfx9-4-generic` < `gfx942`; aliases as their processor),
/// then CUDA names by number (`sm_90` < `sm_90a` < `sm_100` < `sm_100f` <
/// `sm_100a`), then anything else in [natural order](natural_cmp). The
/// same processor sorts by its features (none first), and names equal so
/// far compare as bytes, so the order is total.
pub fn arch_cmp(a: &str, b: &str) -> Ordering {
    let (pa, fa) = a.split_once(':').unwrap_or((a, ""));
    let (pb, fb) = b.split_once(':').unwrap_or((b, ""));
    let (ka, kb) = (key(pa), key(pb));
    let by_key = match (&ka, &kb) {
        (Key::Other, Key::Other) => natural_cmp(&pa.to_ascii_lowercase(), &pb.to_ascii_lowercase()),
        _ => ka.cmp(&kb),
    };
    by_key.then_with(|| fa.cmp(fb)).then_with(|| a.cmp(b))
}

/// Sorts `v` in [arch order](arch_cmp).
pub fn arch_sort(v: &mut [String]) {
    v.sort_by(|a, b| arch_cmp(a, b));
}

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
#[cfg(test)]
pub fn natural_sort(v: &mut [String]) {
    v.sort_by(|a, b| natural_cmp(a, b));
}

/// Orders `<offload kind> <triple> <target ID> <image kind>` rows (or
/// kind names): by offload kind and triple, then the target ID in
/// [arch order](arch_cmp), then the kind. A row of other than four
/// fields (a name from a file with a space in it) comes after those, in
/// [natural order](natural_cmp): comparing such a row with a four-field
/// one by either rule would make the order cyclic, and the sort panic.
pub(crate) fn row_cmp(a: &str, b: &str) -> Ordering {
    let (x, y): (Vec<&str>, Vec<&str>) = (a.split(' ').collect(), b.split(' ').collect());
    match (x.len() == 4, y.len() == 4) {
        (true, true) => x[..2]
            .cmp(&y[..2])
            .then_with(|| arch_cmp(x[2], y[2]))
            .then_with(|| x[3].cmp(y[3])),
        (false, false) => natural_cmp(a, b),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/target-rules.md §5.2.
    #[test]
    fn archs_sort_by_what_they_stand_for() {
        let want = [
            "cayman",
            "gfx803",
            "gfx810",
            "gfx9-generic",
            "gfx900",
            "gfx906",
            "gfx908",
            "gfx909",
            "GFX90A",
            "gfx90a",
            "gfx90a:sramecc+:xnack-",
            "gfx90a:xnack+",
            "gfx90a:xnack-",
            "gfx90c",
            "gfx9-4-generic",
            "gfx942",
            "gfx950",
            "gfx10-1-generic",
            "gfx1010",
            "gfx10-3-generic",
            "gfx1030",
            "gfx11-generic",
            "gfx1100",
            "gfx1151",
            "gfx12-generic",
            "gfx1201",
            "gfx1250",
            "sm_50",
            "sm_90",
            "compute_90",
            "sm_90a",
            "sm_100",
            "sm_100f",
            "sm_100a",
            "sm_103f",
            "sm_120f",
            "sm_121",
            "x86_64",
        ];
        let mut v: Vec<String> = want.iter().rev().map(|s| s.to_string()).collect();
        arch_sort(&mut v);
        assert_eq!(v, want);
        let mut v: Vec<String> = ["gfx1030", "gfx90a", "gfx803", "gfx900", "tahiti", "fiji"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        arch_sort(&mut v);
        assert_eq!(
            v,
            ["tahiti", "fiji", "gfx803", "gfx900", "gfx90a", "gfx1030"]
        );
        assert_eq!(arch_cmp("sm_121a", "x86_64"), Ordering::Less);
        assert_eq!(arch_cmp("gfx1013", "gfx10-3-generic"), Ordering::Less);
        assert_eq!(arch_cmp("sm_80:cubin", "sm_80:ptx"), Ordering::Less);
    }

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

    #[test]
    fn rows_in_arch_order() {
        let mut rows = vec![
            "hip amdgcn-amd-amdhsa gfx1030 object",
            "hip amdgcn-amd-amdhsa gfx90a object",
            "hip amdgcn-amd-amdhsa gfx803 object",
            "cuda nvptx64-nvidia-cuda sm_100 cubin",
            "cuda nvptx64-nvidia-cuda sm_90 ptx",
            "cuda nvptx64-nvidia-cuda sm_90 cubin",
        ];
        rows.sort_by(|a, b| row_cmp(a, b));
        assert_eq!(
            rows,
            [
                "cuda nvptx64-nvidia-cuda sm_90 cubin",
                "cuda nvptx64-nvidia-cuda sm_90 ptx",
                "cuda nvptx64-nvidia-cuda sm_100 cubin",
                "hip amdgcn-amd-amdhsa gfx803 object",
                "hip amdgcn-amd-amdhsa gfx90a object",
                "hip amdgcn-amd-amdhsa gfx1030 object",
            ]
        );
    }

    /// Rows with spaces in their names (from a hostile file) among the
    /// usual ones: the order is total (antisymmetric and transitive over
    /// every triple), so sorting cannot panic, and the usual rows come
    /// first in their order.
    #[test]
    fn rows_with_spaces_in_names_keep_the_order_total() {
        use std::cmp::Ordering;
        let rows = [
            "cuda nvptx64-nvidia-cuda sm_90 cubin",
            "cuda nvptx64-nvidia-cuda sm_100 cubin",
            "cuda nvptx-nvidia-cuda sm_536903456 unknown-32",
            "cuda nvptx64-nvidia-cuda sm_0a unknown-32",
            "cuda nvptx64 nvidia-cuda sm_9 cubin",
            "hip amdgcn amd amdhsa gfx90a object",
            "hip amdgcn-amd-amdhsa gfx90a object",
            "a",
            "cuda",
            "zzz 1 2 3 4 5",
            "cuda nvptx64-nvidia-cuda sm_90 cubin x",
            // A cycle under a rule that compares four-field rows field by
            // field and any other pair as whole text: x10 before x9 one
            // way, after it the other.
            "hip x10 t k",
            "hip x9 t k",
            "hip x9 t k extra",
        ];
        for a in rows {
            for b in rows {
                assert_eq!(row_cmp(a, b), row_cmp(b, a).reverse(), "{a:?} {b:?}");
                for c in rows {
                    if row_cmp(a, b) != Ordering::Greater && row_cmp(b, c) != Ordering::Greater {
                        assert_ne!(row_cmp(a, c), Ordering::Greater, "{a:?} {b:?} {c:?}");
                    }
                }
            }
        }
        let mut sorted = rows.to_vec();
        sorted.sort_by(|a, b| row_cmp(a, b));
        assert!(
            sorted[..7].iter().all(|r| r.split(' ').count() == 4),
            "{sorted:?}"
        );
        assert_eq!(sorted[0], "cuda nvptx-nvidia-cuda sm_536903456 unknown-32");
    }
}

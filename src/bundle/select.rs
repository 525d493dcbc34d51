//! Which bundle entry goes to which requested target when unbundling, by
//! LLVM 22's rules.
//!
//! LLVM walks the entries in its reader's order (hash order for binary
//! bundles, file order for text bundles, section order for objects). For each
//! entry it takes the first requested target, in the order of its own
//! `StringMap` of requests keyed by normalized ID, that the entry can serve;
//! that target gets the entry and leaves the list. So two requests that one
//! entry could both serve compete, and only the first gets it.

use super::id::BundleId;
use crate::error::{Error, Result};
use crate::llvm::string_map;

/// The entry (index into the entries given) each request gets, or `None`.
pub fn assign(
    entry_ids: &[&[u8]],
    requests: &[BundleId],
    hip_openmp_compatible: bool,
) -> Result<Vec<Option<usize>>> {
    let keys: Vec<String> = requests.iter().map(BundleId::normalized).collect();
    // Requests that normalize alike collapse into one map slot (the last
    // request's output wins in LLVM); the map order decides who competes first.
    let order = string_map::order_of(&keys);
    let last: std::collections::HashMap<&str, usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    let open: Vec<usize> = order
        .into_iter()
        .map(|first| last.get(keys[first].as_str()).copied().unwrap_or(first))
        .collect();
    // Requests leave the list by being marked, not removed (a removal
    // shifts the rest: quadratic for many targets); `first` skips the run
    // of served requests at the front, where matches usually are.
    let mut served = vec![false; open.len()];
    let mut first = 0;
    let mut got = vec![None; requests.len()];
    for (ei, raw) in entry_ids.iter().enumerate() {
        // Once every request is served, LLVM reads no further entry (its
        // loop runs while its worklist has targets): an entry it would
        // refuse (ROCm 5's host ID `host-x86_64-unknown-linux`, four
        // parts) is refused only when a request is still open when it
        // comes.
        if first == open.len() {
            break;
        }
        let text = std::str::from_utf8(raw).map_err(|_| bad_id(raw))?;
        let entry = BundleId::parse(text).map_err(|_| bad_id(raw))?;
        let pos = (first..open.len())
            .find(|&p| !served[p] && entry.serves(&requests[open[p]], hip_openmp_compatible));
        if let Some(pos) = pos {
            got[open[pos]] = Some(ei);
            served[pos] = true;
            while first < open.len() && served[first] {
                first += 1;
            }
        }
    }
    Ok(got)
}

fn bad_id(raw: &[u8]) -> Error {
    Error::invalid(
        "bundle id read from the bundle",
        format!("'{}'", String::from_utf8_lossy(raw)),
    )
}

/// LLVM's list of missing targets for its "Can't find bundles for …" message:
/// sorted, joined with ", " and " and " (two) or ", and " (three or more).
pub fn missing_list(mut ids: Vec<String>) -> String {
    ids.sort();
    ids.dedup();
    match ids.len() {
        0 => String::new(),
        1 => ids.remove(0),
        2 => format!("{} and {}", ids[0], ids[1]),
        n => format!("{}, and {}", ids[..n - 1].join(", "), ids[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `assign` as it was first written: a search and a removal from the
    /// list of open requests per entry.
    fn naive(entry_ids: &[&[u8]], requests: &[BundleId], compat: bool) -> Vec<Option<usize>> {
        let keys: Vec<String> = requests.iter().map(BundleId::normalized).collect();
        let mut open: Vec<usize> = string_map::order_of(&keys)
            .into_iter()
            .map(|f| keys.iter().rposition(|k| *k == keys[f]).unwrap())
            .collect();
        let mut got = vec![None; requests.len()];
        for (ei, raw) in entry_ids.iter().enumerate() {
            let entry = BundleId::parse(std::str::from_utf8(raw).unwrap()).unwrap();
            if let Some(pos) = open
                .iter()
                .position(|&r| entry.serves(&requests[r], compat))
            {
                got[open[pos]] = Some(ei);
                open.remove(pos);
            }
        }
        got
    }

    /// ROCm 5 wrote its host entry as `host-x86_64-unknown-linux` (four
    /// parts, which LLVM 22 refuses): as LLVM, the entries before it in
    /// reading order still serve their requests, and it is refused only
    /// when a request is still open when it comes.
    #[test]
    fn a_short_id_is_refused_only_when_reached() {
        let entries: [&[u8]; 3] = [
            b"hipv4-amdgcn-amd-amdhsa--gfx1030",
            b"host-x86_64-unknown-linux",
            b"hipv4-amdgcn-amd-amdhsa--gfx906",
        ];
        let request = |id: &str| vec![BundleId::parse(id).unwrap()];
        let first = request("hipv4-amdgcn-amd-amdhsa--gfx1030");
        assert_eq!(assign(&entries, &first, false).unwrap(), vec![Some(0)]);
        let last = request("hipv4-amdgcn-amd-amdhsa--gfx906");
        assert!(assign(&entries, &last, false).is_err());
    }

    #[test]
    fn assignment_matches_the_search_and_remove_rule() {
        let archs = [
            "gfx90a",
            "gfx90a:xnack+",
            "gfx90a:xnack-",
            "gfx90a:sramecc+:xnack+",
            "gfx906",
            "gfx1030",
        ];
        let ids: Vec<String> = (0..40)
            .map(|i| {
                let kind = ["hip", "hipv4", "openmp"][i % 3];
                format!("{kind}-amdgcn-amd-amdhsa--{}", archs[(i * 7) % archs.len()])
            })
            .collect();
        for shift in 0..6 {
            let entries: Vec<&[u8]> = ids.iter().skip(shift).map(|s| s.as_bytes()).collect();
            let requests: Vec<BundleId> = ids
                .iter()
                .rev()
                .skip(shift * 3)
                .map(|s| BundleId::parse(s).unwrap())
                .collect();
            for compat in [false, true] {
                assert_eq!(
                    assign(&entries, &requests, compat).unwrap(),
                    naive(&entries, &requests, compat)
                );
            }
        }
    }

    #[test]
    fn many_targets_in_llvm_order_are_assigned_without_shifting() {
        // 100,000 targets, each served by its own entry, the entries in
        // LLVM's order as `bundle::entries` gives them: each finds its
        // request at the front of the open list, where removing it moved
        // the rest (4e10 bytes in all); now it is marked in O(1).
        let ids: Vec<String> = (0..100_000)
            .map(|i| format!("openmp-x86_64-vendor{i}-linux-gnu"))
            .collect();
        let entries: Vec<&[u8]> = string_map::order_of(&ids)
            .into_iter()
            .map(|i| ids[i].as_bytes())
            .collect();
        let requests: Vec<BundleId> = ids.iter().map(|s| BundleId::parse(s).unwrap()).collect();
        let distinct: std::collections::HashSet<String> =
            requests.iter().map(BundleId::normalized).collect();
        let got = assign(&entries, &requests, false).unwrap();
        assert_eq!(got.iter().flatten().count(), distinct.len());
        assert!(distinct.len() > 1000, "{}", distinct.len());
        // And the same as the old rule on a prefix.
        let n = 2000;
        assert_eq!(
            assign(&entries[..n], &requests[..n], false).unwrap(),
            naive(&entries[..n], &requests[..n], false)
        );
    }

    #[test]
    fn missing_list_uses_the_oxford_comma() {
        assert_eq!(missing_list(vec!["b".into()]), "b");
        assert_eq!(missing_list(vec!["b".into(), "a".into()]), "a and b");
        assert_eq!(
            missing_list(vec!["c".into(), "a".into(), "b".into()]),
            "a, b, and c"
        );
    }
}

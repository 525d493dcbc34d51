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
    let mut open: Vec<usize> = order
        .into_iter()
        .map(|first| last.get(keys[first].as_str()).copied().unwrap_or(first))
        .collect();
    let mut got = vec![None; requests.len()];
    for (ei, raw) in entry_ids.iter().enumerate() {
        let text = std::str::from_utf8(raw).map_err(|_| bad_id(raw))?;
        let entry = BundleId::parse(text).map_err(|_| bad_id(raw))?;
        if let Some(pos) = open
            .iter()
            .position(|&r| entry.serves(&requests[r], hip_openmp_compatible))
        {
            got[open[pos]] = Some(ei);
            open.remove(pos);
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

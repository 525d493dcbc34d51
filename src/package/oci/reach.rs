//! The blobs an index reaches ([`reachable`]): what a rewritten layout
//! must hold, and, in place, which of the old blobs the new index no
//! longer needs. Blobs are read through the caller's closure; nothing
//! here opens a file.

use std::collections::BTreeMap;

use super::digests::sha256_hex;
use super::layer;

/// How deeply [`reachable`] follows documents.
const REACH_DEPTH: u32 = 8;

/// Every blob that the index `index` reaches, by the hex of its digest,
/// with its media type: its manifests, their configs and layers, the
/// indexes nested in it, and what signatures and artifacts name as
/// `subject` or `blobs`. `read` gives the bytes of a JSON blob to follow;
/// layers are never read.
pub(crate) fn reachable(
    index: &[u8],
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(index) {
        follow(&v, read, &mut out, 0);
    }
    out
}

/// Notes in `out` each descriptor of the document `v`, and follows those
/// that are JSON documents (not layers) and not met before, up to
/// [`REACH_DEPTH`].
fn follow(
    v: &serde_json::Value,
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
    out: &mut BTreeMap<String, String>,
    depth: u32,
) {
    if depth > REACH_DEPTH {
        return;
    }
    let mut descs = Vec::new();
    for key in ["manifests", "layers", "blobs"] {
        if let Some(a) = v.get(key).and_then(|a| a.as_array()) {
            descs.extend(a.iter());
        }
    }
    for key in ["config", "subject"] {
        descs.extend(v.get(key));
    }
    for d in descs {
        let Some(hex) = d
            .get("digest")
            .and_then(|x| x.as_str())
            .and_then(sha256_hex)
        else {
            continue;
        };
        let mt = d.get("mediaType").and_then(|x| x.as_str()).unwrap_or("");
        if out.insert(hex.to_string(), mt.to_string()).is_some() || layer::method(mt).is_some() {
            continue;
        }
        if let Some(inner) =
            read(hex).and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        {
            follow(&inner, read, out, depth + 1);
        }
    }
}

//! The chain of documents above a rewritten layer edited where a value
//! changed ([`super::json`]: every other byte kept): a config's
//! `rootfs.diff_ids` entries ([`config`]), a descriptor's `digest` and
//! `size` in a manifest or an index ([`descriptor`]), a manifest's config
//! and layers ([`manifest`]); each result checked to be JSON still.

use std::ops::Range;

use super::json::{self, Step};

/// Edits of one document: byte ranges and what replaces them.
pub(crate) type Edits = Vec<(Range<usize>, Vec<u8>)>;

/// Why a document cannot be edited: the value that cannot be found
/// (`the descriptor's 'digest'`), or `None` when the edited text would
/// be no JSON.
#[derive(Debug)]
pub(crate) struct Unedited(Option<String>);

impl Unedited {
    /// The message, for the document named `what`.
    pub(crate) fn said(&self, what: &str) -> String {
        match &self.0 {
            Some(value) => format!("{what}: {value} cannot be found to rewrite"),
            None => format!("{what}: cannot be rewritten"),
        }
    }
}

/// Adds to `edits` the new digest (`sha256:HEX`) and `size` of the
/// descriptor at `at` in `text`.
pub(crate) fn descriptor(
    text: &[u8],
    at: &[Step<'_>],
    hex: &str,
    size: u64,
    edits: &mut Edits,
) -> Result<(), Unedited> {
    for (key, value) in [
        ("digest", format!("\"sha256:{hex}\"")),
        ("size", size.to_string()),
    ] {
        let mut path = at.to_vec();
        path.push(Step::Key(key));
        let r = json::span(text, &path)
            .ok_or_else(|| Unedited(Some(format!("the descriptor's '{key}'"))))?;
        edits.push((r, value.into_bytes()));
    }
    Ok(())
}

/// `text` with `edits` made, checked to be JSON still.
pub(crate) fn spliced(text: &[u8], edits: Edits) -> Result<Vec<u8>, Unedited> {
    json::splice(text, edits)
        .filter(|b| serde_json::from_slice::<serde_json::Value>(b).is_ok())
        .ok_or(Unedited(None))
}

/// The config `text` with each `rootfs.diff_ids` entry `diffs` names (by
/// index) replaced by its new diff_id.
pub(crate) fn config<'d>(
    text: &[u8],
    diffs: impl IntoIterator<Item = (usize, &'d str)>,
) -> Result<Vec<u8>, Unedited> {
    let mut edits = Vec::new();
    for (i, diff) in diffs {
        let at = [Step::Key("rootfs"), Step::Key("diff_ids"), Step::At(i)];
        let r = json::span(text, &at)
            .ok_or_else(|| Unedited(Some(format!("'rootfs.diff_ids[{i}]'"))))?;
        edits.push((r, format!("\"{diff}\"").into_bytes()));
    }
    spliced(text, edits)
}

/// The manifest `text` with its config's descriptor given `config` (hex,
/// size) and each layer `layers` names (by index) its new blob's (hex,
/// size).
pub(crate) fn manifest<'h>(
    text: &[u8],
    (chex, csize): (&str, u64),
    layers: impl IntoIterator<Item = (usize, &'h str, u64)>,
) -> Result<Vec<u8>, Unedited> {
    let mut edits = Vec::new();
    descriptor(text, &[Step::Key("config")], chex, csize, &mut edits)?;
    for (i, hex, size) in layers {
        let at = [Step::Key("layers"), Step::At(i)];
        descriptor(text, &at, hex, size, &mut edits)?;
    }
    spliced(text, edits)
}

/// Adds to `edits` the new digest and size of the entry `i` of the
/// index `text`'s `manifests`.
pub(crate) fn index_entry(
    text: &[u8],
    i: usize,
    hex: &str,
    size: u64,
    edits: &mut Edits,
) -> Result<(), Unedited> {
    descriptor(
        text,
        &[Step::Key("manifests"), Step::At(i)],
        hex,
        size,
        edits,
    )
}

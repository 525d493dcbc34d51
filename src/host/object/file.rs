//! An edited object written to a file, its spans copied file to file.

use std::io;
use std::path::Path;

use super::model::Written;
use crate::files::{Input, write_layout};

/// Writes an object made by this module (a bundle or a stripped host
/// object) atomically to `path`: `sources[k]` is span source `k` and the
/// input its bytes lie in, so the spans are copied file to file.
pub fn write_object(
    path: impl AsRef<Path>,
    w: &Written,
    sources: &[(&Input, &[u8])],
) -> io::Result<()> {
    let views: Vec<&[u8]> = sources.iter().map(|s| s.1).collect();
    let images: Vec<(&Input, &[u8])> = w
        .spans
        .iter()
        .enumerate()
        .map(|(k, s)| Some((sources.get(s.source)?.0, w.image(k, &views)?)))
        .collect::<Option<_>>()
        .ok_or_else(|| io::Error::other("internal error: object layout out of range"))?;
    write_layout(path, &w.layout, |k| images[k])
}

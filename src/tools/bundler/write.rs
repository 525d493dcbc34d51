//! A bundle written to a file, for both bundler front ends: an object
//! bundle with its images copied file to file, a binary or text bundle
//! laid out the same way, or compressed into a CCOB in memory that does
//! not grow with the bundle; and any edited object written to a file, its
//! spans copied file to file ([`write_object`]).

use std::io;
use std::path::Path;

use super::compressed::{self, write_ccob};
use crate::bundle::ccob::{CompressOptions, CompressReport};
use crate::bundle::ops::{Bundled, Targets};
use crate::files::{Input, write_layout};
use crate::host::object::Written;

/// Why [`write_bundled`] failed.
#[derive(Debug)]
pub enum WriteFailure {
    /// The output could not be written.
    Output(io::Error),
    /// The CCOB could not be made or written (see [`compressed::Failure`]).
    Ccob(compressed::Failure),
}

/// Writes what [`ops::bundle`](crate::bundle::ops::bundle) made of `inputs` (one per target,
/// named `names`) to `out`, atomically: compressed into a CCOB with
/// `compress` (an object bundle is written as it is: LLVM compresses its
/// empty bundle buffer, which llvm-objcopy's output then replaces), and
/// what LLVM's verbose mode reports then.
pub fn write_bundled(
    out: &str,
    bundled: &Bundled,
    targets: &Targets,
    inputs: &[Input],
    names: &[String],
    compress: Option<&CompressOptions>,
) -> Result<Option<CompressReport>, WriteFailure> {
    let views: Vec<&[u8]> = inputs.iter().map(Input::bytes).collect();
    match bundled {
        Bundled::Object { host, written } => {
            let sources = bundled.sources(targets, &views);
            let owners = std::iter::once(&inputs[*host]).chain(inputs);
            let sources: Vec<(&Input, &[u8])> = owners.zip(sources).collect();
            write_object(out, written, &sources).map_err(WriteFailure::Output)?;
            Ok(None)
        }
        Bundled::Layout(layout) => match compress {
            Some(opts) => write_ccob(out, layout, inputs, names, opts)
                .map(Some)
                .map_err(WriteFailure::Ccob),
            None => write_layout(out, layout, |i| (&inputs[i], views[i]))
                .map(|()| None)
                .map_err(WriteFailure::Output),
        },
    }
}

/// Writes an object made by `host::object` (a bundle or a stripped host
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

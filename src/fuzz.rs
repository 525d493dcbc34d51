//! Fuzz bodies, shared by the cargo-fuzz targets in `scripts/fuzz/` and by a
//! unit test that runs them over every file in `fixtures/`, so stable CI
//! exercises them too.

/// A fuzz body: runs one input and panics on a broken invariant.
pub type Body = fn(&[u8]);

/// Every fuzz body, by the name of its cargo-fuzz target (scripts/fuzz/).
pub const TARGETS: &[(&str, Body)] = &[
    ("offload_binary_read", offload_binary_read),
    ("bundle_read", bundle_read),
    ("object_rewrite", object_rewrite),
    ("ccob_read", ccob_read),
    ("scan", scan),
    ("archive", archive),
    ("package", package),
    ("lz4_block", lz4_block),
    ("lz4_fast", lz4_fast),
    ("kernels", kernels),
    ("prune", prune),
    ("zip_directory", zip_directory),
    ("image_metadata", image_metadata),
];

mod archive;
mod bundle_read;
mod ccob_read;
mod entries;
mod image_metadata;
mod kernels;
mod lz4_block;
mod lz4_fast;
mod object_rewrite;
mod offload_binary_read;
mod package;
mod prune;
mod readers;
mod scan;
#[cfg(test)]
mod tests;
mod zip_directory;

pub use archive::archive;
pub use bundle_read::bundle_read;
pub use ccob_read::ccob_read;
pub use image_metadata::image_metadata;
pub use kernels::kernels;
pub use lz4_block::lz4_block;
#[cfg(test)]
pub(crate) use lz4_fast::liblz4_may_differ;
pub use lz4_fast::lz4_fast;
pub use object_rewrite::object_rewrite;
pub use offload_binary_read::offload_binary_read;
pub use package::package;
pub use prune::prune;
pub use scan::scan;
pub use zip_directory::zip_directory;

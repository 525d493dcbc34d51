//! What pruning reads of a host file's headers, apart from the scan: the
//! parts of a linked file a rewrite must leave as they are
//! ([`fixed::Fixed`]), and a PE image's headers ([`pe::PeImage`]).

pub(crate) mod fixed;
pub(crate) mod pe;

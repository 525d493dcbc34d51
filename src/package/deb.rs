//! Debian packages (`.deb`) read and rewritten on their bytes: the `ar`
//! skeleton, the control archive's `control`, `md5sums` and `conffiles`,
//! and the data archive streamed, compressed again with its own method.

pub(crate) mod compress;
pub(crate) mod control;
pub(crate) mod md5sums;

//! A layer's gzip: the package layer's parallel gzip writer
//! ([`crate::package::compression::gzip`]), at the level and threads the
//! layer rewrite gives it.

pub(super) use crate::package::compression::gzip::compress;

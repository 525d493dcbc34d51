//! `ar` archives, read ([`read`]: every kind LLVM and `object` read, for
//! the readers of device code) and written (`write`: GNU archives as LLVM 22
//! writes them, the public [`crate::archive`]'s writer). The reader's items
//! are re-exported here, where its callers name them.

mod read;
pub(crate) mod write;

pub use read::{
    ArError, Archive, HEADER_LEN, Member, RawEntry, entries, is_archive, is_thin, thin_member_path,
};
pub(crate) use read::{MAGIC, THIN_MAGIC};

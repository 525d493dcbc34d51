//! What `llvm-offload-binary` (LLVM 22, formerly `clang-offload-packager`)
//! decides and writes, with the additions of newer upstream releases, for
//! its drop-in and for `offload-kit pack`: packing image files into an
//! OffloadBinary file and the `--compress` options (`pack.rs`), which found
//! images an extraction filter takes and the names of the files extracted
//! images are written to (`filter.rs`), and extracting them (`extract.rs`,
//! [`extract()`]).

mod extract;
mod filter;
mod pack;

pub(crate) use extract::{ExtractError, Said, extract};
pub(crate) use pack::{PackError, Packing, compression, pack_files};

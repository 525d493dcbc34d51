//! The emulations of LLVM's offloading tools, on files: what
//! `clang-offload-bundler` and `llvm-offload-binary` (the packager) do from
//! their command lines to the files they write, with what LLVM says on the
//! way handed to the caller as data; and the same for NVIDIA's and AMD's
//! tools that offload-kit stands in for. The command line's drop-ins (and the
//! native `bundle`, `unbundle` and `pack` commands that share the work)
//! parse options, call in here and print.
//!
//! This is the layer above the formats: the format modules (`bundle`,
//! `offload_binary`, `archive`) read and write bytes on slices and never
//! touch the file system; this layer opens inputs and writes outputs
//! through `files`. The linker wrapper, the third tool, is `link`.
//!
//! - [`bundler`]: `clang-offload-bundler`'s job, and bundles written to
//!   and read from files and directories.
//! - [`packager`]: `llvm-offload-binary`'s packing and extraction.
//! - [`cuobjdump`]: NVIDIA's `cuobjdump` run (listing, extraction and
//!   header dump of CUDA device code).
//! - [`nvprune`]: NVIDIA's `nvprune` run, on `prune`'s pruning.
//! - [`roc_obj`]: AMD's `roc-obj-ls`, `roc-obj-extract` and `roc-obj`
//!   runs.
//! - [`streams`]: found OffloadBinary images copied to files, streamed
//!   out of compressed binaries (for the packager, `offload-kit unpack`
//!   and the linker wrapper's drop-in).

pub(crate) mod bundler;
pub(crate) mod cuobjdump;
pub(crate) mod nvprune;
pub(crate) mod packager;
pub(crate) mod roc_obj;
pub(crate) mod streams;

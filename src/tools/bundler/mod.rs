//! Bundles on files: [`job`], a whole `clang-offload-bundler` (LLVM 22)
//! invocation checked and carried out as LLVM does it; [`write`], a bundle
//! written to its file for both bundler front ends; [`compressed`], a
//! compressed bundle (CCOB) written to its file in bounded memory, or
//! unbundled from one straight into files; and [`to_dir`],
//! `offload-kit unbundle`'s entries written into a directory.

pub(crate) mod compressed;
pub(crate) mod job;
pub(crate) mod to_dir;
pub(crate) mod write;

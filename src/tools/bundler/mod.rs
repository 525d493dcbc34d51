//! `clang-offload-bundler` (LLVM 22) on files: [`job`], a whole invocation
//! checked and carried out as LLVM does it.

pub(crate) mod job;

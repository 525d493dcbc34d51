//! Target triples as LLVM 22 parses, normalizes and compares them.
//!
//! Every bundle-entry ID holds a triple ([`crate::bundle::BundleId`]), and
//! `clang-offload-bundler` writes and matches IDs through `llvm::Triple`:
//! normalization moves components into LLVM's canonical order
//! (`x86_64-linux-gnu` becomes `x86_64-unknown-linux-gnu`), and matching
//! compares the parsed enums, not the text. [`Triple`] reproduces both,
//! with LLVM 22's name tables ([`Arch`], [`SubArch`], [`Vendor`], [`Os`],
//! [`Environment`], [`ObjectFormat`]; each has `ALL` and `name()`). It is
//! an emulation that follows LLVM 22, not a specification.
//!
//! # Examples
//!
//! ```
//! use offload_kit::triple::{Arch, CanonicalForm, Os, Triple};
//!
//! let t = Triple::parse("amdgcn-amd-amdhsa");
//! assert_eq!(t.arch(), Arch::Amdgcn);
//! assert_eq!(t.os(), Os::AmdHsa);
//! assert!(t.is_amdgpu());
//!
//! // LLVM's normalization, as the bundler writes entry IDs.
//! let host = Triple::parse("x86_64-linux-gnu");
//! assert_eq!(host.normalize(CanonicalForm::FourIdent), "x86_64-unknown-linux-gnu");
//! assert!(Triple::parse("x86_64-unknown-linux5.0-gnu")
//!     .is_compatible_with(&Triple::parse("x86_64-unknown-linux-gnu")));
//! ```

pub use crate::llvm::triple::{
    Arch, CanonicalForm, Environment, ObjectFormat, Os, SubArch, Triple, UnsupportedShaderModel,
    Vendor,
};

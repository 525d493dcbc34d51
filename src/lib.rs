//! offload-kit: read and write the files that glue GPU offloading code to
//! host programs, without LLVM.
//!
//! Compilers for OpenMP target regions, CUDA, HIP and SYCL make one device code
//! object per GPU target; LLVM's glue tools pack them, bundle them and embed
//! them in the host program. This crate does the same jobs, byte for byte as
//! LLVM 22 where LLVM is deterministic, and finds every embedded image in
//! any binary.
//!
//! # Modules
//!
//! - [`offload_binary`]: the `10 FF 10 AD` OffloadBinary container of
//!   `llvm-offload-binary` / `clang-offload-packager`: read (versions 1–3,
//!   compressed too), write, and find in objects and archives.
//! - [`bundle`]: clang offload bundles of `clang-offload-bundler`: the
//!   binary and text layouts, bundles kept in sections of a host object
//!   (written as llvm-objcopy writes them), bundle-entry IDs and LLVM's
//!   rules for matching them, archives of bundles; compressed `CCOB`
//!   bundles in [`bundle::ccob`].
//! - [`fatbin`]: CUDA fatbin containers and the CUDA/HIP fatbin wrapper.
//! - [`kernels`]: what is inside a device image: its kernels with the
//!   registers and memory each one uses, and its other exported symbols
//!   (AMDGPU code objects, CUDA cubins, PTX, CPU images).
//! - [`wrap`]: the host relocatable object that registers device images
//!   with the OpenMP, CUDA, HIP or SYCL runtime (what `llvm-offload-wrapper`
//!   and `llc` make together, and `clang-linker-wrapper` for SYCL).
//! - [`scan`]: finds every device image in executables, shared libraries,
//!   objects, archives and raw files, nested to any depth, and answers CI's
//!   questions about them ([`scan::check()`], [`scan::size()`]).
//! - [`diff`]: two builds' device code compared: images added, removed
//!   and changed per target, with their bytes, and kernels whose resources
//!   changed.
//! - [`prune`]: keeps only the device images chosen GPUs would load,
//!   rewriting each container where it lies.
//! - [`report`]: the Markdown, HTML and JUnit reports the commands print,
//!   made from what [`scan`], [`kernels`] and [`prune`] return.
//! - [`archive`]: the GNU `ar` writer, byte for byte as LLVM's.
//! - [`files`] (feature `files`): inputs mapped and outputs written
//!   atomically, for programs that work on files.
//! - [`targets`]: the AMDGPU processors, CUDA archs and kinds the scanners
//!   know by name, and what generic AMDGPU targets cover.
//! - [`triple`]: target triples as LLVM parses, normalizes and compares
//!   them (an emulation of LLVM 22).
//! - At the root: the one [`Error`] (what went wrong is its [`ErrorKind`];
//!   [`Error::llvm_message`] gives LLVM's text for the same class of
//!   fault), the [`Layout`] of [`Piece`]s the writers describe outputs
//!   with, so that image bytes go file to file and are never gathered in
//!   memory, and [`run_cli`], the command line.
//!
//! Each module re-exports its public items at its root: every item has one
//! path, and docs/public-api.txt lists them all.
//!
//! The library never prints and never exits. The format modules work on
//! byte slices (typically mapped files) and describe what to write, so the
//! caller can stream image bytes file to file; [`files`] does that for a
//! caller that has paths. The command-line tool is the `cli` feature (on by
//! default, with `files`); `default-features = false` builds the library
//! without their dependencies.
//!
//! # Examples
//!
//! Pack two images into OffloadBinaries (as `llvm-offload-binary` writes
//! them) and read them back:
//!
//! ```
//! use offload_kit::Limits;
//! use offload_kit::offload_binary::{self, ImageKind, ImageSpec, OffloadKind, Version};
//!
//! let gfx90a = b"device code for gfx90a".to_vec();
//! let sm_80 = b"device code for sm_80".to_vec();
//! let spec = |triple: &str, arch: &str, size: usize| ImageSpec {
//!     image_kind: ImageKind::IMG_Object,
//!     offload_kind: OffloadKind::OFK_OpenMP,
//!     strings: vec![
//!         (b"triple".to_vec(), triple.as_bytes().to_vec()),
//!         (b"arch".to_vec(), arch.as_bytes().to_vec()),
//!     ],
//!     size: size as u64,
//!     ..ImageSpec::default()
//! };
//! let specs = [
//!     spec("amdgcn-amd-amdhsa", "gfx90a", gfx90a.len()),
//!     spec("nvptx64-nvidia-cuda", "sm_80", sm_80.len()),
//! ];
//! // The layout refers to the images by index; write it to any `Write`.
//! let mut packed = Vec::new();
//! offload_binary::layout(&specs, Version::V1)?.write_to(&mut packed, &[&gfx90a, &sm_80])?;
//!
//! let images = offload_binary::find_images(&packed, &Limits::default())?;
//! assert_eq!(images.len(), 2);
//! assert_eq!(images[1].image.arch(), b"sm_80");
//! assert_eq!(&images[0].image.image[..], &gfx90a[..]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Bundle a host file and a device file as `clang-offload-bundler
//! -type=bc` does, then list the entries in LLVM's order:
//!
//! ```
//! use offload_kit::bundle::{self, Format};
//!
//! let host = b"host bitcode".to_vec();
//! let device = b"gfx90a code".to_vec();
//! let entries = [
//!     ("host-x86_64-unknown-linux-gnu-".to_string(), host.len() as u64),
//!     ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), device.len() as u64),
//! ];
//! let mut fat = Vec::new();
//! bundle::layout(Format::Binary, &entries, 1)?.write_to(&mut fat, &[&host, &device])?;
//!
//! let found = bundle::entries(&fat, Format::Binary)?;
//! let ids: Vec<&[u8]> = found.iter().map(|e| e.id).collect();
//! assert!(ids.contains(&&b"hip-amdgcn-amd-amdhsa--gfx90a"[..]));
//! let dev = found.iter().find(|e| e.id.starts_with(b"hip")).unwrap();
//! assert_eq!(dev.data, &device[..]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Write the x86-64 object that registers a device image with the OpenMP
//! runtime (link it into the host program):
//!
//! ```
//! use offload_kit::wrap::{self, Abi, Image, Kind, Options};
//!
//! let device = b"an OffloadBinary or a device ELF".to_vec();
//! let opts = Options {
//!     kind: Kind::OpenMp,
//!     abi: Abi::Llvm,
//!     triple: "x86_64-unknown-linux-gnu".into(),
//!     llc_layout: false,
//!     relocatable: false,
//! };
//! let object = wrap::to_vec(&opts, &[Image::new(&device)?])?;
//! assert_eq!(&object[..4], b"\x7fELF");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! More in `examples/` (`cargo run --example list_images -- FILE`).

#![warn(missing_docs)]
// A public item's types are public too: nothing a caller gets back is a type
// it cannot name (docs/public-api.txt lists the API).
#![warn(unnameable_types)]
// Without the command line, the helpers only it uses (and their
// crate-internal re-exports) are unused.
#![cfg_attr(not(feature = "cli"), allow(dead_code, unused_imports))]

// The API: the format modules, and at the root the error, the layouts the
// writers return and the command line's entry. Each module re-exports its
// public items at its root; its files are private (`pub(crate)` where the
// rest of the crate uses them), so every item has one path.
pub mod archive;
pub mod bundle;
pub mod diff;
pub mod fatbin;
#[cfg(feature = "files")]
pub mod files;
pub mod kernels;
pub mod offload_binary;
pub mod prune;
pub mod report;
pub mod scan;
pub mod targets;
pub mod triple;
pub mod wrap;

pub use error::{Error, ErrorKind, Result};
pub use layout::{Layout, Piece};
pub use limits::Limits;

// The internals.
pub(crate) mod bitcode;
mod bytes;
pub(crate) mod companion;
mod decoded;
mod error;
#[cfg(feature = "files")]
pub(crate) mod extract;
pub(crate) mod host;
#[cfg(feature = "files")]
pub(crate) mod inputs;
mod kernel_listing;
pub(crate) mod layout;
pub(crate) mod limits;
pub(crate) mod link;
pub(crate) mod llvm;
mod num;
pub(crate) mod package;
mod sync;
pub(crate) mod text;
#[cfg(feature = "files")]
pub(crate) mod tools;

#[cfg(any(test, fuzzing))]
pub mod fuzz;

/// `eprintln!`, which never panics: with standard error closed (its
/// reader gone, as in `2>&1 | head -1`) the line is lost, where the
/// standard macro panics (exit 101). Defined before `mod cli` so that every
/// message of the command line goes through it.
#[cfg(feature = "cli")]
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// `eprint!`, which never panics (see `eprintln!`).
#[cfg(feature = "cli")]
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($arg)*);
    }};
}

// The options types are `#[non_exhaustive]` for library users; the command
// line fills them field by field, as a user outside the crate has to.
#[cfg(feature = "cli")]
#[allow(clippy::field_reassign_with_default)]
mod cli;

/// Runs the `offload-kit` command line: what the `offload-kit` binary
/// runs. The arguments (and the program name, which picks a drop-in LLVM
/// tool such as `clang-offload-bundler`) come from the environment
/// ([`std::env::args_os`]); messages go to standard output and error, and
/// the exit code is the returned one. Needs the `cli` feature (on by
/// default).
#[cfg(feature = "cli")]
#[must_use]
pub fn run_cli() -> std::process::ExitCode {
    cli::main()
}

#[cfg(test)]
mod tests;
